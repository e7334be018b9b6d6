// Edit a routine: its YAML file itself, in a monospace editor with line numbers, so the comments
// and formatting the user wrote survive. The engine checks the text as it is typed (the loader's
// own validator: each problem at its line and column); a save names the version it started from
// and is refused — with a choice — when the file changed on disk meanwhile (a sync, an editor).
import { call, errorText } from "../lib/api.js";
import { h, replace } from "../lib/dom.js";

export function mount(root, params, ui) {
  const name = params.get("id");
  let source = null;
  let timer = null;
  let seq = 0;
  let problems = [];

  const title = h("h2", { id: "edit-title" }, `Edit ${name}`);
  // What the last action did (saved, opened elsewhere, an error)…
  const status = h("p", { class: "notice", role: "status", id: "edit-status" });
  // …and the text's state now (problems, unsaved changes): separate, so a check finishing late
  // never hides what a save said.
  const state = h("p", { class: "muted small", id: "edit-state" });
  const gutter = h("pre", { class: "gutter", "aria-hidden": "true", id: "gutter" });
  const text = h("textarea", { class: "code", id: "routine-text", spellcheck: "false", wrap: "off", autocomplete: "off", "aria-label": `The routine file of ${name}`, "aria-describedby": "edit-problems" });
  const list = h("ul", { class: "problems-list", id: "edit-problems", "aria-live": "polite" });
  const conflict = h("div", { class: "card conflict", id: "edit-conflict", role: "alert", hidden: true });
  const save = h("button", { class: "primary", id: "edit-save", disabled: true }, "Save");
  const revert = h("button", { id: "edit-revert" }, "Reload from disk");
  const external = h("button", { id: "edit-open" }, "Open in editor");
  replace(
    root,
    h("div", { class: "toolbar" }, title, h("span", { class: "spacer" }), external, revert, save),
    h("p", { class: "muted small", id: "edit-file" }),
    status,
    state,
    conflict,
    h("div", { class: "editor" }, gutter, text),
    list,
  );

  /** The problems that block saving (warnings are said, never blocking). */
  const errors = () => problems.filter((p) => p.severity === "error");

  function numberLines() {
    const bad = new Set(errors().map((p) => p.line));
    const warned = new Set(problems.filter((p) => p.severity === "warning").map((p) => p.line));
    const count = text.value.split("\n").length;
    replace(gutter, Array.from({ length: count }, (_, i) => h("span", { class: bad.has(i + 1) ? "bad" : warned.has(i + 1) ? "warn" : "" }, `${i + 1}\n`)));
    gutter.scrollTop = text.scrollTop;
  }

  /** Put the caret at line:col (1-based) and show it. */
  function jump(line, col) {
    const lines = text.value.split("\n");
    let at = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
    at += Math.max(0, col - 1);
    text.focus();
    text.setSelectionRange(at, at);
    const lineHeight = text.scrollHeight / Math.max(1, lines.length);
    text.scrollTop = Math.max(0, (line - 3) * lineHeight);
  }

  function showProblems() {
    replace(
      list,
      problems.map((p) =>
        h(
          "li",
          { dataset: { line: p.line, col: p.col, severity: p.severity }, class: p.severity },
          h("button", { class: "link", onclick: () => jump(p.line, p.col) }, `${p.line}:${p.col}`),
          " ",
          p.severity === "warning" ? h("strong", {}, "warning: ") : null,
          p.message,
        ),
      ),
    );
    numberLines();
    const dirty = source && text.value !== source.text;
    const blocking = errors().length;
    save.disabled = !dirty || blocking > 0;
    if (blocking) state.textContent = `${blocking} problem${blocking === 1 ? "" : "s"} — the file on disk is unchanged until they are fixed and saved.`;
    else state.textContent = dirty ? "Unsaved changes." : "";
  }

  async function check() {
    const mine = ++seq;
    try {
      const found = await call("check_routine_text", { name, text: text.value });
      if (mine !== seq) return;
      problems = found;
      showProblems();
    } catch (e) {
      status.textContent = `Could not check: ${errorText(e)}`;
    }
  }

  async function load() {
    try {
      source = await call("routine_source", { name });
    } catch (e) {
      replace(root, h("h2", {}, `Edit ${name}`), h("p", { class: "notice" }, errorText(e)), h("a", { href: "#/routines" }, "Back to routines"));
      return false;
    }
    text.value = source.text;
    document.getElementById("edit-file").textContent = source.in_home ? source.file : `${source.file} (imported: edits go to that file)`;
    conflict.hidden = true;
    problems = [];
    check();
    return true;
  }

  async function doSave(overwrite) {
    save.disabled = true;
    try {
      source = await call("save_routine_text", { name, text: text.value, version: source.version, overwrite });
      conflict.hidden = true;
      status.textContent = `Saved ${source.file}. The scheduler uses it from now on.`;
      showProblems();
    } catch (e) {
      if (e?.code === "conflict") {
        replace(
          conflict,
          h("p", {}, errorText(e)),
          h(
            "div",
            { class: "toolbar" },
            h("button", { id: "conflict-reload", onclick: () => load() }, "Reload (discard my edits)"),
            h("button", { id: "conflict-overwrite", class: "danger", onclick: () => doSave(true) }, "Overwrite with my version"),
          ),
        );
        conflict.hidden = false;
      } else {
        status.textContent = `Not saved: ${errorText(e)}`;
      }
      save.disabled = false;
    }
  }

  text.addEventListener("input", () => {
    status.textContent = "";
    numberLines();
    clearTimeout(timer);
    timer = setTimeout(check, 200);
  });
  text.addEventListener("scroll", () => (gutter.scrollTop = text.scrollTop));
  text.addEventListener("keydown", (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "s") {
      ev.preventDefault();
      if (!save.disabled) doSave(false);
    }
    // Tab indents (YAML uses spaces) instead of leaving the editor; Escape then Tab leaves.
    if (ev.key === "Tab" && !ev.shiftKey && !text.dataset.escaped) {
      ev.preventDefault();
      text.setRangeText("  ", text.selectionStart, text.selectionEnd, "end");
      text.dispatchEvent(new Event("input"));
    }
    text.dataset.escaped = ev.key === "Escape" ? "1" : "";
  });
  save.addEventListener("click", () => doSave(false));
  revert.addEventListener("click", () => load());
  external.addEventListener("click", async () => {
    try {
      await call("open_routine_file", { name });
      status.textContent = "Opened in your editor. Reload from disk here after saving there.";
    } catch (e) {
      status.textContent = errorText(e);
    }
  });

  load();
  return () => clearTimeout(timer);
}

// Routines: schedule in words, next fire, last run, state; Run now and pause/resume; New routine,
// Edit, Duplicate, Rename (the history follows), Remove (to routines/.trash, restorable below),
// Move to another home (`[[homes]]`: written there first, then disabled here).
import { call, currentHome, errorText, onEngine } from "../lib/api.js";
import { badge, reasonText, empty, h, replace } from "../lib/dom.js";
import { ago, full } from "../lib/format.js";
import { strip } from "./strip.js";

export function mount(root, params, ui) {
  const status = h("p", { class: "notice", role: "status", id: "routines-status" });
  const body = h("div", { id: "routines" });
  const trash = h("section", { id: "removed-routines", hidden: true });
  const newButton = h("a", { href: "#/new", class: "button primary", id: "new-routine" }, "New routine");
  replace(root, h("div", { class: "toolbar" }, h("h2", {}, "Routines"), h("span", { class: "spacer" }), newButton), status, body, trash);
  if (params.get("created")) status.textContent = `Created ${params.get("created")}. It is scheduled from now on.`;

  // A re-render while the user types a new name (or has a menu open) would throw their input away:
  // reloads wait until the inline form or the menu is closed.
  let held = false;
  const busy = () => !!body.querySelector("tr.inline-form, details.more[open]");
  body.addEventListener("toggle", (ev) => ev.target.open || reloadIfHeld(), true);
  function reloadIfHeld() {
    if (held && !busy()) {
      held = false;
      load();
    }
  }

  /** Other homes a routine of this machine can move to (none while the window shows another). @type {string[] | null} */
  let homes = null;

  async function load() {
    if (busy()) {
      held = true;
      return;
    }
    if (homes === null) homes = currentHome() ? [] : (await call("list_homes").catch(() => [])).map((x) => x.name);
    try {
      const rows = await call("list_routines");
      if (busy()) {
        held = true; // opened while the list was on its way
        return;
      }
      render(rows);
    } catch (e) {
      replace(body, empty(`Could not load routines: ${errorText(e)}`));
    }
    loadTrash();
    loadStrips();
  }

  // The strips come after the list (explaining two weeks of slots costs more than listing).
  async function loadStrips() {
    try {
      const strips = await call("routine_strips");
      for (const [name, marks] of Object.entries(strips)) {
        const cell = body.querySelector(`tr[data-routine="${CSS.escape(name)}"] .strip-cell`);
        if (cell && marks.length) replace(cell, strip(name, marks));
      }
    } catch (e) {
      status.textContent = `Could not explain the last two weeks: ${errorText(e)}`;
    }
  }

  async function loadTrash() {
    try {
      const removed = await call("removed_routines");
      trash.hidden = removed.length === 0;
      replace(
        trash,
        h("h3", {}, "Removed routines"),
        h("p", { class: "muted small" }, "Their files are in routines/.trash; their run history is kept."),
        h(
          "table",
          { class: "list" },
          h("tbody", {}, removed.map((r) => h("tr", { dataset: { removed: r.id } }, h("td", {}, h("strong", {}, r.name)), h("td", { class: "muted" }, `removed ${ago(r.removed_at)}`), h("td", { class: "actions" }, h("button", { onclick: () => restore(r) }, "Restore"))))),
        ),
      );
    } catch (e) {
      trash.hidden = false;
      replace(trash, h("p", { class: "notice" }, `Could not list removed routines: ${errorText(e)}`));
    }
  }

  /** @param {import("../lib/types.js").Removed} r */
  async function restore(r) {
    try {
      const w = await call("restore_routine", { id: r.id });
      status.textContent = `Restored ${w.name} (${w.file}).`;
    } catch (e) {
      status.textContent = `Could not restore ${r.name}: ${errorText(e)}`;
    }
    load();
  }

  /** An inline form under a routine's row: a new name (Duplicate, Rename) or a confirmation (Remove, Move). */
  function inlineForm(tr, r, action) {
    document.querySelector("#routines tr.inline-form")?.remove();
    const cells = tr.children.length;
    const to = action.startsWith("move:") ? action.slice(5) : null;
    const named = action === "duplicate" || action === "rename";
    const input = h("input", { type: "text", value: action === "duplicate" ? `${r.name}-copy` : r.name, spellcheck: "false", "aria-label": "New name", id: "new-name" });
    const what = to
      ? `Move ${r.name} to ${to}? It is written and checked there first, then disabled here (its file goes to routines/.trash); its history here stays.`
      : { duplicate: "Duplicate as", rename: "Rename to", remove: `Remove ${r.name}? Its file moves to routines/.trash and its history stays.` }[action];
    const submit = () => confirm(action, r.name, input.value.trim(), form);
    // A plain button (Enter in the field submits too): nothing here is a page submission.
    const go = h("button", { class: action === "remove" ? "danger" : "primary", type: "button", id: "inline-confirm", onclick: submit }, to ? "Move" : { duplicate: "Duplicate", rename: "Rename", remove: "Remove" }[action]);
    const form = h(
      "form",
      { class: "row", onsubmit: (ev) => (ev.preventDefault(), submit()) },
      h("span", {}, what),
      named ? input : null,
      go,
      h("button", { type: "button", onclick: () => (row.remove(), reloadIfHeld()) }, "Cancel"),
      h("span", { class: "muted small", role: "alert" }),
    );
    const row = h("tr", { class: "inline-form" }, h("td", { colspan: cells }, form));
    tr.after(row);
    (named ? input : go).focus();
    if (named) input.select();
  }

  async function confirm(action, name, newName, form) {
    try {
      if (action.startsWith("move:")) {
        const moved = await call("move_routine", { name, to: action.slice(5) });
        status.textContent = `Moved ${name} to ${moved.to}: it runs there now (${moved.file_there}). Its history here stays; its old file is in Removed routines below.`;
      } else if (action === "remove") {
        await call("remove_routine", { name });
        status.textContent = `Removed ${name}. Restore it from Removed routines below.`;
      } else {
        const done = await call(action === "duplicate" ? "duplicate_routine" : "rename_routine", { name, newName });
        status.textContent = action === "duplicate" ? `Copied ${name} to ${done.name} (${done.file}).` : `Renamed ${name} to ${done.name}; its history follows it.`;
      }
      form.closest("tr").remove();
      load();
    } catch (e) {
      form.querySelector("[role=alert]").textContent = errorText(e);
    }
  }

  /** @param {import("../lib/types.js").RoutineOverview[]} rows */
  function render(rows) {
    if (rows.length === 0) {
      replace(body, empty("No routines yet — create one with New routine, or add a YAML file to the routines folder:", h("code", {}, ui.state?.routines_dir ?? "routines/")));
      return;
    }
    const table = h(
      "table",
      { class: "list" },
      h("thead", {}, h("tr", {}, h("th", {}, "Routine"), h("th", {}, "Schedule"), h("th", {}, "Next"), h("th", {}, "Last run"), h("th", {}, "State"), h("th", { class: "actions" }, h("span", { class: "sr" }, "Actions")))),
      h("tbody", {}, rows.map(row)),
    );
    replace(body, table);
  }

  /** @param {import("../lib/types.js").RoutineOverview} r */
  function row(r) {
    const tr = h("tr", { dataset: { routine: r.name }, class: r.valid ? "" : "invalid" });
    const title = r.valid ? h("a", { href: `#/routine/${encodeURIComponent(r.name)}`, title: `Why ${r.name} did or did not run` }, h("strong", {}, r.name)) : h("strong", {}, r.name);
    // An agent routine that opted out of the sandbox says so beside its kind, never quietly.
    const unboxed = r.sandbox_off ? h("span", { class: "quiet", "data-sandbox-off": "", title: "Its runs are not put in the machine's sandbox (sandbox: off)" }, " · sandbox off") : null;
    // A routine an agent wrote (through MCP) says so, and whose follow-up it is.
    const byAgent = r.created_by ? h("span", { class: "quiet", "data-created-by": r.created_by, title: r.scheduled_by ?? "Created by an agent through Nightshift's MCP tools" }, ` · by an agent (${r.created_by})`) : null;
    const name = h("td", {}, title, h("div", { class: "muted small" }, r.kind ? `${r.kind}${r.hosts.length ? ` on ${r.hosts.join(" or ")}` : ""}` : r.file, unboxed, byAgent, r.kind ? ` · ${r.file}` : null), r.scheduled_by ? h("div", { class: "muted small", "data-scheduled-by": "" }, r.scheduled_by) : null);
    const edit = h("a", { href: `#/edit/${encodeURIComponent(r.name)}`, class: "button", title: `Edit ${r.file}` }, "Edit");
    const more = (...actions) =>
      h(
        "details",
        { class: "more" },
        h("summary", { "aria-label": `More actions for ${r.name}` }, "⋯"),
        h("div", { class: "menu" }, actions.map(([action, label]) => h("button", { dataset: { action }, onclick: (ev) => (ev.target.closest("details").open = false, inlineForm(tr, r, action)) }, label))),
      );
    if (!r.valid) {
      tr.append(
        name,
        h("td", { colspan: 4 }, badge("invalid"), h("ul", { class: "errors" }, r.errors.map((e) => h("li", {}, h("code", {}, e)))), warningList(r)),
        h("td", { class: "actions" }, edit, more(["remove", "Remove…"])),
      );
      return tr;
    }
    const next = r.next_fire ? h("span", { title: full(r.next_fire) }, ago(r.next_fire), h("div", { class: "muted small" }, full(r.next_fire))) : h("span", { class: "muted" }, "—");
    const last = r.last_run
      ? h("a", { href: `#/run/${r.last_run.id}`, title: r.last_run.started_at ? full(r.last_run.started_at) : "" }, badge(r.last_run.status), r.last_run.reason ? h("span", { class: "muted small" }, ` ${reasonText(r.last_run.reason)}`) : null)
      : h("span", { class: "muted" }, "never");
    // Its last slot did nothing (`notify_missed`): said until it runs again.
    const quiet = r.quiet ? h("div", { class: "small quiet", "data-quiet": r.quiet }, `⚠ has not run — ${r.quiet}`) : null;
    const unpushed = r.push_failed ? h("div", { class: "small quiet", "data-push-failed": r.push_failed }, `⚠ ${r.push_failed}`) : null;
    const stateBadge = badge(r.state === "enabled" ? "enabled" : r.state, r.paused_reason ?? undefined);
    const paused = r.state === "paused" || r.state === "auto_paused";
    const runNow = h("button", { class: "primary", onclick: () => runNowClicked(r.name, runNow) }, "Run now");
    const toggle = h("button", { onclick: () => setPaused(r.name, !paused) }, paused ? "Resume" : "Pause");
    tr.append(
      name,
      h("td", {}, r.schedule_words, h("div", { class: "muted small" }, h("code", {}, r.schedule ?? "")), h("div", { class: "strip-cell" }), warningList(r)),
      h("td", {}, next),
      h("td", {}, last, quiet, unpushed),
      h("td", {}, stateBadge, r.paused_reason ? h("div", { class: "muted small" }, r.paused_reason) : null),
      h("td", { class: "actions" }, runNow, toggle, edit, more(["duplicate", "Duplicate…"], ["rename", "Rename…"], ["remove", "Remove…"], ...(homes ?? []).map((x) => [`move:${x}`, `Move to ${x}…`]))),
    );
    return tr;
  }

  /** What the file says that the routine runs without, or takes another way (never blocking). */
  function warningList(r) {
    return r.warnings.length ? h("ul", { class: "warnings small" }, r.warnings.map((w) => h("li", {}, h("code", {}, w)))) : null;
  }

  /**
   * Run `name` now; `here`: although its `devices:` does not list this machine (recorded on the
   * run). A refusal for that reason offers "Run here anyway".
   * @param {string} name
   * @param {HTMLButtonElement} button
   * @param {boolean} [here]
   */
  async function runNowClicked(name, button, here = false) {
    button.disabled = true;
    try {
      const id = await call("run_now", { name, here });
      status.textContent = `Started ${name}.`;
      ui.go(`#/run/${id}`);
    } catch (e) {
      status.replaceChildren(`Could not start ${name}: ${errorText(e)}`);
      button.disabled = false;
      if (/** @type {any} */ (e)?.code === "other_device") {
        const anyway = h("button", { id: "run-here-anyway", onclick: () => runNowClicked(name, anyway, true) }, "Run here anyway");
        status.append(" ", anyway);
      }
    }
  }

  async function setPaused(name, paused) {
    try {
      await call("set_routine_paused", { name, paused });
      status.textContent = `${paused ? "Paused" : "Resumed"} ${name}.`;
      load();
    } catch (e) {
      status.textContent = errorText(e);
    }
  }

  // A catch-up pass emits many events at once: reload once for a burst.
  let pending = null;
  const stop = onEngine((ev) => {
    if (!["routines_changed", "run_finished", "run_started", "routine_paused", "engine_state", "resync"].includes(ev.type)) return;
    clearTimeout(pending);
    pending = setTimeout(load, 150);
  });
  load();
  return () => {
    clearTimeout(pending);
    stop();
  };
}

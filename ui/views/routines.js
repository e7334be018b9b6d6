// Routines: schedule in words, next fire, last run, state; Run now and pause/resume.
import { call, errorText, onEngine } from "../lib/api.js";
import { badge, empty, h, replace } from "../lib/dom.js";
import { ago, full } from "../lib/format.js";

export function mount(root, _params, ui) {
  const status = h("p", { class: "notice", role: "status", id: "routines-status" });
  const body = h("div", { id: "routines" });
  replace(root, h("h2", {}, "Routines"), status, body);

  async function load() {
    try {
      const rows = await call("list_routines");
      render(rows);
    } catch (e) {
      replace(body, empty(`Could not load routines: ${errorText(e)}`));
    }
  }

  function render(rows) {
    if (rows.length === 0) {
      replace(body, empty("No routines yet — add a YAML file to the routines folder, or copy the example.", h("code", {}, ui.state?.routines_dir ?? "routines/")));
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

  function row(r) {
    const tr = h("tr", { dataset: { routine: r.name }, class: r.valid ? "" : "invalid" });
    const name = h("td", {}, h("strong", {}, r.name), h("div", { class: "muted small" }, r.kind ? `${r.kind} · ${r.file}` : r.file));
    if (!r.valid) {
      tr.append(
        name,
        h("td", { colspan: 4 }, badge("invalid"), h("ul", { class: "errors" }, r.errors.map((e) => h("li", {}, h("code", {}, e))))),
        h("td", { class: "actions" }),
      );
      return tr;
    }
    const next = r.next_fire ? h("span", { title: full(r.next_fire) }, ago(r.next_fire), h("div", { class: "muted small" }, full(r.next_fire))) : h("span", { class: "muted" }, "—");
    const last = r.last_run
      ? h("a", { href: `#/run/${r.last_run.id}`, title: r.last_run.started_at ? full(r.last_run.started_at) : "" }, badge(r.last_run.status), r.last_run.reason ? h("span", { class: "muted small" }, ` ${r.last_run.reason.replaceAll("_", " ")}`) : null)
      : h("span", { class: "muted" }, "never");
    const stateBadge = badge(r.state === "enabled" ? "enabled" : r.state, r.paused_reason ?? undefined);
    const paused = r.state === "paused" || r.state === "auto_paused";
    const runNow = h("button", { class: "primary", onclick: () => runNowClicked(r.name, runNow) }, "Run now");
    const toggle = h("button", { onclick: () => setPaused(r.name, !paused) }, paused ? "Resume" : "Pause");
    tr.append(
      name,
      h("td", {}, r.schedule_words, h("div", { class: "muted small" }, h("code", {}, r.schedule ?? ""))),
      h("td", {}, next),
      h("td", {}, last),
      h("td", {}, stateBadge, r.paused_reason ? h("div", { class: "muted small" }, r.paused_reason) : null),
      h("td", { class: "actions" }, runNow, toggle),
    );
    return tr;
  }

  async function runNowClicked(name, button) {
    button.disabled = true;
    try {
      const id = await call("run_now", { name });
      status.textContent = `Started ${name}.`;
      ui.go(`#/run/${id}`);
    } catch (e) {
      status.textContent = `Could not start ${name}: ${errorText(e)}`;
      button.disabled = false;
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

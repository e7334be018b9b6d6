// History: newest first, a page at a time (cursor) as you scroll, filtered by routine and status.
// Live: engine events add a run as queued/running and turn it to its final state in place.
import { call, errorText, onEngine } from "../lib/api.js";
import { badge, empty, h, replace } from "../lib/dom.js";
import { cost, duration, full, trigger, when } from "../lib/format.js";
import { STATUS_LABEL, STATUSES } from "../lib/vocabulary.js";

const PAGE = 50;

export function mount(root, params, ui) {
  const filters = { routine: params.get("routine") ?? "", status: params.get("status") ?? "" };
  const routineSelect = h("select", { id: "filter-routine", "aria-label": "Routine", onchange: () => setFilter("routine", routineSelect.value) }, h("option", { value: "" }, "All routines"));
  const statusSelect = h(
    "select",
    { id: "filter-status", "aria-label": "Status", onchange: () => setFilter("status", statusSelect.value) },
    h("option", { value: "" }, "All statuses"),
    STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, STATUS_LABEL[s])),
  );
  const tbody = h("tbody", { id: "history-rows" });
  const table = h(
    "table",
    { class: "list", id: "history" },
    h("thead", {}, h("tr", {}, h("th", {}, "Routine"), h("th", {}, "Trigger"), h("th", {}, "Status"), h("th", {}, "Started"), h("th", { class: "num" }, "Duration"), h("th", { class: "wide" }, "Account"), h("th", { class: "num wide" }, "Cost"))),
    tbody,
  );
  const more = h("button", { id: "load-more", onclick: () => loadMore() }, "Load older runs");
  const footer = h("div", { class: "list-footer", role: "status", id: "history-footer" });
  const box = h("div", { id: "history-box" }, table);
  replace(root, h("div", { class: "toolbar" }, h("h2", {}, "History"), routineSelect, statusSelect), box, footer);

  let cursor = null;
  let loading = false;
  let done = false;
  let generation = 0;
  const rows = new Map(); // run id → <tr>

  call("list_routines")
    .then((rs) => {
      for (const r of rs) routineSelect.append(h("option", { value: r.name, selected: r.name === filters.routine }, r.name));
    })
    .catch(() => {});

  function setFilter(key, value) {
    filters[key] = value;
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", `#/history${q.size ? `?${q}` : ""}`);
    reset();
  }

  function reset() {
    generation += 1;
    cursor = null;
    done = false;
    loading = false; // a page still loading for the old filter is dropped when it arrives
    rows.clear();
    tbody.replaceChildren();
    loadMore();
  }

  async function loadMore() {
    if (loading || done) return;
    loading = true;
    const mine = generation;
    replace(footer, "Loading…");
    try {
      const page = await call("list_runs", { routine: filters.routine || null, status: filters.status || null, cursor, limit: PAGE });
      if (mine !== generation) return;
      for (const run of page.runs) if (!rows.has(run.id)) tbody.append(row(run));
      cursor = page.next_cursor;
      done = !cursor;
      if (rows.size === 0) {
        replace(footer, empty(filters.routine || filters.status ? "No runs match these filters." : "No runs yet — press Run now on a routine, or wait for its schedule."));
      } else {
        replace(footer, done ? `${rows.size} runs · that is all` : h("span", {}, `${rows.size} runs shown `, more));
      }
    } catch (e) {
      replace(footer, `Could not load history: ${errorText(e)} `, more);
    } finally {
      if (mine === generation) loading = false;
    }
    // A tall window may show the whole first page: fetch until it scrolls.
    if (!done && mine === generation && footerVisible()) loadMore();
  }

  function footerVisible() {
    const r = footer.getBoundingClientRect();
    return r.top < window.innerHeight + 200;
  }

  /** @param {import("../lib/types.js").RunRecord} run */
  function matches(run) {
    return (!filters.routine || run.routine === filters.routine) && (!filters.status || run.status === filters.status);
  }

  /** @param {import("../lib/types.js").RunRecord} run */
  function row(run) {
    const tr = h(
      "tr",
      { dataset: { id: run.id, status: run.status }, class: "clickable", onclick: (ev) => ev.target.closest("a") || ui.go(`#/run/${run.id}`) },
      h("td", {}, h("a", { href: `#/run/${run.id}` }, run.routine)),
      h("td", {}, trigger(run.trigger)),
      h("td", {}, badge(run.status), run.reason ? h("span", { class: "reason" }, run.reason.replaceAll("_", " ")) : null),
      h("td", { title: full(run.started_at ?? run.scheduled_for) }, when(run.started_at ?? run.scheduled_for)),
      h("td", { class: "num" }, duration(run.duration_ms)),
      h("td", { class: "wide" }, run.account ?? "—"),
      h("td", { class: "num wide" }, cost(run.cost_usd)),
    );
    rows.set(run.id, tr);
    return tr;
  }

  // Infinite scroll: the footer coming into view loads the next page.
  const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadMore(), { rootMargin: "200px" });
  observer.observe(footer);
  // Also on scroll: the observer only reports changes, and a page that arrived while the footer
  // stayed in view would otherwise wait for the next change.
  const onScroll = () => footerVisible() && loadMore();
  window.addEventListener("scroll", onScroll, { passive: true });

  const stop = onEngine((ev) => {
    if (ev.type === "resync") return reset();
    if (!("run" in ev)) return;
    const run = ev.run;
    const existing = rows.get(run.id);
    if (existing) {
      const fresh = row(run);
      existing.replaceWith(fresh);
      if (!matches(run)) fresh.remove();
    } else if (matches(run)) {
      tbody.prepend(row(run));
    }
  });

  reset();
  return () => {
    stop();
    observer.disconnect();
    window.removeEventListener("scroll", onScroll);
  };
}

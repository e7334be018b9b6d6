// History: newest first, a page at a time (cursor) as you scroll, filtered by routine and status.
// Live: engine events add a run as queued/running and turn it to its final state in place.
//
// The rows scroll inside their own box and the footer ("N runs shown · Load older runs") sits
// below it, so a page arriving never moves the button under the pointer onto a row (which would
// open that run instead). Whatever arrives while the user pages — runs starting and finishing, a
// `resync` after dropped events — keeps the rows already loaded and the place scrolled to.
import { call, errorText, onEngine } from "../lib/api.js";
import { badge, reasonText, empty, h, replace } from "../lib/dom.js";
import { cost, duration, full, trigger, when } from "../lib/format.js";
import { STATUS_LABEL, STATUSES } from "../lib/vocabulary.js";

const PAGE = 50;
/** The most rows one request may ask for (the engine's MAX_PAGE); a resync reloads in these. */
const RELOAD_PAGE = 200;

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
  const said = h("span", { id: "history-count" });
  const footer = h("div", { class: "list-footer", role: "status", id: "history-footer" }, said, more);
  // The end of the list: coming into view (inside the box) loads the next page.
  const end = h("div", { id: "history-end", "aria-hidden": "true" });
  const box = h("div", { id: "history-box" }, table, end);
  replace(root, h("div", { class: "toolbar" }, h("h2", {}, "History"), routineSelect, statusSelect), box, footer);

  let cursor = null;
  let loading = false;
  let done = false;
  let failed = null; // the last page's error, shown until a page loads
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
    start();
  }

  /** From the top, for new filters: the old rows go (they are another list). */
  function start() {
    generation += 1;
    cursor = null;
    done = false;
    loading = false; // a page still loading for the old filter is dropped when it arrives
    failed = null;
    rows.clear();
    tbody.replaceChildren();
    box.scrollTop = 0;
    loadMore();
  }

  /** The footer says how many rows are shown and offers the next page; it keeps its place. */
  function showFooter() {
    more.hidden = done && !failed;
    more.disabled = loading;
    more.textContent = loading ? "Loading…" : "Load older runs";
    if (failed) replace(said, `Could not load history: ${failed} `);
    else if (rows.size === 0 && done) replace(said, empty(filters.routine || filters.status ? "No runs match these filters." : "No runs yet — press Run now on a routine, or wait for its schedule."));
    else if (rows.size === 0) replace(said, "");
    else replace(said, done ? `${rows.size} runs · that is all` : `${rows.size} runs shown `);
  }

  /** One page of the list as filtered now, from `from` (null: the newest). */
  function pageOf(from, limit) {
    return call("list_runs", { routine: filters.routine || null, status: filters.status || null, cursor: from, limit });
  }

  /**
   * Read pages as this view's one load: the footer says "Loading…" meanwhile and shows its error
   * after. `work` gets `stale()`: true once a newer load (new filters, a resync) made this one moot.
   */
  async function load(mine, work) {
    const stale = () => mine !== generation;
    loading = true;
    showFooter();
    try {
      await work(stale);
      if (!stale()) failed = null;
    } catch (e) {
      if (!stale()) failed = errorText(e);
    } finally {
      if (!stale()) {
        loading = false;
        showFooter();
      }
    }
  }

  async function loadMore() {
    if (loading || (done && !failed)) return;
    const mine = generation;
    await load(mine, async (stale) => {
      const page = await pageOf(cursor, PAGE);
      if (stale()) return;
      for (const run of page.runs) if (!rows.has(run.id)) tbody.append(row(run));
      cursor = page.next_cursor;
      done = !cursor;
    });
    // A tall box may show the whole page: fetch until it scrolls.
    if (!done && !failed && mine === generation && endVisible()) loadMore();
  }

  /**
   * After a gap in the events (`resync`): read again, from the top, as many rows as are loaded,
   * and swap them in at once — the list is never emptied meanwhile, and the row at the top of the
   * box stays where it was.
   */
  async function reload() {
    generation += 1;
    const want = Math.max(rows.size, PAGE);
    await load(generation, async (stale) => {
      const fresh = [];
      let next = null;
      do {
        const page = await pageOf(next, Math.min(RELOAD_PAGE, want - fresh.length));
        if (stale()) return;
        fresh.push(...page.runs);
        next = page.next_cursor;
      } while (next && fresh.length < want);
      const anchor = topRow();
      const seen = new Set();
      const ordered = [];
      for (const run of fresh) {
        if (seen.has(run.id)) continue;
        seen.add(run.id);
        ordered.push(row(run));
      }
      for (const [id, tr] of [...rows]) if (!seen.has(id)) (tr.remove(), rows.delete(id));
      tbody.replaceChildren(...ordered);
      keepInPlace(anchor);
      cursor = next;
      done = !next;
    });
  }

  /** The first row visible at the top of the box, and how far below the box's top it is. */
  function topRow() {
    const top = box.getBoundingClientRect().top;
    for (const tr of tbody.rows) {
      const r = tr.getBoundingClientRect();
      if (r.bottom > top) return { id: tr.dataset.id, offset: r.top - top };
    }
    return null;
  }

  /** Scroll so the anchor row is where it was (if it is still listed). */
  function keepInPlace(anchor) {
    const tr = anchor && rows.get(anchor.id);
    if (!tr || box.scrollTop === 0) return;
    box.scrollTop += tr.getBoundingClientRect().top - box.getBoundingClientRect().top - anchor.offset;
  }

  function endVisible() {
    const b = box.getBoundingClientRect();
    return end.getBoundingClientRect().top < b.bottom + 200;
  }

  /** @param {import("../lib/types.js").RunRecord} run */
  function matches(run) {
    return (!filters.routine || run.routine === filters.routine) && (!filters.status || run.status === filters.status);
  }

  /** Runs that hold a call while they ask (`on_denial: ask`), and each row's run as last shown. */
  const waiting = new Set();
  /** @type {Map<string, import("../lib/types.js").RunRecord>} */
  const shown = new Map();
  /** Show a run's row again (its waiting mark came or went). @param {string} id */
  function again(id) {
    const existing = rows.get(id);
    const run = shown.get(id);
    if (existing && run) existing.replaceWith(row(run));
  }
  call("list_asks", {})
    .then((asks) => asks.forEach((a) => (waiting.add(a.run_id), again(a.run_id))))
    .catch(() => {});

  /** @param {import("../lib/types.js").RunRecord} run */
  function row(run) {
    shown.set(run.id, run);
    const tr = h(
      "tr",
      { dataset: { id: run.id, status: run.status }, class: "clickable", onclick: (ev) => ev.target.closest("a") || ui.go(`#/run/${run.id}`) },
      h(
        "td",
        {},
        h("a", { href: `#/run/${run.id}` }, run.routine),
        // Where it ran when not here (the run's page names the workflow run and links to it).
        run.host ? h("span", { class: "muted small host", title: run.remote_url ?? "over SSH" }, ` on ${run.host}`) : null,
      ),
      h("td", {}, trigger(run.trigger)),
      h(
        "td",
        {},
        badge(run.status),
        run.reason ? h("span", { class: "reason" }, reasonText(run.reason)) : null,
        // A run that waits for a time (a retry's backoff, a limit's reset) says until when, and why.
        run.status === "queued" && run.due_at ? h("span", { class: "reason waiting", title: run.message ?? "" }, `waiting until ${when(run.due_at)}`) : null,
        // A run that holds a call until the user answers (its detail has Approve and Deny).
        waiting.has(run.id) ? h("span", { class: "reason waiting", "data-asks": "" }, "waiting for approval") : null,
      ),
      h("td", { title: full(run.started_at ?? run.scheduled_for) }, when(run.started_at ?? run.scheduled_for)),
      h("td", { class: "num" }, duration(run.duration_ms)),
      h("td", { class: "wide" }, run.account ?? "—"),
      h("td", { class: "num wide" }, cost(run.cost_usd)),
    );
    rows.set(run.id, tr);
    return tr;
  }

  // Infinite scroll: the end of the list coming into view in the box loads the next page.
  const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadMore(), { root: box, rootMargin: "200px" });
  observer.observe(end);
  // Also on scroll: the observer only reports changes, and a page that arrived while the end
  // stayed in view would otherwise wait for the next change.
  box.addEventListener("scroll", () => endVisible() && loadMore(), { passive: true });

  const stop = onEngine((ev) => {
    if (ev.type === "resync") return void reload();
    if (ev.type === "approval_asked" || ev.type === "approval_answered") {
      if (ev.type === "approval_asked") waiting.add(ev.run_id);
      else waiting.delete(ev.run_id);
      return void again(ev.run_id);
    }
    if (!("run" in ev)) return;
    const run = ev.run;
    const existing = rows.get(run.id);
    if (existing) {
      const fresh = row(run);
      existing.replaceWith(fresh);
      if (!matches(run)) (fresh.remove(), rows.delete(run.id));
    } else if (matches(run)) {
      // A new run goes on top; someone scrolled down keeps looking at the same rows.
      const anchor = topRow();
      tbody.prepend(row(run));
      keepInPlace(anchor);
    }
  });

  start();
  return () => {
    stop();
    observer.disconnect();
  };
}

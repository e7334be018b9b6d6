// Usage: the budgets (spent of each, until when); cost and tokens per day over 30 or 90 days,
// stacked by routine or account; runs per day by final status; each account's usage windows (the
// highest share used each day, with the 80 % and 95 % marks); the routines that cost most; the
// month so far; the disk each routine's runs take. Every chart has its table (see lib/chart.js). The numbers are the engine's sums — a
// figure no run reported is "–", never 0.
import { call, errorText, onEngine } from "../lib/api.js";
import { empty, h, replace } from "../lib/dom.js";
import { lines, stackedBars } from "../lib/chart.js";
import { cost, full } from "../lib/format.js";
import { NEVER_STARTED, STATUS_TONE } from "../lib/vocabulary.js";

const tokens = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(Math.round(n)));
const count = (n) => String(Math.round(n));
const percent = (n) => `${Math.round(n)} %`;
const money = (n) => (n === 0 ? "$0" : cost(n));
const bytes = (n) => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(1)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);
const dash = (v, f) => (v === null || v === undefined ? "–" : f(v));
// A status's bar in the engine's tone, lighter for runs that never started a process.
const statusClass = (s) => (STATUS_TONE[s] ? `tone-${STATUS_TONE[s]}${NEVER_STARTED.includes(s) ? "-light" : ""}` : "tone-muted");

export function mount(root) {
  /** @type {{ days: number, by: import("../lib/types.js").UsageBy }} */
  const choice = { days: 30, by: "routine" };
  const controls = h(
    "div",
    { class: "toolbar", role: "group", "aria-label": "Usage window" },
    h("h2", {}, "Usage"),
    h("span", { class: "spacer" }),
    h("label", {}, "Days ", select("usage-days", [["30", "30 days"], ["90", "90 days"]], (v) => ((choice.days = Number(v)), load()))),
    h("label", {}, "Stacked by ", select("usage-by", [["routine", "routine"], ["account", "account"]], (v) => ((choice.by = v === "account" ? "account" : "routine"), load()))),
  );
  const body = h("div", { id: "usage" }, h("p", { class: "muted" }, "Adding up…"));
  const disk = h("section", { id: "disk-usage", class: "card" }, h("p", { class: "muted" }, "Measuring disk use…"));
  replace(root, controls, body, disk);

  async function load() {
    try {
      render(await call("usage_report", { days: choice.days, by: choice.by }));
    } catch (e) {
      replace(body, empty(`Could not add up usage: ${errorText(e)}`));
    }
  }

  /** @param {import("../lib/types.js").UsageReport} r */
  function render(r) {
    const m = r.month;
    const month = h(
      "section",
      { class: "card month", id: "usage-month" },
      h("h3", {}, r.month_name),
      h("p", { class: "big" }, dash(m.cost_usd, money)),
      h("p", { class: "muted" }, `${m.runs} runs · ${dash(m.input_tokens, tokens)} input · ${dash(m.output_tokens, tokens)} output tokens`),
    );
    const top = h(
      "section",
      { class: "card", id: "usage-top" },
      h("h3", {}, `Top routines by cost, last ${r.days.length} days`),
      r.top.length
        ? h(
            "table",
            { class: "list" },
            h("thead", {}, h("tr", {}, ["Routine", "Runs", "Cost", "Input", "Output", "Cache read", "Cache write"].map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", {}, r.top.map((u) => h("tr", {}, h("th", { scope: "row" }, u.key), h("td", { class: "num" }, u.runs), h("td", { class: "num" }, dash(u.cost_usd, money)), [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens].map((v) => h("td", { class: "num" }, dash(v, tokens)))))),
          )
        : h("p", { class: "muted" }, "No runs in this window."),
    );
    replace(
      body,
      r.budgets.length ? budgets(r.budgets) : null,
      month,
      stackedBars({ id: "chart-cost", title: `Cost per day by ${r.by}`, days: r.days, series: r.cost, format: money }),
      stackedBars({ id: "chart-tokens", title: `Tokens per day by ${r.by} (input + output)`, days: r.days, series: r.tokens, format: tokens }),
      stackedBars({ id: "chart-runs", title: "Runs per day by final status", days: r.days, series: r.runs_by_status, format: count, classOf: (s) => statusClass(s.key) }),
      r.windows.length ? lines({ id: "chart-windows", title: "Usage windows: the highest share used each day", days: r.days, series: r.windows, format: percent, marks: [80, 95] }) : null,
      top,
    );
  }

  /** Each budget as a meter: spent of cap in its period, and when it frees. @param {import("../lib/types.js").BudgetState[]} list */
  function budgets(list) {
    return h(
      "section",
      { class: "card", id: "usage-budgets" },
      h("h3", {}, "Budgets"),
      h(
        "table",
        { class: "list" },
        h("thead", {}, h("tr", {}, ["Budget", "Period", "Spent", "Of", "", "Frees"].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          list.map((b) => {
            const used = b.cap > 0 ? Math.min(b.spent / b.cap, 1) : 1;
            return h(
              "tr",
              { dataset: { scope: b.scope, period: b.period }, class: used >= 1 ? "tone-bad" : used >= 0.8 ? "tone-warn" : "" },
              h("th", { scope: "row" }, b.scope),
              h("td", {}, b.period === "day" ? "today" : "this month"),
              h("td", { class: "num" }, money(b.spent)),
              h("td", { class: "num" }, money(b.cap)),
              h("td", {}, h("meter", { min: "0", max: "1", low: "0.8", high: "0.99", optimum: "0", value: String(used), "aria-label": `${Math.round(used * 100)} % of ${b.scope}'s ${b.period} budget` })),
              h("td", { class: "small" }, `${full(b.frees_at)} (${b.timezone})`),
            );
          }),
        ),
      ),
    );
  }

  async function loadDisk() {
    try {
      const rows = await call("disk_usage");
      replace(
        disk,
        h("h3", {}, "Disk used per routine"),
        h("p", { class: "muted small" }, "Logs, reports and attempt files under runs/; retention (keep_runs_days, keep_runs_per_routine) keeps this in bounds."),
        rows.length
          ? h("table", { class: "list" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Routine"), h("th", { scope: "col" }, "Runs kept"), h("th", { scope: "col" }, "On disk"))), h("tbody", {}, rows.map((d) => h("tr", { dataset: { routine: d.routine } }, h("th", { scope: "row" }, d.routine), h("td", { class: "num" }, d.runs), h("td", { class: "num" }, bytes(d.bytes))))))
          : h("p", { class: "muted" }, "No run files yet."),
      );
    } catch (e) {
      replace(disk, h("p", { class: "notice" }, `Could not measure disk use: ${errorText(e)}`));
    }
  }

  let pending = null;
  const stop = onEngine((ev) => {
    if (ev.type !== "run_finished" && ev.type !== "resync") return;
    clearTimeout(pending);
    pending = setTimeout(load, 500);
  });
  load();
  loadDisk();
  return () => {
    clearTimeout(pending);
    stop();
  };
}

function select(id, options, onchange) {
  return h("select", { id, onchange: (ev) => onchange(ev.target.value) }, options.map(([value, label]) => h("option", { value }, label)));
}

// Charts drawn as plain SVG (no library, nothing from a CDN; colours come from the stylesheet's
// classes, so the dark theme and the CSP need nothing extra). Every chart comes with its table —
// the same numbers for keyboard and screen-reader users, and for copying.
import { h, svg } from "./dom.js";

const W = 640;
const H = 180;
const PAD = { left: 56, right: 8, top: 8, bottom: 22 };
/** Series colours: `.series-0` … `.series-7` in style.css; more series share the last ("other"). */
export const PALETTE = 8;

/** Stacked bars, one per day: `days` ["2026-11-01", …], `series` [{key, values: [n|null…]}]. */
export function stackedBars({ id, title, days, series, format, classOf = (_s, i) => `series-${Math.min(i, PALETTE - 1)}` }) {
  const totals = days.map((_, d) => series.reduce((sum, s) => sum + (s.values[d] ?? 0), 0));
  const max = Math.max(0, ...totals);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const barW = Math.max(1, plotW / Math.max(days.length, 1) - 2);
  const y = (v) => PAD.top + plotH - (max > 0 ? (v / max) * plotH : 0);
  const bars = [];
  days.forEach((day, d) => {
    let base = 0;
    series.forEach((s, i) => {
      const v = s.values[d];
      if (!v) return;
      const x = PAD.left + d * (plotW / days.length) + 1;
      bars.push(svg("rect", { x: x.toFixed(1), y: y(base + v).toFixed(1), width: barW.toFixed(1), height: Math.max(0.5, y(base) - y(base + v)).toFixed(1), class: classOf(s, i) }, svg("title", {}, `${day} · ${s.key}: ${format(v)}`)));
      base += v;
    });
  });
  const axis = [
    svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "axis" }),
    svg("text", { x: PAD.left - 4, y: y(max) + 4, "text-anchor": "end", class: "tick" }, format(max)),
    svg("text", { x: PAD.left - 4, y: y(0), "text-anchor": "end", class: "tick" }, format(0)),
    days.length ? svg("text", { x: PAD.left, y: H - 6, class: "tick" }, days[0]) : null,
    days.length > 1 ? svg("text", { x: W - PAD.right, y: H - 6, "text-anchor": "end", class: "tick" }, days.at(-1)) : null,
  ];
  const total = totals.reduce((a, b) => a + b, 0);
  const summary = `${title}: ${format(total)} in all over ${days.length} days; highest day ${format(max)}.`;
  return h(
    "figure",
    { class: "chart", id },
    h("figcaption", {}, h("strong", {}, title), h("span", { class: "muted small" }, ` · ${format(total)} in all`)),
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary, class: "bars" }, axis, bars),
    legend(series, classOf),
    table(title, days, series, format),
  );
}

/** Lines over the days, for shares (0–100) that must not be stacked: `marks` [80, 95] are drawn
 * as dashed rules; a day without a value breaks its line. */
export function lines({ id, title, days, series, format, marks = [], classOf = (_s, i) => `series-${Math.min(i, PALETTE - 1)}` }) {
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const x = (d) => PAD.left + (days.length > 1 ? (d / (days.length - 1)) * plotW : plotW / 2);
  const y = (v) => PAD.top + plotH - (Math.min(Math.max(v, 0), 100) / 100) * plotH;
  const drawn = series.flatMap((s, i) => {
    // Runs of consecutive days with a value, each its own polyline.
    const runs = [[]];
    s.values.forEach((v, d) => (v === null || v === undefined ? runs.push([]) : runs.at(-1).push(`${x(d).toFixed(1)},${y(v).toFixed(1)}`)));
    const dots = s.values.map((v, d) => (v === null || v === undefined ? null : svg("circle", { cx: x(d).toFixed(1), cy: y(v).toFixed(1), r: 2.5, class: classOf(s, i) }, svg("title", {}, `${days[d]} · ${s.key}: ${format(v)}`))));
    return [...runs.filter((r) => r.length > 1).map((r) => svg("polyline", { points: r.join(" "), class: classOf(s, i) })), ...dots];
  });
  const axis = [
    svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "axis" }),
    ...marks.map((m) => svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(m), y2: y(m), class: "mark" })),
    ...[100, ...marks, 0].map((m) => svg("text", { x: PAD.left - 4, y: y(m) + 4, "text-anchor": "end", class: "tick" }, format(m))),
    days.length ? svg("text", { x: PAD.left, y: H - 6, class: "tick" }, days[0]) : null,
    days.length > 1 ? svg("text", { x: W - PAD.right, y: H - 6, "text-anchor": "end", class: "tick" }, days.at(-1)) : null,
  ];
  const highest = Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null && v !== undefined)));
  const summary = `${title}: ${series.length} series over ${days.length} days; highest ${format(highest)}.`;
  return h(
    "figure",
    { class: "chart", id },
    h("figcaption", {}, h("strong", {}, title)),
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary, class: "bars" }, axis, drawn),
    legend(series, classOf),
    table(title, days, series, format),
  );
}

function legend(series, classOf) {
  return h(
    "ul",
    { class: "legend", "aria-hidden": "true" },
    series.map((s, i) => h("li", {}, svg("svg", { width: 10, height: 10, viewBox: "0 0 10 10" }, svg("rect", { width: 10, height: 10, class: classOf(s, i) })), ` ${s.key}`)),
  );
}

/** The chart's numbers: a day per row, a series per column, totals last. */
function table(title, days, series, format) {
  const cell = (v) => (v === null || v === undefined ? "–" : format(v));
  return h(
    "details",
    { class: "chart-table" },
    h("summary", {}, `${title} as a table`),
    h(
      "table",
      { class: "list" },
      h("caption", { class: "sr" }, title),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day"), series.map((s) => h("th", { scope: "col" }, s.key)))),
      h(
        "tbody",
        {},
        days.map((day, d) => h("tr", {}, h("th", { scope: "row" }, day), series.map((s) => h("td", { class: "num" }, cell(s.values[d]))))),
      ),
    ),
  );
}

// A routine's last two weeks as a strip: one mark per slot (or per stretch of time when there are
// many), coloured by its fate. Hovering or focusing a mark says its sentence below the strip;
// a mark with a run opens it. Marks are links or focusable items, so the keyboard reaches each.
import { h } from "../lib/dom.js";
import { full } from "../lib/format.js";

/** @param {string} name @param {import("../lib/types.js").Mark[]} marks */
export function strip(name, marks) {
  const says = h("p", { class: "strip-says muted small", "aria-live": "polite" }, "Hover or focus a mark to see what happened.");
  const show = (m) => () => (says.textContent = `${when(m)}: ${m.sentence}`);
  const items = marks.map((m) => {
    const attrs = { class: `mark tone-${m.tone}`, title: `${when(m)}: ${m.sentence}`, "aria-label": `${when(m)}: ${m.sentence}`, dataset: { fate: m.fate }, onmouseenter: show(m), onfocus: show(m), role: "listitem" };
    return m.run_id ? h("a", { ...attrs, href: `#/run/${m.run_id}` }) : h("span", { ...attrs, tabindex: "0", onclick: show(m) });
  });
  return h("div", { class: "strip-box" }, h("div", { class: "strip", role: "list", "aria-label": `${name}: the last 14 days, one mark per slot` }, items), says);
}

/** @param {import("../lib/types.js").Mark} m */
function when(m) {
  return m.from === m.to ? full(m.from) : `${full(m.from)} – ${full(m.to)}`;
}

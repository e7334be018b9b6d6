// A routine's detail: why each slot of the last days did or did not run, newest first, with the
// evidence (asleep, no Nightshift running, paused, skipped, blocked, …), the last two weeks as a
// strip, and the next fire with what it depends on — the same words as `nightshiftctl why`.
import { call, errorText, onEngine } from "../lib/api.js";
import { empty, h, replace } from "../lib/dom.js";
import { duration, full } from "../lib/format.js";
import { strip } from "./strip.js";

export function mount(root, params, ui) {
  const name = params.get("id");
  const body = h("div", { id: "routine-why" }, h("p", { class: "muted" }, "Reading the evidence…"));
  replace(root, h("div", { class: "toolbar" }, h("h2", {}, name), h("span", { class: "spacer" }), h("a", { class: "button", href: `#/history?routine=${encodeURIComponent(name)}` }, "History"), h("a", { class: "button", href: `#/edit/${encodeURIComponent(name)}` }, "Edit")), body);

  async function load() {
    try {
      const [why, strips] = await Promise.all([call("routine_why", { name, days: 7 }), call("routine_strips")]);
      render(why, strips[name] ?? []);
    } catch (e) {
      replace(body, empty(`Could not explain ${name}: ${errorText(e)}`));
    }
  }

  /** @param {import("../lib/types.js").Why} why @param {import("../lib/types.js").Mark[]} marks */
  function render(why, marks) {
    replace(
      body,
      h("p", {}, why.schedule_words ?? ""),
      marks.length ? h("section", { class: "card" }, h("h3", {}, "The last 14 days"), strip(name, marks)) : null,
      h("p", { class: "next", id: "why-next" }, h("strong", {}, "Next: "), why.next),
      why.notes.map((n) => h("p", { class: "muted why-note" }, n)),
      why.lines.length
        ? h(
            "table",
            { class: "list why", id: "why-lines" },
            h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Slot"), h("th", { scope: "col" }, "What happened"))),
            h(
              "tbody",
              {},
              why.lines.map((l) =>
                h(
                  "tr",
                  { dataset: { fate: l.fate } },
                  h("td", {}, h("span", { class: `mark tone-${l.tone}`, "aria-hidden": "true" }), " ", l.slots > 1 ? `${full(l.from)} – ${full(l.at)} (${l.slots} slots)` : full(l.at)),
                  h("td", {}, l.run_id ? h("a", { href: `#/run/${l.run_id}` }, l.sentence, l.fate === "ran" && l.duration_ms != null ? ` in ${duration(l.duration_ms)}` : "") : l.sentence),
                ),
              ),
            ),
          )
        : null,
    );
  }

  const stop = onEngine((ev) => ["run_finished", "routines_changed", "routine_paused", "resync"].includes(ev.type) && load());
  load();
  return stop;
}

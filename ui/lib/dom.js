// Building DOM without HTML strings: every string becomes a text node, so agent output and file
// contents are inert wherever they appear. The one exception is a report, which arrives as HTML
// already sanitized in Rust (pulldown-cmark + ammonia) and is inserted by `trustedReport` only.

import { BADGE, REASON_LABEL } from "./vocabulary.js";

/** h("a", {href: "#/x", class: "y", onclick: fn}, "text", child…) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A run status, routine state or account verdict as a coloured word — the engine's words and
 *  tone for it (`BADGE`, generated), so the window and `nightshiftctl` say the same. */
export function badge(word, title, text) {
  const known = BADGE[word];
  const tone = known?.tone ?? "muted";
  return h("span", { class: `badge badge-${word} badge-tone-${tone}`, title }, text ?? known?.label ?? String(word ?? ""));
}

/** A reason in the engine's words ("auth failed"). */
export function reasonText(reason) {
  return REASON_LABEL[reason] ?? String(reason ?? "");
}

/** Insert a report rendered and sanitized by the engine. Links never navigate the window. */
export function trustedReport(el, sanitizedHtml, openLink) {
  el.innerHTML = sanitizedHtml; // sanitized in Rust: no script, no handlers, only http/https/mailto links
  for (const a of el.querySelectorAll("a[href]")) {
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      openLink(a.getAttribute("href"));
    });
  }
}

export function empty(text, ...more) {
  return h("div", { class: "empty" }, h("p", {}, text), ...more);
}

const SVG = "http://www.w3.org/2000/svg";
/** Like `h`, for SVG elements (attributes only: no inline style, which the CSP forbids). */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.setAttribute("class", v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// Times in the user's locale and zone; durations and money the short way.

import { TRIGGER_LABEL } from "./vocabulary.js";

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function parse(iso) {
  return iso ? new Date(iso) : null;
}

/** "Nov 30, 2026, 9:00 AM" (or just the time for today). */
export function when(iso) {
  const t = parse(iso);
  if (!t) return "—";
  const today = new Date();
  return t.toDateString() === today.toDateString() ? timeOnly.format(t) : dateTime.format(t);
}

export function full(iso) {
  const t = parse(iso);
  return t ? dateTime.format(t) : "—";
}

/** "in 3 hours", "5 minutes ago". */
export function ago(iso, now = Date.now()) {
  const t = parse(iso);
  if (!t) return "";
  const s = Math.round((t.getTime() - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 45) return relative.format(Math.round(s), "second");
  if (abs < 2700) return relative.format(Math.round(s / 60), "minute");
  if (abs < 64800) return relative.format(Math.round(s / 3600), "hour");
  return relative.format(Math.round(s / 86400), "day");
}

/** The engine's one duration format (nightshift_core::view::duration): "850ms", "42s", "4m 12s",
 * "2h 05m" — the window says what the CLI and the notifications say (a UI test compares them). */
export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  const s = Math.floor(ms / 1000);
  if (s < 1) return `${ms}ms`;
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export function cost(usd) {
  return usd === null || usd === undefined ? "—" : `$${usd.toFixed(usd < 0.01 ? 4 : 2)}`;
}

export function trigger(t) {
  return TRIGGER_LABEL[t] ?? t;
}

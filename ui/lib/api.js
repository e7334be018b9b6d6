// The engine, through one of the window's two transports — the same commands either way
// (nightshift_core::api), errors as {code, message}:
// - in the app: its Tauri commands and its one event channel ("engine");
// - in a browser (`nightshiftctl serve`): POST /api/<command> with the access token in a header,
//   and the events as a stream from /api/events. The token arrives once in the URL (?token=…),
//   is kept for this tab only (sessionStorage) and removed from the address bar.
// The window shows one home at a time: this machine's, or another machine's (`[[homes]]`, the
// header's switcher). Another home's calls go through `home_call` — the same commands, answered
// there — and only its events (relayed, tagged with `home`) reach the views.
const tauri = window.__TAURI__;

/** @type {string | null} */
let home = sessionStorage.getItem("nightshift-home") || null;

/** Commands always answered here: they are about this machine or its homes. */
const HERE = new Set(["open_link", "list_homes", "home_call"]);

/** The home the window shows (`null`: this machine's). */
export function currentHome() {
  return home;
}

/**
 * Show another home (`null`: this machine's): every view reads it from now on.
 * @param {string | null} name
 */
export function setHome(name) {
  home = name || null;
  if (home) sessionStorage.setItem("nightshift-home", home);
  else sessionStorage.removeItem("nightshift-home");
  if (!tauri) restartEvents();
  dispatch({ type: "resync" });
}

const token = tauri ? null : takeToken();

function takeToken() {
  const url = new URL(location.href);
  const given = url.searchParams.get("token");
  if (given) {
    sessionStorage.setItem("nightshift-token", given);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem("nightshift-token");
}

/** @typedef {import("./types.js").Commands} Commands */

/**
 * Call a window command; its arguments and answer are the engine's (`Commands` in types.d.ts,
 * generated from Rust), so the type check catches a field or argument the engine does not have.
 * @template {keyof Commands} C
 * @param {C} command
 * @param {Commands[C]["args"]} [args]
 * @returns {Promise<Commands[C]["answer"]>}
 */
export async function call(command, args) {
  args ??= /** @type {Commands[C]["args"]} */ ({});
  if (home && !HERE.has(command)) {
    const there = await callHere("home_call", { home, command, args: /** @type {any} */ (args) });
    return /** @type {Commands[C]["answer"]} */ (there);
  }
  return callHere(command, args);
}

/**
 * A command answered by this machine's engine.
 * @template {keyof Commands} C
 * @param {C} command
 * @param {Commands[C]["args"]} args
 * @returns {Promise<Commands[C]["answer"]>}
 */
async function callHere(command, args) {
  if (tauri) return tauri.core.invoke(command, args);
  const res = await fetch(`/api/${command}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token ?? ""}` },
    body: JSON.stringify(args),
  });
  const text = await res.text();
  if (res.ok) return text ? JSON.parse(text) : null;
  let err;
  try {
    err = JSON.parse(text);
  } catch {
    err = { code: res.status === 401 ? "unauthorized" : "http", message: text || `HTTP ${res.status}` };
  }
  throw err;
}

export function errorText(e) {
  return e?.message ?? String(e);
}

const handlers = new Set();

/**
 * Call `fn(event)` for each engine event; returns a function that stops it.
 * @param {(event: import("./types.js").WindowEvent) => void} fn
 */
export function onEngine(fn) {
  handlers.add(fn);
  return () => handlers.delete(fn);
}

function dispatch(payload) {
  // Only the shown home's events (the app relays every home's, each tagged with its name).
  if ((payload.home ?? null) !== home && payload.type !== "home_state") return;
  for (const fn of [...handlers]) {
    try {
      fn(payload);
    } catch (err) {
      console.error(err);
    }
  }
}

/** The browser's event stream now (aborted to follow another home's). Declared before the
 * stream starts below: a `let` read before its line throws.
 * @type {AbortController | null} */
let following = null;

if (tauri) {
  tauri.event.listen("engine", (e) => dispatch(e.payload));
} else {
  followEvents();
}

/** Follow the shown home's stream instead (the switcher changed it). */
function restartEvents() {
  following?.abort();
}

/** Read the server's event stream; after a drop, reconnect and tell the views to resync. */
async function followEvents() {
  for (let wait = 500; ; wait = Math.min(wait * 2, 10000)) {
    const shown = home;
    following = new AbortController();
    try {
      const path = shown ? `/api/events?home=${encodeURIComponent(shown)}` : "/api/events";
      const res = await fetch(path, { headers: { Authorization: `Bearer ${token ?? ""}` }, signal: following.signal });
      if (res.ok && res.body) {
        wait = 500;
        dispatch({ type: "resync" });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let end;
          while ((end = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            for (const line of block.split("\n")) {
              if (line.startsWith("data: ")) dispatch({ ...JSON.parse(line.slice(6)), ...(shown ? { home: shown } : {}) });
            }
          }
        }
      }
    } catch (err) {
      if (!following.signal.aborted) console.warn("event stream:", err);
    }
    // Switched to another home: its stream at once; else wait a little longer each time.
    if (!following.signal.aborted) await new Promise((r) => setTimeout(r, wait));
  }
}

export function listen(name, fn) {
  if (tauri) tauri.event.listen(name, (e) => fn(e.payload));
}

export function openLink(url) {
  if (!tauri) {
    // In a browser the page opens it itself (only web and mail links, like the app).
    if (/^(https?:|mailto:)/i.test(url.trim())) window.open(url, "_blank", "noopener,noreferrer");
    return Promise.resolve();
  }
  return call("open_link", { url }).catch((e) => console.warn(errorText(e)));
}

// The engine, through the app's own Tauri commands (errors arrive as {code, message}) and its one
// event channel ("engine": every engine event as it happens).
const tauri = window.__TAURI__;

export function call(command, args = {}) {
  return tauri.core.invoke(command, args);
}

export function errorText(e) {
  return e?.message ?? String(e);
}

const handlers = new Set();

/** Call `fn(event)` for each engine event; returns a function that stops it. */
export function onEngine(fn) {
  handlers.add(fn);
  return () => handlers.delete(fn);
}

if (tauri) {
  tauri.event.listen("engine", (e) => {
    for (const fn of [...handlers]) {
      try {
        fn(e.payload);
      } catch (err) {
        console.error(err);
      }
    }
  });
}

export function listen(name, fn) {
  if (tauri) tauri.event.listen(name, (e) => fn(e.payload));
}

export function openLink(url) {
  return call("open_link", { url }).catch((e) => console.warn(errorText(e)));
}

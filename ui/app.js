// The window: a header with the engine's state, four views (Routines, History, Usage, Accounts),
// a routine's detail (why each slot did or did not run), a run's detail and a routine's form and editor, routed by the URL hash. Agent output is never inserted as HTML except a report
// the engine rendered and sanitized (see lib/dom.js).
import { call, currentHome, errorText, listen, onEngine, setHome } from "./lib/api.js";
import { h, replace } from "./lib/dom.js";
import * as accounts from "./views/accounts.js";
import * as edit from "./views/edit.js";
import * as history from "./views/history.js";
import * as newRoutine from "./views/new.js";
import * as routine from "./views/routine.js";
import * as routines from "./views/routines.js";
import * as run from "./views/run.js";
import * as usage from "./views/usage.js";

const VIEWS = { routines, history, usage, accounts, run, routine, new: newRoutine, edit };
// Views reached from another one: its tab stays highlighted.
const UNDER = { run: "history", new: "routines", edit: "routines", routine: "routines" };
const view = document.getElementById("view");
const ui = { state: null, go, relogin, showRelogin };
let unmount = null;

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/**
 * "#/history?routine=x" → ["history", URLSearchParams]; "#/run/ID" → ["run", {id}].
 * @returns {[string, URLSearchParams]}
 */
function parseHash() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, id] = path.split("/");
  const params = new URLSearchParams(query ?? "");
  if (id) params.set("id", decodeURIComponent(id));
  return [VIEWS[name] ? name : "routines", params];
}

function route() {
  // #/relogin/<account> (where the tray's Re-login opens a new window): the Accounts view with the
  // panel (the engine gives the command again; no terminal could be opened, or one is now).
  // `?home=NAME`: an account of another home (the tray's Re-login ▸ on mac-mini).
  const reloginAt = location.hash.match(/^#\/relogin\/([^?]+)(?:\?home=(.+))?$/);
  if (reloginAt) {
    window.history.replaceState(null, "", "#/accounts"); // (`history` here is the History view)
    if (reloginAt[2]) showHome(decodeURIComponent(reloginAt[2]));
    relogin(decodeURIComponent(reloginAt[1]));
  }
  const [name, params] = parseHash();
  unmount?.();
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll("nav a"))) {
    const current = a.dataset.view === (UNDER[name] ?? name);
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  unmount = VIEWS[name].mount(view, params, ui) ?? null;
  view.dataset.view = name;
}

// The home switcher: this machine's home, or another one's (`[[homes]]`); hidden with none.
const homeSwitch = /** @type {HTMLSelectElement} */ (document.getElementById("home-switch"));
async function refreshHomes() {
  try {
    const homes = await call("list_homes");
    const options = [h("option", { value: "" }, "This machine"), ...homes.map((x) => h("option", { value: x.name }, x.reachable ? x.name : `${x.name} — unreachable`))];
    replace(homeSwitch, ...options);
    homeSwitch.value = currentHome() ?? "";
    /** @type {HTMLElement} */ (document.getElementById("home-switch-label")).hidden = homes.length === 0 && !currentHome();
  } catch (e) {
    console.warn(errorText(e));
  }
}
/** @param {string | null} name */
function showHome(name) {
  setHome(name);
  homeSwitch.value = name ?? "";
  refreshState();
  // A run, routine or form of one home means nothing on another: back to the list of its kind.
  const [view] = parseHash();
  const lists = ["routines", "history", "usage", "accounts"];
  if (lists.includes(view)) route();
  else go(`#/${lists.includes(UNDER[view]) ? UNDER[view] : "routines"}`);
}
homeSwitch.addEventListener("change", () => showHome(homeSwitch.value || null));
onEngine((ev) => {
  if (ev.type === "home_state") refreshHomes();
});

// Header: who schedules this home, how many runs are going, pause all.
const stateLine = document.getElementById("engine-state");
const problemsBox = document.getElementById("problems");
const pauseButton = document.getElementById("pause-all");
// Answers can come back out of order (each call is its own task in the engine): only the answer to
// the latest question is shown, so an older state never overwrites a newer one — the header and
// the Pause/Resume button always say what a click on it will change.
let stateAsked = 0;
async function refreshState() {
  const asked = ++stateAsked;
  try {
    const s = await call("engine_state");
    if (asked !== stateAsked) return;
    ui.state = s;
    const going = [s.running && `${s.running} running`, s.queued && `${s.queued} queued`].filter(Boolean).join(" · ");
    let text;
    const where = currentHome() ? `${currentHome()} (${s.device}) · ` : "";
    if (s.scheduled_elsewhere) text = `${s.scheduled_elsewhere} schedules this home; this window views and controls it`;
    else if (s.paused) text = "Paused — no scheduled runs start";
    else if (s.scheduling) text = "Scheduling";
    else if (s.problems.length) text = "Not scheduling — see the problem above";
    else text = "Starting…";
    replace(stateLine, h("span", { class: `dot ${s.paused ? "paused" : s.running ? "running" : "idle"}` }), where, text, going ? ` · ${going}` : "");
    // A full disk, a damaged database, a run that could not be recorded: said in full, atop every view.
    replace(problemsBox, ...s.problems.map((p) => h("p", {}, p)));
    problemsBox.hidden = s.problems.length === 0;
    stateLine.title = `Home: ${s.home} · device: ${s.device}`;
    pauseButton.textContent = s.paused ? "Resume all" : "Pause all";
    pauseButton.dataset.paused = s.paused ? "1" : "";
    pauseButton.hidden = false;
  } catch (e) {
    if (asked === stateAsked) stateLine.textContent = currentHome() ? `${currentHome()}: ${errorText(e)} — retrying` : `Engine unavailable: ${errorText(e)}`;
  }
}
pauseButton.addEventListener("click", async () => {
  try {
    await call("set_paused", { paused: !pauseButton.dataset.paused });
  } catch (e) {
    stateLine.textContent = errorText(e);
  }
  refreshState();
});
let stateTimer = null;
onEngine((ev) => {
  if (["engine_state", "run_started", "run_finished", "run_queued", "resync"].includes(ev.type)) {
    clearTimeout(stateTimer);
    stateTimer = setTimeout(refreshState, 100);
  }
});

// Re-login: a terminal with the agent's own login (`claude /login`, `codex login`, `gemini`) when
// one can be opened, else this panel with the exact command and a field for the agent's secret
// (a setup token, an API key).
const panel = document.getElementById("relogin");
let reloginAccount = null;
let reloginSecret = "setup token";
/** @param {{ account: string, command: string, opened: string | null, secret?: string, secret_how?: string }} r */
function showRelogin({ account, command, opened, secret, secret_how }) {
  reloginAccount = account;
  if (secret) {
    reloginSecret = secret;
    document.getElementById("relogin-secret").replaceChildren(`…or paste a ${secret} from `, Object.assign(document.createElement("code"), { textContent: secret_how }), "; it is stored in the OS keychain and never shown again.");
    document.getElementById("token-label").textContent = secret.charAt(0).toUpperCase() + secret.slice(1);
  }
  document.getElementById("relogin-account").textContent = account;
  document.getElementById("relogin-command").textContent = command;
  document.getElementById("relogin-opened").textContent = opened ? `Opened ${opened} running the login. When it is done, press Check on the account.` : "No terminal could be opened here. Run this in a terminal:";
  document.getElementById("token-result").textContent = "";
  panel.hidden = false;
  document.getElementById("token").focus();
}
async function relogin(account) {
  try {
    const r = await call("relogin", { email: account });
    showRelogin({ account, command: r.command, opened: r.opened, secret: r.secret, secret_how: r.secret_how });
  } catch (e) {
    showRelogin({ account, command: "", opened: null });
    document.getElementById("token-result").textContent = errorText(e);
  }
}
document.getElementById("relogin-close").addEventListener("click", () => (panel.hidden = true));
document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const field = /** @type {HTMLInputElement} */ (document.getElementById("token"));
  const token = field.value;
  field.value = ""; // never kept on screen
  try {
    await call("set_token", { email: reloginAccount, token });
    document.getElementById("token-result").textContent = `Stored the ${reloginSecret} for ${reloginAccount} in the OS keychain.`;
  } catch (e) {
    document.getElementById("token-result").textContent = errorText(e);
  }
});
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && !panel.hidden) panel.hidden = true;
});

listen("open-run", (id) => go(`#/run/${id}`));
listen("relogin", (p) => {
  // Another home's account: show that home, and ask it for the login command.
  if (p.home) {
    showHome(p.home);
    relogin(p.account);
  } else showRelogin(p);
});
window.addEventListener("hashchange", route);

refreshHomes();
refreshState();
route();

// The page's entry points, also used by the end-to-end test through WebDriver.
window.nightshiftUi = { openRun: (id) => go(`#/run/${id}`), relogin: showRelogin, go, showHome };

// The window's behaviour. Agent output is untrusted: it is only ever inserted as text.
const tauri = window.__TAURI__;

function show(id) {
  document.getElementById(id).hidden = false;
}

function text(id, value) {
  document.getElementById(id).textContent = value ?? "";
}

// A notification's "Open": show that run.
async function openRun(id) {
  try {
    const view = await tauri.core.invoke("get_run", { id });
    const run = view.run;
    text("run-title", `${run.routine} · ${run.status}${run.reason ? ` (${run.reason})` : ""}`);
    text("run-message", run.message);
    text("run-report", view.report);
    show("run");
  } catch (e) {
    text("run-title", "Run not found");
    text("run-message", e.message ?? String(e));
    show("run");
  }
}

// Re-login where no terminal could be opened: the exact command, and a field for a setup token.
let reloginAccount = null;
function relogin({ account, command }) {
  reloginAccount = account;
  text("relogin-account", account);
  text("relogin-command", command);
  text("token-result", "");
  show("relogin");
  document.getElementById("token").focus();
}

document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const field = document.getElementById("token");
  const token = field.value;
  field.value = ""; // never kept on screen
  try {
    await tauri.core.invoke("set_token", { email: reloginAccount, token });
    text("token-result", `Stored the setup token for ${reloginAccount} in the OS keychain.`);
  } catch (e) {
    text("token-result", e.message ?? String(e));
  }
});

if (tauri) {
  tauri.event.listen("open-run", (e) => openRun(e.payload));
  tauri.event.listen("relogin", (e) => relogin(e.payload));
}

// The page's entry points, also used by the end-to-end test through WebDriver.
window.nightshiftUi = { openRun, relogin };

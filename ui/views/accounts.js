// Accounts: each account's auth health with the evidence behind it, where its credential comes
// from, expiry and rate-limit reset, its usage windows; Re-login, Set token (paste → OS keychain;
// never shown again), Check; its reserve and (Claude) the opt-in usage probe. Below them the routines' secrets by name (never a value) and the hosts routines
// run on (`host:`: over SSH, or a repository's GitHub Actions runners), with their health.
import { call, errorText, onEngine } from "../lib/api.js";
import { badge, empty, h, replace } from "../lib/dom.js";
import { ago, full } from "../lib/format.js";
import { BADGE, NEEDS_LOGIN } from "../lib/vocabulary.js";

const AGENTS = { claude: "Claude", codex: "Codex", gemini: "Gemini CLI", opencode: "OpenCode", copilot: "Copilot CLI" };
/** @param {import("../lib/types.js").AccountHealth} a */
const source = (a) =>
  ({ keychain: `${a.secret} in the OS keychain`, env: `${a.secret} from the environment`, agent_login: `${AGENTS[a.agent] ?? a.agent} login in its config dir`, none: "no credential" })[a.source] ?? a.source;
const capital = (s) => s.charAt(0).toUpperCase() + s.slice(1);

export function mount(root, _params, ui) {
  const status = h("p", { class: "notice", role: "status", id: "accounts-status" });
  const body = h("div", { id: "accounts" }, h("p", { class: "muted" }, "Checking accounts…"));
  const secretsBody = h("div", { id: "secrets" });
  const hostsBody = h("div", { id: "hosts" });
  replace(root, h("h2", {}, "Accounts"), status, body, secretsBody, hostsBody);

  async function load() {
    try {
      render(await call("list_accounts"));
    } catch (e) {
      replace(body, empty(`Could not check accounts: ${errorText(e)}`));
    }
    try {
      renderSecrets(await call("list_secrets"));
    } catch (e) {
      replace(secretsBody, empty(`Could not list the secrets: ${errorText(e)}`));
    }
    try {
      renderHosts(await call("list_hosts"));
    } catch (e) {
      replace(hostsBody, empty(`Could not read the hosts: ${errorText(e)}`));
    }
  }

  /** The routines' secrets (`secrets:`), names only: where each is kept, or that it is missing
   * and how to set it (none: nothing shown). @param {import("../lib/types.js").SecretView[]} secrets */
  function renderSecrets(secrets) {
    if (secrets.length === 0) return replace(secretsBody);
    const where = (s) => (s.source === "keychain" ? `in the OS keychain${s.set_at ? ` since ${full(s.set_at)}` : ""}` : s.source === "environment" ? `from NIGHTSHIFT_SECRET_${s.name} in the environment` : "missing — its routines' runs are blocked");
    replace(
      secretsBody,
      h("h2", {}, "Secrets"),
      h(
        "table",
        { class: "list", id: "secrets-list" },
        h("thead", {}, h("tr", {}, ["Name", "Kept", "Used by"].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          secrets.map((s) =>
            h(
              "tr",
              { dataset: { secret: s.name, source: s.source } },
              h("th", { scope: "row" }, h("code", {}, s.name)),
              h("td", {}, where(s), s.source === "missing" ? h("div", {}, h("code", {}, `nightshiftctl secrets set ${s.name}`)) : null),
              h("td", {}, s.used_by.length ? s.used_by.join(", ") : h("span", { class: "muted" }, "no routine")),
            ),
          ),
        ),
      ),
    );
  }

  /** The machines routines are placed on (none: nothing shown). @param {import("../lib/types.js").HostView[]} hosts */
  function renderHosts(hosts) {
    if (hosts.length === 0) return replace(hostsBody);
    replace(hostsBody, h("h2", {}, "Hosts"), hosts.map(hostCard));
  }

  /** @param {import("../lib/types.js").HostView} host */
  function hostCard(host) {
    const state = host.checked_at === null ? "not tried yet" : host.last_error === null ? "reachable" : "unreachable";
    return h(
      "section",
      { class: "card host", dataset: { host: host.host, state } },
      h("div", { class: "toolbar" }, h("h3", {}, host.host), badge(host.checked_at === null ? "unknown" : host.last_error === null ? "ok" : "failed", undefined, state), h("span", { class: "muted small" }, host.github ? `GitHub Actions · ${host.github}` : "over SSH")),
      host.last_error ? h("p", { class: "evidence" }, host.last_error) : null,
      h("p", { class: "muted small" }, "Last seen: ", host.last_seen ? h("strong", { title: full(host.last_seen) }, ago(host.last_seen)) : "never", host.checked_at ? ` · last tried ${ago(host.checked_at)}` : ""),
      h("p", { class: "muted small" }, host.routines.length ? `Routines: ${host.routines.join(", ")}` : "No routine is placed on it now."),
      h("div", { class: "actions" }, h("button", { onclick: () => checkHost(host.host) }, "Check")),
    );
  }

  async function checkHost(host) {
    status.textContent = `Checking ${host}…`;
    try {
      status.textContent = (await call("check_host", { host })).message;
      load();
    } catch (e) {
      status.textContent = errorText(e);
    }
  }

  /** @param {import("../lib/types.js").AccountView[]} accounts */
  function render(accounts) {
    if (accounts.length === 0) {
      replace(
        body,
        empty(
          "No accounts yet. Command routines need none; for agent routines add one (claude, codex, gemini, opencode or copilot):",
          h("pre", {}, h("code", {}, "nightshiftctl accounts add claude you@example.com\nnightshiftctl accounts set-token you@example.com")),
        ),
      );
      return;
    }
    replace(body, accounts.map(card));
  }

  /** "3 runs · 12.4k tokens in, 2.1k out" for a window (or "no runs"). */
  function windowWords(u) {
    if (!u) return "no runs";
    const t = (n) => (n === null || n === undefined ? "–" : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));
    return `${u.runs} run${u.runs === 1 ? "" : "s"} · ${t(u.input_tokens)} tokens in, ${t(u.output_tokens)} out`;
  }

  /** "5-hour window", "7-day window", "7-day window (opus)". @param {string} name */
  function windowName(name) {
    if (name === "five_hour") return "5-hour window";
    if (name === "seven_day") return "7-day window";
    return name.startsWith("seven_day_") ? `7-day window (${name.slice(10)})` : name.replace(/_/g, " ");
  }

  /** Each usage window the account's agent reported: a meter of its used share and the countdown
   * to its reset (a window past its reset shows as reset). @param {import("../lib/types.js").LimitWindow[]} windows */
  function limitWindows(windows) {
    if (!windows.length) return h("p", { class: "muted small limit-windows" }, "No usage windows reported yet (Claude Code reports them with a subscription's runs).");
    return h(
      "div",
      { class: "limit-windows" },
      windows.map((w) =>
        h(
          "p",
          { class: "limit-window", dataset: { window: w.window, status: w.status } },
          h("strong", {}, windowName(w.window)),
          h("meter", { min: "0", max: "100", low: "80", high: "95", optimum: "0", value: String(w.used_percent), "aria-label": `${windowName(w.window)}: ${Math.round(w.used_percent)} % used` }),
          ` ${Math.round(w.used_percent)} % used`,
          w.status === "reset"
            ? " · reset"
            : w.resets_at
              ? h("span", {}, " · resets ", h("strong", { title: full(w.resets_at), class: "countdown", dataset: { at: w.resets_at } }, ago(w.resets_at)))
              : null,
          h("span", { class: "muted small", title: full(w.seen_at) }, ` · seen ${ago(w.seen_at)}`),
        ),
      ),
    );
  }

  /** @param {import("../lib/types.js").AccountView} view */
  function card({ health: a, history, last_5h, last_7d, limits, reserve, usage_probe }) {
    const tokenField = h("input", { type: "password", autocomplete: "off", spellcheck: "false", required: true, "aria-label": `${capital(a.secret)} for ${a.account}`, class: "token" });
    const tokenForm = h(
      "form",
      { class: "token-form", hidden: true, onsubmit: (ev) => saveToken(ev, a, tokenField, tokenForm) },
      tokenField,
      h("button", { type: "submit", class: "primary" }, "Save token"),
    );
    const when = [];
    if (a.resets_at) when.push(h("p", {}, "Rate limit resets ", h("strong", { title: full(a.resets_at) }, ago(a.resets_at)), ` (${full(a.resets_at)})`));
    if (a.expires_at) when.push(h("p", {}, new Date(a.expires_at) > new Date() ? "Login expires " : "Login expired ", h("strong", { title: full(a.expires_at), class: "countdown", dataset: { at: a.expires_at } }, ago(a.expires_at))));
    return h(
      "section",
      { class: "card account", dataset: { account: a.account, verdict: a.verdict } },
      h("div", { class: "toolbar" }, h("h3", {}, a.account), badge(a.verdict), h("span", { class: "muted small" }, a.agent)),
      h("p", { class: "evidence" }, a.evidence, a.since ? h("span", { class: "muted small", title: full(a.since) }, ` · ${ago(a.since)}`) : null),
      when,
      limitWindows(a.windows),
      h("p", { class: "windows", dataset: { windows: "" } }, h("span", {}, h("strong", {}, "Last 5 hours: "), windowWords(last_5h)), " · ", h("span", {}, h("strong", {}, "last 7 days: "), windowWords(last_7d))),
      limits.length
        ? h(
            "details",
            { class: "limits" },
            h("summary", {}, `Rate limits in the last 30 days: ${limits.length}`),
            h("ul", {}, limits.map((l) => h("li", {}, "hit ", h("strong", {}, full(l.at)), l.resets_at ? ` · reset ${full(l.resets_at)}` : " · reset time unknown", l.run_id ? h("span", {}, " · ", h("a", { href: `#/run/${l.run_id}` }, "the run")) : null))),
          )
        : h("p", { class: "muted small limits" }, "No rate limit hit in the last 30 days."),
      h("p", { class: "muted small" }, `Credential: ${source(a)} · config dir `, h("code", {}, a.config_dir)),
      a.fix ? h("p", { class: "fix" }, a.fix) : null,
      h(
        "div",
        { class: "actions" },
        h("button", { class: NEEDS_LOGIN.includes(a.verdict) ? "primary" : "", onclick: () => ui.relogin(a.account) }, "Re-login"),
        h("button", { onclick: () => { tokenForm.hidden = !tokenForm.hidden; if (!tokenForm.hidden) tokenField.focus(); } }, "Set token"),
        h("button", { onclick: () => check(a.account) }, "Check"),
      ),
      tokenForm,
      windowOptions(a, reserve, usage_probe),
      history.length
        ? h("details", {}, h("summary", {}, "History"), h("ul", { class: "history" }, history.map((r) => h("li", {}, h("span", { class: "muted small" }, full(r.at)), " ", badge(r.verdict), " ", r.evidence))))
        : null,
    );
  }

  /** The account's reserve (a percent of its windows scheduled runs leave for you) and, for
   * Claude, the opt-in usage probe — written to nightshift.toml. */
  function windowOptions(a, reserve, usageProbe) {
    const percent = h("input", { type: "number", min: "0", max: "100", step: "1", inputmode: "numeric", value: reserve === null ? "" : String(reserve), placeholder: "none", class: "reserve", "aria-label": `Reserve of ${a.account}, percent` });
    const probe = a.agent === "claude" ? h("input", { type: "checkbox", class: "usage-probe", checked: usageProbe }) : null;
    return h(
      "form",
      { class: "window-options", onsubmit: (ev) => saveOptions(ev, a, percent, probe) },
      h("label", {}, "Keep ", percent, " % of its windows for my own work "),
      h("span", { class: "muted small" }, "(scheduled runs do not start past it; Run now may use it)"),
      probe ? h("label", { class: "probe" }, probe, " Ask Claude for live usage every 10 minutes ", h("span", { class: "muted small" }, "(a request you would not otherwise make; off by default)")) : null,
      h("button", { type: "submit" }, "Save"),
    );
  }

  async function saveOptions(ev, a, percent, probe) {
    ev.preventDefault();
    const text = percent.value.trim();
    const reserve = text === "" ? null : Number(text);
    if (reserve !== null && !(Number.isInteger(reserve) && reserve >= 0 && reserve <= 100)) {
      status.textContent = `The reserve of ${a.account} is a whole percent from 0 to 100, or empty for none.`;
      percent.focus();
      return;
    }
    try {
      await call("set_account_options", { email: a.account, reserve, usageProbe: probe ? probe.checked : false });
      status.textContent = `${a.account}: ${reserve === null ? "no reserve" : `reserve ${reserve} %`}${probe ? `, usage probe ${probe.checked ? "on" : "off"}` : ""} — saved to nightshift.toml.`;
    } catch (e) {
      status.textContent = errorText(e);
    }
  }

  async function saveToken(ev, a, field, form) {
    ev.preventDefault();
    const token = field.value;
    field.value = ""; // never kept on screen
    try {
      await call("set_token", { email: a.account, token });
      status.textContent = `Stored the ${a.secret} for ${a.account} in the OS keychain.`;
      form.hidden = true;
      load();
    } catch (e) {
      status.textContent = errorText(e);
    }
  }

  async function check(account) {
    status.textContent = `Checking ${account}…`;
    try {
      const { health } = await call("check_account", { email: account });
      status.textContent = `${account}: ${BADGE[health.verdict]?.label ?? health.verdict} — ${health.evidence}`;
      load();
    } catch (e) {
      status.textContent = errorText(e);
    }
  }

  // Countdowns tick while the view is open.
  const tick = setInterval(() => {
    for (const el of root.querySelectorAll(".countdown")) el.textContent = ago(el.dataset.at);
  }, 30000);
  load();
  const stop = onEngine((ev) => ev.type === "accounts_changed" && load());
  return () => {
    clearInterval(tick);
    stop();
  };
}

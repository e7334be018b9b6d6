// New routine: a form that writes routines/<name>.yaml. Every check is the engine's own (the
// loader's validator, run over the YAML this form makes): problems appear on their fields as the
// user types, with the words `routines validate` would print, and the schedule is shown in words
// with its next fires in the routine's zone and on this clock.
import { call, errorText } from "../lib/api.js";
import { h, replace } from "../lib/dom.js";
import { full } from "../lib/format.js";
import { MODES } from "../lib/vocabulary.js";

// Presets build the cron expression; the expression stays visible and editable.
const PRESETS = [
  { id: "weekdays", label: "Every weekday at…", time: true, cron: (m, hh) => `${m} ${hh} * * 1-5` },
  { id: "daily", label: "Every day at…", time: true, cron: (m, hh) => `${m} ${hh} * * *` },
  { id: "weekly", label: "Every week on…", time: true, day: true, cron: (m, hh, d) => `${m} ${hh} * * ${d}` },
  { id: "hourly", label: "Every hour", cron: () => "0 * * * *" },
  { id: "quarter", label: "Every 15 minutes", cron: () => "*/15 * * * *" },
  { id: "once", label: "Once, at…" },
  { id: "custom", label: "Custom (cron expression)" },
  { id: "event", label: "On a GitHub or Linear event" },
];
// What a `trigger:` may name, per type (the validator says the same if another is written).
const TRIGGER_EVENTS = { github_event: ["pull_request", "push", "issue_comment", "workflow_run"], linear_event: ["Issue", "IssueLabel", "Comment", "Project", "Cycle"] };
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
// The tools an agent most often gets, in its own names; anything else, or a rule narrower than a
// tool (`Bash(git status)`, Gemini's `run_shell_command(git status)`, OpenCode's `bash(git status)`,
// Copilot's `shell(git:*)`), goes in the text field beside them. Copilot's rules are its permission
// kinds — it reads and searches without asking. Codex has no tool list (the validator says so if one is given).
/** @type {Record<string, {tools: string[], rules: string}>} */
const COMMON_TOOLS = {
  claude: { tools: ["Read", "Grep", "Glob", "Edit", "Write", "Bash", "WebFetch", "WebSearch"], rules: "Bash(git status), Bash(npm test)" },
  gemini: { tools: ["read_file", "grep_search", "glob", "list_directory", "replace", "write_file", "run_shell_command", "web_fetch"], rules: "run_shell_command(git status)" },
  codex: { tools: [], rules: "Codex has no tool list: its sandbox (the mode) is the limit" },
  opencode: { tools: ["read", "grep", "glob", "list", "edit", "bash", "webfetch", "websearch"], rules: "bash(git status), bash(npm test)" },
  copilot: { tools: ["write", "shell", "url"], rules: "shell(git:*), shell(npm test), url(github.com)" },
};
const EFFORTS = [["", "The agent's default"], ["low", "low"], ["medium", "medium"], ["high", "high"], ["xhigh", "xhigh"], ["max", "max"]];
// "a, b(c, d), e" → ["a", "b(c, d)", "e"]: commas inside a rule's parentheses stay in it.
const splitList = (text) => {
  const out = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth = Math.max(0, depth - 1);
    if (ch === "," && depth === 0) {
      out.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  out.push(cur.trim());
  return out.filter(Boolean);
};

export function mount(root, _params, ui) {
  let options = null;
  let timer = null;
  let latest = null;
  let seq = 0;

  const field = (name, label, input, hint) => {
    input.id = `f-${name}`;
    input.name = name;
    input.setAttribute("aria-describedby", `problem-${name}`);
    return h(
      "div",
      { class: "field", dataset: { field: name } },
      h("label", { for: input.id }, label),
      input,
      hint ? h("p", { class: "muted small" }, hint) : null,
      h("p", { class: "field-problem", id: `problem-${name}`, role: "alert" }),
    );
  };

  const name = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false", placeholder: "pr-review" });
  const kindAgent = h("input", { type: "radio", name: "kind", value: "agent", id: "kind-agent", checked: true });
  const kindCommand = h("input", { type: "radio", name: "kind", value: "command", id: "kind-command" });
  const agent = h("select", {});
  const account = h("select", {});
  const prompt = h("textarea", { rows: 5, spellcheck: "true", placeholder: "Review the open pull requests and summarise what needs attention." });
  const mode = h("select", {}, MODES.map(([v, l]) => h("option", { value: v }, l)));
  const command = h("textarea", { rows: 3, spellcheck: "false", class: "mono", placeholder: "./scripts/nightly.sh" });
  const cwd = h("input", { type: "text", spellcheck: "false", placeholder: "~/code/project", class: "mono" });
  const host = h("input", { type: "text", list: "known-hosts", spellcheck: "false", autocomplete: "off", placeholder: "this machine", class: "mono" });
  const knownHosts = h("datalist", { id: "known-hosts" });
  const remoteCwd = h("input", { type: "text", spellcheck: "false", placeholder: "~/code/project", class: "mono" });
  const pickButton = h("button", { type: "button", id: "pick-folder" }, "Choose…");
  const picker = h("div", { class: "picker", id: "folder-picker", hidden: true });
  const preset = h("select", { id: "f-preset" }, PRESETS.map((p) => h("option", { value: p.id }, p.label)));
  const time = h("input", { type: "time", value: "09:00", id: "f-time", "aria-label": "Time of day" });
  const day = h("select", { id: "f-day", "aria-label": "Day of the week" }, DAYS.map((d, i) => h("option", { value: String(i) }, d)));
  const schedule = h("input", { type: "text", spellcheck: "false", class: "mono", value: "0 9 * * 1-5" });
  const at = h("input", { type: "datetime-local" });
  const timezone = h("input", { type: "text", list: "zones", spellcheck: "false", autocomplete: "off" });
  const zones = h("datalist", { id: "zones" });
  const timeout = h("input", { type: "text", placeholder: "10m", spellcheck: "false", size: 8 });
  const notify = h(
    "select",
    {},
    h("option", { value: "" }, "Default (agents: always; commands: on failure)"),
    h("option", { value: "always" }, "Always"),
    h("option", { value: "failures" }, "Only on failure"),
    h("option", { value: "never" }, "Never"),
  );
  const catchup = h("input", { type: "checkbox", checked: true });
  const enabled = h("input", { type: "checkbox", checked: true });
  const description = h("input", { type: "text" });
  const model = h("input", { type: "text", spellcheck: "false", placeholder: "the agent's default" });
  const workspace = h(
    "select",
    {},
    h("option", { value: "" }, "In the working directory itself"),
    h("option", { value: "worktree" }, "In a git worktree of its own for each run (your checkout is never touched)"),
  );
  const base = h("input", { type: "text", spellcheck: "false", class: "mono", placeholder: "the repository's HEAD" });
  const push = h("input", { type: "text", spellcheck: "false", class: "mono", placeholder: "not pushed" });
  const endAt = h("input", { type: "datetime-local" });
  const devices = h("input", { type: "text", spellcheck: "false", placeholder: "laptop, workstation" });
  const env = h("textarea", { rows: 3, spellcheck: "false", class: "mono", placeholder: "KEY=value (one per line)" });
  const webhooks = h("div", { class: "checks", id: "f-webhooks" });
  const effort = h("select", {}, EFFORTS.map(([v, l]) => h("option", { value: v }, l)));
  const toolChecks = h("div", { class: "checks", id: "tool-checks" });
  const moreTools = h("input", { type: "text", spellcheck: "false", class: "mono", id: "f-more-tools", "aria-label": "More tools or rules" });
  // The suggestions follow the agent: its own tool names (ticks on names the new agent does not
  // have are dropped with them).
  const fillTools = () => {
    const common = COMMON_TOOLS[agent.value] ?? COMMON_TOOLS.claude;
    const ticked = new Set([...toolChecks.querySelectorAll("input:checked")].map((c) => c.value));
    replace(toolChecks, common.tools.map((t) => h("label", { class: "inline" }, h("input", { type: "checkbox", value: t, checked: ticked.has(t), dataset: { tool: t } }), ` ${t}`)));
    moreTools.placeholder = common.rules;
  };
  const allowTools = h("div", { class: "tools" }, toolChecks, moreTools);
  const allowDirs = h("textarea", { rows: 2, spellcheck: "false", class: "mono", placeholder: "~/code/docs (one per line)" });
  const pickDir = h("button", { type: "button", id: "pick-allow-dir" }, "Add a folder…");
  const denyTools = h("input", { type: "text", spellcheck: "false", class: "mono", placeholder: "Bash(git push*), WebFetch" });
  const onDenial = h("input", { type: "checkbox" });
  const budgetRun = h("input", { type: "text", inputmode: "decimal", size: 7, placeholder: "run", id: "f-budget-run", "aria-label": "Per run (USD)" });
  const budgetDay = h("input", { type: "text", inputmode: "decimal", size: 7, placeholder: "day", id: "f-budget-day", "aria-label": "Per day (USD)" });
  const budgetMonth = h("input", { type: "text", inputmode: "decimal", size: 7, placeholder: "month", id: "f-budget-month", "aria-label": "Per month (USD)" });
  const budget = h("div", { class: "row" }, "$ ", budgetRun, " a run · $ ", budgetDay, " a day · $ ", budgetMonth, " a month");
  const secrets = h("div", { class: "checks", id: "f-secrets" });
  // `trigger:` — the form's "On a GitHub or Linear event".
  const triggerType = h("select", { id: "f-trigger-type", "aria-label": "From" }, h("option", { value: "github_event" }, "GitHub"), h("option", { value: "linear_event" }, "Linear"));
  const triggerEvent = h("select", { id: "f-trigger-event", "aria-label": "Event" });
  const triggerInput = (id, placeholder, label) => h("input", { type: "text", spellcheck: "false", class: "mono", id, placeholder, "aria-label": label, size: 14 });
  const triggerRepo = triggerInput("f-trigger-repo", "acme/app", "Repository (owner/name)");
  const triggerBranch = triggerInput("f-trigger-branch", "any branch", "Branch");
  const triggerAction = triggerInput("f-trigger-action", "any action", "Action");
  const triggerLabel = triggerInput("f-trigger-label", "any label", "Label");
  const triggerTeam = triggerInput("f-trigger-team", "any team (ENG)", "Team key");
  const triggerStateTo = triggerInput("f-trigger-state-to", "moved into state", "Moved into state");
  const githubOnly = [triggerRepo, triggerBranch];
  const linearOnly = [triggerTeam, triggerStateTo];
  const triggerPart = h("div", { class: "row wrap" }, triggerType, triggerEvent, ...githubOnly, triggerAction, triggerLabel, ...linearOnly);
  const fillTriggerEvents = () => {
    const keep = triggerEvent.value;
    replace(triggerEvent, TRIGGER_EVENTS[triggerType.value].map((e) => h("option", { value: e }, e)));
    if (TRIGGER_EVENTS[triggerType.value].includes(keep)) triggerEvent.value = keep;
    for (const i of githubOnly) i.hidden = triggerType.value !== "github_event";
    for (const i of linearOnly) i.hidden = triggerType.value !== "linear_event";
  };

  const general = h("div", { class: "problems-box", id: "form-problems", role: "alert", hidden: true });
  const preview = h("div", { class: "preview", id: "schedule-preview", "aria-live": "polite" });
  const yaml = h("pre", { class: "yaml", id: "yaml-preview" });
  const status = h("p", { class: "notice", role: "status", id: "new-status" });
  const save = h("button", { type: "submit", class: "primary", id: "save-routine" }, "Save routine");
  const tryNow = h("button", { type: "button", id: "try-routine", title: "Saves it disabled (it runs only by hand) and starts it now" }, "Save disabled and run now");

  const agentPart = h(
    "div",
    { class: "part", id: "agent-part" },
    field("agent", "Agent", agent),
    field("account", "Account", account, "Runs with this account's credential; “Any” takes the first healthy one."),
    field("prompt", "Prompt", prompt, "What should the agent do? {last_report} inserts the previous run's report."),
    field("mode", "Mode", mode),
  );
  const commandPart = h("div", { class: "part", id: "command-part", hidden: true }, field("command", "Shell command", command, "Run with sh -c in the working directory."));
  const hostField = field("host", "Runs on", host, "Empty: this machine. Or another machine over SSH — a host or alias from your ssh config, or user@host; the agent must be installed there.");
  hostField.append(knownHosts);
  const remoteCwdField = field("remote_cwd", "Working directory there", remoteCwd);
  remoteCwdField.hidden = true;
  const dirsField = field("allow_dirs", "Also may work in", allowDirs, "Folders beside the working directory (allow.dirs).");
  dirsField.insertBefore(pickDir, dirsField.querySelector(".field-problem"));
  const guardPart = h(
    "fieldset",
    { class: "guardrails", id: "guard-part" },
    h("legend", {}, "What it may do and spend"),
    field("effort", "Effort", effort),
    field("allow_tools", "Only these tools", allowTools, "None ticked and nothing typed: the agent's own tools. A tool left out does not exist for it, whatever the mode."),
    dirsField,
    field("deny_tools", "Never these tools", denyTools, "Comma-separated; refused in every mode."),
    field("on_denial", "Fail the run when a tool call is refused", onDenial),
  );
  const cwdField = field("cwd", "Working directory", cwd);
  cwdField.insertBefore(h("div", { class: "row" }, cwd, pickButton), cwdField.querySelector(".field-problem"));
  cwdField.append(picker);
  const worktreePart = h(
    "div",
    { class: "row wrap", id: "worktree-part", hidden: true },
    field("base", "Start from branch", base),
    field("push", "Push its branch to remote", push, "After each run, e.g. origin; a failed push is retried and the branch kept."),
  );
  const scheduleField = field("schedule", "Cron expression", schedule, "minute hour day month weekday — e.g. 30 7 * * 1-5");
  const atField = field("at", "At", at);
  atField.hidden = true;
  const triggerField = field("trigger", "Runs on", triggerPart, "Deliveries to /hooks/github and /hooks/linear fire it (nightshiftctl serve, or [hooks] listen): see Events in the manual.");
  triggerField.hidden = true;

  const form = h(
    "form",
    { class: "card routine-form", id: "routine-form", novalidate: true },
    general,
    field("name", "Name", name, "Letters, digits, - _ . — it names the file and the routine's history."),
    h("fieldset", {}, h("legend", {}, "What to run"), h("label", { class: "inline" }, kindAgent, " An AI agent"), h("label", { class: "inline" }, kindCommand, " A shell command")),
    agentPart,
    commandPart,
    hostField,
    cwdField,
    remoteCwdField,
    field("workspace", "Where it works", workspace, "A worktree run works on branch nightshift/<name>/<run id>; what it leaves is committed there."),
    worktreePart,
    h(
      "fieldset",
      { class: "when" },
      h("legend", {}, "When"),
      h("div", { class: "row" }, h("label", { for: "f-preset", class: "sr" }, "Schedule preset"), preset, time, day),
      scheduleField,
      atField,
      triggerField,
      field("timezone", "Time zone", timezone),
      zones,
      preview,
    ),
    h("div", { class: "row wrap" }, field("timeout", "Timeout", timeout), field("notify", "Notify", notify), field("catchup", "Catch up a slot missed while asleep", catchup)),
    guardPart,
    field("budget", "Budget (US dollars)", budget, "A run's cap (Claude Code stops the run), and what its runs may spend a day and a month: a run over it is blocked, saying when it frees."),
    field("secrets", "Secrets", secrets, "Stored with nightshiftctl secrets set NAME; each is given to its runs as the variable of that name, masked everywhere."),
    h(
      "details",
      { class: "advanced" },
      h("summary", {}, "Advanced"),
      field("description", "Description", description),
      field("model", "Model", model),
      field("end_at", "Stop firing after", endAt),
      field("devices", "Only on these devices", devices, "Comma-separated device names; empty: every machine that schedules this folder."),
      field("webhooks", "Webhooks", webhooks),
      field("env", "Environment", env),
      field("enabled", "Enabled", enabled),
    ),
    h("details", { class: "yaml-part" }, h("summary", {}, "The file it writes"), yaml),
    h("div", { class: "toolbar" }, save, tryNow, h("a", { href: "#/routines", class: "button" }, "Cancel")),
  );
  replace(root, h("h2", {}, "New routine"), status, form);

  function isAgent() {
    return kindAgent.checked;
  }

  function localTime(value) {
    // datetime-local gives 2026-12-24T09:00; the routine reads "2026-12-24 09:00" in its zone.
    return value ? value.replace("T", " ") : "";
  }

  function draft() {
    const p = PRESETS.find((x) => x.id === preset.value);
    const there = host.value.trim();
    /** @type {Record<string, string>} */
    const envMap = {};
    for (const line of env.value.split("\n")) {
      const i = line.indexOf("=");
      if (line.trim() && i > 0) envMap[line.slice(0, i).trim()] = line.slice(i + 1);
    }
    return {
      name: name.value.trim(),
      description: description.value,
      agent: isAgent() ? agent.value : "",
      account: isAgent() ? account.value : "",
      prompt: isAgent() ? prompt.value : "",
      mode: isAgent() && mode.value !== "auto" ? mode.value : "",
      model: isAgent() ? model.value : "",
      command: isAgent() ? "" : command.value,
      host: there,
      cwd: there ? "" : cwd.value,
      remote_cwd: there ? remoteCwd.value : "",
      placement: "",
      workspace: workspace.value,
      base: workspace.value === "worktree" ? base.value : "",
      push: workspace.value === "worktree" ? push.value : "",
      schedule: p.id === "once" || p.id === "event" ? "" : schedule.value,
      at: p.id === "once" ? localTime(at.value) : "",
      timezone: timezone.value,
      end_at: localTime(endAt.value),
      timeout: timeout.value,
      notify: notify.value,
      catchup: catchup.checked ? null : false,
      enabled: enabled.checked ? null : false,
      devices: devices.value.split(",").map((d) => d.trim()).filter(Boolean),
      webhooks: [...webhooks.querySelectorAll("input:checked")].map((c) => c.value),
      env: envMap,
      effort: isAgent() ? effort.value : "",
      allow_tools: isAgent() ? [...toolChecks.querySelectorAll("input:checked")].map((c) => c.value).concat(splitList(moreTools.value)) : [],
      allow_dirs: isAgent() ? allowDirs.value.split("\n").map((d) => d.trim()).filter(Boolean) : [],
      deny_tools: isAgent() ? splitList(denyTools.value) : [],
      on_denial: isAgent() && onDenial.checked ? "fail" : "",
      budget_run: budgetRun.value,
      budget_day: budgetDay.value,
      budget_month: budgetMonth.value,
      secrets: [...secrets.querySelectorAll("input:checked")].map((c) => c.value),
      trigger: p.id !== "event" ? {} : triggerType.value === "github_event"
        ? { type: triggerType.value, event: triggerEvent.value, repo: triggerRepo.value, branch: triggerBranch.value, action: triggerAction.value, label: triggerLabel.value }
        : { type: triggerType.value, event: triggerEvent.value, teamKey: triggerTeam.value, action: triggerAction.value, label: triggerLabel.value, stateTo: triggerStateTo.value },
      // A person's routine: only an agent's (through MCP) says who wrote it.
      created_by: "",
      parent_run: "",
    };
  }

  function fillAccounts() {
    const choice = options?.agents.find((a) => a.agent === agent.value);
    const accounts = choice?.accounts ?? [];
    replace(account, h("option", { value: "" }, accounts.length ? "Any of its accounts" : "Any (none configured: the agent's own login)"), accounts.map((a) => h("option", { value: a }, a)));
  }

  function applyPreset() {
    const p = PRESETS.find((x) => x.id === preset.value);
    const [hh, mm] = (time.value || "09:00").split(":").map(Number);
    time.hidden = !p.time;
    day.hidden = !p.day;
    scheduleField.hidden = p.id === "once" || p.id === "event";
    atField.hidden = p.id !== "once";
    triggerField.hidden = p.id !== "event";
    if (p.cron) schedule.value = p.cron(mm, hh, day.value);
    changed();
  }

  // Problems show on the fields the user has been to (a fresh form is not a page of errors), and
  // on all of them once they try to save.
  const touched = new Set();
  let revealAll = false;
  /** @param {import("../lib/types.js").FieldProblem} p */
  const visible = (p) => revealAll || (p.field && touched.has(p.field));

  function showProblems(all) {
    const problems = all.filter(visible);
    const known = new Set([...form.querySelectorAll("[data-field]")].map((f) => f.dataset.field));
    for (const el of form.querySelectorAll(".field-problem")) el.textContent = "";
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const rest = [];
    for (const p of problems) {
      if (p.field && known.has(p.field)) {
        const slot = document.getElementById(`problem-${p.field}`);
        slot.textContent = slot.textContent ? `${slot.textContent} ${p.message}` : p.message;
        document.getElementById(`f-${p.field}`)?.setAttribute("aria-invalid", "true");
      } else rest.push(p.field ? `${p.field}: ${p.message}` : p.message);
    }
    replace(general, rest.map((m) => h("p", {}, m)));
    general.hidden = rest.length === 0;
  }

  /** @param {import("../lib/types.js").Preview | null} pv */
  function showPreview(pv) {
    if (!pv || (!pv.words && pv.fires.length === 0)) {
      replace(preview, h("p", { class: "muted" }, "No fire times yet."));
      return;
    }
    replace(
      preview,
      h("p", { class: "words" }, h("strong", {}, pv.words), ` (${pv.timezone})`),
      pv.fires.length
        ? h("ol", { class: "fires" }, pv.fires.map((f) => h("li", {}, h("span", {}, f.in_zone), h("span", { class: "muted small" }, ` · your clock: ${full(f.at)}`))))
        : h("p", { class: "muted" }, preset.value === "event" ? "It runs when a delivery its trigger names arrives." : "It does not fire again."),
    );
  }

  async function check() {
    const mine = ++seq;
    try {
      const result = await call("check_routine_draft", { draft: draft() });
      if (mine !== seq) return; // a newer check is on its way
      latest = result;
      showProblems(result.problems);
      showPreview(result.preview);
      yaml.textContent = result.yaml;
      save.disabled = tryNow.disabled = result.problems.some(visible);
    } catch (e) {
      status.textContent = `Could not check the routine: ${errorText(e)}`;
    } finally {
      // What the form shows is the answer for what is in it now (no edit waiting to be checked).
      if (mine === seq && timer === null) form.removeAttribute("aria-busy");
    }
  }

  /** An edit: checked once typing pauses; until then the form says it is busy (`aria-busy`). */
  function changed() {
    form.setAttribute("aria-busy", "true");
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      check();
    }, 150);
  }

  async function submit(runNow) {
    revealAll = true;
    await check();
    if (!latest || latest.problems.length) {
      status.textContent = "Fix the problems shown on the fields first.";
      form.querySelector("[aria-invalid]")?.focus();
      return;
    }
    save.disabled = tryNow.disabled = true;
    const d = draft();
    if (runNow) d.enabled = false;
    try {
      const created = await call("create_routine", { draft: d, runNow });
      if (created.run_id) ui.go(`#/run/${created.run_id}`);
      else ui.go(`#/routines?created=${encodeURIComponent(created.name)}`);
    } catch (e) {
      status.textContent = `Not saved: ${errorText(e)}`;
      save.disabled = tryNow.disabled = false;
    }
  }

  // The folder picker: the engine lists folders (the same in the app and in a browser on `serve`).
  async function browse(path) {
    try {
      const f = await call("list_folders", { path });
      replace(
        picker,
        h("div", { class: "toolbar" }, h("code", { id: "picker-path" }, f.path), h("button", { type: "button", id: "picker-use", class: "primary", onclick: () => use(f.path) }, "Use this folder"), h("button", { type: "button", onclick: () => (picker.hidden = true) }, "Close")),
        h(
          "ul",
          { class: "folders" },
          f.parent ? h("li", {}, h("button", { type: "button", class: "link", onclick: () => browse(f.parent) }, "↑ ..")) : null,
          f.folders.map((n) => h("li", {}, h("button", { type: "button", class: "link", dataset: { folder: n }, onclick: () => browse(`${f.path.replace(/\/$/, "")}/${n}`) }, `${n}/`))),
          f.more ? h("li", { class: "muted" }, `…and ${f.more} more`) : null,
        ),
      );
      picker.hidden = false;
    } catch (e) {
      replace(picker, h("p", {}, errorText(e)), h("button", { type: "button", onclick: () => browse("") }, "Home folder"));
      picker.hidden = false;
    }
  }
  // The picker fills the working directory, or adds a folder to allow.dirs.
  let pickingFor = cwd;
  function use(path) {
    if (pickingFor === allowDirs) allowDirs.value = [...allowDirs.value.split("\n").filter((l) => l.trim()), path].join("\n");
    else cwd.value = path;
    picker.hidden = true;
    changed();
  }

  kindAgent.addEventListener("change", () => {
    agentPart.hidden = guardPart.hidden = false;
    commandPart.hidden = true;
    changed();
  });
  kindCommand.addEventListener("change", () => {
    agentPart.hidden = guardPart.hidden = true;
    commandPart.hidden = false;
    changed();
  });
  agent.addEventListener("change", () => {
    fillAccounts();
    fillTools();
    changed();
  });
  // On another machine the working directory is one there: the local folder (and its picker) gives
  // way to a path on that machine.
  host.addEventListener("input", () => {
    const remote = !!host.value.trim();
    cwdField.hidden = remote;
    remoteCwdField.hidden = !remote;
  });
  workspace.addEventListener("change", () => {
    worktreePart.hidden = workspace.value !== "worktree";
  });
  preset.addEventListener("change", applyPreset);
  time.addEventListener("input", applyPreset);
  day.addEventListener("change", applyPreset);
  schedule.addEventListener("input", () => {
    preset.value = "custom";
    time.hidden = day.hidden = true;
  });
  pickButton.addEventListener("click", () => {
    pickingFor = cwd;
    cwdField.append(picker);
    browse(cwd.value);
  });
  pickDir.addEventListener("click", () => {
    pickingFor = allowDirs;
    dirsField.append(picker);
    browse("");
  });
  const touch = (ev) => {
    const f = ev.target.closest("[data-field]")?.dataset.field;
    if (f) touched.add(f);
    // The schedule's preset, time and day build the cron expression.
    if (ev.target === preset || ev.target === time || ev.target === day) touched.add("schedule").add("at").add("trigger");
    if (ev.target === triggerType) fillTriggerEvents();
    if (ev.target === kindAgent || ev.target === kindCommand) touched.add("command");
    changed();
  };
  form.addEventListener("input", touch);
  form.addEventListener("change", touch);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submit(false);
  });
  tryNow.addEventListener("click", () => submit(true));

  (async () => {
    try {
      options = await call("routine_form");
    } catch (e) {
      status.textContent = `Could not load the form: ${errorText(e)}`;
      return;
    }
    replace(agent, options.agents.map((a) => h("option", { value: a.agent }, a.agent)));
    // Start with an agent that has an account, if any does.
    agent.value = options.agents.find((a) => a.accounts.length)?.agent ?? "claude";
    fillAccounts();
    fillTools();
    timezone.value = options.timezone;
    replace(zones, options.timezones.map((z) => h("option", { value: z })));
    replace(knownHosts, options.hosts.map((n) => h("option", { value: n })));
    replace(secrets, options.secrets.length ? options.secrets.map((n) => h("label", { class: "inline" }, h("input", { type: "checkbox", value: n, dataset: { secret: n } }), ` ${n}`)) : h("span", { class: "muted small" }, "None stored: nightshiftctl secrets set NAME (the value from standard input)."));
    replace(webhooks, options.webhooks.length ? options.webhooks.map((w) => h("label", { class: "inline" }, h("input", { type: "checkbox", value: w }), ` ${w}`)) : h("span", { class: "muted small" }, "None defined in nightshift.toml."));
    fillTriggerEvents();
    applyPreset();
    name.focus();
  })();

  return () => clearTimeout(timer);
}

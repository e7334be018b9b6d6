// Run detail: what happened in plain words with the fix, the facts, the report rendered as
// Markdown (sanitized in Rust), and the log — readable by default, raw on a toggle — following
// live while the run is going. Cancel a running run; run it again.
import { call, errorText, onEngine, openLink } from "../lib/api.js";
import { badge, reasonText, h, replace, trustedReport } from "../lib/dom.js";
import { cost, duration, full, trigger } from "../lib/format.js";
import { BADGE, LIVE, STATUS_TONE } from "../lib/vocabulary.js";

const FOLLOW_MS = 700;

/** Not final yet: the record can still change (the engine's words, `LIVE`). */
const isLive = (status) => LIVE.includes(status);

export function mount(root, params, ui) {
  const id = params.get("id");
  const head = h("div", { id: "run-head" });
  const explanation = h("section", { id: "run-explanation", class: "card" });
  const facts = h("dl", { id: "run-facts", class: "facts" });
  const attempts = h("div", { id: "run-attempts" });
  const refusals = h("div", { id: "run-refusals" });
  const deliveriesBox = h("div", { id: "run-deliveries" });
  const changesBox = h("section", { id: "run-changes", "aria-labelledby": "changes-title" });
  const report = h("article", { id: "run-report", class: "report" });
  const logBox = h("pre", { id: "run-log", class: "log", tabindex: "0", "aria-label": "Log" });
  const logMode = { readable: true, stream: /** @type {import("../lib/types.js").LogStream} */ ("stdout") };
  const readableToggle = h("input", { type: "checkbox", id: "log-raw", onchange: () => restartLog({ readable: !readableToggle.checked }) });
  const streamSelect = h("select", { id: "log-stream", "aria-label": "Stream", onchange: () => restartLog({ stream: streamSelect.value }) }, h("option", { value: "stdout" }, "output"), h("option", { value: "stderr" }, "errors (stderr)"));
  const logStatus = h("span", { class: "muted small", id: "log-status", role: "status" });
  replace(
    root,
    h("p", {}, h("a", { href: "#/history" }, "← History")),
    head,
    explanation,
    facts,
    changesBox,
    refusals,
    attempts,
    deliveriesBox,
    h("section", { "aria-labelledby": "report-title" }, h("h3", { id: "report-title" }, "Report"), report),
    h(
      "section",
      { "aria-labelledby": "log-title" },
      h("div", { class: "toolbar" }, h("h3", { id: "log-title" }, "Log"), streamSelect, h("label", { class: "check" }, readableToggle, " raw"), logStatus),
      logBox,
    ),
  );

  let run = null;
  let offset = 0;
  let logGeneration = 0;
  let timer = null;
  let stopped = false;

  // Reads can overlap (an approval's answer and the run's end, a moment apart) and their answers
  // come back in any order: only the newest read renders — an older answer once put a finished
  // run back to "running".
  let reads = 0;

  async function load() {
    const mine = ++reads;
    try {
      const detail = await call("get_run", { id });
      if (mine !== reads) return detail;
      run = detail.run;
      render(detail);
      return detail;
    } catch (e) {
      if (mine !== reads) return null;
      replace(head, h("h2", { id: "run-title" }, "Run not found"));
      replace(explanation, h("p", { id: "run-summary" }, errorText(e)));
      return null;
    }
  }

  /** @param {import("../lib/types.js").RunDetail} detail */
  function render(detail) {
    const r = detail.run;
    const actions = h("div", { class: "actions" });
    if (isLive(r.status)) {
      actions.append(h("button", { id: "cancel-run", class: "danger", onclick: cancel }, "Cancel"));
    }
    if (detail.routine_exists) actions.append(h("button", { id: "run-again", onclick: runAgain }, "Run again"));
    replace(head, h("div", { class: "toolbar" }, h("h2", { id: "run-title" }, r.routine, " ", badge(r.status)), actions));

    const x = detail.explanation;
    replace(
      explanation,
      h("p", { id: "run-summary", class: "summary" }, x.summary),
      r.message && !x.summary.includes(r.message) ? h("p", { id: "run-message", class: "muted" }, r.message) : null,
      x.fix ? h("p", { id: "run-fix", class: "fix" }, x.fix) : null,
      detail.slot_why ? h("p", { id: "run-slot-why" }, h("strong", {}, "Why: "), detail.slot_why, " · ", h("a", { href: `#/routine/${encodeURIComponent(r.routine)}` }, "every slot of this routine")) : null,
      x.relogin ? h("button", { id: "run-relogin", class: "primary", onclick: () => ui.relogin(x.relogin) }, `Re-login ${x.relogin}`) : null,
    );
    explanation.dataset.tone = STATUS_TONE[r.status] ?? "muted";

    const fact = (label, value, title) => (value === null || value === undefined || value === "" ? [] : [h("dt", {}, label), h("dd", { title }, value)]);
    replace(
      facts,
      fact("Status", [BADGE[r.status]?.label ?? r.status, r.reason ? ` (${reasonText(r.reason)})` : ""].join("")),
      fact("Trigger", trigger(r.trigger)),
      fact("Follow-up", detail.scheduled_by),
      fact("Scheduled for", r.scheduled_for && full(r.scheduled_for)),
      fact("Started", r.started_at && full(r.started_at)),
      fact("Finished", r.finished_at && full(r.finished_at)),
      fact("Duration", r.duration_ms !== null ? duration(r.duration_ms) : null),
      fact("Agent", r.agent),
      fact("Account", r.account),
      fact("Sandbox", detail.sandbox),
      fact("Host", detail.place && (r.remote_url ? h("a", { id: "run-remote", href: r.remote_url, onclick: (/** @type {Event} */ e) => { e.preventDefault(); openLink(r.remote_url ?? ""); } }, detail.place) : detail.place)),
      fact("Rate limit resets", r.resets_at && full(r.resets_at)),
      fact("Starts at", r.status === "queued" && r.due_at && `${full(r.due_at)} (waiting: ${r.message ?? ""})`),
      fact("Cost", r.cost_usd !== null ? cost(r.cost_usd) : null),
      fact("Tokens", r.usage && tokens(r.usage)),
      fact("Model", r.usage?.model),
      fact("Exit code", r.exit_code),
      fact("Session", r.session_id),
      fact("Run id", r.id),
    );

    // What the agent was refused (`allow:`/`deny:`, its mode): untrusted text, text nodes only.
    // And what it asked (`on_denial: ask`): each call and its answer; one that waits gets
    // Approve, Allow for this run and Deny (the first answer wins, wherever it is given).
    const waiting = detail.asks.some((a) => a.answer === null);
    // Asked after the run (it ended `blocked · needs_approval`): Approve reruns it with the call
    // allowed for the rerun only.
    const afterRun = detail.asks.some((a) => a.answer === null && !a.held);
    const answer = (allow, forRun) => async () => {
      try {
        await call("answer_ask", { run: r.id, allow, forRun });
        await load();
      } catch (e) {
        explanation.append(h("p", { class: "fix" }, errorText(e)));
      }
    };
    replace(
      refusals,
      r.denials.length ? [h("h3", {}, "Refused tool calls"), h("ul", { class: "denials", id: "run-denials" }, r.denials.map((d) => h("li", {}, h("code", {}, d.input ? `${d.tool}(${d.input})` : d.tool))))] : [],
      detail.asked.length ? [h("h3", {}, waiting ? "Waiting for your approval" : "Asked"), h("ul", { class: "denials", id: "run-asks" }, detail.asked.map((words) => h("li", {}, h("code", {}, words))))] : [],
      waiting
        ? h(
            "div",
            { class: "actions", id: "run-ask-actions" },
            h("button", { id: "ask-approve", class: "primary", onclick: answer(true, false) }, afterRun ? "Approve and rerun" : "Approve"),
            afterRun ? null : h("button", { id: "ask-allow-run", onclick: answer(true, true) }, "Allow for this run"),
            h("button", { id: "ask-deny", class: "danger", onclick: answer(false, false) }, "Deny"),
          )
        : null,
    );

    // Every try once there was more than one (failover, a retry, a wait for a limit's reset) or
    // one that waited for the next (a waiting run, or one cancelled while it waited).
    if (r.attempts.length > 1 || r.attempts.some((a) => a.next_at)) {
      const when = (a) => [a.started_at && full(a.started_at), a.next_at && `next try at ${full(a.next_at)}`].filter(Boolean).join(" · ");
      replace(
        attempts,
        h("h3", {}, "Attempts"),
        h("ol", { class: "attempts" }, r.attempts.map((a) => h("li", {}, h("strong", {}, a.account ?? "—"), " ", badge(a.status), a.reason ? ` ${reasonText(a.reason)}` : "", when(a) ? h("span", { class: "muted small" }, ` · ${when(a)}`) : null, a.message ? h("div", { class: "muted small" }, a.message) : null))),
      );
    } else attempts.replaceChildren();

    // Webhooks and pings: what each receiver got (their error text is untrusted: text nodes only).
    if (detail.deliveries.length) {
      /** @param {import("../lib/types.js").DeliveryRow} d */
      const how = (d) =>
        d.state === "delivered" ? `delivered ${d.delivered_at ? full(d.delivered_at) : ""}`
        : d.state === "pending" ? (d.attempts ? `pending — try ${d.attempts} failed, next ${d.next_at ? full(d.next_at) : "soon"}` : "pending")
        : `${d.state.replaceAll("_", " ")} after ${d.attempts + 1} ${d.attempts ? "tries" : "try"}`;
      replace(
        deliveriesBox,
        h("h3", {}, detail.deliveries.some((d) => d.ping) ? "Webhooks and pings" : "Webhooks"),
        h("ul", { class: "deliveries" }, detail.deliveries.map((d) => h("li", { "data-webhook": d.webhook ?? "", "data-ping": d.ping ?? "", "data-state": d.state }, h("strong", {}, d.webhook ?? `ping ${d.ping}`), " ", how(d), d.last_error && d.state !== "delivered" ? h("div", { class: "muted small" }, d.last_error) : null))),
      );
    } else deliveriesBox.replaceChildren();

    renderChanges(r, detail.changes_summary);

    if (detail.report_html) trustedReport(report, detail.report_html, openLink);
    else if (r.pruned_at) replace(report, h("p", { class: "muted", id: "run-pruned" }, `Its report and log were removed ${full(r.pruned_at)} (retention: keep_runs_days, keep_runs_per_routine); this record stays.`));
    else replace(report, h("p", { class: "muted" }, r.status === "completed" ? "This run wrote no report." : isLive(r.status) ? "The report appears when the run completes." : "No report: the run did not complete."));
  }

  // What the run changed in git. Paths and commit subjects come from the agent: text nodes only.
  /** @param {import("../lib/types.js").RunRecord} r @param {string} summary */
  function renderChanges(r, summary) {
    const c = r.changes;
    if (!c) return changesBox.replaceChildren();
    const branch = c.branch ? h("code", { id: "changes-branch" }, c.branch) : null;
    const copy = async (button) => {
      try {
        await navigator.clipboard.writeText(c.branch);
        button.textContent = "Copied";
      } catch {
        // No clipboard here: select the name so Ctrl+C copies it.
        getSelection().selectAllChildren(branch);
        button.textContent = "Selected — press Ctrl+C";
      }
    };
    const where = c.worktree
      ? ["Worktree ", h("code", { id: "changes-dir" }, c.worktree)]
      : c.worktree_removed_at
        ? [`Worktree removed ${full(c.worktree_removed_at)} (the branch keeps everything) · repository `, h("code", { id: "changes-dir" }, c.repo)]
        : ["Checkout ", h("code", { id: "changes-dir" }, c.repo)];
    const lines = (f) => (f.added === null ? "binary" : `+${f.added} \u2212${f.removed}`);
    replace(
      changesBox,
      h("h3", { id: "changes-title" }, "Changes"),
      h("p", { id: "changes-summary" }, summary),
      branch ? h("p", {}, c.workspace === "worktree" ? "Branch " : "On branch ", branch, " ", h("button", { id: "copy-branch", onclick: (e) => copy(e.currentTarget) }, "Copy")) : null,
      h("p", {}, ...where, " ", h("button", { id: "open-workspace", onclick: openFolder }, "Open folder")),
      c.files.length
        ? h(
            "table",
            { id: "changes-files", class: "files" },
            h("caption", { class: "muted small" }, c.files_changed > c.files.length ? `First ${c.files.length} of ${c.files_changed} files` : `${c.files_changed} files`),
            h("tbody", {}, c.files.map((f) => h("tr", {}, h("td", { class: "lines" }, lines(f)), h("td", {}, f.path)))),
          )
        : null,
      c.commits.length
        ? h("ol", { id: "changes-commits", class: "commits" }, c.commits.map((k) => h("li", { "data-by": k.by }, h("code", {}, k.sha.slice(0, 10)), " ", k.subject, k.by === "nightshift" ? h("span", { class: "muted small" }, " — by Nightshift: what the run left uncommitted") : null)))
        : null,
      c.push ? pushLine(c.push) : null,
      r.pull_request ? pullRequestLine(r.pull_request) : null,
    );
  }

  // `push.pr`: the pull request the branch went to, its link opened in the browser.
  function pullRequestLine(pr) {
    const words = {
      opened: `Opened pull request #${pr.number}`,
      updated: `Updated pull request #${pr.number} (its routine's open one)`,
      none: "No pull request: the run changed nothing",
      answered: `Answered the review in pull request #${pr.number}`,
      unchanged: `Answered the review in pull request #${pr.number} without a change: it answers no more reviews of it`,
      failed: "No pull request",
      pending: pr.tries ? `Pull request: try ${pr.tries} failed; it is tried again` : "Pull request pending",
    }[pr.state] ?? `Pull request: ${pr.state}`;
    const link = pr.url ? h("a", { id: "pull-request-link", href: pr.url, onclick: (e) => (e.preventDefault(), openLink(pr.url)) }, pr.url) : null;
    return h("div", { id: "changes-pr", "data-state": pr.state }, h("p", {}, words, " ", link), pr.error && pr.state !== "none" ? h("p", { class: "muted small" }, pr.error) : null);
  }

  function pushLine(p) {
    const text = {
      pushed: `Pushed to ${p.remote}${p.at ? ` ${full(p.at)}` : ""}`,
      nothing: `Nothing to push to ${p.remote} (no commit)`,
      failed: `Push to ${p.remote} failed after ${p.tries} tries — the branch is kept`,
      pending: p.tries ? `Push to ${p.remote}: try ${p.tries} failed; it is tried again` : `Push to ${p.remote} pending`,
    }[p.state] ?? `Push to ${p.remote}: ${p.state}`;
    const again = p.state === "failed" || p.state === "pending" ? h("button", { id: "push-again", onclick: pushAgain }, "Push again") : null;
    return h("div", { id: "changes-push", "data-state": p.state }, h("p", {}, text, " ", again), p.error && p.state !== "pushed" ? h("p", { class: "muted small" }, p.error) : null);
  }

  async function pushAgain(e) {
    e.currentTarget.disabled = true;
    try {
      await call("push_branch", { id });
    } catch (err) {
      changesBox.append(h("p", { class: "fix" }, errorText(err)));
    }
    await load();
  }

  async function openFolder() {
    try {
      await call("open_workspace", { id });
    } catch (err) {
      changesBox.append(h("p", { class: "fix" }, errorText(err)));
    }
  }

  function restartLog(change) {
    Object.assign(logMode, change);
    logGeneration += 1;
    offset = 0;
    logBox.replaceChildren();
    logBox.classList.toggle("raw", !logMode.readable);
    pumpLog();
  }

  // One reader at a time (events, the follow timer and toggles all ask): no line twice.
  let pumping = false;
  let again = false;
  async function pumpLog() {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    clearTimeout(timer);
    const mine = logGeneration;
    try {
      // Read everything there is now, a chunk at a time.
      for (;;) {
        const chunk = await call("read_log", { id, stream: logMode.stream, offset, readable: logMode.readable });
        if (mine !== logGeneration || stopped) return;
        const atBottom = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 20;
        if (logMode.readable) appendEntries(chunk.entries);
        else if (chunk.raw) logBox.append(chunk.raw);
        if (atBottom) logBox.scrollTop = logBox.scrollHeight;
        const progressed = chunk.next_offset > offset;
        offset = chunk.next_offset;
        if (!progressed || offset >= chunk.size) break;
      }
      const live = run && isLive(run.status);
      logStatus.textContent = live ? "following live…" : "";
      if (!logBox.childNodes.length) logBox.append(h("span", { class: "muted" }, live ? "Waiting for output…" : "(empty)"));
      // Following a live run: the log file grows, so ask again shortly (only while it is open).
      if (live) timer = setTimeout(pumpLog, FOLLOW_MS);
    } catch (e) {
      logStatus.textContent = errorText(e);
    } finally {
      pumping = false;
      if (again && !stopped) {
        again = false;
        pumpLog();
      }
    }
  }

  function appendEntries(entries) {
    for (const e of entries) {
      const last = logBox.lastElementChild;
      if (e.joins && last?.dataset.kind === e.kind) {
        last.querySelector(".text").append(e.text);
        continue;
      }
      logBox.querySelector(":scope > .muted")?.remove();
      logBox.append(h("div", { class: `entry entry-${e.kind}`, dataset: { kind: e.kind } }, h("span", { class: "kind" }, LABELS[e.kind] ?? e.kind), h("span", { class: "text" }, e.text)));
    }
  }

  async function cancel() {
    try {
      await call("cancel_run", { id });
    } catch (e) {
      replace(explanation, h("p", {}, errorText(e)));
    }
  }

  async function runAgain() {
    try {
      const newId = await call("run_now", { name: run.routine });
      ui.go(`#/run/${newId}`);
    } catch (e) {
      explanation.append(h("p", { class: "fix" }, `Could not start it: ${errorText(e)}`));
    }
  }

  const stop = onEngine(async (ev) => {
    // An ask and its answer: the detail is read again to show them.
    const asking = (ev.type === "approval_asked" || ev.type === "approval_answered") && ev.run_id === id;
    if (("run" in ev && ev.run.id === id) || (ev.type === "run_progress" && ev.run_id === id) || asking || ev.type === "resync") {
      if (ev.type === "run_progress") return pumpLog();
      await load();
      pumpLog();
    }
  });

  load().then(() => pumpLog());
  return () => {
    stopped = true;
    clearTimeout(timer);
    stop();
  };
}

/** "in 1,200 · out 340 · cache read 20 · cache write –" (– : the agent gave no such figure), and
 * Copilot's premium requests when it counted them. */
function tokens(u) {
  const n = (v) => (v === null || v === undefined ? "\u2013" : v.toLocaleString("en-US"));
  const premium = u.premium_requests === null || u.premium_requests === undefined ? "" : ` · ${u.premium_requests} premium request${u.premium_requests === 1 ? "" : "s"}`;
  return `in ${n(u.input_tokens)} · out ${n(u.output_tokens)} · cache read ${n(u.cache_read_tokens)} · cache write ${n(u.cache_write_tokens)}${premium}`;
}

const LABELS = { text: "agent", tool: "tool", tool_result: "result", retry: "retry", error: "error", info: "info", result: "done", output: "" };

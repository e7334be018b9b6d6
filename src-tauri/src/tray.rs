//! The status icon: what it shows (a pure model, tested without a display; rendered by
//! [`crate::tray_shell`]). Driven by engine events, never by polling.

use chrono::{DateTime, Local, Utc};
use nightshift_core::health::AccountHealth;
use nightshift_core::run::RunStatus;

/// The three branded icon states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IconState {
    Idle,
    Running,
    Attention,
}

impl IconState {
    pub fn png(self) -> &'static [u8] {
        match self {
            IconState::Idle => include_bytes!("../../icons/tray-idle.png"),
            IconState::Running => include_bytes!("../../icons/tray-running.png"),
            IconState::Attention => include_bytes!("../../icons/tray-attention.png"),
        }
    }
}

/// A routine as the menu lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutineLine {
    pub name: String,
    pub last: Option<RunStatus>,
    pub next: Option<DateTime<Utc>>,
    pub valid: bool,
    /// Its last slot did nothing and it wants that told (`notify_missed`): attention until it
    /// runs again — what happened ("missed Mon 30 Nov 06:00").
    pub quiet: Option<String>,
    /// Its last run's branch could not be pushed: attention until it is ("push to origin failed: …").
    pub push_failed: Option<String>,
}

/// Another home (`[[homes]]`) as the menu shows it: its routines to run there, its accounts that
/// need a login there, and whether it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HomeLine {
    pub name: String,
    /// Its event stream is open.
    pub reachable: bool,
    /// When it stopped answering (`None` while connecting for the first time).
    pub down_since: Option<DateTime<Utc>>,
    pub routines: Vec<RoutineLine>,
    /// Its accounts that need a login there: (account, verdict).
    pub logins: Vec<(String, String)>,
    pub running: usize,
}

/// Everything the tray shows, gathered from the engine.
#[derive(Debug, Clone, Default)]
pub struct TrayFacts {
    pub running: usize,
    pub queued: usize,
    pub paused: bool,
    /// Another process (a `nightshiftctl daemon`) schedules this home.
    pub scheduled_elsewhere: Option<String>,
    pub routines: Vec<RoutineLine>,
    pub accounts: Vec<AccountHealth>,
    pub autostart: bool,
    /// What the engine says the user must hear about (a full disk, a damaged database, a run that
    /// could not be recorded), one sentence each.
    pub problems: Vec<String>,
    /// Other homes this app views (`[[homes]]`), by name.
    pub homes: Vec<HomeLine>,
    /// Runs that hold a call while they ask (`on_denial: ask`): (run id, routine, the call in
    /// words).
    pub asks: Vec<(String, String, String)>,
}

/// One menu entry; ids are what click handlers match on.
#[derive(Debug, Clone, PartialEq)]
pub enum MenuEntry {
    Item { id: String, text: String, enabled: bool },
    Check { id: String, text: String, checked: bool },
    Submenu { text: String, items: Vec<MenuEntry> },
    Separator,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrayView {
    pub icon: IconState,
    pub tooltip: String,
    pub menu: Vec<MenuEntry>,
}

/// What must be set on the tray to go from `before` to `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    pub icon: bool,
    pub tooltip: bool,
    pub menu: MenuChange,
}

/// How the menu changes. A rebuilt menu gets new item ids, and a click on the menu a panel still
/// shows with the old ones would do nothing — so a menu is rebuilt only when its entries are not
/// the same ones any more; a run that starts or ends only changes texts, updated in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MenuChange {
    Same,
    /// The same entries (ids, kinds, order): set texts, enabled and checked states in place.
    InPlace,
    Rebuild,
}

pub fn changes(before: Option<&TrayView>, now: &TrayView) -> Changes {
    let menu = match before.map(|b| &b.menu) {
        Some(m) if *m == now.menu => MenuChange::Same,
        Some(m) if same_entries(m, &now.menu) => MenuChange::InPlace,
        _ => MenuChange::Rebuild,
    };
    Changes { icon: before.map(|b| b.icon) != Some(now.icon), tooltip: before.map(|b| &b.tooltip) != Some(&now.tooltip), menu }
}

/// The same entries in the same places, whatever their texts and states say.
fn same_entries(a: &[MenuEntry], b: &[MenuEntry]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|pair| match pair {
            (MenuEntry::Item { id: x, .. }, MenuEntry::Item { id: y, .. }) | (MenuEntry::Check { id: x, .. }, MenuEntry::Check { id: y, .. }) => x == y,
            (MenuEntry::Submenu { text: x, items: xs }, MenuEntry::Submenu { text: y, items: ys }) => x == y && same_entries(xs, ys),
            (MenuEntry::Separator, MenuEntry::Separator) => true,
            _ => false,
        })
}

pub const RUN_PREFIX: &str = "run:";
/// `ask:<run id>`: open the run that waits for approval.
pub const ASK_PREFIX: &str = "ask:";
pub const RELOGIN_PREFIX: &str = "relogin:";
/// `home-run:<home>:<routine>` (home names have no `:`).
pub const HOME_RUN_PREFIX: &str = "home-run:";
/// `home-relogin:<home>:<account>`.
pub const HOME_RELOGIN_PREFIX: &str = "home-relogin:";

fn needs_login(h: &AccountHealth) -> bool {
    h.verdict.needs_login()
}

fn failed(s: Option<RunStatus>) -> bool {
    s.is_some_and(RunStatus::is_failure)
}

fn status_mark(s: Option<RunStatus>) -> &'static str {
    match s {
        Some(RunStatus::Completed) => "✓ ",
        Some(RunStatus::Running | RunStatus::Queued) => "▶ ",
        Some(RunStatus::Failed | RunStatus::Blocked) => "✗ ",
        Some(RunStatus::TimedOut) => "⏱ ",
        _ => "",
    }
}

impl MenuEntry {
    /// The id clicks are matched on ("" for a submenu or a separator).
    pub fn id(&self) -> &str {
        match self {
            MenuEntry::Item { id, .. } | MenuEntry::Check { id, .. } => id,
            MenuEntry::Submenu { .. } | MenuEntry::Separator => "",
        }
    }
}

/// Decide icon, tooltip and menu from the facts.
pub fn view(f: &TrayFacts) -> TrayView {
    let logins: Vec<&AccountHealth> = f.accounts.iter().filter(|h| needs_login(h)).collect();
    let failing = f.routines.iter().filter(|r| failed(r.last) || !r.valid).count();
    let quiet: Vec<&RoutineLine> = f.routines.iter().filter(|r| r.quiet.is_some()).collect();
    let unpushed: Vec<&RoutineLine> = f.routines.iter().filter(|r| r.push_failed.is_some()).collect();
    // Another home's failure or login is attention too, named with its home; one that cannot be
    // reached is a calm state (said, retried), not a failure.
    let home_trouble: Vec<String> = f.homes.iter().filter(|h| h.reachable).filter_map(home_trouble).collect();
    // A problem with the home itself outranks everything: runs cannot be recorded while it lasts.
    // A run that waits for the user's answer outranks a running one: it runs only once answered.
    let icon = if !f.problems.is_empty() || !f.asks.is_empty() {
        IconState::Attention
    } else if f.running > 0 {
        IconState::Running
    } else if !logins.is_empty() || failing > 0 || !quiet.is_empty() || !unpushed.is_empty() || !home_trouble.is_empty() {
        IconState::Attention
    } else {
        IconState::Idle
    };

    let mut parts: Vec<String> = f.problems.first().cloned().into_iter().collect();
    if !f.asks.is_empty() {
        parts.push(format!("{} waiting for approval", f.asks.len()));
    }
    if f.running > 0 {
        parts.push(format!("{} running", f.running));
    }
    if f.queued > 0 {
        parts.push(format!("{} queued", f.queued));
    }
    if f.paused {
        parts.push("paused".into());
    } else if let Some(r) = f.routines.iter().filter(|r| r.next.is_some()).min_by_key(|r| r.next) {
        let at = r.next.expect("filtered").with_timezone(&Local).format("%H:%M");
        parts.push(format!("next: {} {at}", r.name));
    }
    if !logins.is_empty() {
        parts.push(format!("{} account{} need{} login", logins.len(), if logins.len() == 1 { "" } else { "s" }, if logins.len() == 1 { "s" } else { "" }));
    }
    if failing > 0 {
        parts.push(format!("{failing} routine{} failing", if failing == 1 { "" } else { "s" }));
    }
    match quiet.as_slice() {
        [] => {}
        [one] => parts.push(format!("{}: {}", one.name, one.quiet.as_deref().unwrap_or_default())),
        many => parts.push(format!("{} routines did nothing at their last slot", many.len())),
    }
    match unpushed.as_slice() {
        [] => {}
        [one] => parts.push(format!("{}: {}", one.name, one.push_failed.as_deref().unwrap_or_default())),
        many => parts.push(format!("{} routines' branches were not pushed", many.len())),
    }
    if let Some(who) = &f.scheduled_elsewhere {
        parts.push(format!("scheduled by {who}"));
    }
    parts.extend(home_trouble);
    for h in f.homes.iter().filter(|h| !h.reachable) {
        parts.push(unreachable_words(h));
    }
    let tooltip = if parts.is_empty() { "Nightshift · idle".to_string() } else { format!("Nightshift · {}", parts.join(" · ")) };

    let mut menu = Vec::new();
    for (i, problem) in f.problems.iter().enumerate() {
        menu.push(MenuEntry::Item { id: format!("problem:{i}"), text: format!("⚠ {}", cut(problem, 90)), enabled: false });
    }
    if !f.problems.is_empty() {
        menu.push(MenuEntry::Separator);
    }
    // Waiting for approval ▸ deps · Bash(git push …): opens the run, where it is answered.
    if !f.asks.is_empty() {
        let items = f.asks.iter().map(|(run, routine, what)| MenuEntry::Item { id: format!("{ASK_PREFIX}{run}"), text: format!("{routine} · {}", cut(what, 70)), enabled: true }).collect();
        menu.push(MenuEntry::Submenu { text: format!("{} waiting for approval", f.asks.len()), items });
    }
    let runs: Vec<MenuEntry> = if f.routines.is_empty() {
        vec![MenuEntry::Item { id: "none".into(), text: "No routines yet".into(), enabled: false }]
    } else {
        f.routines
            .iter()
            .map(|r| MenuEntry::Item {
                id: format!("{RUN_PREFIX}{}", r.name),
                text: match (r.valid, r.quiet.is_some() || r.push_failed.is_some()) {
                    (false, _) => format!("{} (invalid)", r.name),
                    (true, true) => format!("⚠ {}", r.name),
                    (true, false) => format!("{}{}", status_mark(r.last), r.name),
                },
                enabled: r.valid,
            })
            .collect()
    };
    let mut runs = runs;
    // Run now ▸ mac-mini ▸ nightly: each other home's routines, run there.
    if !f.homes.is_empty() {
        runs.push(MenuEntry::Separator);
        runs.extend(f.homes.iter().map(|h| MenuEntry::Submenu { text: h.name.clone(), items: home_runs(h) }));
    }
    menu.push(MenuEntry::Submenu { text: "Run now".into(), items: runs });
    let home_logins: Vec<MenuEntry> = f
        .homes
        .iter()
        .flat_map(|h| {
            h.logins.iter().map(move |(account, verdict)| MenuEntry::Item { id: format!("{HOME_RELOGIN_PREFIX}{}:{account}", h.name), text: format!("{account} on {} ({verdict})", h.name), enabled: true })
        })
        .collect();
    if !logins.is_empty() || !home_logins.is_empty() {
        menu.push(MenuEntry::Submenu {
            text: "Re-login".into(),
            items: logins
                .iter()
                .map(|h| MenuEntry::Item { id: format!("{RELOGIN_PREFIX}{}", h.account), text: format!("{} ({})", h.account, h.verdict.as_str()), enabled: true })
                .chain(home_logins)
                .collect(),
        });
    }
    // Each account's tightest usage window, as its runs reported it: "work@acme.dev · 5h 85 % ·
    // resets 04:12" (a line to read; the window has the rest).
    let windows: Vec<MenuEntry> = f
        .accounts
        .iter()
        .filter_map(|h| {
            let w = h.windows.iter().max_by(|a, b| a.used_percent.total_cmp(&b.used_percent))?;
            let resets = match (w.status.as_str(), w.resets_at) {
                ("reset", _) | (_, None) => String::new(),
                (_, Some(t)) => format!(" · resets {}", t.with_timezone(&Local).format("%H:%M")),
            };
            Some(MenuEntry::Item { id: format!("window:{}", h.account), text: format!("{} · {}{resets}", h.account, w.used_words()), enabled: false })
        })
        .collect();
    if !windows.is_empty() {
        menu.push(MenuEntry::Separator);
        menu.extend(windows);
    }
    menu.push(MenuEntry::Separator);
    menu.push(if f.paused {
        MenuEntry::Item { id: "resume".into(), text: "Resume".into(), enabled: true }
    } else {
        MenuEntry::Item { id: "pause".into(), text: "Pause all".into(), enabled: true }
    });
    menu.push(MenuEntry::Check { id: "autostart".into(), text: "Start at login".into(), checked: f.autostart });
    menu.push(MenuEntry::Item { id: "open".into(), text: "Open Nightshift".into(), enabled: true });
    menu.push(MenuEntry::Separator);
    menu.push(MenuEntry::Item { id: "quit".into(), text: "Quit".into(), enabled: true });
    TrayView { icon, tooltip, menu }
}

/// What needs the user on another home, named with it ("mac-mini: 1 routine failing"), if anything.
fn home_trouble(h: &HomeLine) -> Option<String> {
    let failing = h.routines.iter().filter(|r| failed(r.last) || !r.valid).count();
    let mut said = Vec::new();
    if failing > 0 {
        said.push(format!("{failing} routine{} failing", if failing == 1 { "" } else { "s" }));
    }
    if !h.logins.is_empty() {
        let n = h.logins.len();
        said.push(format!("{n} account{} need{} login", if n == 1 { "" } else { "s" }, if n == 1 { "s" } else { "" }));
    }
    (!said.is_empty()).then(|| format!("{}: {}", h.name, said.join(", ")))
}

/// "mac-mini unreachable since 02:14 — retrying" (or "connecting…" before it ever answered).
fn unreachable_words(h: &HomeLine) -> String {
    match h.down_since {
        Some(t) => format!("{} unreachable since {} — retrying", h.name, t.with_timezone(&Local).format("%H:%M")),
        None => format!("{} connecting…", h.name),
    }
}

/// One other home's Run now submenu: its routines, or why there are none to offer.
fn home_runs(h: &HomeLine) -> Vec<MenuEntry> {
    if !h.reachable {
        return vec![MenuEntry::Item { id: format!("home-state:{}", h.name), text: unreachable_words(h), enabled: false }];
    }
    if h.routines.is_empty() {
        return vec![MenuEntry::Item { id: format!("home-none:{}", h.name), text: "No routines there".into(), enabled: false }];
    }
    h.routines
        .iter()
        .map(|r| MenuEntry::Item {
            id: format!("{HOME_RUN_PREFIX}{}:{}", h.name, r.name),
            text: if r.valid { format!("{}{}", status_mark(r.last), r.name) } else { format!("{} (invalid)", r.name) },
            enabled: r.valid,
        })
        .collect()
}

/// A menu line is one line: long sentences end in "…" (the window shows them whole).
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_refresh_sets_only_what_changed_and_keeps_an_unchanged_menu() {
        let idle = view(&TrayFacts { routines: vec![routine("pr-review", None)], ..Default::default() });
        assert_eq!(changes(None, &idle), Changes { icon: true, tooltip: true, menu: MenuChange::Rebuild }, "the first refresh sets everything");
        assert_eq!(changes(Some(&idle), &idle.clone()), Changes { icon: false, tooltip: false, menu: MenuChange::Same }, "an event that changed nothing rebuilds nothing");
        // A run starts and ends: texts change in place, the entries (and their ids) stay.
        let running = view(&TrayFacts { running: 1, routines: vec![routine("pr-review", Some(RunStatus::Running))], ..Default::default() });
        let c = changes(Some(&idle), &running);
        assert!(c.icon && c.tooltip && c.menu == MenuChange::InPlace, "{c:?}");
        let done = view(&TrayFacts { routines: vec![routine("pr-review", Some(RunStatus::Completed))], ..Default::default() });
        assert_eq!(changes(Some(&running), &done).menu, MenuChange::InPlace);
        // Pausing swaps an entry (pause → resume), a new routine adds one: rebuilt.
        assert_eq!(changes(Some(&done), &view(&TrayFacts { paused: true, routines: vec![routine("pr-review", Some(RunStatus::Completed))], ..Default::default() })).menu, MenuChange::Rebuild);
        let two = TrayFacts { routines: vec![routine("pr-review", None), routine("nightly", None)], ..Default::default() };
        assert_eq!(changes(Some(&idle), &view(&two)).menu, MenuChange::Rebuild);
    }

    use super::*;
    use nightshift_core::words::Verdict;
    use nightshift_core::health::CredentialSource;
    use nightshift_core::words::Agent;

    fn routine(name: &str, last: Option<RunStatus>) -> RoutineLine {
        RoutineLine { name: name.into(), last, next: None, valid: true, quiet: None, push_failed: None }
    }

    fn account(email: &str, verdict: Verdict) -> AccountHealth {
        AccountHealth {
            account: email.into(),
            agent: Agent::Claude,
            verdict,
            evidence: String::new(),
            since: None,
            source: CredentialSource::Keychain,
            expires_at: None,
            resets_at: None,
            config_dir: "/x".into(),
            fix: None,
            secret: "setup token".into(),
            secret_how: "`claude setup-token`".into(),
            windows: Vec::new(),
        }
    }

    fn home(name: &str, reachable: bool, routines: Vec<RoutineLine>) -> HomeLine {
        HomeLine { name: name.into(), reachable, down_since: None, routines, logins: Vec::new(), running: 0 }
    }

    #[test]
    fn other_homes_run_from_their_submenu_and_their_failures_are_attention_named_with_the_home() {
        let box_ = home("mac-mini", true, vec![routine("nightly", Some(RunStatus::Completed))]);
        let v = view(&TrayFacts { routines: vec![routine("here", None)], homes: vec![box_.clone()], ..Default::default() });
        assert_eq!(v.icon, IconState::Idle);
        let MenuEntry::Submenu { items, .. } = &v.menu[0] else { panic!("{:?}", v.menu) };
        assert_eq!(items[0].id(), "run:here");
        assert_eq!(items[1], MenuEntry::Separator);
        let MenuEntry::Submenu { text, items: there } = &items[2] else { panic!("{items:?}") };
        assert_eq!(text, "mac-mini");
        assert_eq!(there[0], MenuEntry::Item { id: "home-run:mac-mini:nightly".into(), text: "✓ nightly".into(), enabled: true });

        // A failure there: attention, and the tooltip names the home; a login there: Re-login ▸.
        let failing = HomeLine { routines: vec![routine("nightly", Some(RunStatus::Failed))], logins: vec![("me@box.dev".into(), "revoked".into())], ..box_ };
        let v = view(&TrayFacts { homes: vec![failing], ..Default::default() });
        assert_eq!(v.icon, IconState::Attention);
        assert!(v.tooltip.contains("mac-mini: 1 routine failing, 1 account needs login"), "{}", v.tooltip);
        let relogin = v.menu.iter().find_map(|m| match m {
            MenuEntry::Submenu { text, items } if text == "Re-login" => Some(items.clone()),
            _ => None,
        });
        assert_eq!(relogin.unwrap()[0], MenuEntry::Item { id: "home-relogin:mac-mini:me@box.dev".into(), text: "me@box.dev on mac-mini (revoked)".into(), enabled: true });

        // Unreachable: one calm line, no attention.
        let down = HomeLine { down_since: Some(chrono::Utc::now()), ..home("mac-mini", false, Vec::new()) };
        let v = view(&TrayFacts { homes: vec![down], ..Default::default() });
        assert_eq!(v.icon, IconState::Idle);
        assert!(v.tooltip.contains("mac-mini unreachable since ") && v.tooltip.contains(" — retrying"), "{}", v.tooltip);
        let MenuEntry::Submenu { items, .. } = &v.menu[0] else { panic!() };
        let MenuEntry::Submenu { items: there, .. } = &items[2] else { panic!("{items:?}") };
        assert!(matches!(&there[0], MenuEntry::Item { enabled: false, text, .. } if text.contains("unreachable since")));
    }

    #[test]
    fn idle_running_attention() {
        let mut f = TrayFacts { routines: vec![routine("a", Some(RunStatus::Completed))], ..Default::default() };
        assert_eq!(view(&f).icon, IconState::Idle);
        assert_eq!(view(&f).tooltip, "Nightshift · idle");
        f.routines.push(routine("b", Some(RunStatus::Failed)));
        assert_eq!(view(&f).icon, IconState::Attention);
        f.running = 2;
        assert_eq!(view(&f).icon, IconState::Running, "running wins while runs are going");
        assert!(view(&f).tooltip.starts_with("Nightshift · 2 running"));
        f.running = 0;
        f.routines.pop();
        f.accounts.push(account("work@acme.dev", Verdict::Revoked));
        assert_eq!(view(&f).icon, IconState::Attention);
        f.accounts[0].verdict = Verdict::Live;
        assert_eq!(view(&f).icon, IconState::Idle);
    }

    /// A routine whose last slot did nothing (`notify_missed`) turns the tray to attention until
    /// it runs again, and says which.
    #[test]
    fn a_quiet_routine_is_attention_until_it_runs() {
        let quiet = || Some("missed Mon 30 Nov 06:00".to_string());
        let mut f = TrayFacts { routines: vec![routine("a", Some(RunStatus::Completed)), RoutineLine { quiet: quiet(), ..routine("nightly", None) }], ..Default::default() };
        let v = view(&f);
        assert_eq!(v.icon, IconState::Attention);
        assert!(v.tooltip.ends_with("nightly: missed Mon 30 Nov 06:00"), "{}", v.tooltip);
        let MenuEntry::Submenu { items, .. } = &v.menu[0] else { panic!("{:?}", v.menu) };
        assert_eq!(items[1], MenuEntry::Item { id: "run:nightly".into(), text: "⚠ nightly".into(), enabled: true });
        f.routines.push(RoutineLine { quiet: quiet(), ..routine("weekly", None) });
        assert!(view(&f).tooltip.ends_with("2 routines did nothing at their last slot"), "{}", view(&f).tooltip);
        f.routines.retain(|r| r.quiet.is_none());
        assert_eq!(view(&f).icon, IconState::Idle, "it ran again");
    }

    /// A routine whose last run's branch could not be pushed turns the tray to attention, named
    /// with the remote and the error, until the push goes through.
    #[test]
    fn a_failed_push_is_attention_until_it_is_pushed() {
        let failed = || Some("push to origin failed: rejected (non-fast-forward)".to_string());
        let mut f = TrayFacts { routines: vec![routine("a", Some(RunStatus::Completed)), RoutineLine { push_failed: failed(), ..routine("deps", Some(RunStatus::Completed)) }], ..Default::default() };
        let v = view(&f);
        assert_eq!(v.icon, IconState::Attention);
        assert!(v.tooltip.ends_with("deps: push to origin failed: rejected (non-fast-forward)"), "{}", v.tooltip);
        let MenuEntry::Submenu { items, .. } = &v.menu[0] else { panic!("{:?}", v.menu) };
        assert_eq!(items[1], MenuEntry::Item { id: "run:deps".into(), text: "⚠ deps".into(), enabled: true });
        f.routines.push(RoutineLine { push_failed: failed(), ..routine("docs", None) });
        assert!(view(&f).tooltip.ends_with("2 routines' branches were not pushed"), "{}", view(&f).tooltip);
        f.routines.iter_mut().for_each(|r| r.push_failed = None);
        assert_eq!(view(&f).icon, IconState::Idle, "pushed");
    }

    /// A run that holds a call while it asks turns the tray to attention — even while it runs —
    /// with "1 waiting for approval ▸" first in the menu, each entry opening its run.
    #[test]
    fn a_run_waiting_for_approval_is_attention_first_in_the_menu() {
        let ask = ("01jrun".to_string(), "deps".to_string(), "Bash(git push origin fix/deps)".to_string());
        let f = TrayFacts { running: 1, routines: vec![routine("deps", Some(RunStatus::Running))], asks: vec![ask], ..Default::default() };
        let v = view(&f);
        assert_eq!(v.icon, IconState::Attention);
        assert!(v.tooltip.starts_with("Nightshift · 1 waiting for approval · 1 running"), "{}", v.tooltip);
        assert_eq!(v.menu[0], MenuEntry::Submenu { text: "1 waiting for approval".into(), items: vec![MenuEntry::Item { id: "ask:01jrun".into(), text: "deps · Bash(git push origin fix/deps)".into(), enabled: true }] });
        assert_eq!(view(&TrayFacts { asks: vec![], ..f }).icon, IconState::Running, "answered: running again");
    }

    /// Each account's tightest usage window is a line of the menu, changed in place as runs report.
    #[test]
    fn accounts_show_their_tightest_window() {
        use chrono::TimeZone;
        let at = |h: u32| Local.with_ymd_and_hms(2026, 12, 3, h, 12, 0).unwrap().with_timezone(&Utc);
        let window = |name: &str, used: f64, status: &str, resets| nightshift_core::run::LimitWindow { window: name.into(), used_percent: used, resets_at: Some(resets), status: status.into(), seen_at: at(1), run_id: None };
        let mut work = account("work@acme.dev", Verdict::Live);
        work.windows = vec![window("five_hour", 85.0, "allowed_warning", at(4)), window("seven_day", 40.0, "allowed", at(9))];
        let f = TrayFacts { routines: vec![routine("a", None)], accounts: vec![work, account("home@acme.dev", Verdict::Live)], ..Default::default() };
        let v = view(&f);
        let lines: Vec<&MenuEntry> = v.menu.iter().filter(|e| matches!(e, MenuEntry::Item { id, .. } if id.starts_with("window:"))).collect();
        assert_eq!(lines, [&MenuEntry::Item { id: "window:work@acme.dev".into(), text: "work@acme.dev · 5h 85 % · resets 04:12".into(), enabled: false }], "one line per account that reported windows");
        let mut f2 = f.clone();
        f2.accounts[0].windows[0] = window("five_hour", 90.0, "allowed_warning", at(4));
        assert_eq!(changes(Some(&v), &view(&f2)).menu, MenuChange::InPlace, "a new figure changes the text in place");
    }

    #[test]
    fn a_problem_with_the_home_shows_first_and_outranks_running() {
        let full = "the disk holding /home/u/.local/share/nightshift is full (12 KiB free)";
        let f = TrayFacts { running: 1, problems: vec![full.into(), "x".repeat(200)], ..Default::default() };
        let v = view(&f);
        assert_eq!(v.icon, IconState::Attention);
        assert!(v.tooltip.starts_with(&format!("Nightshift · {full} · 1 running")), "{}", v.tooltip);
        assert_eq!(v.menu[0], MenuEntry::Item { id: "problem:0".into(), text: format!("⚠ {full}"), enabled: false });
        let MenuEntry::Item { text, enabled: false, .. } = &v.menu[1] else { panic!("{:?}", v.menu[1]) };
        assert_eq!(text.chars().count(), 2 + 90 + 1, "one line, cut with …: {text}");
        assert_eq!(v.menu[2], MenuEntry::Separator);
        assert_eq!(view(&TrayFacts { problems: vec![], ..f }).icon, IconState::Running, "gone once solved");
    }

    #[test]
    fn tooltip_summarises() {
        let next = Utc::now() + chrono::Duration::hours(2);
        let f = TrayFacts {
            running: 2,
            routines: vec![RoutineLine { name: "pr-review".into(), last: None, next: Some(next), valid: true, quiet: None, push_failed: None }],
            accounts: vec![account("work@acme.dev", Verdict::Unconfigured)],
            ..Default::default()
        };
        let at = next.with_timezone(&Local).format("%H:%M");
        assert_eq!(view(&f).tooltip, format!("Nightshift · 2 running · next: pr-review {at} · 1 account needs login"));
    }

    #[test]
    fn menu_has_run_now_relogin_pause_open_quit() {
        let f = TrayFacts {
            routines: vec![routine("hello", Some(RunStatus::Completed)), RoutineLine { name: "bad".into(), last: None, next: None, valid: false, quiet: None, push_failed: None }],
            accounts: vec![account("work@acme.dev", Verdict::Revoked), account("me@home.dev", Verdict::Live)],
            ..Default::default()
        };
        let v = view(&f);
        let MenuEntry::Submenu { text, items } = &v.menu[0] else { panic!() };
        assert_eq!(text, "Run now");
        assert_eq!(items[0], MenuEntry::Item { id: "run:hello".into(), text: "✓ hello".into(), enabled: true });
        assert_eq!(items[1], MenuEntry::Item { id: "run:bad".into(), text: "bad (invalid)".into(), enabled: false });
        let MenuEntry::Submenu { text, items } = &v.menu[1] else { panic!() };
        assert_eq!(text, "Re-login");
        assert_eq!(items, &vec![MenuEntry::Item { id: "relogin:work@acme.dev".into(), text: "work@acme.dev (revoked)".into(), enabled: true }]);
        let ids: Vec<String> = v
            .menu
            .iter()
            .filter_map(|e| match e {
                MenuEntry::Item { id, .. } | MenuEntry::Check { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, vec!["pause", "autostart", "open", "quit"]);
        let paused = view(&TrayFacts { paused: true, ..f });
        assert!(paused.menu.iter().any(|e| matches!(e, MenuEntry::Item { id, text, .. } if id == "resume" && text == "Resume")));
        assert!(paused.tooltip.contains("paused"));
    }
}

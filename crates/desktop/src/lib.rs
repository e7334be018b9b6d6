//! Desktop notifications with notify-rust (pure-Rust D-Bus on Linux, native elsewhere), branded
//! "Nightshift" with the brand icon, with an "Open" action that opens the run — and, for a run
//! that asks before a call (`on_denial: ask`), "Approve" and "Deny".
//!
//! Shared by the tray app and `nightshiftctl daemon --notify`, so both faces notify identically.

use nightshift_core::notify::{Notice, Notifier};
use notify_rust::{Notification, Timeout, Urgency};
use std::path::PathBuf;
use std::sync::Arc;

pub const APP_NAME: &str = "Nightshift";

/// Called with the run id when the user clicks "Open" on a notification.
pub type OpenRun = Arc<dyn Fn(String) + Send + Sync>;

/// Called with the run id and the answer (`true`: approve) when the user clicks "Approve" or
/// "Deny" on a run's ask.
pub type AnswerAsk = Arc<dyn Fn(String, bool) + Send + Sync>;

pub struct DesktopNotifier {
    icon: Option<PathBuf>,
    on_open: Option<OpenRun>,
    on_answer: Option<AnswerAsk>,
    /// The notification shown last for each tag ([`Notice::tag`]): the next with that tag
    /// replaces it.
    shown: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

impl DesktopNotifier {
    /// `icon`: the brand icon (PNG) to show; `on_open`: what "Open" does (where supported).
    pub fn new(icon: Option<PathBuf>, on_open: Option<OpenRun>) -> Self {
        DesktopNotifier { icon: icon.filter(|p| p.exists()), on_open, on_answer: None, shown: Default::default() }
    }

    /// What "Approve" and "Deny" do on a run's ask (without it, an ask's notification only
    /// opens the run).
    pub fn answering(mut self, on_answer: AnswerAsk) -> Self {
        self.on_answer = Some(on_answer);
        self
    }

    /// The brand notification icon: the one an installed package put beside the program
    /// (`<prefix>/share/icons/hicolor/256x256/apps/nightshift.png` for `<prefix>/bin/…`), else the
    /// PNG in the source tree this binary was built from (a development build).
    pub fn bundled_icon() -> PathBuf {
        let exe = std::env::current_exe().ok();
        installed_icon(exe.as_deref()).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../icons/notification.png"))
    }
}

/// The packaged icon for a program at `exe` (`/usr/bin/nightshift` → `/usr/share/icons/…`), if any.
fn installed_icon(exe: Option<&std::path::Path>) -> Option<PathBuf> {
    let prefix = exe?.parent()?.parent()?;
    Some(prefix.join("share/icons/hicolor/256x256/apps/nightshift.png")).filter(|p| p.is_file())
}

impl Notifier for DesktopNotifier {
    fn send(&self, notice: &Notice) -> Result<(), String> {
        let mut n = Notification::new();
        n.appname(APP_NAME).summary(&notice.summary).body(&notice.body).timeout(Timeout::Milliseconds(if notice.critical { 15_000 } else { 8_000 }));
        if let Some(icon) = &self.icon {
            n.icon(&icon.display().to_string());
        }
        if notice.run_id.is_some() {
            n.action("default", "Open").action("open", "Open");
        }
        let answers = notice.asks && self.on_answer.is_some();
        if answers {
            n.action("approve", "Approve").action("deny", "Deny");
        }
        #[cfg(all(unix, not(target_os = "macos")))]
        {
            n.urgency(if notice.critical { Urgency::Critical } else { Urgency::Normal });
            n.hint(notify_rust::Hint::DesktopEntry("nightshift".into()));
        }
        #[cfg(not(all(unix, not(target_os = "macos"))))]
        let _ = Urgency::Normal;
        let replaces = notice.tag.as_ref().and_then(|t| self.shown.lock().unwrap_or_else(|e| e.into_inner()).get(t).copied());
        if let Some(id) = replaces {
            n.id(id);
        }
        let handle = n.show().map_err(|e| e.to_string())?;
        if let Some(tag) = &notice.tag {
            self.shown.lock().unwrap_or_else(|e| e.into_inner()).insert(tag.clone(), handle.id());
        }
        #[cfg(all(unix, not(target_os = "macos")))]
        if let Some(run_id) = notice.run_id.clone().filter(|_| self.on_open.is_some() || answers) {
            let (on_open, on_answer) = (self.on_open.clone(), self.on_answer.clone().filter(|_| answers));
            // Waiting for the click blocks until the notification closes: never on the engine's path.
            std::thread::spawn(move || {
                handle.wait_for_action(|action| match (action, &on_open, &on_answer) {
                    ("open" | "default", Some(open), _) => open(run_id.clone()),
                    ("approve", _, Some(answer)) => answer(run_id.clone(), true),
                    ("deny", _, Some(answer)) => answer(run_id.clone(), false),
                    _ => {}
                });
            });
        }
        #[cfg(not(all(unix, not(target_os = "macos"))))]
        let _ = handle;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_installed_program_uses_the_packaged_icon() {
        let prefix = tempfile::tempdir().unwrap();
        let icon = prefix.path().join("share/icons/hicolor/256x256/apps/nightshift.png");
        std::fs::create_dir_all(icon.parent().unwrap()).unwrap();
        assert_eq!(super::installed_icon(Some(&prefix.path().join("bin/nightshift"))), None, "no icon there yet");
        std::fs::write(&icon, b"png").unwrap();
        assert_eq!(super::installed_icon(Some(&prefix.path().join("bin/nightshift"))), Some(icon));
        assert_eq!(super::installed_icon(None), None);
    }
}

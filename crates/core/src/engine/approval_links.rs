//! Approve and Deny from the phone: each ask is also posted to the user's ntfy topic (`[approvals]
//! ntfy`), its buttons calling back this home's `serve` through **signed, single-use links** —
//! `/approvals/<ask>/<allow|deny>?until=<epoch>&sig=<hmac>`: valid until the ask's timeout, bound
//! to that one ask and answer (HMAC-SHA256 with a key kept in the home, 0600), used once (the
//! first answer wins). Nothing the agent wrote is trusted: the call is shown in words, masked.

use super::Engine;
use crate::error::{Error, ErrorCode, Result};
use crate::store::Ask;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Why a link was refused, for the HTTP answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a link Nightshift signed (forged, altered, for another ask or answer).
    Forged,
    /// Past the ask's timeout.
    Expired(String),
    /// No such ask.
    Unknown,
    /// Answered already (the words say how).
    Answered(String),
}

impl Engine {
    /// The key approval links are signed with (made once, kept in the home).
    fn link_key(&self) -> Result<String> {
        crate::secret_file::kept(&self.core.home.data_dir().join("approvals-key"), false)
    }

    /// The link that answers `ask` with `answer` (`allow` or `deny`) from `base` (`serve`'s
    /// address as others reach it).
    pub(crate) fn approval_link(&self, base: &str, ask: &Ask, answer: &str) -> Result<String> {
        let until = ask.expires_at.timestamp();
        let sig = signature(&self.link_key()?, &ask.id, answer, until);
        Ok(format!("{}/approvals/{}/{answer}?until={until}&sig={sig}", base.trim_end_matches('/'), ask.id))
    }

    /// Answer ask `id` from a link (`serve`'s `/approvals/…`): only a link this home signed, for
    /// that ask and answer, before its time; once.
    pub fn answer_by_link(&self, id: &str, answer: &str, until: i64, sig: &str) -> Result<std::result::Result<Ask, Refused>> {
        if !matches!(answer, "allow" | "deny") || !crate::secret_file::same(signature(&self.link_key()?, id, answer, until).as_bytes(), sig.as_bytes()) {
            return Ok(Err(Refused::Forged));
        }
        let Some(ask) = self.core.store.ask(id)? else { return Ok(Err(Refused::Unknown)) };
        let tz = crate::schedule::local_tz();
        let now = self.core.clock.now();
        if let Some(given) = &ask.answer {
            let by = ask.answered_by.as_deref().unwrap_or("?");
            let at = ask.answered_at.map(|t| crate::words::local_day_time(t, tz)).unwrap_or_default();
            return Ok(Err(Refused::Answered(format!("answered already: {given} ({by}, {at})"))));
        }
        if now.timestamp() > until || now > ask.expires_at {
            return Ok(Err(Refused::Expired(format!("this link expired at {}; the ask was refused", crate::words::local_day_time(ask.expires_at, tz)))));
        }
        if !self.core.store.answer_ask(id, answer, false, "phone", now)? {
            return Ok(Err(Refused::Answered("answered a moment ago".into())));
        }
        self.core.store.ask(id)?.map(Ok).ok_or_else(|| Error::new(ErrorCode::StoreUnavailable, "the answer was not recorded"))
    }

    /// Post `ask` to the ntfy topic `[approvals] ntfy` names, if any: its words, when silence
    /// becomes a refusal, and Approve / Deny buttons calling back `serve` (when this home is
    /// served: `[serve] public_url`, else its `listen` address). Off the async workers, bounded; a
    /// failure is logged (the desktop, the window and the CLI still ask).
    pub(crate) fn post_ask_to_ntfy(&self, ask: &Ask, what: &str) {
        let settings = self.settings();
        let Some(topic) = settings.approvals.ntfy.clone() else { return };
        let base = settings.serve.public_url.clone().or_else(|| settings.serve.listen.map(|a| format!("http://{a}")));
        let until = crate::words::local_day_time(ask.expires_at, crate::schedule::local_tz());
        let actions = match &base {
            Some(base) => match (self.approval_link(base, ask, "allow"), self.approval_link(base, ask, "deny")) {
                (Ok(yes), Ok(no)) => Some(format!("http, Approve, {yes}, method=POST, clear=true; http, Deny, {no}, method=POST, clear=true")),
                _ => None,
            },
            None => None,
        };
        let answer_where = if actions.is_some() { "" } else { "\nAnswer on the desktop, in the window, or: nightshiftctl approve|deny RUN" };
        let body = format!("{what}\nDenied if not answered by {until}.{answer_where}");
        let title = format!("Nightshift: {} waits for approval", ask.routine);
        let run = ask.run_id.clone();
        std::thread::spawn(move || {
            let mut call = crate::webhook::agent().post(&topic).set("Title", &title).set("Tags", "question").set("Priority", "high");
            if let Some(actions) = &actions {
                call = call.set("Actions", actions);
            }
            if let Err(e) = call.send_string(&body) {
                tracing::warn!(run = %run, error = %e, "could not post the ask to ntfy ([approvals] ntfy)");
            }
        });
    }
}

/// HMAC-SHA256 of `<ask>:<answer>:<until>`, hex.
fn signature(key: &str, id: &str, answer: &str, until: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{id}:{answer}:{until}").as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_signature_binds_the_ask_the_answer_and_the_time() {
        let s = super::signature("k", "a1", "allow", 100);
        assert_eq!(s.len(), 64);
        assert_ne!(s, super::signature("k", "a2", "allow", 100));
        assert_ne!(s, super::signature("k", "a1", "deny", 100));
        assert_ne!(s, super::signature("k", "a1", "allow", 101));
        assert_ne!(s, super::signature("other", "a1", "allow", 100));
    }
}

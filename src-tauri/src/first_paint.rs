//! When a webview first showed its page: WebKit's *first contentful paint* (the Paint Timing API),
//! read from the page.
//!
//! The app logs it (`window first paint`, with its wall-clock time and the time since it began
//! making the window), and the tray benchmark times "Open" → that moment, side by side with a bare
//! WebKitGTK webview showing one line — what any webview costs on the machine. Load
//! events do not say it: WebKit's load-finished can come before the first paint or after it.
//! Linux only (WebKitGTK); the other platforms' webviews are not measured here.

use javascriptcore::ValueExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use webkit2gtk::WebViewExt;

/// The paint's wall-clock time in ms since the Unix epoch, or 0 while nothing is painted yet.
const SCRIPT: &str = "(() => { const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? performance.timeOrigin + p.startTime : 0; })()";
/// Nothing painted yet: ask again every 16 ms (a frame), for up to 5 s.
const EVERY: Duration = Duration::from_millis(16);
const TRIES: u32 = 5000 / 16;

/// Call `done` with the time of `webview`'s first contentful paint once it has happened, or with
/// why it is not known. Call it once the page has started loading; it runs on the GTK main thread.
pub fn watch(webview: &webkit2gtk::WebView, done: impl FnOnce(Result<SystemTime, String>) + 'static) {
    ask(webview.clone(), Box::new(done), 1);
}

fn ask(webview: webkit2gtk::WebView, done: Box<dyn FnOnce(Result<SystemTime, String>)>, tries: u32) {
    let again = webview.clone();
    webview.evaluate_javascript(SCRIPT, None, None, None::<&webkit2gtk::gio::Cancellable>, move |value| match value.map(|v| v.to_double()) {
        Ok(ms) if ms > 0.0 => done(Ok(UNIX_EPOCH + Duration::from_secs_f64(ms / 1000.0))),
        Ok(_) if tries < TRIES => {
            webkit2gtk::glib::timeout_add_local_once(EVERY, move || ask(again, done, tries + 1));
        }
        Ok(_) => done(Err(format!("the page reported no paint within {} s", (EVERY * TRIES).as_secs()))),
        Err(e) => done(Err(format!("could not read the page's paint timing: {e}"))),
    });
}

/// `at` as whole milliseconds since the Unix epoch (what the log line carries).
pub fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

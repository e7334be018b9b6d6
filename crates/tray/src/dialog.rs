//! The resident's two dialogs — "Quit Nightshift?" while runs are going, and "Nightshift cannot
//! start" — as plain GTK message dialogs on the UI thread (the same GTK the tray menu uses; no
//! webview). Closing one with the window manager counts as its safe answer.

/// Ask `text` under `title` with buttons `yes` and `no`; `answer(true)` only for `yes`.
#[cfg(target_os = "linux")]
pub fn ask(title: &str, text: &str, yes: &str, no: &str, answer: impl Fn(bool) + 'static) {
    use gtk::prelude::*;
    let dialog = gtk::MessageDialog::new(None::<&gtk::Window>, gtk::DialogFlags::empty(), gtk::MessageType::Question, gtk::ButtonsType::None, text);
    dialog.set_title(title);
    dialog.add_button(no, gtk::ResponseType::Cancel);
    dialog.add_button(yes, gtk::ResponseType::Accept);
    dialog.set_default_response(gtk::ResponseType::Cancel);
    dialog.connect_response(move |dialog, response| {
        dialog.close();
        answer(response == gtk::ResponseType::Accept);
    });
    dialog.set_keep_above(true);
    dialog.show_all();
}

/// Say that the app cannot start, and why; `closed` runs once it is dismissed either way.
#[cfg(target_os = "linux")]
pub fn cannot_start(message: &str, closed: impl Fn() + 'static) {
    use gtk::prelude::*;
    tracing::error!("{message}");
    eprintln!("error: Nightshift could not start: {message}");
    let dialog = gtk::MessageDialog::new(None::<&gtk::Window>, gtk::DialogFlags::empty(), gtk::MessageType::Error, gtk::ButtonsType::None, message);
    dialog.set_title(CANNOT_START_TITLE);
    dialog.add_button("Quit", gtk::ResponseType::Close);
    dialog.connect_response(move |dialog, _| {
        dialog.close();
        closed();
    });
    dialog.show_all();
}

/// Systems this resident has not been built and tried on: no dialog; the safe answer.
#[cfg(not(target_os = "linux"))]
pub fn ask(title: &str, text: &str, _yes: &str, _no: &str, answer: impl Fn(bool) + 'static) {
    tracing::warn!("{title} {text} (no dialog on this system: kept running)");
    answer(false);
}

#[cfg(not(target_os = "linux"))]
pub fn cannot_start(message: &str, closed: impl Fn() + 'static) {
    tracing::error!("{message}");
    eprintln!("error: Nightshift could not start: {message}");
    closed();
}

/// The title of the dialog shown when the home cannot be opened.
pub const CANNOT_START_TITLE: &str = "Nightshift cannot start";

//! The tray icon and its menu, wired to the running app: what it shows comes from the engine
//! ([`facts`], shaped into icon, tooltip and menu by the pure model in [`crate::tray`]), and what a
//! click does acts on the app ([`on_menu`]).

use crate::tray::{self, MenuChange, MenuEntry, TrayFacts, TrayView};
use crate::{bridge, relogin, show, show_window, AppState};
use nightshift_core::run::{RunStatus, Trigger};
use std::collections::HashMap;
use std::sync::Mutex;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, MenuItemKind, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_autostart::ManagerExt;

const TRAY_ID: &str = "nightshift";

/// What the tray shows now ([`tray::changes`] decides what a refresh must set), and the menu's
/// items by id, to change their texts in place.
struct Shown<R: Runtime>(Mutex<(TrayView, Items<R>)>);

type Items<R> = HashMap<String, MenuItemKind<R>>;

/// Start a routine now (a manual run never waits silently: it starts, or is visibly queued).
pub(crate) fn run_now<R: Runtime>(app: &AppHandle<R>, name: String) {
    let engine = app.state::<AppState>().engine.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = engine.run_now(&name, Trigger::Manual).await {
            tracing::error!(routine = %name, "Run now failed: {}", e.message);
        }
    });
}

/// Gather what the tray shows (reads the keychain for account health: off the UI thread).
async fn facts<R: Runtime>(app: &AppHandle<R>) -> TrayFacts {
    let engine = app.state::<AppState>().engine.clone();
    let autostart = app.autolaunch().is_enabled().unwrap_or(false);
    // The same read the window's header, its Routines view and `nightshiftctl` use.
    let Ok(glance) = nightshift_core::api::glance(&engine, &crate::face::AppFace(app.clone())).await else { return TrayFacts::default() };
    let routines = glance
        .routines
        .into_iter()
        .map(|r| tray::RoutineLine { last: r.last_run.map(|l| l.status).filter(|s| *s != RunStatus::Missed), next: r.next_fire, valid: r.valid, name: r.name })
        .collect();
    let state = glance.state;
    TrayFacts {
        running: state.running,
        queued: state.queued,
        paused: state.paused,
        scheduled_elsewhere: state.scheduled_elsewhere,
        routines,
        accounts: glance.accounts,
        autostart,
        problems: state.problems,
    }
}

pub(crate) async fn refresh_tray<R: Runtime>(app: &AppHandle<R>) {
    let view = tray::view(&facts(app).await);
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || {
        let Some(tray) = handle.tray_by_id(TRAY_ID) else { return };
        let Some(shown) = handle.try_state::<Shown<R>>() else { return };
        let mut shown = shown.0.lock().unwrap_or_else(|e| e.into_inner());
        let (before, items) = &mut *shown;
        let changed = tray::changes(Some(before), &view);
        if changed.icon {
            if let Ok(img) = tauri::image::Image::from_bytes(view.icon.png()) {
                let _ = tray.set_icon(Some(img));
            }
        }
        if changed.tooltip {
            let _ = tray.set_tooltip(Some(&view.tooltip));
        }
        match changed.menu {
            MenuChange::Same => {}
            MenuChange::InPlace => update_in_place(items, &view.menu),
            MenuChange::Rebuild => match build_menu(&handle, &view.menu) {
                Ok((menu, built)) => {
                    let _ = tray.set_menu(Some(menu));
                    *items = built;
                }
                Err(e) => tracing::error!(error = %e, "could not build the tray menu"),
            },
        }
        *before = view;
    });
}

pub(crate) fn install_tray<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let initial = tray::view(&TrayFacts::default());
    let (menu, items) = build_menu(app, &initial.menu)?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(tauri::image::Image::from_bytes(initial.icon.png())?)
        .tooltip(&initial.tooltip)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .build(app)?;
    app.manage(Shown(Mutex::new((initial, items))));
    Ok(())
}

fn build_menu<R: Runtime>(app: &AppHandle<R>, entries: &[MenuEntry]) -> tauri::Result<(Menu<R>, Items<R>)> {
    let menu = Menu::new(app)?;
    let mut items = Items::new();
    for e in entries {
        let item = menu_item(app, e, &mut items)?;
        menu.append(&*item)?;
    }
    Ok((menu, items))
}

/// The same entries as shown: set what their texts and states say now, keeping their ids.
fn update_in_place<R: Runtime>(items: &Items<R>, entries: &[MenuEntry]) {
    for e in entries {
        match (e, items.get(e.id())) {
            (MenuEntry::Item { text, enabled, .. }, Some(MenuItemKind::MenuItem(item))) => {
                let _ = item.set_text(text);
                let _ = item.set_enabled(*enabled);
            }
            (MenuEntry::Check { text, checked, .. }, Some(MenuItemKind::Check(item))) => {
                let _ = item.set_text(text);
                let _ = item.set_checked(*checked);
            }
            (MenuEntry::Submenu { items: children, .. }, _) => update_in_place(items, children),
            _ => {}
        }
    }
}

fn menu_item<R: Runtime>(app: &AppHandle<R>, e: &MenuEntry, built: &mut Items<R>) -> tauri::Result<Box<dyn IsMenuItem<R>>> {
    Ok(match e {
        MenuEntry::Item { id, text, enabled } => {
            let item = MenuItem::with_id(app, id, text, *enabled, None::<&str>)?;
            built.insert(id.clone(), MenuItemKind::MenuItem(item.clone()));
            Box::new(item)
        }
        MenuEntry::Check { id, text, checked } => {
            let item = CheckMenuItem::with_id(app, id, text, true, *checked, None::<&str>)?;
            built.insert(id.clone(), MenuItemKind::Check(item.clone()));
            Box::new(item)
        }
        MenuEntry::Separator => Box::new(PredefinedMenuItem::separator(app)?),
        MenuEntry::Submenu { text, items } => {
            let sub = Submenu::new(app, text, true)?;
            for i in items {
                sub.append(&*menu_item(app, i, built)?)?;
            }
            Box::new(sub)
        }
    })
}

/// Tray menu clicks. Kept here (not in the model) because they act on the running app.
pub fn on_menu<R: Runtime>(app: &AppHandle<R>, id: &str) {
    let engine = app.state::<AppState>().engine.clone();
    if let Some(name) = id.strip_prefix(tray::RUN_PREFIX) {
        return run_now(app, name.to_string());
    }
    if let Some(email) = id.strip_prefix(tray::RELOGIN_PREFIX) {
        let Ok(account) = engine.account(email) else { return };
        if let Err(command) = relogin::open_terminal(&account) {
            // No terminal here: the window shows the exact command (and a field for a setup token).
            show(app, bridge::Open::Relogin { account: email.to_string(), command });
        }
        return;
    }
    match id {
        "pause" | "resume" => {
            if let Err(e) = engine.set_paused(id == "pause") {
                tracing::error!("{}", e.message);
            }
        }
        "autostart" => {
            let al = app.autolaunch();
            let on = al.is_enabled().unwrap_or(false);
            let _ = if on { al.disable() } else { al.enable() };
            let app = app.clone();
            tauri::async_runtime::spawn(async move { refresh_tray(&app).await });
        }
        "open" => show_window(app),
        "quit" => {
            // Runs keep going in their own process groups and are re-adopted at the next start;
            // still, quitting while they run is worth a question.
            let running = engine.running_count().unwrap_or(0);
            if running == 0 {
                return app.exit(0);
            }
            use tauri_plugin_dialog::{DialogExt, MessageDialogButtons};
            let app2 = app.clone();
            app.dialog()
                .message(format!(
                    "{running} run{} still going. If you quit, {} running and Nightshift picks {} up (records, notifications) at its next start.",
                    if running == 1 { " is" } else { "s are" },
                    if running == 1 { "it keeps" } else { "they keep" },
                    if running == 1 { "it" } else { "them" },
                ))
                .title("Quit Nightshift?")
                .buttons(MessageDialogButtons::OkCancelCustom("Quit".into(), "Keep Nightshift running".into()))
                .show(move |quit| {
                    if quit {
                        app2.exit(0);
                    }
                });
        }
        _ => {}
    }
}

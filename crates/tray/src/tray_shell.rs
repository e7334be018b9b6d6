//! The tray icon and its menu on the UI thread (`tray-icon` + `muda`, the crates under Tauri's
//! tray): what it shows comes from the engine ([`facts`], shaped into icon, tooltip and menu by
//! the pure model in [`crate::tray`]); a click reaches [`crate::Resident::on_menu`] by the
//! entry's id.

use crate::tray::{self, MenuChange, MenuEntry, TrayFacts, TrayView};
use crate::Resident;
use nightshift_core::run::RunStatus;
use std::collections::HashMap;
use std::sync::Arc;
use tray_icon::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tray_icon::{Icon, TrayIcon, TrayIconBuilder};

const TRAY_ID: &str = "nightshift";

/// Gather what the tray shows (reads the keychain for account health: off the UI thread).
pub async fn facts(resident: &Arc<Resident>) -> TrayFacts {
    let autostart = crate::autostart::is_enabled();
    // The same read the window's header, its Routines view and `nightshiftctl` use.
    let face = crate::face::ResidentFace(Arc::clone(resident));
    let Ok(glance) = nightshift_core::api::glance(&resident.engine, &face).await else { return TrayFacts::default() };
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

/// A menu entry as built, to change its text and state in place.
enum Item {
    Plain(MenuItem),
    Check(CheckMenuItem),
}

/// The tray icon, what it shows now ([`tray::changes`] decides what a new view must set), and
/// the menu's items by id.
pub struct TrayUi {
    icon: TrayIcon,
    shown: TrayView,
    items: HashMap<String, Item>,
}

impl TrayUi {
    pub fn install() -> Result<TrayUi, String> {
        let shown = tray::view(&TrayFacts::default());
        let (menu, items) = build_menu(&shown.menu).map_err(|e| e.to_string())?;
        let icon = TrayIconBuilder::new()
            .with_id(TRAY_ID)
            .with_icon(icon(shown.icon)?)
            .with_tooltip(&shown.tooltip)
            .with_menu(Box::new(menu))
            .with_menu_on_left_click(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(TrayUi { icon, shown, items })
    }

    /// Show `view`: set only what changed; a menu whose entries are the same ones keeps its items
    /// (and their ids, which a panel's open menu still uses) and changes their texts in place.
    pub fn show(&mut self, view: TrayView) {
        let changed = tray::changes(Some(&self.shown), &view);
        if changed.icon {
            match icon(view.icon) {
                Ok(i) => {
                    let _ = self.icon.set_icon(Some(i));
                }
                Err(e) => tracing::error!("could not set the tray icon: {e}"),
            }
        }
        if changed.tooltip {
            let _ = self.icon.set_tooltip(Some(&view.tooltip));
        }
        match changed.menu {
            MenuChange::Same => {}
            MenuChange::InPlace => update_in_place(&self.items, &view.menu),
            MenuChange::Rebuild => match build_menu(&view.menu) {
                Ok((menu, items)) => {
                    self.icon.set_menu(Some(Box::new(menu)));
                    self.items = items;
                }
                Err(e) => tracing::error!(error = %e, "could not build the tray menu"),
            },
        }
        self.shown = view;
    }
}

/// One of the three branded icons, decoded from its PNG.
fn icon(state: tray::IconState) -> Result<Icon, String> {
    let mut reader = png::Decoder::new(std::io::Cursor::new(state.png())).read_info().map_err(|e| e.to_string())?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("the icon is too large")?];
    let frame = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    if frame.color_type != png::ColorType::Rgba || frame.bit_depth != png::BitDepth::Eight {
        return Err(format!("the tray icon must be 8-bit RGBA, not {:?} {:?}", frame.color_type, frame.bit_depth));
    }
    buf.truncate(frame.buffer_size());
    Icon::from_rgba(buf, frame.width, frame.height).map_err(|e| e.to_string())
}

fn build_menu(entries: &[MenuEntry]) -> tray_icon::menu::Result<(Menu, HashMap<String, Item>)> {
    let menu = Menu::new();
    let mut items = HashMap::new();
    for e in entries {
        menu.append(&*menu_item(e, &mut items)?)?;
    }
    Ok((menu, items))
}

/// The same entries as shown: set what their texts and states say now, keeping their ids.
fn update_in_place(items: &HashMap<String, Item>, entries: &[MenuEntry]) {
    for e in entries {
        match (e, items.get(e.id())) {
            (MenuEntry::Item { text, enabled, .. }, Some(Item::Plain(item))) => {
                item.set_text(text);
                item.set_enabled(*enabled);
            }
            (MenuEntry::Check { text, checked, .. }, Some(Item::Check(item))) => {
                item.set_text(text);
                item.set_checked(*checked);
            }
            (MenuEntry::Submenu { items: children, .. }, _) => update_in_place(items, children),
            _ => {}
        }
    }
}

fn menu_item(e: &MenuEntry, built: &mut HashMap<String, Item>) -> tray_icon::menu::Result<Box<dyn IsMenuItem>> {
    Ok(match e {
        MenuEntry::Item { id, text, enabled } => {
            let item = MenuItem::with_id(id.as_str(), text, *enabled, None);
            built.insert(id.clone(), Item::Plain(item.clone()));
            Box::new(item)
        }
        MenuEntry::Check { id, text, checked } => {
            let item = CheckMenuItem::with_id(id.as_str(), text, true, *checked, None);
            built.insert(id.clone(), Item::Check(item.clone()));
            Box::new(item)
        }
        MenuEntry::Separator => Box::new(PredefinedMenuItem::separator()),
        MenuEntry::Submenu { text, items } => {
            let sub = Submenu::new(text, true);
            for i in items {
                sub.append(&*menu_item(i, built)?)?;
            }
            Box::new(sub)
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_three_icons_decode() {
        for state in [super::tray::IconState::Idle, super::tray::IconState::Running, super::tray::IconState::Attention] {
            super::icon(state).unwrap_or_else(|e| panic!("{state:?}: {e}"));
        }
    }
}

//! The tray icon and its menu, with Tauri's tray API: what it shows comes from the engine
//! ([`crate::shell::Shell::tray_facts`], shaped into icon, tooltip and menu by the pure model in
//! [`crate::tray`]); a click reaches [`crate::shell::Shell::on_menu`] by the entry's id.

use crate::tray::{self, MenuChange, MenuEntry, TrayFacts, TrayView};
use std::collections::HashMap;
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Runtime};

const TRAY_ID: &str = "nightshift";

/// A menu entry as built, to change its text and state in place.
enum Item<R: Runtime> {
    Plain(MenuItem<R>),
    Check(CheckMenuItem<R>),
}

/// The tray icon, what it shows now ([`tray::changes`] decides what a new view must set), and
/// the menu's items by id.
pub struct TrayUi<R: Runtime> {
    icon: TrayIcon<R>,
    shown: TrayView,
    items: HashMap<String, Item<R>>,
}

impl<R: Runtime> TrayUi<R> {
    /// Put the icon in the tray; its clicks go to `on_menu`.
    pub fn install(app: &AppHandle<R>, on_menu: impl Fn(&str) + Send + Sync + 'static) -> tauri::Result<TrayUi<R>> {
        let shown = tray::view(&TrayFacts::default());
        let (menu, items) = build_menu(app, &shown.menu)?;
        let icon = TrayIconBuilder::with_id(TRAY_ID)
            .icon(Image::from_bytes(shown.icon.png())?)
            .tooltip(&shown.tooltip)
            .menu(&menu)
            .show_menu_on_left_click(true)
            .on_menu_event(move |_, event| on_menu(event.id().as_ref()))
            .build(app)?;
        Ok(TrayUi { icon, shown, items })
    }

    /// Show `view`: set only what changed; a menu whose entries are the same ones keeps its items
    /// (and their ids, which a panel's open menu still uses) and changes their texts in place.
    pub fn show(&mut self, app: &AppHandle<R>, view: TrayView) {
        let changed = tray::changes(Some(&self.shown), &view);
        if changed.icon {
            match Image::from_bytes(view.icon.png()) {
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
            MenuChange::Rebuild => match build_menu(app, &view.menu) {
                Ok((menu, items)) => {
                    let _ = self.icon.set_menu(Some(menu));
                    self.items = items;
                }
                Err(e) => tracing::error!(error = %e, "could not build the tray menu"),
            },
        }
        self.shown = view;
    }
}

type Built<R> = (Menu<R>, HashMap<String, Item<R>>);

fn build_menu<R: Runtime>(app: &AppHandle<R>, entries: &[MenuEntry]) -> tauri::Result<Built<R>> {
    let menu = Menu::new(app)?;
    let mut items = HashMap::new();
    for e in entries {
        menu.append(&*menu_item(app, e, &mut items)?)?;
    }
    Ok((menu, items))
}

/// The same entries as shown: set what their texts and states say now, keeping their ids.
fn update_in_place<R: Runtime>(items: &HashMap<String, Item<R>>, entries: &[MenuEntry]) {
    for e in entries {
        match (e, items.get(e.id())) {
            (MenuEntry::Item { text, enabled, .. }, Some(Item::Plain(item))) => {
                let _ = item.set_text(text);
                let _ = item.set_enabled(*enabled);
            }
            (MenuEntry::Check { text, checked, .. }, Some(Item::Check(item))) => {
                let _ = item.set_text(text);
                let _ = item.set_checked(*checked);
            }
            (MenuEntry::Submenu { items: children, .. }, _) => update_in_place(items, children),
            _ => {}
        }
    }
}

fn menu_item<R: Runtime>(app: &AppHandle<R>, e: &MenuEntry, built: &mut HashMap<String, Item<R>>) -> tauri::Result<Box<dyn IsMenuItem<R>>> {
    Ok(match e {
        MenuEntry::Item { id, text, enabled } => {
            let item = MenuItem::with_id(app, id.as_str(), text, *enabled, None::<&str>)?;
            built.insert(id.clone(), Item::Plain(item.clone()));
            Box::new(item)
        }
        MenuEntry::Check { id, text, checked } => {
            let item = CheckMenuItem::with_id(app, id.as_str(), text, true, *checked, None::<&str>)?;
            built.insert(id.clone(), Item::Check(item.clone()));
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_three_icons_decode() {
        for state in [super::tray::IconState::Idle, super::tray::IconState::Running, super::tray::IconState::Attention] {
            tauri::image::Image::from_bytes(state.png()).unwrap_or_else(|e| panic!("{state:?}: {e}"));
        }
    }
}

//! Start at login: an XDG autostart entry (`~/.config/autostart/Nightshift.desktop`; a LaunchAgent
//! on macOS) that starts this binary with `--minimized`, straight to the tray.

use auto_launch::{AutoLaunch, AutoLaunchBuilder};

fn entry() -> Result<AutoLaunch, String> {
    let exe = crate::window_host::this_binary();
    AutoLaunchBuilder::new()
        .set_app_name("Nightshift")
        .set_app_path(&exe.to_string_lossy())
        .set_args(&[crate::MINIMIZED])
        .build()
        .map_err(|e| e.to_string())
}

pub fn is_enabled() -> bool {
    entry().and_then(|e| e.is_enabled().map_err(|e| e.to_string())).unwrap_or(false)
}

/// Turn Start at login on if it is off, off if it is on.
pub fn toggle() -> Result<(), String> {
    let entry = entry()?;
    let on = entry.is_enabled().map_err(|e| e.to_string())?;
    if on { entry.disable() } else { entry.enable() }.map_err(|e| e.to_string())
}

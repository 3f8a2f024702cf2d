//! The tray icon: the pending count at a glance, open the window, quit (which drains runs).

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager};

const TRAY: &str = "reins";

pub fn build(app: &AppHandle) -> tauri::Result<()> {
    let open = MenuItem::with_id(app, "open", "Open Reins", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit (pause runs safely)", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&open, &quit])?;
    let mut tray = TrayIconBuilder::with_id(TRAY)
        .tooltip("Reins")
        .menu(&menu)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "open" => crate::show_main(app),
            "quit" => crate::quit(app),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(())
}

/// Shows the pending count on the tray (as a label where the desktop shows one, and in the tooltip).
pub fn show_pending(app: &AppHandle, pending: u32) {
    let Some(tray) = app.tray_by_id(TRAY) else {
        return;
    };
    let text = match pending {
        0 => "Reins: nothing waits for you".to_owned(),
        1 => "Reins: 1 approval waiting".to_owned(),
        n => format!("Reins: {n} approvals waiting"),
    };
    let _ = tray.set_tooltip(Some(&text));
    let _ = tray.set_title((pending > 0).then(|| pending.to_string()));
    if let Some(w) = app.get_webview_window("main") {
        let title = if pending > 0 {
            format!("Reins ({pending})")
        } else {
            "Reins".to_owned()
        };
        let _ = w.set_title(&title);
    }
}

//! The tray icon: the pending count at a glance, the oldest waiting cards (one opens at a click),
//! open the window, quit (which drains runs).

use reins_core::api::ApprovalView;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager};

const TRAY: &str = "reins";

/// A menu item that opens a card carries this before the card's id.
const CARD: &str = "card:";

/// The menu: the waiting cards first (each opens in the window), then open and quit.
fn menu(app: &AppHandle, cards: &[(ApprovalView, String)]) -> tauri::Result<Menu<tauri::Wry>> {
    let menu = Menu::new(app)?;
    for (a, run) in cards {
        let line = format!("{} risk · {run}: {} {}", a.risk, a.tool, a.subject);
        let line: String = line.chars().take(72).collect();
        menu.append(&MenuItem::with_id(
            app,
            format!("{CARD}{}", a.id),
            line,
            true,
            None::<&str>,
        )?)?;
    }
    if !cards.is_empty() {
        menu.append(&PredefinedMenuItem::separator(app)?)?;
    }
    menu.append(&MenuItem::with_id(
        app,
        "open",
        "Open Reins",
        true,
        None::<&str>,
    )?)?;
    menu.append(&MenuItem::with_id(
        app,
        "quit",
        "Quit (pause runs safely)",
        true,
        None::<&str>,
    )?)?;
    Ok(menu)
}

pub fn build(app: &AppHandle) -> tauri::Result<()> {
    let mut tray = TrayIconBuilder::with_id(TRAY)
        .tooltip("Reins")
        .menu(&menu(app, &[])?)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "open" => crate::show_main(app),
            "quit" => crate::quit(app),
            id => {
                if let Some(card) = id.strip_prefix(CARD) {
                    crate::notice::open_approval(app, card);
                }
            }
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

/// Lists the oldest waiting cards (up to five) in the tray's menu, when they changed.
pub fn show_waiting(app: &AppHandle, cards: &[(ApprovalView, String)]) {
    let Some(tray) = app.tray_by_id(TRAY) else {
        return;
    };
    let ids: Vec<&str> = cards.iter().map(|(a, _)| a.id.as_str()).collect();
    let listed = app.state::<Listed>();
    let mut last = listed.0.lock().unwrap_or_else(|e| e.into_inner());
    if last.iter().map(String::as_str).eq(ids.iter().copied()) {
        return;
    }
    match menu(app, cards) {
        Ok(m) => {
            if let Err(e) = tray.set_menu(Some(m)) {
                tracing::warn!("cannot update the tray menu: {e}");
                return;
            }
            *last = ids.into_iter().map(str::to_owned).collect();
        }
        Err(e) => tracing::warn!("cannot build the tray menu: {e}"),
    }
}

/// The cards the tray's menu lists now (so it is rebuilt only when they change).
#[derive(Default)]
pub struct Listed(std::sync::Mutex<Vec<String>>);

//! The Reins desktop app: a Tauri shell over `reins_core`. It opens the data dir once, runs a
//! worker in-process (the `reins` CLI may work on the same data dir at the same time), and exposes
//! the core facade to its one window through the commands in `commands/` — nothing else: no shell,
//! fs or sql plugin is reachable from the webview.

mod args;
pub mod commands;
mod demo;
mod error;
pub mod events;
mod notice;
mod state;
mod tray;
mod watcher;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reins_core::api::DataDir;
use reins_core::api::Keyring;
use reins_core::api::{Options, Reins};
use tauri::{AppHandle, Manager, RunEvent, WindowEvent};
use tokio::sync::Notify;

pub use error::IpcError;
use state::AppState;

/// Where the generated TypeScript lives (relative to this crate).
pub const BINDINGS: &str = "../ui/src/lib/ipc/bindings.ts";

/// The commands and events the UI may use; the TypeScript bindings are generated from this.
pub fn specta() -> tauri_specta::Builder<tauri::Wry> {
    use commands::*;
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(tauri_specta::collect_commands![
            runs::list_runs,
            runs::run_detail,
            runs::run_context,
            runs::run_usage,
            runs::start_plan_run,
            runs::start_llm_run,
            runs::list_agents,
            runs::list_mcp_servers,
            runs::start_acp_run,
            runs::pause_run,
            runs::resume_run,
            runs::cancel_run,
            runs::rollback_run,
            budget::allow_more,
            budget::stop_at_budget,
            budget::default_budget,
            budget::set_default_budget,
            approvals::list_approvals,
            approvals::approval,
            approvals::approve,
            approvals::approve_batch,
            approvals::reject,
            memory::memory_list,
            memory::memory_show,
            memory::memory_edit,
            memory::memory_delete,
            memory::memory_clear,
            memory::memory_suggestions,
            memory::memory_accept,
            memory::memory_dismiss,
            memory::memory_settings,
            memory::memory_set_enabled,
            audit::audit_page,
            audit::audit_verify,
            audit::audit_export,
            rules::list_grants,
            rules::revoke_grant,
            settings::app_info,
            settings::provider_defaults,
            settings::set_provider_defaults,
            settings::key_status,
            settings::key_set,
            settings::key_delete,
            settings::clean_up,
            settings::pick_folder,
            settings::pick_file,
            team::team_database,
            team::check_team_database,
            team::connect_team_database,
            team::disconnect_team_database,
            team::set_alert_scope,
            telemetry::telemetry_settings,
            telemetry::save_telemetry_settings,
            telemetry::telemetry_send_now,
            machine::check_model_server,
            machine::agents_on_path,
            machine::register_found_agent,
            machine::claude_hooks,
            machine::set_claude_hooks,
            policy::policy_state,
            policy::policy_try,
            policy::open_policy_file,
            demo::start_demo,
            remote::remote_status,
            remote::remote_start,
            remote::remote_stop,
            remote::remote_pair,
            remote::list_devices,
            remote::revoke_device,
        ])
        .events(tauri_specta::collect_events![
            events::Changed,
            events::OpenApproval
        ])
        // Our i64s are Unix milliseconds, sequence numbers, sizes and counts: all far below 2^53,
        // so a JavaScript number holds them exactly.
        .dangerously_cast_bigints_to_number()
        // One TypeScript type per Rust type (what Rust sends and accepts have the same shape here).
        .disable_serde_phases()
}

/// Writes the TypeScript bindings for the UI.
pub fn export_bindings(path: &std::path::Path) -> Result<(), String> {
    specta()
        .export(
            specta_typescript::Typescript::default()
                .header("// Generated from the Rust commands by `cargo test -p reins-app bindings`. Do not edit.\n// @ts-nocheck"),
            path,
        )
        .map_err(|e| e.to_string())
}

/// Set once a quit was asked for: the worker drains (runs pause at their next safe point).
static QUITTING: AtomicBool = AtomicBool::new(false);

pub fn show_main(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// Quits after the in-process worker has drained: runs it drives pause at their next safe point
/// (checkpoint written and verified), so nothing is cut off mid-effect.
pub fn quit(app: &AppHandle) {
    leave(app, false);
}

/// Starts the app again, draining first as [`quit`] does (after the team database changed).
pub fn restart(app: &AppHandle) {
    leave(app, true);
}

fn leave(app: &AppHandle, again: bool) {
    if QUITTING.swap(true, Ordering::SeqCst) {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Some(state) = app.try_state::<AppState>() {
            state.reins.drain_flag().store(true, Ordering::SeqCst);
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !DRAINED.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            state.reins.close().await;
        }
        if again {
            app.restart();
        }
        app.exit(0);
    });
}

/// Set when the in-process worker has returned.
static DRAINED: AtomicBool = AtomicBool::new(false);

/// SIGTERM (logout, shutdown, `kill`) and SIGINT quit like the tray's Quit: runs pause at their
/// next safe point first. A second signal while draining is left to the default: the process ends,
/// and the runs recover from their last checkpoint.
async fn quit_on_signal(app: AppHandle) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM/SIGINT; quit from the tray to drain runs");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    quit(&app);
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    std::process::exit(130);
}

fn open_core() -> Result<Reins, reins_core::api::Error> {
    let explicit = std::env::var_os(reins_core::api::DATA_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    let data_dir = DataDir::resolve(explicit)?;
    // The team database: REINS_DATABASE_URL (and REINS_DATABASE_PASSWORD_KEY) where the app
    // runs, else the one Settings → Team database saved; else the SQLite file in the data dir.
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (database, database_password_key) = match env("REINS_DATABASE_URL") {
        Some(url) => (Some(url), env("REINS_DATABASE_PASSWORD_KEY")),
        None => match reins_core::api::saved_team_database()? {
            Some(saved) => (Some(saved.url), saved.password_key),
            None => (None, None),
        },
    };
    let options = Options {
        secrets: Some(Arc::new(Keyring::new())),
        memory_server: reins_program(),
        database,
        database_password_key,
        ..Options::default()
    };
    tauri::async_runtime::block_on(Reins::open(data_dir, options))
}

/// The `reins` CLI, which external agents start as Reins' memory server: the one installed beside
/// the app (the .deb puts both in /usr/bin), else the first on PATH. None: agents go without it.
pub(crate) fn reins_program() -> Option<std::path::PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("reins")))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("reins"))
            .find(|p| p.is_file())
    })
}

/// Whether the program was started under the CLI's name (`reins`, by a link or a copy), from its
/// first argument.
pub fn started_as_cli(argv0: Option<std::ffi::OsString>) -> bool {
    argv0
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .is_some_and(|n| n == "reins")
}

pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REINS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let reins = match open_core() {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("reins-app: cannot open the data dir: {e}");
            std::process::exit(1);
        }
    };
    let demo = std::env::args().any(|a| a == "--demo");
    let specta = specta();
    let app = tauri::Builder::default()
        // First, so a second launch only brings the running app's window up.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .callback(|app, _argv, _cwd| show_main(app))
                .dbus_id(instance_id(reins.data_dir()))
                .build(),
        )
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(specta.invoke_handler())
        .setup(move |app| {
            specta.mount_events(app);
            let wake = Arc::new(Notify::new());
            // A file that does not read is shown in Settings; the tray covers the team meanwhile.
            let scope = reins_core::api::saved_alert_scope().unwrap_or_else(|e| {
                tracing::warn!("{e}; the tray and notifications cover the whole team");
                reins_core::api::AlertScope::Team
            });
            let (alerts, alerts_seen) = tokio::sync::watch::channel(scope);
            let telemetry = Arc::new(reins_core::api::TelemetryFollowing::default());
            app.manage(AppState {
                reins: reins.clone(),
                wake: wake.clone(),
                remote: std::sync::Mutex::new(None),
                alerts,
                telemetry: telemetry.clone(),
            });
            app.manage(tray::Listed::default());
            if let Err(e) = tray::build(app.handle()) {
                tracing::warn!("no tray icon ({e}); closing the window quits");
                NO_TRAY.store(true, Ordering::SeqCst);
            }
            let worker = reins.clone();
            let worker_wake = wake.clone();
            tauri::async_runtime::spawn(async move {
                // Spans follow the audit log while the app drives runs, when export is on. A
                // configuration that does not read is shown in Settings → Traces.
                if let Err(e) = telemetry.restart(&worker).await {
                    tracing::warn!("OpenTelemetry export is not running: {e}");
                }
                watcher::work(worker, worker_wake).await;
                telemetry.stop().await;
                DRAINED.store(true, Ordering::SeqCst);
            });
            tauri::async_runtime::spawn(watcher::watch(
                app.handle().clone(),
                reins.clone(),
                wake,
                alerts_seen,
            ));
            tauri::async_runtime::spawn(watcher::watch_policy(reins.clone()));
            tauri::async_runtime::spawn(quit_on_signal(app.handle().clone()));
            if demo {
                let reins = reins.clone();
                tauri::async_runtime::spawn(async move {
                    if let Err(e) = demo::start(&reins).await {
                        tracing::error!("cannot start the demo: {e}");
                    }
                });
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            // Closing the window detaches: runs go on, the tray brings the window back.
            if let WindowEvent::CloseRequested { api, .. } = event {
                if !NO_TRAY.load(Ordering::SeqCst) && !QUITTING.load(Ordering::SeqCst) {
                    api.prevent_close();
                    let _ = window.hide();
                } else {
                    api.prevent_close();
                    quit(window.app_handle());
                }
            }
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(a) => a,
        Err(e) => {
            eprintln!("reins-app: cannot start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        if let RunEvent::ExitRequested { api, code, .. } = event {
            // An exit we did not start (e.g. the last window went away): drain first.
            if code.is_none() && !QUITTING.load(Ordering::SeqCst) {
                api.prevent_exit();
                quit(app);
            }
        }
    });
}

/// One app per data dir: a second launch on the same data brings the first one's window up, while
/// an app on another data dir (`REINS_DATA_DIR`) runs beside it.
fn instance_id(data_dir: &std::path::Path) -> String {
    let digest = reins_core::api::Digest::of(data_dir.as_os_str().as_encoded_bytes());
    format!("dev.reins.desktop.d{}", digest.short())
}

static NO_TRAY: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
mod tests {
    /// The UI's TypeScript must match the Rust commands: regenerate and compare. With
    /// `REINS_WRITE_BINDINGS=1` the file is rewritten instead (then commit it).
    #[test]
    fn bindings_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(super::BINDINGS);
        let fresh = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("temp: {e}"));
        super::export_bindings(fresh.path()).unwrap_or_else(|e| panic!("export: {e}"));
        let new = std::fs::read_to_string(fresh.path()).unwrap_or_default();
        if std::env::var_os("REINS_WRITE_BINDINGS").is_some() {
            std::fs::write(&path, &new).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            return;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            old == new,
            "{} is out of date with the Rust commands: run `REINS_WRITE_BINDINGS=1 cargo test -p reins-app bindings` and commit it",
            path.display()
        );
    }

    /// A command the UI can call must be declared in `build.rs` and allowed to the main window
    /// in `capabilities/main.json`, or Tauri refuses it at run time ("not allowed"), which no
    /// component test with the fake backend can see. All three lists must name the same commands.
    #[test]
    fn every_command_is_declared_and_allowed_to_the_main_window() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |rel: &str| {
            std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
        };
        let quoted_after =
            |text: &str, start: &str, end: &str| -> std::collections::BTreeSet<String> {
                let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
                let to = from
                    + text[from..]
                        .find(end)
                        .unwrap_or_else(|| panic!("no {end:?}"));
                text[from..to]
                    .split('"')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect()
            };
        let bindings = read(super::BINDINGS);
        let invoked: std::collections::BTreeSet<String> = bindings
            .split("__TAURI_INVOKE(\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect();
        let declared = quoted_after(&read("build.rs"), "COMMANDS: &[&str] = &[", "];");
        let allowed: std::collections::BTreeSet<String> =
            quoted_after(&read("capabilities/main.json"), "\"permissions\"", "]")
                .into_iter()
                .filter_map(|p| p.strip_prefix("allow-").map(|c| c.replace('-', "_")))
                .collect();
        assert!(!invoked.is_empty(), "no commands found in the bindings");
        assert_eq!(
            declared, invoked,
            "build.rs COMMANDS against the UI's commands"
        );
        assert_eq!(
            allowed, invoked,
            "capabilities/main.json against the UI's commands"
        );
    }
}

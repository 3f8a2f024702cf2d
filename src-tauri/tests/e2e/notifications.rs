//! A stand-in desktop notification server (`org.freedesktop.Notifications` on the test's private
//! session bus): it records what the app shows and can "click" a notification, or one of its
//! buttons, the way a desktop does, by emitting `ActionInvoked`. And a stand-in screen saver
//! (`org.freedesktop.ScreenSaver`), locked or not as the test says.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use zbus::object_server::SignalEmitter;

#[derive(Clone, Debug)]
pub struct Shown {
    pub id: u32,
    pub summary: String,
    pub actions: Vec<String>,
}

#[derive(Default)]
struct Server {
    shown: Arc<Mutex<Vec<Shown>>>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Server {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        _body: String,
        actions: Vec<String>,
        _hints: std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        let id = shown.len() as u32 + 1;
        shown.push(Shown {
            id,
            summary,
            actions,
        });
        id
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["actions".into(), "body".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        ("reins-e2e".into(), "reins".into(), "1".into(), "1.2".into())
    }

    fn close_notification(&self, _id: u32) {}

    #[zbus(signal)]
    async fn action_invoked(
        emitter: &SignalEmitter<'_>,
        id: u32,
        action_key: &str,
    ) -> zbus::Result<()>;
}

pub struct Notifications {
    conn: zbus::Connection,
    shown: Arc<Mutex<Vec<Shown>>>,
}

const PATH: &str = "/org/freedesktop/Notifications";

impl Notifications {
    pub async fn serve() -> Result<Self> {
        let server = Server::default();
        let shown = server.shown.clone();
        let conn = zbus::connection::Builder::session()?
            .name("org.freedesktop.Notifications")?
            .serve_at(PATH, server)?
            .build()
            .await?;
        Ok(Self { conn, shown })
    }

    pub fn shown(&self) -> Vec<Shown> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Clicks notification `id` (its default action).
    pub async fn click(&self, id: u32) -> Result<()> {
        self.invoke(id, "default").await
    }

    /// Picks action `key` of notification `id` (one of its buttons).
    pub async fn invoke(&self, id: u32, key: &str) -> Result<()> {
        let iface = self
            .conn
            .object_server()
            .interface::<_, Server>(PATH)
            .await?;
        Server::action_invoked(iface.signal_emitter(), id, key).await?;
        Ok(())
    }
}

struct Saver {
    locked: Arc<AtomicBool>,
}

#[zbus::interface(name = "org.freedesktop.ScreenSaver")]
impl Saver {
    fn get_active(&self) -> bool {
        self.locked.load(Ordering::SeqCst)
    }
}

/// The session's screen saver: whether the screen is locked, as a desktop answers it.
pub struct ScreenSaver {
    _conn: zbus::Connection,
    locked: Arc<AtomicBool>,
}

impl ScreenSaver {
    pub async fn serve(locked: bool) -> Result<Self> {
        let locked = Arc::new(AtomicBool::new(locked));
        let conn = zbus::connection::Builder::session()?
            .name("org.freedesktop.ScreenSaver")?
            .serve_at(
                "/org/freedesktop/ScreenSaver",
                Saver {
                    locked: locked.clone(),
                },
            )?
            .build()
            .await?;
        Ok(Self {
            _conn: conn,
            locked,
        })
    }

    pub fn lock(&self, locked: bool) {
        self.locked.store(locked, Ordering::SeqCst);
    }
}

//! A stand-in desktop notification server (`org.freedesktop.Notifications` on the test's private
//! session bus): it records what the app shows and can "click" a notification the way a desktop
//! does, by emitting `ActionInvoked`.

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
        let iface = self
            .conn
            .object_server()
            .interface::<_, Server>(PATH)
            .await?;
        Server::action_invoked(iface.signal_emitter(), id, "default").await?;
        Ok(())
    }
}

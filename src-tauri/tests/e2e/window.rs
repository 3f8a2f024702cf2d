//! The app's window as the X server sees it: whether it is on screen, and closing it the way a
//! window manager does when the user clicks its close button (a `WM_DELETE_WINDOW` message), so
//! the app decides what closing means. Xvfb runs no window manager, so the test sends it.

use anyhow::{Context, Result};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt, EventMask, MapState, Window,
};
use x11rb::rust_connection::RustConnection;

pub struct Screen {
    conn: RustConnection,
    root: Window,
}

impl Screen {
    pub fn connect() -> Result<Self> {
        let (conn, n) = x11rb::connect(None).context("connect to the X display")?;
        let root = conn.setup().roots.get(n).context("screen")?.root;
        Ok(Self { conn, root })
    }

    fn atom(&self, name: &str) -> Result<u32> {
        Ok(self.conn.intern_atom(false, name.as_bytes())?.reply()?.atom)
    }

    fn cardinal(&self, w: Window, prop: u32, kind: AtomEnum) -> Result<Vec<u32>> {
        let reply = self
            .conn
            .get_property(false, w, prop, kind, 0, 64)?
            .reply()?;
        Ok(reply.value32().map(Iterator::collect).unwrap_or_default())
    }

    /// The top-level window of process `pid` titled "Reins…" that accepts `WM_DELETE_WINDOW`.
    pub fn window_of(&self, pid: u32) -> Result<Option<Window>> {
        let (net_pid, protocols, delete) = (
            self.atom("_NET_WM_PID")?,
            self.atom("WM_PROTOCOLS")?,
            self.atom("WM_DELETE_WINDOW")?,
        );
        let (net_name, utf8) = (self.atom("_NET_WM_NAME")?, self.atom("UTF8_STRING")?);
        for w in self.conn.query_tree(self.root)?.reply()?.children {
            if self.cardinal(w, net_pid, AtomEnum::CARDINAL)?.first() != Some(&pid) {
                continue;
            }
            if !self
                .cardinal(w, protocols, AtomEnum::ATOM)?
                .contains(&delete)
            {
                continue;
            }
            let title = self
                .conn
                .get_property(false, w, net_name, utf8, 0, 256)?
                .reply()?
                .value;
            if title.starts_with(b"Reins") {
                return Ok(Some(w));
            }
        }
        Ok(None)
    }

    pub fn is_mapped(&self, w: Window) -> Result<bool> {
        Ok(self.conn.get_window_attributes(w)?.reply()?.map_state == MapState::VIEWABLE)
    }

    /// Asks the window to close, as a window manager's close button does.
    pub fn close(&self, w: Window) -> Result<()> {
        let (protocols, delete) = (self.atom("WM_PROTOCOLS")?, self.atom("WM_DELETE_WINDOW")?);
        let event = ClientMessageEvent::new(32, w, protocols, [delete, 0, 0, 0, 0]);
        self.conn
            .send_event(false, w, EventMask::NO_EVENT, event)?
            .check()?;
        self.conn.flush()?;
        Ok(())
    }
}

//! A stand-in tray host: an `org.kde.StatusNotifierWatcher` on the test's private session bus.
//! With a watcher present, the app's tray icon (an AppIndicator) registers with it as a desktop
//! panel would see it, so the test can read the icon's label and click its menu items
//! (`com.canonical.dbusmenu`) the way a panel does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use zbus::message::Header;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

/// A registered tray item: the bus name that serves it and its object path.
#[derive(Clone, Debug)]
pub struct Item {
    pub bus_name: String,
    pub path: String,
}

#[derive(Default)]
struct Watcher {
    items: Arc<Mutex<Vec<Item>>>,
}

#[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    /// An item registers either by object path (AppIndicator does: the sender serves it) or by
    /// bus name (then at the specification's default path).
    fn register_status_notifier_item(&self, service: String, #[zbus(header)] header: Header<'_>) {
        let sender = header.sender().map(|s| s.to_string()).unwrap_or_default();
        let item = if service.starts_with('/') {
            Item {
                bus_name: sender,
                path: service,
            }
        } else {
            Item {
                bus_name: service,
                path: "/StatusNotifierItem".into(),
            }
        };
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(item);
    }

    fn register_status_notifier_host(&self, _service: String) {}

    #[zbus(property)]
    fn registered_status_notifier_items(&self) -> Vec<String> {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|i| format!("{}{}", i.bus_name, i.path))
            .collect()
    }

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }
}

pub struct Tray {
    conn: zbus::Connection,
    items: Arc<Mutex<Vec<Item>>>,
}

const ITEM: &str = "org.kde.StatusNotifierItem";
const MENU: &str = "com.canonical.dbusmenu";

impl Tray {
    pub async fn serve() -> Result<Self> {
        let watcher = Watcher::default();
        let items = watcher.items.clone();
        let conn = zbus::connection::Builder::session()?
            .name("org.kde.StatusNotifierWatcher")?
            .serve_at("/StatusNotifierWatcher", watcher)?
            .build()
            .await?;
        Ok(Self { conn, items })
    }

    /// The item registered by process `pid` (apps of other tests share this bus), if any yet.
    pub async fn item_of(&self, pid: u32) -> Result<Option<Item>> {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let dbus = zbus::fdo::DBusProxy::new(&self.conn).await?;
        for item in items {
            let name = zbus::names::BusName::try_from(item.bus_name.as_str())?;
            if dbus.get_connection_unix_process_id(name).await.ok() == Some(pid) {
                return Ok(Some(item));
            }
        }
        Ok(None)
    }

    /// Waits up to 15 s for the item of process `pid` to register.
    pub async fn wait_for_item(&self, pid: u32) -> Result<Item> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(item) = self.item_of(pid).await? {
                return Ok(item);
            }
            if Instant::now() > deadline {
                bail!("the app's tray icon never registered with the tray host");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn property(&self, item: &Item, name: &str) -> Result<OwnedValue> {
        let props = zbus::fdo::PropertiesProxy::builder(&self.conn)
            .destination(item.bus_name.as_str())?
            .path(item.path.as_str())?
            .build()
            .await?;
        let iface = zbus::names::InterfaceName::try_from(ITEM)?;
        Ok(props.get(iface, name).await?)
    }

    /// The text the panel shows next to the icon.
    pub async fn label(&self, item: &Item) -> Result<String> {
        let v = self.property(item, "XAyatanaLabel").await?;
        Ok(String::try_from(v)?)
    }

    /// The labels of the item's menu, in order.
    pub async fn labels(&self, item: &Item) -> Result<Vec<String>> {
        let (_, root) = self.layout(item).await?;
        let mut labels = Vec::new();
        for child in &root.2 {
            find(child, None, &mut labels);
        }
        Ok(labels)
    }

    async fn layout(&self, item: &Item) -> Result<(OwnedObjectPath, Node)> {
        let menu: OwnedObjectPath = self.property(item, "Menu").await?.try_into()?;
        let reply = self
            .conn
            .call_method(
                Some(item.bus_name.as_str()),
                menu.as_str(),
                Some(MENU),
                "GetLayout",
                &(0i32, -1i32, Vec::<String>::new()),
            )
            .await?;
        let (_revision, root): (u32, Node) = reply.body().deserialize()?;
        Ok((menu, root))
    }

    /// Clicks the menu item whose label contains `text`, as a panel does when the user picks it.
    pub async fn click(&self, item: &Item, text: &str) -> Result<()> {
        let (menu, root) = self.layout(item).await?;
        let mut labels = Vec::new();
        let id = root
            .2
            .iter()
            .find_map(|child| find(child, Some(text), &mut labels))
            .with_context(|| format!("no tray menu item {text:?} among {labels:?}"))?;
        self.conn
            .call_method(
                Some(item.bus_name.as_str()),
                menu.as_str(),
                Some(MENU),
                "Event",
                &(id, "clicked", Value::from(0i32), 0u32),
            )
            .await?;
        Ok(())
    }
}

type Node = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

/// The id of the menu node (or a descendant) labelled with `text`; collects the labels seen (all of
/// them when there is no `text`).
fn find(node: &Value<'_>, text: Option<&str>, seen: &mut Vec<String>) -> Option<i32> {
    let Value::Structure(s) = inside(node) else {
        return None;
    };
    let [Value::I32(id), Value::Dict(props), Value::Array(children)] = s.fields() else {
        return None;
    };
    let label = props.iter().find_map(|(k, v)| match (k, inside(v)) {
        (Value::Str(k), Value::Str(v)) if k.as_str() == "label" => Some(v.to_string()),
        _ => None,
    });
    if let Some(label) = label {
        if text.is_some_and(|t| label.replace('_', "").contains(t)) {
            return Some(*id);
        }
        seen.push(label);
    }
    children.iter().find_map(|c| find(c, text, seen))
}

/// The value a variant (`v`) holds; any other value as it is.
fn inside<'a>(v: &'a Value<'a>) -> &'a Value<'a> {
    match v {
        Value::Value(inner) => inner.as_ref(),
        other => other,
    }
}

//! Deciding from a notification on a real notification server: Debian's `dunst`, started by the
//! test on the session bus (scripts/e2e runs this module in a session of its own, since the other
//! tests put a stand-in server on theirs). Dunst's buttons are picked through its context menu,
//! which it shows through a `dmenu` program: here a script that records what dunst offered and
//! answers with the line the test asks for, as a person picking from the menu would.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use thirtyfour::prelude::*;

use super::harness::{App, Home};
use super::{notifications, read, EDIT_PLAN, HIGH_PLAN};

/// Dunst on the session bus, with a picker for its context menu.
struct Dunst {
    child: Child,
    dir: tempfile::TempDir,
}

impl Dunst {
    async fn start() -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let pick = dir.path().join("pick");
        std::fs::write(
            &pick,
            format!(
                "#!/bin/sh\n# What dunst offers, kept; the line asked for, answered.\ncat > '{0}/offered'\ngrep -F -m1 -- \"$(cat '{0}/want')\" '{0}/offered' || true\n",
                dir.path().display()
            ),
        )?;
        std::fs::set_permissions(&pick, std::fs::Permissions::from_mode(0o755))?;
        let config = dir.path().join("dunstrc");
        std::fs::write(&config, format!("[global]\ndmenu = {}\n", pick.display()))?;
        let child = Command::new("dunst")
            .arg("-config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start dunst (apt-get install dunst)")?;
        let dunst = Self { child, dir };
        let conn = zbus::Connection::session().await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let reply = conn
                .call_method(
                    Some("org.freedesktop.Notifications"),
                    "/org/freedesktop/Notifications",
                    Some("org.freedesktop.Notifications"),
                    "GetServerInformation",
                    &(),
                )
                .await;
            if let Ok(reply) = reply {
                let (name, ..): (String, String, String, String) = reply.body().deserialize()?;
                anyhow::ensure!(
                    name == "dunst",
                    "the notification server is {name:?}, not dunst"
                );
                return Ok(dunst);
            }
            if Instant::now() > deadline {
                bail!("dunst never took the notification server's name");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Opens dunst's context menu and picks the entry containing `want`; returns every entry
    /// dunst offered.
    fn pick(&self, want: &str) -> Result<Vec<String>> {
        let offered = self.file("offered");
        let _ = std::fs::remove_file(&offered);
        std::fs::write(self.file("want"), want)?;
        let status = Command::new("dunstctl").arg("context").status()?;
        anyhow::ensure!(status.success(), "dunstctl context: {status}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !offered.exists() {
            if Instant::now() > deadline {
                bail!("dunst never opened its context menu");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        Ok(read(&offered).lines().map(str::to_owned).collect())
    }
}

impl Drop for Dunst {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Picks no entry: only looks at what dunst offers.
const NONE: &str = "(pick none)";

/// Closes every notification (dunst keeps them in its history) and returns the history's text.
fn close_all_and_read_history() -> Result<String> {
    Command::new("dunstctl").arg("close-all").status()?;
    let out = Command::new("dunstctl").arg("history").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn displayed() -> Result<u32> {
    let out = Command::new("dunstctl")
        .args(["count", "displayed"])
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

fn greeting(ws: &Path) -> String {
    read(&ws.join("greeting.txt"))
}

/// Approve from dunst lands the edit and is audited "from the notification"; a high-risk card's
/// notification offers no Approve; with the screen locked, Approve decides nothing.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display and dunst: run scripts/e2e"]
async fn deciding_from_a_real_notification_server() -> Result<()> {
    let dunst = Dunst::start().await?;
    let saver = notifications::ScreenSaver::serve(false).await?;
    let home = Home::new()?;
    let app = App::launch(&home).await?;
    let plan = |name: &str| EDIT_PLAN.replace("Fix the greeting", name);
    let ws = |n: &str| home.workspace(n, &[("greeting.txt", "go away\n")]);

    // Approve, picked from dunst's menu: the edit lands, audited as from the notification.
    let one = ws("one")?;
    home.queue_plan(&plan("Greeting one"), &one)?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    app.until("dunst shows the card", || async { Ok(displayed()? >= 1) })
        .await?;
    let offered =
        dunst.pick("#Approve (Greeting one: script wants fs.edit greeting.txt (medium risk))")?;
    assert!(
        offered
            .iter()
            .any(|l| l.starts_with("#Reject (Greeting one:")),
        "a medium card offers Approve and Reject: {offered:?}"
    );
    app.until("the edit approved in dunst lands", || async {
        Ok(greeting(&one) == "hello there\n")
    })
    .await?;
    let audit = home.reins(&["audit", "list", "--kind", "approval.approved"], &[])?;
    assert!(
        audit.contains("You approved fs.edit on greeting.txt (once) from the notification"),
        "{audit}"
    );

    // A high-risk card: its notification only opens the card.
    let high = home.workspace("high", &[("README.md", "x\n")])?;
    home.queue_plan(HIGH_PLAN, &high)?;
    app.until("dunst shows the high card", || async {
        Ok(dunst
            .pick(NONE)?
            .iter()
            .any(|l| l.contains("(Unknown tool:")))
    })
    .await?;
    let offered = dunst.pick(NONE)?;
    let high_entries: Vec<&String> = offered
        .iter()
        .filter(|l| l.contains("(Unknown tool:"))
        .collect();
    assert!(
        !high_entries.is_empty() && high_entries.iter().all(|l| l.starts_with("#Review ")),
        "a high card offers only Review: {offered:?}"
    );

    // Locked: Approve decides nothing.
    saver.lock(true);
    let two = ws("two")?;
    home.queue_plan(&plan("Greeting two"), &two)?;
    app.until("dunst shows the second card", || async {
        Ok(dunst
            .pick(NONE)?
            .iter()
            .any(|l| l.contains("(Greeting two:")))
    })
    .await?;
    dunst.pick("#Approve (Greeting two:")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.until("Reins says the locked screen refused", || async {
        Ok(close_all_and_read_history()?.contains("the screen is locked"))
    })
    .await?;
    assert_eq!(
        greeting(&two),
        "go away\n",
        "nothing was decided while locked"
    );
    let waiting: Vec<serde_json::Value> =
        serde_json::from_str(&home.reins(&["approvals", "--json"], &[])?)?;
    assert_eq!(
        waiting.len(),
        2,
        "the high card and the second wait: {waiting:?}"
    );
    let events = home.reins(&["audit", "list", "--kind", "approval"], &[])?;
    assert_eq!(events.matches("You approved").count(), 1, "{events}");
    drop(dunst);
    app.quit().await
}

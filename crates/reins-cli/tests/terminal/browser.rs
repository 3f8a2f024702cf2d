//! The web face in a real browser at a phone's size: Debian's chromium, headless, 390×844, driven
//! through chromium-driver (WebDriver). Pair from the link `reins serve pair` prints, see a plan
//! run's card with its diff, approve it (the file on disk changes), reject the next with a reason
//! (the run's timeline has it), and find the device's name on both decisions in the audit log.
//! Screenshots of the phone layout go to docs/screenshots/phone-*.png.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use thirtyfour::prelude::*;

use crate::common::{self, repo_root, Cli};
use crate::serve::Server;

/// chromedriver on a free port, stopped when dropped.
struct Driver(Child, u16);

impl Driver {
    async fn start() -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start chromedriver (Debian: chromium-driver; scripts/test installs it)")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("chromedriver did not come up on port {port}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Self(child, port))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn phone(driver: &Driver) -> anyhow::Result<WebDriver> {
    let mut caps = DesiredCapabilities::chrome();
    caps.set_binary("/usr/bin/chromium")?;
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ] {
        caps.add_arg(arg)?;
    }
    // A phone: its width, height and pixel ratio, touch, and a mobile user agent.
    caps.add_experimental_option(
        "mobileEmulation",
        serde_json::json!({
            "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 2, "touch": true },
            "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36"
        }),
    )?;
    Ok(WebDriver::new(format!("http://127.0.0.1:{}", driver.1), caps).await?)
}

async fn find(d: &WebDriver, by: By) -> anyhow::Result<WebElement> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match d.find(by.clone()).await {
            Ok(e) if e.is_displayed().await.unwrap_or(false) => return Ok(e),
            Err(e) if Instant::now() > deadline => return Err(e).context(format!("{by:?}")),
            _ if Instant::now() > deadline => bail!("{by:?} is not shown"),
            _ => tokio::time::sleep(Duration::from_millis(25)).await,
        }
    }
}

async fn until<F: FnMut() -> bool>(what: &str, mut f: F) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        if Instant::now() > deadline {
            bail!("timed out waiting until {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn shot(d: &WebDriver, name: &str) -> anyhow::Result<()> {
    let dir = repo_root().join("docs/screenshots");
    std::fs::create_dir_all(&dir)?;
    d.screenshot(&dir.join(format!("phone-{name}.png"))).await?;
    Ok(())
}

/// Pairs the phone from the link, as scanning the QR code opens it (`shoot`: the pairing screen
/// goes to the screenshots).
async fn pair(cli: &Cli, d: &WebDriver, shoot: bool) -> anyhow::Result<()> {
    let pairing = cli.json(&["serve", "pair", "--name", "test phone"])?;
    let link = pairing["link"]
        .as_str()
        .context("a link to the running server")?;
    d.goto(link).await?;
    let code = find(d, By::Css("[data-testid=pair-code]")).await?;
    assert_eq!(code.value().await?.as_deref(), pairing["code"].as_str());
    if shoot {
        shot(d, "pair").await?;
    }
    find(d, By::Css("[data-testid=pair-submit]"))
        .await?
        .click()
        .await?;
    find(d, By::Css("[data-testid=inbox-empty]")).await?;
    assert!(
        !d.current_url().await?.as_str().contains("pair="),
        "the spent code leaves the address bar"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_pairs_approves_and_rejects_in_a_real_browser() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let _server = Server::start(&cli, &["--worker"])?;
    let driver = Driver::start().await?;
    let d = phone(&driver).await?;
    let out = async {
        pair(&cli, &d, true).await?;

        // A plan run stops for review; the card reaches the phone over the event stream.
        stop_for_review(&cli, &Cli::plan("fix-logrotate.toml"))?;
        let item = find(&d, By::Css("[data-testid=queue-item]")).await?;
        let card_shown = d
            .find(By::Css("[data-testid=approval-card]"))
            .await?
            .is_displayed()
            .await?;
        assert!(!card_shown, "at a phone's width the list comes first");
        shot(&d, "inbox").await?;
        item.click().await?;
        let card = find(&d, By::Css("[data-testid=approval-card]")).await?;
        let diff = find(&d, By::Css("[data-testid=diff]")).await?;
        assert!(
            diff.text().await?.contains("daily"),
            "{}",
            diff.text().await?
        );
        let width: i64 = d
            .execute("return document.documentElement.scrollWidth", vec![])
            .await?
            .convert()?;
        assert!(width <= 390, "nothing wider than the phone: {width}px");
        assert!(card.text().await?.contains("rotate daily"));
        shot(&d, "card").await?;

        // Approve: the worker in `reins serve --worker` writes the file.
        find(&d, By::Css("[data-testid=approve]"))
            .await?
            .click()
            .await?;
        let conf = cli.ws().join("config/logrotate.conf");
        until("the approved edit is on disk", || {
            std::fs::read_to_string(&conf).is_ok_and(|t| t.contains("daily"))
        })
        .await?;

        // The run's next step (a new note) stops too: reject it with a reason.
        find(&d, By::Css("[data-testid=queue-item]"))
            .await?
            .click()
            .await?;
        find(&d, By::Css("[data-testid=reject]"))
            .await?
            .click()
            .await?;
        let reason = find(&d, By::Css("textarea[name=reject-reason]")).await?;
        reason
            .send_keys("no incident notes in this repo, use the wiki")
            .await?;
        shot(&d, "reject").await?;
        find(&d, By::Css("[data-testid=confirm-reject]"))
            .await?
            .click()
            .await?;
        let run = cli.only_run()?;
        until("the reason is in the run's timeline", || {
            cli.strict_cmd()
                .args(["show", &run, "--json"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("use the wiki"))
        })
        .await?;
        assert!(!cli
            .ws()
            .join("docs/incidents/2026-11-28-disk-full.md")
            .exists());

        // Both decisions name the device.
        let export = cli.tmp.path().join("audit.jsonl");
        let o = cli.run(&[
            "audit",
            "export",
            "--force",
            "--out",
            &export.to_string_lossy(),
        ])?;
        assert!(o.status.success(), "{}", common::text(&o));
        let text = std::fs::read_to_string(&export)?;
        let decisions: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("\"approval.approved\"") || l.contains("\"approval.rejected\""))
            .collect();
        assert_eq!(decisions.len(), 2, "{decisions:?}");
        assert!(
            decisions
                .iter()
                .all(|l| l.contains("device:test phone@") && l.contains("(web)")),
            "{decisions:?}"
        );
        anyhow::Ok(())
    }
    .await;
    d.quit().await?;
    out
}

/// `reins run --no-wait --plan PLAN` on the sandbox's workspace, which stops for review.
fn stop_for_review(cli: &Cli, plan: &std::path::Path) -> anyhow::Result<()> {
    let ran = cli
        .strict_cmd()
        .args(["run", "--no-wait", "--plan"])
        .arg(plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(ran.status.code(), Some(3), "{}", common::text(&ran));
    Ok(())
}

/// Checks every card in the queue and presses "Approve checked".
async fn approve_checked(d: &WebDriver) -> anyhow::Result<()> {
    for b in d
        .find_all(By::Css("input[aria-label='select for batch approval']"))
        .await?
    {
        if !b.is_selected().await? {
            b.click().await?;
        }
    }
    find(d, By::Css("[data-testid=batch-approve]"))
        .await?
        .click()
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_where_a_card_moved_approves_none_and_the_phone_says_which() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let _server = Server::start(&cli, &[])?;
    let driver = Driver::start().await?;
    let d = phone(&driver).await?;
    let out = async {
        pair(&cli, &d, false).await?;
        for name in ["first", "second"] {
            stop_for_review(&cli, &cli.write_plan(name, &format!("docs/{name}.md"))?)?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while d.find_all(By::Css("[data-testid=queue-item]")).await?.len() < 2 {
            if Instant::now() > deadline {
                bail!("the two cards did not reach the phone");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Shown, then the second card's file appears on disk before the person approves.
        find(&d, By::Css("[data-testid=queue-item]")).await?;
        std::fs::write(cli.ws().join("docs/second.md"), "mine\n")?;
        approve_checked(&d).await?;
        let panel = find(&d, By::Css("[data-testid=batch-conflict]")).await?;
        let said = panel.text().await?;
        assert!(
            said.contains("None of the 2 checked cards was approved"),
            "{said}"
        );
        assert!(said.contains("docs/second.md"), "{said}");
        assert!(!said.contains("docs/first.md"), "{said}");
        shot(&d, "batch-conflict").await?;
        assert!(
            !cli.ws().join("docs/first.md").exists(),
            "none was approved"
        );
        // Looked at again: both go through together.
        approve_checked(&d).await?;
        until("both cards are approved", || {
            cli.json(&["approvals", "--all"]).is_ok_and(|all| {
                let all = all.as_array().cloned().unwrap_or_default();
                all.iter().filter(|a| a["status"] == "approved").count() == 2
                    && all.iter().all(|a| a["status"] != "pending")
            })
        })
        .await?;
        anyhow::Ok(())
    }
    .await;
    d.quit().await?;
    out
}

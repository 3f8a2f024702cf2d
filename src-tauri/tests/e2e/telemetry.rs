//! Settings → Traces in the real window: export turned on from the form reaches a collector (an
//! OTLP sink taking real requests) with the next run the app's worker drives, with no restart;
//! "Send now" makes a pass, and "Turn off" removes the saved choice.

use anyhow::Result;
use reins_tests::otlp_sink::Sink;
use thirtyfour::prelude::*;

use crate::harness::{App, Home};

const READ_PLAN: &str = r#"
name = "Read the notes"
goal = "Read the notes"

[[steps]]
tool = "fs.read"
args = { path = "notes.txt" }
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn m_settings_traces_turns_export_on_and_the_next_run_reaches_the_collector() -> Result<()> {
    let sink = Sink::start()?;
    let home = Home::new()?;
    let app = App::launch(&home).await?;
    app.view("settings").await?;
    let now = || async {
        Ok::<_, anyhow::Error>(
            app.find(By::Css("[data-testid='telemetry-now']"))
                .await?
                .text()
                .await?,
        )
    };
    app.until("the panel says export is off", || async {
        Ok(now().await?.contains("Off: no trace leaves this machine"))
    })
    .await?;

    let endpoint = format!("http://127.0.0.1:{}", sink.port);
    app.fill("input[name='otel-endpoint']", &endpoint).await?;
    app.d()
        .find(By::XPath(
            "//section[@data-testid='telemetry']//button[text()='Add header']",
        ))
        .await?
        .click()
        .await?;
    app.fill("input[name='otel-header-0']", "x-team").await?;
    app.fill("input[name='otel-value-0']", "platform").await?;
    // Trace-only collectors refuse metrics: off, as the docs advise for them.
    app.click("input[name='otel-metrics']").await?;
    app.click("[data-testid='telemetry'] button.primary")
        .await?;
    let destination = format!("{endpoint}/v1/traces");
    app.until("the panel says where spans go", || async {
        let text = now().await?;
        Ok(text.contains(&format!("Sending to {destination}")) && text.contains("metrics off"))
    })
    .await?;
    let saved = std::fs::read_to_string(home.config().join("telemetry.toml"))?;
    assert!(
        saved.contains(&endpoint) && saved.contains("x-team = \"platform\""),
        "{saved}"
    );
    assert!(saved.contains("metrics = false"), "{saved}");

    // A run the app's worker drives after the change arrives at the collector.
    let ws = home.workspace("ws", &[("notes.txt", "rotate daily\n")])?;
    home.queue_plan(READ_PLAN, &ws)?;
    app.until("the run's trace reached the collector", || async {
        let names: Vec<String> = sink.spans()?.into_iter().map(|(n, _)| n).collect();
        Ok(names.iter().any(|n| n == "invoke_agent reins script")
            && names.iter().any(|n| n == "execute_tool fs.read"))
    })
    .await?;
    app.until("the panel counts what was sent", || async {
        Ok(now().await?.contains("spans sent · caught up"))
    })
    .await?;
    app.d()
        .execute(
            "document.querySelector(\"[data-testid='telemetry']\").scrollIntoView()",
            Vec::new(),
        )
        .await?;
    app.screenshot("settings-traces").await?;

    app.d()
        .find(By::XPath(
            "//section[@data-testid='telemetry']//button[text()='Send now']",
        ))
        .await?
        .click()
        .await?;
    app.until(
        "a pass on demand says the collector has everything",
        || async {
            let sent = app
                .find(By::Css("[data-testid='otel-sent']"))
                .await?
                .text()
                .await?;
            Ok(sent.contains("caught up"))
        },
    )
    .await?;

    app.d()
        .find(By::XPath(
            "//section[@data-testid='telemetry']//button[text()='Turn off']",
        ))
        .await?
        .click()
        .await?;
    app.until("the panel says export is off again", || async {
        Ok(now().await?.contains("Off: no trace leaves this machine"))
    })
    .await?;
    assert!(!home.config().join("telemetry.toml").exists());
    app.quit().await
}

//! A run's budget from the command line and from a paired phone: a plan run with a steps budget
//! pauses at it; the phone allows more over HTTP (audited with the device), the run finishes; a
//! budget on a run that is not waiting at it is refused as such.

use serde_json::json;

use crate::common::{self, Cli};
use crate::serve::{Http, Server};

const THREE_READS: &str = r#"
name = "three reads"
goal = "read the config three times"
[[steps]]
tool = "fs.read"
args = { path = "config/logrotate.conf" }
[[steps]]
tool = "fs.read"
args = { path = "config/logrotate.conf" }
[[steps]]
tool = "fs.read"
args = { path = "config/logrotate.conf" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_allows_a_run_more_and_it_finishes() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = cli.tmp.path().join("reads.toml");
    std::fs::write(&plan, THREE_READS)?;
    let out = cli
        .strict_cmd()
        .args(["run", "--budget-steps", "2", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", common::text(&out));
    assert!(common::text(&out).contains("budget reached: it spent 2 steps of a budget of 2 steps"));
    let id = cli.only_run()?;

    let server = Server::start(&cli, &[])?;
    let http = Http::new(&server);
    let token = http.pair(&cli, "my phone").await?;
    let detail = http.get(&format!("/api/runs/{id}"), &token).await?.body;
    assert_eq!(detail["budget"]["waiting"], true, "{detail}");
    let bad = http
        .post(
            &format!("/api/runs/{id}/budget/allow"),
            Some(&token),
            json!({ "measure": "money", "more": 2 }),
        )
        .await?;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let a = http
        .post(
            &format!("/api/runs/{id}/budget/allow"),
            Some(&token),
            json!({ "measure": "steps", "more": 2 }),
        )
        .await?;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["limits"]["steps"], 4, "{}", a.body);
    let out = common::output_within(
        cli.strict_cmd().args(["worker", "--once"]),
        std::time::Duration::from_secs(60),
    )?;
    assert!(out.status.success(), "{}", common::text(&out));
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    let raised = cli.events("budget.raised")?;
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert!(
        raised[0]["by"]
            .as_str()
            .unwrap_or_default()
            .starts_with("device:my phone@"),
        "{raised:?}"
    );
    // Nothing waits at its budget now: "stop here" is refused.
    let stop = http
        .post(
            &format!("/api/runs/{id}/budget/stop"),
            Some(&token),
            json!({}),
        )
        .await?;
    assert_eq!(stop.status, 409, "{}", stop.body);
    Ok(())
}

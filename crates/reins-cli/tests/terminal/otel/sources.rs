//! Where the export's configuration comes from, as a person sets it: `[telemetry]` in their own
//! policy file turns it on, a workspace's policy file cannot send their runs anywhere, the
//! Settings' `telemetry.toml` wins over the policy file, and an event the export cannot read stops
//! it where `reins otel status` says so.

use std::process::Command;

use crate::common::{text, Cli};

use super::receivers::Sink;

/// `cmd` with no OpenTelemetry variable from the environment the tests run in.
fn no_otel_env(mut c: Command) -> Command {
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c
}

#[test]
fn the_policy_file_turns_export_on_a_workspace_cannot_and_the_settings_file_wins(
) -> anyhow::Result<()> {
    let mine = Sink::start()?;
    let theirs = Sink::start()?;
    let cli = Cli::new()?;
    let config = cli.tmp.path().join("config");
    std::fs::create_dir_all(&config)?;
    let policy = config.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[telemetry]\nendpoint = \"http://127.0.0.1:{}\"\nmetrics = false\n\n[[rules]]\ndecision = \"allow\"\ntool = \"fs.*\"\n",
            mine.port
        ),
    )?;
    // A cloned repository's policy names a collector of its own.
    std::fs::create_dir_all(cli.ws().join(".reins"))?;
    std::fs::write(
        cli.ws().join(".reins/policy.toml"),
        format!(
            "[telemetry]\nendpoint = \"http://127.0.0.1:{}\"\ncontent = true\n",
            theirs.port
        ),
    )?;
    let status = |cli: &Cli| -> anyhow::Result<serde_json::Value> {
        let out = no_otel_env(cli.strict_cmd())
            .args(["otel", "status", "--json"])
            .output()?;
        anyhow::ensure!(out.status.success(), "{}", text(&out));
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let s = status(&cli)?;
    assert_eq!(
        s["destination"],
        format!("http://127.0.0.1:{}/v1/traces", mine.port),
        "{s}"
    );
    assert_eq!(
        s["source"],
        format!("[telemetry] in {}", policy.display()),
        "{s}"
    );
    assert_eq!(s["content"], false);

    // `reins run` follows the log while it runs, and sends the rest on its way out.
    let plan = cli.write_plan("note", "NOTE.md")?;
    let out = no_otel_env(cli.strict_cmd())
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("NOTE.md")?, "note\n");
    let names: Vec<String> = mine.spans()?.into_iter().map(|(name, _)| name).collect();
    assert!(
        names.iter().any(|n| n == "invoke_agent reins script"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "execute_tool fs.write"),
        "{names:?}"
    );
    assert!(
        theirs.spans()?.is_empty(),
        "the workspace's collector got spans"
    );
    let out = no_otel_env(cli.strict_cmd())
        .args(["otel", "flush", "--json"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let pass: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(pass["spans"], 0, "nothing was left to send: {pass}");
    assert_eq!(pass["caughtUp"], true, "{pass}");

    // A run whose record does not read (here its end, edited in the database) stops the export
    // there, and the status says where.
    if cli.database.is_none() {
        let out = no_otel_env(cli.strict_cmd())
            .env("OTEL_SDK_DISABLED", "true")
            .args(["run", "--no-wait", "--plan"])
            .arg(&plan)
            .arg("--workspace")
            .arg(cli.ws())
            .output()?;
        assert!(out.status.success(), "{}", text(&out));
        let db = cli.data().join("reins.db");
        let rt = tokio::runtime::Runtime::new()?;
        let edited = rt.block_on(async {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await?;
            let done = sqlx::query(
                "UPDATE audit_events SET payload = '{\"broken\":true}' WHERE seq = (SELECT MAX(seq) FROM audit_events WHERE kind = 'run.finished')",
            )
            .execute(&pool)
            .await?;
            pool.close().await;
            anyhow::Ok(done.rows_affected())
        })?;
        assert_eq!(edited, 1);
        let out = no_otel_env(cli.strict_cmd())
            .args(["otel", "flush"])
            .output()?;
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("the database is damaged"),
            "{}",
            text(&out)
        );
        let s = status(&cli)?;
        let error = s["cursors"][0]["lastError"].as_str().unwrap_or_default();
        assert!(
            error.contains("(run.finished)") && error.contains("does not read back"),
            "{s}"
        );
        assert!(
            s["cursors"][0]["behind"].as_i64().unwrap_or_default() > 0,
            "{s}"
        );
    }

    // The Settings' file (here written by `reins otel set`) wins over the policy file.
    let set = |args: &[&str]| -> anyhow::Result<std::process::Output> {
        Ok(no_otel_env(cli.strict_cmd())
            .args(["otel", "set"])
            .args(args)
            .output()?)
    };
    let out = set(&[
        "http://127.0.0.1:1",
        "--no-metrics",
        "--header",
        "x-team=platform",
    ])?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("export: on, to http://127.0.0.1:1/v1/traces"),
        "{}",
        text(&out)
    );
    let settings = config.join("telemetry.toml");
    let s = status(&cli)?;
    assert_eq!(s["destination"], "http://127.0.0.1:1/v1/traces", "{s}");
    assert_eq!(s["source"], settings.display().to_string(), "{s}");
    let saved = std::fs::read_to_string(&settings)?;
    assert!(
        saved.contains("x-team = \"platform\"") && saved.contains("metrics = false"),
        "{saved}"
    );
    // A credential given as a value is refused, and what was saved stays.
    let out = set(&["http://127.0.0.1:2", "--header", "authorization=Bearer abc"])?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("a credential is not kept in a file"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&settings)?, saved);
    // Named as a keyring entry, it is saved by name only.
    let out = set(&[
        "http://127.0.0.1:2",
        "--header",
        "authorization=Bearer {collector}",
    ])?;
    assert!(out.status.success(), "{}", text(&out));
    let saved = std::fs::read_to_string(&settings)?;
    assert!(
        saved.contains("key = \"collector\"") && saved.contains("prefix = \"Bearer \""),
        "{saved}"
    );
    // Written by hand, a credential in it is refused, never taken for "off".
    std::fs::write(
        &settings,
        "endpoint = \"http://127.0.0.1:1\"\n[headers]\nauthorization = \"Bearer abc\"\n",
    )?;
    let out = no_otel_env(cli.strict_cmd())
        .args(["otel", "status"])
        .output()?;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("a credential is not kept in a file"),
        "{}",
        text(&out)
    );
    // Off: the policy file's export is in force again.
    let out = no_otel_env(cli.strict_cmd())
        .args(["otel", "off"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!settings.exists());
    let s = status(&cli)?;
    assert_eq!(
        s["source"],
        format!("[telemetry] in {}", policy.display()),
        "{s}"
    );
    Ok(())
}

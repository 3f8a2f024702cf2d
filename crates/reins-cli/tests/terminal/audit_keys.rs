//! N13 as a person meets it, with the real OS keyring: a run's events carry this machine's MAC;
//! an event appended by hand (chained correctly, dated now) makes `reins audit verify` fail, and
//! so does one wearing another event's MAC; what a `reins` without a keyring appended is named and
//! can be accepted with `reins audit accept-unvouched`.

use crate::common;

use common::{text, Cli};

fn plan(cli: &Cli, name: &str) -> anyhow::Result<String> {
    let plan = cli.tmp.path().join(format!("{name}.toml"));
    std::fs::write(
        &plan,
        format!(
            "name = \"{name}\"\ngoal = \"one file\"\n[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"{name}.txt\", content = \"x\\n\" }}\n"
        ),
    )?;
    Ok(plan.to_string_lossy().into_owned())
}

/// `reins run` of a one-file plan to its end (`keyring`: with the session's keyring, or without).
fn run(cli: &Cli, name: &str, keyring: bool) -> anyhow::Result<()> {
    let plan = plan(cli, name)?;
    let mut cmd = cli.cmd();
    if !keyring {
        cmd.env_remove("DBUS_SESSION_BUS_ADDRESS");
    }
    let out = cmd
        .args(["run", "--plan", &plan, "--workspace"])
        .arg(cli.ws())
        .output()?;
    anyhow::ensure!(out.status.success(), "the run ends: {}", text(&out));
    Ok(())
}

fn verify(cli: &Cli) -> anyhow::Result<(Option<i32>, String)> {
    let out = cli.cmd().args(["audit", "verify"]).output()?;
    Ok((out.status.code(), text(&out)))
}

async fn sql(cli: &Cli, statement: &str) -> anyhow::Result<()> {
    let db = cli.data().join("reins.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await?;
    sqlx::query(statement).execute(&pool).await?;
    pool.close().await;
    Ok(())
}

/// Appends a copy of the first `run.created` as a person's, chained after the head, dated now.
async fn forge(cli: &Cli) -> anyhow::Result<i64> {
    let db = cli.data().join("reins.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await?;
    let (seq, prev): (i64, String) =
        sqlx::query_as("SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1")
            .fetch_one(&pool)
            .await?;
    let payload: String =
        sqlx::query_scalar("SELECT payload FROM audit_events WHERE kind = 'run.created' LIMIT 1")
            .fetch_one(&pool)
            .await?;
    let at = reins_core::api::now_ms();
    let canon = format!(
        "{{\"seq\":{},\"at\":{at},\"actor\":\"user\",\"kind\":\"run.created\",\"run\":null,\"payload\":{}}}",
        seq + 1,
        serde_json::to_string(&payload)?
    );
    let hash = reins_core::api::Digest::of(format!("{prev}{canon}").as_bytes()).to_string();
    sqlx::query(
        "INSERT INTO audit_events (seq, at, actor, kind, run_id, payload, prev_hash, hash) VALUES ($1, $2, 'user', 'run.created', NULL, $3, $4, $5)",
    )
    .bind(seq + 1)
    .bind(at)
    .bind(&payload)
    .bind(&prev)
    .bind(&hash)
    .execute(&pool)
    .await?;
    pool.close().await;
    Ok(seq + 1)
}

#[tokio::test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
async fn a_hand_appended_event_fails_verification_under_the_real_keyring() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    run(&cli, "first", true)?;
    let (code, said) = verify(&cli)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("vouched for by this machine's audit key"),
        "{said}"
    );

    let forged = forge(&cli).await?;
    let (code, said) = verify(&cli)?;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!("DAMAGED: unvouched at seq {forged}")),
        "{said}"
    );
    sql(
        &cli,
        &format!("UPDATE audit_events SET mac = (SELECT mac FROM audit_events WHERE seq = 1) WHERE seq = {forged}"),
    )
    .await?;
    let (code, said) = verify(&cli)?;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!("DAMAGED: forged at seq {forged}")),
        "{said}"
    );
    let out = cli.cmd().args(["audit", "accept-unvouched"]).output()?;
    assert_ne!(out.status.code(), Some(0), "a forged MAC is never accepted");
    assert!(text(&out).contains("forged"), "{}", text(&out));

    // Taken out again, the log is as Reins wrote it.
    sql(
        &cli,
        &format!("DELETE FROM audit_events WHERE seq = {forged}"),
    )
    .await?;
    assert_eq!(verify(&cli)?.0, Some(0));

    // A `reins` that cannot reach the keyring appends without a MAC: named, then accepted.
    run(&cli, "keyless", false)?;
    let (code, said) = verify(&cli)?;
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("DAMAGED: unvouched"), "{said}");
    assert!(said.contains("reins audit accept-unvouched"), "{said}");
    let out = cli.cmd().args(["audit", "accept-unvouched"]).output()?;
    assert!(
        out.status.success() && text(&out).contains("accepted:"),
        "{}",
        text(&out)
    );
    let (code, said) = verify(&cli)?;
    assert_eq!(code, Some(0), "{said}");
    Ok(())
}

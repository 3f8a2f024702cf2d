//! Two workers on one database (as two processes would be: separate connection pools on the same
//! file) race for the same queued runs. Claims are guarded, so each run is driven by exactly one of
//! them, and every effect runs once.

use std::time::Duration;

use reins_core::api::RunState;
use reins_core::api::{Reins, Silent};
use reins_tests::{copy_dir, repo_root, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_queue_without_doing_anything_twice() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let a = Reins::open(sb.data(), sb.options()).await?;
    let b = Reins::open(sb.data(), sb.options()).await?;

    let mut runs = Vec::new();
    for i in 0..6 {
        let ws = sb.tmp.path().join(format!("ws{i}"));
        copy_dir(&repo_root().join("examples/ops-workspace"), &ws)?;
        let plan = repo_root().join("examples/plans/tidy-configs.toml");
        runs.push((a.create_run(&plan, &ws, &Silent).await?, ws));
    }

    let poll = Duration::from_millis(20);
    let (sa, sb_) = tokio::join!(a.work(true, poll, &Silent), b.work(true, poll, &Silent));
    let (sa, sb_) = (sa?, sb_?);
    assert_eq!(
        sa.driven + sb_.driven,
        6,
        "each run driven once in total: {sa:?} {sb_:?}"
    );

    for (id, ws) in &runs {
        let detail = a.run_detail(*id).await?;
        assert_eq!(detail.run.state, RunState::Succeeded, "run {id}");
        assert_eq!(detail.attempts.len(), 1, "run {id} was claimed once");
        assert_eq!(detail.intents.len(), 3);
        assert!(detail
            .intents
            .iter()
            .all(|i| i.status == reins_core::api::IntentStatus::Confirmed));
        assert!(
            ws.join("archive/nginx.conf.bak").exists() && !ws.join("tmp/render-cache.tmp").exists()
        );
        let runbook = std::fs::read_to_string(ws.join("docs/RUNBOOK.md"))?;
        assert_eq!(
            runbook.matches("archive/").count(),
            1,
            "the edit applied once"
        );
    }
    let doctor = a.doctor().await?;
    assert!(doctor.healthy, "{doctor:?}");
    assert_eq!(
        doctor.audit_chain, "ok",
        "both workers appended to one unbroken chain"
    );
    Ok(())
}

/// Every write a machine's workers and inboxes act on (a run queued, claimed or ended) wakes the
/// other machines at once (LISTEN/NOTIFY); a step's own commits do not: a run of eight writes
/// wakes them exactly as often as a run of one. (On SQLite nothing is notified: other processes
/// poll.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_steps_wake_no_other_machine_its_changes_of_state_do() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let Some(url) = sb.database.clone() else {
        return Ok(());
    };
    let reins = Reins::open(sb.data(), sb.options()).await?;
    let mut listener = sqlx::postgres::PgListener::connect(&url).await?;
    listener.listen("reins_changed").await?;

    let mut heard = Vec::new();
    for writes in [1, 8] {
        let steps: String = (0..writes)
            .map(|i| {
                format!(
                    "[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"notes/{writes}-{i}.md\", content = \"note {i}\" }}\n"
                )
            })
            .collect();
        let plan = reins_tests::plan(&format!(
            "name = \"notes {writes}\"\ngoal = \"write notes\"\n{steps}"
        ))?;
        let run = reins.create_run(&plan, &sb.ws(), &Silent).await?;
        reins.drive(run, &Silent).await?;
        assert_eq!(reins.run_state(run).await?, RunState::Succeeded);
        assert!(sb
            .ws()
            .join(format!("notes/{writes}-{}.md", writes - 1))
            .exists());
        let mut n = 0;
        while let Ok(got) = tokio::time::timeout(Duration::from_millis(500), listener.recv()).await
        {
            got?;
            n += 1;
        }
        heard.push(n);
    }
    assert!(
        heard[0] > 0,
        "queuing and running a run wakes the others: {heard:?}"
    );
    assert_eq!(
        heard[0], heard[1],
        "the number of wake-ups does not grow with the steps: {heard:?}"
    );
    Ok(())
}

/// How many transactions the database rolled back (a step's single statement that was refused
/// is one), as its statistics show them.
async fn rollbacks(conn: &mut sqlx::PgConnection) -> anyhow::Result<i64> {
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_scalar(
        "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// On a shared PostgreSQL a step's commit is one statement with no transaction around it. It
/// never writes while another machine holds the write lock: it is refused, and the step is
/// written again in a transaction that waits its turn. A run whose steps keep meeting the lock
/// held finishes in one attempt, every write done once, the chain whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_meeting_the_write_lock_held_waits_its_turn_and_is_written_once(
) -> anyhow::Result<()> {
    use sqlx::Connection as _;
    let sb = Sandbox::new()?;
    let Some(url) = sb.database.clone() else {
        return Ok(());
    };
    let reins = std::sync::Arc::new(Reins::open(sb.data(), sb.options()).await?);
    let writes = 12;
    let steps: String = (0..writes)
        .map(|i| {
            format!("[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"held/{i}.md\", content = \"note {i}\" }}\n")
        })
        .collect();
    let plan = reins_tests::plan(&format!("name = \"held\"\ngoal = \"write notes\"\n{steps}"))?;
    let run = reins.create_run(&plan, &sb.ws(), &Silent).await?;
    let mut other = sqlx::PgConnection::connect(&url).await?;
    let before = rollbacks(&mut other).await?;

    let driving = {
        let reins = std::sync::Arc::clone(&reins);
        tokio::spawn(async move { reins.drive(run, &Silent).await })
    };
    // Another machine takes the write lock again and again while the run goes on (the key is
    // the store's: `store::dialect`).
    while !driving.is_finished() {
        sqlx::query("SELECT pg_advisory_lock(7361290184)")
            .execute(&mut other)
            .await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
        sqlx::query("SELECT pg_advisory_unlock(7361290184)")
            .execute(&mut other)
            .await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    driving.await??;

    assert_eq!(reins.run_state(run).await?, RunState::Succeeded);
    let detail = reins.run_detail(run).await?;
    assert_eq!(
        detail.attempts.len(),
        1,
        "no step failed and was tried again"
    );
    assert_eq!(detail.steps.len(), writes);
    for i in 0..writes {
        let text = std::fs::read_to_string(sb.ws().join(format!("held/{i}.md")))?;
        assert_eq!(text, format!("note {i}"));
    }
    assert!(reins.audit_verify().await?.intact);
    // A backend reports its statistics when it ends (or, idle, within about ten seconds).
    drop(reins);
    let mut refused = 0;
    for _ in 0..150 {
        refused = rollbacks(&mut other).await? - before;
        if refused > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        refused > 0,
        "no step met the lock held, so this tried nothing"
    );
    Ok(())
}

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
        runs.push((a.create_script_run(&plan, &ws, &Silent).await?, ws));
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
        let run = reins.create_plan_run(&plan, &sb.ws(), &Silent).await?;
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

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

//! A person controls runs while workers drive them: pause stops at a safe point after a verified
//! checkpoint, resume goes on without repeating anything, cancel is final, a draining worker pauses
//! what it drives, and a run started by an incompatible build waits for a person.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use reins_core::api::RunId;
use reins_core::api::RunState;
use reins_core::api::{DriveOutcome, ResumeMode};
use reins_core::api::{Reins, Silent};
use reins_tests::{os, Sandbox};

/// A plan of `n` writes, each to its own file.
fn many_writes(sb: &Sandbox, n: usize) -> anyhow::Result<std::path::PathBuf> {
    let mut text = String::from("name = \"many\"\ngoal = \"write many notes\"\n");
    for i in 0..n {
        text.push_str(&format!(
            "[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"notes/{i}.txt\", content = \"note {i}\\n\" }}\n"
        ));
    }
    let path = sb.tmp.path().join("many.toml");
    std::fs::write(&path, text)?;
    Ok(path)
}

async fn open(sb: &Sandbox) -> anyhow::Result<Arc<Reins>> {
    Ok(Arc::new(Reins::open(sb.data(), sb.options()).await?))
}

/// Waits until the run has at least `n` steps.
async fn until_steps(r: &Reins, id: RunId, n: usize) -> anyhow::Result<()> {
    for _ in 0..2000 {
        if r.run_detail(id).await?.steps.len() >= n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    anyhow::bail!("the run never reached {n} steps")
}

fn kinds(detail: &reins_core::api::RunDetail) -> Vec<String> {
    detail.audit.iter().map(|e| e.kind.clone()).collect()
}

fn notes_written(sb: &Sandbox) -> anyhow::Result<usize> {
    Ok(std::fs::read_dir(sb.ws().join("notes"))?.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_at_a_verified_checkpoint_and_resume_repeats_nothing() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let worker = open(&sb).await?;
    let person = open(&sb).await?;
    let plan = many_writes(&sb, 300)?;
    let id = person.create_run(&plan, &sb.ws(), &Silent).await?;

    let driving = tokio::spawn({
        let worker = Arc::clone(&worker);
        async move { worker.drive(id, &Silent).await }
    });
    until_steps(&person, id, 5).await?;
    let asked = person.pause(id).await?;
    assert_eq!(asked.to, RunState::PauseRequested);
    let outcome = driving.await??;
    assert!(
        matches!(
            outcome,
            DriveOutcome::NeedsHuman {
                state: RunState::Paused,
                ..
            }
        ),
        "{outcome:?}"
    );

    let detail = person.run_detail(id).await?;
    assert_eq!(detail.run.state, RunState::Paused);
    let done = detail.steps.len();
    assert!(done < 300, "paused part-way, not at the end ({done} steps)");
    assert_eq!(
        notes_written(&sb)?,
        done,
        "one file per completed step, none in flight"
    );
    let last = detail
        .checkpoints
        .last()
        .ok_or_else(|| anyhow::anyhow!("no checkpoint"))?;
    assert_eq!((last.level.as_str(), last.status.as_str()), ("task", "ok"));
    assert_eq!(
        detail.recovery.point,
        Some(last.seq),
        "the pause checkpoint is the recovery point"
    );
    let k = kinds(&detail);
    let requested = k.iter().position(|k| k == "run.pause_requested");
    let paused = k.iter().position(|k| k == "run.paused");
    assert!(requested.is_some() && paused > requested, "{k:?}");
    let outcome = detail
        .attempts
        .last()
        .and_then(|a| a.outcome.clone())
        .unwrap_or_default();
    assert!(outcome.starts_with("paused"), "{outcome}");

    // A paused run is not runnable: a worker passing by leaves it alone.
    let idle = worker
        .work(true, Duration::from_millis(10), &Silent)
        .await?;
    assert_eq!(idle.driven, 0);

    let resumed = person.resume(id, ResumeMode::Continue).await?;
    assert_eq!(resumed.to, RunState::Queued);
    worker
        .work(true, Duration::from_millis(10), &Silent)
        .await?;
    let detail = person.run_detail(id).await?;
    assert_eq!(detail.run.state, RunState::Succeeded);
    assert_eq!(detail.steps.len(), 300);
    assert_eq!(notes_written(&sb)?, 300);
    assert!(detail
        .intents
        .iter()
        .all(|i| i.status == reins_core::api::IntentStatus::Confirmed));
    assert_eq!(
        detail.intents.len(),
        300,
        "every write has exactly one intent: none ran twice"
    );
    // A pause mid-run is an interruption: the run shows what its resume was told.
    let summary = detail
        .recovery_summary
        .ok_or_else(|| anyhow::anyhow!("no recovery after a pause mid-run"))?;
    assert_eq!(summary.attempt, 2, "{summary:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_worker_pauses_what_it_drives_and_takes_nothing_new() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let worker = open(&sb).await?;
    let person = open(&sb).await?;
    let plan = many_writes(&sb, 300)?;
    let id = person.create_run(&plan, &sb.ws(), &Silent).await?;
    let other = person.create_run(&plan, &sb.ws(), &Silent).await?;

    let working = tokio::spawn({
        let worker = Arc::clone(&worker);
        async move { worker.work(false, Duration::from_millis(10), &Silent).await }
    });
    until_steps(&person, id, 5).await?;
    worker.drain_flag().store(true, Ordering::Relaxed);
    let summary = tokio::time::timeout(Duration::from_secs(30), working).await???;
    assert_eq!((summary.paused, summary.finished), (1, 0), "{summary:?}");

    let detail = person.run_detail(id).await?;
    assert_eq!(detail.run.state, RunState::Paused);
    assert!(detail
        .run
        .last_error
        .as_deref()
        .unwrap_or("")
        .contains("drain"));
    let pause_event = detail
        .audit
        .iter()
        .find(|e| e.kind == "run.pause_requested")
        .ok_or_else(|| anyhow::anyhow!("no pause request recorded"))?;
    assert_eq!(pause_event.actor, "system");
    assert_eq!(
        person.run_state(other).await?,
        RunState::Queued,
        "nothing new was claimed"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_is_final_and_the_worker_stops_writing() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let worker = open(&sb).await?;
    let person = open(&sb).await?;
    let plan = many_writes(&sb, 300)?;
    let id = person.create_run(&plan, &sb.ws(), &Silent).await?;
    let driving = tokio::spawn({
        let worker = Arc::clone(&worker);
        async move { worker.drive(id, &Silent).await }
    });
    until_steps(&person, id, 5).await?;
    person.cancel(id, Some("wrong plan")).await?;
    let outcome = driving.await??;
    assert!(matches!(outcome, DriveOutcome::Lost { .. }), "{outcome:?}");

    let after = person.run_detail(id).await?;
    assert_eq!(after.run.state, RunState::Cancelled);
    assert_eq!(after.run.last_error.as_deref(), Some("wrong plan"));
    let steps = after.steps.len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        person.run_detail(id).await?.steps.len(),
        steps,
        "nothing written after the cancel"
    );
    for refused in [
        person.resume(id, ResumeMode::Continue).await.err(),
        person.pause(id).await.err(),
        person.cancel(id, None).await.err(),
    ] {
        let e = refused.ok_or_else(|| anyhow::anyhow!("a cancelled run accepted a control"))?;
        assert_eq!(e.code().as_str(), "conflict", "{e}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_held_by_a_dead_worker_pauses_at_once_and_fences_it_out() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let r = open(&sb).await?;
    let plan = many_writes(&sb, 3)?;
    let id = r.create_run(&plan, &sb.ws(), &Silent).await?;
    // As a crashed worker leaves it: running, a live lease, a holder that no longer exists.
    sqlx::query(
        "UPDATE runs SET state = 'running', owner = $1, lease_until = $2, fence = 1 WHERE id = $3",
    )
    .bind(format!("{}:999999999:1:dead", reins_tests::os::host_name()))
    .bind(reins_core::api::now_ms() + 600_000)
    .bind(id.to_string())
    .execute(&reins_tests::raw_db(&r).await?)
    .await?;
    let paused = r.pause(id).await?;
    assert_eq!(
        (paused.from, paused.to),
        (RunState::Running, RunState::Paused)
    );
    let view = r.run_detail(id).await?.run;
    assert_eq!(
        (view.fence, view.owner),
        (2, None),
        "the fence moved past the dead holder"
    );
    r.resume(id, ResumeMode::Continue).await?;
    r.work(true, Duration::from_millis(10), &Silent).await?;
    assert_eq!(r.run_state(id).await?, RunState::Succeeded);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incompatible_run_waits_for_a_person_who_forces_it_or_starts_over() -> anyhow::Result<()>
{
    let sb = Sandbox::new()?;
    let r = open(&sb).await?;
    let plan = many_writes(&sb, 3)?;
    let forced = r.create_run(&plan, &sb.ws(), &Silent).await?;
    let restarted = r.create_run(&plan, &sb.ws(), &Silent).await?;
    // As if created by a build whose tool schemas differ.
    for id in [forced, restarted] {
        let set = if reins_tests::on_postgres() {
            "jsonb_set(compat::jsonb, '{toolSchemaHash}', '\"older\"')::text"
        } else {
            "json_set(compat, '$.toolSchemaHash', 'older')"
        };
        sqlx::query(&format!("UPDATE runs SET compat = {set} WHERE id = $1"))
            .bind(id.to_string())
            .execute(&reins_tests::raw_db(&r).await?)
            .await?;
    }
    r.work(true, Duration::from_millis(10), &Silent).await?;
    for id in [forced, restarted] {
        let view = r.run_detail(id).await?;
        assert_eq!(view.run.state, RunState::Suspended);
        let reason = view.run.last_error.unwrap_or_default();
        assert!(reason.contains("the tool schemas changed"), "{reason}");
        assert!(view.steps.is_empty(), "nothing ran under the wrong build");
    }

    // Plain resume: still incompatible, suspended again.
    r.resume(forced, ResumeMode::Continue).await?;
    r.work(true, Duration::from_millis(10), &Silent).await?;
    assert_eq!(r.run_state(forced).await?, RunState::Suspended);

    r.resume(forced, ResumeMode::Force).await?;
    r.work(true, Duration::from_millis(10), &Silent).await?;
    let detail = r.run_detail(forced).await?;
    assert_eq!(detail.run.state, RunState::Succeeded);
    let overridden = detail
        .audit
        .iter()
        .find(|e| e.kind == "run.compat_overridden")
        .ok_or_else(|| anyhow::anyhow!("the override is not audited"))?;
    assert_eq!(overridden.actor, "user");
    assert!(
        overridden.payload.to_string().contains("toolSchemaHash"),
        "{}",
        overridden.payload
    );

    let over = r.resume(restarted, ResumeMode::StartOver).await?;
    let new_run = over.new_run.ok_or_else(|| anyhow::anyhow!("no new run"))?;
    assert_eq!(r.run_state(restarted).await?, RunState::Cancelled);
    r.work(true, Duration::from_millis(10), &Silent).await?;
    assert_eq!(r.run_state(new_run).await?, RunState::Succeeded);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_is_told_what_changed_outside_it_while_it_was_paused() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let worker = open(&sb).await?;
    let person = open(&sb).await?;
    let plan = many_writes(&sb, 300)?;
    let id = person.create_run(&plan, &sb.ws(), &Silent).await?;
    let driving = tokio::spawn({
        let worker = Arc::clone(&worker);
        async move { worker.drive(id, &Silent).await }
    });
    until_steps(&person, id, 5).await?;
    person.pause(id).await?;
    driving.await??;

    // While it is paused, a person edits, adds and removes files, changes one the run wrote, and
    // rewrites another the run wrote with the very same content.
    std::fs::write(sb.ws().join("docs/RUNBOOK.md"), "rewritten by hand\n")?;
    std::fs::write(sb.ws().join("new.txt"), "added by hand\n")?;
    std::fs::remove_file(sb.ws().join("tmp/render-cache.tmp"))?;
    std::fs::write(sb.ws().join("notes/0.txt"), "changed by hand\n")?;
    std::fs::write(sb.ws().join("notes/1.txt"), "note 1\n")?;

    person.resume(id, ResumeMode::Continue).await?;
    worker
        .work(true, Duration::from_millis(10), &Silent)
        .await?;
    let detail = person.run_detail(id).await?;
    assert_eq!(detail.run.state, RunState::Succeeded);
    let summary = detail
        .recovery_summary
        .ok_or_else(|| anyhow::anyhow!("no recovery summary"))?;
    let changed: Vec<(String, String)> = summary
        .changed_outside
        .iter()
        .map(|c| (c.path.clone(), format!("{:?}", c.kind)))
        .collect();
    assert_eq!(
        changed,
        [
            ("docs/RUNBOOK.md".to_owned(), "Modified".to_owned()),
            ("new.txt".to_owned(), "Added".to_owned()),
            ("notes/0.txt".to_owned(), "Modified".to_owned()),
            ("tmp/render-cache.tmp".to_owned(), "Removed".to_owned()),
        ],
        "{}",
        summary.text
    );
    assert!(
        summary.text.contains("docs/RUNBOOK.md (modified)"),
        "{}",
        summary.text
    );
    assert!(
        summary.text.contains("paused on request"),
        "{}",
        summary.text
    );
    assert!(summary.steps_done >= 5 && summary.resumed_from.is_some());
    assert!(
        detail
            .audit
            .iter()
            .any(|e| e.kind == "run.recovered" && e.payload.to_string().contains("new.txt")),
        "the summary is in the audit log"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaned_child_process_is_ended_before_anything_runs_again() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let r = open(&sb).await?;
    let plan = many_writes(&sb, 3)?;
    let id = r.create_run(&plan, &sb.ws(), &Silent).await?;
    // As a tool of a worker that then died would leave it: a process group, recorded, running.
    let child = {
        use std::os::unix::process::CommandExt as _;
        std::process::Command::new("sh")
            .args(["-c", "sleep 600 & wait"])
            .process_group(0)
            .spawn()?
    };
    let pid = child.id();
    let start = os::start_time(pid).ok_or_else(|| anyhow::anyhow!("no start"))?;
    sqlx::query(
        "INSERT INTO processes (run_id, step_seq, pid, start_time, pgid, command, started_at)
         VALUES ($1, 1, $2, $3, $4, 'sh -c sleep', $5)",
    )
    .bind(id.to_string())
    .bind(i64::from(pid))
    .bind(i64::try_from(start)?)
    .bind(i64::from(pid))
    .bind(reins_core::api::now_ms())
    .execute(&reins_tests::raw_db(&r).await?)
    .await?;
    std::mem::forget(child);
    assert!(os::is_running(pid, start));

    r.work(true, Duration::from_millis(10), &Silent).await?;
    assert!(!os::is_running(pid, start), "the orphan was ended");
    // (Zombies do not count: they have exited; reaping them is their parent's business.)
    assert!(
        os::group_members(pid).is_empty(),
        "with everything it started"
    );
    let detail = r.run_detail(id).await?;
    assert_eq!(detail.run.state, RunState::Succeeded);
    let k = kinds(&detail);
    let ended = k.iter().position(|k| k == "process.orphan_ended");
    let first_step = k.iter().position(|k| k == "intent.pending");
    assert!(
        ended.is_some() && ended < first_step,
        "ended before anything ran: {k:?}"
    );
    Ok(())
}

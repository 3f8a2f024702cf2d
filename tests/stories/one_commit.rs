//! A file step costs one durable commit on the local database: Reins wrote the files itself, so
//! its confirmation (the disk could settle it after a crash) waits for the drive's next change and
//! commits inside it. It never waits on anything outside the harness: a step that is not a file
//! effect lets it commit first. On a shared PostgreSQL each confirmation commits as it comes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use reins_core::api::{DriveOutcome, Observer, Progress, RunId, RunState, Silent, StepStatus};
use reins_tests::{on_postgres, plan, PermitAll, Sandbox};

/// What the journal held each time a step was reported done, which is once its change committed:
/// (the step, the intents written, the run's state).
struct Journal {
    db: PathBuf,
    run: RunId,
    seen: Mutex<Vec<(i64, i64, String)>>,
}

impl Journal {
    fn read(&self) -> rusqlite::Result<(i64, String)> {
        let conn = rusqlite::Connection::open_with_flags(
            &self.db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        let id = self.run.to_string();
        let intents = conn.query_row(
            "SELECT COUNT(*) FROM intents WHERE run_id = ?1",
            [&id],
            |r| r.get(0),
        )?;
        let state = conn.query_row("SELECT state FROM runs WHERE id = ?1", [&id], |r| r.get(0))?;
        Ok((intents, state))
    }
}

impl Observer for Journal {
    fn on(&self, p: &Progress) {
        let Progress::Step { seq, .. } = p else {
            return;
        };
        let (intents, state) = if on_postgres() {
            (-1, String::new())
        } else {
            self.read()
                .unwrap_or_else(|e| panic!("reading the journal at step {seq}: {e}"))
        };
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((*seq, intents, state));
        }
    }
}

/// Drives the plan `text` in a new sandbox, allowing everything, to success; what the journal held
/// as each step was reported.
async fn drive(text: &str) -> anyhow::Result<(Sandbox, Vec<(i64, i64, String)>)> {
    let sb = Sandbox::new()?;
    let reins = sb.reins(Arc::new(PermitAll)).await?;
    let run = reins.create_run(&plan(text)?, &sb.ws(), &Silent).await?;
    let journal = Journal {
        db: reins.database(),
        run,
        seen: Mutex::new(Vec::new()),
    };
    let outcome = reins.drive(run, &journal).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    // Every step ran and is done.
    let detail = reins.run_detail(run).await?;
    for step in &detail.steps {
        assert_eq!(step.status, StepStatus::Done, "{step:?}");
    }
    let seen = journal.seen.lock().map(|s| s.clone()).unwrap_or_default();
    Ok((sb, seen))
}

#[tokio::test]
async fn a_file_step_confirms_inside_the_next_steps_commit() -> anyhow::Result<()> {
    let (sb, seen) = drive(
        r#"
name = "three writes"
goal = "g"
[[steps]]
tool = "fs.write"
args = { path = "notes/a.md", content = "a\n" }
[[steps]]
tool = "fs.write"
args = { path = "notes/b.md", content = "b\n" }
[[steps]]
tool = "fs.write"
args = { path = "notes/c.md", content = "c\n" }
"#,
    )
    .await?;
    assert_eq!(sb.read("notes/c.md")?, "c\n");
    assert_eq!(seen.len(), 3, "{seen:?}");
    if on_postgres() {
        return Ok(());
    }
    // Reported with the next step's intent already in the journal: one commit carried both. The
    // last one committed with the run's end.
    let (first, second, last) = (&seen[0], &seen[1], &seen[2]);
    assert_eq!((first.1, second.1, last.1), (2, 3, 3), "{seen:?}");
    assert_eq!(first.2, "running");
    assert_eq!(last.2, "succeeded", "{seen:?}");
    Ok(())
}

#[tokio::test]
async fn a_held_confirmation_commits_before_a_step_that_is_not_a_file_effect() -> anyhow::Result<()>
{
    let (_sb, seen) = drive(
        r#"
name = "write then read"
goal = "g"
[[steps]]
tool = "fs.write"
args = { path = "notes/a.md", content = "a\n" }
[[steps]]
tool = "fs.read"
args = { path = "notes/a.md" }
[[steps]]
tool = "fs.write"
args = { path = "notes/b.md", content = "b\n" }
"#,
    )
    .await?;
    assert_eq!(seen.len(), 3, "{seen:?}");
    if on_postgres() {
        return Ok(());
    }
    // The write's confirmation committed on its own before the read began: only its intent was
    // in the journal.
    assert_eq!(seen[0].1, 1, "{seen:?}");
    assert_eq!(seen[2].2, "succeeded", "{seen:?}");
    Ok(())
}

//! F3 as a stress test: a process flips a directory and a file between the real thing and a link
//! into a protected place, as fast as it can, while a run makes grant-covered writes and reads that
//! need no review. The check and the effect must see the same thing: not one write lands in the
//! protected directory, and not one protected byte reaches a step's result.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use reins_core::api::{ApprovalStatus, DriveOutcome, RunState, Scope, Silent};
use reins_tests::review::{approve_once, succeeded};
use reins_tests::{raw_db, Sandbox};

const STEPS: usize = 300;
const FLIPS: u64 = 1000;
const MARK: &str = "PROTECTED-BYTES-7f3a";

/// Swaps the names `a` and `b` in one atomic step, over and over, until told to stop and at least
/// `FLIPS` swaps of each pair are done.
fn flipper(
    pairs: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    stop: Arc<AtomicBool>,
    flips: Arc<AtomicU64>,
) -> std::thread::JoinHandle<anyhow::Result<()>> {
    std::thread::spawn(move || {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        while !stop.load(Ordering::Relaxed) || flips.load(Ordering::Relaxed) < FLIPS {
            for (a, b) in &pairs {
                renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)?;
            }
            flips.fetch_add(1, Ordering::Relaxed);
            std::thread::yield_now();
        }
        Ok(())
    })
}

fn entries(dir: &Path) -> anyhow::Result<usize> {
    Ok(std::fs::read_dir(dir)?.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipping_links_never_redirects_a_granted_write_or_an_unreviewed_read() -> anyhow::Result<()>
{
    let sb = Sandbox::new()?;
    let ws = sb.ws();
    std::fs::create_dir_all(ws.join("docs"))?;
    std::fs::create_dir_all(ws.join(".vscode"))?;
    std::os::unix::fs::symlink(".vscode", ws.join("spare"))?;
    std::fs::write(ws.join(".env"), format!("{MARK}\n"))?;
    std::fs::write(ws.join("notes.txt"), "ordinary notes\n")?;
    std::os::unix::fs::symlink(".env", ws.join("spare.txt"))?;
    let reins = sb.with_defaults().await?;

    // The grant a person gave for ordinary docs: `docs/*`, workspace-wide.
    let seed = "name = \"seed\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.write\"\nargs = { path = \"docs/seed.md\", content = \"x\\n\" }\n";
    let (first, review) = sb.to_review(&reins, seed).await?;
    let mut grant = approve_once();
    grant.scope = Scope::Workspace;
    grant.pattern = Some("docs/*".into());
    reins.approve(&review.id, grant).await?;
    assert!(succeeded(&reins.drive(first, &Silent).await?));

    let mut plan = String::from("name = \"race\"\ngoal = \"g\"\n");
    for i in 0..STEPS {
        plan.push_str(&format!(
            "[[steps]]\ntool = \"fs.write\"\nexpect = \"any\"\nargs = {{ path = \"docs/j{i}.md\", content = \"x\\n\" }}\n\
             [[steps]]\ntool = \"fs.read\"\nexpect = \"any\"\nargs = {{ path = \"notes.txt\" }}\n"
        ));
    }
    let run = sb.start(&reins, &plan).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let swapper = flipper(
        vec![
            (ws.join("docs"), ws.join("spare")),
            (ws.join("notes.txt"), ws.join("spare.txt")),
        ],
        stop.clone(),
        flips.clone(),
    );
    let mut rejected = 0;
    let mut rounds = 0;
    let finished = loop {
        rounds += 1;
        anyhow::ensure!(rounds < 8 * STEPS, "the run does not end");
        match reins.drive(run, &Silent).await? {
            DriveOutcome::Finished { state, .. } => break state,
            DriveOutcome::NeedsHuman {
                state: RunState::AwaitingApproval,
                ..
            } => {
                // A person rejects whatever the race made risky enough to be shown.
                for a in reins
                    .approvals(Some(ApprovalStatus::Pending), Some(run))
                    .await?
                {
                    reins.reject(&a.id, "raced", "user:test").await?;
                    rejected += 1;
                }
            }
            other => anyhow::bail!("the run stopped for something else: {other:?}"),
        }
    };
    stop.store(true, Ordering::Relaxed);
    swapper
        .join()
        .map_err(|_| anyhow::anyhow!("the flipper panicked"))??;
    assert!(flips.load(Ordering::Relaxed) >= FLIPS);

    // Where the real directories are now, whichever name they ended under.
    assert_eq!(
        entries(&ws.join(".vscode"))?,
        0,
        "nothing landed in .vscode ({finished:?})"
    );
    let db = raw_db(&reins).await?;
    let (leaked,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM steps WHERE run_id = $1 AND result LIKE '%' || $2 || '%'",
    )
    .bind(run.to_string())
    .bind(MARK)
    .fetch_one(&db)
    .await?;
    assert_eq!(leaked, 0, "no protected byte reached a step result");

    // The race was really run: grant-covered writes and unreviewed reads both happened.
    let (written, read): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(CASE WHEN tool = 'fs.write' AND status = 'done' THEN 1 END),
                COUNT(CASE WHEN tool = 'fs.read' AND status = 'done' THEN 1 END)
           FROM steps WHERE run_id = $1",
    )
    .bind(run.to_string())
    .fetch_one(&db)
    .await?;
    let uses = reins.grants().await?.first().map(|g| g.uses).unwrap_or(0);
    eprintln!(
        "{} flips; {written} writes and {read} reads done, {rejected} reviews rejected, grant used {uses} times",
        flips.load(Ordering::Relaxed)
    );
    assert!(
        written > 0 && read > 0 && uses > 0,
        "the race was not exercised"
    );
    Ok(())
}

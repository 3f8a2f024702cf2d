//! The tray count and the notifications on a team database: they cover the whole team's inbox, or
//! only the runs started on this machine. A run "started elsewhere" is one whose machine column
//! names another host, as another machine's `create` writes it.

use reins_core::api::{AlertScope, Alerts, ApprovalStatus, Reins, RunId, RunState, Silent};
use reins_tests::review::waiting;
use reins_tests::{raw_db, Sandbox};

fn note(name: &str) -> String {
    format!(
        r#"
name = "{name}"
goal = "leave a note"
[[steps]]
tool = "fs.write"
why = "tell on-call what changed"
args = {{ path = "docs/{name}.md", content = "rotate daily\n" }}
"#
    )
}

/// A run that stops for a review of its write; `elsewhere`: as if started on the laptop.
async fn waiting_run(
    sb: &Sandbox,
    engine: &Reins,
    name: &str,
    elsewhere: bool,
) -> anyhow::Result<RunId> {
    let run = sb.start(engine, &note(name)).await?;
    if elsewhere {
        sqlx::query("UPDATE runs SET machine = 'laptop' WHERE id = $1")
            .bind(run.to_string())
            .execute(&raw_db(engine).await?)
            .await?;
    }
    assert!(waiting(&engine.drive(run, &Silent).await?));
    Ok(run)
}

pub(crate) async fn look(
    alerts: &mut Alerts,
    engine: &Reins,
    scope: AlertScope,
) -> anyhow::Result<reins_core::api::Alert> {
    let pending = engine
        .approvals(Some(ApprovalStatus::Pending), None)
        .await?;
    let runs = engine.runs().await?;
    Ok(alerts.update(pending, Some(&runs), scope, true, &engine.this_machine()))
}

#[tokio::test]
async fn mine_counts_and_announces_only_runs_started_here_and_switching_repeats_nothing(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    waiting_run(&sb, &engine, "here-1", false).await?;
    waiting_run(&sb, &engine, "there-1", true).await?;
    let mut alerts = Alerts::default();

    // What waited before the app started is counted, not announced.
    let first = look(&mut alerts, &engine, AlertScope::Team).await?;
    assert_eq!((first.waiting, first.fresh.len()), (2, 0));

    let here = waiting_run(&sb, &engine, "here-2", false).await?;
    let there = waiting_run(&sb, &engine, "there-2", true).await?;
    let mine = look(&mut alerts, &engine, AlertScope::Mine).await?;
    assert_eq!(mine.waiting, 2, "the two runs started here");
    let fresh: Vec<(RunId, &str)> = mine
        .fresh
        .iter()
        .map(|(a, name)| (a.run_id, name.as_str()))
        .collect();
    assert_eq!(
        fresh,
        vec![(here, "here-2")],
        "the laptop's is not announced"
    );

    // Back to the team: every approval counts, and the laptop's, seen while it was not covered,
    // is not announced late.
    let team = look(&mut alerts, &engine, AlertScope::Team).await?;
    assert_eq!((team.waiting, team.fresh.len()), (4, 0));

    // A new run of the laptop's is announced to the team.
    let there_3 = waiting_run(&sb, &engine, "there-3", true).await?;
    let team = look(&mut alerts, &engine, AlertScope::Team).await?;
    assert_eq!(team.waiting, 5);
    assert_eq!(
        team.fresh.iter().map(|(a, _)| a.run_id).collect::<Vec<_>>(),
        vec![there_3]
    );
    assert!(there != there_3);

    // Without a shared database every run is this machine's.
    let pending = engine
        .approvals(Some(ApprovalStatus::Pending), None)
        .await?;
    let runs = engine.runs().await?;
    let alone = Alerts::default().update(
        pending,
        Some(&runs),
        AlertScope::Mine,
        false,
        &engine.this_machine(),
    );
    assert_eq!(alone.waiting, 5);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_is_announced_once_and_only_where_it_is_covered() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let mut mine = Alerts::default();
    let mut team = Alerts::default();
    look(&mut mine, &engine, AlertScope::Mine).await?;
    look(&mut team, &engine, AlertScope::Team).await?;

    // Two runs of the laptop's and one of ours stop needing a person: made by a build whose tool
    // schemas differ, they are suspended instead of run.
    let mut runs = Vec::new();
    for (name, elsewhere) in [("ours", false), ("theirs", true)] {
        let run = sb.start(&engine, &note(name)).await?;
        let set = if reins_tests::on_postgres() {
            "jsonb_set(compat::jsonb, '{toolSchemaHash}', '\"older\"')::text"
        } else {
            "json_set(compat, '$.toolSchemaHash', 'older')"
        };
        let machine = if elsewhere { "'laptop'" } else { "machine" };
        sqlx::query(&format!(
            "UPDATE runs SET compat = {set}, machine = {machine} WHERE id = $1"
        ))
        .bind(run.to_string())
        .execute(&raw_db(&engine).await?)
        .await?;
        engine.drive(run, &Silent).await?;
        assert_eq!(engine.run_state(run).await?, RunState::Suspended);
        runs.push(run);
    }
    let names = |a: &reins_core::api::Alert| -> Vec<String> {
        a.suspended.iter().map(|r| r.name.clone()).collect()
    };
    assert_eq!(
        names(&look(&mut mine, &engine, AlertScope::Mine).await?),
        ["ours"]
    );
    let mut told = names(&look(&mut team, &engine, AlertScope::Team).await?);
    told.sort();
    assert_eq!(told, ["ours", "theirs"]);
    // Told once.
    assert!(look(&mut team, &engine, AlertScope::Team)
        .await?
        .suspended
        .is_empty());
    assert!(look(&mut mine, &engine, AlertScope::Team)
        .await?
        .suspended
        .is_empty());
    Ok(())
}

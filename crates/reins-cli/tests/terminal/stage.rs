//! Staged commands in a run, as a person at a terminal meets them with the built-in policy: a
//! command that needs review runs first in a copy-on-write view, the card shows what it did, and
//! approving lands exactly that without running it again; rejecting leaves the workspace as it was;
//! a command staging cannot capture falls back to approving the command; a file changed since
//! staging makes a new card; a kill between two files is settled from the journal.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{text, Cli};

/// A Makefile that stamps a file with the time it ran (a second run would write another stamp),
/// edits one file and deletes another, and a plan whose one step runs `command`.
fn setup(cli: &Cli, command: &str) -> anyhow::Result<std::path::PathBuf> {
    let ws = cli.ws();
    std::fs::write(
        ws.join("Makefile"),
        "all:\n\tmkdir -p gen\n\tdate +%s%N > gen/stamp\n\tsed -i s/v1/v2/ VERSION\n\trm -f old.txt\n\t@echo built\n",
    )?;
    std::fs::write(ws.join("VERSION"), "v1\n")?;
    std::fs::write(ws.join("old.txt"), "old\n")?;
    let plan = cli.tmp.path().join("build.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"build\"\ngoal = \"build it\"\n[[steps]]\ntool = \"shell.exec\"\nargs = {{ command = {command:?} }}\n"
        ),
    )?;
    Ok(plan)
}

fn strict_json(cli: &Cli, args: &[&str]) -> anyhow::Result<serde_json::Value> {
    let out = cli
        .strict_cmd()
        .args([args, &["--json"]].concat())
        .output()?;
    anyhow::ensure!(out.status.success(), "reins {args:?}: {}", text(&out));
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Starts the plan and returns its one pending card.
fn card(cli: &Cli, plan: &Path) -> anyhow::Result<serde_json::Value> {
    let out = cli
        .strict_cmd()
        .args(["run", "--plan"])
        .arg(plan)
        .arg("--workspace")
        .arg(cli.ws())
        .arg("--no-wait")
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "stops for review: {}",
        text(&out)
    );
    let list = strict_json(cli, &["approvals"])?;
    let cards = list.as_array().cloned().unwrap_or_default();
    anyhow::ensure!(cards.len() == 1, "one card: {list:#}");
    Ok(cards[0].clone())
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// The stamp the card's diff shows for gen/stamp.
fn staged_stamp(card: &serde_json::Value) -> String {
    let preview = card["preview"].as_str().unwrap_or_default();
    let after = preview.split("+++ b/gen/stamp").nth(1).unwrap_or_default();
    after
        .lines()
        .find(|l| l.starts_with('+') && l[1..].chars().all(|c| c.is_ascii_digit()) && l.len() > 5)
        .map(|l| l[1..].to_owned())
        .unwrap_or_default()
}

#[test]
fn a_staged_make_is_approved_by_its_real_diff_and_lands_without_running_again() -> anyhow::Result<()>
{
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let before = tree(&cli.ws());
    let card = card(&cli, &plan)?;
    assert_eq!(tree(&cli.ws()), before, "staging changed the workspace");
    let staged = card["staged"].as_str().unwrap_or_default();
    assert!(
        staged.starts_with("staged (overlay")
            && staged.contains("changes 1 file, creates 1, deletes 1; no network used"),
        "{card:#}"
    );
    let preview = card["preview"].as_str().unwrap_or_default();
    assert!(preview.contains("-v1\n+v2\n"), "{preview}");
    assert!(
        preview.contains("--- a/old.txt\n+++ /dev/null"),
        "{preview}"
    );
    let stamp = staged_stamp(&card);
    assert!(!stamp.is_empty(), "{preview}");
    let shown = cli
        .strict_cmd()
        .args(["approval", "show"])
        .arg(card["id"].as_str().unwrap_or_default())
        .output()?;
    assert!(
        text(&shown).contains("approving applies exactly these changes"),
        "{}",
        text(&shown)
    );

    // Approved: exactly the staged bytes land, the stamp among them; the command did not run.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id, "--drive"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("the command did not run again"),
        "{}",
        text(&out)
    );
    let ws = cli.ws();
    assert_eq!(std::fs::read_to_string(ws.join("gen/stamp"))?.trim(), stamp);
    assert_eq!(std::fs::read_to_string(ws.join("VERSION"))?, "v2\n");
    assert!(!ws.join("old.txt").exists());
    let requested = cli.events("approval.requested")?;
    assert_eq!(requested.len(), 1);

    // Rollback restores what was there.
    let run = cli.only_run()?;
    let out = cli
        .strict_cmd()
        .args(["rollback", &run, "--to", "1"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(ws.join("VERSION"))?, "v1\n");
    assert_eq!(std::fs::read_to_string(ws.join("old.txt"))?, "old\n");
    assert!(!ws.join("gen/stamp").exists());
    Ok(())
}

#[test]
fn a_staged_command_is_not_run_again_out_of_its_sandbox_and_rejecting_it_leaves_the_workspace(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let before = tree(&cli.ws());
    let card = card(&cli, &plan)?;
    let id = card["id"].as_str().unwrap_or_default();
    // The card shows all it did, confined and offline: running it again with the network or
    // unconfined (effects no card showed) is refused, and the card still waits.
    for (flag, said) in [
        (
            "--with-network",
            "running it with the network instead is not offered",
        ),
        (
            "--unconfined",
            "running it unconfined instead is not offered",
        ),
    ] {
        let out = cli
            .strict_cmd()
            .args(["approve", id, flag, "--drive"])
            .output()?;
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", text(&out));
        assert!(
            text(&out).contains("this command was staged") && text(&out).contains(said),
            "{flag}: {}",
            text(&out)
        );
        assert_eq!(tree(&cli.ws()), before, "{flag}");
    }
    let pending = strict_json(&cli, &["approvals"])?;
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending:#}");
    assert_eq!(pending[0]["id"], card["id"]);
    let out = cli
        .strict_cmd()
        .args(["reject", id, "--reason", "not now", "--drive"])
        .output()?;
    assert!(
        text(&out).contains("rejected by the reviewer: not now"),
        "{}",
        text(&out)
    );
    assert_eq!(tree(&cli.ws()), before);
    Ok(())
}

#[test]
fn a_command_that_needs_the_network_is_approved_as_a_command() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = setup(
        &cli,
        "echo fetched > fetched.txt; curl -sS https://registry.npmjs.org/left-pad > left-pad.json",
    )?;
    let card = card(&cli, &plan)?;
    assert!(card["staged"].is_null(), "{card:#}");
    let preview = card["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("tried to reach registry.npmjs.org, which staging does not give")
            && preview.contains("approving runs the command itself, confined"),
        "{preview}"
    );
    assert!(!cli.ws().join("fetched.txt").exists());
    // Approved, the command runs (confined, still without network): its own write lands.
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id, "--drive"]).output()?;
    assert!(cli.ws().join("fetched.txt").exists(), "{}", text(&out));
    Ok(())
}

#[test]
fn a_file_changed_since_staging_makes_a_new_staged_card() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let first = card(&cli, &plan)?;
    std::fs::write(cli.ws().join("VERSION"), "v1\nedited meanwhile\n")?;
    let id = first["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id, "--drive"]).output()?;
    assert_eq!(out.status.code(), Some(3), "a new card: {}", text(&out));
    assert!(!cli.ws().join("gen/stamp").exists(), "nothing landed");
    let list = strict_json(&cli, &["approvals"])?;
    let cards = list.as_array().cloned().unwrap_or_default();
    assert_eq!(cards.len(), 1, "{list:#}");
    let second = &cards[0];
    assert_ne!(second["id"], first["id"]);
    assert!(second["staged"].is_string(), "{second:#}");
    let preview = second["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("+v2\n edited meanwhile"),
        "staged again: {preview}"
    );
    let superseded = cli.events("approval.superseded")?;
    assert_eq!(superseded.len(), 1, "{superseded:#?}");
    assert!(
        superseded[0]["why"]
            .as_str()
            .unwrap_or_default()
            .contains("VERSION"),
        "{superseded:#?}"
    );
    let id = second["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id, "--drive"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(cli.ws().join("VERSION"))?,
        "v2\nedited meanwhile\n"
    );
    Ok(())
}

/// Killed after the first of three files landed: the restarted worker applies the other two, once.
#[cfg(feature = "fault-injection")]
#[test]
fn a_kill_between_files_is_settled_from_the_journal_with_each_file_written_once(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let card = card(&cli, &plan)?;
    let stamp = staged_stamp(&card);
    let effects = cli.tmp.path().join("effects.log");
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["approve", id, "--drive"])
        .env("REINS_FAULT", "between_files")
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    let out = cli
        .strict_cmd()
        .args(["worker", "--once"])
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("recovered: 2 of 3 files still held what they held before"),
        "{}",
        text(&out)
    );
    let log = std::fs::read_to_string(&effects)?;
    assert_eq!(log.lines().count(), 3, "each file written once:\n{log}");
    let ws = cli.ws();
    assert_eq!(std::fs::read_to_string(ws.join("gen/stamp"))?.trim(), stamp);
    assert_eq!(std::fs::read_to_string(ws.join("VERSION"))?, "v2\n");
    assert!(!ws.join("old.txt").exists());
    let leftovers: Vec<_> = tree(&ws)
        .into_keys()
        .filter(|k| k.contains("reins-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    Ok(())
}

/// `[staging]` in the person's policy: `never` shows a command as a command; `always` stages and
/// reviews one a rule allows.
#[test]
fn the_policy_says_which_commands_are_never_and_always_staged() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let policy = cli.tmp.path().join("policy.toml");
    std::fs::write(&policy, "[staging]\nnever = [\"make\"]\n")?;
    let out = cli
        .strict_cmd()
        .env("REINS_POLICY", &policy)
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .arg("--no-wait")
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let list = strict_json(&cli, &["approvals"])?;
    let card = &list[0];
    assert!(card["staged"].is_null(), "{card:#}");
    assert!(
        card["preview"]
            .as_str()
            .unwrap_or_default()
            .contains("[staging] never lists \"make\""),
        "{card:#}"
    );

    // A rule allows `make`; `always` still stages it and asks.
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    std::fs::write(
        &policy,
        "[staging]\nalways = [\"make\"]\n[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"make\"\nreason = \"builds\"\n",
    )?;
    let out = cli
        .strict_cmd()
        .env("REINS_POLICY", &policy)
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .arg("--no-wait")
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let list = strict_json(&cli, &["approvals"])?;
    assert!(list[0]["staged"].is_string(), "{list:#}");
    assert!(!cli.ws().join("gen/stamp").exists());

    // A path is not a program.
    std::fs::write(&policy, "[staging]\nnever = [\"/usr/bin/make\"]\n")?;
    let out = cli
        .strict_cmd()
        .env("REINS_POLICY", &policy)
        .args(["approvals"])
        .output()?;
    assert!(
        !out.status.success() && text(&out).contains("name a program"),
        "{}",
        text(&out)
    );
    Ok(())
}

/// Edit-then-approve for a staged card: the person leaves a folder out of what lands, and the
/// audit log records it; a path the command did not change is refused.
#[test]
fn files_left_out_of_a_staged_result_do_not_land_and_the_audit_log_says_which() -> anyhow::Result<()>
{
    let cli = Cli::new()?;
    let plan = setup(&cli, "make")?;
    let card = card(&cli, &plan)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["approve", id, "--leave-out", "README.md"])
        .output()?;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not among the files"), "{}", text(&out));

    let out = cli
        .strict_cmd()
        .args(["approve", id, "--leave-out", "gen/", "--drive"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("left out by the reviewer: gen"),
        "{}",
        text(&out)
    );
    let ws = cli.ws();
    assert!(!ws.join("gen/stamp").exists(), "left out");
    assert_eq!(std::fs::read_to_string(ws.join("VERSION"))?, "v2\n");
    assert!(!ws.join("old.txt").exists());
    let approved = cli.events("approval.approved")?;
    assert_eq!(
        approved[0]["leftOut"],
        serde_json::json!(["gen"]),
        "{approved:#?}"
    );
    let listed = cli.run(&["audit", "list", "--kind", "approval.approved"])?;
    assert!(
        text(&listed).contains("leaving out gen"),
        "{}",
        text(&listed)
    );
    Ok(())
}

/// The pid of a process whose arguments are exactly `argv`, if one runs.
fn running(argv: &[&str]) -> Option<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        (std::fs::read(e.path().join("cmdline")).ok()? == want).then_some(pid)
    })
}

/// A run cancelled while its command is staged ends that command at once: no card is made,
/// nothing it started is left running, and the workspace is as it was.
#[test]
fn cancelling_a_run_while_its_command_is_staged_ends_the_command() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let ws = cli.ws();
    std::fs::write(ws.join("Makefile"), "all:\n\ttouch made\n\tsleep 97.25\n")?;
    let plan = cli.tmp.path().join("slow.toml");
    std::fs::write(
        &plan,
        "name = \"slow\"\ngoal = \"build slowly\"\n[[steps]]\ntool = \"shell.exec\"\nargs = { command = \"make\", timeout_s = 300 }\n",
    )?;
    let mut run = cli
        .strict_cmd()
        .env("REINS_LEASE_SECS", "3")
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(&ws)
        .arg("--no-wait")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let sleep = ["sleep", "97.25"];
    let begun = std::time::Instant::now();
    while running(&sleep).is_none() {
        anyhow::ensure!(run.try_wait()?.is_none(), "the run ended before staging");
        anyhow::ensure!(
            begun.elapsed().as_secs() < 60,
            "the staged command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let id = cli.only_run()?;
    let out = cli.run(&["cancel", &id])?;
    assert!(out.status.success(), "{}", text(&out));
    let cancelled = std::time::Instant::now();
    let ended = loop {
        if let Some(status) = run.try_wait()? {
            break status;
        }
        if cancelled.elapsed().as_secs() > 40 {
            let _ = run.kill();
            anyhow::bail!("the run still staged its command 40 s after the cancel");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        running(&sleep).is_none(),
        "the staged command was left running ({ended})"
    );
    let cards = strict_json(&cli, &["approvals"])?;
    assert_eq!(
        cards.as_array().map(Vec::len),
        Some(0),
        "no card: {cards:#}"
    );
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "cancelled", "{show:#}");
    assert!(!ws.join("made").exists(), "staging changed the workspace");
    Ok(())
}

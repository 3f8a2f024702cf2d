//! An external agent's lifecycle under Reins, exact to the protocol: a scripted ACP agent
//! (`tests/fixtures/acp_agent.py`, no model) logs every message Reins sends it. A pause or a drain
//! mid-turn is `session/cancel`, then the process ends and the run is paused at a verified
//! checkpoint; resuming starts a new process that is told why its turn stopped. A run cancelled
//! while its agent waits on a permission answers it with the reject option. The first prompt
//! carries the profile facts, with a manifest. An agent that requires it is signed in with a key.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::common::{signal, text, Cli};
use super::{card, finish};

/// The scripted agent with `script`; its log is `agent.log` in the sandbox.
pub(super) struct Scripted {
    command: String,
    log: PathBuf,
    /// The folder the agent keeps its log in: the one place besides its temp dir it may write
    /// (`--agent-may-write`), as a person would let an agent Reins does not know keep its state.
    dir: PathBuf,
}

impl Scripted {
    pub(super) fn new(cli: &Cli, script: serde_json::Value) -> anyhow::Result<Self> {
        let file = cli.tmp.path().join("script.json");
        std::fs::write(&file, script.to_string())?;
        let dir = cli.tmp.path().join("agent");
        std::fs::create_dir_all(&dir)?;
        let log = dir.join("agent.log");
        let agent = reins_tests::repo_root().join("tests/fixtures/acp_agent.py");
        Ok(Self {
            command: shell_words::join([
                "python3".to_owned(),
                agent.display().to_string(),
                file.display().to_string(),
                log.display().to_string(),
            ]),
            log,
            dir,
        })
    }

    /// What `reins run` is given to start it.
    pub(super) fn args(&self) -> [String; 4] {
        [
            "--agent".into(),
            self.command.clone(),
            "--agent-may-write".into(),
            self.dir.display().to_string(),
        ]
    }

    /// Every message the agent received, in order.
    fn received(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn methods(&self) -> Vec<String> {
        self.received()
            .iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned))
            .collect()
    }

    /// The process ids the agent ran as, one per start.
    fn pids(&self) -> Vec<i32> {
        self.received()
            .iter()
            .filter_map(|m| m["pid"].as_i64().and_then(|p| i32::try_from(p).ok()))
            .collect()
    }

    /// The text of each prompt it was sent.
    fn prompts(&self) -> Vec<String> {
        self.received()
            .iter()
            .filter(|m| m["method"] == "session/prompt")
            .map(|m| {
                m["params"]["prompt"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// Waits until the agent received `method` `n` times. Fails at once, with what Reins said, if
    /// `reins` ended first; after a minute it is killed and the failure carries what it said.
    fn wait_for(&self, method: &str, n: usize, reins: &mut Child) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.methods().iter().filter(|m| *m == method).count() < n {
            if reins.try_wait()?.is_some() || Instant::now() >= deadline {
                let _ = reins.kill();
                let said = said_so_far(reins);
                anyhow::bail!(
                    "the agent never got {method} #{n}: {:?}; reins said: {said}",
                    self.methods()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// `reins run --acp GOAL` with this agent in the sandbox's workspace, not started yet.
    pub(super) fn command(&self, cli: &Cli, goal: &str) -> std::process::Command {
        let mut cmd = cli.strict_cmd();
        cmd.args(["run", "--acp", goal])
            .args(self.args())
            .arg("--workspace")
            .arg(cli.ws())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn run(&self, cli: &Cli, goal: &str) -> anyhow::Result<Child> {
        Ok(self.command(cli, goal).spawn()?)
    }
}

/// What a `reins` that has ended (or was just killed) printed.
fn said_so_far(reins: &mut Child) -> String {
    use std::io::Read as _;
    let _ = reins.wait();
    let mut said = String::new();
    if let Some(out) = reins.stdout.as_mut() {
        let _ = out.read_to_string(&mut said);
    }
    if let Some(err) = reins.stderr.as_mut() {
        let _ = err.read_to_string(&mut said);
    }
    said
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn the_run(cli: &Cli) -> anyhow::Result<(String, serde_json::Value)> {
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    Ok((id, show))
}

#[test]
fn a_pause_mid_turn_cancels_the_turn_ends_the_agent_and_resume_carries_on() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = Scripted::new(
        &cli,
        serde_json::json!({"turns": [[{"wait": "cancel"}], [{"say": "Carried on."}]]}),
    )?;
    let mut child = agent.run(&cli, "Tidy the runbook")?;
    agent.wait_for("session/prompt", 1, &mut child)?;
    let id = cli.only_run()?;
    let out = cli.strict_cmd().args(["pause", &id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "paused needs a human: {said}");
    assert!(
        agent.methods().contains(&"session/cancel".to_owned()),
        "{:?}",
        agent.methods()
    );
    let first = agent.pids()[0];
    assert!(!alive(first), "the agent's process ended with the pause");
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "paused", "{show}");
    let kinds = super::kinds(&cli)?;
    assert!(kinds.iter().any(|k| k == "run.paused"), "{kinds:?}");

    let out = cli.strict_cmd().args(["resume", &id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = super::bounded(cli.strict_cmd().args(["worker", "--once"]))?;
    assert!(out.status.success(), "{}", text(&out));
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(agent.pids().len(), 2, "a new process for the resumed run");
    let prompts = agent.prompts();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(prompts[0].contains("Tidy the runbook"), "{prompts:?}");
    assert!(
        prompts[1].contains("Tidy the runbook") && prompts[1].contains("turn was cancelled"),
        "the new session hears the goal and why the last turn stopped: {prompts:?}"
    );
    Ok(())
}

#[test]
fn a_drain_mid_turn_ends_at_once_with_the_run_paused_and_the_agent_ended() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = Scripted::new(&cli, serde_json::json!({"turns": [[{"wait": "cancel"}]]}))?;
    let mut child = agent.run(&cli, "Think for a long time")?;
    agent.wait_for("session/prompt", 1, &mut child)?;
    let start = Instant::now();
    signal(&child, rustix::process::Signal::TERM)?;
    let (code, said) = finish(child)?;
    let took = start.elapsed();
    assert_eq!(code, Some(3), "{said}");
    assert!(
        took < Duration::from_secs(20),
        "bounded by the agent's grace, not its turn ({took:?}): {said}"
    );
    assert!(agent.methods().contains(&"session/cancel".to_owned()));
    assert!(!alive(agent.pids()[0]));
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "paused", "{show}");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or_default()
            .contains("drain"),
        "{show}"
    );
    Ok(())
}

#[test]
fn cancelling_a_run_while_its_agent_waits_on_a_permission_answers_it_no() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = Scripted::new(
        &cli,
        serde_json::json!({"turns": [[{"permission": {"path": "NOTES.md", "content": "hello\n"}}]]}),
    )?;
    let mut child = agent.run(&cli, "Write the notes")?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["tool"], "agent.permission", "{card}");
    let id = cli.only_run()?;
    let out = cli.strict_cmd().args(["cancel", &id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_ne!(code, Some(0), "{said}");
    let answer = agent
        .received()
        .into_iter()
        .find(|m| m.get("result").is_some_and(|r| r.get("outcome").is_some()))
        .ok_or_else(|| {
            anyhow::anyhow!("the permission was never answered: {:?}", agent.received())
        })?;
    assert_eq!(
        answer["result"]["outcome"],
        serde_json::json!({"outcome": "selected", "optionId": "no"}),
        "answered with its reject option"
    );
    assert!(!alive(agent.pids()[0]));
    assert!(!cli.ws().join("NOTES.md").exists());
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "cancelled", "{show}");
    Ok(())
}

#[test]
fn the_first_prompt_carries_the_profile_facts_with_a_manifest() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let out = cli
        .strict_cmd()
        .args([
            "memory",
            "add",
            "--category",
            "style",
            "--key",
            "indent",
            "--value",
            "two spaces in YAML",
        ])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let agent = Scripted::new(&cli, serde_json::json!({"turns": [[{"say": "Noted."}]]}))?;
    let (code, said) = finish(agent.run(&cli, "Fix the YAML")?)?;
    assert_eq!(code, Some(0), "{said}");
    let prompts = agent.prompts();
    assert!(
        prompts[0].contains("Fix the YAML")
            && prompts[0].contains("style.indent: two spaces in YAML"),
        "{prompts:?}"
    );
    let (id, show) = the_run(&cli)?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    assert_eq!(steps[0]["tool"], "agent.prompt", "{show}");
    let context = cli.run(&["show", &id, "--context"])?;
    let context = text(&context);
    assert!(
        context.contains("external agent") && context.contains("fact"),
        "{context}"
    );
    assert!(context.contains("style.indent"), "{context}");
    let kinds = super::kinds(&cli)?;
    assert!(kinds.iter().any(|k| k == "agent.briefed"), "{kinds:?}");

    // Memory off: no facts reach the agent.
    let out = cli.strict_cmd().args(["memory", "off"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    std::fs::remove_file(&agent.log)?;
    std::fs::remove_file(agent.log.with_extension("log.turns")).ok();
    let (code, said) = finish(agent.run(&cli, "Fix the YAML again")?)?;
    assert_eq!(code, Some(0), "{said}");
    let prompts = agent.prompts();
    assert!(!prompts[0].contains("two spaces"), "{prompts:?}");
    Ok(())
}

#[test]
fn a_write_asked_for_again_after_a_crash_is_confirmed_from_the_journal_without_writing(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let write = serde_json::json!({"path": "NOTES.md", "content": "hello\n"});
    // Restarted, the agent does not know its write landed, and asks for it all over again.
    let agent = Scripted::new(
        &cli,
        serde_json::json!({"turns": [
            [{"permission": write}, {"write": write}],
            [{"permission": write}, {"write": write}, {"say": "Written."}],
        ]}),
    )?;
    let effects = cli.tmp.path().join("effects.log");
    let mut child = agent
        .command(&cli, "Write the notes")
        .env("REINS_EFFECT_LOG", &effects)
        .env("REINS_FAULT", "after_confirm")
        .spawn()?;
    let card = card(&cli, &mut child)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    // The write is carried out and confirmed, and Reins dies before the agent hears.
    let (code, said) = finish(child)?;
    assert_ne!(code, Some(0), "{said}");
    assert!(said.contains("after_confirm"), "{said}");
    let out = super::bounded(
        cli.strict_cmd()
            .env("REINS_EFFECT_LOG", &effects)
            .args(["worker", "--once"]),
    )?;
    assert!(out.status.success(), "{}", text(&out));
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(cli.read("NOTES.md")?, "hello\n");
    let ran = std::fs::read_to_string(&effects)?;
    assert_eq!(ran.lines().count(), 1, "written exactly once: {ran}");
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(1),
        "reviewed once: {all}"
    );
    let confirmed = super::kinds(&cli)?
        .iter()
        .filter(|k| *k == "intent.already_applied")
        .count();
    assert_eq!(
        confirmed, 2,
        "the permission and the write, both from the journal"
    );
    // The restarted agent heard yes to both.
    let answers: Vec<serde_json::Value> = agent
        .received()
        .into_iter()
        .filter(|m| m.get("result").is_some() && m.get("method").is_none())
        .map(|m| m["result"].clone())
        .collect();
    assert!(
        answers
            .contains(&serde_json::json!({"outcome": {"outcome": "selected", "optionId": "yes"}})),
        "{answers:?}"
    );
    Ok(())
}

/// Red team N7: the agent hears an answer only once the step that decided it is committed. Reins
/// dying in between leaves the grant in the journal and unheard; asked again after the restart,
/// the same permission waits for a person instead of running a second time on the first yes.
#[test]
fn an_answer_reaches_the_agent_only_after_its_step_is_committed() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let ask = serde_json::json!({"permission": {"path": "NOTES.md", "content": "hello\n"}});
    let agent = Scripted::new(&cli, serde_json::json!({"turns": [[ask], [ask]]}))?;
    let mut child = agent
        .command(&cli, "Write the notes")
        .env("REINS_FAULT", "before_answer")
        .spawn()?;
    let first = card(&cli, &mut child)?;
    let id = first["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert!(said.contains("before_answer"), "{said}");
    assert_ne!(code, Some(0), "{said}");
    // The journal holds the grant; the agent never heard it.
    let (_, show) = the_run(&cli)?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    assert!(
        steps
            .iter()
            .any(|s| s["tool"] == "agent.permission" && s["status"] == "done"),
        "{show}"
    );
    let answered = |agent: &Scripted| {
        agent
            .received()
            .iter()
            .filter(|m| m.get("result").is_some_and(|r| r.get("outcome").is_some()))
            .count()
    };
    assert_eq!(answered(&agent), 0, "{:?}", agent.received());
    // Restarted, the agent asks again: a person decides again.
    let out = super::bounded(cli.strict_cmd().args(["worker", "--once"]))?;
    assert!(out.status.success(), "{}", text(&out));
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "awaiting_approval", "{show}");
    Ok(())
}

/// Red team N12: one message line past the cap ends the connection instead of growing Reins'
/// memory while it waits for the line's end; the run stops, saying why.
#[test]
fn a_message_line_past_the_cap_ends_the_agent_and_suspends_the_run() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let flood = serde_json::json!({"turns": [[{"flood": 40}, {"say": "never heard"}]]});
    let agent = Scripted::new(&cli, flood)?;
    let child = agent.command(&cli, "Say hello").spawn()?;
    let (code, said) = finish(child)?;
    assert_ne!(code, Some(0), "{said}");
    let (_, show) = the_run(&cli)?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    let why = show["run"]["lastError"].as_str().unwrap_or_default();
    assert!(why.contains("a line over 16 MiB"), "{why}");
    assert!(!show.to_string().contains("never heard"), "{show}");
    Ok(())
}

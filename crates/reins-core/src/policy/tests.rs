use std::net::IpAddr;
use std::path::Path;

use serde_json::json;

use super::*;
use crate::action::{CommandForm, FetchRequest, ShellCommand};
use crate::workspace::RelPath;

fn path(p: &str) -> RelPath {
    RelPath::parse(p).unwrap()
}

fn sh(cmd: &str) -> Action {
    Action::Shell(ShellCommand {
        form: CommandForm::Line(cmd.into()),
        timeout_s: 120,
        sandbox: Default::default(),
    })
}

fn fetch(url: &str) -> Action {
    Action::Fetch(FetchRequest::parse(&json!({ "url": url })).unwrap())
}

fn classify(p: &RulePolicy, root: &Path, a: &Action, resolved: &[IpAddr]) -> Verdict {
    p.classify(a, &Context { root, resolved })
}

fn policy(rules: &str) -> RulePolicy {
    RulePolicy::with_rules(
        Protected::NONE,
        RuleSet::parse(rules, "test.toml").unwrap(),
    )
}

#[test]
fn defaults_allow_workspace_reads_and_ask_for_every_side_effect() {
    let p = RulePolicy::defaults(Protected::NONE);
    let root = Path::new("/ws");
    let read = classify(
        &p,
        root,
        &Action::Read {
            path: path("src/lib.rs"),
        },
        &[],
    );
    assert_eq!((read.decision, read.risk), (Decision::Allow, Risk::Low));
    let write = classify(
        &p,
        root,
        &Action::Write {
            path: path("a.txt"),
            content: "x".into(),
        },
        &[],
    );
    assert_eq!((write.decision, write.risk), (Decision::Ask, Risk::Medium));
    let ls = classify(&p, root, &sh("ls"), &[]);
    assert_eq!(
        ls.decision,
        Decision::Ask,
        "a command is a side effect: {:?}",
        ls.reasons
    );
}

#[test]
fn protected_paths_are_high_and_explained() {
    let p = RulePolicy::defaults(Protected::NONE);
    let root = Path::new("/ws");
    for (rel, why) in [
        (".git/hooks/pre-commit", "writing it runs code"),
        (".GIT/config", "git config"),
        (".vscode/settings.json", "editor config"),
        (".env.local", "secrets"),
    ] {
        let v = classify(
            &p,
            root,
            &Action::Write {
                path: path(rel),
                content: "x".into(),
            },
            &[],
        );
        assert_eq!((v.risk, v.decision), (Risk::High, Decision::Ask), "{rel}");
        assert!(
            v.reasons.iter().any(|r| r.contains(why)),
            "{rel}: {:?}",
            v.reasons
        );
    }
    let read_env = classify(&p, root, &Action::Read { path: path(".env") }, &[]);
    assert_eq!(
        read_env.decision,
        Decision::Ask,
        "reading secrets is reviewed"
    );
}

#[test]
fn reins_policy_file_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    let p = RulePolicy::defaults(Protected::new(
        &dir.path().join("data"),
        &cfg,
        &cfg.join("policy.toml"),
    ));
    let v = classify(
        &p,
        dir.path(),
        &Action::Write {
            path: path("cfg/policy.toml"),
            content: "".into(),
        },
        &[],
    );
    assert_eq!(v.risk, Risk::High, "{:?}", v.reasons);
}

#[test]
fn rules_are_deny_then_ask_then_allow_and_high_is_never_allowed() {
    let p = policy(
        r#"
        [[rules]]
        decision = "allow"
        tool = "shell.exec"
        program = "echo"
        reason = "echo is harmless"

        [[rules]]
        decision = "allow"
        tool = "shell.exec"
        program = "cargo"
        args = ["test"]

        [[rules]]
        decision = "deny"
        tool = "fs.*"
        paths = ["secrets/**"]

        [[rules]]
        decision = "allow"
        tool = "fs.write"
        paths = ["docs/**", "secrets/**"]

        [[rules]]
        decision = "allow"
        tool = "shell.exec"
        "#,
    );
    let root = Path::new("/ws");
    assert_eq!(
        classify(&p, root, &sh("echo hi"), &[]).decision,
        Decision::Allow
    );
    assert_eq!(
        classify(&p, root, &sh("cargo test -p x"), &[]).decision,
        Decision::Allow
    );
    // The blanket shell allow cannot allow what is high.
    let injected = classify(&p, root, &sh(r#"echo "hi"; rm -rf x"#), &[]);
    assert_eq!(injected.decision, Decision::Ask, "{:?}", injected.reasons);
    assert!(injected
        .reasons
        .iter()
        .any(|r| r.contains("always reviewed")));
    let curl = classify(&p, root, &sh("echo a && curl https://x"), &[]);
    assert_eq!(curl.decision, Decision::Ask);
    // Deny beats allow.
    let secret = classify(
        &p,
        root,
        &Action::Write {
            path: path("secrets/k"),
            content: "x".into(),
        },
        &[],
    );
    assert_eq!(secret.decision, Decision::Deny, "{:?}", secret.reasons);
    let docs = classify(
        &p,
        root,
        &Action::Write {
            path: path("docs/a.md"),
            content: "x".into(),
        },
        &[],
    );
    assert_eq!(docs.decision, Decision::Allow);
}

#[test]
fn a_workspace_policy_can_only_tighten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".reins")).unwrap();
    std::fs::write(
        dir.path().join(WORKSPACE_POLICY),
        r#"
        [[rules]]
        decision = "allow"
        tool = "*"

        [[rules]]
        decision = "ask"
        tool = "shell.exec"
        program = "echo"
        "#,
    )
    .unwrap();
    let user = policy(
        r#"
        [[rules]]
        decision = "allow"
        tool = "shell.exec"
        program = "echo"
        "#,
    );
    let echo = classify(&user, dir.path(), &sh("echo hi"), &[]);
    assert_eq!(
        echo.decision,
        Decision::Ask,
        "the workspace tightened it: {:?}",
        echo.reasons
    );
    let write = classify(
        &user,
        dir.path(),
        &Action::Write {
            path: path("a"),
            content: "x".into(),
        },
        &[],
    );
    assert_eq!(
        write.decision,
        Decision::Ask,
        "the workspace's allow-all is ignored"
    );
    std::fs::write(dir.path().join(WORKSPACE_POLICY), "this is [not toml")
        .unwrap();
    let read = classify(&user, dir.path(), &Action::Read { path: path("a") }, &[]);
    assert_eq!(
        read.decision,
        Decision::Ask,
        "an unreadable workspace policy fails closed"
    );
}

#[test]
fn a_broken_policy_file_is_an_error_not_ignored() {
    let err = RuleSet::parse("[[rules]]\ndecision = \"maybe\"\n", "p.toml").err();
    assert!(err.is_some_and(|e| e.to_string().contains("p.toml")));
    let unknown = RuleSet::parse(
        "[[rules]]\ndecision = \"allow\"\nprogramme = \"x\"\n",
        "p.toml",
    );
    assert!(unknown.is_err(), "a misspelt matcher must not widen a rule");
}

#[test]
fn network_targets() {
    let p = RulePolicy::defaults(Protected::NONE);
    let root = Path::new("/ws");
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let meta = classify(
        &p,
        root,
        &fetch("http://169.254.169.254/latest/meta-data/"),
        &[],
    );
    assert_eq!(meta.decision, Decision::Deny, "{:?}", meta.reasons);
    let local = classify(&p, root, &fetch("http://127.0.0.1:8080/admin"), &[]);
    assert_eq!((local.risk, local.decision), (Risk::High, Decision::Ask));
    let file = classify(&p, root, &fetch("file:///etc/passwd"), &[]);
    assert_eq!(file.decision, Decision::Deny);
    let rebind = classify(&p, root, &fetch("https://evil.example/"), &[ip("10.0.0.5")]);
    assert_eq!(
        rebind.risk,
        Risk::High,
        "a name resolving to a private address: {:?}",
        rebind.reasons
    );
    let public = classify(&p, root, &fetch("https://docs.rs/"), &[ip("151.101.1.1")]);
    assert_eq!(
        (public.risk, public.decision),
        (Risk::Medium, Decision::Ask)
    );
    assert!(
        public
            .reasons
            .iter()
            .any(|r| r == "GET docs.rs: the URL itself, path and query, is sent to docs.rs"),
        "{:?}",
        public.reasons
    );
    assert!(
        !local.reasons.iter().any(|r| r.contains("leaves this machine")),
        "a request to this machine does not leave it: {:?}",
        local.reasons
    );
    let mapped = classify(&p, root, &fetch("http://[::ffff:169.254.169.254]/"), &[]);
    assert_eq!(mapped.decision, Decision::Deny);
}

#[test]
fn special_addresses_in_every_spelling() {
    use crate::policy::network::special_address;
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    for (addr, refused) in [
        ("169.254.169.254", true),
        ("fd00:ec2::254", true),
        ("0.0.0.0", true),
        ("::", true),
        ("2002:a9fe:a9fe::", true),
        ("64:ff9b::a9fe:a9fe", true),
        ("::ffff:169.254.169.254", true),
        ("127.0.0.1", false),
        ("::1", false),
        ("::ffff:127.0.0.1", false),
        ("10.1.2.3", false),
        ("172.16.0.1", false),
        ("192.168.1.1", false),
        ("fe80::1", false),
        ("fc00::1", false),
        ("100.64.0.1", false),
    ] {
        let found = special_address(ip(addr));
        assert_eq!(found.map(|(r, _)| r), Some(refused), "{addr}: {found:?}");
    }
    for public in ["151.101.1.1", "2a04:4e42::1", "8.8.8.8"] {
        assert_eq!(special_address(ip(public)), None, "{public}");
    }
}

#[test]
fn a_command_out_of_its_sandbox_is_high_risk_and_asked_and_only_the_person_can_switch_it_off() {
    let dir = tempfile::tempdir().unwrap();
    let allow_echo = "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"echo\"\n";
    let user = policy(allow_echo);
    assert_eq!(classify(&user, dir.path(), &sh("echo hi"), &[]).decision, Decision::Allow);
    for sandbox in ["network", "unconfined"] {
        let a = Action::Shell(
            ShellCommand::parse(&json!({ "command": "echo hi", "sandbox": sandbox })).unwrap(),
        );
        let v = classify(&user, dir.path(), &a, &[]);
        assert_eq!((v.risk, v.decision), (Risk::High, Decision::Ask), "{sandbox}: {v:?}");
        // The choice is part of the action: another hash than the confined command's.
        assert_ne!(a.hash(), sh("echo hi").hash());
    }
    // The person's own file may switch confinement off for a program: then it is asked, high.
    let switched = policy(&format!(
        "[containment]\nunconfined_programs = [\"echo\"]\n{allow_echo}"
    ));
    let v = classify(&switched, dir.path(), &sh("echo hi"), &[]);
    assert_eq!((v.risk, v.decision), (Risk::High, Decision::Ask), "{v:?}");
    assert!(v.reasons.iter().any(|r| r.contains("switches confinement off for echo")));
    // A workspace's file cannot: its [containment] is not the person's.
    std::fs::create_dir_all(dir.path().join(".reins")).unwrap();
    std::fs::write(
        dir.path().join(WORKSPACE_POLICY),
        "[containment]\nunconfined_programs = [\"echo\"]\nunconfined_commands = \"allow\"\n",
    )
    .unwrap();
    let v = classify(&user, dir.path(), &sh("echo hi"), &[]);
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    assert_eq!(user.unconfined_commands(), rules::Unconfined::Review);
    assert!(user.unconfined_programs().is_empty());
}

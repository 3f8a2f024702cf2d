use std::fs;

use serde_json::json;

use super::*;
use crate::action::*;
use crate::workspace::Workspace;
use crate::policy::Protected;

static NONE: Protected = Protected::NONE;
const OPEN: ReadGuard<'static> = ReadGuard {
    protected: &NONE,
    judged_high: false,
};

fn ws() -> anyhow::Result<(tempfile::TempDir, Workspace)> {
    let tmp = tempfile::tempdir()?;
    fs::create_dir_all(tmp.path().join("config"))?;
    fs::write(
        tmp.path().join("config/app.conf"),
        "level = debug\nrotate = never\n",
    )?;
    let ws = Workspace::open(tmp.path())?;
    Ok((tmp, ws))
}

fn call(tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        tool: tool.into(),
        args,
    }
}

#[test]
fn unknown_tools_and_fields_are_refused() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    assert!(matches!(
        Action::parse(&call("fs.nuke", json!({})), &ws),
        Err(ToolError::Unknown(_))
    ));
    let extra = call("fs.read", json!({"path": "a", "mode": "x"}));
    assert!(
        matches!(Action::parse(&extra, &ws), Err(ToolError::Args { .. })),
        "unknown fields are refused"
    );
    let missing = call("fs.write", json!({"path": "a"}));
    assert!(matches!(
        Action::parse(&missing, &ws),
        Err(ToolError::Args { .. })
    ));
    let escape = call("fs.write", json!({"path": "../a", "content": ""}));
    assert!(matches!(
        Action::parse(&escape, &ws),
        Err(ToolError::Jail(_))
    ));
    Ok(())
}

#[test]
fn canonical_form_normalises_paths_so_equal_actions_hash_equal() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    let a = Action::parse(
        &call("fs.write", json!({"path": "./config//x", "content": "1"})),
        &ws,
    )?;
    let b = Action::parse(
        &call("fs.write", json!({"content": "1", "path": "config/x"})),
        &ws,
    )?;
    assert_eq!(a.hash(), b.hash());
    assert_eq!(
        a.canonical_text(),
        r#"{"args":{"content":"1","path":"config/x"},"tool":"fs.write"}"#
    );
    Ok(())
}

#[test]
fn edit_requires_exactly_one_occurrence() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    let none = Action::parse(
        &call(
            "fs.edit",
            json!({"path": "config/app.conf", "old": "nope", "new": "x"}),
        ),
        &ws,
    )?;
    assert!(matches!(plan(&none, &ws), Err(ToolError::Failed { .. })));
    let twice = Action::parse(
        &call(
            "fs.edit",
            json!({"path": "config/app.conf", "old": " = ", "new": "="}),
        ),
        &ws,
    )?;
    let err = plan(&twice, &ws)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("occurs 2 times"), "{err}");
    let once = Action::parse(
        &call(
            "fs.edit",
            json!({"path": "config/app.conf", "old": "never", "new": "daily"}),
        ),
        &ws,
    )?;
    let p = plan(&once, &ws)?;
    assert!(
        p.preview.contains("-rotate = never\n+rotate = daily\n"),
        "{}",
        p.preview
    );
    apply(&p, &ws)?;
    assert_eq!(
        fs::read_to_string(ws.root().join("config/app.conf"))?,
        "level = debug\nrotate = daily\n"
    );
    Ok(())
}

#[test]
fn move_never_overwrites_and_images_describe_both_paths() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    fs::write(ws.root().join("b"), "b")?;
    let clash = Action::parse(
        &call("fs.move", json!({"from": "config/app.conf", "to": "b"})),
        &ws,
    )?;
    assert!(matches!(plan(&clash, &ws), Err(ToolError::Failed { .. })));
    let mv = Action::parse(
        &call(
            "fs.move",
            json!({"from": "config/app.conf", "to": "old/app.conf"}),
        ),
        &ws,
    )?;
    let p = plan(&mv, &ws)?;
    assert_eq!(p.pre[1].sha256, None);
    assert_eq!(p.post[0].sha256, None);
    assert_eq!(p.pre[0].sha256, p.post[1].sha256);
    Ok(())
}

#[test]
fn search_finds_lines() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    let s = Action::parse(&call("fs.search", json!({"pattern": "rot+ate"})), &ws)?;
    assert_eq!(run_pure(&s, &ws, OPEN)?, "config/app.conf:2: rotate = never\n");
    let bad = call("fs.search", json!({"pattern": "(unclosed"}));
    assert!(matches!(
        Action::parse(&bad, &ws),
        Err(ToolError::Args { .. })
    ));
    Ok(())
}

#[test]
fn replacing_an_executable_keeps_its_mode_and_says_so() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let (t, ws) = ws()?;
    let script = t.path().join("deploy.sh");
    fs::write(&script, "#!/bin/sh\necho old\n")?;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
    let action = Action::parse(
        &call(
            "fs.write",
            json!({"path": "deploy.sh", "content": "#!/bin/sh\necho new\n"}),
        ),
        &ws,
    )?;
    let p = plan(&action, &ws)?;
    assert!(
        p.preview
            .starts_with("note: executable: deploy.sh (mode 755)"),
        "{}",
        p.preview
    );
    apply(&p, &ws)?;
    assert_eq!(fs::metadata(&script)?.permissions().mode() & 0o777, 0o755);
    assert_eq!(fs::read_to_string(&script)?, "#!/bin/sh\necho new\n");
    Ok(())
}

#[test]
fn shell_and_fetch_arguments_are_validated() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    for bad in [
        json!({}),
        json!({"command": "ls", "argv": ["ls"]}),
        json!({"command": "  "}),
        json!({"argv": []}),
        json!({"command": "ls", "timeout_s": 0}),
        json!({"command": "ls", "timeout_s": 99999}),
        json!({"command": "ls", "cwd": "/"}),
    ] {
        assert!(
            Action::parse(&call("shell.exec", bad.clone()), &ws).is_err(),
            "{bad}"
        );
    }
    for bad in [
        json!({"url": "not a url"}),
        json!({"url": "https://x.example", "method": "TRACE"}),
        json!({"url": "https://x.example", "headers": {"X-A": "a\r\nInjected: 1"}}),
        json!({"url": "https://x.example", "headers": {"Host": "other"}}),
    ] {
        assert!(
            Action::parse(&call("http.fetch", bad.clone()), &ws).is_err(),
            "{bad}"
        );
    }
    let ok = Action::parse(&call("http.fetch", json!({"url": "docs.rs/serde"})), &ws)?;
    assert_eq!(
        ok.host(),
        Some("docs.rs"),
        "a URL without a scheme is https"
    );
    assert!(ok.canonical_text().contains("https://docs.rs/serde"));
    Ok(())
}

#[test]
fn search_does_not_read_protected_files() -> anyhow::Result<()> {
    let (t, ws) = ws()?;
    fs::write(t.path().join(".env"), "API_KEY=sk-live-secret\n")?;
    fs::create_dir_all(t.path().join(".git"))?;
    fs::write(t.path().join(".git/config"), "[remote] url = secret\n")?;
    let action = Action::parse(&call("fs.search", json!({"pattern": "secret"})), &ws)?;
    let out = run_pure(&action, &ws, OPEN)?;
    assert!(!out.contains("sk-live"), "{out}");
    assert!(out.contains("2 protected files not searched"), "{out}");
    Ok(())
}

/// F16: with the workspace at `$HOME`, Reins' own policy and data sit under it. A search (which
/// needs no review) skips them as a reviewed fs.read would not, and a read below high is refused.
#[test]
fn search_and_unreviewed_reads_skip_reins_own_files() -> anyhow::Result<()> {
    let (tmp, ws) = ws()?;
    let config = ws.root().join(".config/reins");
    let data = ws.root().join(".local/share/reins");
    fs::create_dir_all(&config)?;
    fs::create_dir_all(&data)?;
    fs::write(config.join("policy.toml"), "hosts = [\"internal-secret-host\"]\n")?;
    fs::write(data.join("reins.db.audit-head"), "secret-host head\n")?;
    let protected = Protected::new(&data, &config, &config.join("policy.toml"));
    let guard = ReadGuard {
        protected: &protected,
        judged_high: false,
    };
    let s = Action::parse(&call("fs.search", json!({"pattern": "secret-host"})), &ws)?;
    let out = run_pure(&s, &ws, guard)?;
    assert!(!out.contains("internal-secret-host"), "{out}");
    assert!(out.contains("2 protected files not searched"), "{out}");
    let r = Action::parse(&call("fs.read", json!({"path": ".config/reins/policy.toml"})), &ws)?;
    assert!(run_pure(&r, &ws, guard).is_err());
    drop(tmp);
    Ok(())
}

/// F17: the fetch preview showed `Authorization: [hidden, 91 characters]` whatever the agent put
/// there. Values are shown now; only what looks like a secret is masked, and the mask says so.
#[test]
fn fetch_preview_shows_header_values_and_masks_only_secrets() -> anyhow::Result<()> {
    let (_t, ws) = ws()?;
    let action = Action::parse(
        &call(
            "http.fetch",
            json!({"url": "https://api.example.com/x", "headers": {
                "Authorization": "Basic c3RvbGVuIGNvbnRlbnRzIG9mIG5vdGVzLnR4dA==",
                "Cookie": "session=notes-from-the-workspace",
                "X-Trace": "plain"
            }}),
        ),
        &ws,
    )?;
    let Action::Fetch(req) = &action else {
        anyhow::bail!("not a fetch");
    };
    let shown = req.display();
    assert!(shown.contains("Cookie: session=notes-from-the-workspace"), "{shown}");
    assert!(shown.contains("X-Trace: plain"), "{shown}");
    assert!(shown.contains("Authorization: Basic [redacted"), "{shown}");
    assert!(shown.contains("looks like a secret and is masked"), "{shown}");
    assert!(!shown.contains("hidden,"), "{shown}");
    Ok(())
}

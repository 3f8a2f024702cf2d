//! What held in the red-team pass ("What held (101 attempts)" in the findings), kept green: each
//! attempt that was refused, rated high or caught then is played again here through the facade.
//! A change that lets one through fails here with the attempt named.

use reins_core::api::{Decision, EditedAction, Reins, Risk, Silent};
use reins_tests::review::approve_once;
use reins_tests::{plan, Sandbox};

/// What the policy says of `tool` with `args` on the sandbox's workspace: Err when the call is
/// refused before it is judged (that held too).
async fn judged(
    reins: &Reins,
    sb: &Sandbox,
    tool: &str,
    args: serde_json::Value,
) -> Result<(Risk, Decision), String> {
    reins
        .policy_check(tool, args, &sb.ws())
        .await
        .map(|c| (c.risk, c.decision))
        .map_err(|e| e.to_string())
}

/// Every attempt in `attempts` is refused, denied or rated high.
async fn all_held(reins: &Reins, sb: &Sandbox, tool: &str, attempts: &[serde_json::Value]) {
    let mut through = Vec::new();
    for args in attempts {
        match judged(reins, sb, tool, args.clone()).await {
            Err(_) | Ok((Risk::High, _) | (_, Decision::Deny)) => {}
            Ok(got) => through.push(format!("{tool} {args}: {got:?}")),
        }
    }
    assert!(
        through.is_empty(),
        "no longer held:\n{}",
        through.join("\n")
    );
}

#[tokio::test]
async fn shell_that_runs_code_or_leaves_the_workspace_is_rated_high() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    std::fs::create_dir_all(sb.ws().join(".git"))?;
    std::os::unix::fs::symlink(".git", sb.ws().join("lnk"))?;
    let reins = sb.with_defaults().await?;
    let commands = [
        "bash -c id",
        "'bash' -c id",
        "b\\ash -c id",
        "$'bash' -c id",
        "/bin/sh -c id",
        "busybox sh -c id",
        "bash<<<id",
        "env bash -c id",
        "eval id",
        "source ./x.sh",
        "cat x | sh",
        "base64 -d x | bash",
        "printf 'a\\n' | xargs -I{} sh -c id",
        "alias ls=id",
        "f() { id; }; f",
        "exec 3<>/dev/tcp/127.0.0.1/80",
        "echo hi > /dev/tcp/127.0.0.1/80",
        "python3 -c 'print(1)'",
        "node -pe 1",
        "php -r 'echo 1;'",
        "[ -v 'a[$(id)]' ]",
        "sleep 1 &",
        // The jail as the shell meets it.
        "cd .git && ls",
        "cd lnk && ls",
        "cd .gi* && ls",
    ];
    let attempts: Vec<_> = commands
        .iter()
        .map(|c| serde_json::json!({ "command": c }))
        .collect();
    all_held(&reins, &sb, "shell.exec", &attempts).await;
    Ok(())
}

#[tokio::test]
async fn fetches_of_this_machine_in_any_spelling_are_rated_high_or_denied() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let urls = [
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "http://127.1/",
        "http://0177.0.0.01/",
        "http://%31%32%37.0.0.1/",
        "http://①②⑦.0.0.1/",
        "http://127.0.0.1./",
        "http://LocalHost/",
        "http://user@127.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::1]/",
        "http://localhost:8080/admin",
        "http://[::]/",
        "file:///etc/passwd",
    ];
    let attempts: Vec<_> = urls
        .iter()
        .map(|u| serde_json::json!({ "url": u }))
        .collect();
    all_held(&reins, &sb, "http.fetch", &attempts).await;
    let any = judged(
        &reins,
        &sb,
        "http.fetch",
        serde_json::json!({ "url": "http://[::]/" }),
    )
    .await;
    assert!(
        matches!(any, Err(_) | Ok((_, Decision::Deny))),
        "the unspecified address is denied: {any:?}"
    );
    Ok(())
}

#[tokio::test]
async fn protected_paths_in_disguise_are_rated_high() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    std::fs::write(sb.ws().join(".env"), "X=1\n")?;
    std::os::unix::fs::symlink(".env", sb.ws().join("settings.txt"))?;
    let reins = sb.with_defaults().await?;
    let writes: Vec<_> = [
        ".git\u{200d}/config",
        ".ＧＩＴ/hooks/pre-commit",
        ".GIT/config",
        ".git/hooks/../config",
    ]
    .iter()
    .map(|p| serde_json::json!({ "path": p, "content": "x\n" }))
    .collect();
    all_held(&reins, &sb, "fs.write", &writes).await;
    let reads: Vec<_> = ["settings.txt", ".env", "../outside.txt", "/etc/hosts"]
        .iter()
        .map(|p| serde_json::json!({ "path": p }))
        .collect();
    all_held(&reins, &sb, "fs.read", &reads).await;
    Ok(())
}

#[tokio::test]
async fn a_decision_is_refused_when_it_is_not_for_exactly_this_action() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let text = "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.write\"\nargs = { path = \"a.txt\", content = \"a\\n\" }\n";
    let (_run, review) = sb.to_review(&reins, text).await?;
    let with = |edited: Option<EditedAction>, hash: Option<&str>| {
        let mut r = approve_once();
        r.edited = edited;
        r.expect_hash = hash.map(str::to_owned);
        r
    };
    let refusals = [
        (
            "an edit naming another tool",
            with(
                Some(EditedAction {
                    tool: Some("shell.exec".into()),
                    args: serde_json::json!({ "command": "id" }),
                }),
                None,
            ),
        ),
        (
            "an edit escaping the workspace",
            with(
                Some(EditedAction {
                    tool: None,
                    args: serde_json::json!({ "path": "../x.txt", "content": "a\n" }),
                }),
                None,
            ),
        ),
        ("a hash of fewer than 8 characters", with(None, Some("abc"))),
        (
            "a hash of another action",
            with(None, Some("0123456789abcdef")),
        ),
    ];
    for (what, request) in refusals {
        let got = reins.approve(&review.id, request).await;
        assert!(got.is_err(), "{what} was accepted: {got:?}");
    }
    assert!(!sb.ws().join("../x.txt").exists());
    reins.approve(&review.id, approve_once()).await?;
    let twice = reins.approve(&review.id, approve_once()).await;
    assert!(twice.is_err(), "an approval is decided once: {twice:?}");
    let late = reins
        .reject(&review.id, "changed my mind", "user:test")
        .await;
    assert!(late.is_err(), "and not rejected after: {late:?}");
    for id in ["", "'; DROP TABLE approvals; --", "01"] {
        assert!(
            reins.approval(id).await.is_err(),
            "{id:?} names no approval"
        );
        assert!(
            reins.revoke_grant(id).await.is_err(),
            "{id:?} names no grant"
        );
    }
    Ok(())
}

#[tokio::test]
async fn hostile_plans_and_commands_fail_cleanly_or_are_reviewed() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    // Plans that are not plans: parse errors, never a crash.
    let deep_arrays = format!("x = {}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_tables = format!(
        "name = \"t\"\ngoal = \"g\"\n{}",
        (0..50_000).map(|i| format!("[t{i}]\n")).collect::<String>()
    );
    for (what, text) in [
        ("an empty plan", String::new()),
        ("arrays nested 100k deep", deep_arrays),
        ("50k tables", deep_tables),
    ] {
        if let Ok(p) = plan(&text) {
            let created = reins.create_run(&p, &sb.ws(), &Silent).await;
            assert!(created.is_err(), "{what} was accepted as a plan");
        }
    }
    // A NUL in a path: the step is refused as invalid, nothing is read.
    let nul = "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.read\"\nexpect = \"any\"\nargs = { path = \"a\\u0000b\" }\n";
    let run = reins.create_run(&plan(nul)?, &sb.ws(), &Silent).await?;
    reins.drive(run, &Silent).await?;
    let status = reins
        .run_detail(run)
        .await?
        .steps
        .first()
        .map(|s| s.status.to_string());
    assert_eq!(status.as_deref(), Some("invalid"));
    // Commands the classifier must judge without falling over: each is high, or refused.
    let commands = [
        format!("echo {}", "x".repeat(40_000)),
        format!("{}id{}", "$(".repeat(31), ")".repeat(31)),
        (0..3_000).map(|_| "true").collect::<Vec<_>>().join(" | ") + " | sh",
        (0..3_000).map(|_| "true").collect::<Vec<_>>().join(" && ") + " && bash -c id",
        format!("{} bash -c id", "! ".repeat(5_000)),
        format!("cat <<EOF | sh\n{}EOF\n", "id\n".repeat(5_000)),
        format!(
            "{} bash -c id {}",
            "case x in x) ".repeat(200),
            " ;; esac".repeat(200)
        ),
    ];
    let attempts: Vec<_> = commands
        .iter()
        .map(|c| serde_json::json!({ "command": c }))
        .collect();
    all_held(&reins, &sb, "shell.exec", &attempts).await;
    // A search pattern built to backtrack runs in bounded time; one over the size limit is
    // refused as invalid. Neither takes the run down.
    for (pattern, want) in [
        ("(a*)*b".to_owned(), "done"),
        ("a".repeat(100_000), "invalid"),
    ] {
        let text = format!(
            "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.search\"\nexpect = \"any\"\nargs = {{ pattern = {}, path = \".\" }}\n",
            serde_json::to_string(&pattern)?
        );
        let run = reins.create_run(&plan(&text)?, &sb.ws(), &Silent).await?;
        let outcome = reins.drive(run, &Silent).await?;
        let steps = reins.run_detail(run).await?.steps;
        let got = steps.first().map(|s| s.status.to_string());
        assert_eq!(got.as_deref(), Some(want), "{outcome:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_delete_of_a_folder_is_refused_and_the_plan_file_is_read_once() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    std::fs::create_dir_all(sb.ws().join("keep/inner"))?;
    std::fs::write(sb.ws().join("keep/inner/f.txt"), "f\n")?;
    let reins = sb.with_defaults().await?;
    let file = sb.tmp.path().join("plan.toml");
    std::fs::write(
        &file,
        "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.delete\"\nexpect = \"any\"\nargs = { path = \"keep\" }\n",
    )?;
    let run = reins
        .create_run(&plan(&std::fs::read_to_string(&file)?)?, &sb.ws(), &Silent)
        .await?;
    // Changing the file after the run started changes nothing: the run keeps what it was given.
    std::fs::write(
        &file,
        "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"shell.exec\"\nargs = { command = \"rm -rf keep\" }\n",
    )?;
    let outcome = reins.drive(run, &Silent).await?;
    let steps = reins.run_detail(run).await?.steps;
    assert_eq!(steps.len(), 1, "{outcome:?}");
    assert_eq!(steps[0].tool, "fs.delete");
    assert!(
        matches!(steps[0].status.to_string().as_str(), "invalid" | "failed"),
        "{:?}",
        steps[0]
    );
    assert!(sb.ws().join("keep/inner/f.txt").exists());
    Ok(())
}

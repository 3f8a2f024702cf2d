//! F11: secrets a run carries never reach the data dir in clear text. After a run that put them
//! in its goal, a step's reason, a command and a file's content, and ran both steps, every column
//! of every table and every byte of the database, its WAL and the blob store are searched for each
//! one. The only place one may be is a blob holding a workspace file's content, byte for byte.
//! What runs is sealed with the keyring's key, and opened only to run: the command and the file
//! still get the real secret.

use reins_core::api::{MemorySecrets, Options, Reins, RunState, Silent};
use reins_tests::llm_setup::{setup, setup_keyed};
use reins_tests::mock_llm;
use reins_tests::review::{approve_once, pending, succeeded, waiting};
use reins_tests::{plan, raw_db, Sandbox};

const SECRETS: [&str; 4] = [
    "Tr0ub4dorGOAL9",
    "Tr0ub4dorWHY7",
    "Tr0ub4dorCMD5",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
];

fn deploy_plan() -> String {
    format!(
        "name = \"deploy\"\ngoal = \"deploy using mysql password {}\"\n\
         [[steps]]\ntool = \"shell.exec\"\nwhy = \"the db password is {}\"\n\
         args = {{ command = \"printf '%s\\\\n' --password {} > got.txt\" }}\n\
         [[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"deploy.env.txt\", content = \"AWS_SECRET_ACCESS_KEY={}\\n\" }}\n",
        SECRETS[0], SECRETS[1], SECRETS[2], SECRETS[3]
    )
}

#[tokio::test]
async fn no_secret_a_run_carried_is_in_the_data_dir_in_clear() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let run = sb.start(&reins, &deploy_plan()).await?;
    for _ in 0..2 {
        let outcome = reins.drive(run, &Silent).await?;
        assert!(waiting(&outcome), "{outcome:?}");
        let review = pending(&reins, run).await?;
        reins.approve(&review.id, approve_once()).await?;
    }
    let outcome = reins.drive(run, &Silent).await?;
    assert!(succeeded(&outcome), "{outcome:?}");
    // What ran had the real secrets, opened from the sealed rows.
    assert_eq!(sb.read("got.txt")?, format!("--password\n{}\n", SECRETS[2]));
    assert_eq!(
        sb.read("deploy.env.txt")?,
        format!("AWS_SECRET_ACCESS_KEY={}\n", SECRETS[3])
    );

    let found = everywhere(&reins, &sb, &SECRETS, &["got.txt", "deploy.env.txt"]).await?;
    assert!(found.is_empty(), "{found:#?}");
    Ok(())
}

#[tokio::test]
async fn what_the_llm_agent_read_is_sealed_in_its_checkpoints_and_opened_when_it_resumes(
) -> anyhow::Result<()> {
    const DB_PASSWORD: &str = "Tr0ub4dorLLM3-xq";
    let s = setup(
        vec![
            mock_llm::calls("", &[("c1", "fs_read", r#"{"path": "config/db.env"}"#)]),
            mock_llm::calls(
                "Noting it.",
                &[(
                    "c2",
                    "fs_write",
                    r#"{"path": "docs/db.md", "content": "done\n"}"#,
                )],
            ),
            mock_llm::text("Done.", 50),
        ],
        true,
    )
    .await?;
    std::fs::write(
        s.sb.ws().join("config/db.env"),
        format!("DB_PASSWORD={DB_PASSWORD}\n"),
    )?;
    let run = s.start(&s.spec("check the db config")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(waiting(&outcome), "{outcome:?}");
    let review = pending(&s.reins, run).await?;
    s.reins.approve(&review.id, approve_once()).await?;
    // Driven again, the agent is rebuilt from its sealed checkpoint.
    let outcome = s.settle(run, &Silent).await?;
    assert!(
        matches!(
            outcome,
            reins_core::api::DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    let seen = s.mock.seen();
    assert_eq!(seen.len(), 3);
    for later in &seen[1..] {
        let told = mock_llm::tool_results(later);
        assert!(
            told.iter().any(|(_, t)| t.contains(DB_PASSWORD)),
            "the model was told what the file holds: {told:?}"
        );
    }
    let found = everywhere(&s.reins, &s.sb, &[DB_PASSWORD], &["config/db.env"]).await?;
    assert!(found.is_empty(), "{found:#?}");
    Ok(())
}

#[tokio::test]
async fn without_a_keyring_a_secret_the_agent_read_suspends_the_run_and_is_not_stored(
) -> anyhow::Result<()> {
    const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let s = setup_keyed(
        vec![
            mock_llm::calls("", &[("c1", "fs_read", r#"{"path": "config/token.env"}"#)]),
            mock_llm::text("Done.", 50),
        ],
        false,
        std::sync::Arc::new(MemorySecrets::unavailable()),
    )
    .await?;
    std::fs::write(
        s.sb.ws().join("config/token.env"),
        format!("GITHUB_TOKEN={TOKEN}\n"),
    )?;
    let run = s.start(&s.spec("check the token config")).await?;
    let outcome = s.settle(run, &Silent).await?;
    let said = format!("{outcome:?}");
    assert!(
        matches!(
            outcome,
            reins_core::api::DriveOutcome::NeedsHuman {
                state: RunState::Suspended,
                ..
            }
        ),
        "{said}"
    );
    assert!(
        said.contains("holds a secret") && said.contains("keyring"),
        "{said}"
    );
    assert_eq!(
        s.mock.seen().len(),
        1,
        "the model was not told what could not be kept"
    );
    let found = everywhere(&s.reins, &s.sb, &[TOKEN], &["config/token.env"]).await?;
    assert!(found.is_empty(), "{found:#?}");
    Ok(())
}

/// Every place in the data dir holding one of `secrets` in clear.
async fn everywhere(
    reins: &Reins,
    sb: &Sandbox,
    secrets: &[&str],
    workspace_files: &[&str],
) -> anyhow::Result<Vec<String>> {
    let db = raw_db(reins).await?;
    let mut found = in_columns(&db, secrets).await?;
    db.close().await;
    reins.close().await;
    found.extend(in_files(sb, secrets, workspace_files)?);
    Ok(found)
}

/// Every column of every table holding one of the secrets.
async fn in_columns(db: &sqlx::AnyPool, secrets: &[&str]) -> anyhow::Result<Vec<String>> {
    let postgres = db.connect_options().database_url.scheme() == "postgres";
    // (table, column, the column as searchable text)
    let mut columns: Vec<(String, String, String)> = Vec::new();
    if postgres {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name NOT LIKE '_sqlx%'",
        )
        .fetch_all(db)
        .await?;
        for (table, column, kind) in rows {
            // Bytes as text with their printable characters as they are.
            let text = if kind == "bytea" {
                format!("encode(\"{column}\", 'escape')")
            } else {
                format!("CAST(\"{column}\" AS TEXT)")
            };
            columns.push((table, column, text));
        }
    } else {
        let tables: Vec<(String,)> = sqlx::query_as(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'",
        )
        .fetch_all(db)
        .await?;
        for (table,) in tables {
            let names: Vec<(String,)> =
                sqlx::query_as(&format!("SELECT name FROM pragma_table_info('{table}')"))
                    .fetch_all(db)
                    .await?;
            for (column,) in names {
                let text = format!("CAST(\"{column}\" AS TEXT)");
                columns.push((table.clone(), column, text));
            }
        }
    }
    let find = if postgres { "strpos" } else { "instr" };
    let mut found = Vec::new();
    let mut searched = 0;
    {
        for (table, column, text) in columns {
            searched += 1;
            for secret in secrets {
                let (n,): (i64,) = sqlx::query_as(&format!(
                    "SELECT count(*) FROM \"{table}\" WHERE {find}({text}, $1) > 0"
                ))
                .bind(*secret)
                .fetch_one(db)
                .await?;
                if n > 0 {
                    found.push(format!("{table}.{column} holds {secret}"));
                }
            }
        }
    }
    assert!(
        searched > 50,
        "the search reached the tables ({searched} columns)"
    );
    Ok(found)
}

/// Every file of the data dir holding one of the secrets, except blobs that are exactly a
/// workspace file's content.
fn in_files(sb: &Sandbox, secrets: &[&str], files: &[&str]) -> anyhow::Result<Vec<String>> {
    let workspace: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(sb.ws().join(f)))
        .collect::<Result<_, _>>()?;
    let mut found = Vec::new();
    let mut files = 0;
    let mut stack = vec![sb.tmp.path().join("data")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&path)?;
            let in_blobs = path.components().any(|c| c.as_os_str() == "blobs");
            if in_blobs && workspace.contains(&bytes) {
                continue;
            }
            for secret in secrets {
                if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                    found.push(format!("{} holds {secret}", path.display()));
                }
            }
        }
    }
    assert!(
        files >= 2,
        "the search reached the data dir ({files} files)"
    );
    Ok(found)
}

#[tokio::test]
async fn without_a_keyring_a_plan_with_a_secret_is_refused_and_nothing_is_stored(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = Reins::open(
        sb.data(),
        Options {
            secrets: Some(std::sync::Arc::new(MemorySecrets::unavailable())),
            ..sb.options()
        },
    )
    .await?;
    let err = reins
        .create_run(&plan(&deploy_plan())?, &sb.ws(), &Silent)
        .await
        .err()
        .map(|e| (e.code().as_str(), e.to_string()));
    let (code, message) = err.unwrap_or_default();
    assert_eq!(code, "keyring_unavailable", "{message}");
    assert!(message.starts_with("the plan holds a secret"), "{message}");
    assert!(message.contains("environment variable"), "{message}");
    assert!(reins.runs().await?.is_empty(), "no run was created");
    // A plan without one runs as before: the keyring is not needed.
    let plain = "name = \"p\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.write\"\nargs = { path = \"a.txt\", content = \"hi\\n\" }\n";
    let run = reins.create_run(&plan(plain)?, &sb.ws(), &Silent).await?;
    assert!(succeeded(&reins.drive(run, &Silent).await?));
    Ok(())
}

#[tokio::test]
async fn an_edit_that_keeps_a_sealed_secret_in_place_runs_with_the_secret() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let text = format!(
        "name = \"e\"\ngoal = \"g\"\n[[steps]]\ntool = \"shell.exec\"\n\
         args = {{ command = \"printf '%s\\\\n' --password {} > got.txt\" }}\n",
        SECRETS[2]
    );
    let (run, review) = sb.to_review(&reins, &text).await?;
    let shown = review.action.args["command"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !shown.contains(SECRETS[2]) && shown.contains("⟦sealed:"),
        "{shown}"
    );
    // The person edits where the output goes and leaves the sealed part as it is.
    let mut request = approve_once();
    request.edited = Some(reins_core::api::EditedAction {
        tool: None,
        args: serde_json::json!({ "command": shown.replace("got.txt", "edited.txt") }),
    });
    reins.approve(&review.id, request).await?;
    let outcome = reins.drive(run, &Silent).await?;
    assert!(succeeded(&outcome), "{outcome:?}");
    assert_eq!(
        sb.read("edited.txt")?,
        format!("--password\n{}\n", SECRETS[2])
    );
    // A token Reins did not seal is refused, not run as text.
    let (_, other) = sb.to_review(&reins, &text).await?;
    let mut forged = approve_once();
    forged.edited = Some(reins_core::api::EditedAction {
        tool: None,
        args: serde_json::json!({ "command": "printf '%s' ⟦sealed:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA⟧ > f.txt" }),
    });
    assert!(reins.approve(&other.id, forged).await.is_err());
    assert!(!sb.ws().join("f.txt").exists());
    Ok(())
}

#[tokio::test]
async fn doctor_tells_whether_this_keyring_opens_what_was_sealed() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let run = sb.start(&reins, &deploy_plan()).await?;
    let outcome = reins.drive(run, &Silent).await?;
    assert!(waiting(&outcome), "{outcome:?}");
    let report = reins.doctor().await?;
    assert!(report.healthy, "{report:?}");
    assert!(
        report.sealed_rows > 0 && report.sealed == "ok",
        "{report:?}"
    );
    reins.close().await;

    // The data dir on another machine: a keyring without the key.
    let elsewhere = Reins::open(
        sb.data(),
        Options {
            secrets: Some(std::sync::Arc::new(MemorySecrets::default())),
            database: sb.database.clone(),
            ..Options::default()
        },
    )
    .await?;
    let report = elsewhere.doctor().await?;
    assert!(!report.healthy, "{report:?}");
    assert!(
        report
            .sealed
            .contains("the entry \"reins.seal\" is missing"),
        "{}",
        report.sealed
    );
    let review = pending(&elsewhere, run).await?;
    let refused = elsewhere.approve(&review.id, approve_once()).await;
    let said = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        said.contains("reins.seal"),
        "approving what cannot be opened is refused, saying why: {said}"
    );
    assert!(
        !sb.ws().join("got.txt").exists(),
        "nothing ran with a secret it could not open"
    );
    Ok(())
}

//! F11: secrets a run carries must not reach the database in clear text where the harness does
//! not need them. Every column of every table is searched for each secret after a run that put
//! them in its goal, a step's reason, a command and a file's content.
//!
//! Still raw, because they are what runs (sealing them is the remaining part of F11): the plan in
//! `runs.agent_spec`, the action in `steps.action`, `intents.action` and `approvals.action`, and
//! what a read returned to the agent in `steps.result`.

use reins_core::api::Silent;
use reins_tests::review::{pending, waiting};
use reins_tests::{raw_db, Sandbox};

const RAW: &[(&str, &str)] = &[
    ("runs", "agent_spec"),
    ("steps", "action"),
    ("steps", "result"),
    ("intents", "action"),
    ("approvals", "action"),
    ("approvals", "edited_action"),
];

#[tokio::test]
async fn secrets_stay_out_of_every_column_the_harness_does_not_run() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let secrets = [
        "Tr0ub4dorGOAL9",
        "Tr0ub4dorWHY7",
        "Tr0ub4dorCMD5",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ];
    let plan = format!(
        "name = \"deploy\"\ngoal = \"deploy using mysql password {}\"\n\
         [[steps]]\ntool = \"shell.exec\"\nwhy = \"the db password is {}\"\n\
         args = {{ command = \"mysql -u root --password {} -h db app\" }}\n\
         [[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"deploy.env.txt\", content = \"AWS_SECRET_ACCESS_KEY={}\\n\" }}\n",
        secrets[0], secrets[1], secrets[2], secrets[3]
    );
    let run = sb.start(&reins, &plan).await?;
    let outcome = reins.drive(run, &Silent).await?;
    assert!(waiting(&outcome), "{outcome:?}");
    let review = pending(&reins, run).await?;
    reins.reject(&review.id, "not now", "user:test").await?;
    let _ = reins.drive(run, &Silent).await?;

    let db = raw_db(&reins).await?;
    let tables: Vec<(String,)> =
        sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'")
            .fetch_all(&db)
            .await?;
    let mut found = Vec::new();
    let mut raw_seen = 0;
    for (table,) in tables {
        let columns: Vec<(String,)> =
            sqlx::query_as(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .fetch_all(&db)
                .await?;
        for (column,) in columns {
            for secret in secrets {
                let (n,): (i64,) = sqlx::query_as(&format!(
                    "SELECT count(*) FROM \"{table}\" WHERE instr(CAST(\"{column}\" AS TEXT), ?) > 0"
                ))
                .bind(secret)
                .fetch_one(&db)
                .await?;
                if n == 0 {
                    continue;
                }
                if RAW.contains(&(table.as_str(), column.as_str())) {
                    raw_seen += 1;
                } else {
                    found.push(format!("{table}.{column} holds {secret}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
    assert!(raw_seen > 0, "the search can find what is there");
    Ok(())
}

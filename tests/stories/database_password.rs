//! Team mode: the database password comes from the keyring by name (`--database-password-key`),
//! and it is in no file: not in the URL, not in the data dir, not in a message.

use std::sync::Arc;

use reins_core::api::{Reins, Secret, SecretStore as _, Silent};
use reins_tests::Sandbox;

const PASSWORD: &str = "team-secret/with:odd@chars%";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_password_comes_from_the_keyring_by_name() -> anyhow::Result<()> {
    let cluster = reins_testpg::Cluster::private_passwords()?;
    let url = cluster.database("password")?;
    let db = url.rsplit('/').next().unwrap_or_default().to_owned();
    cluster.sql(
        &db,
        &format!("CREATE ROLE alice LOGIN PASSWORD '{PASSWORD}'; ALTER DATABASE \"{db}\" OWNER TO alice; ALTER SCHEMA public OWNER TO alice"),
    )?;
    let alice = url.replacen("postgres://postgres@", "postgres://alice@", 1);
    let sb = Sandbox::new()?;
    let options = |key: Option<&str>| {
        let mut o = sb.options();
        o.database = Some(alice.clone());
        o.database_password_key = key.map(str::to_owned);
        o.secrets = Some(Arc::clone(&sb.keys) as Arc<dyn reins_core::api::SecretStore>);
        o
    };

    let refused = Reins::open(sb.data(), options(None)).await.err();
    let message = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("password"),
        "no password, no entry: {message}"
    );

    let refused = Reins::open(sb.data(), options(Some("team-db"))).await.err();
    let message = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("reins keys set team-db"),
        "a key that is not set says how to set it: {message}"
    );

    sb.keys.set("team-db", &Secret::new(PASSWORD))?;
    let reins = Reins::open(sb.data(), options(Some("team-db"))).await?;
    let plan = reins_tests::example_plan("tidy-configs.toml")?;
    let run = reins.create_run(&plan, &sb.ws(), &Silent).await?;
    assert_eq!(reins.run_detail(run).await?.run.id, run);
    let shown = reins.database().display().to_string();
    assert!(
        shown.starts_with("postgres://alice:***@") && !shown.contains("secret"),
        "{shown}"
    );
    let report = reins.doctor().await?;
    assert!(report.healthy, "{report:?}");
    drop(reins);
    for file in reins_tests::files_under(sb.tmp.path()) {
        let bytes = std::fs::read(&file)?;
        assert!(
            !bytes
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes()),
            "the password is written in {}",
            file.display()
        );
    }

    // A URL that names a password too is ambiguous: refused.
    let mut both = options(Some("team-db"));
    both.database = Some(alice.replacen("alice@", "alice:other@", 1));
    let message = Reins::open(sb.data(), both)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("already names a password") && !message.contains("other@"),
        "{message}"
    );
    Ok(())
}

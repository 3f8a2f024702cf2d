//! What the desktop app needs from the facade beyond the CLI's: provider defaults kept in the data
//! dir (validated, audited, only a key's *name*), and a change stamp that moves with every change a
//! screen shows, whichever process made it.

use reins_core::api::{FactOrigin, NewFact, ProviderDefaults, Reins, DEFAULT_BASE_URL};
use reins_tests::Sandbox;

#[tokio::test]
async fn provider_defaults_are_validated_stored_and_audited() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = Reins::open(sb.data(), sb.options()).await?;
    let first = reins.provider_defaults().await?;
    assert_eq!(
        first.base_url, DEFAULT_BASE_URL,
        "a fresh data dir uses the local default"
    );
    assert_eq!(first.key, None);

    let new = ProviderDefaults {
        base_url: "https://api.example.com/v1".into(),
        model: "gpt-test".into(),
        key: Some("example".into()),
    };
    assert_eq!(reins.set_provider_defaults(&new).await?, new);
    // Reopened: it was stored, not held in memory.
    reins.close().await;
    let reins = Reins::open(sb.data(), sb.options()).await?;
    assert_eq!(
        reins.provider_defaults().await?,
        new,
        "defaults survive a restart"
    );
    let events = reins_tests::events(&reins, None).await?;
    let changed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "settings.changed")
        .collect();
    assert_eq!(
        changed.len(),
        3,
        "one audit event per changed setting: {changed:?}"
    );

    for bad in [
        ProviderDefaults {
            base_url: "file:///etc/passwd".into(),
            ..new.clone()
        },
        ProviderDefaults {
            base_url: "not a url".into(),
            ..new.clone()
        },
        ProviderDefaults {
            model: " ".into(),
            ..new.clone()
        },
        ProviderDefaults {
            key: Some("has space".into()),
            ..new.clone()
        },
    ] {
        let err = reins.set_provider_defaults(&bad).await.err();
        assert_eq!(
            err.map(|e| e.code().as_str()),
            Some("invalid_input"),
            "refused: {bad:?}"
        );
    }
    assert_eq!(
        reins.provider_defaults().await?,
        new,
        "a refused change leaves the stored one"
    );
    Ok(())
}

#[tokio::test]
async fn the_change_stamp_moves_with_changes_from_another_process() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let app = Reins::open(sb.data(), sb.options()).await?;
    let before = app.change_stamp().await?;
    assert_eq!(
        app.change_stamp().await?,
        before,
        "nothing changed, nothing moves"
    );
    // A second facade on the same data dir stands in for the CLI.
    let cli = Reins::open(sb.data(), sb.options()).await?;
    cli.memory_remember(NewFact {
        category: "style".into(),
        key: "indent".into(),
        value: "tabs".into(),
        confidence: None,
        origin: FactOrigin::User,
    })
    .await?;
    assert_ne!(
        app.change_stamp().await?,
        before,
        "a change made elsewhere is noticed"
    );
    Ok(())
}

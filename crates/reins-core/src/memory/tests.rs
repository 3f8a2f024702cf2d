use base64::Engine as _;

use super::*;

type TestResult = anyhow::Result<()>;

async fn store() -> anyhow::Result<(tempfile::TempDir, Store)> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("reins.db")).await?;
    Ok((dir, store))
}

fn user(category: &str, key: &str, value: &str) -> NewFact {
    NewFact {
        category: category.into(),
        key: key.into(),
        value: value.into(),
        confidence: None,
        origin: Origin::User,
    }
}

fn agent(category: &str, key: &str, value: &str, confidence: f64) -> NewFact {
    NewFact {
        category: category.into(),
        key: key.into(),
        value: value.into(),
        confidence: Some(confidence),
        origin: Origin::Agent {
            run: None,
            step: Some(4),
            source: Some(format!("the user wrote: I like {value}")),
        },
    }
}

/// Every byte of the database and its WAL.
fn db_bytes(store: &Store) -> anyhow::Result<Vec<u8>> {
    let mut bytes = std::fs::read(store.path())?;
    let mut wal = store.path().as_os_str().to_owned();
    wal.push("-wal");
    if let Ok(w) = std::fs::read(std::path::PathBuf::from(wal)) {
        bytes.extend(w);
    }
    Ok(bytes)
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

async fn kinds(store: &Store) -> anyhow::Result<Vec<String>> {
    Ok(audit::all(store.pool())
        .await?
        .into_iter()
        .map(|e| e.kind)
        .collect())
}

#[tokio::test]
async fn agent_facts_need_an_allowed_category_and_enough_confidence() -> TestResult {
    let (_dir, store) = store().await?;
    let sure = remember(&store, agent("language", "spoken", "French", 0.9)).await?;
    assert!(matches!(sure, Remembered::Stored { .. }), "{sure:?}");
    let unsure = remember(&store, agent("style", "tone", "terse", 0.5)).await?;
    let Remembered::Suggested { suggestion } = unsure else {
        anyhow::bail!("a low-confidence fact waits: {unsure:?}");
    };
    assert!(suggestion.reason.contains("below the threshold"));
    let odd = remember(&store, agent("hobby", "sport", "chess", 0.99)).await?;
    assert!(matches!(odd, Remembered::Suggested { .. }), "{odd:?}");
    let by_user = remember(&store, user("hobby", "sport", "chess")).await;
    assert!(
        matches!(by_user, Err(MemoryError::Invalid(_))),
        "{by_user:?}"
    );
    assert_eq!(list(&store, None, None).await?.len(), 1);
    assert_eq!(suggestions(&store).await?.len(), 2);

    // The threshold and categories are settings.
    configure(
        &store,
        None,
        Some(0.4),
        Some(vec!["style".into(), "hobby".into()]),
    )
    .await?;
    assert!(matches!(
        remember(&store, agent("style", "tone", "terse", 0.5)).await?,
        Remembered::Stored { .. }
    ));
    assert!(kinds(&store)
        .await?
        .contains(&"settings.changed".to_owned()));
    Ok(())
}

#[tokio::test]
async fn a_second_value_is_a_new_version_never_an_overwrite() -> TestResult {
    let (_dir, store) = store().await?;
    let Remembered::Stored { fact } = remember(&store, user("format", "dates", "ISO 8601")).await?
    else {
        anyhow::bail!("stored");
    };
    let again = remember(&store, user("format", "Dates", "ISO 8601")).await?;
    assert!(
        matches!(again, Remembered::Unchanged { .. }),
        "same value, same key (case-folded)"
    );
    remember(&store, agent("format", "dates", "DD/MM/YYYY", 0.95)).await?;
    edit(&store, &fact.id, "YYYY-MM-DD").await?;
    let detail = show(&store, &fact.id).await?;
    assert_eq!(detail.fact.version, 3);
    assert_eq!(detail.fact.value, "YYYY-MM-DD");
    let values: Vec<&str> = detail.history.iter().map(|v| v.value.as_str()).collect();
    assert_eq!(values, ["YYYY-MM-DD", "DD/MM/YYYY", "ISO 8601"]);
    assert_eq!(detail.history[1].origin, "agent");
    assert_eq!(detail.history[1].step_seq, Some(4));
    assert!(detail.history[1]
        .source_text
        .as_deref()
        .is_some_and(|s| s.contains("I like")));
    Ok(())
}

#[tokio::test]
async fn no_kind_of_secret_is_ever_stored() -> TestResult {
    let (_dir, store) = store().await?;
    let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let catalogue: Vec<(&str, String)> = vec![
        ("aws", "AKIAIOSFODNN7EXAMPLE".into()),
        ("openai", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0".into()),
        ("anthropic", "sk-ant-api03-q1w2e3r4t5y6u7i8o9p0asdfghjkl".into()),
        ("github", key.into()),
        ("github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv".into()),
        ("gitlab", "glpat-xYz12AbC34dEf56GhI78".into()),
        ("slack", "xoxb-1234567890-abcdefghijkl".into()),
        ("google", "AIzaSyA1234567890abcdefghijklmnopqrstuv".into()),
        ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc".into()),
        ("huggingface", "hf_abcdefghijklmnopqrstuvwxyzABCDEF12".into()),
        ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".into()),
        ("private key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yhb\n-----END EC PRIVATE KEY-----".into()),
        ("password", "my password: hunter2-horse".into()),
        ("connection string", "postgres://admin:Tr0ub4dor3@db.internal/app".into()),
        ("bearer", "Authorization: Bearer abc.def-ghi_jkl123456".into()),
        ("random", "Zk3vQ9xL2mR7tW1pN8sB4dF6hJ0gY5cA".into()),
        ("base64", base64::engine::general_purpose::STANDARD.encode(format!("token {key}"))),
        ("hex", hex::encode(key)),
    ];
    assert!(catalogue.len() >= 15);
    for (what, secret) in &catalogue {
        for fact in [
            user("preference", "editor", secret),
            user("preference", secret, "vim"),
            agent("preference", "editor", "vim", 0.9),
        ] {
            let mut fact = fact;
            if let Origin::Agent { source, .. } = &mut fact.origin {
                *source = Some(format!("pasted {secret}"));
            }
            let refused = remember(&store, fact).await;
            assert!(
                matches!(
                    refused,
                    Err(MemoryError::Secret { .. }) | Err(MemoryError::Invalid(_))
                ),
                "{what} must be refused: {refused:?}"
            );
        }
        store.anchor().flush();
        let bytes = db_bytes(&store)?;
        let probe = secret.lines().nth(1).unwrap_or(secret);
        assert!(!holds(&bytes, probe), "{what} reached the database file");
    }
    assert!(list(&store, None, None).await?.is_empty());
    assert!(suggestions(&store).await?.is_empty());
    let refusals = kinds(&store)
        .await?
        .iter()
        .filter(|k| *k == "memory.fact_refused")
        .count();
    assert!(
        refusals >= catalogue.len(),
        "each refusal is audited: {refusals}"
    );
    Ok(())
}

#[tokio::test]
async fn deleting_a_fact_removes_its_value_from_the_file() -> TestResult {
    let (_dir, store) = store().await?;
    let Remembered::Stored { fact } =
        remember(&store, user("workflow", "deploy", "zebra-marmalade-7731")).await?
    else {
        anyhow::bail!("stored");
    };
    edit(&store, &fact.id, "quokka-tangerine-5520").await?;
    let suggestion = remember(
        &store,
        agent("workflow", "review", "walrus-paprika-9034", 0.2),
    )
    .await?;
    let Remembered::Suggested { suggestion } = suggestion else {
        anyhow::bail!("suggested");
    };
    assert!(
        holds(&db_bytes(&store)?, "zebra-marmalade-7731"),
        "the probe works"
    );
    delete(&store, &fact.id).await?;
    dismiss(&store, &suggestion.id).await?;
    let bytes = db_bytes(&store)?;
    for gone in [
        "zebra-marmalade-7731",
        "quokka-tangerine-5520",
        "walrus-paprika-9034",
    ] {
        assert!(
            !holds(&bytes, gone),
            "{gone} is still in the database or its WAL"
        );
    }
    assert!(show(&store, &fact.id).await.is_err());
    let events = audit::all(store.pool()).await?;
    let deleted = events
        .iter()
        .find(|e| e.kind == "memory.fact_deleted")
        .map(|e| e.payload.clone())
        .unwrap_or_default();
    assert!(
        deleted.contains(&fact.id) && !deleted.contains("deploy"),
        "{deleted}"
    );
    Ok(())
}

#[tokio::test]
async fn clear_removes_everything_and_off_stops_agents() -> TestResult {
    let (_dir, store) = store().await?;
    remember(&store, user("language", "code", "Rust")).await?;
    remember(&store, agent("style", "tone", "terse", 0.1)).await?;
    assert_eq!(clear(&store).await?, (1, 1));
    assert!(list(&store, None, None).await?.is_empty());

    configure(&store, Some(false), None, None).await?;
    assert!(!settings(&store).await?.enabled);
    let refused = remember(&store, agent("language", "code", "Go", 0.99)).await;
    assert!(matches!(refused, Err(MemoryError::Off)), "{refused:?}");
    assert!(
        matches!(
            remember(&store, user("language", "code", "Go")).await?,
            Remembered::Stored { .. }
        ),
        "the user's own word still counts"
    );
    configure(&store, Some(true), None, None).await?;
    assert!(matches!(
        remember(&store, agent("language", "code", "Zig", 0.99)).await?,
        Remembered::Stored { .. }
    ));
    let k = kinds(&store).await?;
    for kind in [
        "memory.cleared",
        "memory.switched_off",
        "memory.switched_on",
        "memory.fact_added",
        "memory.fact_edited",
    ] {
        assert!(k.contains(&kind.to_owned()), "{kind} in {k:?}");
    }
    Ok(())
}

#[tokio::test]
async fn accepting_a_suggestion_keeps_where_it_came_from() -> TestResult {
    let (_dir, store) = store().await?;
    let Remembered::Suggested { suggestion } =
        remember(&store, agent("expertise", "db", "PostgreSQL", 0.3)).await?
    else {
        anyhow::bail!("suggested");
    };
    let Remembered::Stored { fact } = accept(&store, &suggestion.id).await? else {
        anyhow::bail!("stored");
    };
    assert_eq!((fact.origin.as_str(), fact.step_seq), ("agent", Some(4)));
    assert!(suggestions(&store).await?.is_empty());
    assert!(accept(&store, &suggestion.id).await.is_err(), "once");
    Ok(())
}

#[tokio::test]
async fn facts_reach_the_context_only_while_memory_is_on() -> TestResult {
    use crate::context::{assemble, Budget};
    let (_dir, store) = store().await?;
    remember(&store, user("language", "code", "Rust")).await?;
    let counter = crate::context::tokens::for_model("gpt-4o");
    let budget = Budget {
        window: 8000,
        reserved_output: 1000,
        tool_schemas: 500,
        margin: 100,
    };
    let items = for_context(&store, &counter).await?;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, "language.code: Rust");
    let on = assemble(budget, items, "o200k_base")?;
    assert_eq!(
        on.manifest.facts_used.len(),
        1,
        "the manifest says which facts were used"
    );
    configure(&store, Some(false), None, None).await?;
    let off = assemble(budget, for_context(&store, &counter).await?, "o200k_base")?;
    assert!(
        off.manifest.facts_used.is_empty() && off.manifest.entries.is_empty(),
        "off: no facts injected"
    );
    Ok(())
}

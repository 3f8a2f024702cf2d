use super::tokens::{for_model, TokenCounter};
use super::*;

fn item(id: &str, kind: Kind, tokens: usize) -> Item {
    Item {
        id: id.into(),
        kind,
        text: format!("<{id}>"),
        tokens,
        relevance: 0.5,
        importance: 0.5,
        age: 0,
        continuity: false,
        version: None,
        digest: None,
    }
}

fn budget(window: usize) -> Budget {
    Budget {
        window,
        reserved_output: window / 8,
        tool_schemas: window / 16,
        margin: window / 32,
    }
}

use crate::test_rng::Rng;

const KINDS: [Kind; 10] = [
    Kind::System,
    Kind::Policy,
    Kind::Goal,
    Kind::WorkingMemory,
    Kind::Fact,
    Kind::Summary,
    Kind::History,
    Kind::RecentTurn,
    Kind::ToolEvidence,
    Kind::Request,
];

#[test]
fn the_budget_holds_and_the_hard_layer_is_never_cut_whatever_the_input() {
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    for case in 0..3000 {
        let b = budget(256 + rng.below(32_000) as usize);
        let n = rng.below(60) as usize;
        let items: Vec<Item> = (0..n)
            .map(|i| {
                let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
                let hard_scale = if kind.is_hard() { 40 } else { 4000 };
                let tokens = rng.below(hard_scale) as usize;
                let mut it = item(&format!("c{case}i{i}"), kind, tokens);
                it.relevance = rng.unit();
                it.importance = rng.unit();
                it.age = rng.below(50) as u32;
                it.continuity = rng.below(2) == 0;
                it.version = (kind == Kind::Summary).then(|| rng.below(5) as u32);
                if kind == Kind::ToolEvidence && rng.below(2) == 0 {
                    it.digest = Some(Digest {
                        text: "summary [artifact]".into(),
                        tokens: rng.below(200) as usize,
                        artifact: "sha256:…".into(),
                    });
                }
                it
            })
            .collect();
        let hard: usize = items
            .iter()
            .filter(|i| i.kind.is_hard())
            .map(|i| i.tokens)
            .sum();
        match assemble(b, items.clone(), "test") {
            Err(ContextError::HardLayerTooLarge { hard: h, input, .. }) => {
                assert_eq!(h, hard);
                assert!(
                    hard > input,
                    "case {case}: refused only when the hard layer cannot fit"
                );
            }
            Ok(a) => {
                let m = &a.manifest;
                assert!(
                    m.used <= b.input(),
                    "case {case}: {} > {}",
                    m.used,
                    b.input()
                );
                assert_eq!(
                    m.entries.len(),
                    items.len(),
                    "case {case}: every candidate is accounted for"
                );
                for it in items.iter().filter(|i| i.kind.is_hard()) {
                    assert!(
                        m.entries
                            .iter()
                            .any(|e| e.id == it.id && e.fate == Fate::Included),
                        "case {case}: hard item {} cut",
                        it.id
                    );
                }
                for e in &m.entries {
                    assert!(
                        !e.why.to_string().is_empty(),
                        "case {case}: {} has no reason",
                        e.id
                    );
                }
                let facts: usize = m
                    .entries
                    .iter()
                    .filter(|e| e.kind == Kind::Fact)
                    .map(|e| e.used)
                    .sum();
                assert!(
                    facts <= b.input() * FACTS_SHARE_PCT / 100,
                    "case {case}: facts over their cap"
                );
                let used: usize = a.parts.len();
                let included = m.entries.iter().filter(|e| e.fate != Fate::Cut).count();
                assert!(used <= included);
            }
        }
    }
}

#[test]
fn the_best_scored_soft_items_win_and_the_prompt_reads_in_order() -> anyhow::Result<()> {
    let b = Budget {
        window: 1000,
        reserved_output: 200,
        tool_schemas: 100,
        margin: 0,
    };
    let mut relevant = item("relevant", Kind::History, 300);
    relevant.relevance = 1.0;
    relevant.age = 10;
    let mut stale = item("stale", Kind::History, 300);
    stale.relevance = 0.0;
    stale.importance = 0.0;
    stale.age = 40;
    let mut recent = item("recent", Kind::RecentTurn, 200);
    recent.continuity = true;
    let items = vec![
        item("request", Kind::Request, 50),
        stale,
        item("system", Kind::System, 100),
        relevant,
        recent,
    ];
    let a = assemble(b, items, "test")?;
    let ids: Vec<&str> = a.parts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["system", "relevant", "recent", "request"]);
    let stale = a
        .manifest
        .entries
        .iter()
        .find(|e| e.id == "stale")
        .ok_or_else(|| anyhow::anyhow!("stale"))?;
    assert_eq!(stale.fate, Fate::Cut);
    assert!(
        stale.why.to_string().contains("over budget"),
        "{}",
        stale.why
    );
    Ok(())
}

#[test]
fn only_the_newest_summary_goes_in_and_facts_stay_under_their_cap() -> anyhow::Result<()> {
    let mut old = item("summary-v1", Kind::Summary, 10);
    old.version = Some(1);
    old.relevance = 1.0;
    let mut new = item("summary-v2", Kind::Summary, 10);
    new.version = Some(2);
    let facts: Vec<Item> = (0..20)
        .map(|i| item(&format!("fact{i}"), Kind::Fact, 20))
        .collect();
    let mut items = vec![old, new];
    items.extend(facts);
    let a = assemble(budget(4000), items, "test")?;
    let fate = |id: &str| {
        a.manifest
            .entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| (e.fate, e.why.to_string()))
    };
    assert_eq!(fate("summary-v2").map(|f| f.0), Some(Fate::Included));
    let (f, why) = fate("summary-v1").ok_or_else(|| anyhow::anyhow!("v1"))?;
    assert_eq!(f, Fate::Cut);
    assert!(why.contains("superseded by v2"), "{why}");
    // 5% of the input budget (4000 − 500 − 250 − 125 = 3125) is 156 tokens: 7 facts of 20.
    assert_eq!(a.manifest.facts_used.len(), 7);
    assert!(fate("fact19").is_some_and(|(f, why)| f == Fate::Cut && why.contains("capped at 5%")));
    Ok(())
}

#[test]
fn large_tool_output_goes_in_as_its_summary_and_reference() -> anyhow::Result<()> {
    let mut big = item("build-log", Kind::ToolEvidence, 2000);
    big.digest = Some(Digest {
        text: "build failed: 3 errors in src/lib.rs [artifact sha256:ab12]".into(),
        tokens: 20,
        artifact: "sha256:ab12".into(),
    });
    let a = assemble(
        budget(4000),
        vec![item("request", Kind::Request, 10), big],
        "test",
    )?;
    let e = a
        .manifest
        .entries
        .iter()
        .find(|e| e.id == "build-log")
        .ok_or_else(|| anyhow::anyhow!("entry"))?;
    assert_eq!((e.fate, e.used), (Fate::Digested, 20));
    assert!(a
        .parts
        .iter()
        .any(|(_, t)| t.contains("artifact sha256:ab12")));
    Ok(())
}

#[test]
fn a_hard_layer_that_cannot_fit_is_refused_with_the_numbers() {
    let err = assemble(budget(1000), vec![item("goal", Kind::Goal, 900)], "test").err();
    assert!(
        matches!(
            err,
            Some(ContextError::HardLayerTooLarge {
                hard: 900,
                input: 782,
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn tokens_are_counted_by_the_models_own_tokenizer_or_a_stated_fallback() {
    let gpt = for_model("gpt-4o-mini");
    assert_eq!(gpt.name(), "o200k_base");
    assert_eq!(gpt.count("hello world"), 2);
    assert_eq!(for_model("gpt-4").name(), "cl100k_base");
    let llama = for_model("llama3.1:8b");
    assert!(
        llama.name().contains("fallback for llama3.1:8b"),
        "{}",
        llama.name()
    );
    let text = "fn main() { println!(\"hello\"); }";
    assert!(
        llama.count(text) > gpt.count(text),
        "the fallback errs on the side of room"
    );
}

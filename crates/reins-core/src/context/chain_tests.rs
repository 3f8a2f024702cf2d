use super::*;
use crate::context::Item;

use crate::test_rng::Rng;

fn hard(id: &str, kind: Kind, tokens: usize) -> Item {
    Item {
        id: id.into(),
        kind,
        text: String::new(),
        tokens,
        relevance: 1.0,
        importance: 1.0,
        age: 0,
        continuity: true,
        version: None,
        digest: None,
    }
}

/// The candidates an LLM run's call `n` hands the assembler, shaped as the agent makes them
/// (instructions, working memory that grows, every earlier turn older by one, the last three
/// recent, large tool results digested, an error now and then), with profile facts coming and
/// going and a summary replaced.
fn call(n: usize, turns: &[(usize, Option<usize>, bool)], facts: &[(String, usize)]) -> Vec<Item> {
    let mut items = vec![
        hard("system", Kind::System, 900),
        hard("policy", Kind::Policy, 300),
        hard("goal", Kind::Goal, 40),
        hard("working-memory", Kind::WorkingMemory, 20 + 3 * n.min(100)),
    ];
    for (i, &(tokens, digest, troubled)) in turns.iter().enumerate().take(n) {
        let age = n - 1 - i;
        let id = format!("turn-{}", i + 1);
        if age == 0 {
            items.push(hard(&id, Kind::Request, tokens));
            continue;
        }
        items.push(Item {
            id,
            kind: if age < 3 { Kind::RecentTurn } else { Kind::History },
            text: String::new(),
            tokens,
            relevance: 0.5,
            importance: if troubled { 0.8 } else { 0.4 },
            age: age as u32,
            continuity: true,
            version: None,
            digest: digest.map(|tokens| crate::context::Digest {
                text: String::new(),
                tokens,
                artifact: String::new(),
            }),
        });
    }
    for (id, tokens) in facts {
        items.push(Item {
            relevance: 0.5,
            importance: 0.5,
            continuity: false,
            ..hard(id, Kind::Fact, *tokens)
        });
    }
    if n > 40 {
        let version = (n / 40) as u32;
        for v in version.saturating_sub(1)..=version {
            items.push(Item {
                version: Some(v),
                relevance: 0.6,
                importance: 0.7,
                continuity: true,
                ..hard(&format!("summary-v{v}"), Kind::Summary, 200)
            });
        }
    }
    items
}

#[test]
fn a_200_call_run_rebuilds_every_manifest_exactly_from_records_that_do_not_grow() {
    let mut rng = Rng(0x5eed_0049);
    let turns: Vec<(usize, Option<usize>, bool)> = (0..200)
        .map(|_| {
            let big = rng.below(3) == 0;
            let tokens = if big { 1_200 + rng.below(2_000) as usize } else { 80 + rng.below(300) as usize };
            (tokens, big.then(|| 60 + rng.below(40) as usize), rng.below(10) == 0)
        })
        .collect();
    let mut facts: Vec<(String, usize)> = vec![("fact-a".into(), 12), ("fact-b".into(), 30)];
    let mut window = 16_384;
    let (mut writer, mut reader): (Option<Link>, Option<Link>) = (None, None);
    let (mut kept_bytes, mut whole_bytes) = (Vec::new(), Vec::new());
    for n in 1..=200 {
        match n {
            50 => facts.push(("fact-c".into(), 25)),
            120 => facts.retain(|(id, _)| id != "fact-a"),
            150 => window = 32_768,
            _ => {}
        }
        let budget = Budget {
            window,
            reserved_output: 1_024,
            tool_schemas: 700,
            margin: window / 50,
        };
        let items = call(n, &turns, &facts);
        let candidates: Vec<Candidate> = items.iter().map(Candidate::of).collect();
        let made = assemble(budget, items, "approx").expect("fits").manifest;
        let whole = made.for_the_record();
        let delta = Delta::between(writer.as_ref(), budget, "approx", &candidates, &made);
        // As stored and read back.
        let json = serde_json::to_string(&Record::Chained {
            delta: Box::new(delta),
        })
        .expect("serializes");
        kept_bytes.push(json.len());
        whole_bytes.push(serde_json::to_string(&whole).expect("serializes").len());
        let Record::Chained { delta } = serde_json::from_str(&json).expect("reads back") else {
            panic!("call {n}: read back as a whole manifest");
        };
        let this = Base {
            step: 2 * n as i64,
            written_at: 1_000 + n as i64,
        };
        let (rebuilt, link) = delta.rebuild(reader.as_ref(), this).expect("rebuilds");
        assert_eq!(rebuilt, whole, "call {n}");
        assert_eq!(link.candidates, candidates, "call {n}");
        reader = Some(link);
        writer = Some(Link {
            base: this,
            candidates,
        });
    }
    let tenth = kept_bytes[9];
    let last = *kept_bytes.iter().skip(190).max().expect("ten");
    assert!(
        last <= tenth * 2,
        "a record near the end ({last} bytes) is not much larger than the tenth's ({tenth})"
    );
    let (kept, whole): (usize, usize) = (kept_bytes.iter().sum(), whole_bytes.iter().sum());
    assert!(
        kept * 5 < whole,
        "kept {kept} bytes for manifests that take {whole} bytes whole"
    );
}

#[test]
fn a_record_whose_base_was_written_again_is_not_rebuilt_on_it() {
    let budget = Budget {
        window: 4_096,
        reserved_output: 256,
        tool_schemas: 0,
        margin: 64,
    };
    let record = |n: usize, prev: Option<&Link>| {
        let items = call(n, &[(100, None, false); 4], &[]);
        let candidates: Vec<Candidate> = items.iter().map(Candidate::of).collect();
        let made = assemble(budget, items, "approx").expect("fits").manifest;
        (Delta::between(prev, budget, "approx", &candidates, &made), candidates)
    };
    let (first, candidates) = record(1, None);
    assert!(first.base.is_none(), "the first record is whole");
    let old = Link {
        base: Base {
            step: 1,
            written_at: 10,
        },
        candidates,
    };
    let (second, _) = record(2, Some(&old));
    assert_eq!(second.base, Some(old.base));
    // Step 1 written again (the run resumed from before it): the second record is another branch.
    let again = first
        .rebuild(None, Base { step: 1, written_at: 20 })
        .expect("whole")
        .1;
    assert_eq!(
        second.rebuild(Some(&again), Base { step: 2, written_at: 21 }),
        Err(ChainError::Replaced(1))
    );
    assert!(second.rebuild(Some(&old), Base { step: 2, written_at: 11 }).is_ok());
}

#[test]
fn a_reordered_list_is_kept_whole() {
    let budget = Budget {
        window: 4_096,
        reserved_output: 256,
        tool_schemas: 0,
        margin: 64,
    };
    let items = call(3, &[(100, None, false); 3], &[]);
    let candidates: Vec<Candidate> = items.iter().map(Candidate::of).collect();
    let made = assemble(budget, items, "approx").expect("fits").manifest;
    let prev = Link {
        base: Base { step: 1, written_at: 1 },
        candidates: candidates.iter().rev().cloned().collect(),
    };
    let delta = Delta::between(Some(&prev), budget, "approx", &candidates, &made);
    assert!(delta.base.is_none());
    assert_eq!(delta.added.len(), candidates.len());
}

//! Context assembly at scale (median of repeated runs; the machine is shared and noisy).
//!
//!   cargo bench -p reins-core --bench context [-- ROUNDS]     (default 50)
//!
//! Candidates: 10,000 history items, 1,000 profile facts, 200 pieces of tool evidence, 3 summary
//! versions and the hard layer, with token counts computed once beforehand (as they are when an item
//! is stored). Budget: a 128k window, 8k reserved output, 6k tool schemas, 2k margin.
//! Goal: ≤ 10 ms per assembly. Also printed: o200k_base counting speed, the cost paid once per item.

#[path = "support/alloc.rs"]
mod alloc;

use std::time::Instant;

use reins_core::context::tokens::{for_model, TokenCounter};
use reins_core::context::{assemble, Budget, Digest, Item, Kind};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50)
        .max(1);
    let counter = for_model("gpt-4o");
    let sample = "The build failed in crates/reins-core/src/engine/effect.rs: expected `&str`, found `String`; \
                  the fix is to borrow the value before passing it to settle_effect.";
    let t = Instant::now();
    let mut counted = 0;
    for _ in 0..2000 {
        counted += counter.count(sample);
    }
    let per_item_us = t.elapsed().as_secs_f64() * 1e6 / 2000.0;
    let tokens = counted / 2000;

    let mut items = Vec::new();
    let mk = |id: String, kind: Kind, tokens: usize, age: u32, rel: f32| Item {
        id,
        kind,
        text: sample.to_owned(),
        tokens,
        relevance: rel,
        importance: 0.3,
        age,
        continuity: age < 5,
        version: None,
        digest: None,
    };
    for (kind, n) in [
        (Kind::System, 1200),
        (Kind::Policy, 600),
        (Kind::Goal, 80),
        (Kind::WorkingMemory, 900),
        (Kind::Request, 150),
    ] {
        items.push(mk(format!("{kind:?}"), kind, n, 0, 1.0));
    }
    for i in 0..10_000u32 {
        items.push(mk(
            format!("h{i}"),
            Kind::History,
            tokens + (i as usize % 60),
            10_000 - i,
            (i % 97) as f32 / 97.0,
        ));
    }
    for i in 0..1_000u32 {
        items.push(mk(
            format!("f{i}"),
            Kind::Fact,
            12 + (i as usize % 9),
            0,
            (i % 13) as f32 / 13.0,
        ));
    }
    for i in 0..200u32 {
        let mut it = mk(
            format!("t{i}"),
            Kind::ToolEvidence,
            500 + 90 * (i as usize % 50),
            200 - i,
            0.6,
        );
        it.digest = Some(Digest {
            text: "summary [artifact]".into(),
            tokens: 40,
            artifact: format!("sha256:{i:064x}"),
        });
        items.push(it);
    }
    for v in 1..=3 {
        let mut s = mk(format!("s{v}"), Kind::Summary, 1500, 0, 0.9);
        s.version = Some(v);
        items.push(s);
    }
    let budget = Budget {
        window: 128_000,
        reserved_output: 8_000,
        tool_schemas: 6_000,
        margin: 2_000,
    };
    let n = items.len();
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..rounds {
        let batch = items.clone();
        let t = Instant::now();
        let a = assemble(budget, batch, counter.name());
        times.push(t.elapsed().as_secs_f64() * 1e3);
        last = a.ok();
    }
    let m = median(times);
    let Some(a) = last else {
        println!("assembly refused");
        return;
    };
    let included = a
        .manifest
        .entries
        .iter()
        .filter(|e| e.fate != reins_core::context::Fate::Cut)
        .count();
    println!(
        "candidates: {n}; input budget {} tokens; used {}; {} items in, {} cut; {} facts used",
        a.manifest.input_budget,
        a.manifest.used,
        included,
        n - included,
        a.manifest.facts_used.len()
    );
    println!(
        "assemble: median {m:.2} ms over {rounds} rounds   goal <= 10 ms {}",
        if m <= 10.0 { "MET" } else { "MISSED" }
    );
    println!("token counting (o200k_base, once per stored item): {per_item_us:.1} us for a {tokens}-token item");
}

//! Audit log benchmarks at scale (medians over rounds; the machine is shared and noisy).
//!
//!   cargo bench -p reins-core --bench audit [-- EVENTS ROUNDS]     (defaults 1000000 3)
//!
//! A log of EVENTS events (`policy.decided` and `step.finished` with its verdict, ~350 bytes each) is
//! written once. Then,
//! each round, in the same process on the same database:
//! - baselines: a plain `SELECT` of every column of every event in seq order, through sqlx (rows
//!   decoded into owned values, as the app's queries read) and through rusqlite (rows read in place,
//!   one thread: the floor for any reader of this table);
//! - `verify`: the whole chain walked, every hash recomputed, every event's MAC checked under the
//!   audit key (the log is written keyed, as under a keyring), checked against the head anchor
//!   (goal ≥ 500,000 events/s); and the same walk with no key at hand (MACs not checked), for the
//!   cost of the MACs;
//! - JSONL export of every event, with the secret re-scan, to a file fsynced and moved into place
//!   (goal ≥ 200,000 events/s);
//! - one page of `audit list --kind policy` from the newest end, and one from the middle.

#[path = "support/alloc.rs"]
mod alloc;

use std::time::Instant;

use futures_util::TryStreamExt as _;
use reins_core::audit::{self, ExportRequest, PageRequest};
use reins_core::event::{self as ev, ExportFormat, Filter, Kind};
use reins_core::policy::{Decision, Risk, Verdict};
use reins_core::step::StepStatus;
use reins_core::store::audit::{append_all, Actor, AuditRow, Event};
use reins_core::store::Store;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A `policy.decided` event for even `i`, a `step.finished` carrying the same verdict for odd.
fn event(i: usize) -> Event {
    let action_hash = format!("{:064x}", i as u128 * 0x9e37_79b9_7f4a_7c15);
    let reasons = vec![
        "writes docs/incidents/2026-11-28-disk-full.md inside the workspace".to_owned(),
        "rule: every change is reviewed".to_owned(),
    ];
    let kind = if i.is_multiple_of(2) {
        Kind::from(ev::PolicyDecided {
            step: (i % 500) as i64,
            tool: "fs.write".into(),
            action_hash,
            risk: Risk::Medium,
            decision: Decision::Ask,
            reasons,
            policy: "rules/1:e3b0c44298fc".into(),
        })
    } else {
        Kind::from(ev::StepFinished {
            step: (i % 500) as i64,
            tool: "fs.write".into(),
            status: StepStatus::Done,
            action_hash,
            verdict: Some(Verdict {
                on_timeout: None,
                risk: Risk::Medium,
                decision: Decision::Ask,
                reasons,
                segments: Vec::new(),
            }),
            approval: None,
        })
    };
    Event::new(Actor::Harness, None, kind)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(1_000_000);
    let rounds = args.get(1).copied().unwrap_or(3).max(1);
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("reins.db")).await?;
    // Every event carries a MAC, as under a keyring.
    store.use_keys(std::sync::Arc::new(
        reins_core::api::MemorySecrets::default(),
    ));
    // The same database, with no key at hand.
    let keyless = Store::open(&dir.path().join("reins.db")).await?;

    let started = Instant::now();
    let batch = 2_000;
    let mut written = 0;
    while written < events {
        let n = batch.min(events - written);
        let list: Vec<Event> = (written..written + n).map(event).collect();
        let mut tx = store.begin().await?;
        append_all(&mut tx, None, &list, 1_700_000_000_000 + written as i64).await?;
        tx.commit().await?;
        written += n;
        if written % 200_000 == 0 {
            eprintln!("  … {written} events written");
        }
    }
    let size = std::fs::metadata(store.path())?.len();
    println!(
        "log: {events} events, {:.0} MB, written in {:.1} s",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let mut unkeyed = Vec::new();
    let (mut base, mut raw, mut ver, mut exp, mut page_new, mut page_mid) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for round in 0..rounds {
        let t = Instant::now();
        let mut rows = sqlx::query_as::<_, AuditRow>(
            "SELECT seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash, mac
             FROM audit_events ORDER BY seq",
        )
        .fetch(store.pool());
        let mut n = 0u64;
        while let Some(row) = rows.try_next().await? {
            n += u64::from(row.seq > 0);
        }
        drop(rows);
        base.push(n as f64 / t.elapsed().as_secs_f64());

        let t = Instant::now();
        let mut n = 0u64;
        let source = store.scan_source()?;
        reins_core::store::scan::events_between(&source, 0, i64::MAX, |row| {
            n += u64::from(row.seq > 0);
            Ok(true)
        })?;
        raw.push(n as f64 / t.elapsed().as_secs_f64());

        let t = Instant::now();
        let v = audit::verify::verify(&store).await?;
        anyhow::ensure!(
            v.intact && v.events >= events as i64 && v.keys.vouched >= events as i64,
            "the log verifies, every MAC holding: {v:?}"
        );
        ver.push(v.events as f64 / t.elapsed().as_secs_f64());

        let t = Instant::now();
        let v = audit::verify::verify(&keyless).await?;
        anyhow::ensure!(v.intact && v.keys.vouched == 0, "no MAC checked: {v:?}");
        unkeyed.push(v.events as f64 / t.elapsed().as_secs_f64());

        let out = dir.path().join(format!("export-{round}.jsonl"));
        let t = Instant::now();
        let s = audit::export::export(
            &store,
            &ExportRequest {
                format: ExportFormat::Jsonl,
                out: out.clone(),
                filter: Filter::default(),
                overwrite: false,
            },
            &mut |_, _| {},
        )
        .await?;
        exp.push(s.count as f64 / t.elapsed().as_secs_f64());
        std::fs::remove_file(&out)?;

        let mut req = PageRequest {
            filter: Filter {
                kind: Some("policy".into()),
                ..Filter::default()
            },
            limit: Some(50),
            ..PageRequest::default()
        };
        let t = Instant::now();
        let p = audit::query::page(&store, &req).await?;
        page_new.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(p.events.len() == 50);
        req.before = Some(events as i64 / 2);
        let t = Instant::now();
        audit::query::page(&store, &req).await?;
        page_mid.push(t.elapsed().as_secs_f64() * 1e3);
        eprintln!("  round {} done", round + 1);
    }
    let (base, raw, ver, exp) = (median(base), median(raw), median(ver), median(exp));
    let unkeyed = median(unkeyed);
    println!("baseline: plain SELECT scan, sqlx          {base:>10.0} events/s");
    println!("baseline: plain SELECT scan, rusqlite      {raw:>10.0} events/s   (one thread, rows read in place)");
    println!(
        "verify (chain + anchor + MACs)             {ver:>10.0} events/s   {:.2}x the sqlx scan, {:.2}x the rusqlite scan   goal >= 500000 {}",
        ver / base,
        ver / raw,
        if ver >= 500_000.0 { "MET" } else { "MISSED" }
    );
    println!(
        "verify, MACs not checked (no key at hand)  {unkeyed:>10.0} events/s   checking the MACs costs {:.2}x",
        unkeyed / ver
    );
    println!(
        "export JSONL (+ secret re-scan)            {exp:>10.0} events/s   {:.2}x the sqlx scan, {:.2}x the rusqlite scan   goal >= 200000 {}",
        exp / base,
        exp / raw,
        if exp >= 200_000.0 { "MET" } else { "MISSED" }
    );
    println!(
        "audit list --kind policy, 50 rows: newest page {:.2} ms, page from the middle {:.2} ms",
        median(page_new),
        median(page_mid)
    );
    println!("(medians of {rounds} rounds)");
    Ok(())
}

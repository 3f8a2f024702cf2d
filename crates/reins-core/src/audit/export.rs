//! Exporting the log to a file, and checking an exported file on its own.
//!
//! **JSONL**: one event per line, then one manifest line. An event line:
//! `{"seq","at" (Unix ms),"time" (RFC 3339 UTC),"actor","kind","run"?,"step"?,"approval"?,
//! "payload" (the stored JSON, byte for byte),"prevHash","hash","redacted"?}`. The manifest:
//! `{"manifest":{"format":"reins-audit-export/1","count","firstSeq","lastSeq","head":{seq,hash}
//! (the log's head when exported),"filter","exportedAt","reins","redactedOnExport",
//! "sha256" (of every byte before the manifest line)}}`. Each event's hash can be recomputed from
//! the line; consecutive seqs must link; the manifest pins the count and the bytes.
//!
//! **CSV** (RFC 4180, header row, stable columns): `seq,time,at_ms,actor,kind,run_id,step_seq,
//! approval_id,payload,prev_hash,hash,redacted`.
//!
//! Checking a file on its own is `exported::verify_export`.
//!
//! The file is written to a temporary name beside the target, fsynced, then moved into place (and
//! the directory fsynced): a crash leaves the complete file or none. An existing target is only
//! replaced when asked. Payloads are scanned for secrets again on the way out; an event redacted
//! then is marked `redacted` (its content no longer gives its hash; its place in the chain does).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::export_file::{Target, Writer};
use crate::error::{Error, Result};
use crate::event::{ExportFormat, Filter, Mark};
use crate::store::audit_read;
use crate::store::scan::{self, EventRef};
use crate::store::Store;

pub const FORMAT: &str = "reins-audit-export/1";

/// Seqs per stretch handed to a formatting thread.
const BATCH_SEQS: i64 = 4096;

#[derive(Clone, Debug)]
pub struct ExportRequest {
    pub format: ExportFormat,
    pub out: PathBuf,
    pub filter: Filter,
    /// Replace an existing file at `out` (otherwise that is an error).
    pub overwrite: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ExportSummary {
    pub path: String,
    pub format: ExportFormat,
    pub count: u64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub head: Option<Mark>,
    pub bytes: u64,
    /// SHA-256 of the whole file.
    pub sha256: String,
    pub redacted_on_export: u64,
    pub elapsed_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Manifest {
    pub format: String,
    pub count: u64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub head: Option<Mark>,
    pub filter: Filter,
    pub exported_at: String,
    pub reins: String,
    pub redacted_on_export: u64,
    pub sha256: String,
}

/// One event line, borrowed for writing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    seq: i64,
    at: i64,
    time: String,
    actor: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<&'a str>,
    payload: &'a RawValue,
    prev_hash: &'a str,
    hash: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    redacted: bool,
}

/// Writes the events `req.filter` selects to `req.out`. `progress(done, total)` is called every few
/// thousand events and at the end.
pub async fn export(
    store: &Store,
    req: &ExportRequest,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<ExportSummary> {
    let started = std::time::Instant::now();
    req.filter.validate().map_err(Error::Invalid)?;
    let target = Target::prepare(&req.out, req.overwrite)?;
    store.anchor().flush();
    let head: Option<Mark> = audit_read::head(store.pool()).await?;
    let head_seq = head.as_ref().map_or(0, |h| h.seq);
    let total = audit_read::count(store.pool(), &req.filter, head_seq).await?;

    // The rows are read and formatted by two threads, each taking every other stretch of seqs on a
    // read-only connection of its own (see `store::scan`); this thread writes the stretches in
    // order. Progress comes back through a watch channel.
    let lo = audit_read::min_seq(store.pool()).await?;
    let mut stretches = Vec::new();
    let mut from = lo.unwrap_or(1);
    while from <= head_seq {
        let to = from
            .saturating_add(BATCH_SEQS)
            .min(head_seq.saturating_add(1));
        stretches.push((from, to));
        from = to;
    }
    let filter = req.filter.clone();
    let db = store.scan_source()?;
    let format = req.format;
    let mut out = Writer::new(&target.partial, format)?;
    let (tell, mut told) = tokio::sync::watch::channel(0u64);
    progress(0, total);
    let mut work = tokio::task::spawn_blocking(move || {
        let mut sum = Batch::default();
        std::thread::scope(|scope| {
            let workers = stretches.len().clamp(1, 2);
            let mut inbox = Vec::new();
            for w in 0..workers {
                let (send, receive) = std::sync::mpsc::sync_channel::<Result<Batch>>(2);
                inbox.push(receive);
                let mine: Vec<(i64, i64)> =
                    stretches.iter().skip(w).step_by(workers).copied().collect();
                let (db, filter) = (&db, &filter);
                scope.spawn(move || {
                    let reader = match scan::Reader::open(db) {
                        Ok(r) => r,
                        Err(e) => {
                            let _ = send.send(Err(e.into()));
                            return;
                        }
                    };
                    for (from, to) in mine {
                        let batch = format_batch(&reader, (from, to), filter, format);
                        let failed = batch.is_err();
                        // The writer stopped (an error): nothing more to do.
                        if send.send(batch).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            for k in 0..stretches.len() {
                let batch = inbox[k % workers]
                    .recv()
                    .map_err(|_| Error::Invalid("an export thread stopped".into()))??;
                out.write_all(&batch.bytes)?;
                sum.count += batch.count;
                sum.redacted += batch.redacted;
                if sum.first.is_none() {
                    sum.first = batch.first;
                }
                sum.last = batch.last.or(sum.last);
                tell.send_replace(sum.count);
            }
            Ok::<_, Error>(())
        })?;
        Ok::<_, Error>((out, sum.count, sum.first, sum.last, sum.redacted))
    });
    let done = loop {
        tokio::select! {
            finished = &mut work => break finished,
            changed = told.changed() => {
                if changed.is_ok() {
                    let n = *told.borrow_and_update();
                    progress(n, total);
                }
            }
        }
    };
    let (out, count, first_seq, last_seq, redacted) =
        done.map_err(|e| Error::Invalid(format!("the export task failed: {e}")))??;
    let manifest = Manifest {
        format: FORMAT.into(),
        count,
        first_seq,
        last_seq,
        head: head.clone(),
        filter: req.filter.clone(),
        exported_at: super::utc(crate::clock::now_ms()),
        reins: env!("CARGO_PKG_VERSION").into(),
        redacted_on_export: redacted,
        sha256: String::new(),
    };
    let (bytes, sha256) = out.finish(manifest)?;
    progress(count, total);
    crate::fault_point!("export_before_rename");
    target.persist()?;

    let summary = ExportSummary {
        path: req.out.display().to_string(),
        format: req.format,
        count,
        first_seq,
        last_seq,
        head,
        bytes,
        sha256,
        redacted_on_export: redacted,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    super::record_by_user(
        store,
    crate::event::AuditExported {
        format: req.format,
        path: summary.path.clone(),
        count,
        first_seq,
        last_seq,
        head: summary.head.clone(),
        sha256: summary.sha256.clone(),
        filter: req.filter.clone(),
        redacted_on_export: redacted,
    },
    )
    .await?;
    Ok(summary)
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 12] = [
    "seq",
    "time",
    "at_ms",
    "actor",
    "kind",
    "run_id",
    "step_seq",
    "approval_id",
    "payload",
    "prev_hash",
    "hash",
    "redacted",
];

/// Formatted events of one stretch of seqs.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    count: u64,
    first: Option<i64>,
    last: Option<i64>,
    redacted: u64,
}

/// Reads and formats the events of one stretch of seqs that `filter` selects.
fn format_batch(
    reader: &scan::Reader,
    (from, to): (i64, i64),
    filter: &Filter,
    format: ExportFormat,
) -> Result<Batch> {
    let mut batch = Batch {
        bytes: Vec::with_capacity(1 << 20),
        ..Batch::default()
    };
    let mut csv_out = (format == ExportFormat::Csv).then(|| {
        csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::with_capacity(1 << 20))
    });
    let mut failure = None;
    reader.events_between(from, to, filter, |row| {
        let cleaned = crate::secrets::redact_json_str(row.payload);
        let redacted = cleaned.is_some();
        let payload_text = cleaned.as_deref().unwrap_or(row.payload);
        let written = match csv_out.as_mut() {
            None => json_line(&mut batch.bytes, &row, payload_text, redacted),
            Some(w) => {
                let seq = row.seq.to_string();
                let at = row.at.to_string();
                let step = row.step_seq.map(|s| s.to_string()).unwrap_or_default();
                w.write_record([
                    seq.as_str(),
                    &super::utc(row.at),
                    &at,
                    row.actor,
                    row.kind,
                    row.run_id.unwrap_or(""),
                    &step,
                    row.approval_id.unwrap_or(""),
                    payload_text,
                    row.prev_hash,
                    row.hash,
                    if redacted { "true" } else { "false" },
                ])
                .map_err(|e| Error::Invalid(format!("CSV: {e}")))
            }
        };
        if let Err(e) = written {
            failure = Some(e);
            return Ok(false);
        }
        batch.count += 1;
        batch.redacted += u64::from(redacted);
        batch.first.get_or_insert(row.seq);
        batch.last = Some(row.seq);
        Ok(true)
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(w) = csv_out {
        batch.bytes = w
            .into_inner()
            .map_err(|e| Error::Invalid(format!("CSV: {e}")))?;
    }
    Ok(batch)
}

/// One JSONL event line appended to `buf`.
fn json_line(
    buf: &mut Vec<u8>,
    row: &EventRef<'_>,
    payload_text: &str,
    redacted: bool,
) -> Result<()> {
    let quoted;
    let payload: &RawValue = match serde_json::from_str(payload_text) {
        Ok(raw) => raw,
        // Not JSON (only a damaged log has that): carried as a string, so nothing is lost.
        Err(_) => {
            quoted = serde_json::value::to_raw_value(payload_text)
                .map_err(|e| Error::Invalid(e.to_string()))?;
            &quoted
        }
    };
    serde_json::to_writer(
        &mut *buf,
        &Line {
            seq: row.seq,
            at: row.at,
            time: super::utc(row.at),
            actor: row.actor,
            kind: row.kind,
            run: row.run_id,
            step: row.step_seq,
            approval: row.approval_id,
            payload,
            prev_hash: row.prev_hash,
            hash: row.hash,
            redacted,
        },
    )
    .map_err(|e| Error::Invalid(e.to_string()))?;
    buf.push(b'\n');
    Ok(())
}

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
//! The file is written to a temporary name beside the target, fsynced, then moved into place (and
//! the directory fsynced): a crash leaves the complete file or none. An existing target is only
//! replaced when asked. Payloads are scanned for secrets again on the way out; an event redacted
//! then is marked `redacted` (its content no longer gives its hash; its place in the chain does).

use std::fs::File;
use std::io::{BufRead as _, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use futures_util::TryStreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::Filter;
use crate::error::{Error, Result};
use crate::store::anchor::Mark;
use crate::store::audit::{self, AuditRow, GENESIS};
use crate::store::Store;

pub const FORMAT: &str = "reins-audit-export/1";

/// How often (in events) progress is reported.
const PROGRESS_EVERY: u64 = 8192;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

impl ExportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Csv => "csv",
        }
    }
}

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

/// One event line, read back.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OwnedLine {
    seq: i64,
    at: i64,
    #[allow(dead_code)]
    time: String,
    actor: String,
    kind: String,
    run: Option<String>,
    step: Option<i64>,
    approval: Option<String>,
    payload: Box<RawValue>,
    prev_hash: String,
    hash: String,
    #[serde(default)]
    redacted: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestLine {
    manifest: Manifest,
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
    let head: Option<Mark> = sqlx::query_as::<_, (i64, String)>(
        "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1",
    )
    .fetch_optional(store.pool())
    .await
    .map_err(crate::store::StoreError::from)?
    .map(|(seq, hash)| Mark { seq, hash });
    let head_seq = head.as_ref().map_or(0, |h| h.seq);

    let mut count_q = sqlx::QueryBuilder::new("SELECT COUNT(*) FROM audit_events WHERE seq <= ");
    count_q.push_bind(head_seq);
    req.filter.push_conditions(&mut count_q);
    let total: i64 = count_q
        .build_query_scalar()
        .fetch_one(store.pool())
        .await
        .map_err(crate::store::StoreError::from)?;
    let total = u64::try_from(total).unwrap_or(0);

    let mut q = sqlx::QueryBuilder::new(
        "SELECT seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash
         FROM audit_events WHERE seq <= ",
    );
    q.push_bind(head_seq);
    req.filter.push_conditions(&mut q);
    q.push(" ORDER BY seq");
    let mut rows = q.build_query_as::<AuditRow>().fetch(store.pool());

    let mut out = Writer::new(&target.partial, req.format)?;
    let (mut count, mut first_seq, mut last_seq, mut redacted) = (0u64, None, None, 0u64);
    progress(0, total);
    while let Some(row) = rows
        .try_next()
        .await
        .map_err(crate::store::StoreError::from)?
    {
        if out.event(&row)? {
            redacted += 1;
        }
        count += 1;
        first_seq.get_or_insert(row.seq);
        last_seq = Some(row.seq);
        if count % PROGRESS_EVERY == 0 {
            progress(count, total);
        }
    }
    drop(rows);
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
    target.commit()?;

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
    let mut tx = store.begin().await?;
    audit::append(
        &mut tx,
        audit::Actor::User,
        "audit.exported",
        None,
        &serde_json::json!({
            "format": req.format, "path": summary.path, "count": count, "firstSeq": first_seq,
            "lastSeq": last_seq, "head": summary.head, "sha256": summary.sha256,
            "filter": req.filter, "redactedOnExport": redacted,
        }),
        crate::clock::now_ms(),
    )
    .await?;
    tx.commit().await.map_err(crate::store::StoreError::from)?;
    Ok(summary)
}

/// The target path and the temporary file beside it.
struct Target {
    out: PathBuf,
    partial: PathBuf,
    overwrite: bool,
}

impl Target {
    fn prepare(out: &Path, overwrite: bool) -> Result<Self> {
        let io = |context: String| move |source| Error::Io { context, source };
        let name = out
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::Invalid(format!("{}: not a file name", out.display())))?;
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: the folder does not exist",
                dir.display()
            )));
        }
        if out.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: is a folder; give a file name",
                out.display()
            )));
        }
        if out.exists() && !overwrite {
            return Err(Error::Conflict(format!(
                "{}: already exists; choose another name or pass --force to replace it",
                out.display()
            )));
        }
        // Partial files of exports that died are removed (never one still being written).
        let prefix = format!(".{name}.reins-partial-");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let file = entry.file_name();
                let Some(pid) = file
                    .to_str()
                    .and_then(|f| f.strip_prefix(&prefix))
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                if pid != std::process::id() && crate::process::start_time(pid).is_none() {
                    std::fs::remove_file(entry.path())
                        .map_err(io(format!("removing {}", entry.path().display())))?;
                }
            }
        }
        let partial = dir.join(format!("{prefix}{}", std::process::id()));
        Ok(Self {
            out: out.to_owned(),
            partial,
            overwrite,
        })
    }

    /// Moves the finished file into place; without `overwrite`, never over an existing file.
    fn commit(&self) -> Result<()> {
        let moved = if self.overwrite {
            std::fs::rename(&self.partial, &self.out)
        } else {
            // A hard link fails if the target appeared meanwhile; then the partial goes away.
            std::fs::hard_link(&self.partial, &self.out)
                .and_then(|()| std::fs::remove_file(&self.partial))
        };
        if let Err(source) = moved {
            let _ = std::fs::remove_file(&self.partial);
            return Err(if source.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Conflict(format!(
                    "{}: appeared while exporting; nothing was replaced",
                    self.out.display()
                ))
            } else {
                Error::Io {
                    context: format!("moving the export into place at {}", self.out.display()),
                    source,
                }
            });
        }
        if let Some(dir) = self.partial.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|source| Error::Io {
                    context: format!("syncing {}", dir.display()),
                    source,
                })?;
        }
        Ok(())
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // Gone already after a commit; after an error, the partial file must not stay.
        let _ = std::fs::remove_file(&self.partial);
    }
}

/// Writes lines, hashing every byte.
struct Writer {
    file: BufWriter<Hashing<File>>,
    format: ExportFormat,
    line: Vec<u8>,
    path: PathBuf,
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    inner: W,
    sha: sha2::Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Writer {
    fn new(path: &Path, format: ExportFormat) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| Error::Io {
                context: format!("creating {}", path.display()),
                source,
            })?;
        let mut w = Self {
            file: BufWriter::with_capacity(
                1 << 18,
                Hashing {
                    inner: file,
                    sha: sha2::Digest::new(),
                    bytes: 0,
                },
            ),
            format,
            line: Vec::with_capacity(4096),
            path: path.to_owned(),
        };
        if format == ExportFormat::Csv {
            w.write_csv(&[
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
            ])?;
        }
        Ok(w)
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            context: format!("writing {}", self.path.display()),
            source,
        }
    }

    /// Writes one event; true when its payload had to be redacted on the way out.
    fn event(&mut self, row: &AuditRow) -> Result<bool> {
        let cleaned = crate::secrets::redact_json_str(&row.payload);
        let redacted = cleaned.is_some();
        let payload_text = cleaned.as_deref().unwrap_or(&row.payload);
        match self.format {
            ExportFormat::Jsonl => {
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
                self.line.clear();
                serde_json::to_writer(
                    &mut self.line,
                    &Line {
                        seq: row.seq,
                        at: row.at,
                        time: super::utc(row.at),
                        actor: &row.actor,
                        kind: &row.kind,
                        run: row.run_id.as_deref(),
                        step: row.step_seq,
                        approval: row.approval_id.as_deref(),
                        payload,
                        prev_hash: &row.prev_hash,
                        hash: &row.hash,
                        redacted,
                    },
                )
                .map_err(|e| Error::Invalid(e.to_string()))?;
                self.line.push(b'\n');
                let line = std::mem::take(&mut self.line);
                let written = self.file.write_all(&line);
                self.line = line;
                written.map_err(|e| self.io(e))?;
            }
            ExportFormat::Csv => {
                let seq = row.seq.to_string();
                let at = row.at.to_string();
                let step = row.step_seq.map(|s| s.to_string()).unwrap_or_default();
                self.write_csv(&[
                    &seq,
                    &super::utc(row.at),
                    &at,
                    &row.actor,
                    &row.kind,
                    row.run_id.as_deref().unwrap_or(""),
                    &step,
                    row.approval_id.as_deref().unwrap_or(""),
                    payload_text,
                    &row.prev_hash,
                    &row.hash,
                    if redacted { "true" } else { "false" },
                ])?;
            }
        }
        Ok(redacted)
    }

    fn write_csv(&mut self, fields: &[&str]) -> Result<()> {
        self.line.clear();
        {
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(&mut self.line);
            w.write_record(fields)
                .and_then(|()| w.flush().map_err(csv::Error::from))
                .map_err(|e| Error::Invalid(format!("CSV: {e}")))?;
        }
        let line = std::mem::take(&mut self.line);
        let written = self.file.write_all(&line);
        self.line = line;
        written.map_err(|e| self.io(e))
    }

    /// Adds the manifest (JSONL), flushes and fsyncs; returns the file's size and SHA-256.
    fn finish(mut self, mut manifest: Manifest) -> Result<(u64, String)> {
        use sha2::Digest as _;
        self.file.flush().map_err(|e| self.io(e))?;
        if self.format == ExportFormat::Jsonl {
            manifest.sha256 = hex::encode(self.file.get_ref().sha.clone().finalize());
            let mut line = serde_json::to_vec(&serde_json::json!({ "manifest": manifest }))
                .map_err(|e| Error::Invalid(e.to_string()))?;
            line.push(b'\n');
            self.file.write_all(&line).map_err(|e| self.io(e))?;
            self.file.flush().map_err(|e| self.io(e))?;
        }
        let hashing = self.file.get_ref();
        let (bytes, sha) = (hashing.bytes, hex::encode(hashing.sha.clone().finalize()));
        hashing.inner.sync_all().map_err(|e| self.io(e))?;
        Ok((bytes, sha))
    }
}

/// What checking an exported file found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportCheck {
    pub ok: bool,
    pub path: String,
    pub events: u64,
    pub manifest: Option<Manifest>,
    /// Events the export redacted: their place in the chain is checked, their content cannot be.
    pub redacted: u64,
    /// The first problem: the line it is on (1-based) and what is wrong.
    pub problem: Option<ExportProblem>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportProblem {
    pub line: u64,
    pub seq: Option<i64>,
    pub detail: String,
}

/// Checks a JSONL export on its own: every line parses, every event's hash follows from its
/// fields, consecutive seqs link, and the manifest's count, seqs and SHA-256 match the file.
pub fn verify_export(path: &Path) -> Result<ExportCheck> {
    use sha2::Digest as _;
    let file = File::open(path).map_err(|source| Error::Io {
        context: format!("opening {}", path.display()),
        source,
    })?;
    let mut reader = BufReader::with_capacity(1 << 18, file);
    let mut check = ExportCheck {
        ok: false,
        path: path.display().to_string(),
        events: 0,
        manifest: None,
        redacted: 0,
        problem: None,
    };
    let fail = |mut check: ExportCheck, line: u64, seq: Option<i64>, detail: String| {
        check.problem = Some(ExportProblem { line, seq, detail });
        Ok(check)
    };
    let mut sha = sha2::Sha256::new();
    let mut buf = Vec::with_capacity(4096);
    let mut canon = Vec::with_capacity(4096);
    let mut prev: Option<(i64, String)> = None;
    let (mut first, mut last) = (None, None);
    let mut gaps = false;
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| Error::Io {
                context: format!("reading {}", path.display()),
                source,
            })?;
        if read == 0 {
            return fail(check, n, None, "the file ends without a manifest line: it is cut short or not a Reins JSONL export".into());
        }
        n += 1;
        if buf.starts_with(b"{\"manifest\"") {
            let m: ManifestLine = match serde_json::from_slice(&buf) {
                Ok(m) => m,
                Err(e) => return fail(check, n, None, format!("the manifest does not parse: {e}")),
            };
            let rest = reader.fill_buf().map(|b| b.is_empty()).unwrap_or(false);
            let m = m.manifest;
            let digest = hex::encode(sha.clone().finalize());
            let problem = if !rest {
                Some("there is more after the manifest line".to_owned())
            } else if m.format != FORMAT {
                Some(format!("unknown format {:?}", m.format))
            } else if m.count != check.events {
                Some(format!(
                    "the manifest counts {} events; the file has {}",
                    m.count, check.events
                ))
            } else if m.first_seq != first || m.last_seq != last {
                Some(format!(
                    "the manifest says seqs {:?}–{:?}; the file has {first:?}–{last:?}",
                    m.first_seq, m.last_seq
                ))
            } else if m.sha256 != digest {
                Some("the events' bytes do not match the manifest's SHA-256: the file was changed after export".to_owned())
            } else if m.filter.is_empty() && (gaps || first.is_some_and(|f| f != 1)) {
                Some(
                    "an unfiltered export must hold every event from seq 1 on, without gaps"
                        .to_owned(),
                )
            } else if m.filter.is_empty()
                && m.head.as_ref().map(|h| (h.seq, h.hash.as_str()))
                    != prev.as_ref().map(|(s, h)| (*s, h.as_str()))
            {
                Some("an unfiltered export must end at the head it records".to_owned())
            } else {
                None
            };
            check.manifest = Some(m);
            if let Some(p) = problem {
                return fail(check, n, None, p);
            }
            check.ok = true;
            return Ok(check);
        }
        sha.update(&buf);
        let line: OwnedLine = match serde_json::from_slice(&buf) {
            Ok(l) => l,
            Err(e) => return fail(check, n, None, format!("not an event line: {e}")),
        };
        let row = AuditRow {
            seq: line.seq,
            at: line.at,
            actor: line.actor,
            kind: line.kind,
            run_id: line.run,
            step_seq: line.step,
            approval_id: line.approval,
            payload: line.payload.get().to_owned(),
            prev_hash: line.prev_hash,
            hash: line.hash,
        };
        check.events += 1;
        first.get_or_insert(row.seq);
        last = Some(row.seq);
        if line.redacted {
            check.redacted += 1;
        } else if !row.hash_holds_in(&mut canon) {
            return fail(
                check,
                n,
                Some(row.seq),
                format!(
                    "event {} ({}) was changed: its fields no longer give its hash",
                    row.seq, row.kind
                ),
            );
        }
        match &prev {
            Some((pseq, _)) if row.seq <= *pseq => {
                return fail(
                    check,
                    n,
                    Some(row.seq),
                    format!("seq {} comes after seq {pseq}: out of order", row.seq),
                );
            }
            Some((pseq, phash)) if row.seq == pseq + 1 && &row.prev_hash != phash => {
                return fail(
                    check,
                    n,
                    Some(row.seq),
                    format!("event {} does not follow event {pseq}", row.seq),
                );
            }
            None if row.seq == 1 && row.prev_hash != GENESIS => {
                return fail(
                    check,
                    n,
                    Some(1),
                    "the first event does not start the chain".into(),
                );
            }
            _ => {}
        }
        if prev.as_ref().is_some_and(|(pseq, _)| row.seq != pseq + 1) {
            gaps = true;
        }
        prev = Some((row.seq, row.hash));
    }
}

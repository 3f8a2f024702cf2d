//! Checking an exported JSONL file on its own, without the database it came from: see
//! `export` for the format.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::export::{Manifest, FORMAT};
use crate::error::{Error, Result};
use crate::store::audit::{AuditRow, GENESIS};

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

/// What checking an exported file found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
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
#[cfg_attr(feature = "specta", derive(specta::Type))]
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
            mac: None,
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

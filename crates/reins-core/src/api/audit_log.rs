//! The audit log: verify, export, check an export, page through.

use std::path::Path;

use super::AuditPage;
use super::Reins;
use crate::audit::{self, ExportCheck, ExportRequest, ExportSummary, PageRequest, Verification};
use crate::error::Result;

impl Reins {
    /// Walks the chain against its head anchor. An intact log records that it was verified.
    pub async fn audit_verify(&self) -> Result<Verification> {
        let v = audit::verify::verify(self.store()).await?;
        if v.intact {
            audit::verify::record(self.store(), &v).await?;
        }
        Ok(v)
    }

    /// Accepts the head anchor's last re-creation (after it went missing with events in the log),
    /// so verification stops failing on it. Returns the seq accepted (None: never re-created).
    pub async fn audit_acknowledge_anchor(&self, by: &str) -> Result<Option<i64>> {
        Ok(audit::verify::acknowledge(self.store(), by).await?)
    }

    /// Accepts the events no key of this machine vouches for (appended where no keyring could be
    /// reached, or under another machine's key on this machine's file): verification stops
    /// failing on them. Returns the first seq accepted and how many (None: nothing to accept).
    pub async fn audit_accept_unvouched(&self, by: &str) -> Result<Option<(i64, i64)>> {
        Ok(audit::verify::accept_unvouched(self.store(), by).await?)
    }

    /// Exports the selected events; `progress(done, total)` is called as it goes.
    pub async fn audit_export(
        &self,
        req: &ExportRequest,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<ExportSummary> {
        audit::export::export(self.store(), req, progress).await
    }

    /// Checks an exported JSONL file on its own (no database needed).
    pub fn audit_verify_export(path: &Path) -> Result<ExportCheck> {
        audit::exported::verify_export(path)
    }

    pub async fn audit_page(&self, req: &PageRequest) -> Result<AuditPage> {
        self.views().audit_page(req).await
    }
}

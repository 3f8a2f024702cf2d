//! The types the door hands out: views made for the faces (the CLI, the app, HTTP), never storage
//! rows. Each view is built by a conversion that destructures its row, so a new column is a compile
//! error here rather than a field that silently never reaches a screen. JSON the harness stored is
//! already decoded; nothing a caller gets needs parsing.

mod audit;
mod memory;
mod reviews;
mod runs;
mod turns;

pub use audit::{AuditEventView, AuditPage};
pub use memory::{FactDetailView, FactView, RememberedView, SuggestionView, VersionView};
pub use reviews::{ApprovalView, DecidedView, EditView, FactUse, GrantView};
pub use runs::{
    ActionView, AgentLogView, AttemptView, IntentView, Recovery, RetryView, RunDetail, RunSummary,
    RunView, StepView,
};
pub(crate) use turns::link_calls;
pub use turns::{CallView, ModelTurnView};

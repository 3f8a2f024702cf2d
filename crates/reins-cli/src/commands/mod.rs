//! One module per user operation.

pub mod agents;
pub mod answer;
pub mod audit;
pub mod budget;
pub mod claude_run;
pub mod control;
pub mod doctor;
pub mod gc;
pub mod hook;
pub mod keys;
pub mod mcp;
pub mod memory;
pub mod otel;
pub mod policy;
pub mod ps;
pub mod reject;
pub mod review;
pub mod rollback;
pub mod run;
pub mod serve;
pub mod show;
pub mod stage;
pub mod worker;

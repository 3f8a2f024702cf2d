//! One module per user operation.

pub mod doctor;
pub mod ps;
pub mod rollback;
pub mod run;
pub mod show;
pub mod worker;

//! Doing what an agent asked for, once it is judged and, where it must be, approved: a file effect
//! planned with its pre- and post-images and applied atomically, a read or a search answered, a
//! command run confined to its process group, a request sent to the addresses that were checked.
//! What was asked is [`crate::action`]'s.

mod effect;
pub mod fetch;
mod pure;
pub mod shell;
pub use effect::{
    apply, mode_line, mode_note, plan, plan_files, post_image, ApplyError, EffectPlan, FileOp,
};
pub use pure::{describe, run_pure, ReadGuard};

#[cfg(test)]
mod tests;

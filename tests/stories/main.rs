//! The story tests: whole runs through `reins_core::api` over the real store, one module per story.
//! One binary, so the core is linked once for all of them; the shared setup is in `reins_tests`.

mod alerts;
mod app_facade;
mod at_rest;
mod audit_keys;
mod audit_words;
mod batch;
mod budgets;
mod checkpoint_damage;
mod claude_hooks;
mod control;
mod database_password;
mod findings;
mod house;
mod llm;
mod llm_control;
mod long_run;
mod memory;
mod one_commit;
mod policy_view;
mod race;
mod retention;
mod reviews;
mod rollback;
mod step_protocol;
mod timeouts;
mod tools;
mod what_held;
mod workers;

//! Cross-crate story tests live in `tests/stories/`; this library is empty on purpose.

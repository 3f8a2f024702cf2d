//! A call as the journal records it: the canonical JSON text its hash is taken over, kept byte for
//! byte, and the call that text says, decoded once at the row. A recorded action that does not
//! decode is damage, reported by the store, never read as nothing.

use serde::{Serialize, Serializer};

use super::{canonical_of_raw, Action, ToolCall};

#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCall {
    text: String,
    call: ToolCall,
}

impl RecordedCall {
    /// A valid action, as its canonical text.
    pub fn of(action: &Action) -> Self {
        let canonical = action.canonical();
        Self {
            text: crate::digest::canonical_json(&canonical),
            call: ToolCall {
                tool: action.tool().into(),
                args: canonical["args"].clone(),
            },
        }
    }

    /// A call as proposed (one that did not validate, a model call, a question).
    pub fn raw(call: ToolCall) -> Self {
        Self {
            text: canonical_of_raw(&call),
            call,
        }
    }

    /// Reads recorded text back.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        Ok(Self {
            call: serde_json::from_str(text)?,
            text: text.to_owned(),
        })
    }

    /// The recorded bytes (what the action hash is taken over).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    pub fn tool(&self) -> &str {
        &self.call.tool
    }
}

impl Serialize for RecordedCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.call.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_is_recorded_as_its_canonical_text_and_reads_back_the_same() {
        let action = Action::Write {
            path: crate::workspace::RelPath::parse("docs/a.md").unwrap(),
            content: "x".into(),
        };
        let recorded = RecordedCall::of(&action);
        assert_eq!(recorded.text(), action.canonical_text());
        assert_eq!(
            crate::digest::Digest::of(recorded.text().as_bytes()),
            action.hash()
        );
        let back = RecordedCall::parse(recorded.text()).unwrap();
        assert_eq!(back, recorded);
        assert_eq!(back.call().args["path"], "docs/a.md");
    }

    #[test]
    fn text_that_is_not_a_call_does_not_read_back() {
        assert!(RecordedCall::parse("not json").is_err());
        assert!(RecordedCall::parse(r#"{"args": {}}"#).is_err(), "a call names its tool");
    }
}

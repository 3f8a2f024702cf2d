//! The context a review card shows for a Claude Code tool call: the person's last prompt and what
//! Claude last said, read from the tail of the session's transcript (JSON lines). Best effort: a
//! transcript that is missing or unreadable leaves the card without them, never the call undecided.

use serde_json::Value;

/// How much of the transcript's end is read.
const TAIL_BYTES: u64 = 256 * 1024;
/// Characters kept of each.
const KEEP: usize = 600;

/// The last prompt and the last words of the assistant, as far as the tail shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tail {
    pub prompt: Option<String>,
    pub said: Option<String>,
}

impl Tail {
    /// The step's reason: what Claude said, and the prompt it works on.
    pub fn why(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(said) = &self.said {
            parts.push(said.clone());
        }
        if let Some(prompt) = &self.prompt {
            parts.push(format!("(prompt: {prompt})"));
        }
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// The transcript's last lines as text; None when it cannot be read.
pub fn tail_text(path: &std::path::Path) -> Option<String> {
    use std::io::{Read as _, Seek as _};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(std::io::SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What a transcript's text tells.
pub fn of_lines(text: &str) -> Tail {
    let mut tail = Tail::default();
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let message = &entry["message"];
        match entry["type"].as_str() {
            Some("user") => {
                if let Some(t) = words(&message["content"]) {
                    tail.prompt = Some(t);
                }
            }
            Some("assistant") => {
                if let Some(t) = words(&message["content"]) {
                    tail.said = Some(t);
                }
            }
            _ => {}
        }
    }
    tail
}

/// The text of a message's content (a string, or its text blocks), shortened; None for a message
/// of tool calls or tool results only.
fn words(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let text = crate::secrets::redact(text);
    Some(match text.char_indices().nth(KEEP) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.into_owned(),
    })
}

/// The transcript's tail once it shows tool call `tool_use_id`: Claude Code may call the hook
/// before the call's own entry, and the words before it, are on disk. Waits half a second at most;
/// then the card does with what is there.
pub async fn tail_for(path: &std::path::Path, tool_use_id: Option<&str>) -> Tail {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let text = tail_text(path);
        let shown = match (&text, tool_use_id) {
            (Some(t), Some(id)) => t.contains(id),
            (_, None) => true,
            (None, Some(_)) => false,
        };
        if shown || std::time::Instant::now() >= until {
            return text.map(|t| of_lines(&t)).unwrap_or_default();
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_prompt_and_the_last_words_are_found_and_tool_results_skipped() {
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"write hello.txt"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"I will write it."},{"type":"tool_use","id":"t","name":"Write","input":{}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#,
            "not json",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"u","name":"Bash","input":{}}]}}"#,
        ];
        let tail = of_lines(&lines.join("\n"));
        assert_eq!(tail.prompt.as_deref(), Some("write hello.txt"));
        assert_eq!(tail.said.as_deref(), Some("I will write it."));
        assert_eq!(tail.why().as_deref(), Some("I will write it.\n(prompt: write hello.txt)"));
        assert_eq!(tail_text(std::path::Path::new("/nonexistent/t.jsonl")), None);
    }
}

//! Claude Code's `NotebookEdit`, read as the file change it makes: the notebook's whole new text,
//! worked out from the notebook on disk the way Claude Code 2.1 edits it, so the card shows the
//! exact diff and the policy judges a write of that file. It replaces a cell's source (a code
//! cell loses its outputs and execution count), inserts a cell after the one named (or first), or
//! deletes one; a cell is named by its `id` or as `cell-N`. The notebook is written back as JSON
//! indented by one space, keys in their order, with the file's own line endings.
//!
//! One thing cannot be known beforehand: Claude Code gives a cell it inserts into an nbformat 4.5
//! notebook a fresh random `id` when it writes, so the new text shows that cell without one.

use serde_json::{json, Value};

/// The notebook's new text after the edit `input` (the tool's input), or why the edit does not
/// apply (Claude Code refuses such an edit too).
pub fn edited(old: &str, input: &Value) -> Result<String, String> {
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let source = text("new_source").ok_or("the edit gives no `new_source`")?;
    let mode = text("edit_mode").unwrap_or("replace");
    let cell_type = text("cell_type");
    if let Some(t) = cell_type {
        if !matches!(t, "code" | "markdown") {
            return Err(format!("`cell_type` {t:?} is neither code nor markdown"));
        }
    }
    let mut notebook: Value =
        serde_json::from_str(old).map_err(|_| "the notebook is not valid JSON".to_owned())?;
    let cells = notebook
        .get_mut("cells")
        .and_then(Value::as_array_mut)
        .filter(|cells| cells.iter().all(readable_cell))
        .ok_or("the notebook's cells cannot be read")?;
    let at = index(cells, text("cell_id"), mode == "insert")?;
    match mode {
        "delete" => {
            cells.remove(at);
        }
        "insert" => {
            let cell_type = cell_type.ok_or("an inserted cell needs a `cell_type`")?;
            // In an nbformat 4.5 notebook Claude Code puts a fresh `id` here when it writes.
            let mut cell = json!({"cell_type": cell_type});
            cell["source"] = source.into();
            cell["metadata"] = json!({});
            if cell_type == "code" {
                cell["execution_count"] = Value::Null;
                cell["outputs"] = json!([]);
            }
            cells.insert(at, cell);
        }
        "replace" => {
            let cell = &mut cells[at];
            cell["source"] = source.into();
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                cell["execution_count"] = Value::Null;
                cell["outputs"] = json!([]);
            }
            if let Some(t) = cell_type {
                if cell.get("cell_type").and_then(Value::as_str) != Some(t) {
                    cell["cell_type"] = t.into();
                }
            }
        }
        other => return Err(format!("`edit_mode` {other:?} is not replace, insert or delete")),
    }
    let mut out = Vec::new();
    let mut writer = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b" "),
    );
    serde::Serialize::serialize(&notebook, &mut writer).map_err(|e| e.to_string())?;
    let mut new = String::from_utf8(out).map_err(|e| e.to_string())?;
    if old.ends_with('\n') {
        new.push('\n');
    }
    if old.contains("\r\n") {
        new = new.replace('\n', "\r\n");
    }
    Ok(new)
}

/// A cell Claude Code can edit: an object whose source is a string or a list of strings.
fn readable_cell(cell: &Value) -> bool {
    match cell.get("source") {
        Some(Value::String(_)) => true,
        Some(Value::Array(lines)) => lines.iter().all(Value::is_string),
        _ => false,
    }
}

/// Where the edit applies: the cell named, by `id` or as `cell-N`; an insert goes after it, or
/// first when no cell is named.
fn index(cells: &[Value], id: Option<&str>, insert: bool) -> Result<usize, String> {
    let Some(id) = id.filter(|id| !id.is_empty()) else {
        return if insert { Ok(0) } else { Err("the edit names no cell".into()) };
    };
    let found = cells.iter().position(|c| c.get("id").and_then(Value::as_str) == Some(id));
    let at = match found {
        Some(at) => at,
        None => {
            let n = id
                .strip_prefix("cell-")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| format!("the notebook has no cell {id:?}"))?;
            let at: usize = n.parse().map_err(|_| format!("the notebook has no cell {id:?}"))?;
            if at >= cells.len() {
                return Err(format!("the notebook has no cell {at}"));
            }
            at
        }
    };
    Ok(if insert { at + 1 } else { at })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A notebook as Jupyter writes it (nbformat 4.5, one-space indent, sorted keys).
    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "a1",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "2\n"
     ]
    }
   ],
   "source": [
    "x = 1\n",
    "print(x + 1)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "b2",
   "metadata": {},
   "source": "# Notes"
  }
 ],
 "metadata": {
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    fn edit(input: Value) -> Result<String, String> {
        edited(NOTEBOOK, &input)
    }

    #[test]
    fn a_replaced_code_cell_loses_its_outputs_and_nothing_else_moves() -> Result<(), String> {
        let new = edit(json!({"notebook_path": "/n.ipynb", "cell_id": "a1", "new_source": "x = 2"}))?;
        let want = NOTEBOOK
            .replace("\"execution_count\": 3", "\"execution_count\": null")
            .replace(
                "[\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"2\\n\"\n     ]\n    }\n   ]",
                "[]",
            )
            .replace("[\n    \"x = 1\\n\",\n    \"print(x + 1)\"\n   ]", "\"x = 2\"");
        assert_eq!(new, want);
        // By index, and a markdown cell keeps what it has.
        let md = edit(json!({"cell_id": "cell-1", "new_source": "# Done"}))?;
        assert_eq!(md, NOTEBOOK.replace("# Notes", "# Done"));
        Ok(())
    }

    #[test]
    fn insert_and_delete_go_where_claude_code_puts_them() -> Result<(), String> {
        let new = edit(json!({"cell_id": "a1", "edit_mode": "insert", "cell_type": "markdown", "new_source": "hi"}))?;
        let v: Value = serde_json::from_str(&new).map_err(|e| e.to_string())?;
        assert_eq!(v["cells"][1], json!({"cell_type": "markdown", "source": "hi", "metadata": {}}));
        let first = edit(json!({"edit_mode": "insert", "cell_type": "code", "new_source": "import os"}))?;
        let v: Value = serde_json::from_str(&first).map_err(|e| e.to_string())?;
        assert_eq!(v["cells"][0]["outputs"], json!([]));
        assert_eq!(v["cells"].as_array().map(Vec::len), Some(3));
        let gone = edit(json!({"cell_id": "b2", "edit_mode": "delete", "new_source": ""}))?;
        let v: Value = serde_json::from_str(&gone).map_err(|e| e.to_string())?;
        assert_eq!(v["cells"].as_array().map(Vec::len), Some(1));
        Ok(())
    }

    #[test]
    fn an_edit_that_does_not_apply_says_why() {
        for (input, why) in [
            (json!({"cell_id": "zz", "new_source": "x"}), "no cell \"zz\""),
            (json!({"cell_id": "cell-9", "new_source": "x"}), "no cell 9"),
            (json!({"new_source": "x"}), "names no cell"),
            (json!({"edit_mode": "insert", "new_source": "x"}), "needs a `cell_type`"),
            (json!({"cell_id": "a1", "edit_mode": "move", "new_source": "x"}), "not replace"),
            (json!({"cell_id": "a1"}), "no `new_source`"),
        ] {
            let err = edit(input.clone()).err().unwrap_or_default();
            assert!(err.contains(why), "{input}: {err}");
        }
        assert!(edited("{", &json!({"cell_id": "a1", "new_source": "x"})).is_err());
        assert!(edited(r#"{"cells": [{"source": 1}]}"#, &json!({"cell_id": "cell-0", "new_source": "x"})).is_err());
    }

    #[test]
    fn windows_line_endings_are_kept() -> Result<(), String> {
        let crlf = NOTEBOOK.replace('\n', "\r\n");
        let new = edited(&crlf, &json!({"cell_id": "b2", "new_source": "# x"}))?;
        assert_eq!(new, crlf.replace("# Notes", "# x"));
        Ok(())
    }
}

//! A person's edit of a proposed action: new arguments for the same tool, and the escape hatch
//! for a command (with the network, or unconfined), which is an edit too.

use crate::action::shell::Sandbox;
use crate::action::Action;
use crate::error::{Error, Result};
use crate::store::approvals::ApprovalRow;
use crate::action::ToolCall;

/// A person's edit of the proposed action: new arguments for the same tool.
#[derive(Clone, Debug, PartialEq)]
pub struct EditedAction {
    /// The tool the edit names, when it names one: it must be the proposed action's.
    pub tool: Option<String>,
    pub args: serde_json::Value,
}

impl EditedAction {
    /// The command `args` (a `shell.exec` card's, or an edit of it) to run with the network or
    /// unconfined instead: a person's choice, approved as an edit, once.
    pub fn sandboxed(
        tool: &str,
        args: &serde_json::Value,
        sandbox: crate::action::shell::Sandbox,
    ) -> Result<Self> {
        if tool != "shell.exec" {
            return Err(Error::Invalid(format!(
                "only a command runs with the network or unconfined; this card is {tool}"
            )));
        }
        let mut args = args.clone();
        let Some(map) = args.as_object_mut() else {
            return Err(Error::Invalid("the command's arguments are not an object".into()));
        };
        map.insert("sandbox".into(), serde_json::json!(sandbox.as_str()));
        Ok(Self { tool: None, args })
    }
}

/// The call an edit describes, which must keep the proposed tool.
pub(crate) fn edited_call(row: &ApprovalRow, edit: &EditedAction) -> Result<ToolCall> {
    if let Some(tool) = edit.tool.as_deref().filter(|t| *t != row.tool) {
        return Err(Error::Invalid(format!(
            "an edit must keep the tool {}; it names {tool}",
            row.tool
        )));
    }
    Ok(ToolCall {
        tool: row.tool.clone(),
        args: edit.args.clone(),
    })
}

/// A staged command's card shows all the command did, confined and without the network (one that
/// reached for either is not staged whole), and approving it applies exactly that. Running it
/// instead with the network or unconfined would run it again, for effects no card showed: refused.
pub(super) fn refuse_leaving_a_stage(row: &ApprovalRow, action: &Action) -> Result<()> {
    match action {
        Action::Shell(cmd) if row.staged.is_some() && cmd.sandbox != Sandbox::Confined => {
            Err(Error::Invalid(format!(
                "approval {}: this command was staged, and it did all it does confined and without the network; approving applies the changes on its card and does not run it again. Approve it as it is, or reject it; running it {} instead is not offered for a staged card",
                row.id,
                match cmd.sandbox {
                    Sandbox::Network => "with the network",
                    _ => "unconfined",
                }
            )))
        }
        _ => Ok(()),
    }
}

//! `shell.exec` as an agent asks for it: a command string or an argv, and a timeout. How it is
//! judged is the policy's (`policy::shell`), how it runs is the tools' (`tools::shell`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{invalid, parse_args, ToolError};

/// Longest command string the classifier reads; longer is high without parsing.
pub const MAX_COMMAND_BYTES: usize = 32 * 1024;
pub const DEFAULT_TIMEOUT_S: u64 = 120;
pub const MAX_TIMEOUT_S: u64 = 3600;
const MAX_ARGV: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandForm {
    Line(String),
    Argv(Vec<String>),
}

/// How a command runs: confined by default; with the network, or outside the sandbox, only as
/// a choice a person makes on its card, once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sandbox {
    /// No network; writes inside the workspace except its protected paths; no credentials.
    #[default]
    Confined,
    /// The same, with the network.
    Network,
    /// Outside the sandbox: nothing but the review holds it.
    Unconfined,
}

impl Sandbox {
    pub fn as_str(self) -> &'static str {
        match self {
            Sandbox::Confined => "confined",
            Sandbox::Network => "network",
            Sandbox::Unconfined => "unconfined",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellCommand {
    pub form: CommandForm,
    pub timeout_s: u64,
    pub sandbox: Sandbox,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// A shell command line (pipes, redirections and `&&` allowed; each part is classified). Give this or `argv`.
    command: Option<String>,
    /// The program and its arguments, run without a shell. Give this or `command`.
    argv: Option<Vec<String>>,
    /// Seconds before the command is stopped (default 120).
    timeout_s: Option<u64>,
    /// Leave it out: commands run confined, without the network. Only when one cannot work that
    /// way: `network` runs it with the network, `unconfined` outside the sandbox. Either is high
    /// risk and waits for a person every time.
    sandbox: Option<Sandbox>,
}

impl ShellCommand {
    pub fn parse(value: &Value) -> Result<Self, ToolError> {
        let t = "shell.exec";
        let a: Args = parse_args(t, value)?;
        let form = match (a.command, a.argv) {
            (Some(_), Some(_)) => return Err(invalid(t, "give `command` or `argv`, not both")),
            (None, None) => return Err(invalid(t, "give `command` (a string) or `argv` (a list)")),
            (Some(c), None) => {
                if c.trim().is_empty() {
                    return Err(invalid(t, "`command` is empty"));
                }
                if c.len() > MAX_COMMAND_BYTES {
                    return Err(invalid(
                        t,
                        format!(
                            "`command` is {} bytes, over the {MAX_COMMAND_BYTES}-byte limit",
                            c.len()
                        ),
                    ));
                }
                if c.contains('\0') {
                    return Err(invalid(t, "`command` contains a NUL byte"));
                }
                CommandForm::Line(c)
            }
            (None, Some(v)) => {
                if v.is_empty() || v[0].is_empty() {
                    return Err(invalid(t, "`argv` must start with a program name"));
                }
                if v.len() > MAX_ARGV {
                    return Err(invalid(
                        t,
                        format!("`argv` has {} items, over the limit of {MAX_ARGV}", v.len()),
                    ));
                }
                if v.iter().map(String::len).sum::<usize>() > MAX_COMMAND_BYTES * 8 {
                    return Err(invalid(t, "`argv` is too long"));
                }
                if v.iter().any(|s| s.contains('\0')) {
                    return Err(invalid(t, "an `argv` item contains a NUL byte"));
                }
                CommandForm::Argv(v)
            }
        };
        let timeout_s = a.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if timeout_s == 0 || timeout_s > MAX_TIMEOUT_S {
            return Err(invalid(
                t,
                format!("`timeout_s` must be 1 to {MAX_TIMEOUT_S}"),
            ));
        }
        Ok(Self {
            form,
            timeout_s,
            sandbox: a.sandbox.unwrap_or_default(),
        })
    }

    pub fn canonical_args(&self) -> Value {
        let mut args = match &self.form {
            CommandForm::Line(c) => json!({ "command": c, "timeout_s": self.timeout_s }),
            CommandForm::Argv(v) => json!({ "argv": v, "timeout_s": self.timeout_s }),
        };
        // The default is left out, so a confined command hashes as it always did.
        if self.sandbox != Sandbox::Confined {
            args["sandbox"] = json!(self.sandbox.as_str());
        }
        args
    }

    /// The command as a person reads it.
    pub fn display(&self) -> String {
        match &self.form {
            CommandForm::Line(c) => c.clone(),
            CommandForm::Argv(v) => v
                .iter()
                .map(|a| {
                    if a.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
                    {
                        a.clone()
                    } else {
                        format!("'{}'", a.replace('\'', r"'\''"))
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

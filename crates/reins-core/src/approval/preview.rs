//! Previews a person reviews for actions that are not file changes (file changes preview as diffs,
//! see `workspace::diff`). Hidden characters are always shown as visible markers.

use std::net::IpAddr;

use crate::policy::shell::Place;
use crate::text::reveal;
use crate::policy::Verdict;
use crate::action::{Action, CommandForm, FetchRequest, ShellCommand};
use crate::tools::EffectPlan;

/// The preview a person sees for `action`: the file diff from its plan, the parsed command, the
/// request, or (a read held for review) the read itself.
pub fn of(
    action: &Action,
    plan: Option<&EffectPlan>,
    verdict: &Verdict,
    resolved: &[IpAddr],
    place: Place<'_>,
) -> String {
    let shown = match (action, plan) {
        (Action::Permission(p), plan) => match p.implied.as_deref() {
            // The agent runs it, not Reins: the card says so, and where.
            Some(Action::Shell(cmd)) => format!(
                "{}:\n\n{}",
                p.describe(),
                agent_shell(cmd, verdict, p)
            ),
            Some(implied) => format!(
                "{}:\n\n{}",
                p.describe(),
                of(implied, plan, verdict, resolved, place)
            ),
            None => format!(
                "{}.\n{}\n\nWhat the agent reported:\n{}",
                p.describe(),
                p.unread.as_deref().unwrap_or(""),
                serde_json::to_string_pretty(&p.reported).unwrap_or_default()
            ),
        },
        (_, Some(p)) => p.preview.clone(),
        (Action::Shell(cmd), None) => {
            let text = shell(cmd, verdict, place);
            crate::secrets::redact_found_in(&text, &cmd.display()).into_owned()
        }
        (Action::Fetch(req), None) => fetch(req, resolved),
        (Action::Mcp(call), None) => mcp(call),
        _ => read(action),
    };
    // Stored, shown and bound by its hash: a secret in it is masked (`approval show --action`
    // shows the action whole).
    crate::secrets::redact(&shown).into_owned()
}

/// A command an agent runs itself, with its own shell: the command as Reins judged it, where the
/// agent runs it, and each part with its risk.
fn agent_shell(cmd: &ShellCommand, verdict: &Verdict, p: &crate::action::Permission) -> String {
    let folder = match crate::action::permission::agent_folder(&p.reported["rawInput"]) {
        Some(dir) => format!("in {} (the folder it reported; judged from there)", reveal(dir)),
        None => "in a folder it did not report (judged as the workspace root)".into(),
    };
    let mut s = format!(
        "$ {}\n\nthe agent runs this itself, with its own shell and inside its own confinement, {folder}; Reins does not run it\n",
        reveal(&cmd.display())
    );
    parts(&mut s, verdict);
    s
}

/// Each part of a command with its risk and reasons.
fn parts(s: &mut String, verdict: &Verdict) {
    if !verdict.segments.is_empty() {
        s.push_str("\nparts:\n");
        for seg in &verdict.segments {
            s.push_str(&format!("  [{}] {}\n", seg.risk.as_str(), reveal(&seg.text)));
            for r in &seg.reasons {
                s.push_str(&format!("        - {}\n", reveal(r)));
            }
        }
    }
}

/// The command, how it will run, and each part with its risk.
pub fn shell(cmd: &ShellCommand, verdict: &Verdict, place: Place<'_>) -> String {
    let analysis = cmd.analyse(place);
    let argv = cmd.argv(&analysis);
    let mut s = format!("$ {}\n\n", reveal(&cmd.display()));
    let how = match (&cmd.form, &analysis.direct_argv) {
        (CommandForm::Argv(_), _) => "runs directly as this argv (no shell)",
        (CommandForm::Line(_), Some(_)) => {
            "runs directly as this argv (no shell: one plain command)"
        }
        (CommandForm::Line(_), None) => {
            "runs with `bash --noprofile --norc -c` and exactly the text above"
        }
    };
    s.push_str(&format!("{how}:\n  {}\n", reveal(&format!("{argv:?}"))));
    s.push_str(&format!(
        "in the workspace root, timeout {} s, output capped, own process group, only PATH/HOME/USER/LANG/TERM/TZ/TMPDIR passed on\n",
        cmd.timeout_s
    ));
    parts(&mut s, verdict);
    s
}

/// How a command will run, for its card: "confined (Landlock ABI 7, seccomp): no network, writes
/// inside the workspace", or why it will not be. An external agent's command runs inside the
/// agent's own confinement (`agent`). None for what is not a command.
pub fn how_it_runs(
    action: &Action,
    place: Place<'_>,
    kernel: &crate::contain::Kernel,
    agent: Option<&str>,
    switched: &[String],
) -> Option<String> {
    use crate::action::shell::Sandbox;
    use crate::contain::Kernel;
    match action {
        Action::Shell(cmd) => {
            let analysis = cmd.analyse(place);
            let escape = crate::policy::escape(cmd, &analysis.segments, switched);
            if cmd.sandbox == Sandbox::Unconfined || escape.is_some() && cmd.sandbox == Sandbox::Confined {
                return Some(format!(
                    "unconfined, as you choose ({}): approve it only if you would run it yourself",
                    escape.unwrap_or_default()
                ));
            }
            let network = cmd.sandbox == Sandbox::Network;
            let places = crate::contain::profile::Places {
                workspace: place.root.to_owned(),
                home: None,
                reins: Vec::new(),
                tmp: place.root.to_owned(),
            };
            let words = crate::contain::Profile::command(&places, network).said(place.root);
            let words = format!(
                "{words} (not its protected paths), reads no credentials{}",
                if !network && analysis.names_network() {
                    "; it names a network program: if it needs the network, approve it with the network (`reins approve ID --with-network`), once"
                } else {
                    ""
                }
            );
            Some(match kernel {
                Kernel::Full(said) => format!("{said}: {words}"),
                Kernel::Partial(said) => {
                    format!("not fully confined, {said}: {words} only as far as the kernel holds it")
                }
                Kernel::NoHelper => "unconfined: no confinement helper in this process".into(),
            })
        }
        Action::Permission(p) => match p.implied.as_deref() {
            Some(Action::Shell(_)) => Some(match agent {
                Some(how) => format!("run by the agent itself, inside its own confinement: {how}"),
                None => "run by the agent itself".into(),
            }),
            _ => None,
        },
        _ => None,
    }
}

/// Method, URL, headers, body, and where the host resolved.
pub fn fetch(req: &FetchRequest, resolved: &[IpAddr]) -> String {
    let mut s = reveal(&req.display());
    if !resolved.is_empty() {
        let list: Vec<String> = resolved.iter().map(ToString::to_string).collect();
        s.push_str(&format!(
            "\n{} resolves to {} (the request connects only to these; redirects are checked again)\n",
            req.url.host_str().unwrap_or("?"),
            list.join(", ")
        ));
    }
    s
}

/// Strings longer than this are folded on an MCP card (head and tail kept, the middle counted).
const FOLD_AT: usize = 2000;

/// The server, the tool, what the server says of it, and the exact arguments: pretty JSON, long
/// strings folded, hidden characters marked. The hints are shown as what they are: claims.
pub fn mcp(call: &crate::action::McpCall) -> String {
    let mut s = format!(
        "MCP server `{}` · tool `{}`\n",
        reveal(&call.server),
        reveal(&call.tool)
    );
    let description = call.description.trim();
    if !description.is_empty() {
        s.push_str(&format!(
            "the server describes it: {}\n",
            reveal(&fold(description))
        ));
    }
    s.push_str(&format!(
        "the server claims (hints, not checked): {}\n\narguments:\n",
        call.hints.describe()
    ));
    let folded = fold_strings(&call.arguments);
    s.push_str(&reveal(
        &serde_json::to_string_pretty(&folded).unwrap_or_default(),
    ));
    s.push('\n');
    s
}

fn fold(text: &str) -> String {
    let n = text.chars().count();
    if n <= FOLD_AT {
        return text.to_owned();
    }
    let head: String = text.chars().take(FOLD_AT / 2).collect();
    let tail: String = text.chars().skip(n - FOLD_AT / 4).collect();
    format!(
        "{head}…[{} characters folded; `reins approval show --action` has them all]…{tail}",
        n - FOLD_AT / 2 - FOLD_AT / 4
    )
}

fn fold_strings(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(fold(s)),
        Value::Array(items) => Value::Array(items.iter().map(fold_strings).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fold_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// For a read-only action held for review (a protected path).
pub fn read(action: &Action) -> String {
    reveal(&format!(
        "{} {}\n",
        action.tool(),
        action.canonical()["args"]
    ))
}

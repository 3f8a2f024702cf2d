//! Grants: "allow this again" made explicit. A grant is created only by an approval decision and
//! matches either the exact action (by hash) or a pattern: for `shell.exec` a program and argument
//! prefix, for file tools a path glob. A pattern never covers what Reins cannot see through: a
//! pattern grant is refused for a command with substitutions, interpreters or more than one part, and
//! only matches commands that are one plain simple command of medium risk or less; it never matches a
//! protected path. An external agent's permission is granted as the action Reins reads it as (its
//! write, its command), so a lasting grant from its card is an ordinary grant, and covers the same
//! action whether the agent asks again or Reins' own tools propose it.

use serde::Serialize;

use crate::policy::shell::Place;
use crate::policy::{self, programs, Risk};
use crate::action::Action;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Matcher {
    /// The action hash.
    Exact,
    /// A JSON array: the argv a command must start with.
    Prefix,
    /// A path glob every path of the action must match.
    Glob,
}

impl Matcher {
    pub fn as_str(self) -> &'static str {
        match self {
            Matcher::Exact => "exact",
            Matcher::Prefix => "prefix",
            Matcher::Glob => "glob",
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSpec {
    pub tool: String,
    pub matcher: Matcher,
    pub pattern: String,
    /// For a prefix: the approved command's options beyond it, the only ones it will cover.
    pub options: Option<Vec<String>>,
}

/// A word that is an option rather than an operand (`-` alone is standard input).
fn is_option(word: &str) -> bool {
    word.starts_with('-') && word != "-"
}

impl GrantSpec {
    /// The grant an approval of `action` leaves, exact unless `pattern` is given. Refuses a pattern
    /// that would cover what Reins cannot see through, or that does not cover the approved action.
    pub fn for_action(
        action: &Action,
        pattern: Option<&str>,
        place: Place<'_>,
    ) -> Result<Self, String> {
        if escapes(action) {
            return Err("a command that runs with the network or unconfined is approved once, each time: no lasting grant covers it (approve it with --scope once)".into());
        }
        if let Action::Permission(p) = action {
            return match p.implied.as_deref() {
                Some(implied) => Self::for_action(implied, pattern, place),
                None if pattern.is_some() => Err("Reins cannot read what the agent reported, so no pattern can be checked against it; approve it exactly instead".into()),
                None => Ok(Self {
                    tool: action.tool().to_owned(),
                    matcher: Matcher::Exact,
                    pattern: action.hash().to_string(),
                    options: None,
                }),
            };
        }
        let tool = action.tool().to_owned();
        let Some(pattern) = pattern else {
            return Ok(Self {
                tool,
                matcher: Matcher::Exact,
                pattern: action.hash().to_string(),
                options: None,
            });
        };
        match action {
            Action::Shell(cmd) => {
                let analysis = cmd.analyse(place);
                let Some(argv) = analysis.direct_argv.clone() else {
                    return Err("a pattern grant needs a plain command (one program, literal arguments, no pipes, lists, redirections or substitutions); approve it for this scope exactly instead".into());
                };
                if analysis.risk == Risk::High {
                    return Err(format!(
                        "a pattern grant is refused for a high-risk command ({}); approve it exactly instead",
                        analysis.all_reasons().join("; ")
                    ));
                }
                let want = policy::shell::analyse_command(pattern, place);
                let Some(prefix) = want.direct_argv else {
                    return Err(format!(
                        "the pattern {pattern:?} is not a plain program and arguments"
                    ));
                };
                if prefix.is_empty() {
                    return Err("the pattern is empty".into());
                }
                let program = prefix[0].rsplit('/').next().unwrap_or(&prefix[0]);
                if programs::runs_code(program) || programs::is_network(program) {
                    return Err(format!("a pattern grant is refused for `{program}`: it runs code or talks to the network, so a pattern would cover anything"));
                }
                if !argv.starts_with(&prefix) {
                    return Err(format!(
                        "the pattern {pattern:?} does not cover the approved command"
                    ));
                }
                let rest = &argv[prefix.len()..];
                if let Some(why) = programs::operands_are_code(program) {
                    if !rest.is_empty() {
                        return Err(format!("a pattern grant for `{program}` must give the whole command: {why}, so a shorter pattern would cover that; approve it exactly instead"));
                    }
                }
                let pattern = serde_json::to_string(&prefix)
                    .map_err(|e| format!("the pattern cannot be stored: {e}"))?;
                Ok(Self {
                    tool,
                    matcher: Matcher::Prefix,
                    pattern,
                    options: Some(rest.iter().filter(|a| is_option(a)).cloned().collect()),
                })
            }
            Action::Fetch(_) => Err("http.fetch grants are exact only".into()),
            Action::Mcp(_) => Err("MCP grants are exact only (this server, this tool, these arguments): what a tool does with other arguments is the server's own".into()),
            _ => {
                let glob = globset::Glob::new(pattern)
                    .map_err(|e| format!("the pattern {pattern:?} is not a valid path glob: {e}"))?
                    .compile_matcher();
                let paths = action.paths();
                if paths.is_empty() || !paths.iter().all(|p| glob.is_match(p.as_str())) {
                    return Err(format!(
                        "the pattern {pattern:?} does not cover the approved action's paths"
                    ));
                }
                Ok(Self {
                    tool,
                    matcher: Matcher::Glob,
                    pattern: pattern.to_owned(),
                    options: None,
                })
            }
        }
    }
}

/// What a grant allows, as [`covers`] judges an action against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terms {
    pub tool: String,
    pub matcher: Matcher,
    pub pattern: String,
    /// The risk of the action the grant was made from: it covers nothing riskier. None: made
    /// before grants recorded it, so it covers only what is low risk.
    pub risk: Option<Risk>,
    /// For a prefix grant: the options of the approved command beyond the prefix, the only ones
    /// a covered command may have (None: none).
    pub options: Option<Vec<String>>,
    pub revoked: bool,
}

/// Whether a live grant covers `action`, whose risk is `risk` now. Never an action riskier than
/// the one the grant was made from (the same text can become a protected-path write when a folder
/// is swapped for a link), and never an action on a protected path.
/// Whether `action` runs a command out of its sandbox (with the network, or unconfined).
fn escapes(action: &Action) -> bool {
    match action {
        Action::Shell(cmd) => cmd.sandbox != crate::action::shell::Sandbox::Confined,
        Action::Permission(p) => p.implied.as_deref().is_some_and(escapes),
        _ => false,
    }
}

pub fn covers(grant: &Terms, action: &Action, risk: Risk, place: Place<'_>) -> bool {
    if escapes(action) {
        return false;
    }
    if let Action::Permission(p) = action {
        if grant.tool != action.tool() {
            // Judged as the action it reports, and granted as that action too.
            return p
                .implied
                .as_deref()
                .is_some_and(|implied| covers(grant, implied, risk, place));
        }
    }
    if grant.tool != action.tool() || grant.revoked {
        return false;
    }
    if risk > grant.risk.unwrap_or(Risk::Low) {
        return false;
    }
    if action
        .paths()
        .iter()
        .any(|p| place.protected.why(place.root, p.as_str()).is_some())
    {
        return false;
    }
    match grant.matcher.as_str() {
        "exact" => grant.pattern == action.hash().as_str(),
        "prefix" => {
            let Action::Shell(cmd) = action else {
                return false;
            };
            let Ok(prefix) = serde_json::from_str::<Vec<String>>(&grant.pattern) else {
                return false;
            };
            let analysis = cmd.analyse(place);
            let Some(argv) = analysis.direct_argv.filter(|argv| argv.starts_with(&prefix)) else {
                return false;
            };
            // Only operands may vary: no option the approved command did not have, and for a
            // program whose operands are code, nothing at all.
            let rest = &argv[prefix.len()..];
            let allowed = grant.options.as_deref().unwrap_or(&[]);
            let Some(first) = prefix.first() else {
                return false;
            };
            let program = first.rsplit('/').next().unwrap_or(first);
            risk < Risk::High
                && analysis.risk < Risk::High
                && rest.iter().filter(|a| is_option(a)).all(|a| allowed.contains(a))
                && (programs::operands_are_code(program).is_none() || rest.is_empty())
        }
        "glob" => {
            let Ok(glob) = globset::Glob::new(&grant.pattern) else {
                return false;
            };
            let glob = glob.compile_matcher();
            let paths = action.paths();
            risk < Risk::High
                && !paths.is_empty()
                && paths.iter().all(|p| {
                    glob.is_match(p.as_str())
                        && place.protected.why(place.root, p.as_str()).is_none()
                })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::policy::Protected;
    use crate::action::{CommandForm, ShellCommand};
    use crate::workspace::RelPath;

    static NONE: Protected = Protected::NONE;

    fn place() -> Place<'static> {
        Place {
            root: Path::new("/work/ws"),
            protected: &NONE,
        }
    }

    fn sh(cmd: &str) -> Action {
        Action::Shell(ShellCommand {
            form: CommandForm::Line(cmd.into()),
            timeout_s: 120,
            sandbox: Default::default(),
        })
    }

    fn write(path: &str) -> Action {
        Action::Write {
            path: RelPath::parse(path).unwrap(),
            content: "x".into(),
        }
    }

    fn row(spec: &GrantSpec) -> Terms {
        Terms {
            tool: spec.tool.clone(),
            matcher: spec.matcher,
            pattern: spec.pattern.clone(),
            risk: Some(Risk::High),
            options: spec.options.clone(),
            revoked: false,
        }
    }

    #[test]
    fn no_lasting_grant_covers_a_command_out_of_its_sandbox() {
        let net = Action::Shell(
            ShellCommand::parse(&serde_json::json!({"command": "cargo build", "sandbox": "network"}))
                .unwrap(),
        );
        assert!(GrantSpec::for_action(&net, None, place())
            .unwrap_err()
            .contains("approved once"));
        // Even a grant made for the same command confined does not stretch to it.
        let spec = GrantSpec::for_action(&sh("cargo build"), Some("cargo build"), place()).unwrap();
        assert!(covers(&row(&spec), &sh("cargo build"), Risk::Medium, place()));
        assert!(!covers(&row(&spec), &net, Risk::Low, place()));
    }

    #[test]
    fn a_prefix_grant_covers_plain_commands_only() {
        let spec = GrantSpec::for_action(&sh("cargo test -p core"), Some("cargo test"), place())
            .unwrap();
        let g = row(&spec);
        assert!(covers(&g, &sh("cargo test -p cli"), Risk::Medium, place()));
        assert!(
            !covers(&g, &sh("cargo test --workspace"), Risk::Medium, place()),
            "an option the approved command did not have"
        );
        assert!(!covers(&g, &sh("cargo build"), Risk::Medium, place()));
        assert!(!covers(
            &g,
            &sh("cargo test; rm -rf x"),
            Risk::High,
            place()
        ));
        assert!(!covers(&g, &sh("cargo test $(id)"), Risk::High, place()));
        assert!(!covers(&g, &sh("cargo test > out"), Risk::Medium, place()));
    }

    #[test]
    fn pattern_grants_are_refused_for_what_they_cannot_see_through() {
        for (cmd, pattern) in [
            ("bash -c 'ls'", "bash"),
            ("python3 x.py", "python3"),
            ("curl https://x", "curl"),
            ("ls | wc", "ls"),
            ("cargo test", "cargo build"),
        ] {
            assert!(
                GrantSpec::for_action(&sh(cmd), Some(pattern), place()).is_err(),
                "{cmd} / {pattern}"
            );
        }
    }

    /// F5: prefix grants made from harmless uses of `git grep`, `sed`, `tar` and `iconv` covered
    /// their exec and write options. Now operands are all that may vary, and programs whose
    /// operands are code take no pattern shorter than the whole command.
    #[test]
    fn a_prefix_grant_never_covers_new_options_or_code_in_operands() {
        let made = |cmd: &str, pattern: &str| {
            GrantSpec::for_action(&sh(cmd), Some(pattern), place()).map(|s| row(&s))
        };
        let Ok(grep) = made("git grep hello", "git grep") else {
            panic!("git grep");
        };
        assert!(covers(&grep, &sh("git grep world"), Risk::Low, place()));
        assert!(!covers(
            &grep,
            &sh("git grep -O'touch /tmp/x' hello"),
            Risk::Low,
            place()
        ));
        assert!(!covers(
            &grep,
            &sh("git grep --open-files-in-pager=id hello"),
            Risk::Low,
            place()
        ));
        let Ok(iconv) = made("iconv -f utf-8 -t ascii README", "iconv") else {
            panic!("iconv");
        };
        assert_eq!(iconv.options, Some(vec!["-f".into(), "-t".into()]));
        assert!(covers(&iconv, &sh("iconv -f latin1 -t utf-8 NOTES"), Risk::Low, place()));
        assert!(!covers(
            &iconv,
            &sh("iconv -f utf-8 -t utf-8 -o.git/config notes.txt"),
            Risk::Low,
            place()
        ));
        for (cmd, pattern) in [("sed -n 1p README", "sed"), ("tar -cf b.tar README", "tar")] {
            let refused = made(cmd, pattern);
            assert!(refused.is_err(), "{cmd} / {pattern}");
        }
        let Ok(pinned) = made("sed -n 1p README", "sed -n 1p README") else {
            panic!("a pattern that is the whole command pins it");
        };
        assert!(covers(&pinned, &sh("sed -n 1p README"), Risk::Medium, place()));
        assert!(!covers(&pinned, &sh("sed -n 1p README '1e id'"), Risk::Medium, place()));
        let old = Terms {
            options: None,
            ..row(&GrantSpec::for_action(&sh("ls -l src"), Some("ls"), place()).unwrap())
        };
        assert!(covers(&old, &sh("ls docs"), Risk::Low, place()));
        assert!(!covers(&old, &sh("ls -l docs"), Risk::Low, place()), "no options recorded: none");
    }

    fn permission(implied: Option<Action>) -> Action {
        Action::Permission(crate::action::Permission {
            kind: "edit".into(),
            title: "WriteFile".into(),
            reported: serde_json::json!({"rawInput": {"file_path": "docs/a.md"}}),
            implied: implied.map(Box::new),
            unread: None,
            recall: false,
        })
    }

    #[test]
    fn a_lasting_grant_from_an_agents_permission_is_a_grant_on_what_it_reported() {
        let asked = permission(Some(write("docs/a.md")));
        let spec = GrantSpec::for_action(&asked, Some("docs/**"), place())
            .unwrap();
        assert_eq!(
            (spec.tool.as_str(), spec.matcher),
            ("fs.write", Matcher::Glob),
            "an ordinary file grant, listed and revoked like the others"
        );
        let g = row(&spec);
        assert!(covers(&g, &permission(Some(write("docs/b.md"))), Risk::Medium, place()));
        assert!(covers(&g, &write("docs/c.md"), Risk::Medium, place()), "Reins' own write too");
        assert!(!covers(&g, &permission(Some(write("src/x.rs"))), Risk::Medium, place()));
        assert!(!covers(&g, &permission(None), Risk::High, place()));
        let exact = row(&GrantSpec::for_action(&asked, None, place()).unwrap());
        assert_eq!(exact.tool, "fs.write");
        assert!(covers(&exact, &permission(Some(write("docs/a.md"))), Risk::Medium, place()));
        assert!(!covers(&exact, &permission(Some(write("docs/b.md"))), Risk::Medium, place()));
        let mut revoked = exact.clone();
        revoked.revoked = true;
        assert!(!covers(&revoked, &asked, Risk::Medium, place()));
    }

    #[test]
    fn a_report_reins_cannot_read_is_granted_only_exactly() {
        let unread = permission(None);
        assert!(GrantSpec::for_action(&unread, Some("**"), place()).is_err());
        let g = row(&GrantSpec::for_action(&unread, None, place()).unwrap());
        assert_eq!(g.tool, "agent.permission");
        assert!(covers(&g, &unread, Risk::High, place()));
    }

    #[test]
    fn a_glob_grant_never_covers_a_protected_path() {
        let spec = GrantSpec::for_action(&write("docs/a.md"), Some("**"), place())
            .unwrap();
        let g = row(&spec);
        assert!(covers(&g, &write("src/x.rs"), Risk::Medium, place()));
        assert!(!covers(
            &g,
            &write(".git/hooks/pre-commit"),
            Risk::Medium,
            place()
        ));
        assert!(!covers(&g, &write("src/x.rs"), Risk::High, place()));
        let exact =
            row(&GrantSpec::for_action(&write("a"), None, place())
                .unwrap());
        assert!(
            covers(&exact, &write("a"), Risk::High, place()),
            "an exact grant is what the person saw"
        );
        assert!(!covers(&exact, &write("b"), Risk::Medium, place()));
    }
}

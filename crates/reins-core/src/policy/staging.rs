//! `[staging]` in the person's policy file: programs whose commands are never staged (shown and
//! approved as commands: `git push`, a deploy tool, whose effects lie elsewhere) and programs whose
//! commands are always staged and reviewed, even where a rule would allow them (`make`: see what
//! it does every time). An entry is a program's name, or a program and its first words.

use serde::Deserialize;

use super::rules::PolicyError;
use super::shell::Segment;

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Staging {
    #[serde(default)]
    pub never: Vec<String>,
    #[serde(default)]
    pub always: Vec<String>,
}

impl Staging {
    /// Refuses an empty entry, or one that names a path rather than a program.
    pub(super) fn checked(self, origin: &str) -> Result<Self, PolicyError> {
        for entry in self.never.iter().chain(&self.always) {
            let program = entry.split_whitespace().next().unwrap_or_default();
            if program.is_empty() || program.contains('/') {
                return Err(PolicyError::Parse {
                    path: origin.into(),
                    detail: format!(
                        "[staging] {entry:?}: name a program (and its first words), like \"git push\""
                    ),
                });
            }
        }
        Ok(self)
    }

    /// The entry of `list` that names one of a command's `segments`, if any.
    fn named<'a>(list: &'a [String], segments: &[Segment]) -> Option<&'a str> {
        list.iter()
            .find(|entry| segments.iter().any(|s| names(entry, s)))
            .map(String::as_str)
    }

    /// The `never` entry a command's segments fall under: it is not staged.
    pub fn never(&self, segments: &[Segment]) -> Option<&str> {
        Self::named(&self.never, segments)
    }

    /// The `always` entry a command's segments fall under: it is staged and reviewed.
    pub fn always(&self, segments: &[Segment]) -> Option<&str> {
        Self::named(&self.always, segments)
    }
}

/// Whether `entry` ("git push") names `segment`: its program by base name, then its first words.
fn names(entry: &str, segment: &Segment) -> bool {
    let mut want = entry.split_whitespace();
    let Some(program) = want.next() else {
        return false;
    };
    let base = segment.program.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p));
    if base != Some(program) {
        return false;
    }
    let rest: Vec<&str> = want.collect();
    let words: Vec<&str> = segment.text.split_whitespace().skip(1).collect();
    words.len() >= rest.len() && words.iter().zip(&rest).all(|(w, r)| w == r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::{analyse_command, Place};
    use crate::policy::Protected;

    fn segments(command: &str) -> Vec<Segment> {
        analyse_command(
            command,
            Place {
                root: std::path::Path::new("/work/app"),
                protected: &Protected::NONE,
            },
        )
        .segments
    }

    #[test]
    fn an_entry_names_a_program_and_its_first_words_in_any_segment() {
        let s = Staging {
            never: vec!["git push".into(), "deploy".into()],
            always: vec!["make".into()],
        };
        assert_eq!(s.never(&segments("git push origin main")), Some("git push"));
        assert_eq!(s.never(&segments("make && git push")), Some("git push"));
        assert_eq!(s.never(&segments("git pull")), None);
        assert_eq!(s.never(&segments("/usr/local/bin/deploy --prod")), Some("deploy"));
        assert_eq!(s.always(&segments("make all")), Some("make"));
        assert_eq!(s.always(&segments("cmake .")), None);
    }

    #[test]
    fn a_path_or_an_empty_entry_is_refused() {
        for bad in ["", "/usr/bin/make", "  "] {
            let s = Staging {
                never: vec![bad.into()],
                always: Vec::new(),
            };
            assert!(s.checked("policy.toml").is_err(), "{bad:?}");
        }
    }
}

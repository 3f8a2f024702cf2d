//! Paths a command names: `cd`, arguments and redirections, judged against the workspace and the
//! protected paths.

use brush_parser::ast::{IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};

use super::word::Word;
use super::{absolute, lexical, raise, short, Segment, Walk};
use crate::policy::programs::{self, Class};
use crate::policy::{credentials, Risk};

impl Walk<'_> {
    /// `cd`: later relative paths land where it goes. Outside the workspace, home, `-` or a
    /// directory only known at run time would make every later path unknowable: high.
    pub(super) fn change_dir(&mut self, args: &[Word], seg: &mut Segment) {
        let target = args.iter().find(|w| {
            !w.literal
                .as_deref()
                .is_some_and(|l| l.starts_with('-') && l.len() > 1)
        });
        let Some(target) = target else {
            raise(seg, Risk::High, "`cd` without a folder goes to the home directory, outside the workspace; later paths land there".into());
            return;
        };
        let Some(lit) = target.literal.as_deref().filter(|_| !target.pattern) else {
            raise(seg, Risk::High, format!("changes to a folder only known at run time (`{}`); later paths cannot be judged", short(&target.raw)));
            return;
        };
        if lit == "-" {
            raise(
                seg,
                Risk::High,
                "`cd -` goes back to a folder Reins cannot see; later paths cannot be judged"
                    .into(),
            );
            return;
        }
        let base = self
            .cwd
            .clone()
            .unwrap_or_else(|| self.place.root.to_owned());
        let to = lexical(&if lit.starts_with('/') {
            std::path::PathBuf::from(lit)
        } else {
            base.join(lit)
        });
        if to.starts_with(self.place.root) {
            self.cwd = Some(to);
        } else {
            raise(
                seg,
                Risk::High,
                format!("changes to {lit}, outside the workspace: later commands act there"),
            );
        }
    }

    /// Judges a word that may name a path: protected anywhere is high; outside the workspace is
    /// medium for a program that only reads it and high for any other (it may write there, and
    /// the value of a write option such as `-o` or `--output=` always does). An option's attached
    /// value (`-o/tmp/x`, `-o.git/config`) is judged too, and so is a glob that may expand to a
    /// hidden name.
    pub(super) fn path_word(
        &self,
        w: &Word,
        class: Class,
        program: &str,
        prev: Option<&str>,
        seg: &mut Segment,
    ) {
        let value_of_write = prev.is_some_and(|o| {
            o.starts_with('-')
                && !o.contains('=')
                && (o.starts_with("--") || o.chars().count() == 2)
                && programs::writes_through(program, o)
        });
        let writes = class != Class::Reads || value_of_write;
        if w.home || w.literal.is_none() {
            if let Some(what) = credentials::holds(&w.raw) {
                raise(seg, Risk::High, credential_reason(&w.raw, what));
                return;
            }
        }
        if w.home {
            raise(
                seg,
                if writes { Risk::High } else { Risk::Medium },
                format!(
                    "`{}` is in a home directory, outside the workspace",
                    short(&w.raw)
                ),
            );
            return;
        }
        let Some(lit) = &w.literal else {
            // A write option whose value is only known at run time (`-o$HOME/x`, `-o "$F"`).
            let attached = w.raw.strip_prefix('-').and_then(|o| o.chars().next()).is_some_and(
                |c| c != '-' && programs::writes_through(program, &format!("-{c}")),
            );
            let long = w
                .raw
                .split_once('=')
                .is_some_and(|(k, _)| k.starts_with("--") && programs::writes_through(program, k));
            if value_of_write || attached || long {
                raise(
                    seg,
                    Risk::High,
                    format!(
                        "writes to `{}`, a path only known at run time",
                        short(&w.raw)
                    ),
                );
            }
            return;
        };
        if w.pattern {
            // rm removes what a glob names, links included, never what they point to: a glob in
            // the last part alone cannot leave the folder.
            let unlinks = program == "rm" && !lit.rsplit_once('/').is_some_and(|(dir, _)| dir.contains(['*', '?', '[', '{']));
            let writes = (class == Class::Writes || value_of_write) && !unlinks;
            if let Some(why) = pattern_reach(lit, writes) {
                raise(seg, Risk::High, why);
                return;
            }
        }
        if let Some(option) = lit.strip_prefix('-').filter(|o| !o.is_empty()) {
            let judged = if let Some((key, value)) = lit.split_once('=') {
                Some((value, writes || programs::writes_through(program, key)))
            } else if !option.starts_with('-') {
                // `-o/tmp/x`: the letter, then its value.
                let mut chars = option.chars();
                let letter = chars.next().map(|c| format!("-{c}")).unwrap_or_default();
                let value = chars.as_str();
                let write = programs::writes_through(program, &letter);
                (write || looks_like_path(value)).then_some((value, write))
            } else {
                None
            };
            if let Some((value, write)) = judged.filter(|(v, _)| !v.is_empty()) {
                if let Some((risk, why)) = self.judge_path(value, write) {
                    raise(seg, risk, why);
                }
            }
            return;
        }
        let candidate = match lit.split_once('=') {
            Some((k, v)) if !k.contains('/') => v,
            _ => lit.as_str(),
        };
        if candidate.is_empty() {
            return;
        }
        if let Some((risk, why)) = self.judge_path(candidate, writes) {
            raise(seg, risk, why);
        }
    }

    /// A path's risk: None when it is an ordinary path inside the workspace.
    pub(super) fn judge_path(&self, p: &str, writes: bool) -> Option<(Risk, String)> {
        if matches!(
            p,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "-"
        ) {
            return None;
        }
        let root = self.place.root;
        let joined = if p.starts_with('/') {
            std::path::PathBuf::from(p)
        } else {
            self.cwd.as_deref().unwrap_or(root).join(p)
        };
        let abs = match self.resolve(&joined) {
            Ok(abs) => abs,
            Err(why) => return Some((Risk::High, format!("`{}` {why}", short(p)))),
        };
        let inside = abs
            .strip_prefix(root)
            .ok()
            .map(|r| r.to_string_lossy().into_owned());
        match inside {
            Some(rel) => self
                .place
                .protected
                .why(root, &rel)
                .map(|why| (Risk::High, why)),
            None => {
                if let Some(what) = credentials::holds(&abs.to_string_lossy()) {
                    return Some((Risk::High, credential_reason(p, what)));
                }
                if let Some(why) = self.place.protected.why_absolute(&abs) {
                    return Some((Risk::High, format!("{p} is a protected path: {why}")));
                }
                Some(if writes {
                    (
                        Risk::High,
                        format!("may write {p}, outside the workspace"),
                    )
                } else {
                    (
                        Risk::Medium,
                        format!("refers to {p}, outside the workspace"),
                    )
                })
            }
        }
    }

    /// Where a path lands, `..` taken physically: a link before a `..` is followed first, as
    /// the kernel does. A path through a link this same command makes cannot be known.
    fn resolve(&self, joined: &std::path::Path) -> Result<std::path::PathBuf, String> {
        use std::path::Component;
        let parts: Vec<Component<'_>> = joined.components().collect();
        let mut out = std::path::PathBuf::new();
        for (i, c) in parts.iter().enumerate() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => {
                    out.push(other);
                    if let Some(link) = self.links.iter().find(|l| **l == out) {
                        if i + 1 < parts.len() {
                            return Err(format!(
                                "goes through {}, a link this command makes: where it leads is only known when it runs",
                                link.display()
                            ));
                        }
                    }
                    let climbs = parts.get(i + 1) == Some(&Component::ParentDir);
                    if climbs && std::fs::symlink_metadata(&out).is_ok_and(|m| m.is_symlink()) {
                        out = std::fs::canonicalize(&out).map_err(|_| {
                            "climbs out of a link with `..` that Reins cannot resolve".to_owned()
                        })?;
                    }
                }
            }
        }
        Ok(absolute(&out))
    }

    /// Remembers the link an `ln` makes, so later parts of the command cannot hide behind it.
    pub(super) fn note_link(&mut self, operands: &[&str]) {
        let name = match operands {
            [] => return,
            [target] => target.rsplit('/').next().unwrap_or(target),
            [.., last] => last,
        };
        let base = self.cwd.clone().unwrap_or_else(|| self.place.root.to_owned());
        self.links.push(lexical(&base.join(name)));
    }

    pub(super) fn redirect(&mut self, r: &IoRedirect, seg: &mut Segment) {
        match r {
            IoRedirect::File(_, kind, target) => {
                let writes = !matches!(
                    kind,
                    IoFileRedirectKind::Read
                        | IoFileRedirectKind::DuplicateInput
                        | IoFileRedirectKind::DuplicateOutput
                );
                match target {
                    IoFileRedirectTarget::Filename(w) => {
                        self.redirect_target(&w.value, writes, seg)
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::Duplicate(w) => {
                        let word = Word::parse(&w.value);
                        let fd_like = word.literal.as_deref().is_some_and(|l| {
                            l == "-" || l.trim_end_matches('-').chars().all(|c| c.is_ascii_digit())
                        });
                        if !fd_like {
                            self.redirect_target(&w.value, true, seg);
                        }
                    }
                    IoFileRedirectTarget::ProcessSubstitution(..) => raise(
                        seg,
                        Risk::High,
                        "redirects through a process substitution".into(),
                    ),
                }
            }
            IoRedirect::OutputAndError(w, _) => self.redirect_target(&w.value, true, seg),
            IoRedirect::HereString(_, w) => {
                if Word::parse(&w.value).substitution {
                    raise(
                        seg,
                        Risk::High,
                        "a here-string runs a command substitution".into(),
                    );
                }
            }
            IoRedirect::HereDocument(_, doc) => {
                if !doc.requires_expansion {
                    return;
                }
                if doc.doc.value.contains("$(") || doc.doc.value.contains('`') {
                    raise(
                        seg,
                        Risk::High,
                        "a here-document runs a command substitution".into(),
                    );
                } else if let Some(why) = super::code::expanded_text(&doc.doc.value) {
                    raise(seg, Risk::High, format!("a here-document expands: {why}"));
                }
            }
        }
    }

    pub(super) fn redirect_target(&mut self, raw: &str, writes: bool, seg: &mut Segment) {
        let w = Word::parse(raw);
        let verb = if writes { "writes" } else { "reads" };
        let network = |p: &str| p.starts_with("/dev/tcp/") || p.starts_with("/dev/udp/");
        if w.literal.as_deref().is_some_and(network) || network(raw) {
            raise(
                seg,
                Risk::High,
                format!("redirection to `{}`: bash opens a network connection, which can send files anywhere", short(raw)),
            );
            return;
        }
        match (&w.literal, w.pattern) {
            (Some(p), false) => match self.judge_path(p, writes) {
                Some((risk, why)) => raise(seg, risk, format!("redirection: {why}")),
                None if writes && !p.starts_with("/dev/") => {
                    raise(seg, Risk::Medium, format!("{verb} {p} (redirection)"))
                }
                None => {}
            },
            _ if credentials::holds(raw).is_some() => {
                let what = credentials::holds(raw).unwrap_or_default();
                raise(seg, Risk::High, format!("redirection: {}", credential_reason(raw, what)));
            }
            _ if w.home => raise(
                seg,
                Risk::High,
                format!(
                    "redirection: {verb} `{}`, in a home directory outside the workspace",
                    short(raw)
                ),
            ),
            _ => raise(
                seg,
                Risk::High,
                format!(
                    "{verb} a file whose name is only known at run time (`{}`)",
                    short(raw)
                ),
            ),
        }
    }
}

/// Why a glob may reach what it should not: a component that can expand to a hidden name (bash
/// matches a leading `.` only when the pattern spells it, or through a bracket or brace), or, for
/// a write, any glob at all.
fn pattern_reach(lit: &str, writes: bool) -> Option<String> {
    let hidden = lit.split('/').any(|part| {
        part.contains(['*', '?', '[', '{'])
            && (part.starts_with(['.', '[', '{']) || part.contains("{.") || part.contains(",."))
    });
    if hidden {
        return Some(format!(
            "`{}` is a pattern that can expand to hidden names such as .git or .env: Reins cannot see which",
            short(lit)
        ));
    }
    writes.then(|| {
        format!(
            "writes to whatever `{}` expands to: Reins cannot see which files those are",
            short(lit)
        )
    })
}

/// An attached option value that names a path (`/usr/include`, `.git/config`), not a letter or
/// a separator.
fn looks_like_path(value: &str) -> bool {
    value.len() > 1 && (value.contains('/') || value.starts_with('.'))
}

fn credential_reason(path: &str, what: &str) -> String {
    format!(
        "`{}` is a credential location ({what}): what is read there can leave the machine",
        short(path)
    )
}

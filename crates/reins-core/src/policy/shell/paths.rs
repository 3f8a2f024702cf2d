//! Paths a command names: `cd`, arguments and redirections, judged against the workspace and the
//! protected paths.

use brush_parser::ast::{IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};

use super::word::Word;
use super::{lexical, raise, short, Segment, Walk};
use crate::policy::programs::Class;
use crate::policy::Risk;

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
    /// medium to read and high to write.
    pub(super) fn path_word(&self, w: &Word, class: Class, seg: &mut Segment) {
        let writes = class == Class::Writes;
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
        let Some(lit) = &w.literal else { return };
        let candidate = match lit.split_once('=') {
            Some((k, v)) if k.starts_with('-') || !k.contains('/') => v,
            _ => lit.as_str(),
        };
        if candidate.is_empty() || (candidate.starts_with('-') && !candidate.contains('/')) {
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
        let abs = lexical(&joined);
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
                if let Some(why) = self.place.protected.why_absolute(&abs) {
                    return Some((Risk::High, format!("{p} is a protected path: {why}")));
                }
                Some(if writes {
                    (Risk::High, format!("writes {p}, outside the workspace"))
                } else {
                    (
                        Risk::Medium,
                        format!("refers to {p}, outside the workspace"),
                    )
                })
            }
        }
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

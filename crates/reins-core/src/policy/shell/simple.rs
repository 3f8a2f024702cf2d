//! One simple command: its prefix assignments, redirections and words, then the program and what
//! its arguments say.

use brush_parser::ast::{self, CommandPrefixOrSuffixItem, IoRedirect};

use super::word::Word;
use super::{program_name, raise, short, Walk};
use crate::policy::{programs, Risk};

impl Walk<'_> {
    pub(super) fn simple(&mut self, cmd: &ast::SimpleCommand) {
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut redirects = Vec::new();
        let items = cmd
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .chain(cmd.suffix.iter().flat_map(|s| s.0.iter()));
        let mut name_seen = false;
        let prefix_len = cmd.prefix.as_ref().map(|p| p.0.len()).unwrap_or(0);
        for (i, item) in items.enumerate() {
            if i == prefix_len && !name_seen {
                if let Some(w) = &cmd.word_or_name {
                    words.push(Word::parse(&w.value));
                }
                name_seen = true;
            }
            match item {
                CommandPrefixOrSuffixItem::Word(w) => words.push(Word::parse(&w.value)),
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    if words.is_empty() {
                        assignments.push((a.clone(), w.value.clone()));
                    } else {
                        // `declare X=…` style: a word for the program.
                        words.push(Word::parse(&w.value));
                    }
                }
                CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
                CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                    let mut w = Word {
                        raw: format!("{kind}({sub})"),
                        substitution: true,
                        ..Word::default()
                    };
                    w.expands.push("a process substitution".into());
                    words.push(w);
                }
            }
        }
        if !name_seen {
            if let Some(w) = &cmd.word_or_name {
                words.push(Word::parse(&w.value));
            }
        }
        self.command(cmd.to_string(), &words, assignments, redirects);
    }

    /// Classifies one simple command from its words, prefix assignments and redirections.
    pub(super) fn command(
        &mut self,
        text: String,
        words: &[Word],
        assignments: Vec<(ast::Assignment, String)>,
        redirects: Vec<IoRedirect>,
    ) {
        let mut seg = self.bare_segment(text);
        if !assignments.is_empty() || !redirects.is_empty() {
            self.plain = false;
        }
        for (a, raw) in &assignments {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n) => n.clone(),
                ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            if let Some(why) = programs::exec_capable_variable(&name) {
                raise(&mut seg, Risk::High, format!("sets {name}, which {why}"));
            }
            if let ast::AssignmentName::ArrayElementName(_, subscript) = &a.name {
                if let Some(why) = super::code::arithmetic(subscript) {
                    raise(
                        &mut seg,
                        Risk::High,
                        format!("assigns an element of {name} whose subscript {why}"),
                    );
                }
            }
            let value = raw.split_once('=').map(|(_, v)| v).unwrap_or("");
            let value = Word::parse(value);
            if value.substitution {
                raise(
                    &mut seg,
                    Risk::High,
                    format!("assigns {name} the output of a command substitution"),
                );
            }
            if let Some(why) = &value.code {
                raise(&mut seg, Risk::High, format!("assigns {name}: {why}"));
            }
            if value.literal.as_deref().is_some_and(programs::holds_code) {
                raise(
                    &mut seg,
                    Risk::High,
                    format!("stores text holding `$(…)` in {name}: bash runs it if the value is ever evaluated as arithmetic or a prompt"),
                );
            }
        }
        for r in &redirects {
            self.redirect(r, &mut seg);
        }
        for w in words {
            if let Some(why) = &w.code {
                raise(&mut seg, Risk::High, why.clone());
            }
            if w.substitution {
                raise(
                    &mut seg,
                    Risk::High,
                    format!(
                        "`{}` runs a command or process substitution: its output becomes part of the command, so nobody can review what runs",
                        short(&w.raw)
                    ),
                );
            }
        }
        let Some(first) = words.first() else {
            if assignments.is_empty() && redirects.is_empty() {
                raise(&mut seg, Risk::High, "an empty command".into());
            }
            self.push(seg);
            return;
        };
        let program = match (&first.literal, first.pattern) {
            (Some(p), false) => p.clone(),
            _ => {
                raise(
                    &mut seg,
                    Risk::High,
                    format!(
                        "the program name `{}` is only known at run time",
                        short(&first.raw)
                    ),
                );
                seg.args = words[1..].iter().map(Word::shown).collect();
                self.push(seg);
                return;
            }
        };
        if words.iter().any(|w| w.pattern || w.literal.is_none()) {
            self.plain = false;
        }
        let args: Vec<Option<String>> = words[1..].iter().map(|w| w.literal.clone()).collect();
        for w in &words[1..] {
            if w.literal.is_none() && !w.substitution {
                self.plain = false;
                raise(
                    &mut seg,
                    Risk::Medium,
                    format!("expands {} at run time", w.expands.join(", ")),
                );
            }
        }
        let base = program_name(&program);
        if !program.contains('/') {
            if let Some(wrapped) = programs::unwrap(&base, &args) {
                self.wrapped(seg.text, words, wrapped, assignments, redirects);
                return;
            }
        }
        if matches!(base.as_str(), "cd" | "pushd") {
            self.change_dir(&words[1..], &mut seg);
        }
        let verdict = programs::classify(&base, &args);
        if program.contains('/') && !program.starts_with('/') {
            match self.judge_path(&program, true) {
                Some((_, why)) => raise(&mut seg, Risk::High, format!("runs `{program}`: {why}")),
                None => raise(
                    &mut seg,
                    Risk::Medium,
                    format!("runs `{program}`, a program from the workspace (project code, like a build)"),
                ),
            }
        } else {
            for (risk, reason) in &verdict.reasons {
                raise(&mut seg, *risk, reason.clone());
            }
        }
        if !programs::ignores_paths(&base) {
            let mut prev: Option<&str> = None;
            let link_target = if base == "ln" { symlink_target(&words[1..]) } else { None };
            for (i, w) in words[1..].iter().enumerate() {
                match &link_target {
                    // A relative symlink target is read from the link's folder, not from here.
                    Some((at, folder)) if *at == i => {
                        let here = self.cwd.clone();
                        let base_dir = here.clone().unwrap_or_else(|| self.place.root.to_owned());
                        self.cwd = Some(super::lexical(&base_dir.join(folder)));
                        self.path_word(w, verdict.class, &base, prev, &mut seg);
                        self.cwd = here;
                    }
                    _ => self.path_word(w, verdict.class, &base, prev, &mut seg),
                }
                prev = w.literal.as_deref();
            }
        }
        if base == "ln" {
            let operands: Vec<&str> = args
                .iter()
                .flatten()
                .map(String::as_str)
                .filter(|a| !a.starts_with('-'))
                .collect();
            self.note_link(&operands);
        }
        seg.program = Some(program);
        seg.args = words[1..].iter().map(Word::shown).collect();
        self.push(seg);
    }

    /// A wrapper (`timeout`, `nice`, `env`, `xargs`, …): the wrapped command is classified in its
    /// place, under the wrapper's whole text, with env's assignments judged as prefix assignments.
    fn wrapped(
        &mut self,
        text: String,
        words: &[Word],
        wrapped: programs::Unwrapped,
        assignments: Vec<(ast::Assignment, String)>,
        redirects: Vec<IoRedirect>,
    ) {
        self.plain = false;
        let wrapper = words[0].shown();
        let inner = &words[1 + wrapped.at..];
        let at = self.segments.len();
        self.command(text, inner, assignments, redirects);
        let Some(seg) = self.segments.get_mut(at) else {
            return;
        };
        for (name, value) in &wrapped.env {
            if let Some(why) = programs::exec_capable_variable(name) {
                raise(seg, Risk::High, format!("`{wrapper}` sets {name}, which {why}"));
            }
            if programs::holds_code(value) {
                raise(seg, Risk::High, format!("`{wrapper}` stores text holding `$(…)` in {name}: bash runs it if the value is ever evaluated"));
            }
        }
        if wrapped.from_input {
            let program = seg.program.clone().unwrap_or_default();
            let base = program_name(&program);
            let args: Vec<Option<String>> = inner[1..].iter().map(|w| w.literal.clone()).collect();
            let reads = programs::classify(&base, &args).class == programs::Class::Reads
                || programs::ignores_paths(&base);
            if reads {
                raise(seg, Risk::Medium, format!("`{wrapper}` gives `{program}` more arguments from its input: paths Reins cannot see"));
            } else {
                raise(seg, Risk::High, format!("`{wrapper}` gives `{program}` arguments from its input: Reins cannot see what it changes or runs"));
            }
        }
    }
}

/// For `ln -s TARGET LINK`: the index of TARGET among the arguments and the folder LINK is made in
/// (relative to where the command runs). None for other forms, which are judged as written.
fn symlink_target(args: &[Word]) -> Option<(usize, String)> {
    let lits: Vec<&str> = args.iter().map(|w| w.literal.as_deref()).collect::<Option<_>>()?;
    let symbolic = lits.iter().any(|a| {
        *a == "--symbolic" || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
    });
    let operands: Vec<usize> = (0..lits.len()).filter(|i| !lits[*i].starts_with('-')).collect();
    if !symbolic || operands.len() != 2 || lits.iter().any(|a| a.starts_with("-t") || a.starts_with("--target")) {
        return None;
    }
    let link = lits[operands[1]];
    let folder = if link.ends_with('/') {
        link.to_owned()
    } else {
        link.rsplit_once('/').map(|(d, _)| d.to_owned()).unwrap_or_default()
    };
    Some((operands[0], folder))
}

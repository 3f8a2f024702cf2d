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
        if matches!(base.as_str(), "cd" | "pushd") {
            self.change_dir(&words[1..], &mut seg);
        }
        let verdict = programs::classify(&base, &args);
        if program.contains('/') && !program.starts_with('/') {
            raise(
                &mut seg,
                Risk::High,
                format!("runs `{program}`, a program from the workspace: it can do anything"),
            );
        } else {
            for (risk, reason) in &verdict.reasons {
                raise(&mut seg, *risk, reason.clone());
            }
        }
        if !programs::ignores_paths(&base) {
            let mut prev: Option<&str> = None;
            for w in &words[1..] {
                self.path_word(w, verdict.class, &base, prev, &mut seg);
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
}

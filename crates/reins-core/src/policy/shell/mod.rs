//! The shell classifier. A command string is parsed with a real bash parser (brush-parser: pure Rust,
//! bash grammar including process substitution, here-docs and `[[ ]]`, and words split into typed
//! pieces, so an expansion is seen as an expansion rather than guessed from characters; tree-sitter's
//! grammar is error-tolerant, so a bad parse has to be hunted for, and yash-syntax knows POSIX sh
//! only). Every simple command in lists, pipelines, subshells, loops and conditionals becomes a
//! [`Segment`] with its own risk and reasons; the highest wins. Anything the classifier cannot fully
//! understand is high.

use std::path::{Component, Path};

use brush_parser::ast::{
    self, Command, CompoundCommand, CompoundList, IoRedirect, SeparatorOperator,
};
use serde::Serialize;

use super::programs;
use super::protected::{absolute, Protected};
use crate::text;
use super::Risk;

pub use crate::action::shell::MAX_COMMAND_BYTES;
/// Deepest nesting of brackets, braces and substitutions the parser is given. The parser's time
/// doubles with each unclosed `(` (found by fuzzing: 30 of them took seven minutes), so the bound
/// is also what keeps one command from stalling the worker. 16 still let unclosed `${x[` reach
/// seconds in the word parser (fuzzing again); at 12 no case found takes more than milliseconds,
/// and no everyday command nests half as deep.
const MAX_NESTING: usize = 12;
/// Deepest nesting of parentheses alone: the level at which the parser's doubling starts to cost
/// (found by fuzzing: twelve under a `$(` took seconds). Eight is tens of milliseconds at worst.
const MAX_PARENTHESES: usize = 8;
/// Most simple commands in one string.
const MAX_SEGMENTS: usize = 256;

/// One simple command and what the classifier made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Segment {
    /// The command as written.
    pub text: String,
    /// The program, when its name is a literal.
    pub program: Option<String>,
    /// The words after the program, literal where they are literal, as written otherwise.
    pub args: Vec<String>,
    pub risk: Risk,
    pub reasons: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Analysis {
    pub risk: Risk,
    /// Reasons that concern the whole command (parse failures, hidden characters, background jobs).
    pub reasons: Vec<String>,
    pub segments: Vec<Segment>,
    /// The argv to run without a shell, when the command is one plain simple command of literals.
    #[serde(skip)]
    pub direct_argv: Option<Vec<String>>,
}

impl Analysis {
    fn high(reason: String) -> Self {
        Self {
            risk: Risk::High,
            reasons: vec![reason],
            segments: Vec::new(),
            direct_argv: None,
        }
    }

    /// Whether a program it names reaches the network (curl, ssh, git clone, …): the card shows
    /// that program, and only then does the command's profile have a network.
    pub fn names_network(&self) -> bool {
        self.segments.iter().any(|s| {
            s.program
                .as_deref()
                .is_some_and(|p| crate::policy::programs::is_network(p.rsplit('/').next().unwrap_or(p)))
        })
    }

    /// Every reason, each segment's prefixed with its text.
    pub fn all_reasons(&self) -> Vec<String> {
        let mut out = self.reasons.clone();
        for s in &self.segments {
            for r in &s.reasons {
                out.push(format!("`{}`: {r}", short(&s.text)));
            }
        }
        out
    }
}

fn short(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 80 {
        one.chars().take(77).collect::<String>() + "…"
    } else {
        one
    }
}

/// Where a command runs, for judging the paths it names.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub root: &'a Path,
    pub protected: &'a Protected,
}

/// Classifies a command string.
pub fn analyse_command(command: &str, place: Place<'_>) -> Analysis {
    if command.trim().is_empty() {
        return Analysis::high("the command is empty".into());
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Analysis::high(format!(
            "the command is {} bytes, too long to review (limit {MAX_COMMAND_BYTES})",
            command.len()
        ));
    }
    if let Some(c) = control_character(command) {
        return Analysis::high(format!(
            "the command contains the control character U+{:04X}: it can hide what runs on a terminal, and no everyday command has one",
            c as u32
        ));
    }
    if nesting(command) > MAX_NESTING || parentheses(command) > MAX_PARENTHESES {
        return Analysis::high(format!(
            "the command nests brackets, substitutions or compound commands more than {MAX_NESTING} deep (parentheses more than {MAX_PARENTHESES}); too complex to review"
        ));
    }
    let (depth, unclosed) = bounds::expansions(command);
    if unclosed {
        return Analysis::high(
            "a parameter expansion's subscript is not closed (`${a[` with no `]`): bash refuses it as a bad substitution, and Reins will not guess what it means"
                .into(),
        );
    }
    if depth > bounds::MAX_EXPANSION_NESTING {
        return Analysis::high(format!(
            "the command nests parameter expansions (${{…}}) more than {} deep; too complex to review",
            bounds::MAX_EXPANSION_NESTING
        ));
    }
    let mut top = Vec::new();
    if let Some(r) = text::invisible_reason("the command", command) {
        top.push(r);
    }
    // The parser is given the command ending in a newline, which changes nothing for bash: at the
    // very end of its input, a here-document with an empty delimiter (`<<'' `) sent its tokenizer
    // into a loop that never ended (found by fuzzing).
    // So does a line continuation into nothing (`\` then only newlines) after one.
    if command.trim_end_matches('\n').ends_with('\\') {
        return Analysis::high(
            "the command ends with a backslash, which escapes nothing: what it means depends on what follows it"
                .into(),
        );
    }
    let ended = if command.ends_with('\n') {
        std::borrow::Cow::Borrowed(command)
    } else {
        std::borrow::Cow::Owned(format!("{command}\n"))
    };
    let parsed = std::panic::catch_unwind(|| {
        // As `bash -c` parses: without extended globs. With them, the parser backtracked
        // exponentially over expansions and quotes inside `!(…)` groups (found by fuzzing).
        let options = brush_parser::ParserOptions {
            enable_extended_globbing: false,
            ..brush_parser::ParserOptions::default()
        };
        brush_parser::Parser::new(std::io::BufReader::new(ended.as_bytes()), &options)
            .parse_program()
    });
    let program = match parsed {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            let mut a = Analysis::high(format!(
                "the command does not parse as shell ({e}); Reins cannot say what it does"
            ));
            a.reasons.extend(top);
            return a;
        }
        Err(_) => {
            let mut a = Analysis::high(
                "the shell parser failed on this command; Reins cannot say what it does".into(),
            );
            a.reasons.extend(top);
            return a;
        }
    };
    let mut walk = Walk {
        place,
        segments: Vec::new(),
        reasons: top,
        risk: Risk::Low,
        plain: true,
        cwd: None,
        links: Vec::new(),
    };
    for list in &program.complete_commands {
        walk.list(list, 0);
    }
    walk.finish()
}

/// Classifies an argv given directly (no shell involved, so nothing expands).
pub fn analyse_argv(argv: &[String], place: Place<'_>) -> Analysis {
    let mut walk = Walk {
        place,
        segments: Vec::new(),
        reasons: Vec::new(),
        risk: Risk::Low,
        plain: true,
        cwd: None,
        links: Vec::new(),
    };
    for (i, a) in argv.iter().enumerate() {
        if let Some(r) = text::invisible_reason(&format!("argument {i}"), a) {
            walk.reasons.push(r);
        }
    }
    let words: Vec<Word> = argv.iter().map(|a| Word::literal(a)).collect();
    walk.command(argv.join(" "), &words, Vec::new(), Vec::new());
    let mut a = walk.finish();
    a.direct_argv = Some(argv.to_vec());
    a
}

/// A control character other than tab, newline and a carriage return ending a line. Refused before
/// parsing: besides hiding text on a terminal, some send the bash parser into a loop that never
/// ends (found by fuzzing: `cat <<` then a form feed or a carriage return, then a space).
fn control_character(s: &str) -> Option<char> {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let allowed = match c {
            '\t' | '\n' => true,
            '\r' => chars.peek() == Some(&'\n'),
            _ => !c.is_control(),
        };
        if !allowed {
            return Some(c);
        }
    }
    None
}

/// How deeply brackets, braces, parentheses and compound commands (`if`, `while`, `until`, `for`,
/// `select`, `case`) nest, ignoring quotes: an over-estimate is safe. The parser and the walk
/// recurse once per level, so this bound is what keeps them on the stack.
/// How deeply parentheses nest, ignoring quotes (an over-estimate is safe). The parser's time
/// doubles with each level of them (`$((((…`, `?((((…`), so they have a bound of their own.
fn parentheses(s: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        max = max.max(depth);
    }
    max
}

fn nesting(s: &str) -> usize {
    // Counted apart: a `case` pattern's `)` closes no bracket.
    let (mut brackets, mut compounds, mut max) = (0usize, 0usize, 0usize);
    let mut word = String::new();
    let words = s.chars().map(Some).chain(std::iter::once(None));
    for c in words {
        if let Some(c) = c.filter(|c| c.is_alphanumeric() || *c == '_') {
            word.push(c);
            continue;
        }
        match word.as_str() {
            "if" | "while" | "until" | "for" | "select" | "case" => compounds += 1,
            "fi" | "done" | "esac" => compounds = compounds.saturating_sub(1),
            _ => {}
        }
        word.clear();
        match c {
            Some('(' | '{' | '[' | '`') => brackets += 1,
            Some(')' | '}' | ']') => brackets = brackets.saturating_sub(1),
            _ => {}
        }
        max = max.max(brackets + compounds);
    }
    max
}

mod bounds;
mod code;
mod paths;
mod simple;
mod word;

use word::Word;

struct Walk<'a> {
    place: Place<'a>,
    segments: Vec<Segment>,
    reasons: Vec<String>,
    risk: Risk,
    /// Still one plain simple command (could run without a shell).
    plain: bool,
    /// Where relative paths land after a `cd` inside the workspace (None: the workspace root).
    cwd: Option<std::path::PathBuf>,
    /// Links an `ln` earlier in this command makes: paths through them are unknowable.
    links: Vec<std::path::PathBuf>,
}

impl Walk<'_> {
    fn finish(mut self) -> Analysis {
        if !self.reasons.is_empty() {
            self.risk = self.risk.max(Risk::High).max(self.risk);
        }
        let risk = self
            .segments
            .iter()
            .map(|s| s.risk)
            .chain(std::iter::once(self.risk))
            .max()
            .unwrap_or(Risk::High);
        let direct_argv = (self.plain && self.segments.len() == 1).then(|| {
            let s = &self.segments[0];
            s.program
                .iter()
                .cloned()
                .chain(s.args.iter().cloned())
                .collect()
        });
        if self.segments.is_empty() && self.reasons.is_empty() {
            return Analysis::high("the command runs nothing Reins can see".into());
        }
        Analysis {
            risk,
            reasons: self.reasons,
            segments: self.segments,
            direct_argv,
        }
    }

    fn note(&mut self, risk: Risk, reason: String) {
        self.risk = self.risk.max(risk);
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    fn list(&mut self, list: &CompoundList, depth: usize) {
        if depth > MAX_NESTING {
            self.note(Risk::High, "the command nests too deeply to review".into());
            return;
        }
        if list.0.len() > 1 {
            self.plain = false;
        }
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if matches!(sep, SeparatorOperator::Async) {
                self.plain = false;
                self.note(
                    Risk::Medium,
                    "part of the command runs in the background (`&`)".into(),
                );
            }
            let pipelines =
                std::iter::once(&and_or.first).chain(and_or.additional.iter().map(|a| match a {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
                }));
            for (i, pipeline) in pipelines.enumerate() {
                if i > 0 || pipeline.seq.len() > 1 || pipeline.bang || pipeline.timed.is_some() {
                    self.plain = false;
                }
                let first = self.segments.len();
                for cmd in &pipeline.seq {
                    self.command_node(cmd, depth + 1);
                }
                self.pipeline_checks(first);
            }
        }
    }

    /// Data decoded and piped into something that runs code is the classic hidden payload.
    fn pipeline_checks(&mut self, first: usize) {
        let segs = &self.segments[first..];
        let decoder = segs.iter().position(|s| {
            s.program
                .as_deref()
                .is_some_and(|p| programs::is_decoder(&program_name(p), &s.args))
        });
        let runner = segs.iter().rposition(|s| {
            s.program
                .as_deref()
                .is_some_and(|p| programs::runs_code(&program_name(p)))
        });
        let network = segs.iter().position(|s| {
            s.program
                .as_deref()
                .is_some_and(|p| programs::is_network(&program_name(p)))
        });
        let decoded = matches!((decoder, runner), (Some(d), Some(r)) if d < r);
        let fetched = matches!((network, runner), (Some(n), Some(r)) if n < r);
        if decoded {
            self.note(
                Risk::High,
                "decodes data and pipes it into a program that runs code: what runs is hidden from review".into(),
            );
        }
        if fetched {
            self.note(
                Risk::High,
                "pipes data from the network into a program that runs code".into(),
            );
        }
    }

    fn command_node(&mut self, cmd: &Command, depth: usize) {
        if self.segments.len() >= MAX_SEGMENTS {
            self.note(
                Risk::High,
                format!("more than {MAX_SEGMENTS} commands in one string; too many to review"),
            );
            return;
        }
        match cmd {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.plain = false;
                if let Some(r) = redirects {
                    let rs: Vec<&IoRedirect> = r.0.iter().collect();
                    let mut seg = self.bare_segment(compound.to_string());
                    for io in rs {
                        self.redirect(io, &mut seg);
                    }
                    self.push(seg);
                }
                self.compound(compound, depth);
            }
            Command::Function(f) => {
                self.plain = false;
                self.note(
                    Risk::High,
                    format!(
                        "defines a shell function `{}`: it can stand in for any program name",
                        f.fname
                    ),
                );
                self.compound(&f.body.0, depth);
            }
            Command::ExtendedTest(t, _) => {
                self.plain = false;
                if let Some(why) = code::extended_test(&t.to_string()) {
                    self.note(Risk::High, why);
                }
            }
        }
    }

    fn compound(&mut self, c: &CompoundCommand, depth: usize) {
        self.plain = false;
        match c {
            CompoundCommand::BraceGroup(b) => self.list(&b.list, depth),
            CompoundCommand::Subshell(s) => self.list(&s.list, depth),
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.loose_word(&w.value);
                }
                self.list(&f.body.list, depth);
            }
            CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                self.list(&f.body.list, depth);
            }
            CompoundCommand::Arithmetic(a) => self.arithmetic(&a.expr.value),
            CompoundCommand::CaseClause(c) => {
                self.loose_word(&c.value.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.loose_word(&p.value);
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l, depth);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition, depth);
                self.list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, depth);
                    }
                    self.list(&e.body, depth);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
            CompoundCommand::Coprocess(_) => self.note(
                Risk::High,
                "starts a coprocess: a program that keeps running beside the shell".into(),
            ),
        }
    }

    fn arithmetic(&mut self, expr: &str) {
        if let Some(why) = code::arithmetic(expr) {
            self.note(Risk::High, format!("`(( {} ))`: {why}", short(expr)));
        }
    }

    /// A word outside any command (a `for` list, a `case` value): only substitutions matter.
    fn loose_word(&mut self, raw: &str) {
        let word = Word::parse(raw);
        if let Some(why) = word.code {
            self.note(Risk::High, why);
        }
        if word.substitution {
            self.note(
                Risk::High,
                format!(
                    "`{}` runs a command substitution: its output decides what runs",
                    short(raw)
                ),
            );
        }
    }

    fn bare_segment(&self, text: String) -> Segment {
        Segment {
            text,
            program: None,
            args: Vec::new(),
            risk: Risk::Low,
            reasons: Vec::new(),
        }
    }

    fn push(&mut self, seg: Segment) {
        self.segments.push(seg);
    }
}

fn raise(seg: &mut Segment, risk: Risk, reason: String) {
    seg.risk = seg.risk.max(risk);
    if !seg.reasons.contains(&reason) {
        seg.reasons.push(reason);
    }
}

/// The program's base name, folded so `/usr/bin/RM` and `rm` compare equal.
fn program_name(program: &str) -> String {
    let base = program.rsplit('/').next().unwrap_or(program);
    super::protected::fold(base)
}

/// `..` and `.` removed without touching the disk, then the deepest existing ancestor resolved so a
/// symlink out of the workspace is seen.
fn lexical(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    absolute(&out)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod code_tests;
#[cfg(test)]
mod paths_tests;

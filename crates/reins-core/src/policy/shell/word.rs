//! A shell word's meaning before the shell runs: its literal value, or what expands in it.

use brush_parser::word::{WordPiece, WordPieceWithSource};

/// A word's meaning, as far as the classifier can know it before the shell runs.
#[derive(Clone, Debug, Default)]
pub(super) struct Word {
    pub(super) raw: String,
    /// The word's value when it is a literal.
    pub(super) literal: Option<String>,
    /// `$(…)`, backquotes or `<(…)`: another command's output becomes part of this one.
    pub(super) substitution: bool,
    /// Why bash would run code while expanding this word although no substitution is written
    /// (arithmetic on a variable, a prompt expansion, a computed subscript).
    pub(super) code: Option<String>,
    /// What expands at run time (`$HOME`, `~`), for the reasons.
    pub(super) expands: Vec<String>,
    /// Unquoted glob or brace-expansion characters: one word may become many.
    pub(super) pattern: bool,
    pub(super) home: bool,
}

impl Word {
    pub(super) fn literal(s: &str) -> Self {
        Self {
            raw: s.into(),
            literal: Some(s.into()),
            ..Self::default()
        }
    }

    pub(super) fn parse(raw: &str) -> Self {
        // Read without extended globs, as `bash -c` reads (see `analyse_command`): the parser's
        // extglob rule backtracks exponentially over expansions and quotes inside `!(…)` groups.
        let options = brush_parser::ParserOptions {
            enable_extended_globbing: false,
            ..brush_parser::ParserOptions::default()
        };
        let mut w = Word {
            raw: raw.into(),
            ..Word::default()
        };

        // The word parser panics on some input (a `~` followed by a number too big for it, found
        // by fuzzing): that word is not understood, never a crash.
        let parsed = std::panic::catch_unwind(|| brush_parser::word::parse(raw, &options));
        match parsed {
            Ok(Ok(pieces)) => {
                let mut lit = String::new();
                let ok = w.pieces(raw, &pieces, &mut lit, false);
                if ok && !w.substitution && w.expands.is_empty() {
                    w.literal = Some(lit);
                }
            }
            Ok(Err(_)) | Err(_) => w.expands.push("a word the parser could not read".into()),
        }
        w
    }

    /// Appends literal text; false when something is not literal.
    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        lit: &mut String,
        quoted: bool,
    ) -> bool {
        let mut ok = true;
        for p in pieces {
            let piece = &p.piece;
            let src = raw.get(p.start_index..p.end_index).unwrap_or("");
            match piece {
                WordPiece::Text(s) => {
                    if !quoted
                        && (s.contains(['*', '?'])
                            || s.find('[').is_some_and(|at| s[at..].contains(']'))
                            || (s.contains('{') && (s.contains(',') || s.contains(".."))))
                    {
                        self.pattern = true;
                    }
                    lit.push_str(s);
                }
                WordPiece::SingleQuotedText(s) => lit.push_str(s),
                WordPiece::EscapeSequence(s) => lit.push_str(s.strip_prefix('\\').unwrap_or(s)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    let inner_ok = self.pieces(raw, inner, lit, true);
                    ok &= inner_ok;
                }
                WordPiece::AnsiCQuotedText(_) => {
                    self.expands.push(format!("ANSI-C quoting {src}"));
                    ok = false;
                }
                WordPiece::TildeExpansion(_) => {
                    self.home = true;
                    self.expands
                        .push("~ (a home directory, outside the workspace)".into());
                    ok = false;
                }
                WordPiece::ParameterExpansion(_) => {
                    if src.contains("$(") || src.contains('`') {
                        self.substitution = true;
                    }
                    if let Some(why) = super::code::parameter(src) {
                        self.code.get_or_insert(why);
                    }
                    self.expands.push(format!("the variable {src}"));
                    ok = false;
                }
                WordPiece::ArithmeticExpression(e) => {
                    if e.value.contains("$(") || e.value.contains('`') {
                        self.substitution = true;
                    } else if let Some(why) = super::code::arithmetic(&e.value) {
                        self.code.get_or_insert(format!("`{src}` {why}"));
                    }
                    self.expands.push(format!("the arithmetic {src}"));
                    ok = false;
                }
                WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
                    self.substitution = true;
                    ok = false;
                }
            }
        }
        ok
    }

    /// The literal value, or the word as written.
    pub(super) fn shown(&self) -> String {
        self.literal.clone().unwrap_or_else(|| self.raw.clone())
    }
}

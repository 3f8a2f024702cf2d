//! What the classifier refuses before the bash parser sees it, because the parser's time would
//! grow without bound: here, parameter expansions nested too deep or with a subscript left open.

/// Deepest nesting of parameter expansions (`${…${…}…}`): the parser's word parser multiplies its
/// time about twelvefold with each one that holds an unclosed subscript (`${a[${a[${a[${a[}}}}`
/// took two seconds; found by fuzzing). Two is what everyday defaults nest (`${A:-${B:-x}}`).
pub(super) const MAX_EXPANSION_NESTING: usize = 2;
/// How deep `${` nests inside `${` (other braces counted so that their `}` closes them, not an
/// expansion), and whether an expansion's subscript is left open (`${a[` with no `]` before its
/// `}`: bash's "bad substitution", and what makes the parser backtrack across the whole word).
/// Quoting is not looked at, so a literal `${` counts too — which only asks for review.
pub(super) fn expansions(s: &str) -> (usize, bool) {
    // One entry per open brace: whether it opened an expansion, and its open subscripts.
    let mut stack: Vec<(bool, usize)> = Vec::new();
    let (mut max, mut unclosed) = (0usize, false);
    let mut prev = '\0';
    for c in s.chars() {
        let inner = stack.iter_mut().rev().find(|(expansion, _)| *expansion);
        match c {
            '{' => stack.push((prev == '$', 0)),
            '}' => {
                if let Some((true, open)) = stack.pop() {
                    unclosed |= open > 0;
                }
            }
            '[' => {
                if let Some((_, open)) = inner {
                    *open += 1;
                }
            }
            ']' => {
                if let Some((_, open)) = inner {
                    *open = open.saturating_sub(1);
                }
            }
            _ => {}
        }
        max = max.max(stack.iter().filter(|(e, _)| *e).count());
        prev = c;
    }
    unclosed |= stack.iter().any(|(e, open)| *e && *open > 0);
    (max, unclosed)
}

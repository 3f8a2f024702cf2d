//! Where bash runs text as code although no command substitution is written: arithmetic evaluates a
//! variable's value, and an array subscript in that value (`a[$(cmd)]`) runs `cmd`; prompt
//! expansion (`${x@P}`) runs the substitutions in a value; `[[ a -eq b ]]` is arithmetic on both
//! sides. Each function says why, or None when the text is inert.

/// Whether arithmetic text names a variable (a name, or `$name`), not only numbers and operators.
/// `0x1f`, `16#ff` and `2#101` are numbers.
fn names_a_variable(expr: &str) -> bool {
    let mut in_token = false;
    for c in expr.chars() {
        let token_char = c.is_ascii_alphanumeric() || c == '_' || c == '#';
        if token_char && !in_token && (c.is_ascii_alphabetic() || c == '_') {
            return true;
        }
        in_token = token_char;
    }
    false
}

/// Why evaluating `expr` as arithmetic can run code.
pub(super) fn arithmetic(expr: &str) -> Option<String> {
    if expr.contains("$(") || expr.contains('`') {
        return Some("an arithmetic expression runs a command substitution".into());
    }
    names_a_variable(expr).then(|| {
        "evaluates a variable as arithmetic: bash evaluates the value too, and an array subscript in it (`a[$(…)]`) runs a command".into()
    })
}

/// Why a parameter expansion (`${…}` as written) can run code: prompt expansion, or a subscript
/// that is arithmetic on a variable.
pub(super) fn parameter(src: &str) -> Option<String> {
    if src.contains("@P") {
        return Some(format!(
            "`{src}` is a prompt expansion: bash runs the command substitutions in the value"
        ));
    }
    let inner = src.strip_prefix("${")?;
    let open = inner.find('[')?;
    let close = inner[open..].find(']')? + open;
    let subscript = &inner[open + 1..close];
    if matches!(subscript, "@" | "*") {
        return None;
    }
    arithmetic(subscript).map(|_| {
        format!("`{src}` indexes an array with a variable: bash evaluates the subscript as arithmetic, which can run code")
    })
}

/// Why a `[[ … ]]` test can run code.
pub(super) fn extended_test(text: &str) -> Option<String> {
    if text.contains("$(") || text.contains('`') {
        return Some("a `[[ … ]]` test runs a command substitution".into());
    }
    if text.contains("@P") {
        return Some("a `[[ … ]]` test uses a prompt expansion, which runs the command substitutions in a value".into());
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let arithmetic_op = matches!(*w, "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge");
        if arithmetic_op {
            let sides = [i.checked_sub(1).and_then(|j| words.get(j)), words.get(i + 1)];
            if sides.into_iter().flatten().any(|s| names_a_variable(s)) {
                return Some(format!(
                    "`[[ … {w} … ]]` compares as arithmetic: bash evaluates a variable's value, and an array subscript in it runs a command"
                ));
            }
        }
        if *w == "-v" && words.get(i + 1).is_some_and(|n| n.contains('[')) {
            return Some(
                "`[[ -v a[…] ]]` evaluates the subscript as arithmetic, which can run code".into(),
            );
        }
    }
    None
}

/// Why text that bash expands (an unquoted here-document's body) can run code beyond `$(…)`:
/// prompt expansions, arithmetic on variables, subscripts.
pub(super) fn expanded_text(body: &str) -> Option<String> {
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        let tail = &rest[at..];
        if let Some(expr) = tail.strip_prefix("$((") {
            let end = expr.find("))").unwrap_or(expr.len());
            if let Some(why) = arithmetic(&expr[..end]) {
                return Some(why);
            }
        } else if tail.starts_with("${") {
            let end = tail.find('}').map(|e| e + 1).unwrap_or(tail.len());
            if let Some(why) = parameter(&tail[..end]) {
                return Some(why);
            }
        }
        rest = &tail[1..];
    }
    None
}

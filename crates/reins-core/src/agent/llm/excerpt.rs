//! What the model is told a step returned: the output, or its head and tail with where the whole is
//! kept when it is long.

use super::{Observation, RESULT_EXCERPT_BYTES};

/// What the model is told a step returned.
pub(super) fn told(obs: &Observation) -> String {
    let artifact = obs.artifact.as_ref().map(|d| d.to_string());
    let cut = excerpt(&obs.output, obs.seq, artifact.as_deref());
    if obs.ok {
        cut
    } else {
        format!("error: {cut}")
    }
}

/// Head and tail of a long result, with where the whole is.
pub fn excerpt(text: &str, seq: i64, artifact: Option<&str>) -> String {
    if text.len() <= RESULT_EXCERPT_BYTES {
        return text.to_owned();
    }
    let whole = match artifact {
        Some(a) => {
            format!("artifact {a} in the blob store; `reins show RUN --step {seq}` prints it")
        }
        None => format!("`reins show RUN --step {seq}` prints it"),
    };
    let head = floor(text, RESULT_EXCERPT_BYTES * 3 / 4);
    let tail_start = ceil(text, text.len() - RESULT_EXCERPT_BYTES / 4);
    format!(
        "{}\n[… {} bytes omitted; the whole output is kept: {whole} …]\n{}",
        &text[..head],
        tail_start - head,
        &text[tail_start..]
    )
}

fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

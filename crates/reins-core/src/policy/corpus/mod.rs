//! Two corpora of shell commands, kept beside each other: everyday developer commands that must not
//! rate high (over-flagging trains people to approve without reading), and commands that run code,
//! write where they should not, reach the network or read credentials, which must rate high. The
//! unit tests hold the classifier to both, and the policy bench prints both rates.

/// Everyday commands: git, build and test tools, text tools and inspection.
pub const BENIGN: &str = include_str!("benign.txt");
/// Commands that must be reviewed, each using one capability of a program Reins knows.
pub const DANGEROUS: &str = include_str!("dangerous.txt");

/// The commands of a corpus: one per line, skipping blank lines and `#` comments.
pub fn commands(corpus: &str) -> impl Iterator<Item = &str> {
    corpus
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

#[cfg(test)]
mod tests;

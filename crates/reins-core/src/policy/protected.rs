//! Protected paths: always high risk, whatever the rules say. Writing them runs code (git hooks,
//! editor tasks, agent config), leaks secrets (`.env`), or changes Reins itself (its data, config and
//! policy). Names are compared after Unicode normalisation (NFKC), case folding and removing the
//! characters some filesystems ignore, so `.GIT/config`, `.git\u{200c}/hooks` and `.Git./config` are
//! all `.git/config`.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Folders whose contents configure a tool that runs code or steers an agent.
const CONFIG_DIRS: &[(&str, &str)] = &[
    (
        ".vscode",
        "editor config: tasks and settings here can run commands",
    ),
    (
        ".idea",
        "editor config: run configurations here can run commands",
    ),
    (".fleet", "editor config"),
    (".zed", "editor config: tasks here can run commands"),
    (
        ".devcontainer",
        "container config: it runs commands when the folder opens",
    ),
    (
        ".github",
        "CI config: workflows here run code with the repository's secrets",
    ),
    (".gitlab", "CI config"),
    (".husky", "git hook scripts: they run on every commit"),
    (".cursor", "agent config: it steers what an AI agent does"),
    (".claude", "agent config: it steers what an AI agent does"),
    (".cline", "agent config: it steers what an AI agent does"),
    (
        ".clinerules",
        "agent rules: they steer what an AI agent does",
    ),
    (".roo", "agent config: it steers what an AI agent does"),
    (".continue", "agent config: it steers what an AI agent does"),
    (".windsurf", "agent config: it steers what an AI agent does"),
    (".goose", "agent config: it steers what an AI agent does"),
    (
        ".reins",
        "Reins' workspace policy: it decides what needs your review",
    ),
];

/// Single files with the same power.
const CONFIG_FILES: &[(&str, &str)] = &[
    (
        ".cursorrules",
        "agent rules: they steer what an AI agent does",
    ),
    (
        ".windsurfrules",
        "agent rules: they steer what an AI agent does",
    ),
    (".mcp.json", "agent tool config: it starts programs"),
    (
        ".gitmodules",
        "git config: it decides what git fetches and runs",
    ),
    (
        ".gitattributes",
        "git config: filters named here run programs",
    ),
    (
        ".npmrc",
        "package manager config: it can hold tokens and run scripts",
    ),
    (".pypirc", "package index credentials"),
    (".netrc", "network credentials"),
    (".bashrc", "shell start-up file: it runs on every shell"),
    (".profile", "shell start-up file: it runs on every login"),
    (".zshrc", "shell start-up file: it runs on every shell"),
    (".envrc", "direnv file: it runs when you enter the folder"),
];

/// Reins' own places, as absolute paths.
#[derive(Clone, Debug, Default)]
pub struct Protected {
    own: Vec<(PathBuf, &'static str)>,
}

impl Protected {
    /// Only the workspace rules (no Reins dirs known).
    pub const NONE: Protected = Protected { own: Vec::new() };

    pub fn new(data_dir: &Path, config_dir: &Path, policy_file: &Path) -> Self {
        Self {
            own: vec![
                (
                    absolute(data_dir),
                    "Reins' data dir: its runs, approvals and audit log",
                ),
                (absolute(config_dir), "Reins' config dir"),
                (
                    absolute(policy_file),
                    "Reins' policy file: it decides what needs your review",
                ),
            ],
        }
    }

    /// Why a path inside the workspace (`rel`, relative to `root`) is protected, or None.
    pub fn why(&self, root: &Path, rel: &str) -> Option<String> {
        why_names(&folded_names(Path::new(rel)))
            .or_else(|| self.why_absolute(&root.join(rel)))
            .map(|r| format!("{rel} is a protected path: {r}"))
    }

    /// Like `why`, for a path already resolved on disk (the real path of an open handle): nothing
    /// is resolved again, so nothing can change between this check and the handle's use.
    pub fn why_resolved(&self, root: &Path, rel: &str) -> Option<String> {
        self.own_place(&root.join(rel))
            .map(str::to_owned)
            .or_else(|| why_names(&folded_names(Path::new(rel))))
            .map(|r| format!("{rel} is a protected path: {r}"))
    }

    /// Why an absolute path is protected, or None. Reins' own places and the workspace rules above.
    pub fn why_absolute(&self, path: &Path) -> Option<String> {
        let path = absolute(path);
        self.own_place(&path)
            .map(str::to_owned)
            .or_else(|| why_names(&folded_names(&path)))
    }

    /// For a search an agent carries out itself over `folder` (relative to `root`): the first file
    /// it would read that Reins keeps from agents because it holds secrets (an environment file, a
    /// credentials file), or why Reins cannot tell; None when the folder holds none. Reins' own
    /// searches skip such files; an agent's own search does not ask Reins which ones it may read.
    pub fn secrets_within(&self, root: &Path, folder: &str) -> Option<String> {
        let start = root.join(folder);
        let mut seen = 0usize;
        let walk = ignore::WalkBuilder::new(&start)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(|e| fold(&e.file_name().to_string_lossy()) != ".git")
            .build();
        for entry in walk {
            seen += 1;
            if seen > MAX_SEARCHED {
                return Some(format!(
                    "{folder} holds over {MAX_SEARCHED} entries: Reins cannot tell whether a file there holds secrets"
                ));
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let name = fold(&entry.file_name().to_string_lossy());
            if let Some(why) = secret_file(&name) {
                let shown = entry.path().strip_prefix(root).unwrap_or(entry.path());
                return Some(format!(
                    "it reaches {} ({why}), which Reins keeps from agents",
                    shown.display()
                ));
            }
        }
        None
    }

    /// Every protected place with why, for people: Reins' own places, then the names protected in
    /// any workspace.
    pub fn listed(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .own
            .iter()
            .map(|(p, why)| (p.display().to_string(), (*why).to_owned()))
            .collect();
        out.push((".git/".into(), "git's own data, config and hooks: writing them runs code".into()));
        out.push((".env, .env.*".into(), "environment files: they usually hold secrets".into()));
        for (d, why) in CONFIG_DIRS {
            out.push((format!("{d}/"), (*why).to_owned()));
        }
        for (f, why) in CONFIG_FILES {
            out.push(((*f).to_owned(), (*why).to_owned()));
        }
        out
    }

    /// The reason when `path` is in one of Reins' own places.
    fn own_place(&self, path: &Path) -> Option<&'static str> {
        self.own
            .iter()
            .find(|(own, _)| !own.as_os_str().is_empty() && folded_starts_with(path, own))
            .map(|(_, reason)| *reason)
    }
}

/// Entries an agent's own search may span before Reins gives up telling what it reaches.
const MAX_SEARCHED: usize = 50_000;

/// Why the file at `path` holds secrets, by its name (an environment file, a credentials file), or
/// None.
pub fn secret_path(path: &Path) -> Option<&'static str> {
    secret_file(&fold(&path.file_name()?.to_string_lossy()))
}

/// Why a file named `name` (folded) holds secrets, or None.
fn secret_file(name: &str) -> Option<&'static str> {
    if name.starts_with(".env") && name != ".envrc" {
        return Some("an environment file: it usually holds secrets");
    }
    match name {
        ".npmrc" => Some("package manager config: it can hold tokens"),
        ".pypirc" => Some("package index credentials"),
        ".netrc" => Some("network credentials"),
        _ => None,
    }
}

/// The path's names, folded for comparison.
fn folded_names(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(fold(&n.to_string_lossy())),
            _ => None,
        })
        .collect()
}

fn why_names(names: &[String]) -> Option<String> {
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        if name == ".git" {
            let inner = names.get(i + 1).map(String::as_str);
            return Some(match inner {
                Some("hooks") => "a git hook: writing it runs code on the next git command".into(),
                Some("config") => {
                    "git config: it can name programs git runs (core.pager, core.hooksPath, …)"
                        .into()
                }
                _ => "inside .git: git's own data, config and hooks".into(),
            });
        }
        if last && (name.starts_with(".env") && name != ".envrc") {
            return Some("an environment file: it usually holds secrets".into());
        }
        if let Some((_, why)) = CONFIG_DIRS.iter().find(|(d, _)| d == name) {
            return Some((*why).into());
        }
        if last {
            if let Some((_, why)) = CONFIG_FILES.iter().find(|(f, _)| f == name) {
                return Some((*why).into());
            }
        }
    }
    None
}

/// NFKC, lower case, without default-ignorable characters, and without the trailing dots and spaces
/// Windows drops from names.
pub fn fold(name: &str) -> String {
    let folded: String = name
        .nfkc()
        .filter(|c| !is_ignorable(*c))
        .collect::<String>()
        .to_lowercase();
    let trimmed = folded.trim_end_matches(['.', ' ']);
    if trimmed.is_empty() {
        folded
    } else {
        trimmed.to_owned()
    }
}

fn is_ignorable(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
        | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

fn folded_starts_with(path: &Path, prefix: &Path) -> bool {
    let p: Vec<String> = path
        .components()
        .map(|c| fold(&c.as_os_str().to_string_lossy()))
        .collect();
    let q: Vec<String> = prefix
        .components()
        .map(|c| fold(&c.as_os_str().to_string_lossy()))
        .collect();
    p.len() >= q.len() && p[..q.len()] == q[..]
}

/// The path made absolute and lexically normalised (`..` and `.` removed), and canonicalised when it
/// exists so symlinked spellings compare equal.
pub fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let base = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().unwrap_or_default()
    };
    let mut out = PathBuf::new();
    for c in base.join(path).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // A path that does not exist yet: canonicalise the deepest existing ancestor.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_owned();
            }
            _ => return out,
        }
    }
    let mut real = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        real.push(name);
    }
    real
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case(".git/hooks/pre-commit", "git hook")]
    #[case(".GIT/config", "git config")]
    #[case(".git\u{200c}/config", "git config")]
    #[case(".Git./config", "git config")]
    #[case("sub/.git/HEAD", "inside .git")]
    #[case(".env", "secrets")]
    #[case("config/.env.production", "secrets")]
    #[case(".vscode/settings.json", "editor config")]
    #[case(".VSCode/tasks.json", "editor config")]
    #[case("．vscode/settings.json", "editor config")]
    #[case(".github/workflows/ci.yml", "CI config")]
    #[case(".reins/policy.toml", "Reins")]
    #[case(".cursorrules", "agent rules")]
    fn protected(#[case] rel: &str, #[case] why: &str) {
        let p = Protected::default();
        let reason = p.why(Path::new("/ws"), rel);
        assert!(
            reason.as_deref().is_some_and(|r| r.contains(why)),
            "{rel}: {reason:?}"
        );
    }

    #[rstest]
    #[case("src/main.rs")]
    #[case("notes/git/config")]
    #[case("environment.md")]
    #[case("docs/env.md")]
    fn ordinary(#[case] rel: &str) {
        assert_eq!(
            Protected::default().why(Path::new("/ws"), rel),
            None,
            "{rel}"
        );
    }

    #[test]
    fn reins_own_places_are_protected_inside_a_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let p = Protected::new(
            &data,
            &dir.path().join("cfg"),
            &dir.path().join("cfg/policy.toml"),
        );
        assert!(p.why(dir.path(), "data/reins.db").is_some());
        assert!(p.why(dir.path(), "DATA/reins.db").is_some());
        assert!(p.why(dir.path(), "cfg/policy.toml").is_some());
        assert!(p.why(dir.path(), "other/x").is_none());
    }
}

//! Where credentials live outside a workspace: keys, cloud and cluster logins, token files,
//! keyrings, browser profiles and shell histories. Reading one is high, whatever program reads it:
//! a read is how a secret leaves the machine, and `cat ~/.aws/credentials` looks as harmless as
//! `cat README`.

/// Folders (under a home directory) and what they hold.
const FOLDERS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".aws", "AWS credentials"),
    (".azure", "Azure credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".kube", "Kubernetes credentials"),
    (".docker", "container registry logins"),
    (".gnupg", "GPG keys"),
    (".password-store", "a password store"),
    (".local/share/keyrings", "a keyring"),
    (".config/gh", "a GitHub token"),
    (".config/op", "a password manager's session"),
    (".terraform.d", "Terraform credentials"),
    (".mozilla", "a browser profile (cookies, saved passwords)"),
    (".config/google-chrome", "a browser profile (cookies, saved passwords)"),
    (".config/chromium", "a browser profile (cookies, saved passwords)"),
    (".config/BraveSoftware", "a browser profile (cookies, saved passwords)"),
    (".config/microsoft-edge", "a browser profile (cookies, saved passwords)"),
    ("snap/firefox", "a browser profile (cookies, saved passwords)"),
    ("Library/Keychains", "a keychain"),
    ("Library/Application Support/Google/Chrome", "a browser profile (cookies, saved passwords)"),
    ("Library/Application Support/Firefox", "a browser profile (cookies, saved passwords)"),
];

/// Files (under a home directory) and what they hold.
const FILES: &[(&str, &str)] = &[
    (".netrc", "network logins"),
    (".pgpass", "database passwords"),
    (".my.cnf", "database passwords"),
    (".git-credentials", "git logins"),
    (".npmrc", "a package registry token"),
    (".pypirc", "a package index password"),
    (".cargo/credentials", "a crates.io token"),
    (".cargo/credentials.toml", "a crates.io token"),
    (".vault-token", "a Vault token"),
    (".bash_history", "a shell history (commands typed, secrets among them)"),
    (".zsh_history", "a shell history (commands typed, secrets among them)"),
    (".local/share/fish/fish_history", "a shell history (commands typed, secrets among them)"),
    (".python_history", "a REPL history"),
    (".node_repl_history", "a REPL history"),
    (".psql_history", "a database client history"),
    (".mysql_history", "a database client history"),
    (".lesshst", "a pager history"),
];

/// System files that hold secrets.
const SYSTEM: &[(&str, &str)] = &[
    ("/etc/shadow", "the system's password hashes"),
    ("/etc/gshadow", "the system's group password hashes"),
    ("/etc/sudoers", "who may act as root"),
    ("/etc/ssh", "the machine's SSH host keys"),
];

/// What the credential location `path` holds, if it is one. `path` is absolute, or starts with
/// `~`, `~user`, `$HOME` or `${HOME}`.
pub fn holds(path: &str) -> Option<&'static str> {
    for (p, what) in SYSTEM {
        if path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')) {
            return Some(what);
        }
    }
    if path.starts_with("/proc/") && path.ends_with("/environ") {
        return Some("a process's environment (tokens, keys)");
    }
    let rest = in_home(path)?;
    let rest = rest.trim_start_matches('/');
    for (f, what) in FOLDERS {
        if rest == *f || rest.strip_prefix(f).is_some_and(|r| r.starts_with('/')) {
            return Some(what);
        }
    }
    FILES.iter().find(|(f, _)| rest == *f).map(|(_, what)| *what)
}

/// Every credential location under a home folder, relative to it: what a confined process may not
/// read.
pub fn locations() -> impl Iterator<Item = &'static str> {
    FOLDERS.iter().chain(FILES).map(|(p, _)| *p)
}

/// The system's credential locations, absolute.
pub fn system_locations() -> impl Iterator<Item = &'static str> {
    SYSTEM.iter().map(|(p, _)| *p)
}

/// The part of `path` after its home directory: `~/x`, `~user/x`, `$HOME/x`, `/home/u/x`,
/// `/root/x`, `/Users/u/x`.
fn in_home(path: &str) -> Option<&str> {
    for var in ["$HOME", "${HOME}"] {
        if let Some(rest) = path.strip_prefix(var) {
            return Some(rest);
        }
    }
    if let Some(rest) = path.strip_prefix('~') {
        return Some(rest.find('/').map_or("", |at| &rest[at..]));
    }
    if let Some(rest) = path.strip_prefix("/root") {
        return Some(rest);
    }
    for base in ["/home/", "/Users/"] {
        if let Some(rest) = path.strip_prefix(base) {
            return Some(rest.find('/').map_or("", |at| &rest[at..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::holds;

    #[test]
    fn finds_credential_locations() {
        for p in [
            "~/.ssh/id_rsa",
            "~/.ssh",
            "~alice/.aws/credentials",
            "$HOME/.config/gcloud/application_default_credentials.json",
            "${HOME}/.kube/config",
            "/root/.docker/config.json",
            "/home/bob/.netrc",
            "/Users/bob/.pgpass",
            "~/.local/share/keyrings/login.keyring",
            "~/.mozilla/firefox/x.default/logins.json",
            "~/.bash_history",
            "/etc/shadow",
            "/proc/1/environ",
        ] {
            assert!(holds(p).is_some(), "{p}");
        }
        for p in ["~/src/app/README.md", "/home/bob/.sshx", "/etc/hostname", "~/.bashrc_notes", "/tmp/.ssh"] {
            assert_eq!(holds(p), None, "{p}");
        }
    }
}

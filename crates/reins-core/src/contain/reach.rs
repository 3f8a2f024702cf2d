//! What an external program's profile is derived from, read off its command line, environment and
//! config files: the trees its program lives in, and the endpoints it was pointed at.

use std::path::{Component, Path, PathBuf};

use super::profile::Endpoint;

/// The trees `argv`'s program and the files it names live in, to be readable: for each absolute
/// path on the command line, also inside an argument (and the program, found on `path_var`), its
/// folder; for a file inside
/// a `node_modules`, the folder that holds the outermost `node_modules` (the package's install).
pub fn program_trees(argv: &[String], path_var: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let program = argv
        .first()
        .and_then(|p| crate::process::find_program(p, path_var));
    let named = absolute_paths(argv.iter().skip(1));
    // Resolved, so each tree is a plain absolute path (no `..`, no link to follow).
    for p in program
        .into_iter()
        .chain(named)
        .filter_map(|p| std::fs::canonicalize(p).ok())
    {
        {
            let Ok(meta) = std::fs::metadata(&p) else { continue };
            let tree = install_root(&p).or_else(|| {
                if meta.is_dir() {
                    Some(p.clone())
                } else {
                    p.parent().map(launcher_root)
                }
            });
            if let Some(t) = tree.filter(|t| t.is_absolute() && t != Path::new("/")) {
                if !found.contains(&t) {
                    found.push(t);
                }
            }
        }
    }
    found
}

/// The folder a program's own folder belongs to: for `…/bin` and `…/shims` (a version manager's
/// launchers, such as pyenv's or cargo's), the folder above, where what they start lives.
fn launcher_root(dir: &Path) -> PathBuf {
    match (dir.file_name().and_then(|n| n.to_str()), dir.parent()) {
        (Some("bin" | "shims"), Some(up)) if up != Path::new("/") => up.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// Places a person lets a program write beyond its profile: each must exist, and is kept resolved
/// and absolute, so what the profile grants is what the person named. Reins' own dirs stay out of
/// reach whatever is named (every profile hides them).
pub fn writable_places(named: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in named {
        let resolved =
            std::fs::canonicalize(p).map_err(|e| format!("may write {}: {e}", p.display()))?;
        if resolved == Path::new("/") {
            return Err("may write /: name the folders it needs, not the whole machine".into());
        }
        if !out.contains(&resolved) {
            out.push(resolved);
        }
    }
    Ok(out)
}

/// The folder holding the outermost `node_modules` above `p`, if any.
fn install_root(p: &Path) -> Option<PathBuf> {
    let mut root = PathBuf::new();
    for c in p.components() {
        if c == Component::Normal("node_modules".as_ref()) {
            return Some(root);
        }
        root.push(c);
    }
    None
}

/// The endpoints of the `http://` and `https://` URLs in `text` (port 80 or 443 when a URL names
/// none), each once, in the order met.
pub fn url_endpoints(text: &str) -> Vec<Endpoint> {
    let mut found = Vec::new();
    for scheme in ["http://", "https://"] {
        for (i, _) in text.match_indices(scheme) {
            let rest = &text[i..];
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ','))
                .unwrap_or(rest.len());
            let Ok(url) = url::Url::parse(&rest[..end]) else { continue };
            let host = match url.host() {
                Some(url::Host::Domain(d)) => d.to_owned(),
                Some(url::Host::Ipv4(a)) => a.to_string(),
                Some(url::Host::Ipv6(a)) => a.to_string(),
                None => continue,
            };
            if let Some(port) = url.port_or_known_default() {
                let e = Endpoint::new(&host, port);
                if !found.contains(&e) {
                    found.push(e);
                }
            }
        }
    }
    found
}

/// The endpoints of the URLs a program is pointed at by its command line and by the variables of
/// Reins' own environment it is passed (`passed`, by name).
pub fn endpoints_named(argv: &[String], passed: &[String]) -> Vec<Endpoint> {
    let mut text = argv.join(" ");
    for value in passed.iter().filter_map(|var| std::env::var(var).ok()) {
        text.push(' ');
        text.push_str(&value);
    }
    url_endpoints(&text)
}

/// The endpoints named in the config files directly inside `dirs`: where an agent keeps its model
/// endpoint.
pub fn endpoints_in_configs(dirs: &[PathBuf]) -> Vec<Endpoint> {
    let files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .collect();
    endpoints_in_files(&files)
}

/// The config files a program is pointed at by its command line (`--config /x/a.json`,
/// `OPENCODE_CONFIG=/x/a.json` before it under `env`) and by the variables it is passed whose
/// value is such a file.
pub fn config_files_named(argv: &[String], passed: &[String]) -> Vec<PathBuf> {
    let values: Vec<String> = passed.iter().filter_map(|var| std::env::var(var).ok()).collect();
    absolute_paths(argv.iter().chain(&values))
        .filter(|p| is_config(p))
        .collect()
}

/// The absolute paths anywhere in `args`, inside an argument too (a shell's `-c` text, a
/// `NAME=/path` before the program under `env`).
fn absolute_paths<'a>(
    args: impl Iterator<Item = &'a String> + 'a,
) -> impl Iterator<Item = PathBuf> + 'a {
    args.flat_map(|a| a.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '=')))
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn is_config(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "json" | "jsonc" | "toml" | "yaml" | "yml"))
}

/// The endpoints named in `files` that are config files (JSON, TOML, YAML; up to 1 MiB each).
pub fn endpoints_in_files(files: &[PathBuf]) -> Vec<Endpoint> {
    let mut found = Vec::new();
    for path in files {
        let small = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20);
        if !(is_config(path) && small) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(path) {
            for e in url_endpoints(&text) {
                if !found.contains(&e) {
                    found.push(e);
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_come_from_the_urls_named() {
        assert_eq!(
            url_endpoints("--openai-base-url http://127.0.0.1:38211/v1 and https://API.x.com/v1"),
            [Endpoint::new("127.0.0.1", 38211), Endpoint::new("api.x.com", 443)]
        );
        assert_eq!(
            url_endpoints(r#"{"baseURL":"http://localhost:9/v1","b":"http://[::1]:7"}"#),
            [Endpoint::new("localhost", 9), Endpoint::new("::1", 7)]
        );
        assert_eq!(Endpoint::new("::1", 7).said(), "[::1]:7");
        assert!(url_endpoints("no url here, ftp://x:21").is_empty());
    }

    #[test]
    fn a_config_file_named_on_the_command_line_is_read_for_endpoints() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("opencode.json");
        std::fs::write(&config, r#"{"provider":{"m":{"options":{"baseURL":"http://127.0.0.1:4011/v1"}}}}"#).unwrap();
        let argv = vec![
            "env".to_owned(),
            format!("OPENCODE_CONFIG={}", config.display()),
            "opencode".to_owned(),
            "acp".to_owned(),
        ];
        let files = config_files_named(&argv, &[]);
        assert_eq!(files, std::slice::from_ref(&config));
        assert_eq!(endpoints_in_files(&files), [Endpoint::new("127.0.0.1", 4011)]);
        assert!(config_files_named(&["opencode".into(), "/etc/passwd".into()], &[]).is_empty());
    }

    #[test]
    fn a_node_package_is_read_from_its_install() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("node_modules/.bin");
        let pkg = dir.path().join("node_modules/@q/cli");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("cli.js"), "").unwrap();
        std::os::unix::fs::symlink(pkg.join("cli.js"), bin.join("q")).unwrap();
        let trees = program_trees(&[bin.join("q").display().to_string(), "--acp".into()], None);
        assert_eq!(trees, [std::fs::canonicalize(dir.path()).unwrap()]);
        let script = dir.path().join("agent.py");
        std::fs::write(&script, "").unwrap();
        let trees = program_trees(&["python3".into(), script.display().to_string()], Some("/usr/bin:/bin".as_ref()));
        assert!(trees.contains(&std::fs::canonicalize(dir.path()).unwrap()), "{trees:?}");
        assert!(trees.iter().any(|t| t == Path::new("/usr") || t == Path::new("/bin")), "{trees:?}");
    }
}

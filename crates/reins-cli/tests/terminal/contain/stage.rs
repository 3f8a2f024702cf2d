//! Staged commands (`reins stage`): real programs run against a copy-on-write view of the
//! workspace, as root and as `nobody`. Each case checks what the layer says the command did
//! against what the command was written to do, and that the workspace's bytes did not move.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{User, NOBODY};

/// A workspace of the user's own (as `nobody`, owned by nobody) and room for Reins' data.
struct Stage {
    tmp: tempfile::TempDir,
    user: User,
}

impl Stage {
    fn new(user: User, files: &[(&str, &str)]) -> anyhow::Result<Self> {
        let tmp = tempfile::tempdir()?;
        for dir in ["ws", "data", "config", "outside"] {
            std::fs::create_dir_all(tmp.path().join(dir))?;
        }
        for (path, text) in files {
            let at = tmp.path().join("ws").join(path);
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(at, text)?;
        }
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))?;
        for dir in ["data", "config", "outside"] {
            std::fs::set_permissions(tmp.path().join(dir), std::fs::Permissions::from_mode(0o777))?;
        }
        if matches!(user, User::Nobody) {
            chown_all(&tmp.path().join("ws"), NOBODY)?;
        }
        Ok(Self { tmp, user })
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    /// `reins stage --json` with `extra` options and `command`, as the case's user.
    fn stage(&self, extra: &[&str], command: &[&str]) -> anyhow::Result<Value> {
        let mut args: Vec<String> = vec!["stage".into(), "--json".into(), "-C".into()];
        args.push(self.ws().display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push("--".into());
        args.extend(command.iter().map(|s| s.to_string()));
        let mut cmd: Command = self.user.command(&args);
        cmd.env("REINS_DATA_DIR", self.tmp.path().join("data"))
            .env("REINS_CONFIG_DIR", self.tmp.path().join("config"))
            .env("HOME", self.tmp.path().join("outside"))
            .env_remove("REINS_DATABASE_URL")
            .env_remove("REINS_POLICY");
        let out = cmd.output()?;
        anyhow::ensure!(
            out.status.success(),
            "{:?}: reins stage failed: {}{}",
            self.user,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }
}

fn chown_all(dir: &Path, uid: u32) -> anyhow::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() && !p.is_symlink() {
            chown_all(&p, uid)?;
        } else {
            std::os::unix::fs::lchown(&p, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

/// Every path under `dir` with its bytes (or link target) and mode: the tree as it is.
fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let bytes = if meta.is_symlink() {
                std::fs::read_link(&p)
                    .map(|t| t.display().to_string().into_bytes())
                    .unwrap_or_default()
            } else if meta.is_file() {
                std::fs::read(&p).unwrap_or_default()
            } else {
                Vec::new()
            };
            out.insert(rel, (bytes, meta.mode()));
            if meta.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The staged changes as `path → kind`.
fn changes(v: &Value) -> BTreeMap<String, String> {
    v["changes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["path"].as_str().unwrap_or_default().to_owned(),
                        c["kind"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn diff_of<'a>(v: &'a Value, path: &str) -> &'a str {
    v["changes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["path"] == path))
        .and_then(|c| c["diff"].as_str())
        .unwrap_or_default()
}

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(p, k)| (p.to_string(), k.to_string()))
        .collect()
}

#[test]
fn a_staged_make_shows_exactly_what_its_makefile_did_and_changes_nothing() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Stage::new(
            user,
            &[
                (
                    "Makefile",
                    "all:\n\tmkdir -p gen\n\techo 'pub const N: u32 = 7;' > gen/consts.rs\n\
                     \tprintf 'v2\\n' > VERSION\n\trm -f src/old.rs\n\tchmod 755 run.sh\n",
                ),
                ("VERSION", "v1\n"),
                ("src/old.rs", "fn old() {}\n"),
                ("src/keep.rs", "fn keep() {}\n"),
                ("run.sh", "echo run\n"),
            ],
        )?;
        let before = tree(&case.ws());
        let v = case.stage(&[], &["make"])?;
        assert_eq!(
            changes(&v),
            expect(&[
                ("VERSION", "changed"),
                ("gen", "created"),
                ("gen/consts.rs", "created"),
                ("run.sh", "mode"),
                ("src/old.rs", "deleted"),
            ]),
            "{user:?}: {v:#}"
        );
        assert_eq!(v["exitCode"], 0, "{user:?}");
        assert!(
            diff_of(&v, "VERSION").contains("-v1\n+v2\n"),
            "{user:?}: {v:#}"
        );
        assert!(diff_of(&v, "gen/consts.rs").contains("+pub const N: u32 = 7;"));
        assert!(diff_of(&v, "src/old.rs").contains("-fn old() {}"));
        assert_eq!(
            v["summary"], "changes 2 files, creates 1, deletes 1; no network used",
            "{user:?}"
        );
        assert_eq!(v["whole"], true, "{user:?}");
        let mode = v["mode"].as_str().unwrap_or_default();
        match user {
            User::Me if rustix::process::geteuid().is_root() => {
                assert_eq!(mode, "overlay (root)")
            }
            _ => assert_eq!(mode, "overlay in a user namespace", "{user:?}"),
        }
        assert_eq!(tree(&case.ws()), before, "{user:?}: the workspace moved");
    }
    Ok(())
}

#[test]
fn sed_in_place_across_files_shows_only_the_files_whose_bytes_changed() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Stage::new(
            user,
            &[
                ("src/a.rs", "let foo = 1;\n"),
                ("src/b.rs", "let other = foo + foo;\n"),
                ("src/c.rs", "nothing here\n"),
            ],
        )?;
        let before = tree(&case.ws());
        // sed -i rewrites every file it is given, c.rs too, with the same bytes.
        let v = case.stage(&[], &["sed -i s/foo/bar/g src/*.rs"])?;
        assert_eq!(
            changes(&v),
            expect(&[("src/a.rs", "changed"), ("src/b.rs", "changed")]),
            "{user:?}: {v:#}"
        );
        assert!(diff_of(&v, "src/b.rs").contains("+let other = bar + bar;"));
        assert_eq!(tree(&case.ws()), before, "{user:?}");
    }
    Ok(())
}

/// The network a staged command tries is refused, and named: the view's own name server hears
/// the hosts it looks up. Its own Internet sockets reach nothing outside its namespace: not a TCP
/// listener on this machine's loopback, not a UDP one on loopback or on the machine's address.
#[test]
fn a_command_that_needs_the_network_is_shown_as_refused_it() -> anyhow::Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let udp = std::net::UdpSocket::bind("0.0.0.0:0")?;
    udp.set_nonblocking(true)?;
    let uport = udp.local_addr()?.port();
    // The address this machine goes out from, where it has one.
    let outward = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").and_then(|()| s.local_addr()))
        .map_or_else(|_| "127.0.0.1".to_owned(), |a| a.ip().to_string());
    for user in User::all() {
        let case = Stage::new(user, &[("package.json", "{}\n")])?;
        let v = case.stage(
            &[],
            &[&format!(
                "echo fetched > out.txt; curl -sS http://127.0.0.1:{port}/ > dep.tgz; \
                 curl -sS https://registry.npmjs.org/left-pad >> dep.tgz; \
                 bash -c 'echo u > /dev/udp/127.0.0.1/{uport}; echo u > /dev/udp/{outward}/{uport}'; true"
            )],
        )?;
        assert!(
            listener.accept().is_err(),
            "{user:?}: the listener was reached"
        );
        let mut buf = [0u8; 16];
        assert!(
            udp.recv_from(&mut buf).is_err(),
            "{user:?}: a datagram left the staged namespace"
        );
        let summary = v["summary"].as_str().unwrap_or_default();
        assert!(
            summary.contains("tried to reach registry.npmjs.org, which staging does not give"),
            "{user:?}: {summary}"
        );
        assert_eq!(v["whole"], false, "{user:?}");
        let refused = v["refused"].to_string();
        assert!(
            refused.contains("tried to reach registry.npmjs.org (it looked the name up"),
            "{user:?}: {refused}"
        );
        assert_eq!(
            changes(&v),
            expect(&[("dep.tgz", "created"), ("out.txt", "created")])
        );
    }
    Ok(())
}

#[test]
fn a_command_cannot_write_past_the_layer() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Stage::new(user, &[("README", "hello\n")])?;
        let outside = case.tmp.path().join("outside");
        let before = tree(&case.ws());
        let v = case.stage(
            &[],
            &[&format!(
                "ln -s {o}/via-link link; echo evil > link; \
                 echo evil > /proc/self/cwd/../outside/via-proc; \
                 echo evil > ../outside/via-dotdot; (cd .. && echo evil > outside/via-cd); \
                 echo evil > {o}/absolute; echo evil >> README; true",
                o = outside.display()
            )],
        )?;
        for name in ["via-link", "via-proc", "via-dotdot", "via-cd", "absolute"] {
            assert!(
                !outside.join(name).exists(),
                "{user:?}: {name} landed outside: {v:#}"
            );
        }
        assert_eq!(tree(&case.ws()), before, "{user:?}");
        // What it did inside the view is staged, and only that.
        assert_eq!(
            changes(&v),
            expect(&[("README", "changed"), ("link", "created")]),
            "{user:?}: {v:#}"
        );
        assert!(
            v["refused"].to_string().contains("Permission denied"),
            "{v:#}"
        );
    }
    Ok(())
}

#[test]
fn a_command_that_never_ends_is_stopped_and_what_it_wrote_is_still_shown() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Stage::new(user, &[])?;
        let v = case.stage(
            &["--timeout", "2s"],
            &["echo partial > p.txt; while :; do :; done"],
        )?;
        assert_eq!(v["timedOut"], true, "{user:?}: {v:#}");
        assert_eq!(v["whole"], false);
        assert_eq!(changes(&v), expect(&[("p.txt", "created")]), "{user:?}");
        assert!(!case.ws().join("p.txt").exists());
    }
    Ok(())
}

#[test]
fn a_command_that_writes_ten_gigabytes_stops_at_the_layers_cap() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Stage::new(user, &[])?;
        let v = case.stage(
            &["--cap", "8M"],
            &["dd if=/dev/zero of=big bs=1M count=10240 status=none; echo dd=$?"],
        )?;
        let summary = v["summary"].as_str().unwrap_or_default();
        assert!(
            summary.contains("stopped at the layer's size cap (8 MiB)"),
            "{user:?}: {summary}"
        );
        assert!(v["report"].to_string().contains("dd=1"), "{user:?}: {v:#}");
        assert!(v["report"].to_string().contains("No space left on device"));
        assert!(!case.ws().join("big").exists());
        let size = v["changes"][0]["diff"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(size.contains("binary file big"), "{user:?}: {size}");
    }
    Ok(())
}

//! The house rules that keep the tree readable, checked on the source itself so a change that
//! breaks one fails here with the file and line: the faces and the tests outside the core enter it
//! only through `reins_core::api`; the core's rooms import only downwards, floor by floor; SQL is
//! written only in `store/`, and every write transaction is begun and committed there; no
//! hand-written source file is over 600 lines.

use std::path::{Path, PathBuf};

use reins_tests::repo_root;

/// Every file under `dir` whose name ends with one of `exts`, skipping build output and packages.
fn files(dir: &Path, exts: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !matches!(name, "target" | "node_modules" | "dist" | "gen" | ".git") {
                    stack.push(path);
                }
            } else if exts.iter().any(|e| name.ends_with(e)) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn shown(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The paths into `reins_core` that `text` names, other than `reins_core::api`.
fn behind_the_door(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("reins_core::") {
        let rest = &text[i + "reins_core::".len()..];
        let named: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if named.is_empty() {
            // A grouped import (`reins_core::{…}`) names rooms beside the door.
            found.push("reins_core::{…}".to_owned());
        } else if named != "api" {
            found.push(format!("reins_core::{named}"));
        }
    }
    found
}

#[test]
fn the_faces_and_the_tests_outside_the_core_use_only_its_api() -> anyhow::Result<()> {
    let root = repo_root();
    let mut wrong = Vec::new();
    let mut through_the_door = 0;
    for dir in [
        "crates/reins-cli",
        "crates/reins-serve",
        "src-tauri/src",
        "src-tauri/tests",
        "tests",
    ] {
        for file in files(&root.join(dir), &[".rs"])? {
            if file.ends_with("tests/stories/house.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file)?;
            through_the_door += usize::from(text.contains("reins_core::api"));
            for (n, line) in text.lines().enumerate() {
                for path in behind_the_door(line) {
                    wrong.push(format!("{}:{}: {path}", shown(&file), n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "only reins_core::api is the door:\n{}",
        wrong.join("\n")
    );
    assert!(
        through_the_door >= 20,
        "the scan reads the faces' sources ({through_the_door} files use the api)"
    );
    Ok(())
}

#[test]
fn the_door_check_sees_a_path_behind_it() {
    assert_eq!(
        behind_the_door("use reins_core::store::Store; use reins_core::api::Reins;"),
        ["reins_core::store"]
    );
    assert_eq!(
        behind_the_door("use reins_core::{api, engine};"),
        ["reins_core::{…}"]
    );
}

#[test]
fn sql_is_written_only_in_the_store() -> anyhow::Result<()> {
    let src = repo_root().join("crates/reins-core/src");
    let markers = [
        "sqlx::query",
        "query_as(",
        "query_scalar(",
        "rusqlite",
        "\"SELECT ",
        "\"INSERT ",
        "\"UPDATE ",
        "\"DELETE ",
        "\"PRAGMA ",
    ];
    let mut wrong = Vec::new();
    for file in files(&src, &[".rs"])? {
        let rel = file.strip_prefix(&src).unwrap_or(&file);
        let is_test =
            rel.ends_with("tests.rs") || rel.components().any(|c| c.as_os_str() == "tests");
        if rel.starts_with("store") || is_test {
            continue;
        }
        for (n, line) in std::fs::read_to_string(&file)?.lines().enumerate() {
            if markers.iter().any(|m| line.contains(m)) {
                wrong.push(format!("{}:{}: {}", shown(&file), n + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "SQL outside store/:\n{}",
        wrong.join("\n")
    );
    Ok(())
}

/// Lines of `text` that begin or commit a store transaction by hand.
fn transaction_sites(text: &str) -> Vec<usize> {
    let calls = [
        ".begin()",
        ".begin_quiet()",
        ".begin_single()",
        ".commit()",
        ".commit_without_anchor()",
    ];
    text.lines()
        .enumerate()
        .filter(|(_, line)| calls.iter().any(|c| line.contains(c)))
        .map(|(n, _)| n + 1)
        .collect()
}

#[test]
fn every_write_goes_through_the_one_commit_path() -> anyhow::Result<()> {
    let src = repo_root().join("crates/reins-core/src");
    let mut outside = Vec::new();
    let mut inside = Vec::new();
    for file in files(&src, &[".rs"])? {
        let rel = file.strip_prefix(&src).unwrap_or(&file);
        let is_test = rel.ends_with("tests.rs")
            || rel.to_string_lossy().ends_with("_tests.rs")
            || rel.components().any(|c| c.as_os_str() == "tests");
        if is_test {
            continue;
        }
        for n in transaction_sites(&std::fs::read_to_string(&file)?) {
            let site = format!("{}:{n}", shown(&file));
            if rel.starts_with("store") {
                inside.push(site);
            } else {
                outside.push(site);
            }
        }
    }
    assert!(
        outside.is_empty(),
        "a change is a `store::change::Change` applied by `Store::apply`; transactions begun or committed by hand:\n{}",
        outside.join("\n")
    );
    assert!(
        inside.len() <= 13,
        "the store begins and commits in few places (its apply, the apply of a held change with the next, the anchor, the transaction type); sites:\n{}",
        inside.join("\n")
    );
    Ok(())
}

#[test]
fn the_commit_path_check_sees_a_transaction_by_hand() {
    let by_hand =
        "let mut tx = store.begin().await?;\nappend(&mut tx).await?;\ntx.commit().await?;";
    assert_eq!(transaction_sites(by_hand), [1, 3]);
    assert!(transaction_sites("store.apply(None, change, None).await?;").is_empty());
}

#[test]
fn no_hand_written_source_file_is_over_600_lines() -> anyhow::Result<()> {
    let root = repo_root();
    let mut long = Vec::new();
    let code = [".rs", ".ts", ".tsx", ".css", ".sql", ".sh"];
    let dirs: [(&str, &[&str]); 6] = [
        ("crates", &code),
        ("src-tauri/src", &code),
        ("src-tauri/tests", &code),
        ("tests", &code),
        ("ui/src", &code),
        ("scripts", &[""]),
    ];
    for (dir, exts) in dirs {
        for file in files(&root.join(dir), exts)? {
            // Generated: the IPC bindings are written by specta.
            if file.ends_with("ui/src/lib/ipc/bindings.ts") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let lines = text.lines().count();
            if lines > 600 {
                long.push(format!("{}: {lines} lines", shown(&file)));
            }
        }
    }
    assert!(long.is_empty(), "split these by noun:\n{}", long.join("\n"));
    Ok(())
}

/// The core's reading order: a room imports only rooms on lower floors, or rooms listed before it
/// on its own floor. A new room gets a place here, or the floor test names it.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "1 words: vocabulary, no IO",
        &[
            "test_rng",
            "ids",
            "clock",
            "digest",
            "fault",
            "text",
            "run",
            "budget",
            "step",
            "journal",
            "failure",
            "input_file",
            "worker",
        ],
    ),
    (
        "2 platform: files, processes, the keyring, HTTP",
        &[
            "secrets",
            "keys",
            "seal",
            "scratch",
            "workspace",
            "checkpoint",
            "progress",
            "resume",
            "data_dir",
            "device",
            "stderr",
            "process",
            "provider",
        ],
    ),
    (
        "3 domain: rules and nouns, no store",
        &[
            "action", "context", "policy", "contain", "tools", "stage", "compat", "approval",
        ],
    ),
    ("4 record: the audit log's vocabulary", &["event"]),
    ("5 store: the only SQL, and the dialect", &["store", "blob"]),
    (
        "6 services over the store: every agent kind",
        &["memory", "mcp", "agent"],
    ),
    (
        "7 driver: the drive, and the settings kept between runs",
        &["error", "audit", "telemetry", "engine", "settings"],
    ),
    (
        "8 door: what people can do, and what they are shown",
        &["view", "api"],
    ),
];

/// Where `room` sits: (floor, place on its floor).
fn floor_of(room: &str) -> Option<(usize, usize)> {
    FLOORS
        .iter()
        .enumerate()
        .find_map(|(f, (_, rooms))| rooms.iter().position(|r| *r == room).map(|i| (f, i)))
}

/// The room a path under `crates/reins-core/src` belongs to: its first folder, or its file stem.
fn room_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.strip_suffix(".rs").unwrap_or(first).to_owned())
}

/// The rooms `line` names through `crate::` (the crate root's re-exports count as theirs).
fn rooms_named(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in line.match_indices("crate::") {
        let named: String = line[i + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let room = match named.as_str() {
            "Error" | "ErrorCode" | "Result" => "error".to_owned(),
            "fault_point" => "fault".to_owned(),
            _ => named,
        };
        if !room.is_empty() {
            found.push(room);
        }
    }
    found
}

/// The imports in `text` (a file of `room`) that run upwards or sideways to a room listed later
/// on the same floor, as (line number, named room). A file's test module at its end is not read:
/// tests may reach up to build what they test with.
fn upward_imports(room: &str, text: &str) -> Vec<(usize, String)> {
    let Some(here) = floor_of(room) else {
        return vec![(0, format!("{room} (a room with no floor)"))];
    };
    let mut found = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|(_, next)| next.starts_with("mod tests {"))
        {
            break;
        }
        for named in rooms_named(line) {
            if named == room {
                continue;
            }
            match floor_of(&named) {
                Some(there) if there < here => {}
                _ => found.push((n + 1, named)),
            }
        }
    }
    found
}

#[test]
fn the_rooms_import_only_downwards() -> anyhow::Result<()> {
    let src = repo_root().join("crates/reins-core/src");
    let mut wrong = Vec::new();
    let mut rooms = std::collections::BTreeSet::new();
    for file in files(&src, &[".rs"])? {
        let rel = file.strip_prefix(&src).unwrap_or(&file);
        let is_test = rel.ends_with("tests.rs")
            || rel.to_string_lossy().ends_with("_tests.rs")
            || rel.components().any(|c| c.as_os_str() == "tests");
        if rel == Path::new("lib.rs") || is_test {
            continue;
        }
        let Some(room) = room_of(rel) else { continue };
        rooms.insert(room.clone());
        for (n, named) in upward_imports(&room, &std::fs::read_to_string(&file)?) {
            let to =
                floor_of(&named).map_or("no floor".to_owned(), |(f, _)| FLOORS[f].0.to_owned());
            wrong.push(format!(
                "{}:{n}: {room} imports {named} ({to})",
                shown(&file)
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "a room imports upwards (or a room has no floor in FLOORS):\n{}",
        wrong.join("\n")
    );
    assert!(
        rooms.len() >= 35,
        "the scan reads the core's rooms ({} found)",
        rooms.len()
    );
    Ok(())
}

#[test]
fn the_floor_check_sees_an_upward_import() {
    let planted = "use crate::ids::RunId;\nuse crate::engine::Engine;\n";
    assert_eq!(upward_imports("store", planted), [(2, "engine".to_owned())]);
    // Sideways to a room listed later on the same floor is upwards too.
    assert_eq!(
        upward_imports("policy", "fn f(_: &crate::tools::EffectPlan) {}"),
        [(1, "tools".to_owned())]
    );
    assert!(upward_imports("tools", "use crate::policy::Risk;").is_empty());
    // The crate root's error is the error room's.
    assert_eq!(
        upward_imports("workspace", "fn f() -> crate::Result<()> {}"),
        [(1, "error".to_owned())]
    );
    // A test module at the end of a file may reach up.
    let tested =
        "use crate::ids::RunId;\n#[cfg(test)]\nmod tests {\n    use crate::api::Reins;\n}\n";
    assert!(upward_imports("store", tested).is_empty());
    assert_eq!(
        upward_imports("novel", "")[0].1,
        "novel (a room with no floor)"
    );
}

/// The folders `CONTRIBUTING.md`'s bird's-eye view has no row for, of those under `dirs`: a row
/// names the folder in backticks (`crates/x/`), alone or beside others in one cell.
fn folders_without_a_row(root: &Path, dirs: &[&str], guide: &str) -> anyhow::Result<Vec<String>> {
    let mut missing = Vec::new();
    for dir in dirs {
        let mut folders: Vec<String> = std::fs::read_dir(root.join(dir))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|name| !matches!(name.as_str(), "target" | "tests" | "benches"))
            .collect();
        folders.sort();
        for name in folders {
            let full = format!("`{dir}/{name}/`");
            // A short form beside a full one in the same cell: "`crates/x/a/`, `b/`".
            let short = format!("`{name}/`");
            let named = guide.lines().any(|line| {
                line.starts_with("| ")
                    && (line.contains(&full)
                        || (line.contains(&format!("`{dir}/")) && line.contains(&short)))
            });
            if !named {
                missing.push(format!("{dir}/{name}/"));
            }
        }
    }
    Ok(missing)
}

#[test]
fn every_folder_of_the_crates_has_a_row_in_contributing() -> anyhow::Result<()> {
    let root = repo_root();
    let guide = std::fs::read_to_string(root.join("CONTRIBUTING.md"))?;
    let missing = folders_without_a_row(&root, &["crates", "crates/reins-core/src"], &guide)?;
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md's bird's-eye view has no row for:\n{}",
        missing.join("\n")
    );
    Ok(())
}

#[test]
fn the_row_check_sees_a_folder_without_one() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    for d in ["crates/a", "crates/b", "crates/c/src/x"] {
        std::fs::create_dir_all(tmp.path().join(d))?;
    }
    let guide = "| `crates/a/`, `c/` | one |\n| `crates/c/src/x/` | two |\n";
    assert_eq!(
        folders_without_a_row(tmp.path(), &["crates"], guide)?,
        ["crates/b/"]
    );
    assert!(folders_without_a_row(tmp.path(), &["crates/c/src"], guide)?.is_empty());
    Ok(())
}

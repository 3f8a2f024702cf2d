//! The house rules that keep the tree readable, checked on the source itself so a change that
//! breaks one fails here with the file and line: the faces and the tests outside the core enter it
//! only through `reins_core::api`; SQL is written only in `store/`; the engine commits in one place;
//! no hand-written source file is over 600 lines.

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

#[test]
fn the_engine_commits_in_one_place() -> anyhow::Result<()> {
    let engine = repo_root().join("crates/reins-core/src/engine");
    let mut sites = Vec::new();
    for file in files(&engine, &[".rs"])? {
        if file.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        for (n, line) in std::fs::read_to_string(&file)?.lines().enumerate() {
            if line.contains(".commit()") {
                sites.push(format!("{}:{}", shown(&file), n + 1));
            }
        }
    }
    assert!(
        sites.len() <= 3,
        "every engine write goes through engine::commit; commit sites:\n{}",
        sites.join("\n")
    );
    Ok(())
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

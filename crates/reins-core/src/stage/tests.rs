//! Reading an export against a workspace: exports written by hand as the helper would, so each
//! overlay form (whiteouts, opaque directories, copy-ups that changed nothing) is read alone.

use std::path::Path;

use super::{Kind, Staged, StagedError};
use crate::contain::stage::{Entry, Export, BLOBS, EXPORT_FILE};

fn export(out: &Path, entries: Vec<Entry>, blobs: &[(&str, &str)]) {
    std::fs::create_dir_all(out.join(BLOBS)).unwrap();
    for (name, text) in blobs {
        std::fs::write(out.join(BLOBS).join(name), text).unwrap();
    }
    let e = Export {
        mode: "overlay (root)".into(),
        setup_micros: 300,
        full: false,
        cap_bytes: 1 << 20,
        entries,
        unreadable: Vec::new(),
    };
    std::fs::write(out.join(EXPORT_FILE), serde_json::to_vec(&e).unwrap()).unwrap();
}

fn file(path: &str, blob: &str) -> Entry {
    Entry::File {
        path: path.into(),
        mode: 0o644,
        size: 0,
        blob: blob.into(),
    }
}

fn kinds(s: &Staged) -> Vec<(String, Kind)> {
    s.changes.iter().map(|c| (c.path.clone(), c.kind())).collect()
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join("lib/deep")).unwrap();
    std::fs::write(w.join("lib/a.txt"), "a\n").unwrap();
    std::fs::write(w.join("lib/deep/b.txt"), "b\n").unwrap();
    std::fs::write(w.join("same.txt"), "same\n").unwrap();
    std::fs::set_permissions(
        w.join("same.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    ws
}

#[test]
fn a_whiteout_over_a_directory_deletes_everything_in_it() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    export(out.path(), vec![Entry::Whiteout { path: "lib".into() }], &[]);
    let s = Staged::read(out.path(), ws.path()).unwrap();
    assert_eq!(
        kinds(&s),
        vec![
            ("lib".into(), Kind::Deleted),
            ("lib/a.txt".into(), Kind::Deleted),
            ("lib/deep".into(), Kind::Deleted),
            ("lib/deep/b.txt".into(), Kind::Deleted),
        ]
    );
    assert_eq!(s.counts(), (0, 0, 2));
    assert_eq!(
        s.summary(&[]),
        "changes none, creates none, deletes 2; no network used"
    );
}

#[test]
fn an_opaque_directory_keeps_only_what_the_layer_has() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    export(
        out.path(),
        vec![
            Entry::Dir {
                path: "lib".into(),
                mode: 0o755,
                opaque: true,
            },
            file("lib/a.txt", "1"),
        ],
        &[("1", "a\n")],
    );
    let s = Staged::read(out.path(), ws.path()).unwrap();
    // lib/a.txt came back with the same bytes: no change. The rest of lib/ is gone.
    assert_eq!(
        kinds(&s),
        vec![
            ("lib/deep".into(), Kind::Deleted),
            ("lib/deep/b.txt".into(), Kind::Deleted),
        ]
    );
}

#[test]
fn a_copy_up_that_changed_nothing_is_no_change_and_a_mode_is_one() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    let mut exec = file("lib/a.txt", "2");
    if let Entry::File { mode, .. } = &mut exec {
        *mode = 0o755;
    }
    export(
        out.path(),
        vec![file("same.txt", "1"), exec],
        &[("1", "same\n"), ("2", "a\n")],
    );
    let s = Staged::read(out.path(), ws.path()).unwrap();
    assert_eq!(kinds(&s), vec![("lib/a.txt".into(), Kind::ModeChanged)]);
    assert_eq!(s.changes[0].said(), "mode 644 → 755");
}

#[test]
fn protected_paths_are_never_changes_and_make_the_staging_partial() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    export(
        out.path(),
        vec![
            Entry::Dir {
                path: ".vscode".into(),
                mode: 0o755,
                opaque: false,
            },
            file(".vscode/tasks.json", "1"),
            file("new.txt", "2"),
        ],
        &[("1", "{}"), ("2", "new\n")],
    );
    let s = Staged::read(out.path(), ws.path()).unwrap();
    assert_eq!(kinds(&s), vec![("new.txt".into(), Kind::Created)]);
    assert_eq!(s.protected, vec![".vscode/tasks.json".to_owned()]);
    assert!(!s.whole(&[]));
}

#[test]
fn an_export_that_names_a_path_outside_or_a_strange_blob_is_refused() {
    let ws = workspace();
    for (entries, what) in [
        (vec![file("../escape", "1")], "path"),
        (vec![file("/etc/passwd", "1")], "path"),
        (vec![file("x", "../../etc/passwd")], "blob"),
    ] {
        let out = tempfile::tempdir().unwrap();
        export(out.path(), entries, &[("1", "x")]);
        let e = Staged::read(out.path(), ws.path()).unwrap_err();
        match (what, e) {
            ("path", StagedError::Path(_)) | ("blob", StagedError::Export(_)) => {}
            (what, e) => panic!("{what}: {e}"),
        }
    }
}

#[test]
fn a_full_layer_or_a_refusal_says_so_in_the_summary() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    export(out.path(), vec![file("n.txt", "1")], &[("1", "n\n")]);
    let mut s = Staged::read(out.path(), ws.path()).unwrap();
    s.full = true;
    let refused = vec!["curl: (6) Could not resolve host: registry.npmjs.org".to_owned()];
    assert_eq!(
        s.summary(&refused),
        "changes none, creates 1, deletes none; tried the network, which staging does not give; stopped at the layer's size cap (1 MiB)"
    );
}

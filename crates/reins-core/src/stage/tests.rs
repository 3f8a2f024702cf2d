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
        looked_up: Vec::new(),
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

#[test]
fn the_hosts_it_looked_up_are_named_in_the_summary() {
    let ws = workspace();
    let out = tempfile::tempdir().unwrap();
    export(out.path(), vec![], &[]);
    let mut s = Staged::read(out.path(), ws.path()).unwrap();
    s.looked_up = vec!["registry.npmjs.org".into()];
    assert_eq!(
        s.summary(&[]),
        "changes nothing in the workspace; tried to reach registry.npmjs.org, which staging does not give"
    );
    s.looked_up = ["a.org", "b.org", "c.org", "d.org"].map(String::from).to_vec();
    assert!(s
        .summary(&[])
        .ends_with("tried to reach a.org, b.org and 2 more, which staging does not give"));
}

#[test]
fn the_name_server_answers_no_such_name_and_notes_each_name_once() {
    use simple_dns::{Name, Packet, PacketFlag, Question, CLASS, QCLASS, QTYPE, RCODE, TYPE};
    let heard = crate::contain::lookup::Lookups::default();
    let mut query = Packet::new_query(7);
    query.set_flags(PacketFlag::RECURSION_DESIRED);
    for qtype in [TYPE::A, TYPE::AAAA] {
        query.questions.push(Question::new(
            Name::new_unchecked("Registry.npmjs.org"),
            QTYPE::TYPE(qtype),
            QCLASS::CLASS(CLASS::IN),
            false,
        ));
    }
    let bytes = query.build_bytes_vec().unwrap();
    let reply = crate::contain::lookup::reply_to(&bytes, &heard).unwrap();
    let reply = Packet::parse(&reply).unwrap();
    assert_eq!(reply.id(), 7);
    assert!(reply.has_flags(PacketFlag::RESPONSE));
    assert_eq!(reply.rcode(), RCODE::NameError);
    assert!(reply.answers.is_empty());
    assert_eq!(heard.names(), ["registry.npmjs.org"]);
    // Not a query: dropped, nothing noted.
    assert!(crate::contain::lookup::reply_to(&reply.build_bytes_vec().unwrap(), &heard).is_none());
    assert!(crate::contain::lookup::reply_to(b"\x00\x01garbage", &heard).is_none());
    assert_eq!(heard.names().len(), 1);
}

mod plans {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::workspace::Workspace;

    fn staged(ws: &Path, out: &Path) -> Staged {
        let mut exec = file("bin/run.sh", "2");
        if let Entry::File { mode, .. } = &mut exec {
            *mode = 0o755;
        }
        export(
            out,
            vec![
                file("same.txt", "1"),
                Entry::Dir {
                    path: "bin".into(),
                    mode: 0o755,
                    opaque: false,
                },
                exec,
                Entry::Whiteout {
                    path: "lib/a.txt".into(),
                },
                Entry::Symlink {
                    path: "latest".into(),
                    target: "bin/run.sh".into(),
                },
                file("notes.md", "3"),
            ],
            &[("1", "same, but new\n"), ("2", "#!/bin/sh\necho run\n"), ("3", "notes\n")],
        );
        Staged::read(out, ws).unwrap()
    }

    #[test]
    fn applying_a_staged_plan_lands_the_layer_byte_for_byte_with_its_modes() {
        let ws = workspace();
        let out = tempfile::tempdir().unwrap();
        let s = staged(ws.path(), out.path());
        let jail = Workspace::open(ws.path()).unwrap();
        let p = s.plan(&jail, &["notes.md".to_owned()]).unwrap();
        assert_eq!(p.dropped, vec!["notes.md".to_owned()]);
        assert_eq!(p.unexpressed, vec!["latest: now a symlink to bin/run.sh".to_owned()]);
        assert_eq!(
            p.plan.summary,
            "applied the staged result: 1 changed, 1 created, 1 deleted (notes.md left out by the reviewer)"
        );
        assert!(p.plan.preview.contains("+same, but new"));
        crate::tools::apply(&p.plan, &jail).unwrap();
        let w = ws.path();
        assert_eq!(std::fs::read_to_string(w.join("same.txt")).unwrap(), "same, but new\n");
        assert_eq!(
            std::fs::read_to_string(w.join("bin/run.sh")).unwrap(),
            "#!/bin/sh\necho run\n"
        );
        let mode = std::fs::metadata(w.join("bin/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(!w.join("lib/a.txt").exists());
        assert!(!w.join("notes.md").exists(), "dropped, so not applied");
        assert!(!w.join("latest").exists(), "a symlink is not carried");
        // Recovery's view: the disk now holds every post-image.
        let paths: Vec<_> = p
            .plan
            .post
            .iter()
            .map(|i| crate::workspace::RelPath::parse(&i.path).unwrap())
            .collect();
        let now = jail.hashes(paths.iter()).unwrap();
        assert_eq!(
            crate::journal::settle_files(&p.plan.pre, &p.plan.post, &now),
            crate::journal::Settlement::Done
        );
    }

    /// Recovery of a half-applied result: a file whose only change is its mode is still to do
    /// until its mode is the staged one, though its bytes already match.
    #[test]
    fn a_mode_only_change_is_still_to_do_until_the_mode_lands() {
        let ws = workspace();
        let out = tempfile::tempdir().unwrap();
        let mut exec = file("same.txt", "1");
        if let Entry::File { mode, .. } = &mut exec {
            *mode = 0o755;
        }
        export(out.path(), vec![exec], &[("1", "same\n")]);
        let s = Staged::read(out.path(), ws.path()).unwrap();
        assert_eq!(kinds(&s), vec![("same.txt".to_owned(), Kind::ModeChanged)]);
        let jail = Workspace::open(ws.path()).unwrap();
        let planned = s.plan(&jail, &[]).unwrap();
        let effect = super::super::effect::StagedEffect::of(&planned, "overlay (root)", "", "", true);
        let bytes: std::collections::BTreeMap<_, _> = effect
            .blobs()
            .map(|d| (d.clone(), b"same\n".to_vec()))
            .collect();
        let remaining = effect.plan(&jail, &bytes, true).unwrap();
        assert_eq!(remaining.ops.len(), 1, "the mode has not landed yet");
        crate::tools::apply(&remaining, &jail).unwrap();
        let mode = std::fs::metadata(ws.path().join("same.txt")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(effect.plan(&jail, &bytes, true).unwrap().ops.is_empty(), "landed");
    }

    #[test]
    fn a_file_changed_since_staging_refuses_the_plan() {
        let ws = workspace();
        let out = tempfile::tempdir().unwrap();
        let s = staged(ws.path(), out.path());
        std::fs::write(ws.path().join("same.txt"), "edited meanwhile\n").unwrap();
        let jail = Workspace::open(ws.path()).unwrap();
        match s.plan(&jail, &[]) {
            Err(StagedError::Moved(path)) => assert_eq!(path, "same.txt"),
            other => panic!("{other:?}"),
        }
    }
}

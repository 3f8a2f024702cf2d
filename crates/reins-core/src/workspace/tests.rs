//! The jail against the escapes an agent (or a booby-trapped repository) could try.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use rstest::rstest;

use super::*;

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: Workspace,
    root: PathBuf,
    outside: PathBuf,
}

/// `<tmp>/ws` is the workspace; `<tmp>/ws-evil/secret` sits in a sibling whose name starts with the root's.
fn fixture() -> anyhow::Result<Fixture> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("ws");
    fs::create_dir_all(root.join("sub"))?;
    fs::write(root.join("sub/in.txt"), "inside\n")?;
    let sibling = tmp.path().join("ws-evil");
    fs::create_dir_all(&sibling)?;
    let outside = sibling.join("secret");
    fs::write(&outside, "secret\n")?;
    let ws = Workspace::open(&root)?;
    let root = ws.root().to_owned();
    Ok(Fixture {
        _tmp: tmp,
        ws,
        root,
        outside,
    })
}

#[rstest]
#[case::parent("../x")]
#[case::parent_inside("sub/../../x")]
#[case::absolute("/etc/hosts")]
#[case::nul("sub/in\0.txt")]
fn lexical_escapes_are_refused(#[case] raw: &str) -> anyhow::Result<()> {
    let f = fixture()?;
    let err = f.ws.resolve(raw).err();
    assert!(
        matches!(err, Some(JailError::Invalid { .. })),
        "{raw:?} must be refused, got {err:?}"
    );
    Ok(())
}

#[test]
fn dot_segments_normalise() -> anyhow::Result<()> {
    let f = fixture()?;
    assert_eq!(f.ws.resolve("./sub/./in.txt")?.as_str(), "sub/in.txt");
    assert!(f.ws.resolve(".")?.is_root());
    Ok(())
}

#[test]
fn sibling_with_same_prefix_is_outside() -> anyhow::Result<()> {
    let f = fixture()?;
    symlink(&f.outside, f.root.join("peek"))?;
    let err = f.ws.resolve("peek").err();
    assert!(
        matches!(err, Some(JailError::Escapes { .. })),
        "ws-evil is not inside ws: {err:?}"
    );
    // Even without the pre-check, the directory handle refuses to follow it.
    let rel = RelPath::parse("peek")?;
    assert!(
        f.ws.read(&rel, 1024, &|_| None).is_err(),
        "cap-std must refuse the escape too"
    );
    Ok(())
}

#[test]
fn symlink_to_outside_is_refused_for_read_and_write() -> anyhow::Result<()> {
    let f = fixture()?;
    let sibling = f.outside.parent().map(PathBuf::from).unwrap_or_default();
    symlink(&sibling, f.root.join("door"))?;
    assert!(matches!(
        f.ws.resolve("door/secret"),
        Err(JailError::Escapes { .. })
    ));
    let rel = RelPath::parse("door/secret")?;
    assert!(
        f.ws.read(&rel, 1024, &|_| None).is_err(),
        "read through the link must fail"
    );
    assert!(
        f.ws.write(&rel, b"pwned").is_err(),
        "write through the link must fail"
    );
    assert_eq!(
        fs::read_to_string(&f.outside)?,
        "secret\n",
        "the outside file must stay unchanged"
    );
    Ok(())
}

#[test]
fn symlink_inside_to_inside_reads_but_is_never_written_through() -> anyhow::Result<()> {
    let f = fixture()?;
    symlink("sub/in.txt", f.root.join("alias"))?;
    let rel = f.ws.resolve("alias")?;
    assert_eq!(f.ws.read(&rel, 1024, &|_| None)?, b"inside\n");
    assert!(matches!(
        f.ws.write(&rel, b"x"),
        Err(JailError::Link { .. })
    ));
    assert_eq!(fs::read_to_string(f.root.join("sub/in.txt"))?, "inside\n");
    Ok(())
}

#[test]
fn dangling_symlink_is_not_a_create_target() -> anyhow::Result<()> {
    let f = fixture()?;
    let target = f.outside.with_file_name("created-by-agent");
    symlink(&target, f.root.join("trap"))?;
    assert!(
        matches!(f.ws.resolve("trap"), Err(JailError::Escapes { .. })),
        "dangling link pointing outside"
    );
    let rel = RelPath::parse("trap")?;
    assert!(f.ws.write(&rel, b"x").is_err());
    assert!(
        !target.exists(),
        "nothing may be created outside through a dangling link"
    );

    symlink("sub/not-yet", f.root.join("trap2"))?;
    assert!(matches!(
        f.ws.resolve("trap2"),
        Err(JailError::Dangling { .. })
    ));
    assert!(matches!(
        f.ws.write(&RelPath::parse("trap2")?, b"x"),
        Err(JailError::Link { .. })
    ));
    assert!(!f.root.join("sub/not-yet").exists());
    Ok(())
}

#[test]
fn fifo_is_refused_without_hanging() -> anyhow::Result<()> {
    let f = fixture()?;
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status()?;
    assert!(status.success(), "mkfifo must exist for this test");
    let rel = f.ws.resolve("pipe")?;
    assert!(matches!(
        f.ws.read(&rel, 1024, &|_| None),
        Err(JailError::NotRegular { kind: "FIFO", .. })
    ));
    assert!(matches!(
        f.ws.image(&rel),
        Err(JailError::NotRegular { .. })
    ));
    assert!(matches!(
        f.ws.write(&rel, b"x"),
        Err(JailError::NotRegular { .. })
    ));
    Ok(())
}

#[test]
fn hard_link_to_outside_file_is_not_read_and_writing_leaves_it_unchanged() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::hard_link(&f.outside, f.root.join("hl"))?;
    let rel = f.ws.resolve("hl")?;
    assert!(matches!(
        f.ws.read(&rel, 1024, &|_| None),
        Err(JailError::HardLinked { links: 2, .. })
    ));
    f.ws.write(&rel, b"replaced\n")?;
    assert_eq!(fs::read_to_string(f.root.join("hl"))?, "replaced\n");
    assert_eq!(
        fs::read_to_string(&f.outside)?,
        "secret\n",
        "the write replaced the name, not the shared inode"
    );
    Ok(())
}

#[test]
fn reads_are_capped() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::write(f.root.join("big"), vec![b'x'; 2048])?;
    let rel = f.ws.resolve("big")?;
    assert!(matches!(
        f.ws.read(&rel, 1024, &|_| None),
        Err(JailError::TooLarge { size: 2048, .. })
    ));
    Ok(())
}

#[test]
fn write_is_atomic_and_creates_parents() -> anyhow::Result<()> {
    let f = fixture()?;
    let rel = f.ws.resolve("new/dir/file.txt")?;
    f.ws.write(&rel, b"hello")?;
    assert_eq!(fs::read(f.root.join("new/dir/file.txt"))?, b"hello");
    let leftovers: Vec<_> = fs::read_dir(f.root.join("new/dir"))?.collect();
    assert_eq!(leftovers.len(), 1, "no temp file is left behind");
    Ok(())
}

#[test]
fn rename_refuses_to_overwrite() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::write(f.root.join("a"), "a")?;
    let (a, b) = (f.ws.resolve("a")?, f.ws.resolve("sub/in.txt")?);
    assert!(matches!(f.ws.rename(&a, &b), Err(JailError::Exists { .. })));
    f.ws.rename(&a, &f.ws.resolve("moved/a")?)?;
    assert!(!f.root.join("a").exists() && f.root.join("moved/a").exists());
    Ok(())
}

#[test]
fn list_does_not_follow_links() -> anyhow::Result<()> {
    let f = fixture()?;
    let sibling = f.outside.parent().map(PathBuf::from).unwrap_or_default();
    symlink(&sibling, f.root.join("door"))?;
    let (entries, cut) = f.ws.list(&RelPath::root(), true, 100)?;
    assert!(!cut);
    let names: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(names, vec!["door", "sub", "sub/in.txt"]);
    assert_eq!(entries[0].kind, "symbolic link");
    Ok(())
}

/// F1/F3: a directory on the way that is a link (even one inside the workspace) is never written,
/// deleted or moved through, so a swap after the check cannot retarget the effect.
#[test]
fn effects_never_pass_through_a_linked_directory() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::create_dir_all(f.root.join(".vscode"))?;
    fs::write(f.root.join(".vscode/settings.json"), "{}\n")?;
    symlink(".vscode", f.root.join("docs"))?;
    let target = RelPath::parse("docs/tasks.json")?;
    let existing = RelPath::parse("docs/settings.json")?;
    let refused = |r: Result<()>| matches!(r, Err(JailError::Link { ref path }) if path.as_str() == "docs");
    assert!(refused(f.ws.write(&target, b"{}")));
    assert!(refused(f.ws.remove(&existing)));
    assert!(refused(f.ws.rename(&RelPath::parse("sub/in.txt")?, &target)));
    assert!(refused(f.ws.image(&existing).map(|_| ())));
    assert!(refused(f.ws.rename(&existing, &RelPath::parse("sub/moved")?)));
    assert_eq!(fs::read_dir(f.root.join(".vscode"))?.count(), 1);
    assert!(f.root.join("sub/in.txt").exists());
    // The refusal is one made before anything changed.
    assert!(f
        .ws
        .write(&target, b"{}")
        .is_err_and(|e| e.refused_before_acting()));
    Ok(())
}

/// F3: a read follows links inside the workspace, but the guard is asked about the file the
/// handle really opened.
#[test]
fn a_read_is_judged_by_the_file_really_opened() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::write(f.root.join(".env"), "KEY=1\n")?;
    symlink(".env", f.root.join("notes.txt"))?;
    let rel = f.ws.resolve("notes.txt")?;
    let seen = std::cell::RefCell::new(Vec::new());
    let result = f.ws.read(&rel, 1024, &|real| {
        seen.borrow_mut().push(real.as_str().to_owned());
        (real.as_str() == ".env").then(|| "an environment file".to_owned())
    });
    assert!(
        matches!(&result, Err(JailError::Guarded { real, .. }) if real.as_str() == ".env"),
        "{result:?}"
    );
    assert_eq!(*seen.borrow(), [".env"]);
    Ok(())
}

#[test]
fn a_move_never_replaces_what_appears_at_its_target() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::write(f.root.join("sub/taken"), "mine\n")?;
    let moved = f.ws.rename(
        &RelPath::parse("sub/in.txt")?,
        &RelPath::parse("sub/taken")?,
    );
    assert!(matches!(moved, Err(JailError::Exists { .. })), "{moved:?}");
    assert_eq!(fs::read_to_string(f.root.join("sub/taken"))?, "mine\n");
    Ok(())
}

/// F1 at effect time: a folder checked by identity and then replaced by another real folder is
/// refused before anything changes, for writes, deletes and moves alike.
#[test]
fn an_effect_bound_to_a_folder_is_refused_in_another_moved_into_its_place() -> anyhow::Result<()> {
    let f = fixture()?;
    fs::create_dir_all(f.root.join("guarded"))?;
    fs::write(f.root.join("guarded/keep.txt"), "keep\n")?;
    let target = f.ws.resolve("sub/new.txt")?;
    let kept = f.ws.resolve("sub/keep.txt")?;
    let checked = f.ws.folder_id(&target)?;
    assert!(checked.is_some());
    assert_eq!(f.ws.folder_id(&f.ws.resolve("absent/x")?)?, None);
    fs::rename(f.root.join("sub"), f.root.join("sub.before"))?;
    fs::rename(f.root.join("guarded"), f.root.join("sub"))?;
    let err = f.ws.write_in(&target, b"x", checked.as_deref()).err();
    assert!(
        matches!(&err, Some(JailError::Replaced { .. })) && err.as_ref().is_some_and(JailError::refused_before_acting),
        "{err:?}"
    );
    assert!(!f.root.join("sub/new.txt").exists(), "nothing written in the moved folder");
    assert!(matches!(f.ws.remove_in(&kept, checked.as_deref()), Err(JailError::Replaced { .. })));
    assert!(f.root.join("sub/keep.txt").exists());
    let away = f.ws.resolve("elsewhere.txt")?;
    assert!(matches!(
        f.ws.rename_in(&kept, &away, (checked.as_deref(), None)),
        Err(JailError::Replaced { .. })
    ));
    // In the folder that was checked, the same effect goes ahead.
    let now = f.ws.folder_id(&target)?;
    f.ws.write_in(&target, b"x", now.as_deref())?;
    assert_eq!(fs::read(f.root.join("sub/new.txt"))?, b"x");
    Ok(())
}

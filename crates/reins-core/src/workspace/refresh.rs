//! A fingerprint brought up to date at the paths a watcher saw touched (`watcher.rs`), without
//! walking the rest of the tree: the walk goes down only the folders that lead to a touched path,
//! and into a touched folder whole, so the ignore rules apply exactly as a full scan applies them.
//! Every touched file is hashed again (a watcher saw it change, whatever its time says).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::fingerprint::{change_of, look, Change, Fingerprint, Stat};
use super::walk;

/// What the touched paths hold now, and how that differs from the fingerprint.
#[derive(Debug)]
pub struct Refresh {
    pub changes: Vec<Change>,
    /// Each path looked at: its stat now (None: gone or ignored).
    now: Vec<(String, Option<Stat>)>,
}

impl Refresh {
    /// Makes `fp` what the tree holds now (its time of scan is left: the rest was not looked at).
    pub fn apply(self, fp: &mut Fingerprint) -> Vec<Change> {
        for (path, stat) in self.now {
            match stat {
                Some(s) => {
                    fp.entries.insert(path, s);
                }
                None => {
                    fp.entries.remove(&path);
                }
            }
        }
        self.changes
    }
}

/// Whether a folder above `path` is in `set`.
fn covered(set: &HashSet<String>, path: &str) -> bool {
    path.match_indices('/').any(|(i, _)| set.contains(&path[..i]))
}

/// Looks at `touched` (relative, `/`-separated) under `root`, against `fp`.
pub fn refresh(root: &Path, fp: &Fingerprint, touched: &[String]) -> std::io::Result<Refresh> {
    // A touched folder covers everything under it.
    let all: HashSet<String> = touched.iter().cloned().collect();
    let mut tops: Vec<String> = all.iter().filter(|t| !covered(&all, t)).cloned().collect();
    tops.sort_unstable();
    let top_set: HashSet<String> = tops.iter().cloned().collect();
    // The folders that lead to a touched path: listed, not walked whole.
    let leads: HashSet<String> = tops
        .iter()
        .flat_map(|t| t.match_indices('/').map(|(i, _)| t[..i].to_owned()))
        .collect();
    let enter = |rel: &str, is_dir: bool| {
        (is_dir && leads.contains(rel)) || top_set.contains(rel) || covered(&top_set, rel)
    };
    let visit = |found: &mut Vec<(String, Stat)>, _: &str, files: &[walk::File<'_>]| {
        for file in files {
            // Every touched file is hashed again, whatever its stat says.
            if let Some((stat, _)) = look(file, |_| None)? {
                found.push((file.rel.to_owned(), stat));
            }
        }
        Ok(())
    };
    // A few folders: one thread.
    let found: BTreeMap<String, Stat> = walk::walk(root, 1, &enter, &visit, &|_| {})?.into_iter().collect();
    let mut now = Vec::new();
    let mut changes = Vec::new();
    for t in &tops {
        let under = format!("{t}/");
        let mut paths: BTreeMap<&str, (Option<&Stat>, Option<&Stat>)> = BTreeMap::new();
        for (map, new) in [(&fp.entries, false), (&found, true)] {
            let exact = map.get_key_value(t.as_str());
            let below = map.range(under.clone()..).take_while(|(k, _)| k.starts_with(&under));
            for (k, s) in exact.into_iter().chain(below) {
                let slot = paths.entry(k.as_str()).or_default();
                if new {
                    slot.1 = Some(s);
                } else {
                    slot.0 = Some(s);
                }
            }
        }
        for (path, (old, new)) in paths {
            changes.extend(change_of(path, old, new));
            now.push((path.to_owned(), new.cloned()));
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Refresh { changes, now })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::fingerprint::{diff, scan};
    use crate::workspace::watcher::{Touched, Watcher};

    fn write(root: &Path, rel: &str, text: &str) -> std::io::Result<()> {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(p, text)
    }

    use crate::test_rng::Rng;

    #[test]
    fn a_watched_refresh_finds_what_a_full_rescan_finds() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        write(root, ".gitignore", "build/\n*.log\n")?;
        write(root, "sub/.gitignore", "!keep.log\nlocal/\n")?;
        for i in 0..40 {
            write(root, &format!("d{}/f{i}.txt", i % 5), &format!("file {i}"))?;
        }
        let mut watcher = Watcher::start(root).map_err(anyhow::Error::msg)?;
        let (mut watched, _) = scan(root, &Fingerprint::default())?;
        assert!(matches!(watcher.take(), Touched::Paths(_)));
        let mut rng = Rng(0x0049_5eed);
        for round in 0..30 {
            let before = watched.clone();
            for _ in 0..1 + rng.below(6) {
                let n = rng.below(60);
                let d = rng.below(7);
                let path = format!("d{d}/f{n}.txt");
                match rng.below(9) {
                    0 | 1 => write(root, &path, &format!("round {round}"))?,
                    2 => {
                        let _ = std::fs::remove_file(root.join(&path));
                    }
                    3 => write(root, &format!("d{d}/new{n}/deep/x{n}.txt"), "new folder")?,
                    4 => {
                        let _ = std::fs::remove_dir_all(root.join(format!("d{d}")));
                    }
                    5 => write(root, &format!("build/out{n}.bin"), "ignored")?,
                    6 => write(root, "sub/keep.log", &format!("kept {round}"))?,
                    7 => write(root, &format!("sub/local/x{n}"), "ignored below sub")?,
                    _ => {
                        let to = format!("moved/f{n}-{round}.txt");
                        std::fs::create_dir_all(root.join("moved"))?;
                        let _ = std::fs::rename(root.join(&path), root.join(to));
                    }
                }
            }
            let Touched::Paths(paths) = watcher.take() else {
                anyhow::bail!("round {round}: the watch lost track");
            };
            let refreshed = refresh(root, &watched, &paths)?;
            let changes = refreshed.apply(&mut watched);
            let (full, _) = scan(root, &Fingerprint::default())?;
            let names = |fp: &Fingerprint| -> Vec<(String, Option<String>)> {
                fp.entries
                    .iter()
                    .map(|(p, s)| (p.clone(), s.sha256.as_ref().map(|d| d.to_string())))
                    .collect()
            };
            assert_eq!(names(&watched), names(&full), "round {round}, touched {paths:?}");
            let want: Vec<(String, _)> = diff(&before, &full).into_iter().map(|c| (c.path, c.kind)).collect();
            let got: Vec<(String, _)> = changes.into_iter().map(|c| (c.path, c.kind)).collect();
            assert_eq!(got, want, "round {round}");
        }
        Ok(())
    }

    #[test]
    fn a_changed_ignore_rule_is_lost_not_guessed() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        write(dir.path(), "a.log", "x")?;
        let mut watcher = Watcher::start(dir.path()).map_err(anyhow::Error::msg)?;
        write(dir.path(), ".gitignore", "*.log\n")?;
        assert!(
            matches!(watcher.take(), Touched::Lost(why) if why.contains(".gitignore")),
            "a rule that hides a file no one touched needs a rescan"
        );
        write(dir.path(), "b.txt", "y")?;
        assert_eq!(watcher.take(), Touched::Paths(vec!["b.txt".into()]), "and then it watches on");
        Ok(())
    }
}

use std::path::{Path, PathBuf};

use super::kernel::around;
use super::profile::{AgentReach, Endpoint, Network, Places, Profile, PROTECTED_IN_WORKSPACE};

fn places() -> Places {
    Places {
        workspace: "/work/app".into(),
        home: Some("/home/ada".into()),
        reins: vec![
            "/home/ada/.local/share/reins".into(),
            "/home/ada/.config/reins".into(),
        ],
        tmp: "/tmp/reins-1-0/tmp".into(),
    }
}

#[test]
fn a_command_writes_the_workspace_and_its_temp_dir_and_nothing_else() {
    let p = Profile::command(&places(), false);
    assert_eq!(
        p.write,
        vec![PathBuf::from("/work/app"), PathBuf::from("/tmp/reins-1-0/tmp")]
    );
    assert_eq!(p.network, Network::None);
    for name in [".git/hooks", ".git/config", ".reins", ".claude", ".mcp.json", ".vscode"] {
        assert!(
            p.read_only.contains(&Path::new("/work/app").join(name)),
            "{name} stays read-only"
        );
    }
    assert_eq!(p.read_only.len(), PROTECTED_IN_WORKSPACE.len());
    // Reads: the system, the workspace, the home folder; never credentials or Reins' own dirs.
    assert!(p.read.contains(&PathBuf::from("/usr")));
    assert!(p.read.contains(&PathBuf::from("/home/ada")));
    for hidden in [
        "/home/ada/.ssh",
        "/home/ada/.aws",
        "/home/ada/.local/share/keyrings",
        "/home/ada/.netrc",
        "/home/ada/.local/share/reins",
        "/home/ada/.config/reins",
        "/etc/shadow",
    ] {
        assert!(p.hidden.contains(&PathBuf::from(hidden)), "{hidden} is hidden");
    }
    assert_eq!(p.said(Path::new("/work/app")), "no network, writes inside the workspace");
}

#[test]
fn the_network_is_there_only_when_approved() {
    let p = Profile::command(&places(), true);
    assert_eq!(p.network, Network::Full);
    assert_eq!(p.said(Path::new("/work/app")), "with the network, writes inside the workspace");
    assert_ne!(p.hash(), Profile::command(&places(), false).hash());
}

#[test]
fn an_agent_writes_only_its_state_unless_it_carries_out_changes_itself() {
    let reach = AgentReach {
        state: vec![PathBuf::from("/home/ada/.qwen")],
        programs: vec![PathBuf::from("/opt/agents")],
        writes_workspace: false,
        endpoints: vec![
            Endpoint::new("api.x.com", 443),
            Endpoint::loopback(8080),
            Endpoint::new("API.x.com", 443),
        ],
        serves_itself: false,
    };
    let p = Profile::agent(&places(), &reach);
    assert_eq!(
        p.write,
        vec![PathBuf::from("/home/ada/.qwen"), PathBuf::from("/tmp/reins-1-0/tmp")]
    );
    assert!(p.read_only.is_empty());
    assert!(p.read.contains(&PathBuf::from("/opt/agents")));
    assert_eq!(
        p.network,
        Network::To {
            endpoints: vec![Endpoint::loopback(8080), Endpoint::new("api.x.com", 443)],
            serves_itself: false
        }
    );
    assert_eq!(p.ports(), Some(vec![443, 8080]));
    assert_eq!(
        p.said(Path::new("/work/app")),
        "network to 127.0.0.1:8080, api.x.com:443 only, writes only its own state"
    );
    let own = Profile::agent(
        &places(),
        &AgentReach {
            serves_itself: true,
            ..reach.clone()
        },
    );
    assert_eq!(own.ports(), None, "no port rule names its own server");
    assert!(own.said(Path::new("/work/app")).contains("its own local server"));
    let writer = Profile::agent(
        &places(),
        &AgentReach {
            writes_workspace: true,
            ..reach
        },
    );
    assert!(writer.write.contains(&PathBuf::from("/work/app")));
    assert!(writer.read_only.contains(&PathBuf::from("/work/app/.git/hooks")));
}

#[test]
fn a_profile_the_helper_is_handed_must_name_plain_absolute_paths() {
    let mut p = Profile::command(&places(), false);
    assert!(p.check().is_ok());
    p.write.push("relative/dir".into());
    assert!(p.check().is_err());
    let mut p = Profile::command(&places(), false);
    p.write.push("/work/app/../../etc".into());
    assert!(p.check().is_err());
    let mut p = Profile::command(&places(), false);
    for host in ["api.x.com", "bad host", "", "x/../etc"] {
        p.network = Network::To {
            endpoints: vec![Endpoint {
                host: host.into(),
                port: 443,
            }],
            serves_itself: false,
        };
        assert_eq!(p.check().is_ok(), host == "api.x.com", "{host}");
    }
    p.network = Network::To {
        endpoints: vec![Endpoint::loopback(0)],
        serves_itself: false,
    };
    assert!(p.check().is_err());
}

#[test]
fn the_hash_is_the_profile() {
    let a = Profile::command(&places(), false);
    assert_eq!(a.hash(), a.clone().hash());
    let mut b = a.clone();
    b.read_only.pop();
    assert_ne!(a.hash(), b.hash());
}

#[test]
fn a_tree_with_a_hole_is_granted_around_it_and_links_are_left_out() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git/hooks"))?;
    std::fs::create_dir_all(root.join(".git/objects"))?;
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n")?;
    std::fs::create_dir_all(root.join("src"))?;
    std::fs::write(root.join("README"), "hi")?;
    std::os::unix::fs::symlink("/etc", root.join("elsewhere"))?;
    let holes = vec![root.join(".git/hooks")];
    let a = around(root, &holes);
    let mut whole = a.whole.clone();
    whole.sort();
    let mut want = vec![
        root.join(".git/HEAD"),
        root.join(".git/objects"),
        root.join("README"),
        root.join("src"),
    ];
    want.sort();
    assert_eq!(whole, want, "everything but the hole, and not the link");
    assert_eq!(a.passages, vec![root.to_owned(), root.join(".git")]);
    // No hole inside: the tree whole. The tree inside a hole: nothing.
    assert_eq!(around(&root.join("src"), &holes).whole, vec![root.join("src")]);
    assert_eq!(around(&root.join(".git/hooks/x"), &holes), Default::default());
    Ok(())
}

//! A profile made into kernel rules, in the helper's own single-threaded process: namespaces where
//! they work (read-only binds over the protected paths; a network of its own for a process that
//! reaches only some endpoints, see `relay`), Landlock
//! for files, TCP ports, signals and abstract sockets, and seccomp for what Landlock does not see
//! (socket families, ptrace, io_uring, namespaces, the kernel keyring). Each step that cannot be
//! had is reported, never silently dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use super::enforced::{Enforced, Landlock};
use super::profile::{Network, Profile, WRITABLE_DEVICES};
use super::relay::Plan;

/// The Landlock ABI whose features a profile needs (scoped signals and abstract sockets came with
/// 6): on it or later, a profile is enforced in full.
const WANTED: ABI = ABI::V6;

/// The largest subtrees of `tree` that hold none of `holes`, and the folders passed through on
/// the way to a hole (listed, never opened for writing). Symbolic links met on the way are left
/// out: a rule follows a link, and a link planted in the workspace must not carry a grant
/// elsewhere.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Around {
    pub whole: Vec<PathBuf>,
    pub passages: Vec<PathBuf>,
}

pub fn around(tree: &Path, holes: &[PathBuf]) -> Around {
    let mut out = Around::default();
    walk(tree, holes, &mut out, 0);
    out
}

fn walk(tree: &Path, holes: &[PathBuf], out: &mut Around, depth: usize) {
    if holes.iter().any(|h| tree.starts_with(h)) {
        return;
    }
    if !holes.iter().any(|h| h.starts_with(tree)) {
        out.whole.push(tree.to_owned());
        return;
    }
    // A hole lies below: grant the children one by one.
    out.passages.push(tree.to_owned());
    if depth > 32 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tree) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        walk(&entry.path(), holes, out, depth + 1);
    }
}

/// Why confinement could not be applied at all; the helper then refuses to start the program.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("seccomp: {0}")]
    Seccomp(String),
}

/// Applies `profile` to this process (and so to everything it starts). Call it single-threaded.
/// `relay` is the plan for a profile whose network is some endpoints: their host filter.
/// `staged_net`: a staged command in the staging view's own network namespace (checked by the
/// caller), where it may open Internet sockets to reach the view's name server and nothing else.
pub fn apply(
    profile: &Profile,
    relay: Option<&Plan>,
    staged_net: bool,
) -> Result<Enforced, KernelError> {
    let mut enforced = Enforced::default();
    let relay = relay.filter(|_| matches!(profile.network, Network::To { .. }));
    let made = namespaces(profile, relay, &mut enforced);
    if made.net {
        if let Some(plan) = relay {
            // In the namespace already: if the relay fails, nothing is reachable, which holds.
            match super::relay::enter(plan) {
                Ok(()) => enforced.netns = true,
                Err(e) => enforced.note(&format!("its endpoints are not relayed: {e}")),
            }
        }
    }
    let mounted = if made.mount {
        mount_layer(profile, relay.and_then(|r| r.hosts.as_deref()), &mut enforced)
    } else {
        Vec::new()
    };
    enforced.landlock = landlock(profile, &mounted)?;
    seccomp(&profile.network, staged_net)?;
    enforced.seccomp = true;
    Ok(enforced)
}

/// The namespaces made: a mount namespace for the read-only binds (and the hosts file), a network
/// namespace for a relayed network.
struct Made {
    mount: bool,
    net: bool,
}

/// A new mount namespace where a protected path exists (or a hosts file is to be laid), and a new
/// network namespace where the network is relayed; a user namespace too when not root. A command
/// gets no network namespace: seccomp and Landlock already shut its network, and making one costs
/// about half a millisecond.
fn namespaces(profile: &Profile, relay: Option<&Plan>, enforced: &mut Enforced) -> Made {
    use nix::sched::{unshare, CloneFlags};
    let none = Made {
        mount: false,
        net: false,
    };
    let protected = profile
        .read_only
        .iter()
        .any(|p| std::fs::symlink_metadata(p).is_ok());
    let hosts = relay.is_some_and(|r| r.hosts.is_some());
    let mut flags = CloneFlags::empty();
    if protected || hosts {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if relay.is_some() {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if flags.is_empty() {
        return none;
    }
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let as_user = if uid.is_root() && unshare(flags).is_ok() {
        false
    } else if unshare(flags | CloneFlags::CLONE_NEWUSER).is_ok() {
        true
    } else {
        enforced.note("no namespaces on this kernel");
        return none;
    };
    if as_user {
        let mapped = std::fs::write("/proc/self/setgroups", "deny")
            .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
            .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")));
        if let Err(e) = mapped {
            // Without an id map the namespaces hold nothing up: a network namespace still has no
            // route out, so say what is missing and go on.
            enforced.note(&format!("user namespace without an id map: {e}"));
            return none;
        }
    }
    Made {
        mount: flags.contains(CloneFlags::CLONE_NEWNS),
        net: flags.contains(CloneFlags::CLONE_NEWNET),
    }
}

/// Read-only binds over the protected paths that exist, and the relay's hosts file over
/// `/etc/hosts`, in the new mount namespace. Returns the protected paths it covered.
fn mount_layer(profile: &Profile, hosts: Option<&Path>, enforced: &mut Enforced) -> Vec<PathBuf> {
    use nix::mount::{mount, MsFlags};
    let existing: Vec<&PathBuf> = profile
        .read_only
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    let layered = !existing.is_empty();
    if mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .is_err()
    {
        enforced.note("mounts could not be made private");
        return Vec::new();
    }
    let mut covered = Vec::new();
    for path in existing {
        let bound = mount(
            Some(path.as_path()),
            path.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        );
        // A remount keeps the flags the kernel locked on the mount it came from.
        let locked = nix::sys::statvfs::statvfs(path.as_path())
            .map(|s| locked_flags(s.flags()))
            .unwrap_or(MsFlags::empty());
        let read_only = bound.and_then(|()| {
            mount(
                None::<&str>,
                path.as_path(),
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | locked,
                None::<&str>,
            )
        });
        match read_only {
            Ok(()) => covered.push(path.clone()),
            Err(e) => enforced.note(&format!("{} not made read-only: {e}", path.display())),
        }
    }
    if let Some(hosts) = hosts {
        if let Err(e) = mount(
            Some(hosts),
            "/etc/hosts",
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        ) {
            enforced.note(&format!("its endpoints' names are not laid over /etc/hosts: {e}"));
        }
    }
    enforced.mounts = layered;
    covered
}

fn locked_flags(f: nix::sys::statvfs::FsFlags) -> nix::mount::MsFlags {
    use nix::mount::MsFlags;
    use nix::sys::statvfs::FsFlags;
    let mut out = MsFlags::empty();
    for (from, to) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(from) {
            out |= to;
        }
    }
    out
}

/// The Landlock rules. Protected paths the mount layer covered are left writable for Landlock
/// (the mount holds them); the others that exist are carved out of the writable trees. One that
/// does not exist yet is no hole: carving it out would take the whole workspace root's writes
/// away, so it is checked when the program ends instead (`Confined::sweep`).
fn landlock(profile: &Profile, mounted: &[PathBuf]) -> Result<Landlock, KernelError> {
    let abi = WANTED;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::from_all(abi))?;
    // By port too inside a network namespace: what the relay does not carry is shut twice.
    let ports = profile.ports();
    if ports.is_some() {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    let mut created = ruleset.create()?;
    let unmounted: Vec<PathBuf> = profile
        .read_only
        .iter()
        .filter(|p| !mounted.contains(p) && std::fs::symlink_metadata(p).is_ok())
        .cloned()
        .collect();
    let mut grants: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
    for tree in &profile.read {
        let a = around(tree, &profile.hidden);
        grants.extend(a.whole.into_iter().map(|p| (p, read)));
        grants.extend(a.passages.into_iter().map(|p| (p, AccessFs::ReadDir.into())));
    }
    let holes: Vec<PathBuf> = profile.hidden.iter().chain(&unmounted).cloned().collect();
    for tree in &profile.write {
        let a = around(tree, &holes);
        grants.extend(a.whole.into_iter().map(|p| (p, all)));
        grants.extend(a.passages.into_iter().map(|p| (p, read)));
    }
    for p in &unmounted {
        if !profile.hidden.iter().any(|h| p.starts_with(h)) {
            grants.push((p.clone(), read));
        }
    }
    grants.extend(WRITABLE_DEVICES.iter().map(|d| (PathBuf::from(d), all)));
    for (path, access) in grants {
        // A path that is gone, or cannot be opened, grants nothing.
        let Ok(fd) = PathFd::new(&path) else { continue };
        let is_dir = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        if access.is_empty() {
            continue;
        }
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    for port in ports.as_deref().unwrap_or(&[]) {
        created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
    }
    if ports.is_some() && matches!(profile.network, Network::To { .. }) {
        // An agent may listen on a port the kernel picks (opencode serves its own UI that way);
        // every fixed port stays shut.
        created = created.add_rule(NetPort::new(0, AccessNet::BindTcp))?;
    }
    let status = created.restrict_self()?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Landlock::Full {
            abi: abi_number(&status.landlock),
        },
        RulesetStatus::PartiallyEnforced => Landlock::Partial {
            abi: abi_number(&status.landlock),
        },
        RulesetStatus::NotEnforced => Landlock::None,
    })
}

fn abi_number(status: &landlock::LandlockStatus) -> u32 {
    match status {
        landlock::LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => kernel_abi
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(*effective_abi as u32),
        _ => 0,
    }
}

/// Two filters: one refusing with EPERM, and `clone3` answered "not implemented" so the C library
/// falls back to `clone`, whose namespace flags the first filter can see.
fn seccomp(network: &Network, staged_net: bool) -> Result<(), KernelError> {
    let err = |e: seccompiler::BackendError| KernelError::Seccomp(e.to_string());
    let arch: seccompiler::TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| KernelError::Seccomp(e.to_string()))?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
    ] {
        refused.insert(call, Vec::new());
    }
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| KernelError::Seccomp(e.to_string()))
    };
    // Sockets: local ones never (the session bus, the keyring, a Docker socket lie there), raw
    // ones never, and the network's families only when the profile has a network.
    let mut socket = vec![
        arg(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?,
        arg(0, SeccompCmpOp::Eq, libc::AF_PACKET as u64)?,
        arg(1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_RAW as u64)?,
    ];
    // Staged, in a namespace whose only device is loopback: Internet sockets reach the view's
    // name server there (the lookups it notes), and Landlock refuses every TCP connection.
    if matches!(network, Network::None) {
        let families: &[i32] = if staged_net {
            &[libc::AF_NETLINK]
        } else {
            &[libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK]
        };
        for family in families {
            socket.push(arg(0, SeccompCmpOp::Eq, *family as u64)?);
        }
    }
    refused.insert(libc::SYS_socket, socket);
    // New namespaces through clone's flags.
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone = Vec::new();
    for flag in namespaces {
        let flag = flag as u64;
        clone.push(arg(0, SeccompCmpOp::MaskedEq(flag), flag)?);
    }
    refused.insert(libc::SYS_clone, clone);
    // Typing into the terminal of whoever started Reins.
    refused.insert(
        libc::SYS_ioctl,
        vec![arg(1, SeccompCmpOp::Eq, libc::TIOCSTI)?],
    );
    let eperm = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let mut missing = BTreeMap::new();
    missing.insert(libc::SYS_clone3, Vec::new());
    let enosys = SeccompFilter::new(
        missing,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(err)?;
    for filter in [eperm, enosys] {
        let program: seccompiler::BpfProgram = filter.try_into().map_err(err)?;
        seccompiler::apply_filter(&program).map_err(|e| KernelError::Seccomp(e.to_string()))?;
    }
    Ok(())
}

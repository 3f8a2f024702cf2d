//! A profile: what a process Reins starts may touch, as pure data. It is derived from what the
//! process is (a command, an external agent, an MCP server), where it runs and what the person
//! approved, and nothing else; the helper turns it into kernel rules. Its hash goes into the intent
//! before the effect, so the audit log says which profile an effect ran under.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What the process may reach over the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Network {
    /// No sockets but pairs between its own processes.
    None,
    /// TCP to these endpoints only. Where a network namespace can be made, the process gets one
    /// of its own, with nothing but loopback, and Reins relays each endpoint to where it is:
    /// other hosts are not there at all. Where none can be, the kernel filters by port.
    To {
        endpoints: Vec<Endpoint>,
        /// It also talks to a server of its own on a port the kernel picks (opencode), which no
        /// port rule can name: inside its namespace that is loopback; without one, any port.
        serves_itself: bool,
    },
    /// Any TCP or UDP; raw sockets, the session bus and other local sockets stay shut.
    Full,
}

/// A host and TCP port a process may connect to: its model endpoint, a link back to Reins.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// A name (`api.anthropic.com`, `localhost`) or an address (`127.0.0.1`, `::1`), no brackets.
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    pub fn new(host: &str, port: u16) -> Self {
        Self {
            host: host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(),
            port,
        }
    }

    /// Reins' own link, on loopback.
    pub fn loopback(port: u16) -> Self {
        Self::new("127.0.0.1", port)
    }

    /// "api.anthropic.com:443", "[::1]:8080".
    pub fn said(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// A host name or address, and nothing a resolver or a file could read another way.
    fn plain(&self) -> bool {
        !self.host.is_empty()
            && self.host.len() <= 253
            && self
                .host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'))
            && self.port != 0
    }
}

/// The places a profile is derived from.
#[derive(Clone, Debug)]
pub struct Places {
    /// The workspace root, absolute.
    pub workspace: PathBuf,
    /// The person's home folder, if known.
    pub home: Option<PathBuf>,
    /// Reins' own data and config dirs and policy file: never readable or writable.
    pub reins: Vec<PathBuf>,
    /// A temp dir of the process's own, removed after it.
    pub tmp: PathBuf,
}

/// What an external agent reaches beyond what every profile reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentReach {
    /// Its own state and config dirs (and any the person added for it): writable.
    pub state: Vec<PathBuf>,
    /// The trees its program lives in (a Node package, a script): readable.
    pub programs: Vec<PathBuf>,
    /// Whether it writes the workspace itself (minus the protected paths), rather than through
    /// Reins.
    pub writes_workspace: bool,
    /// The endpoints it may connect to: its model's, Reins' links.
    pub endpoints: Vec<Endpoint>,
    /// It talks to a server of its own on a port the kernel picks (see [`Network::To`]).
    pub serves_itself: bool,
}

/// What a process may touch. Paths are absolute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Trees it may read and run programs from.
    pub read: Vec<PathBuf>,
    /// Trees it may also create, change and delete in.
    pub write: Vec<PathBuf>,
    /// Places inside those trees it may not read or write at all.
    pub hidden: Vec<PathBuf>,
    /// Places inside `write` that stay read-only.
    pub read_only: Vec<PathBuf>,
    pub network: Network,
}

/// Names inside a workspace that stay read-only even where the workspace is writable: writing them
/// runs code later (git hooks and config, editor tasks) or steers an agent or Reins itself.
pub const PROTECTED_IN_WORKSPACE: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".vscode",
    ".idea",
    ".zed",
    ".devcontainer",
    ".husky",
    ".reins",
    ".claude",
    ".codex",
    ".gemini",
    ".qwen",
    ".opencode",
    ".cursor",
    ".mcp.json",
    ".envrc",
];

/// The system's places a process reads from: programs, libraries and their configuration. Home
/// folders are not among them; they come in through `Places::home`, minus credentials.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/sys", "/dev", "/var", "/run", "/tmp", "/srv", "/snap",
];

/// Devices every program may write.
pub const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
];

impl Profile {
    /// A command (`shell.exec`, an ACP terminal): it reads the system, the workspace and the home
    /// folder outside its credentials; it writes the workspace, minus the protected paths, and its
    /// own temp dir; it has the network only if the person approved it.
    pub fn command(places: &Places, network: bool) -> Self {
        let mut p = Self::base(places);
        p.write = vec![places.workspace.clone(), places.tmp.clone()];
        p.read_only = PROTECTED_IN_WORKSPACE
            .iter()
            .map(|n| places.workspace.join(n))
            .collect();
        p.network = if network { Network::Full } else { Network::None };
        p
    }

    /// An external agent (ACP): it reads what a command reads plus its own program's files; it
    /// writes only its own state dirs and temp dir, plus the workspace (minus the protected paths)
    /// when it carries out approved changes itself; its network reaches only the endpoints it is
    /// given (its model's, Reins' memory server's).
    pub fn agent(places: &Places, reach: &AgentReach) -> Self {
        let mut p = Self::base(places);
        p.read.extend(reach.programs.iter().cloned());
        p.write = reach
            .state
            .iter()
            .cloned()
            .chain([places.tmp.clone()])
            .collect();
        if reach.writes_workspace {
            p.write.push(places.workspace.clone());
            p.read_only = PROTECTED_IN_WORKSPACE
                .iter()
                .map(|n| places.workspace.join(n))
                .collect();
        }
        let mut endpoints = reach.endpoints.clone();
        endpoints.sort();
        endpoints.dedup();
        p.network = Network::To {
            endpoints,
            serves_itself: reach.serves_itself,
        };
        p
    }

    /// What every profile reads, and never touches.
    fn base(places: &Places) -> Self {
        let mut read: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
        read.push(places.workspace.clone());
        let mut hidden: Vec<PathBuf> = crate::policy::credentials::system_locations()
            .map(PathBuf::from)
            .collect();
        if let Some(home) = &places.home {
            read.push(home.clone());
            hidden.extend(
                crate::policy::credentials::locations()
                    .map(|rel| home.join(rel)),
            );
        }
        hidden.extend(places.reins.iter().cloned());
        Self {
            read,
            write: Vec::new(),
            hidden,
            read_only: Vec::new(),
            network: Network::None,
        }
    }

    /// The profile's hash: what the intent records before the effect.
    pub fn hash(&self) -> crate::digest::Digest {
        crate::digest::Digest::of(&serde_json::to_vec(self).unwrap_or_default())
    }

    /// Checks a profile handed to the helper: every path absolute and plain (no `..`), so nothing
    /// it names depends on where the helper happens to run.
    pub fn check(&self) -> Result<(), String> {
        for p in self
            .read
            .iter()
            .chain(&self.write)
            .chain(&self.hidden)
            .chain(&self.read_only)
        {
            if !p.is_absolute() {
                return Err(format!("{} is not an absolute path", p.display()));
            }
            if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
                return Err(format!("{} names a parent folder (..)", p.display()));
            }
        }
        if let Network::To { endpoints, .. } = &self.network {
            if let Some(e) = endpoints.iter().find(|e| !e.plain()) {
                return Err(format!("{} is not an endpoint", e.said()));
            }
        }
        Ok(())
    }

    /// The ports of the endpoints it may connect to, each once, in order; none when no port rule
    /// can say what it reaches (no endpoints to name, or a server of its own).
    pub fn ports(&self) -> Option<Vec<u16>> {
        match &self.network {
            Network::None => Some(Vec::new()),
            Network::To {
                serves_itself: true,
                ..
            }
            | Network::Full => None,
            Network::To { endpoints, .. } => {
                let mut ports: Vec<u16> = endpoints.iter().map(|e| e.port).collect();
                ports.sort_unstable();
                ports.dedup();
                Some(ports)
            }
        }
    }

    /// In words, for the card and the timeline: "no network, writes inside the workspace".
    pub fn said(&self, workspace: &Path) -> String {
        let net = match &self.network {
            Network::None => "no network".to_owned(),
            Network::To {
                endpoints,
                serves_itself: false,
            } if endpoints.is_empty() => "no network".to_owned(),
            Network::To {
                endpoints,
                serves_itself,
            } => {
                let mut to: Vec<String> = endpoints.iter().map(Endpoint::said).collect();
                if *serves_itself {
                    to.push("its own local server".into());
                }
                format!("network to {} only", to.join(", "))
            }
            Network::Full => "with the network".to_owned(),
        };
        let writes = if self.write.iter().any(|w| w == workspace) {
            "writes inside the workspace"
        } else if self.write.is_empty() {
            "writes nothing"
        } else {
            "writes only its own state"
        };
        format!("{net}, {writes}")
    }
}

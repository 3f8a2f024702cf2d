//! What the kernel actually enforced for one process: the helper writes it before it starts the
//! program, Reins reads it back for the audit log, the card and the timeline.

use serde::{Deserialize, Serialize};

/// Landlock, as the kernel applied it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", deny_unknown_fields)]
pub enum Landlock {
    /// Every rule the profile asked for holds.
    Full { abi: u32 },
    /// An older ABI: some rules (named in the docs) do not hold.
    Partial { abi: u32 },
    /// This kernel has no Landlock.
    #[default]
    None,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enforced {
    pub landlock: Landlock,
    pub seccomp: bool,
    /// Protected paths held read-only by a mount layer.
    pub mounts: bool,
    /// A network namespace of its own, its endpoints relayed into it: its network is filtered by
    /// host, not only by port.
    #[serde(default)]
    pub netns: bool,
    /// What could not be had, in words.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Enforced {
    pub fn note(&mut self, text: &str) {
        self.notes.push(text.to_owned());
    }

    /// Whether the profile holds in full.
    pub fn full(&self) -> bool {
        matches!(self.landlock, Landlock::Full { .. }) && self.seccomp
    }

    /// "confined (Landlock ABI 7, seccomp, mount layer)", or what is missing.
    pub fn said(&self) -> String {
        let mut parts = Vec::new();
        match self.landlock {
            Landlock::Full { abi } => parts.push(format!("Landlock ABI {abi}")),
            Landlock::Partial { abi } => parts.push(format!("Landlock ABI {abi}, partly")),
            Landlock::None => {}
        }
        if self.seccomp {
            parts.push("seccomp".into());
        }
        if self.mounts {
            parts.push("mount layer".into());
        }
        if self.netns {
            parts.push("network namespace".into());
        }
        match self.landlock {
            Landlock::None => format!(
                "unconfined: this kernel has no Landlock{}",
                if parts.is_empty() {
                    String::new()
                } else {
                    format!(" (only {})", parts.join(", "))
                }
            ),
            Landlock::Partial { .. } => format!("partly confined ({})", parts.join(", ")),
            Landlock::Full { .. } => format!("confined ({})", parts.join(", ")),
        }
    }
}

//! Typed identifiers: the type, not a comment, says what an id is.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        #[cfg_attr(feature = "specta", derive(specta::Type), specta(transparent))]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh, time-ordered (UUIDv7) id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// One user intent, start to end.
    RunId
);
impl RunId {
    /// The id's 16 bytes (a run's trace id in exported telemetry).
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

uuid_id!(
    /// One entry of the effect journal.
    IntentId
);
uuid_id!(
    /// One review checkpoint.
    ApprovalId
);
uuid_id!(
    /// One standing permission created by an approval.
    GrantId
);
uuid_id!(
    /// One remembered profile fact (all its versions).
    FactId
);
uuid_id!(
    /// A fact an agent proposed that waits for the user.
    SuggestionId
);

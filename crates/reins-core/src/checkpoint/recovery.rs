//! The recovery-point rule, pure.

use std::collections::BTreeSet;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Valid,
    /// Bytes do not match their checksum, or do not decode.
    Invalid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// Two types named Damage reach the app\'s TypeScript; serde\'s container name is what specta uses.
#[serde(rename = "CheckpointDamageKind")]
pub enum DamageKind {
    /// A seq is missing: a checkpoint was lost.
    Gap,
    /// The checkpoint's bytes do not match its checksum or cannot be read.
    Checksum,
}

impl DamageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DamageKind::Gap => "gap",
            DamageKind::Checksum => "checksum",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// Two types named Damage reach the app\'s TypeScript; serde\'s container name is what specta uses.
#[serde(rename = "CheckpointDamage")]
pub struct Damage {
    pub seq: i64,
    pub kind: DamageKind,
    /// Already recorded and recovered past by an earlier attempt.
    pub acknowledged: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveryAnalysis {
    /// The highest seq of the longest contiguous valid prefix; None when even seq 1 is unusable.
    pub point: Option<i64>,
    /// Every gap and invalid checkpoint, in seq order.
    pub damage: Vec<Damage>,
}

/// `checkpoints`: (seq, health) in any order. `acknowledged`: seqs whose damage was already recorded;
/// the prefix steps over those (they were recovered past and the run went on) but stops at new damage.
#[cfg(test)]
pub fn recovery_point(
    checkpoints: &[(i64, Health)],
    acknowledged: &BTreeSet<i64>,
) -> RecoveryAnalysis {
    recovery_point_after(checkpoints, acknowledged, 0)
}

/// The same, for a run whose checkpoints up to `pruned_through` were removed by retention: the
/// prefix starts after them, and their absence is not damage.
pub fn recovery_point_after(
    checkpoints: &[(i64, Health)],
    acknowledged: &BTreeSet<i64>,
    pruned_through: i64,
) -> RecoveryAnalysis {
    recovery_point_past(checkpoints, acknowledged, pruned_through, 0)
}

/// The same, when an earlier resume verified the prefix through `verified` (its checkpoints are
/// not given again): the prefix starts valid there, and `checkpoints` are those after it.
pub fn recovery_point_past(
    checkpoints: &[(i64, Health)],
    acknowledged: &BTreeSet<i64>,
    pruned_through: i64,
    verified: i64,
) -> RecoveryAnalysis {
    let mut sorted: Vec<(i64, Health)> = checkpoints.to_vec();
    sorted.sort_by_key(|(seq, _)| *seq);
    let start = pruned_through.max(verified);
    let max = sorted.last().map(|(s, _)| *s).unwrap_or(0);

    let mut damage = Vec::new();
    let mut point = (verified > pruned_through).then_some(verified);
    let mut prefix_open = true;
    let mut rows = sorted.iter().skip_while(|(seq, _)| *seq <= start).peekable();
    for seq in (start + 1)..=max {
        let health = match rows.peek() {
            Some((s, h)) if *s == seq => {
                let h = *h;
                rows.next();
                Some(h)
            }
            _ => None,
        };
        let kind = match health {
            Some(Health::Valid) => None,
            Some(Health::Invalid) => Some(DamageKind::Checksum),
            None => Some(DamageKind::Gap),
        };
        match kind {
            None => {
                if prefix_open {
                    point = Some(seq);
                }
            }
            Some(kind) => {
                let known = acknowledged.contains(&seq);
                damage.push(Damage {
                    seq,
                    kind,
                    acknowledged: known,
                });
                if !known {
                    prefix_open = false;
                }
            }
        }
    }
    RecoveryAnalysis { point, damage }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use Health::{Invalid as X, Valid as V};

    #[rstest]
    #[case::empty(&[], None)]
    #[case::all_valid(&[(1, V), (2, V), (3, V)], Some(3))]
    #[case::corrupt_tail(&[(1, V), (2, V), (3, X)], Some(2))]
    #[case::corrupt_middle(&[(1, V), (2, X), (3, V)], Some(1))]
    #[case::gap(&[(1, V), (2, V), (4, V)], Some(2))]
    #[case::first_corrupt(&[(1, X), (2, V)], None)]
    #[case::unordered(&[(3, V), (1, V), (2, V)], Some(3))]
    fn picks_the_end_of_the_valid_prefix(
        #[case] rows: &[(i64, Health)],
        #[case] expected: Option<i64>,
    ) {
        assert_eq!(recovery_point(rows, &BTreeSet::new()).point, expected);
    }

    #[test]
    fn reports_each_kind_of_damage() {
        let a = recovery_point(&[(1, V), (2, X), (4, V)], &BTreeSet::new());
        assert_eq!(
            a.damage,
            vec![
                Damage {
                    seq: 2,
                    kind: DamageKind::Checksum,
                    acknowledged: false
                },
                Damage {
                    seq: 3,
                    kind: DamageKind::Gap,
                    acknowledged: false
                },
            ]
        );
    }

    #[test]
    fn checkpoints_removed_by_retention_are_not_a_gap() {
        let a = recovery_point_after(&[(4, V), (5, V)], &BTreeSet::new(), 3);
        assert_eq!((a.point, a.damage.len()), (Some(5), 0));
        let b = recovery_point_after(&[(4, V), (6, V)], &BTreeSet::new(), 3);
        assert_eq!(
            b.point,
            Some(4),
            "a gap after the pruned range is still damage"
        );
    }

    #[test]
    fn a_verified_prefix_is_not_read_again() {
        let none = BTreeSet::new();
        assert_eq!(recovery_point_past(&[], &none, 0, 7).point, Some(7));
        assert_eq!(recovery_point_past(&[(8, V), (9, V)], &none, 0, 7).point, Some(9));
        let a = recovery_point_past(&[(8, X), (9, V)], &none, 0, 7);
        assert_eq!(a.point, Some(7), "new damage stops right after the verified prefix");
        assert_eq!(a.damage.len(), 1);
        assert_eq!(recovery_point_past(&[(10, V)], &none, 9, 5).point, Some(10), "retention went further");
        assert_eq!(recovery_point_past(&[(1, V)], &none, 0, 0).point, Some(1));
    }

    #[test]
    fn acknowledged_damage_is_stepped_over_but_new_damage_stops() {
        let acked: BTreeSet<i64> = [2].into();
        let a = recovery_point(&[(1, V), (2, X), (3, V), (4, V), (5, X), (6, V)], &acked);
        assert_eq!(a.point, Some(4), "2 was recovered past; 5 is new damage");
        assert!(a.damage.iter().any(|d| d.seq == 2 && d.acknowledged));
        assert!(a.damage.iter().any(|d| d.seq == 5 && !d.acknowledged));
    }
}

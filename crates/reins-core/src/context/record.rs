//! The manifest as it is kept: a long run cuts most of its history from each model call, and
//! listing every cut part in every call's record would make the records grow with the square of
//! the run. Consecutive parts of one kind that were cut are kept as one line that names the range.

use super::{Entry, Fate, Manifest, Why};

/// Runs of at least this many cut parts become one line.
pub const MERGE_AT: usize = 3;

impl Manifest {
    /// What is stored for the call: every part that went in, as it went in; each run of
    /// consecutive cut parts of one kind as one entry (`turn-1 … turn-140 (140 parts)`, their
    /// tokens summed, why each was cut summarised).
    pub fn for_the_record(&self) -> Manifest {
        let mut entries: Vec<Entry> = Vec::new();
        let mut run: Vec<&Entry> = Vec::new();
        let flush = |run: &mut Vec<&Entry>, entries: &mut Vec<Entry>| {
            if run.len() >= MERGE_AT {
                entries.push(merged(run));
            } else {
                entries.extend(run.iter().map(|e| (*e).clone()));
            }
            run.clear();
        };
        for e in &self.entries {
            let continues = e.fate == Fate::Cut && run.last().is_none_or(|r| r.kind == e.kind);
            if !continues {
                flush(&mut run, &mut entries);
            }
            if e.fate == Fate::Cut {
                run.push(e);
            } else {
                entries.push(e.clone());
            }
        }
        flush(&mut run, &mut entries);
        Manifest {
            entries,
            ..self.clone()
        }
    }
}

fn merged(run: &[&Entry]) -> Entry {
    let (first, last) = (run[0], run[run.len() - 1]);
    let best = run
        .iter()
        .filter_map(|e| e.score)
        .fold(None, |m: Option<f32>, s| Some(m.map_or(s, |m| m.max(s))));
    let over_budget = run
        .iter()
        .all(|e| matches!(e.why, Why::OverBudget { .. }));
    let why = match (over_budget, best) {
        (true, Some(s)) => format!("over budget, each of them (best score {s:.3})"),
        _ => format!("cut: {} (the first of them)", first.why),
    };
    Entry {
        id: format!("{} … {} ({} parts)", first.id, last.id, run.len()),
        kind: first.kind,
        tokens: run.iter().map(|e| e.tokens).sum(),
        used: 0,
        score: best,
        fate: Fate::Cut,
        why: Why::Recorded(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Budget, Kind};

    fn entry(id: &str, kind: Kind, fate: Fate, score: f32) -> Entry {
        Entry {
            id: id.into(),
            kind,
            tokens: 10,
            used: if fate == Fate::Cut { 0 } else { 10 },
            score: Some(score),
            fate,
            why: if fate == Fate::Cut {
                Why::OverBudget {
                    needs: 10,
                    left: 2,
                    score,
                }
            } else {
                Why::Fits { score }
            },
        }
    }

    #[test]
    fn runs_of_cut_parts_become_one_line_and_what_went_in_stays_whole() {
        let mut entries = vec![entry("goal", Kind::Goal, Fate::Included, 1.0)];
        for i in 1..=100 {
            let fate = if i == 50 || i > 96 {
                Fate::Included
            } else {
                Fate::Cut
            };
            entries.push(entry(&format!("turn-{i}"), Kind::History, fate, i as f32 / 100.0));
        }
        entries.push(entry("turn-101", Kind::Request, Fate::Included, 1.0));
        let m = Manifest {
            budget: Budget {
                window: 100,
                reserved_output: 10,
                tool_schemas: 0,
                margin: 0,
            },
            input_budget: 90,
            used: 60,
            counter: "c".into(),
            entries,
            facts_used: Vec::new(),
        };
        let kept = m.for_the_record();
        let ids: Vec<&str> = kept.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "goal",
                "turn-1 … turn-49 (49 parts)",
                "turn-50",
                "turn-51 … turn-96 (46 parts)",
                "turn-97",
                "turn-98",
                "turn-99",
                "turn-100",
                "turn-101"
            ]
        );
        assert_eq!(kept.entries[1].tokens, 490);
        assert_eq!(
            kept.entries[1].why.to_string(),
            "over budget, each of them (best score 0.490)"
        );
        assert_eq!(
            kept.entries.iter().map(|e| e.used).sum::<usize>(),
            m.entries.iter().map(|e| e.used).sum::<usize>(),
            "what went in is all there"
        );
    }
}

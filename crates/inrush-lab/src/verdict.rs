//! Whether a seed's advice holds here: the factor between the advised and the discouraged
//! variation, ours beside the seed's.

use crate::results::{Holds, Measurement, Variation, Verdict};

/// What is compared between two variations (always per row, so variations with different row
/// counts compare honestly; no total is extrapolated).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    SecondsPerRow,
    /// WAL records per row (pg_stat_wal); WAL bytes per row where the server has no records.
    WalRecordsPerRow,
    WalBytesPerRow,
    /// An extra figure of the runs (e.g. `query_ready_seconds`), per row.
    ExtraPerRow(&'static str),
}

/// Where the seed's factor comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SeedFactor {
    /// The ratio of the two variations' published seconds (same row counts in the seed).
    FromSeconds,
    /// A factor the seed published otherwise (log sizes, redo entries, per-row times).
    Given(f64),
    None,
}

/// One comparison: `slow` is the variation the advice says costs more, `fast` the advised one.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub fast: usize,
    pub slow: usize,
    pub metric: Metric,
    /// The advice is that the two cost the same (e.g. "nothing is compressed on the wire").
    pub same: bool,
    pub seed: SeedFactor,
    /// The advice as a claim, e.g. "committing every 1000 rows beats autocommit".
    pub claim: &'static str,
}

impl Rule {
    pub fn new(slow: usize, fast: usize, claim: &'static str) -> Self {
        Rule {
            fast,
            slow,
            metric: Metric::SecondsPerRow,
            same: false,
            seed: SeedFactor::FromSeconds,
            claim,
        }
    }

    pub fn metric(mut self, metric: Metric) -> Self {
        self.metric = metric;
        self
    }

    pub fn same(mut self) -> Self {
        self.same = true;
        self
    }

    pub fn seed(mut self, seed: SeedFactor) -> Self {
        self.seed = seed;
        self
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The metric for a variation's runs; `None` when it has no runs (skipped) or lacks the figure.
fn value(metric: Metric, runs: &[Measurement]) -> Option<f64> {
    let per_row = |f: &dyn Fn(&Measurement) -> Option<f64>| {
        let v: Option<Vec<f64>> = runs
            .iter()
            .map(|m| f(m).map(|x| x / m.rows.max(1) as f64))
            .collect();
        median(v?)
    };
    match metric {
        Metric::SecondsPerRow => per_row(&|m| Some(m.seconds)),
        Metric::WalBytesPerRow => per_row(&|m| Some(m.wal_bytes as f64)),
        Metric::WalRecordsPerRow => per_row(&|m| m.wal_records.map(|r| r as f64)),
        Metric::ExtraPerRow(name) => per_row(&|m| m.extra.get(name).copied()),
    }
}

/// The verdict of the first rule whose two variations both ran.
pub fn judge(rules: &[Rule], variations: &[Variation]) -> Option<Verdict> {
    rules.iter().find_map(|rule| judge_one(rule, variations))
}

fn judge_one(rule: &Rule, variations: &[Variation]) -> Option<Verdict> {
    let slow = variations.get(rule.slow)?;
    let fast = variations.get(rule.fast)?;
    let mut metric = rule.metric;
    let mut pair = (value(metric, &slow.runs), value(metric, &fast.runs));
    if metric == Metric::WalRecordsPerRow && (pair.0.is_none() || pair.1.is_none()) {
        metric = Metric::WalBytesPerRow;
        pair = (value(metric, &slow.runs), value(metric, &fast.runs));
    }
    let (s, f) = (pair.0?, pair.1?);
    let factor = if f > 0.0 { s / f } else { f64::INFINITY };
    let seed_factor = match rule.seed {
        SeedFactor::FromSeconds => match (slow.seed_seconds, fast.seed_seconds) {
            (Some(s), Some(f)) if f > 0.0 => Some(s / f),
            _ => None,
        },
        SeedFactor::Given(x) => Some(x),
        SeedFactor::None => None,
    };
    let holds = holds(factor, seed_factor, rule.same);
    let what = match metric {
        Metric::SecondsPerRow => "time per row",
        Metric::WalRecordsPerRow => "WAL records per row",
        Metric::WalBytesPerRow => "WAL bytes per row",
        Metric::ExtraPerRow(_) => "query-ready time per row",
    };
    let seed = seed_factor.map_or("seed: no figure".to_string(), |x| format!("seed: {x:.2}x"));
    let prefix = match holds {
        Holds::Yes => "Holds",
        Holds::Partly => "Partly",
        Holds::No => "Does not hold",
    };
    let text = format!(
        "{prefix}: {} ({}: {factor:.2}x {what} of \"{}\" over \"{}\" here; {seed})",
        rule.claim,
        if rule.same { "expected ~1x" } else { "ratio" },
        slow.label,
        fast.label
    );
    Some(Verdict {
        holds,
        factor,
        seed_factor,
        text,
    })
}

/// Yes: the direction holds and the size is within 3x of the seed's (or above 1.2x where the
/// seed gave no figure). Partly: the direction holds, the size does not. No: no effect (under
/// 1.05x) or the other way. For "no difference" advice: Yes within 1.25x either way, Partly
/// within 1.5x, else No.
pub fn holds(factor: f64, seed_factor: Option<f64>, same: bool) -> Holds {
    if !factor.is_finite() || factor <= 0.0 {
        return Holds::No;
    }
    if same {
        let off = factor.max(1.0 / factor);
        return if off <= 1.25 {
            Holds::Yes
        } else if off <= 1.5 {
            Holds::Partly
        } else {
            Holds::No
        };
    }
    if factor < 1.05 {
        return Holds::No;
    }
    match seed_factor {
        Some(s) if s > 1.0 => {
            let r = factor / s;
            if (1.0 / 3.0..=3.0).contains(&r) || (s < 1.5 && factor < 2.0) {
                Holds::Yes
            } else {
                Holds::Partly
            }
        }
        _ if factor >= 1.2 => Holds::Yes,
        _ => Holds::Partly,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn m(rows: u64, seconds: f64) -> Measurement {
        Measurement {
            rows,
            seconds,
            rows_per_second: rows as f64 / seconds,
            wal_bytes: rows * 100,
            wal_records: None,
            client_cpu_seconds: 0.0,
            rate: vec![],
            settings_changed: BTreeMap::new(),
            extra: BTreeMap::new(),
        }
    }

    fn v(label: &str, seed: Option<f64>, runs: Vec<Measurement>) -> Variation {
        Variation {
            label: label.into(),
            baseline: false,
            seed_figure: None,
            seed_seconds: seed,
            runs,
        }
    }

    #[test]
    fn holds_by_direction_and_size() {
        assert_eq!(holds(10.0, Some(12.1), false), Holds::Yes);
        assert_eq!(holds(2.0, Some(12.1), false), Holds::Partly);
        assert_eq!(holds(50.0, Some(12.1), false), Holds::Partly);
        assert_eq!(holds(1.0, Some(12.1), false), Holds::No);
        assert_eq!(holds(0.5, Some(2.0), false), Holds::No);
        assert_eq!(holds(1.3, None, false), Holds::Yes);
        assert_eq!(holds(1.1, None, false), Holds::Partly);
        assert_eq!(holds(1.1, Some(1.16), false), Holds::Yes);
        assert_eq!(holds(1.1, Some(1.0), true), Holds::Yes);
        assert_eq!(holds(1.4, Some(1.0), true), Holds::Partly);
        assert_eq!(holds(3.0, Some(1.0), true), Holds::No);
        assert_eq!(holds(f64::NAN, None, false), Holds::No);
    }

    #[test]
    fn verdict_compares_per_row_and_uses_the_seed_seconds() {
        // The slow variation ran fewer rows: per row it is 10x slower.
        let vars = vec![
            v("autocommit", Some(92.05), vec![m(100, 1.0)]),
            v("commit 1000", Some(7.58), vec![m(1000, 1.0)]),
        ];
        let verdict = judge(&[Rule::new(0, 1, "commit less often")], &vars).unwrap();
        assert!((verdict.factor - 10.0).abs() < 1e-9);
        assert!((verdict.seed_factor.unwrap() - 92.05 / 7.58).abs() < 1e-9);
        assert_eq!(verdict.holds, Holds::Yes);
        assert!(verdict.text.starts_with("Holds: commit less often"));
    }

    #[test]
    fn skipped_variations_fall_back_to_the_next_rule() {
        let vars = vec![
            v("a", None, vec![m(10, 2.0)]),
            v("skipped", None, vec![]),
            v("c", None, vec![m(10, 1.0)]),
        ];
        let rules = [Rule::new(0, 1, "first"), Rule::new(0, 2, "second")];
        let verdict = judge(&rules, &vars).unwrap();
        assert!(verdict.text.contains("second"));
        assert!(judge(&rules[..1], &vars).is_none());
    }

    #[test]
    fn wal_records_fall_back_to_bytes() {
        let mut slow = m(10, 1.0);
        slow.wal_bytes = 10_000;
        let vars = vec![
            v("rows", None, vec![slow]),
            v("copy", None, vec![m(10, 1.0)]),
        ];
        let rule = Rule::new(0, 1, "COPY logs less").metric(Metric::WalRecordsPerRow);
        let verdict = judge(&[rule], &vars).unwrap();
        assert!((verdict.factor - 10.0).abs() < 1e-9);
        assert!(verdict.text.contains("WAL bytes per row"));
    }
}

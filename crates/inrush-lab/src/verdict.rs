//! Whether a seed's advice holds here: the factor between the advised and the discouraged
//! variation, ours beside the field report's.

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

/// Where the field report's factor comes from.
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

/// Runs shorter than this are not timed: the fixed costs of a run (the COMMIT's flush, the
/// first statement's planning) are a large share of a few milliseconds, and repeating the run
/// does not show them as spread.
pub const MIN_TIMED_SECONDS: f64 = 0.1;
/// Below this many rows per run a verdict carries a caution: per-row figures of a handful of
/// rows are mostly the run's fixed costs.
pub const FEW_ROWS: u64 = 1_000;
/// "About the same" advice holds within this factor either way, and partly within the next.
const SAME_WITHIN: f64 = 1.25;
const SAME_PARTLY: f64 = 1.5;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One variation's runs, reduced to what a verdict needs.
struct Side<'a> {
    label: &'a str,
    /// The median of the metric per row.
    value: f64,
    /// The runs' range of the metric over their median, `None` with a single run.
    spread: Option<f64>,
    /// The median timed seconds behind a time metric, `None` for WAL metrics.
    seconds: Option<f64>,
    /// The fewest rows of a run.
    rows: u64,
}

/// The metric's figure of one run, before dividing by its rows.
fn figure(metric: Metric, m: &Measurement) -> Option<f64> {
    match metric {
        Metric::SecondsPerRow => Some(m.seconds),
        Metric::WalBytesPerRow => Some(m.wal_bytes as f64),
        Metric::WalRecordsPerRow => m.wal_records.map(|r| r as f64),
        Metric::ExtraPerRow(name) => m.extra.get(name).copied(),
    }
}

/// The variation's side of a comparison; `None` when it has no runs (skipped) or lacks the
/// figure.
fn side(metric: Metric, v: &Variation) -> Option<Side<'_>> {
    let totals: Vec<f64> = v
        .runs
        .iter()
        .map(|m| figure(metric, m))
        .collect::<Option<_>>()?;
    let per_row: Vec<f64> = totals
        .iter()
        .zip(&v.runs)
        .map(|(x, m)| x / m.rows.max(1) as f64)
        .collect();
    let value = median(per_row.clone())?;
    let (lo, hi) = per_row
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let spread = (per_row.len() > 1).then(|| if value > 0.0 { (hi - lo) / value } else { 0.0 });
    let timed = matches!(metric, Metric::SecondsPerRow | Metric::ExtraPerRow(_));
    Some(Side {
        label: &v.label,
        value,
        spread,
        seconds: if timed { median(totals) } else { None },
        rows: v.runs.iter().map(|m| m.rows).min()?,
    })
}

/// The verdict of the first rule whose two variations both ran.
pub fn judge(rules: &[Rule], variations: &[Variation]) -> Option<Verdict> {
    rules.iter().find_map(|rule| judge_one(rule, variations))
}

fn judge_one(rule: &Rule, variations: &[Variation]) -> Option<Verdict> {
    let slow_v = variations.get(rule.slow)?;
    let fast_v = variations.get(rule.fast)?;
    let mut metric = rule.metric;
    let mut pair = (side(metric, slow_v), side(metric, fast_v));
    if metric == Metric::WalRecordsPerRow && (pair.0.is_none() || pair.1.is_none()) {
        metric = Metric::WalBytesPerRow;
        pair = (side(metric, slow_v), side(metric, fast_v));
    }
    let (slow, fast) = (pair.0?, pair.1?);
    let factor = if fast.value > 0.0 {
        slow.value / fast.value
    } else if slow.value > 0.0 {
        f64::INFINITY
    } else {
        f64::NAN
    };
    let seed_factor = match rule.seed {
        SeedFactor::FromSeconds => match (slow_v.seed_seconds, fast_v.seed_seconds) {
            (Some(s), Some(f)) if f > 0.0 => Some(s / f),
            _ => None,
        },
        SeedFactor::Given(x) => Some(x),
        SeedFactor::None => None,
    };
    let noise = slow.spread.zip(fast.spread).map(|(a, b)| a.max(b));
    let shortest = slow.seconds.zip(fast.seconds).map(|(a, b)| a.min(b));
    let (holds, why) = decide(factor, seed_factor, rule.same, noise, shortest);
    Some(Verdict {
        holds,
        factor,
        seed_factor,
        text: sentence(
            rule,
            metric,
            &slow,
            &fast,
            factor,
            seed_factor,
            holds,
            why,
            noise,
        ),
    })
}

/// Whether the runs can tell, then whether the advice holds; with the reason when they cannot.
/// `noise` is the larger relative spread of the two variations' runs (`None`: single runs),
/// `shortest` the shorter median time behind a time metric.
pub fn decide(
    factor: f64,
    seed_factor: Option<f64>,
    same: bool,
    noise: Option<f64>,
    shortest: Option<f64>,
) -> (Holds, Option<String>) {
    if let Some(t) = shortest.filter(|t| *t < MIN_TIMED_SECONDS) {
        return (
            Holds::Inconclusive,
            Some(format!(
                "runs of {} are too short to time (under {:.0} ms; a larger --scale gives longer runs)",
                millis(t),
                MIN_TIMED_SECONDS * 1000.0
            )),
        );
    }
    if factor.is_nan() || factor <= 0.0 {
        return (
            Holds::Inconclusive,
            Some("neither variation measured anything to compare".into()),
        );
    }
    let difference = factor.max(1.0 / factor) - 1.0;
    match noise {
        Some(n) if same && n > SAME_WITHIN - 1.0 => (
            Holds::Inconclusive,
            Some(format!(
                "the runs' spread of {} is wider than the {} the advice allows",
                percent(n),
                percent(SAME_WITHIN - 1.0)
            )),
        ),
        Some(n) if !same && difference <= n => (
            Holds::Inconclusive,
            Some(format!(
                "difference {} is inside the runs' spread of {}",
                percent(difference),
                percent(n)
            )),
        ),
        _ => (holds(factor, seed_factor, same), None),
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn millis(seconds: f64) -> String {
    format!("{:.0} ms", seconds * 1000.0)
}

/// The verdict's line: what was measured, in the direction the factor says, never the advice
/// alone (a "Does not hold" before the advice's own words reads as the opposite).
#[allow(clippy::too_many_arguments)]
fn sentence(
    rule: &Rule,
    metric: Metric,
    slow: &Side,
    fast: &Side,
    factor: f64,
    seed_factor: Option<f64>,
    holds: Holds,
    why: Option<String>,
    noise: Option<f64>,
) -> String {
    let (verb, what) = match metric {
        Metric::SecondsPerRow => ("takes", "time per row"),
        Metric::WalRecordsPerRow => ("writes", "WAL records per row"),
        Metric::WalBytesPerRow => ("writes", "WAL bytes per row"),
        Metric::ExtraPerRow(_) => ("takes", "query-ready time per row"),
    };
    let times = if factor.is_finite() {
        format!("{} the", crate::fmt::factor(factor))
    } else {
        "some, against none of the".into()
    };
    let measured = format!(
        "\"{}\" {verb} {times} {what} of \"{}\"",
        slow.label, fast.label
    );
    let seed = match (seed_factor, rule.same) {
        (Some(s), false) => format!("the field report: {}", crate::fmt::factor(s)),
        (None, false) => "the field report gave no figure".into(),
        (Some(s), true) => format!(
            "expected about 1x; the field report: {}",
            crate::fmt::factor(s)
        ),
        (None, true) => "expected about 1x".into(),
    };
    let head = match (holds, why) {
        (Holds::Inconclusive, Some(why)) => format!("Inconclusive: {why}; "),
        (Holds::Inconclusive, None) => "Inconclusive: ".into(),
        (Holds::Yes, _) => "Holds here: ".into(),
        (Holds::Partly, _) if rule.same => {
            format!("Partly holds here (within {SAME_PARTLY}x, not {SAME_WITHIN}x): ")
        }
        (Holds::Partly, _) => "Partly holds here (the direction, not the size): ".into(),
        (Holds::No, _) => "Does not hold here: ".into(),
    };
    let mut text = format!("{head}{measured} ({seed}; advice tested: {}).", rule.claim);
    let rows = slow.rows.min(fast.rows);
    if rows < FEW_ROWS {
        text.push_str(&format!(
            " Caution: only {rows} rows a run, mostly the run's fixed costs."
        ));
    }
    if noise.is_none() && holds != Holds::Inconclusive {
        text.push_str(
            " Caution: a single run, so the noise is unknown (--repeat 3 or more measures it).",
        );
    }
    text
}

/// Yes: the direction holds and the size is within 3x of the field report's (or above 1.2x where the
/// seed gave no figure). Partly: the direction holds, the size does not. No: no effect (under
/// 1.05x) or the other way. For "no difference" advice: Yes within 1.25x either way, Partly
/// within 1.5x, else No. Whether the runs can tell at all is [`decide`]'s question.
pub fn holds(factor: f64, seed_factor: Option<f64>, same: bool) -> Holds {
    if factor.is_nan() || factor <= 0.0 {
        return Holds::No;
    }
    if same {
        let off = factor.max(1.0 / factor);
        return if off <= SAME_WITHIN {
            Holds::Yes
        } else if off <= SAME_PARTLY {
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

    /// Runs of `rows` rows taking each of `seconds`.
    fn runs(rows: u64, seconds: &[f64]) -> Vec<Measurement> {
        seconds.iter().map(|&s| m(rows, s)).collect()
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
        // A variation that wrote no WAL at all: the direction holds, no finite size.
        assert_eq!(holds(f64::INFINITY, Some(400.0), false), Holds::Partly);
    }

    #[test]
    fn holds_when_the_difference_is_beyond_the_spread() {
        // The slow variation ran fewer rows: per row it is 8x slower.
        let vars = vec![
            v("autocommit", Some(92.05), runs(1000, &[2.0, 2.1, 1.95])),
            v("commit 1000", Some(7.58), runs(10_000, &[2.5, 2.6, 2.4])),
        ];
        let verdict = judge(&[Rule::new(0, 1, "commit less often")], &vars).unwrap();
        assert!((verdict.factor - 8.0).abs() < 1e-9);
        assert!((verdict.seed_factor.unwrap() - 92.05 / 7.58).abs() < 1e-9);
        assert_eq!(verdict.holds, Holds::Yes);
        assert_eq!(
            verdict.text,
            "Holds here: \"autocommit\" takes 8.00x the time per row of \"commit 1000\" \
             (the field report: 12.1x; advice tested: commit less often)."
        );
    }

    #[test]
    fn does_not_hold_says_what_was_measured_not_the_advice() {
        // A1 as measured here: literal SQL faster than the prepared statement.
        let vars = vec![
            v(
                "literal INSERT",
                Some(180.63),
                runs(2000, &[1.0, 1.02, 0.98]),
            ),
            v(
                "prepared INSERT",
                Some(92.05),
                runs(2000, &[1.25, 1.27, 1.24]),
            ),
        ];
        let rule = Rule::new(0, 1, "a prepared INSERT beats literal SQL per row");
        let verdict = judge(&[rule], &vars).unwrap();
        assert_eq!(verdict.holds, Holds::No);
        assert_eq!(
            verdict.text,
            "Does not hold here: \"literal INSERT\" takes 0.80x the time per row of \
             \"prepared INSERT\" (the field report: 1.96x; advice tested: a prepared INSERT beats \
             literal SQL per row)."
        );
    }

    #[test]
    fn a_difference_inside_the_runs_spread_is_inconclusive() {
        let vars = vec![
            v(
                "wal_buffers=64kB",
                Some(28.53),
                runs(300_000, &[1.0, 1.09, 0.96]),
            ),
            v(
                "wal_buffers=64MB",
                Some(24.91),
                runs(300_000, &[0.96, 0.97, 0.98]),
            ),
        ];
        let verdict = judge(&[Rule::new(0, 1, "a large log buffer helps")], &vars).unwrap();
        assert_eq!(verdict.holds, Holds::Inconclusive);
        assert!(
            verdict
                .text
                .starts_with("Inconclusive: difference 3% is inside the runs' spread of 13%; \"wal_buffers=64kB\" takes 1.03x"),
            "{}",
            verdict.text
        );
        // The same difference with steady runs is a verdict.
        let steady = vec![
            v("a", None, runs(300_000, &[1.0, 1.001, 0.999])),
            v("b", None, runs(300_000, &[0.7, 0.701, 0.699])),
        ];
        let verdict = judge(&[Rule::new(0, 1, "b is faster")], &steady).unwrap();
        assert_eq!(verdict.holds, Holds::Yes);
    }

    #[test]
    fn runs_too_short_to_time_are_inconclusive() {
        // D7 at a tiny scale: 1,500 rows in 20 ms against 10x the rows.
        let vars = vec![
            v("1x rows", Some(23.3), runs(1500, &[0.02, 0.021, 0.019])),
            v("10x rows", Some(248.3), runs(15_000, &[0.31, 0.3, 0.32])),
        ];
        let rule = Rule::new(1, 0, "time per row stays the same")
            .same()
            .seed(SeedFactor::Given(1.07));
        let verdict = judge(&[rule], &vars).unwrap();
        assert_eq!(verdict.holds, Holds::Inconclusive);
        assert!(
            verdict
                .text
                .starts_with("Inconclusive: runs of 20 ms are too short to time"),
            "{}",
            verdict.text
        );
        // WAL is counted, not timed: short runs still compare.
        let rule = Rule::new(1, 0, "no more WAL per row")
            .metric(Metric::WalBytesPerRow)
            .same();
        assert_eq!(judge(&[rule], &vars).unwrap().holds, Holds::Yes);
    }

    #[test]
    fn same_advice_with_wide_spread_is_inconclusive() {
        let vars = vec![
            v("random", None, runs(100_000, &[1.0, 1.4, 0.9])),
            v("identical", None, runs(100_000, &[1.0, 1.0, 1.0])),
        ];
        let verdict = judge(&[Rule::new(0, 1, "no difference").same()], &vars).unwrap();
        assert_eq!(verdict.holds, Holds::Inconclusive);
        assert!(
            verdict.text.starts_with(
                "Inconclusive: the runs' spread of 50% is wider than the 25% the advice allows"
            ),
            "{}",
            verdict.text
        );
    }

    #[test]
    fn few_rows_and_single_runs_carry_a_caution() {
        let vars = vec![
            v("literal", Some(180.63), runs(20, &[0.5])),
            v("prepared", Some(92.05), runs(20, &[0.25])),
        ];
        let verdict = judge(&[Rule::new(0, 1, "prepare")], &vars).unwrap();
        assert_eq!(verdict.holds, Holds::Yes);
        assert!(
            verdict.text.contains("Caution: only 20 rows a run"),
            "{}",
            verdict.text
        );
        assert!(
            verdict.text.contains("Caution: a single run"),
            "{}",
            verdict.text
        );
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
        assert!(verdict.text.contains("advice tested: second"));
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
        assert!(
            verdict
                .text
                .contains("\"rows\" writes 10.0x the WAL bytes per row of \"copy\""),
            "{}",
            verdict.text
        );
    }
}

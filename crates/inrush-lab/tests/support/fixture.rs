//! A realistic lab run: five experiments that ran (one verdict of each kind, as the lab's own
//! rules judge them), one skipped and one failed; several variations with three runs each,
//! insert-rate samples, WAL figures, seed figures with and without seconds, labels as long as
//! the catalogue's, and strings that need escaping. Values are computed with plain arithmetic
//! only, so they are the same on every platform.

use super::results::{
    Environment, ExperimentResult, LabResults, Measurement, RateSample, Status, Variation,
};
use super::verdict::{judge, Metric, Rule, SeedFactor};
use std::collections::BTreeMap;

/// One run of `rows` rows in `seconds`: rate samples every quarter second with a slower first
/// quarter (the table's first pages), WAL of `wal_per_row` bytes a row.
pub fn run(rows: u64, seconds: f64, wal_per_row: u64, records_per_row: Option<f64>) -> Measurement {
    let mut rate = Vec::new();
    let step = 0.25;
    let mut t = step;
    while t < seconds {
        // Cumulative rows: the first 10% of the time loads 5% of the rows, the rest evenly.
        let frac = t / seconds;
        let done = if frac < 0.1 {
            frac * 0.5
        } else {
            0.05 + (frac - 0.1) * 0.95 / 0.9
        };
        rate.push(RateSample {
            seconds: t,
            rows: (rows as f64 * done) as u64,
        });
        t += step;
    }
    rate.push(RateSample { seconds, rows });
    Measurement {
        rows,
        seconds,
        rows_per_second: rows as f64 / seconds,
        wal_bytes: rows * wal_per_row,
        wal_records: records_per_row.map(|r| (rows as f64 * r) as u64),
        client_cpu_seconds: seconds * 0.3,
        rate,
        settings_changed: BTreeMap::new(),
        extra: BTreeMap::new(),
    }
}

#[allow(clippy::too_many_arguments)]
/// A variation with runs at `seconds` times the given spreads (median first).
fn variation(
    label: &str,
    baseline: bool,
    seed: Option<(&str, Option<f64>)>,
    rows: u64,
    seconds: f64,
    wal_per_row: u64,
    records_per_row: Option<f64>,
    repeat: usize,
) -> Variation {
    let spread = [1.0, 1.06, 0.97];
    Variation {
        label: label.into(),
        baseline,
        seed_figure: seed.map(|(f, _)| f.to_string()),
        seed_seconds: seed.and_then(|(_, s)| s),
        runs: spread
            .iter()
            .take(repeat)
            .map(|k| run(rows, seconds * k, wal_per_row, records_per_row))
            .collect(),
    }
}

fn experiment(id: &str, title: &str, seed_source: &str, advice: &str) -> ExperimentResult {
    ExperimentResult {
        id: id.into(),
        title: title.into(),
        seed_source: seed_source.into(),
        advice: advice.into(),
        status: Status::Ran,
        variations: Vec::new(),
        verdict: None,
        notes: Vec::new(),
    }
}

pub fn sample() -> LabResults {
    let settings: BTreeMap<String, String> = [
        ("checkpoint_timeout", "5min"),
        ("fsync", "on"),
        ("full_page_writes", "on"),
        ("max_wal_size", "1GB"),
        ("shared_buffers", "128MB"),
        ("synchronous_commit", "on"),
        ("wal_buffers", "4MB"),
        ("wal_compression", "off"),
        ("wal_level", "replica"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();

    let rows = 10_000;
    let mut a3 = experiment(
        "A3",
        "Prepared INSERT, commit every n rows",
        "000 Table 6 (DB2 tests 2, 65-68)",
        "Commit every 1000 rows rather than every row",
    );
    a3.variations = vec![
        variation(
            "autocommit (every row)",
            true,
            Some(("92.05 s (10k rows)", Some(92.05))),
            rows,
            4.8,
            298,
            Some(2.0),
            3,
        ),
        variation(
            "commit every 5 rows",
            false,
            Some(("22.34 s", Some(22.34))),
            rows,
            1.31,
            214,
            Some(1.2),
            3,
        ),
        variation(
            "commit every 10 rows",
            false,
            Some(("20.78 s", Some(20.78))),
            rows,
            0.98,
            205,
            Some(1.1),
            3,
        ),
        variation(
            "commit every 100 rows",
            false,
            Some(("10.11 s", Some(10.11))),
            rows,
            0.62,
            197,
            Some(1.01),
            3,
        ),
        variation(
            "commit every 1000 rows",
            false,
            Some(("7.58 s", Some(7.58))),
            rows,
            0.55,
            196,
            Some(1.0),
            3,
        ),
    ];
    a3.verdict = judge(
        &[Rule::new(
            0,
            4,
            "committing every 1000 rows beats autocommit",
        )],
        &a3.variations,
    );
    a3.notes = vec!["synchronous_commit=on: every commit waits for its WAL flush".into()];

    let mut a6 = experiment(
        "A6",
        "WAL per row: single-row INSERT vs COPY",
        "003 (Oracle redo entries, 4k vs 8k block)",
        "Load through a multi-row path to write far fewer log records per row",
    );
    a6.variations = vec![
        variation(
            "single-row INSERT",
            true,
            Some(("112,511 redo entries (100k rows)", None)),
            rows,
            3.9,
            301,
            Some(2.0),
            3,
        ),
        variation(
            "COPY (text)",
            false,
            Some(("6,703 redo entries (100k rows)", None)),
            rows,
            0.21,
            112,
            Some(0.034),
            3,
        ),
    ];
    a6.verdict = judge(
        &[Rule::new(
            0,
            1,
            "COPY writes fewer WAL records per row than single-row INSERTs",
        )
        .metric(Metric::WalRecordsPerRow)
        .seed(SeedFactor::Given(112_511.0 / 6_703.0))],
        &a6.variations,
    );

    let mut b4 = experiment(
        "B4",
        "Secondary indexes present during the load vs created after",
        "000 Table 4 (DB2 tests 31-35)",
        "Drop secondary indexes before a bulk load and create them after",
    );
    let seed = |f: &'static str, s: f64| Some((f, Some(s)));
    b4.variations = vec![
        variation(
            "0 indexes",
            true,
            seed("31.51 s (100k rows)", 31.51),
            100_000,
            0.92,
            205,
            Some(1.0),
            3,
        ),
        variation(
            "1 index",
            false,
            seed("53.73 s", 53.73),
            100_000,
            1.41,
            262,
            Some(2.0),
            3,
        ),
        variation(
            "2 indexes",
            false,
            seed("83.26 s", 83.26),
            100_000,
            1.93,
            318,
            Some(3.0),
            3,
        ),
        variation(
            "3 indexes",
            false,
            seed("108.21 s", 108.21),
            100_000,
            2.47,
            371,
            Some(4.0),
            3,
        ),
        variation(
            "4 indexes",
            false,
            seed("141.63 s", 141.63),
            100_000,
            3.08,
            430,
            Some(5.0),
            3,
        ),
        variation(
            "4 indexes | created after the load",
            false,
            seed("73.75 s", 73.75),
            100_000,
            1.62,
            290,
            Some(1.3),
            3,
        ),
    ];
    // One sample only: the rate chart must draw this run as a dot.
    if let Some(v) = b4.variations.last_mut() {
        for m in &mut v.runs {
            m.rate = vec![RateSample {
                seconds: m.seconds,
                rows: m.rows,
            }];
            m.extra.insert("create_index_seconds".into(), 0.7);
        }
    }
    b4.verdict = judge(
        &[Rule::new(
            4,
            5,
            "creating 4 indexes after the load beats keeping them during it",
        )],
        &b4.variations,
    );
    b4.notes = vec!["max_wal_size < 2GB: 3 checkpoints ran during the 4-index loads".into()];

    let mut d1 = experiment(
        "D1",
        "Parallel COPY streams",
        "002 (SqlBulkCopy consumers)",
        "Load with several parallel streams",
    );
    let drows = 1_000_000;
    d1.variations = vec![
        variation(
            "1 stream",
            true,
            seed("56.5 s (6M rows)", 56.5),
            drows,
            3.2,
            118,
            Some(0.034),
            3,
        ),
        variation(
            "2 streams",
            false,
            Some(("n/a", None)),
            drows,
            2.1,
            119,
            Some(0.034),
            3,
        ),
        variation(
            "4 streams",
            false,
            seed("19.3 s", 19.3),
            drows,
            3.6,
            119,
            Some(0.035),
            3,
        ),
        variation(
            "8 streams",
            false,
            seed("16.9 s", 16.9),
            drows,
            2.4,
            121,
            None,
            3,
        ),
    ];
    for v in &mut d1.variations[1..] {
        for m in &mut v.runs {
            m.settings_changed
                .insert("max_parallel_workers".into(), "8".into());
        }
    }
    d1.verdict = judge(
        &[Rule::new(0, 2, "4 parallel streams beat 1")],
        &d1.variations,
    );

    let mut c2 = experiment(
        "C2",
        "Logged vs UNLOGGED vs FREEZE in the creating transaction",
        "000 test 7 (NLI); 002 TABLOCK minimal logging",
        "Skip the log for a table you can reload",
    );
    c2.status = Status::Skipped(
        "wal_level=minimal needs a server restart, and the lab does not restart a server it did not start (--to)".into(),
    );

    let mut d7 = experiment(
        "D7",
        "Linearity: 1x to 10x rows",
        "002 (6M..60M rows)",
        "Load time grows linearly with the rows",
    );
    d7.status = Status::Failed(
        "ERROR: could not extend file \"base/16384/16402\": No space left on device\nHINT: Check free disk space.".into(),
    );
    d7.variations = vec![
        variation(
            "1x (1M rows)",
            true,
            seed("23.3 s (6M rows)", 23.3),
            drows,
            3.3,
            118,
            Some(0.034),
            1,
        ),
        variation(
            "2x",
            false,
            seed("47.6 s", 47.6),
            2 * drows,
            6.8,
            118,
            Some(0.034),
            1,
        ),
        Variation {
            label: "4x".into(),
            baseline: false,
            seed_figure: Some("95.9 s".into()),
            seed_seconds: Some(95.9),
            runs: Vec::new(),
        },
    ];
    d7.notes = vec!["Free at least 2 GB at --scale 1 for this experiment".into()];

    // A difference inside the runs' spread: inconclusive.
    let mut c3 = experiment(
        "C3",
        "Log buffer size; synchronous_commit with small commits",
        "000 Table 10 (DB2 tests 104-105)",
        "A log buffer large enough that it never fills speeds inserts up by ~13%",
    );
    c3.variations = vec![
        variation(
            "wal_buffers=64kB, multi-row VALUES 10 rows, commit every 10000",
            true,
            seed("test 104 (LOGBUFSZ=8): 28.53 s (100k rows)", 28.53),
            300_000,
            1.0,
            240,
            Some(1.02),
            3,
        ),
        variation(
            "wal_buffers=64MB, multi-row VALUES 10 rows, commit every 10000",
            false,
            seed("test 105 (LOGBUFSZ=256): 24.91 s", 24.91),
            300_000,
            0.97,
            240,
            Some(1.02),
            3,
        ),
    ];
    c3.verdict = judge(
        &[Rule::new(0, 1, "a large log buffer beats a small one")],
        &c3.variations,
    );

    LabResults {
        inrush_version: "0.1.0".into(),
        started_at: "2026-11-22T21:30:00Z".into(),
        scale: 1.0,
        repeat: 3,
        environment: Environment {
            engine: "PostgreSQL".into(),
            server_version: "PostgreSQL 18.1 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit".into(),
            server_version_num: 180001,
            private_server: true,
            settings,
            client_cores: 2,
            client_memory_bytes: 8_337_502_208,
            os: "Linux 6.1.0-28-amd64 (Debian 12)".into(),
            disk: "ext4 on /dev/vda1 (virtio)".into(),
        },
        experiments: vec![a3, a6, b4, c2, d1, d7, c3],
    }
}

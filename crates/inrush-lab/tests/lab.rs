//! Every experiment at a tiny scale against a real PostgreSQL (the lab's own private server, so
//! the experiments that restart it run too), and against the tests' MariaDB: the figures must be
//! positive and consistent, and what does not apply to MariaDB says why.

use inrush_lab::results::{Holds, LabResults, Status};
use inrush_lab::{LabOptions, LabTarget, Progress, ProgressInfo};
use std::sync::Mutex;

struct Record(Mutex<Vec<String>>);

impl Progress for Record {
    fn running(&self, info: &ProgressInfo) {
        assert!(info.index >= 1 && info.index <= info.experiments);
        assert!((0.0..=1.0).contains(&info.fraction));
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {}", info.experiment, info.variation));
    }
}

fn check(results: &LabResults) {
    for e in &results.experiments {
        eprintln!(
            "{} {:?} {:?}",
            e.id,
            e.status,
            e.verdict.as_ref().map(|v| &v.text)
        );
        for n in &e.notes {
            eprintln!("  note: {n}");
        }
        for v in &e.variations {
            for m in &v.runs {
                eprintln!(
                    "    {}: {} rows {:.3} s {} WAL B {:?} rec cpu {:.3}",
                    v.label, m.rows, m.seconds, m.wal_bytes, m.wal_records, m.client_cpu_seconds
                );
            }
        }
    }
    for e in &results.experiments {
        if let Status::Skipped(reason) = &e.status {
            assert!(
                reason.starts_with("not applicable on MariaDB: "),
                "{}: {reason}",
                e.id
            );
            continue;
        }
        assert_eq!(e.status, Status::Ran, "{}: {:?}", e.id, e.status);
        assert!(e.verdict.is_some(), "{}: no verdict", e.id);
        assert_eq!(
            e.variations.iter().filter(|v| v.baseline).count(),
            1,
            "{}",
            e.id
        );
        for v in &e.variations {
            let skipped = e
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("Skipped {}:", v.label)));
            let runs = if skipped { 0 } else { results.repeat };
            assert_eq!(v.runs.len() as u32, runs, "{} {}", e.id, v.label);
            for m in &v.runs {
                let what = format!("{} {}", e.id, v.label);
                assert!(m.rows >= 10, "{what}: {} rows", m.rows);
                assert!(m.seconds > 0.0, "{what}");
                assert!(
                    m.wal_bytes > 0 || v.label.contains("UNLOGGED"),
                    "{what}: no WAL"
                );
                assert!(
                    (m.rows_per_second * m.seconds - m.rows as f64).abs() < 1.0,
                    "{what}: rate"
                );
                assert!(m.client_cpu_seconds >= 0.0, "{what}");
                let last = m
                    .rate
                    .last()
                    .unwrap_or_else(|| panic!("{what}: no rate samples"));
                assert_eq!(
                    last.rows, m.rows,
                    "{what}: rate samples end at the rows loaded"
                );
                assert!(last.seconds <= m.seconds + 1e-6, "{what}");
                assert!(
                    m.rate
                        .windows(2)
                        .all(|w| w[0].rows <= w[1].rows && w[0].seconds <= w[1].seconds),
                    "{what}: rate samples go forward"
                );
            }
        }
    }
}

#[test]
fn every_experiment_runs_at_a_tiny_scale() {
    let mut opts = LabOptions::new(0.01);
    opts.ids = vec!["all".into()];
    let progress = Record(Mutex::new(Vec::new()));
    let results = inrush_lab::run(&opts, &progress).expect("the lab runs");
    assert_eq!(results.experiments.len(), 28);
    assert!(results.environment.private_server);
    assert!(results.environment.server_version.contains("PostgreSQL"));
    assert_eq!(
        results
            .environment
            .settings
            .get("fsync")
            .map(String::as_str),
        Some("on")
    );
    check(&results);
    // wal_level=minimal and wal_buffers were restored after their runs.
    let c2 = results.experiments.iter().find(|e| e.id == "C2").unwrap();
    assert_eq!(
        c2.variations[3].runs[0]
            .settings_changed
            .get("wal_level")
            .map(String::as_str),
        Some("minimal")
    );
    assert!(progress.0.lock().unwrap().len() >= 28);
    // D7's 1x run of 1,500 rows is over in milliseconds: no verdict on linearity from it.
    let d7 = results.experiments.iter().find(|e| e.id == "D7").unwrap();
    let shortest = d7.variations[0].median_seconds().unwrap();
    if shortest < inrush_lab::verdict::MIN_TIMED_SECONDS {
        let verdict = d7.verdict.as_ref().unwrap();
        assert_eq!(verdict.holds, Holds::Inconclusive, "{}", verdict.text);
        assert!(
            verdict.text.contains("too short to time"),
            "{}",
            verdict.text
        );
    }

    // The results survive a JSON round trip, as `lab report DIR` needs.
    let dir = tempfile_dir();
    inrush_lab::report::write(&results, &dir).expect("write the report");
    inrush_lab::report::rerender(&dir).expect("re-render it");
    let back: LabResults =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(back.experiments.len(), 28);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("inrush-lab-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Against a server the lab did not start, as a user without superuser: settings that need a
/// restart or ALTER SYSTEM are skipped with the reason, CHECKPOINT is noted, and the verdict
/// falls back to the variations that ran.
#[test]
fn missing_rights_skip_with_the_reason() {
    let server = inrush_postgres::PrivateServer::start(&inrush_postgres::ServerOptions {
        unsafe_fast: true,
        ..Default::default()
    })
    .expect("a private server");
    let admin = server.connect_options("postgres");
    for sql in [
        "CREATE ROLE labuser LOGIN",
        "CREATE DATABASE labdb OWNER labuser",
    ] {
        admin.execute_blocking(sql).expect("create a plain user");
    }
    let conninfo = server
        .conninfo("labdb")
        .replace("user=postgres", "user=labuser");
    let mut opts = LabOptions::new(0.01);
    opts.ids = vec!["C2".into(), "C3".into()];
    opts.target = LabTarget::Postgres(inrush_postgres::ConnectOptions::parse(&conninfo).unwrap());
    let results = inrush_lab::run(&opts, &inrush_lab::progress::Silent).expect("the lab runs");
    assert!(!results.environment.private_server);
    check(&results);
    let c2 = &results.experiments[0];
    assert!(c2.variations[3].runs.is_empty());
    assert!(
        c2.notes
            .iter()
            .any(|n| n.contains("needs a server restart")),
        "{:?}",
        c2.notes
    );
    assert!(
        c2.notes.iter().any(|n| n.contains("may not CHECKPOINT")),
        "{:?}",
        c2.notes
    );
    assert!(c2.verdict.as_ref().unwrap().text.contains("unlogged"));
    let c3 = &results.experiments[1];
    assert!(c3.variations[0].runs.is_empty() && c3.variations[1].runs.is_empty());
    assert!(c3
        .verdict
        .as_ref()
        .unwrap()
        .text
        .contains("synchronous_commit"));
}

/// Every experiment against the tests' MariaDB, one run each: what applies runs (each run's row
/// count checked in the table), what does not is listed with the reason; the setting C3
/// changes with SET GLOBAL is put back; the report speaks of redo, not WAL.
#[test]
fn mariadb_runs_what_applies_and_says_why_not_the_rest() {
    let db = inrush_testkit::MariaDb::fresh("lab");
    let flush = "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit";
    let flush_before = db.rows(flush);
    let mut opts = LabOptions::new(0.01);
    opts.repeat = 1;
    opts.target = LabTarget::Mariadb(inrush_mysql::MysqlOptions::parse(&db.url).unwrap());
    let results = inrush_lab::run(&opts, &inrush_lab::progress::Silent).expect("the lab runs");
    let env = &results.environment;
    assert_eq!(env.engine, "MariaDB");
    assert!(
        env.server_version.contains("MariaDB"),
        "{}",
        env.server_version
    );
    for setting in [
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "innodb_autoinc_lock_mode",
    ] {
        assert!(env.settings.contains_key(setting), "{setting}");
    }
    check(&results);
    assert_eq!(db.rows(flush), flush_before, "SET GLOBAL put back");

    let catalogue = inrush_lab::mariadb::catalogue::catalogue();
    let mut measured = 0;
    for (e, def) in results.experiments.iter().zip(&catalogue) {
        assert_eq!(e.id, def.id);
        if e.id.starts_with('C') && e.id != "C3" {
            assert!(matches!(e.status, Status::Skipped(_)), "{}", e.id);
            continue;
        }
        for (v, d) in e.variations.iter().zip(&def.variations) {
            let not_applicable = format!("Skipped {}: not applicable on MariaDB: ", v.label);
            match &d.unavailable {
                Some(_) => assert!(
                    v.runs.is_empty() && e.notes.iter().any(|n| n.starts_with(&not_applicable)),
                    "{} {}: {:?}",
                    e.id,
                    v.label,
                    e.notes
                ),
                None => {
                    assert_eq!(v.runs.len(), 1, "{} {}", e.id, v.label);
                    assert_eq!(v.runs[0].rows, d.plan.rows_at(opts.scale));
                    measured += 1;
                }
            }
        }
    }
    assert!(measured > 70, "{measured} variations measured");
    let c3 = results.experiments.iter().find(|e| e.id == "C3").unwrap();
    assert_eq!(
        c3.variations[3].runs[0]
            .settings_changed
            .get("innodb_flush_log_at_trx_commit")
            .map(String::as_str),
        Some("2")
    );

    let dir = tempfile::tempdir().unwrap();
    let files = inrush_lab::report::write(&results, dir.path()).expect("write the report");
    let md = std::fs::read_to_string(&files.markdown).unwrap();
    assert!(md.contains("redo bytes/row") && !md.contains("WAL bytes/row"));
    assert!(md.contains("not applicable on MariaDB"));
    inrush_lab::report::rerender(dir.path()).expect("re-render it");
}

/// The experiments through `connection`'s ODBC driver, one run each at `scale`: what applies
/// runs, each run's row count checked in the table; groups B and C are listed as not
/// applicable, with the reason.
fn through_odbc(connection: &str, scale: f64) -> LabResults {
    let mut opts = LabOptions::new(scale);
    opts.repeat = 1;
    opts.target = LabTarget::Odbc(connection.strip_prefix("odbc:").unwrap().to_string());
    let results = inrush_lab::run(&opts, &inrush_lab::progress::Silent).expect("the lab runs");
    assert!(results.environment.server_version.ends_with("(ODBC)"));
    let mut measured = 0;
    for e in &results.experiments {
        eprintln!(
            "{} {:?} {:?}",
            e.id,
            e.status,
            e.verdict.as_ref().map(|v| &v.text)
        );
        if e.id.starts_with(['B', 'C']) || ["D3", "D8"].contains(&e.id.as_str()) {
            let Status::Skipped(reason) = &e.status else {
                panic!("{} ran", e.id)
            };
            assert!(reason.starts_with("not applicable over ODBC: "), "{reason}");
            continue;
        }
        for v in &e.variations {
            let skipped = e
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("Skipped {}:", v.label)));
            if skipped {
                assert!(v.runs.is_empty(), "{} {}", e.id, v.label);
                continue;
            }
            assert_eq!(v.runs.len(), 1, "{} {}: {:?}", e.id, v.label, e.notes);
            assert!(
                v.runs[0].rows > 0 && v.runs[0].seconds > 0.0,
                "{} {}",
                e.id,
                v.label
            );
            measured += 1;
        }
    }
    assert!(measured > 20, "{measured} variations measured");
    results
}

#[test]
fn odbc_runs_the_array_and_commit_experiments_through_psqlodbc_with_wal_per_row() {
    let db = inrush_testkit::Db::fresh("lab_odbc");
    let to = inrush_testkit::odbc::psqlodbc(&db.conninfo);
    let results = through_odbc(&to, 0.01);
    assert_eq!(results.environment.engine, "PostgreSQL");
    let a4 = results.experiments.iter().find(|e| e.id == "A4").unwrap();
    let labels: Vec<&str> = a4.variations.iter().map(|v| v.label.as_str()).collect();
    assert!(
        labels.contains(&"parameter arrays, 1000 rows/execute, commit every 1000"),
        "{labels:?}"
    );
    assert!(
        labels.contains(&"parameter arrays, 10000 rows/execute, commit every 10000"),
        "{labels:?}"
    );
    for v in a4.variations.iter().filter(|v| !v.runs.is_empty()) {
        assert!(v.runs[0].wal_bytes > 0, "{}: no WAL", v.label);
    }
    let a1 = results.experiments.iter().find(|e| e.id == "A1").unwrap();
    assert!(a1.verdict.is_some());
    assert_eq!(
        db.int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'inrush_lab_%'"),
        0
    );
    let dir = tempfile::tempdir().unwrap();
    let files = inrush_lab::report::write(&results, dir.path()).expect("write the report");
    let md = std::fs::read_to_string(&files.markdown).unwrap();
    assert!(md.contains("WAL bytes/row") && md.contains("not applicable over ODBC"));
}

#[test]
fn odbc_through_sqlites_driver_runs_over_one_connection_and_says_why_not_more() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.db");
    let results = through_odbc(&inrush_testkit::odbc::sqlite_odbc(&file), 0.01);
    assert_eq!(results.environment.engine, "SQLite");
    let d1 = results.experiments.iter().find(|e| e.id == "D1").unwrap();
    assert!(d1.variations[0].runs.len() == 1, "{:?}", d1.notes);
    assert!(
        d1.notes
            .iter()
            .any(|n| n
                .contains("not applicable on SQLite: it takes one writing connection at a time")),
        "{:?}",
        d1.notes
    );
}

//! Shared fixtures for tests against a real PostgreSQL: the testkit's server (see
//! `inrush_testkit::server`), one fresh database per test with a client on it.

#![allow(dead_code)]

use inrush_core::Reporter;
use inrush_core::Silent;
use inrush_load::{LoadOptions, LoadSummary};
use inrush_postgres::ConnectOptions;
use inrush_read::csv::CsvOptions;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

/// The tests' server: the testkit's, shared by every test of the binary.
fn base() -> &'static ConnectOptions {
    &inrush_testkit::server().0
}

/// A database of its own for one test.
pub struct TestDb {
    pub target: ConnectOptions,
    pub client: postgres::Client,
}

pub fn fresh_db() -> TestDb {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    base()
        .execute_blocking(&format!("CREATE DATABASE {name}"))
        .expect("CREATE DATABASE");
    let target = base().with_dbname(&name);
    let client = target
        .connect_blocking()
        .expect("connect to the test database");
    TestDb { target, client }
}

impl TestDb {
    pub fn exec(&mut self, sql: &str) {
        self.client
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub fn count(&mut self, table: &str) -> i64 {
        self.client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .expect("count")
            .get(0)
    }

    /// Every row as its text form, sorted: comparable across tables whatever the column types.
    pub fn rows_as_text(&mut self, table: &str) -> Vec<String> {
        let sql = format!("SELECT t::text FROM {table} t ORDER BY 1");
        self.client
            .query(&sql, &[])
            .expect("select")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// Loads `data` with the server's own `COPY ... FROM STDIN (FORMAT csv ...)`.
    pub fn server_copy(
        &mut self,
        table: &str,
        data: &[u8],
        csv: &CsvOptions,
        columns: Option<&str>,
    ) -> Result<u64, String> {
        let lit = |b: u8| format!("'{}'", (b as char).to_string().replace('\'', "''"));
        let mut options = format!(
            "FORMAT csv, DELIMITER {}, QUOTE {}, ESCAPE {}",
            lit(csv.delimiter),
            lit(csv.quote),
            lit(csv.escape)
        );
        options.push_str(&format!(
            ", NULL '{}'",
            String::from_utf8_lossy(&csv.null).replace('\'', "''")
        ));
        if csv.header {
            options.push_str(", HEADER true");
        }
        let cols = columns.map(|c| format!(" ({c})")).unwrap_or_default();
        let sql = format!("COPY {table}{cols} FROM STDIN ({options})");
        let message = |e: postgres::Error| {
            e.as_db_error()
                .map_or(e.to_string(), |d| d.message().to_string())
        };
        let mut tx = self.client.transaction().map_err(|e| e.to_string())?;
        let result = (|| {
            let mut writer = tx.copy_in(&sql).map_err(message)?;
            writer.write_all(data).map_err(|e| e.to_string())?;
            writer.finish().map_err(message)
        })();
        match result {
            Ok(n) => {
                tx.commit().map_err(|e| e.to_string())?;
                Ok(n)
            }
            Err(e) => {
                drop(tx);
                // A COPY the server refuses at its start (bad options) leaves the postgres
                // crate's connection out of step with the server: start afresh.
                self.client = self.target.connect_blocking().expect("reconnect");
                Err(e)
            }
        }
    }

    /// Runs the load `opts` describes into this database.
    pub fn load(
        &self,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
    ) -> inrush_load::Result<LoadSummary> {
        inrush_postgres::load::run(&self.target, opts, reporter)
    }

    /// Load options for `path` into `table` of this database.
    pub fn load_options(&self, path: &std::path::Path, table: &str) -> LoadOptions {
        let mut opts = LoadOptions::new(path.to_string_lossy(), table);
        opts.workers = 2;
        opts.connections = 2;
        opts
    }
}

/// Writes `data` to a fresh file with the given extension; the directory lives as long as the
/// returned guard.
pub fn write_input(data: &[u8], extension: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("input.{extension}"));
    std::fs::write(&path, data).expect("write input");
    (dir, path)
}

/// Waits (at most 30 s) until `table` has a committed row, as seen from `client`: the moment a
/// test interrupts, terminates or restarts under a running `--resume` load.
pub fn wait_for_committed_rows(client: &mut postgres::Client, table: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let sql = format!("SELECT count(*) FROM {table}");
    while client.query_one(&sql, &[]).expect("count").get::<_, i64>(0) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{table} had no committed row after 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Loads `data` into `ours` with inrush and into `theirs` with server COPY; both must succeed
/// with identical rows, or both must refuse the input (or its options).
pub fn assert_same_as_copy(
    db: &mut TestDb,
    columns: &str,
    data: &[u8],
    tweak: impl Fn(&mut LoadOptions),
) {
    db.exec(&format!("DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns});"));
    let (_dir, path) = write_input(data, "csv");
    let mut opts = db.load_options(&path, "ours");
    tweak(&mut opts);
    let col_list = opts.columns.as_ref().map(|c| c.join(", "));
    let theirs = db.server_copy("theirs", data, &opts.csv, col_list.as_deref());
    // The options are checked first, as the CLI does.
    let ours = match opts.csv.validate() {
        Ok(()) => db.load(&opts, &Silent),
        Err(e) => Err(e.into()),
    };
    match (&ours, &theirs) {
        (Ok(summary), Ok(n)) => {
            assert_eq!(
                summary.rows,
                *n,
                "row count for {columns} / {:?}",
                String::from_utf8_lossy(data)
            );
            assert_eq!(
                db.rows_as_text("ours"),
                db.rows_as_text("theirs"),
                "rows for {:?}",
                String::from_utf8_lossy(data)
            );
        }
        (Err(_), Err(_)) => assert_eq!(
            db.count("ours"),
            0,
            "a refused load must leave nothing behind"
        ),
        _ => panic!(
            "inrush and COPY disagree on {:?} into ({columns}):\n  inrush: {:?}\n  COPY:   {:?}",
            String::from_utf8_lossy(data),
            ours.map(|s| s.rows),
            theirs
        ),
    }
}

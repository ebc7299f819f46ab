//! Loads into a MariaDB that does not allow `LOAD DATA LOCAL INFILE`: the rows go in as
//! multi-row INSERTs, checked like the streams, and the summary says why. A test binary of its
//! own, so its server (one per test process) can have `local_infile` turned off.

mod mariadb_common;

use inrush_testkit::MariaDb;
use mariadb_common::*;

fn without_local_infile(prefix: &str) -> MariaDb {
    let db = MariaDb::fresh(prefix);
    db.exec("SET GLOBAL local_infile = 0");
    db
}

#[test]
fn good_rows_go_in_as_inserts_and_equal_the_servers_load() {
    let db = without_local_infile("insert_types");
    typed_rows_load_as_the_server_reads_them(&db, "multi-row INSERT");
}

#[test]
fn bad_rows_are_found_among_inserts_too() {
    bad_rows_are_reported_and_kept_out(&without_local_infile("insert_bad"));
}

#[test]
fn the_summary_says_why_and_what_to_change() {
    let db = without_local_infile("insert_note");
    db.exec("CREATE TABLE t (id INT PRIMARY KEY)");
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id\n1\n2\n");
    let (code, out) = load(&csv, &db, "t", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("local_infile is OFF"), "{out}");
    assert!(out.contains("SET GLOBAL local_infile = 1"), "{out}");
    assert_eq!(db.rows("SELECT id FROM t ORDER BY id"), ["1", "2"]);
}

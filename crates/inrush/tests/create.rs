//! What `--create` infers, the same load accepts again: on every engine, a table made from a
//! file takes that very file a second time, and holds each of its rows twice, equal. Every type
//! the inference chooses is in the file (integer, bigint, numeric, double precision, boolean in
//! COPY's spellings, date, timestamp, timestamptz, uuid, jsonb, text, digits with a leading
//! zero).

use inrush_testkit::{Db, MariaDb};
use std::process::Command;

const CSV: &str = "i,big,amount,ratio,flag,yes_no,day,at,at_zone,id,doc,name,zip\n\
    1,3000000000,12.30,1e3,t,yes,2024-12-31,2024-12-31 10:00:00,2024-12-31 10:00:00+02:00,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,\"{\"\"a\"\": 1}\",alice,01234\n\
    2,-5,0.5,2.5,f,no,2025-01-01,2025-01-01 00:00:00,2025-01-01 00:00:00+00:00,b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12,[1],bob,00001\n\
    3,7,100,-0.25,true,off,2025-02-28,2025-02-28 23:59:59,2025-02-28 23:59:59-05:00,c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13,{},\"c, d\",99999\n";

/// Loads the file into `table` twice, the first time with `--create` (and `create`'s
/// options); both must succeed.
fn create_then_load_again(to: &str, table: &str, dir: &std::path::Path, create: &[&str]) {
    let csv = dir.join("typed.csv");
    std::fs::write(&csv, CSV).unwrap();
    let create = [&["--create"][..], create].concat();
    for extra in [&create[..], &[][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
            .args(["load", csv.to_str().unwrap(), "--to", to, "--table", table])
            .args(["--header", "--no-progress"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Rows, and distinct rows: each input row twice.
const COUNTS: &str = "SELECT (SELECT count(*) FROM made) || ' ' || \
                             (SELECT count(*) FROM (SELECT DISTINCT * FROM made) d)";

#[test]
fn postgres_takes_again_what_create_made() {
    let db = Db::fresh("create");
    let dir = tempfile::tempdir().unwrap();
    create_then_load_again(&db.conninfo, "made", dir.path(), &[]);
    assert_eq!(db.text(COUNTS), "6 3");
}

#[test]
fn sqlite_takes_again_what_create_made() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("made.db");
    create_then_load_again(file.to_str().unwrap(), "made", dir.path(), &[]);
    let conn = rusqlite::Connection::open(&file).unwrap();
    let counts: String = conn.query_row(COUNTS, [], |r| r.get(0)).unwrap();
    assert_eq!(counts, "6 3");
    // Booleans as 1 and 0, whichever spelling the file used.
    let flags: String = conn
        .query_row(
            "SELECT group_concat(flag || yes_no, ',') FROM (SELECT flag, yes_no FROM made ORDER BY rowid)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(flags, "11,00,10,11,00,10");
}

#[test]
fn mariadb_takes_again_what_create_made() {
    let db = MariaDb::fresh("create_again");
    let dir = tempfile::tempdir().unwrap();
    // DATETIME has no zone: MariaDB's --create asks for a type for such a column.
    let zone = ["--types", "at_zone=VARCHAR(40)"];
    create_then_load_again(&db.url, "made", dir.path(), &zone);
    assert_eq!(
        db.rows(
            "SELECT COUNT(*), (SELECT COUNT(*) FROM (SELECT DISTINCT * FROM made) d) FROM made"
        ),
        ["6\t3"]
    );
    // A BOOLEAN the user made takes COPY's spellings too.
    db.exec("CREATE TABLE own (id INT, ok BOOLEAN)");
    let csv = dir.path().join("own.csv");
    std::fs::write(&csv, "id,ok\n1,t\n2,f\n3,yes\n4,0\n5,7\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "load",
            csv.to_str().unwrap(),
            "--to",
            &db.url,
            "--table",
            "own",
        ])
        .args(["--header", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        db.rows("SELECT GROUP_CONCAT(ok ORDER BY id) FROM own"),
        ["1,0,1,0,7"]
    );
}

/// `--create --datestyle DMY`: `31/12/2024` is a date, read in the order the user gave.
#[test]
fn postgres_create_reads_dates_in_the_order_datestyle_gives() {
    let db = Db::fresh("create");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("dmy.csv");
    std::fs::write(
        &csv,
        "day,at\n31/12/2024,1/2/2025 10:00:00\n01/03/2025,28/02/2025 23:59:59\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "load",
            csv.to_str().unwrap(),
            "--to",
            &db.conninfo,
            "--table",
            "dmy",
        ])
        .args([
            "--header",
            "--create",
            "--datestyle",
            "DMY",
            "--no-progress",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        db.text("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'dmy'::regclass AND attnum > 0"),
        "date,timestamp without time zone"
    );
    assert_eq!(
        db.text("SELECT string_agg(day || ' ' || at, ',' ORDER BY day) FROM dmy"),
        "2024-12-31 2025-02-01 10:00:00,2025-03-01 2025-02-28 23:59:59"
    );
}

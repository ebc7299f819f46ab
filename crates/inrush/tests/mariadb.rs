//! Loads into MariaDB, as a user runs them, against the server's own `LOAD DATA INFILE` under
//! strict mode: the same rows for good input; bad rows reported, kept out, never changed.

mod mariadb_common;

use inrush_testkit::arrow_array::{ArrayRef, BinaryArray, Int32Array};
use inrush_testkit::MariaDb;
use mariadb_common::*;
use std::process::Command;
use std::sync::Arc;

/// Seeded SqlBulkCopy rows with a header, in a file the server can read too.
fn generated(dir: &std::path::Path, rows: u64) -> std::path::PathBuf {
    let csv = dir.join("g.csv");
    inrush_testkit::generate(BIN, &csv, rows);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o644)).unwrap();
    csv
}

/// Two SqlBulkCopy tables, `ours` and `theirs` (with `keys` added to their definition), and
/// `rows` generated rows in `theirs` by the server's own LOAD DATA; the rows' file.
fn sqlbulkcopy_twins(
    db: &MariaDb,
    dir: &std::path::Path,
    keys: &str,
    rows: u64,
) -> std::path::PathBuf {
    let ddl = format!(
        "(fieldint1 INT NOT NULL, fieldint2 INT NOT NULL, fieldint3 INT NOT NULL, \
         fieldchar1 VARCHAR(100) NOT NULL, fieldchar2 VARCHAR(100) NOT NULL, \
         fieldchar3 VARCHAR(100) NOT NULL{keys})"
    );
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    let csv = generated(dir, rows);
    server_load(db, &csv, "theirs").unwrap();
    csv
}

/// Count, sums and a checksum of a SqlBulkCopy table: equal for two tables of the same rows.
fn fingerprint(db: &MariaDb, table: &str) -> Vec<String> {
    db.rows(&format!(
        "SELECT COUNT(*), SUM(fieldint1), SUM(fieldint2), SUM(fieldint3), \
           SUM(CRC32(CONCAT(fieldchar1, fieldchar2, fieldchar3))) FROM {table}"
    ))
}

#[test]
fn good_rows_load_as_the_servers_load_data_reads_them() {
    typed_rows_load_as_the_server_reads_them(&MariaDb::fresh("types"), "LOAD DATA LOCAL");
}

/// More digits than a decimal's scale are rounded, with a note, as strict mode takes them: the
/// rows load as the server's own `LOAD DATA` rounds them (the note once hid the rows' count).
#[test]
fn decimals_rounded_to_their_scale_load_as_the_servers_load_data_rounds_them() {
    let db = MariaDb::fresh("mariadb");
    let columns = "(id INT PRIMARY KEY, amount DECIMAL(10,2))";
    db.exec(&format!(
        "CREATE TABLE ours {columns}; CREATE TABLE theirs {columns}"
    ));
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "round.csv",
        "id,amount\n1,1.005\n2,-0.001\n3,-1.005\n4,2.5\n",
    );
    let (code, out) = load(&csv, &db, "ours", &[]);
    assert_eq!(code, 0, "{out}");
    server_load(&db, &csv, "theirs").unwrap();
    let rows = |t: &str| db.rows(&format!("SELECT * FROM {t} ORDER BY id"));
    assert_eq!(rows("ours"), rows("theirs"), "{out}");
    assert_eq!(rows("ours")[0], "1\t1.01");
}

#[test]
fn bad_rows_are_reported_and_nothing_changes_silently() {
    bad_rows_are_reported_and_kept_out(&MariaDb::fresh("bad"));
}

#[test]
fn many_rows_over_several_connections_equal_the_servers_load() {
    let db = MariaDb::fresh("many");
    let dir = shared_dir();
    let csv = sqlbulkcopy_twins(&db, dir.path(), ", KEY (fieldint2)", 60_000);
    let (code, out) = load(
        &csv,
        &db,
        "ours",
        &["--connections", "3", "--block-size", "65536"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(fingerprint(&db, "ours"), fingerprint(&db, "theirs"));
}

/// Under `innodb_autoinc_lock_mode=1` (the test server's, MariaDB's default) a LOAD DATA into
/// a table with an AUTO_INCREMENT column holds the table's AUTO-INC lock to its end, so the
/// rows go in as multi-row INSERTs: the server's own LOAD DATA's rows, their ids 1 to n once
/// each, and the plan and summary say why.
#[test]
fn the_summary_says_how_much_redo_log_the_load_wrote() {
    let db = MariaDb::fresh("redo");
    let dir = shared_dir();
    let csv = sqlbulkcopy_twins(&db, dir.path(), "", 20_000);
    let (code, out) = load(&csv, &db, "ours", &["--json"]);
    assert_eq!(code, 0, "{out}");
    let json = out.lines().rev().find(|l| l.starts_with('{')).unwrap();
    let summary: serde_json::Value = serde_json::from_str(json).unwrap();
    let engine = &summary["engine"];
    assert_eq!(engine["method"], "LOAD DATA LOCAL", "{out}");
    assert_eq!(engine["log"]["name"], "redo log", "{out}");
    // 20,000 rows of about 100 bytes each go through the redo log at least once.
    assert!(
        engine["log"]["bytes"].as_u64().unwrap() > 1_000_000,
        "{out}"
    );
}

#[test]
fn an_auto_increment_table_is_loaded_by_inserts_that_do_not_take_turns() {
    let db = MariaDb::fresh("autoinc");
    let dir = shared_dir();
    let csv = sqlbulkcopy_twins(&db, dir.path(), "", 60_000);
    db.exec("ALTER TABLE ours ADD COLUMN id INT NOT NULL AUTO_INCREMENT PRIMARY KEY FIRST");
    let planned = plan(&db, "ours", &csv);
    assert!(
        planned
            .contains("rows go in as multi-row INSERTs, which take it only to reserve their ids"),
        "{planned}"
    );
    let (code, out) = load(
        &csv,
        &db,
        "ours",
        &["--connections", "2", "--block-size", "65536"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("multi-row INSERT"), "{out}");
    assert!(out.contains("the AUTO_INCREMENT column `id`"), "{out}");
    assert_eq!(fingerprint(&db, "ours"), fingerprint(&db, "theirs"));
    assert_eq!(
        db.rows("SELECT COUNT(DISTINCT id), MIN(id), MAX(id) FROM ours"),
        ["60000\t1\t60000"]
    );
}

/// The INSERTs an AUTO_INCREMENT table gets set bad rows and duplicate keys aside as LOAD DATA
/// does (`--on-conflict` on such a table: `on_conflict_skip_keeps_the_first_and_update_the_last`).
#[test]
fn an_auto_increment_tables_inserts_reject_bad_rows_and_duplicate_keys() {
    let db = MariaDb::fresh("autoinc_bad");
    db.exec(
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, code INT NOT NULL UNIQUE, \
           v VARCHAR(5) NOT NULL); INSERT INTO t (code, v) VALUES (1, 'old')",
    );
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "in.csv",
        "code,v\n1,a\n2,b\n2,c\n3,toolong\n4,d\n",
    );
    let (code, out) = load(&csv, &db, "t", &["--max-errors", "5"]);
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("multi-row INSERT"), "{out}");
    assert_eq!(
        db.rows("SELECT code, v FROM t ORDER BY code"),
        ["1\told", "2\tb", "4\td"]
    );
    let rejects = std::fs::read_to_string(dir.path().join("in.csv.rejects")).unwrap();
    let mut lines: Vec<&str> = rejects.lines().skip(1).collect();
    lines.sort();
    assert_eq!(lines, ["1,a", "2,c", "3,toolong"]);
}

/// A block without backslash, tab or carriage return has its unquoted fields copied as they
/// are; a quoted line break in such a block is still escaped, and a block holding one of those
/// bytes anywhere is escaped field by field. Small blocks make both kinds.
#[test]
fn fields_are_escaped_only_where_their_block_needs_it() {
    let db = MariaDb::fresh("plain");
    let ddl = "(id INT PRIMARY KEY, a VARCHAR(40) NOT NULL, b TEXT NOT NULL)";
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    let mut csv = String::from("id,a,b\n");
    for i in 0..3000 {
        let b = match i % 7 {
            0 => "\"quoted\nline break\"",
            1 => "\"quoted, comma\"",
            _ => "plain words",
        };
        // Then some rows with unquoted backslashes, later tabs and carriage returns.
        let a = match (i / 500, i % 5) {
            (4, 0) => format!("back\\slash {i}"),
            (5, 0) => format!("tab\there {i}"),
            (5, 1) => format!("\"carriage\rreturn {i}\""),
            _ => format!("row {i} é"),
        };
        csv.push_str(&format!("{i},{a},{b}\n"));
    }
    let dir = shared_dir();
    let csv = write(dir.path(), "plain.csv", &csv);
    server_load(&db, &csv, "theirs").expect("the server loads every row");
    let (code, out) = load(&csv, &db, "ours", &["--block-size", "4096"]);
    assert_eq!(code, 0, "{out}");
    let ours = db.rows("SELECT * FROM ours ORDER BY id");
    assert_eq!(ours.len(), 3000);
    assert_eq!(ours, db.rows("SELECT * FROM theirs ORDER BY id"));
}

/// Parquet into MariaDB: integers, decimals and dates written from their native values (and
/// copied without escaping), strings escaped, against the server's own LOAD DATA of the same
/// rows written as CSV.
#[test]
fn parquet_rows_load_as_the_server_reads_the_same_csv() {
    let db = MariaDb::fresh("parquet");
    let dir = shared_dir();
    let (csv, parquet) = (dir.path().join("li.csv"), dir.path().join("li.parquet"));
    for (path, format) in [(&csv, "csv"), (&parquet, "parquet")] {
        let path = path.to_str().unwrap();
        let args = [
            "gen", "lineitem", "--rows", "20000", "--header", "--format", format,
        ];
        let (code, out) = inrush(&[&args[..], &["--output", path]].concat());
        assert_eq!(code, 0, "{out}");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ddl = "(l_orderkey INT, l_partkey INT, l_suppkey INT, l_linenumber INT, \
        l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), \
        l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, \
        l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10), \
        l_comment VARCHAR(44), PRIMARY KEY (l_orderkey, l_linenumber))";
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    server_load(&db, &csv, "theirs").expect("the server loads every row");
    let parquet = parquet.to_str().unwrap();
    let (code, out) = inrush(&[
        "load",
        parquet,
        "--to",
        &db.url,
        "--table",
        "ours",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    let ours = db.rows("SELECT * FROM ours ORDER BY l_orderkey, l_linenumber");
    assert_eq!(ours.len(), 20000);
    assert_eq!(
        ours,
        db.rows("SELECT * FROM theirs ORDER BY l_orderkey, l_linenumber")
    );
}

/// Parquet's binary values are stored as their bytes (every byte value, tab, line feed and
/// backslash included), not as the `\x` hex of their text form; one too long for its column
/// is refused with the server's words, and into a text column a value that is UTF-8 loads as
/// its text.
#[test]
fn parquet_binary_values_load_as_their_bytes() {
    let db = MariaDb::fresh("parquet_bytes");
    let dir = shared_dir();
    let path = dir.path().join("bytes.parquet");
    let every: Vec<u8> = (0..=255).collect();
    let values: [Option<&[u8]>; 5] = [
        Some(&every),
        Some(b"a\tb\nc\\d"),
        Some(b""),
        None,
        Some(b"abc"),
    ];
    let column = Arc::new(BinaryArray::from(values.to_vec()));
    inrush_testkit::parquet_of(&path, vec![("b", column)], 2);
    db.exec(
        "CREATE TABLE blobs (b BLOB); CREATE TABLE short (b VARBINARY(3)); \
         CREATE TABLE texts (b VARCHAR(20))",
    );
    let load = |table: &str| {
        let rejects = dir.path().join(format!("{table}.rejects"));
        inrush(&[
            "load",
            path.to_str().unwrap(),
            "--to",
            &db.url,
            "--table",
            table,
            "--max-errors",
            "10",
            "--rejects",
            rejects.to_str().unwrap(),
            "--no-progress",
        ])
    };
    let (code, out) = load("blobs");
    assert_eq!(code, 0, "{out}");
    let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02X}")).collect::<String>();
    let stored = db.rows("SELECT hex(b) FROM blobs ORDER BY length(b) DESC, b");
    let expected = [
        hex(&every),
        hex(b"a\tb\nc\\d"),
        hex(b"abc"),
        String::new(),
        "NULL".into(),
    ];
    assert_eq!(stored, expected);
    let (code, out) = load("short");
    assert_eq!(code, 6, "{out}");
    let log = std::fs::read_to_string(dir.path().join("short.rejects.log")).unwrap();
    assert_eq!(
        log.matches("Data too long for column 'b'").count(),
        2,
        "{log}"
    );
    assert_eq!(
        db.rows("SELECT hex(b) FROM short WHERE b IS NOT NULL ORDER BY b")
            .len(),
        2
    );
    let (code, out) = load("texts");
    assert_eq!(code, 6, "{out}");
    assert_eq!(
        db.rows("SELECT hex(b) FROM texts WHERE b LIKE 'a%' ORDER BY b"),
        [hex(b"a\tb\nc\\d"), hex(b"abc")]
    );
}

/// MariaDB has no arrays: Parquet lists load as JSON arrays, into JSON and text columns alike
/// (PostgreSQL's `{1,2}` is no JSON, and `{}` would be an object); booleans as 1 and 0 into
/// BOOLEAN (TINYINT(1)).
#[test]
fn parquet_lists_load_as_json_and_booleans_as_digits() {
    let db = MariaDb::fresh("parquet_lists");
    let dir = shared_dir();
    let path = dir.path().join("lists.parquet");
    let forms = inrush_testkit::forms_arrays();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("n", Arc::new(Int32Array::from(vec![1, 2, 3]))),
        ("j", forms.lists.clone()),
        ("t", forms.lists),
        ("b", forms.flags),
    ];
    inrush_testkit::parquet_of(&path, columns, 2);
    db.exec("CREATE TABLE lists (n INT, j JSON, t TEXT, b BOOLEAN)");
    let (code, out) = inrush(&[
        "load",
        path.to_str().unwrap(),
        "--to",
        &db.url,
        "--table",
        "lists",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        db.rows("SELECT n, j, t, b, json_length(j) FROM lists ORDER BY n"),
        [
            "1\t[1,null,-2]\t[1,null,-2]\t1\t3",
            "2\t[]\t[]\t0\t0",
            "3\tNULL\tNULL\tNULL\tNULL"
        ]
    );
}

#[test]
fn on_conflict_skip_keeps_the_first_and_update_the_last() {
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id,v\n1,a\n2,b\n2,c\n3,d\n");
    // A second input, whose key 2 comes last in the input though early in its own file.
    let second = write(dir.path(), "more.csv", "id,v\n2,e\n");
    let second = second.to_str().unwrap();
    // A key of the input's own, and a unique key beside an AUTO_INCREMENT one (whose rows go
    // in as INSERTs, not LOAD DATA).
    for table in [
        "t (id INT PRIMARY KEY, v VARCHAR(10))",
        "t (n INT AUTO_INCREMENT PRIMARY KEY, id INT NOT NULL UNIQUE, v VARCHAR(10))",
    ] {
        let db = MariaDb::fresh("conflict");
        db.exec(&format!(
            "CREATE TABLE {table}; INSERT INTO t (id, v) VALUES (1, 'old')"
        ));
        let (code, out) = load(&csv, &db, "t", &[second, "--on-conflict", "skip"]);
        assert_eq!(code, 0, "{table}: {out}");
        assert_eq!(
            db.rows("SELECT id, v FROM t ORDER BY id"),
            ["1\told", "2\tb", "3\td"],
            "{table}"
        );
        let (code, out) = load(&csv, &db, "t", &[second, "--on-conflict", "update"]);
        assert_eq!(code, 0, "{table}: {out}");
        assert_eq!(
            db.rows("SELECT id, v FROM t ORDER BY id"),
            ["1\ta", "2\te", "3\td"],
            "{table}"
        );
    }
}

#[test]
fn truncate_is_part_of_the_load() {
    let db = MariaDb::fresh("truncate");
    db.exec("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1), (2)");
    let dir = shared_dir();
    let bad = write(dir.path(), "bad.csv", "id\n5\nx\n");
    let (code, out) = load(&bad, &db, "t", &["--truncate"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(db.rows("SELECT id FROM t ORDER BY id"), ["1", "2"]);
    let good = write(dir.path(), "good.csv", "id\n5\n6\n");
    let (code, out) = load(&good, &db, "t", &["--truncate"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(db.rows("SELECT id FROM t ORDER BY id"), ["5", "6"]);
}

#[test]
fn refusals_name_the_option_and_passwords_stay_hidden() {
    let db = MariaDb::fresh("refuse");
    db.exec("CREATE TABLE t (id INT)");
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id\n1\n");
    for (flags, named) in [
        (&["--datestyle", "dmy"][..], "--datestyle"),
        (&["--fast-unsafe"][..], "--fast-unsafe"),
        (&["--on-conflict", "skip"][..], "--on-conflict skip"),
    ] {
        let (code, out) = load(&csv, &db, "t", flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(out.contains(named), "{flags:?}: {out}");
    }
    let wrong = db.url.replace("inrush:inrush@", "inrush:s3cret-pw@");
    let (code, out) = inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &wrong,
        "--table",
        "t",
    ]);
    assert_eq!(code, 3, "{out}");
    assert!(!out.contains("s3cret-pw"), "{out}");
    assert!(db.rows("SELECT * FROM t").is_empty());
}

/// Against a server that refuses TCP without TLS: PREFERRED (the default) and REQUIRED
/// encrypt, VERIFY_CA and VERIFY_IDENTITY check the certificate against `ssl-ca`, DISABLED is
/// refused by the server, an unknown certificate by inrush. A server without TLS takes
/// PREFERRED (every other test) and refuses REQUIRED.
#[test]
fn tls_as_ssl_mode_asks_against_a_server_that_requires_it() {
    let server = inrush_testkit::tls_mariadb();
    server.rows("CREATE TABLE t (id INT)");
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id\n1\n2\n");
    let load = |url: &str| {
        let args = [
            "load",
            csv.to_str().unwrap(),
            "--header",
            "--to",
            url,
            "--table",
            "t",
        ];
        inrush(&args)
    };
    let count = || {
        server.rows("SELECT COUNT(*) FROM t")[0]
            .parse::<u64>()
            .unwrap()
    };
    let ca = format!("ssl-ca={}", server.cert.display());
    let mut loaded = 0;
    for url in [
        server.url("127.0.0.1", ""),
        server.url("127.0.0.1", "?ssl-mode=REQUIRED"),
        server.url("127.0.0.1", &format!("?ssl-mode=VERIFY_CA&{ca}")),
        server.url("localhost", &format!("?ssl-mode=VERIFY_IDENTITY&{ca}")),
    ] {
        let (code, out) = load(&url);
        assert_eq!(code, 0, "{url}: {out}");
        loaded += 2;
        assert_eq!(count(), loaded, "{url}");
    }
    for (url, said) in [
        // MariaDB 10.11 refuses it as a wrong password would.
        (
            server.url("127.0.0.1", "?ssl-mode=DISABLED"),
            "Access denied",
        ),
        (
            server.url("localhost", "?ssl-mode=VERIFY_IDENTITY"),
            "certificate",
        ),
    ] {
        let (code, out) = load(&url);
        assert_eq!(code, 3, "{url}: {out}");
        assert!(out.contains(said), "{url}: {out}");
        assert!(!out.contains("inrush:inrush@"), "{out}");
        assert_eq!(count(), loaded, "{url}");
    }
    let (code, out) = load(&server.url("127.0.0.1", "?ssl-ca=/nowhere/root.crt"));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("/nowhere/root.crt"), "{out}");

    let db = MariaDb::fresh("plain");
    db.exec("CREATE TABLE t (id INT)");
    let (code, out) = load(&format!("{}?ssl-mode=REQUIRED", db.url));
    assert_eq!(code, 3, "{out}");
    assert!(db.rows("SELECT * FROM t").is_empty());
}

#[test]
fn secondary_indexes_are_built_again_after_the_load_whatever_happens() {
    let db = MariaDb::fresh("indexes");
    db.exec(
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, a INT, b VARCHAR(20), \
           UNIQUE KEY ua (a), KEY kb (b(10)), KEY kab (a DESC, b), FULLTEXT KEY ft (b))",
    );
    let before = definition(&db, "t");
    let dir = shared_dir();
    let mut rows = String::from("a,b\n");
    for i in 0..5000 {
        rows.push_str(&format!("{i},word{}\n", i % 97));
    }
    let good = write(dir.path(), "good.csv", &rows);
    // The test server keeps MariaDB's default lock mode (1).
    let planned = plan(&db, "t", &good);
    assert!(
        planned.contains(
            "under innodb_autoinc_lock_mode=1 each LOAD DATA would hold the table's AUTO-INC lock"
        ),
        "{planned}"
    );
    let (code, out) = load(&good, &db, "t", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("multi-row INSERT"), "{out}");
    assert!(out.contains("indexes rebuilt after the load"), "{out}");
    assert_eq!(definition(&db, "t"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
    assert_eq!(db.rows("SELECT COUNT(*) FROM t"), ["5000"]);

    // A refused load puts them back too, and loads nothing.
    db.exec("TRUNCATE t");
    rows.push_str("x,bad\n");
    let bad = write(dir.path(), "bad.csv", &rows);
    let (code, out) = load(&bad, &db, "t", &[]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(definition(&db, "t"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM t"), ["0"]);

    // What a load that died left in the journal, `recover` (or the next load) adds back.
    db.exec(
        "ALTER TABLE t DROP INDEX kb; \
         INSERT INTO inrush_ddl_journal (table_schema, table_name, index_name, position, definition) \
         VALUES (DATABASE(), 't', 'kb', 0, 'KEY `kb` (`b`(10))')",
    );
    let (code, out) = inrush(&["recover", "--to", &db.url]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("recreated index kb"), "{out}");
    assert!(definition(&db, "t").contains("KEY `kb` (`b`(10))"));
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
}

#[test]
fn resume_after_a_kill_loads_every_block_exactly_once() {
    let db = MariaDb::fresh("resume");
    let dir = shared_dir();
    let csv = sqlbulkcopy_twins(&db, dir.path(), "", 200_000);
    let args = load_args(
        &csv,
        &db,
        "ours",
        &["--resume", "--block-size", "65536", "--connections", "2"],
    );
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let blocks = db
            .try_exec("SELECT 1 FROM inrush_load_ledger LIMIT 1")
            .ok()
            .map(|()| db.rows("SELECT COUNT(*) FROM inrush_load_ledger"));
        let done = blocks.is_some_and(|b| b[0].parse::<u64>().unwrap() >= 3);
        if done || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the load ended before the kill"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let partial: u64 = db.rows("SELECT COUNT(*) FROM ours")[0].parse().unwrap();
    assert!(
        partial > 0 && partial < 200_000,
        "{partial} rows after the kill"
    );

    let (code, out) = inrush(&args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("from earlier runs (--resume)"), "{out}");
    assert_eq!(fingerprint(&db, "ours"), fingerprint(&db, "theirs"));
    assert_eq!(
        db.rows("SELECT SUM(`rows`) FROM inrush_load_ledger"),
        ["200000"]
    );
}

#[test]
fn create_types_the_table_as_a_migrating_user_expects() {
    let db = MariaDb::fresh("create");
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "in.csv",
        "id,price,ok,day,at,doc,note\n\
         1,2.50,true,2024-01-02,2024-01-02 03:04:05,\"{\"\"a\"\": 1}\",hello\n\
         2,3,f,2024-01-03,2024-01-03 00:00:00,[1],\"x, y\"\n",
    );
    let (code, out) = load(&csv, &db, "made", &["--create"]);
    assert_eq!(code, 0, "{out}");
    let shown = db.rows("SHOW CREATE TABLE made").join("\n");
    for expected in [
        "`id` int(11)",
        "`price` decimal(65,30)",
        "`ok` tinyint(1)",
        "`day` date",
        "`at` datetime(6)",
        "`doc` longtext",
        "CHECK (json_valid(`doc`))",
        "`note` longtext",
    ] {
        assert!(shown.contains(expected), "{expected} not in {shown}");
    }
    assert_eq!(
        db.rows("SELECT id, CAST(price AS DOUBLE), ok, day, at, doc, note FROM made ORDER BY id"),
        [
            "1\t2.5\t1\t2024-01-02\t2024-01-02 03:04:05.000000\t{\"a\": 1}\thello",
            "2\t3\t0\t2024-01-03\t2024-01-03 00:00:00.000000\t[1]\tx, y",
        ]
    );

    // A load that fails leaves no table; --types names MariaDB types.
    let bad = write(dir.path(), "bad.csv", "id,v\n1,a\nx,b\n");
    let (code, out) = load(&bad, &db, "gone", &["--create", "--types", "id=INT"]);
    assert_eq!(code, 4, "{out}");
    assert!(db.rows("SHOW TABLES LIKE 'gone'").is_empty());
    let zoned = write(dir.path(), "zoned.csv", "at\n2024-01-02 03:04:05+02\n");
    let (code, out) = load(&zoned, &db, "zoned", &["--create"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--types at=VARCHAR(40)"), "{out}");
    let (code, out) = load(
        &zoned,
        &db,
        "zoned",
        &["--create", "--types", "at=VARCHAR(40)"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(db.rows("SELECT at FROM zoned"), ["2024-01-02 03:04:05+02"]);
}

/// `inrush plan --to DB --table t --input FILE`.
fn plan(db: &MariaDb, table: &str, input: &std::path::Path) -> String {
    let (code, out) = inrush(&[
        "plan",
        "--to",
        &db.url,
        "--table",
        table,
        "--input",
        input.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    out
}

/// A parent `p` with ids 1..=100 and codes `c1`..`c100`, and a child of it named `table`
/// whose keys are named after it.
fn parent_and_child(db: &MariaDb, table: &str) {
    db.exec(&format!(
        "CREATE TABLE IF NOT EXISTS p (id INT PRIMARY KEY, code VARCHAR(5) NOT NULL UNIQUE); \
         INSERT IGNORE INTO p SELECT seq, CONCAT('c', seq) FROM seq_1_to_100; \
         CREATE TABLE {table} (id INT PRIMARY KEY, pid INT, pcode VARCHAR(5), note VARCHAR(10), \
           CONSTRAINT {table}_pid FOREIGN KEY (pid) REFERENCES p (id), \
           CONSTRAINT {table}_pcode FOREIGN KEY (pcode) REFERENCES p (code))"
    ));
}

#[test]
fn foreign_keys_are_checked_once_after_a_load_into_an_empty_table() {
    let db = MariaDb::fresh("fk");
    parent_and_child(&db, "ours");
    parent_and_child(&db, "theirs");
    let dir = shared_dir();
    let mut rows = String::from("id,pid,pcode,note\n");
    for i in 0..3000 {
        let pid = match i % 7 {
            0 => "NULL".to_string(),
            _ => (i % 100 + 1).to_string(),
        };
        let pcode = match i % 5 {
            0 => "NULL".to_string(),
            _ => format!("c{}", i % 100 + 1),
        };
        rows.push_str(&format!("{i},{pid},{pcode},n{i}\n"));
    }
    let good = write(dir.path(), "good.csv", &rows);
    let planned = plan(&db, "ours", &good);
    assert!(
        planned.contains("foreign key ours_pid")
            && planned.contains("foreign_key_checks=0 while the rows go in")
            && planned.contains("index ours_pcode")
            && planned.contains("a foreign key of the table needs it"),
        "{planned}"
    );
    server_load(&db, &good, "theirs").unwrap();
    let (code, out) = load(
        &good,
        &db,
        "ours",
        &[
            "--null",
            "NULL",
            "--connections",
            "2",
            "--block-size",
            "16384",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("over 2 connections"), "{out}");
    assert!(out.contains("checked once after the load"), "{out}");
    let all = "SELECT * FROM {} ORDER BY id";
    assert_eq!(
        db.rows(&all.replace("{}", "ours")),
        db.rows(&all.replace("{}", "theirs"))
    );

    // A table with rows: checked row by row; --truncate empties it first, so once after.
    let planned = plan(&db, "ours", &good);
    assert!(
        planned.contains("checked row by row during the load (the table has rows"),
        "{planned}"
    );
    let (code, out) = load(&good, &db, "ours", &["--null", "NULL", "--truncate"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("checked once after the load"), "{out}");
    assert_eq!(
        db.rows(&all.replace("{}", "ours")),
        db.rows(&all.replace("{}", "theirs"))
    );

    // A row whose parent is missing fails the load, naming the key and the values; nothing
    // of any connection is committed.
    let before = db.rows(&all.replace("{}", "ours"));
    rows.push_str("5000,7,c999,orphan\n5001,999,c1,orphan\n");
    let bad = write(dir.path(), "bad.csv", &rows);
    let (code, out) = load(
        &bad,
        &db,
        "ours",
        &["--null", "NULL", "--truncate", "--block-size", "16384"],
    );
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("foreign key `ours_pcode` of `")
            && out.contains("(`pcode`)=(c999) not present in `")
            && out.contains("`.`p`"),
        "{out}"
    );
    assert_eq!(db.rows(&all.replace("{}", "ours")), before);
    db.exec("DELETE FROM ours");
    let (code, out) = load(&bad, &db, "ours", &["--null", "NULL", "--connections", "2"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("nothing was committed"), "{out}");
    assert_eq!(db.rows("SELECT COUNT(*) FROM ours"), ["0"]);

    // --max-errors keeps the checks on: the server names each orphan, which is rejected.
    let (code, out) = load(&bad, &db, "ours", &["--null", "NULL", "--max-errors", "5"]);
    assert_eq!(code, 6, "{out}");
    assert!(
        out.contains("checked row by row during the load (--max-errors"),
        "{out}"
    );
    assert_eq!(
        db.rows(&all.replace("{}", "ours")),
        db.rows(&all.replace("{}", "theirs"))
    );
    let rejects = std::fs::read_to_string(dir.path().join("bad.csv.rejects")).unwrap();
    assert_eq!(
        rejects.lines().skip(1).collect::<Vec<_>>(),
        ["5000,7,c999,orphan", "5001,999,c1,orphan"]
    );
    let log = std::fs::read_to_string(dir.path().join("bad.csv.rejects.log")).unwrap();
    assert!(log.contains("a foreign key constraint fails"), "{log}");
}

#[test]
fn keys_stay_checked_row_by_row_where_a_check_after_would_miss_rows() {
    let db = MariaDb::fresh("fkkeep");
    db.exec(
        "CREATE TABLE tree (id INT PRIMARY KEY, up INT, \
           CONSTRAINT tree_up FOREIGN KEY (up) REFERENCES tree (id)); \
         CREATE TABLE log (id INT); \
         CREATE TABLE p (id INT PRIMARY KEY); \
         CREATE TABLE c (id INT, pid INT, CONSTRAINT c_pid FOREIGN KEY (pid) REFERENCES p (id)); \
         CREATE TRIGGER c_log AFTER INSERT ON c FOR EACH ROW INSERT INTO log VALUES (NEW.id)",
    );
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id,up\n1,\n2,1\n");
    let planned = plan(&db, "tree", &csv);
    assert!(
        planned.contains("foreign key tree_up  keep   checked row by row during the load (`tree_up` references the table itself"),
        "{planned}"
    );
    let planned = plan(&db, "c", &csv);
    assert!(
        planned.contains(
            "foreign key c_pid  keep   checked row by row during the load (the table's triggers"
        ),
        "{planned}"
    );
}

#[test]
fn truncate_of_a_referenced_parent_fails_and_orphans_nothing() {
    let db = MariaDb::fresh("fkparent");
    parent_and_child(&db, "c");
    db.exec("INSERT INTO c VALUES (1, 5, 'c5', 'x')");
    let dir = shared_dir();
    let csv = write(dir.path(), "p.csv", "id,code\n1,c1\n2,c2\n");
    let (code, out) = load(&csv, &db, "p", &["--truncate"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("a foreign key constraint fails"), "{out}");
    assert_eq!(db.rows("SELECT COUNT(*) FROM p"), ["100"]);
    assert_eq!(
        db.rows("SELECT c.id, p.code FROM c JOIN p ON p.id = c.pid"),
        ["1\tc5"]
    );
}

/// `--truncate`'s DELETE and `--on-conflict update`'s REPLACE would fire the ON DELETE rules
/// of the keys that reference the table, deleting or changing rows of other tables: both are
/// refused before anything happens, naming each key. `skip` deletes nothing and runs.
#[test]
fn a_parent_whose_children_follow_its_deletes_refuses_truncate_and_replace() {
    let db = MariaDb::fresh("cascade");
    db.exec(
        "CREATE TABLE p (id INT PRIMARY KEY, v INT); INSERT INTO p VALUES (1, 0), (2, 0); \
         CREATE TABLE kid (id INT PRIMARY KEY, p INT, \
           CONSTRAINT kid_p FOREIGN KEY (p) REFERENCES p (id) ON DELETE CASCADE); \
         CREATE TABLE nul (id INT PRIMARY KEY, p INT, \
           CONSTRAINT nul_p FOREIGN KEY (p) REFERENCES p (id) ON DELETE SET NULL); \
         INSERT INTO kid VALUES (20, 2); INSERT INTO nul VALUES (30, 1)",
    );
    let dir = shared_dir();
    let csv = write(dir.path(), "p.csv", "id,v\n1,5\n2,5\n3,5\n");
    let children =
        || db.rows("SELECT 'kid', id, p FROM kid UNION ALL SELECT 'nul', id, p FROM nul");
    let before = children();
    for flags in [&["--truncate"][..], &["--on-conflict", "update"]] {
        let (code, out) = load(&csv, &db, "p", flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(
            out.contains("`kid_p`") || out.contains("kid_p: ON DELETE CASCADE"),
            "{out}"
        );
        assert!(out.contains("nul_p: ON DELETE SET NULL"), "{out}");
        assert_eq!(children(), before, "{flags:?}");
        assert_eq!(db.rows("SELECT id, v FROM p ORDER BY id"), ["1\t0", "2\t0"]);
    }
    let (code, out) = load(&csv, &db, "p", &["--on-conflict", "skip"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(children(), before);
    assert_eq!(
        db.rows("SELECT id, v FROM p ORDER BY id"),
        ["1\t0", "2\t0", "3\t5"]
    );
}

#[test]
fn myisam_disables_its_keys_and_says_it_cannot_roll_back() {
    let db = MariaDb::fresh("myisam");
    let ddl = "(id INT PRIMARY KEY, v INT, w VARCHAR(10), KEY kv (v), KEY kw (w)) ENGINE=MyISAM";
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    let disabled = || {
        db.rows(
            "SELECT COUNT(*) FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ours' AND COMMENT = 'disabled'",
        )
    };
    let dir = shared_dir();
    let mut rows = String::from("id,v,w\n");
    for i in 0..5000 {
        rows.push_str(&format!("{i},{},w{}\n", i % 31, i % 97));
    }
    let good = write(dir.path(), "good.csv", &rows);
    let planned = plan(&db, "ours", &good);
    assert!(
        planned.contains("DISABLE KEYS during the load")
            && planned.contains("MyISAM is not transactional"),
        "{planned}"
    );
    server_load(&db, &good, "theirs").unwrap();
    let (code, out) = load(&good, &db, "ours", &["--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ENABLE KEYS") && out.contains("which is not transactional"),
        "{out}"
    );
    let all = "SELECT * FROM {} ORDER BY id";
    assert_eq!(
        db.rows(&all.replace("{}", "ours")),
        db.rows(&all.replace("{}", "theirs"))
    );
    assert_eq!(disabled(), ["0"]);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);

    // A load the server refuses a row of ends there, says what stays, and enables the keys.
    db.exec("TRUNCATE ours");
    let dup = write(dir.path(), "dup.csv", &format!("{rows}7,1,dup\n"));
    let (code, out) = load(&dup, &db, "ours", &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("Duplicate entry '7'") && out.contains("is MyISAM, which cannot roll back"),
        "{out}"
    );
    assert_eq!(disabled(), ["0"]);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
    // The rows written before it stay, never twice.
    assert_eq!(
        db.rows("SELECT COUNT(*), COUNT(DISTINCT id) FROM ours"),
        ["5000\t5000"]
    );

    // Keys a load that died left disabled, `recover` (or the next load) enables again.
    db.exec(
        "ALTER TABLE ours DISABLE KEYS; \
         INSERT INTO inrush_ddl_journal (table_schema, table_name, index_name, position, definition) \
         VALUES (DATABASE(), 'ours', '(non-unique keys)', 0, 'DISABLE KEYS')",
    );
    assert_eq!(disabled(), ["2"]);
    let (code, out) = inrush(&["recover", "--to", &db.url]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(disabled(), ["0"]);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);

    // What the engine cannot take back is refused up front.
    for (flags, named) in [
        (&["--max-errors", "5"][..], "--max-errors"),
        (&["--resume"][..], "--resume"),
    ] {
        let (code, out) = load(&good, &db, "ours", flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(
            out.contains(named) && out.contains("MyISAM, which is not transactional"),
            "{out}"
        );
    }
}

#[test]
fn table_lock_holds_the_table_until_the_commit() {
    let db = MariaDb::fresh("lock");
    let dir = shared_dir();
    // Long enough that the two probes below (each waits out a 1 s lock timeout) both run
    // while the load holds the lock.
    let csv = sqlbulkcopy_twins(&db, dir.path(), "", 1_000_000);
    let args = load_args(&csv, &db, "ours", &["--table-lock"]);
    let child = Command::new(BIN)
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While the load writes, another session can neither write nor read the table.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let loading =
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'LOAD DATA%'";
    while db.rows(loading) == ["0"] {
        assert!(
            std::time::Instant::now() < deadline,
            "the load never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for sql in [
        "INSERT INTO ours VALUES (-1, 0, 0, '', '', '')",
        "SELECT COUNT(*) FROM ours",
    ] {
        let err = db
            .try_exec(&format!("SET SESSION lock_wait_timeout = 1; {sql}"))
            .unwrap_err();
        assert!(err.contains("Lock wait timeout exceeded"), "{sql}: {err}");
    }
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("over 1 connection")
            && text.contains("LOCK TABLES ... WRITE until its COMMIT"),
        "{text}"
    );
    assert_eq!(fingerprint(&db, "ours"), fingerprint(&db, "theirs"));

    // A refused row rolls the locked load back, and the lock goes with it.
    db.exec("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)");
    let bad = write(dir.path(), "bad.csv", "id\n5\n6\n5\n");
    let (code, out) = load(&bad, &db, "t", &["--table-lock", "--truncate"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("Duplicate entry '5'"), "{out}");
    assert_eq!(db.rows("SELECT id FROM t"), ["1"]);
    db.exec("INSERT INTO t VALUES (2)");
}

// Signals: the message says what is true, nothing waits on a lock past a signal, and the
// indexes dropped for the load are back before the process exits.

fn signal(child: &std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

/// Signals `load` `times` times, 200 ms apart, while it waits for the session running
/// `holder`: it must end with exit 130 within 30 s, long before that session would let it
/// go; the session is ended after. The load's stderr.
fn interrupted_while_held(
    db: &MariaDb,
    load: std::process::Child,
    times: usize,
    holder: &str,
    mut holding: std::process::Child,
) -> String {
    let signalled = std::time::Instant::now();
    for k in 0..times {
        if k > 0 {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        signal(&load);
    }
    let out = load.wait_with_output().unwrap();
    let waited = signalled.elapsed();
    end_session(db, holder);
    let _ = holding.wait();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        waited < std::time::Duration::from_secs(30),
        "the load waited {waited:?} after the signal for the session running {holder}"
    );
    stderr
}

/// Waits until `count` (a query of one number) is above zero.
fn wait_until(db: &MariaDb, count: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while db.rows(count) == ["0"] {
        assert!(
            std::time::Instant::now() < deadline,
            "not within 2 minutes: {count}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Ends the session in this database whose statement is `info` (one that sleeps on the
/// server, holding locks); its transaction rolls back.
fn end_session(db: &MariaDb, info: &str) {
    for id in db.rows(&format!(
        "SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND info = '{info}'"
    )) {
        let _ = db.try_exec(&format!("KILL {id}"));
    }
}

/// A session of its own that runs `sql` in a transaction, then sleeps in `sleeper` (a
/// `SELECT SLEEP(n)` no other session of the test runs), holding its locks; returns once it
/// sleeps. [`end_session`] ends it.
fn hold(db: &MariaDb, sql: &str, sleeper: &str) -> std::process::Child {
    let holding = db.spawn(&format!("START TRANSACTION; {sql}; {sleeper}"));
    wait_until(
        db,
        &format!(
            "SELECT COUNT(*) FROM information_schema.processlist \
             WHERE db = DATABASE() AND info = '{sleeper}'"
        ),
    );
    holding
}

/// `c` as it was before the load (`before`), with `rows` rows and nothing in the journal.
fn assert_table(db: &MariaDb, before: &str, rows: &str) {
    assert_eq!(definition(db, "c"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM c"), [rows]);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
}

/// The signal tests' table: `c`, whose rows reference `p`'s one row and whose secondary index
/// `kv` the load drops (`--index-threshold 0`; `kp` stays, the foreign key needs it, and comes
/// first, so `kv` added back stands where it stood); under `--max-errors` its foreign key is checked
/// row by row, so a session that locks `p`'s row holds the load between its drop and its
/// commit. The input (1000 rows) and the table's definition before the load.
fn signal_table(db: &MariaDb, dir: &std::path::Path) -> (std::path::PathBuf, String) {
    db.exec(
        "CREATE TABLE p (id INT PRIMARY KEY); INSERT INTO p VALUES (1); \
         CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, v VARCHAR(20), KEY kp (pid), \
           KEY kv (v), FOREIGN KEY (pid) REFERENCES p (id))",
    );
    let rows: String = (1..=1000).map(|i| format!("{i},1,v{i}\n")).collect();
    let csv = write(dir, "in.csv", &format!("id,pid,v\n{rows}"));
    (csv, definition(db, "c"))
}

/// Starts the load of `csv` into `c` and waits until it waits for `p`'s row, which a session
/// of its own (`holder`, a statement that sleeps) locks first.
fn start_held_load(
    db: &MariaDb,
    csv: &std::path::Path,
    holder: &str,
) -> (std::process::Child, std::process::Child) {
    let holding = hold(db, "SELECT id FROM p WHERE id = 1 FOR UPDATE", holder);
    let load = Command::new(BIN)
        .args(load_args(
            csv,
            db,
            "c",
            &["--max-errors", "10", "--index-threshold", "0"],
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // 1000 rows take milliseconds: a statement of the load that has run for a second waits.
    wait_until(
        db,
        "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() \
           AND (info LIKE 'LOAD DATA%' OR info LIKE 'INSERT INTO%') AND time >= 1",
    );
    (load, holding)
}

/// A statement waiting for a row another session holds is ended by the signal (`KILL QUERY`),
/// not left to wait for that session: the load rolls back at once, and its dropped index is
/// put back before the process exits, a second signal or not.
#[test]
fn a_signal_ends_a_load_that_waits_for_a_lock_and_puts_its_index_back() {
    let db = MariaDb::fresh("signal_lock");
    let dir = shared_dir();
    let (csv, before) = signal_table(&db, dir.path());
    let holder = "SELECT SLEEP(61)";
    let (load, holding) = start_held_load(&db, &csv, holder);
    let stderr = interrupted_while_held(&db, load, 2, holder, holding);
    assert!(
        stderr.contains("interrupted: rolling back, then putting back the indexes"),
        "{stderr}"
    );
    assert_table(&db, &before, "0");
}

/// A load of `c` (its input in `dir`) whose rebuild after the commit waits: a session that read `c` (`reader`, a
/// statement that sleeps) holds its metadata lock, which the load's writes go on beside but
/// the ALTER TABLE that builds the index again waits for. The load (held on `p`'s row by
/// `row` until the reader is in), the reader's session, and `c`'s definition before.
fn rebuild_kept_waiting(
    db: &MariaDb,
    dir: &std::path::Path,
    row: &str,
    reader: &str,
) -> (std::process::Child, std::process::Child, String) {
    let (csv, before) = signal_table(db, dir);
    let (load, mut holding_row) = start_held_load(db, &csv, row);
    let reading = hold(db, "SELECT COUNT(*) FROM c", reader);
    end_session(db, row);
    let _ = holding_row.wait();
    wait_until(
        db,
        "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() \
           AND info LIKE 'ALTER TABLE%ADD%' AND state LIKE '%metadata lock%'",
    );
    (load, reading, before)
}

/// A signal while the index is built again, after the commit, says the rows stay; the index
/// is finished, the statistics skipped, and the load ends as loaded.
#[test]
fn a_signal_after_the_commit_keeps_the_rows_and_finishes_the_index() {
    let db = MariaDb::fresh("signal_commit");
    let dir = shared_dir();
    let reader = "SELECT SLEEP(62)";
    let (load, mut reading, before) =
        rebuild_kept_waiting(&db, dir.path(), "SELECT SLEEP(61)", reader);
    signal(&load);
    std::thread::sleep(std::time::Duration::from_millis(200));
    end_session(&db, reader);
    let _ = reading.wait();
    let out = load.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("interrupted after the commit: the rows stay committed"),
        "{stderr}"
    );
    assert!(!stdout.contains("ANALYZE TABLE"), "{stdout}");
    assert_table(&db, &before, "1000");
}

/// The server's `metadata_lock_info` plugin installed, once for every test: without it MariaDB
/// cannot tell who holds a table's metadata lock.
fn lists_metadata_locks(db: &MariaDb) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let plugin = "SELECT COUNT(*) FROM information_schema.PLUGINS \
                      WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO'";
        if db.rows(plugin) == ["0"] {
            db.exec("INSTALL SONAME 'metadata_lock_info'");
        }
    });
}

/// A second signal while the rebuild after the commit waits for another session's metadata
/// lock stops that wait: the rows stay, exit 8 says so, naming the session, and names `inrush
/// recover`, which puts the index back once the session is gone.
#[test]
fn a_second_signal_while_the_rebuild_waits_for_a_metadata_lock_leaves_the_index_to_recover() {
    let db = MariaDb::fresh("signal_rebuild");
    lists_metadata_locks(&db);
    let dir = shared_dir();
    let reader = "SELECT SLEEP(66)";
    let (load, mut reading, before) =
        rebuild_kept_waiting(&db, dir.path(), "SELECT SLEEP(65)", reader);
    signal(&load);
    std::thread::sleep(std::time::Duration::from_millis(200));
    signal(&load);
    let out = load.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{stderr}");
    for said in [
        "the load committed 1000 rows",
        "stopped waiting at the second interrupt",
        "recover",
        "kept open (held by connection ",
    ] {
        assert!(stderr.contains(said), "expected {said:?} in:\n{stderr}");
    }
    end_session(&db, reader);
    let _ = reading.wait();
    let (code, out) = inrush(&["recover", "--to", &db.url]);
    assert_eq!(code, 0, "{out}");
    assert_table(&db, &before, "1000");
}

/// One signal ends a load whose DROP INDEX waits for another session's metadata lock (which,
/// waiting, would make every new query of the table wait too): nothing dropped, the journal
/// empty, exit 130.
#[test]
fn a_signal_ends_a_drop_that_waits_for_a_metadata_lock() {
    let db = MariaDb::fresh("signal_mdl");
    let dir = shared_dir();
    let (csv, before) = signal_table(&db, dir.path());
    let reader = "SELECT SLEEP(63)";
    let reading = hold(&db, "SELECT COUNT(*) FROM c", reader);
    let load = Command::new(BIN)
        .args(load_args(&csv, &db, "c", &["--index-threshold", "0"]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        &db,
        "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() \
           AND info LIKE 'ALTER TABLE%DROP%' AND state LIKE '%metadata lock%'",
    );
    interrupted_while_held(&db, load, 1, reader, reading);
    assert_table(&db, &before, "0");
}

/// A session with the table open in a transaction holds its metadata lock: the DROP INDEX
/// waits for it only so long (and, waiting, makes every new query of the table wait too), then
/// the load goes on with the indexes, and the plan in the summary says why, naming the session
/// (MariaDB's metadata_lock_info plugin lists it).
#[test]
fn a_drop_that_waits_too_long_for_a_metadata_lock_keeps_the_indexes() {
    let db = MariaDb::fresh("drop_mdl");
    lists_metadata_locks(&db);
    let dir = shared_dir();
    let (csv, before) = signal_table(&db, dir.path());
    let reader = "SELECT SLEEP(64)";
    let mut reading = hold(&db, "SELECT COUNT(*) FROM c", reader);
    let holder = db.rows(&format!(
        "SELECT id FROM information_schema.processlist WHERE info = '{reader}'"
    ));
    let (code, out) = load(&csv, &db, "c", &["--index-threshold", "0", "--json"]);
    end_session(&db, reader);
    let _ = reading.wait();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("another session kept c open for 5 s"), "{out}");
    assert!(
        out.contains(&format!("held by connection {} (inrush@", holder[0])),
        "{out}"
    );
    assert!(out.contains(&format!("running {reader})")), "{out}");
    assert_table(&db, &before, "1000");
}

// Several loads of one table: one that changes its definitions runs alone (a named lock per
// table), and `recover` leaves a table a live load holds to it.

/// `c` with two secondary keys every load here drops and adds back (`--index-threshold 0`);
/// its definition.
fn keyed_table(db: &MariaDb) -> String {
    db.exec(
        "CREATE TABLE c (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(20) NOT NULL, \
           KEY c_i1 (a), KEY c_i2 (b, a)) ENGINE=InnoDB",
    );
    definition(db, "c")
}

/// Rows `ids` of `c` as CSV with a header.
fn keyed_rows(ids: std::ops::RangeInclusive<u64>) -> String {
    let mut rows = String::from("id,a,b\n");
    for i in ids {
        rows.push_str(&format!("{i},{},w{}\n", i % 1000, i % 97));
    }
    rows
}

/// `c` holds ids 1..=`n` exactly once each, has every key it had (`before`), and the journal
/// is empty.
fn assert_keyed(db: &MariaDb, before: &str, n: u64) {
    assert_eq!(
        db.rows("SELECT COUNT(*), COUNT(DISTINCT id), SUM(id), MIN(id), MAX(id) FROM c"),
        [format!("{n}\t{n}\t{}\t1\t{n}", n * (n + 1) / 2)]
    );
    assert_eq!(definition(db, "c"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
}

/// Two loads of one table that both drop and add back its keys, started together and 0.3 s
/// apart: the second waits while the first is at work, instead of restoring the first one's
/// journal entries under it (`Duplicate key name`, `Can't DROP INDEX`). Both succeed, every row
/// goes in once, every key is back, the journal is empty.
#[test]
fn two_loads_of_one_table_take_turns_with_its_keys() {
    let db = MariaDb::fresh("two_loads");
    let before = keyed_table(&db);
    let dir = shared_dir();
    const N: u64 = 150_000;
    let first = write(dir.path(), "first.csv", &keyed_rows(1..=N));
    let second = write(dir.path(), "second.csv", &keyed_rows(N + 1..=2 * N));
    for apart in [0, 300] {
        db.exec("TRUNCATE c");
        let start = |csv: &std::path::Path| {
            Command::new(BIN)
                .args(load_args(csv, &db, "c", &["--index-threshold", "0"]))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let one = start(&first);
        std::thread::sleep(std::time::Duration::from_millis(apart));
        let two = start(&second);
        for (load, which) in [(one, "first"), (two, "second")] {
            let out = load.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(0),
                "the {which} load, {apart} ms apart: {stderr}"
            );
        }
        assert_keyed(&db, &before, 2 * N);
    }
}

/// `inrush recover` beside a live load that dropped the table's keys (held by its standard
/// input, kept open) leaves them to it, and says so; a second load waits for it, saying so
/// after a few seconds; then both finish, with every key back.
#[test]
fn recover_and_a_second_load_leave_a_live_loads_keys_to_it() {
    let db = MariaDb::fresh("live_load");
    let before = keyed_table(&db);
    let dir = shared_dir();
    let mut load = Command::new(BIN)
        .args([
            "load",
            "-",
            "--to",
            &db.url,
            "--table",
            "c",
            "--header",
            "--no-progress",
            "--index-threshold",
            "0",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = load.stdin.take().unwrap();
    use std::io::Write;
    // More than a block, so the load reads its header and goes on to drop the keys.
    stdin.write_all(keyed_rows(1..=100_000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_until(
        &db,
        "SELECT COUNT(*) = 0 FROM information_schema.STATISTICS \
           WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'c' AND INDEX_NAME = 'c_i1'",
    );
    let table = format!("`{}`.`c`", db.name);
    for args in [
        vec!["recover", "--to", &db.url],
        vec!["recover", "--to", &db.url, "--table", "c"],
    ] {
        let (code, out) = inrush(&args);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(&format!("left alone: {table}")), "{out}");
        assert!(!out.contains("recreated"), "{out}");
    }
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"),
        ["2"],
        "the live load's entries stay"
    );
    assert!(!definition(&db, "c").contains("c_i1"));

    // A second load of the table waits for the first, and says so after a few seconds.
    let csv = write(dir.path(), "more.csv", &keyed_rows(200_001..=210_000));
    let second = Command::new(BIN)
        .args(load_args(&csv, &db, "c", &["--index-threshold", "0"]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(5));
    let rest = keyed_rows(100_001..=200_000);
    let rest = rest.strip_prefix("id,a,b\n").unwrap();
    stdin.write_all(rest.as_bytes()).unwrap();
    drop(stdin);
    let out = load.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = second.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "waiting for another inrush load (or `inrush recover`) of {table} to end"
        )),
        "{stderr}"
    );
    assert_eq!(
        db.rows("SELECT COUNT(*), COUNT(DISTINCT id), SUM(id) FROM c"),
        [format!("210000\t210000\t{}", 210_000u64 * 210_001 / 2)]
    );
    assert_eq!(definition(&db, "c"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
}

/// Waits for `child` at most `secs` seconds (killing it then); its exit code and stderr.
fn wait_for(mut child: std::process::Child, secs: u64, what: &str) -> (Option<i32>, String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} did not end within {secs} s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Loads that change no definition (`--keep-indexes`) hold the table's lock only while they
/// start: a second one runs and commits beside a live one. A load that drops the keys, started
/// beside the live one, waits in its ALTER TABLE for that load's transactions (each of its
/// connections opened the table first), never between them; all of them finish.
#[test]
fn loads_that_keep_the_keys_run_beside_each_other() {
    let db = MariaDb::fresh("sharing");
    let before = keyed_table(&db);
    let dir = shared_dir();
    let mut live = Command::new(BIN)
        .args([
            "load",
            "-",
            "--to",
            &db.url,
            "--table",
            "c",
            "--header",
            "--no-progress",
            "--keep-indexes",
            "--connections",
            "2",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = live.stdin.take().unwrap();
    use std::io::Write;
    stdin.write_all(keyed_rows(1..=100_000).as_bytes()).unwrap();
    stdin.flush().unwrap();

    let csv = write(dir.path(), "beside.csv", &keyed_rows(200_001..=210_000));
    let beside = Command::new(BIN)
        .args(load_args(&csv, &db, "c", &["--keep-indexes"]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, stderr) = wait_for(beside, 60, "a load beside a live one that keeps the keys");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM c WHERE id > 200000"),
        ["10000"]
    );

    let csv = write(dir.path(), "alone.csv", &keyed_rows(300_001..=310_000));
    let alone = Command::new(BIN)
        .args(load_args(&csv, &db, "c", &["--index-threshold", "0"]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        &db,
        "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() \
           AND info LIKE 'ALTER TABLE%DROP%' AND state LIKE '%metadata lock%'",
    );
    let rest = keyed_rows(100_001..=150_000);
    stdin
        .write_all(rest.strip_prefix("id,a,b\n").unwrap().as_bytes())
        .unwrap();
    drop(stdin);
    let (code, stderr) = wait_for(live, 120, "the live load");
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = wait_for(alone, 120, "the load that drops the keys");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        db.rows("SELECT COUNT(*), COUNT(DISTINCT id) FROM c"),
        ["170000\t170000"]
    );
    assert_eq!(definition(&db, "c"), before);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"), ["0"]);
}

/// The server ends the `ALTER TABLE ... ADD KEY` that puts the keys back after the commit: the
/// rows stay, the exit code (8) and the message say so, with the command that finishes; the
/// same command run again loads nothing, puts the keys back and consumes the load's record.
#[test]
fn a_rebuild_cut_off_after_the_commit_exits_8_and_a_rerun_loads_nothing() {
    let db = MariaDb::fresh("unfinished");
    let before = keyed_table(&db);
    let dir = shared_dir();
    const N: u64 = 400_000;
    let input = write(dir.path(), "in.csv", &keyed_rows(1..=N));
    let args = load_args(&input, &db, "c", &["--index-threshold", "0"]);
    let mut load = Command::new(BIN)
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let rebuilding = db.rows(
            "SELECT id FROM information_schema.processlist \
             WHERE db = DATABASE() AND info LIKE 'ALTER TABLE%ADD%'",
        );
        if !rebuilding.is_empty() {
            for id in rebuilding {
                let _ = db.try_exec(&format!("KILL {id}"));
            }
            break;
        }
        assert!(
            load.try_wait().unwrap().is_none(),
            "the load ended before its rebuild was cut off"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no rebuild within 2 minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (code, stderr) = wait_for(load, 120, "the load whose rebuild was cut off");
    assert_eq!(code, Some(8), "{stderr}");
    for said in [
        &format!("committed {N} rows into"),
        "do not load them again",
        "still dropped, kept in the DDL journal: index c_i1, index c_i2",
        "To finish: ",
        "inrush recover --to 'mysql://",
        "a rerun of this same load finds its rows there",
    ] {
        assert!(stderr.contains(said), "{said:?} missing from:\n{stderr}");
    }
    assert_eq!(db.rows("SELECT COUNT(*) FROM c"), [N.to_string()]);

    let (code, out) = inrush(&args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("loaded nothing into"), "{out}");
    assert_keyed(&db, &before, N);
    assert_eq!(db.rows("SELECT COUNT(*) FROM inrush_load_commits"), ["0"]);
}

/// `inrush status --to DB --table ours --json`: the one load in the ledger (null when none).
fn status_json(db: &MariaDb) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["status", "--to", &db.url, "--table", "ours", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inrush status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loads: serde_json::Value = serde_json::from_str(&stdout).expect("status JSON");
    assert!(loads.as_array().map(Vec::len) <= Some(1), "{stdout}");
    loads[0].clone()
}

/// `inrush status` reads MariaDB's ledger as PostgreSQL's: a `--resume` load stopped by SIGTERM
/// mid-way (exit 130, its committed blocks kept) is `interrupted`, with the blocks and rows the
/// table holds; once the same command has loaded the rest, `complete` (its blocks cover the
/// input from past the header to its end).
#[test]
fn status_shows_a_stopped_resume_load_interrupted_then_complete() {
    let db = MariaDb::fresh("status");
    let dir = shared_dir();
    let csv = sqlbulkcopy_twins(&db, dir.path(), "", 200_000);
    let args = load_args(
        &csv,
        &db,
        "ours",
        &["--resume", "--block-size", "65536", "--connections", "2"],
    );
    let child = Command::new(BIN)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let blocks = db
            .try_exec("SELECT 1 FROM inrush_load_ledger LIMIT 1")
            .ok()
            .map(|()| db.rows("SELECT COUNT(*) FROM inrush_load_ledger"));
        let done = blocks.is_some_and(|b| b[0].parse::<u64>().unwrap() >= 3);
        if done || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    signal(&child);
    let (code, stderr) = wait_for(child, 60, "the load stopped by SIGTERM");
    assert_eq!(
        code,
        Some(130),
        "the load ended before the signal: {stderr}"
    );

    let count = |sql: &str| -> i64 { db.rows(sql)[0].parse().unwrap() };
    let interrupted = status_json(&db);
    assert_eq!(interrupted["state"], "interrupted", "{interrupted}");
    assert_eq!(interrupted["complete"], false, "{interrupted}");
    assert_eq!(
        interrupted["loading"],
        serde_json::json!([]),
        "{interrupted}"
    );
    let rows = count("SELECT COUNT(*) FROM ours");
    assert!(0 < rows && rows < 200_000, "{rows} rows after the signal");
    assert_eq!(interrupted["rows"], rows, "{interrupted}");
    assert_eq!(
        interrupted["blocks"],
        count("SELECT COUNT(*) FROM inrush_load_ledger"),
        "{interrupted}"
    );
    let size = std::fs::metadata(&csv).unwrap().len() as i64;
    assert_eq!(interrupted["size"], size, "{interrupted}");
    let (code, text) = inrush(&["status", "--to", &db.url, "--table", "ours"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("): interrupted\n"), "{text}");
    assert!(text.contains("no process is loading it"), "{text}");

    let (code, out) = inrush(&args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("from earlier runs (--resume)"), "{out}");
    assert_eq!(fingerprint(&db, "ours"), fingerprint(&db, "theirs"));
    let complete = status_json(&db);
    assert_eq!(complete["state"], "complete", "{complete}");
    assert_eq!(complete["complete"], true, "{complete}");
    assert_eq!(complete["rows"], 200_000, "{complete}");
    assert_eq!(
        complete["blocks"],
        count("SELECT COUNT(*) FROM inrush_load_ledger"),
        "{complete}"
    );
    // Every byte but the header's.
    let header = std::fs::read_to_string(&csv).unwrap().find('\n').unwrap() as i64 + 1;
    assert_eq!(complete["bytes"], size - header, "{complete}");
    let (code, text) = inrush(&["status", "--to", &db.url]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("): complete\n"), "{text}");
    assert!(text.contains("200,000 rows"), "{text}");
}

/// A row the server refuses goes to the reject log with the column its message names and the
/// row's value there, as a row the client refuses does.
#[test]
fn the_reject_log_names_the_column_and_value_the_server_refused() {
    let db = MariaDb::fresh("rejected_column");
    db.exec("CREATE TABLE people (id INT PRIMARY KEY, birth DATE)");
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "people.csv",
        "id,birth\n1,2024-02-28\n2,2024-02-30\n3,2024-03-01\n",
    );
    let rejects = dir.path().join("people.rejects");
    let (code, out) = load(
        &csv,
        &db,
        "people",
        &["--max-errors", "5", "--rejects", rejects.to_str().unwrap()],
    );
    assert_eq!(code, 6, "{out}");
    let log = std::fs::read_to_string(format!("{}.log", rejects.display())).unwrap();
    let entry: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(entry["column"], "birth", "{log}");
    assert_eq!(entry["value"], "2024-02-30", "{log}");
    assert_eq!(entry["line"], 3, "{log}");
}

/// `--check` finds what the load would refuse (issue 30): the rows go in inside a transaction
/// rolled back, so a key already in the table, a foreign-key miss and a CHECK violation end
/// it with exit 4; with `--max-errors` every refused row is in the reject file (exit 6); the
/// table's rows and definition are as they were, `--truncate` included. A MyISAM table keeps
/// what is written: its check stays on the client, and the summary says which checks it skipped.
#[test]
fn check_finds_what_mariadb_would_refuse() {
    let db = MariaDb::fresh("check");
    db.exec(
        "CREATE TABLE parent (id INT PRIMARY KEY); INSERT INTO parent VALUES (1), (2); \
         CREATE TABLE t (id INT PRIMARY KEY, p INT, n INT, KEY t_n (n), \
           CONSTRAINT t_p FOREIGN KEY (p) REFERENCES parent (id), CONSTRAINT t_n_check CHECK (n >= 0)); \
         INSERT INTO t VALUES (1, 1, 1), (2, 2, 2); \
         CREATE TABLE m (id INT PRIMARY KEY, n INT) ENGINE=MyISAM; INSERT INTO m VALUES (1, 1);",
    );
    let dir = shared_dir();
    let (rows, definitions) = (db.rows("SELECT * FROM t ORDER BY id"), definition(&db, "t"));
    let check = |csv: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["--check"];
        args.extend_from_slice(extra);
        let (code, out) = load(csv, &db, "t", &args);
        assert_eq!(db.rows("SELECT * FROM t ORDER BY id"), rows, "{out}");
        assert_eq!(definition(&db, "t"), definitions, "{out}");
        (code, out)
    };
    let again = write(dir.path(), "again.csv", "id,p,n\n3,1,3\n1,1,1\n");
    let (code, out) = check(&again, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("again.csv") && out.contains("Duplicate entry '1'"),
        "{out}"
    );
    let orphan = write(dir.path(), "orphan.csv", "id,p,n\n3,9,3\n");
    let (code, out) = check(&orphan, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("foreign key constraint fails"), "{out}");
    let negative = write(dir.path(), "negative.csv", "id,p,n\n3,1,-1\n");
    let (code, out) = check(&negative, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("t_n_check"), "{out}");
    let mixed = write(
        dir.path(),
        "mixed.csv",
        "id,p,n\n3,1,3\n1,1,1\n4,9,4\n5,1,-5\n6,2,6\n",
    );
    let rejects = dir.path().join("mixed.rejects");
    let rejects_arg = rejects.to_str().unwrap();
    let (code, out) = check(&mixed, &["--max-errors", "10", "--rejects", rejects_arg]);
    assert_eq!(code, 6, "{out}");
    assert!(
        out.contains("checked 5 rows") && out.contains("3 would be refused"),
        "{out}"
    );
    assert!(out.contains("nothing was written"), "{out}");
    let refused = std::fs::read_to_string(&rejects).unwrap();
    let mut refused: Vec<&str> = refused.lines().collect();
    refused.sort();
    assert_eq!(refused, ["1,1,1", "4,9,4", "5,1,-5", "id,p,n"], "{out}");
    let (code, out) = check(&mixed, &["--max-errors", "10", "--json"]);
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("\"loaded\":false"), "{out}");
    // --truncate: checked against the table emptied in the transaction rolled back.
    let (code, out) = check(&again, &["--truncate"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&orphan, &["--truncate"]);
    assert_eq!(code, 4, "{out}");
    // MyISAM: nothing written, and the summary says what was not checked.
    let known = write(dir.path(), "known.csv", "id,n\n2,2\n1,1\n");
    let (code, out) = load(&known, &db, "m", &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("not transactional") && out.contains("checks were not made"),
        "{out}"
    );
    assert_eq!(db.rows("SELECT * FROM m"), ["1\t1"], "{out}");
}

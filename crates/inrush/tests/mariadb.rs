//! Loads into MariaDB, as a user runs them, against the server's own `LOAD DATA INFILE` under
//! strict mode: the same rows for good input; bad rows reported, kept out, never changed.

use inrush_testkit::MariaDb;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

fn inrush(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run inrush");
    let printed = [out.stdout, out.stderr].concat();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&printed).into_owned(),
    )
}

/// `inrush load CSV --header --to DB --table t` plus `extra`.
fn load(csv: &Path, db: &MariaDb, table: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "load",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &db.url,
        "--table",
        table,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    inrush(&args)
}

/// A directory the server (another user) can read the test's files in.
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// The server's own strict-mode `LOAD DATA INFILE` of a CSV with a header, NULL as `NULL`.
fn server_load(db: &MariaDb, csv: &Path, table: &str) -> Result<(), String> {
    db.try_exec(&format!(
        "SET SESSION sql_mode = CONCAT_WS(',', @@sql_mode, 'STRICT_ALL_TABLES'); \
         LOAD DATA INFILE '{}' INTO TABLE {table} CHARACTER SET utf8mb4 \
         FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' \
         LINES TERMINATED BY '\\n' IGNORE 1 LINES",
        csv.display()
    ))
}

const TYPES: &str =
    "(id INT PRIMARY KEY, big BIGINT UNSIGNED, tiny TINYINT(1), amount DECIMAL(10,2), \
    dbl DOUBLE, name VARCHAR(20), code CHAR(3), body TEXT, day DATE, at DATETIME(3), t TIME, \
    kind ENUM('a','b','c'), doc JSON)";

#[test]
fn good_rows_load_as_the_servers_load_data_reads_them() {
    let db = MariaDb::fresh("types");
    db.exec(&format!(
        "CREATE TABLE ours {TYPES}; CREATE TABLE theirs {TYPES}"
    ));
    let dir = shared_dir();
    let mut csv = String::from("id,big,tiny,amount,dbl,name,code,body,day,at,t,kind,doc\n");
    let bodies = [
        "plain",
        "tab\there",
        "back\\slash",
        "\"quoted\"",
        "line\nbreak",
        "été €",
        "😀",
        "carriage\rreturn",
        "comma, inside",
        "\\N",
        "",
    ];
    for i in 0..400u64 {
        let body = bodies[i as usize % bodies.len()];
        let quoted = format!("\"{}\"", body.replace('"', "\"\""));
        csv.push_str(&format!(
            "{i},{},{},{}.{:02},{},n{i},c{},{quoted},2024-{:02}-{:02},2024-01-02 03:04:05.{:03},{:02}:30:00,{},{}\n",
            u64::MAX - i * 7919,
            i % 2,
            i as i64 * 37 - 5000,
            i % 100,
            (i as f64) * 1.25e-3 - 0.5,
            i % 10,
            1 + i % 12,
            1 + i % 28,
            i % 1000,
            i % 24,
            ["a", "b", "c"][i as usize % 3],
            match i % 4 {
                0 => "NULL".to_string(),
                1 => "\"{\"\"k\"\": [1, 2]}\"".to_string(),
                2 => format!("{i}"),
                _ => "\"\"\"s\"\"\"".to_string(),
            }
        ));
    }
    let csv = write(dir.path(), "good.csv", &csv);
    server_load(&db, &csv, "theirs").expect("the server loads every row");
    let (code, out) = load(&csv, &db, "ours", &["--null", "NULL", "--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("LOAD DATA LOCAL over 2 connections"), "{out}");
    let ours = db.rows("SELECT * FROM ours ORDER BY id");
    let theirs = db.rows("SELECT * FROM theirs ORDER BY id");
    assert_eq!(ours.len(), 400);
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
    }
}

#[test]
fn bad_rows_are_reported_and_nothing_changes_silently() {
    let db = MariaDb::fresh("bad");
    db.exec(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL, score DECIMAL(5,2), \
           born DATE, kind ENUM('a','b')); INSERT INTO t VALUES (100, 'kept', 1, '2000-01-01', 'a')",
    );
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "in.csv",
        "id,name,score,born,kind\n\
         1,ann,1.5,2020-01-02,a\n\
         2,bobbybob,2,2020-01-03,b\n\
         3,cy,12345.6,2021-03-04,a\n\
         4,dee,3,2020-02-30,a\n\
         5,eve,4,2020-01-05,z\n\
         6,,5,2020-01-06,b\n\
         100,dup,6,2020-01-07,a\n\
         7,gus,x,2020-01-08,a\n\
         8,hal,8,2020-01-09,b\n",
    );
    let before = db.rows("SELECT * FROM t ORDER BY id");
    let (code, out) = load(&csv, &db, "t", &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("in.csv:3, column name, value \"bobbybob\": Data too long"),
        "{out}"
    );
    assert_eq!(db.rows("SELECT * FROM t ORDER BY id"), before);

    let (code, out) = load(&csv, &db, "t", &["--max-errors", "10"]);
    assert_eq!(code, 6, "{out}");
    assert_eq!(
        db.rows("SELECT * FROM t ORDER BY id"),
        [
            "1\tann\t1.50\t2020-01-02\ta",
            "8\thal\t8.00\t2020-01-09\tb",
            "100\tkept\t1.00\t2000-01-01\ta",
        ]
    );
    let rejects = std::fs::read_to_string(dir.path().join("in.csv.rejects")).unwrap();
    let mut lines: Vec<&str> = rejects.lines().skip(1).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "100,dup,6,2020-01-07,a",
            "2,bobbybob,2,2020-01-03,b",
            "3,cy,12345.6,2021-03-04,a",
            "4,dee,3,2020-02-30,a",
            "5,eve,4,2020-01-05,z",
            "6,,5,2020-01-06,b",
            "7,gus,x,2020-01-08,a",
        ]
    );
    let log = std::fs::read_to_string(dir.path().join("in.csv.rejects.log")).unwrap();
    for reason in [
        "Data too long",
        "Out of range value",
        "Incorrect date value",
        "not a member of its enum",
        "cannot be null",
        "Duplicate entry '100'",
        "Incorrect decimal value",
    ] {
        assert!(log.contains(reason), "{reason} not in {log}");
    }
}

#[test]
fn many_rows_over_several_connections_equal_the_servers_load() {
    let db = MariaDb::fresh("many");
    let ddl = "(fieldint1 INT NOT NULL, fieldint2 INT NOT NULL, fieldint3 INT NOT NULL, \
               fieldchar1 VARCHAR(100) NOT NULL, fieldchar2 VARCHAR(100) NOT NULL, \
               fieldchar3 VARCHAR(100) NOT NULL, KEY (fieldint2))";
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    let dir = shared_dir();
    let csv = dir.path().join("g.csv");
    let (code, out) = inrush(&[
        "gen",
        "--rows",
        "60000",
        "--header",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o644)).unwrap();
    server_load(&db, &csv, "theirs").unwrap();
    let (code, out) = load(
        &csv,
        &db,
        "ours",
        &["--connections", "3", "--block-size", "65536"],
    );
    assert_eq!(code, 0, "{out}");
    let fingerprint = |t: &str| {
        db.rows(&format!(
            "SELECT COUNT(*), SUM(fieldint1), SUM(fieldint2), SUM(fieldint3), \
               SUM(CRC32(CONCAT(fieldchar1, fieldchar2, fieldchar3))) FROM {t}"
        ))
    };
    assert_eq!(fingerprint("ours"), fingerprint("theirs"));
}

#[test]
fn on_conflict_skip_keeps_the_first_and_update_the_last() {
    let db = MariaDb::fresh("conflict");
    db.exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO t VALUES (1, 'old')");
    let dir = shared_dir();
    let csv = write(dir.path(), "in.csv", "id,v\n1,a\n2,b\n2,c\n3,d\n");
    let (code, out) = load(&csv, &db, "t", &["--on-conflict", "skip"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        db.rows("SELECT * FROM t ORDER BY id"),
        ["1\told", "2\tb", "3\td"]
    );
    let (code, out) = load(&csv, &db, "t", &["--on-conflict", "update"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        db.rows("SELECT * FROM t ORDER BY id"),
        ["1\ta", "2\tc", "3\td"]
    );
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

/// `SHOW CREATE TABLE` without the AUTO_INCREMENT counter, which a load moves on.
fn definition(db: &MariaDb, table: &str) -> String {
    let shown = db.rows(&format!("SHOW CREATE TABLE {table}")).join("\n");
    shown
        .split(' ')
        .filter(|word| !word.starts_with("AUTO_INCREMENT="))
        .collect::<Vec<_>>()
        .join(" ")
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
    let (code, out) = load(&good, &db, "t", &[]);
    assert_eq!(code, 0, "{out}");
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
    let ddl = "(fieldint1 INT NOT NULL, fieldint2 INT NOT NULL, fieldint3 INT NOT NULL, \
               fieldchar1 VARCHAR(100) NOT NULL, fieldchar2 VARCHAR(100) NOT NULL, \
               fieldchar3 VARCHAR(100) NOT NULL)";
    db.exec(&format!(
        "CREATE TABLE ours {ddl}; CREATE TABLE theirs {ddl}"
    ));
    let dir = shared_dir();
    let csv = dir.path().join("g.csv");
    let (code, out) = inrush(&[
        "gen",
        "--rows",
        "200000",
        "--header",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o644)).unwrap();
    server_load(&db, &csv, "theirs").unwrap();
    let args = [
        "load",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &db.url,
        "--table",
        "ours",
        "--no-progress",
        "--resume",
        "--block-size",
        "65536",
        "--connections",
        "2",
    ];
    let mut child = Command::new(BIN)
        .args(args)
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
    let fingerprint = |t: &str| {
        db.rows(&format!(
            "SELECT COUNT(*), SUM(fieldint1), SUM(fieldint2), SUM(fieldint3), \
               SUM(CRC32(CONCAT(fieldchar1, fieldchar2, fieldchar3))) FROM {t}"
        ))
    };
    assert_eq!(fingerprint("ours"), fingerprint("theirs"));
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

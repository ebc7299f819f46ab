//! Moving a table between engines with `--from-query`: MariaDB into PostgreSQL (what pgloader
//! is used for) and PostgreSQL into MariaDB, with `--create` typing the new table as a
//! migrating user expects, on real servers. Every value is compared with what it was.

use inrush_testkit::{Db, MariaDb};

fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(env!("CARGO_BIN_EXE_inrush"), args)
}

/// One column of every kind MariaDB has, its values at their edges.
const MARIADB_SOURCE: &str = "CREATE TABLE src (
    id INT PRIMARY KEY, flag TINYINT(1), tiny TINYINT, utiny TINYINT UNSIGNED,
    small SMALLINT, usmall SMALLINT UNSIGNED, med MEDIUMINT, i INT, ui INT UNSIGNED,
    big BIGINT, ubig BIGINT UNSIGNED, amount DECIMAL(10,2), uamount DECIMAL(5,0) UNSIGNED,
    f FLOAT, dbl DOUBLE, day DATE, at DATETIME, at6 DATETIME(6), ts TIMESTAMP NULL, t TIME,
    yr YEAR, code CHAR(3), name VARCHAR(20), body TEXT, kind ENUM('red','green'),
    tags SET('a','b'), doc JSON, blob_ BLOB, vb VARBINARY(8), bit1 BIT(1), bits BIT(10));
  SET time_zone = '+00:00';
  INSERT INTO src VALUES
   (1, 1, -128, 255, -32768, 65535, -8388608, -2147483648, 4294967295,
    -9223372036854775808, 18446744073709551615, -12345678.90, 99999, 1.5, 2.25,
    '2024-02-29', '2024-01-02 03:04:05', '2024-01-02 03:04:05.123456', '2024-06-01 12:00:00',
    '23:59:59', 2024, 'ab', 'a,\"b\"\nc', 'ünïcödé ✓', 'green', 'a,b', '{\"k\": [1, 2]}',
    x'00ff10', x'', b'1', b'1000000101'),
   (2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '1000-01-01', '9999-12-31 23:59:59',
    '1000-01-01 00:00:00.000001', '1970-01-01 00:00:01', '00:00:00', 1901, '', '', '',
    'red', '', 'null', '', x'41', b'0', b'0'),
   (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL)";

/// `inrush load --from-query SQL --from FROM --to TO --table TABLE` and `extra`.
fn migrate(sql: &str, from: &str, to: &str, table: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "load",
        "--from-query",
        sql,
        "--from",
        from,
        "--to",
        to,
        "--table",
        table,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    inrush(&args)
}

#[test]
fn a_mariadb_table_moves_into_postgresql_with_the_types_a_migrating_user_expects() {
    let source = MariaDb::fresh("migrate_from");
    source.exec(MARIADB_SOURCE);
    let target = Db::fresh("migrate_to");
    let (code, out) = migrate(
        "SELECT * FROM src",
        &source.url,
        &target.conninfo,
        "dst",
        &["--create"],
    );
    assert_eq!(code, 0, "{out}");

    let types = target.text(
        "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) \
         FROM pg_attribute WHERE attrelid = 'dst'::regclass AND attnum > 0",
    );
    assert_eq!(
        types,
        "id integer, flag boolean, tiny smallint, utiny smallint, small smallint, \
         usmall integer, med integer, i integer, ui bigint, big bigint, ubig numeric(20,0), \
         amount numeric(10,2), uamount numeric(5,0), f real, dbl double precision, day date, \
         at timestamp without time zone, at6 timestamp without time zone, \
         ts timestamp with time zone, t time without time zone, yr smallint, \
         code character(3), name character varying(20), body text, kind text, tags text, \
         doc jsonb, blob_ bytea, vb bytea, bit1 boolean, bits bit(10)"
    );

    // Every value as PostgreSQL prints it (the timestamp with time zone in UTC), NULL as `-`.
    let rows = target.rows(
        "SELECT concat_ws('|', id, flag, tiny, utiny, small, usmall, med, i, ui, big, ubig, \
         amount, uamount, f, dbl, day, at, at6, ts AT TIME ZONE 'UTC', t, yr, code, \
         coalesce(name, '-'), body, kind, tags, doc, blob_, vb, bit1, bits) FROM dst ORDER BY id",
    );
    let rows: Vec<_> = rows.into_iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(
        rows,
        [
            "1|t|-128|255|-32768|65535|-8388608|-2147483648|4294967295|-9223372036854775808|\
             18446744073709551615|-12345678.90|99999|1.5|2.25|2024-02-29|2024-01-02 03:04:05|\
             2024-01-02 03:04:05.123456|2024-06-01 12:00:00|23:59:59|2024|ab |a,\"b\"\nc|\
             ünïcödé ✓|green|a,b|{\"k\": [1, 2]}|\\x00ff10|\\x|t|1000000101",
            "2|f|0|0|0|0|0|0|0|0|0|0.00|0|0|0|1000-01-01|9999-12-31 23:59:59|\
             1000-01-01 00:00:00.000001|1970-01-01 00:00:01|00:00:00|1901|   |||red||null|\
             \\x|\\x41|f|0000000000",
            "3|-",
        ]
    );
}

/// What PostgreSQL cannot hold is a bad row, reported with its reason, never changed: zero
/// dates (unless `--zero-dates-null` asks for NULL) and times past 24 hours.
#[test]
fn zero_dates_are_bad_rows_unless_asked_to_be_null() {
    let source = MariaDb::fresh("migrate_zero");
    source.exec(
        "CREATE TABLE z (id INT, day DATE, at DATETIME, t TIME); SET sql_mode = ''; \
         INSERT INTO z VALUES (1, '2024-01-01', '2024-01-01 10:00:00', '10:00:00'), \
         (2, '0000-00-00', '0000-00-00 00:00:00', '10:00:00'), \
         (3, '2024-05-00', '2024-01-01 10:00:00', '10:00:00'), \
         (4, '2024-01-01', '2024-01-01 10:00:00', '838:59:59')",
    );
    for (flag, loaded) in [
        (None, "1|2024-01-01|2024-01-01 10:00:00"),
        (
            Some("--zero-dates-null"),
            "1|2024-01-01|2024-01-01 10:00:00\n2|-|-\n3|-|2024-01-01 10:00:00",
        ),
    ] {
        let target = Db::fresh("migrate_zero");
        let dir = tempfile::tempdir().unwrap();
        let rejects = dir.path().join("z.rejects");
        let mut extra = vec![
            "--create",
            "--max-errors",
            "10",
            "--rejects",
            rejects.to_str().unwrap(),
        ];
        extra.extend(flag);
        let sql = "SELECT * FROM z ORDER BY id";
        let (code, out) = migrate(sql, &source.url, &target.conninfo, "z", &extra);
        assert_eq!(code, 6, "{flag:?}: {out}");
        let rows = target.text(
            "SELECT string_agg(concat_ws('|', id, coalesce(day::text, '-'), coalesce(at::text, '-')), \
             E'\\n' ORDER BY id) FROM z",
        );
        assert_eq!(rows, loaded, "{flag:?}");
        let log = std::fs::read_to_string(dir.path().join("z.rejects.log")).unwrap();
        assert!(log.contains("838:59:59"), "{log}");
        if flag.is_none() {
            assert!(
                log.contains("0000-00-00") && log.contains("2024-05-00"),
                "{log}"
            );
        }
    }
}

/// MariaDB's rows reach the load value by value, in blocks: a value no PostgreSQL text can hold
/// (a NUL byte) or its type refuses is a bad row named by its row number, column and value,
/// counted across blocks, and every other row arrives.
#[test]
fn a_bad_mariadb_value_is_a_bad_row_named_by_row_and_column() {
    let source = MariaDb::fresh("migrate_nul");
    // 60,000 rows of about 40 bytes: several blocks of rows. Rows 2 and 50,000 hold a NUL,
    // row 45,000 a zero date.
    source.exec(
        "CREATE TABLE n (id INT PRIMARY KEY, s VARCHAR(40), d DATE); SET sql_mode = ''; \
         INSERT INTO n SELECT seq, CONCAT('some text of row ', seq), '2024-01-01' \
           FROM seq_1_to_60000; \
         UPDATE n SET s = CONCAT('a', CHAR(0), 'b') WHERE id IN (2, 50000); \
         UPDATE n SET d = '0000-00-00' WHERE id = 45000",
    );
    let target = Db::fresh("migrate_nul");
    let dir = tempfile::tempdir().unwrap();
    let rejects = dir.path().join("n.rejects");
    let (code, out) = migrate(
        "SELECT * FROM n ORDER BY id",
        &source.url,
        &target.conninfo,
        "n",
        &[
            "--create",
            "--max-errors",
            "5",
            "--rejects",
            rejects.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 6, "{out}");
    assert_eq!(
        target.text("SELECT concat_ws(' ', count(*), sum(id), min(s), max(d)) FROM n"),
        format!(
            "59997 {} some text of row 1 2024-01-01",
            60000u64 * 60001 / 2 - 2 - 50000 - 45000
        )
    );
    let log = std::fs::read_to_string(dir.path().join("n.rejects.log")).unwrap();
    for (row, column) in [(2, "s"), (45000, "d"), (50000, "s")] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!("\"row\":{row},")))
            .unwrap_or_else(|| panic!("no row {row} in {log}"));
        assert!(line.contains(&format!("\"column\":\"{column}\"")), "{line}");
    }
    let rejected = std::fs::read_to_string(&rejects).unwrap();
    assert!(
        rejected.contains("\"45000\",\"some text of row 45000\",\"0000-00-00\""),
        "{rejected}"
    );
}

/// `--on-conflict` keeps a MariaDB query's order, across its blocks of rows: `update` leaves
/// each key's last row, `skip` its first.
#[test]
fn on_conflict_keeps_the_order_of_a_mariadb_query() {
    let source = MariaDb::fresh("migrate_conflict");
    // 60,000 rows, several blocks; each key k in 1..=1000 comes 60 times, its row numbers
    // (n) rising.
    source.exec(
        "CREATE TABLE d (n INT PRIMARY KEY, k INT, v VARCHAR(40)); \
         INSERT INTO d SELECT seq, (seq - 1) % 1000 + 1, CONCAT('version ', seq) \
           FROM seq_1_to_60000",
    );
    for (mode, want) in [("update", "59002 60000"), ("skip", "2 1000")] {
        let target = Db::fresh("migrate_conflict");
        target.exec("CREATE TABLE d (k integer PRIMARY KEY, n integer, v text)");
        target.exec("INSERT INTO d VALUES (1, 0, 'there before')");
        let (code, out) = migrate(
            "SELECT k, n, v FROM d ORDER BY n",
            &source.url,
            &target.conninfo,
            "d",
            &["--on-conflict", mode],
        );
        assert_eq!(code, 0, "{mode}: {out}");
        let kept = target.text("SELECT concat_ws(' ', min(n), max(n)) FROM d WHERE k > 1");
        assert_eq!(kept, want, "{mode}");
        let first = target.text("SELECT v FROM d WHERE k = 1");
        let first_want = if mode == "update" {
            "version 59001"
        } else {
            "there before"
        };
        assert_eq!(first, first_want, "{mode}");
        assert_eq!(target.int("SELECT count(*) FROM d"), 1000, "{mode}");
    }
}

/// `--split-by` cuts the query into key ranges, one MariaDB stream per connection; every row
/// arrives once.
#[test]
fn a_split_mariadb_query_arrives_whole_over_several_connections() {
    let source = MariaDb::fresh("migrate_split");
    source.exec(
        "CREATE TABLE big (id BIGINT PRIMARY KEY, n INT, s VARCHAR(20)); \
         INSERT INTO big SELECT seq, seq * 7 % 1000, CONCAT('row ', seq) FROM seq_1_to_30000; \
         INSERT INTO big VALUES (-5, NULL, NULL)",
    );
    let target = Db::fresh("migrate_split");
    target.exec("CREATE TABLE big (id bigint, n integer, s text)");
    let (code, out) = migrate(
        "SELECT * FROM big",
        &source.url,
        &target.conninfo,
        "big",
        &["--split-by", "id", "--connections", "3"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        target.text("SELECT concat_ws(' ', count(*), count(DISTINCT id), sum(id), sum(n), count(s)) FROM big"),
        source.rows("SELECT CONCAT_WS(' ', COUNT(*), COUNT(DISTINCT id), SUM(id), SUM(n), COUNT(s)) FROM big")[0]
    );
}

/// A query the source refuses fails the load as a server error (exit 3) with the server's
/// message, before anything is made.
#[test]
fn a_query_mariadb_refuses_fails_with_its_message() {
    let source = MariaDb::fresh("migrate_bad");
    let target = Db::fresh("migrate_bad");
    let (code, out) = migrate(
        "SELECT * FROM missing",
        &source.url,
        &target.conninfo,
        "t",
        &["--create"],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("missing' doesn't exist"), "{out}");
    assert_eq!(target.text("SELECT to_regclass('t') IS NULL"), "t");
}

/// A PostgreSQL table moves into MariaDB: `--create` types it in MariaDB's terms and every
/// value arrives as it was.
#[test]
fn a_postgresql_table_moves_into_mariadb() {
    let source = Db::fresh("migrate_pg");
    source.exec(
        "CREATE TABLE src (id integer, big bigint, amount numeric(10,2), body text, \
           name varchar(20), code char(3), flag boolean, day date, at timestamp(3), t time, \
           bytes bytea, doc jsonb, u uuid); \
         INSERT INTO src VALUES \
           (1, -9223372036854775808, -12345678.90, E'a,\"b\"\\n\\tc', 'ünïcödé', 'ab', true, \
            '2024-02-29', '2024-01-02 03:04:05.678', '23:59:59', '\\x00ff', '{\"k\": [1]}', \
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), \
           (2, 0, 0, '', '', '', false, '1000-01-01', '1970-01-01 00:00:00', '00:00:00', '\\x', \
            'null', NULL), \
           (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    );
    let target = MariaDb::fresh("migrate_pg");
    let (code, out) = migrate(
        "SELECT * FROM src",
        &source.conninfo,
        &target.url,
        "dst",
        &["--create"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        target.rows(
            "SELECT GROUP_CONCAT(CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE) ORDER BY ORDINAL_POSITION \
             SEPARATOR ', ') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'dst'"
        ),
        [
            "id int(11), big bigint(20), amount decimal(10,2), body longtext, name varchar(20), \
          code char(3), flag tinyint(1), day date, at datetime(3), t time(6), bytes longblob, \
          doc longtext, u char(36)"
        ]
    );
    assert_eq!(
        target.rows(
            "SELECT CONCAT_WS('|', id, big, amount, REPLACE(REPLACE(body, '\\n', '<nl>'), '\\t', '<tab>'), \
             name, code, flag, day, at, t, HEX(bytes), doc, u) FROM dst ORDER BY id"
        ),
        [
            "1|-9223372036854775808|-12345678.90|a,\"b\"<nl><tab>c|ünïcödé|ab|1|2024-02-29|\
             2024-01-02 03:04:05.678|23:59:59.000000|00FF|{\"k\": [1]}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "2|0|0.00||||0|1000-01-01|1970-01-01 00:00:00.000|00:00:00.000000||null",
            "3",
        ]
    );
}

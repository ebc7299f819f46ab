//! Moving a table between engines with `--from-query`: MariaDB into PostgreSQL (what pgloader
//! is used for) and PostgreSQL into MariaDB, with `--create` typing the new table as a
//! migrating user expects, on real servers. Every value is compared with what it was.

mod mariadb_common;

use inrush_testkit::{Db, MariaDb};
use mariadb_common::inrush;

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

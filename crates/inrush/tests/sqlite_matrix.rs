//! Every flag on every SQLite table shape: the combination matrix (`matrix.rs` is
//! PostgreSQL's, `mariadb_matrix.rs` MariaDB's).
//!
//! Each cell is a table shape (no key, an INTEGER PRIMARY KEY with a CHECK, a unique key beside
//! an AUTOINCREMENT key, a STRICT table, a foreign key, a trigger that refuses a row, a key that
//! another table references ON DELETE CASCADE), empty or holding rows, an input (clean, or with
//! a value no INTEGER takes, a date that does not exist, duplicate keys within the input and
//! against the rows already there, a CHECK, a foreign-key miss, the trigger's RAISE), read from
//! CSV or from Parquet (for the flags a columnar input is used with), and a set of flags. The real binary loads it with two workers in small blocks; the oracle is a model
//! of what each row becomes, stored by the `sqlite3` shell's `.import` (each field bound as
//! text) into a twin table of the same types. Each cell checks:
//! - the exit code, and for a combination refused up front (exit 2) the reason and an
//!   untouched table;
//! - the table against the twin, row for row, each value with its storage class;
//! - the reject file against the model's bad records;
//! - the referencing table's rows as they were, and no foreign key broken;
//! - the same schema as before the load (every table, index and trigger, as SQLite keeps its
//!   SQL).
//!
//! A bad input is loaded once with `--max-errors` (the good rows go in) and once without (the
//! load fails and the file is as it was).

mod matrix_model;
mod sqlite_common;

use matrix_model::*;
use rusqlite::Connection;
use sqlite_common::*;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No key; one secondary index.
    Plain,
    /// INTEGER PRIMARY KEY (the rowid), CHECK (n >= 0), a secondary index.
    Keyed,
    /// An AUTOINCREMENT key the input does not name, a unique key on its id.
    AutoIncrement,
    /// A STRICT table (no DATE type there: its dates are TEXT).
    Strict,
    /// A primary key and a foreign key n -> parent(id).
    ForeignKey,
    /// A primary key and a BEFORE INSERT trigger that refuses s = 'boom'.
    Trigger,
    /// A primary key that another table's key references ON DELETE CASCADE (its row points at
    /// the table's row -1 when the table holds rows).
    Referenced,
}

impl Shape {
    fn ddl(self) -> String {
        let cols = "id INTEGER, n INTEGER, s TEXT, d DATE";
        let keyed = "id INTEGER PRIMARY KEY, n INTEGER, s TEXT, d DATE";
        let index = "CREATE INDEX t_s ON t (s);";
        match self {
            Shape::Plain => format!("CREATE TABLE t ({cols}); {index}"),
            Shape::Keyed => format!(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER CONSTRAINT t_n CHECK (n >= 0), \
                 s TEXT, d DATE); {index}"
            ),
            Shape::AutoIncrement => format!(
                "CREATE TABLE t (pk INTEGER PRIMARY KEY AUTOINCREMENT, {cols}, \
                 CONSTRAINT t_id UNIQUE (id)); {index}"
            ),
            Shape::Strict => format!(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, s TEXT, d TEXT) STRICT; {index}"
            ),
            Shape::ForeignKey => format!(
                "CREATE TABLE parent (id INTEGER PRIMARY KEY); \
                 WITH RECURSIVE g(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM g WHERE x < {}) \
                 INSERT INTO parent SELECT x FROM g; \
                 CREATE TABLE t (id INTEGER PRIMARY KEY, \
                   n INTEGER CONSTRAINT t_fk REFERENCES parent (id), s TEXT, d DATE); {index}",
                PARENTS - 1
            ),
            Shape::Trigger => format!(
                "CREATE TABLE t ({keyed}); {index} \
                 CREATE TRIGGER t_boom BEFORE INSERT ON t WHEN NEW.s = 'boom' \
                 BEGIN SELECT RAISE(ABORT, 'boom'); END;"
            ),
            Shape::Referenced => format!(
                "CREATE TABLE t ({keyed}); {index} \
                 CREATE TABLE kid (id INTEGER PRIMARY KEY, \
                   p INTEGER CONSTRAINT kid_p REFERENCES t (id) ON DELETE CASCADE);"
            ),
        }
    }

    /// The oracle's table: the same column types, no keys.
    fn twin_ddl(self) -> &'static str {
        match self {
            Shape::Strict => "CREATE TABLE twin (id INTEGER, n INTEGER, s TEXT, d TEXT) STRICT",
            _ => "CREATE TABLE twin (id INTEGER, n INTEGER, s TEXT, d DATE)",
        }
    }

    fn unique_id(self) -> bool {
        self != Shape::Plain
    }

    /// Why `flags` cannot work on this shape and input (exit 2 before anything happens).
    fn refusal(self, flags: Flags, parquet: bool) -> Option<&'static str> {
        refusal(flags, parquet, self.unique_id(), self == Shape::Referenced)
    }
}

const FLAG_SETS: &[Flags] = &[
    Flags(&[]),
    Flags(&["--workers", "1"]),
    Flags(&["--on-conflict", "skip"]),
    Flags(&["--on-conflict", "update"]),
    Flags(&["--truncate"]),
    Flags(&["--resume"]),
    Flags(&["--keep-indexes"]),
    Flags(&["--check"]),
    Flags(&["--truncate", "--on-conflict", "update"]),
    Flags(&["--truncate", "--keep-indexes"]),
];

/// The flag sets a Parquet input is loaded with.
const PARQUET_SETS: &[Flags] = &[
    Flags(&[]),
    Flags(&["--on-conflict", "skip"]),
    Flags(&["--on-conflict", "update"]),
    Flags(&["--truncate"]),
    Flags(&["--resume"]),
    Flags(&["--check"]),
];

/// The odd records of a bad input: the common ones and a date no DATE column takes.
fn odd_records() -> Vec<Odd> {
    let mut odd = common_odd();
    odd.push((ROWS + 2, "1", "feb30", "2024-02-30", Kind::BadDate));
    odd
}

/// Whether `record` is a bad row of this cell (set aside, or failing the load). `--check`
/// inserts the rows in a transaction it rolls back, so it meets what SQLite refuses as the
/// load would.
fn is_bad(record: &Record, shape: Shape, flags: Flags, pre: bool) -> bool {
    let existing = pre && !flags.truncate();
    let inserted = true;
    match record.kind {
        Kind::Good => false,
        Kind::BadValue => true,
        Kind::BadDate => shape != Shape::Strict,
        // TEXT takes any length.
        Kind::TooLong => false,
        Kind::DupInput => inserted && shape.unique_id() && flags.conflict().is_none(),
        Kind::DupExisting => {
            inserted && existing && shape.unique_id() && flags.conflict().is_none()
        }
        // n = -1 has no parent row either.
        Kind::Check => inserted && matches!(shape, Shape::Keyed | Shape::ForeignKey),
        Kind::Orphan => inserted && shape == Shape::ForeignKey,
        Kind::Boom => inserted && shape == Shape::Trigger,
    }
}

/// The table's input columns, typed, in one order for both tables.
fn rows(db: &Path, table: &str) -> Vec<String> {
    typed_rows(db, table, &COLUMNS, "id, n, s, d")
}

/// Stores `lines` in a twin of the table's types as `.import` would; its rows.
fn twin(dir: &Path, shape: Shape, lines: &[String]) -> Vec<String> {
    let db = dir.join("twin.db");
    let _ = std::fs::remove_file(&db);
    exec(&db, shape.twin_ddl());
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let csv = write(dir, "twin.csv", &format!("id,n,s,d\n{body}"));
    shell_import(&csv, &db, "twin");
    rows(&db, "twin")
}

/// Every table, index and trigger as SQLite keeps its SQL (inrush's own ledger aside).
fn schema(db: &Path) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema \
             WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'inrush_%' ORDER BY type, name",
        )
        .unwrap();
    let lines = stmt.query_map([], |r| r.get(0)).unwrap();
    lines.map(Result::unwrap).collect()
}

fn broken_keys(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap()
}

/// One cell; panics with the cell's name and the load's output on any difference.
fn cell(shape: Shape, flags: Flags, parquet: bool, pre: bool, bad: bool, max_errors: bool) {
    let name = format!(
        "{shape:?}{} {} {} {} {}",
        if parquet { " from Parquet" } else { "" },
        flags.0.join(" "),
        if pre { "pre" } else { "empty" },
        if bad { "bad input" } else { "clean input" },
        if max_errors { "--max-errors" } else { "" }
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(&db, &shape.ddl());
    if pre {
        let values: Vec<String> = (1..=PRE)
            .map(|k| {
                let (id, n, s, d) = good_row(-k);
                format!("({id}, {n}, '{s}', '{d}')")
            })
            .collect();
        exec(
            &db,
            &format!("INSERT INTO t (id, n, s, d) VALUES {}", values.join(", ")),
        );
        if shape == Shape::Referenced {
            exec(&db, "INSERT INTO kid VALUES (1, -1)");
        }
    }
    let kid = || match shape {
        Shape::Referenced => typed_rows(&db, "kid", &["id", "p"], "id"),
        _ => Vec::new(),
    };
    let before_kid = kid();
    let before_schema = schema(&db);
    let before_rows = rows(&db, "t");
    let records = input(&match bad {
        true => odd_records(),
        false => Vec::new(),
    });
    let input = write_input(dir.path(), &records, parquet);
    let args = cell_args(flags, "--workers", max_errors);
    let (code, out) = load(&input, &db, &args);
    let is_bad = |r: &Record| is_bad(r, shape, flags, pre);
    assert_eq!(schema(&db), before_schema, "{name}: schema\n{out}");
    assert_eq!(kid(), before_kid, "{name}: the referencing table\n{out}");
    assert_eq!(broken_keys(&db), 0, "{name}: foreign keys\n{out}");
    let model = Model {
        records: &records,
        unique_id: shape.unique_id(),
        flags,
        parquet,
        pre,
        max_errors,
        is_bad: &is_bad,
    };
    let loaded = Loaded {
        name: &name,
        code,
        out: &out,
        input: &input,
    };
    judge(
        &model,
        &loaded,
        shape.refusal(flags, parquet),
        &before_rows,
        || rows(&db, "t"),
        |lines| twin(dir.path(), shape, lines),
    );
}

fn shape_matrix(shape: Shape) {
    every_cell(
        FLAG_SETS,
        PARQUET_SETS,
        |flags, parquet, pre, bad, max_errors| cell(shape, flags, parquet, pre, bad, max_errors),
    );
}

#[test]
fn plain_table() {
    shape_matrix(Shape::Plain);
}

#[test]
fn integer_primary_key_and_check() {
    shape_matrix(Shape::Keyed);
}

#[test]
fn unique_key_beside_an_autoincrement_key() {
    shape_matrix(Shape::AutoIncrement);
}

#[test]
fn strict_table() {
    shape_matrix(Shape::Strict);
}

#[test]
fn foreign_key() {
    shape_matrix(Shape::ForeignKey);
}

#[test]
fn trigger_that_refuses_a_row() {
    shape_matrix(Shape::Trigger);
}

#[test]
fn referenced_by_a_key_that_cascades() {
    shape_matrix(Shape::Referenced);
}

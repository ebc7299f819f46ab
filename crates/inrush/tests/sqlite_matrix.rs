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

mod sqlite_common;

use rusqlite::Connection;
use sqlite_common::*;
use std::path::Path;

/// Rows of the clean input: several 2 KiB blocks for each of two workers.
const ROWS: i64 = 600;
const BLOCK: &str = "2048";
/// Rows in a non-empty table before the load: ids -1..=-PRE.
const PRE: i64 = 20;
/// Parent keys a foreign key may reference: n in 0..PARENTS.
const PARENTS: i64 = 50;
/// The columns the input names, as the table and its twin are compared.
const COLUMNS: [&str; 4] = ["id", "n", "s", "d"];

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
        if parquet && flags.has("--resume") {
            return Some("--resume works on CSV and JSON lines, not columnar files");
        }
        match flags.conflict() {
            Some(_) if flags.truncate() => Some("--on-conflict cannot be combined with --truncate"),
            Some(_) if !self.unique_id() => {
                Some("has no primary key or unique index for rows to conflict on")
            }
            // Its DELETE would delete the other table's rows.
            _ if self == Shape::Referenced && flags.truncate() => {
                Some("--truncate: deletes the rows of")
            }
            _ => None,
        }
    }
}

/// What a record of the input is, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Good,
    /// A value no INTEGER column takes.
    BadValue,
    /// February 30th: refused by a DATE column, kept as text by a STRICT table's TEXT.
    BadDate,
    /// An id already earlier in the input.
    DupInput,
    /// An id of a row already in the table (when it holds rows).
    DupExisting,
    /// n < 0 against the Keyed shape's CHECK.
    Check,
    /// n with no parent row.
    Orphan,
    /// s = 'boom', which the Trigger shape's trigger refuses.
    Boom,
}

struct Record {
    id: i64,
    line: String,
    kind: Kind,
}

fn good_row(id: i64) -> (i64, i64, String, String) {
    let n = id.rem_euclid(PARENTS);
    (
        id,
        n,
        format!("s{id}"),
        format!(
            "2024-{:02}-{:02}",
            1 + id.rem_euclid(12),
            1 + id.rem_euclid(28)
        ),
    )
}

fn line(id: i64, n: &str, s: &str, d: &str) -> String {
    format!("{id},{n},{s},{d}")
}

/// The input's records: ids 1..=ROWS, and with `bad` one record of each kind spread through
/// them (so they fall in different blocks and workers).
fn input(bad: bool) -> Vec<Record> {
    let mut records: Vec<Record> = (1..=ROWS)
        .map(|id| {
            let (id, n, s, d) = good_row(id);
            Record {
                id,
                line: line(id, &n.to_string(), &s, &d),
                kind: Kind::Good,
            }
        })
        .collect();
    if bad {
        let odd = [
            (ROWS + 1, "x", "bad", "2024-01-01", Kind::BadValue),
            (ROWS + 2, "1", "feb30", "2024-02-30", Kind::BadDate),
            (7, "8", "dup7", "2024-02-02", Kind::DupInput),
            (-5, "3", "again", "2024-03-03", Kind::DupExisting),
            (ROWS + 3, "-1", "neg", "2024-01-01", Kind::Check),
            (ROWS + 4, "999", "orphan", "2024-01-01", Kind::Orphan),
            (ROWS + 5, "2", "boom", "2024-01-01", Kind::Boom),
        ];
        for (k, (id, n, s, d, kind)) in odd.into_iter().enumerate() {
            // After the id 7 they repeat, spread over the blocks.
            let at = 50 + k * (ROWS as usize - 60) / 7;
            let line = line(id, n, s, d);
            records.insert(at, Record { id, line, kind });
        }
    }
    records
}

/// The flags of one cell, besides the block size, the workers and `--max-errors`.
#[derive(Debug, Clone, Copy)]
struct Flags(&'static [&'static str]);

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

/// Rows per Parquet row group: several parts for two workers.
const PARQUET_GROUP: usize = 150;

impl Flags {
    fn has(self, flag: &str) -> bool {
        self.0.contains(&flag)
    }

    /// `--on-conflict`'s value.
    fn conflict(self) -> Option<&'static str> {
        let at = self.0.iter().position(|&f| f == "--on-conflict")?;
        self.0.get(at + 1).copied()
    }

    fn truncate(self) -> bool {
        self.has("--truncate")
    }
}

/// Whether `record` is a bad row of this cell (set aside, or failing the load). `--check`
/// reads the values only: what SQLite refuses as it inserts is not met.
fn is_bad(record: &Record, shape: Shape, flags: Flags, pre: bool) -> bool {
    let existing = pre && !flags.truncate();
    let inserted = !flags.has("--check");
    match record.kind {
        Kind::Good => false,
        Kind::BadValue => true,
        Kind::BadDate => shape != Shape::Strict,
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

/// The rows the table must hold after a successful load, as input lines.
fn expected(records: &[Record], shape: Shape, flags: Flags, pre: bool) -> Vec<String> {
    let mut rows: Vec<(i64, String)> = Vec::new();
    if pre && !flags.truncate() {
        rows.extend((1..=PRE).map(|k| {
            let (id, n, s, d) = good_row(-k);
            (id, line(id, &n.to_string(), &s, &d))
        }));
    }
    if flags.has("--check") {
        return rows.into_iter().map(|(_, line)| line).collect();
    }
    for record in records.iter().filter(|r| !is_bad(r, shape, flags, pre)) {
        let taken = shape
            .unique_id()
            .then(|| rows.iter().position(|(id, _)| *id == record.id));
        match (taken.flatten(), flags.conflict()) {
            (Some(_), Some("skip")) => {}
            (Some(at), _) => rows[at] = (record.id, record.line.clone()),
            (None, _) => rows.push((record.id, record.line.clone())),
        }
    }
    rows.into_iter().map(|(_, line)| line).collect()
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
    let records = input(bad);
    let text: Vec<&str> = records.iter().map(|r| r.line.as_str()).collect();
    let input = match parquet {
        true => {
            let path = dir.path().join("in.parquet");
            inrush_testkit::id_and_strings_parquet(&path, &COLUMNS, &text, PARQUET_GROUP);
            path
        }
        false => write(
            dir.path(),
            "in.csv",
            &format!("id,n,s,d\n{}\n", text.join("\n")),
        ),
    };
    let mut args = vec!["--block-size", BLOCK];
    if !flags.has("--workers") {
        args.extend_from_slice(&["--workers", "2"]);
    }
    args.extend_from_slice(flags.0);
    if max_errors {
        args.extend_from_slice(&["--max-errors", "100"]);
    }
    let (code, out) = load(&input, &db, &args);
    let bad_records: Vec<String> = records
        .iter()
        .filter(|r| is_bad(r, shape, flags, pre))
        .map(|r| match parquet {
            true => inrush_testkit::quoted_csv_line(&r.line),
            false => r.line.clone(),
        })
        .collect();

    assert_eq!(schema(&db), before_schema, "{name}: schema\n{out}");
    assert_eq!(kid(), before_kid, "{name}: the referencing table\n{out}");
    assert_eq!(broken_keys(&db), 0, "{name}: foreign keys\n{out}");
    if let Some(reason) = shape.refusal(flags, parquet) {
        assert_eq!(code, 2, "{name}: exit code\n{out}");
        assert!(out.contains(reason), "{name}: the reason\n{out}");
        same_rows(
            &rows(&db, "t"),
            &before_rows,
            &format!("{name}: rows\n{out}"),
        );
        return;
    }
    if bad_records.is_empty() || max_errors {
        let want = if bad_records.is_empty() { 0 } else { 6 };
        assert_eq!(code, want, "{name}: exit code\n{out}");
        let model = twin(dir.path(), shape, &expected(&records, shape, flags, pre));
        same_rows(&rows(&db, "t"), &model, &format!("{name}: rows\n{out}"));
        if !bad_records.is_empty() {
            let rejects = std::fs::read_to_string(input.with_extension(match parquet {
                true => "parquet.rejects",
                false => "csv.rejects",
            }))
            .unwrap_or_else(|e| panic!("{name}: the reject file: {e}\n{out}"));
            let mut got: Vec<&str> = rejects.lines().skip(1).collect();
            got.sort_unstable();
            let mut want: Vec<&str> = bad_records.iter().map(String::as_str).collect();
            want.sort_unstable();
            assert_eq!(got, want, "{name}: rejects\n{out}");
        }
    } else {
        assert_eq!(code, 4, "{name}: exit code\n{out}");
        let now = rows(&db, "t");
        if flags.has("--resume") {
            // The blocks committed before the bad one stay (the next run loads the rest),
            // and hold only good rows.
            let good = twin(dir.path(), shape, &expected(&records, shape, flags, pre));
            let stray: Vec<&String> = now.iter().filter(|r| !good.contains(r)).collect();
            assert!(
                stray.is_empty(),
                "{name}: rows not in the model {stray:?}\n{out}"
            );
        } else {
            same_rows(&now, &before_rows, &format!("{name}: rows\n{out}"));
        }
    }
}

/// Fails with the rows only one side has, not the hundreds both have.
fn same_rows(got: &[String], want: &[String], context: &str) {
    if got == want {
        return;
    }
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|row| !b.contains(row)).cloned().collect()
    };
    panic!(
        "{context}\nonly in the table: {:?}\nonly in the model: {:?}\n({} rows against {})",
        only(got, want),
        only(want, got),
        got.len(),
        want.len()
    );
}

fn shape_matrix(shape: Shape) {
    let csv = FLAG_SETS.iter().map(|f| (*f, false));
    for (flags, parquet) in csv.chain(PARQUET_SETS.iter().map(|f| (*f, true))) {
        for pre in [false, true] {
            cell(shape, flags, parquet, pre, false, false);
            cell(shape, flags, parquet, pre, true, true);
            cell(shape, flags, parquet, pre, true, false);
        }
    }
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

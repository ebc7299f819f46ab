//! Every flag on every MariaDB table shape: the combination matrix (`matrix.rs` is
//! PostgreSQL's).
//!
//! Each cell is a table shape (no key, a primary key with a CHECK, a unique key beside an
//! AUTO_INCREMENT key, a foreign key, a trigger that refuses a row, a key that another table's
//! key references ON DELETE CASCADE), empty or holding rows, an input (clean, or with values
//! the server refuses, rows too long for the client to send, duplicate keys within the input
//! and against the rows already there, a CHECK, a foreign-key miss, the trigger's SIGNAL), read
//! from CSV or from Parquet (for the flags a columnar input is used with), and a set of flags. The real binary loads it over two
//! connections in small blocks; the oracle is a model of what each row becomes, loaded into a
//! twin table by the server's own strict `LOAD DATA INFILE`. Each cell checks:
//! - the exit code, and for a combination refused up front (exit 2) the reason and an
//!   untouched table;
//! - the table against the twin, row for row;
//! - the reject file against the model's bad records;
//! - the referencing table's rows as they were;
//! - the same definitions as before the load (`SHOW CREATE TABLE`; a secondary key built
//!   again may come after the key MariaDB keeps for a foreign key), and an empty DDL journal.
//!
//! A bad input is loaded once with `--max-errors` (the good rows go in) and once without (the
//! load fails and the table is as it was).

mod mariadb_common;

use inrush_testkit::MariaDb;
use mariadb_common::*;
use std::path::Path;

/// Rows of the clean input: several 2 KiB blocks for each of two connections.
const ROWS: i64 = 600;
const BLOCK: &str = "2048";
/// Rows in a non-empty table before the load: ids -1..=-PRE.
const PRE: i64 = 20;
/// Parent keys a foreign key may reference: n in 0..PARENTS.
const PARENTS: i64 = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No key; one secondary index.
    Plain,
    /// Primary key, CHECK (n >= 0), a secondary index.
    Keyed,
    /// An AUTO_INCREMENT primary key the input does not name, a unique key on its id.
    AutoIncrement,
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
        let cols = "id INT, n INT, s VARCHAR(20), d DATE";
        match self {
            Shape::Plain => format!("CREATE TABLE t ({cols}, KEY t_s (s))"),
            Shape::Keyed => format!(
                "CREATE TABLE t ({cols}, PRIMARY KEY (id), KEY t_s (s), CONSTRAINT t_n CHECK (n >= 0))"
            ),
            Shape::AutoIncrement => format!(
                "CREATE TABLE t (pk INT AUTO_INCREMENT PRIMARY KEY, {cols}, UNIQUE KEY t_id (id), KEY t_s (s))"
            ),
            Shape::ForeignKey => format!(
                "CREATE TABLE parent (id INT PRIMARY KEY); INSERT INTO parent VALUES {}; \
                 CREATE TABLE t ({cols}, PRIMARY KEY (id), KEY t_s (s), \
                   CONSTRAINT t_fk FOREIGN KEY (n) REFERENCES parent (id))",
                (0..PARENTS).map(|id| format!("({id})")).collect::<Vec<_>>().join(", ")
            ),
            // The client cuts statements at `;`, also inside the trigger's body.
            Shape::Trigger => format!(
                "CREATE TABLE t ({cols}, PRIMARY KEY (id), KEY t_s (s));\nDELIMITER //\n\
                 CREATE TRIGGER t_boom BEFORE INSERT ON t FOR EACH ROW \
                   IF NEW.s = 'boom' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF //\n\
                 DELIMITER ;"
            ),
            Shape::Referenced => format!(
                "CREATE TABLE t ({cols}, PRIMARY KEY (id), KEY t_s (s)); \
                 CREATE TABLE kid (id INT PRIMARY KEY, p INT, \
                   CONSTRAINT kid_p FOREIGN KEY (p) REFERENCES t (id) ON DELETE CASCADE)"
            ),
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
            // Their DELETEs would delete the other table's rows.
            _ if self == Shape::Referenced && flags.truncate() => {
                Some("--truncate: deletes the rows of")
            }
            Some("update") if self == Shape::Referenced => {
                Some("--on-conflict update: is REPLACE, which deletes each replaced row of")
            }
            _ => None,
        }
    }
}

/// The table's definition, its lines in order: a secondary index built again after the load
/// comes after the index MariaDB keeps for a foreign key (which stays), so only the order of
/// the keys may change.
fn definition_lines(db: &MariaDb, table: &str) -> Vec<String> {
    let mut lines: Vec<String> = definition(db, table)
        .split("\\n")
        .map(|l| l.trim_end_matches(',').to_string())
        .collect();
    lines.sort();
    lines
}

/// What a record of the input is, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Good,
    /// A value no column type takes (the server's strict mode refuses it).
    BadValue,
    /// Longer than VARCHAR(20): the client refuses it before sending.
    TooLong,
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
/// them (so they fall in different blocks and connections).
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
            (
                ROWS + 2,
                "1",
                "much-too-long-for-twenty",
                "2024-01-01",
                Kind::TooLong,
            ),
            (7, "8", "dup7", "2024-02-02", Kind::DupInput),
            (-5, "3", "again", "2024-03-03", Kind::DupExisting),
            (ROWS + 3, "-1", "neg", "2024-01-01", Kind::Check),
            (ROWS + 4, "999", "orphan", "2024-01-01", Kind::Orphan),
            (ROWS + 5, "2", "boom", "2024-01-01", Kind::Boom),
            (ROWS + 6, "2", "baddate", "2024-02-30", Kind::BadValue),
        ];
        for (k, (id, n, s, d, kind)) in odd.into_iter().enumerate() {
            // After the id 7 they repeat, spread over the blocks.
            let at = 50 + k * (ROWS as usize - 60) / 8;
            let line = line(id, n, s, d);
            records.insert(at, Record { id, line, kind });
        }
    }
    records
}

/// The flags of one cell, besides the block size, the connections and `--max-errors`.
#[derive(Debug, Clone, Copy)]
struct Flags(&'static [&'static str]);

const FLAG_SETS: &[Flags] = &[
    Flags(&[]),
    Flags(&["--connections", "1"]),
    Flags(&["--on-conflict", "skip"]),
    Flags(&["--on-conflict", "update"]),
    Flags(&["--truncate"]),
    Flags(&["--resume"]),
    Flags(&["--table-lock"]),
    Flags(&["--keep-indexes"]),
    Flags(&["--truncate", "--on-conflict", "update"]),
    Flags(&["--table-lock", "--connections", "1"]),
];

/// The flag sets a Parquet input is loaded with.
const PARQUET_SETS: &[Flags] = &[
    Flags(&[]),
    Flags(&["--connections", "1"]),
    Flags(&["--on-conflict", "skip"]),
    Flags(&["--on-conflict", "update"]),
    Flags(&["--truncate"]),
    Flags(&["--resume"]),
];

/// Rows per Parquet row group: several parts for two connections.
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

/// Whether `record` is a bad row of this cell (set aside, or failing the load).
fn is_bad(record: &Record, shape: Shape, flags: Flags, pre: bool) -> bool {
    let existing = pre && !flags.truncate();
    match record.kind {
        Kind::Good => false,
        Kind::BadValue | Kind::TooLong => true,
        Kind::DupInput => shape.unique_id() && flags.conflict().is_none(),
        Kind::DupExisting => existing && shape.unique_id() && flags.conflict().is_none(),
        // n = -1 has no parent row either.
        Kind::Check => matches!(shape, Shape::Keyed | Shape::ForeignKey),
        Kind::Orphan => shape == Shape::ForeignKey,
        Kind::Boom => shape == Shape::Trigger,
    }
}

/// The rows the table must hold after a successful load: (id, line) in the table's terms.
fn expected(records: &[Record], shape: Shape, flags: Flags, pre: bool) -> Vec<String> {
    let mut rows: Vec<(i64, String)> = Vec::new();
    if pre && !flags.truncate() {
        rows.extend((1..=PRE).map(|k| {
            let (id, n, s, d) = good_row(-k);
            (id, line(id, &n.to_string(), &s, &d))
        }));
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

/// The table's rows as the client prints them, in one order for both tables.
fn contents(db: &MariaDb, table: &str) -> Vec<String> {
    db.rows(&format!(
        "SELECT id, n, s, d FROM {table} ORDER BY id, n, s, d"
    ))
}

/// Loads `lines` into a plain twin by the server's own strict LOAD DATA; its contents.
fn twin(db: &MariaDb, dir: &Path, lines: &[String]) -> Vec<String> {
    db.exec("DROP TABLE IF EXISTS twin; CREATE TABLE twin (id INT, n INT, s VARCHAR(20), d DATE)");
    let csv = write(
        dir,
        "twin.csv",
        &format!("id,n,s,d\n{}\n", lines.join("\n")),
    );
    server_load(db, &csv, "twin").unwrap();
    contents(db, "twin")
}

fn journal_is_empty(db: &MariaDb) -> bool {
    db.rows(
        "SELECT COUNT(*) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'inrush_ddl_journal'",
    ) == ["0"]
        || db.rows("SELECT COUNT(*) FROM inrush_ddl_journal") == ["0"]
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
    let db = MariaDb::fresh("matrix");
    db.exec(&shape.ddl());
    if pre {
        let values: Vec<String> = (1..=PRE)
            .map(|k| {
                let (id, n, s, d) = good_row(-k);
                format!("({id}, {n}, '{s}', '{d}')")
            })
            .collect();
        db.exec(&format!(
            "INSERT INTO t (id, n, s, d) VALUES {}",
            values.join(", ")
        ));
    }
    if shape == Shape::Referenced && pre {
        db.exec("INSERT INTO kid VALUES (1, -1)");
    }
    let kid = || match shape {
        Shape::Referenced => db.rows("SELECT id, p FROM kid"),
        _ => Vec::new(),
    };
    let before_kid = kid();
    let before_definition = definition_lines(&db, "t");
    let before_rows = contents(&db, "t");
    let dir = shared_dir();
    let records = input(bad);
    let text: Vec<&str> = records.iter().map(|r| r.line.as_str()).collect();
    let input = match parquet {
        true => {
            let path = dir.path().join("in.parquet");
            inrush_testkit::id_and_strings_parquet(
                &path,
                &["id", "n", "s", "d"],
                &text,
                PARQUET_GROUP,
            );
            path
        }
        false => write(
            dir.path(),
            "in.csv",
            &format!("id,n,s,d\n{}\n", text.join("\n")),
        ),
    };
    let mut args = vec!["--block-size", BLOCK];
    if !flags.has("--connections") {
        args.extend_from_slice(&["--connections", "2"]);
    }
    args.extend_from_slice(flags.0);
    if max_errors {
        args.extend_from_slice(&["--max-errors", "100"]);
    }
    let (code, out) = load(&input, &db, "t", &args);
    let bad_records: Vec<String> = records
        .iter()
        .filter(|r| is_bad(r, shape, flags, pre))
        .map(|r| match parquet {
            true => inrush_testkit::quoted_csv_line(&r.line),
            false => r.line.clone(),
        })
        .collect();

    assert_eq!(
        definition_lines(&db, "t"),
        before_definition,
        "{name}: definition\n{out}"
    );
    assert_eq!(kid(), before_kid, "{name}: the referencing table\n{out}");
    if let Some(reason) = shape.refusal(flags, parquet) {
        assert_eq!(code, 2, "{name}: exit code\n{out}");
        assert!(out.contains(reason), "{name}: the reason\n{out}");
        same_rows(
            &contents(&db, "t"),
            &before_rows,
            &format!("{name}: rows\n{out}"),
        );
        return;
    }
    assert!(journal_is_empty(&db), "{name}: journal\n{out}");
    if bad_records.is_empty() || max_errors {
        let want = if bad_records.is_empty() { 0 } else { 6 };
        assert_eq!(code, want, "{name}: exit code\n{out}");
        let model = twin(&db, dir.path(), &expected(&records, shape, flags, pre));
        same_rows(&contents(&db, "t"), &model, &format!("{name}: rows\n{out}"));
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
        let rows = contents(&db, "t");
        if flags.has("--resume") {
            // The blocks committed before the bad one stay (the next run loads the rest),
            // and hold only good rows.
            let good = twin(&db, dir.path(), &expected(&records, shape, flags, pre));
            let stray: Vec<&String> = rows.iter().filter(|r| !good.contains(r)).collect();
            assert!(
                stray.is_empty(),
                "{name}: rows not in the model {stray:?}\n{out}"
            );
        } else {
            same_rows(&rows, &before_rows, &format!("{name}: rows\n{out}"));
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
fn primary_key_and_check() {
    shape_matrix(Shape::Keyed);
}

#[test]
fn unique_key_beside_an_auto_increment_key() {
    shape_matrix(Shape::AutoIncrement);
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

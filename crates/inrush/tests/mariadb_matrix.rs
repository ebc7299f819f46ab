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
mod matrix_model;

use inrush_testkit::MariaDb;
use mariadb_common::*;
use matrix_model::*;
use std::path::Path;

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
        let referenced = self == Shape::Referenced;
        refusal(flags, parquet, self.unique_id(), referenced).or(match flags.conflict() {
            Some("update") if referenced => {
                Some("--on-conflict update: is REPLACE, which deletes each replaced row of")
            }
            _ => None,
        })
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

/// The odd records of a bad input: the common ones, a value too long for VARCHAR(20) and a
/// date that does not exist.
fn odd_records() -> Vec<Odd> {
    let mut odd = common_odd();
    odd.push((
        ROWS + 2,
        "1",
        "much-too-long-for-twenty",
        "2024-01-01",
        Kind::TooLong,
    ));
    odd.push((ROWS + 6, "2", "baddate", "2024-02-30", Kind::BadDate));
    odd
}

/// Whether `record` is a bad row of this cell (set aside, or failing the load).
fn is_bad(record: &Record, shape: Shape, flags: Flags, pre: bool) -> bool {
    let existing = pre && !flags.truncate();
    match record.kind {
        Kind::Good => false,
        Kind::BadValue | Kind::TooLong | Kind::BadDate => true,
        Kind::DupInput => shape.unique_id() && flags.conflict().is_none(),
        Kind::DupExisting => existing && shape.unique_id() && flags.conflict().is_none(),
        // n = -1 has no parent row either.
        Kind::Check => matches!(shape, Shape::Keyed | Shape::ForeignKey),
        Kind::Orphan => shape == Shape::ForeignKey,
        Kind::Boom => shape == Shape::Trigger,
    }
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
    let records = input(&match bad {
        true => odd_records(),
        false => Vec::new(),
    });
    let input = write_input(dir.path(), &records, parquet);
    let args = cell_args(flags, "--connections", max_errors);
    let (code, out) = load(&input, &db, "t", &args);
    let is_bad = |r: &Record| is_bad(r, shape, flags, pre);
    assert_eq!(
        definition_lines(&db, "t"),
        before_definition,
        "{name}: definition\n{out}"
    );
    assert_eq!(kid(), before_kid, "{name}: the referencing table\n{out}");
    assert!(journal_is_empty(&db), "{name}: journal\n{out}");
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
        || contents(&db, "t"),
        |lines| twin(&db, dir.path(), lines),
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

//! What the MariaDB and SQLite combination matrices share (`mariadb_matrix.rs`,
//! `sqlite_matrix.rs`): the input's records and their kinds, reading a cell's flags, the rows a
//! load must leave, the reject file's expected lines, and a diff of two row lists. Each matrix
//! keeps its engine's own parts: its table shapes, which kinds of record each shape refuses,
//! and its oracle.

// Each matrix uses a part of it (SQLite's input has no value too long for its column).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Rows of the clean input: several 2 KiB blocks for each of two writers.
pub const ROWS: i64 = 600;
pub const BLOCK: &str = "2048";
/// Rows in a non-empty table before the load: ids -1..=-PRE.
pub const PRE: i64 = 20;
/// Parent keys a foreign key may reference: n in 0..PARENTS.
pub const PARENTS: i64 = 50;
/// Rows per Parquet row group: several parts for two writers.
pub const PARQUET_GROUP: usize = 150;
/// The input's columns, which every shape's table has.
pub const COLUMNS: [&str; 4] = ["id", "n", "s", "d"];

/// What a record of the input is, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Good,
    /// A value no column type takes.
    BadValue,
    /// February 30th: a bad value for a DATE column, good text for a TEXT one.
    BadDate,
    /// Longer than VARCHAR(20): the client refuses it before sending.
    TooLong,
    /// An id already earlier in the input.
    DupInput,
    /// An id of a row already in the table (when it holds rows).
    DupExisting,
    /// n < 0 against a CHECK (n >= 0); no parent row has it either.
    Check,
    /// n with no parent row.
    Orphan,
    /// s = 'boom', which a trigger refuses.
    Boom,
}

pub struct Record {
    pub id: i64,
    pub line: String,
    pub kind: Kind,
}

/// The values of the good row with this id: (id, n, s, d).
pub fn good_row(id: i64) -> (i64, i64, String, String) {
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

pub fn line(id: i64, n: &str, s: &str, d: &str) -> String {
    format!("{id},{n},{s},{d}")
}

/// One odd record: id, n, s, d and its kind.
pub type Odd = (i64, &'static str, &'static str, &'static str, Kind);

/// The odd records both engines are given (each adds its own).
pub fn common_odd() -> Vec<Odd> {
    vec![
        (ROWS + 1, "x", "bad", "2024-01-01", Kind::BadValue),
        (7, "8", "dup7", "2024-02-02", Kind::DupInput),
        (-5, "3", "again", "2024-03-03", Kind::DupExisting),
        (ROWS + 3, "-1", "neg", "2024-01-01", Kind::Check),
        (ROWS + 4, "999", "orphan", "2024-01-01", Kind::Orphan),
        (ROWS + 5, "2", "boom", "2024-01-01", Kind::Boom),
    ]
}

/// The input's records: ids 1..=ROWS, and with `odd` those records spread through them (so
/// they fall in different blocks and writers; the duplicate of id 7 comes after it).
pub fn input(odd: &[Odd]) -> Vec<Record> {
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
    for (k, &(id, n, s, d, kind)) in odd.iter().enumerate() {
        let at = 50 + k * (ROWS as usize - 60) / odd.len();
        let line = line(id, n, s, d);
        records.insert(at, Record { id, line, kind });
    }
    records
}

/// Writes the records as the cell's input file in `dir`, CSV with a header or Parquet; its
/// path.
pub fn write_input(dir: &Path, records: &[Record], parquet: bool) -> PathBuf {
    let lines: Vec<&str> = records.iter().map(|r| r.line.as_str()).collect();
    let path = dir.join(if parquet { "in.parquet" } else { "in.csv" });
    match parquet {
        true => inrush_testkit::id_and_strings_parquet(&path, &COLUMNS, &lines, PARQUET_GROUP),
        false => std::fs::write(&path, format!("id,n,s,d\n{}\n", lines.join("\n"))).unwrap(),
    }
    path
}

/// The load's options besides the input and the table: small blocks, two writers (`writers`
/// names the engine's option for them) unless the flags say how many, the flags, and
/// `--max-errors` when asked.
pub fn cell_args(flags: Flags, writers: &'static str, max_errors: bool) -> Vec<&'static str> {
    let mut args = vec!["--block-size", BLOCK];
    if !flags.has(writers) {
        args.extend_from_slice(&[writers, "2"]);
    }
    args.extend_from_slice(flags.0);
    if max_errors {
        args.extend_from_slice(&["--max-errors", "100"]);
    }
    args
}

/// The flags of one cell, besides the block size, the writers and `--max-errors`.
#[derive(Debug, Clone, Copy)]
pub struct Flags(pub &'static [&'static str]);

impl Flags {
    pub fn has(self, flag: &str) -> bool {
        self.0.contains(&flag)
    }

    /// `--on-conflict`'s value.
    pub fn conflict(self) -> Option<&'static str> {
        let at = self.0.iter().position(|&f| f == "--on-conflict")?;
        self.0.get(at + 1).copied()
    }

    pub fn truncate(self) -> bool {
        self.has("--truncate")
    }
}

/// Why a load with `flags` is refused up front, if it is, for a reason every engine has: a
/// columnar input resumed, `--on-conflict` with `--truncate` or without a key on id
/// (`unique_id`), `--truncate` of a table another references ON DELETE CASCADE
/// (`referenced`: its DELETE would delete the other table's rows).
pub fn refusal(
    flags: Flags,
    parquet: bool,
    unique_id: bool,
    referenced: bool,
) -> Option<&'static str> {
    match flags.conflict() {
        _ if parquet && flags.has("--resume") => {
            Some("--resume works on CSV and JSON lines, not columnar files")
        }
        Some(_) if flags.truncate() => Some("--on-conflict cannot be combined with --truncate"),
        Some(_) if !unique_id => Some("has no primary key or unique index for rows to conflict on"),
        _ if referenced && flags.truncate() => Some("--truncate: deletes the rows of"),
        _ => None,
    }
}

/// The lines the reject file must hold for `bad` records: as written, or for a Parquet input
/// as inrush writes a columnar row back.
fn reject_lines(bad: &[&Record], parquet: bool) -> Vec<String> {
    bad.iter()
        .map(|r| match parquet {
            true => inrush_testkit::quoted_csv_line(&r.line),
            false => r.line.clone(),
        })
        .collect()
}

/// Compares the reject file next to `input` (its header skipped) with `want`, in any order.
fn assert_rejects(input: &Path, want: &[String], context: &str) {
    let path = input.with_file_name(format!(
        "{}.rejects",
        input.file_name().unwrap().to_string_lossy()
    ));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{context}: the reject file: {e}"));
    let mut got: Vec<&str> = text.lines().skip(1).collect();
    got.sort_unstable();
    let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(got, want, "{context}: rejects");
}

/// One cell as the model sees it.
pub struct Model<'a> {
    pub records: &'a [Record],
    /// The table has a key on id.
    pub unique_id: bool,
    pub flags: Flags,
    pub parquet: bool,
    pub pre: bool,
    pub max_errors: bool,
    /// Whether a record is a bad row of this cell (the engine's and the shape's rule).
    pub is_bad: &'a dyn Fn(&Record) -> bool,
}

impl Model<'_> {
    /// The rows the table must hold after a successful load, as input lines: the rows there
    /// before (unless truncated), then each good record, a key met again skipped or replaced
    /// by `--on-conflict`. `--check` loads nothing.
    fn expected(&self) -> Vec<String> {
        self.loaded_lines(self.is_bad)
    }

    /// The rows a failed `--resume` load may have left: those of the blocks it committed
    /// before it stopped, in whatever order they committed. A key in two blocks is the row of
    /// the block that committed first: the input's second occurrence when the block of its
    /// first failed.
    fn may_remain(&self) -> Vec<String> {
        let second_wins = |r: &Record| r.kind != Kind::DupInput && (self.is_bad)(r);
        let mut lines = self.expected();
        lines.extend(self.loaded_lines(&second_wins));
        lines
    }

    /// [`Model::expected`] with `is_bad` saying which records are bad.
    fn loaded_lines(&self, is_bad: &dyn Fn(&Record) -> bool) -> Vec<String> {
        let mut rows: Vec<(i64, String)> = Vec::new();
        if self.pre && !self.flags.truncate() {
            rows.extend((1..=PRE).map(|k| {
                let (id, n, s, d) = good_row(-k);
                (id, line(id, &n.to_string(), &s, &d))
            }));
        }
        if self.flags.has("--check") {
            return rows.into_iter().map(|(_, line)| line).collect();
        }
        for record in self.records.iter().filter(|r| !is_bad(r)) {
            let taken = self
                .unique_id
                .then(|| rows.iter().position(|(id, _)| *id == record.id))
                .flatten();
            match (taken, self.flags.conflict()) {
                (Some(_), Some("skip")) => {}
                (Some(at), _) => rows[at] = (record.id, record.line.clone()),
                (None, _) => rows.push((record.id, record.line.clone())),
            }
        }
        rows.into_iter().map(|(_, line)| line).collect()
    }
}

/// What the load did: its exit code and output, and its input file.
pub struct Loaded<'a> {
    pub name: &'a str,
    pub code: i32,
    pub out: &'a str,
    pub input: &'a Path,
}

/// Judges a cell's load: refused up front (`refusal`: the reason), the reason said and the
/// rows as `before`; loaded, the rows as `twin` stores the model's lines (the engine's own
/// bulk path) and the reject file's lines; failed, the rows as `before`, or under `--resume`
/// only rows [`Model::may_remain`] allows. `rows` reads the table.
pub fn judge(
    m: &Model,
    loaded: &Loaded,
    refusal: Option<&str>,
    before: &[String],
    rows: impl Fn() -> Vec<String>,
    twin: impl Fn(&[String]) -> Vec<String>,
) {
    let Loaded {
        name, code, out, ..
    } = loaded;
    let context = |what: &str| format!("{name}: {what}\n{out}");
    if let Some(reason) = refusal {
        assert_eq!(*code, 2, "{}", context("exit code"));
        assert!(out.contains(reason), "{}", context("the reason"));
        same_rows(&rows(), before, &context("rows"));
        return;
    }
    let bad: Vec<&Record> = m.records.iter().filter(|r| (m.is_bad)(r)).collect();
    if bad.is_empty() || m.max_errors {
        let want = if bad.is_empty() { 0 } else { 6 };
        assert_eq!(*code, want, "{}", context("exit code"));
        same_rows(&rows(), &twin(&m.expected()), &context("rows"));
        if !bad.is_empty() {
            assert_rejects(loaded.input, &reject_lines(&bad, m.parquet), &context(""));
        }
    } else {
        assert_eq!(*code, 4, "{}", context("exit code"));
        if m.flags.has("--resume") {
            // The blocks committed before the bad one stay (the next run loads the rest),
            // and hold only good rows.
            let good = twin(&m.may_remain());
            let now = rows();
            let stray: Vec<&String> = now.iter().filter(|r| !good.contains(r)).collect();
            assert!(
                stray.is_empty(),
                "{}",
                context(&format!("rows not in the model {stray:?}"))
            );
        } else {
            same_rows(&rows(), before, &context("rows"));
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

/// Runs `cell(flags, parquet, pre, bad, max_errors)` for every flag set with a CSV input and
/// every Parquet set with a Parquet one, into an empty table and one holding rows, with a
/// clean input, and a bad one with and without `--max-errors`.
pub fn every_cell(
    csv_sets: &[Flags],
    parquet_sets: &[Flags],
    cell: impl Fn(Flags, bool, bool, bool, bool),
) {
    let csv = csv_sets.iter().map(|f| (*f, false));
    for (flags, parquet) in csv.chain(parquet_sets.iter().map(|f| (*f, true))) {
        for pre in [false, true] {
            cell(flags, parquet, pre, false, false);
            cell(flags, parquet, pre, true, true);
            cell(flags, parquet, pre, true, false);
        }
    }
}

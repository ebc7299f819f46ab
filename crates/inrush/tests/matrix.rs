//! Every flag on every table: the combination matrix.
//!
//! Each cell is a table shape (keys, CHECK, NOT NULL, defaults, foreign keys, triggers,
//! identity, generated columns, partitions, a key other tables reference), empty or holding
//! rows, an input (clean, values the client refuses, rows the server refuses: duplicates within
//! the input and against existing rows, CHECK, foreign key misses, trigger errors), read from
//! CSV (a file, several, standard input), Parquet or JSON lines, and a set of flags, each alone
//! and in the pairs users combine. The real binary loads it; the oracle is a model of what each
//! row should become, loaded into a second database by the server's own COPY. Each cell checks:
//! - the exit code is the documented one, and a combination that cannot work exits 2 before
//!   anything happens;
//! - the table equals the rows that were there plus the COPY of the good rows;
//! - the reject file holds exactly the bad records;
//! - every index, constraint and trigger, with its validity and firing mode, is as before, and
//!   `inrush.ddl_journal` is empty;
//! - the rows of a table that references the loaded one are as before.
//!
//! By default a quick subset runs (every flag and pair on the keyed shape, the others on a few
//! flags); `INRUSH_MATRIX=full` runs every shape against every flag set (several minutes; CI
//! runs it when `scripts/test.sh --full` is asked for).

use inrush_testkit::Db;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

/// Rows of a generated input: enough to span many blocks of [`BLOCK`] bytes over two
/// connections.
const ROWS: i64 = 1500;
const BLOCK: &str = "2048";
/// Rows in a non-empty table before the load: ids -1..=-PRE.
const PRE: i64 = 20;
/// Parent keys a foreign key may reference.
const PARENTS: i64 = 1000;
/// Rows per Parquet row group: several groups for two connections.
const PARQUET_GROUP: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No key at all; one secondary index.
    Plain,
    /// Primary key, CHECK (n >= 0), NOT NULL with a default, a secondary index.
    Keyed,
    /// A unique constraint instead of a primary key.
    Unique,
    /// A foreign key n -> parent(id).
    ForeignKey,
    /// A BEFORE trigger that refuses s = 'boom', an AFTER trigger that writes an audit row.
    Trigger,
    /// An identity column beside the key.
    Identity,
    /// A stored generated column.
    Generated,
    /// Range-partitioned on the key.
    Partitioned,
    /// A primary key another table references ON DELETE CASCADE; the referencing rows must
    /// survive every load (the server does not TRUNCATE such a table: --truncate is refused).
    Referenced,
    /// No table yet: `--create` makes it.
    New,
}

impl Shape {
    fn ddl(self) -> String {
        let cols = "id int, n int, s varchar(20), d date";
        match self {
            Shape::Plain => format!("CREATE TABLE t ({cols}); CREATE INDEX t_s ON t (s);"),
            Shape::Keyed => "CREATE TABLE t (id int PRIMARY KEY, n int CONSTRAINT t_n_check CHECK (n >= 0), \
                             s varchar(20) NOT NULL DEFAULT 'dflt', d date); CREATE INDEX t_s ON t (s);"
                .into(),
            Shape::Unique => format!("CREATE TABLE t ({cols}, CONSTRAINT t_id_key UNIQUE (id)); CREATE INDEX t_d ON t (d);"),
            Shape::ForeignKey => format!(
                "CREATE TABLE parent (id int PRIMARY KEY); \
                 INSERT INTO parent SELECT generate_series(0, {PARENTS}); \
                 CREATE TABLE t (id int PRIMARY KEY, n int CONSTRAINT t_n_fk REFERENCES parent (id), s varchar(20), d date);"
            ),
            Shape::Trigger => "CREATE TABLE audit (id int); \
                 CREATE TABLE t (id int PRIMARY KEY, n int, s varchar(20), d date); \
                 CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ \
                   BEGIN IF NEW.s = 'boom' THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$; \
                 CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ \
                   BEGIN INSERT INTO audit VALUES (NEW.id); RETURN NULL; END $$; \
                 CREATE TRIGGER t_refuse BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION refuse_boom(); \
                 CREATE TRIGGER t_audit AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION audit_row();"
                .into(),
            Shape::Identity => format!("CREATE TABLE t (rid bigint GENERATED ALWAYS AS IDENTITY, {cols}, PRIMARY KEY (id));"),
            Shape::Generated => format!("CREATE TABLE t ({cols}, n2 int GENERATED ALWAYS AS (n * 2) STORED, PRIMARY KEY (id)); CREATE INDEX t_n2 ON t (n2);"),
            Shape::Partitioned => format!(
                "CREATE TABLE t ({cols}, PRIMARY KEY (id)) PARTITION BY RANGE (id); \
                 CREATE TABLE t_neg PARTITION OF t FOR VALUES FROM (MINVALUE) TO (0); \
                 CREATE TABLE t_pos PARTITION OF t FOR VALUES FROM (0) TO (MAXVALUE); \
                 CREATE INDEX t_s ON t (s);"
            ),
            Shape::Referenced => format!(
                "CREATE TABLE t ({cols}, PRIMARY KEY (id)); CREATE INDEX t_s ON t (s); \
                 CREATE TABLE kid (pid int CONSTRAINT kid_pid_fk REFERENCES t (id) ON DELETE CASCADE);"
            ),
            Shape::New => String::new(),
        }
    }

    /// Statements run after the rows that were there before the load are in.
    fn after_pre(self) -> Option<&'static str> {
        match self {
            Shape::Referenced => Some("INSERT INTO kid SELECT -g FROM generate_series(1, 5) g"),
            _ => None,
        }
    }

    /// The table the oracle's COPY loads: the shape's, or what `--create` makes of the input.
    fn oracle_ddl(self) -> String {
        match self {
            Shape::New => "CREATE TABLE t (id int, n int, s text, d date);".into(),
            shape => shape.ddl(),
        }
    }

    fn unique_id(self) -> bool {
        !matches!(self, Shape::Plain | Shape::New)
    }

    fn has_primary_key(self) -> bool {
        !matches!(self, Shape::Plain | Shape::Unique | Shape::New)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Clean,
    /// Values the client refuses: not a number, too long, no such date, out of range, a
    /// missing field, NULL into NOT NULL.
    ClientBad,
    /// Rows the server refuses, depending on the shape: duplicate keys (within the input and
    /// against existing rows), CHECK, foreign key misses, a trigger's exception.
    ServerBad,
}

/// One input record: its line as written, and its values when the client can read them.
#[derive(Debug, Clone)]
struct Record {
    line: String,
    id: i64,
    n: i64,
    s: Option<String>,
    /// False when the client refuses the record whatever the table (a bad value).
    readable: bool,
}

/// The input's records. `by_name`: as a Parquet file or JSON lines hold them, where a field
/// that is not there is NULL (the short record's date, and the row is good).
fn records(input: Input, by_name: bool) -> Vec<Record> {
    let mut out = Vec::new();
    for i in 1..=ROWS {
        let (n, s, d) = (
            i % PARENTS,
            format!("s{}", i % 50),
            format!("2024-01-{:02}", i % 28 + 1),
        );
        let mut rec = Record {
            line: format!("{i},{n},{s},{d}"),
            id: i,
            n,
            s: Some(s.clone()),
            readable: true,
        };
        match (input, i % 97) {
            (Input::ClientBad, 3) => (rec.line, rec.readable) = (format!("{i},abc,{s},{d}"), false),
            (Input::ClientBad, 13) => {
                (rec.line, rec.readable) = (format!("{i},{n},{},{d}", "y".repeat(30)), false)
            }
            (Input::ClientBad, 23) => {
                (rec.line, rec.readable) = (format!("{i},{n},{s},2024-02-30"), false)
            }
            (Input::ClientBad, 33) => {
                (rec.line, rec.readable) = (format!("{i},99999999999,{s},{d}"), false)
            }
            (Input::ClientBad, 43) if by_name => rec.line = format!("{i},{n},{s},"),
            (Input::ClientBad, 43) => (rec.line, rec.readable) = (format!("{i},{n},{s}"), false),
            (Input::ClientBad, 53) => (rec.line, rec.s) = (format!("{i},{n},,{d}"), None),
            // A key seen earlier in the input, and one the table holds when it is not empty.
            (Input::ServerBad, 5) => (rec.line, rec.id) = (format!("{},{n},{s},{d}", i - 4), i - 4),
            (Input::ServerBad, 15) => {
                (rec.line, rec.id) = (format!("{},{n},{s},{d}", -(i % PRE) - 1), -(i % PRE) - 1)
            }
            (Input::ServerBad, 25) => (rec.line, rec.n) = (format!("{i},-5,{s},{d}"), -5),
            (Input::ServerBad, 35) => (rec.line, rec.n) = (format!("{i},5000,{s},{d}"), 5000),
            (Input::ServerBad, 45) => {
                (rec.line, rec.s) = (format!("{i},{n},boom,{d}"), Some("boom".into()))
            }
            _ => {}
        }
        out.push(rec);
    }
    out
}

/// The flags of one cell, as the user types them (the reject file is added by the harness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Flag {
    MaxErrors,
    Resume,
    Skip,
    Update,
    Truncate,
    TableLock,
    KeepIndexes,
    RebuildUnique,
    DisableTriggers,
    Check,
    Several,
    Stdin,
    Create,
    /// `--route client`: a partitioned table's rows routed by inrush (other tables ignore it).
    RouteClient,
    /// The input as JSON lines: id a number, the others strings, `null` for an empty or
    /// missing field.
    Jsonl,
    /// The input as a Parquet file: id an Int64 column, the others strings (which carry the
    /// bad values), NULL for an empty field; in row groups of [`PARQUET_GROUP`] rows.
    Parquet,
}

const FLAGS: [Flag; 14] = [
    Flag::MaxErrors,
    Flag::Resume,
    Flag::Skip,
    Flag::Update,
    Flag::Truncate,
    Flag::TableLock,
    Flag::KeepIndexes,
    Flag::RebuildUnique,
    Flag::DisableTriggers,
    Flag::Check,
    Flag::Several,
    Flag::Stdin,
    Flag::Parquet,
    Flag::Jsonl,
];

/// The flag sets of the matrix: none, each alone, and the pairs users combine.
fn flag_sets() -> Vec<Vec<Flag>> {
    let mut sets = vec![vec![]];
    sets.extend(FLAGS.iter().map(|&f| vec![f]));
    for f in FLAGS {
        if f != Flag::MaxErrors {
            sets.push(vec![Flag::MaxErrors, f]);
        }
    }
    sets.push(vec![Flag::Truncate, Flag::TableLock]);
    sets.push(vec![Flag::Skip, Flag::KeepIndexes]);
    sets.push(vec![Flag::Resume, Flag::KeepIndexes]);
    sets.push(vec![Flag::Several, Flag::Truncate]);
    sets.push(vec![Flag::Stdin, Flag::DisableTriggers]);
    sets.push(vec![Flag::RouteClient]);
    for f in FLAGS {
        sets.push(vec![Flag::RouteClient, f]);
    }
    sets.push(vec![Flag::RouteClient, Flag::MaxErrors, Flag::Several]);
    // A columnar input with what is combined with it.
    for f in [
        Flag::Resume,
        Flag::Skip,
        Flag::Update,
        Flag::Truncate,
        Flag::KeepIndexes,
        Flag::Check,
    ] {
        sets.push(vec![Flag::Parquet, f]);
    }
    sets.push(vec![Flag::Parquet, Flag::MaxErrors, Flag::Resume]);
    sets.push(vec![Flag::Parquet, Flag::MaxErrors, Flag::Skip]);
    for f in [
        Flag::Resume,
        Flag::Skip,
        Flag::Update,
        Flag::Truncate,
        Flag::Check,
    ] {
        sets.push(vec![Flag::Jsonl, f]);
    }
    sets.push(vec![Flag::Jsonl, Flag::MaxErrors, Flag::Resume]);
    sets
}

/// What a cell must end in.
#[derive(Debug)]
enum Expect {
    /// Refused before anything happened.
    Usage,
    Outcome {
        exit: i32,
        /// The table's rows as `id|n|s`, sorted; `None`: not checked (a failed `--resume`
        /// keeps the blocks it committed, whichever they were).
        rows: Option<Vec<String>>,
        /// The reject file's records (without its header), sorted; `None`: not checked (a
        /// failed load leaves the rows refused before it failed).
        rejects: Option<Vec<String>>,
    },
}

fn has(flags: &[Flag], f: Flag) -> bool {
    flags.contains(&f)
}

/// The model: what the documentation says each flag does to each row.
fn expect(shape: Shape, pre: bool, input: Input, flags: &[Flag]) -> Expect {
    let max = has(flags, Flag::MaxErrors);
    let resume = has(flags, Flag::Resume);
    let conflict = has(flags, Flag::Skip) || has(flags, Flag::Update);
    let streamed = has(flags, Flag::Stdin) || has(flags, Flag::Several);
    let usage = (shape == Shape::Referenced && has(flags, Flag::Truncate))
        || (has(flags, Flag::Create) && (resume || conflict || has(flags, Flag::Truncate)))
        || (has(flags, Flag::RebuildUnique) && (max || resume || conflict))
        || (resume
            && (has(flags, Flag::Truncate)
                || has(flags, Flag::Parquet)
                || has(flags, Flag::TableLock)
                || conflict
                || has(flags, Flag::Check)
                || streamed))
        || (conflict && has(flags, Flag::Truncate))
        || (has(flags, Flag::Update) && !shape.has_primary_key())
        || (conflict && !shape.unique_id());
    if usage {
        return Expect::Usage;
    }
    let existing: Vec<i64> = match pre && !has(flags, Flag::Truncate) {
        true => (1..=PRE).map(|i| -i).collect(),
        false => Vec::new(),
    };
    let check = has(flags, Flag::Check);
    let triggers_fire = !has(flags, Flag::DisableTriggers);
    let mut seen: HashSet<i64> = existing.iter().copied().collect();
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    // Under --on-conflict the rows reach the table in one INSERT from the staging table:
    // a foreign key or trigger refusal there fails the whole load, whatever --max-errors says.
    let mut merge_fails = false;
    for r in records(input, by_name(flags)) {
        let client_refuses = !r.readable || (shape == Shape::Keyed && r.s.is_none());
        // --check writes the rows in transactions it rolls back: the server refuses as it
        // would in the load.
        let refused_at_merge = (shape == Shape::ForeignKey && !(0..=PARENTS).contains(&r.n))
            || (shape == Shape::Trigger && triggers_fire && r.s.as_deref() == Some("boom"));
        let server_refuses = (shape == Shape::Keyed && r.n < 0)
            || refused_at_merge
            || (shape.unique_id() && !conflict && seen.contains(&r.id));
        merge_fails |= conflict && !client_refuses && refused_at_merge;
        if client_refuses || server_refuses {
            bad.push(r);
        } else {
            seen.insert(r.id);
            good.push(r);
        }
    }
    let exit = match (bad.is_empty(), max) {
        _ if merge_fails => 4,
        (true, _) => 0,
        (false, true) => 6,
        (false, false) => 4,
    };
    let rejects = match max && !merge_fails {
        true => Some(sorted(bad.iter().map(|r| {
            match (has(flags, Flag::Parquet), has(flags, Flag::Jsonl)) {
                (true, _) => inrush_testkit::quoted_csv_line(&r.line),
                // A JSON line goes to the reject file as it was.
                (_, true) => json_line(&r.line),
                _ => r.line.clone(),
            }
        }))),
        false => None,
    };
    let row =
        |id: i64, n: i64, s: &Option<String>| format!("{id}|{n}|{}", s.as_deref().unwrap_or(""));
    let before = existing.iter().map(|&id| row(id, 1, &Some("pre".into())));
    let rows = if check && shape == Shape::New {
        // Nothing is created: checked apart.
        None
    } else if check || exit == 4 {
        match resume {
            true => None,
            false => Some(sorted(match pre {
                true => (1..=PRE).map(|i| row(-i, 1, &Some("pre".into()))).collect(),
                false => Vec::new(),
            })),
        }
    } else if conflict {
        // Keys already in the table or met earlier: skip keeps the first, update the last.
        let mut by_id: std::collections::BTreeMap<i64, String> = before
            .map(|r| (r.split('|').next().unwrap().parse().unwrap(), r))
            .collect();
        for r in &good {
            let new = row(r.id, r.n, &r.s);
            match has(flags, Flag::Update) {
                true => {
                    by_id.insert(r.id, new);
                }
                false => {
                    by_id.entry(r.id).or_insert(new);
                }
            }
        }
        Some(sorted(by_id.into_values()))
    } else {
        Some(sorted(
            before.chain(good.iter().map(|r| row(r.id, r.n, &r.s))),
        ))
    };
    Expect::Outcome {
        exit,
        rows,
        rejects,
    }
}

/// How two sets of lines differ (counts and a few of each side's extras), if they do; a line
/// met twice counts twice.
fn differs<'a>(
    what: &str,
    got: impl Iterator<Item = &'a str>,
    want: impl Iterator<Item = &'a str>,
) -> Option<String> {
    let (got, want) = (
        sorted(got.map(String::from)),
        sorted(want.map(String::from)),
    );
    if got == want {
        return None;
    }
    let (g, w): (HashSet<&String>, HashSet<&String>) =
        (got.iter().collect(), want.iter().collect());
    Some(format!(
        "{what}: {} lines, expected {}; extra {:?}; missing {:?}",
        got.len(),
        want.len(),
        g.difference(&w).take(3).collect::<Vec<_>>(),
        w.difference(&g).take(3).collect::<Vec<_>>()
    ))
}

fn sorted(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = lines.into_iter().collect();
    v.sort();
    v
}

const ROWS_AS_TEXT: &str = "SELECT coalesce(string_agg(x, E'\\n' ORDER BY x), '') FROM \
    (SELECT id || '|' || coalesce(n::text, '') || '|' || coalesce(s, '') AS x FROM t) q";

/// One cell, run and judged; returns what went wrong, if anything.
fn run_cell(
    db: &Db,
    oracle: &Db,
    dir: &Path,
    shape: Shape,
    pre: bool,
    input: Input,
    flags: &[Flag],
) -> Option<String> {
    let reset = |d: &Db, ddl: String| {
        d.exec("DROP SCHEMA IF EXISTS public CASCADE; DROP SCHEMA IF EXISTS inrush CASCADE; CREATE SCHEMA public;");
        d.exec(&ddl);
        if pre {
            d.exec(&format!("INSERT INTO t (id, n, s, d) SELECT -g, 1, 'pre', '2020-01-01' FROM generate_series(1, {PRE}) g"));
            if let Some(sql) = shape.after_pre() {
                d.exec(sql);
            }
        }
    };
    reset(db, shape.ddl());
    let definitions = db.definitions();
    const KIDS: &str = "SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM kid";
    let kids_before = match shape {
        Shape::Referenced => db.text(KIDS),
        _ => String::new(),
    };
    let audit_before = match shape {
        Shape::Trigger => db.int("SELECT count(*) FROM audit"),
        _ => 0,
    };
    let recs = records(input, by_name(flags));
    let header = "id,n,s,d";
    let body: Vec<&str> = recs.iter().map(|r| r.line.as_str()).collect();
    let file = dir.join("in.csv");
    std::fs::write(&file, format!("{header}\n{}\n", body.join("\n"))).unwrap();
    let rejects = dir.join("r.rej");
    let _ = std::fs::remove_file(&rejects);
    let mut args: Vec<String> = vec!["load".into()];
    if has(flags, Flag::Several) {
        let half = body.len() / 2;
        for (k, part) in [&body[..half], &body[half..]].iter().enumerate() {
            let path = dir.join(format!("part{k}.csv"));
            std::fs::write(&path, format!("{header}\n{}\n", part.join("\n"))).unwrap();
            args.push(path.display().to_string());
        }
    } else if has(flags, Flag::Stdin) {
        args.push("-".into());
    } else if has(flags, Flag::Parquet) {
        let path = dir.join("in.parquet");
        inrush_testkit::id_and_strings_parquet(&path, &["id", "n", "s", "d"], &body, PARQUET_GROUP);
        args.push(path.display().to_string());
    } else if has(flags, Flag::Jsonl) {
        let path = dir.join("in.jsonl");
        let lines: String = body.iter().map(|l| json_line(l) + "\n").collect();
        std::fs::write(&path, lines).unwrap();
        args.push(path.display().to_string());
    } else {
        args.push(file.display().to_string());
    }
    let conninfo = db.conninfo.clone();
    args.extend(
        [
            "--to",
            &conninfo,
            "--table",
            "t",
            "--no-progress",
            "--block-size",
            BLOCK,
            "--connections",
            "2",
            "--workers",
            "2",
        ]
        .map(String::from),
    );
    if !by_name(flags) {
        args.push("--header".into());
    }
    for f in flags {
        args.extend(
            match f {
                Flag::MaxErrors => vec![
                    "--max-errors",
                    "100000",
                    "--rejects",
                    rejects.to_str().unwrap(),
                ],
                Flag::Resume => vec!["--resume"],
                Flag::Skip => vec!["--on-conflict", "skip"],
                Flag::Update => vec!["--on-conflict", "update"],
                Flag::Truncate => vec!["--truncate"],
                Flag::TableLock => vec!["--table-lock"],
                Flag::RouteClient => vec!["--route", "client"],
                Flag::KeepIndexes => vec!["--keep-indexes"],
                Flag::RebuildUnique => vec!["--rebuild-unique"],
                Flag::DisableTriggers => vec!["--disable-triggers"],
                Flag::Check => vec!["--check"],
                Flag::Create => vec!["--create"],
                Flag::Several | Flag::Stdin | Flag::Parquet | Flag::Jsonl => vec![],
            }
            .into_iter()
            .map(String::from),
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(&args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run inrush");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        if has(flags, Flag::Stdin) {
            let _ = stdin.write_all(&std::fs::read(&file).unwrap());
        }
    }
    let out = child.wait_with_output().expect("inrush ends");
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cell = format!("{shape:?} pre={pre} {input:?} {flags:?}");
    let mut wrong = Vec::new();
    let expected = expect(shape, pre, input, flags);
    match &expected {
        Expect::Usage => {
            if code != 2 {
                wrong.push(format!("exit {code}, expected 2 (usage)"));
            }
        }
        Expect::Outcome {
            exit,
            rows,
            rejects: bad,
        } => {
            if code != *exit {
                wrong.push(format!("exit {code}, expected {exit}"));
            }
            if let Some(rows) = rows {
                // The oracle: the same table, the same rows before, the expected rows
                // loaded by the server's own COPY.
                reset(oracle, shape.oracle_ddl());
                oracle.exec("TRUNCATE t CASCADE; ALTER TABLE t DISABLE TRIGGER USER");
                let data: String = rows
                    .iter()
                    .map(|r| format!("{}\n", r.replace('|', ",")))
                    .collect();
                oracle.copy_csv("t (id, n, s)", data.as_bytes());
                let want = oracle.text(ROWS_AS_TEXT);
                let got = db.text(ROWS_AS_TEXT);
                wrong.extend(differs(
                    "table differs from the oracle",
                    got.lines(),
                    want.lines(),
                ));
            }
            if let Some(bad) = bad.as_ref().filter(|b| !b.is_empty()) {
                let file = std::fs::read_to_string(&rejects).unwrap_or_default();
                // JSON lines have no header line to repeat.
                let records = file.lines().skip(usize::from(!has(flags, Flag::Jsonl)));
                wrong.extend(differs(
                    "reject file",
                    records,
                    bad.iter().map(String::as_str),
                ));
            }
            let merged = has(flags, Flag::Skip) || has(flags, Flag::Update);
            if shape == Shape::Trigger
                && (code == 0 || code == 6)
                && !has(flags, Flag::Check)
                && !merged
            {
                // The AFTER trigger fired once for each new row, or never when disabled.
                let kept = match pre && !has(flags, Flag::Truncate) {
                    true => PRE,
                    false => 0,
                };
                let new_rows = db.int("SELECT count(*) FROM t") - kept;
                let audit = db.int("SELECT count(*) FROM audit") - audit_before;
                let want = if has(flags, Flag::DisableTriggers) {
                    0
                } else {
                    new_rows
                };
                if audit != want {
                    wrong.push(format!("audit trigger wrote {audit} rows, expected {want}"));
                }
            }
        }
    }
    if shape == Shape::New
        && has(flags, Flag::Check)
        && !db.text("SELECT to_regclass('t')").is_empty()
    {
        wrong.push("--check made the table".into());
    }
    if shape == Shape::Referenced && db.text(KIDS) != kids_before {
        wrong.push(format!(
            "the referencing rows changed: {:?}, were {kids_before:?}",
            db.text(KIDS)
        ));
    }
    let after = db.definitions();
    if after != definitions {
        wrong.push(format!(
            "definitions changed:\nbefore:\n{definitions}\nafter:\n{after}"
        ));
    }
    let journal = db.journal_len();
    if journal != 0 {
        wrong.push(format!("{journal} entries left in inrush.ddl_journal"));
    }
    match wrong.is_empty() {
        true => None,
        false => Some(format!(
            "{cell}: {}\n  stderr: {}",
            wrong.join("; "),
            stderr.trim()
        )),
    }
}

/// Whether the cell's input names its fields (Parquet, JSON lines) instead of a CSV line.
fn by_name(flags: &[Flag]) -> bool {
    has(flags, Flag::Parquet) || has(flags, Flag::Jsonl)
}

/// A record's CSV line as a JSON line (see [`Flag::Jsonl`]).
fn json_line(line: &str) -> String {
    let fields: Vec<&str> = line.split(',').collect();
    let mut members = vec![format!("\"id\":{}", fields[0])];
    for (name, value) in ["n", "s", "d"].iter().zip(&fields[1..]) {
        members.push(match value.is_empty() {
            true => format!("\"{name}\":null"),
            false => format!("\"{name}\":\"{value}\""),
        });
    }
    format!("{{{}}}", members.join(","))
}

fn full() -> bool {
    std::env::var("INRUSH_MATRIX").is_ok_and(|v| v == "full")
}

/// Runs the cells of one shape; panics with every failing cell listed.
fn run_shape(shape: Shape) {
    let db = Db::fresh("matrix");
    let oracle = Db::fresh("oracle");
    let dir = tempfile::tempdir().unwrap();
    let sets = flag_sets();
    let quick_sets: Vec<Vec<Flag>> = match shape {
        // --route changes nothing for a table that is not partitioned.
        Shape::Keyed => sets
            .iter()
            .filter(|s| !has(s, Flag::RouteClient))
            .cloned()
            .collect(),
        _ => sets
            .iter()
            .filter(|s| {
                s.is_empty()
                    || (shape == Shape::Partitioned && has(s, Flag::RouteClient))
                    || *s == &vec![Flag::MaxErrors]
                    || *s == &vec![Flag::Skip]
                    || *s == &vec![Flag::Truncate]
                    || *s == &vec![Flag::MaxErrors, Flag::Parquet]
                    || *s == &vec![Flag::MaxErrors, Flag::Jsonl]
            })
            .cloned()
            .collect(),
    };
    let mut sets = if full() { sets } else { quick_sets };
    let (pres, inputs): (&[bool], &[Input]) = match shape {
        // --create of a clean input, alone and with what users pair it with.
        Shape::New => {
            sets = [
                Flag::MaxErrors,
                Flag::Check,
                Flag::TableLock,
                Flag::Stdin,
                Flag::Several,
                Flag::KeepIndexes,
                Flag::Truncate,
                Flag::Resume,
                Flag::Skip,
                Flag::Parquet,
            ]
            .into_iter()
            .map(|f| vec![Flag::Create, f])
            .chain([vec![Flag::Create]])
            .collect();
            (&[false], &[Input::Clean])
        }
        _ => (
            &[false, true],
            &[Input::Clean, Input::ClientBad, Input::ServerBad],
        ),
    };
    let mut failures = Vec::new();
    let mut cells = 0;
    for &pre in pres {
        for &input in inputs {
            for flags in &sets {
                cells += 1;
                if let Some(f) = run_cell(&db, &oracle, dir.path(), shape, pre, input, flags) {
                    failures.push(f);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} cells failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn plain() {
    run_shape(Shape::Plain)
}
#[test]
fn keyed() {
    run_shape(Shape::Keyed)
}
#[test]
fn unique() {
    run_shape(Shape::Unique)
}
#[test]
fn foreign_key() {
    run_shape(Shape::ForeignKey)
}
#[test]
fn trigger() {
    run_shape(Shape::Trigger)
}
#[test]
fn identity() {
    run_shape(Shape::Identity)
}
#[test]
fn generated() {
    run_shape(Shape::Generated)
}
#[test]
fn partitioned() {
    run_shape(Shape::Partitioned)
}
#[test]
fn referenced() {
    run_shape(Shape::Referenced)
}
#[test]
fn created() {
    run_shape(Shape::New)
}

/// Two loads of one indexed table at once, and a third beside other sessions' inserts: one runs
/// alone and rebuilds the indexes, the others wait for it or keep them; every load succeeds and
/// every definition is as before.
#[test]
fn loads_of_one_table_at_once_all_succeed() {
    let db = Db::fresh("concurrent");
    db.exec("CREATE TABLE t (id int, n int, s varchar(20), d date); CREATE INDEX t_s ON t (s); CREATE INDEX t_n ON t (n, id);");
    let definitions = db.definitions();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    let rows = 100_000;
    let text: String = (0..rows)
        .map(|i| format!("{i},{},s{},2024-01-{:02}\n", i % 1000, i % 50, i % 28 + 1))
        .collect();
    std::fs::write(&file, text).unwrap();
    let load = || {
        inrush_testkit::spawn_load(
            env!("CARGO_BIN_EXE_inrush"),
            &db,
            file.to_str().unwrap(),
            "t",
            &[],
        )
    };
    let loads = [load(), load(), load()];
    // Other sessions insert meanwhile.
    for _ in 0..20 {
        db.exec("INSERT INTO t VALUES (-1, 1, 'other', '2020-01-01')");
    }
    for child in loads {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(db.int("SELECT count(*) FROM t"), 3 * rows + 20);
    assert_eq!(db.definitions(), definitions);
    assert_eq!(db.journal_len(), 0);
}

/// Of two loads of one table, the first to end leaves the statistics to the other, still
/// running, which takes them at its end, with every row of both committed by then: one
/// ANALYZE, not one waiting for the other's.
#[test]
fn the_last_of_two_loads_of_one_table_takes_its_statistics() {
    use std::io::Write;
    let db = Db::fresh("last_analyzes");
    db.exec("CREATE TABLE t (id int, s text); CREATE INDEX t_s ON t (s); INSERT INTO t SELECT g, 'x' FROM generate_series(1, 1000) g");
    let analyzed = || db.int("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 't'");
    // From standard input, of no size known beforehand: it keeps the index and shares the
    // table with other loads, and runs until its input ends.
    let mut longer = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "load",
            "-",
            "--to",
            &db.conninfo,
            "--table",
            "t",
            "--no-progress",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = longer.stdin.take().unwrap();
    // More than the first block the load reads before it claims the table.
    let first: String = (0..200_000).map(|i| format!("{i},first\n")).collect();
    input.write_all(first.as_bytes()).unwrap();
    // This database's claims only: the other tests' loads run beside this one.
    let shared = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 \
                  AND mode = 'ShareLock' AND granted \
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.int(shared) == 0 {
        if std::time::Instant::now() > deadline {
            drop(input);
            panic!("never started: {:?}", inrush_testkit::finish(longer));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1001,a\n1002,b\n").unwrap();
    let (code, out) = inrush_testkit::finish(inrush_testkit::spawn_load(
        env!("CARGO_BIN_EXE_inrush"),
        &db,
        file.to_str().unwrap(),
        "t",
        &[],
    ));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("left to another inrush load of \"public\".\"t\" still running"),
        "{out}"
    );
    assert_eq!(analyzed(), 0);
    input.write_all(b"-2,last\n").unwrap();
    drop(input);
    let (code, out) = inrush_testkit::finish(longer);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("left to another inrush load"), "{out}");
    assert_eq!(analyzed(), 1);
    assert_eq!(db.int("SELECT count(*) FROM t"), 1000 + 200_000 + 3);
}

/// Loads of several tables at once into a database inrush has not loaded before: each makes
/// inrush's own tables (the journal of the indexes it drops, the record of its commit) if they
/// are missing, and none fails because another made one first.
#[test]
fn loads_of_several_tables_at_once_into_a_new_database_all_succeed() {
    let db = Db::fresh("fresh_concurrent");
    const TABLES: usize = 4;
    for k in 0..TABLES {
        db.exec(&format!(
            "CREATE TABLE t{k} (id int PRIMARY KEY, n int, s varchar(20)); CREATE INDEX t{k}_s ON t{k} (s, n);"
        ));
    }
    let definitions = db.definitions();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    let rows = 50_000;
    let text: String = (0..rows)
        .map(|i| format!("{i},{},s{}\n", i % 1000, i % 50))
        .collect();
    std::fs::write(&file, text).unwrap();
    let loads: Vec<_> = (0..TABLES)
        .map(|k| {
            inrush_testkit::spawn_load(
                env!("CARGO_BIN_EXE_inrush"),
                &db,
                file.to_str().unwrap(),
                &format!("t{k}"),
                &["--index-threshold", "0"],
            )
        })
        .collect();
    for child in loads {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
    }
    for k in 0..TABLES {
        assert_eq!(db.int(&format!("SELECT count(*) FROM t{k}")), rows);
    }
    assert_eq!(db.definitions(), definitions);
    assert_eq!(db.journal_len(), 0);
}

/// Two connections of one load that wait on each other (here a trigger that updates one shared
/// row: the second connection waits for the first's transaction, which waits for the load to
/// end) fail the load with the reason instead of hanging, and leave nothing behind.
#[test]
fn connections_waiting_on_each_other_fail_the_load_instead_of_hanging() {
    let db = Db::fresh("selfblock");
    db.exec(
        "CREATE TABLE counter (n bigint); INSERT INTO counter VALUES (0); \
         CREATE TABLE t (id int, n int, s text, d date); \
         CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ \
           BEGIN UPDATE counter SET n = n + 1; RETURN NEW; END $$; \
         CREATE TRIGGER t_bump AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION bump();",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    let text: String = (0..50_000)
        .map(|i| format!("{i},1,x,2024-01-01\n"))
        .collect();
    std::fs::write(&file, text).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "load",
            file.to_str().unwrap(),
            "--to",
            &db.conninfo,
            "--table",
            "t",
        ])
        .args([
            "--no-progress",
            "--connections",
            "2",
            "--block-size",
            "4096",
        ])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inrush");
    let (code, printed) = inrush_testkit::finish(child);
    assert_eq!(code, 4, "{printed}");
    assert!(
        printed.contains("of the same load wrote and has not committed"),
        "{printed}"
    );
    assert_eq!(db.int("SELECT count(*) FROM t"), 0);
    assert_eq!(db.int("SELECT n FROM counter"), 0);
}

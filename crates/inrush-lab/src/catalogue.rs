//! The 28 experiments of `../shared/LAB.md`: what each mirrors, the advice under test, its
//! variations with the field report's published figures, and how the verdict compares them.
//!
//! Row counts are for `--scale 1.0`, the quick default (all experiments in 25-40 minutes on a
//! 2-core machine with 3 runs each); slow methods get fewer rows than fast ones and verdicts
//! compare per row.

use crate::data::DataKind;
use crate::plan::*;
use crate::verdict::{Metric, Rule, SeedFactor};

/// One experiment, ready to run.
#[derive(Debug, Clone)]
pub struct ExperimentDef {
    pub id: &'static str,
    pub title: &'static str,
    pub seed_source: &'static str,
    pub advice: &'static str,
    pub variations: Vec<VariationDef>,
    /// Tried in order; the first whose two variations ran gives the verdict.
    pub rules: Vec<Rule>,
    pub notes: Vec<String>,
    /// Why the whole experiment does not apply to the engine (not run; the report says why).
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone)]
pub struct VariationDef {
    pub label: String,
    pub baseline: bool,
    pub seed_figure: Option<String>,
    pub seed_seconds: Option<f64>,
    pub plan: RunPlan,
    /// Why this variation does not apply to the engine (not run; the report says why).
    pub unavailable: Option<String>,
}

fn var(label: impl Into<String>, seed: Option<(&str, f64)>, plan: RunPlan) -> VariationDef {
    VariationDef {
        label: label.into(),
        baseline: false,
        seed_figure: seed.map(|(f, _)| f.to_string()),
        seed_seconds: seed.map(|(_, s)| s),
        plan,
        unavailable: None,
    }
}

/// A reported figure that is not a time.
fn note_var(label: impl Into<String>, figure: &str, plan: RunPlan) -> VariationDef {
    VariationDef {
        label: label.into(),
        baseline: false,
        seed_figure: Some(figure.to_string()),
        seed_seconds: None,
        plan,
        unavailable: None,
    }
}

fn base(mut v: VariationDef) -> VariationDef {
    v.baseline = true;
    v
}

struct Exp {
    def: ExperimentDef,
}

fn exp(
    id: &'static str,
    title: &'static str,
    seed_source: &'static str,
    advice: &'static str,
) -> Exp {
    Exp {
        def: ExperimentDef {
            id,
            title,
            seed_source,
            advice,
            variations: Vec::new(),
            rules: Vec::new(),
            notes: Vec::new(),
            unavailable: None,
        },
    }
}

impl Exp {
    fn v(mut self, v: VariationDef) -> Self {
        self.def.variations.push(v);
        self
    }
    fn rule(mut self, r: Rule) -> Self {
        self.def.rules.push(r);
        self
    }
    fn note(mut self, n: &str) -> Self {
        self.def.notes.push(n.to_string());
        self
    }
    fn done(self) -> ExperimentDef {
        self.def
    }
}

// Quick-scale row counts.
const SLOW: u64 = 2_000; // one commit per row
const A_ROWS: u64 = 10_000; // the field report's 10k rows
const B_ROWS: u64 = 100_000; // the field report's 100k rows
const COPY_ROWS: u64 = 300_000;
const D_ROWS: u64 = 1_000_000; // the field report's 6M rows

/// Group B's method: the field report's test 31 inserted rows one by one, committing every 1000. Here
/// 100-row INSERT statements, so the server-side work under test (constraints, triggers,
/// indexes: all still row by row) is not drowned in client round trips.
fn b_method() -> Method {
    multi_row(100, 1000)
}

/// Every experiment, in catalogue order.
pub fn catalogue() -> Vec<ExperimentDef> {
    let mut all = Vec::new();
    all.extend(group_a());
    all.extend(group_b().into_iter().map(|mut e| {
        {
            e.notes.push("Group B loads with 100-row INSERT statements committed every 1000 rows (the field report's test 31 inserted row by row, committing every 1000), so the server-side work under test is not drowned in client round trips.".into());
        }
        e
    }));
    all.extend(group_c());
    all.extend(group_d());
    all
}

fn group_a() -> Vec<ExperimentDef> {
    let mut a4 = exp(
        "A4",
        "Array inserts: rows per statement x rows per commit",
        "000 Table 6 (DB2 tests 69-78)",
        "Send many rows per statement and commit rarely: 1000-row arrays committed every 1000 rows are 20x faster than 2-row arrays committed every 2",
    );
    let seeds: [(usize, u64, &str, f64); 10] = [
        (2, 2, "test 75: 471.82 s (10k rows)", 471.82),
        (2, 10, "test 76: 155.21 s", 155.21),
        (2, 100, "test 77: 74.82 s", 74.82),
        (2, 1000, "test 78: 48.51 s", 48.51),
        (10, 10, "test 69: 118.18 s", 118.18),
        (10, 100, "test 70: 56.71 s", 56.71),
        (10, 1000, "test 71: 30.09 s", 30.09),
        (100, 100, "test 72: 50.65 s", 50.65),
        (100, 1000, "test 73: 24.27 s", 24.27),
        (1000, 1000, "test 74: 23.43 s", 23.43),
    ];
    for (i, (k, c, fig, s)) in seeds.into_iter().enumerate() {
        let v = var(
            format!("multi-row VALUES, {k} rows/statement, commit every {c}"),
            Some((fig, s)),
            RunPlan::new(A_ROWS, multi_row(k, c)),
        );
        a4 = a4.v(if i == 0 { base(v) } else { v });
    }
    for k in [10, 100, 1000] {
        a4 = a4.v(var(
            format!("pipelined single-row INSERTs, {k} in flight, commit every 1000"),
            None,
            RunPlan::new(A_ROWS, pipelined(k, 1000)),
        ));
    }
    vec![
        exp(
            "A1",
            "Literal SQL per row vs a prepared statement (autocommit)",
            "000 Table 1 (DB2 tests 1-2)",
            "Prepare once and bind parameters: literal SQL per row pays for parsing every statement",
        )
        .v(base(var(
            "literal INSERT per row, autocommit",
            Some(("test 1: 180.63 s (10k rows)", 180.63)),
            RunPlan::new(SLOW, literal()),
        )))
        .v(var(
            "prepared INSERT per row, autocommit",
            Some(("test 2: 92.05 s (10k rows)", 92.05)),
            RunPlan::new(SLOW, prepared(None)),
        ))
        .rule(Rule::new(0, 1, "a prepared INSERT beats literal SQL per row"))
        .done(),
        exp(
            "A2",
            "Autocommit vs committing every 1000 rows (prepared INSERT)",
            "000 Tables 1 and 6 (DB2 tests 2, 68)",
            "Do not autocommit every row: commit every 1000 rows instead",
        )
        .v(base(var(
            "prepared INSERT per row, autocommit",
            Some(("test 2: 92.05 s (10k rows)", 92.05)),
            RunPlan::new(SLOW, prepared(None)),
        )))
        .v(var(
            "prepared INSERT per row, commit every 1000",
            Some(("test 68: 7.58 s (10k rows)", 7.58)),
            RunPlan::new(A_ROWS, prepared(Some(1000))),
        ))
        .rule(Rule::new(0, 1, "committing every 1000 rows beats autocommit"))
        .done(),
        exp(
            "A3",
            "Commit interval: every 5 / 10 / 100 / 1000 rows",
            "000 Table 6 (DB2 tests 65-68)",
            "Commit every 1000 rows rather than every few rows",
        )
        .v(base(var(
            "prepared INSERT, commit every 5",
            Some(("test 65: 22.34 s (10k rows)", 22.34)),
            RunPlan::new(A_ROWS, prepared(Some(5))),
        )))
        .v(var(
            "prepared INSERT, commit every 10",
            Some(("test 66: 20.78 s", 20.78)),
            RunPlan::new(A_ROWS, prepared(Some(10))),
        ))
        .v(var(
            "prepared INSERT, commit every 100",
            Some(("test 67: 10.11 s", 10.11)),
            RunPlan::new(A_ROWS, prepared(Some(100))),
        ))
        .v(var(
            "prepared INSERT, commit every 1000",
            Some(("test 68: 7.58 s", 7.58)),
            RunPlan::new(A_ROWS, prepared(Some(1000))),
        ))
        .rule(Rule::new(0, 3, "committing every 1000 rows beats every 5"))
        .done(),
        a4.rule(Rule::new(0, 9, "1000-row arrays committed every 1000 beat 2-row arrays committed every 2"))
            .note("The field report's array inserts are DB2 CLI row arrays; here they are multi-row INSERT ... VALUES statements (bound parameters) and, separately, pipelined single-row INSERTs (tokio-postgres sends every execute before awaiting any).")
            .done(),
        exp(
            "A5",
            "COPY (the load utility) vs array inserts, one stream",
            "000 Table 6 (DB2 tests 68, 71, 79)",
            "The load utility is over twice as fast as fairly optimised array inserts (test 79 vs test 71)",
        )
        .v(base(var(
            "multi-row VALUES, 10 rows/statement, commit every 1000",
            Some(("test 71: 30.09 s (10k rows)", 30.09)),
            RunPlan::new(A_ROWS, multi_row(10, 1000)),
        )))
        .v(var(
            "prepared INSERT per row, commit every 1000",
            Some(("test 68: 7.58 s", 7.58)),
            RunPlan::new(A_ROWS, prepared(Some(1000))),
        ))
        .v(var(
            "COPY text, one stream",
            Some(("test 79 (CLI LOAD): 13.68 s", 13.68)),
            RunPlan::new(COPY_ROWS, copy_text()),
        ))
        .v(var("COPY binary, one stream", None, RunPlan::new(COPY_ROWS, copy_binary(1))))
        .rule(Rule::new(0, 2, "COPY beats 10-row array inserts"))
        .note("COPY runs load 10x the rows of the INSERT runs (a 10k-row COPY is over in milliseconds); the verdict compares time per row.")
        .done(),
        exp(
            "A6",
            "WAL per row: single-row INSERTs vs the multi-row path",
            "003 (Oracle redo entries, row-by-row vs array insert)",
            "Row-by-row inserts write far more log records than array/bulk paths (112,511 vs 6,703 redo entries for 100k rows)",
        )
        .v(base(note_var(
            "prepared single-row INSERT, commit every 1000",
            "112,511 redo entries (100k rows, row by row)",
            RunPlan::new(20_000, prepared(Some(1000))),
        )))
        .v(note_var(
            "multi-row VALUES, 1000 rows/statement",
            "6,703 redo entries (array insert)",
            RunPlan::new(20_000, multi_row(1000, 1000)),
        ))
        .v(var("COPY binary", None, RunPlan::new(20_000, copy_binary(1))))
        .rule(
            Rule::new(0, 2, "COPY writes fewer WAL records per row than single-row INSERTs")
                .metric(Metric::WalRecordsPerRow)
                .seed(SeedFactor::Given(112_511.0 / 6_703.0)),
        )
        .note("PostgreSQL logs one heap record per row for single-row INSERTs and one multi-insert record per page for COPY; the field report's figure is Oracle redo entries.")
        .done(),
    ]
}

fn group_b() -> Vec<ExperimentDef> {
    let t = |rows: u64| RunPlan::new(rows, b_method());
    let baseline = || {
        base(var(
            "no constraints, no indexes (test 31)",
            Some(("31.51 s (100k rows)", 31.51)),
            t(B_ROWS),
        ))
    };
    let fk_table = || {
        t(B_ROWS)
            .data(DataKind::ModKeys(1000))
            .setup("CREATE TABLE {s}.p (k int PRIMARY KEY)")
            .setup("INSERT INTO {s}.p SELECT generate_series(0, 999)")
    };
    let fk = |col: &str, n: u32| {
        format!("ALTER TABLE {{t}} ADD CONSTRAINT fk{n} FOREIGN KEY ({col}) REFERENCES {{s}}.p (k)")
    };
    let trig = |kind: &str, n: u32| -> Vec<String> {
        let body = if kind == "insert" {
            "INSERT INTO {s}.audit VALUES (NEW.*)".to_string()
        } else {
            "UPDATE {s}.counter SET n = n + 1 WHERE k = abs(NEW.fieldint1 % 1000)".to_string()
        };
        vec![
            format!("CREATE FUNCTION {{s}}.f{n}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN {body}; RETURN NEW; END$$"),
            format!("CREATE TRIGGER tr{n} AFTER INSERT ON {{t}} FOR EACH ROW EXECUTE FUNCTION {{s}}.f{n}()"),
        ]
    };
    let with_triggers = |kind: &str, count: u32| {
        let mut plan = t(B_ROWS)
            .setup("CREATE TABLE {s}.audit (LIKE {t})")
            .setup("CREATE TABLE {s}.counter (k int PRIMARY KEY, n bigint NOT NULL)")
            .setup("INSERT INTO {s}.counter SELECT generate_series(0, 999), 0");
        for n in 1..=count {
            for sql in trig(kind, n) {
                plan = plan.setup(sql);
            }
        }
        plan
    };
    let indexes = ["fieldint1", "fieldint2", "fieldint3", "fieldchar1"];
    let with_indexes = |n: usize| {
        let mut plan = t(B_ROWS);
        for (i, col) in indexes.iter().take(n).enumerate() {
            plan = plan.setup(format!("CREATE INDEX i{i} ON {{t}} ({col})"));
        }
        plan
    };
    let indexes_after = |n: usize| {
        let mut plan = t(B_ROWS);
        for (i, col) in indexes.iter().take(n).enumerate() {
            plan = plan.after(
                &format!("create_index_{i}"),
                format!("CREATE INDEX i{i} ON {{t}} ({col})"),
            );
        }
        plan
    };
    let seq = |cache: u32| {
        t(B_ROWS).create(table_with(&format!(
            "id bigint GENERATED BY DEFAULT AS IDENTITY (CACHE {cache})"
        )))
    };
    let mut b4 = exp(
        "B4",
        "Secondary indexes present during the load vs created after",
        "000 Table 4 (DB2 tests 31-37)",
        "Every index present during the load slows it; creating them after the load is cheaper",
    )
    .v(baseline());
    let b4_seeds = [
        ("test 32: 53.73 s", 53.73),
        ("test 33: 83.26 s", 83.26),
        ("test 34: 108.21 s", 108.21),
        ("test 35: 141.63 s", 141.63),
    ];
    for (n, seed) in (1..=4).zip(b4_seeds) {
        b4 = b4.v(var(
            format!("{n} index(es) present"),
            Some(seed),
            with_indexes(n),
        ));
    }
    let b4 = b4
        .v(var(
            "1 index created after the load",
            Some(("test 37: 39.44 s", 39.44)),
            indexes_after(1),
        ))
        .v(var(
            "4 indexes created after the load",
            Some(("test 36: 73.75 s", 73.75)),
            indexes_after(4),
        ))
        .rule(Rule::new(
            4,
            6,
            "creating 4 indexes after the load beats keeping them during it",
        ))
        .note("Times after the load include the CREATE INDEX statements, as in the field report.")
        .done();
    let mut b6 = exp(
        "B6",
        "Identity / sequence cache size",
        "000 Table 5 (DB2 identity cache)",
        "A sequence cache of 1 makes every insert wait for the sequence; cache 1000 is 24x faster",
    );
    let b6_seeds = [
        (1, 896.61),
        (5, 212.52),
        (20, 99.06),
        (100, 61.62),
        (1000, 37.51),
    ];
    for (i, (cache, s)) in b6_seeds.into_iter().enumerate() {
        let v = var(
            format!("identity column, CACHE {cache}"),
            Some((&format!("{s} s (100k rows)"), s)),
            seq(cache),
        );
        b6 = b6.v(if i == 0 { base(v) } else { v });
    }
    vec![
        exp("B1", "CHECK constraints", "000 Table 3 (DB2 tests 11-13)", "Each CHECK constraint adds a little to every insert (2 checks: +16%)")
            .v(baseline())
            .v(var("1 CHECK constraint", Some(("test 12: 33.65 s", 33.65)), t(B_ROWS).setup("ALTER TABLE {t} ADD CHECK (length(fieldchar1) <= 100)")))
            .v(var(
                "2 CHECK constraints",
                Some(("test 13: 36.63 s", 36.63)),
                t(B_ROWS)
                    .setup("ALTER TABLE {t} ADD CHECK (length(fieldchar1) <= 100)")
                    .setup("ALTER TABLE {t} ADD CHECK (fieldint2 >= -2147483648)"),
            ))
            .rule(Rule::new(2, 0, "2 CHECK constraints cost time"))
            .done(),
        exp("B2", "Foreign keys during the load vs added after (NOT VALID + VALIDATE)", "000 Table 3 (DB2 tests 14-17)", "Add foreign keys after the load: checking them row by row costs up to 2.3x")
            .v(base(var("no foreign key", Some(("test 11: 31.51 s", 31.51)), fk_table())))
            .v(var("1 foreign key present", Some(("test 14: 55.37 s", 55.37)), fk_table().setup(fk("fieldint1", 1))))
            .v(var("2 foreign keys present", Some(("test 15: 72.71 s", 72.71)), fk_table().setup(fk("fieldint1", 1)).setup(fk("fieldint2", 2))))
            .v(var(
                "1 foreign key added after (NOT VALID + VALIDATE)",
                Some(("test 16: 32.84 s", 32.84)),
                fk_table().after("add_fk", format!("{} NOT VALID", fk("fieldint1", 1))).after("validate_fk", "ALTER TABLE {t} VALIDATE CONSTRAINT fk1"),
            ))
            .v(var(
                "2 foreign keys added after (NOT VALID + VALIDATE)",
                Some(("test 17: 38.89 s", 38.89)),
                fk_table()
                    .after("add_fk1", format!("{} NOT VALID", fk("fieldint1", 1)))
                    .after("add_fk2", format!("{} NOT VALID", fk("fieldint2", 2)))
                    .after("validate_fks", "ALTER TABLE {t} VALIDATE CONSTRAINT fk1; ALTER TABLE {t} VALIDATE CONSTRAINT fk2"),
            ))
            .rule(Rule::new(2, 4, "adding 2 foreign keys after the load beats checking them during it"))
            .note("The parent table holds keys 0..999; fieldint1 and fieldint2 are reduced modulo 1000 in every variation, so all load the same data.")
            .done(),
        exp("B3", "Triggers doing INSERT or UPDATE", "000 Table 3 (DB2 tests 18-21)", "Triggers that write are expensive: one INSERT trigger doubles the load time")
            .v(baseline())
            .v(var("1 trigger doing INSERT", Some(("test 18: 67.57 s", 67.57)), with_triggers("insert", 1)))
            .v(var("2 triggers doing INSERT", Some(("test 19: 175.95 s", 175.95)), with_triggers("insert", 2)))
            .v(var("1 trigger doing UPDATE", Some(("test 20: 54.71 s", 54.71)), with_triggers("update", 1)))
            .v(var("2 triggers doing UPDATE", Some(("test 21: 150.18 s", 150.18)), with_triggers("update", 2)))
            .rule(Rule::new(1, 0, "an INSERT trigger makes the load much slower"))
            .note("AFTER INSERT ... FOR EACH ROW triggers in PL/pgSQL; the UPDATE triggers bump one of 1000 counter rows (by key).")
            .done(),
        b4,
        exp("B5", "Primary key on sorted vs random keys", "000 Table 4 (DB2 test 38); 002 (clustered index 4x heap)", "Keep the key order: inserting into a key index in sorted order is cheaper than in random order")
            .v(base(var("heap, no key", Some(("test 31: 31.51 s", 31.51)), t(B_ROWS))))
            .v(var("primary key, keys in sorted order", None, t(B_ROWS).data(DataKind::SortedKey).setup("ALTER TABLE {t} ADD PRIMARY KEY (fieldint1)")))
            .v(var("primary key, keys in random order", Some(("test 32 (1 index): 53.73 s", 53.73)), t(B_ROWS).data(DataKind::RandomKey).setup("ALTER TABLE {t} ADD PRIMARY KEY (fieldint1)")))
            .rule(Rule::new(2, 1, "sorted keys load faster than random keys into a primary key").seed(SeedFactor::None))
            .note("PostgreSQL has no clustered tables (test 38: clustered index 62.93 s); the primary key is a separate B-tree. The field report gives no sorted-key figure.")
            .done(),
        b6.rule(Rule::new(0, 4, "a sequence cache of 1000 beats a cache of 1"))
            .note("PostgreSQL sequences are cached per session and log one WAL record per 32 values whatever the cache.")
            .done(),
        exp("B7", "Large values stored out of line (TOAST) vs short values", "000 Table 8 (DB2 test 91)", "Large objects are slow: a CLOB column made the load 9x slower")
            .v(base(var(
                "fieldchar3 varchar(10), short values",
                Some(("test 31: 31.51 s", 31.51)),
                t(B_ROWS).data(DataKind::Short(10)).create(
                    "CREATE TABLE {t} (fieldint1 int NOT NULL, fieldint2 int NOT NULL, fieldint3 int NOT NULL, fieldchar1 varchar(100) NOT NULL, fieldchar2 varchar(100) NOT NULL, fieldchar3 varchar(10) NOT NULL) WITH (autovacuum_enabled = off)",
                ),
            )))
            .v(var(
                "fieldchar3 text, 4000 incompressible characters (TOAST)",
                Some(("test 91 (CLOB): 286.49 s", 286.49)),
                t(B_ROWS).data(DataKind::Large(4000)).create(
                    "CREATE TABLE {t} (fieldint1 int NOT NULL, fieldint2 int NOT NULL, fieldint3 int NOT NULL, fieldchar1 varchar(100) NOT NULL, fieldchar2 varchar(100) NOT NULL, fieldchar3 text NOT NULL) WITH (autovacuum_enabled = off)",
                ),
            ))
            .rule(Rule::new(1, 0, "large out-of-line values make the load much slower"))
            .note("The large variation also sends ~13x the bytes; compare the WAL bytes per row.")
            .done(),
        exp("B8", "Table lock during the load vs none", "000 Table 9 (DB2 test 101)", "A table lock saves little (30.58 vs 31.51 s)")
            .v(base(var("no lock", Some(("test 31: 31.51 s", 31.51)), t(B_ROWS))))
            .v(var(
                "LOCK TABLE ... IN EXCLUSIVE MODE in each transaction",
                Some(("test 101: 30.58 s", 30.58)),
                RunPlan::new(B_ROWS, Method::MultiRow { rows_per_statement: 100, commit_every: 1000, lock: true }),
            ))
            .rule(Rule::new(0, 1, "a table lock makes little difference").same())
            .done(),
        exp("B9", "Append-only vs free-space search (table with deleted rows)", "000 Table 2 (DB2 tests 22-23)", "Appending (APPEND ON) instead of searching for free space makes almost no difference (281.64 vs 282.02 s)")
            .v(base(var(
                "half-deleted, vacuumed table, fillfactor 100 (free-space search)",
                Some(("test 22: 282.02 s", 282.02)),
                t(B_ROWS)
                    .setup("INSERT INTO {t} SELECT g, g, g, md5(g::text), md5(g::text), md5(g::text) FROM generate_series(1, {n}) g")
                    .setup("DELETE FROM {t} WHERE fieldint1 % 2 = 0")
                    .setup("VACUUM {t}"),
            )))
            .v(var("fresh table (append only)", Some(("test 23 (APPEND ON): 281.64 s", 281.64)), t(B_ROWS)))
            .v(var(
                "half-deleted, vacuumed table, fillfactor 70",
                None,
                t(B_ROWS)
                    .setup("ALTER TABLE {t} SET (fillfactor = 70)")
                    .setup("INSERT INTO {t} SELECT g, g, g, md5(g::text), md5(g::text), md5(g::text) FROM generate_series(1, {n}) g")
                    .setup("DELETE FROM {t} WHERE fieldint1 % 2 = 0")
                    .setup("VACUUM {t}"),
            ))
            .rule(Rule::new(0, 1, "free-space search costs about the same as appending").same())
            .note("The prefilled rows (as many as the load, half deleted and vacuumed) are not timed and not counted as loaded.")
            .done(),
    ]
}

fn group_c() -> Vec<ExperimentDef> {
    let freeze = Method::Copy {
        binary: true,
        streams: 1,
        rows_per_copy: None,
        lock: false,
        freeze: true,
    };
    vec![
        exp("C1", "INSERT ... SELECT vs COPY TO piped into COPY FROM", "000 Table 2 (DB2 tests 6-9)", "Loading from a query's output (test 9) beats INSERT ... SELECT (15.66 vs 12.95 s)")
            .v(base(var("INSERT ... SELECT from a staging table", Some(("15.66 s", 15.66)), RunPlan::new(COPY_ROWS, Method::InsertSelect))))
            .v(var("COPY staging TO STDOUT piped into COPY FROM STDIN (binary)", Some(("12.95 s", 12.95)), RunPlan::new(COPY_ROWS, Method::CopyPipe)))
            .rule(Rule::new(0, 1, "piping COPY beats INSERT ... SELECT"))
            .note("The staging table is filled before timing; the pipe goes through the client.")
            .done(),
        exp("C2", "Logged vs UNLOGGED vs minimally logged (same-transaction TRUNCATE)", "000 test 7 (NOT LOGGED INITIALLY); 002 (TABLOCK minimal logging: 6 MB vs 2.4 GB)", "Minimal logging cuts the log by orders of magnitude (6 MB vs 2.4 GB)")
            .v(base(note_var("logged table, COPY binary", "2.4 GB of log (6M rows, fully logged)", RunPlan::new(COPY_ROWS, copy_binary(1)))))
            .v(var("UNLOGGED table, COPY binary", None, RunPlan::new(COPY_ROWS, copy_binary(1)).create(plain_table().replace("CREATE TABLE", "CREATE UNLOGGED TABLE"))))
            .v(var("TRUNCATE + COPY FREEZE in one transaction", None, RunPlan::new(COPY_ROWS, freeze.clone())))
            .v(note_var(
                "wal_level=minimal, TRUNCATE + COPY FREEZE in one transaction",
                "6 MB of log (minimal logging)",
                RunPlan::new(COPY_ROWS, freeze.clone()).server("wal_level", "minimal", true).server("max_wal_senders", "0", true),
            ))
            .rule(Rule::new(0, 3, "minimal logging writes far less WAL").metric(Metric::WalBytesPerRow).seed(SeedFactor::Given(2400.0 / 6.0)))
            .rule(Rule::new(0, 1, "an unlogged table writes far less WAL").metric(Metric::WalBytesPerRow).seed(SeedFactor::Given(2400.0 / 6.0)))
            .note("wal_level=minimal needs a restart: only on the lab's private server. The verdict compares WAL bytes per row.")
            .done(),
        exp("C3", "Log buffer size; synchronous_commit with small commits", "000 Table 10 (DB2 tests 104-105)", "A log buffer large enough that it never fills speeds inserts up by ~13%")
            .v(base(var(
                "wal_buffers=64kB, multi-row VALUES 10 rows, commit every 10000",
                Some(("test 104 (LOGBUFSZ=8): 28.53 s (100k rows)", 28.53)),
                RunPlan::new(COPY_ROWS, multi_row(10, 10_000)).server("wal_buffers", "64kB", true),
            )))
            .v(var(
                "wal_buffers=64MB, multi-row VALUES 10 rows, commit every 10000",
                Some(("test 105 (LOGBUFSZ=256): 24.91 s", 24.91)),
                RunPlan::new(COPY_ROWS, multi_row(10, 10_000)).server("wal_buffers", "64MB", true),
            ))
            .v(var("synchronous_commit=on, prepared INSERT, commit every 10", None, RunPlan::new(A_ROWS, prepared(Some(10)))))
            .v(var("synchronous_commit=off, prepared INSERT, commit every 10", None, RunPlan::new(A_ROWS, prepared(Some(10))).session("synchronous_commit", "off")))
            .rule(Rule::new(0, 1, "a large log buffer beats a small one"))
            .rule(Rule::new(2, 3, "synchronous_commit=off speeds up small commits").seed(SeedFactor::None))
            .note("wal_buffers needs a restart: only on the lab's private server. synchronous_commit is a session setting.")
            .done(),
        exp("C4", "All optimisations together vs the plain baseline", "000 Table 11 (DB2 tests 1, 22, 111)", "Combining the optimisations is 1.8x faster than an already tuned load and ~100x faster than the naive one")
            .v(note_var("plain: prepared INSERT per row, autocommit", "test 1: ~18,000 s extrapolated to 1M rows", RunPlan::new(SLOW, prepared(None))))
            .v(base(var("tuned: multi-row VALUES 10 rows, commit every 1000", Some(("test 22: 282.02 s (1M rows)", 282.02)), RunPlan::new(COPY_ROWS, multi_row(10, 1000)))))
            .v(var(
                "all together: TRUNCATE + COPY FREEZE binary in one transaction, synchronous_commit=off",
                Some(("test 111: 160.45 s", 160.45)),
                RunPlan::new(1_000_000, freeze.clone()).session("synchronous_commit", "off"),
            ))
            .rule(Rule::new(1, 2, "all optimisations together beat the tuned baseline"))
            .note("Row counts differ (the plain method would take hours at 1M rows); the verdict compares time per row and nothing is extrapolated.")
            .done(),
        exp("C5", "The cost after the load: first scan, VACUUM, index build", "000 section 4 (dirty pages written later)", "A load is not done at COMMIT: later work (hint bits, vacuum, indexes) adds to the time until the table is query-ready")
            .v(base(var(
                "COPY binary, then first scan, VACUUM (FREEZE, ANALYZE), CREATE INDEX",
                None,
                RunPlan::new(D_ROWS, copy_binary(1))
                    .followup("first_scan", "SELECT count(*) FROM {t} WHERE fieldint1 = 0")
                    .followup("vacuum", "VACUUM (FREEZE, ANALYZE) {t}")
                    .followup("index_build", "CREATE INDEX ON {t} (fieldint1)"),
            )))
            .v(var(
                "TRUNCATE + COPY FREEZE, then first scan, VACUUM (FREEZE, ANALYZE), CREATE INDEX",
                None,
                RunPlan::new(D_ROWS, freeze)
                    .followup("first_scan", "SELECT count(*) FROM {t} WHERE fieldint1 = 0")
                    .followup("vacuum", "VACUUM (FREEZE, ANALYZE) {t}")
                    .followup("index_build", "CREATE INDEX ON {t} (fieldint1)"),
            ))
            .rule(Rule::new(0, 1, "loading frozen rows makes the table query-ready sooner").metric(Metric::ExtraPerRow("query_ready_seconds")).seed(SeedFactor::None))
            .note("Seconds are the load alone; extras hold each later step and query_ready_seconds (the load plus all of them), and followup_wal_bytes the WAL they wrote.")
            .done(),
    ]
}

fn group_d() -> Vec<ExperimentDef> {
    let streams = |n: usize| copy_binary(n);
    let batched = |n: usize, per: Option<u64>, lock: bool| Method::Copy {
        binary: true,
        streams: n,
        rows_per_copy: per,
        lock,
        freeze: false,
    };
    let mut d1 = exp(
        "D1",
        "Parallel COPY streams (consumers)",
        "002 (SqlBulkCopy consumers)",
        "More parallel streams load faster: 4 consumers are 2.9x faster than 1",
    );
    for (n, seed) in [
        (1, Some(("1 consumer: 56.5 s (6M rows)", 56.5))),
        (2, None),
        (4, Some(("4: 19.3 s", 19.3))),
        (6, None),
        (8, Some(("8: 16.9 s", 16.9))),
        (12, None),
    ] {
        let v = var(
            format!("{n} COPY binary stream(s)"),
            seed,
            RunPlan::new(D_ROWS, streams(n)),
        );
        d1 = d1.v(if n == 1 { base(v) } else { v });
    }
    d1 = d1.v(var(
        "inrush load: CSV parsed by the pipeline, binary COPY over 4 connections",
        None,
        RunPlan::new(D_ROWS, Method::InrushLoad { connections: 4 }),
    ));
    let mut d2 = exp(
        "D2",
        "Batch size: rows per COPY (and commit)",
        "002 (SqlBulkCopy BatchSize)",
        "Do not cut the stream into small batches: 500-row batches are 5x slower than one batch",
    );
    for (per, seed) in [
        (Some(500u64), Some(("500: 83.5 s (log 113 MB)", 83.5))),
        (Some(1000), Some(("1000: 28.2 s", 28.2))),
        (Some(10_000), Some(("10k: 16.98 s", 16.98))),
        (Some(100_000), Some(("100k: 16.80 s", 16.80))),
        (None, Some(("whole stream: 16.7 s (log 6 MB)", 16.7))),
    ] {
        let label = per.map_or("one COPY per stream".to_string(), |n| {
            format!("{n} rows per COPY")
        });
        let v = var(
            format!("4 streams, {label}"),
            seed,
            RunPlan::new(D_ROWS, batched(4, per, false)),
        );
        d2 = d2.v(if per.is_none() { base(v) } else { v });
    }
    let mut d6 = exp("D6", "Two secondary indexes present, batch size sweep", "002 (indexes during SqlBulkCopy)", "With indexes present, mid-sized batches (2000) load fastest; 100-row batches are 5x slower");
    for (per, s) in [(100u64, 273.0), (1000, 98.0), (2000, 56.0), (5000, 91.0)] {
        let plan = RunPlan::new(300_000, batched(2, Some(per), false))
            .setup("CREATE INDEX ON {t} (fieldint1, fieldint2, fieldint3)")
            .setup("CREATE INDEX ON {t} (fieldchar1, fieldchar2, fieldchar3)");
        let v = var(
            format!("2 streams, {per} rows per COPY"),
            Some((&format!("{s} s (int + varchar indexes)"), s)),
            plan,
        );
        d6 = d6.v(if per == 1000 { base(v) } else { v });
    }
    let mut d7 = exp(
        "D7",
        "Linearity: 1x to 10x the rows",
        "002 (6M to 60M rows)",
        "Load time grows linearly with the rows (60M rows: 10.7x the time of 6M)",
    );
    for (x, s) in [(1u64, 23.3), (2, 47.6), (4, 95.9), (8, 184.9), (10, 248.3)] {
        let v = var(
            format!("{x}x rows, 2 streams"),
            Some((&format!("{}M rows: {s} s", 6 * x), s)),
            RunPlan::new(150_000 * x, streams(2)),
        );
        d7 = d7.v(if x == 1 { base(v) } else { v });
    }
    let pk = "ALTER TABLE {t} ADD PRIMARY KEY (fieldint1)";
    vec![
        d1.rule(Rule::new(0, 2, "4 parallel streams beat 1")).note("Each stream is its own connection running COPY binary over a contiguous share of the rows (the lab's own streams); the last variation is inrush's own load (inrush_postgres::load) from a CSV file of the same rows written before timing, so it also parses the CSV.").done(),
        d2.rule(Rule::new(0, 4, "one COPY per stream beats 500-row batches")).note("Each batch is its own COPY statement and transaction (SqlBulkCopy's BatchSize).").done(),
        exp("D3", "Table lock with parallel streams", "002 (TABLOCK)", "With parallel streams, take the table lock (bulk update lock): without it the load took 69.6 s instead of 19.3 s")
            .v(base(var("4 streams, no lock", Some(("no TABLOCK: 69.6 s (log 2.4 GB)", 69.6)), RunPlan::new(D_ROWS, streams(4)))))
            .v(var("4 streams, LOCK TABLE ... IN EXCLUSIVE MODE in each", Some(("TABLOCK (4 consumers): 19.3 s", 19.3)), RunPlan::new(D_ROWS, batched(4, None, true))))
            .rule(Rule::new(0, 1, "a table lock speeds up parallel streams"))
            .note("PostgreSQL has no shared bulk-update lock: an EXCLUSIVE table lock serialises the streams.")
            .done(),
        exp("D4", "Identical rows vs random rows", "002 (wire compression)", "Nothing is compressed on the wire: identical and random rows load in the same time (37.0 s both)")
            .v(base(var("random rows, 2 streams", Some(("4M rows: 37.0 s", 37.0)), RunPlan::new(D_ROWS, streams(2)))))
            .v(var("identical rows, 2 streams", Some(("37.0 s", 37.0)), RunPlan::new(D_ROWS, streams(2)).data(DataKind::Identical)))
            .rule(Rule::new(0, 1, "identical rows load no faster than random ones").same())
            .done(),
        exp("D5", "Heap vs primary key; sorted vs random keys; 1 vs N streams", "002 (clustered index)", "A heap loads fastest; a clustered key costs 2x, more with random keys")
            .v(base(var("heap, 1 stream", Some(("heap: 37 s", 37.0)), RunPlan::new(D_ROWS, streams(1)))))
            .v(var("primary key, sorted keys, 1 stream", Some(("clustered, sorted: 79.6 s", 79.6)), RunPlan::new(D_ROWS, streams(1)).data(DataKind::SortedKey).setup(pk)))
            .v(var("primary key, random keys, 1 stream", Some(("clustered, random: 96.7 s", 96.7)), RunPlan::new(D_ROWS, streams(1)).data(DataKind::RandomKey).setup(pk)))
            .v(var("primary key, sorted keys, 4 streams", None, RunPlan::new(D_ROWS, streams(4)).data(DataKind::SortedKey).setup(pk)))
            .v(var("primary key, random keys, 4 streams", None, RunPlan::new(D_ROWS, streams(4)).data(DataKind::RandomKey).setup(pk)))
            .rule(Rule::new(2, 0, "a heap loads faster than a table with a random-order key"))
            .note("PostgreSQL tables are heaps; the key is a B-tree beside them, not a clustered order.")
            .done(),
        d6.rule(Rule::new(0, 2, "2000-row batches beat 100-row batches with indexes present")).done(),
        d7.rule(Rule::new(4, 0, "time per row stays the same from 1x to 10x rows").same().seed(SeedFactor::Given(248.3 / 10.0 / 23.3))).done(),
        exp("D8", "Producers and consumers at once vs serialised", "002 (producers and consumers)", "Producing (reading, encoding) while consuming (loading) overlaps the work: 4+4 together took 25.9 s")
            .v(base(var("2 producers first, then 2 COPY streams", None, RunPlan::new(D_ROWS, Method::Produce { streams: 2, overlap: false }))))
            .v(var("2 producers and 2 COPY streams at once", Some(("4+4 together: 25.9 s", 25.9)), RunPlan::new(D_ROWS, Method::Produce { streams: 2, overlap: true })))
            .rule(Rule::new(0, 1, "producing while loading beats producing first").seed(SeedFactor::None))
            .note("Producers run inrush's generator, parse the rows and encode binary COPY, 5000 rows a chunk; the time includes producing.")
            .done(),
    ]
}

/// `inrush lab list`: every experiment of `all` with its variations and the field report's figures,
/// and why what does not apply to the engine does not.
pub fn list_text(all: Vec<ExperimentDef>) -> String {
    let mut out = String::new();
    for e in all {
        out.push_str(&format!(
            "{}  {}\n    report: {}\n    advice: {}\n",
            e.id, e.title, e.seed_source, e.advice
        ));
        if let Some(reason) = &e.unavailable {
            out.push_str(&format!("    {reason}\n"));
            continue;
        }
        for v in &e.variations {
            if let Some(reason) = &v.unavailable {
                out.push_str(&format!("    x {}: {reason}\n", v.label));
                continue;
            }
            out.push_str(&format!(
                "    {} {} ({} rows){}\n",
                if v.baseline { "*" } else { "-" },
                v.label,
                v.plan.rows,
                v.seed_figure
                    .as_ref()
                    .map_or(String::new(), |f| format!("  [reported: {f}]"))
            ));
        }
    }
    out.push_str("\n* baseline. Rows per variation are for --scale 1.0 (the quick default).\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_eight_unique_ids_in_order() {
        let ids: Vec<&str> = catalogue().iter().map(|e| e.id).collect();
        let mut expected = Vec::new();
        for (g, n) in [("A", 6), ("B", 9), ("C", 5), ("D", 8)] {
            expected.extend((1..=n).map(|i| format!("{g}{i}")));
        }
        assert_eq!(ids, expected);
    }

    #[test]
    fn exactly_one_baseline_and_valid_rules() {
        for e in catalogue() {
            assert_eq!(
                e.variations.iter().filter(|v| v.baseline).count(),
                1,
                "{}",
                e.id
            );
            assert!(!e.rules.is_empty(), "{}", e.id);
            for r in &e.rules {
                assert!(
                    r.fast < e.variations.len() && r.slow < e.variations.len() && r.fast != r.slow,
                    "{}",
                    e.id
                );
            }
            let labels: std::collections::BTreeSet<&str> =
                e.variations.iter().map(|v| v.label.as_str()).collect();
            assert_eq!(
                labels.len(),
                e.variations.len(),
                "{}: duplicate labels",
                e.id
            );
            for v in &e.variations {
                if let Some(s) = v.seed_seconds {
                    assert!(s > 0.0 && v.seed_figure.is_some(), "{} {}", e.id, v.label);
                }
            }
        }
    }
}

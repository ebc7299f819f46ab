//! The catalogue through ODBC: the experiments about how rows are sent (group A: literal SQL,
//! commits, parameter arrays; group D: connections and batch sizes), with each variation as
//! the field reports' programs ran it through a DB2 CLI or ODBC driver: one prepared INSERT
//! bound to parameter arrays of so many rows per execute. What needs a database's own DDL or
//! settings (groups B and C, table locks, COPY) is marked not applicable, with the reason, so
//! the report lists every variation either way.

use crate::catalogue::{catalogue as postgres_catalogue, ExperimentDef, VariationDef};
use crate::plan::{Method, RunPlan};
use crate::verdict::{Metric, Rule, SeedFactor};
use inrush_odbc::lab;

/// A variation's plan through ODBC, or why it has none.
type Mapped = Result<RunPlan, String>;

const NEEDS_DDL: &str = "not applicable over ODBC: it needs the database's own DDL or settings, which the lab words for PostgreSQL and MariaDB only (run it with --to postgresql://... or mysql://...)";
const NO_COPY: &str = "not applicable over ODBC: COPY is PostgreSQL's; over ODBC the load path is inrush's own parameter arrays";
const ONE_WRITER: &str = "not applicable on SQLite: it takes one writing connection at a time";

/// Rows per execute of the streams that stand for COPY's (D group).
pub(crate) const STREAM_ARRAY: usize = 1000;

/// Every experiment, mapped for a database that takes several writing connections at once
/// (`parallel`) or not.
pub fn catalogue(parallel: bool) -> Vec<ExperimentDef> {
    postgres_catalogue()
        .into_iter()
        .map(|e| experiment(e, parallel))
        .collect()
}

fn experiment(mut e: ExperimentDef, parallel: bool) -> ExperimentDef {
    if e.id.starts_with(['B', 'C']) || ["D3", "D8"].contains(&e.id) {
        e.unavailable = Some(match e.id {
            "D3" => "not applicable over ODBC: a table lock's statement differs by database".into(),
            "D8" => {
                "not applicable over ODBC: its producers encode PostgreSQL's binary COPY".into()
            }
            _ => NEEDS_DDL.into(),
        });
        e.notes.clear();
        return e;
    }
    for (i, v) in e.variations.iter_mut().enumerate() {
        match map(e.id, i, &v.plan, parallel) {
            Ok(plan) => {
                v.label = label(&plan.method, &v.label);
                v.plan = plan;
            }
            Err(reason) => v.unavailable = Some(reason),
        }
    }
    if e.id == "A4" {
        let plan = plain(RunPlan::new(
            e.variations[0].plan.rows,
            arrays(10_000, 10_000),
        ));
        e.variations.push(VariationDef {
            label: label(&plan.method, ""),
            baseline: false,
            seed_figure: None,
            seed_seconds: None,
            plan,
            unavailable: None,
        });
    }
    if let Some(title) = title(e.id) {
        e.title = title;
    }
    if let Some(rules) = rules(e.id) {
        e.rules = rules;
    }
    e.notes = notes(e.id).iter().map(|n| n.to_string()).collect();
    e
}

/// `rows_per_execute` rows per execute of a prepared one-row INSERT, committed every
/// `commit_every` (the field reports' array inserts; [`Method::MultiRow`] is how the lab's
/// plans name them).
fn arrays(rows_per_execute: usize, commit_every: u64) -> Method {
    Method::MultiRow {
        rows_per_statement: rows_per_execute,
        commit_every,
        lock: false,
    }
}

/// The plan's rows, data and method on the lab's table in portable SQL.
fn plain(plan: RunPlan) -> RunPlan {
    let data = plan.data;
    RunPlan::new(plan.rows, plan.method)
        .create(lab::TABLE)
        .data(data)
}

fn map(id: &str, i: usize, pg: &RunPlan, parallel: bool) -> Mapped {
    let base = plain(pg.clone());
    let method = match &pg.method {
        Method::Pipelined { .. } => {
            return Err("not applicable over ODBC: a driver runs one execute at a time".into())
        }
        Method::Copy {
            binary: false,
            streams: 1,
            ..
        } if id == "A5" => Method::InrushLoad { connections: 1 },
        Method::Copy {
            lock: false,
            freeze: false,
            ..
        } if id.starts_with('D') => pg.method.clone(),
        Method::Copy { .. } | Method::Produce { .. } => return Err(NO_COPY.into()),
        Method::InsertSelect | Method::CopyPipe => return Err(NEEDS_DDL.into()),
        other => other.clone(),
    };
    if !parallel && method.connections() > 1 {
        return Err(ONE_WRITER.into());
    }
    let plan = RunPlan { method, ..base };
    Ok(match (id, i) {
        ("D5", 1..=4) if !parallel => {
            return Err(
                "not applicable on SQLite: it adds no primary key to a table it made".into(),
            )
        }
        ("D5", 1..=4) => plan.setup("ALTER TABLE {t} ADD PRIMARY KEY (fieldint1)"),
        ("D6", _) => plan
            .setup("CREATE INDEX {s}_i1 ON {t} (fieldint1, fieldint2, fieldint3)")
            .setup("CREATE INDEX {s}_i2 ON {t} (fieldchar1, fieldchar2, fieldchar3)"),
        _ => plan,
    })
}

/// What the variation does through ODBC, in its words.
fn label(method: &Method, label: &str) -> String {
    let commits = |every: Option<u64>| match every {
        None => "autocommit".to_string(),
        Some(n) => format!("commit every {n}"),
    };
    match method {
        Method::Literal => "literal INSERT per row, autocommit".into(),
        Method::Prepared { commit_every, .. } => {
            format!("prepared INSERT per row, {}", commits(*commit_every))
        }
        Method::MultiRow {
            rows_per_statement,
            commit_every,
            ..
        } => format!(
            "parameter arrays, {rows_per_statement} rows/execute, {}",
            commits(Some(*commit_every))
        ),
        Method::Copy { .. } => label
            .replace("one COPY per stream", "one commit per connection")
            .replace("rows per COPY", "rows per commit")
            .replace(
                "COPY binary stream(s)",
                &format!("connection(s), parameter arrays of {STREAM_ARRAY} rows"),
            )
            .replace(" streams", " connections")
            .replace(" stream", " connection"),
        Method::InrushLoad { connections } => format!(
            "inrush load: CSV parsed by the pipeline, parameter arrays over {connections} connection(s)"
        ),
        _ => label.to_string(),
    }
}

fn title(id: &str) -> Option<&'static str> {
    Some(match id {
        "A4" => "Parameter arrays: rows per execute x rows per commit",
        "A5" => "inrush's load vs array inserts, one connection",
        "A6" => "Log per row: single-row INSERTs vs 1000-row parameter arrays",
        "D1" => "Parallel connections, each with its parameter arrays",
        "D2" => "Batch size: rows per commit, 4 connections",
        _ => return None,
    })
}

fn rules(id: &str) -> Option<Vec<Rule>> {
    Some(match id {
        "A5" => vec![Rule::new(0, 2, "inrush's load beats 10-row array inserts")],
        "A6" => vec![Rule::new(
            0,
            1,
            "1000-row arrays write less log per row than single-row INSERTs",
        )
        .metric(Metric::WalBytesPerRow)
        .seed(SeedFactor::Given(112_511.0 / 6_703.0))],
        "D1" => vec![Rule::new(0, 2, "4 parallel connections beat 1")],
        "D2" => vec![Rule::new(
            0,
            4,
            "one commit per connection beats committing every 500 rows",
        )],
        _ => return None,
    })
}

fn notes(id: &str) -> &'static [&'static str] {
    match id {
        "A1" | "A2" | "A3" => &["Through ODBC: SQLExecDirect of literal SQL per row, or one prepared INSERT executed per row (SQLExecute)."],
        "A4" => &["The field report's array inserts are DB2 CLI row arrays; through ODBC they are exactly that: one prepared INSERT bound to parameter arrays (SQL_ATTR_PARAMSET_SIZE) of so many rows per execute. A driver that runs one statement per row of an array (psqlODBC, SQLite's) shows it here: its arrays save round trips, not statements."],
        "A5" => &["inrush's own load over ODBC (parameter arrays of 1000 rows, multi-row INSERTs where the driver runs one statement per row of an array) loads 30x the rows of the INSERT runs; the verdict compares time per row."],
        "A6" => &["The log per row is read on PostgreSQL (WAL bytes, pg_current_wal_insert_lsn) and MariaDB (redo bytes, Innodb_lsn_current), server-wide; other databases report none through the lab, and the verdict says so. On Oracle, compare 'redo entries' in V$MYSTAT before and after a load to see an array insert run row by row."],
        "D1" | "D2" | "D4" | "D5" | "D6" | "D7" => &["Each connection inserts a contiguous share of the rows with parameter arrays of 1000 rows per execute, in its own transaction."],
        _ => &[],
    }
}

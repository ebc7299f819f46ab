//! The catalogue on MariaDB: each experiment of the PostgreSQL catalogue with its variations
//! mapped onto InnoDB (same ids, seeds, row counts, baselines and verdict rules; MariaDB's SQL
//! from `inrush_mysql::lab`), or marked "not applicable on MariaDB" with the reason, so the
//! report lists every variation either way.
//!
//! A variation with no SQL of its own (a plain table, rows sent one way or another) maps by
//! itself: COPY becomes `LOAD DATA LOCAL INFILE`, multi-row VALUES and prepared INSERTs stay
//! what they are. Those with tables, keys, triggers or settings of their own are mapped one by
//! one below.

use crate::catalogue::{catalogue as postgres_catalogue, ExperimentDef, VariationDef};
use crate::plan::{Method, RunPlan};
use crate::verdict::{Metric, Rule, SeedFactor};
use inrush_mysql::lab;

/// A variation's plan on MariaDB, or why it has none.
type Mapped = Result<RunPlan, &'static str>;

const PIPELINING: &str = "not applicable on MariaDB: the client protocol driver (mysql_async) sends one statement at a time; MariaDB's own array binding (COM_STMT_BULK_EXECUTE) is not exposed by it";
const BINARY_COPY: &str =
    "not applicable on MariaDB: LOAD DATA reads text only, there is no binary load format";

/// Every experiment, mapped onto MariaDB.
pub fn catalogue() -> Vec<ExperimentDef> {
    postgres_catalogue().into_iter().map(experiment).collect()
}

fn experiment(mut e: ExperimentDef) -> ExperimentDef {
    if let Some(reason) = group_c_unavailable(e.id) {
        e.unavailable = Some(format!("not applicable on MariaDB: {reason}"));
        e.notes.clear();
        return e;
    }
    let mut extra = Vec::new();
    for (i, v) in e.variations.iter_mut().enumerate() {
        let base = plain(&v.plan);
        let mapped = match e.id.as_bytes()[0] {
            b'A' => group_a(e.id, i, base),
            b'B' => group_b(e.id, i, base),
            b'C' => group_c(i, base),
            _ => group_d(e.id, i, base),
        };
        // What does not apply keeps PostgreSQL's label: that is what the reader misses.
        match mapped {
            Ok(plan) => {
                v.label = relabel(e.id, i, &v.label);
                v.plan = plan;
            }
            Err(reason) => v.unavailable = Some(reason.to_string()),
        }
    }
    let first = plain(&e.variations[0].plan);
    match e.id {
        "A5" => extra.push(new_variation(
            "inrush load: CSV parsed by the pipeline, LOAD DATA LOCAL over 1 connection",
            RunPlan::new(
                e.variations[2].plan.rows,
                Method::InrushLoad { connections: 1 },
            )
            .create(lab::table("")),
        )),
        "B6" => extra.push(new_variation(
            "AUTO_INCREMENT column (InnoDB's counter)",
            first.create(lab::table(lab::AUTO_INCREMENT_COLUMN)),
        )),
        _ => {}
    }
    e.variations.extend(extra);
    if let Some(title) = title(e.id) {
        e.title = title;
    }
    if let Some(rules) = rules(e.id) {
        e.rules = rules;
    }
    e.notes = notes(e.id).iter().map(|n| n.to_string()).collect();
    if e.id.starts_with('B') {
        e.notes.push("Group B loads with 100-row prepared INSERT statements committed every 1000 rows (the field report's test 31 inserted row by row, committing every 1000), so the server-side work under test is not drowned in client round trips.".into());
    }
    e
}

fn new_variation(label: &str, plan: RunPlan) -> VariationDef {
    VariationDef {
        label: label.into(),
        baseline: false,
        seed_figure: None,
        seed_seconds: None,
        plan,
        unavailable: None,
    }
}

/// The plan's rows, data and method on MariaDB's plain table, without PostgreSQL's SQL.
fn plain(pg: &RunPlan) -> RunPlan {
    RunPlan::new(pg.rows, pg.method.clone())
        .create(lab::table(""))
        .data(pg.data)
}

/// What the method of a plan that maps by itself becomes.
fn method(plan: RunPlan) -> Mapped {
    match &plan.method {
        Method::Pipelined { .. } => Err(PIPELINING),
        Method::Copy { freeze: true, .. } => {
            Err("not applicable on MariaDB: COPY FREEZE (rows written frozen) is PostgreSQL's")
        }
        Method::InsertSelect | Method::CopyPipe => Err("not applicable on MariaDB"),
        _ => Ok(plan),
    }
}

fn setup(mut plan: RunPlan, sql: impl IntoIterator<Item = String>) -> RunPlan {
    for s in sql {
        plan = plan.setup(s);
    }
    plan
}

fn group_a(id: &str, i: usize, base: RunPlan) -> Mapped {
    match (id, i) {
        ("A5", 3) => Err(BINARY_COPY),
        _ => method(base),
    }
}

fn group_b(id: &str, i: usize, base: RunPlan) -> Mapped {
    let fk_table = || setup(base.clone(), lab::parent_table());
    let checked_after = |plan: RunPlan, n: u32| {
        let mut plan = plan.session("foreign_key_checks", "OFF");
        for (k, col) in [(1, "fieldint1"), (2, "fieldint2")]
            .into_iter()
            .take(n as usize)
        {
            plan = plan
                .setup(lab::foreign_key(k, col))
                .after(&format!("check_fk{k}"), lab::orphans(col));
        }
        plan
    };
    let indexed = ["fieldint1", "fieldint2", "fieldint3", "fieldchar1"];
    let triggers = |insert: bool, n: u32| {
        setup(
            setup(base.clone(), lab::trigger_tables()),
            (1..=n).map(|k| lab::trigger(insert, k)),
        )
    };
    Ok(match (id, i) {
        ("B1", 1) => base.setup(lab::check(1)),
        ("B1", 2) => base.setup(lab::check(1)).setup(lab::check(2)),
        ("B2", 0) => fk_table(),
        ("B2", 1) => fk_table().setup(lab::foreign_key(1, "fieldint1")),
        ("B2", 2) => fk_table()
            .setup(lab::foreign_key(1, "fieldint1"))
            .setup(lab::foreign_key(2, "fieldint2")),
        ("B2", 3) => checked_after(fk_table(), 1),
        ("B2", 4) => checked_after(fk_table(), 2),
        ("B3", 1) => triggers(true, 1),
        ("B3", 2) => triggers(true, 2),
        ("B3", 3) => triggers(false, 1),
        ("B3", 4) => triggers(false, 2),
        ("B4", 1..=4) => setup(
            base,
            indexed
                .iter()
                .take(i)
                .enumerate()
                .map(|(n, col)| lab::index(n, &[*col])),
        ),
        ("B4", 5) => base.after("add_index", lab::add_indexes(&[&["fieldint1"]])),
        ("B4", 6) => {
            let all: Vec<&[&str]> = indexed.iter().map(std::slice::from_ref).collect();
            base.after("add_indexes", lab::add_indexes(&all))
        }
        ("B5", 1 | 2) => base.setup(lab::primary_key("fieldint1")),
        ("B6", _) => {
            let cache = [1, 5, 20, 100, 1000][i.min(4)];
            // The sequence first: the table's default names it.
            let (sequence, column) = lab::sequence(cache);
            base.create(sequence).setup(lab::table(&column))
        }
        ("B7", 0) => base.create(lab::table_with("varchar(10)", "")),
        ("B7", 1) => base.create(lab::table_with("text", "")),
        ("B9", 0) => setup(base, lab::half_deleted()),
        ("B9", 2) => {
            return Err("not applicable on MariaDB: InnoDB has no per-table fillfactor (innodb_fill_factor applies to index builds only)")
        }
        _ => return method(base),
    })
}

/// Group C is PostgreSQL's logging and storage; only C3's durability of small commits has an
/// InnoDB counterpart.
fn group_c_unavailable(id: &str) -> Option<&'static str> {
    match id {
        "C1" => Some("it compares INSERT ... SELECT with COPY TO piped into COPY FROM, PostgreSQL's own pair"),
        "C2" => Some("InnoDB tables are always redo-logged (no UNLOGGED tables, no wal_level=minimal, no COPY FREEZE)"),
        "C4" => Some("its optimisations (COPY FREEZE, synchronous_commit) are PostgreSQL's"),
        "C5" => Some("hint bits, VACUUM and freezing are PostgreSQL's; InnoDB has no later pass over loaded rows"),
        _ => None,
    }
}

fn group_c(i: usize, base: RunPlan) -> Mapped {
    match i {
        0 | 1 => Err("not applicable on MariaDB: innodb_log_buffer_size cannot be changed while the server runs, and the lab does not restart a MariaDB"),
        2 => Ok(base.server("innodb_flush_log_at_trx_commit", "1", false)),
        _ => Ok(base.server("innodb_flush_log_at_trx_commit", "2", false)),
    }
}

fn group_d(id: &str, i: usize, base: RunPlan) -> Mapped {
    Ok(match (id, i) {
        ("D5", 1..=4) => base.setup(lab::primary_key("fieldint1")),
        ("D6", _) => base
            .setup(lab::index(0, &["fieldint1", "fieldint2", "fieldint3"]))
            .setup(lab::index(1, &["fieldchar1", "fieldchar2", "fieldchar3"])),
        _ => return method(base),
    })
}

/// The label on MariaDB: COPY is `LOAD DATA`, and what is named differently is renamed.
fn relabel(id: &str, i: usize, label: &str) -> String {
    let named = match (id, i) {
        ("A5", 2) => "LOAD DATA LOCAL INFILE, one stream",
        ("B2", 3) => "1 foreign key, foreign_key_checks=0 during the load, checked after by an anti-join (inrush's way)",
        ("B2", 4) => "2 foreign keys, foreign_key_checks=0 during the load, checked after by an anti-join (inrush's way)",
        ("B4", 5) => "1 index added after the load",
        ("B4", 6) => "4 indexes added after the load (one ALTER TABLE)",
        ("B5", 0) => "no primary key (InnoDB's hidden row id)",
        ("B7", 1) => "fieldchar3 text, 4000 incompressible characters (stored off-page)",
        ("B8", 1) => "LOCK TABLES ... WRITE for the load (autocommit off, COMMIT every 1000)",
        ("B9", 0) => "half-deleted table (free space reused)",
        ("C3", 2) => "innodb_flush_log_at_trx_commit=1, prepared INSERT, commit every 10",
        ("C3", 3) => "innodb_flush_log_at_trx_commit=2, prepared INSERT, commit every 10",
        ("D1", 6) => "inrush load: CSV parsed by the pipeline, LOAD DATA LOCAL over 4 connections",
        ("D3", 1) => "4 streams, LOCK TABLES ... WRITE around each LOAD DATA",
        ("D5", 0) => "no primary key (hidden row id), 1 stream",
        _ => "",
    };
    if !named.is_empty() {
        return named.to_string();
    }
    label
        .replace("identity column", "DEFAULT NEXTVAL(sequence)")
        .replace("COPY binary", "LOAD DATA")
        .replace("COPY", "LOAD DATA")
}

fn title(id: &str) -> Option<&'static str> {
    Some(match id {
        "A5" => "LOAD DATA LOCAL INFILE (the load utility) vs array inserts, one stream",
        "A6" => "Redo per row: single-row INSERTs vs the multi-row paths",
        "B2" => "Foreign keys checked during the load vs checked after (foreign_key_checks=0 and an anti-join)",
        "B6" => "Sequence cache size (and AUTO_INCREMENT)",
        "B7" => "Large values stored off-page vs short values",
        "C3" => "Durability of small commits (innodb_flush_log_at_trx_commit)",
        "D1" => "Parallel LOAD DATA streams (consumers)",
        "D2" => "Batch size: rows per LOAD DATA (and commit)",
        _ => return None,
    })
}

fn rules(id: &str) -> Option<Vec<Rule>> {
    Some(match id {
        "A5" => vec![Rule::new(0, 2, "LOAD DATA beats 10-row array inserts")],
        "A6" => vec![Rule::new(
            0,
            2,
            "LOAD DATA writes less redo per row than single-row INSERTs",
        )
        .metric(Metric::WalBytesPerRow)
        .seed(SeedFactor::Given(112_511.0 / 6_703.0))],
        "B2" => vec![Rule::new(
            2,
            4,
            "checking 2 foreign keys after the load beats checking them during it",
        )],
        "B6" => vec![Rule::new(
            0,
            4,
            "a sequence cache of 1000 beats a cache of 1",
        )],
        "C3" => vec![Rule::new(
            2,
            3,
            "innodb_flush_log_at_trx_commit=2 speeds up small commits",
        )
        .seed(SeedFactor::None)],
        "D2" => vec![Rule::new(
            0,
            4,
            "one LOAD DATA per stream beats 500-row batches",
        )],
        _ => return None,
    })
}

fn notes(id: &str) -> &'static [&'static str] {
    match id {
        "A4" => &["The field report's array inserts are DB2 CLI row arrays; here they are multi-row INSERT ... VALUES statements prepared on the server (binary protocol)."],
        "A5" => &["LOAD DATA runs load 30x the rows of the INSERT runs; the verdict compares time per row. LOAD DATA LOCAL INFILE streams the rows from the client's memory; inrush's load sends the same statement, fed by its parse and check pipeline from a CSV file of the rows written before timing."],
        "A6" => &["MariaDB counts no redo records: the figure is redo bytes per row, the difference of Innodb_lsn_current over the run (server-wide; the binary log, when on, is not counted)."],
        "B2" => &["The parent table holds keys 0..999; fieldint1 and fieldint2 are reduced modulo 1000 in every variation. MariaDB cannot add a foreign key without checking it (no NOT VALID), and adding one rebuilds the table, so the after-variations keep the keys and load with foreign_key_checks=0, then find rows without a parent with one anti-join per key, as inrush's own load does; the key's index is kept up to date either way."],
        "B3" => &["AFTER INSERT ... FOR EACH ROW triggers; the UPDATE triggers bump one of 1000 counter rows (by key)."],
        "B4" => &["Times after the load include the ALTER TABLE that adds the indexes (InnoDB sorts and builds them in one pass)."],
        "B5" => &["InnoDB tables are clustered on their primary key: random keys insert all over the tree and split pages, sorted keys append. Without a key InnoDB clusters on a hidden row id in insert order. The field report gives no sorted-key figure."],
        "B6" => &["MariaDB sequences (10.3+) cache values as DB2's identity cache does. The AUTO_INCREMENT variation uses InnoDB's counter, whose locking follows innodb_autoinc_lock_mode: a start-up setting the lab cannot change, recorded in the environment."],
        "B7" => &["With the DYNAMIC row format InnoDB stores a long TEXT value off-page, leaving a 20-byte pointer in the row. The large variation also sends ~13x the bytes; compare the redo bytes per row."],
        "B8" => &["LOCK TABLES commits an open transaction and START TRANSACTION releases the lock, so the locked load turns autocommit off, locks, commits every 1000 rows and unlocks at the end."],
        "B9" => &["The prefilled rows (as many as the load, every other one deleted) are not timed and not counted as loaded; InnoDB purges the deleted rows in the background."],
        "C3" => &["innodb_flush_log_at_trx_commit is set with SET GLOBAL for the run and put back after it."],
        "D1" => &["Each stream is its own connection running LOAD DATA LOCAL INFILE over a contiguous share of the rows; the last variation is inrush's own load into MariaDB from a CSV file of the same rows written before timing, so it also parses and checks the CSV."],
        "D2" => &["Each batch is its own LOAD DATA statement and transaction (SqlBulkCopy's BatchSize)."],
        "D3" => &["LOCK TABLES ... WRITE is exclusive: the streams take turns. MariaDB has no shared bulk-load lock."],
        "D5" => &["InnoDB has no heap: a table without a primary key is clustered on a hidden row id in insert order."],
        "D8" => &["Producers run inrush's generator and encode LOAD DATA text, 5000 rows a chunk; the time includes producing."],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variation_is_mapped_or_says_why_not() {
        let all = catalogue();
        assert_eq!(all.len(), 28);
        for e in &all {
            if e.unavailable.is_some() {
                assert!(e.id.starts_with('C'), "{}", e.id);
                continue;
            }
            for v in &e.variations {
                let what = format!("{} {}", e.id, v.label);
                match &v.unavailable {
                    Some(reason) => {
                        assert!(reason.starts_with("not applicable on MariaDB: "), "{what}")
                    }
                    None => {
                        let sql: Vec<&String> = std::iter::once(&v.plan.create)
                            .chain(&v.plan.setup)
                            .chain(v.plan.after.iter().map(|(_, s)| s))
                            .collect();
                        assert!(sql.iter().any(|s| s.ends_with("ENGINE=InnoDB")), "{what}");
                        for s in sql {
                            for pg in [
                                "generate_series",
                                "NOT VALID",
                                "autovacuum",
                                "plpgsql",
                                "VACUUM",
                            ] {
                                assert!(!s.contains(pg), "{what}: {s}");
                            }
                        }
                        assert!(
                            !matches!(
                                v.plan.method,
                                Method::Pipelined { .. } | Method::InsertSelect | Method::CopyPipe
                            ),
                            "{what}"
                        );
                        assert!(!v.label.contains("COPY"), "{what}");
                    }
                }
            }
            for r in &e.rules {
                assert!(
                    r.fast < e.variations.len() && r.slow < e.variations.len(),
                    "{}",
                    e.id
                );
            }
            assert_eq!(
                e.variations.iter().filter(|v| v.baseline).count(),
                1,
                "{}",
                e.id
            );
        }
    }
}

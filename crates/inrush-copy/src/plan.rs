//! What a copy will do, decided before anything changes: the tables the patterns select, each
//! designed for the target, and how far an earlier run of the same copy got with it (from the
//! target's copy ledger). `inrush copy --check` prints this and stops.

use crate::failed::{in_target, Failed};
use crate::pattern::matches;
use crate::CopyOptions;
use inrush_core::database::{Design, Note, Object, SchemaSource, SchemaTarget, Table};
use inrush_load::Error;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The ledger's step of a table made bare, and of its rows committed.
pub(crate) const CREATED: &str = "created";
/// Recorded before a table is made: where DDL commits by itself (MariaDB), a stop between the
/// table made and its `created` record leaves a table only this says the copy made.
pub(crate) const CREATING: &str = "creating";
pub(crate) const LOADED: &str = "loaded";
/// The ledger's record of a copy that finished, under no table.
pub(crate) const FINISHED: &str = "finished";

#[derive(Debug, Clone, Serialize)]
pub struct CopyPlan {
    /// The source, as the ledger names the copy.
    pub copy: String,
    pub source_engine: &'static str,
    pub target_engine: &'static str,
    /// Largest first: the order tables start in.
    pub tables: Vec<TablePlan>,
    pub not_copied: Vec<Object>,
    /// An earlier run of this copy finished.
    pub finished: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TablePlan {
    /// The source's table, with its names as the target gives them (see
    /// [`CopyOptions::lower_case`](crate::CopyOptions::lower_case)).
    pub source: Table,
    pub design: Design,
    /// The source's query of the copied columns.
    pub select: String,
    /// The steps an earlier run of this copy recorded as done.
    pub done: BTreeSet<String>,
    pub state: TableState,
}

/// How far earlier runs got with a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableState {
    /// Not begun: the table is made, then loaded.
    New,
    /// Made, its rows not committed (or not known to be): emptied and loaded again.
    InFlight,
    /// Its rows are in; what is left is built.
    Loaded,
}

impl TablePlan {
    pub fn name(&self) -> String {
        self.source.display_name()
    }

    pub(crate) fn done(&self, step: &str) -> bool {
        self.done.contains(step)
    }
}

/// The plan of copying what `opts` selects of `source` into `target`.
pub fn plan(
    source: &dyn SchemaSource,
    target: &dyn SchemaTarget,
    opts: &CopyOptions,
) -> Result<CopyPlan, Failed> {
    if opts.schema_only && opts.data_only {
        return Err(usage("--schema-only and --data-only: each leaves out what the other copies; give one, or neither for both"));
    }
    let mut database = source.schema().map_err(Failed::whole)?;
    // Another engine has no domains: their columns store the base type.
    let domains = match target.engine() == database.engine {
        true => Vec::new(),
        false => database.domains_as_base(),
    };
    let selected = |t: &Table| {
        let names = [t.name.clone(), t.display_name()];
        let any =
            |patterns: &[String]| patterns.iter().any(|p| names.iter().any(|n| matches(p, n)));
        (opts.tables.is_empty() || any(&opts.tables)) && !any(&opts.exclude)
    };
    // The tables as the target names them, beside the source's own (in the same order), which
    // the source's queries name.
    let named = match opts.lower_case {
        true => Cow::Owned(database.lower_cased(selected).map_err(|e| usage(&e))?),
        false => Cow::Borrowed(&database),
    };
    let tables: Vec<(&Table, &Table)> = database
        .tables
        .iter()
        .zip(&named.tables)
        .filter(|(t, _)| selected(t))
        .collect();
    if tables.is_empty() {
        return Err(usage(&format!(
            "no table of {} to copy{}",
            source.describe(),
            match opts.tables.is_empty() && opts.exclude.is_empty() {
                true => String::new(),
                false => " matches --tables and --exclude".into(),
            }
        )));
    }
    refuse_names(target, &tables)?;
    let copy = source.describe();
    let ledger = target
        .ledger(&copy)
        .map_err(|e| Failed::whole(in_target(e)))?;
    let mut done: HashMap<String, BTreeSet<String>> = HashMap::new();
    for (table, step) in ledger {
        done.entry(table).or_default().insert(step);
    }
    let finished = done.get("").is_some_and(|s| s.contains(FINISHED));
    let copied: HashSet<&str> = tables.iter().map(|(_, t)| t.name.as_str()).collect();
    let mut plans: Vec<TablePlan> = tables
        .iter()
        .map(|&(original, table)| {
            let mut design = target.design(table, &named);
            leave_out_orphan_keys(table, &copied, &mut design);
            for (_, column, domain) in domains.iter().filter(|d| d.0 == original.display_name()) {
                design.notes.push(Note::translated(format!(
                    "column {column}: domain {domain} became its base type, without its NOT NULL, default and CHECKs"
                )));
            }
            let done = done.remove(&design.name).unwrap_or_default();
            let state = match (done.contains(CREATED), done.contains(LOADED)) {
                (_, true) => TableState::Loaded,
                (true, false) => TableState::InFlight,
                (false, false) => TableState::New,
            };
            // A column's position is its name's in both tables.
            let columns: Vec<(String, String)> = design
                .columns
                .iter()
                .map(|name| {
                    let at = table.columns.iter().position(|c| &c.name == name);
                    let read = at.map_or(name, |i| &original.columns[i].name);
                    (read.clone(), name.clone())
                })
                .collect();
            TablePlan {
                select: source.select(original, &columns, target.engine()),
                source: table.clone(),
                design,
                done,
                state,
            }
        })
        .collect();
    let names: Vec<String> = plans.iter().map(|p| p.design.name.clone()).collect();
    for (i, plan) in plans.iter().enumerate() {
        if let Some(other) = plans[..i]
            .iter()
            .find(|o| o.design.name == plan.design.name)
        {
            return Err(usage(&format!(
                "{} and {} would both be {} in {}, which has one namespace: copy them apart (--exclude one)",
                other.name(),
                plan.name(),
                plan.design.name,
                target.engine()
            )));
        }
    }
    let existing: HashSet<String> = target
        .existing(&names)
        .map_err(|e| Failed::whole(in_target(e)))?
        .into_iter()
        .collect();
    for plan in &mut plans {
        let exists = existing.contains(&plan.design.name);
        if exists && plan.state == TableState::New && plan.done.contains(CREATING) {
            plan.state = TableState::InFlight;
        }
        if opts.data_only && !exists {
            return Err(usage(&format!(
                "--data-only: table {} is not in the target; copy without --data-only to make it",
                plan.design.name
            )));
        }
        if !opts.data_only && exists && plan.state == TableState::New {
            return Err(usage(&format!(
                "table {} is in the target already, and this copy did not make it: drop it, leave it out (--exclude {}), or copy rows into the tables there (--data-only)",
                plan.design.name,
                plan.source.name
            )));
        }
    }
    // The largest first, so that it does not start last and finish alone; then by name.
    plans.sort_by(|a, b| {
        let size = |p: &TablePlan| (p.source.bytes, p.source.rows_estimate);
        size(b).cmp(&size(a)).then_with(|| a.name().cmp(&b.name()))
    });
    if target.writers() == 1 {
        plans = parents_first(plans);
    }
    Ok(CopyPlan {
        copy,
        source_engine: source.engine(),
        target_engine: target.engine(),
        tables: plans,
        not_copied: database.not_copied,
        finished,
    })
}

/// `plans` reordered so that a table comes after the tables its foreign keys reference, for a
/// target with one writer whose loads check foreign keys (SQLite, where the keys are part of
/// the table); otherwise in the order given. A cycle is broken at its first table.
fn parents_first(mut plans: Vec<TablePlan>) -> Vec<TablePlan> {
    let mut ordered: Vec<TablePlan> = Vec::with_capacity(plans.len());
    while !plans.is_empty() {
        let ready = plans.iter().position(|p| {
            p.source.foreign_keys.iter().all(|k| {
                k.parent == p.source.name
                    || ordered.iter().any(|o| o.source.name == k.parent)
                    || !plans.iter().any(|q| q.source.name == k.parent)
            })
        });
        ordered.push(plans.remove(ready.unwrap_or(0)));
    }
    ordered
}

/// A foreign key whose parent table is not copied cannot be made: listed, not attempted.
fn leave_out_orphan_keys(table: &Table, copied: &HashSet<&str>, design: &mut Design) {
    for key in &table.foreign_keys {
        if !copied.contains(key.parent.as_str()) {
            let what = format!("foreign key {}", key.name);
            design.after_keys.retain(|s| s.what != what);
            design.notes.push(Note::left_out(format!(
                "foreign key {} of {}: its parent table {} is not copied",
                key.name,
                table.display_name(),
                key.parent
            )));
        }
    }
}

/// Every name the target cannot hold, said at once, before anything is made.
fn refuse_names(target: &dyn SchemaTarget, tables: &[(&Table, &Table)]) -> Result<(), Failed> {
    let refused: Vec<String> = tables
        .iter()
        .flat_map(|(_, table)| {
            let names = table.names();
            let refused: Vec<String> = names
                .iter()
                .filter_map(|(kind, name)| {
                    let why = target.refuses_name(kind, name)?;
                    Some(format!(
                        "{kind} \"{name}\" of {}: {why}",
                        table.display_name()
                    ))
                })
                .collect();
            refused
        })
        .collect();
    match refused.is_empty() {
        true => Ok(()),
        false => Err(usage(&format!(
            "{} cannot hold these names as they are: {}. Rename them in the source, or leave their tables out (--exclude)",
            target.engine(),
            refused.join("; ")
        ))),
    }
}

fn usage(message: &str) -> Failed {
    Failed::whole(Error::Usage(message.to_string()))
}

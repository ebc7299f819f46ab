//! What MariaDB can do around a load, and how its rows go in: the capabilities the plan
//! decides from, the write method, whether foreign keys are checked after the rows.

use super::Design;
use crate::catalog::{self, Table};
use crate::writer::Method;
use inrush_load::plan::{Capabilities, ForeignKeysAfter};
use inrush_load::{LoadOptions, OnConflict, Result};

/// What MariaDB can do around a load into the table `design` describes: secondary indexes
/// dropped and built once after (MyISAM and Aria: disabled and enabled again), foreign keys
/// checked once after the rows where the load allows it, no visibility map.
pub(super) fn capabilities(design: &Design, opts: &LoadOptions) -> Capabilities {
    let table = &design.table;
    let rebuilds = match table.disables_keys() {
        true => format!(
            "ALTER TABLE ... DISABLE KEYS during the load, ENABLE KEYS builds it once after ({})",
            table.engine
        ),
        false => "built once after the load".into(),
    };
    let foreign_keys = match foreign_keys_checked_after(table, opts) {
        Ok(()) => ForeignKeysAfter::Always("checked once after the load, not row by row: foreign_key_checks=0 while the rows go in, then one anti-join of the loaded rows against the parent table before COMMIT (a row without its parent fails the load, nothing committed)".into()),
        Err(why) => ForeignKeysAfter::Never(format!("checked row by row during the load ({why})")),
    };
    let mut notes = Vec::new();
    if !table.transactional {
        notes.push(format!("{} is not transactional: a load that fails leaves the rows it wrote before the failure (no rollback)", table.engine));
    }
    notes.extend(design.method_note.clone());
    notes.extend(sort_buffer_note(table, &design.settings));
    Capabilities {
        rebuilds: Some(rebuilds),
        // DDL commits at once: a unique key the rows broke could not be built again, and the
        // load could not be undone.
        unique_after: Err("which MariaDB could not build again if the rows broke it (its DDL cannot be rolled back)".into()),
        foreign_keys,
        notes,
        ..Capabilities::default()
    }
}

/// InnoDB builds an index after the load by a merge sort whose runs are
/// `innodb_sort_buffer_size` long, so the smaller the runs, the more merge passes a large table
/// takes. Measured from Parquet (2026-12-07 in docs/BENCHMARKS.md): at the default 1 MiB, 60M
/// rows took 1.12 times ten times 6M rows' time; at 64 MiB 1.00, in 0.84 of the time. The
/// setting is read at startup only, so the plan can only say it.
fn sort_buffer_note(table: &Table, settings: &[(String, String)]) -> Option<String> {
    const LARGEST: u64 = 64 << 20;
    let size: u64 = settings
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("innodb_sort_buffer_size"))
        .and_then(|(_, size)| size.parse().ok())?;
    let secondary = table.indexes.iter().any(|i| i.name != "PRIMARY");
    let innodb = table.engine.eq_ignore_ascii_case("InnoDB");
    (innodb && secondary && size < LARGEST).then(|| format!(
        "InnoDB sorts an index built after the load in runs of innodb_sort_buffer_size ({} KiB on this server): at 64M, a startup option (--innodb-sort-buffer-size=64M), 60M rows loaded in 0.84 of the time, linear in the rows",
        size >> 10
    ))
}

/// How the rows go in and, when that is not LOAD DATA or the connections take turns, why.
///
/// Under `innodb_autoinc_lock_mode` 1 (MariaDB's default) InnoDB holds a table-level AUTO-INC
/// lock to the end of each LOAD DATA into a table with an AUTO_INCREMENT column, so parallel
/// streams write in turn, while a multi-row INSERT takes it only to reserve its ids. Measured
/// (500k SqlBulkCopy rows, 2 connections, an AUTO_INCREMENT key and 2 secondary keys): the
/// load phase took 2.0-2.4 s as INSERTs against 2.9-3.3 s as LOAD DATA; into a plain table
/// and over one connection the two went equally fast. Mode 0 makes every insert hold the
/// lock to its end; mode 2 never does.
pub(super) fn write_method(
    local_infile: bool,
    table: &Table,
    settings: &[(String, String)],
) -> (Method, Option<String>) {
    if !local_infile {
        return (Method::Insert, Some("the server does not allow LOAD DATA LOCAL INFILE (local_infile is OFF): rows go in as multi-row INSERTs; SET GLOBAL local_infile = 1 (or local_infile=1 in its configuration) lets the load stream them".into()));
    }
    let autoinc = table.columns.iter().find(|c| c.auto_increment);
    let mode = settings
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("innodb_autoinc_lock_mode"))
        .map(|(_, mode)| mode.as_str());
    match (autoinc, mode) {
        (Some(column), Some(mode @ ("0" | "1"))) if table.engine.eq_ignore_ascii_case("InnoDB") => {
            let column = catalog::quote(&column.name);
            match mode {
                "1" => (Method::Insert, Some(format!("the AUTO_INCREMENT column {column}: under innodb_autoinc_lock_mode=1 each LOAD DATA would hold the table's AUTO-INC lock to its end and the connections would write in turn, so rows go in as multi-row INSERTs, which take it only to reserve their ids"))),
                _ => (Method::LoadData, Some(format!("the AUTO_INCREMENT column {column}: under innodb_autoinc_lock_mode=0 every insert holds the table's AUTO-INC lock to its end and the connections write in turn; innodb_autoinc_lock_mode=1 or 2, a server setting, lets them write at once"))),
            }
        }
        _ => (Method::LoadData, None),
    }
}

/// Whether the table's foreign keys can be checked once after the load, over its rows, rather
/// than row by row as they come; if not, why. `foreign_key_checks` is one switch for the
/// session, so it is every key or none.
fn foreign_keys_checked_after(table: &Table, opts: &LoadOptions) -> Result<(), String> {
    if opts.max_errors > 0 {
        return Err("--max-errors: the server names each row whose parent is missing, which goes to the reject file".into());
    }
    if opts.resume {
        return Err("--resume commits block by block: each block would have to be checked against the whole table".into());
    }
    if opts.table_lock {
        return Err("--table-lock: under LOCK TABLES the session reads only the table it locked, not the parent tables a check after the load reads".into());
    }
    if opts.on_conflict == OnConflict::Update {
        return Err("--on-conflict update: REPLACE deletes rows, whose cascades would not fire with the checks off".into());
    }
    if let Some(key) = table.foreign_keys.iter().find(|k| {
        (k.parent_schema.as_str(), k.parent_table.as_str())
            == (table.schema.as_str(), table.name.as_str())
    }) {
        return Err(format!(
            "{} references the table itself: a connection's rows may name rows another connection has not committed, which its check cannot see",
            catalog::quote(&key.name)
        ));
    }
    if !table.triggers.is_empty() {
        return Err("the table's triggers write in the load's sessions, and with the checks off their rows would go unchecked".into());
    }
    if !table.empty && !opts.truncate {
        return Err("the table has rows: a check after the load would read them all again".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Index;

    fn table(engine: &str, indexes: &[&str]) -> Table {
        Table {
            schema: "s".into(),
            name: "t".into(),
            engine: engine.into(),
            transactional: engine == "InnoDB",
            columns: Vec::new(),
            indexes: indexes
                .iter()
                .map(|name| Index {
                    name: name.to_string(),
                    unique: *name == "PRIMARY",
                    columns: vec!["a".into()],
                })
                .collect(),
            foreign_keys: Vec::new(),
            triggers: Vec::new(),
            changed_by_delete: Vec::new(),
            bytes: 0,
            empty: true,
        }
    }

    fn sort_buffer(bytes: u64) -> Vec<(String, String)> {
        vec![("INNODB_SORT_BUFFER_SIZE".into(), bytes.to_string())]
    }

    #[test]
    fn innodbs_sort_buffer_is_named_only_where_an_index_would_sort_in_short_runs() {
        let indexed = table("InnoDB", &["PRIMARY", "by_day"]);
        let said = sort_buffer_note(&indexed, &sort_buffer(1 << 20)).unwrap();
        assert!(said.contains("(1024 KiB on this server)"), "{said}");
        assert!(said.contains("--innodb-sort-buffer-size=64M"), "{said}");
        assert_eq!(sort_buffer_note(&indexed, &sort_buffer(64 << 20)), None);
        assert_eq!(
            sort_buffer_note(&table("InnoDB", &["PRIMARY"]), &sort_buffer(1 << 20)),
            None
        );
        assert_eq!(
            sort_buffer_note(&table("Aria", &["PRIMARY", "k"]), &sort_buffer(1 << 20)),
            None
        );
        assert_eq!(sort_buffer_note(&indexed, &[]), None);
    }
}

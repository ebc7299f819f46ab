//! What the SQLite test binaries share: running the CLI, files, and the model every load is
//! judged against, the `sqlite3` shell's `.import` (each field bound as text) into a table of
//! the same types.

// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use rusqlite::Connection;
use std::path::{Path, PathBuf};

pub const BIN: &str = env!("CARGO_BIN_EXE_inrush");

pub fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(BIN, args)
}

/// `inrush load INPUT --to DB --table t` plus `extra`, with `--header` for a `.csv` INPUT.
pub fn load(csv: &Path, db: &Path, extra: &[&str]) -> (i32, String) {
    let (csv, db) = (csv.to_str().unwrap(), db.to_str().unwrap());
    let mut args = vec!["load", csv, "--to", db, "--table", "t", "--no-progress"];
    if csv.ends_with(".csv") {
        args.push("--header");
    }
    args.extend_from_slice(extra);
    inrush(&args)
}

pub fn exec(db: &Path, sql: &str) {
    Connection::open(db).unwrap().execute_batch(sql).unwrap();
}

/// Every row of `t` in rowid order, each value with its storage class.
pub fn contents(db: &Path) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('t') ORDER BY cid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    typed_rows(db, "t", &columns, "rowid")
}

/// The rows of `table`, `columns` of each with their storage classes
/// (`integer:1 | text:'a'`), in `order`.
pub fn typed_rows(db: &Path, table: &str, columns: &[impl AsRef<str>], order: &str) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let select: Vec<String> = columns
        .iter()
        .map(|c| format!("typeof(\"{0}\") || ':' || quote(\"{0}\")", c.as_ref()))
        .collect();
    let sql = format!(
        "SELECT {} FROM {table} ORDER BY {order}",
        select.join(" || ' | ' || ")
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// What the `sqlite3` shell's `.import` of `csv` (header skipped) into `table` stores: it binds
/// every field as text to an INSERT and lets the column's affinity convert it. Done here with
/// the very SQLite library inrush links (the shell on a machine may be another version, whose
/// text-to-double conversion rounds differently).
pub fn shell_import(csv: &Path, db: &Path, table: &str) {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut conn = Connection::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    let mut lines = text.lines();
    let width = lines.next().unwrap().split(',').count();
    let sql = format!(
        "INSERT INTO {table} VALUES ({})",
        vec!["?"; width].join(",")
    );
    for line in lines {
        let fields = csv_fields(line);
        tx.execute(&sql, rusqlite::params_from_iter(fields))
            .unwrap();
    }
    tx.commit().unwrap();
}

/// The fields of one CSV line (quotes doubled inside quoted fields; no line breaks).
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let (mut quoted, mut chars) = (false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

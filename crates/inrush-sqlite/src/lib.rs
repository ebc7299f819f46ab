//! SQLite as a target of inrush: everything said to SQLite.
//!
//! Owns: which `--to` names a database file ([`database_path`]), the catalog (a table's columns,
//! declared types, STRICT, keys, indexes and triggers: [`catalog`]), how a field's text becomes
//! the value SQLite stores, checked against the declared type ([`value`]), the one writer that
//! binds ready values to a cached multi-row INSERT inside one transaction ([`writer`]), the
//! `--resume` ledger in the file ([`ledger`]), and the [`inrush_load::Target`] that puts them
//! together ([`SqliteTarget`]); a whole file read and written by `inrush copy` ([`database`]).
//!
//! Atomic by construction: the whole load, the indexes dropped and built again, `--create` and
//! `--truncate` included, is one SQLite transaction (SQLite's DDL is transactional), so a
//! failed, interrupted or killed load leaves the file as it was, and no DDL journal is needed.
//! Under `--resume` each block is a transaction of its own with its ledger row instead, and the
//! indexes stay (dropping them would span transactions).
//!
//! Does not own: reading and parsing the input, the reject file, or the order of rows
//! (`inrush-load`).

pub mod catalog;
pub mod database;
pub mod ledger;
mod target;
pub mod value;
pub mod writer;

pub use database::{SqliteSchemaSource, SqliteSchemaTarget};
pub use target::SqliteTarget;

use std::path::PathBuf;

/// `inrush recover`: a load into SQLite leaves nothing to put back.
pub fn recover() -> inrush_load::summary::Recovered {
    inrush_load::summary::Recovered {
        nothing: "a load into SQLite is one transaction, which a failure rolls back",
        ..Default::default()
    }
}

/// The database file a `--to` names when it names SQLite: `sqlite:///abs/path.db`
/// (`sqlite://` then the path), `sqlite:relative.db`, or any path ending in `.db`, `.sqlite`
/// or `.sqlite3`.
pub fn database_path(to: &str) -> Option<PathBuf> {
    if let Some(rest) = to.strip_prefix("sqlite:") {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        let path = path.split('?').next().unwrap_or(path);
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let lower = to.to_ascii_lowercase();
    let is_file = [".db", ".sqlite", ".sqlite3"]
        .iter()
        .any(|ext| lower.ends_with(ext));
    (is_file && !to.contains("://")).then(|| PathBuf::from(to))
}

/// `"name"`, with inner quotes doubled.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A SQLite error as the load reports it: what was being done, and SQLite's message. A
/// statement the load's interrupt stopped (see [`writer::interrupt_watch`]) is the interrupt.
pub(crate) fn failed(
    what: impl Into<String>,
) -> impl FnOnce(rusqlite::Error) -> inrush_load::Error {
    let what = what.into();
    move |cause| match cause.sqlite_error_code() {
        Some(rusqlite::ErrorCode::OperationInterrupted) => inrush_load::Error::Interrupted,
        code => {
            // SQLite's own words name no right: the file's permissions are what is missing.
            let hint = match code {
                Some(rusqlite::ErrorCode::ReadOnly) => READ_ONLY,
                _ => "",
            };
            inrush_load::Error::Engine {
                engine: "SQLite",
                what,
                message: format!("{cause}{hint}"),
                code: None,
            }
        }
    }
}

const READ_ONLY: &str = " (the user needs the right to write the database file and its directory, where SQLite keeps the rollback journal)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_and_file_names() {
        let p = |s| database_path(s).map(|p| p.display().to_string());
        assert_eq!(p("sqlite:///tmp/a.db").as_deref(), Some("/tmp/a.db"));
        assert_eq!(p("sqlite://a.db").as_deref(), Some("a.db"));
        assert_eq!(p("sqlite:data/a").as_deref(), Some("data/a"));
        assert_eq!(p("out.sqlite3").as_deref(), Some("out.sqlite3"));
        assert_eq!(p("/x/Y.DB").as_deref(), Some("/x/Y.DB"));
        assert_eq!(p("postgres://h/db"), None);
        assert_eq!(p("postgresql://h/x.db"), None);
        assert_eq!(p("sqlite:"), None);
    }
}

//! A SQLite file for `inrush copy`: read as a source ([`source`]: the catalog, readers of one
//! instant) and written as a target ([`target`]: DDL in load order, the copy ledger).

pub mod source;
pub mod target;

pub use source::SqliteSchemaSource;
pub use target::SqliteSchemaTarget;

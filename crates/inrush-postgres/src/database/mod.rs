//! A whole PostgreSQL database for `inrush copy`: read as a source ([`source`]: the catalog,
//! an exported snapshot) and written as a target ([`target`]: DDL in load order, the copy
//! ledger).

pub mod source;
pub mod target;

pub use source::PgSchemaSource;
pub use target::PgSchemaTarget;

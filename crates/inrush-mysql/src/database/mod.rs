//! A whole MariaDB/MySQL database for `inrush copy`: read as a source ([`source`]: the
//! catalog, sessions of one instant) and written as a target ([`target`]: DDL in load order,
//! the copy ledger).

pub mod source;
pub mod target;

pub use source::MysqlSchemaSource;
pub use target::MysqlSchemaTarget;

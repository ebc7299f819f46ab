//! `--to odbc:` connection strings for the tests' own databases, through Debian's drivers.

pub use inrush_testkit::odbc::*;

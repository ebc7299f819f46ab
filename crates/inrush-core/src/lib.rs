//! Vocabulary shared by every inrush crate, with no I/O of its own.
//!
//! Owns: day counts as calendar dates ([`calendar`]), what a target column is to every engine ([`schema`]), a whole database as a copy moves it ([`database`]), a column's type in no engine's spelling ([`sql_type`]), where a value came
//! from ([`location`]), how a running load tells the outside world about itself
//! ([`progress`]), what a signal handler and the work it stops share ([`interrupt`]), what a load asks of a server it reads a query from ([`query`]), and where a password sits in a connection string ([`secret`]).
//!
//! Does not own: reading input (`inrush-read`), turning values into wire bytes (`inrush-encode`),
//! talking to a server (`inrush-postgres`) or the shape of the pipeline (`inrush-load`).

pub mod calendar;
pub mod catalog;
pub mod database;
pub mod ident;
pub mod interrupt;
pub mod ledger;
pub mod location;
pub mod progress;
pub mod query;
pub mod schema;
pub mod secret;
pub mod sql_type;

pub use location::Location;
pub use progress::{Phase, Progress, ProgressSnapshot, Reporter, Silent};
pub use schema::TargetColumn;
pub use sql_type::SqlType;

//! The load pipeline and its policy, for every target.
//!
//! Owns: [`LoadOptions`] (validated settings), the inputs of a load ([`sources`]: files,
//! directories, globs, standard input, a query on another server, batches in memory), the
//! mapping of input fields to table columns ([`columns`]), the pipeline's stages ([`stages`]:
//! reader threads, parse/encode workers on every core, bounded queues, progress), what a worker
//! does with a block ([`worker`]), chunks split by destination ([`route`]), the reject file
//! ([`rejects`]), `--resume`'s bookkeeping ([`resume`]), what a rerun of a committed load does
//! ([`commits`]), the input's order ([`order`],
//! [`sort`]), the plan around the rows ([`plan`]), interrupts, and the [`LoadSummary`].
//!
//! A target is driven in one of two ways: through the [`target::Target`] interface, which
//! [`load_into`] drives (SQLite, MariaDB), or by an engine crate that drives the stages itself
//! (PostgreSQL's parallel COPY streams: `inrush-postgres`'s `load`). Either way the target's
//! crate owns everything said to its engine; this crate says nothing to any server.
//!
//! Does not own: how bytes become records (`inrush-read`), values become PostgreSQL's wire
//! bytes (`inrush-encode`), or any engine's catalog, statements or commit; nor printing
//! anything.

pub mod columns;
pub mod commits;
pub mod create;
mod drive;
mod error;
mod interrupt;
mod options;
pub mod order;
pub mod plan;
pub mod rejects;
pub mod resume;
pub mod route;
pub mod sort;
pub mod sources;
pub mod stages;
pub mod summary;
pub mod support;
pub mod target;
pub mod worker;

pub use drive::{load_into, plan_into};
pub use error::{Error, Kind, Result};
pub use interrupt::{Interrupt, Signalled, Watch};
pub use options::{LoadOptions, OnConflict, PartitionRouting, QuerySource};
pub use plan::{AfterLoad, IndexAction, LoadPlan, Maintenance, PlanOptions};
pub use summary::LoadSummary;

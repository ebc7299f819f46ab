//! The load pipeline and its policy, for every target.
//!
//! Owns: [`LoadOptions`] (validated settings), the inputs of a load ([`sources`]: files,
//! directories, globs, standard input, a query on another server, batches in memory), the
//! mapping of input fields to table columns ([`columns`]), the pipeline's stages ([`stages`]:
//! reader threads, parse/encode workers on every core, bounded queues, progress), what a worker
//! does with a block ([`worker`]) and what it asks of the engine's encoder ([`encoder`]), chunks split by destination ([`route`]), the reject file
//! ([`rejects`]), `--resume`'s bookkeeping ([`resume`]), what a rerun of a committed load does
//! ([`commits`]), the input's order ([`order`],
//! [`sort`]), the plan around the rows ([`plan`]), a distributed write's tasks and decision
//! ([`job`]), what a stop does in each phase of a load (its [`Interrupt`], from `inrush-core`),
//! and the [`LoadSummary`].
//!
//! Every engine is a [`target::Target`], and [`load_into`] is the one driver of all of them
//! (PostgreSQL, MariaDB/MySQL, SQLite): the engine's crate owns everything said to its engine,
//! its catalog, statements and commit; this crate says nothing to any server, and the rules
//! every engine shares (options an engine does not carry out in [`support`], exit codes in [`Kind`], the
//! finding of refused rows in a batch in [`isolate`], the commit records and each connection's fate at the commit in [`commits`], the asking after a
//! lost COMMIT answer in [`outcome`], the watch for a
//! silent server in [`pulse`], the waiting for a table another session keeps open in
//! [`patience`]) are written here once.
//!
//! Does not own: how bytes become records (`inrush-read`), values become PostgreSQL's wire
//! bytes (`inrush-encode`), or any engine's catalog, statements or commit; nor printing
//! anything.

pub mod chunk;
pub mod columns;
pub mod commits;
pub mod create;
mod drive;
pub mod encoder;
mod error;
pub mod isolate;
pub mod job;
mod options;
pub mod order;
pub mod outcome;
pub mod patience;
pub mod plan;
pub mod pulse;
pub mod rejects;
pub mod resume;
pub mod route;
pub mod row;
mod shared;
pub mod sort;
pub mod sources;
pub mod stages;
pub mod summary;
pub mod support;
pub mod target;
pub mod worker;

pub use drive::{load_into, plan_into};
pub use error::{Error, Kind, Result};
pub use inrush_core::interrupt::{Interrupt, Signalled, Watch};
pub use job::Prepare;
pub use options::{LoadOptions, OnConflict, PartitionRouting, QuerySource, NETWORK_TIMEOUT};
pub use plan::{
    AfterLoad, Capabilities, ForeignKeysAfter, IndexAction, LoadPlan, Maintenance, PlanOptions,
};
pub use summary::LoadSummary;

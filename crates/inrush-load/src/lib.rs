//! The load pipeline and its policy.
//!
//! Owns: [`LoadOptions`] (validated settings), the mapping of input fields to table columns
//! ([`columns`]), the inputs of a load (`sources`: files, directories, globs, standard input, a
//! query on another server), the shape of the pipeline ([`pipeline`]: reader threads,
//! parse/encode workers, bounded queues, COPY sinks), what a worker does with a block
//! ([`worker`]), what a
//! sink does with a connection ([`sink`]), and the [`LoadSummary`].
//!
//! Commit policy: every connection loads inside its own transaction; only when every COPY has
//! finished without error are the transactions committed, together. A failure anywhere before
//! that rolls everything back: nothing of a failed load is visible. The remaining window is the
//! commit itself (milliseconds): if the server or network fails between the first and the last
//! COMMIT, some connections' rows are committed and others' are not; inrush reports exactly that
//! as [`Error::PartialCommit`] and exits with a distinct code.
//!
//! Does not own: how bytes become records (`inrush-read`), values become wire bytes
//! (`inrush-encode`) or what is said to the server (`inrush-postgres`); nor printing anything.

mod claim;
pub mod columns;
mod create;
mod drive;
mod error;
mod interrupt;
mod options;
mod order;
pub mod pipeline;
pub mod plan;
mod rejects;
mod resume;
mod sink;
mod sort;
mod sources;
mod staging;
pub mod summary;
pub mod target;
mod watch;
mod worker;

pub use drive::{load_into, plan_into};
pub use error::{Error, Result};
pub use interrupt::{Interrupt, Signalled};
pub use options::{LoadOptions, OnConflict, QuerySource};
pub use pipeline::load;
pub use plan::{IndexAction, LoadPlan, Maintenance, PlanOptions};
pub use summary::LoadSummary;

//! Parquet and Arrow IPC input: files read in parts, and Arrow values coerced to the target
//! columns' types.
//!
//! Owns: [`ArrowFile`] (recognising a Parquet or Arrow IPC file by its magic bytes, its schema,
//! and the parts workers take: Parquet row groups, IPC record batches), and [`Coercion`] (how
//! one Arrow column goes into one target column: decided once, checked before any row is read,
//! bound to each batch's column as a [`Prepared`], then applied value by value), and writing the generator's rows as Parquet ([`generate`]).
//!
//! The rule [`Coercion`] follows is the one `inrush-encode` follows for text: the stored value is
//! what PostgreSQL's COPY would store from the value's text form ([`Prepared::text`]). Most pairs
//! render that text and hand it to [`inrush_encode::encode_value`], which checks ranges, lengths
//! and typmods with the server's wording; the common pairs (integers, floats, strings, dates,
//! timestamps, booleans, binary, uuids) take direct paths that give the same bytes without the
//! text round trip.
//!
//! A worker takes a [`Part`], reads it with [`ArrowFile::read_part`] (the file's columns in the
//! target's order), prepares each batch's columns once ([`Coercion::prepare`]), and for each
//! row and column: [`Prepared::is_null`] → a NULL field; otherwise [`Prepared::encode`] into
//! the tuple's field buffer; on `Refused` the row is a bad row (row number =
//! [`Part::first_row`] + its index in the part); on `Deferred` the caller truncates the field
//! and resolves [`Prepared::text`] with the column's input function on the server. A table
//! whose columns have no binary encoder goes through text COPY, whose fields are
//! [`Prepared::text`] too.
//!
//! Does not own: threads, connections, resolving deferred values on the server, or the COPY
//! framing (that is `inrush-load`, `inrush-postgres` and `inrush-encode`).
//!
//! A [`BatchStream`] (batches from memory, the Python module's DataFrames) is read like a
//! file's parts, cut into slices of [`SLICE_ROWS`] rows by the one reader that takes it.

mod coerce;
mod file;
pub mod generate;
mod render;
mod stream;
mod time;

pub use arrow_array::{Array, ArrayRef, RecordBatch};
pub use arrow_schema::{DataType, Field, SchemaRef};
pub use coerce::{Coercion, Prepared};
pub use file::{ArrowFile, FileFormat, Part, PartBatches};
pub use render::{is_binary, TextForms};
pub use stream::{BatchStream, SLICE_ROWS};

use std::path::PathBuf;

/// Everything that can go wrong while opening, reading or planning an Arrow input. Each message
/// says its cause in full, so no variant exposes the cause again as its `source()` (printing the
/// chain would repeat it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open {path}: {cause}", path = path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot read {path}: {cause}", path = path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is neither a Parquet file nor an Arrow IPC file (by its magic bytes)", path = path.display())]
    UnknownFormat { path: PathBuf },
    #[error("{path}: {cause}", path = path.display())]
    Parquet {
        path: PathBuf,
        cause: parquet::errors::ParquetError,
    },
    #[error("{path}: {cause}", path = path.display())]
    Arrow {
        path: PathBuf,
        cause: arrow_schema::ArrowError,
    },
    /// The IPC footer or a batch header is malformed.
    #[error("{path}: {reason}", path = path.display())]
    Ipc { path: PathBuf, reason: String },
    #[error("{path} has {parts} parts, there is no part {part}", path = path.display())]
    NoSuchPart {
        path: PathBuf,
        part: usize,
        parts: usize,
    },
    #[error("{path} has {columns} columns, there is no column {index}", path = path.display())]
    NoSuchColumn {
        path: PathBuf,
        index: usize,
        columns: usize,
    },
    /// Reading the next batch of an in-memory stream failed (a Python producer raised, say).
    #[error("{name}: {cause}")]
    Stream { name: String, cause: String },
    #[error("{name} was read already: a stream of batches can be loaded once")]
    StreamTaken { name: String },
    /// No value of the Arrow type could ever go into the column (for the target's reason,
    /// `why`, where the types alone do not say it).
    #[error(
        "column \"{column}\": cannot load Arrow {arrow_type} into {target}{}",
        why.as_ref().map(|why| format!(": {why}")).unwrap_or_default()
    )]
    Incompatible {
        column: String,
        arrow_type: String,
        target: String,
        why: Option<String>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The input side of inrush: open an input, decompress it, cut it into blocks of whole records,
//! and parse records exactly as PostgreSQL's `COPY ... (FORMAT csv)` would.
//!
//! Owns: [`source`] (files, standard input, gzip and zstd by extension, byte counting for
//! progress), [`encoding`] (Latin-1, Windows-1252 and UTF-16 inputs read as UTF-8), [`binary`]
//! (a COPY BINARY stream cut into blocks of whole tuples), [`csv`] (options, the quote-aware
//! [`csv::Splitter`] and the [`csv::RecordParser`]) and [`generate`] (seeded synthetic data for
//! the demo, benchmarks and the lab).
//!
//! Does not own: what the fields mean (that is `inrush-encode`), threads or channels (that is
//! `inrush-load`: a splitter is an iterator, a parser a plain struct).

pub mod binary;
pub mod csv;
pub mod encoding;
pub mod generate;
pub mod inputs;
pub mod jsonl;
pub mod source;

use inrush_core::Location;
use std::path::PathBuf;

/// Everything that can go wrong while reading input. Each message says its cause in full, so
/// no variant exposes the cause again as its `source()` (printing the chain would repeat it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open {path}: {cause}", path = path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot read {name}: {cause}")]
    Read { name: String, cause: std::io::Error },
    /// The input is not well-formed CSV at this record.
    #[error("{location}: {reason}")]
    Record { location: Location, reason: String },
    #[error("{name}: a record is longer than {limit} bytes (an unbalanced quote?)")]
    RecordTooLong { name: String, limit: usize },
    #[error("invalid CSV option: {0}")]
    Options(String),
    /// `--encoding` names no encoding inrush reads.
    #[error("unknown encoding {0:?}: inrush reads UTF8, LATIN1 (ISO-8859-1), WIN1252 (Windows-1252, CP1252), UTF16, UTF16LE and UTF16BE")]
    UnknownEncoding(String),
    /// A UTF-16 input whose byte order is unknown or contradicts `--encoding`.
    #[error("{name}: {reason}")]
    ByteOrder { name: String, reason: String },
    /// An input argument names nothing to load (an empty directory, a glob with no match).
    #[error("{0}")]
    Inputs(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

//! A server whose query results a load reads (`--from-query`), as the pipeline sees it.
//!
//! The pipeline knows nothing of the source's engine: it asks for the result's columns (for
//! `--create` and for mapping them to the target's), for the query cut into key ranges (one
//! stream each) and for the rows: as CSV text, which goes through the same parse, check and
//! encode as a file, or, from a server whose driver reads rows value by value, as those values'
//! texts ([`TextRows`]), checked and encoded the same way without the CSV in between. Either
//! way every value is read by the target's own rules. Each engine crate implements
//! [`QueryServer`] for its connection options; the binary picks one by the `--from` URL.

use crate::SqlType;
use std::io::Read;

mod rows;
pub use rows::{QueryRows, TextRows, BLOCK_BYTES};

/// A source server, opened on one database.
pub trait QueryServer: Send + Sync + std::fmt::Debug {
    /// The engine, for messages (`PostgreSQL`, `MariaDB`).
    fn engine(&self) -> &'static str;

    /// The names and types of `sql`'s result columns: each the type its values read as
    /// without loss (an unsigned `INT` is a `bigint`), which `--create` maps to the target's.
    fn columns(&self, sql: &str) -> Result<Vec<(String, SqlType)>, QueryError>;

    /// `sql` cut into at most `parts` queries over ranges of the integer column `column` (its
    /// minimum to its maximum; rows with NULL in the first), for parallel streams.
    fn split(&self, sql: &str, column: &str, parts: usize) -> Result<Vec<String>, QueryError>;

    /// The rows of `sql` as CSV read as they arrive: a header line, RFC 4180 quoting, NULL as
    /// an unquoted empty field, UTF-8, each value in the text form PostgreSQL's input functions
    /// read (bytes as `\x` hex, booleans `t`/`f` or `1`/`0`). A failure after the start comes out
    /// of `read` as an error naming the query.
    fn csv(&self, sql: &str) -> Result<Box<dyn Read + Send>, QueryError>;

    /// Whether [`QueryServer::rows`] works: the server's driver hands rows value by value, so
    /// the load takes the values as they are rather than as CSV it must parse again.
    fn reads_rows(&self) -> bool {
        false
    }

    /// The rows of `sql` as blocks of values in the text forms of [`QueryServer::csv`] (see
    /// [`QueryServer::reads_rows`]).
    fn rows(&self, sql: &str) -> Result<QueryRows, QueryError> {
        let _ = sql;
        Err(QueryError {
            engine: self.engine(),
            what: "reading the query row by row".into(),
            message: "this server's rows come as CSV".into(),
        })
    }

    /// Whether [`QueryServer::copy_binary`] works: the server writes PostgreSQL's COPY BINARY,
    /// whose tuples a PostgreSQL target takes untouched when every column has its type.
    fn speaks_copy_binary(&self) -> bool {
        false
    }

    /// The `columns` of `sql`'s rows as COPY BINARY (see [`QueryServer::speaks_copy_binary`]).
    fn copy_binary(
        &self,
        sql: &str,
        columns: &[String],
    ) -> Result<Box<dyn Read + Send>, QueryError> {
        let _ = (sql, columns);
        Err(QueryError {
            engine: self.engine(),
            what: "reading the query as COPY BINARY".into(),
            message: "this server has no COPY BINARY".into(),
        })
    }
}

/// The source server could not be reached, or refused or failed the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    pub engine: &'static str,
    /// What was being done (`connecting`, the statement); empty when the message says it.
    pub what: String,
    /// The server's (or driver's) message.
    pub message: String,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.what.is_empty() {
            true => write!(f, "{} source: {}", self.engine, self.message),
            false => write!(f, "{} source: {}: {}", self.engine, self.what, self.message),
        }
    }
}

impl std::error::Error for QueryError {}

/// One field of the CSV a [`QueryServer`] writes: quoted when it holds a comma, quote or line
/// break, or is empty (an unquoted empty field is NULL).
pub fn csv_field(out: &mut Vec<u8>, value: &[u8]) {
    let quote = value.is_empty()
        || value
            .iter()
            .any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r'));
    if !quote {
        out.extend_from_slice(value);
        return;
    }
    out.push(b'"');
    for &b in value {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// `min..=max` cut into at most `parts` ranges of nearly equal width, as `(from, until)` with
/// `until` excluded: the key ranges of a query split by an integer column, one stream each.
pub fn key_ranges(min: i64, max: i64, parts: usize) -> Vec<(i128, i128)> {
    if max < min {
        return Vec::new();
    }
    let span = (max as i128 - min as i128 + 1) as u128;
    let parts = (parts.max(1) as u128).min(span);
    let step = span.div_ceil(parts) as i128;
    (0..parts as i128)
        .map(|i| min as i128 + i * step)
        .take_while(|&from| from <= max as i128)
        .map(|from| (from, (from + step).min(max as i128 + 1)))
        .collect()
}

/// `sql` cut into queries over [`key_ranges`] of the integer column `column` (quoted as the
/// source's SQL quotes it) from `min` to `max`, rows with NULL in the first; `sql` alone when
/// the column holds no value (`min`/`max` `None`). Every source engine reads the subquery's
/// alias and these comparisons alike.
pub fn range_queries(
    sql: &str,
    column: &str,
    bounds: (Option<i64>, Option<i64>),
    parts: usize,
) -> Vec<String> {
    let (Some(min), Some(max)) = bounds else {
        return vec![sql.to_string()];
    };
    key_ranges(min, max, parts)
        .into_iter()
        .enumerate()
        .map(|(i, (lo, hi))| {
            let nulls = match i {
                0 => format!(" OR {column} IS NULL"),
                _ => String::new(),
            };
            format!(
                "SELECT * FROM ({sql}) AS q WHERE ({column} >= {lo} AND {column} < {hi}){nulls}"
            )
        })
        .collect()
}

/// A source's rows read as a stream of chunks: from a channel the thread that talks to the
/// server fills ([`ChunkReader::channel`]), or from chunks made as they are read. The channel
/// is bounded, so a slow load holds the source back instead of buffering its rows; a load that
/// stops reading drops the reader, and the producer's next send fails, ending it.
pub struct ChunkReader {
    chunks: Box<dyn Iterator<Item = std::io::Result<Vec<u8>>> + Send>,
    current: Vec<u8>,
    at: usize,
}

/// Chunks for a [`ChunkReader`]: data, or the error that ends the stream.
pub type ChunkSender = std::sync::mpsc::SyncSender<std::io::Result<Vec<u8>>>;

impl ChunkReader {
    /// A reader of `chunks`, each read when the last is used up.
    pub fn new(chunks: impl Iterator<Item = std::io::Result<Vec<u8>>> + Send + 'static) -> Self {
        ChunkReader {
            chunks: Box::new(chunks),
            current: Vec::new(),
            at: 0,
        }
    }

    /// A reader and its sender, holding at most `chunks` chunks between them.
    pub fn channel(chunks: usize) -> (ChunkSender, ChunkReader) {
        let (tx, rx) = std::sync::mpsc::sync_channel(chunks);
        (tx, ChunkReader::new(rx.into_iter()))
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.chunks.next() {
                Some(chunk) => {
                    self.current = chunk?;
                    self.at = 0;
                }
                None => return Ok(0), // the producer finished
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_cover_every_key_once() {
        assert_eq!(key_ranges(1, 10, 3), vec![(1, 5), (5, 9), (9, 11)]);
        assert_eq!(key_ranges(5, 5, 4), vec![(5, 6)]);
        assert_eq!(
            key_ranges(-2, 1, 8),
            vec![(-2, -1), (-1, 0), (0, 1), (1, 2)]
        );
        assert_eq!(key_ranges(1, 0, 2), vec![]);
        let wide = key_ranges(i64::MIN, i64::MAX, 3);
        assert_eq!(wide.first().unwrap().0, i64::MIN as i128);
        assert_eq!(wide.last().unwrap().1, i64::MAX as i128 + 1);
        assert!(wide.windows(2).all(|w| w[0].1 == w[1].0));
    }

    #[test]
    fn range_queries_cover_every_key_once_and_nulls_in_the_first() {
        assert_eq!(
            range_queries("SELECT * FROM t", "\"k\"", (Some(1), Some(10)), 2),
            [
                "SELECT * FROM (SELECT * FROM t) AS q WHERE (\"k\" >= 1 AND \"k\" < 6) OR \"k\" IS NULL",
                "SELECT * FROM (SELECT * FROM t) AS q WHERE (\"k\" >= 6 AND \"k\" < 11)",
            ]
        );
        assert_eq!(
            range_queries("SELECT 1", "k", (None, None), 4),
            ["SELECT 1"]
        );
    }

    #[test]
    fn chunk_reader_reads_across_chunks_then_the_error() {
        let (tx, mut reader) = ChunkReader::channel(4);
        tx.send(Ok(b"ab".to_vec())).unwrap();
        tx.send(Ok(b"cde".to_vec())).unwrap();
        tx.send(Err(std::io::Error::other("dropped"))).unwrap();
        drop(tx);
        let mut buf = [0; 4];
        assert_eq!(reader.read(&mut buf).unwrap(), 2);
        assert_eq!(reader.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"cde");
        assert_eq!(reader.read(&mut buf).unwrap_err().to_string(), "dropped");
        assert_eq!(reader.read(&mut buf).unwrap(), 0);
    }
}

//! A query's rows as a source that reads them one at a time hands them to a load: each value's
//! text form kept apart, with no CSV written, cut and parsed again in between. MariaDB's and
//! SQLite's drivers give rows value by value; writing those values as CSV only for the load's
//! workers to find them again had been half of the client's work in a copy from MariaDB.

use super::{csv_field, ChunkReader, QueryError};
use std::io::Read;

/// Text bytes after which a source sends its block on: large enough that a block is a
/// worker's job of a few milliseconds, small enough that a few in flight stay a few MiB.
pub const BLOCK_BYTES: usize = 1 << 20;

/// The high bit of a value's end marks NULL: a block stays far below 2 GiB.
const NULL: u32 = 1 << 31;

/// A block of rows of `width` values each, in the text forms [`super::QueryServer::csv`]
/// writes (unquoted): the values one after another, with where each ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextRows {
    data: Vec<u8>,
    ends: Vec<u32>,
    width: usize,
}

impl TextRows {
    pub fn new(width: usize) -> Self {
        TextRows {
            data: Vec::with_capacity(BLOCK_BYTES + BLOCK_BYTES / 8),
            ends: Vec::new(),
            width: width.max(1),
        }
    }

    /// Where the next value's text goes; [`TextRows::end`] ends it.
    pub fn text(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }

    /// Ends the value written into [`TextRows::text`] since the last one ended.
    pub fn end(&mut self) {
        self.ends.push(self.data.len() as u32);
    }

    /// The next value is NULL.
    pub fn null(&mut self) {
        self.ends.push(self.data.len() as u32 | NULL);
    }

    /// Whole rows written.
    pub fn rows(&self) -> usize {
        self.ends.len() / self.width
    }

    /// Whether the block is big enough to send.
    pub fn is_full(&self) -> bool {
        self.data.len() >= BLOCK_BYTES
    }

    /// Every value's text, one after another (for checks over the whole block).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Row `row`'s values, `None` for NULL.
    pub fn row(&self, row: usize) -> impl ExactSizeIterator<Item = Option<&[u8]>> + '_ {
        let first = row * self.width;
        (first..first + self.width).map(move |i| {
            let start = match i {
                0 => 0,
                _ => (self.ends[i - 1] & !NULL) as usize,
            };
            let end = self.ends[i];
            (end & NULL == 0).then(|| &self.data[start..end as usize])
        })
    }
}

/// A query's rows from a source that reads them one at a time ([`super::QueryServer::rows`]).
pub struct QueryRows {
    /// The result's column names.
    pub names: Vec<String>,
    /// The blocks as they are read; a failure after the start ends them with its error.
    pub blocks: Box<dyn Iterator<Item = Result<TextRows, QueryError>> + Send>,
}

impl QueryRows {
    /// The rows as [`super::QueryServer::csv`] gives them: a header, then a line per row.
    pub fn csv(self) -> Box<dyn Read + Send> {
        let mut header = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            if i > 0 {
                header.push(b',');
            }
            csv_field(&mut header, name.as_bytes());
        }
        header.push(b'\n');
        let lines = self.blocks.map(|block| {
            let block = block.map_err(std::io::Error::other)?;
            Ok(block.csv())
        });
        Box::new(ChunkReader::new(std::iter::once(Ok(header)).chain(lines)))
    }
}

impl TextRows {
    /// The block's rows as CSV lines: NULL an unquoted empty field, an empty string quoted.
    fn csv(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() + self.data.len() / 4);
        for row in 0..self.rows() {
            for (i, value) in self.row(row).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if let Some(value) = value {
                    csv_field(&mut out, value);
                }
            }
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(rows: &[&[Option<&str>]]) -> TextRows {
        let mut block = TextRows::new(rows[0].len());
        for row in rows {
            for value in *row {
                match value {
                    Some(v) => {
                        block.text().extend_from_slice(v.as_bytes());
                        block.end();
                    }
                    None => block.null(),
                }
            }
        }
        block
    }

    #[test]
    fn every_value_comes_back_as_written_null_and_empty_apart() {
        let rows: &[&[Option<&str>]] = &[
            &[Some("1"), None, Some("")],
            &[None, Some("a,\"b\"\n"), Some("x")],
            &[Some(""), Some(""), None],
        ];
        let block = block(rows);
        assert_eq!(block.rows(), 3);
        for (r, row) in rows.iter().enumerate() {
            let got: Vec<Option<&[u8]>> = block.row(r).collect();
            let want: Vec<Option<&[u8]>> = row.iter().map(|v| v.map(str::as_bytes)).collect();
            assert_eq!(got, want, "row {r}");
        }
    }

    #[test]
    fn rows_read_as_csv_are_the_header_then_quoted_lines() {
        let blocks = vec![
            Ok(block(&[&[Some("1"), None], &[Some(""), Some("a,b")]])),
            Ok(block(&[&[Some("say \"hi\""), Some("x")]])),
        ];
        let rows = QueryRows {
            names: vec!["id".into(), "two words".into()],
            blocks: Box::new(blocks.into_iter()),
        };
        let mut csv = String::new();
        rows.csv().read_to_string(&mut csv).unwrap();
        assert_eq!(
            csv,
            "id,two words\n1,\n\"\",\"a,b\"\n\"say \"\"hi\"\"\",x\n"
        );
    }

    #[test]
    fn a_failure_after_the_start_ends_the_csv_with_its_error() {
        let failed = QueryError {
            engine: "MariaDB",
            what: String::new(),
            message: "lost connection".into(),
        };
        let blocks = vec![Ok(block(&[&[Some("1")]])), Err(failed)];
        let rows = QueryRows {
            names: vec!["id".into()],
            blocks: Box::new(blocks.into_iter()),
        };
        let mut csv = String::new();
        let e = rows.csv().read_to_string(&mut csv).unwrap_err();
        assert!(e.to_string().contains("lost connection"), "{e}");
    }
}

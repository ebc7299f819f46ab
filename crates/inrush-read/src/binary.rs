//! Cutting a COPY BINARY stream (another server's `COPY ... TO STDOUT (FORMAT binary)`) into
//! blocks of whole tuples, which go to a target's COPY as they are.

use crate::csv::Block;
use crate::source::read_more;
use crate::{Error, Result};
use bytes::{Buf, BytesMut};
use std::io::Read;

const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// Iterates over blocks of whole tuples: `first_line` is the block's first row number (1-based)
/// and `lines` its number of rows.
pub struct TupleSplitter<R> {
    reader: R,
    name: String,
    block_size: usize,
    buf: BytesMut,
    started: bool,
    done: bool,
    next_index: u64,
    next_row: u64,
    next_offset: u64,
}

impl<R: Read> TupleSplitter<R> {
    pub fn new(reader: R, name: impl Into<String>, block_size: usize) -> Self {
        TupleSplitter {
            reader,
            name: name.into(),
            block_size: block_size.max(1),
            buf: BytesMut::new(),
            started: false,
            done: false,
            next_index: 0,
            next_row: 1,
            next_offset: 0,
        }
    }

    fn malformed(&self, what: &str) -> Error {
        Error::Inputs(format!("{}: not a COPY BINARY stream: {what}", self.name))
    }

    /// Reads until the buffer holds `n` bytes; false at the end of the stream.
    fn fill_to(&mut self, n: usize) -> Result<bool> {
        while self.buf.len() < n {
            let want = (n - self.buf.len()).max(256 * 1024);
            let read = read_more(&mut self.reader, &mut self.buf, want, &self.name)?;
            if read == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn header(&mut self) -> Result<()> {
        if !self.fill_to(SIGNATURE.len() + 8)? || !self.buf.starts_with(SIGNATURE) {
            return Err(self.malformed("no signature"));
        }
        let at = SIGNATURE.len() + 4;
        let extension = u32::from_be_bytes([
            self.buf[at],
            self.buf[at + 1],
            self.buf[at + 2],
            self.buf[at + 3],
        ]) as usize;
        let skip = at + 4 + extension;
        if !self.fill_to(skip)? {
            return Err(self.malformed("a truncated header"));
        }
        self.buf.advance(skip);
        self.next_offset = skip as u64;
        Ok(())
    }

    /// The length of the tuple at `start` of the buffer, reading more as needed; `None` at the
    /// trailer.
    fn tuple_len(&mut self, start: usize) -> Result<Option<usize>> {
        if !self.fill_to(start + 2)? {
            return Err(self.malformed("it ends without a trailer"));
        }
        let fields = i16::from_be_bytes([self.buf[start], self.buf[start + 1]]);
        if fields == -1 {
            return Ok(None);
        }
        let mut pos = start + 2;
        for _ in 0..fields.max(0) {
            if !self.fill_to(pos + 4)? {
                return Err(self.malformed("a truncated tuple"));
            }
            let len = i32::from_be_bytes([
                self.buf[pos],
                self.buf[pos + 1],
                self.buf[pos + 2],
                self.buf[pos + 3],
            ]);
            pos += 4 + usize::try_from(len).unwrap_or(0);
        }
        if !self.fill_to(pos)? {
            return Err(self.malformed("a truncated tuple"));
        }
        Ok(Some(pos - start))
    }

    fn next_block(&mut self) -> Result<Option<Block>> {
        if !self.started {
            self.started = true;
            self.header()?;
        }
        let mut end = 0;
        let mut rows = 0;
        while end < self.block_size {
            match self.tuple_len(end)? {
                Some(len) => {
                    end += len;
                    rows += 1;
                }
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if rows == 0 {
            return Ok(None);
        }
        let data = self.buf.split_to(end).freeze();
        let block = Block {
            index: self.next_index,
            first_line: self.next_row,
            offset: self.next_offset,
            lines: rows,
            data,
        };
        self.next_index += 1;
        self.next_row += rows;
        self.next_offset += end as u64;
        Ok(Some(block))
    }
}

impl<R: Read> Iterator for TupleSplitter<R> {
    type Item = Result<Block>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let block = self.next_block();
        if block.is_err() {
            self.done = true;
        }
        block.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(rows: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        for row in rows {
            out.extend_from_slice(&(row.len() as i16).to_be_bytes());
            for field in *row {
                match field {
                    Some(v) => {
                        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        out.extend_from_slice(v);
                    }
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        out.extend_from_slice(&(-1i16).to_be_bytes());
        out
    }

    #[test]
    fn blocks_hold_whole_tuples_and_count_rows() {
        let rows: Vec<Vec<Option<&[u8]>>> = (0..100)
            .map(|i| vec![Some(&b"abcd"[..i % 4]), None])
            .collect();
        let refs: Vec<&[Option<&[u8]>]> = rows.iter().map(|r| r.as_slice()).collect();
        let data = stream(&refs);
        for block_size in [1, 7, 50, 1 << 20] {
            let blocks: Vec<Block> = TupleSplitter::new(&data[..], "q", block_size)
                .collect::<Result<_>>()
                .unwrap();
            assert_eq!(blocks.iter().map(|b| b.lines).sum::<u64>(), 100);
            assert_eq!(blocks[0].first_line, 1);
            let body: Vec<u8> = blocks.iter().flat_map(|b| b.data.to_vec()).collect();
            assert_eq!(body, data[19..data.len() - 2]);
        }
    }

    #[test]
    fn truncated_streams_are_errors() {
        let data = stream(&[&[Some(b"x")]]);
        for cut in [5, 20, data.len() - 1] {
            let result: Result<Vec<Block>> =
                TupleSplitter::new(&data[..cut], "q", 1 << 20).collect();
            assert!(result.is_err(), "cut at {cut}");
        }
    }
}

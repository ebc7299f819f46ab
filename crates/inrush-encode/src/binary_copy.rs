//! The COPY BINARY framing: a signature header, tuples of length-prefixed fields, a trailer.
//! <https://www.postgresql.org/docs/current/sql-copy.html#id-1.9.3.55.9.4>

use std::borrow::BorrowMut;

/// Signature, flags (no OIDs) and an empty header extension.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// A field count of -1 ends the data.
pub const TRAILER: &[u8] = &(-1i16).to_be_bytes();

/// Builds tuples in a growing buffer (its own, or one it borrows: [`TupleWriter::on`]); a
/// field's length is patched in once its bytes are known, so encoders write straight into the
/// buffer with no intermediate copy.
#[derive(Debug, Default)]
pub struct TupleWriter<B: BorrowMut<Vec<u8>> = Vec<u8>> {
    buf: B,
}

impl TupleWriter {
    pub fn with_capacity(capacity: usize) -> Self {
        TupleWriter {
            buf: Vec::with_capacity(capacity),
        }
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

impl<'b> TupleWriter<&'b mut Vec<u8>> {
    /// Appends tuples to `buf`.
    pub fn on(buf: &'b mut Vec<u8>) -> Self {
        TupleWriter { buf }
    }
}

impl<B: BorrowMut<Vec<u8>>> TupleWriter<B> {
    pub fn len(&self) -> usize {
        self.buf.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.borrow().is_empty()
    }

    /// Starts a tuple; returns the mark to [`TupleWriter::rewind`] to if a field fails.
    pub fn begin_tuple(&mut self, fields: u16) -> usize {
        let buf = self.buf.borrow_mut();
        let mark = buf.len();
        buf.extend_from_slice(&fields.to_be_bytes());
        mark
    }

    pub fn null(&mut self) {
        self.buf
            .borrow_mut()
            .extend_from_slice(&(-1i32).to_be_bytes());
    }

    /// Reserves the length slot and lets `encode` append the value; patches the length after.
    pub fn field<E>(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let buf = self.buf.borrow_mut();
        let slot = buf.len();
        buf.extend_from_slice(&[0; 4]);
        encode(buf)?;
        let len = (buf.len() - slot - 4) as i32;
        buf[slot..slot + 4].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }

    /// The buffer itself, for text COPY lines, which need no framing.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        self.buf.borrow_mut()
    }

    /// Drops everything written since `mark` (a tuple abandoned half way).
    pub fn rewind(&mut self, mark: usize) {
        self.buf.borrow_mut().truncate(mark);
    }
}

/// The fields of the tuple at `pos` of `data` (a field count, then each field's length, -1 for
/// NULL, and bytes) into `fields`: the reading side of [`TupleWriter`]. Where the tuple ends,
/// or `None` if it is cut short.
pub fn tuple_fields<'d>(
    data: &'d [u8],
    pos: usize,
    fields: &mut Vec<Option<&'d [u8]>>,
) -> Option<usize> {
    fields.clear();
    let count = i16::from_be_bytes(data.get(pos..pos + 2)?.try_into().ok()?);
    let mut at = pos + 2;
    for _ in 0..count.max(0) {
        let len = i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            fields.push(None);
        } else {
            let end = at + len as usize;
            fields.push(Some(data.get(at..end)?));
            at = end;
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuple_layout_matches_the_protocol() {
        let mut w = TupleWriter::with_capacity(0);
        w.begin_tuple(2);
        w.field::<()>(|out| {
            out.extend_from_slice(&42i32.to_be_bytes());
            Ok(())
        })
        .unwrap();
        w.null();
        assert_eq!(
            w.into_inner(),
            [0, 2, 0, 0, 0, 4, 0, 0, 0, 42, 255, 255, 255, 255]
        );
    }

    #[test]
    fn rewind_forgets_a_failed_tuple() {
        let mut w = TupleWriter::with_capacity(0);
        let mark = w.begin_tuple(1);
        let failed = w.field(|out| {
            out.push(1);
            Err("bad")
        });
        assert!(failed.is_err());
        w.rewind(mark);
        assert!(w.is_empty());
        assert_eq!(HEADER.len(), 19);
    }

    #[test]
    fn reads_fields_and_nulls_of_a_tuple() {
        let mut data = Vec::new();
        data.extend_from_slice(&2i16.to_be_bytes());
        data.extend_from_slice(&3i32.to_be_bytes());
        data.extend_from_slice(b"abc");
        data.extend_from_slice(&(-1i32).to_be_bytes());
        let mut fields = Vec::new();
        assert_eq!(tuple_fields(&data, 0, &mut fields), Some(data.len()));
        assert_eq!(fields, vec![Some(&b"abc"[..]), None]);
        assert_eq!(tuple_fields(&data[..6], 0, &mut fields), None);
    }
}

//! Typed rows, for engines that bind parameters (SQLite, ODBC) instead of streaming text: a
//! worker parses and checks each field and appends its value, in column order, to the chunk
//! ([`push`]); the writer reads them back borrowed from the chunk ([`Values`]) and binds them
//! where they lie. Per value a tag byte, then 8 bytes (little-endian) for an integer or a
//! double, or a length (4 bytes) and the bytes of a text or a blob.

const NULL: u8 = 0;
const INTEGER: u8 = 1;
const REAL: u8 = 2;
const TEXT: u8 = 3;
const BLOB: u8 = 4;

/// A value to bind, borrowed from a chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound<'a> {
    Null,
    Integer(i64),
    Real(f64),
    /// UTF-8, checked by the worker that encoded it.
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

/// Appends one value to a chunk's typed rows.
pub fn push(out: &mut Vec<u8>, value: Bound<'_>) {
    match value {
        Bound::Null => out.push(NULL),
        Bound::Integer(i) => {
            out.push(INTEGER);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Bound::Real(r) => {
            out.push(REAL);
            out.extend_from_slice(&r.to_le_bytes());
        }
        Bound::Text(t) => push_bytes(out, TEXT, t),
        Bound::Blob(b) => push_bytes(out, BLOB, b),
    }
}

fn push_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads back the values [`push`] wrote, in order; ends early at bytes that are not a whole
/// value (which a worker never writes).
pub struct Values<'a> {
    data: &'a [u8],
}

impl<'a> Values<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Values { data }
    }

    /// What is left to read.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }

    /// Skips `n` values.
    pub fn skip_values(&mut self, n: usize) {
        for _ in 0..n {
            if self.next().is_none() {
                return;
            }
        }
    }
}

impl<'a> Iterator for Values<'a> {
    type Item = Bound<'a>;

    fn next(&mut self) -> Option<Bound<'a>> {
        let (&tag, rest) = self.data.split_first()?;
        let (value, rest) = match tag {
            INTEGER | REAL => {
                let (eight, rest) = rest.split_first_chunk::<8>()?;
                let value = match tag {
                    INTEGER => Bound::Integer(i64::from_le_bytes(*eight)),
                    _ => Bound::Real(f64::from_le_bytes(*eight)),
                };
                (value, rest)
            }
            TEXT | BLOB => {
                let (len, rest) = rest.split_first_chunk::<4>()?;
                let len = u32::from_le_bytes(*len) as usize;
                let bytes = rest.get(..len)?;
                let value = match tag {
                    TEXT => Bound::Text(bytes),
                    _ => Bound::Blob(bytes),
                };
                (value, &rest[len..])
            }
            _ => (Bound::Null, rest),
        };
        self.data = rest;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bound() -> impl Strategy<Value = (u8, i64, f64, Vec<u8>)> {
        (
            0u8..5,
            any::<i64>(),
            any::<f64>(),
            proptest::collection::vec(any::<u8>(), 0..40),
        )
    }

    proptest! {
        #[test]
        fn values_read_back_as_they_were_pushed(values in proptest::collection::vec(bound(), 0..30)) {
            let values: Vec<Bound> = values
                .iter()
                .map(|(tag, i, r, bytes)| match tag {
                    0 => Bound::Null,
                    1 => Bound::Integer(*i),
                    2 => Bound::Real(*r),
                    3 => Bound::Text(bytes),
                    _ => Bound::Blob(bytes),
                })
                .collect();
            let mut out = Vec::new();
            for v in &values {
                push(&mut out, *v);
            }
            let back: Vec<Bound> = Values::new(&out).collect();
            prop_assert_eq!(back.len(), values.len());
            for (a, b) in back.iter().zip(&values) {
                match (a, b) {
                    (Bound::Real(x), Bound::Real(y)) => prop_assert_eq!(x.to_bits(), y.to_bits()),
                    _ => prop_assert_eq!(a, b),
                }
            }
        }

        #[test]
        fn a_cut_row_ends_the_values_and_never_panics(cut in 0usize..40) {
            let mut out = Vec::new();
            push(&mut out, Bound::Integer(7));
            push(&mut out, Bound::Text(b"some text"));
            push(&mut out, Bound::Real(1.5));
            let cut = cut.min(out.len());
            prop_assert!(Values::new(&out[..cut]).count() <= 3);
        }
    }
}

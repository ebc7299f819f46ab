//! The rows every experiment loads: the SqlBulkCopy table's rows from inrush's own seeded
//! generator (`inrush_read::generate`), optionally reshaped for one experiment (sorted keys,
//! identical rows, large values), and their three wire forms (SQL literal, text COPY, binary
//! COPY).

use crate::{Error, Result};
use inrush_encode::binary_copy::TupleWriter;
use inrush_read::generate::{sqlbulkcopy_csv, Rng};

/// The column list every method inserts into, in order.
pub const COLUMNS: &str = "fieldint1, fieldint2, fieldint3, fieldchar1, fieldchar2, fieldchar3";

/// One row of the SqlBulkCopy table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub ints: [i32; 3],
    pub chars: [String; 3],
}

/// How an experiment reshapes the generated rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// As generated.
    Random,
    /// Every row equal to the first (D4: is anything compressed on the wire?).
    Identical,
    /// `fieldint1` = 0, 1, 2, ... (a key loaded in order).
    SortedKey,
    /// `fieldint1` = a seeded permutation of 0..rows (a unique key in random order).
    RandomKey,
    /// `fieldint1` and `fieldint2` in 0..n (values a parent table with keys 0..n holds).
    ModKeys(i32),
    /// `fieldchar3` is this many incompressible characters (stored out of line: TOAST).
    Large(usize),
    /// `fieldchar3` cut to this many characters (fits a short varchar).
    Short(usize),
}

const LETTERS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -";

/// `rows` rows from the generator with `seed`, reshaped by `kind`.
pub fn generate(kind: DataKind, rows: u64, seed: u64) -> Result<Vec<Row>> {
    let source_rows = if kind == DataKind::Identical {
        rows.min(1)
    } else {
        rows
    };
    let mut csv = Vec::with_capacity(source_rows as usize * 330);
    sqlbulkcopy_csv(&mut csv, source_rows, seed).map_err(|e| Error::Data(e.to_string()))?;
    let mut out = parse_csv(&csv)?;
    let mut rng = Rng::new(seed ^ 0x5EED);
    match kind {
        DataKind::Random => {}
        DataKind::Identical => {
            if let Some(first) = out.first().cloned() {
                out = vec![first; rows as usize];
            }
        }
        DataKind::SortedKey => {
            for (i, r) in out.iter_mut().enumerate() {
                r.ints[0] = i as i32;
            }
        }
        DataKind::RandomKey => {
            let mut keys: Vec<i32> = (0..out.len() as i32).collect();
            for i in (1..keys.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                keys.swap(i, j);
            }
            for (r, k) in out.iter_mut().zip(keys) {
                r.ints[0] = k;
            }
        }
        DataKind::ModKeys(n) => {
            for r in &mut out {
                r.ints[0] = r.ints[0].rem_euclid(n.max(1));
                r.ints[1] = r.ints[1].rem_euclid(n.max(1));
            }
        }
        DataKind::Large(len) => {
            for r in &mut out {
                let mut s = String::with_capacity(len);
                while s.len() < len {
                    let mut bits = rng.next_u64();
                    for _ in 0..10 {
                        if s.len() < len {
                            s.push(LETTERS[(bits & 63) as usize] as char);
                        }
                        bits >>= 6;
                    }
                }
                r.chars[2] = s;
            }
        }
        DataKind::Short(len) => {
            for r in &mut out {
                r.chars[2].truncate(len);
            }
        }
    }
    if out.len() as u64 != rows {
        return Err(Error::Data(format!(
            "the generator gave {} rows, {rows} asked",
            out.len()
        )));
    }
    Ok(out)
}

/// Reads the generator's CSV (never quoted, never NULL) back into rows.
pub fn parse_csv(csv: &[u8]) -> Result<Vec<Row>> {
    let text = std::str::from_utf8(csv).map_err(|e| Error::Data(e.to_string()))?;
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let f: Vec<&str> = line.split(',').collect();
            let bad = || Error::Data(format!("line {}: {line:?}", n + 1));
            if f.len() != 6 {
                return Err(bad());
            }
            let int = |s: &str| s.parse::<i32>().map_err(|_| bad());
            Ok(Row {
                ints: [int(f[0])?, int(f[1])?, int(f[2])?],
                chars: [f[3].to_string(), f[4].to_string(), f[5].to_string()],
            })
        })
        .collect()
}

/// `(1,2,3,'a','b','c')`: the row as a SQL literal tuple.
pub fn literal(row: &Row) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', "''"));
    format!(
        "({},{},{},{},{},{})",
        row.ints[0],
        row.ints[1],
        row.ints[2],
        q(&row.chars[0]),
        q(&row.chars[1]),
        q(&row.chars[2])
    )
}

/// Appends the row as a text COPY line.
pub fn text_line(row: &Row, out: &mut Vec<u8>) {
    use std::io::Write;
    let _ = write!(out, "{}\t{}\t{}", row.ints[0], row.ints[1], row.ints[2]);
    for s in &row.chars {
        out.push(b'\t');
        for &b in s.as_bytes() {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                _ => out.push(b),
            }
        }
    }
    out.push(b'\n');
}

/// Appends the row as a binary COPY tuple (int4 x3, varchar/text x3).
pub fn binary_tuple(row: &Row, w: &mut TupleWriter) {
    w.begin_tuple(6);
    for v in row.ints {
        let _ = w.field::<()>(|out| {
            out.extend_from_slice(&v.to_be_bytes());
            Ok(())
        });
    }
    for s in &row.chars {
        let _ = w.field::<()>(|out| {
            out.extend_from_slice(s.as_bytes());
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_the_row_count_and_shape() {
        for kind in [
            DataKind::Random,
            DataKind::Identical,
            DataKind::SortedKey,
            DataKind::RandomKey,
            DataKind::ModKeys(10),
            DataKind::Large(3000),
            DataKind::Short(10),
        ] {
            let rows = generate(kind, 50, 1).unwrap();
            assert_eq!(rows.len(), 50, "{kind:?}");
        }
        let keys: std::collections::BTreeSet<i32> = generate(DataKind::RandomKey, 100, 3)
            .unwrap()
            .iter()
            .map(|r| r.ints[0])
            .collect();
        assert_eq!(keys, (0..100).collect());
        assert!(generate(DataKind::Large(3000), 2, 1).unwrap()[1].chars[2].len() == 3000);
        assert_eq!(
            generate(DataKind::Random, 10, 9).unwrap(),
            generate(DataKind::Random, 10, 9).unwrap()
        );
    }

    #[test]
    fn wire_forms() {
        let row = Row {
            ints: [1, -2, 3],
            chars: ["a'b".into(), "c\td".into(), "e".into()],
        };
        assert_eq!(literal(&row), "(1,-2,3,'a''b','c\td','e')");
        let mut line = Vec::new();
        text_line(&row, &mut line);
        assert_eq!(line, b"1\t-2\t3\ta'b\tc\\td\te\n");
    }
}

//! Seeded synthetic data: the same seed gives the same bytes on every machine, so the demo, the
//! benchmarks and the lab measure the same input.

use std::io::{self, Write};

/// The SqlBulkCopy field report's table (../shared/seeds/002): three ints and three
/// varchar(100), about 330 bytes of CSV a row.
pub const SQLBULKCOPY_COLUMNS: &str = "fieldint1 int NOT NULL, fieldint2 int NOT NULL, fieldint3 int NOT NULL, \
     fieldchar1 varchar(100) NOT NULL, fieldchar2 varchar(100) NOT NULL, fieldchar3 varchar(100) NOT NULL";

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -";

/// splitmix64: tiny, fast, and stable across platforms and crate versions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Writes `rows` rows of the SqlBulkCopy table as CSV (no header); returns the bytes written.
/// Strings are 90 to 100 characters from a 64-letter alphabet, never quoted or NULL.
pub fn sqlbulkcopy_csv(out: &mut impl Write, rows: u64, seed: u64) -> io::Result<u64> {
    let mut rng = Rng::new(seed);
    let mut line = Vec::with_capacity(400);
    let mut written = 0u64;
    let mut itoa = [0u8; 12];
    for _ in 0..rows {
        line.clear();
        for _ in 0..3 {
            let v = rng.next_u64() as i32;
            line.extend_from_slice(format_i32(v, &mut itoa));
            line.push(b',');
        }
        for f in 0..3 {
            let len = 90 + (rng.next_u64() % 11) as usize;
            let mut bits = rng.next_u64();
            for k in 0..len {
                if k % 10 == 9 {
                    bits = rng.next_u64();
                }
                line.push(ALPHABET[(bits & 63) as usize]);
                bits >>= 6;
            }
            line.push(if f == 2 { b'\n' } else { b',' });
        }
        out.write_all(&line)?;
        written += line.len() as u64;
    }
    Ok(written)
}

fn format_i32(v: i32, buf: &mut [u8; 12]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let n = sqlbulkcopy_csv(&mut a, 100, 7).unwrap();
        sqlbulkcopy_csv(&mut b, 100, 7).unwrap();
        assert_eq!(a, b);
        assert_eq!(n as usize, a.len());
        assert_eq!(a.iter().filter(|&&c| c == b'\n').count(), 100);
    }

    #[test]
    fn integers_format_like_display() {
        let mut buf = [0u8; 12];
        for v in [0, 7, -7, i32::MIN, i32::MAX, 1000] {
            assert_eq!(format_i32(v, &mut buf), v.to_string().as_bytes());
        }
    }
}

//! PostgreSQL's partition hash, reproduced bit for bit: `compute_partition_hash_value` of
//! `partbounds.c` over the extended hash functions of `hashfn.c` and `hashfunc.c`. Each key
//! column's value is hashed with [`SEED`] by its type's extended hash function, and the column
//! hashes are folded with `hash_combine64`; a NULL contributes nothing.
//!
//! The values are the COPY BINARY forms the workers encoded, which are the server's datums in
//! network order. Jenkins' `hash_bytes_extended` reads words in the server's byte order: these
//! are the little-endian results (x86-64, ARM64), which is what the tests check against
//! `satisfies_hash_partition`.

/// `HASH_PARTITION_SEED` of `partition.h`.
pub const SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// How a key type's binary form compares and hashes (its default btree and hash operator
/// classes), for the types inrush reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `hashint2extended`, `hashint4extended` (and `date`): the value widened to int4.
    Int2,
    Int4,
    /// `hashint8extended` (and `timestamp`, `timestamptz`): the high half folded in.
    Int8,
    /// `hashcharextended`, which `bool` uses.
    Bool,
    /// `hashtextextended` under a deterministic collation, and `uuid_hash_extended`: the bytes
    /// (ordered bytewise: text only under the C collation).
    Bytes,
}

/// A key value as its type orders it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ordered<'v> {
    Int(i64),
    Bytes(&'v [u8]),
}

impl KeyKind {
    /// The kind of a type (by `pg_type.typname` of its base type), if inrush reproduces it.
    pub fn of_type(typname: &str) -> Option<KeyKind> {
        Some(match typname {
            "int2" => KeyKind::Int2,
            "int4" | "date" => KeyKind::Int4,
            "int8" | "timestamp" | "timestamptz" => KeyKind::Int8,
            "bool" => KeyKind::Bool,
            "text" | "varchar" | "uuid" => KeyKind::Bytes,
            _ => return None,
        })
    }

    /// The value to compare, or `None` if the bytes are not one of this kind.
    pub fn ordered(self, value: &[u8]) -> Option<Ordered<'_>> {
        Some(match self {
            KeyKind::Int2 => Ordered::Int(i16::from_be_bytes(value.try_into().ok()?) as i64),
            KeyKind::Int4 => Ordered::Int(i32::from_be_bytes(value.try_into().ok()?) as i64),
            KeyKind::Int8 => Ordered::Int(i64::from_be_bytes(value.try_into().ok()?)),
            KeyKind::Bool => Ordered::Int(*value.first()? as i64),
            KeyKind::Bytes => Ordered::Bytes(value),
        })
    }

    /// The extended hash of one value's binary form, or `None` if the bytes are not one.
    pub fn hash(self, value: &[u8], seed: u64) -> Option<u64> {
        Some(match self {
            KeyKind::Int2 => hash_uint32_extended(
                i16::from_be_bytes(value.try_into().ok()?) as i32 as u32,
                seed,
            ),
            KeyKind::Int4 => hash_uint32_extended(u32::from_be_bytes(value.try_into().ok()?), seed),
            KeyKind::Int8 => hash_int8_extended(i64::from_be_bytes(value.try_into().ok()?), seed),
            KeyKind::Bool => {
                let [byte] = value else { return None };
                hash_uint32_extended(*byte as i8 as i32 as u32, seed)
            }
            KeyKind::Bytes => hash_bytes_extended(value, seed),
        })
    }
}

/// `compute_partition_hash_value`: each non-NULL column's hash combined into the row's.
pub fn row_hash<'v>(columns: impl Iterator<Item = (KeyKind, Option<&'v [u8]>)>) -> Option<u64> {
    let mut row = 0u64;
    for (kind, value) in columns {
        if let Some(value) = value {
            row = hash_combine64(row, kind.hash(value, SEED)?);
        }
    }
    Some(row)
}

/// `hash_combine64` of `hashfn.h`.
pub fn hash_combine64(a: u64, b: u64) -> u64 {
    a ^ b
        .wrapping_add(0x49a0_f4dd_15e5_a8e3)
        .wrapping_add(a << 54)
        .wrapping_add(a >> 7)
}

/// `hashint8extended`: the low half, xor the high half (its complement for a negative value),
/// so that an int8 hashes as the int4 of the same value does.
fn hash_int8_extended(value: i64, seed: u64) -> u64 {
    let high = (value >> 32) as u32;
    let low = value as u32 ^ if value >= 0 { high } else { !high };
    hash_uint32_extended(low, seed)
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The state both extended hashes start from, perturbed by the seed.
fn start(len: u32, seed: u64) -> (u32, u32, u32) {
    let init = 0x9e37_79b9u32.wrapping_add(len).wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    (a, b, c)
}

/// `hash_bytes_uint32_extended`.
fn hash_uint32_extended(k: u32, seed: u64) -> u64 {
    let (mut a, mut b, mut c) = start(4, seed);
    a = a.wrapping_add(k);
    final_mix(&mut a, &mut b, &mut c);
    ((b as u64) << 32) | c as u64
}

/// `hash_bytes_extended`, little-endian: whole 12-byte rounds, then the tail, whose bytes
/// fill `a`, `b` and the upper three bytes of `c` (the lowest byte of `c` holds the length).
fn hash_bytes_extended(key: &[u8], seed: u64) -> u64 {
    let (mut a, mut b, mut c) = start(key.len() as u32, seed);
    let word = |w: &[u8]| {
        let mut bytes = [0u8; 4];
        bytes[..w.len()].copy_from_slice(w);
        u32::from_le_bytes(bytes)
    };
    let mut rest = key;
    while rest.len() >= 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    let n = rest.len();
    if n > 8 {
        c = c.wrapping_add(word(&rest[8..]) << 8);
    }
    if n > 4 {
        b = b.wrapping_add(word(&rest[4..n.min(8)]));
    }
    if n > 0 {
        a = a.wrapping_add(word(&rest[..n.min(4)]));
    }
    final_mix(&mut a, &mut b, &mut c);
    ((b as u64) << 32) | c as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    // The server's own values (PostgreSQL 15, x86-64): `SELECT hashint4extended(1, 0),
    // hashtextextended('abc', 0), hashtextextended('hello, partitioned world', <SEED>)`.
    #[test]
    fn extended_hashes_match_the_servers() {
        assert_eq!(
            KeyKind::Int4.hash(&1i32.to_be_bytes(), 0),
            Some(-3670598878359251130i64 as u64)
        );
        assert_eq!(
            KeyKind::Int8.hash(&1i64.to_be_bytes(), 0),
            KeyKind::Int4.hash(&1i32.to_be_bytes(), 0),
            "int8 hashes as int4 for values that fit"
        );
        assert_eq!(
            KeyKind::Int2.hash(&(-7i16).to_be_bytes(), 0),
            KeyKind::Int4.hash(&(-7i32).to_be_bytes(), 0)
        );
        assert_eq!(
            KeyKind::Bytes.hash(b"abc", 0),
            Some(-6747756470228489321i64 as u64)
        );
        assert_eq!(
            KeyKind::Bytes.hash(b"hello, partitioned world", SEED),
            Some(-5972899381680209458i64 as u64)
        );
        assert_eq!(KeyKind::Int4.hash(&[0, 1], 0), None);
    }
}

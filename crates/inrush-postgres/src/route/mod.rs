//! Rows of a partitioned table routed on the client: the partition tree read from the catalog
//! at every level ([`catalog`]), and a [`Router`] that finds each row's leaf from its key values
//! as the server's `get_partition_for_tuple` does. Range and list keys compare as their types
//! order (integers, dates, timestamps, booleans, uuids; text only under the C collation); hash
//! keys hash as the server hashes them ([`hash`]). A tree inrush cannot route exactly (another
//! key type or collation, an expression key, per-partition privileges, statement triggers, row
//! security, defaults that differ, a foreign partition whose remote table differs or cannot be
//! reached) goes through the server's own routing, and [`Routing::Server`] says why.
//!
//! The router reads the COPY BINARY fields the workers encoded; the load then COPYs each
//! leaf's rows straight into the leaf, where the server checks the partition constraint again,
//! and each foreign leaf's rows straight into its remote table on its own server ([`shard`]).

mod bound;
mod catalog;
pub mod hash;
pub mod shard;

pub use catalog::routing;
pub use shard::{Remote, Shard, ShardServer};

use hash::KeyKind;
use std::cmp::Ordering;

/// How the rows of a partitioned table find their partition.
pub enum Routing {
    /// By inrush, to the leaves of this router.
    Client(Router),
    /// By the server (COPY into the parent), for this reason.
    Server(String),
}

/// A leaf partition: where its rows are COPYed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub oid: u32,
    /// `"schema"."name"`, safe to splice into SQL.
    pub qualified: String,
    /// A foreign leaf: its remote table, loaded on its own server.
    pub remote: Option<Remote>,
}

/// A partition tree, ready to route rows to its leaves.
#[derive(Debug)]
pub struct Router {
    root: Node,
    pub leaves: Vec<Leaf>,
    /// The foreign servers the foreign leaves live on.
    pub shards: Vec<Shard>,
}

impl Router {
    /// The index in [`Router::leaves`] of the leaf a row belongs to (`fields`: the row's COPY
    /// fields in the load's column order, `None` for NULL), or COPY's reason when none fits.
    pub fn route(&self, fields: &[Option<&[u8]>]) -> Result<u32, String> {
        self.root.route(fields)
    }
}

impl inrush_load::route::Route for Router {
    fn route(&self, fields: &[Option<&[u8]>]) -> Result<u32, String> {
        Router::route(self, fields)
    }
}

/// One column of a partition key.
#[derive(Debug)]
struct KeyColumn {
    name: String,
    /// Its place among the load's columns.
    position: usize,
    kind: KeyKind,
    /// `pg_type.typname` of its base type, to print a value as the server would.
    type_name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Range,
    List,
    Hash,
}

/// A partitioned table of the tree.
#[derive(Debug)]
struct Node {
    /// The bare name, as COPY's message names it.
    name: String,
    strategy: Strategy,
    key: Vec<KeyColumn>,
    children: Vec<(Bound, Target)>,
    default: Option<Target>,
    /// Hash: the greatest modulus, by which the row's hash is reduced first.
    greatest_modulus: u64,
}

#[derive(Debug)]
enum Target {
    Leaf(u32),
    Node(Box<Node>),
}

/// A partition's bound with its values in binary form.
#[derive(Debug)]
enum Bound {
    Range { from: Vec<Datum>, to: Vec<Datum> },
    List(Vec<Option<Vec<u8>>>),
    Hash { modulus: u64, remainder: u64 },
}

#[derive(Debug)]
enum Datum {
    Min,
    Max,
    Value(Vec<u8>),
}

impl Node {
    /// Key column `i`'s value in the row (`None` for NULL).
    fn value<'v>(&self, i: usize, fields: &[Option<&'v [u8]>]) -> Option<&'v [u8]> {
        fields.get(self.key[i].position).copied().flatten()
    }

    fn route(&self, fields: &[Option<&[u8]>]) -> Result<u32, String> {
        let found = match self.strategy {
            Strategy::Hash => self.by_hash(fields)?,
            Strategy::List => {
                let value = self.value(0, fields);
                self.children.iter().find(|(bound, _)| {
                    matches!(bound, Bound::List(list) if list.iter().any(|v| v.as_deref() == value))
                })
            }
            // A NULL in a range key fits only the default partition.
            Strategy::Range if (0..self.key.len()).any(|i| self.value(i, fields).is_none()) => None,
            Strategy::Range => {
                let mut found = None;
                for child in &self.children {
                    let Bound::Range { from, to } = &child.0 else {
                        continue;
                    };
                    if self.compare(from, fields)? != Ordering::Greater
                        && self.compare(to, fields)? == Ordering::Greater
                    {
                        found = Some(child);
                        break;
                    }
                }
                found
            }
        };
        match found.map(|(_, target)| target).or(self.default.as_ref()) {
            Some(Target::Leaf(leaf)) => Ok(*leaf),
            Some(Target::Node(node)) => node.route(fields),
            None => Err(self.no_partition(fields)),
        }
    }

    /// `rowHash % greatest_modulus` picks the one partition whose remainder it has.
    fn by_hash(&self, fields: &[Option<&[u8]>]) -> Result<Option<&(Bound, Target)>, String> {
        let columns = (0..self.key.len()).map(|i| (self.key[i].kind, self.value(i, fields)));
        let hash = hash::row_hash(columns).ok_or_else(|| self.malformed())?;
        let remainder = hash % self.greatest_modulus.max(1);
        Ok(self.children.iter().find(|(bound, _)| {
            matches!(bound, Bound::Hash { modulus, remainder: r } if remainder % modulus == *r)
        }))
    }

    /// A range bound against the row's key (no NULL in it), as `partition_rbound_datum_cmp`
    /// compares them.
    fn compare(&self, bound: &[Datum], fields: &[Option<&[u8]>]) -> Result<Ordering, String> {
        for (i, datum) in bound.iter().enumerate() {
            let kind = self.key[i].kind;
            let order = match datum {
                Datum::Min => return Ok(Ordering::Less),
                Datum::Max => return Ok(Ordering::Greater),
                Datum::Value(bytes) => {
                    let value = self.value(i, fields).and_then(|v| kind.ordered(v));
                    let value = value.ok_or_else(|| self.malformed())?;
                    kind.ordered(bytes).as_ref().cmp(&Some(&value))
                }
            };
            if order != Ordering::Equal {
                return Ok(order);
            }
        }
        Ok(Ordering::Equal)
    }

    fn malformed(&self) -> String {
        format!(
            "internal error: a partition key value of {} is not in its type's binary form",
            self.name
        )
    }

    /// COPY's message and detail for a row no partition takes.
    fn no_partition(&self, fields: &[Option<&[u8]>]) -> String {
        let message = format!("no partition of relation \"{}\" found for row", self.name);
        let printed: Option<Vec<String>> = self
            .key
            .iter()
            .enumerate()
            .map(|(i, column)| match self.value(i, fields) {
                None => Some("null".to_string()),
                Some(v) => print_value(&column.type_name, v),
            })
            .collect();
        match printed {
            Some(printed) => {
                let names: Vec<&str> = self.key.iter().map(|k| k.name.as_str()).collect();
                format!(
                    "{message} (Partition key of the failing row contains ({}) = ({}).)",
                    names.join(", "),
                    printed.join(", ")
                )
            }
            None => message,
        }
    }
}

/// A key value as the type's output function prints it, for the types that are simple to.
fn print_value(type_name: &str, value: &[u8]) -> Option<String> {
    let int = |v: &[u8]| -> Option<i64> {
        Some(match v.len() {
            2 => i16::from_be_bytes(v.try_into().ok()?) as i64,
            4 => i32::from_be_bytes(v.try_into().ok()?) as i64,
            8 => i64::from_be_bytes(v.try_into().ok()?),
            _ => return None,
        })
    };
    Some(match type_name {
        "int2" | "int4" | "int8" => int(value)?.to_string(),
        "text" | "varchar" => String::from_utf8_lossy(value).into_owned(),
        "bool" => if value == [1] { "t" } else { "f" }.to_string(),
        "date" => print_date(int(value)? as i32)?,
        _ => return None,
    })
}

/// A date (days since 2000-01-01) as `YYYY-MM-DD`, or `infinity`; `None` for years the
/// server prints otherwise (BC).
fn print_date(days: i32) -> Option<String> {
    match days {
        i32::MAX => return Some("infinity".into()),
        i32::MIN => return Some("-infinity".into()),
        _ => {}
    }
    let (year, month, day) = inrush_core::calendar::civil_from_days(i64::from(days) + 10_957);
    (year >= 1).then(|| format!("{year:04}-{month:02}-{day:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, position: usize, kind: KeyKind, type_name: &str) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            position,
            kind,
            type_name: type_name.into(),
        }
    }

    fn int4(v: i32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    /// `(a int, d date)` by range: (MINVALUE) to (10, '2000-01-05'), then to (MAXVALUE), and
    /// under it a list on `t text` with a NULL partition and a default.
    fn tree() -> Router {
        let list = Node {
            name: "r2".into(),
            strategy: Strategy::List,
            key: vec![key("t", 2, KeyKind::Bytes, "text")],
            children: vec![
                (
                    Bound::List(vec![Some(b"x".to_vec()), None]),
                    Target::Leaf(1),
                ),
                (Bound::List(vec![Some(b"y".to_vec())]), Target::Leaf(2)),
            ],
            default: Some(Target::Leaf(3)),
            greatest_modulus: 0,
        };
        let root = Node {
            name: "r".into(),
            strategy: Strategy::Range,
            key: vec![
                key("a", 0, KeyKind::Int4, "int4"),
                key("d", 1, KeyKind::Int4, "date"),
            ],
            children: vec![
                (
                    Bound::Range {
                        from: vec![Datum::Min, Datum::Min],
                        to: vec![Datum::Value(int4(10)), Datum::Value(int4(4))],
                    },
                    Target::Leaf(0),
                ),
                (
                    Bound::Range {
                        from: vec![Datum::Value(int4(10)), Datum::Value(int4(4))],
                        to: vec![Datum::Max, Datum::Max],
                    },
                    Target::Node(Box::new(list)),
                ),
            ],
            default: None,
            greatest_modulus: 0,
        };
        Router {
            root,
            leaves: Vec::new(),
            shards: Vec::new(),
        }
    }

    #[test]
    fn routes_through_range_and_list_levels() {
        let router = tree();
        let row = |a: i32, d: i32, t: Option<&'static [u8]>| {
            let (a, d) = (int4(a), int4(d));
            router.route(&[Some(&a), Some(&d), t])
        };
        assert_eq!(row(-100, 0, None), Ok(0));
        assert_eq!(
            row(10, 3, None),
            Ok(0),
            "upper bounds are exclusive, column by column"
        );
        assert_eq!(row(10, 4, Some(b"x")), Ok(1));
        assert_eq!(row(11, -9, None), Ok(1), "NULL is in the list");
        assert_eq!(row(99, 0, Some(b"y")), Ok(2));
        assert_eq!(row(99, 0, Some(b"z")), Ok(3));
        let d = int4(0);
        assert_eq!(
            router.route(&[None, Some(&d), None]),
            Err("no partition of relation \"r\" found for row (Partition key of the failing row contains (a, d) = (null, 2000-01-01).)".into())
        );
    }

    #[test]
    fn hash_takes_the_partition_of_the_remainder_by_the_greatest_modulus() {
        let parts = [(2, 0), (4, 1), (4, 3)];
        let node = Node {
            name: "h".into(),
            strategy: Strategy::Hash,
            key: vec![key("a", 0, KeyKind::Int4, "int4")],
            children: parts
                .iter()
                .enumerate()
                .map(|(i, &(modulus, remainder))| {
                    (Bound::Hash { modulus, remainder }, Target::Leaf(i as u32))
                })
                .collect(),
            default: None,
            greatest_modulus: 4,
        };
        for a in -50..50 {
            let v = int4(a);
            let hash = hash::row_hash([(KeyKind::Int4, Some(&v[..]))].into_iter()).unwrap();
            let expected = match hash % 4 {
                0 | 2 => 0,
                1 => 1,
                _ => 2,
            };
            assert_eq!(node.route(&[Some(&v)]), Ok(expected));
        }
    }

    #[test]
    fn dates_print_as_the_server_prints_them() {
        assert_eq!(print_date(0).as_deref(), Some("2000-01-01"));
        assert_eq!(print_date(-1).as_deref(), Some("1999-12-31"));
        assert_eq!(print_date(7305).as_deref(), Some("2020-01-01"));
        assert_eq!(print_date(i32::MAX).as_deref(), Some("infinity"));
    }
}

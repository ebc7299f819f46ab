//! A column's type in no engine's spelling: what `--create` infers from a file, and what a
//! query's source server says its result columns are. Each engine crate maps it to its own type
//! names (and a source's names to it), so no engine parses another's, and a new engine adds one
//! mapping each way.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum SqlType {
    Boolean,
    /// Integers of 16, 32 and 64 bits.
    SmallInt,
    Integer,
    BigInt,
    /// An exact decimal of (precision, scale); `None`: of any size.
    Numeric(Option<(u32, u32)>),
    /// Binary floating point of 32 and 64 bits.
    Real,
    Double,
    /// Text of at most this many characters; `None`: of any length.
    Varchar(Option<u32>),
    /// Text of exactly this many characters, padded with blanks.
    Char(u32),
    Text,
    Bytes,
    /// A string of this many bits.
    Bit(u32),
    Date,
    /// A time of day, with this many digits of a second's fraction (`None`: the engine's most).
    Time(Option<u32>),
    /// A date and time of day, in no zone.
    Timestamp(Option<u32>),
    /// An instant: a date and time with its zone.
    TimestampTz(Option<u32>),
    Interval,
    Uuid,
    Json,
    /// A one-dimensional array of its element's type.
    Array(Box<SqlType>),
    /// A type only its source server has (PostgreSQL's `inet`, an enum), named as `engine`
    /// names it: a target of that engine takes the name as it is, others store the values'
    /// text.
    Source {
        engine: &'static str,
        name: String,
    },
}

//! Which of PostgreSQL's types a column's values are encoded as, by OID.

/// Types inrush encodes itself into COPY BINARY. Anything else is [`ValueType::Unsupported`]
/// and makes its table fall back to text COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    /// `text`, and enum labels (whose binary form is their text).
    Text,
    Varchar,
    Bpchar,
    Bytea,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    Interval,
    Uuid,
    Json,
    Jsonb,
}

impl ScalarType {
    /// The built-in type with this OID, if inrush encodes it.
    pub fn from_oid(oid: u32) -> Option<ScalarType> {
        Some(match oid {
            16 => ScalarType::Bool,
            17 => ScalarType::Bytea,
            20 => ScalarType::Int8,
            21 => ScalarType::Int2,
            23 => ScalarType::Int4,
            25 => ScalarType::Text,
            114 => ScalarType::Json,
            700 => ScalarType::Float4,
            701 => ScalarType::Float8,
            1042 => ScalarType::Bpchar,
            1043 => ScalarType::Varchar,
            1082 => ScalarType::Date,
            1083 => ScalarType::Time,
            1114 => ScalarType::Timestamp,
            1184 => ScalarType::Timestamptz,
            1186 => ScalarType::Interval,
            1700 => ScalarType::Numeric,
            2950 => ScalarType::Uuid,
            3802 => ScalarType::Jsonb,
            _ => return None,
        })
    }

    /// The OID of the built-in type (enum labels report `text`).
    pub fn oid(self) -> u32 {
        match self {
            ScalarType::Bool => 16,
            ScalarType::Bytea => 17,
            ScalarType::Int8 => 20,
            ScalarType::Int2 => 21,
            ScalarType::Int4 => 23,
            ScalarType::Text => 25,
            ScalarType::Json => 114,
            ScalarType::Float4 => 700,
            ScalarType::Float8 => 701,
            ScalarType::Bpchar => 1042,
            ScalarType::Varchar => 1043,
            ScalarType::Date => 1082,
            ScalarType::Time => 1083,
            ScalarType::Timestamp => 1114,
            ScalarType::Timestamptz => 1184,
            ScalarType::Interval => 1186,
            ScalarType::Numeric => 1700,
            ScalarType::Uuid => 2950,
            ScalarType::Jsonb => 3802,
        }
    }
}

/// How values for one column are encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    Scalar {
        scalar: ScalarType,
    },
    /// A one-dimensional array; `elem_oid` is what the binary array header must name, which for
    /// an array of enums is the enum's own OID.
    Array {
        elem: ScalarType,
        elem_oid: u32,
    },
    /// No binary encoder: the table is loaded through text COPY and the server parses it.
    Unsupported,
}

//! What a target column is, in terms every engine shares.

use crate::SqlType;

/// A column of the target table that the input feeds. What an engine needs beyond this to
/// write values (PostgreSQL's OIDs and type modifiers) it keeps in its own crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetColumn {
    pub name: String,
    /// The type as the engine spells it, length and precision included (for messages).
    pub type_sql: String,
    /// The type in the engines' shared terms (`SqlType::Source` for one only its engine has).
    pub sql_type: SqlType,
    pub not_null: bool,
}

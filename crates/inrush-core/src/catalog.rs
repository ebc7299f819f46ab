//! What a target's catalog says about a table that the load plan weighs: its indexes, foreign
//! keys, size, and the per-row work it hides. Each target crate reads them from its engine.

/// An index on the target table, as the catalog defines it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexInfo {
    pub name: String,
    /// The exact statement that recreates it (PostgreSQL's `pg_get_indexdef`, SQLite's
    /// `sqlite_schema.sql`). For a PostgreSQL partitioned index, a
    /// script: a lock that makes such scripts wait for each other (attaching takes an ACCESS
    /// EXCLUSIVE lock, which would deadlock against another index's build on the same table),
    /// the index `ON ONLY` the parent, then each partition's index by its own name, attached to
    /// its parent index (which makes the parent valid once all are).
    pub definition: String,
    pub unique: bool,
    /// The constraint (primary key, unique, exclusion) the index enforces, if any.
    pub constraint: Option<String>,
    pub constraint_kind: Option<ConstraintKind>,
    /// The constraint is DEFERRABLE.
    pub deferrable: bool,
    /// A foreign key of some table relies on this index.
    pub referenced: bool,
    /// Not valid or not ready (a failed CREATE INDEX CONCURRENTLY).
    pub invalid: bool,
    pub bytes: i64,
    /// A B-tree's first key when it is a plain column (not an expression).
    pub leading_column: Option<String>,
    /// Why the engine cannot drop it for a load, when it cannot (the whole reason, in the
    /// engine's words): it stays.
    pub stays: Option<String>,
}

/// What a constraint enforced by an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintKind {
    PrimaryKey,
    Unique,
    /// No two rows' values conflict by the index's operators (PostgreSQL's EXCLUDE).
    Exclusion,
}

/// A foreign key of the target table (one it references other tables through).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKeyInfo {
    pub name: String,
    /// `pg_get_constraintdef`: `FOREIGN KEY (a) REFERENCES b(id) ...`.
    pub definition: String,
    /// Validated now; a key that was NOT VALID before the load is not validated after it.
    pub validated: bool,
}

/// How big the table is now, to weigh a load against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableSize {
    pub table_bytes: i64,
    pub index_bytes: i64,
    /// The planner's row estimate (`reltuples`; -1 before the first VACUUM/ANALYZE on 14+).
    pub rows_estimate: f64,
    /// The table holds no row (checked, not estimated; false when we may not read it).
    pub empty: bool,
}

/// Work the server does for every inserted row that the plan cannot remove, only report:
/// triggers, sequences with a small cache, defaults that call volatile functions.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HiddenWork {
    /// User triggers.
    pub triggers: Vec<Trigger>,
    /// (column, sequence, cache) of columns filled from a sequence.
    pub sequences: Vec<(String, String, i64)>,
    /// (column, default expression) of defaults calling a volatile function.
    pub volatile_defaults: Vec<(String, String)>,
    /// Bytes in the table's TOAST table: values stored compressed and out of line, each a
    /// second write.
    pub toast_bytes: i64,
    /// (column, type) of the columns whose values can go there.
    pub toast_columns: Vec<(String, String)>,
    /// Partitions (for a partitioned table).
    pub partitions: i64,
    /// (name, value) of the settings that matter for a bulk load.
    pub settings: Vec<(String, String)>,
}

/// A trigger on the target table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Trigger {
    pub name: String,
    /// The statement that creates it, where the engine gives one.
    pub definition: String,
    pub firing: Firing,
}

/// When a trigger fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Firing {
    /// In ordinary sessions (every engine's default).
    Origin,
    /// In replication sessions too (PostgreSQL's `ENABLE ALWAYS`).
    Always,
    /// Only in replication sessions (PostgreSQL's `ENABLE REPLICA`).
    Replica,
    Disabled,
}

impl Trigger {
    /// A trigger that fires in ordinary sessions, of an engine that gives no definition.
    pub fn named(name: &str) -> Trigger {
        Trigger {
            name: name.to_string(),
            definition: String::new(),
            firing: Firing::Origin,
        }
    }
}

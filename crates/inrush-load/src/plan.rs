//! What a load does around the COPY, decided before it starts and printed by `inrush plan` and
//! in the load's summary: which indexes and foreign keys are dropped before the load and
//! rebuilt after it, whether the rows are sorted by a kept index's key, and the upkeep after. The field reports measured it again and again: maintaining secondary indexes row by row costs
//! more than building them once (here: 1M rows with 2 secondary indexes, 19.9 s with the
//! indexes present, 6.3 s loading first and indexing after).

use inrush_core::catalog::{
    ConstraintKind, Firing, ForeignKeyInfo, HiddenWork, IndexInfo, TableSize,
};
use inrush_core::TargetColumn;
use std::fmt;

/// The user's say in the plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanOptions {
    /// Rebuild secondary indexes after the load when the rule says so (`--keep-indexes` turns
    /// this off).
    pub rebuild_indexes: bool,
    /// Rebuild when the load is at least this fraction of the table's current size (the field
    /// reports' 10-20% rule).
    pub threshold: f64,
    /// Also build primary keys and unique constraints after the load when the table is not
    /// empty (`--rebuild-unique`). If the rows then break one, the load is undone.
    pub rebuild_unique: bool,
    /// Never drop primary keys, unique constraints and foreign keys, for this reason: the load
    /// needs the server to refuse rows as they come (`--max-errors` sends them to the reject
    /// file, `--on-conflict` conflicts through the keys), or could not be undone if a key put
    /// back after it failed (`--resume` commits as it goes, `--truncate` empties the table).
    pub keep_keys: Option<&'static str>,
    /// Disable the table's enabled user triggers during the load, re-enable them after
    /// (`--disable-triggers`; needs ownership of the table). Off by default: triggers are the
    /// user's logic.
    pub disable_triggers: bool,
    /// What makes the table query-ready after the load (`--after`; `--no-analyze` is
    /// `AfterLoad::Nothing`).
    pub after: AfterLoad,
    /// Sort a small load by a kept index's leading key when that index is at least this large
    /// (a smaller one stays in memory and gains nothing); `u64::MAX` never sorts (`--no-sort`).
    pub sort_min_index_bytes: u64,
    /// Trade the database file's crash safety for speed where the engine allows it
    /// (`--fast-unsafe`; SQLite only).
    pub fast_unsafe: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            rebuild_indexes: true,
            threshold: 0.2,
            after: AfterLoad::Auto,
            rebuild_unique: false,
            keep_keys: None,
            disable_triggers: false,
            sort_min_index_bytes: 64 << 20,
            fast_unsafe: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexAction {
    Keep,
    Rebuild,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct IndexDecision {
    pub name: String,
    pub action: IndexAction,
    pub reason: String,
    #[serde(skip)]
    pub index: IndexInfo,
}

/// A foreign key: checked row by row during the load (a trigger per row), or dropped and added
/// back after it NOT VALID + VALIDATE, one set-based check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ForeignKeyDecision {
    pub name: String,
    pub action: IndexAction,
    pub reason: String,
    #[serde(skip)]
    pub foreign_key: ForeignKeyInfo,
}

/// The user's choice of what runs after the load (`--after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLoad {
    /// The plan chooses (see `LoadPlan::decide`).
    Auto,
    VacuumAnalyze,
    Analyze,
    /// Nothing: statistics and the visibility map are left to autovacuum.
    Nothing,
}

/// What runs after the load so the first queries need not pay for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Maintenance {
    None,
    /// Statistics for the planner; hint bits are set by the first reads and the visibility
    /// map by autovacuum. The default for a table without indexes, or a load that is small
    /// next to the table: measured from the load's start to the first queries' answers, a
    /// VACUUM there costs more than it saves them (docs/BENCHMARKS.md, `bench/query_ready.py`).
    Analyze,
    /// Statistics, plus hint bits and the visibility map set once now: the default when an
    /// indexed table is mostly new rows, since without the map every index-only scan (and a
    /// join that uses one) reads the heap until autovacuum comes.
    VacuumAnalyze,
    /// Statistics only: COPY FREEZE wrote the rows frozen and all-visible already.
    AnalyzeFrozen,
    /// Statistics only: the engine keeps no visibility map or hint bits (SQLite).
    AnalyzeOnly,
}

/// What an engine can do around a load, which the plan's choices and their words rest on.
/// Each engine declares its own for the table at hand ([`crate::target::Load::plan`]), so no
/// engine patches the plan afterwards. [`Capabilities::default`] is an engine that can do
/// nothing but load: every index and key stays, statistics only after.
#[derive(Debug, Clone)]
pub struct Capabilities {
    /// The upkeep after the load can set a visibility map and hint bits (PostgreSQL's
    /// VACUUM); without one, statistics only.
    pub vacuum: bool,
    /// Secondary indexes can be dropped for the load and built again after it, with these
    /// words for how (`None`: they stay).
    pub rebuilds: Option<String>,
    /// Primary keys and unique constraints can be built after the load too (where the
    /// options and the table allow: an empty table, `--rebuild-unique`); else why not, said of
    /// each (PostgreSQL's partitioned tables: a constraint cannot be attached there).
    pub unique_after: std::result::Result<(), String>,
    /// How foreign keys are checked when not row by row, in the engine's words.
    pub foreign_keys: ForeignKeysAfter,
    /// The whole rule when the engine keeps every index whatever the sizes (SQLite under
    /// `--resume`, a Citus table).
    pub keeps_all: Option<String>,
    /// Sentences the rule ends with (a table that cannot roll back, how the rows are sent).
    pub notes: Vec<String>,
}

/// How an engine checks a table's foreign keys during a load.
#[derive(Debug, Clone)]
pub enum ForeignKeysAfter {
    /// Row by row, for this reason (a sentence).
    Never(String),
    /// Dropped and put back after a load the rule calls large (PostgreSQL: re-added NOT VALID
    /// and validated once), in these words.
    WhenLarge(String),
    /// Always checked once after the rows (MariaDB: foreign_key_checks=0, then an anti-join),
    /// in these words.
    Always(String),
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            vacuum: false,
            rebuilds: None,
            unique_after: Err("kept on this engine".into()),
            foreign_keys: ForeignKeysAfter::default(),
            keeps_all: None,
            notes: Vec::new(),
        }
    }
}

impl Default for ForeignKeysAfter {
    fn default() -> Self {
        ForeignKeysAfter::Never("checked row by row during the load".into())
    }
}

/// The plan for one load.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadPlan {
    pub table: String,
    /// Input bytes when known (a file's size on disk).
    pub load_bytes: Option<u64>,
    pub table_bytes: i64,
    pub index_bytes: i64,
    /// Why indexes are rebuilt or kept, in one sentence.
    pub rule: String,
    pub indexes: Vec<IndexDecision>,
    pub foreign_keys: Vec<ForeignKeyDecision>,
    pub after: Maintenance,
    /// Per-row work the plan reports but does not change (triggers, sequences, defaults).
    pub hidden: HiddenWork,
    /// Disable enabled triggers during the load.
    pub disable_triggers: bool,
    /// The key the rows are sorted by before they are sent, and why (or why not).
    pub sort: Option<SortKey>,
    pub sort_reason: Option<String>,
    /// A partitioned table: who routes its rows, and why.
    pub routing: Option<String>,
    #[serde(skip)]
    sort_min_index_bytes: u64,
}

/// Rows sorted by one kept index's leading key before they are sent: a small load into a large
/// indexed table then fills that index leaf by leaf instead of at random (measured here: 300k
/// rows into a 6M-row table with a 129 MB primary key, 1.2-1.4 s sorted against 2.1-3.2 s).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SortKey {
    pub index: String,
    pub column: String,
    /// The column's position among the loaded columns.
    pub position: usize,
    /// The values' bytes compare as big-endian signed integers (sign bit flipped); else as
    /// bytes (text in byte order, which is what locality needs, not the collation's order).
    pub signed: bool,
}

/// The most input a load sorts (in memory); a larger one is sent as it comes.
pub const SORT_BUDGET: u64 = 256 << 20;

/// How long the statement that drops a table's indexes for a load waits for a lock held by a
/// session that has the table open in a transaction. Waiting, it makes every new query of the
/// table wait behind it; past this the indexes stay ([`held_open`]). The
/// servers' own limits are none (PostgreSQL's `lock_timeout`) or a year (MariaDB's
/// `lock_wait_timeout`).
pub const DROP_LOCK_WAIT_SECONDS: u32 = 5;

/// Why the plan keeps what it would drop ([`LoadPlan::keep_after_all`]) when another session
/// kept `table` open longer than [`DROP_LOCK_WAIT_SECONDS`] while the drop waited for it.
pub fn held_open(table: &str) -> String {
    format!(
        "another session kept {table} open for {DROP_LOCK_WAIT_SECONDS} s (a transaction that read or wrote it), and dropping its indexes would have made every query of the table wait behind it"
    )
}

impl LoadPlan {
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        table: &str,
        can: &Capabilities,
        indexes: Vec<IndexInfo>,
        foreign_keys: Vec<ForeignKeyInfo>,
        size: TableSize,
        load_bytes: Option<u64>,
        opts: PlanOptions,
    ) -> LoadPlan {
        let current = (size.table_bytes + size.index_bytes).max(0) as f64;
        let indexed = !indexes.is_empty();
        let (large, rule) = match (opts.rebuild_indexes, &can.keeps_all, load_bytes) {
            (_, Some(rule), _) => (false, rule.clone()),
            _ if can.rebuilds.is_none() => (false, "indexes are kept and maintained row by row (inrush rebuilds none on this engine)".to_string()),
            (false, _, _) => (false, "indexes are kept: --keep-indexes".to_string()),
            (_, _, Some(load)) if load as f64 >= opts.threshold * current => (
                true,
                format!(
                    "the load ({}) is at least {:.0}% of the table and its indexes ({}): secondary indexes and foreign keys are dropped and rebuilt after it",
                    human(load as f64),
                    opts.threshold * 100.0,
                    human(current)
                ),
            ),
            (_, _, Some(load)) => (
                false,
                format!(
                    "the load ({}) is under {:.0}% of the table and its indexes ({}): indexes are kept and maintained row by row",
                    human(load as f64),
                    opts.threshold * 100.0,
                    human(current)
                ),
            ),
            (_, _, None) if size.empty => {
                (true, "the table is empty and the load's size unknown: secondary indexes are rebuilt after the load".to_string())
            }
            (_, _, None) => (false, "the load's size is unknown (standard input, a query, or `inrush plan` without --input) and the table is not empty: indexes are kept".to_string()),
        };
        let rebuilds = can.rebuilds.as_deref();
        let unique_after = large && (size.empty || opts.rebuild_unique) && opts.keep_keys.is_none();
        let indexes = indexes
            .into_iter()
            .map(|index| {
                let enforces = index.constraint.is_some() || index.unique;
                let (action, reason) = if index.invalid {
                    (IndexAction::Keep, "invalid (a failed concurrent build): left as it is".to_string())
                } else if let Some(why) = &index.stays {
                    (IndexAction::Keep, why.clone())
                } else if !enforces {
                    match rebuilds {
                        Some(how) if large => (IndexAction::Rebuild, format!("secondary index: {how}")),
                        _ => (IndexAction::Keep, "secondary index: maintained during the load".to_string()),
                    }
                } else if let Err(why) = &can.unique_after {
                    (IndexAction::Keep, format!("unique, {why}: enforced during the load"))
                } else if index.constraint_kind == Some(ConstraintKind::Exclusion) {
                    (IndexAction::Keep, "exclusion constraint: enforced during the load".to_string())
                } else if index.deferrable {
                    (IndexAction::Keep, "deferrable constraint: enforced during the load".to_string())
                } else if index.referenced {
                    (IndexAction::Keep, "a foreign key relies on it: enforced during the load".to_string())
                } else if let (true, Some(why)) = (large, opts.keep_keys) {
                    (IndexAction::Keep, format!("unique: enforced during the load ({why})"))
                } else if unique_after {
                    (IndexAction::Rebuild, "unique: built once after the load; if the rows break it, the load is undone".to_string())
                } else if large {
                    (IndexAction::Keep, "unique: enforced during the load (the table is not empty; --rebuild-unique builds it after)".to_string())
                } else {
                    (IndexAction::Keep, "unique: enforced during the load".to_string())
                };
                IndexDecision { name: index.name.clone(), action, reason, index }
            })
            .collect();
        let foreign_keys = foreign_keys
            .into_iter()
            .map(|fk| {
                let (action, reason) = match (&can.foreign_keys, opts.keep_keys) {
                    (ForeignKeysAfter::Never(why), _) => (IndexAction::Keep, why.clone()),
                    (ForeignKeysAfter::Always(how), _) => (IndexAction::Rebuild, how.clone()),
                    (ForeignKeysAfter::WhenLarge(_), Some(why)) if large => (
                        IndexAction::Keep,
                        format!("checked row by row during the load ({why})"),
                    ),
                    (ForeignKeysAfter::WhenLarge(how), _) if large => {
                        (IndexAction::Rebuild, how.clone())
                    }
                    (ForeignKeysAfter::WhenLarge(_), _) => (
                        IndexAction::Keep,
                        "checked row by row during the load".to_string(),
                    ),
                };
                ForeignKeyDecision {
                    name: fk.name.clone(),
                    action,
                    reason,
                    foreign_key: fk,
                }
            })
            .collect();
        let after = match opts.after {
            AfterLoad::Nothing => Maintenance::None,
            _ if !can.vacuum => Maintenance::AnalyzeOnly,
            AfterLoad::VacuumAnalyze => Maintenance::VacuumAnalyze,
            // The visibility map pays for a VACUUM only through index-only scans, and only
            // when the load is most of the table (measured: bench/query_ready.py).
            AfterLoad::Auto if indexed && (large || current == 0.0) => Maintenance::VacuumAnalyze,
            AfterLoad::Auto | AfterLoad::Analyze => Maintenance::Analyze,
        };
        let rule = std::iter::once(rule)
            .chain(can.notes.iter().cloned())
            .collect::<Vec<_>>()
            .join("; ");
        LoadPlan {
            table: table.to_string(),
            load_bytes,
            table_bytes: size.table_bytes,
            index_bytes: size.index_bytes,
            rule,
            indexes,
            foreign_keys,
            after,
            hidden: HiddenWork::default(),
            disable_triggers: opts.disable_triggers,
            sort: None,
            sort_reason: None,
            routing: None,
            sort_min_index_bytes: opts.sort_min_index_bytes,
        }
    }

    /// Whether a unique index (a primary key, a unique or exclusion constraint, a unique index)
    /// stays on the table during the load, so the server checks each row's key as it comes.
    pub fn checks_keys_during_load(&self) -> bool {
        self.indexes.iter().any(|d| {
            d.action == IndexAction::Keep
                && !d.index.invalid
                && (d.index.unique || d.index.constraint.is_some())
        })
    }

    /// Picks the index whose leading key the rows are sorted by, when that pays: every index is
    /// kept (the load is small next to a non-empty table), a B-tree's first key is a loaded
    /// column the engine's encoder writes in a form that sorts (`sortable`, by the column's
    /// position: `Some(signed)`, see [`SortKey::signed`]), and the load fits [`SORT_BUDGET`]. `blocked` says why this load cannot be
    /// sorted at all, if so.
    pub fn choose_sort(
        &mut self,
        columns: &[TargetColumn],
        sortable: impl Fn(usize) -> Option<bool>,
        blocked: Option<&str>,
    ) {
        let kept: Vec<&IndexDecision> = self
            .indexes
            .iter()
            .filter(|d| d.action == IndexAction::Keep && !d.index.invalid)
            .collect();
        if kept.is_empty() || kept.len() < self.indexes.len() || self.table_bytes == 0 {
            return;
        }
        let reason = |s: &mut LoadPlan, why: String| s.sort_reason = Some(why);
        if let Some(why) = blocked {
            return reason(self, format!("rows not sorted: {why}"));
        }
        match self.load_bytes {
            Some(bytes) if bytes <= SORT_BUDGET => {}
            Some(bytes) => {
                let why = format!(
                    "rows not sorted: the load ({}) is over the sort budget ({})",
                    human(bytes as f64),
                    human(SORT_BUDGET as f64)
                );
                return reason(self, why);
            }
            None => return reason(self, "rows not sorted: the load's size is unknown".into()),
        }
        // The primary key first, then unique indexes, then the largest.
        let mut candidates = kept;
        candidates.sort_by_key(|d| {
            (
                d.index.constraint_kind != Some(ConstraintKind::PrimaryKey),
                !d.index.unique,
                -d.index.bytes,
            )
        });
        let chosen = candidates.iter().find_map(|d| {
            let bytes = d.index.bytes.max(0) as u64;
            let column = d.index.leading_column.as_deref()?;
            let position = columns.iter().position(|c| c.name == column)?;
            let signed = sortable(position)?;
            Some((
                SortKey {
                    index: d.name.clone(),
                    column: column.to_string(),
                    position,
                    signed,
                },
                bytes,
            ))
        });
        match chosen {
            Some((key, bytes)) if bytes < self.sort_min_index_bytes => {
                let why = match self.sort_min_index_bytes {
                    u64::MAX => "rows not sorted: --no-sort".to_string(),
                    min => format!(
                        "rows not sorted: {} ({}) stays in memory; sorting pays for indexes past {}",
                        key.index,
                        human(bytes as f64),
                        human(min as f64)
                    ),
                };
                reason(self, why);
            }
            Some((key, _)) => {
                self.sort_reason = Some(format!(
                    "rows sorted by {} (leading key of {}) before they are sent: the kept index is filled in key order, not at random",
                    key.column, key.index
                ));
                self.sort = Some(key);
            }
            None => reason(
                self,
                "rows not sorted: no kept B-tree index leads with a loaded column of a sortable type".into(),
            ),
        }
    }

    /// (name, how it fires now) of the triggers to disable during the load.
    pub fn disabled_triggers(&self) -> Vec<(String, Firing)> {
        if !self.disable_triggers {
            return Vec::new();
        }
        self.hidden
            .triggers
            .iter()
            .filter(|t| t.firing != Firing::Disabled)
            .map(|t| (t.name.clone(), t.firing))
            .collect()
    }

    /// `--prepare`: a task of a distributed write changes no definition and runs nothing
    /// after its rows (its transactions stay open, prepared, until the job decides): every
    /// index and key stays, and the job's coordinator plans the table once for all tasks.
    pub fn for_task(mut self) -> Self {
        self.keep_everything(
            "--prepare: kept, a task of a distributed write changes no definition",
            "indexes and keys are kept: a task of a distributed write leaves the table's definitions to its job",
        );
        self
    }

    /// `--check`: the rows go in inside transactions that are rolled back, so nothing is
    /// dropped, built after or sorted: every index and key stays on the table and the server
    /// checks each row as the load would (its refusal names the row's line), and nothing
    /// runs after. Triggers stay as the plan has them (`disable_triggers`: disabled inside
    /// the check's own transaction, where the engine can).
    pub fn checked(mut self) -> Self {
        self.keep_everything(
            "--check: kept, the rows go in inside a transaction rolled back at the end, so the server checks each one",
            "indexes and keys are kept: --check writes the rows inside a transaction it rolls back, so the server checks every key, foreign key, CHECK constraint and trigger as the load would",
        );
        self.sort = None;
        self.sort_reason = None;
        self
    }

    /// Every index and foreign key kept (`why`, the plan's `rule`), and nothing run after.
    fn keep_everything(&mut self, why: &str, rule: &str) {
        for d in &mut self.indexes {
            d.action = IndexAction::Keep;
            d.reason = why.into();
        }
        for d in &mut self.foreign_keys {
            d.action = IndexAction::Keep;
            d.reason = why.into();
        }
        self.rule = rule.into();
        self.after = Maintenance::None;
    }

    /// What the plan would drop stays after all, for `why` (the server refused a right the
    /// drop needs, or another session held the table too long): the indexes and keys are
    /// maintained row by row, and the summary says why.
    pub fn keep_after_all(&mut self, why: &str) {
        let reason = "kept: it could not be dropped (the plan's first line says why)".to_string();
        for d in &mut self.indexes {
            if d.action != IndexAction::Keep {
                d.action = IndexAction::Keep;
                d.reason = reason.clone();
            }
        }
        for d in &mut self.foreign_keys {
            if d.action != IndexAction::Keep {
                d.action = IndexAction::Keep;
                d.reason = reason.clone();
            }
        }
        self.rule = format!(
            "indexes and keys are kept, though the load is large enough to drop them: {why}"
        );
    }

    /// The rows will be written frozen (COPY FREEZE after TRUNCATE): nothing for VACUUM to do.
    pub fn loaded_frozen(mut self, frozen: bool) -> Self {
        if frozen
            && matches!(
                self.after,
                Maintenance::VacuumAnalyze | Maintenance::Analyze
            )
        {
            self.after = Maintenance::AnalyzeFrozen;
        }
        self
    }

    /// Adds what the server does per row that the plan only reports.
    pub fn with_hidden_work(mut self, hidden: HiddenWork) -> Self {
        self.hidden = hidden;
        self
    }

    /// The foreign keys to journal, drop, and add back after the load.
    pub fn readded_foreign_keys(&self) -> Vec<ForeignKeyInfo> {
        self.foreign_keys
            .iter()
            .filter(|d| d.action == IndexAction::Rebuild)
            .map(|d| d.foreign_key.clone())
            .collect()
    }

    /// The indexes to journal, drop and rebuild.
    pub fn rebuilt(&self) -> Vec<IndexInfo> {
        self.indexes
            .iter()
            .filter(|d| d.action == IndexAction::Rebuild)
            .map(|d| d.index.clone())
            .collect()
    }
}

/// Sizes in binary units, the units the thresholds are set in: `64 << 20` reads `64 MiB`, as the
/// help says, not `67.1 MB`.
fn human(bytes: f64) -> String {
    const KIB: f64 = 1024.0;
    let (value, unit) = match bytes {
        b if b >= KIB * KIB * KIB => (b / (KIB * KIB * KIB), "GiB"),
        b if b >= KIB * KIB => (b / (KIB * KIB), "MiB"),
        b if b >= KIB => (b / KIB, "KiB"),
        b => return format!("{b:.0} B"),
    };
    let value = format!("{value:.1}");
    format!("{} {unit}", value.strip_suffix(".0").unwrap_or(&value))
}

impl fmt::Display for LoadPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plan for {}", self.table)?;
        writeln!(f, "  {}", self.rule)?;
        if self.indexes.is_empty() {
            writeln!(f, "  (no indexes)")?;
        }
        let width = self.indexes.iter().map(|d| d.name.len()).max().unwrap_or(0);
        for d in &self.indexes {
            let action = match d.action {
                IndexAction::Keep => "keep   ",
                IndexAction::Rebuild => "rebuild",
            };
            writeln!(f, "  index {:<width$}  {action}  {}", d.name, d.reason)?;
        }
        // "after": the key is enforced once over the loaded rows (PostgreSQL re-adds it NOT
        // VALID and validates it, MariaDB anti-joins the rows); the reason says which.
        for d in &self.foreign_keys {
            let action = match d.action {
                IndexAction::Keep => "keep ",
                IndexAction::Rebuild => "after",
            };
            writeln!(f, "  foreign key {}  {action}  {}", d.name, d.reason)?;
        }
        let h = &self.hidden;
        for trigger in &h.triggers {
            let name = &trigger.name;
            let state = match (trigger.firing, self.disable_triggers) {
                (Firing::Disabled, _) => "disabled already",
                (_, true) => "disabled during the load (--disable-triggers), re-enabled after",
                (_, false) => {
                    "fires for every row (kept; --disable-triggers to skip it during the load)"
                }
            };
            writeln!(f, "  trigger {name}  {state}")?;
        }
        // Reported, not advised on: a larger CACHE is DB2 advice that the lab's B6 measured to
        // gain nothing on PostgreSQL (nextval is cheap; 0.82x for CACHE 1000 over 1).
        for (column, sequence, cache) in &h.sequences {
            writeln!(f, "  sequence {sequence} (column {column})  CACHE {cache}: one nextval per row when the input omits {column}; cheap on PostgreSQL whatever the CACHE (`inrush lab run B6` measures it)")?;
        }
        for (column, expr) in &h.volatile_defaults {
            writeln!(f, "  default of {column}: {expr}  volatile: if the input omits {column}, COPY inserts row by row")?;
        }
        if h.toast_bytes > 0 {
            let columns: Vec<String> = h
                .toast_columns
                .iter()
                .map(|(c, t)| format!("{c} {t}"))
                .collect();
            writeln!(f, "  TOAST-heavy: {} of values stored out of line (columns that can hold them: {}); each such value is compressed and written a second time, to the TOAST table", human(h.toast_bytes.max(0) as f64), columns.join(", "))?;
        }
        if h.partitions > 0 {
            writeln!(f, "  partitions: {}", h.partitions)?;
        }
        if !h.settings.is_empty() {
            let settings: Vec<String> =
                h.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            writeln!(f, "  settings: {}", settings.join(", "))?;
        }
        if let Some(why) = &self.sort_reason {
            writeln!(f, "  sort: {why}")?;
        }
        if let Some(routing) = &self.routing {
            writeln!(f, "  routing: {routing}")?;
        }
        match self.after {
            // Asked (--after none), or the rule above says why (a load over ODBC, a task of a
            // distributed write).
            Maintenance::None => writeln!(f, "  after the load: nothing"),
            Maintenance::Analyze => writeln!(f, "  after the load: ANALYZE, statistics for the planner (hint bits and the visibility map are left to the first reads and autovacuum; --after vacuum-analyze sets them now)"),
            Maintenance::VacuumAnalyze => writeln!(f, "  after the load: VACUUM (ANALYZE), so index-only scans need not visit the heap and first reads rewrite no pages for hint bits (--after analyze leaves that to autovacuum)"),
            Maintenance::AnalyzeFrozen => writeln!(f, "  after the load: ANALYZE only (TRUNCATE + COPY FREEZE in one transaction wrote the rows frozen and all-visible)"),
            Maintenance::AnalyzeOnly => writeln!(f, "  after the load: ANALYZE, statistics for the query planner"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine that can do what PostgreSQL can.
    fn pg() -> Capabilities {
        Capabilities {
            vacuum: true,
            rebuilds: Some("built once after the load".into()),
            unique_after: Ok(()),
            foreign_keys: ForeignKeysAfter::WhenLarge(
                "re-added after the load NOT VALID, then validated once".into(),
            ),
            ..Capabilities::default()
        }
    }

    /// [`pg`] on a partitioned table.
    fn partitioned() -> Capabilities {
        Capabilities {
            unique_after: Err("on a partitioned table".into()),
            foreign_keys: ForeignKeysAfter::Never("checked row by row (partitioned)".into()),
            ..pg()
        }
    }

    fn index(name: &str, unique: bool, constraint: Option<&str>) -> IndexInfo {
        IndexInfo {
            name: name.into(),
            definition: format!("CREATE INDEX {name} ON public.t USING btree (a)"),
            unique,
            constraint: constraint.map(str::to_string),
            constraint_kind: constraint.map(|_| ConstraintKind::PrimaryKey),
            deferrable: false,
            referenced: false,
            invalid: false,
            bytes: 8192,
            leading_column: Some("a".into()),
            stays: None,
        }
    }

    fn indexes() -> Vec<IndexInfo> {
        vec![
            index("t_pkey", true, Some("t_pkey")),
            index("t_code_key", true, None),
            index("t_name_idx", false, None),
        ]
    }

    fn fks() -> Vec<ForeignKeyInfo> {
        vec![ForeignKeyInfo {
            name: "t_customer_fk".into(),
            definition: "FOREIGN KEY (customer) REFERENCES customers(id)".into(),
            validated: true,
        }]
    }

    fn size(table_bytes: i64) -> TableSize {
        TableSize {
            table_bytes,
            index_bytes: 16384,
            rows_estimate: 0.0,
            empty: false,
        }
    }

    #[test]
    fn a_large_load_rebuilds_only_plain_secondary_indexes() {
        let plan = LoadPlan::decide(
            "\"public\".\"t\"",
            &pg(),
            indexes(),
            fks(),
            size(8192),
            Some(321_000_000),
            PlanOptions::default(),
        );
        assert_eq!(
            plan.rebuilt()
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>(),
            ["t_name_idx"]
        );
        insta::assert_snapshot!(plan.to_string());
    }

    #[test]
    fn hidden_work_is_reported() {
        let hidden = HiddenWork {
            triggers: vec![inrush_core::catalog::Trigger {
                name: "t_audit".into(),
                definition: "CREATE TRIGGER t_audit ...".into(),
                firing: Firing::Origin,
            }],
            sequences: vec![("id".into(), "t_id_seq".into(), 1)],
            volatile_defaults: vec![("created".into(), "clock_timestamp()".into())],
            toast_bytes: 5 << 20,
            toast_columns: vec![("doc".into(), "jsonb".into())],
            partitions: 0,
            settings: vec![
                ("max_wal_size".into(), "1024MB".into()),
                ("wal_level".into(), "replica".into()),
            ],
        };
        let plan = LoadPlan::decide(
            "\"public\".\"t\"",
            &pg(),
            vec![],
            vec![],
            size(8192),
            Some(1000),
            PlanOptions::default(),
        );
        insta::assert_snapshot!(plan.with_hidden_work(hidden).to_string());
    }

    #[test]
    fn a_small_load_keeps_everything() {
        let plan = LoadPlan::decide(
            "\"public\".\"t\"",
            &pg(),
            indexes(),
            fks(),
            size(10_000_000_000),
            Some(1_000_000),
            PlanOptions::default(),
        );
        assert!(plan.rebuilt().is_empty());
        insta::assert_snapshot!(plan.to_string());
    }

    /// The thresholds read as the help states them (`--no-sort`: 64 MiB, 256 MiB of input).
    #[test]
    fn sizes_read_in_the_units_of_the_thresholds() {
        assert_eq!(
            human(PlanOptions::default().sort_min_index_bytes as f64),
            "64 MiB"
        );
        assert_eq!(human(SORT_BUDGET as f64), "256 MiB");
        assert_eq!(human(1_400_832.0), "1.3 MiB");
        assert_eq!(human(25_000.0), "24.4 KiB");
        assert_eq!(human(10e9), "9.3 GiB");
        assert_eq!(human(512.0), "512 B");
    }

    #[test]
    fn switches_and_unknown_sizes() {
        let off = PlanOptions {
            rebuild_indexes: false,
            ..Default::default()
        };
        // VACUUM (ANALYZE) only for an indexed table that is mostly new rows, unless asked.
        for (indexes, table, load, auto) in [
            (indexes(), 0, 1 << 30, Maintenance::VacuumAnalyze),
            (indexes(), 1 << 40, 1, Maintenance::Analyze),
            (Vec::new(), 0, 1 << 30, Maintenance::Analyze),
        ] {
            let after = |after| {
                let opts = PlanOptions {
                    after,
                    ..Default::default()
                };
                let (size, load) = (size(table), Some(load));
                LoadPlan::decide("t", &pg(), indexes.clone(), fks(), size, load, opts).after
            };
            assert_eq!(after(AfterLoad::Auto), auto);
            assert_eq!(after(AfterLoad::Analyze), Maintenance::Analyze);
            assert_eq!(after(AfterLoad::VacuumAnalyze), Maintenance::VacuumAnalyze);
        }
        let quiet = PlanOptions {
            after: AfterLoad::Nothing,
            ..Default::default()
        };
        assert_eq!(
            LoadPlan::decide("t", &pg(), indexes(), fks(), size(0), Some(1), quiet).after,
            Maintenance::None
        );
        assert!(
            LoadPlan::decide("t", &pg(), indexes(), fks(), size(0), Some(1 << 30), off)
                .rebuilt()
                .is_empty()
        );
        // A partitioned table: secondary indexes are rebuilt (each partition's index under its
        // own name, attached again); keys and foreign keys stay.
        let partitioned = LoadPlan::decide(
            "t",
            &partitioned(),
            indexes(),
            fks(),
            size(0),
            Some(1 << 30),
            PlanOptions::default(),
        );
        assert_eq!(partitioned.rebuilt().len(), 1);
        assert_eq!(partitioned.rebuilt()[0].name, "t_name_idx");
        assert!(partitioned.readded_foreign_keys().is_empty());
        let unknown_size = TableSize {
            empty: true,
            ..size(0)
        };
        assert_eq!(
            LoadPlan::decide(
                "t",
                &pg(),
                indexes(),
                fks(),
                unknown_size,
                None,
                PlanOptions::default()
            )
            .rebuilt()
            .len(),
            3
        );
        let busy = TableSize {
            table_bytes: 1 << 30,
            index_bytes: 0,
            rows_estimate: 1e6,
            empty: false,
        };
        let empty = TableSize {
            table_bytes: 0,
            index_bytes: 16384,
            rows_estimate: 0.0,
            empty: true,
        };
        let all = LoadPlan::decide(
            "t",
            &pg(),
            indexes(),
            fks(),
            empty,
            Some(1 << 30),
            PlanOptions::default(),
        );
        assert_eq!(
            all.rebuilt().len(),
            3,
            "an empty table gets every index built after the load: {all}"
        );
        assert!(LoadPlan::decide(
            "t",
            &pg(),
            indexes(),
            fks(),
            busy,
            None,
            PlanOptions::default()
        )
        .rebuilt()
        .is_empty());
    }
}

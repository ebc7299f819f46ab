//! What the pipeline asks of a target engine: the interface a target crate implements.
//!
//! The pipeline owns the inputs (sources, splitting, parsing on every core, the reject file,
//! the order of rows, progress and interrupts); a target owns everything said to its engine:
//! its catalog, how a field's text becomes a value it stores (checked, so a bad value is a
//! rejected row and never a silent change), how rows are written and committed, and what is
//! done around the load. [`load_into`](crate::load_into) drives any [`Target`].
//!
//! The flow: [`Target::prepare`] reads (or, for `--create`, designs) the table; the pipeline
//! maps input fields to its columns and shares one [`RowEncoder`] among its workers, whose
//! encoded rows go in chunks to one [`Writer`] on a thread of its own; when every chunk is
//! written, [`Writer::commit`] makes the load visible, all or nothing.
//!
//! PostgreSQL drives the pipeline's stages itself (`inrush-postgres`'s `load`: M parallel COPY
//! streams beside a control connection), with the same stages from [`crate::stages`].

use crate::commits::EarlierLoad;
use crate::support::Lacks;
use crate::{Error, LoadOptions, LoadPlan, Result};
use bytes::Bytes;
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_core::TargetColumn;

/// A target engine, opened on one database.
pub trait Target: Sync {
    /// The engine and its version, for the summary (`SQLite 3.50.4`).
    fn version(&self) -> String;

    /// How rows are written, for the summary (`multi-row INSERT`).
    fn method(&self) -> &'static str;

    /// Options this engine cannot carry out, and why; refused by [`crate::support::refuse`]
    /// before anything is read or changed.
    fn lacks(&self) -> Lacks;

    /// Reads the table (`create`: the columns `--create` inferred, as names and SQL types,
    /// with `--types` already applied; the table is made inside the load's own transaction).
    fn prepare(&self, opts: &LoadOptions, create: Option<&[(String, String)]>) -> Result<Table>;

    /// The values check and encoder for the columns the input feeds (their positions in
    /// `table.columns`, in the input's order), shared by every worker.
    fn encoder(&self, table: &Table, columns: &[usize]) -> Result<Box<dyn RowEncoder>>;

    /// What the load does around the rows (indexes dropped and built after, statistics), for
    /// `load_bytes` of input; `inrush plan` prints it, the writer carries it out.
    fn plan(&self, table: &Table, opts: &LoadOptions, load_bytes: Option<u64>) -> Result<LoadPlan>;

    /// How many writers (connections, each with its own transaction) the load uses; `ordered`:
    /// rows must reach the table in the input's order (one writer then).
    fn writers(&self, opts: &LoadOptions, ordered: bool) -> usize {
        let _ = (opts, ordered);
        1
    }

    /// `--check`: why the rows of this load cannot be written inside transactions rolled back
    /// at the end (a table without transactions keeps what is written), so that the check
    /// stays on the client: values only, not the table's keys, CHECK constraints, foreign
    /// keys and triggers. `None`: the check writes them, and the engine checks every row.
    fn checks_on_client_only(&self, table: &Table, opts: &LoadOptions) -> Option<String> {
        let _ = (table, opts);
        None
    }

    /// Before the writers start: what the plan changes outside the load's transactions
    /// (indexes journaled and dropped, where DDL is not transactional). [`Target::end`] runs
    /// whatever happens after this returns. True when definitions are now dropped outside
    /// the load's transactions, so an exit before `end` would leave them dropped: a signal
    /// then waits for them to be put back.
    fn begin(&self, table: &Table, plan: &LoadPlan) -> Result<bool> {
        let _ = (table, plan);
        Ok(false)
    }

    /// After the writers, committed (`committed`) or rolled back: what `begin` changed is put
    /// back, then, for a committed load, what the plan does after it outside its transactions
    /// (statistics). An error means the table could not be put back as it was.
    fn end(&self, table: &Table, plan: &LoadPlan, committed: bool) -> Result<Committed> {
        let _ = (table, plan, committed);
        Ok(Committed::default())
    }

    /// After [`Target::end`] failed: what is still dropped (`index t_c1`), as far as the
    /// engine can still tell, for the message that says how to finish.
    fn still_dropped(&self, table: &Table) -> Vec<String> {
        let _ = table;
        Vec::new()
    }

    /// Records of loads into `table` that committed and could not finish, each with its
    /// input's identity (see [`crate::commits`]); stale ones (their commit failed) dropped. A
    /// target whose loads drop nothing outside their transaction has none.
    fn unfinished_loads(&self, table: &Table) -> Result<Vec<(String, EarlierLoad)>> {
        let _ = table;
        Ok(Vec::new())
    }

    /// Deletes the record of the load of `identity` into `table`: it finished, or a rerun
    /// found its rows there and loaded nothing.
    fn forget_load(&self, table: &Table, identity: &str) -> Result<()> {
        let _ = (table, identity);
        Ok(())
    }

    /// `--resume`: registers `input` in the target's ledger (or refuses it when it changed
    /// since) and returns the blocks of it already committed, by offset. A target without a
    /// ledger refuses `--resume` in [`Target::refuse`].
    fn ledger(&self, table: &Table, input: &InputFile) -> Result<Vec<Block>>;

    /// Starts the load: the transaction, the plan's steps before the rows. Rows come to the
    /// writer in chunks of what the encoder wrote. With `resume`, each chunk is a block of
    /// that input, committed with its ledger row on its own.
    fn writer(
        &self,
        table: &Table,
        columns: &[TargetColumn],
        plan: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Writer>>;
}

/// A table as a target describes it to the pipeline.
#[derive(Debug, Clone)]
pub struct Table {
    /// How messages name it.
    pub name: String,
    /// Every column, in table order (for `--columns` and header mapping).
    pub columns: Vec<TargetColumn>,
    /// Bytes the table holds now, if known (for deciding the plan).
    pub bytes: Option<u64>,
    /// `--create`: the statement that makes the table, run in the load's transaction.
    pub create_sql: Option<String>,
    /// Other tables' foreign keys whose `ON DELETE` rule changes their rows when rows of this
    /// one are deleted (CASCADE, SET NULL, SET DEFAULT), each as the engine names it.
    pub changed_by_delete: Vec<String>,
}

impl Table {
    /// Refuses `option`, which `does` delete rows of this table, when other tables' keys
    /// would follow those deletes: inrush changes no table but the one it loads.
    pub fn refuse_deletes(&self, option: &str, does: &str) -> Result<()> {
        if self.changed_by_delete.is_empty() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "{option}: {does} {}, which changes rows of other tables through their foreign keys: {}; load without {option}",
            self.name,
            self.changed_by_delete.join(", ")
        )))
    }
}

/// The fields of a row known to hold no backslash, tab, line feed, carriage return or NUL (the
/// input block they were cut from has none), so a target that escapes those bytes in a line of
/// text can copy them without looking: bit `i` for field `i`. Fields past the 64th are never
/// known. (A mask, not a flag beside each field: the fields stay a plain `&str` each.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlainFields(pub u64);

impl PlainFields {
    /// The mask of one flag per field, in field order (the first 64 count).
    pub fn from_flags(flags: impl IntoIterator<Item = bool>) -> Self {
        let set = flags
            .into_iter()
            .take(64)
            .enumerate()
            .filter(|&(_, plain)| plain);
        PlainFields(set.fold(0, |mask, (i, _)| mask | 1 << i))
    }

    pub fn has(self, i: usize) -> bool {
        i < 64 && self.0 >> i & 1 == 1
    }
}

/// Turns one record's fields into the target's form of a row.
pub trait RowEncoder: Send + Sync {
    /// Appends the row made of `fields` (one per mapped column, `None` for NULL) to `out`.
    /// A refused value leaves `out` as it was and names its column (an index into `fields`)
    /// and the reason.
    fn encode(
        &self,
        fields: &[Option<&str>],
        plain: PlainFields,
        out: &mut Vec<u8>,
    ) -> Result<(), (usize, String)>;
}

/// Writes encoded rows inside the load's transaction; dropping it rolls back.
pub trait Writer: Send {
    /// Writes `rows` rows encoded in `data`. A row the engine refuses (a constraint) is passed
    /// to `refused` with its index in the chunk, the engine's message and the column it names
    /// (for the reject log, with the row's value there); when `refused`
    /// accepts it (the user allows rejects) the other rows are written, else the load ends
    /// with its error. `block` (under `--resume`): which block of the input the rows are; they
    /// are committed with its ledger row (whose `rows` the writer fills in). Returns how many
    /// rows were written. `data` is the chunk's own buffer, so a writer that hands the bytes
    /// on (MariaDB's `LOAD DATA LOCAL` stream) need not copy them.
    fn write(
        &mut self,
        data: &Bytes,
        rows: u64,
        block: Option<Block>,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64>;

    /// After every chunk is written and before any writer commits: the checks the plan left
    /// to the end of the load (foreign keys checked once over the rows). An error rolls back
    /// every writer.
    fn check(&mut self) -> Result<()> {
        Ok(())
    }

    /// Records, inside this writer's transaction, that the load of `identity` commits `rows`
    /// rows (see [`crate::commits`]). Called on the writer that commits last, so the record
    /// is there exactly when every writer committed.
    fn record(&mut self, identity: &str, rows: u64) -> Result<()> {
        let _ = (identity, rows);
        Ok(())
    }

    /// Finishes what the plan does after the rows (indexes back, ANALYZE) and commits.
    fn commit(self: Box<Self>) -> Result<Committed>;
}

/// What a committed load did beside writing rows.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    /// The plan as carried out, one line per step, for the summary.
    pub steps: Vec<String>,
    pub notes: Vec<String>,
    /// Seconds spent building dropped indexes again.
    pub rebuild_seconds: f64,
    /// Seconds spent on statistics (ANALYZE) and the like.
    pub maintain_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fields_keep_the_first_64_flags_in_order() {
        let flags = (0..70).map(|i| i % 3 == 0 || i >= 63);
        let plain = PlainFields::from_flags(flags);
        for i in 0..70 {
            assert_eq!(plain.has(i), i < 64 && (i % 3 == 0 || i == 63), "field {i}");
        }
        assert_eq!(PlainFields::from_flags([]), PlainFields::default());
    }
}

//! [`OdbcWriter`]: one connection's share of a load, in its own transaction, as parameter
//! arrays bound to INSERTs prepared once.
//!
//! Drivers that bind an array on the wire or in the database (SQL Server's, DB2's) take one
//! row per parameter set. Drivers that run one statement per set (psqlODBC, which sends them
//! a hundred at a time; SQLite's, which parses each again) are given INSERTs of several rows
//! each (`VALUES (..), (..)`), so the database parses and plans once per many rows; so is
//! MariaDB's, whose array path (`COM_STMT_BULK_EXECUTE`) sent wrong bytes
//! ([`crate::driver::Driver::rows_per_statement`]).

use crate::apart::{Apart, Cut};
use crate::books::Books;
use crate::driver::{sets_taken, Savepoint};
use crate::outcome::{self, Pending};
use crate::{failed, ROWS_PER_EXECUTE};
use bytes::Bytes;
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_load::commits::Fate;
use inrush_load::isolate::Isolation;
use inrush_load::row::{Bound, Values};
use inrush_load::target::{self, Committed, Share, Writer};
use inrush_load::{Error, Interrupt, Result};
use odbc_api::buffers::BoxColumnBuffer;
use odbc_api::handles::StatementConnection;
use odbc_api::parameter::WithDataType;
use odbc_api::{
    BindParamDesc, ColumnarBulkInserter, Connection, ConnectionTransitions, SharedConnection,
};
use std::sync::{Arc, MutexGuard};

/// One execute's parameters, as buffers of text or of bytes bound to a prepared INSERT.
type Inserter = ColumnarBulkInserter<
    StatementConnection<SharedConnection<'static>>,
    WithDataType<BoxColumnBuffer>,
>;

/// At most this many bytes of bound parameters per execute: a batch of long values goes in
/// fewer rows per execute (and per statement) instead of a buffer of [`ROWS_PER_EXECUTE`] times
/// the longest: a writer's buffers stay within this unless one row alone is larger.
const BATCH_BYTES: usize = 8 << 20;

/// A prepared INSERT of `rows` rows per parameter set and the buffers bound to it, of bytes
/// for the columns that are `binary`, of text for the others.
struct Insert {
    rows: usize,
    binary: Vec<bool>,
    inserter: Inserter,
}

/// The load's transaction on one connection; dropped without [`Writer::commit`], it rolls
/// back. Its statements run on the connection's own thread ([`Apart`]).
pub(crate) struct OdbcWriter {
    apart: Apart<Inserts>,
    /// The connection, for the COMMIT's thread.
    conn: SharedConnection<'static>,
    interrupt: Arc<Interrupt>,
    /// `--resume`: the ledger each block is recorded in, and the input it is recorded for.
    resume: Option<(Arc<Books>, InputFile)>,
    /// How the commit is made and settled, and whether the load's record may be written.
    pending: Option<Pending>,
    records: bool,
}

/// A writer's session and the INSERTs prepared on it, owned by the connection's thread.
pub(crate) struct Inserts {
    session: Session,
    /// Rows per statement of the multi-row INSERT; 1 when the driver binds arrays itself.
    rows_per_statement: usize,
    /// Prepared on the first batch and kept for the writer's life; bound again, wider, when a
    /// batch holds a longer value than their buffers. `single` also takes the rows that do not
    /// fill a statement of `multi`, and finds a refused row alone.
    single: Option<Insert>,
    multi: Option<Insert>,
    /// Asked with the first rows whether parameter arrays may carry them; taken then.
    check: Option<Arc<dyn FirstRows>>,
}

/// Whether a driver's parameter arrays store what one row per execute stores, asked once with
/// the load's first rows (`crate::arrays` asks it of drivers not tested here).
pub(crate) trait FirstRows: Send + Sync {
    /// `false`: every row goes one per execute.
    fn arrays_carry(&self, data: &[u8], rows: usize) -> bool;
}

/// A writer's connection, its INSERT's words and, when rejects are allowed, its savepoint.
struct Session {
    /// Shared with the prepared INSERTs, which own statements of it, and used alone for the
    /// transaction's end (see [`lock`]).
    conn: SharedConnection<'static>,
    /// `INSERT INTO t (a, b) VALUES `, and one row's `(?, ?)`.
    head: String,
    marks: String,
    /// The buffers' longest value per column, in bytes.
    widths: Vec<usize>,
    /// The columns whose values come as bytes (an input's binary values), bound as binary.
    binary: Vec<bool>,
    /// When rejects are allowed (`--max-errors`): each execute goes under it, so a refused one
    /// is undone alone and its rows are looked through for the refused ones.
    savepoint: Option<Savepoint>,
    /// One row per execute: no parameter arrays.
    one_at_a_time: bool,
}

impl OdbcWriter {
    /// A writer of `inserts` whose transaction ends as `pending` says (its share of the load
    /// recorded when `records`), or, under `--resume`, block by block in the ledger.
    pub(crate) fn new(
        inserts: Inserts,
        pending: Pending,
        records: bool,
        resume: Option<(Arc<Books>, InputFile)>,
        interrupt: Arc<Interrupt>,
        cut: Arc<Cut>,
    ) -> OdbcWriter {
        let conn = Arc::clone(&inserts.session.conn);
        OdbcWriter {
            apart: Apart::new(inserts, Arc::clone(&interrupt), cut),
            conn,
            interrupt,
            resume,
            pending: Some(pending),
            records,
        }
    }
}

impl Inserts {
    /// INSERTs into `table`'s `names` (quoted) over `conn`, in a transaction already open,
    /// `rows_per_statement` rows per statement, each execute under `savepoint` when there is
    /// one.
    pub(crate) fn new(
        conn: SharedConnection<'static>,
        table: &str,
        names: &[String],
        rows_per_statement: usize,
        savepoint: Option<Savepoint>,
    ) -> Inserts {
        Inserts {
            session: Session {
                conn,
                head: format!("INSERT INTO {table} ({}) VALUES ", names.join(", ")),
                marks: format!("({})", vec!["?"; names.len()].join(", ")),
                widths: vec![1; names.len()],
                binary: vec![false; names.len()],
                savepoint,
                one_at_a_time: false,
            },
            rows_per_statement: rows_per_statement.max(1),
            single: None,
            multi: None,
            check: None,
        }
    }

    /// The same, its first rows asked of `check` before any is sent.
    pub(crate) fn checked(mut self, check: Option<Arc<dyn FirstRows>>) -> Inserts {
        self.check = check;
        self
    }

    /// From now on one row per execute, one row per statement.
    pub(crate) fn one_at_a_time(&mut self) {
        self.session.one_at_a_time = true;
        self.rows_per_statement = 1;
        // Bound again, for one row, at the next batch.
        self.single = None;
        self.multi = None;
    }

    /// `rows` rows of typed values in `data`, up to [`ROWS_PER_EXECUTE`] per execute; returns
    /// how many went in. Each row the database refuses goes to `refused` (see [`Session::send`]).
    pub(crate) fn insert(
        &mut self,
        data: &[u8],
        rows: usize,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        if let Some(check) = self.check.take() {
            if !check.arrays_carry(data, rows) {
                self.one_at_a_time();
            }
        }
        let width = self.session.width();
        let mut values = Values::new(data);
        let mut done = 0;
        let mut written = 0;
        while done < rows {
            let batch = (rows - done).min(ROWS_PER_EXECUTE);
            let cells: Vec<Bound<'_>> = values.by_ref().take(batch * width).collect();
            if cells.len() != batch * width {
                return Err(Error::Internal("a chunk's rows were cut short".into()));
            }
            self.fit(&cells)?;
            let session = &self.session;
            let (Some(single), multi) = (self.single.as_mut(), self.multi.as_mut()) else {
                return Err(Error::Internal("the INSERT was not bound".into()));
            };
            // The rows that fill whole statements of the multi-row INSERT, then the rest: more
            // than one left, in one statement of that many, prepared for them.
            let (whole, mut tail) = match multi {
                Some(multi) => {
                    let whole = batch / multi.rows * multi.rows;
                    let first = &cells[..whole * width];
                    written += session.send(Some(multi), single, first, done, refused)?;
                    let tail = match batch - whole {
                        n if n > 1 => Some(session.bind(n)?),
                        _ => None,
                    };
                    (whole, tail)
                }
                None => (0, None),
            };
            let rest = &cells[whole * width..];
            let first = done + whole;
            written += session.send(tail.as_mut(), single, rest, first, refused)?;
            done += batch;
        }
        Ok(written)
    }

    /// Binds the writer's INSERTs again when `cells` hold a value longer than their buffers
    /// (each column then as wide as the next power of two, so a load binds again only a few
    /// times), or bytes where they hold text, or text where they hold bytes.
    fn fit(&mut self, cells: &[Bound<'_>]) -> Result<()> {
        let width = self.session.width();
        let mut widths = self.session.widths.clone();
        let mut binary = self.session.binary.clone();
        let mut seen = vec![false; width];
        let mut again = self.single.is_none();
        for (i, cell) in cells.iter().enumerate() {
            let (value, bytes) = match cell {
                Bound::Text(t) => (t, false),
                Bound::Blob(b) => (b, true),
                _ => continue,
            };
            let column = i % width;
            if binary[column] != bytes {
                // One input's values of a column are all text or all bytes.
                if seen[column] {
                    return Err(Error::Internal(format!(
                        "column {} of a chunk held text and bytes",
                        column + 1
                    )));
                }
                binary[column] = bytes;
                again = true;
            }
            seen[column] = true;
            if value.len() > widths[column] {
                widths[column] = value.len().next_power_of_two();
                again = true;
            }
        }
        if !again {
            return Ok(());
        }
        // The old statements go first: some drivers allow few prepared statements at a time.
        self.single = None;
        self.multi = None;
        self.session.widths = widths;
        self.session.binary = binary;
        self.single = Some(self.session.bind(1)?);
        let rows = self
            .rows_per_statement
            .min(BATCH_BYTES / row_bytes(&self.session.widths));
        if rows > 1 {
            self.multi = Some(self.session.bind(rows)?);
        }
        Ok(())
    }
}

/// One row's bytes in buffers of `widths`: each value, its terminating zero and its length
/// indicator.
fn row_bytes(widths: &[usize]) -> usize {
    widths.iter().map(|w| w + 1 + 8).sum()
}

/// `conn`, locked: by one thread at a time (the connection's, then the COMMIT's once the
/// connection's has sent its last statement), so never waited for.
fn lock<'a>(conn: &'a SharedConnection<'static>) -> Result<MutexGuard<'a, Connection<'static>>> {
    conn.lock()
        .map_err(|_| Error::Internal("a writer's connection was left poisoned".into()))
}

impl Session {
    fn width(&self) -> usize {
        self.widths.len()
    }

    fn run(&self, sql: &str) -> Result<()> {
        lock(&self.conn)?
            .execute(sql, (), None)
            .map_err(failed(sql.to_string()))?;
        Ok(())
    }

    /// The INSERT of `rows` rows (`head` and `rows` times `marks`), prepared, with buffers for
    /// as many rows per execute as fit in [`BATCH_BYTES`] at `widths`.
    fn bind(&self, rows: usize) -> Result<Insert> {
        let (head, marks) = (&self.head, &self.marks);
        let sql = format!("{head}{}", vec![marks.as_str(); rows].join(", "));
        let row_bytes = row_bytes(&self.widths);
        let sets = match self.one_at_a_time {
            true => 1,
            false => (BATCH_BYTES / (row_bytes * rows)).clamp(1, ROWS_PER_EXECUTE.div_ceil(rows)),
        };
        let mut prepared = Arc::clone(&self.conn)
            .into_prepared(&sql)
            .map_err(failed(format!("{head}{marks} ...")))?;
        let sets = sets_taken(&mut prepared, sets);
        let buffers = self.widths.iter().zip(&self.binary);
        let descriptions = buffers.map(|(&width, &binary)| match binary {
            true => BindParamDesc::binary(width),
            false => BindParamDesc::text(width),
        });
        let descriptions: Vec<_> = descriptions.collect();
        let inserter = prepared
            .into_column_inserter(sets, (0..rows).flat_map(|_| descriptions.iter().copied()))
            .map_err(failed("binding the rows' parameter arrays"))?;
        let binary = self.binary.clone();
        Ok(Insert {
            rows,
            binary,
            inserter,
        })
    }

    /// `insert` prepared and bound again, after an execute of it failed: through MariaDB's
    /// driver, executes of a statement after its failed one reported success and stored
    /// nothing (766 of a batch's 1,000 rows went missing in the tests).
    fn fresh(&self, insert: &mut Insert) -> Result<()> {
        *insert = self.bind(insert.rows)?;
        Ok(())
    }

    /// `attempt` under `savepoint`: a failed one is undone, and nothing before it.
    fn under(&self, savepoint: &Savepoint, attempt: impl FnOnce() -> Result<()>) -> Result<()> {
        self.run(savepoint.set)?;
        match attempt() {
            Ok(()) => savepoint
                .release
                .map_or(Ok(()), |release| self.run(release)),
            Err(error) => {
                self.run(savepoint.back)?;
                Err(error)
            }
        }
    }

    /// The rows in `cells` (a whole number of `insert`'s statements, the first of them the
    /// chunk's row `first`) through `insert`, or `single` when `None`, as many per execute as
    /// its buffers hold; returns how many went in. Without a savepoint, a refused execute ends
    /// the load, the row the database refuses alone named to `refused` first. Under one, the
    /// execute is undone and its rows are sent again in the attempts [`Isolation`] says, each
    /// refused row to `refused`, which ends the load past `--max-errors`.
    fn send(
        &self,
        mut insert: Option<&mut Insert>,
        single: &mut Insert,
        cells: &[Bound<'_>],
        first: usize,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        let width = self.width();
        let per_execute = match &insert {
            Some(insert) => insert.inserter.capacity() * insert.rows,
            None => single.inserter.capacity(),
        };
        let mut written = 0;
        for (at, part) in cells.chunks(per_execute * width).enumerate() {
            let start = first + at * per_execute;
            // Borrowed again each time: the search below sends through `single`.
            let insert = match insert.as_deref_mut() {
                Some(insert) => insert,
                None => &mut *single,
            };
            let Some(savepoint) = &self.savepoint else {
                if let Err(error) = execute(insert, part, width) {
                    self.fresh(insert)?;
                    let single = match insert.rows {
                        1 => insert,
                        _ => &mut *single,
                    };
                    if let Some((row, message)) = refused_alone(&self.conn, single, part, width) {
                        refused(start + row, message, None)?;
                    }
                    return Err(error);
                }
                written += (part.len() / width) as u64;
                continue;
            };
            match self.under(savepoint, || execute(insert, part, width)) {
                Ok(()) => written += (part.len() / width) as u64,
                Err(error) if !refuses_rows(&error) => return Err(error),
                Err(_) => {
                    self.fresh(insert)?;
                    written += self.isolate(savepoint, single, part, start, refused)?;
                }
            }
        }
        Ok(written)
    }

    /// The rows of a refused execute, `cells` (the chunk's rows from `first`), again in
    /// [`Isolation`]'s attempts, each under `savepoint` and through the one-row INSERT;
    /// returns how many went in.
    fn isolate(
        &self,
        savepoint: &Savepoint,
        single: &mut Insert,
        cells: &[Bound<'_>],
        first: usize,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        let width = self.width();
        let mut isolation = Isolation::new(cells.len() / width);
        let mut written = 0;
        while let Some(range) = isolation.next_attempt() {
            let rows = &cells[range.start * width..range.end * width];
            let sets = single.inserter.capacity() * width;
            let sent = self.under(savepoint, || {
                rows.chunks(sets)
                    .try_for_each(|part| execute(single, part, width))
            });
            match sent {
                Ok(()) => {
                    written += range.len() as u64;
                    isolation.accepted();
                }
                Err(error) if !refuses_rows(&error) => return Err(error),
                Err(error) => {
                    let message = refused_reason(error);
                    for row in isolation.refused(&[], false) {
                        refused(first + row, message.clone(), None)?;
                    }
                    self.fresh(single)?;
                }
            }
        }
        Ok(written)
    }
}

/// Whether `error` may be the database refusing rows, rather than the connection or the
/// transaction failing: then the rows are looked through one attempt at a time.
fn refuses_rows(error: &Error) -> bool {
    let Error::Driver { error, .. } = error else {
        return false;
    };
    let state = error
        .downcast_ref::<crate::OdbcError>()
        .and_then(|e| e.state.as_deref())
        .unwrap_or("");
    // Connection exceptions, invalid authorization, invalid transaction state, transaction
    // rollback (a deadlock or a serialization failure ended the transaction), timeouts.
    !["08", "28", "25", "40", "HYT"]
        .iter()
        .any(|class| state.starts_with(class))
}

/// One execute of the rows in `cells` (row after row, `width` values each), a whole number of
/// `insert`'s statements that fit its buffers.
fn execute(insert: &mut Insert, cells: &[Bound<'_>], width: usize) -> Result<()> {
    let rows = cells.len() / width;
    let sets = rows / insert.rows;
    insert.inserter.set_num_rows(sets);
    // Parameter `row * width + column` of set `set` holds that column of the set's row'th row.
    for parameter in 0..insert.rows * width {
        let cell = |set: usize| match cells[set * insert.rows * width + parameter] {
            Bound::Text(value) | Bound::Blob(value) => Some(value),
            _ => None,
        };
        let buffer = insert.inserter.column_mut(parameter);
        let unbound = || Error::Internal("a parameter's buffer was not of its kind".into());
        match insert.binary[parameter % width] {
            true => {
                let mut slice = buffer.as_binary().ok_or_else(unbound)?;
                (0..sets).for_each(|set| slice.set_cell(set, cell(set)));
            }
            false => {
                let mut slice = buffer.as_text().ok_or_else(unbound)?;
                (0..sets).for_each(|set| slice.set_cell(set, cell(set)));
            }
        }
    }
    insert
        .inserter
        .execute()
        .map_err(failed(format!("inserting {rows} rows")))?;
    Ok(())
}

/// After a refused batch, which the load rolls back anyway: its rows again one by one in a
/// transaction of their own, rolled back, for the first the database refuses alone and why.
/// `None` when none is (a key the batch broke with rows of earlier batches).
fn refused_alone(
    conn: &SharedConnection<'static>,
    single: &mut Insert,
    cells: &[Bound<'_>],
    width: usize,
) -> Option<(usize, String)> {
    let rollback = || lock(conn).ok().map(|c| c.rollback().is_ok());
    rollback()?;
    let found = cells.chunks(width).enumerate().find_map(|(row, one)| {
        let refused = execute(single, one, width).err()?;
        Some((row, refused_reason(refused)))
    });
    rollback();
    found
}

/// What the database said of a row it refused, without the statement's words.
fn refused_reason(error: Error) -> String {
    match error {
        Error::Driver { error, .. } => match error.downcast::<crate::OdbcError>() {
            Ok(odbc) => odbc.message,
            Err(other) => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// A share of the load's record, owned, for the connection's thread.
struct OwnedShare {
    identity: String,
    load: String,
    part: usize,
    parts: usize,
    rows: u64,
}

impl Writer for OdbcWriter {
    fn write(
        &mut self,
        data: &Bytes,
        rows: u64,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        // Refused rows are gathered on the connection's thread and named here, in order.
        let data = data.clone();
        let (written, found) = self.apart.call(move |inserts| {
            let mut found = Vec::new();
            let written = inserts.insert(&data, rows as usize, &mut |row, message, column| {
                found.push((row, message, column));
                Ok(())
            });
            Ok((written, found))
        })?;
        for (row, message, column) in found {
            refused(row, message, column)?;
        }
        written
    }

    fn begin_block(&mut self) -> Result<()> {
        // Out of autocommit, each block's transaction begins with its first statement.
        Ok(())
    }

    fn commit_block(&mut self, block: Block) -> Result<()> {
        let (ledger, input) = self.resume.clone().ok_or_else(|| {
            Error::Internal("a block committed by a load without --resume".into())
        })?;
        self.apart.call(move |inserts| {
            let conn = lock(&inserts.session.conn)?;
            ledger.record(&conn, &input, block)?;
            conn.commit().map_err(failed("committing a block"))
        })
    }

    fn roll_back_block(&mut self) {
        let _ = self.apart.call(|inserts| {
            lock(&inserts.session.conn)?
                .rollback()
                .map_err(failed("rolling a block back"))
        });
    }

    fn record(&mut self, share: &Share) -> Result<bool> {
        let Some(pending) = self.pending.as_ref().filter(|_| self.records) else {
            return Ok(false);
        };
        let books = Arc::clone(&pending.books);
        let share = OwnedShare {
            identity: share.identity.to_string(),
            load: share.load.to_string(),
            part: share.part,
            parts: share.parts,
            rows: share.rows,
        };
        self.apart.call(move |inserts| {
            let share = Share {
                identity: &share.identity,
                load: &share.load,
                part: share.part,
                parts: share.parts,
                rows: share.rows,
            };
            books.record_share(&*lock(&inserts.session.conn)?, &share)
        })?;
        Ok(true)
    }

    fn commit(mut self: Box<Self>) -> Result<Committed> {
        if self.resume.is_some() {
            // Every block committed with its ledger row already.
            return Ok(Committed::default());
        }
        target::into_commit(&self.interrupt, true, None)?;
        let pending = self
            .pending
            .take()
            .ok_or_else(|| Error::Internal("a writer without its commit".into()))?;
        let (books, token) = (Arc::clone(&pending.books), pending.token.clone());
        self.apart.call(move |inserts| {
            if let Some(token) = &token {
                books.mark(&*lock(&inserts.session.conn)?, token)?;
            }
            // The statements go first: the COMMIT runs on a thread of its own.
            inserts.single = None;
            inserts.multi = None;
            Ok(())
        })?;
        match outcome::commit(Arc::clone(&self.conn), &pending)? {
            Fate::Committed => {
                if let Some(token) = &pending.token {
                    outcome::forget_mark(
                        Arc::clone(&self.conn),
                        &pending.books,
                        token,
                        pending.limit,
                    );
                }
                Ok(Committed::default())
            }
            Fate::RolledBack(e) => Err(e),
            Fate::Unknown { reason, ask } => Err(outcome::unknown(reason, ask)),
        }
    }
}

impl Drop for Inserts {
    fn drop(&mut self) {
        // The statements first; after a commit this rolls back nothing.
        self.single = None;
        self.multi = None;
        // Not waited for: a COMMIT left behind on its thread may hold it.
        if let Ok(conn) = self.session.conn.try_lock() {
            let _ = conn.rollback();
        }
    }
}

//! The one writer: ready values bound to a cached multi-row INSERT, inside the one
//! transaction that is the whole load.
//!
//! SQLite has a single writer per database, so the gain is in giving it nothing to do but
//! bind and insert: values arrive checked and typed ([`crate::value`]); a statement inserts
//! up to [`ROWS_PER_STATEMENT`] rows (fewer when the columns would pass SQLite's limit of
//! bound variables), which is one step into the B-tree per row instead of one statement.
//!
//! A statement a constraint refuses (UNIQUE, CHECK, NOT NULL of a column the input does not
//! feed) has none of its rows inserted (SQLite undoes the statement, not the transaction);
//! its rows are then inserted in halves until each refused one is alone
//! ([`inrush_load::isolate`]), and reported with its index.
//!
//! Text and blobs are bound in place (`SQLITE_STATIC`) from the chunk, through [`Insert`], a
//! prepared statement of its own: rusqlite binds a copy of each (`SQLITE_TRANSIENT`), a malloc
//! and a free per value, which took a quarter of the writer's time on lineitem.

use crate::{failed, quote};
use inrush_load::isolate::Isolation;
use inrush_load::row::{Bound, Values};
use inrush_load::{Interrupt, Result, Watch};
use rusqlite::ffi;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::ffi::{c_int, CString};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Rows per INSERT. Measured here on 600k lineitem rows (16 columns), two runs each: 1 row per
/// statement 0.73-0.83 s, 16 to 512 rows 0.61-0.73 s (within the runs' noise of each other),
/// 2,000 rows 0.73-0.82 s. With values bound in place, the statement count matters little.
pub const ROWS_PER_STATEMENT: usize = 128;

/// SQLite's default limit of bound variables per statement (`SQLITE_MAX_VARIABLE_NUMBER`).
const MAX_VARIABLES: usize = 32766;

/// Pages SQLite keeps in memory, in KiB when negative: enough that index rebuilds and inserts
/// into a large table do not thrash, bounded so the load's memory stays flat.
pub const CACHE_KIB: i64 = 64 * 1024;

/// `--fast-unsafe`: the rollback journal in memory (a failed or interrupted load still rolls
/// back) and no fsync; a crash during the load can corrupt the database file.
pub const FAST_UNSAFE: &str = "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF;";

/// What `--fast-unsafe` costs, for the summary and the plan.
pub const FAST_UNSAFE_TRADE: &str = "--fast-unsafe: journal in memory and no fsync during the load; a failed or interrupted load still rolls back, but a crash or power loss before the commit can corrupt the whole database file";

/// Opens (creating when missing) the database file for a load: a bounded page cache, and
/// temporary files in memory: while rows go in they are statement journals, each the size of
/// one INSERT's pages. Another writer holding the database
/// makes the load wait up to `busy` before it fails with SQLite's "database is locked".
pub fn open(path: &Path, busy: Duration) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(failed(format!("opening {}", path.display())))?;
    conn.busy_timeout(busy)
        .map_err(failed("setting the busy timeout"))?;
    conn.execute_batch(&format!(
        "PRAGMA cache_size = -{CACHE_KIB}; PRAGMA temp_store = MEMORY;"
    ))
    .map_err(failed("setting the load's pragmas"))?;
    Ok(conn)
}

/// Before indexes are built again: their sort keeps the cache's size in memory and spills the
/// rest to temporary files on disk. In memory the spills grow with the table (a peak of 3.6 GB
/// to index 60M rows). SQLite allows the change inside the load's transaction while no
/// temporary table exists, and inrush makes none.
pub const SORT_ON_DISK: &str = "PRAGMA temp_store = FILE";

/// How rows whose key is in the table already are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    Error,
    /// `ON CONFLICT DO NOTHING`: the first occurrence of a key wins.
    Skip,
    /// `ON CONFLICT DO UPDATE` of every loaded column: the last occurrence wins.
    Update,
}

/// Inserts encoded rows into one table's columns.
pub struct RowWriter<'c> {
    conn: &'c Connection,
    /// Prepared INSERTs by their number of rows (the full batch, the last one, and the sizes
    /// a refused batch's search sends: at most one per size up to the batch).
    statements: std::collections::HashMap<usize, Insert>,
    columns: usize,
    head: String,
    tail: String,
    batch: usize,
    /// Rows the statements inserted or updated (less than the rows written when
    /// `Conflict::Skip` left some out).
    pub changed: u64,
}

impl<'c> RowWriter<'c> {
    pub fn new(conn: &'c Connection, table: &str, columns: &[String], conflict: Conflict) -> Self {
        let names: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        let tail = match conflict {
            Conflict::Error => String::new(),
            Conflict::Skip => " ON CONFLICT DO NOTHING".into(),
            Conflict::Update => format!(
                " ON CONFLICT DO UPDATE SET {}",
                names
                    .iter()
                    .map(|n| format!("{n} = excluded.{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        RowWriter {
            conn,
            statements: std::collections::HashMap::new(),
            columns: columns.len(),
            head: format!("INSERT INTO {table} ({}) VALUES ", names.join(", ")),
            tail,
            batch: ROWS_PER_STATEMENT
                .min(MAX_VARIABLES / columns.len().max(1))
                .max(1),
            changed: 0,
        }
    }

    /// The INSERT of `rows` rows, prepared once per writer.
    fn statement(&mut self, rows: usize) -> Result<&Insert> {
        if !self.statements.contains_key(&rows) {
            let insert = Insert::prepare(self.conn, &self.sql(rows))?;
            self.statements.insert(rows, insert);
        }
        self.statements
            .get(&rows)
            .ok_or_else(|| inrush_load::Error::Internal("a statement went missing".into()))
    }

    fn sql(&self, rows: usize) -> String {
        let one = format!("({})", vec!["?"; self.columns].join(","));
        format!("{}{}{}", self.head, vec![one; rows].join(","), self.tail)
    }

    /// Inserts the `rows` rows of `data`; see [`inrush_load::Writer::write`].
    pub fn write(
        &mut self,
        data: &[u8],
        rows: u64,
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<u64> {
        let mut values = Values::new(data);
        let mut done = 0usize;
        let mut written = 0u64;
        let rows = rows as usize;
        while done < rows {
            let n = (rows - done).min(self.batch);
            let start = data.len() - values.rest().len();
            let (conn, width) = (self.conn, self.columns);
            let inserted = {
                let stmt = self.statement(n)?;
                stmt.bind(&mut values, n * width)?;
                stmt.execute(conn)
            };
            match inserted {
                Ok(changed) => {
                    self.changed += changed as u64;
                    written += n as u64;
                }
                Err(e) if refuses_a_row(&e) => {
                    let batch = &data[start..data.len() - values.rest().len()];
                    written += self.isolate(batch, n, done, refused)?;
                }
                Err(e) => return Err(failed("inserting rows")(e)),
            }
            done += n;
        }
        Ok(written)
    }

    /// Inserts a refused statement's rows in the attempts [`Isolation`] says (SQLite names no
    /// row, so a refused attempt is halved), reporting each refused row. A refused statement
    /// changed nothing: SQLite undoes the statement, not the transaction.
    fn isolate(
        &mut self,
        batch: &[u8],
        rows: usize,
        first: usize,
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<u64> {
        let (conn, width) = (self.conn, self.columns);
        // Where each row's values start in the batch, and where the last ends.
        let mut values = Values::new(batch);
        let mut starts = Vec::with_capacity(rows + 1);
        for _ in 0..rows {
            starts.push(batch.len() - values.rest().len());
            values.skip_values(width);
        }
        starts.push(batch.len() - values.rest().len());
        let mut isolation = Isolation::new(rows);
        let mut written = 0;
        while let Some(range) = isolation.next_attempt() {
            let mut values = Values::new(&batch[starts[range.start]..starts[range.end]]);
            let inserted = {
                let stmt = self.statement(range.len())?;
                stmt.bind(&mut values, range.len() * width)?;
                stmt.execute(conn)
            };
            match inserted {
                Ok(changed) => {
                    self.changed += changed as u64;
                    written += range.len() as u64;
                    isolation.accepted();
                }
                Err(e) if refuses_a_row(&e) => {
                    for row in isolation.refused(&[], false) {
                        refused(first + row, message(&e))?;
                    }
                }
                Err(e) => return Err(failed("inserting rows")(e)),
            }
        }
        Ok(written)
    }
}

/// A prepared INSERT whose text and blob values are bound in place.
///
/// Safety: a value bound with `SQLITE_STATIC` must stay where it is until the statement is
/// stepped and reset, or bound again. [`Insert::bind`] borrows the values for the length of one
/// [`Insert::execute`], which resets the statement and clears its bindings before it returns,
/// so no binding outlives the chunk it points into.
pub struct Insert {
    stmt: *mut ffi::sqlite3_stmt,
}

impl Insert {
    fn prepare(conn: &Connection, sql: &str) -> Result<Insert> {
        let sql = CString::new(sql)
            .map_err(|_| inrush_load::Error::Internal("a NUL in an INSERT".into()))?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: a live connection handle, a NUL-terminated statement, an out pointer.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                conn.handle(),
                sql.as_ptr(),
                -1,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        match rc {
            ffi::SQLITE_OK => Ok(Insert { stmt }),
            _ => Err(failed("preparing the INSERT")(last_error(conn, rc))),
        }
    }

    /// Binds the next `count` values.
    fn bind(&self, values: &mut Values<'_>, count: usize) -> Result<()> {
        for i in 1..=count as c_int {
            let value = values.next().ok_or_else(|| {
                inrush_load::Error::Internal("a chunk holds fewer values than its rows".into())
            })?;
            // SAFETY: `self.stmt` is a prepared statement; text and blob pointers stay valid
            // until `execute` clears them (see the type's safety note).
            let rc = unsafe {
                match value {
                    Bound::Null => ffi::sqlite3_bind_null(self.stmt, i),
                    Bound::Integer(v) => ffi::sqlite3_bind_int64(self.stmt, i, v),
                    Bound::Real(v) => ffi::sqlite3_bind_double(self.stmt, i, v),
                    Bound::Text(t) => ffi::sqlite3_bind_text(
                        self.stmt,
                        i,
                        t.as_ptr().cast(),
                        t.len() as c_int,
                        ffi::SQLITE_STATIC(),
                    ),
                    Bound::Blob(b) => ffi::sqlite3_bind_blob(
                        self.stmt,
                        i,
                        b.as_ptr().cast(),
                        b.len() as c_int,
                        ffi::SQLITE_STATIC(),
                    ),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(inrush_load::Error::Internal(format!(
                    "binding value {i}: SQLite code {rc}"
                )));
            }
        }
        Ok(())
    }

    /// Runs the statement; the rows it changed, or SQLite's error.
    fn execute(&self, conn: &Connection) -> rusqlite::Result<usize> {
        // SAFETY: a prepared statement, stepped, then reset and unbound.
        unsafe {
            let rc = ffi::sqlite3_step(self.stmt);
            ffi::sqlite3_reset(self.stmt);
            ffi::sqlite3_clear_bindings(self.stmt);
            match rc {
                ffi::SQLITE_DONE => Ok(ffi::sqlite3_changes64(conn.handle()) as usize),
                rc => Err(last_error(conn, rc)),
            }
        }
    }
}

impl Drop for Insert {
    fn drop(&mut self) {
        // SAFETY: finalized once, here.
        unsafe { ffi::sqlite3_finalize(self.stmt) };
    }
}

/// The connection's error for result code `rc`, as rusqlite reports errors.
fn last_error(conn: &Connection, rc: c_int) -> rusqlite::Error {
    // SAFETY: a live connection handle; the message is copied before anything else runs on it.
    let message = unsafe {
        let msg = ffi::sqlite3_errmsg(conn.handle());
        (!msg.is_null()).then(|| std::ffi::CStr::from_ptr(msg).to_string_lossy().into_owned())
    };
    // sqlite3_step returns the extended code with extended result codes on; the primary code
    // is its low byte.
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

/// A refusal of the row itself (a constraint, a rowid that is not an integer), not of the load.
fn refuses_a_row(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch)
    )
}

/// SQLite's own message (`UNIQUE constraint failed: t.id`).
fn message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        other => other.to_string(),
    }
}

/// Makes SQLite stop whatever the connection runs when the load is interrupted before its
/// commit began (an index build or ANALYZE can take minutes); the statement then fails with
/// "interrupted" and the transaction rolls back. A commit already begun is left to end. Stops
/// watching when dropped.
pub fn interrupt_watch(conn: &Connection, interrupt: &Arc<Interrupt>) -> Watch {
    let handle = conn.get_interrupt_handle();
    interrupt.watch(Duration::from_millis(50), move || handle.interrupt())
}

/// The one column a constraint refusal names (`NOT NULL constraint failed: t.c`, `UNIQUE
/// constraint failed: t.c`); `None` for several columns, a CHECK (named by the constraint) or
/// a trigger's RAISE.
pub fn column_in_message(message: &str) -> Option<String> {
    let (_, columns) = message.split_once(" constraint failed: ")?;
    if columns.contains(", ") || message.starts_with("CHECK") {
        return None;
    }
    columns
        .rsplit_once('.')
        .map(|(_, column)| column.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{push_value, Value};

    fn rows(values: &[&[Value<'_>]]) -> Vec<u8> {
        let mut out = Vec::new();
        for row in values {
            for v in *row {
                push_value(&mut out, v);
            }
        }
        out
    }

    #[test]
    fn inserts_in_batches_and_reports_refused_rows() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT CHECK (v <> 'bad'))")
            .unwrap();
        let columns = ["id".to_string(), "v".to_string()];
        let mut writer = RowWriter::new(&conn, "\"t\"", &columns, Conflict::Error);
        writer.batch = 2;
        let data = rows(&[
            &[Value::Integer(1), Value::Text("a")],
            &[Value::Integer(2), Value::Text("bad")],
            &[Value::Integer(3), Value::Null],
            &[Value::Integer(1), Value::Text("again")],
            &[Value::Integer(5), Value::Text("e")],
        ]);
        let mut seen = Vec::new();
        let written = writer
            .write(&data, 5, &mut |i, reason| {
                seen.push((i, reason));
                Ok(())
            })
            .unwrap();
        assert_eq!(written, 3);
        assert_eq!(
            seen,
            [
                (1, "CHECK constraint failed: v <> 'bad'".to_string()),
                (3, "UNIQUE constraint failed: t.id".to_string())
            ]
        );
        let ids: Vec<i64> = conn
            .prepare("SELECT id FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ids, [1, 3, 5]);
    }

    #[test]
    fn conflicts_skip_or_update() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            .unwrap();
        let columns = ["id".to_string(), "v".to_string()];
        let data = rows(&[
            &[Value::Integer(1), Value::Text("first")],
            &[Value::Integer(1), Value::Text("second")],
        ]);
        let mut skip = RowWriter::new(&conn, "t", &columns, Conflict::Skip);
        skip.write(&data, 2, &mut |_, r| panic!("{r}")).unwrap();
        assert_eq!(skip.changed, 1);
        let v: String = conn.query_row("SELECT v FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(v, "first");
        let mut update = RowWriter::new(&conn, "t", &columns, Conflict::Update);
        update.write(&data, 2, &mut |_, r| panic!("{r}")).unwrap();
        let v: String = conn.query_row("SELECT v FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(v, "second");
    }
}

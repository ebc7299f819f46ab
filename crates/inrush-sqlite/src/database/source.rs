//! A SQLite file as `inrush copy` reads it: its tables from its own catalog (`sqlite_schema`,
//! `pragma_table_xinfo`, `pragma_index_list`, `pragma_foreign_key_list`), and its rows value by
//! value ([`QueryServer::rows`]).
//!
//! One image for every reader: SQLite has no snapshot to hand from one connection to another,
//! so the copy holds the write lock (`BEGIN IMMEDIATE`) while each reading connection begins
//! its read transaction, then lets it go. No write can commit between the readers' starts, so
//! they all read the same instant. In WAL mode writers go on during the copy; in rollback-
//! journal mode they wait for it (the readers' shared locks keep them out), as they would for
//! any long read.
//!
//! Types, as a user moving a SQLite file expects: a declared type keeps its name's meaning
//! (`VARCHAR(20)` is `varchar(20)`, `DECIMAL(10,2)` `numeric(10,2)`, `BOOLEAN`, `DATE`,
//! `DATETIME`), integers are 64-bit (`INT` too, since SQLite stores any integer in it), and a
//! column with no type is text. A value that does not fit the type (text in an `INTEGER`
//! column, a date SQLite stored as a number) is a bad row of the target, never changed.

use crate::quote;
use inrush_core::database::{
    select_item, Action, Column, Database, Default, Expression, ForeignKey, Identity, Index,
    IndexPart, Key, Object, SchemaSource, Snapshot, Table,
};
use inrush_core::query::{range_queries, QueryError, QueryRows, QueryServer, TextRows};
use inrush_core::SqlType;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex};

const ENGINE: &str = "SQLite";

/// How long a reader waits for a writer's lock before it gives up.
const BUSY: std::time::Duration = std::time::Duration::from_secs(30);

/// A SQLite file a copy reads.
pub struct SqliteSchemaSource {
    path: PathBuf,
}

impl SqliteSchemaSource {
    pub fn new(path: PathBuf) -> SqliteSchemaSource {
        SqliteSchemaSource { path }
    }
}

fn error(what: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> QueryError {
    let what = what.into();
    move |cause| QueryError {
        engine: ENGINE,
        what,
        message: cause.to_string(),
    }
}

fn open(path: &PathBuf) -> Result<Connection, QueryError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(error(format!("opening {}", path.display())))?;
    conn.busy_timeout(BUSY).map_err(error("busy_timeout"))?;
    Ok(conn)
}

impl SchemaSource for SqliteSchemaSource {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn describe(&self) -> String {
        let path = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        format!("SQLite {}", path.display())
    }

    fn schema(&self) -> Result<Database, QueryError> {
        read(&open(&self.path)?)
    }

    fn snapshot(&self, readers: usize) -> Result<Snapshot, QueryError> {
        // Read-write only to take the write lock; it writes nothing.
        let lock = Connection::open(&self.path)
            .map_err(error(format!("opening {}", self.path.display())))?;
        lock.busy_timeout(BUSY).map_err(error("busy_timeout"))?;
        lock.execute_batch("BEGIN IMMEDIATE").map_err(error(
            "BEGIN IMMEDIATE (holding writers while the readers begin)",
        ))?;
        let mut idle = Vec::new();
        for _ in 0..readers.max(1) {
            let conn = open(&self.path)?;
            // A read transaction takes its snapshot at its first read.
            conn.execute_batch("BEGIN; SELECT count(*) FROM sqlite_schema")
                .map_err(error("beginning a read transaction"))?;
            idle.push(conn);
        }
        lock.execute_batch("ROLLBACK").map_err(error("ROLLBACK"))?;
        let how = format!(
            "{} read transactions begun while the copy held the write lock",
            idle.len()
        );
        let server = SqliteReader {
            path: self.path.clone(),
            idle: Some(Arc::new((Mutex::new(idle), Condvar::new()))),
        };
        Ok(Snapshot {
            server: Arc::new(server),
            how,
        })
    }

    fn select(&self, table: &Table, columns: &[(String, String)], _: &str) -> String {
        let columns: Vec<String> = columns
            .iter()
            .map(|(c, name)| select_item(c, name, None, quote))
            .collect();
        format!("SELECT {} FROM {}", columns.join(", "), quote(&table.name))
    }
}

/// A SQLite type's name as [`SqlType`]: its own meaning where the name has one, else by
/// SQLite's affinity rules.
pub fn declared_type(declared: &str) -> SqlType {
    let upper = declared.trim().to_ascii_uppercase();
    let (name, numbers) = match upper.split_once('(') {
        Some((name, rest)) => {
            let inside = rest.trim_end_matches(')');
            let numbers: Vec<u32> = inside
                .split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect();
            (name.trim().to_string(), numbers)
        }
        None => (upper.clone(), Vec::new()),
    };
    match (name.as_str(), numbers.as_slice()) {
        ("", _) => SqlType::Text,
        ("VARCHAR" | "CHARACTER VARYING" | "NVARCHAR" | "VARYING CHARACTER", [n]) => {
            SqlType::Varchar(Some(*n))
        }
        ("CHAR" | "CHARACTER" | "NCHAR" | "NATIVE CHARACTER", [n]) => SqlType::Char(*n),
        ("DECIMAL" | "NUMERIC", [p, s]) => SqlType::Numeric(Some((*p, *s))),
        ("DECIMAL" | "NUMERIC", [p]) => SqlType::Numeric(Some((*p, 0))),
        ("BOOLEAN" | "BOOL", _) => SqlType::Boolean,
        ("DATE", _) => SqlType::Date,
        ("DATETIME" | "TIMESTAMP", _) => SqlType::Timestamp(None),
        ("TIME", _) => SqlType::Time(None),
        ("JSON" | "JSONB", _) => SqlType::Json,
        ("UUID", _) => SqlType::Uuid,
        ("FLOAT" | "REAL" | "DOUBLE" | "DOUBLE PRECISION", _) => SqlType::Double,
        _ if name.contains("INT") => SqlType::BigInt,
        _ if ["CHAR", "CLOB", "TEXT"].iter().any(|t| name.contains(t)) => SqlType::Text,
        _ if name.contains("BLOB") => SqlType::Bytes,
        _ if ["REAL", "FLOA", "DOUB"].iter().any(|t| name.contains(t)) => SqlType::Double,
        _ => SqlType::Numeric(None),
    }
}

fn read(conn: &Connection) -> Result<Database, QueryError> {
    let sql = "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema \
               WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'inrush\\_%' ESCAPE '\\' \
               ORDER BY type, name";
    let mut statement = conn.prepare(sql).map_err(error(sql))?;
    let objects: Vec<(String, String, String, String)> = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .and_then(|rows| rows.collect())
        .map_err(error(sql))?;
    let mut tables = Vec::new();
    let mut not_copied = Vec::new();
    for (kind, name, _, sql) in &objects {
        match kind.as_str() {
            "table" if sql.to_ascii_uppercase().contains("VIRTUAL TABLE") => {
                not_copied.push(Object {
                    kind: "virtual table",
                    name: name.clone(),
                })
            }
            "table" => tables.push(table(conn, name)?),
            "view" => not_copied.push(Object {
                kind: "view",
                name: name.clone(),
            }),
            "trigger" => not_copied.push(Object {
                kind: "trigger",
                name: name.clone(),
            }),
            _ => {}
        }
    }
    for table in &mut tables {
        let sql = objects
            .iter()
            .find(|(kind, name, _, _)| kind == "table" && name == &table.name)
            .map(|o| o.3.to_ascii_uppercase())
            .unwrap_or_default();
        // SQLite's catalog does not hold CHECK constraints apart from the table's text.
        if sql.contains("CHECK") {
            not_copied.push(Object {
                kind: "check constraints of table",
                name: table.name.clone(),
            });
        }
    }
    Ok(Database {
        engine: ENGINE,
        tables,
        types: Vec::new(),
        not_copied,
    })
}

fn sqlite(sql: String) -> Expression {
    Expression {
        engine: ENGINE,
        sql,
    }
}

fn table(conn: &Connection, name: &str) -> Result<Table, QueryError> {
    let what = format!("reading table {name}");
    let sql = "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid";
    let mut statement = conn.prepare(sql).map_err(error(&what))?;
    type Row = (String, String, bool, Option<String>, i64, i64);
    let rows: Vec<Row> = statement
        .query_map([name], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(error(&what))?;
    let mut key: Vec<(i64, String)> = rows
        .iter()
        .filter(|r| r.4 > 0)
        .map(|r| (r.4, r.0.clone()))
        .collect();
    key.sort();
    // The rowid under another name: SQLite numbers it.
    let rowid = match key.as_slice() {
        [(_, column)] => rows
            .iter()
            .find(|r| &r.0 == column)
            .is_some_and(|r| r.1.eq_ignore_ascii_case("INTEGER")),
        _ => false,
    };
    let columns = rows
        .iter()
        .filter(|r| r.5 != 1)
        .map(|(column, declared, not_null, default, pk, hidden)| Column {
            name: column.clone(),
            sql_type: declared_type(declared),
            not_null: *not_null || (rowid && *pk > 0),
            default: default.as_deref().and_then(read_default),
            default_sql: default.clone().map(sqlite),
            identity: (rowid && *pk > 0).then_some(Identity::ByDefault),
            // The expression is in the table's text only: named, not read.
            generated: (*hidden >= 2).then(|| sqlite(String::new())),
            comment: None,
        })
        .collect();
    let count = format!("SELECT count(*) FROM {}", quote(name));
    let rows_estimate: i64 = conn
        .query_row(&count, [], |r| r.get(0))
        .map_err(error(&count))?;
    let mut table = Table {
        schema: None,
        name: name.to_string(),
        columns,
        primary_key: (!key.is_empty()).then(|| Key {
            name: String::new(),
            columns: key.into_iter().map(|(_, c)| c).collect(),
        }),
        uniques: Vec::new(),
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
        rows_estimate: rows_estimate as u64,
        bytes: 0,
    };
    indexes(conn, &mut table)?;
    foreign_keys(conn, &mut table)?;
    Ok(table)
}

/// A default as SQLite keeps it: the text of its expression (`'a'`, `0`, `CURRENT_TIMESTAMP`).
fn read_default(text: &str) -> Option<Default> {
    let upper = text.to_ascii_uppercase();
    match upper.as_str() {
        "NULL" => return None,
        "CURRENT_TIMESTAMP" => return Some(Default::CurrentTimestamp),
        "CURRENT_DATE" => return Some(Default::CurrentDate),
        "TRUE" | "FALSE" => return Some(Default::Literal(upper.to_lowercase())),
        _ => {}
    }
    if let Some(quoted) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        if !quoted.replace("''", "").contains('\'') {
            return Some(Default::Literal(quoted.replace("''", "'")));
        }
    }
    let t = text.trim_start_matches(['-', '+']);
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Some(Default::Literal(text.to_string()));
    }
    Some(Default::Expression(sqlite(text.to_string())))
}

fn indexes(conn: &Connection, table: &mut Table) -> Result<(), QueryError> {
    let what = format!("reading the indexes of {}", table.name);
    let sql = "SELECT l.name, l.\"unique\", l.origin, l.partial, coalesce(s.sql, '') \
               FROM pragma_index_list(?1) l LEFT JOIN sqlite_schema s ON s.name = l.name \
               ORDER BY l.name";
    let mut statement = conn.prepare(sql).map_err(error(&what))?;
    let list: Vec<(String, bool, String, bool, String)> = statement
        .query_map([&table.name], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .and_then(|rows| rows.collect())
        .map_err(error(&what))?;
    let parts_sql = "SELECT name, \"desc\" FROM pragma_index_xinfo(?1) WHERE key ORDER BY seqno";
    let mut parts = conn.prepare(parts_sql).map_err(error(&what))?;
    for (name, unique, origin, partial, create) in list {
        let index_parts: Vec<IndexPart> = parts
            .query_map([&name], |r| {
                let column: Option<String> = r.get(0)?;
                let descending: bool = r.get(1)?;
                Ok(match column {
                    Some(name) => IndexPart::Column {
                        name,
                        descending,
                        prefix: None,
                    },
                    None => IndexPart::Expression(sqlite(String::new())),
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(error(&what))?;
        match origin.as_str() {
            "pk" => {}
            "u" => {
                let columns: Vec<String> = index_parts
                    .iter()
                    .filter_map(|p| match p {
                        IndexPart::Column { name, .. } => Some(name.clone()),
                        IndexPart::Expression(_) => None,
                    })
                    .collect();
                // The constraint's index is `sqlite_autoindex_t_N`: named as PostgreSQL would.
                let name = format!("{}_{}_key", table.name, columns.join("_"));
                table.uniques.push(Key { name, columns });
            }
            _ => {
                let upper = create.to_ascii_uppercase();
                let predicate = upper
                    .rfind(" WHERE ")
                    .filter(|_| partial)
                    .map(|at| sqlite(create[at + 7..].trim().to_string()));
                table.indexes.push(Index {
                    name,
                    unique,
                    parts: index_parts,
                    method: None,
                    predicate,
                    definition: Some(sqlite(create)),
                });
            }
        }
    }
    Ok(())
}

fn foreign_keys(conn: &Connection, table: &mut Table) -> Result<(), QueryError> {
    let what = format!("reading the foreign keys of {}", table.name);
    let sql = "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete \
               FROM pragma_foreign_key_list(?1) ORDER BY id, seq";
    let mut statement = conn.prepare(sql).map_err(error(&what))?;
    type Row = (i64, String, String, Option<String>, String, String);
    let rows: Vec<Row> = statement
        .query_map([&table.name], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(error(&what))?;
    let mut last = None;
    for (id, parent, from, to, on_update, on_delete) in rows {
        if last != Some(id) {
            table.foreign_keys.push(ForeignKey {
                name: String::new(),
                columns: Vec::new(),
                parent_schema: None,
                parent: parent.clone(),
                parent_columns: Vec::new(),
                on_delete: Action::parse(&on_delete),
                on_update: Action::parse(&on_update),
            });
            last = Some(id);
        }
        let key = table.foreign_keys.last_mut().expect("pushed above");
        key.columns.push(from);
        match to {
            Some(to) => key.parent_columns.push(to),
            // A key that names no column references the parent's primary key.
            None => key.parent_columns = primary_key(conn, &parent)?,
        }
    }
    for key in &mut table.foreign_keys {
        key.name = format!("{}_{}_fkey", table.name, key.columns.join("_"));
    }
    Ok(())
}

fn primary_key(conn: &Connection, table: &str) -> Result<Vec<String>, QueryError> {
    let sql = "SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk";
    let mut statement = conn.prepare(sql).map_err(error(sql))?;
    let columns = statement
        .query_map([table], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(error(sql));
    columns
}

/// A copy's reading connections, each in a read transaction of the same instant (see the
/// module's documentation); a query takes one and gives it back when its rows are read.
/// Without them (`idle` is `None`), each query opens its own: a target read back.
pub(crate) struct SqliteReader {
    path: PathBuf,
    idle: Option<Arc<(Mutex<Vec<Connection>>, Condvar)>>,
}

impl std::fmt::Debug for SqliteReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqliteReader({})", self.path.display())
    }
}

/// A connection of the pool, given back when dropped.
struct Lease {
    conn: Option<Connection>,
    idle: Option<Arc<(Mutex<Vec<Connection>>, Condvar)>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let (Some(conn), Some(pool)) = (self.conn.take(), &self.idle) {
            let (idle, freed) = &**pool;
            idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
            freed.notify_one();
        }
    }
}

impl SqliteReader {
    /// Queries of the file at `path`, each on a connection of its own.
    pub(crate) fn new(path: PathBuf) -> SqliteReader {
        SqliteReader { path, idle: None }
    }

    fn lease(&self) -> Result<Lease, QueryError> {
        let Some(pool) = &self.idle else {
            return Ok(Lease {
                conn: Some(open(&self.path)?),
                idle: None,
            });
        };
        let (idle, freed) = &**pool;
        let mut idle_now = idle.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(conn) = idle_now.pop() {
                return Ok(Lease {
                    conn: Some(conn),
                    idle: Some(pool.clone()),
                });
            }
            idle_now = freed.wait(idle_now).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl QueryServer for SqliteReader {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    /// The names; every type text, since a query's columns carry no declared type here (a
    /// copy makes its tables from the catalog, not from this).
    fn columns(&self, sql: &str) -> Result<Vec<(String, SqlType)>, QueryError> {
        let lease = self.lease()?;
        let conn = lease.conn.as_ref().expect("a leased connection");
        let statement = conn.prepare(sql).map_err(error(sql))?;
        let names = statement.column_names().into_iter();
        Ok(names.map(|n| (n.to_string(), SqlType::Text)).collect())
    }

    fn split(&self, sql: &str, column: &str, parts: usize) -> Result<Vec<String>, QueryError> {
        let col = quote(column);
        let bounds = format!("SELECT min({col}), max({col}) FROM ({sql})");
        let lease = self.lease()?;
        let conn = lease.conn.as_ref().expect("a leased connection");
        let (min, max): (Option<i64>, Option<i64>) = conn
            .query_row(&bounds, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(error(&bounds))?;
        Ok(range_queries(sql, &col, (min, max), parts))
    }

    fn csv(&self, sql: &str) -> Result<Box<dyn Read + Send>, QueryError> {
        Ok(self.rows(sql)?.csv())
    }

    fn reads_rows(&self) -> bool {
        true
    }

    fn rows(&self, sql: &str) -> Result<QueryRows, QueryError> {
        let lease = self.lease()?;
        // Fail here, with SQLite's message, when the query does not prepare.
        let names: Vec<String> = match &lease.conn {
            Some(conn) => {
                let statement = conn.prepare(sql).map_err(error(sql))?;
                let names = statement.column_names().into_iter();
                names.map(str::to_string).collect()
            }
            None => Vec::new(),
        };
        // A few blocks in flight: a slow load holds the reader back rather than buffering.
        let (tx, blocks) = std::sync::mpsc::sync_channel(4);
        let (sql, width) = (sql.to_string(), names.len());
        std::thread::Builder::new()
            .name("inrush-query-out".into())
            .spawn(move || {
                let conn = lease.conn.as_ref().expect("a leased connection");
                if let Err(e) = stream(conn, &sql, width, &tx) {
                    let _ = tx.send(Err(e));
                }
            })
            .map_err(|e| QueryError {
                engine: ENGINE,
                what: "starting a thread".into(),
                message: e.to_string(),
            })?;
        Ok(QueryRows {
            names,
            blocks: Box::new(blocks.into_iter()),
        })
    }
}

/// `sql`'s rows (`width` values each) on `tx` a block at a time; stops when the reader is gone.
fn stream(
    conn: &Connection,
    sql: &str,
    width: usize,
    tx: &SyncSender<Result<TextRows, QueryError>>,
) -> Result<(), QueryError> {
    let mut statement = conn.prepare(sql).map_err(error(sql))?;
    let mut rows = statement.query([]).map_err(error(sql))?;
    let mut number = itoa::Buffer::new();
    let mut block = TextRows::new(width);
    while let Some(row) = rows.next().map_err(error(sql))? {
        for i in 0..width {
            let out = block.text();
            match row.get_ref(i).map_err(error(sql))? {
                ValueRef::Null => {
                    block.null();
                    continue;
                }
                ValueRef::Integer(n) => out.extend_from_slice(number.format(n).as_bytes()),
                ValueRef::Real(f) => write_real(out, f),
                ValueRef::Text(text) => out.extend_from_slice(text),
                ValueRef::Blob(bytes) => {
                    // bytea's hex form: what PostgreSQL's input reads, and the other targets.
                    out.extend_from_slice(b"\\x");
                    for b in bytes {
                        out.extend_from_slice(format!("{b:02x}").as_bytes());
                    }
                }
            }
            block.end();
        }
        if block.is_full() {
            let full = std::mem::replace(&mut block, TextRows::new(width));
            if tx.send(Ok(full)).is_err() {
                return Ok(()); // the load stopped reading
            }
        }
    }
    if block.rows() > 0 {
        let _ = tx.send(Ok(block));
    }
    Ok(())
}

/// A double as its shortest text that reads back the same (Rust's `Display`), and the
/// spellings PostgreSQL reads for the values that are not numbers.
fn write_real(out: &mut Vec<u8>, f: f64) {
    use std::io::Write;
    let _ = match f {
        f if f.is_nan() => write!(out, "NaN"),
        f if f == f64::INFINITY => write!(out, "Infinity"),
        f if f == f64::NEG_INFINITY => write!(out, "-Infinity"),
        f => write!(out, "{f:?}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_keep_their_meaning() {
        let cases = [
            ("INTEGER", SqlType::BigInt),
            ("int", SqlType::BigInt),
            ("VARCHAR(20)", SqlType::Varchar(Some(20))),
            ("character(3)", SqlType::Char(3)),
            ("DECIMAL(10, 2)", SqlType::Numeric(Some((10, 2)))),
            ("NUMERIC", SqlType::Numeric(None)),
            ("BOOLEAN", SqlType::Boolean),
            ("DATETIME", SqlType::Timestamp(None)),
            ("DATE", SqlType::Date),
            ("REAL", SqlType::Double),
            ("BLOB", SqlType::Bytes),
            ("", SqlType::Text),
            ("TEXT", SqlType::Text),
            ("JSON", SqlType::Json),
        ];
        for (declared, expected) in cases {
            assert_eq!(declared_type(declared), expected, "{declared}");
        }
    }

    #[test]
    fn reals_are_written_so_that_they_read_back_the_same() {
        for (f, text) in [
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e300, "1e300"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            let mut out = Vec::new();
            write_real(&mut out, f);
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
    }
}

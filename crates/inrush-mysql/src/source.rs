//! MariaDB and MySQL as the server of `--from-query`: a query's rows, read as they arrive and
//! handed to the load a block at a time as their values' texts (`TextRows`), with the types
//! `--create` gives them.
//!
//! Each value is written in the text form PostgreSQL's input functions read, since moving data
//! out of MySQL into PostgreSQL is what this is for (pgloader's main use); other targets read
//! the same forms. Where MySQL's text differs from that:
//! - binary strings (`BINARY`, `VARBINARY`, `BLOB`) become `\x` hex;
//! - `BIT(n)` becomes its `n` bits (`0101`), `BIT(1)` a boolean's `1`/`0`;
//! - `TIMESTAMP` is read in UTC (the session's `time_zone` is `+00:00`) and marked `+00`;
//! - zero dates (`0000-00-00`, and a zero month or day) stay as they are, so the target
//!   refuses them as bad rows, unless `--zero-dates-null` asks for NULL (what MySQL's own
//!   connectors return for them).
//!
//! The types ([`SqlType`], which every target's `--create` maps), as a user moving a MySQL
//! schema expects: `TINYINT(1)` and `BIT(1)` are booleans; an unsigned integer is the next
//! wider type (`BIGINT UNSIGNED` is `numeric(20,0)`); `DATETIME` is a timestamp, `TIMESTAMP` one
//! with its zone; `ENUM` and `SET` are text; `JSON` (MySQL's type, or MariaDB's alias with its
//! `json_valid` check) is JSON; `YEAR` is a `smallint`.

use crate::options::MysqlOptions;
use inrush_core::query::{range_queries, QueryError, QueryRows, QueryServer, TextRows};
use inrush_core::SqlType;
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::Queryable;
use mysql_async::{Column, Conn, Value};
use std::io::Read;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// A MariaDB or MySQL server whose query results a load reads.
#[derive(Debug, Clone)]
pub struct MysqlSource {
    options: MysqlOptions,
    /// `--zero-dates-null`: zero dates become NULL instead of bad rows.
    zero_dates_null: bool,
    /// A copy's consistent image: every query runs on one of these sessions, each in a
    /// transaction opened at the same instant (see `database::snapshot`).
    snapshot: Option<Arc<Sessions>>,
}

/// Sessions whose transactions read one instant, and the runtime they live on (a session's
/// socket belongs to the runtime that opened it).
pub(crate) struct Sessions {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) idle: std::sync::Mutex<Vec<Conn>>,
    pub(crate) free: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sessions({})", self.free.available_permits())
    }
}

/// A session for one query: the snapshot's, given back when the query ends, or a new one.
struct Lease<'s> {
    conn: Option<Conn>,
    sessions: Option<(&'s Sessions, tokio::sync::SemaphorePermit<'s>)>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let (Some(conn), Some((sessions, _permit))) = (self.conn.take(), &self.sessions) {
            sessions
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
    }
}

impl MysqlSource {
    pub fn new(options: MysqlOptions, zero_dates_null: bool) -> MysqlSource {
        MysqlSource {
            options,
            zero_dates_null,
            snapshot: None,
        }
    }

    /// This source with every query on one of `sessions`.
    pub(crate) fn on(&self, sessions: Sessions) -> MysqlSource {
        MysqlSource {
            snapshot: Some(Arc::new(sessions)),
            ..self.clone()
        }
    }

    /// A session for a query (see [`Lease`]).
    async fn lease(&self) -> Result<Lease<'_>, QueryError> {
        let Some(sessions) = self.snapshot.as_deref() else {
            return Ok(Lease {
                conn: Some(self.connect().await?),
                sessions: None,
            });
        };
        let permit = sessions.free.acquire().await.map_err(|e| QueryError {
            engine: "MariaDB",
            what: "waiting for a snapshot session".into(),
            message: e.to_string(),
        })?;
        let conn = sessions
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        Ok(Lease {
            conn,
            sessions: Some((sessions, permit)),
        })
    }

    fn error(&self, what: impl Into<String>) -> impl FnOnce(mysql_async::Error) -> QueryError {
        let what = what.into();
        move |cause| QueryError {
            engine: "MariaDB",
            what,
            message: cause.to_string(),
        }
    }

    /// A session that reads `TIMESTAMP` values in UTC.
    async fn connect(&self) -> Result<Conn, QueryError> {
        let mut conn = self.options.connect().await.map_err(|e| QueryError {
            engine: "MariaDB",
            what: format!("connecting to {}", self.options.describe()),
            message: e.to_string(),
        })?;
        conn.query_drop("SET time_zone = '+00:00'")
            .await
            .map_err(self.error("setting the session's time zone"))?;
        Ok(conn)
    }

    fn block_on<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, QueryError>>,
    ) -> Result<T, QueryError> {
        if let Some(sessions) = &self.snapshot {
            return sessions.runtime.block_on(work);
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| QueryError {
                engine: "MariaDB",
                what: "starting a runtime".into(),
                message: e.to_string(),
            })?
            .block_on(work)
    }

    /// The result's columns as the server describes them, without running the query.
    async fn described(&self, conn: &mut Conn, sql: &str) -> Result<Vec<Source>, QueryError> {
        let statement = conn.prep(sql).await.map_err(self.error(sql))?;
        let mut columns = Vec::new();
        for column in statement.columns() {
            let kind = Kind::of(column, json_checked(conn, column).await?);
            columns.push(Source {
                name: column.name_str().into_owned(),
                kind,
            });
        }
        conn.close(statement).await.map_err(self.error(sql))?;
        Ok(columns)
    }

    /// Runs `sql` and sends its rows to `tx` a block at a time, after its column names to
    /// `started`; returns when every row is sent, the query fails, or the reader is gone.
    async fn stream(&self, sql: &str, started: SyncSender<Started>, tx: SyncSender<Block>) {
        let failed = |e: QueryError| {
            let _ = started.send(Err(e));
        };
        let mut lease = match self.lease().await {
            Ok(lease) => lease,
            Err(e) => return failed(e),
        };
        let Some(conn) = lease.conn.as_mut() else {
            return failed(self.error(sql)(mysql_async::Error::Other(
                "no session left".into(),
            )));
        };
        let columns = match self.described(conn, sql).await {
            Ok(columns) => columns,
            Err(e) => return failed(e),
        };
        let mut result = match conn.query_iter(sql).await {
            Ok(result) => result,
            Err(e) => return failed(self.error(sql)(e)),
        };
        let _ = started.send(Ok(columns.iter().map(|c| c.name.clone()).collect()));
        let mut block = TextRows::new(columns.len());
        loop {
            let row = match result.next().await {
                Ok(Some(row)) => row,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Err(self.error(sql)(e)));
                    return;
                }
            };
            for (i, column) in columns.iter().enumerate() {
                // The text protocol sends NULL or bytes only.
                match row.as_ref(i) {
                    Some(Value::Bytes(bytes))
                        if column.kind.text(bytes, self.zero_dates_null, block.text()) =>
                    {
                        block.end()
                    }
                    _ => block.null(),
                }
            }
            if block.is_full() {
                let full = std::mem::replace(&mut block, TextRows::new(columns.len()));
                if tx.send(Ok(full)).is_err() {
                    return; // the load stopped reading
                }
            }
        }
        if block.rows() > 0 {
            let _ = tx.send(Ok(block));
        }
        drop(result);
        if lease.sessions.is_none() {
            if let Some(conn) = lease.conn.take() {
                let _ = conn.disconnect().await;
            }
        }
    }
}

/// What a query's reading thread says first: the result's column names, or why it did not run.
type Started = Result<Vec<String>, QueryError>;
/// A block of rows, or the error that ends them.
type Block = Result<TextRows, QueryError>;

impl QueryServer for MysqlSource {
    fn engine(&self) -> &'static str {
        "MariaDB"
    }

    fn columns(&self, sql: &str) -> Result<Vec<(String, SqlType)>, QueryError> {
        self.block_on(async {
            let mut conn = self.connect().await?;
            let columns = self.described(&mut conn, sql).await?;
            let _ = conn.disconnect().await;
            Ok(columns
                .into_iter()
                .map(|c| (c.name, c.kind.sql_type()))
                .collect())
        })
    }

    fn split(&self, sql: &str, column: &str, parts: usize) -> Result<Vec<String>, QueryError> {
        let col = crate::catalog::quote(column);
        let bounds = format!(
            "SELECT CAST(MIN({col}) AS SIGNED), CAST(MAX({col}) AS SIGNED) FROM ({sql}) AS q"
        );
        let (min, max) = self.block_on(async {
            let mut lease = self.lease().await?;
            let conn = lease.conn.as_mut().ok_or_else(|| QueryError {
                engine: "MariaDB",
                what: "reading the key's range".into(),
                message: "no session left".into(),
            })?;
            let row: Option<(Option<i64>, Option<i64>)> = conn
                .query_first(bounds.as_str())
                .await
                .map_err(self.error(bounds.as_str()))?;
            Ok(row.unwrap_or((None, None)))
        })?;
        Ok(range_queries(sql, &col, (min, max), parts))
    }

    fn csv(&self, sql: &str) -> Result<Box<dyn Read + Send>, QueryError> {
        Ok(self.rows(sql)?.csv())
    }

    fn reads_rows(&self) -> bool {
        true
    }

    fn rows(&self, sql: &str) -> Result<QueryRows, QueryError> {
        // A few blocks in flight: a slow load holds the server back rather than buffering.
        let (tx, blocks) = std::sync::mpsc::sync_channel(4);
        let (started_tx, started) = std::sync::mpsc::sync_channel(1);
        let source = self.clone();
        let sql = sql.to_string();
        std::thread::Builder::new()
            .name("inrush-query-out".into())
            .spawn(move || {
                let run = source.block_on(async {
                    source.stream(&sql, started_tx.clone(), tx).await;
                    Ok(())
                });
                if let Err(e) = run {
                    let _ = started_tx.send(Err(e));
                }
            })
            .map_err(|e| QueryError {
                engine: "MariaDB",
                what: "starting a thread".into(),
                message: e.to_string(),
            })?;
        // Fail here, with the server's message, when the query does not run.
        match started.recv() {
            Ok(Ok(names)) => Ok(QueryRows {
                names,
                blocks: Box::new(blocks.into_iter()),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(QueryError {
                engine: "MariaDB",
                what: "reading the query".into(),
                message: "the reading thread ended before the query started".into(),
            }),
        }
    }
}

/// Whether `column` comes straight from a MariaDB `JSON` column: MariaDB's `JSON` is a
/// `LONGTEXT` with a `json_valid` check, which the result's metadata does not show.
async fn json_checked(conn: &mut Conn, column: &Column) -> Result<bool, QueryError> {
    let textual = matches!(
        column.column_type(),
        ColumnType::MYSQL_TYPE_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
    ) && column.character_set() != BINARY_CHARSET;
    let (schema, table, name) = (
        column.schema_str(),
        column.org_table_str(),
        column.org_name_str(),
    );
    if !textual || table.is_empty() || name.is_empty() {
        return Ok(false);
    }
    let sql = "SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS \
               WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ? AND CHECK_CLAUSE = ?";
    let clause = format!("json_valid({})", crate::catalog::quote(&name));
    let found: Option<u64> = conn
        .exec_first(sql, (schema.as_ref(), table.as_ref(), clause))
        .await
        .map_err(|e| QueryError {
            engine: "MariaDB",
            what: "reading the query's JSON columns".into(),
            message: e.to_string(),
        })?;
    Ok(found.unwrap_or(0) > 0)
}

/// The `binary` character set: a string column with it holds bytes.
const BINARY_CHARSET: u16 = 63;

/// A result column: its name and how its values are written.
struct Source {
    name: String,
    kind: Kind,
}

/// What a column's values are, for their type and their CSV form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    SmallInt,
    Integer,
    BigInt,
    /// `BIGINT UNSIGNED`: 20 digits.
    Unsigned64,
    Float,
    Double,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Date,
    Datetime,
    Timestamp,
    Time,
    /// `BIT(n)`, n > 1.
    Bits(u32),
    Json,
    /// Strings: `varchar(n)` (`Some(n)` characters), `char(n)` or `text`.
    Varchar(Option<u32>),
    Char(u32),
    Text,
    Bytes,
}

impl Kind {
    fn of(column: &Column, json: bool) -> Kind {
        use ColumnType as T;
        let flags = column.flags();
        let unsigned = flags.contains(ColumnFlags::UNSIGNED_FLAG);
        let length = column.column_length();
        let binary = column.character_set() == BINARY_CHARSET;
        // SET NAMES utf8mb4: a string's length comes in bytes of utf8mb4, 4 per character.
        let chars = (length / 4).max(1);
        match column.column_type() {
            T::MYSQL_TYPE_TINY if length == 1 => Kind::Boolean,
            T::MYSQL_TYPE_TINY | T::MYSQL_TYPE_YEAR => Kind::SmallInt,
            T::MYSQL_TYPE_SHORT if !unsigned => Kind::SmallInt,
            T::MYSQL_TYPE_SHORT | T::MYSQL_TYPE_INT24 => Kind::Integer,
            T::MYSQL_TYPE_LONG if !unsigned => Kind::Integer,
            T::MYSQL_TYPE_LONG => Kind::BigInt,
            T::MYSQL_TYPE_LONGLONG if !unsigned => Kind::BigInt,
            T::MYSQL_TYPE_LONGLONG => Kind::Unsigned64,
            T::MYSQL_TYPE_FLOAT => Kind::Float,
            T::MYSQL_TYPE_DOUBLE => Kind::Double,
            T::MYSQL_TYPE_DECIMAL | T::MYSQL_TYPE_NEWDECIMAL => {
                let scale = u32::from(column.decimals());
                // The length counts the sign and the point besides the digits.
                let precision = length
                    .saturating_sub(u32::from(scale > 0))
                    .saturating_sub(u32::from(!unsigned));
                Kind::Decimal { precision, scale }
            }
            T::MYSQL_TYPE_DATE | T::MYSQL_TYPE_NEWDATE => Kind::Date,
            T::MYSQL_TYPE_DATETIME | T::MYSQL_TYPE_DATETIME2 => Kind::Datetime,
            T::MYSQL_TYPE_TIMESTAMP | T::MYSQL_TYPE_TIMESTAMP2 => Kind::Timestamp,
            T::MYSQL_TYPE_TIME | T::MYSQL_TYPE_TIME2 => Kind::Time,
            T::MYSQL_TYPE_BIT if length <= 1 => Kind::Boolean,
            T::MYSQL_TYPE_BIT => Kind::Bits(length),
            T::MYSQL_TYPE_JSON => Kind::Json,
            _ if json => Kind::Json,
            T::MYSQL_TYPE_ENUM | T::MYSQL_TYPE_SET => Kind::Text,
            _ if flags.intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG) => Kind::Text,
            T::MYSQL_TYPE_GEOMETRY => Kind::Bytes,
            T::MYSQL_TYPE_STRING
            | T::MYSQL_TYPE_VAR_STRING
            | T::MYSQL_TYPE_VARCHAR
            | T::MYSQL_TYPE_TINY_BLOB
            | T::MYSQL_TYPE_BLOB
            | T::MYSQL_TYPE_MEDIUM_BLOB
            | T::MYSQL_TYPE_LONG_BLOB
                if binary =>
            {
                Kind::Bytes
            }
            T::MYSQL_TYPE_STRING => Kind::Char(chars),
            // PostgreSQL's varchar holds at most 10,485,760 characters.
            T::MYSQL_TYPE_VAR_STRING | T::MYSQL_TYPE_VARCHAR if chars <= 10_485_760 => {
                Kind::Varchar(Some(chars))
            }
            T::MYSQL_TYPE_VAR_STRING | T::MYSQL_TYPE_VARCHAR => Kind::Varchar(None),
            _ => Kind::Text,
        }
    }

    /// The type its values read as without loss.
    fn sql_type(self) -> SqlType {
        match self {
            Kind::Boolean => SqlType::Boolean,
            Kind::SmallInt => SqlType::SmallInt,
            Kind::Integer => SqlType::Integer,
            Kind::BigInt => SqlType::BigInt,
            Kind::Unsigned64 => SqlType::Numeric(Some((20, 0))),
            Kind::Float => SqlType::Real,
            Kind::Double => SqlType::Double,
            Kind::Decimal { precision, scale } if precision > 0 => {
                SqlType::Numeric(Some((precision, scale)))
            }
            Kind::Decimal { .. } => SqlType::Numeric(None),
            Kind::Date => SqlType::Date,
            Kind::Datetime => SqlType::Timestamp(None),
            Kind::Timestamp => SqlType::TimestampTz(None),
            Kind::Time => SqlType::Time(None),
            Kind::Bits(n) => SqlType::Bit(n),
            Kind::Json => SqlType::Json,
            Kind::Varchar(n) => SqlType::Varchar(n),
            Kind::Char(n) => SqlType::Char(n),
            Kind::Text => SqlType::Text,
            Kind::Bytes => SqlType::Bytes,
        }
    }

    /// Appends `value`'s text form to `out`; false when it is NULL instead (a zero date under
    /// `--zero-dates-null`).
    fn text(self, value: &[u8], zero_dates_null: bool, out: &mut Vec<u8>) -> bool {
        match self {
            Kind::Bytes => {
                out.extend_from_slice(b"\\x");
                for byte in value {
                    out.extend_from_slice(&HEX[usize::from(*byte)]);
                }
            }
            Kind::Bits(n) => {
                // Big-endian bytes, the first holding the high bits of the value.
                let total = value.len() as u32 * 8;
                for bit in total.saturating_sub(n)..total {
                    let byte = value[(bit / 8) as usize];
                    out.push(if byte & (0x80 >> (bit % 8)) != 0 {
                        b'1'
                    } else {
                        b'0'
                    });
                }
            }
            // BIT(1) comes as one byte, TINYINT(1) as its digits.
            Kind::Boolean if value.len() == 1 && value[0] < b'0' => {
                out.push(b'0' + value[0].min(1));
            }
            Kind::Date | Kind::Datetime | Kind::Timestamp
                if zero_dates_null && zero_date(value) =>
            {
                return false
            }
            Kind::Timestamp if !zero_date(value) => {
                out.extend_from_slice(value);
                out.extend_from_slice(b"+00");
            }
            _ => out.extend_from_slice(value),
        }
        true
    }
}

/// A MySQL date with a zero year, month or day (`0000-00-00`, `2024-05-00`).
fn zero_date(value: &[u8]) -> bool {
    let part = |range: std::ops::Range<usize>| {
        value
            .get(range)
            .is_some_and(|p| p.iter().all(|&b| b == b'0'))
    };
    part(0..4) || part(5..7) || part(8..10)
}

static HEX: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [digits[i >> 4], digits[i & 15]];
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The value's text, `-` for NULL.
    fn field(kind: Kind, value: &[u8], zero_dates_null: bool) -> String {
        let mut out = Vec::new();
        match kind.text(value, zero_dates_null, &mut out) {
            true => String::from_utf8(out).unwrap(),
            false => "-".into(),
        }
    }

    #[test]
    fn values_take_the_form_postgresql_reads() {
        assert_eq!(field(Kind::Text, b"", false), "");
        assert_eq!(field(Kind::Text, b"a,\"b\"\nc", false), "a,\"b\"\nc");
        assert_eq!(field(Kind::Text, b"plain", false), "plain");
        assert_eq!(field(Kind::Bytes, &[0, 0xab, 0x10], false), "\\x00ab10");
        assert_eq!(field(Kind::Bytes, b"", false), "\\x");
        assert_eq!(
            field(Kind::Bits(10), &[0b10, 0b0000_0101], false),
            "1000000101"
        );
        assert_eq!(field(Kind::Bits(3), &[0b101], false), "101");
        assert_eq!(field(Kind::Boolean, &[1], false), "1");
        assert_eq!(field(Kind::Boolean, &[0], false), "0");
        assert_eq!(field(Kind::Boolean, b"1", false), "1");
        assert_eq!(
            field(Kind::Timestamp, b"2024-01-02 03:04:05", false),
            "2024-01-02 03:04:05+00"
        );
    }

    #[test]
    fn zero_dates_are_kept_for_the_target_to_refuse_or_made_null() {
        for zero in [
            &b"0000-00-00"[..],
            b"2024-00-10",
            b"2024-05-00 10:00:00",
            b"0000-00-00 00:00:00",
        ] {
            assert!(zero_date(zero), "{zero:?}");
            assert_eq!(field(Kind::Datetime, zero, true), "-");
            assert_eq!(
                field(Kind::Datetime, zero, false),
                String::from_utf8(zero.to_vec()).unwrap()
            );
        }
        assert_eq!(
            field(Kind::Timestamp, b"0000-00-00 00:00:00", false),
            "0000-00-00 00:00:00"
        );
        assert!(!zero_date(b"2024-05-01"));
    }
}

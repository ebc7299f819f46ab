//! Reading a query's rows from a source server as a byte stream (`COPY (query) TO STDOUT`),
//! the "load from cursor" path. When every column has the very type of its target column the
//! stream is COPY BINARY and its tuples go to the target as they are; otherwise it is CSV with
//! a header, which goes through the same parse, check and encode as a file, so every value is
//! read by the target's own rules. [`ConnectOptions`] is PostgreSQL's [`QueryServer`].

use crate::{query_error, quote_ident, ConnectOptions, Result};
use futures_util::StreamExt;
use inrush_core::query::{range_queries, ChunkReader, QueryError, QueryServer};
use inrush_core::SqlType;
use std::io::{self, Read};

impl QueryServer for ConnectOptions {
    fn engine(&self) -> &'static str {
        "PostgreSQL"
    }

    fn columns(&self, sql: &str) -> Result<Vec<(String, SqlType)>, QueryError> {
        column_types(self, sql).map_err(source_error)
    }

    fn split(&self, sql: &str, column: &str, parts: usize) -> Result<Vec<String>, QueryError> {
        split_by(self, None, sql, column, parts).map_err(source_error)
    }

    fn csv(&self, sql: &str) -> Result<Box<dyn Read + Send>, QueryError> {
        reader(self, None, sql, false).map_err(source_error)
    }

    fn speaks_copy_binary(&self) -> bool {
        true
    }

    fn copy_binary(
        &self,
        sql: &str,
        columns: &[String],
    ) -> Result<Box<dyn Read + Send>, QueryError> {
        reader(self, None, &select_columns(sql, columns), true).map_err(source_error)
    }
}

/// `columns` of `sql`'s rows, in that order.
pub(crate) fn select_columns(sql: &str, columns: &[String]) -> String {
    let names: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    format!("SELECT {} FROM ({sql}) AS q", names.join(", "))
}

/// A connection to `from`; with `snapshot`, inside a read-only transaction that reads the
/// database as that exported snapshot does (see `database::source`).
fn open(from: &ConnectOptions, snapshot: Option<&str>) -> Result<postgres::Client> {
    let mut client = from.connect_blocking()?;
    if let Some(id) = snapshot {
        let sql = in_snapshot(id);
        client
            .batch_execute(&sql)
            .map_err(query_error(sql.as_str()))?;
    }
    Ok(client)
}

/// The statements that open a read-only transaction seeing exported snapshot `id`.
fn in_snapshot(id: &str) -> String {
    format!(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{}'",
        id.replace('\'', "''")
    )
}

/// The error's own message says what was done (`cannot connect to ...`, the statement).
fn source_error(e: crate::Error) -> QueryError {
    QueryError {
        engine: "PostgreSQL",
        what: String::new(),
        message: e.to_string(),
    }
}

/// The comment that opens every statement this process runs for a source query, so that a
/// load into the same server finds its query's session in `pg_stat_activity` (see
/// `load::watch`): one that waits on a lock the load holds (the target under `--truncate`)
/// would wait forever, since the load commits only after the query's last row.
pub(crate) fn query_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        // The process id and the clock: unique among the loads that can meet on a server.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("/* inrush source {}.{nanos} */", std::process::id())
    })
}

/// The statement that streams `query`'s rows: COPY BINARY, or CSV with a header line.
fn copy_out_statement(query: &str, binary: bool) -> String {
    match binary {
        true => format!("COPY ({query}) TO STDOUT (FORMAT binary)"),
        false => format!("COPY ({query}) TO STDOUT (FORMAT csv, HEADER true)"),
    }
}

/// Runs `COPY (query) TO STDOUT` on its own connection and thread; the returned reader yields
/// the bytes as they arrive. A failure after the start (the query errs midway, the connection
/// drops) comes out of `read` as an error naming the query.
pub(crate) fn reader(
    from: &ConnectOptions,
    snapshot: Option<&str>,
    query: &str,
    binary: bool,
) -> Result<Box<dyn Read + Send>> {
    // The server sends one message per row. The blocking driver enters its runtime for each
    // (a third of the client's CPU on a 6M-row table): this thread drives the whole stream in
    // one `block_on` instead, and hands on 256 KB at a time.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| crate::Error::Config(format!("starting a runtime: {e}")))?;
    let statement = copy_out_statement(query, binary);
    // Fail here, with the server's message, when the query does not parse or plan.
    let probe = match snapshot {
        None => format!(
            "{} BEGIN READ ONLY; DECLARE inrush_probe CURSOR FOR {query}; ROLLBACK",
            query_tag()
        ),
        Some(_) => format!(
            "{} DECLARE inrush_probe CURSOR FOR {query}; CLOSE inrush_probe",
            query_tag()
        ),
    };
    let client = runtime.block_on(async {
        let client = from.connect().await?;
        if let Some(id) = snapshot {
            let sql = in_snapshot(id);
            client
                .batch_execute(&sql)
                .await
                .map_err(query_error(sql.as_str()))?;
        }
        client
            .batch_execute(&probe)
            .await
            .map_err(query_error(statement.as_str()))?;
        Ok::<_, crate::Error>(client)
    })?;
    let (tx, rx) = ChunkReader::channel(8);
    std::thread::Builder::new()
        .name("inrush-query-out".into())
        .spawn(move || {
            runtime.block_on(async move {
                // Sent with the tag, named without it in messages.
                let tagged = format!("{} {statement}", query_tag());
                let failed = |e| io::Error::other(query_error(statement.as_str())(e));
                let rows = match client.copy_out(tagged.as_str()).await {
                    Ok(rows) => rows,
                    Err(e) => {
                        let _ = tx.send(Err(failed(e)));
                        return;
                    }
                };
                futures_util::pin_mut!(rows);
                const CHUNK: usize = 256 * 1024;
                let mut chunk = Vec::with_capacity(CHUNK);
                loop {
                    let (last, error) = match rows.next().await {
                        Some(Ok(row)) => {
                            chunk.extend_from_slice(&row);
                            if chunk.len() < CHUNK {
                                continue;
                            }
                            (false, None)
                        }
                        Some(Err(e)) => (true, Some(failed(e))),
                        None => (true, None),
                    };
                    // A blocking send: the connection waits with this thread, which is the
                    // back-pressure wanted when the load reads slower than the server sends.
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                    if !full.is_empty() && tx.send(Ok(full)).is_err() {
                        return; // the load stopped reading
                    }
                    if let Some(e) = error {
                        let _ = tx.send(Err(e));
                    }
                    if last {
                        return;
                    }
                }
            })
        })
        .map_err(|e| crate::Error::Config(format!("starting a thread: {e}")))?;
    Ok(Box::new(rx))
}

/// `query` cut into `parts` queries over ranges of the integer column `column` (its minimum
/// to its maximum, rows with NULL in the first part), for parallel streams.
pub(crate) fn split_by(
    from: &ConnectOptions,
    snapshot: Option<&str>,
    query: &str,
    column: &str,
    parts: usize,
) -> Result<Vec<String>> {
    let col = quote_ident(column);
    let sql = format!("SELECT min({col})::bigint, max({col})::bigint FROM ({query}) AS q");
    let mut client = open(from, snapshot)?;
    let row = client
        .query_one(&sql, &[])
        .map_err(query_error(sql.as_str()))?;
    let bounds: (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
    Ok(range_queries(query, &col, bounds, parts))
}

/// The names and types (read from `format_type`'s names, typmods included) of `query`'s
/// result columns on the source server, for `--create`. Read from a temporary view in a
/// transaction that is rolled back, so nothing is left on the source.
fn column_types(from: &ConnectOptions, query: &str) -> Result<Vec<(String, SqlType)>> {
    let mut client = from.connect_blocking()?;
    let mut tx = client.transaction().map_err(query_error("BEGIN"))?;
    let view = format!("CREATE TEMPORARY VIEW inrush_query_columns AS {query}");
    tx.batch_execute(&view)
        .map_err(query_error(view.as_str()))?;
    let sql = "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
               WHERE attrelid = 'inrush_query_columns'::regclass AND attnum > 0 ORDER BY attnum";
    let rows = tx.query(sql, &[]).map_err(query_error(sql))?;
    let named = |r: &postgres::Row| (r.get(0), crate::sql_type::parse(r.get(1)));
    Ok(rows.iter().map(named).collect())
}

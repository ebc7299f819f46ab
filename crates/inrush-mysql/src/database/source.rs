//! A MariaDB/MySQL database as `inrush copy` reads it: the tables of the URL's database from
//! `information_schema`, and a consistent image for every reading session, taken as mydumper
//! takes it: under a brief global read lock (`FLUSH TABLES WITH READ LOCK`), each session opens
//! `START TRANSACTION WITH CONSISTENT SNAPSHOT`, then the lock goes. Every InnoDB read after
//! that sees the database as it was under the lock, whatever it takes meanwhile.
//!
//! The lock needs the `RELOAD` privilege. Without it the sessions open their snapshots one
//! after the other, unlocked (the weaker mode, said in the report): each table is read at one
//! instant, but rows written while the sessions open may be seen by some and not by others.

use crate::catalog::{quote, Column as CatalogColumn};
use crate::options::MysqlOptions;
use crate::source::{MysqlSource, Sessions};
use inrush_core::database::{
    select_item, Action, Check, Column, Database, Default, Expression, ForeignKey, Identity, Index,
    IndexPart, Key, Object, SchemaSource, Snapshot, Table,
};
use inrush_core::query::QueryError;
use inrush_core::SqlType;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};
use std::collections::HashMap;
use std::sync::Arc;

const ENGINE: &str = "MariaDB";

/// Tables a copy never reads: inrush's own ledgers and journals.
const OWN: &str = "inrush\\_%";

/// A MariaDB/MySQL database a copy reads.
pub struct MysqlSchemaSource {
    options: MysqlOptions,
    source: MysqlSource,
}

impl MysqlSchemaSource {
    /// `zero_dates_null` as `--zero-dates-null` (zero dates become NULL, not bad rows).
    pub fn new(options: MysqlOptions, zero_dates_null: bool) -> MysqlSchemaSource {
        let source = MysqlSource::new(options.clone(), zero_dates_null);
        MysqlSchemaSource { options, source }
    }
}

fn error(what: &str) -> impl FnOnce(mysql_async::Error) -> QueryError + '_ {
    move |cause| QueryError {
        engine: ENGINE,
        what: what.to_string(),
        message: cause.to_string(),
    }
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, QueryError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("inrush-mariadb-source")
        .enable_all()
        .build()
        .map_err(|e| QueryError {
            engine: ENGINE,
            what: "starting a runtime".into(),
            message: e.to_string(),
        })
}

async fn connect(options: &MysqlOptions) -> Result<Conn, QueryError> {
    options.connect().await.map_err(|e| QueryError {
        engine: ENGINE,
        what: format!("connecting to {}", options.describe()),
        message: e.to_string(),
    })
}

impl SchemaSource for MysqlSchemaSource {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn describe(&self) -> String {
        format!("MariaDB {}", self.options.describe())
    }

    fn schema(&self) -> Result<Database, QueryError> {
        runtime(1)?.block_on(async {
            let mut conn = connect(&self.options).await?;
            let database = read(&mut conn).await;
            let _ = conn.disconnect().await;
            database
        })
    }

    fn snapshot(&self, readers: usize) -> Result<Snapshot, QueryError> {
        let runtime = runtime(2)?;
        let (idle, locked) = runtime.block_on(async {
            let mut lock = connect(&self.options).await?;
            // A lock that waits long on a running query would stall the server's writers.
            let _ = lock.query_drop("SET SESSION lock_wait_timeout = 60").await;
            let locked = match lock.query_drop("FLUSH TABLES WITH READ LOCK").await {
                Ok(()) => true,
                // 1227: access denied (no RELOAD): the weaker mode.
                Err(mysql_async::Error::Server(e)) if e.code == 1227 => false,
                Err(e) => return Err(error("FLUSH TABLES WITH READ LOCK")(e)),
            };
            let mut idle = Vec::new();
            for _ in 0..readers.max(1) {
                let mut conn = connect(&self.options).await?;
                let open = "SET time_zone = '+00:00'; \
                            SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; \
                            START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";
                conn.query_drop(open).await.map_err(error(open))?;
                idle.push(conn);
            }
            if locked {
                lock.query_drop("UNLOCK TABLES")
                    .await
                    .map_err(error("UNLOCK TABLES"))?;
            }
            let _ = lock.disconnect().await;
            Ok::<_, QueryError>((idle, locked))
        })?;
        let how = match locked {
            true => format!(
                "{} sessions opened WITH CONSISTENT SNAPSHOT under FLUSH TABLES WITH READ LOCK",
                idle.len()
            ),
            false => format!(
                "{} sessions opened WITH CONSISTENT SNAPSHOT one after another (no RELOAD privilege for FLUSH TABLES WITH READ LOCK): rows written while they opened may be in some tables' copies and not others'",
                idle.len()
            ),
        };
        let sessions = Sessions {
            runtime,
            free: tokio::sync::Semaphore::new(idle.len()),
            idle: std::sync::Mutex::new(idle),
        };
        Ok(Snapshot {
            server: Arc::new(self.source.on(sessions)),
            how,
        })
    }

    fn select(&self, table: &Table, columns: &[(String, String)], into: &str) -> String {
        // A TIMESTAMP reads in the session's UTC; as DATETIME it comes without its zone.
        let columns: Vec<String> = columns
            .iter()
            .map(|(c, name)| {
                let zoned = table
                    .columns
                    .iter()
                    .any(|t| &t.name == c && matches!(t.sql_type, SqlType::TimestampTz(_)));
                let utc = zoned && into != "PostgreSQL";
                let read = utc.then(|| format!("CAST({} AS DATETIME(6))", quote(c)));
                select_item(c, name, read, quote)
            })
            .collect();
        format!("SELECT {} FROM {}", columns.join(", "), quote(&table.name))
    }
}

fn text(row: &Row, i: usize) -> String {
    row.get_opt::<Option<String>, _>(i)
        .and_then(Result::ok)
        .flatten()
        .unwrap_or_default()
}

fn number(row: &Row, i: usize) -> Option<u64> {
    row.get_opt::<Option<u64>, _>(i)
        .and_then(Result::ok)
        .flatten()
}

async fn rows(conn: &mut Conn, sql: &str) -> Result<Vec<Row>, QueryError> {
    conn.query(sql).await.map_err(error(sql))
}

async fn read(conn: &mut Conn) -> Result<Database, QueryError> {
    let mut tables = Vec::new();
    let mut not_copied = Vec::new();
    let sql = format!(
        "SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT, TABLE_ROWS, DATA_LENGTH + INDEX_LENGTH \
         FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
         AND TABLE_NAME NOT LIKE '{OWN}' ORDER BY TABLE_NAME"
    );
    for row in rows(conn, &sql).await? {
        let name = text(&row, 0);
        if text(&row, 1) == "VIEW" {
            not_copied.push(Object { kind: "view", name });
            continue;
        }
        let comment = text(&row, 2);
        tables.push(Table {
            schema: None,
            name,
            columns: Vec::new(),
            primary_key: None,
            uniques: Vec::new(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comment: (!comment.is_empty()).then_some(comment),
            rows_estimate: number(&row, 3).unwrap_or(0),
            bytes: number(&row, 4).unwrap_or(0),
        });
    }
    let at: HashMap<String, usize> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    // MariaDB's JSON is LONGTEXT with a json_valid() check: the check makes it JSON.
    let mut json = Vec::new();
    let sql = "SELECT TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS \
               WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY TABLE_NAME, CONSTRAINT_NAME";
    for row in rows(conn, sql).await? {
        let Some(&i) = at.get(&text(&row, 0)) else {
            continue;
        };
        let (name, clause) = (text(&row, 1), text(&row, 2));
        if let Some(column) = clause
            .strip_prefix("json_valid(`")
            .and_then(|c| c.strip_suffix("`)"))
        {
            json.push((i, column.replace("``", "`")));
            continue;
        }
        tables[i].checks.push(Check {
            name,
            clause: mariadb(clause),
        });
    }
    let sql =
        "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, \
                      EXTRA, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, \
                      COLUMN_COMMENT, GENERATION_EXPRESSION, DATETIME_PRECISION \
               FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
               ORDER BY TABLE_NAME, ORDINAL_POSITION";
    for row in rows(conn, sql).await? {
        let Some(&i) = at.get(&text(&row, 0)) else {
            continue;
        };
        let name = text(&row, 1);
        let catalog = CatalogColumn {
            name: name.clone(),
            data_type: text(&row, 2).to_ascii_lowercase(),
            column_type: text(&row, 3),
            not_null: text(&row, 4) == "NO",
            max_length: number(&row, 7),
            precision: number(&row, 8),
            scale: number(&row, 9),
            auto_increment: text(&row, 6).contains("auto_increment"),
        };
        let fraction = number(&row, 12).and_then(|n| u32::try_from(n).ok());
        let sql_type = match catalog.sql_type() {
            _ if json.contains(&(i, name.clone())) => SqlType::Json,
            SqlType::Timestamp(_) => SqlType::Timestamp(fraction),
            SqlType::TimestampTz(_) => SqlType::TimestampTz(fraction),
            SqlType::Time(_) => SqlType::Time(fraction),
            sql_type => sql_type,
        };
        let extra = text(&row, 6).to_ascii_lowercase();
        let generated = text(&row, 11);
        let comment = text(&row, 10);
        let default = row
            .get_opt::<Option<String>, _>(5)
            .and_then(Result::ok)
            .flatten();
        tables[i].columns.push(Column {
            name,
            sql_type,
            not_null: catalog.not_null,
            default: default.as_deref().and_then(read_default),
            default_sql: default.map(mariadb),
            identity: catalog.auto_increment.then_some(Identity::ByDefault),
            generated: (extra.contains("generated") && !generated.is_empty())
                .then(|| mariadb(generated)),
            comment: (!comment.is_empty()).then_some(comment),
        });
    }
    keys(conn, &mut tables, &at).await?;
    foreign_keys(conn, &mut tables, &at).await?;
    let sql = "SELECT 'trigger', TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() \
               UNION ALL SELECT LOWER(ROUTINE_TYPE), ROUTINE_NAME FROM information_schema.ROUTINES \
               WHERE ROUTINE_SCHEMA = DATABASE() \
               UNION ALL SELECT 'event', EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE()";
    for row in rows(conn, sql).await? {
        let kind = match text(&row, 0).as_str() {
            "trigger" => "trigger",
            "procedure" => "procedure",
            "event" => "event",
            _ => "function",
        };
        not_copied.push(Object {
            kind,
            name: text(&row, 1),
        });
    }
    Ok(Database {
        engine: ENGINE,
        tables,
        types: Vec::new(),
        not_copied,
    })
}

fn mariadb(sql: String) -> Expression {
    Expression {
        engine: ENGINE,
        sql,
    }
}

/// `COLUMN_DEFAULT` as MariaDB 10.2.7+ writes it (a SQL expression: `'text'`, `0`, `NULL`,
/// `current_timestamp()`), or MySQL its bare value; `None` for no default or NULL.
fn read_default(text: &str) -> Option<Default> {
    let lower = text.to_ascii_lowercase();
    if lower == "null" {
        return None;
    }
    if lower.starts_with("current_timestamp") || lower.starts_with("now(") {
        return Some(Default::CurrentTimestamp);
    }
    if lower == "curdate()" || lower == "current_date" || lower == "current_date()" {
        return Some(Default::CurrentDate);
    }
    if let Some(quoted) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Some(Default::Literal(unescape(quoted)));
    }
    let numeric = |t: &str| {
        let t = t.strip_prefix('-').unwrap_or(t);
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_digit() || b == b'.' || b == b'e')
    };
    if numeric(text) {
        return Some(Default::Literal(text.into()));
    }
    // MySQL's bare text, or an expression (MariaDB writes its expressions with parentheses
    // or function calls).
    match text.contains('(') {
        true => Some(Default::Expression(mariadb(text.into()))),
        false => Some(Default::Literal(text.into())),
    }
}

/// A MariaDB string constant's inside: `''` and backslash escapes.
fn unescape(quoted: &str) -> String {
    let mut out = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                chars.next(); // the second quote of ''
                out.push('\'');
            }
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

async fn keys(
    conn: &mut Conn,
    tables: &mut [Table],
    at: &HashMap<String, usize>,
) -> Result<(), QueryError> {
    let sql =
        "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART, INDEX_TYPE, COLLATION \
               FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
               ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX";
    let mut indexes: Vec<(usize, Index)> = Vec::new();
    for row in rows(conn, sql).await? {
        let Some(&i) = at.get(&text(&row, 0)) else {
            continue;
        };
        let name = text(&row, 1);
        let method = text(&row, 5).to_ascii_uppercase();
        let part = IndexPart::Column {
            name: text(&row, 3),
            descending: text(&row, 6) == "D",
            prefix: number(&row, 4).and_then(|n| u32::try_from(n).ok()),
        };
        match indexes.last_mut() {
            Some((t, index)) if *t == i && index.name == name => index.parts.push(part),
            _ => indexes.push((
                i,
                Index {
                    name,
                    unique: number(&row, 2) == Some(0),
                    parts: vec![part],
                    method: (!matches!(method.as_str(), "BTREE" | "HASH" | "")).then_some(method),
                    predicate: None,
                    definition: None,
                },
            )),
        }
    }
    for (i, index) in indexes {
        let columns: Option<Vec<String>> = index
            .parts
            .iter()
            .map(|p| match p {
                IndexPart::Column {
                    name,
                    prefix: None,
                    descending: false,
                } => Some(name.clone()),
                _ => None,
            })
            .collect();
        // A key is a unique index on whole columns; a unique prefix index stays an index.
        match (index.unique, columns, index.name == "PRIMARY") {
            (true, Some(columns), true) => {
                tables[i].primary_key = Some(Key {
                    name: index.name,
                    columns,
                })
            }
            (true, Some(columns), false) => tables[i].uniques.push(Key {
                name: index.name,
                columns,
            }),
            _ => tables[i].indexes.push(index),
        }
    }
    Ok(())
}

async fn foreign_keys(
    conn: &mut Conn,
    tables: &mut [Table],
    at: &HashMap<String, usize>,
) -> Result<(), QueryError> {
    let sql = "SELECT k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, \
                      k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, r.DELETE_RULE, r.UPDATE_RULE \
               FROM information_schema.KEY_COLUMN_USAGE k \
               JOIN information_schema.REFERENTIAL_CONSTRAINTS r \
                 ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME \
                AND r.TABLE_NAME = k.TABLE_NAME \
               WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL \
               ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION";
    for row in rows(conn, sql).await? {
        let Some(&i) = at.get(&text(&row, 0)) else {
            continue;
        };
        let name = text(&row, 1);
        let keys = &mut tables[i].foreign_keys;
        if let Some(key) = keys.last_mut().filter(|k| k.name == name) {
            key.columns.push(text(&row, 2));
            key.parent_columns.push(text(&row, 5));
            continue;
        }
        keys.push(ForeignKey {
            name,
            columns: vec![text(&row, 2)],
            parent_schema: Some(text(&row, 3)),
            parent: text(&row, 4),
            parent_columns: vec![text(&row, 5)],
            on_delete: Action::parse(&text(&row, 6)),
            on_update: Action::parse(&text(&row, 7)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_read_as_mariadb_and_mysql_write_them() {
        let lit = |s: &str| Some(Default::Literal(s.into()));
        assert_eq!(read_default("NULL"), None);
        assert_eq!(read_default("'it''s'"), lit("it's"));
        assert_eq!(read_default("'a\\\\b'"), lit("a\\b"));
        assert_eq!(read_default("0"), lit("0"));
        assert_eq!(read_default("-1.5"), lit("-1.5"));
        assert_eq!(read_default("pending"), lit("pending"));
        assert_eq!(
            read_default("current_timestamp()"),
            Some(Default::CurrentTimestamp)
        );
        assert_eq!(
            read_default("CURRENT_TIMESTAMP(6)"),
            Some(Default::CurrentTimestamp)
        );
        assert_eq!(read_default("curdate()"), Some(Default::CurrentDate));
        assert_eq!(
            read_default("uuid()"),
            Some(Default::Expression(mariadb("uuid()".into())))
        );
    }
}

//! What `inrush lab` says to MariaDB: the SQL of its experiments (tables, constraints, triggers,
//! indexes, sequences, prefilled tables) and a lab connection that loads the seeded rows the
//! ways the seeds' programs did (a literal INSERT per row, prepared single-row or multi-row
//! INSERTs with a commit interval, `LOAD DATA LOCAL INFILE` from memory), reads the redo log's
//! position, and changes and restores server settings.
//!
//! The lab (`inrush-lab`) decides what runs and times it; everything here is one statement or
//! loop as MariaDB spells it. SQL with `{t}` (the run's table) and `{s}` (the run's database)
//! is a template the lab fills in, as for its PostgreSQL plans.

use crate::catalog::quote;
use crate::options::MysqlOptions;
use bytes::Bytes;
use futures_util::StreamExt;
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Value};
use std::sync::Arc;

/// The lab's columns, in the order every method sends them.
pub const COLUMNS: &str = "fieldint1, fieldint2, fieldint3, fieldchar1, fieldchar2, fieldchar3";

/// A row of the SqlBulkCopy table as the lab generates it.
pub trait LabRow {
    fn ints(&self) -> [i32; 3];
    fn texts(&self) -> [&str; 3];
}

/// Receives the rows sent so far, for the insert-rate samples.
pub type Tick = Arc<dyn Fn(u64) + Send + Sync>;

/// The SqlBulkCopy table (InnoDB, no primary key: InnoDB clusters it on a hidden row id), with
/// `extra` column or key definitions appended.
pub fn table(extra: &str) -> String {
    table_with("varchar(100)", extra)
}

/// The table with `fieldchar3` of type `char3` (B7: `varchar(10)` or `text`).
pub fn table_with(char3: &str, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { ", " };
    format!(
        "CREATE TABLE {{t}} (fieldint1 int NOT NULL, fieldint2 int NOT NULL, fieldint3 int NOT NULL, \
         fieldchar1 varchar(100) NOT NULL, fieldchar2 varchar(100) NOT NULL, fieldchar3 {char3} NOT NULL{sep}{extra}) \
         ENGINE=InnoDB"
    )
}

/// The `n`th CHECK constraint of B1 (1 or 2).
pub fn check(n: u32) -> String {
    match n {
        1 => "ALTER TABLE {t} ADD CONSTRAINT c1 CHECK (CHAR_LENGTH(fieldchar1) <= 100)".into(),
        _ => "ALTER TABLE {t} ADD CONSTRAINT c2 CHECK (fieldint2 >= -2147483648)".into(),
    }
}

/// B2's parent table: keys 0..999 (from the Sequence engine's `seq_0_to_999`).
pub fn parent_table() -> [String; 2] {
    [
        "CREATE TABLE {s}.p (k int PRIMARY KEY) ENGINE=InnoDB".into(),
        "INSERT INTO {s}.p SELECT seq FROM seq_0_to_999".into(),
    ]
}

/// Foreign key `fk{n}` from `column` to the parent's key.
pub fn foreign_key(n: u32, column: &str) -> String {
    format!(
        "ALTER TABLE {{t}} ADD CONSTRAINT fk{n} FOREIGN KEY ({}) REFERENCES {{s}}.p (k)",
        quote(column)
    )
}

/// The check `foreign_key_checks = 0` skipped, made once after the load as inrush makes it:
/// the loaded rows whose `column` names no parent row (an anti-join through the parent's key).
pub fn orphans(column: &str) -> String {
    format!(
        "SELECT c.{col} FROM {{t}} c LEFT JOIN {{s}}.p p ON p.k = c.{col} WHERE p.k IS NULL LIMIT 5",
        col = quote(column)
    )
}

/// The tables B3's triggers write to: a copy of the table, and 1000 counters.
pub fn trigger_tables() -> [String; 3] {
    [
        "CREATE TABLE {s}.audit LIKE {t}".into(),
        "CREATE TABLE {s}.counter (k int PRIMARY KEY, n bigint NOT NULL) ENGINE=InnoDB".into(),
        "INSERT INTO {s}.counter SELECT seq, 0 FROM seq_0_to_999".into(),
    ]
}

/// Trigger `tr{n}`: AFTER INSERT FOR EACH ROW, copying the row (`insert`) or bumping one of the
/// 1000 counters by key.
pub fn trigger(insert: bool, n: u32) -> String {
    let body = match insert {
        true => format!("INSERT INTO {{s}}.audit ({COLUMNS}) VALUES (NEW.fieldint1, NEW.fieldint2, NEW.fieldint3, NEW.fieldchar1, NEW.fieldchar2, NEW.fieldchar3)"),
        false => "UPDATE {s}.counter SET n = n + 1 WHERE k = ABS(NEW.fieldint1 % 1000)".into(),
    };
    format!("CREATE TRIGGER {{s}}.tr{n} AFTER INSERT ON {{t}} FOR EACH ROW {body}")
}

/// `CREATE INDEX i{n} ON {t} (columns)`.
pub fn index(n: usize, columns: &[&str]) -> String {
    format!("CREATE INDEX i{n} ON {{t}} ({})", column_list(columns))
}

/// One `ALTER TABLE` adding every index at once (InnoDB builds them in one pass over the table).
pub fn add_indexes(indexes: &[&[&str]]) -> String {
    let adds: Vec<String> = indexes
        .iter()
        .enumerate()
        .map(|(n, cols)| format!("ADD INDEX i{n} ({})", column_list(cols)))
        .collect();
    format!("ALTER TABLE {{t}} {}", adds.join(", "))
}

fn column_list(columns: &[&str]) -> String {
    columns
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn primary_key(column: &str) -> String {
    format!("ALTER TABLE {{t}} ADD PRIMARY KEY ({})", quote(column))
}

/// B6: a sequence with `cache` values cached, and the column that draws from it.
pub fn sequence(cache: u32) -> (String, String) {
    (
        format!("CREATE SEQUENCE {{s}}.seq CACHE {cache}"),
        "id bigint NOT NULL DEFAULT NEXTVAL({s}.seq)".into(),
    )
}

/// B6: an AUTO_INCREMENT column (InnoDB's counter; its lock mode is a start-up setting).
pub const AUTO_INCREMENT_COLUMN: &str = "id bigint NOT NULL AUTO_INCREMENT, KEY (id)";

/// B9: as many rows as the load (`{n}`) written and every other one deleted, so the load goes
/// into pages with free space.
pub fn half_deleted() -> [String; 2] {
    [
        "INSERT INTO {t} (fieldint1, fieldint2, fieldint3, fieldchar1, fieldchar2, fieldchar3) \
         SELECT seq, seq, seq, MD5(seq), MD5(seq), MD5(seq) FROM seq_1_to_{n}"
            .into(),
        "DELETE FROM {t} WHERE fieldint1 % 2 = 0".into(),
    ]
}

/// The settings the lab records (those that matter for inserts).
const SETTINGS: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_autoinc_lock_mode",
    "innodb_log_file_size",
    "innodb_log_buffer_size",
    "innodb_doublewrite",
    "innodb_flush_method",
    "innodb_default_row_format",
    "innodb_change_buffering",
    "innodb_io_capacity",
    "innodb_adaptive_hash_index",
    "log_bin",
    "sync_binlog",
    "binlog_format",
    "local_infile",
    "sql_mode",
    "character_set_server",
];

/// What the server is and lets this user do.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// `VERSION()` and `@@version_comment`.
    pub version: String,
    /// e.g. 101106 for 10.11.6.
    pub version_num: u32,
    pub settings: Vec<(String, String)>,
    /// The user may SET GLOBAL (SUPER).
    pub set_global: bool,
}

/// A setting changed with SET GLOBAL, and its value before.
#[derive(Debug, Clone)]
pub struct SavedSetting {
    pub name: String,
    pub previous: String,
}

/// One connection of the lab.
pub struct LabConn {
    conn: Conn,
}

fn fail(what: impl Into<String>) -> impl FnOnce(mysql_async::Error) -> Error {
    crate::engine_error(what)
}

/// A setting's name as SQL reads it (letters, digits and `_` only).
fn setting_name(name: &str) -> Result<&str> {
    match !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        true => Ok(name),
        false => Err(Error::Usage(format!("not a server setting: {name:?}"))),
    }
}

/// A setting's value: as is when it is a word or number (`OFF`, `2`), else a string literal.
fn setting_value(value: &str) -> String {
    match !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        true => value.to_string(),
        false => format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''")),
    }
}

/// `1,2,3\tabc...`: the row as a `LOAD DATA` line (tab-separated, backslash escapes).
pub fn load_line(row: &dyn LabRow, out: &mut Vec<u8>) {
    use std::io::Write;
    let [a, b, c] = row.ints();
    let _ = write!(out, "{a}\t{b}\t{c}");
    for s in row.texts() {
        out.push(b'\t');
        for &byte in s.as_bytes() {
            match byte {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                0 => out.extend_from_slice(b"\\0"),
                _ => out.push(byte),
            }
        }
    }
    out.push(b'\n');
}

/// `(1,2,3,'a','b','c')`: the row as literal values.
fn literal(row: &dyn LabRow) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"));
    let [a, b, c] = row.ints();
    let [x, y, z] = row.texts();
    format!("({a},{b},{c},{},{},{})", q(x), q(y), q(z))
}

fn params<R: LabRow>(rows: &[R]) -> Vec<Value> {
    rows.iter()
        .flat_map(|r| {
            let [a, b, c] = r.ints();
            let [x, y, z] = r.texts();
            [
                Value::from(a),
                Value::from(b),
                Value::from(c),
                Value::from(x),
                Value::from(y),
                Value::from(z),
            ]
        })
        .collect()
}

fn insert_sql(table: &str, rows: usize) -> String {
    let tuple = "(?,?,?,?,?,?)";
    format!(
        "INSERT INTO {table} ({COLUMNS}) VALUES {}",
        vec![tuple; rows].join(",")
    )
}

/// How a loop of INSERTs commits: autocommit, or every `every` rows, optionally under
/// `LOCK TABLES ... WRITE` (taken after `autocommit = 0`: LOCK TABLES commits an open
/// transaction, and START TRANSACTION would release the lock).
#[derive(Debug, Clone, Copy)]
pub struct Commits {
    pub every: Option<u64>,
    pub lock: bool,
}

impl LabConn {
    pub async fn connect(options: &MysqlOptions) -> Result<LabConn> {
        Ok(LabConn {
            conn: options.connect().await?,
        })
    }

    /// Runs one statement, discarding any result rows.
    pub async fn exec(&mut self, sql: &str) -> Result<()> {
        let what: String = sql.chars().take(100).collect();
        self.conn.query_drop(sql).await.map_err(fail(what))
    }

    /// The first column of the first row of `sql`, as text.
    async fn text(&mut self, sql: &str) -> Result<Option<String>> {
        let row: Option<Option<String>> = self.conn.query_first(sql).await.map_err(fail(sql))?;
        Ok(row.flatten())
    }

    /// `SELECT COUNT(*)` of `table`.
    pub async fn count(&mut self, table: &str) -> Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let n: Option<u64> = self.conn.query_first(&sql).await.map_err(fail(sql))?;
        Ok(n.unwrap_or(0))
    }

    /// Rows of `sql` (for the orphan check: none expected).
    pub async fn rows(&mut self, sql: &str) -> Result<usize> {
        let rows: Vec<mysql_async::Row> = self.conn.query(sql).await.map_err(fail(sql))?;
        Ok(rows.len())
    }

    /// The server, its settings and this user's rights; refuses a user that may not create
    /// the databases every lab run needs.
    pub async fn server_info(&mut self) -> Result<ServerInfo> {
        let version = self.text("SELECT VERSION()").await?.unwrap_or_default();
        let comment = self.text("SELECT @@version_comment").await?;
        let mut settings = Vec::new();
        for name in SETTINGS {
            if let Ok(Some(v)) = self.text(&format!("SELECT @@GLOBAL.{name}")).await {
                settings.push((name.to_string(), v));
            }
        }
        let set_global = self
            .text("SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'SUPER'")
            .await?
            .is_some_and(|n| n != "0");
        let probe = format!("inrush_lab_probe_{}", std::process::id());
        if let Err(e) = self
            .exec(&format!("CREATE DATABASE IF NOT EXISTS {probe}"))
            .await
        {
            return Err(Error::Usage(format!("every lab run uses a scratch database of its own, and this user may not create one (GRANT CREATE, DROP ON *.* TO ...): {e}")));
        }
        self.exec(&format!("DROP DATABASE {probe}")).await?;
        let num = version
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .take(3)
            .fold(0u32, |acc, p| acc * 100 + p.parse::<u32>().unwrap_or(0));
        Ok(ServerInfo {
            version: match comment {
                Some(c) if !c.is_empty() => format!("MariaDB {version} ({c})"),
                _ => format!("MariaDB {version}"),
            },
            version_num: num,
            settings,
            set_global,
        })
    }

    /// The redo log's position (`Innodb_lsn_current`, else `Innodb_os_log_written`): the
    /// difference over a run is the redo it wrote.
    pub async fn redo_position(&mut self) -> Option<u64> {
        crate::catalog::redo_position(&mut self.conn).await
    }

    /// `SET SESSION name = value`.
    pub async fn set_session(&mut self, name: &str, value: &str) -> Result<()> {
        let sql = format!(
            "SET SESSION {} = {}",
            setting_name(name)?,
            setting_value(value)
        );
        self.exec(&sql).await
    }

    /// `SET GLOBAL name = value`, returning what to put back.
    pub async fn set_global(&mut self, name: &str, value: &str) -> Result<SavedSetting> {
        let name = setting_name(name)?;
        let previous = self
            .text(&format!("SELECT @@GLOBAL.{name}"))
            .await?
            .unwrap_or_default();
        self.exec(&format!("SET GLOBAL {name} = {}", setting_value(value)))
            .await?;
        Ok(SavedSetting {
            name: name.to_string(),
            previous,
        })
    }

    /// Puts back what [`LabConn::set_global`] changed.
    pub async fn restore_global(&mut self, saved: &SavedSetting) -> Result<()> {
        let sql = format!(
            "SET GLOBAL {} = {}",
            setting_name(&saved.name)?,
            setting_value(&saved.previous)
        );
        self.exec(&sql).await
    }

    /// One `INSERT ... VALUES (literals)` per row, autocommit.
    pub async fn insert_literal<R: LabRow>(
        &mut self,
        table: &str,
        rows: &[R],
        tick: &Tick,
    ) -> Result<()> {
        for row in rows {
            let sql = format!("INSERT INTO {table} ({COLUMNS}) VALUES {}", literal(row));
            self.conn
                .query_drop(sql)
                .await
                .map_err(fail("literal INSERT"))?;
            tick(1);
        }
        Ok(())
    }

    /// Prepared INSERTs of `per_statement` rows each (the server-side prepared statement of the
    /// binary protocol), committed as `commits` says.
    pub async fn insert_prepared<R: LabRow>(
        &mut self,
        table: &str,
        rows: &[R],
        per_statement: usize,
        commits: Commits,
        tick: &Tick,
    ) -> Result<()> {
        let per = per_statement.clamp(1, 10_000);
        let full = self
            .conn
            .prep(insert_sql(table, per))
            .await
            .map_err(fail("preparing the INSERT"))?;
        self.begin(table, commits).await?;
        let mut pending = 0u64;
        for chunk in rows.chunks(per) {
            let values = params(chunk);
            match chunk.len() == per {
                true => self.conn.exec_drop(&full, values).await,
                false => {
                    self.conn
                        .exec_drop(insert_sql(table, chunk.len()), values)
                        .await
                }
            }
            .map_err(fail("prepared INSERT"))?;
            pending += chunk.len() as u64;
            if commits.every.is_some_and(|every| pending >= every) {
                self.exec("COMMIT").await?;
                pending = 0;
            }
            tick(chunk.len() as u64);
        }
        self.end(commits).await?;
        self.conn
            .close(full)
            .await
            .map_err(fail("closing the INSERT"))
    }

    async fn begin(&mut self, table: &str, commits: Commits) -> Result<()> {
        if commits.every.is_some() || commits.lock {
            self.exec("SET autocommit = 0").await?;
        }
        if commits.lock {
            self.exec(&format!("LOCK TABLES {table} WRITE")).await?;
        }
        Ok(())
    }

    async fn end(&mut self, commits: Commits) -> Result<()> {
        if commits.every.is_some() || commits.lock {
            self.exec("COMMIT").await?;
        }
        if commits.lock {
            self.exec("UNLOCK TABLES").await?;
        }
        if commits.every.is_some() || commits.lock {
            self.exec("SET autocommit = 1").await?;
        }
        Ok(())
    }

    /// The rows through `LOAD DATA LOCAL INFILE` from memory, `per_load` rows a statement
    /// (each its own transaction; `None`: one statement), each under `LOCK TABLES ... WRITE`
    /// when `lock`.
    pub async fn load_data<R: LabRow>(
        &mut self,
        table: &str,
        rows: &[R],
        per_load: Option<u64>,
        lock: bool,
        tick: &Tick,
    ) -> Result<()> {
        let per = per_load.map_or(rows.len().max(1), |n| n.max(1) as usize);
        for batch in rows.chunks(per) {
            // Encoded as the statement streams, 1000 rows a piece, like a client reading a file.
            let pieces: Vec<(Bytes, u64)> = batch
                .chunks(1000)
                .map(|piece| {
                    let mut out = Vec::with_capacity(piece.len() * 330);
                    for row in piece {
                        load_line(row, &mut out);
                    }
                    (Bytes::from(out), piece.len() as u64)
                })
                .collect();
            let (tx, rx) = tokio::sync::mpsc::channel(pieces.len().max(1));
            for piece in pieces {
                let _ = tx.try_send(piece);
            }
            drop(tx);
            self.load_stream(table, rx, lock, tick).await?;
        }
        Ok(())
    }

    /// One `LOAD DATA LOCAL INFILE` of the pieces `rx` gives until it closes (the lab's
    /// producers send them while this streams: D8).
    pub async fn load_stream(
        &mut self,
        table: &str,
        rx: tokio::sync::mpsc::Receiver<(Bytes, u64)>,
        lock: bool,
        tick: &Tick,
    ) -> Result<()> {
        let tick = tick.clone();
        // Built inside the handler: the handler must be Sync, a boxed stream is not.
        self.conn.set_infile_handler(async move {
            let stream = futures_util::stream::unfold(rx, move |mut rx| {
                let tick = tick.clone();
                async move {
                    let (bytes, rows) = rx.recv().await?;
                    tick(rows);
                    Some((Ok(bytes), rx))
                }
            });
            Ok(stream.boxed())
        });
        if lock {
            self.exec(&format!("LOCK TABLES {table} WRITE")).await?;
        }
        let sql = format!(
            "LOAD DATA LOCAL INFILE 'inrush-lab' INTO TABLE {table} CHARACTER SET utf8mb4 ({COLUMNS})"
        );
        let loaded = self.conn.query_drop(sql).await.map_err(fail("LOAD DATA"));
        let warnings = self.conn.get_warnings();
        if lock {
            self.exec("UNLOCK TABLES").await?;
        }
        loaded?;
        match warnings {
            0 => Ok(()),
            n => Err(Error::Engine {
                engine: "MariaDB",
                what: format!("LOAD DATA into {table}"),
                message: format!("{n} warnings: a value did not go in as given"),
                code: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R;
    impl LabRow for R {
        fn ints(&self) -> [i32; 3] {
            [1, -2, 3]
        }
        fn texts(&self) -> [&str; 3] {
            ["a'b", "c\td", "e\\"]
        }
    }

    #[test]
    fn rows_as_literals_and_load_data_lines() {
        assert_eq!(literal(&R), "(1,-2,3,'a''b','c\td','e\\\\')");
        let mut line = Vec::new();
        load_line(&R, &mut line);
        assert_eq!(line, b"1\t-2\t3\ta'b\tc\\td\te\\\\\n");
        assert_eq!(
            insert_sql("t", 2),
            format!("INSERT INTO t ({COLUMNS}) VALUES (?,?,?,?,?,?),(?,?,?,?,?,?)")
        );
    }

    #[test]
    fn settings_are_words_or_quoted() {
        assert_eq!(setting_value("OFF"), "OFF");
        assert_eq!(setting_value("2"), "2");
        assert_eq!(setting_value("a b'c"), "'a b''c'");
        assert!(setting_name("x; DROP").is_err());
        assert_eq!(
            add_indexes(&[&["a"], &["b", "c"]]),
            "ALTER TABLE {t} ADD INDEX i0 (`a`), ADD INDEX i1 (`b`, `c`)"
        );
    }
}

//! SQLite as the target of `inrush copy`. SQLite cannot add a key to a table that exists, so
//! the primary key (a one-column integer key as the rowid itself, the fastest table SQLite
//! has), foreign keys and same-engine CHECKs are in `CREATE TABLE`; unique keys and indexes
//! follow the rows (`CREATE INDEX` sorts once instead of keeping a B-tree up row by row).
//! SQLite checks no foreign key while loading (they are off unless a session turns them on), so
//! once every table is in each one is checked with `pragma_foreign_key_check`. DDL is
//! transactional here: each step commits with its record in `inrush_copy_ledger`. One writer
//! at a time: tables load one after the other.

use super::source::SqliteReader;
use crate::quote;
use inrush_core::database::{
    Database, DefaultSpelling, Design, Done, IndexNames, Note, SchemaTarget, Step, Table,
    Unportable,
};
use inrush_core::ident::sql_string;
use inrush_core::interrupt::Interrupt;
use inrush_core::query::{QueryError, QueryServer};
use inrush_core::SqlType;
use rusqlite::{Connection, OptionalExtension};
use std::path::PathBuf;
use std::sync::Arc;

/// SQLite's DEFAULT: standard string constants, no boolean type, an expression in parentheses.
const DEFAULT_SPELLING: DefaultSpelling = DefaultSpelling {
    string: sql_string,
    boolean_as_number: Some(inrush_encode::boolin),
    current_date: "CURRENT_DATE",
    parenthesized: true,
};

const ENGINE: &str = "SQLite";

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS inrush_copy_ledger (copy TEXT NOT NULL, \
     \"table\" TEXT NOT NULL, step TEXT NOT NULL, at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, \
     PRIMARY KEY (copy, \"table\", step))";

/// A SQLite file a copy writes (made if missing).
pub struct SqliteSchemaTarget {
    path: PathBuf,
}

impl SqliteSchemaTarget {
    pub fn new(path: PathBuf) -> SqliteSchemaTarget {
        SqliteSchemaTarget { path }
    }

    fn connect(&self) -> Result<Connection, QueryError> {
        let conn = Connection::open(&self.path)
            .map_err(error(format!("opening {}", self.path.display())))?;
        // Another table's load may hold the write lock: wait for it.
        conn.busy_timeout(std::time::Duration::from_secs(600))
            .map_err(error("busy_timeout"))?;
        Ok(conn)
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

impl SchemaTarget for SqliteSchemaTarget {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn design(&self, table: &Table, source: &Database) -> Design {
        design(table, source)
    }

    fn run(
        &self,
        step: &Step,
        done: Option<Done>,
        stop: &Arc<Interrupt>,
    ) -> Result<(), QueryError> {
        let mut conn = self.connect()?;
        let _watch = crate::writer::interrupt_watch(&conn, stop);
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(error("BEGIN IMMEDIATE"))?;
        for statement in &step.sql {
            tx.execute_batch(statement)
                .map_err(error(statement.as_str()))?;
        }
        if let Some(query) = &step.violation {
            let found: Option<String> = tx
                .query_row(query, [], |r| r.get(0))
                .optional()
                .map_err(error(query.as_str()))?;
            if let Some(row) = found {
                return Err(QueryError {
                    engine: ENGINE,
                    what: step.what.clone(),
                    message: format!("a row breaks it: {row}"),
                });
            }
        }
        if let Some(done) = done {
            tx.execute_batch(CREATE_LEDGER)
                .map_err(error("creating inrush_copy_ledger"))?;
            tx.execute(
                "INSERT OR IGNORE INTO inrush_copy_ledger (copy, \"table\", step) VALUES (?1, ?2, ?3)",
                (done.copy, done.table, done.step),
            )
            .map_err(error("recording a step in inrush_copy_ledger"))?;
        }
        tx.commit().map_err(error("COMMIT"))
    }

    fn ledger(&self, copy: &str) -> Result<Vec<(String, String)>, QueryError> {
        let conn = self.connect()?;
        conn.execute_batch(CREATE_LEDGER)
            .map_err(error("creating inrush_copy_ledger"))?;
        let sql = "SELECT \"table\", step FROM inrush_copy_ledger WHERE copy = ?1";
        let mut statement = conn.prepare(sql).map_err(error(sql))?;
        let rows = statement
            .query_map([copy], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(error(sql));
        rows
    }

    fn existing(&self, names: &[String]) -> Result<Vec<String>, QueryError> {
        let conn = self.connect()?;
        let sql = "SELECT name FROM sqlite_schema WHERE type = 'table'";
        let mut statement = conn.prepare(sql).map_err(error(sql))?;
        let present: Vec<String> = statement
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(error(sql))?;
        Ok(names
            .iter()
            .filter(|n| present.iter().any(|p| quote(p).eq_ignore_ascii_case(n)))
            .cloned()
            .collect())
    }

    fn reader(&self) -> Arc<dyn QueryServer> {
        Arc::new(SqliteReader::new(self.path.clone()))
    }

    fn select(&self, design: &Design) -> String {
        let columns: Vec<String> = design.columns.iter().map(|c| quote(c)).collect();
        format!("SELECT {} FROM {}", columns.join(", "), design.name)
    }

    fn writers(&self) -> usize {
        1
    }
}

/// The declared type for `sql_type`: a name whose affinity keeps the values (SQLite's rules)
/// and that `inrush load` checks by (see `value::Kind::of_declared`).
fn declared(sql_type: &SqlType) -> String {
    use SqlType::*;
    match sql_type {
        Boolean => "BOOLEAN".into(),
        SmallInt | Integer | BigInt => "INTEGER".into(),
        Numeric(Some((p, s))) => format!("NUMERIC({p},{s})"),
        Numeric(None) => "NUMERIC".into(),
        Real | Double => "REAL".into(),
        Varchar(Some(n)) => format!("VARCHAR({n})"),
        Char(n) => format!("CHAR({n})"),
        Bytes => "BLOB".into(),
        Date => "DATE".into(),
        Time(_) => "TIME".into(),
        Timestamp(_) | TimestampTz(_) => "DATETIME".into(),
        Json => "JSON".into(),
        Varchar(None) | Text | Bit(_) | Interval | Uuid | Array(_) | Source { .. } => "TEXT".into(),
    }
}

/// How `table` of `source` is made in SQLite (see the module's documentation).
pub fn design(table: &Table, source: &Database) -> Design {
    let same = source.engine == ENGINE;
    let name = quote(&table.name);
    let mut design = Design {
        name: name.clone(),
        empty: Some(format!("DELETE FROM {name}")),
        ..Design::default()
    };
    let names = IndexNames::new(table, source, ENGINE, usize::MAX);
    // A one-column integer key is the rowid itself.
    let rowid = table.split_column().map(str::to_string);
    let list = |columns: &[String]| {
        let quoted: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        quoted.join(", ")
    };
    let mut definitions = Vec::new();
    for column in &table.columns {
        let mut text = format!("{} {}", quote(&column.name), declared(&column.sql_type));
        if rowid.as_deref() == Some(column.name.as_str()) {
            text = format!("{} INTEGER PRIMARY KEY", quote(&column.name));
        }
        if let SqlType::TimestampTz(_) = column.sql_type {
            design.notes.push(Note::translated(format!(
                "column {}: times with a zone became DATETIME in UTC",
                column.name
            )));
        }
        if let Some(generated) = &column.generated {
            design.notes.push(Note::translated(format!(
                "generated column {}: its values copied, its expression ({}'s) left out",
                column.name, generated.engine
            )));
        }
        if column.not_null {
            text.push_str(" NOT NULL");
        }
        let (default, note) = column.default_clause(same, &DEFAULT_SPELLING);
        text.push_str(&default);
        design.notes.extend(note);
        definitions.push(text);
        design.columns.push(column.name.clone());
    }
    if let (Some(key), None) = (&table.primary_key, &rowid) {
        definitions.push(format!("PRIMARY KEY ({})", list(&key.columns)));
    }
    for key in &table.foreign_keys {
        definitions.push(format!(
            "FOREIGN KEY ({}) REFERENCES {} ({}) ON DELETE {} ON UPDATE {}",
            list(&key.columns),
            quote(&key.parent),
            list(&key.parent_columns),
            key.on_delete.sql(),
            key.on_update.sql()
        ));
        let mut check = Step::new(format!("foreign key {}", key.name), Vec::new());
        check.violation = Some(format!(
            "SELECT 'row ' || rowid || ' of ' || \"table\" || ' has no parent in ' || parent FROM pragma_foreign_key_check({}) LIMIT 1",
            sql_string(&table.name)
        ));
        check.needs.push(quote(&key.parent));
        design.after_keys.push(check);
    }
    for check in table.checks.iter().filter(|_| same) {
        definitions.push(format!(
            "CONSTRAINT {} CHECK ({})",
            quote(&check.name),
            check.clause.sql
        ));
    }
    if !same {
        for check in &table.checks {
            design.notes.push(Note::left_out(format!(
                "check {} of {}: {}'s {}",
                check.name,
                table.display_name(),
                check.clause.engine,
                check.clause.sql
            )));
        }
    }
    design
        .create
        .push(format!("CREATE TABLE {name} ({})", definitions.join(", ")));
    for key in &table.uniques {
        let key_name = names.key(&key.name, "key");
        design.after_rows.push(Step::new(
            format!("unique key {key_name}"),
            vec![format!(
                "CREATE UNIQUE INDEX {} ON {name} ({})",
                quote(&key_name),
                list(&key.columns)
            )],
        ));
    }
    index_steps(&mut design, table, source, &names, &name);
    design
}

/// The steps that build `table`'s indexes after its rows (named by `names`), in SQLite's
/// words, or the notes that say why one is left out; `name` is the table, quoted.
fn index_steps(
    design: &mut Design,
    table: &Table,
    source: &Database,
    names: &IndexNames,
    name: &str,
) {
    let same = source.engine == ENGINE;
    for index in &table.indexes {
        let index_name = names.key(&index.name, "idx");
        // SQLite has no prefix index: an index on the prefix's expression.
        let column = |c: &str, prefix: Option<u32>| match prefix {
            Some(n) => format!("substr({}, 1, {n})", quote(c)),
            None => quote(c),
        };
        match index.create(same, &quote(&index_name), name, column) {
            Ok(sql) => design
                .after_rows
                .push(Step::new(format!("index {index_name}"), vec![sql])),
            Err(why) => design.notes.push(Note::left_out(format!(
                "index {} of {}: {}",
                index.name,
                table.display_name(),
                match why {
                    Unportable::Method(method) => format!("SQLite has no {method} index"),
                    Unportable::Condition => format!("its condition is {}'s", source.engine),
                    Unportable::Expression => format!("its expression is {}'s", source.engine),
                }
            ))),
        }
    }
}

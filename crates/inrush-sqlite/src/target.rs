//! [`SqliteTarget`]: the pipeline's [`Target`] for a SQLite database file.

use crate::catalog::{self, Table};
use crate::value::{push_value, ColumnCheck, Kind, Value};
use crate::writer::{self, Conflict, RowWriter};
use crate::{failed, quote};
use bytes::Bytes;
use inrush_arrow::Prepared;
use inrush_core::catalog::{IndexInfo, Trigger};
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_core::{SqlType, TargetColumn};
use inrush_load::encoder::ValueTexts;
use inrush_load::support::{Feature, Support};
use inrush_load::target::{
    self, At, Committed, Encoding, Load, Refused, RowEncoder, Target, Writer,
};
use inrush_load::{Capabilities, Error, LoadOptions, LoadPlan, Maintenance, OnConflict, Result};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a load waits for another process's write transaction on the same file.
const BUSY: Duration = Duration::from_secs(10);

/// A SQLite database file as the target of loads.
pub struct SqliteTarget {
    path: PathBuf,
}

/// One load into a SQLite table: the table as [`Target::prepare`] found or designed it.
struct SqliteLoad<'t> {
    target: &'t SqliteTarget,
    design: Design,
    table: target::Table,
}

/// The table, and how each of its columns' values are checked.
struct Design {
    table: Table,
    checks: Vec<ColumnCheck>,
}

impl SqliteTarget {
    pub fn new(path: PathBuf) -> Self {
        SqliteTarget { path }
    }

    fn open(&self) -> Result<Connection> {
        writer::open(&self.path, BUSY)
    }

    /// The pragmas the load runs with.
    fn settings(&self, opts: &LoadOptions) -> Result<Vec<(String, String)>> {
        let mut settings = vec![
            (
                "cache_size".to_string(),
                format!("-{} (KiB)", writer::CACHE_KIB),
            ),
            (
                "temp_store".to_string(),
                "MEMORY, FILE for index builds".to_string(),
            ),
        ];
        if opts.plan.fast_unsafe {
            settings.push(("journal_mode".into(), "MEMORY (--fast-unsafe)".into()));
            settings.push(("synchronous".into(), "OFF (--fast-unsafe)".into()));
            return Ok(settings);
        }
        let conn = self.open()?;
        for pragma in ["journal_mode", "synchronous"] {
            let value = conn
                .query_row(&format!("SELECT * FROM pragma_{pragma}"), [], |r| {
                    r.get::<_, rusqlite::types::Value>(0)
                })
                .map_err(failed(format!("reading PRAGMA {pragma}")))?;
            let value = match value {
                rusqlite::types::Value::Integer(i) => ["OFF", "NORMAL", "FULL", "EXTRA"]
                    .get(i as usize)
                    .map_or_else(|| i.to_string(), |s| s.to_string()),
                rusqlite::types::Value::Text(t) => t,
                other => format!("{other:?}"),
            };
            settings.push((pragma.to_string(), value));
        }
        Ok(settings)
    }
}

/// What SQLite can do around a load: indexes are dropped and built again inside the load's
/// one transaction, so a key the rows broke undoes the load; no visibility map (a VACUUM
/// would rewrite the whole database file: statistics are what queries need).
fn capabilities(opts: &LoadOptions) -> Capabilities {
    Capabilities {
        rebuilds: Some("built once after the load".into()),
        unique_after: Ok(()),
        keeps_all: opts.resume.then(|| "indexes are kept: --resume commits block by block, and SQLite drops an index only for the length of one transaction here".into()),
        ..Capabilities::default()
    }
}

/// SQLite trades its own safety for speed on request; the rest is other engines'.
const SUPPORT: Support = Support {
    engine: "SQLite",
    carries: &[Feature::FastUnsafe],
    instead: &[
        (
            Feature::Text,
            "PostgreSQL's text COPY; SQLite is given bound values",
        ),
        (
            Feature::DateStyle,
            "SQLite stores dates as ISO 8601 text (YYYY-MM-DD) and has no date style to set",
        ),
        (
            Feature::DisableTriggers,
            "SQLite cannot disable a table's triggers",
        ),
        (Feature::Route, "SQLite has no partitioned tables"),
        (
            Feature::Prepare,
            "SQLite has no two-phase commit (and a file takes one writer at a time)",
        ),
        (
            Feature::Stage,
            "SQLite takes one writer at a time: a distributed write's tasks could not load beside each other",
        ),
    ],
};

impl Target for SqliteTarget {
    fn supports(&self) -> &'static Support {
        &SUPPORT
    }

    fn prepare(
        &self,
        opts: &LoadOptions,
        create: Option<&[(String, SqlType)]>,
    ) -> Result<Box<dyn Load + '_>> {
        let conn = self.open()?;
        let existing = catalog::read(&conn, &opts.table)?;
        let (design, create_sql) = match (create, existing) {
            (Some(_), Some(t)) => {
                return Err(Error::TableExists {
                    table: t.qualified(),
                    place: format!(" in {}", self.path.display()),
                })
            }
            (Some(columns), None) => {
                let (design, sql) = designed(&opts.table, columns, &opts.create_types)?;
                (design, Some(sql))
            }
            (None, Some(table)) => (read_design(table), None),
            (None, None) => {
                return Err(Error::NoSuchTable {
                    table: opts.table.clone(),
                    place: format!(" in {}", self.path.display()),
                })
            }
        };
        let (name, unique) = (design.table.qualified(), design.table.has_unique_key());
        (opts.on_conflict).refuse_without_key(&name, unique, None)?;
        let columns = design
            .table
            .columns
            .iter()
            .zip(&design.checks)
            .map(|(c, check)| TargetColumn {
                name: c.name.clone(),
                type_sql: c.declared.clone(),
                sql_type: check.kind.sql_type(),
                not_null: c.not_null,
            })
            .collect();
        let (bytes, changed_by_delete) = match create_sql {
            Some(_) => (Some(0), Vec::new()),
            None => (
                Some(catalog::database_bytes(&conn, &design.table.schema)?),
                catalog::changed_by_delete(&conn, &design.table)?,
            ),
        };
        let table = target::Table {
            name: design.table.qualified(),
            columns,
            bytes,
            create_sql,
            create_note: None,
            changed_by_delete,
        };
        Ok(Box::new(SqliteLoad {
            target: self,
            design,
            table,
        }))
    }
}

impl Load for SqliteLoad<'_> {
    fn table(&self) -> &target::Table {
        &self.table
    }

    fn version(&self) -> String {
        format!("SQLite {}", rusqlite::version())
    }

    fn method(&self) -> &'static str {
        "multi-row INSERT"
    }

    fn encoding(&mut self, columns: &[TargetColumn]) -> Result<Encoding> {
        let checks = self.table.of_loaded(&self.design.checks, columns)?;
        Ok(Encoding::encoder(Box::new(Encoder { checks })))
    }

    fn plan(
        &mut self,
        _: &[TargetColumn],
        opts: &LoadOptions,
        load_bytes: Option<u64>,
    ) -> Result<LoadPlan> {
        let (design, table) = (&self.design, &self.table);
        let empty = match table.create_sql {
            Some(_) => true,
            None => catalog::is_empty(&self.target.open()?, &design.table)?,
        };
        let indexes = design
            .table
            .indexes
            .iter()
            .map(|i| IndexInfo {
                name: i.name.clone(),
                definition: i.sql.clone().unwrap_or_default(),
                unique: i.unique,
                // An index SQLite made for a constraint has no statement to make it again.
                stays: i.sql.as_deref().unwrap_or_default().is_empty().then(|| "enforces the table's PRIMARY KEY or UNIQUE constraint, which SQLite cannot drop: maintained during the load".into()),
                ..IndexInfo::default()
            })
            .collect();
        let mut plan = LoadPlan::decide(
            &design.table.qualified(),
            &capabilities(opts),
            indexes,
            Vec::new(),
            table.size(empty),
            load_bytes,
            inrush_load::PlanOptions {
                keep_keys: opts.keeps_keys(),
                ..opts.plan
            },
        );
        plan.hidden.settings = self.target.settings(opts)?;
        plan.hidden.triggers = design
            .table
            .triggers
            .iter()
            .map(|t| Trigger::named(t))
            .collect();
        Ok(plan)
    }

    fn writer(
        &mut self,
        columns: &[TargetColumn],
        plan: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Writer>> {
        let (design, table) = (&self.design, &self.table);
        let conn = self.target.open()?;
        if opts.plan.fast_unsafe {
            conn.execute_batch(writer::FAST_UNSAFE)
                .map_err(failed("setting --fast-unsafe's pragmas"))?;
        }
        let watch = writer::interrupt_watch(&conn, &opts.interrupt);
        let qualified = design.table.qualified();
        // One transaction is the whole load (under --resume, each block is one); IMMEDIATE
        // takes the write lock now, not at the first insert, so another writer is found before
        // any work is done.
        let mut begin = match resume {
            Some(_) => Vec::new(),
            None => vec!["BEGIN IMMEDIATE".to_string()],
        };
        begin.extend(table.create_sql.clone());
        if opts.truncate {
            begin.push(format!("DELETE FROM {qualified}"));
        }
        let rebuilt: Vec<(String, String)> = plan
            .rebuilt()
            .into_iter()
            .map(|i| (i.name, i.definition))
            .collect();
        begin.extend(rebuilt.iter().map(|(name, _)| {
            format!("DROP INDEX {}.{}", quote(&design.table.schema), quote(name))
        }));
        if !begin.is_empty() {
            conn.execute_batch(&begin.join(";\n"))
                .map_err(failed(format!("starting the load of {qualified}")))?;
        }
        Ok(Box::new(SqliteWriter {
            conn,
            _watch: watch,
            table: qualified,
            columns: columns.iter().map(|c| c.name.clone()).collect(),
            conflict: match opts.on_conflict {
                OnConflict::Error => Conflict::Error,
                OnConflict::Skip => Conflict::Skip,
                OnConflict::Update => Conflict::Update,
            },
            rebuilt,
            analyze: plan.after != Maintenance::None,
            interrupt: opts.interrupt.clone(),
            changed: 0,
            resume: resume.cloned(),
            fast_unsafe: opts.plan.fast_unsafe,
        }))
    }

    fn ledger(&mut self, input: &InputFile) -> Result<Vec<Block>> {
        let table = self.design.table.qualified();
        crate::ledger::open(&self.target.open()?, &table, input)
    }
}

/// The table as the catalog has it: values checked by each column's declared type.
fn read_design(table: Table) -> Design {
    let rowid = table.rowid_column().map(|c| c.name.clone());
    let checks = table
        .columns
        .iter()
        .map(|c| {
            let declared = Kind::of_declared(&c.declared, table.strict);
            let kind = if c.boolean { Kind::Bool } else { declared };
            ColumnCheck {
                qualified: format!("{}.{}", table.name, c.name),
                kind,
                strict: table.strict.then_some(declared),
                not_null: c.not_null,
                rowid: rowid.as_deref() == Some(&c.name),
            }
        })
        .collect();
    Design { table, checks }
}

/// `--create`: a STRICT table with a storage type per inferred column, its values checked by
/// the type inferred (a boolean column is INTEGER holding 1 and 0, marked by its CHECK, dates
/// are TEXT in ISO 8601).
/// `--types` names one of STRICT's types.
fn designed(
    name: &str,
    columns: &[(String, SqlType)],
    overrides: &[(String, String)],
) -> Result<(Design, String)> {
    let (schema, table) = catalog::split_name(name);
    let mut kinds: Vec<(String, Kind, Kind)> = columns
        .iter()
        .map(|(name, sql_type)| {
            let (kind, storage) = inferred_kind(sql_type);
            (name.clone(), kind, storage)
        })
        .collect();
    let given = inrush_load::create::given_types(columns, overrides)?;
    for (slot, sql_type) in kinds.iter_mut().zip(given) {
        let Some(sql_type) = sql_type else { continue };
        let column = &slot.0;
        let storage = match sql_type.to_ascii_uppercase().as_str() {
            "INT" | "INTEGER" => Kind::Integer,
            "REAL" => Kind::Real,
            "TEXT" => Kind::Text,
            "BLOB" => Kind::Blob,
            "ANY" => Kind::Any,
            _ => {
                return Err(Error::Usage(format!(
                    "--types: {sql_type:?} (for column {column:?}) is not a type of a STRICT SQLite table (INTEGER, REAL, TEXT, BLOB, ANY)"
                )))
            }
        };
        slot.1 = storage;
        slot.2 = storage;
    }
    let storage_name = |k: Kind| match k {
        Kind::Integer => "INTEGER",
        Kind::Real => "REAL",
        Kind::Blob => "BLOB",
        Kind::Any => "ANY",
        _ => "TEXT",
    };
    let qualified = match &schema {
        Some(s) => format!("{}.{}", quote(s), quote(&table)),
        None => quote(&table),
    };
    let sql = format!(
        "CREATE TABLE {qualified} ({}) STRICT",
        kinds
            .iter()
            .map(|(n, kind, storage)| match kind {
                // STRICT has no BOOLEAN: the constraint says it, to a later load too.
                Kind::Bool => format!("{} INTEGER {}", quote(n), catalog::boolean_check(n)),
                _ => format!("{} {}", quote(n), storage_name(*storage)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    let design = Design {
        checks: kinds
            .iter()
            .map(|(n, kind, storage)| ColumnCheck {
                qualified: format!("{table}.{n}"),
                kind: *kind,
                strict: Some(*storage),
                not_null: false,
                rowid: false,
            })
            .collect(),
        table: Table {
            schema: schema.unwrap_or_else(|| "main".into()),
            name: table,
            strict: true,
            columns: kinds
                .iter()
                .map(|(n, kind, s)| catalog::Column {
                    name: n.clone(),
                    declared: storage_name(*s).into(),
                    not_null: false,
                    pk: 0,
                    boolean: *kind == Kind::Bool,
                })
                .collect(),
            indexes: Vec::new(),
            triggers: Vec::new(),
        },
    };
    Ok((design, sql))
}

/// The check and STRICT storage type for a type `--create` inferred (or a query's column has).
fn inferred_kind(sql_type: &SqlType) -> (Kind, Kind) {
    use SqlType::*;
    match sql_type {
        Boolean => (Kind::Bool, Kind::Integer),
        SmallInt | Integer | BigInt => (Kind::Integer, Kind::Integer),
        Real | Double | Numeric(_) => (Kind::Real, Kind::Real),
        Date => (Kind::Date, Kind::Text),
        Timestamp(_) | TimestampTz(_) => (Kind::DateTime, Kind::Text),
        Time(_) => (Kind::Time, Kind::Text),
        Json => (Kind::Json, Kind::Text),
        Bytes => (Kind::Blob, Kind::Blob),
        Varchar(_) | Char(_) | Text | Bit(_) | Interval | Uuid | Array(_) | Source { .. } => {
            (Kind::Text, Kind::Text)
        }
    }
}

/// Checks and encodes the fields of a row, one [`ColumnCheck`] per column.
struct Encoder {
    checks: Vec<ColumnCheck>,
}

impl RowEncoder for Encoder {
    fn worker(&self, _: bool) -> Box<dyn target::RowWriter + '_> {
        Box::new(self)
    }

    fn reads_plain(&self) -> bool {
        false
    }

    /// No array types, booleans are integers, and the date functions read offsets as `±HH:MM`:
    /// lists go as JSON, booleans as 1 and 0, a zoned timestamp's offset as `+00:00`.
    fn text_forms(&self) -> inrush_arrow::TextForms {
        inrush_arrow::TextForms::ISO
    }
}

impl Encoder {
    /// One row of the values `value` gives, column by column; a refused value leaves `out`
    /// as it was.
    fn line<'v>(
        &self,
        out: &mut Vec<u8>,
        mut value: impl FnMut(usize, &ColumnCheck) -> std::result::Result<Value<'v>, String>,
    ) -> std::result::Result<(), Refused> {
        let mark = out.len();
        for (i, check) in self.checks.iter().enumerate() {
            match value(i, check) {
                Ok(value) => push_value(out, &value),
                Err(reason) => {
                    out.truncate(mark);
                    return Err(Refused::Value(i, reason));
                }
            }
        }
        Ok(())
    }
}

impl target::RowWriter for &Encoder {
    fn row(&mut self, fields: &[Option<&str>], _: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        self.line(out, |i, check| check.value(fields[i]))
    }

    /// A binary value goes as its bytes ([`ColumnCheck::bytes`]), not as its `\x` text.
    fn arrow_row(
        &mut self,
        columns: &[Prepared],
        row: usize,
        _: At,
        texts: &mut ValueTexts,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        texts.render_but_bytes(columns, row, false)?;
        let ValueTexts { text, spans } = texts;
        self.line(out, |i, check| match columns[i].bytes(row) {
            Some(bytes) => check.bytes(bytes),
            None => check.value(spans[i].clone().map(|r| &text[r])),
        })
    }
}

/// The load's transaction on its own connection; dropped without [`Writer::commit`], it
/// rolls back (rusqlite's connection closes, and SQLite rolls back an open transaction).
struct SqliteWriter {
    conn: Connection,
    _watch: inrush_load::Watch,
    table: String,
    columns: Vec<String>,
    conflict: Conflict,
    /// (name, CREATE INDEX) of the indexes dropped for the load, built again before commit.
    rebuilt: Vec<(String, String)>,
    analyze: bool,
    interrupt: Arc<inrush_load::Interrupt>,
    changed: u64,
    /// `--resume`: the input each block is recorded for.
    resume: Option<InputFile>,
    fast_unsafe: bool,
}

impl Writer for SqliteWriter {
    fn write(
        &mut self,
        data: &Bytes,
        rows: u64,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        let refused = &mut target::naming_column(refused, writer::column_in_message);
        self.insert(data, rows, refused)
    }

    fn begin_block(&mut self) -> Result<()> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(failed("starting a block's transaction"))
    }

    fn commit_block(&mut self, block: Block) -> Result<()> {
        let input = self.resume.as_ref().ok_or_else(|| {
            Error::Internal("a block committed by a load without --resume".into())
        })?;
        crate::ledger::record(&self.conn, &self.table, input, block)?;
        self.conn
            .execute_batch("COMMIT")
            .map_err(failed("committing a block"))
    }

    fn roll_back_block(&mut self) {
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn commit(self: Box<Self>) -> Result<Committed> {
        if self.resume.is_some() {
            return self.finish_resumed();
        }
        let started = Instant::now();
        let mut committed = Committed::default();
        if !self.rebuilt.is_empty() {
            self.conn
                .execute_batch(writer::SORT_ON_DISK)
                .map_err(failed("sorting for index builds on disk"))?;
        }
        for (name, sql) in &self.rebuilt {
            self.conn
                .execute_batch(sql)
                .map_err(|e| rebuild_failed(name, e, &self.table))?;
            committed
                .steps
                .push(format!("index {name} built after the load"));
        }
        committed.rebuild_seconds = started.elapsed().as_secs_f64();
        let analyzed = Instant::now();
        if self.analyze {
            let sql = format!("ANALYZE {}", self.table);
            self.conn.execute_batch(&sql).map_err(failed(sql.clone()))?;
            committed.steps.push(sql);
        }
        if self.conflict != Conflict::Error {
            committed
                .notes
                .push(format!("{} rows inserted or updated", self.changed));
        }
        if self.fast_unsafe {
            committed.notes.push(writer::FAST_UNSAFE_TRADE.into());
        }
        committed.maintain_seconds = analyzed.elapsed().as_secs_f64();
        target::into_commit(&self.interrupt, true, None)?;
        self.conn
            .execute_batch("COMMIT")
            .map_err(failed("committing the load"))?;
        Ok(committed)
    }
}

impl SqliteWriter {
    fn insert(
        &mut self,
        data: &[u8],
        rows: u64,
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<u64> {
        let mut writer = RowWriter::new(&self.conn, &self.table, &self.columns, self.conflict);
        let written = writer.write(data, rows, refused);
        self.changed += writer.changed;
        written
    }

    /// Every block committed already: statistics, on their own.
    fn finish_resumed(self: Box<Self>) -> Result<Committed> {
        let started = Instant::now();
        let mut committed = Committed::default();
        if self.analyze {
            let sql = format!("ANALYZE {}", self.table);
            match self.conn.execute_batch(&sql) {
                Ok(()) => committed.steps.push(sql),
                // The rows are committed; only the statistics are missing.
                Err(e) => committed.notes.push(format!("{sql} failed: {e}")),
            }
        }
        committed.maintain_seconds = started.elapsed().as_secs_f64();
        Ok(committed)
    }
}

/// A unique index the loaded rows break: the whole load rolls back with the transaction.
fn rebuild_failed(name: &str, e: rusqlite::Error, table: &str) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ConstraintViolation) => Error::KeyViolated {
            constraint: name.to_string(),
            table: table.to_string(),
            message: e.to_string(),
            rows_undone: 0,
        },
        _ => failed(format!("building index {name} again"))(e),
    }
}

//! [`MysqlTarget`]: the pipeline's [`Target`] for a MariaDB or MySQL database: the table read
//! and claimed, the plan's DDL and its undo here; what it can do around a load in [`plan`],
//! `--create`'s design in [`create`], one connection's transaction in [`connection`].

mod connection;
mod create;
mod plan;

use connection::{Books, MysqlWriter};
use create::designed;
pub(crate) use create::mariadb_type;
use plan::{capabilities, write_method};

use crate::catalog::{self, ForeignKey, Table};
use crate::claim::{self, Claim};
use crate::ddl::{self, Dropped};
use crate::engine_error;
use crate::options::MysqlOptions;
use crate::outcome;
use crate::value::ColumnCheck;
use crate::writer::{self, ChunkWriter, Conflict, Method};
use inrush_arrow::Prepared;
use inrush_core::catalog::{ConstraintKind, ForeignKeyInfo, IndexInfo, Trigger};
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_core::{SqlType, TargetColumn};
use inrush_load::encoder::ValueTexts;
use inrush_load::patience::gave_up;
use inrush_load::plan::IndexAction;
use inrush_load::summary::Log;
use inrush_load::support::{Feature, Support};
pub(crate) use inrush_load::target::runtime;
use inrush_load::target::{
    self, At, Committed, Encoding, Load, Refused, RowEncoder, RowWriter, Target, Writer,
};
use inrush_load::{Error, LoadOptions, LoadPlan, Maintenance, OnConflict, PlanOptions, Result};
use mysql_async::prelude::Queryable;
use std::time::Instant;

/// A MariaDB or MySQL database as the target of loads.
pub struct MysqlTarget {
    options: MysqlOptions,
}

/// One load into a MariaDB table, from `prepare` to its end.
struct MysqlLoad<'t> {
    options: &'t MysqlOptions,
    design: Design,
    table: target::Table,
    /// The indexes `begin` dropped, for `end` to put back.
    dropped: Vec<Dropped>,
    /// The table's lock (see [`crate::claim`]): taken by `prepare`, held by a load that changes
    /// the table's definitions until the load is dropped (after `end`), let go by one that
    /// changes nothing once its writers have the table open.
    claim: Option<Claim>,
    /// How many writers `writer` made, to know when the last one has.
    writers_made: usize,
    /// The redo log's position when the rows began (see `catalog::redo_position`).
    redo_before: Option<u64>,
}

struct Design {
    table: Table,
    checks: Vec<ColumnCheck>,
    version: String,
    /// How the rows go in, and why when that is not LOAD DATA or the connections take turns
    /// (for the plan and the summary).
    method: Method,
    method_note: Option<String>,
    /// The load's interrupt, for the watch on `begin`'s DDL (a DROP INDEX can wait for
    /// another session's metadata lock).
    interrupt: std::sync::Arc<inrush_load::Interrupt>,
    /// The server settings that matter for a bulk load, for the plan.
    settings: Vec<(String, String)>,
}

impl MysqlTarget {
    pub fn new(options: MysqlOptions) -> Self {
        MysqlTarget { options }
    }
}

impl MysqlLoad<'_> {
    /// The redo log's position now; `None` where the server does not say (or cannot be asked:
    /// the summary then has no log line, nothing else changes).
    fn redo_position(&self) -> Option<u64> {
        let rt = runtime().ok()?;
        let position = self.options.run(&rt, async {
            let mut conn = self.options.connect().await?;
            let position = catalog::redo_position(&mut conn).await;
            let _ = conn.disconnect().await;
            Ok(position)
        });
        position.ok().flatten()
    }

    /// Lets the table's lock go: this load changes none of its definitions.
    fn let_claim_go(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.release();
        }
    }
}

/// A MariaDB part of a distributed write waits as an XA transaction.
const SUPPORT: Support = Support {
    engine: "MariaDB/MySQL",
    carries: &[Feature::Prepare],
    instead: &[
        (
            Feature::Text,
            "PostgreSQL's text COPY; MariaDB is always given LOAD DATA's text",
        ),
        (
            Feature::DateStyle,
            "MariaDB reads dates as YYYY-MM-DD and has no date style to set",
        ),
        (
            Feature::DisableTriggers,
            "MariaDB cannot disable a table's triggers",
        ),
        (Feature::FastUnsafe, "for SQLite targets only"),
        (
            Feature::Route,
            "partitions are routed by inrush on PostgreSQL only; MariaDB routes its own",
        ),
        (
            Feature::Stage,
            "a part waits as an XA transaction (--prepare) on MariaDB/MySQL; staged parts are PostgreSQL's",
        ),
    ],
};

impl Target for MysqlTarget {
    /// With the watch beside it: a server that leaves its looks unanswered for the network
    /// timeout is cut, and a statement that failed for it says so.
    fn beside(
        &self,
        opts: &LoadOptions,
        reporter: &dyn inrush_core::Reporter,
        load: &mut dyn FnMut() -> Result<inrush_load::LoadSummary>,
    ) -> Result<inrush_load::LoadSummary> {
        let rt = runtime()?;
        let mut conn = None;
        let loaded = inrush_load::pulse::beside(
            opts.network_timeout,
            self.options.describe(),
            reporter,
            |within| self.options.look(&rt, &mut conn, within),
            |why| self.options.cut(why),
            load,
        );
        inrush_load::pulse::explained(loaded, "MariaDB", self.options.cut_because())
    }

    fn supports(&self) -> &'static Support {
        &SUPPORT
    }

    fn prepare(
        &self,
        opts: &LoadOptions,
        create: Option<&[(String, SqlType)]>,
    ) -> Result<Box<dyn Load + '_>> {
        let rt = runtime()?;
        let database = self.options.database();
        // No other load of the table changes its definitions from here on, and none is at it:
        // what the journal holds for it was left by a load that died.
        let claim = {
            let (schema, name) = catalog::split_name(&opts.table, database);
            Claim::take(&self.options, &schema, &name, &opts.interrupt)?
        };
        let (existing, version) = self.options.run(&rt, async {
            let mut conn = self.options.connect().await?;
            // Indexes a load that died left dropped come back before anything else.
            let (schema, name) = catalog::split_name(&opts.table, database);
            let leftovers = ddl::pending(&mut conn, Some((&schema, &name))).await?;
            ddl::restore(&mut conn, &leftovers).await?;
            let table = catalog::read(&mut conn, &opts.table, database).await;
            let server: Option<(String, i64)> = conn
                .query_first("SELECT VERSION(), @@GLOBAL.local_infile")
                .await
                .map_err(engine_error("reading the server's version"))?;
            // What makes rows cost more or less, reported by the plan as it is.
            let settings: Vec<(String, String)> = conn
                .query(
                    "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
                     WHERE VARIABLE_NAME IN ('INNODB_AUTOINC_LOCK_MODE', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', \
                       'INNODB_BUFFER_POOL_SIZE', 'INNODB_SORT_BUFFER_SIZE', 'LOCAL_INFILE', 'SQL_MODE') \
                     ORDER BY 1",
                )
                .await
                .unwrap_or_default();
            let _ = conn.disconnect().await;
            Ok::<_, Error>((table, (server.unwrap_or_default(), settings)))
        })?;
        let ((version, local_infile), settings) = (version.0, version.1);
        let local_infile = local_infile != 0;
        let (table, checks, create_sql) = match (create, existing) {
            (Some(_), Ok(t)) => {
                return Err(Error::TableExists {
                    table: t.qualified(),
                    place: String::new(),
                })
            }
            (Some(columns), Err(_)) => {
                let (schema, name) = catalog::split_name(&opts.table, database);
                let (table, checks, sql) = designed(schema, name, columns, &opts.create_types)?;
                (table, checks, Some(sql))
            }
            (None, existing) => {
                let table = existing?;
                let check = match opts.from_query.is_some() {
                    true => ColumnCheck::of_query,
                    false => ColumnCheck::of,
                };
                let checks = table.columns.iter().map(check).collect();
                (table, checks, None)
            }
        };
        if !table.transactional {
            // What the engine wrote stays written: a chunk cannot go back to its savepoint to
            // set a bad row aside, and a block cannot commit together with its ledger row.
            let cannot = |option: &str, why: &str| {
                Err(Error::Usage(format!(
                    "{option}: {} is {}, which is not transactional: {why}",
                    table.qualified(),
                    table.engine
                )))
            };
            // --check writes nothing into such a table (see `checks_on_client_only`).
            if opts.max_errors > 0 && !opts.check_only {
                return cannot("--max-errors", "the rows around a refused row could not be taken back to load them again without it");
            }
            if opts.resume {
                return cannot("--resume", "a block's rows would stay in the table without its ledger row after a crash, and be loaded twice");
            }
        }
        let unique = table.has_unique_key();
        (opts.on_conflict).refuse_without_key(&table.qualified(), unique, None)?;
        let columns = table
            .columns
            .iter()
            .map(|c| TargetColumn {
                name: c.name.clone(),
                type_sql: c.column_type.clone(),
                sql_type: c.sql_type(),
                // AUTO_INCREMENT fills a NULL.
                not_null: c.not_null && !c.auto_increment,
            })
            .collect();
        let described = target::Table {
            name: table.qualified(),
            columns,
            bytes: Some(table.bytes),
            create_sql,
            create_note: None,
            changed_by_delete: table.changed_by_delete.clone(),
        };
        if opts.on_conflict == OnConflict::Update {
            described.refuse_deletes(
                "--on-conflict update",
                "is REPLACE, which deletes each replaced row of",
            )?;
        }
        let engine = match version.to_ascii_lowercase().contains("mariadb") {
            true => "MariaDB",
            false => "MySQL",
        };
        let (method, method_note) = write_method(local_infile, &table, &settings);
        let mut load = MysqlLoad {
            options: &self.options,
            design: Design {
                checks,
                table,
                version: format!("{engine} {}", version.split('-').next().unwrap_or(&version)),
                method,
                method_note,
                settings,
                interrupt: opts.interrupt.clone(),
            },
            table: described,
            dropped: Vec::new(),
            claim: Some(claim),
            writers_made: 0,
            redo_before: None,
        };
        if opts.check_only {
            // --check writes nothing and drops nothing.
            load.let_claim_go();
        }
        Ok(Box::new(load))
    }
}

impl Load for MysqlLoad<'_> {
    fn table(&self) -> &target::Table {
        &self.table
    }

    fn version(&self) -> String {
        self.design.version.clone()
    }

    fn method(&self) -> &'static str {
        match self.design.method {
            Method::LoadData => "LOAD DATA LOCAL",
            Method::Insert => "multi-row INSERT",
        }
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
        let keys = &design.table.foreign_keys;
        let indexes = design
            .table
            .indexes
            .iter()
            .map(|index| IndexInfo {
                name: index.name.clone(),
                definition: String::new(),
                unique: index.unique,
                constraint: (index.name == "PRIMARY").then(|| index.name.clone()),
                constraint_kind: (index.name == "PRIMARY").then_some(ConstraintKind::PrimaryKey),
                stays: keys
                    .iter()
                    .any(|k| index.columns.starts_with(&k.columns))
                    .then(|| "a foreign key of the table needs it (MariaDB refuses to drop it): maintained during the load".into()),
                ..IndexInfo::default()
            })
            .collect();
        let foreign_keys = keys
            .iter()
            .map(|key| ForeignKeyInfo {
                name: key.name.clone(),
                definition: key.definition(),
                validated: true,
            })
            .collect();
        let mut plan = LoadPlan::decide(
            &design.table.qualified(),
            &capabilities(design, opts),
            indexes,
            foreign_keys,
            table.size(design.table.empty),
            load_bytes,
            PlanOptions {
                keep_keys: opts.keeps_keys(),
                ..opts.plan
            },
        );
        plan.hidden.triggers = design
            .table
            .triggers
            .iter()
            .map(|t| Trigger::named(t))
            .collect();
        plan.hidden.settings = std::iter::once(("engine".to_string(), design.table.engine.clone()))
            .chain(
                design
                    .settings
                    .iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.clone())),
            )
            .collect();
        Ok(plan)
    }

    fn checks_on_client_only(&self, _: &LoadOptions) -> Option<String> {
        let table = &self.design.table;
        (!table.transactional).then(|| format!(
            "{} is {}, which is not transactional: rows written to check them could not be rolled back, so the values were checked on the client only; its keys, CHECK constraints, foreign keys and triggers were not",
            table.qualified(),
            table.engine
        ))
    }

    fn writers(&self, opts: &LoadOptions, ordered: bool) -> usize {
        // A table lock belongs to one session; a distributed write's part is one XA
        // transaction.
        match ordered || opts.truncate || opts.table_lock || opts.prepare.is_some() {
            true => 1,
            false => opts.connections.max(1),
        }
    }

    fn writer(
        &mut self,
        columns: &[TargetColumn],
        plan: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Writer>> {
        let (design, table) = (&self.design, &self.table);
        let qualified = design.table.qualified();
        // Keys the plan checks after the load, once over the rows, instead of row by row.
        let deferred: Vec<ForeignKey> = design
            .table
            .foreign_keys
            .iter()
            .filter(|k| {
                plan.foreign_keys
                    .iter()
                    .any(|d| d.name == k.name && d.action == IndexAction::Rebuild)
            })
            .cloned()
            .collect();
        // A load that changes none of the table's definitions lets its lock go once every
        // writer has the table open in its transaction (see `crate::claim`).
        let shares = !(opts.truncate
            || opts.table_lock
            || table.create_sql.is_some()
            || !plan.rebuilt().is_empty());
        // A distributed write's part: its one XA transaction (see `crate::job`).
        let xa = match &opts.prepare {
            Some(part) => Some((crate::job::part_gid(part)?, part.clone())),
            None => None,
        };
        let start = match &xa {
            Some((gid, _)) => format!("XA START '{gid}'"),
            None => "START TRANSACTION".to_string(),
        };
        let rt = runtime()?;
        let (conn, books) = self.options.run(&rt, async {
            let mut conn = self.options.connect().await?;
            // Where the transaction marks its commit and the load records itself: made before
            // the transaction opens (DDL would commit it); a load that commits at its end only.
            let books = match resume.is_none() && !opts.check_only && xa.is_none() {
                true => Books {
                    mark: outcome::prepare(&mut conn)
                        .await
                        .then(|| outcome::token(conn.id())),
                    record: inrush_load::commits::may_record(opts)
                        && crate::commits::create(&mut conn).await.is_ok(),
                },
                false => Books::default(),
            };
            // Under --resume each block is a transaction of its own. LOCK TABLES commits the
            // open transaction and START TRANSACTION releases the lock, so a locked load's
            // transaction is the one autocommit=0 opens, as the manual prescribes for InnoDB.
            // Under LOCK TABLES a session writes only the tables it locked: the load's mark and
            // record are written in its transaction.
            let mut records = String::new();
            if books.record {
                records.push_str(", inrush_load_commits WRITE");
            }
            if books.mark.is_some() {
                records.push_str(&format!(", {}", outcome::LOCK));
            }
            let mut begin = match (resume, opts.table_lock) {
                (Some(_), _) => Vec::new(),
                (None, true) => vec![
                    "SET SESSION autocommit = 0".to_string(),
                    format!("LOCK TABLES {qualified} WRITE{records}"),
                ],
                (None, false) if shares => vec![start.clone(), claim::pin_sql(&qualified)],
                (None, false) => vec![start.clone()],
            };
            if opts.truncate {
                // TRUNCATE would commit at once: DELETE keeps a failed load's rows as they were.
                begin.push(format!("DELETE FROM {qualified}"));
            }
            // After the DELETE, which must still honour the keys that reference this table.
            if !deferred.is_empty() {
                begin.push("SET SESSION foreign_key_checks = 0".into());
            }
            for sql in begin {
                conn.query_drop(&sql).await.map_err(|e| {
                    // The server says only "access denied to database" (1044).
                    let lock_denied = sql.starts_with("LOCK TABLES")
                        && matches!(&e, mysql_async::Error::Server(s) if s.code == 1044);
                    let what = match lock_denied {
                        true => format!(
                            "starting the load of {qualified} (--table-lock needs the LOCK TABLES privilege on the database: GRANT LOCK TABLES ON {}.* TO <user>)",
                            catalog::quote(&self.design.table.schema)
                        ),
                        false => format!("starting the load of {qualified}"),
                    };
                    engine_error(what)(e)
                })?;
            }
            Ok::<_, Error>((conn, books))
        })?;
        if shares {
            // As many writers as the drive makes (`inrush_load::drive::load_into`).
            let ordered = opts.max_errors > 0 || opts.on_conflict != OnConflict::Error;
            self.writers_made += 1;
            if self.writers_made >= self.writers(opts, ordered).max(1) {
                self.let_claim_go();
            }
        }
        let design = &self.design;
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        let conflict = match opts.on_conflict {
            OnConflict::Error => Conflict::Error,
            OnConflict::Skip => Conflict::Skip,
            OnConflict::Update => Conflict::Replace,
        };
        let watch = writer::interrupt_watch(self.options, conn.id(), &opts.interrupt);
        Ok(Box::new(MysqlWriter {
            conn: Some(conn),
            chunks: ChunkWriter::new(
                &qualified,
                &names,
                conflict,
                design.method,
                (!design.table.transactional).then(|| design.table.engine.clone()),
            ),
            rt,
            resume: resume.map(|file| (qualified.clone(), file.clone())),
            deferred,
            locked: opts.table_lock,
            xa,
            options: self.options.clone(),
            table: (design.table.schema.clone(), design.table.name.clone()),
            books,
            network_timeout: opts.network_timeout,
            interrupt: opts.interrupt.clone(),
            _watch: watch,
        }))
    }

    fn still_dropped(&mut self) -> Vec<String> {
        let design = &self.design;
        let table = (design.table.schema.as_str(), design.table.name.as_str());
        let pending = runtime().and_then(|rt| {
            self.options.run(&rt, async {
                let mut conn = self.options.connect().await?;
                ddl::pending(&mut conn, Some(table)).await
            })
        });
        let named = |d: &Dropped| match d.index == ddl::KEYS_DISABLED {
            true => "non-unique keys (disabled)".to_string(),
            false => format!("index {}", d.index),
        };
        match pending {
            Ok(pending) => pending.iter().map(named).collect(),
            // The server is gone (killed after the commit, say: `tests/mariadb_faults.rs`), so
            // its journal cannot be read: what this load dropped and `end` could not put back
            // is what the journal holds, and the exit 8 message must still name it.
            Err(_) => self.dropped.iter().map(named).collect(),
        }
    }

    fn unfinished_loads(&mut self) -> Result<Vec<(String, inrush_load::commits::EarlierLoad)>> {
        let design = &self.design;
        let table = (design.table.schema.as_str(), design.table.name.as_str());
        self.options.run(&runtime()?, async {
            let mut conn = self.options.connect().await?;
            let loads = crate::commits::unfinished(&mut conn, table).await?;
            let _ = conn.disconnect().await;
            Ok(loads)
        })
    }

    fn forget_load(&mut self, identity: &str) -> Result<()> {
        let design = &self.design;
        let table = (design.table.schema.as_str(), design.table.name.as_str());
        self.options.run(&runtime()?, async {
            let mut conn = self.options.connect().await?;
            crate::commits::forget(&mut conn, table, identity).await?;
            let _ = conn.disconnect().await;
            Ok(())
        })
    }

    fn ledger(&mut self, input: &InputFile) -> Result<Vec<Block>> {
        let design = &self.design;
        self.options.run(&runtime()?, async {
            let mut conn = self.options.connect().await?;
            let blocks = crate::ledger::open(&mut conn, &design.table.qualified(), input).await?;
            let _ = conn.disconnect().await;
            Ok(blocks)
        })
    }

    fn begin(&mut self, plan: &mut LoadPlan, opts: &LoadOptions) -> Result<bool> {
        if opts.check_only {
            return Ok(false);
        }
        self.redo_before = self.redo_position();
        // DDL commits at once: --create's table is made here, and dropped again by `end` when
        // the load does not commit.
        if let Some(sql) = &self.table.create_sql {
            self.options.run(&runtime()?, async {
                let mut conn = self.options.connect().await?;
                conn.query_drop(sql).await.map_err(|e| match e {
                    mysql_async::Error::Server(e) => Error::Usage(format!(
                        "--create: the server refused {sql}: {} (a type given with --types?)",
                        e.message
                    )),
                    e => engine_error("creating the table")(e),
                })?;
                let _ = conn.disconnect().await;
                Ok::<_, Error>(())
            })?;
        }
        let names: Vec<String> = plan.rebuilt().into_iter().map(|i| i.name).collect();
        if names.is_empty() {
            return Ok(false);
        }
        let design = &self.design;
        let (schema, name) = (&design.table.schema, &design.table.name);
        let dropped = self.options.run(&runtime()?, async {
            let mut conn = self.options.connect().await?;
            // An ALTER TABLE waits for every session that has the table open in a transaction
            // (and, waiting, makes new ones wait behind it): a signal must end that wait.
            // Where the load records itself as it commits (`crate::commits`): DDL, so not
            // inside the load's transactions.
            let watch = writer::interrupt_watch(self.options, conn.id(), &design.interrupt);
            let dropped = async {
                let bound = format!(
                    "SET SESSION lock_wait_timeout = {}",
                    inrush_load::plan::DROP_LOCK_WAIT_SECONDS
                );
                conn.query_drop(&bound).await.map_err(engine_error(bound))?;
                crate::commits::create(&mut conn).await?;
                Ok::<_, Error>(match design.table.disables_keys() {
                    true => vec![ddl::journal_and_disable_keys(&mut conn, schema, name).await?],
                    false => {
                        let dropped = ddl::definitions(&mut conn, schema, name, &names).await?;
                        ddl::journal_and_drop(&mut conn, &dropped).await?;
                        dropped
                    }
                })
            }
            .await;
            drop(watch);
            let dropped = match dropped {
                Ok(dropped) => dropped,
                Err(_) if design.interrupt.cancels() => {
                    // The DDL was ended part way: what the journal names goes back (an index
                    // still there is left as it is), on a connection no watch ends.
                    let _ = conn.disconnect().await;
                    let mut fresh = self.options.connect().await?;
                    let leftovers = ddl::pending(&mut fresh, Some((schema, name))).await?;
                    ddl::restore(&mut fresh, &leftovers).await?;
                    let _ = fresh.disconnect().await;
                    return Err(Error::Interrupted);
                }
                // Refused, or given up on, before anything was dropped (one ALTER TABLE drops
                // them all): the load goes on with the indexes, as it would have without rows
                // enough.
                Err(e) if crate::refused_a_right(&e) || crate::waited_too_long(&e) => {
                    let mut fresh = self.options.connect().await?;
                    if let Ok(journaled) = ddl::pending(&mut fresh, Some((schema, name))).await {
                        ddl::restore(&mut fresh, &journaled).await?;
                    }
                    let why = match crate::waited_too_long(&e) {
                        true => format!(
                            "{}; {}",
                            inrush_load::plan::held_open(name),
                            crate::catalog::lock_holders(&mut fresh, schema, name).await
                        ),
                        false => format!(
                            "{e} (dropping them needs the ALTER and INDEX rights on the table and CREATE in its database, for the tables where inrush journals them and records its commit)"
                        ),
                    };
                    let _ = fresh.disconnect().await;
                    return Ok(Err(why));
                }
                Err(e) => return Err(e),
            };
            let _ = conn.disconnect().await;
            Ok(Ok(dropped))
        })?;
        match dropped {
            Ok(dropped) => self.dropped = dropped,
            Err(why) => {
                plan.keep_after_all(&why);
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn end(
        &mut self,
        plan: &LoadPlan,
        opts: &LoadOptions,
        committed: bool,
        _: &dyn inrush_core::Reporter,
    ) -> Result<Committed> {
        let mut done = Committed::default();
        done.notes.extend(self.design.method_note.clone());
        if let (Some(_), false) = (&self.table.create_sql, committed) {
            let sql = format!("DROP TABLE IF EXISTS {}", self.table.name);
            self.options.run(&runtime()?, async {
                let mut conn = self.options.connect().await?;
                conn.query_drop(&sql)
                    .await
                    .map_err(engine_error(sql.clone()))?;
                let _ = conn.disconnect().await;
                Ok::<_, Error>(())
            })?;
            return Ok(done);
        }
        // The redo of the rows (and of whatever else ran meanwhile), before the indexes.
        if let (true, Some(before)) = (committed, self.redo_before) {
            done.log = self.redo_position().map(|after| Log {
                name: "redo log",
                bytes: after.saturating_sub(before),
            });
        }
        let dropped = std::mem::take(&mut self.dropped);
        if !dropped.is_empty() {
            let started = Instant::now();
            let restored = runtime().and_then(|rt| {
                self.options.run(&rt, async {
                    let mut conn = self.options.connect().await?;
                    let restored = restore_bounded(self.options, &mut conn, &dropped, opts).await;
                    let _ = conn.disconnect().await;
                    restored
                })
            });
            if let Err(e) = restored {
                // Kept for `still_dropped`, which names them when the journal cannot be read.
                self.dropped = dropped;
                return Err(e);
            }
            done.rebuild_seconds = started.elapsed().as_secs_f64();
            done.steps.push(
                match dropped.iter().any(|d| d.index == ddl::KEYS_DISABLED) {
                    true => "non-unique indexes built again by ALTER TABLE ... ENABLE KEYS".into(),
                    false => format!(
                        "indexes built again in one ALTER TABLE: {}",
                        dropped
                            .iter()
                            .map(|d| d.index.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
            );
        }
        if !committed {
            return Ok(done);
        }
        let design = &self.design;
        if !design.table.transactional {
            done.notes.push(format!(
                "{} is {}, which is not transactional: its rows went in without a transaction, so a load into it that fails keeps the rows written before the failure",
                design.table.qualified(),
                design.table.engine
            ));
        }
        if plan.after == Maintenance::None {
            return Ok(done);
        }
        let started = Instant::now();
        let sql = format!("ANALYZE TABLE {}", design.table.qualified());
        let analyzed = self.options.run(&runtime()?, async {
            let mut conn = self.options.connect().await?;
            let result: Vec<(String, String, String, String)> =
                conn.query(&sql).await.map_err(engine_error(sql.clone()))?;
            let _ = conn.disconnect().await;
            Ok::<_, Error>(result)
        });
        match analyzed {
            Ok(_) => done.steps.push(sql),
            // The rows are committed; only the statistics are missing.
            Err(e) => done.notes.push(format!("{sql} failed: {e}")),
        }
        done.maintain_seconds = started.elapsed().as_secs_f64();
        Ok(done)
    }
}

/// Checks and writes the fields of a row as a `LOAD DATA` line.
struct Encoder {
    checks: Vec<ColumnCheck>,
}

impl RowEncoder for Encoder {
    fn worker(&self, _: bool) -> Box<dyn RowWriter + '_> {
        Box::new(self)
    }

    /// No array types and no booleans: lists go as JSON, which a JSON or text column keeps,
    /// booleans as 1 and 0, which are MariaDB's TRUE and FALSE (`true` is no integer's text).
    fn text_forms(&self) -> inrush_arrow::TextForms {
        inrush_arrow::TextForms::WITHOUT_ARRAYS
    }

    /// A timestamp with a zone has no text `LOAD DATA` reads into DATETIME or TIMESTAMP (the
    /// zone's suffix is refused, and without it the instant would be read in the session's).
    fn coercion(
        &self,
        field: &inrush_arrow::Field,
        _: usize,
        target: &TargetColumn,
    ) -> inrush_arrow::Result<inrush_arrow::Coercion> {
        let zoned = matches!(
            field.data_type(),
            inrush_arrow::DataType::Timestamp(_, Some(_))
        );
        if zoned
            && matches!(
                target.sql_type,
                SqlType::Timestamp(_) | SqlType::TimestampTz(_)
            )
        {
            return Err(inrush_arrow::Error::Incompatible {
                column: target.name.clone(),
                arrow_type: field.data_type().to_string(),
                target: target.type_sql.clone(),
                why: Some("LOAD DATA reads no time zone".into()),
            });
        }
        inrush_arrow::Coercion::text(field, target, self.text_forms())
    }
}

impl RowWriter for &Encoder {
    fn row(&mut self, fields: &[Option<&str>], at: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        self.line(out, |i, check, out| {
            check.write(fields[i], at.plain.has(i), out)
        })
    }

    /// Binary values go as their bytes: the text forms would store their `\x` hex.
    fn arrow_row(
        &mut self,
        columns: &[Prepared],
        row: usize,
        at: At,
        texts: &mut ValueTexts,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        // MariaDB's text and BLOB columns hold NUL bytes, which LOAD DATA reads as they are.
        texts.render_but_bytes(columns, row, true)?;
        let ValueTexts { text, spans } = texts;
        self.line(out, |i, check, out| match columns[i].bytes(row) {
            Some(bytes) => check.write_bytes(bytes, out),
            None => check.write(spans[i].clone().map(|r| &text[r]), at.plain.has(i), out),
        })
    }
}

impl Encoder {
    /// One `LOAD DATA` line of the fields `field` writes, column by column; a refused field
    /// leaves `out` as it was.
    fn line(
        &self,
        out: &mut Vec<u8>,
        mut field: impl FnMut(usize, &ColumnCheck, &mut Vec<u8>) -> Result<(), String>,
    ) -> Result<(), Refused> {
        let mark = out.len();
        for (i, check) in self.checks.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            if let Err(reason) = field(i, check, out) {
                out.truncate(mark);
                return Err(Refused::Value(i, reason));
            }
        }
        out.push(b'\n');
        Ok(())
    }
}

/// Puts `dropped` back, waiting for a table another session keeps open at most
/// [`inrush_load::patience::REBUILD_LOCK_WAIT`] ([`ddl::restore`]), or until a second stop. Unlike PostgreSQL's rebuild, which asks for
/// its lock a moment at a time ([`inrush_load::patience`]), it asks once: MariaDB's `ALTER TABLE`
/// takes the table's metadata lock again at its end, where an attempt given up would throw the
/// built indexes away.
async fn restore_bounded(
    options: &MysqlOptions,
    conn: &mut mysql_async::Conn,
    dropped: &[ddl::Dropped],
    opts: &LoadOptions,
) -> Result<()> {
    let started = Instant::now();
    let watch = writer::lock_wait_watch(options, conn.id(), &opts.interrupt);
    let restored = ddl::restore(conn, dropped).await;
    drop(watch);
    match restored {
        Err(e) if crate::waited_too_long(&e) || opts.interrupt.again() && crate::ended(&e) => {
            let stopped = !crate::waited_too_long(&e);
            let table = dropped.first().map_or(String::new(), |d| {
                format!("{}.{}", catalog::quote(&d.schema), catalog::quote(&d.table))
            });
            let names: Vec<&str> = dropped
                .iter()
                .map(|d| match d.index == ddl::KEYS_DISABLED {
                    true => "non-unique indexes (ENABLE KEYS)",
                    false => d.index.as_str(),
                })
                .collect();
            let what = format!("indexes {}", names.join(", "));
            let holders = match dropped.first() {
                Some(d) => format!(
                    " ({})",
                    catalog::lock_holders(conn, &d.schema, &d.table).await
                ),
                None => String::new(),
            };
            Err(Error::Engine {
                engine: "MariaDB",
                what: "after the load".into(),
                message: gave_up(&what, &table, &holders, stopped, started.elapsed()),
                code: None,
            })
        }
        restored => restored,
    }
}

//! The DDL journal: the exact definition of everything inrush drops (secondary indexes, primary
//! keys and unique constraints, foreign keys), written to `inrush.ddl_journal` in the target
//! database and committed on its own before the drop. A rebuild removes the entry in the
//! transaction that recreates the object, so whatever stops a load (an error, Ctrl-C, a killed
//! process, a lost server), the journal still names what is missing, and `inrush recover` (or
//! the next load of that table) puts it back.
//!
//! A definition alone loses what is not part of it: an index comes back with its tablespace
//! (set in the definition, see [`crate::TableInfo::indexes`]), and an entry's `follow_up`
//! restores its comments, statistics targets, `CLUSTER ON`, replica identity and extension
//! dependencies in the transaction that clears the entry.

use crate::catalog::{relations_exist, ForeignKeyInfo, IndexInfo};
use crate::{query_error, quote_ident, ConnectOptions, Error, Result, TableInfo};
use inrush_core::catalog::{ConstraintKind, Firing};
use inrush_load::patience::{Patience, Waited};
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio_postgres::Client;

const CREATE_JOURNAL: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.ddl_journal ( \
       id bigserial PRIMARY KEY, \
       table_oid oid NOT NULL, \
       table_name text NOT NULL, \
       kind text NOT NULL, \
       name text NOT NULL, \
       definition text NOT NULL, \
       attach text, \
       validate boolean NOT NULL DEFAULT false, \
       follow_up text, \
       journaled_at timestamptz NOT NULL DEFAULT now())";

/// Columns added after the journal's first version: a journal written by an older inrush is
/// brought up to date before it is read or written (idempotent).
const MIGRATE_JOURNAL: &str =
    "ALTER TABLE inrush.ddl_journal ADD COLUMN IF NOT EXISTS attach text, \
     ADD COLUMN IF NOT EXISTS validate boolean NOT NULL DEFAULT false, \
     ADD COLUMN IF NOT EXISTS follow_up text";

const INDEX: &str = "index";
const FOREIGN_KEY: &str = "foreign key";
const TRIGGER: &str = "trigger";

/// One dropped object waiting to be recreated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub id: i64,
    pub table_oid: u32,
    /// `"schema"."table"` when journaled, for messages.
    pub table_name: String,
    /// `index`, `foreign key` or `trigger`.
    pub kind: String,
    /// The index's or the foreign key's name.
    pub name: String,
    /// The statement that recreates it (for a foreign key: without NOT VALID).
    pub definition: String,
    /// For the index of a primary key or unique constraint: the `ALTER TABLE ... ADD CONSTRAINT
    /// ... USING INDEX` that turns it back into the constraint, run once every index is built
    /// (it takes an ACCESS EXCLUSIVE lock, which would deadlock against builds in progress).
    pub attach: Option<String>,
    /// A foreign key to VALIDATE once added back (it was valid before the load).
    pub validate: bool,
    /// What the definition leaves out (comments, statistics targets, `CLUSTER ON`, replica
    /// identity, extension dependencies): statements run after the object is back, in the
    /// transaction that clears the entry; for an index, once every index is built, after its
    /// `attach` (see [`crate::catalog::IndexExtras::follow_up`]).
    pub follow_up: Option<String>,
}

impl JournalEntry {
    /// An index whose entry waits for the second step of [`restore`]: its constraint, or what
    /// its definition leaves out.
    fn finished_later(&self) -> bool {
        self.kind == INDEX && (self.attach.is_some() || self.follow_up.is_some())
    }
}

/// What is journaled and dropped for one object.
struct Dropped {
    kind: &'static str,
    name: String,
    definition: String,
    attach: Option<String>,
    validate: bool,
    follow_up: Option<String>,
    drop: String,
}

/// Journals `indexes`, `foreign_keys` and `triggers` (name, how it fires) of `table`
/// (committed), then drops the first two and disables the triggers (committed), waiting at most
/// [`inrush_load::plan::DROP_LOCK_WAIT_SECONDS`] for each lock ([`crate::Error::is_lock_timeout`]
/// past it, with nothing dropped). Needs the right to create the `inrush` schema (or its
/// existence) and ownership of the table.
pub async fn journal_and_drop(
    client: &Client,
    table: &TableInfo,
    indexes: &[IndexInfo],
    foreign_keys: &[ForeignKeyInfo],
    triggers: &[(String, Firing)],
) -> Result<Vec<JournalEntry>> {
    let qualified = table.qualified();
    let mut objects = dropped_indexes(client, table, indexes).await?;
    let fk_names: Vec<&str> = foreign_keys.iter().map(|fk| fk.name.as_str()).collect();
    let mut fk_comments = table.foreign_key_comments(client, &fk_names).await?;
    for fk in foreign_keys {
        let body = fk.definition.trim_end_matches(" NOT VALID");
        objects.push(Dropped {
            kind: FOREIGN_KEY,
            name: fk.name.clone(),
            definition: format!(
                "ALTER TABLE {qualified} ADD CONSTRAINT {} {body}",
                quote_ident(&fk.name)
            ),
            attach: None,
            validate: fk.validated,
            follow_up: fk_comments.remove(&fk.name),
            drop: format!(
                "ALTER TABLE {qualified} DROP CONSTRAINT {}",
                quote_ident(&fk.name)
            ),
        });
    }
    for (name, firing) in triggers {
        // Back to exactly the firing mode it had.
        let mode = match firing {
            Firing::Always => "ENABLE ALWAYS",
            Firing::Replica => "ENABLE REPLICA",
            Firing::Origin | Firing::Disabled => "ENABLE",
        };
        objects.push(Dropped {
            kind: TRIGGER,
            name: name.clone(),
            definition: format!(
                "ALTER TABLE {qualified} {mode} TRIGGER {}",
                quote_ident(name)
            ),
            attach: None,
            validate: false,
            follow_up: None,
            drop: format!(
                "ALTER TABLE {qualified} DISABLE TRIGGER {}",
                quote_ident(name)
            ),
        });
    }
    crate::own::create(client, &format!("{CREATE_JOURNAL}; {MIGRATE_JOURNAL}"))
        .await
        .map_err(query_error("creating the inrush.ddl_journal table"))?;
    let mut entries = Vec::with_capacity(objects.len());
    client
        .batch_execute("BEGIN")
        .await
        .map_err(query_error("BEGIN"))?;
    for o in &objects {
        let row = client
            .query_one(
                "INSERT INTO inrush.ddl_journal (table_oid, table_name, kind, name, definition, attach, validate, follow_up) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                &[&table.oid, &qualified, &o.kind, &o.name, &o.definition, &o.attach, &o.validate, &o.follow_up],
            )
            .await
            .map_err(query_error("writing the DDL journal"))?;
        entries.push(JournalEntry {
            id: row.get(0),
            table_oid: table.oid,
            table_name: qualified.clone(),
            kind: o.kind.to_string(),
            name: o.name.clone(),
            definition: o.definition.clone(),
            attach: o.attach.clone(),
            validate: o.validate,
            follow_up: o.follow_up.clone(),
        });
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(query_error("committing the DDL journal"))?;
    let drops: Vec<&str> = objects.iter().map(|o| o.drop.as_str()).collect();
    // Each drop waits for every session that has the table open in a transaction, and new
    // queries of the table wait behind it: past the bound the indexes stay.
    let dropped = client
        .batch_execute(&format!(
            "BEGIN; SET LOCAL lock_timeout = '{}s'; {}; COMMIT",
            inrush_load::plan::DROP_LOCK_WAIT_SECONDS,
            drops.join("; ")
        ))
        .await;
    if let Err(source) = dropped {
        let _ = client.batch_execute("ROLLBACK").await;
        // Nothing was dropped: the journal entries must not survive to be "restored".
        forget(client, &entries).await?;
        return Err(Error::Query {
            what: "dropping indexes and foreign keys before the load".into(),
            cause: source,
        });
    }
    Ok(entries)
}

/// How each of `indexes` is dropped and put back whole (see [`crate::catalog::IndexExtras`]);
/// an error when one could not be built again in its tablespace.
async fn dropped_indexes(
    client: &Client,
    table: &TableInfo,
    indexes: &[IndexInfo],
) -> Result<Vec<Dropped>> {
    let qualified = table.qualified();
    let names: Vec<&str> = indexes.iter().map(|i| i.name.as_str()).collect();
    let mut extras = table.index_extras(client, &names).await?;
    if let Some(denied) = extras.values().find_map(|e| e.denied_tablespaces.as_ref()) {
        // Dropped, the index could not be built again where it was.
        return Err(Error::Permission(format!(
            "the current user may not create indexes in tablespace {denied}"
        )));
    }
    let mut objects = Vec::new();
    for i in indexes {
        let extras = extras.remove(&i.name).unwrap_or_default();
        let clause = match i.constraint_kind {
            Some(ConstraintKind::PrimaryKey) => Some("PRIMARY KEY"),
            Some(ConstraintKind::Unique) => Some("UNIQUE"),
            Some(ConstraintKind::Exclusion) | None => None,
        };
        let (attach, drop) = match (&i.constraint, clause) {
            (Some(constraint), Some(clause)) => {
                let attach = format!(
                    "ALTER TABLE {qualified} ADD CONSTRAINT {} {clause} USING INDEX {}{}",
                    quote_ident(constraint),
                    quote_ident(&i.name),
                    extras.deferral
                );
                (
                    Some(attach),
                    format!(
                        "ALTER TABLE {qualified} DROP CONSTRAINT {}",
                        quote_ident(constraint)
                    ),
                )
            }
            _ => (
                None,
                format!(
                    "DROP INDEX {}.{}",
                    quote_ident(&table.schema),
                    quote_ident(&i.name)
                ),
            ),
        };
        objects.push(Dropped {
            kind: INDEX,
            name: i.name.clone(),
            definition: i.definition.clone(),
            attach,
            validate: false,
            follow_up: extras.follow_up,
            drop,
        });
    }
    Ok(objects)
}

async fn forget(client: &Client, entries: &[JournalEntry]) -> Result<()> {
    let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
    client
        .execute("DELETE FROM inrush.ddl_journal WHERE id = ANY($1)", &[&ids])
        .await
        .map_err(query_error("clearing the DDL journal"))?;
    Ok(())
}

/// The advisory lock key of a table's definitions: "inru" in the high half, the oid in the low.
fn claim_key(table_oid: u32) -> i64 {
    (0x696E_7275_i64 << 32) | i64::from(table_oid)
}

/// Tries to claim `table_oid`'s definitions for this session alone: false when another inrush
/// session loads or recovers that table. A session that drops, rebuilds or recovers
/// definitions, or takes a strong lock on the table (TRUNCATE, LOCK TABLE), must hold the
/// claim alone: its DDL would wait on another load's open COPY transactions while that load's
/// later COPYs queue behind the DDL, a deadlock that runs through the client and that the
/// server cannot see. Loads that change no definition share the claim ([`share_claim`]). It is
/// a session-level advisory lock: it ends with the connection, whatever ends the process.
pub async fn claim(client: &Client, table_oid: u32) -> Result<bool> {
    Ok(client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&claim_key(table_oid)])
        .await
        .map_err(query_error("claiming the table's definitions"))?
        .get(0))
}

/// Tries to share the claim on `table_oid`'s definitions: false while a session holds it alone.
pub async fn share_claim(client: &Client, table_oid: u32) -> Result<bool> {
    Ok(client
        .query_one(
            "SELECT pg_try_advisory_lock_shared($1)",
            &[&claim_key(table_oid)],
        )
        .await
        .map_err(query_error("sharing the claim on the table's definitions"))?
        .get(0))
}

/// Waits for the claim (alone, or shared), however long the holder takes; cancel the query to
/// stop waiting.
pub async fn wait_for_claim(client: &Client, table_oid: u32, alone: bool) -> Result<()> {
    let sql = match alone {
        true => "SELECT pg_advisory_lock($1)",
        false => "SELECT pg_advisory_lock_shared($1)",
    };
    client
        .execute(sql, &[&claim_key(table_oid)])
        .await
        .map_err(query_error(
            "waiting for another inrush session of the table to end",
        ))?;
    Ok(())
}

/// Turns a claim held alone into a shared one (the load changes no definition after all), so
/// other loads of the table may run beside it.
pub async fn share_own_claim(client: &Client, table_oid: u32) -> Result<()> {
    client
        .execute(
            "SELECT pg_advisory_lock_shared($1), pg_advisory_unlock($1)",
            &[&claim_key(table_oid)],
        )
        .await
        .map_err(query_error("sharing the claim on the table's definitions"))?;
    Ok(())
}

/// The claim on a table's definitions in `pg_locks`, `$1` its key: a `bigint` advisory lock
/// shows its halves as `classid` and `objid`, and `objsubid` 1.
const CLAIM_LOCKS: &str = "FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 \
    AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid \
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())";

/// Lets go of this session's claim on `table_oid`'s definitions, which are all in place by
/// now, and tells whether another session holds it or waits for it still: a load of the
/// table that ends later. Of loads that end one after the other, each lets go before it
/// looks, so the last to look finds no other, whatever the order.
pub async fn release_claim(client: &Client, table_oid: u32) -> Result<bool> {
    let key = claim_key(table_oid);
    let what = "letting go of the claim on the table's definitions";
    client
        .execute(
            &format!(
                "SELECT CASE l.mode WHEN 'ExclusiveLock' THEN pg_advisory_unlock($1) \
                 ELSE pg_advisory_unlock_shared($1) END {CLAIM_LOCKS} \
                 AND l.granted AND l.pid = pg_backend_pid()"
            ),
            &[&key],
        )
        .await
        .map_err(query_error(what))?;
    let sql = format!("SELECT EXISTS (SELECT 1 {CLAIM_LOCKS} AND l.pid <> pg_backend_pid())");
    Ok(client
        .query_one(&sql, &[&key])
        .await
        .map_err(query_error(what))?
        .get(0))
}

/// Validates a foreign key that is NOT VALID: it reads the table, taking no lock that stops
/// writers.
pub async fn validate_foreign_key(
    client: &Client,
    table: &str,
    constraint: &str,
) -> std::result::Result<(), tokio_postgres::Error> {
    let sql = format!(
        "ALTER TABLE {table} VALIDATE CONSTRAINT {}",
        quote_ident(constraint)
    );
    client.batch_execute(&sql).await
}

/// Journal entries still waiting, for one table or all; empty when there is no journal.
pub async fn pending(client: &Client, table_oid: Option<u32>) -> Result<Vec<JournalEntry>> {
    if !relations_exist(client, &["inrush.ddl_journal"]).await? {
        return Ok(Vec::new());
    }
    client
        .batch_execute(MIGRATE_JOURNAL)
        .await
        .map_err(query_error("upgrading the inrush.ddl_journal table"))?;
    let rows = client
        .query(
            "SELECT id, table_oid, table_name, kind, name, definition, attach, validate, follow_up FROM inrush.ddl_journal \
             WHERE $1::oid IS NULL OR table_oid = $1 ORDER BY id",
            &[&table_oid],
        )
        .await
        .map_err(query_error("reading the DDL journal"))?;
    Ok(rows
        .iter()
        .map(|r| JournalEntry {
            id: r.get(0),
            table_oid: r.get(1),
            table_name: r.get(2),
            kind: r.get(3),
            name: r.get(4),
            definition: r.get(5),
            attach: r.get(6),
            validate: r.get(7),
            follow_up: r.get(8),
        })
        .collect())
}

/// Recreates journaled objects, in three steps:
/// 1. indexes, over up to `parallel` connections taking the next index from a shared queue
///    (so one wide index does not leave the other lanes idle), each with at least 256MB of
///    maintenance_work_mem; a plain index's journal entry goes in the transaction that builds it;
/// 2. once every build is done, one connection turns unique indexes back into their primary key
///    or unique constraints (`USING INDEX`) and runs what the indexes' definitions leave out
///    (both lock the table), each index's in the transaction that clears its entry;
/// 3. foreign keys, added back NOT VALID with their comments (clearing their entry), then
///    validated, which only reads.
///
/// Each statement waits for its lock on a table another session keeps open as `patience` says
/// ([`Session::attempt`]), so the table's other queries are not held behind it;
/// given up, it is [`Error::HeldOpen`] and the entry stays. An object that exists again
/// (someone recreated it) only loses its entry. Rows that break a key are
/// [`Error::UniqueViolated`]; a foreign key they break stays NOT VALID and is reported as
/// [`Error::ForeignKeyViolated`] after everything else was restored.
pub async fn restore(
    target: &ConnectOptions,
    entries: &[JournalEntry],
    parallel: usize,
    patience: &Patience<'_>,
) -> Result<()> {
    let indexes: VecDeque<&JournalEntry> = entries.iter().filter(|e| e.kind == INDEX).collect();
    let lanes = parallel.clamp(1, indexes.len().max(1));
    let queue = Mutex::new(indexes);
    let next = || queue.lock().ok().and_then(|mut q| q.pop_front());
    let builds = (0..lanes).map(|_| async {
        let Some(mut entry) = next() else { return Ok(()) };
        let session = Session::open(target, patience).await?;
        session
            .client
            .batch_execute(
                "SELECT set_config('maintenance_work_mem', \
                 greatest(pg_size_bytes(current_setting('maintenance_work_mem')), pg_size_bytes('256MB'))::text || 'B', false)",
            )
            .await
            .map_err(query_error("raising maintenance_work_mem for index builds"))?;
        loop {
            session
                .attempt(entry, async || build_index(&session.client, entry).await)
                .await?;
            match next() {
                Some(e) => entry = e,
                None => return Ok::<_, Error>(()),
            }
        }
    });
    // Every lane runs to its end before the first error is returned: no build is left behind.
    let results = futures_util::future::join_all(builds).await;
    results.into_iter().collect::<Result<Vec<()>>>()?;

    let to_finish: Vec<&JournalEntry> = entries.iter().filter(|e| e.finished_later()).collect();
    let foreign_keys: Vec<&JournalEntry> =
        entries.iter().filter(|e| e.kind == FOREIGN_KEY).collect();
    let triggers: Vec<&JournalEntry> = entries.iter().filter(|e| e.kind == TRIGGER).collect();
    if to_finish.is_empty() && foreign_keys.is_empty() && triggers.is_empty() {
        return Ok(());
    }
    let session = Session::open(target, patience).await?;
    let client = &session.client;
    for entry in to_finish {
        session
            .attempt(entry, async || finish_index(client, entry).await)
            .await?;
    }
    for entry in triggers {
        let enabled = "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1 AND tgname = $2 AND tgenabled <> 'D')";
        let enable =
            async || in_journal_tx(client, entry, Some(enabled), &entry.definition, true).await;
        session.attempt(entry, enable).await?;
    }
    let mut violated = None;
    for entry in foreign_keys {
        session
            .attempt(entry, async || add_foreign_key(client, entry).await)
            .await?;
        if entry.validate {
            let validate = async || {
                validate_foreign_key(client, &entry.table_name, &entry.name)
                    .await
                    .map_err(|cause| Error::Query {
                        what: format!("validating {}", entry.name),
                        cause,
                    })
            };
            let Err(e) = session.attempt(entry, validate).await else {
                continue;
            };
            let Some(db) = e.db_error() else {
                return Err(e);
            };
            violated.get_or_insert(Error::ForeignKeyViolated {
                constraint: entry.name.clone(),
                table: entry.table_name.clone(),
                message: with_detail(db),
            });
        }
    }
    violated.map_or(Ok(()), Err)
}

/// A connection that puts definitions back, each statement waiting for its lock a moment at a
/// time (see [`inrush_load::patience`]).
struct Session<'p> {
    client: Client,
    patience: &'p Patience<'p>,
}

impl<'p> Session<'p> {
    /// Each attempt's lock wait outlasts `deadlock_timeout`: the wait that cancels an
    /// autovacuum of the table (which conflicts with every rebuild) happens then, and a
    /// shorter one would give way to it at every attempt.
    async fn open(target: &ConnectOptions, patience: &'p Patience<'p>) -> Result<Session<'p>> {
        let client = target.connect().await?;
        client
            .batch_execute(
                "SELECT set_config('lock_timeout', greatest(2000, setting::int + 1000)::text || 'ms', false) \
                 FROM pg_settings WHERE name = 'deadlock_timeout'",
            )
            .await
            .map_err(query_error("setting lock_timeout for putting definitions back"))?;
        Ok(Session { client, patience })
    }

    async fn attempt<T>(
        &self,
        entry: &JournalEntry,
        step: impl AsyncFnMut() -> Result<T>,
    ) -> Result<T> {
        let what = format!("{} {}", entry.kind, entry.name);
        let who = async || {
            let holders = crate::activity::holders_of(&self.client, entry.table_oid).await;
            match holders.unwrap_or_default().as_slice() {
                [] => String::new(),
                held => {
                    let sessions: Vec<String> = held.iter().map(|h| h.session()).collect();
                    format!(": {}", sessions.join(", "))
                }
            }
        };
        let retried =
            self.patience
                .retry(&what, &entry.table_name, step, Error::is_lock_timeout, who);
        retried.await.map_err(|e| match e {
            Waited::Failed(e) => e,
            Waited::GaveUp(why) => Error::HeldOpen(why),
        })
    }
}

fn with_detail(db: &tokio_postgres::error::DbError) -> String {
    match db.detail() {
        Some(detail) => format!("{} ({detail})", db.message()),
        None => db.message().to_string(),
    }
}

/// Runs `step` in a transaction that also deletes the entry (when `clear`), unless `exists` says
/// the object is there already or its table is gone. Duplicates or NULLs where a key is rebuilt
/// become [`Error::UniqueViolated`].
async fn in_journal_tx(
    client: &Client,
    entry: &JournalEntry,
    exists: Option<&str>,
    step: &str,
    clear: bool,
) -> Result<()> {
    let what = format!(
        "recreating {} {} of {}",
        entry.kind, entry.name, entry.table_name
    );
    client
        .batch_execute("BEGIN")
        .await
        .map_err(query_error(what.clone()))?;
    let present = match exists {
        Some(exists) => client
            .query_one(exists, &[&entry.table_oid, &entry.name])
            .await
            .map_err(query_error(what.clone()))?
            .get(0),
        None => false,
    };
    let table_exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = $1)",
            &[&entry.table_oid],
        )
        .await
        .map_err(query_error(what.clone()))?
        .get(0);
    if !present && table_exists {
        if let Err(source) = client.batch_execute(step).await {
            let _ = client.batch_execute("ROLLBACK").await;
            if let Some(db) = source
                .as_db_error()
                .filter(|db| matches!(db.code().code(), "23505" | "23502"))
            {
                return Err(Error::UniqueViolated {
                    constraint: entry.name.clone(),
                    table: entry.table_name.clone(),
                    message: with_detail(db),
                });
            }
            return Err(Error::Query {
                what,
                cause: source,
            });
        }
    }
    if clear {
        client
            .execute("DELETE FROM inrush.ddl_journal WHERE id = $1", &[&entry.id])
            .await
            .map_err(query_error(what.clone()))?;
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(query_error(what))?;
    Ok(())
}

const INDEX_EXISTS: &str =
    "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1 AND c.relname = $2)";

/// Builds an index; a plain one's entry is cleared with it, unless the second step still has
/// something to do ([`JournalEntry::finished_later`]).
async fn build_index(client: &Client, entry: &JournalEntry) -> Result<()> {
    in_journal_tx(
        client,
        entry,
        Some(INDEX_EXISTS),
        &entry.definition,
        !entry.finished_later(),
    )
    .await
}

/// The second step for a built index: its constraint attached (unless someone did), then what
/// its definition leaves out, in the transaction that clears its entry.
async fn finish_index(client: &Client, entry: &JournalEntry) -> Result<()> {
    let attached =
        "SELECT EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_class c ON c.oid = k.conindid \
                    WHERE k.conrelid = $1 AND c.relname = $2)";
    // After a crash between the two steps the index may be missing too: build it first.
    build_index(client, entry).await?;
    let follow_up = entry.follow_up.as_deref();
    match entry.attach.as_deref() {
        Some(attach) => {
            let step: Vec<&str> = [Some(attach), follow_up].into_iter().flatten().collect();
            in_journal_tx(client, entry, Some(attached), &step.join("; "), true).await
        }
        // Nothing says whether a crash came after them: they are idempotent, so they run again.
        None => in_journal_tx(client, entry, None, follow_up.unwrap_or_default(), true).await,
    }
}

async fn add_foreign_key(client: &Client, entry: &JournalEntry) -> Result<()> {
    // Added NOT VALID: adding checks nothing; VALIDATE checks, and only reads.
    let exists = "SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = $1 AND conname = $2)";
    let comment = entry
        .follow_up
        .as_ref()
        .map_or(String::new(), |f| format!("; {f}"));
    in_journal_tx(
        client,
        entry,
        Some(exists),
        &format!("{} NOT VALID{comment}", entry.definition),
        true,
    )
    .await
}

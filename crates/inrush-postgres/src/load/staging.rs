//! `--on-conflict skip|update`: rows go to an unlogged staging table first (parallel COPYs,
//! committed, touching only it), then one transaction merges them into the table with
//! `INSERT ... ON CONFLICT` and drops the staging table. The table itself changes only in that
//! transaction, so the load stays all or nothing; merging from several open transactions
//! instead would make them wait on each other's row locks until a commit that never comes.
//! That transaction is the load's commit window (see `inrush_core::interrupt`): a stop before
//! its COMMIT cancels the merge and rolls it back.

use super::cancel::until_interrupted;
use crate::{outcome, quote_ident, ConnectOptions, Error, TableInfo};
use inrush_core::TargetColumn;
use inrush_load::{LoadOptions, OnConflict, Result};
use tokio_postgres::Client;

pub(crate) struct Staging {
    /// `inrush."stage_<table oid>_<pid>"`.
    pub name: String,
    create: String,
    merge: String,
}

impl Staging {
    /// The extra column holding each row's place in the input (its order).
    pub const ORDINAL: &'static str = "inrush_ord";

    /// The staging table of a load of `columns` into `table`, as the plan decides it (a key
    /// to conflict on is read, the statements written); made by [`Staging::make`].
    pub async fn decide(
        client: &Client,
        table: &TableInfo,
        columns: &[TargetColumn],
        mode: OnConflict,
    ) -> inrush_load::Result<Staging> {
        // Refused before anything is made: a key to conflict on, and for update the one to
        // update by.
        let target = table.qualified();
        let key = primary_key(client, table).await?;
        let unique = table.indexes(client).await?.iter().any(|i| i.unique);
        mode.refuse_without_key(&target, unique, Some(!key.is_empty()))?;
        let name = format!(
            "inrush.{}",
            quote_ident(&format!("stage_{}_{}", table.oid, std::process::id()))
        );
        let create = format!(
            "CREATE SCHEMA IF NOT EXISTS inrush; DROP TABLE IF EXISTS {name}; \
             CREATE UNLOGGED TABLE {name} (LIKE {target} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY INCLUDING GENERATED); \
             ALTER TABLE {name} ADD COLUMN {} bigint NOT NULL",
            Staging::ORDINAL
        );
        let cols: Vec<String> = columns.iter().map(|c| quote_ident(&c.name)).collect();
        let list = cols.join(", ");
        let merge = match mode {
            // In input order, so the first occurrence of a key is the one kept.
            OnConflict::Skip | OnConflict::Error => format!(
                "INSERT INTO {target} ({list}) SELECT {list} FROM {name} ORDER BY {} ON CONFLICT DO NOTHING",
                Staging::ORDINAL
            ),
            OnConflict::Update => {
                let key_list = key.iter().map(|k| quote_ident(k)).collect::<Vec<_>>().join(", ");
                let updates: Vec<String> = columns
                    .iter()
                    .filter(|c| !key.contains(&c.name))
                    .map(|c| format!("{0} = EXCLUDED.{0}", quote_ident(&c.name)))
                    .collect();
                let action = if updates.is_empty() { "DO NOTHING".to_string() } else { format!("DO UPDATE SET {}", updates.join(", ")) };
                // One row per key, the last occurrence in the input: a key may be updated only
                // once by one INSERT.
                format!(
                    "INSERT INTO {target} ({list}) SELECT {list} FROM (SELECT DISTINCT ON ({key_list}) * FROM {name} \
                     ORDER BY {key_list}, {} DESC) latest ON CONFLICT ({key_list}) {action}",
                    Staging::ORDINAL
                )
            }
        };
        Ok(Staging {
            name,
            create,
            merge,
        })
    }

    /// Makes the staging table, empty.
    pub async fn make(&self, client: &Client) -> Result<()> {
        crate::own::create(client, &self.create)
            .await
            .map_err(|cause| Error::Query {
                what: "creating the staging table".into(),
                cause,
            })?;
        Ok(())
    }

    /// Drops the staging table (gone already after a merge; a failed load leaves it).
    pub async fn drop(&self, client: &Client) -> Result<(), tokio_postgres::Error> {
        client
            .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.name))
            .await
    }

    /// Merges and drops the staging table in one transaction; returns the rows inserted or
    /// updated. A stop asked before the COMMIT (the merge may take minutes) cancels the merge.
    pub async fn merge(
        &self,
        client: &Client,
        target: &ConnectOptions,
        opts: &LoadOptions,
    ) -> Result<u64> {
        let fail = |cause| Error::Query {
            what: "merging the staging table into the table".into(),
            cause,
        };
        client.batch_execute("BEGIN").await.map_err(fail)?;
        // Where to ask about the merge's COMMIT should its answer be lost (see `outcome`).
        let txn = client
            .query_one("SELECT txid_current(), pg_backend_pid()", &[])
            .await
            .map_err(fail)?;
        let pending = outcome::Pending {
            client,
            server: target,
            txid: txn.get(0),
            pid: txn.get(1),
        };
        let merged = async {
            let affected =
                until_interrupted(client.execute(&self.merge, &[]), client, target, opts).await?;
            client
                .batch_execute(&format!("DROP TABLE {}", self.name))
                .await?;
            Ok::<_, tokio_postgres::Error>(affected)
        }
        .await;
        // The commit window: a stop asked before it (the merge cancelled, or asked since)
        // rolls back; one asked after it is told the rows are committed.
        let stopped = match &merged {
            Ok(_) if opts.check_only => opts.interrupt.is_set(),
            Ok(_) => !opts.interrupt.begin_commit(),
            Err(_) => opts.interrupt.cancels(),
        };
        if stopped {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(inrush_load::Error::Interrupted);
        }
        let committed = match merged {
            // --check: the merge met the table's keys, foreign keys and triggers; it is undone.
            Ok(affected) if opts.check_only => {
                client.batch_execute("ROLLBACK").await.map(|()| affected)
            }
            // A lost answer is asked about; a rerun merges again, which adds nothing twice.
            Ok(affected) => {
                let fate = outcome::commit(&pending, target.network_timeout()).await;
                return inrush_load::commits::judge_commits(vec![(fate, affected)], true)
                    .map(|()| affected);
            }
            Err(e) => Err(e),
        };
        match committed {
            Ok(affected) => Ok(affected),
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK").await;
                // A row a foreign key or a trigger refuses is met only here, in one statement:
                // the whole merge fails, naming the row's values.
                match e
                    .as_db_error()
                    .filter(|db| super::sink::is_about_a_row(db.code().code()))
                {
                    Some(db) => Err(inrush_load::Error::ServerRefused {
                        location: None,
                        message: format!(
                            "merging the input into the table: {}{}",
                            db.message(),
                            db.detail().map_or(String::new(), |d| format!(" ({d})"))
                        ),
                        sqlstate: Some(db.code().code().to_string()),
                    }),
                    None => Err(fail(e).into()),
                }
            }
        }
    }
}

/// The primary key's columns, in key order.
async fn primary_key(client: &Client, table: &TableInfo) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT a.attname::text FROM pg_index i \
             CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
             WHERE i.indrelid = $1 AND i.indisprimary ORDER BY k.n",
            &[&table.oid],
        )
        .await
        .map_err(|cause| Error::Query {
            what: "reading the primary key".into(),
            cause,
        })?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

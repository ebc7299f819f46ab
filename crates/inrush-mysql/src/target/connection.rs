//! One connection's share of a load: its transaction, its blocks under `--resume`, its
//! foreign-key checks, its share of the load's record and its commit.

use crate::catalog::{self, ForeignKey};
use crate::engine_error;
use crate::options::MysqlOptions;
use crate::outcome;
use crate::writer::{self, ChunkWriter};
use bytes::Bytes;
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_load::commits::Fate;
use inrush_load::job::Prepare;
use inrush_load::target::{self, Committed, Share, Writer};
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::Duration;

/// One connection's transaction; dropped without commit, it disconnects, which rolls back.
pub(super) struct MysqlWriter {
    pub(super) conn: Option<Conn>,
    pub(super) chunks: ChunkWriter,
    pub(super) rt: tokio::runtime::Runtime,
    /// `--resume`: the table and input each block is recorded for.
    pub(super) resume: Option<(String, InputFile)>,
    /// The foreign keys written unchecked (`foreign_key_checks = 0`), checked before the commit.
    pub(super) deferred: Vec<ForeignKey>,
    /// `--table-lock`: the session holds `LOCK TABLES ... WRITE` until after its COMMIT.
    pub(super) locked: bool,
    /// `--prepare`: the XA transaction the connection's rows are in, left prepared for the
    /// job to decide, and the part it holds.
    pub(super) xa: Option<(String, Prepare)>,
    pub(super) options: MysqlOptions,
    /// The table's schema and name, for the load's record (`crate::commits`).
    pub(super) table: (String, String),
    pub(super) books: Books,
    /// `--network-timeout`: how long a lost COMMIT's answer is asked after.
    pub(super) network_timeout: std::time::Duration,
    pub(super) interrupt: std::sync::Arc<inrush_load::Interrupt>,
    /// Ends the connection's statement when the user stops the load; dropped with the writer.
    pub(super) _watch: inrush_load::Watch,
}

/// What a writer's transaction can write beside its rows: the mark of its commit (its token;
/// see [`crate::outcome`]) and the load's record (see [`crate::commits`]). Neither where the
/// role may not create their tables.
#[derive(Default)]
pub(super) struct Books {
    pub(super) mark: Option<String>,
    pub(super) record: bool,
}

impl Writer for MysqlWriter {
    fn write(
        &mut self,
        data: &Bytes,
        rows: u64,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64> {
        let refused = &mut target::naming_column(refused, writer::column_in_message);
        let conn = self.conn.as_mut().ok_or_else(lost_writer)?;
        let written = self.chunks.write(conn, data, rows, refused);
        self.options.run(&self.rt, written)
    }

    fn begin_block(&mut self) -> Result<()> {
        let conn = self.conn.as_mut().ok_or_else(lost_writer)?;
        let begun = conn.query_drop("START TRANSACTION");
        self.options.run(&self.rt, async {
            begun
                .await
                .map_err(engine_error("starting a block's transaction"))
        })
    }

    fn commit_block(&mut self, block: Block) -> Result<()> {
        let Some((table, input)) = &self.resume else {
            return Err(Error::Internal(
                "a block committed by a load without --resume".into(),
            ));
        };
        let conn = self.conn.as_mut().ok_or_else(lost_writer)?;
        self.options.run(&self.rt, async {
            crate::ledger::record(conn, table, input, block).await?;
            conn.query_drop("COMMIT")
                .await
                .map_err(engine_error("committing a block"))
        })
    }

    fn roll_back_block(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            let _ = self
                .options
                .run(&self.rt, async { Ok(conn.query_drop("ROLLBACK").await) });
        }
    }

    fn check(&mut self) -> Result<()> {
        let conn = self.conn.as_mut().ok_or_else(lost_writer)?;
        let table = self.chunks.table();
        for key in &self.deferred {
            // The connection's open transaction: it sees its own rows, uncommitted, and no
            // other writer's, which check their own.
            let what = format!(
                "checking foreign key {} of {table}",
                catalog::quote(&key.name)
            );
            let orphans: Vec<mysql_async::Row> = self.options.run(&self.rt, async {
                conn.query(key.orphans_sql(table))
                    .await
                    .map_err(engine_error(what))
            })?;
            if orphans.is_empty() {
                continue;
            }
            let columns = key
                .columns
                .iter()
                .map(|c| catalog::quote(c))
                .collect::<Vec<_>>()
                .join(", ");
            let examples = orphans
                .into_iter()
                .map(|row| {
                    let values: Vec<String> = row.unwrap().into_iter().map(shown).collect();
                    format!("({columns})=({})", values.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(Error::ForeignKeyBroken {
                constraint: catalog::quote(&key.name),
                table: table.to_string(),
                parent: key.parent(),
                examples,
            });
        }
        Ok(())
    }

    fn record(&mut self, share: &Share) -> Result<bool> {
        if !self.books.record {
            return Ok(false);
        }
        let conn = self.conn.as_mut().ok_or_else(lost_writer)?;
        let table = (self.table.0.as_str(), self.table.1.as_str());
        let recorded = crate::commits::record(conn, table, share);
        self.options.run(&self.rt, recorded)?;
        Ok(true)
    }

    fn commit(mut self: Box<Self>) -> Result<Committed> {
        let mut conn = self.conn.take().ok_or_else(lost_writer)?;
        let resumed = self.resume.is_some();
        let locked = self.locked;
        if !resumed {
            target::into_commit(&self.interrupt, true, None)?;
        }
        if let Some((gid, part)) = self.xa.take() {
            return self.options.run(&self.rt, async {
                for sql in [format!("XA END '{gid}'"), format!("XA PREPARE '{gid}'")] {
                    conn.query_drop(&sql)
                        .await
                        .map_err(engine_error(format!("{sql}: preparing the part")))?;
                }
                // The prepared transaction outlives the session (MariaDB 10.5 and later).
                let _ = conn.disconnect().await;
                crate::job::part_prepared(&self.options, &part, &gid).await?;
                Ok(Committed {
                    prepared: vec![gid],
                    ..Committed::default()
                })
            });
        }
        let pending = outcome::Pending {
            options: &self.options,
            connection: conn.id(),
            mark: self.books.mark.as_deref(),
        };
        self.options.run(&self.rt, async {
            // Under --resume every block committed already.
            if !resumed {
                if let Some(token) = pending.mark {
                    outcome::mark(&mut conn, token).await?;
                }
                match outcome::commit(&mut conn, &pending, self.network_timeout).await {
                    Fate::Committed => {}
                    Fate::RolledBack(e) => return Err(e),
                    Fate::Unknown { reason, ask } => {
                        return Err(Error::CommitUnknown {
                            unknown: 1,
                            connections: 1,
                            committed: 0,
                            rows_committed: 0,
                            reason,
                            ask,
                            rerun_asks: false,
                        })
                    }
                }
            }
            let mut done = Committed::default();
            if locked {
                conn.query_drop("UNLOCK TABLES")
                    .await
                    .map_err(engine_error("unlocking the table"))?;
                done.notes.push("--table-lock: the load held LOCK TABLES ... WRITE until its COMMIT, so other sessions could neither write nor read the table meanwhile (MariaDB has no lock that lets others read while one session writes)".into());
            }
            let _ = conn.disconnect().await;
            Ok(done)
        })
    }
}

/// A writer used after its commit took the connection.
fn lost_writer() -> Error {
    Error::Internal("a writer without its connection".into())
}

/// A value of a text-protocol row as the user wrote it.
fn shown(value: mysql_async::Value) -> String {
    match value {
        mysql_async::Value::Bytes(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        mysql_async::Value::NULL => "NULL".into(),
        other => other.as_sql(true),
    }
}

impl Drop for MysqlWriter {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // The server rolls back the open transaction of a closed connection; one that no
            // longer answers is not waited for.
            let _ = self.options.run(&self.rt, async {
                let _ = tokio::time::timeout(Duration::from_secs(5), conn.disconnect()).await;
                Ok(())
            });
        }
    }
}

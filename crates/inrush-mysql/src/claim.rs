//! Which load of a table may change its definitions, when several run at once: the same rule
//! as PostgreSQL's (`inrush-postgres::load::claim`), with a named lock per table.
//!
//! Two loads that both dropped and added back one table's indexes collided (`Duplicate key
//! name`, `Can't DROP INDEX`): the second load took the first one's journal entries for a dead
//! load's leftovers and restored them under it. So every load takes the table's lock
//! (`GET_LOCK`, on a connection of its own) before it reads leftovers:
//! - a load that changes the table's definitions (indexes dropped, `--truncate`,
//!   `--table-lock`, `--create`) holds it until `end` has put everything back (it goes with the
//!   target, and with the connection whatever ends the process);
//! - a load that changes nothing holds it only while it starts, until each of its writers has
//!   the table open in its transaction ([`pin_sql`]), then lets it go: an `ALTER TABLE` of a
//!   later load then waits for those transactions (InnoDB's metadata locks), and never stands
//!   between a writer and its first statement, which would hang both (the ALTER waiting for
//!   one writer's transaction, which commits with another queued behind the ALTER);
//! - `inrush recover` restores only the tables whose lock it gets at once, holding it meanwhile.
//!
//! MariaDB has no shared named lock, so loads that change nothing start one after another too;
//! their start is short.

use crate::catalog::quote;
use crate::engine_error;
use crate::options::MysqlOptions;
use inrush_load::{Error, Interrupt, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::{Duration, Instant};

/// The lock's name for `schema`.`table`: `inrush:` and the name in lower case (a lock taken
/// for two spellings of one table is one lock; two tables whose names differ only in case
/// share it, which only makes their loads start in turn); past the 64 characters a lock name
/// may have, its first characters and a hash of the whole.
pub fn lock_name(schema: &str, table: &str) -> String {
    let full = format!("{schema}.{table}").to_lowercase();
    let name = format!("inrush:{full}");
    if name.chars().count() <= 64 {
        return name;
    }
    // FNV-1a, 64 bits: stable across processes and builds.
    let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let head: String = full.chars().take(64 - 7 - 1 - 16).collect();
    format!("inrush:{head}:{hash:016x}")
}

/// A statement that opens `qualified` for writing in a writer's transaction and changes
/// nothing: the metadata lock it takes (`MDL_SHARED_WRITE`, what LOAD DATA and INSERT take)
/// is held to the transaction's end, so the writer's later statements never wait for a DDL
/// that waits for this transaction.
pub fn pin_sql(qualified: &str) -> String {
    format!("SELECT 1 FROM {qualified} WHERE FALSE FOR UPDATE")
}

/// A table's lock, held by a connection of its own (with the runtime it runs on) until
/// [`Claim::release`] or drop.
pub struct Claim {
    rt: tokio::runtime::Runtime,
    conn: Option<Conn>,
}

/// How long one `GET_LOCK` waits before the interrupt is looked at again.
const POLL: u32 = 1;
/// After how long a wait is said on stderr.
const SAY_AFTER: Duration = Duration::from_secs(3);

impl Claim {
    /// Takes the lock of `schema`.`table`, waiting while another load (or `inrush recover`)
    /// holds it, however long; a stop (`interrupt`) ends the wait (`Error::Interrupted`). A
    /// wait of more than a few seconds is said once on stderr, naming the holder's session.
    pub fn take(
        options: &MysqlOptions,
        schema: &str,
        table: &str,
        interrupt: &Interrupt,
    ) -> Result<Claim> {
        let rt = inrush_load::target::runtime()?;
        let name = lock_name(schema, table);
        let conn = options.run(&rt, async {
            let mut conn = options.connect().await?;
            // The connection idles for the whole load: the server must not close it.
            let _ = conn
                .query_drop("SET SESSION wait_timeout = 31536000")
                .await;
            let started = Instant::now();
            let mut said = false;
            loop {
                let got: Option<Option<i64>> = conn
                    .exec_first("SELECT GET_LOCK(?, ?)", (&name, POLL))
                    .await
                    .map_err(engine_error(format!(
                        "taking the lock {name} (for the loads of {}.{})",
                        quote(schema),
                        quote(table)
                    )))?;
                if got.flatten() == Some(1) {
                    return Ok(conn);
                }
                if interrupt.is_set() {
                    let _ = conn.disconnect().await;
                    return Err(Error::Interrupted);
                }
                if !said && started.elapsed() >= SAY_AFTER {
                    said = true;
                    let holder = holder(&mut conn, &name).await;
                    eprintln!(
                        "waiting for another inrush load (or `inrush recover`) of {}.{} to end: it changes the table's definitions (indexes, --truncate, --table-lock, --create), which one load does at a time{holder}",
                        quote(schema),
                        quote(table)
                    );
                }
            }
        })?;
        Ok(Claim {
            rt,
            conn: Some(conn),
        })
    }

    /// Lets the lock go (closing its connection).
    pub fn release(mut self) {
        self.close();
    }

    fn close(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A server that no longer answers is not waited for: closing the socket lets the
            // lock go all the same.
            let _ = self.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(5), conn.disconnect()).await
            });
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.close();
    }
}

/// `; its holder is connection N (user@host, for N s)`, or nothing when it cannot be read.
async fn holder(conn: &mut Conn, name: &str) -> String {
    let id: Option<Option<u64>> = conn
        .exec_first("SELECT IS_USED_LOCK(?)", (name,))
        .await
        .unwrap_or(None);
    let Some(id) = id.flatten() else {
        return String::new();
    };
    let who: Option<(String, String, u64)> = conn
        .exec_first(
            "SELECT USER, HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = ?",
            (id,),
        )
        .await
        .unwrap_or(None);
    match who {
        Some((user, host, time)) => {
            format!(
                "; it holds lock {name} on connection {id} ({user}@{host}, connected {time} s ago)"
            )
        }
        None => format!("; it holds lock {name} on connection {id}"),
    }
}

/// Takes `schema`.`table`'s lock on `conn` if no one holds it (`inrush recover`): false while a
/// load of the table runs.
pub async fn try_take(conn: &mut Conn, schema: &str, table: &str) -> Result<bool> {
    let got: Option<Option<i64>> = conn
        .exec_first("SELECT GET_LOCK(?, 0)", (lock_name(schema, table),))
        .await
        .map_err(engine_error("taking a table's lock"))?;
    Ok(got.flatten() == Some(1))
}

/// Lets go of a lock [`try_take`] took.
pub async fn let_go(conn: &mut Conn, schema: &str, table: &str) -> Result<()> {
    conn.exec_drop("DO RELEASE_LOCK(?)", (lock_name(schema, table),))
        .await
        .map_err(engine_error("letting a table's lock go"))
}

#[cfg(test)]
mod tests {
    use super::lock_name;

    #[test]
    fn names_fit_the_servers_64_characters() {
        assert_eq!(lock_name("Shop", "Orders"), "inrush:shop.orders");
        let long = lock_name(&"d".repeat(64), &"t".repeat(64));
        assert_eq!(long.chars().count(), 64, "{long}");
        assert_ne!(long, lock_name(&"d".repeat(64), &"t".repeat(63)));
        let wide = lock_name("é".repeat(40).as_str(), "t");
        assert!(wide.chars().count() <= 64, "{wide}");
    }
}

//! The log of two-phase commits across servers (a load routed to foreign partitions), so that
//! a process killed between its first PREPARE TRANSACTION and its last COMMIT PREPARED leaves
//! nothing undecided. Prepared transactions hold their locks until someone decides, so each
//! one must be decided exactly as the load would have:
//!
//! 1. before the first PREPARE, the load's id and the foreign servers it spans are written to
//!    `inrush.joint_commits` on the target, committed, undecided;
//! 2. once every transaction is prepared, the row is marked decided (committed): the commit
//!    point;
//! 3. every COMMIT PREPARED, then the row is deleted.
//!
//! Every prepared transaction is named `inrush_<id>_<n>`, so `inrush recover` (and
//! [`resolve`]) finds those of a load on each server: a decided load's are committed, an
//! undecided load's rolled back. The loading session holds an advisory lock on its id until it
//! is done, so a recover beside a load that is still committing leaves it alone.
//!
//! A distributed write ([`crate::job`]) keeps its log here too, its decision naming the
//! winning transactions: `recover` after such a decision commits the winners only, and drops
//! what an undecided job staged.

use crate::catalog::relations_exist;
use crate::route::shard;
use crate::{query_error, ConnectOptions, Error, Result};
use tokio_postgres::Client;

/// The decision log, and the ledger of the streaming batches a decision landed (see
/// `crate::job`).
const CREATE_LOG: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.joint_commits ( \
       load_id text PRIMARY KEY, servers text[] NOT NULL, \
       decided boolean NOT NULL DEFAULT false, \
       started_at timestamptz NOT NULL DEFAULT now()); \
     ALTER TABLE inrush.joint_commits ADD COLUMN IF NOT EXISTS winners text[], \
       ADD COLUMN IF NOT EXISTS staged boolean NOT NULL DEFAULT false, \
       ADD COLUMN IF NOT EXISTS target text, \
       ADD COLUMN IF NOT EXISTS overwrite boolean NOT NULL DEFAULT false, \
       ADD COLUMN IF NOT EXISTS planned boolean NOT NULL DEFAULT false, \
       ADD COLUMN IF NOT EXISTS upkeep text; \
     CREATE TABLE IF NOT EXISTS inrush.stream_batches ( \
       query text, batch bigint, job text NOT NULL, \
       written_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (query, batch))";

/// Makes the decision log (and the streaming ledger) if missing; a stream's tasks make it at
/// once on a fresh target (`crate::own`).
pub(crate) async fn create_log(client: &Client) -> Result<()> {
    if let Err(cause) = crate::own::create(client, CREATE_LOG).await {
        return Err(Error::Query {
            what: "creating the inrush.joint_commits table".into(),
            cause,
        });
    }
    Ok(())
}

/// One load's two-phase commit, logged (see the module documentation).
pub struct JointCommit {
    id: String,
}

/// The advisory lock a load holds on its id while it commits.
pub(crate) fn lock_key(id: &str) -> i64 {
    // Distinct from the table claims' keys (`ddl::claim_key`) by construction: those are
    // small oids shifted, these a hash.
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    (hash | 1 << 62) as i64
}

impl JointCommit {
    /// Logs a new load spanning the target and `servers` (foreign server names), undecided.
    /// Fails when the log cannot be written (the right to create schema `inrush`).
    pub async fn begin(control: &Client, servers: &[String]) -> Result<JointCommit> {
        create_log(control).await?;
        let id: String = control
            .query_one(
                "SELECT left(md5(random()::text || clock_timestamp()::text || pg_backend_pid()), 16)",
                &[],
            )
            .await
            .map_err(query_error("naming the joint commit"))?
            .get(0);
        control
            .execute("SELECT pg_advisory_lock($1)", &[&lock_key(&id)])
            .await
            .map_err(query_error("locking the joint commit"))?;
        control
            .execute(
                "INSERT INTO inrush.joint_commits (load_id, servers) VALUES ($1, $2)",
                &[&id, &servers],
            )
            .await
            .map_err(query_error("logging the joint commit"))?;
        Ok(JointCommit { id })
    }

    /// The name of the load's `n`th prepared transaction.
    pub fn gid(&self, n: usize) -> String {
        format!("inrush_{}_{n}", self.id)
    }

    /// The commit point: every transaction is prepared, and from here each is committed.
    pub async fn decide(&self, control: &Client) -> Result<()> {
        control
            .execute(
                "UPDATE inrush.joint_commits SET decided = true WHERE load_id = $1",
                &[&self.id],
            )
            .await
            .map_err(query_error("recording the commit decision"))?;
        Ok(())
    }

    /// Every transaction is decided (committed or rolled back): the row goes. Best effort: a
    /// row left behind only makes `inrush recover` find nothing to do for it.
    pub async fn end(self, control: &Client) {
        let _ = control
            .execute(
                "DELETE FROM inrush.joint_commits WHERE load_id = $1",
                &[&self.id],
            )
            .await;
        let _ = control
            .execute("SELECT pg_advisory_unlock($1)", &[&lock_key(&self.id)])
            .await;
    }
}

/// What [`resolve`] did.
#[derive(Debug, Default)]
pub struct Resolved {
    /// `gid on server` of each transaction committed, then of each rolled back.
    pub committed: Vec<String>,
    pub rolled_back: Vec<String>,
    /// Loads still committing in another session, left alone.
    pub busy: Vec<String>,
}

/// Decides every prepared transaction a dead load left, on the target (`control`, reached as
/// `target`) and on each foreign server the log names (see the module documentation).
pub async fn resolve(control: &Client, target: &ConnectOptions) -> Result<Resolved> {
    let mut resolved = Resolved::default();
    if !relations_exist(control, &["inrush.joint_commits"]).await? {
        return Ok(resolved);
    }
    let loads = control
        .query(
            "SELECT load_id, servers, decided, winners FROM inrush.joint_commits ORDER BY started_at",
            &[],
        )
        .await
        .map_err(query_error("reading inrush.joint_commits"))?;
    for load in loads {
        let (id, servers, decided): (String, Vec<String>, bool) =
            (load.get(0), load.get(1), load.get(2));
        // A job's decision names its winners; a load's covers every transaction.
        let winners: Option<Vec<String>> = load.get(3);
        let decision = match (decided, winners) {
            (false, _) => Decision::RollBack,
            (true, None) => Decision::CommitAll,
            (true, Some(winners)) => Decision::Commit(winners),
        };
        let free: bool = control
            .query_one("SELECT pg_try_advisory_lock($1)", &[&lock_key(&id)])
            .await
            .map_err(query_error("locking a joint commit"))?
            .get(0);
        if !free {
            resolved.busy.push(id);
            continue;
        }
        let joint = JointCommit { id };
        decide_on(control, "the target", &joint.id, &decision, &mut resolved).await?;
        // A staged job moves its parts in one transaction: whatever is left never landed.
        for table in crate::parts::part_tables(control, &joint.id).await? {
            crate::parts::drop_tables(control, std::slice::from_ref(&table)).await?;
            resolved
                .rolled_back
                .push(format!("{table} (staged, dropped)"));
        }
        for server in &servers {
            let Some(found) = shard::shard_named(control, server, target).await? else {
                return Err(Error::Server(format!(
                    "joint commit {}: foreign server {server} no longer exists; decide its prepared transactions (inrush_{}_*) on that server by hand",
                    joint.id, joint.id
                )));
            };
            let options = ConnectOptions::parse(&found.conninfo)?;
            let client = options.connect().await?;
            let name = format!("foreign server {server}");
            decide_on(&client, &name, &joint.id, &decision, &mut resolved).await?;
        }
        joint.end(control).await;
    }
    Ok(resolved)
}

/// What becomes of a logged load's prepared transactions.
enum Decision {
    /// Undecided: none may land.
    RollBack,
    /// A load decided: all of them.
    CommitAll,
    /// A job decided: these; the rest were other attempts.
    Commit(Vec<String>),
}

/// Carries out `decision` on every transaction of load (or job) `id` still prepared on
/// `client`'s server.
async fn decide_on(
    client: &Client,
    server: &str,
    id: &str,
    decision: &Decision,
    resolved: &mut Resolved,
) -> Result<()> {
    for gid in prepared_of(client, id).await? {
        let commit = match decision {
            Decision::RollBack => false,
            Decision::CommitAll => true,
            Decision::Commit(winners) => winners.contains(&gid),
        };
        finish_one(client, &gid, commit).await?;
        let into = match commit {
            true => &mut resolved.committed,
            false => &mut resolved.rolled_back,
        };
        into.push(format!("{gid} on {server}"));
    }
    Ok(())
}

/// The transactions of load (or job) `id` prepared in `client`'s database.
pub(crate) async fn prepared_of(client: &Client, id: &str) -> Result<Vec<String>> {
    let prefix = format!("inrush_{id}_");
    let rows = client
        .query(
            "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1) AND database = current_database()",
            &[&prefix],
        )
        .await
        .map_err(query_error("reading pg_prepared_xacts"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// COMMIT PREPARED or ROLLBACK PREPARED `gid` (read from the server: quoted, whoever made it).
pub(crate) async fn finish_one(client: &Client, gid: &str, commit: bool) -> Result<()> {
    let literal = gid.replace('\'', "''");
    let sql = match commit {
        true => format!("COMMIT PREPARED '{literal}'"),
        false => format!("ROLLBACK PREPARED '{literal}'"),
    };
    client
        .batch_execute(&sql)
        .await
        .map_err(query_error(sql.clone()))
}

/// Finishes `gid` over a new connection to `server` after the session that ran its PREPARE or
/// COMMIT PREPARED (server process `pid`) lost the answer: that session is ended first and
/// waited for, so its statement has done all it will; a transaction no longer prepared was
/// finished by it (the lost answer was that). The connection is made again with backoff.
pub(crate) async fn finish_apart(
    server: &ConnectOptions,
    pid: i32,
    gid: &str,
    commit: bool,
) -> Result<()> {
    let server = server.apart();
    let client = inrush_load::outcome::reconnect(|| server.connect(), || false).await?;
    let ended = client
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .map_err(query_error("ending the session that lost its answer"));
    ended?;
    for _ in 0..100 {
        let gone = client
            .query_one(
                "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)",
                &[&pid],
            )
            .await
            .map_err(query_error("waiting for that session to end"))?;
        if gone.get::<_, bool>(0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    match finish_one(&client, gid, commit).await {
        Err(Error::Query { cause, .. })
            if cause.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_OBJECT) =>
        {
            Ok(())
        }
        finished => finished,
    }
}

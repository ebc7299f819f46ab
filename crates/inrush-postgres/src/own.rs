//! inrush's own objects on a server, in schema `inrush`: the DDL journal, the ledgers, the
//! commit records, the staging tables. Each is made with `CREATE ... IF NOT EXISTS`, which two
//! sessions running at once can both find missing, the second then failing on the catalog's
//! unique keys ("relation already exists", or `pg_namespace_nspname_index` for the schema).
//! Loads do start together: several processes into one table or into several, a job's tasks.
//! One advisory lock for every such creation makes the later session wait for the earlier's
//! commit and then find the object there.

use tokio_postgres::Client;

/// Held by every creation of inrush's objects, until its transaction ends.
const LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('inrush'))";

/// `ddl` as one transaction that holds the lock (for a client of its own, or a synchronous one).
pub(crate) fn locked(ddl: &str) -> String {
    format!("BEGIN; {LOCK}; {ddl}; COMMIT")
}

/// Runs `ddl` in a transaction of its own that holds the lock; rolled back when it fails, so
/// the session can go on. The session must not be in a transaction.
pub(crate) async fn create(client: &Client, ddl: &str) -> Result<(), tokio_postgres::Error> {
    let result = client.batch_execute(&locked(ddl)).await;
    if result.is_err() {
        let _ = client.batch_execute("ROLLBACK").await;
    }
    result
}

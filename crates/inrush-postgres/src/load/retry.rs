//! How `--resume` outlasts a lost connection or a restarting server: which failures are worth
//! another try, and how often and how patiently to try again.

/// How often, and how patiently, `--resume` retries a block after a transient failure: as any
/// lost connection is made again.
pub(crate) use inrush_load::outcome::{BACKOFF, RETRIES};

/// A failure worth retrying: the connection is gone or the server asked to try again.
pub(crate) fn is_transient(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        // 08: connection exceptions; 57P01-03: admin shutdown, crash shutdown, cannot connect
        // now; 40001 serialization failure; 40P01 deadlock.
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
        }
        None => e.is_closed() || e.to_string().contains("connection"),
    }
}

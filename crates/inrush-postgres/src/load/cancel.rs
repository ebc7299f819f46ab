//! A stop (Ctrl-C, SIGTERM) ends what a session waits on: the statement is cancelled on the
//! server, so a load never waits for a lock another session holds before it sees the stop.

use crate::ConnectOptions;
use inrush_load::stages::CANCEL_POLL;
use inrush_load::{Error, LoadOptions};
use tokio_postgres::Client;

/// A stop while the inspection waits (on a lock another session holds on the table) cancels
/// the waiting statement, so the load ends now rather than when the lock is let go.
pub(crate) fn cancel_on_interrupt(
    target: &ConnectOptions,
    control: &Client,
    opts: &LoadOptions,
) -> inrush_load::Watch {
    let (target, token) = (target.clone(), control.cancel_token());
    opts.interrupt
        .watch(std::time::Duration::from_millis(500), move || {
            if let Ok(runtime) = super::runtime() {
                // Best effort, as every cancel: the stop is seen after the wait anyway.
                let _ = runtime.block_on(target.cancel(&token));
            }
        })
}

/// A statement cancelled by a stop fails: that failure is the stop.
pub(crate) fn stopped(opts: &LoadOptions, e: Error) -> Error {
    match opts.interrupt.cancels() {
        true => Error::Interrupted,
        false => e,
    }
}

/// Runs `work` on `client` until it ends; if the user interrupts first, asks the server to
/// cancel it and waits for it to end.
pub(crate) async fn until_interrupted<T>(
    work: impl std::future::Future<Output = T>,
    client: &tokio_postgres::Client,
    target: &ConnectOptions,
    opts: &LoadOptions,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep(CANCEL_POLL) => if opts.interrupt.is_set() {
                // Best effort: when the cancel cannot reach the server, the work runs to its end.
                let _ = target.cancel(&client.cancel_token()).await;
                return work.await;
            }
        }
    }
}

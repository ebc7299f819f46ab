//! Says so when the load waits on a lock a session outside it holds. Such a load shows only
//! its phase ("inspecting the table", a rate that stops moving), which looks like a hang: a
//! thread beside the load asks the server from a connection of its own, once a second, whether
//! one of the load's sessions waits on a session outside the load, and tells the reporter who
//! holds the lock, once per holder. The wait itself goes on (the holder may be about to
//! commit); Ctrl-C or SIGTERM stops it as any other.
//!
//! The same looks tell that the server still answers: when none has been answered for the
//! network timeout, the server (or the network to it) is silent, and the watch ends every
//! connection of the load ([`ConnectOptions::cut`]), so that no statement waits on it forever.

use crate::{activity, ConnectOptions};
use inrush_core::Reporter;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The load's sessions on the target server, as they connect.
#[derive(Default)]
pub(crate) struct Waits {
    pids: Mutex<Vec<i32>>,
}

impl Waits {
    /// Runs `load` with the watch beside it; the watch ends as soon as `load` returns.
    pub fn around<T>(
        &self,
        target: &ConnectOptions,
        reporter: &dyn Reporter,
        load: impl FnOnce() -> T,
    ) -> T {
        // The sender is dropped when `load` returns: the watch's wait ends at once, so a
        // short load is not held back by its sleep.
        let (running, stopped) = channel::<()>();
        std::thread::scope(|s| {
            s.spawn(|| self.watch(target, reporter, stopped));
            let result = load();
            drop(running);
            result
        })
    }

    /// A session of the load on the target server (not a shard: pids are per server).
    pub fn add(&self, pid: i32) {
        if let Ok(mut pids) = self.pids.lock() {
            pids.push(pid);
        }
    }

    fn watch(&self, target: &ConnectOptions, reporter: &dyn Reporter, stopped: Receiver<()>) {
        // A load shorter than this never opens the watch's connection.
        const FIRST_LOOK: Duration = Duration::from_secs(2);
        const EVERY: Duration = Duration::from_secs(1);
        let running = |wait| matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
        if !running(FIRST_LOOK) {
            return;
        }
        let Ok(runtime) = super::runtime() else {
            return;
        };
        let limit = target.network_timeout();
        let (mut seen, mut told) = (None, Vec::new());
        let (mut client, mut answered) = (None, Instant::now());
        while running(EVERY) {
            // The server has not answered a look (nor a new connection) for the whole limit:
            // it is silent, or the network to it is. Every connection of the load is ended, so
            // that whatever waits on one fails now and the load says what it holds.
            if answered.elapsed() >= limit {
                let why = format!(
                    "the server at {} has not answered for {} s (--network-timeout): the load's connections to it were closed",
                    target.describe(),
                    limit.as_secs()
                );
                reporter.waiting(&why);
                target.cut(why);
                return;
            }
            let pids = self.pids.lock().map(|p| p.clone()).unwrap_or_default();
            let look = async {
                if client.is_none() {
                    client = Some(target.apart().connect().await.ok()?);
                }
                activity::outside_holder(client.as_ref()?, &pids).await.ok()
            };
            let look = async { tokio::time::timeout(EVERY * 2, look).await };
            let holder = match runtime.block_on(look) {
                Ok(Some(holder)) => holder,
                // No answer, or a connection that broke: a new one for the next look.
                Ok(None) | Err(_) => {
                    client = None;
                    continue;
                }
            };
            answered = Instant::now();
            // Told when two looks in a row see it: a lock held for a moment is no news.
            if let Some(holder) = holder.as_ref().filter(|h| seen == Some(h.pid)) {
                if !told.contains(&holder.pid) {
                    reporter.waiting(&holder.describe());
                    told.push(holder.pid);
                }
            }
            seen = holder.map(|h| h.pid);
        }
    }
}

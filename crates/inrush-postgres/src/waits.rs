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
use std::sync::Mutex;

/// The load's sessions on the target server, as they connect.
#[derive(Default)]
pub(crate) struct Waits {
    pids: Mutex<Vec<i32>>,
}

impl Waits {
    /// Runs `load` with the watch beside it; the watch ends as soon as `load` returns. A server
    /// that leaves it unanswered for the network timeout is cut (see [`inrush_load::pulse`]).
    pub fn around<T>(
        &self,
        target: &ConnectOptions,
        reporter: &dyn Reporter,
        load: impl FnOnce() -> T,
    ) -> T {
        let mut looks = Looks {
            waits: self,
            target,
            reporter,
            runtime: None,
            client: None,
            seen: None,
            told: Vec::new(),
        };
        inrush_load::pulse::beside(
            target.network_timeout(),
            &target.describe(),
            reporter,
            |within| looks.look(within),
            |why| target.cut(why),
            load,
        )
    }

    /// A session of the load on the target server (not a shard: pids are per server).
    pub fn add(&self, pid: i32) {
        if let Ok(mut pids) = self.pids.lock() {
            pids.push(pid);
        }
    }
}

/// The watch's own connection (apart from the load's, which a cut ends), and what it told.
struct Looks<'a> {
    waits: &'a Waits,
    target: &'a ConnectOptions,
    reporter: &'a dyn Reporter,
    runtime: Option<tokio::runtime::Runtime>,
    client: Option<tokio_postgres::Client>,
    seen: Option<i32>,
    told: Vec<i32>,
}

impl Looks<'_> {
    /// One look, waiting at most `within`: who outside the load holds a lock one of its
    /// sessions waits on. Whether the server answered (an error of its own is an answer).
    fn look(&mut self, within: std::time::Duration) -> bool {
        if self.runtime.is_none() {
            self.runtime = inrush_load::target::runtime().ok();
        }
        let Some(runtime) = &self.runtime else {
            return true;
        };
        let pids = self
            .waits
            .pids
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        let (target, client) = (self.target, &mut self.client);
        let looked = runtime.block_on(async {
            let look = async {
                if client.is_none() {
                    *client = Some(target.apart().connect().await.ok()?);
                }
                Some(activity::outside_holder(client.as_ref()?, &pids).await)
            };
            tokio::time::timeout(within, look).await
        });
        let holder = match looked {
            Ok(Some(Ok(holder))) => holder,
            Ok(Some(Err(e))) if e.is_server_answer() => return true,
            // No answer, or a connection that broke: a new one for the next look.
            _ => {
                self.client = None;
                return false;
            }
        };
        // Told when two looks in a row see it: a lock held for a moment is no news.
        if let Some(holder) = holder.as_ref().filter(|h| self.seen == Some(h.pid)) {
            if !self.told.contains(&holder.pid) {
                self.reporter.waiting(&holder.describe());
                self.told.push(holder.pid);
            }
        }
        self.seen = holder.map(|h| h.pid);
        true
    }
}

//! The blocks of one input that several inrush processes load together, on one host or several,
//! each given the same input and `--resume`.
//!
//! A reader takes each block before it reads it ([`ledger::take_block`]: a session-level
//! advisory lock per block), so no two processes parse, encode or send the same block, and a
//! block's rejects are written once; the sink lets it go after its commit. Once the input is
//! read, the blocks other processes held are waited for, and any left uncommitted (their
//! process stopped) are taken and loaded here: a process ends well only when every block is
//! committed, whichever of the others died. When every process dies, the next run loads what
//! is left.
//!
//! Advisory locks rather than row locks on a claims table (`FOR UPDATE SKIP LOCKED`): a row
//! lock lasts one transaction, while a claim must last from the reader (before the block is
//! parsed) to the sink's commit on another connection; one transaction holding every claim for
//! the whole load would also hold back vacuum's horizon for that long.
//!
//! The locks are held by a session of their own, driven by a thread of its own: the readers
//! are threads that wait for the answer, the sinks async tasks that must not. The waits run on
//! a second session, beside the first: a process waiting for another's block must go on letting
//! its own blocks go, or two processes could wait on each other. Locks alone are not trusted
//! for exactly-once (a lost claims session lets its blocks go while their COPY runs): the
//! ledger's primary key refuses a block committed twice, and the sink counts such a block as
//! loaded by another process (see `sink::run_resumable`).

use super::retry::{is_transient, BACKOFF, RETRIES};
use crate::ledger::{self, InputIdentity, Taken};
use crate::ConnectOptions;
use inrush_load::{Error, Result};
use std::sync::{Arc, Mutex};
use tokio_postgres::Client;

enum Request {
    Take(i64, flume::Sender<crate::Result<Taken>>),
    Release(i64),
    LeftOver(
        Vec<(u64, u64)>,
        flume::Sender<crate::Result<Vec<(u64, u64)>>>,
    ),
}

/// This process's hold on the blocks it loads.
pub(crate) struct BlockClaims {
    requests: flume::Sender<Request>,
    /// Blocks another process held when this one came to them: (offset, line).
    passed: Mutex<Vec<(u64, u64)>>,
    /// Of those, the blocks and rows their holders committed.
    by_others: Arc<Mutex<(u64, u64)>>,
    /// And the blocks this process took over.
    taken_over: std::sync::atomic::AtomicU64,
}

impl BlockClaims {
    /// Connects the claims session (on a thread of its own, which ends when `self` is dropped).
    pub(crate) fn start(target: &ConnectOptions, input: &InputIdentity) -> Result<BlockClaims> {
        let (requests, inbox) = flume::unbounded::<Request>();
        let (ready_tx, ready) = flume::bounded::<Result<()>>(1);
        let by_others = Arc::new(Mutex::new((0, 0)));
        let session = Session {
            target: target.clone(),
            input: input.clone(),
            by_others: by_others.clone(),
        };
        std::thread::Builder::new()
            .name("inrush-claims".into())
            .spawn(move || match super::runtime() {
                Ok(runtime) => runtime.block_on(session.serve(inbox, ready_tx)),
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(inrush_load::stages::spawn_error)?;
        ready
            .recv()
            .map_err(|_| Error::Internal("the claims session did not start".into()))??;
        Ok(BlockClaims {
            requests,
            passed: Mutex::new(Vec::new()),
            by_others,
            taken_over: Default::default(),
        })
    }

    /// Lets a committed block go (not waited for: the sink goes on at once).
    pub(crate) fn release(&self, offset: i64) {
        let _ = self.requests.send(Request::Release(offset));
    }

    /// The blocks, and their rows, that other processes held when this one came to them, and
    /// committed; and the blocks this process took over from processes that stopped.
    pub(crate) fn by_others(&self) -> (u64, u64, u64) {
        let (blocks, rows) = self.by_others.lock().map_or((0, 0), |b| *b);
        (
            blocks,
            rows,
            self.taken_over.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    fn ask<T>(
        &self,
        request: impl FnOnce(flume::Sender<crate::Result<T>>) -> Request,
    ) -> Result<T> {
        let ended = || Error::Internal("the claims session ended".into());
        let (reply, answer) = flume::bounded(1);
        self.requests.send(request(reply)).map_err(|_| ended())?;
        Ok(answer.recv().map_err(|_| ended())??)
    }
}

impl inrush_load::resume::Claims for BlockClaims {
    fn take(&self, offset: u64, line: u64) -> Result<bool> {
        let taken = self.ask(|reply| Request::Take(offset as i64, reply))?;
        if taken == Taken::Held {
            if let Ok(mut passed) = self.passed.lock() {
                passed.push((offset, line));
            }
        }
        Ok(taken == Taken::Mine)
    }

    fn left_over(&self) -> Result<Vec<(u64, u64)>> {
        let passed = self.passed.lock().map(|p| p.clone()).unwrap_or_default();
        if passed.is_empty() {
            return Ok(passed);
        }
        let left = self.ask(|reply| Request::LeftOver(passed, reply))?;
        self.taken_over
            .fetch_add(left.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(left)
    }
}

/// What the claims thread works with.
struct Session {
    target: ConnectOptions,
    input: InputIdentity,
    by_others: Arc<Mutex<(u64, u64)>>,
}

impl Session {
    /// Answers requests until every sender is gone; the waits for blocks left over run beside.
    async fn serve(self, inbox: flume::Receiver<Request>, ready: flume::Sender<Result<()>>) {
        let client = match self.target.connect().await {
            Ok(client) => Arc::new(client),
            Err(e) => {
                let _ = ready.send(Err(e.into()));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let session = Arc::new(self);
        let mut client = client;
        while let Ok(request) = inbox.recv_async().await {
            match request {
                Request::Take(offset, reply) => {
                    let mut attempt = 0;
                    let taken = loop {
                        match ledger::take_block(&client, &session.input, offset).await {
                            Err(crate::Error::Query { cause, .. })
                                if is_transient(&cause) && attempt < RETRIES =>
                            {
                                attempt += 1;
                                session.reconnect(&mut client, &cause, attempt).await;
                            }
                            taken => break taken,
                        }
                    };
                    let _ = reply.send(taken);
                }
                Request::Release(offset) => {
                    match ledger::release_block(&client, &session.input, offset).await {
                        Ok(()) => {}
                        // The lock went with the session.
                        Err(crate::Error::Query { cause, .. }) if is_transient(&cause) => {
                            session.reconnect(&mut client, &cause, 1).await;
                        }
                        // Held until this process ends: others wait for it, then find it
                        // committed.
                        Err(e) => tracing::warn!("{e}"),
                    }
                }
                Request::LeftOver(passed, reply) => {
                    let (session, client) = (session.clone(), client.clone());
                    tokio::spawn(async move {
                        let _ = reply.send(session.left_over(&client, passed).await);
                    });
                }
            }
        }
    }

    /// A new claims session after the old one was lost (`--resume` retries as its sinks do).
    /// The blocks this process held went with the old one: another process may take one of
    /// them while it is loaded here, and the ledger's key keeps it from being committed twice.
    async fn reconnect(
        &self,
        client: &mut Arc<Client>,
        cause: &tokio_postgres::Error,
        attempt: u32,
    ) {
        tracing::warn!("the session holding the blocks being loaded: {cause}; reconnecting ({attempt}/{RETRIES})");
        tokio::time::sleep(BACKOFF * 2u32.pow(attempt - 1)).await;
        if let Ok(fresh) = self.target.connect().await {
            *client = Arc::new(fresh);
        }
    }

    /// Waits (on a session of its own) for each block in `passed` to be let go: committed, it
    /// is counted; left uncommitted, it is taken (on `client`, the claims session) and returned
    /// for this process to load; taken by a third process meanwhile, it is waited for again.
    async fn left_over(
        &self,
        client: &Client,
        mut passed: Vec<(u64, u64)>,
    ) -> crate::Result<Vec<(u64, u64)>> {
        let waiter = self.target.connect().await?;
        let mut left = Vec::new();
        while let Some((offset, line)) = passed.pop() {
            if let Some(rows) = ledger::settle_block(&waiter, &self.input, offset as i64).await? {
                if let Ok(mut by_others) = self.by_others.lock() {
                    by_others.0 += 1;
                    by_others.1 += rows as u64;
                }
                continue;
            }
            match ledger::take_block(client, &self.input, offset as i64).await? {
                Taken::Mine => left.push((offset, line)),
                Taken::Held => passed.push((offset, line)),
                // Committed between the wait and the take: the next wait counts it.
                Taken::Committed => passed.push((offset, line)),
            }
        }
        left.sort_unstable();
        Ok(left)
    }
}

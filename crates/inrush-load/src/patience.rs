//! How putting back what a load dropped waits for a table that another session keeps open (a
//! transaction that read or wrote it), for every engine.
//!
//! A statement waiting for a table's lock makes every later query of that table wait behind it:
//! servers grant a table's locks in the order they were asked for. So each attempt asks for its
//! lock for a moment only (the engine's bound, `lock_timeout` on PostgreSQL), then stands aside
//! for [`PAUSE`] while the queries queued behind it run, and asks again. After
//! [`REBUILD_LOCK_WAIT`] in all, or at a second Ctrl-C, it gives up: the definition stays in the
//! DDL journal, for `inrush recover` to put back once the table is free.

use crate::Interrupt;
use inrush_core::Reporter;
use std::time::{Duration, Instant};

/// How long one definition may wait in all for a table another session keeps open.
pub const REBUILD_LOCK_WAIT: Duration = Duration::from_secs(600);

/// Between two attempts: what the table's other queries get to run in.
pub const PAUSE: Duration = Duration::from_secs(1);

/// Who may end the waiting, and who hears of it.
#[derive(Clone, Copy)]
pub struct Patience<'a> {
    interrupt: Option<&'a Interrupt>,
    reporter: &'a dyn Reporter,
    limit: Duration,
}

/// An attempt's failure: the engine's own error, or the waiting given up (why, as a sentence).
#[derive(Debug)]
pub enum Waited<E> {
    Failed(E),
    GaveUp(String),
}

impl<'a> Patience<'a> {
    /// A second stop of `interrupt` ends the waiting, `reporter` hears of it. With no
    /// interrupt (`inrush recover`, which has no signal handler of its own), Ctrl-C ends the
    /// process, and what it did not put back stays journaled.
    pub fn new(interrupt: Option<&'a Interrupt>, reporter: &'a dyn Reporter) -> Self {
        Patience {
            interrupt,
            reporter,
            limit: REBUILD_LOCK_WAIT,
        }
    }

    /// Whether an attempt refused after `waited` in all is followed by another.
    fn again(&self, waited: Duration) -> bool {
        let stopped = self.interrupt.is_some_and(|i| i.again());
        !stopped && waited + PAUSE < self.limit
    }

    /// Runs `attempt` until it succeeds, fails otherwise than by its lock wait (`held`), or
    /// the waiting is given up. `what` names the definition and `table` its table, as the
    /// user reads them; `who` says who keeps the table open (": pid 12 (psql, ...)", or
    /// nothing), asked once the first attempt was refused.
    pub async fn retry<T, E, W>(
        &self,
        what: &str,
        table: &str,
        mut attempt: impl AsyncFnMut() -> Result<T, E>,
        held: impl Fn(&E) -> bool,
        who: impl FnOnce() -> W,
    ) -> Result<T, Waited<E>>
    where
        W: std::future::Future<Output = String>,
    {
        let started = Instant::now();
        let mut who = Some(who);
        let mut holders = String::new();
        loop {
            match attempt().await {
                Ok(done) => return Ok(done),
                Err(e) if !held(&e) => return Err(Waited::Failed(e)),
                Err(_) => {}
            }
            if let Some(who) = who.take() {
                holders = who().await;
                self.reporter.waiting(&format!(
                    "putting back {what} waits for {table}, which another session keeps open{holders}; asking again every {} s for up to {} min (a second Ctrl-C stops waiting and leaves it to `inrush recover`)",
                    PAUSE.as_secs(),
                    self.limit.as_secs() / 60
                ));
            }
            let waited = started.elapsed();
            if !self.again(waited) {
                let stopped = self.interrupt.is_some_and(|i| i.again());
                return Err(Waited::GaveUp(gave_up(
                    what, table, &holders, stopped, waited,
                )));
            }
            tokio::time::sleep(PAUSE).await;
        }
    }
}

/// Why `what` was not put back: `table`'s lock, which another session (`holders`, as for
/// [`Patience::retry`]) kept, waited for until a second stop or for `waited`.
pub fn gave_up(what: &str, table: &str, holders: &str, stopped: bool, waited: Duration) -> String {
    let why = match stopped {
        true => "stopped waiting at the second interrupt".to_string(),
        false => format!("gave up after {} s", waited.as_secs()),
    };
    format!("putting back {what} needs a lock on {table}, which another session kept open{holders}; {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn patience(interrupt: &Interrupt, limit: Duration) -> Patience<'_> {
        Patience {
            interrupt: Some(interrupt),
            reporter: &inrush_core::Silent,
            limit,
        }
    }

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn an_attempt_refused_for_its_lock_is_made_again_until_it_succeeds() {
        let interrupt = Interrupt::default();
        let tries = Cell::new(0);
        let done = run(patience(&interrupt, Duration::from_secs(60)).retry(
            "index i",
            "t",
            async || {
                tries.set(tries.get() + 1);
                match tries.get() {
                    1 => Err("locked"),
                    _ => Ok(tries.get()),
                }
            },
            |e| *e == "locked",
            || async { String::new() },
        ));
        assert_eq!(done.unwrap(), 2);
    }

    #[test]
    fn any_other_failure_ends_the_attempts_at_once() {
        let interrupt = Interrupt::default();
        let tries = Cell::new(0);
        let done = run(patience(&interrupt, Duration::from_secs(60)).retry(
            "index i",
            "t",
            async || {
                tries.set(tries.get() + 1);
                Err::<(), _>("duplicate key")
            },
            |e| *e == "locked",
            || async { String::new() },
        ));
        assert!(matches!(done, Err(Waited::Failed("duplicate key"))));
        assert_eq!(tries.get(), 1);
    }

    #[test]
    fn the_waiting_ends_at_its_limit_and_names_who_kept_the_table() {
        let interrupt = Interrupt::default();
        let done = run(patience(&interrupt, Duration::from_millis(10)).retry(
            "index i",
            "t",
            async || Err::<(), _>("locked"),
            |e| *e == "locked",
            || async { ": pid 7".to_string() },
        ));
        let Err(Waited::GaveUp(why)) = done else {
            panic!("{done:?}")
        };
        let said = "putting back index i needs a lock on t, which another session kept open: pid 7; gave up after 0 s";
        assert_eq!(why, said);
    }

    #[test]
    fn a_second_signal_ends_the_waiting_and_a_first_does_not() {
        let interrupt = Interrupt::default();
        interrupt.signal();
        let p = patience(&interrupt, Duration::from_secs(60));
        assert!(p.again(Duration::ZERO));
        interrupt.signal();
        assert!(!p.again(Duration::ZERO));
    }
}

//! What a signal handler and a running load share: whether the user asked to stop, and what
//! stopping means at that moment.
//!
//! One atomic word holds both, so the handler's message and the load's decision agree: the
//! load enters "committing" only if no stop was asked before (one compare-and-swap), and a stop
//! asked after that sees "committed" and is told the truth: the rows stay, the dropped
//! definitions come back, the upkeep is skipped.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

const STOP: u8 = 1;
const AGAIN: u8 = 2;
/// Definitions are dropped for the load (journaled): they must be put back before exiting.
const DROPPED: u8 = 4;
/// The rows are committed (or committing): a stop no longer rolls anything back.
const COMMITTED: u8 = 8;
/// `--resume`: every block commits on its own, so a stop keeps the blocks committed so far.
const RESUMABLE: u8 = 16;

/// Set from a signal handler, read by the load.
#[derive(Debug, Default)]
pub struct Interrupt(AtomicU8);

/// What a signal found, for the handler to say and do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signalled {
    /// Nothing is committed and nothing dropped: the load rolls back; a second signal may exit
    /// at once (the server rolls back a closed connection's transaction).
    RollingBack { again: bool },
    /// `--resume`: the blocks committed so far stay; the same command loads the rest. A second
    /// signal may exit at once too.
    Stopping { again: bool },
    /// Nothing is committed, but definitions dropped for the load are being put back first;
    /// exiting now would leave them dropped, so the handler must not.
    Restoring { again: bool },
    /// The rows are committed: the dropped definitions (if any) are put back, the upkeep
    /// (VACUUM, ANALYZE) is skipped.
    Finishing { again: bool },
}

impl Signalled {
    /// What the user is told, true to the phase the load is in.
    pub fn message(self) -> &'static str {
        match self {
            Signalled::RollingBack { again: false } => {
                "interrupted: stopping and rolling back; nothing is committed (again to exit at once)"
            }
            Signalled::RollingBack { again: true } => {
                "interrupted again: exiting now; the server rolls back the open transactions"
            }
            Signalled::Stopping { again: false } => {
                "interrupted: stopping; the blocks committed so far stay, and the same command loads the rest (again to exit at once)"
            }
            Signalled::Stopping { again: true } => {
                "interrupted again: exiting now; the blocks committed so far stay, and the same command loads the rest"
            }
            Signalled::Restoring { again: false } => {
                "interrupted: rolling back, then putting back the indexes and constraints dropped for the load"
            }
            Signalled::Restoring { again: true } => {
                "still putting back the indexes and constraints dropped for the load; exiting now would leave them dropped (SIGKILL leaves them to `inrush recover`). One that waits for a table another session keeps open is left to `inrush recover`"
            }
            Signalled::Finishing { again: false } => {
                "interrupted after the commit: the rows stay committed; putting back what was dropped for the load and skipping VACUUM/ANALYZE"
            }
            Signalled::Finishing { again: true } => {
                "the rows are committed; finishing what was dropped for the load, then exiting (one that waits for a table another session keeps open is left to `inrush recover`)"
            }
        }
    }

    /// Whether the handler may end the process at once.
    pub fn may_exit_now(self) -> bool {
        matches!(
            self,
            Signalled::RollingBack { again: true } | Signalled::Stopping { again: true }
        )
    }
}

impl Interrupt {
    /// Records a signal; returns what it means now.
    pub fn signal(&self) -> Signalled {
        let before = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                Some(match s & STOP {
                    0 => s | STOP,
                    _ => s | AGAIN,
                })
            })
            .unwrap_or_default();
        let again = before & STOP != 0;
        if before & COMMITTED != 0 {
            Signalled::Finishing { again }
        } else if before & DROPPED != 0 {
            Signalled::Restoring { again }
        } else if before & RESUMABLE != 0 {
            Signalled::Stopping { again }
        } else {
            Signalled::RollingBack { again }
        }
    }

    /// Whether a stop was asked.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst) & STOP != 0
    }

    /// Whether a stop was asked twice: what may wait without end (a lock another session
    /// holds) stops waiting, though the load still finishes what it must.
    pub fn again(&self) -> bool {
        self.0.load(Ordering::SeqCst) & AGAIN != 0
    }

    /// Whether a stop was asked before the commit began: the load rolls back (under
    /// `--resume`, the block in flight), so a statement that waits may be cancelled. Once
    /// true it stays true, since the commit can then no longer begin.
    pub fn cancels(&self) -> bool {
        let s = self.0.load(Ordering::SeqCst);
        s & STOP != 0 && s & COMMITTED == 0
    }

    pub fn resumable(&self) {
        self.0.fetch_or(RESUMABLE, Ordering::SeqCst);
    }

    pub fn dropped(&self, dropped: bool) {
        match dropped {
            true => self.0.fetch_or(DROPPED, Ordering::SeqCst),
            false => self.0.fetch_and(!DROPPED, Ordering::SeqCst),
        };
    }

    /// Calls `end` on a thread of its own while a stop before the commit stands (see
    /// [`Interrupt::cancels`]), again after each `again` (one call between two statements ends
    /// neither), until the returned guard is dropped: how a target ends what its connection
    /// waits in. Polls, as the rest of the pipeline does: a signal handler may only set a flag.
    pub fn watch(self: &Arc<Self>, again: Duration, end: impl FnMut() + Send + 'static) -> Watch {
        self.watch_while(Interrupt::cancels, again, end)
    }

    /// [`Interrupt::watch`] for a second stop ([`Interrupt::again`]): how a target stops
    /// what may wait without end once the load can only finish.
    pub fn watch_again(
        self: &Arc<Self>,
        again: Duration,
        end: impl FnMut() + Send + 'static,
    ) -> Watch {
        self.watch_while(Interrupt::again, again, end)
    }

    fn watch_while(
        self: &Arc<Self>,
        stands: fn(&Interrupt) -> bool,
        again: Duration,
        mut end: impl FnMut() + Send + 'static,
    ) -> Watch {
        let done = Arc::new(AtomicBool::new(false));
        let (stop, interrupt) = (done.clone(), self.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if stands(&interrupt) {
                    end();
                    std::thread::sleep(again);
                } else {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        });
        Watch(done)
    }

    /// Enters the commit unless a stop was asked first; false: roll back instead. Once
    /// entered it stays entered: each of several writers whose commits form one window may
    /// ask again, and none of them rolls back after the first committed.
    pub fn begin_commit(&self) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                (s & COMMITTED != 0 || s & STOP == 0).then_some(s | COMMITTED)
            })
            .is_ok()
    }
}

/// Stops an [`Interrupt::watch`] when dropped.
pub struct Watch(Arc<AtomicBool>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_signal_exits_only_when_nothing_is_dropped_or_committed() {
        let i = Interrupt::default();
        assert_eq!(i.signal(), Signalled::RollingBack { again: false });
        assert!(i.signal().may_exit_now());

        let i = Interrupt::default();
        i.dropped(true);
        assert_eq!(i.signal(), Signalled::Restoring { again: false });
        assert!(!i.signal().may_exit_now());
        i.dropped(false);
        assert!(i.signal().may_exit_now());
    }

    #[test]
    fn the_commit_and_a_signal_agree_on_which_came_first() {
        let i = Interrupt::default();
        assert!(i.begin_commit());
        assert_eq!(i.signal(), Signalled::Finishing { again: false });
        assert!(
            !i.cancels(),
            "a stop after the commit began cancels nothing"
        );
        assert!(!i.signal().may_exit_now());

        let i = Interrupt::default();
        i.signal();
        assert!(
            !i.begin_commit(),
            "a stop asked before the commit rolls back"
        );
        assert!(i.cancels());

        let i = Interrupt::default();
        assert!(i.begin_commit());
        i.signal();
        assert!(
            i.begin_commit(),
            "a commit entered stays entered for the writers after the first"
        );
    }
}

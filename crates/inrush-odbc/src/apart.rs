//! ODBC calls block, and a driver may wait forever on a server gone silent (psqlODBC has no
//! read timeout), so a load must be able to stop waiting for a call it cannot end. Each
//! writer's connection lives on a thread of its own ([`Apart`]) that runs the writer's calls
//! one at a time; the writer waits for each until it returns, a stop before the commit is
//! asked, or the load is [`Cut`] (the kit's `pulse` found the server silent). A call left
//! behind keeps its thread and its uncommitted transaction until the driver gives up or the
//! process ends; the writer sends it nothing more.

use inrush_load::{Error, Interrupt, Result};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a wait looks at the stop and the cut.
const POLL: Duration = Duration::from_millis(50);

/// Why the load's connections were given up, once they were: shared by the watch beside the
/// load and every writer.
#[derive(Debug, Default)]
pub(crate) struct Cut(Mutex<Option<String>>);

impl Cut {
    pub(crate) fn cut(&self, why: String) {
        let mut cut = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cut.get_or_insert(why);
    }

    pub(crate) fn why(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

type Job<S> = Box<dyn FnOnce(&mut S) + Send>;

/// A thread that owns `S` (a connection and what is prepared on it) and runs the calls given
/// to it in turn. Dropped, it ends after the call it runs, and drops `S` there.
pub(crate) struct Apart<S> {
    jobs: Sender<Job<S>>,
    interrupt: Arc<Interrupt>,
    cut: Arc<Cut>,
    /// A call was left behind: the thread may never take another.
    left: bool,
}

impl<S: Send + 'static> Apart<S> {
    pub(crate) fn new(mut state: S, interrupt: Arc<Interrupt>, cut: Arc<Cut>) -> Apart<S> {
        let (jobs, calls) = channel::<Job<S>>();
        std::thread::spawn(move || {
            for job in calls {
                job(&mut state);
            }
        });
        Apart {
            jobs,
            interrupt,
            cut,
            left: false,
        }
    }

    /// `call` on the thread, waited for until it returns, a stop is asked before the commit
    /// ([`Interrupt::cancels`]: the transaction rolls back anyway), or the load is cut.
    pub(crate) fn call<T: Send + 'static>(
        &mut self,
        call: impl FnOnce(&mut S) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        if let Some(why) = self.given_up() {
            return Err(why);
        }
        let (reply, answer) = channel();
        let job: Job<S> = Box::new(move |state| {
            let _ = reply.send(call(state));
        });
        if self.jobs.send(job).is_err() {
            return Err(ended());
        }
        loop {
            match answer.recv_timeout(POLL) {
                Ok(answered) => return answered,
                Err(RecvTimeoutError::Disconnected) => return Err(ended()),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(why) = self.stopped() {
                        self.left = true;
                        return Err(why);
                    }
                }
            }
        }
    }

    /// Why no more calls are sent, once a call was left behind.
    fn given_up(&self) -> Option<Error> {
        match self.left {
            true => Some(self.stopped().unwrap_or_else(ended)),
            false => None,
        }
    }

    fn stopped(&self) -> Option<Error> {
        if let Some(why) = self.cut.why() {
            return Some(Error::Engine {
                engine: "ODBC",
                what: why,
                message: "the statement waiting on it was given up".into(),
                code: None,
            });
        }
        self.interrupt.cancels().then_some(Error::Interrupted)
    }
}

fn ended() -> Error {
    Error::Internal("a writer's connection thread ended".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apart(cut: &Arc<Cut>, interrupt: &Arc<Interrupt>) -> Apart<u32> {
        Apart::new(0, Arc::clone(interrupt), Arc::clone(cut))
    }

    #[test]
    fn calls_run_in_turn_on_the_state_they_share() {
        let (cut, interrupt) = (Arc::default(), Arc::default());
        let mut on = apart(&cut, &interrupt);
        on.call(|n| {
            *n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(on.call(|n| Ok(*n + 1)).unwrap(), 2);
    }

    #[test]
    fn a_call_that_never_returns_is_given_up_once_the_load_is_cut() {
        let (cut, interrupt) = (Arc::new(Cut::default()), Arc::default());
        let mut on = apart(&cut, &interrupt);
        let later = Arc::clone(&cut);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            later.cut("the server has not answered for 1 s".into());
        });
        let stuck = on.call(|_| -> Result<()> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(())
        });
        assert!(stuck.unwrap_err().to_string().contains("has not answered"));
        // Nothing more is sent to a thread that may never come back.
        assert!(on.call(|_| Ok(())).is_err());
    }

    #[test]
    fn a_stop_before_the_commit_gives_up_the_call_and_one_after_does_not() {
        let (cut, interrupt) = (Arc::default(), Arc::new(Interrupt::default()));
        let mut on = apart(&cut, &interrupt);
        assert!(interrupt.begin_commit());
        interrupt.signal();
        let slow = on.call(|_| {
            std::thread::sleep(Duration::from_millis(200));
            Ok(7)
        });
        assert_eq!(slow.unwrap(), 7, "a stop in the commit waits for it");
        let (cut, interrupt) = (Arc::default(), Arc::new(Interrupt::default()));
        let mut on = apart(&cut, &interrupt);
        interrupt.signal();
        let stuck = on.call(|_| -> Result<()> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(())
        });
        assert!(matches!(stuck, Err(Error::Interrupted)));
    }
}

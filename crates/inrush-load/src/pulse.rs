//! A server that stops answering must not hold a load forever.
//!
//! Keepalives do not see a server gone quiet behind a proxy or a tunnel on this machine (the
//! near end answers them), and a statement may rightly run for minutes without a byte (an
//! index build), so a load cannot tell silence from work by its own connections. So a thread
//! beside the load looks at the server every second over a connection of its own; when no look
//! has been answered for the network timeout, the engine cuts every connection of the load:
//! whatever waits on one fails at once, and the load says what the table holds. The rule is
//! here once; each engine says how it looks and how it cuts.

use inrush_core::Reporter;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How often the server is looked at.
pub const EVERY: Duration = Duration::from_secs(1);

/// A load shorter than this is never looked at.
const FIRST_LOOK: Duration = Duration::from_secs(2);

/// Runs `load` with the watch beside it, ended as soon as `load` returns. `look` asks the
/// server once, waiting at most the time it is given (what is left of the limit: a server
/// slow to answer is not a silent one), and says whether it answered, an error included;
/// `cut` ends the load's connections to `server`, with the sentence that says why (told to
/// `reporter` too).
pub fn beside<T>(
    limit: Duration,
    server: &str,
    reporter: &dyn Reporter,
    look: impl FnMut(Duration) -> bool + Send,
    cut: impl FnOnce(String) + Send,
    load: impl FnOnce() -> T,
) -> T {
    // The sender is dropped when `load` returns: the watch's wait ends at once, so a short
    // load is not held back by its sleep.
    let (running, stopped) = channel::<()>();
    std::thread::scope(|s| {
        s.spawn(|| watch(limit, server, reporter, look, cut, stopped));
        let result = load();
        drop(running);
        result
    })
}

/// What the load says when the server has not answered for `limit`.
pub fn silence(server: &str, limit: Duration) -> String {
    format!(
        "the server at {server} has not answered for {} s (--network-timeout): the load's connections to it were closed",
        limit.as_secs()
    )
}

/// The load's outcome once the watch has run beside it: a server failure that came of the
/// watch's cut (`why`, if it cut) says so, unless it says so already; an error that tells what
/// committed (exit 5, 8, 9) keeps its own words.
pub fn explained<T>(
    loaded: crate::Result<T>,
    engine: &'static str,
    why: Option<String>,
) -> crate::Result<T> {
    match (loaded, why) {
        (Err(e), Some(why)) if e.kind() == crate::Kind::Server && !e.to_string().contains(&why) => {
            Err(crate::Error::Engine {
                engine,
                what: why,
                message: e.to_string(),
                code: None,
            })
        }
        (loaded, _) => loaded,
    }
}

fn watch(
    limit: Duration,
    server: &str,
    reporter: &dyn Reporter,
    mut look: impl FnMut(Duration) -> bool,
    cut: impl FnOnce(String),
    stopped: Receiver<()>,
) {
    let running = |wait| matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
    if !running(FIRST_LOOK) {
        return;
    }
    let mut answered = Instant::now();
    while running(EVERY) {
        let left = limit.saturating_sub(answered.elapsed());
        if left.is_zero() {
            let why = silence(server, limit);
            reporter.waiting(&why);
            cut(why);
            return;
        }
        if look(left) {
            answered = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Holds the load until `done` says so (or a minute has passed).
    fn until(done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_server_that_answers_is_never_cut() {
        let cut = AtomicBool::new(false);
        let looks = AtomicUsize::new(0);
        beside(
            Duration::from_secs(30),
            "s",
            &inrush_core::Silent,
            |_| {
                looks.fetch_add(1, Ordering::Relaxed);
                true
            },
            |_| cut.store(true, Ordering::Relaxed),
            // Looks far apart would not be the server's silence: only answered ones count.
            || until(|| looks.load(Ordering::Relaxed) >= 3),
        );
        assert!(looks.load(Ordering::Relaxed) >= 3);
        assert!(!cut.load(Ordering::Relaxed));
    }

    #[test]
    fn a_silent_server_is_cut_once_the_limit_has_passed_and_the_load_goes_on_to_its_end() {
        let why = std::sync::Mutex::new(None);
        let ended = beside(
            Duration::from_secs(1),
            "db:5432",
            &inrush_core::Silent,
            |_| false,
            |w| *why.lock().unwrap() = Some(w),
            || {
                // The load ends once its connections are cut, not before.
                let deadline = Instant::now() + Duration::from_secs(10);
                while why.lock().unwrap().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                "ended"
            },
        );
        assert_eq!(ended, "ended");
        let why = why.lock().unwrap().clone().expect("cut");
        assert!(why.contains("db:5432 has not answered for 1 s"), "{why}");
    }

    #[test]
    fn a_look_may_wait_for_what_is_left_of_the_limit() {
        let waits = std::sync::Mutex::new(Vec::new());
        beside(
            Duration::from_secs(30),
            "s",
            &inrush_core::Silent,
            |left| {
                waits.lock().unwrap().push(left);
                false
            },
            |_| {},
            || until(|| waits.lock().unwrap().len() >= 2),
        );
        let waits = waits.lock().unwrap();
        assert!(waits.len() >= 2, "{waits:?}");
        assert!(waits.windows(2).all(|w| w[1] < w[0]), "{waits:?}");
        assert!(waits[0] <= Duration::from_secs(30), "{waits:?}");
    }

    #[test]
    fn a_short_load_is_never_looked_at() {
        let looked = AtomicBool::new(false);
        beside(
            Duration::from_secs(1),
            "s",
            &inrush_core::Silent,
            |_| looked.swap(true, Ordering::Relaxed),
            |_| {},
            || (),
        );
        assert!(!looked.load(Ordering::Relaxed));
    }
}

//! What a COMMIT did, when its answer is lost or late: asked of the server, never guessed.
//!
//! A COMMIT can reach the server and its answer be lost on the way back (a reset, a proxy or
//! tunnel that died, a server gone silent), and then the rows are in while the client saw only
//! an error. So a COMMIT that ends in anything but the server's own refusal is settled by
//! looking at the transaction over a new connection until its fate is final: a session still
//! sitting in the transaction is ended (which rolls it back), one running its COMMIT is waited
//! for. A COMMIT still unanswered after [`ASK_AFTER`] is looked at the same way, which is how a
//! silent connection is noticed at the commit. Only when the server cannot be reached for the
//! whole limit is the fate unknown, with the query that tells. The rule is here once; each
//! engine says how its COMMIT ends and how it looks (PostgreSQL: `txid_status`; MariaDB: the
//! transaction's own mark).

use crate::commits::Fate;
use crate::Error;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a COMMIT may go unanswered before the server is asked about it.
pub const ASK_AFTER: Duration = Duration::from_secs(5);

/// How often, and how patiently, a connection lost where going on is safe is made again: 0.2 s
/// doubling to 6.4 s, about 13 s in all, enough for a server restart.
pub const RETRIES: u32 = 6;
pub const BACKOFF: Duration = Duration::from_millis(200);

/// A connection made again after one was lost, tried [`RETRIES`] times with backoff, unless
/// `give_up` says there is no point (the server was found silent): the last failure then.
pub async fn reconnect<T, E, Fut>(
    mut connect: impl FnMut() -> Fut,
    give_up: impl Fn() -> bool,
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut pause = BACKOFF;
    for tried in 0.. {
        match connect().await {
            Ok(made) => return Ok(made),
            Err(e) if tried == RETRIES || give_up() => return Err(e),
            Err(_) => {}
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
    unreachable!("the loop returns by its last try")
}

/// How a COMMIT ended on the wire.
pub enum Answer {
    Committed,
    /// The server's own answer: the transaction rolled back.
    Refused(Error),
    /// No answer: the connection broke (why).
    Lost(String),
}

/// What one look at the transaction found.
pub enum Look {
    /// Its fate, final: committed or not.
    Done(bool),
    /// Its session runs a statement (its COMMIT): the fate comes when it ends.
    Running,
    /// Its session sat in the transaction and was ended, or is ending: look again.
    Ended,
}

/// A transaction at its commit, as the rule sees it: `engine` names it in messages, `ask` is
/// the query that tells its fate, `limit` how long the server may leave the questions
/// unanswered.
pub struct Asking {
    pub engine: &'static str,
    pub ask: String,
    pub limit: Duration,
}

/// Waits for `commit`'s answer; a lost or late one is settled by asking with `look` (one look,
/// waiting at most the time it is given).
pub async fn commit<L, F>(
    commit: impl Future<Output = Answer>,
    asking: &Asking,
    mut look: L,
) -> Fate
where
    L: FnMut(Duration) -> F,
    F: Future<Output = Result<Look, String>>,
{
    tokio::pin!(commit);
    loop {
        match tokio::time::timeout(ASK_AFTER, &mut commit).await {
            Ok(Answer::Committed) => return Fate::Committed,
            Ok(Answer::Refused(e)) => return Fate::RolledBack(e),
            Ok(Answer::Lost(why)) => return settle(asking, &why, look).await,
            // No answer yet: a commit that takes its time (a synchronous standby) goes on; one
            // the server finished or never received is settled.
            Err(_) => match look(asking.limit.min(ASK_AFTER)).await {
                Ok(Look::Running) => continue,
                _ => {
                    let why = format!("no answer to COMMIT in {} s", ASK_AFTER.as_secs());
                    return settle(asking, &why, look).await;
                }
            },
        }
    }
}

/// Looks until the transaction's fate is known, or the limit has passed without an answer.
async fn settle<L, F>(asking: &Asking, why: &str, mut look: L) -> Fate
where
    L: FnMut(Duration) -> F,
    F: Future<Output = Result<Look, String>>,
{
    let deadline = Instant::now() + asking.limit;
    let mut pause = Duration::from_millis(100);
    let mut last = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match look(left.max(Duration::from_millis(100))).await {
            Ok(Look::Done(true)) => return Fate::Committed,
            Ok(Look::Done(false)) => {
                return Fate::RolledBack(Error::Engine {
                    engine: asking.engine,
                    what: "COMMIT".into(),
                    message: format!(
                        "{why}; asked afterwards, the server says the transaction did not commit"
                    ),
                    code: None,
                })
            }
            Ok(Look::Running) | Ok(Look::Ended) => {}
            Err(e) => last = e,
        }
        if Instant::now() + pause >= deadline {
            let reason = match last.is_empty() {
                true => why.to_string(),
                false => format!(
                    "{why}; asking the server for {} s: {last}",
                    asking.limit.as_secs()
                ),
            };
            return Fate::Unknown {
                reason,
                ask: asking.ask.clone(),
            };
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// A look that answers `answers` in turn, then fails.
    fn looks(
        answers: Vec<Result<Look, String>>,
    ) -> impl FnMut(Duration) -> std::future::Ready<Result<Look, String>> {
        let mut answers = answers.into_iter();
        move |_| std::future::ready(answers.next().unwrap_or_else(|| Err("no answer".into())))
    }

    fn asking() -> Asking {
        Asking {
            engine: "E",
            ask: "SELECT fate(1)".into(),
            limit: Duration::from_millis(500),
        }
    }

    fn lost() -> std::future::Ready<Answer> {
        std::future::ready(Answer::Lost("reset".into()))
    }

    #[test]
    fn a_lost_answer_of_a_commit_the_server_made_is_a_commit() {
        let look = looks(vec![Ok(Look::Ended), Ok(Look::Done(true))]);
        let fate = run(commit(lost(), &asking(), look));
        assert!(matches!(fate, Fate::Committed), "{fate:?}");
    }

    #[test]
    fn a_lost_answer_of_a_commit_the_server_never_made_is_a_rollback_said_as_asked() {
        let fate = run(commit(
            lost(),
            &asking(),
            looks(vec![Ok(Look::Done(false))]),
        ));
        let Fate::RolledBack(e) = fate else {
            panic!("{fate:?}")
        };
        assert!(e.to_string().contains("reset; asked afterwards"), "{e}");
    }

    #[test]
    fn a_server_that_cannot_be_asked_leaves_the_fate_unknown_with_the_query_that_tells() {
        let fate = run(commit(lost(), &asking(), looks(Vec::new())));
        let Fate::Unknown { reason, ask } = fate else {
            panic!("{fate:?}")
        };
        assert!(reason.contains("no answer"), "{reason}");
        assert_eq!(ask, "SELECT fate(1)");
    }

    #[test]
    fn a_reconnect_tries_until_it_connects_and_not_after_it_is_told_to_give_up() {
        let mut tries = 0;
        let made: Result<u32, &str> = run(reconnect(
            || {
                tries += 1;
                std::future::ready(if tries < 3 { Err("refused") } else { Ok(tries) })
            },
            || false,
        ));
        assert_eq!(made, Ok(3));
        let mut tries = 0;
        let given_up: Result<(), &str> = run(reconnect(
            || {
                tries += 1;
                std::future::ready(Err("silent"))
            },
            || true,
        ));
        assert_eq!((given_up, tries), (Err("silent"), 1));
    }

    #[test]
    fn the_servers_own_refusal_is_a_rollback_without_asking() {
        let refused = Answer::Refused(Error::Internal("deferred key".into()));
        let fate = run(commit(
            std::future::ready(refused),
            &asking(),
            looks(Vec::new()),
        ));
        assert!(
            matches!(fate, Fate::RolledBack(Error::Internal(_))),
            "{fate:?}"
        );
    }
}

//! Connections chosen during the load, from what it measures.
//!
//! How many COPY streams load fastest depends on what the server has to spare: its cores (one
//! backend parses one stream), its WAL, the client's own encoding rate. None of that is known
//! before the load, and a fixed guess that is right for one server is wrong for another. So the
//! load opens up to a cap of connections at the start, each with its transaction (an idle one
//! costs the server a slot and nothing more), and a gate lets only the first `active` of them take
//! chunks. A controller beside the sinks measures the rows they take per window and climbs:
//! one more stream is kept only when it brings more rows per second in two windows running,
//! one fewer when it costs none; it also samples what the active sessions wait on
//! (`pg_stat_activity`), so it does not add streams while the server waits for the client's
//! rows, and says so in the summary.
//!
//! Opening them all at the start, rather than connecting more later, keeps the rest of the load
//! as it was: the joint commit sees every transaction (an idle one commits its zero rows), the
//! deadlock watch and cancellation know every session, and `--resume`'s block commits, the
//! isolating and routed sinks work unchanged since only the taking of a chunk is gated.

use crate::activity::{self, Wait};
use inrush_load::stages::Shared;
use inrush_load::summary::Parallelism;
use inrush_load::worker::Chunk;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// One window of measurement. Short enough to settle within the first seconds of a load, long
/// enough to hold dozens of 1 MiB chunks at the rates seen here (about 100 per second).
const WINDOW: Duration = Duration::from_millis(500);
/// Looks at the sessions' waits this often within a window.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// An added stream is kept only if rows/s rose by more than this: a stream that brings less is
/// not worth its backend. Windows on a shared machine differ by more at times (a checkpoint,
/// another process): a wrong step is undone by the next probe after [`HOLD`].
const GAIN: f64 = 0.05;
/// A removed stream stays removed if rows/s fell by no more than this (fewer is cheaper).
const LOSS: f64 = 0.02;
/// Windows to stay put after settling, before probing again (what is best drifts: a
/// checkpoint, another session, the input's later rows).
const HOLD: u32 = 6;
/// Share of samples the active sessions spend waiting for the client's rows (`ClientRead`)
/// above which the client is the limit, and another stream would only share its rows out.
const CLIENT_BOUND: f64 = 0.6;
/// How often a gated sink looks again whether it may take chunks (it also looks at the cancel
/// flag and whether the queue is done, so it never holds a load that ended).
const GATE_POLL: Duration = Duration::from_millis(10);

/// Shared by the sinks and the controller.
pub(crate) struct Gate {
    /// Sinks `0..active` take chunks; the others wait, their transaction open.
    active: AtomicUsize,
    /// Rows taken from the queue by the sinks: the measure of throughput.
    taken: AtomicU64,
    climb: Mutex<Climb>,
}

/// What a sink takes its chunks from: the queue, and its place behind the gate (none for a
/// fixed number of connections, and for `--check`'s drain).
pub(crate) struct Feed<'a> {
    pub chunks: flume::Receiver<Chunk>,
    pub turn: Option<(&'a Gate, usize)>,
}

impl Feed<'_> {
    /// Waits until this sink may take a chunk; false when the load was cancelled or the queue
    /// is done (the active sinks take what is left).
    pub async fn wait_turn(&self, shared: &Shared) -> bool {
        let Some((gate, index)) = self.turn else {
            return true;
        };
        loop {
            if shared.is_cancelled() {
                return false;
            }
            if index < gate.active.load(Ordering::Relaxed) {
                return true;
            }
            if self.chunks.is_disconnected() && self.chunks.is_empty() {
                return false;
            }
            tokio::time::sleep(GATE_POLL).await;
        }
    }

    pub fn took(&self, chunk: &Chunk) {
        if let Some((gate, _)) = self.turn {
            gate.taken.fetch_add(chunk.rows, Ordering::Relaxed);
        }
    }
}

impl Gate {
    /// `start` of `cap` opened connections take chunks at first.
    pub fn new(start: usize, cap: usize) -> Gate {
        let start = start.clamp(1, cap.max(1));
        Gate {
            active: AtomicUsize::new(start),
            taken: AtomicU64::new(0),
            climb: Mutex::new(Climb::new(start, cap.max(1))),
        }
    }

    /// What the load chose and why, for the summary.
    pub fn parallelism(&self) -> Parallelism {
        let climb = self.climb.lock().unwrap_or_else(|e| e.into_inner());
        Parallelism {
            adaptive: true,
            opened: climb.cap,
            chosen: climb.settled(),
            reason: climb.reason(),
        }
    }

    fn set_active(&self, n: usize) {
        self.active.store(n, Ordering::Relaxed);
    }
}

/// Runs beside the sinks until they are done (the caller drops it then): every [`WINDOW`], the
/// rows the sinks took, what the active sessions waited on, and a step of the climb. It stops
/// changing anything once the workers are done (the rate then falls for want of rows, not of
/// streams). A failed look at `pg_stat_activity` only loses that sample. Without a gate (a
/// fixed number of connections) it only waits.
pub(crate) async fn control(
    gate: Option<&Gate>,
    control: &Client,
    pids: &[i32],
    chunks: &flume::Receiver<Chunk>,
    shared: &Shared,
) -> Infallible {
    let Some(gate) = gate else {
        return std::future::pending().await;
    };
    // The first window starts with the first rows taken, so connecting, reading and encoding
    // the first blocks do not count against the number the load starts with.
    while gate.taken.load(Ordering::Relaxed) == 0 {
        tokio::time::sleep(GATE_POLL).await;
    }
    let mut since = (Instant::now(), gate.taken.load(Ordering::Relaxed));
    let mut tally = Tally::default();
    loop {
        let window_end = Instant::now() + WINDOW;
        while Instant::now() < window_end {
            tokio::time::sleep(SAMPLE_EVERY).await;
            let active = gate.active.load(Ordering::Relaxed).min(pids.len());
            if let Ok((waits, checkpointing)) = activity::waits_of(control, &pids[..active]).await {
                tally.add(&waits, checkpointing);
            }
        }
        let (now, taken) = (Instant::now(), gate.taken.load(Ordering::Relaxed));
        let rate = (taken - since.1) as f64 / (now - since.0).as_secs_f64().max(1e-3);
        since = (now, taken);
        if shared.is_cancelled() || chunks.is_disconnected() {
            // The tail of the load, or its end: nothing more to learn.
            std::future::pending::<()>().await;
        }
        let mut climb = gate.climb.lock().unwrap_or_else(|e| e.into_inner());
        let next = climb.step(rate, &tally);
        climb.waits.merge(&tally);
        tally = Tally::default();
        gate.set_active(next);
    }
}

/// What the active sessions were found doing, counted over samples.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Tally {
    samples: u32,
    /// Parsing and writing rows: no wait event (on a CPU, or waiting for one).
    working: u32,
    /// Waiting for the client's next rows (`Client`/`ClientRead`).
    client: u32,
    /// Waiting on the WAL: inserting into its buffers, writing or flushing it.
    wal: u32,
    /// Other waits: data file I/O, the relation extension lock, buffer locks.
    other: u32,
    /// Looks while a checkpoint was being written.
    looks: u32,
    checkpointing: u32,
}

impl Tally {
    fn add(&mut self, waits: &[Wait], checkpointing: bool) {
        self.looks += 1;
        self.checkpointing += checkpointing as u32;
        for w in waits.iter().filter(|w| w.state == "active") {
            self.samples += 1;
            match (w.event_type.as_str(), w.event.as_str()) {
                ("", _) => self.working += 1,
                ("Client", _) => self.client += 1,
                (_, e) if e.starts_with("WAL") || e.starts_with("Wal") => self.wal += 1,
                _ => self.other += 1,
            }
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.samples += other.samples;
        self.working += other.working;
        self.client += other.client;
        self.wal += other.wal;
        self.other += other.other;
        self.looks += other.looks;
        self.checkpointing += other.checkpointing;
    }

    fn share(&self, n: u32) -> f64 {
        n as f64 / self.samples.max(1) as f64
    }

    /// The server waited on the client's rows most of the time: more streams cannot help.
    fn client_bound(&self) -> bool {
        self.samples > 0 && self.share(self.client) >= CLIENT_BOUND
    }

    fn describe(&self) -> Option<String> {
        if self.samples == 0 {
            return None;
        }
        let pct = |n| (100.0 * self.share(n)).round();
        let mut said = format!(
            "the server's sessions were working in {:.0}% of samples, waiting for inrush's rows in {:.0}%, on the WAL in {:.0}%, on other waits in {:.0}%",
            pct(self.working),
            pct(self.client),
            pct(self.wal),
            pct(self.other)
        );
        if self.checkpointing > 0 {
            said.push_str(&format!(
                "; a checkpoint was being written in {:.0}% of looks",
                100.0 * self.checkpointing as f64 / self.looks.max(1) as f64
            ));
        }
        Some(said)
    }
}

/// A change on trial: the count before it and the rows/s measured there.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Probe {
    from: usize,
    base: f64,
    /// A step up that gained in its first window, measured for a second: one window's gain
    /// over one window's base is within what windows on a shared machine differ by, and a
    /// stream kept on a lucky window costs the rest of the load (1.12x the best fixed count
    /// with the server on one core, where it settled on 3 streams against the best 1).
    seconded: bool,
}

impl Probe {
    /// A change from `from` streams, where `base` rows/s were measured.
    fn new(from: usize, base: f64) -> Probe {
        Probe {
            from,
            base,
            seconded: false,
        }
    }
}

/// The hill climb over the number of active streams.
#[derive(Debug)]
struct Climb {
    cap: usize,
    /// The count in effect (under trial when `probe` is set).
    current: usize,
    probe: Option<Probe>,
    /// Windows to wait before the next probe.
    hold: u32,
    /// The latest verdict of each comparison made, `(from, to, change in rows/s, kept)`.
    verdicts: Vec<(usize, usize, f64, bool)>,
    /// Every sample of the load.
    waits: Tally,
    /// The last window's sessions waited on the client's rows.
    client_bound: bool,
    /// `current` was reached by a kept step up: fewer is known to be slower.
    climbed: bool,
}

impl Climb {
    fn new(start: usize, cap: usize) -> Climb {
        Climb {
            cap,
            current: start,
            probe: None,
            hold: 0,
            verdicts: Vec::new(),
            waits: Tally::default(),
            client_bound: false,
            climbed: false,
        }
    }

    /// One window measured `rate` rows/s at `self.current` streams; the count for the next.
    fn step(&mut self, rate: f64, tally: &Tally) -> usize {
        self.client_bound = tally.client_bound();
        match self.probe.take() {
            Some(probe) => self.judge(probe, rate),
            None if self.hold > 0 => self.hold -= 1,
            None if self.cap == 1 => {}
            None => self.try_from(self.current, rate),
        }
        self.current
    }

    /// Steady at `at` streams with `rate`: try one more, unless the server waits on the client
    /// or the cap is reached; else one fewer.
    fn try_from(&mut self, at: usize, rate: f64) {
        self.climbed = false;
        let probe = Probe::new(at, rate);
        match (at < self.cap && !self.client_bound, at > 1) {
            (true, _) => self.current = at + 1,
            (false, true) => self.current = at - 1,
            (false, false) => {
                self.hold = HOLD;
                return;
            }
        }
        self.probe = Some(probe);
    }

    fn judge(&mut self, probe: Probe, rate: f64) {
        let Probe { from, base, .. } = probe;
        let to = self.current;
        let change = rate / base.max(1e-9) - 1.0;
        let kept = match to > from {
            true => change > GAIN,
            false => change >= -LOSS,
        };
        if kept && to > from && !probe.seconded {
            self.probe = Some(Probe {
                seconded: true,
                ..probe
            });
            return;
        }
        self.verdicts.retain(|v| (v.0, v.1) != (from, to));
        self.verdicts.push((from, to, change, kept));
        let climbed = std::mem::replace(&mut self.climbed, kept && to > from);
        match (kept, to > from) {
            // More helped: climb on while it does.
            (true, true) if to < self.cap && !self.client_bound => {
                self.probe = Some(Probe::new(to, rate));
                self.current = to + 1;
            }
            // Fewer cost nothing: go on down while it does.
            (true, false) if to > 1 => {
                self.probe = Some(Probe::new(to, rate));
                self.current = to - 1;
            }
            (true, _) => self.hold = HOLD,
            // More did not help: back, and see whether fewer would do as well (unless this
            // climb just came up from there).
            (false, true) if from > 1 && !climbed => {
                self.probe = Some(Probe::new(from, base));
                self.current = from - 1;
            }
            (false, _) => {
                self.current = from;
                self.hold = HOLD;
            }
        }
    }

    /// The count the climb stands on: a trial the load ended in is not a choice.
    fn settled(&self) -> usize {
        self.probe.map_or(self.current, |p| p.from)
    }

    fn reason(&self) -> String {
        let mut said = format!("{} of {} opened", self.settled(), self.cap);
        if self.probe.is_some() {
            said.push_str(&format!(" (trying {} when the rows ran out)", self.current));
        }
        let verdicts: Vec<String> = self
            .verdicts
            .iter()
            .rev()
            .take(3)
            .map(|&(from, to, change, kept)| {
                let (more, pct) = (change >= 0.0, (100.0 * change.abs()).round());
                let dir = if more { "more" } else { "fewer" };
                let verdict = match (to > from, kept) {
                    (true, true) => "kept".to_string(),
                    (true, false) => format!("under the {:.0}% a stream must add", 100.0 * GAIN),
                    (false, true) => "kept: fewer is cheaper".to_string(),
                    (false, false) => "put back".to_string(),
                };
                format!("{to} gave {pct:.0}% {dir} rows/s than {from} ({verdict})")
            })
            .collect();
        match (verdicts.is_empty(), self.cap) {
            (_, 1) => said.push_str(": the server takes no more connections"),
            (true, _) => said.push_str(": the load ended before streams could be compared (each comparison takes about a second)"),
            (false, _) => {
                said.push_str(": ");
                said.push_str(&verdicts.join("; "));
            }
        }
        if self.client_bound {
            said.push_str("; the server waited for inrush's rows, so more streams would not help");
        }
        if let Some(waits) = self.waits.describe() {
            said.push_str("; ");
            said.push_str(&waits);
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn working() -> Tally {
        Tally {
            samples: 10,
            working: 10,
            looks: 5,
            ..Tally::default()
        }
    }

    /// Feeds the climb the rates `rate_at(streams)` for `windows` windows; the counts it chose.
    fn run(climb: &mut Climb, windows: usize, rate_at: impl Fn(usize) -> f64) -> Vec<usize> {
        (0..windows)
            .map(|_| climb.step(rate_at(climb.current), &working()))
            .collect()
    }

    #[test]
    fn climbs_while_streams_help_and_stops_at_the_best() {
        let mut climb = Climb::new(2, 8);
        // Rows/s grow to 4 streams, then fall.
        let chosen = run(&mut climb, 10, |n| {
            [0.0, 100.0, 180.0, 250.0, 300.0, 290.0][n.min(5)]
        });
        assert_eq!(climb.current, 4, "{chosen:?}");
        assert!(climb
            .reason()
            .starts_with("4 of 8 opened: 5 gave 3% fewer rows/s than 4"));
    }

    #[test]
    fn one_lucky_window_does_not_keep_a_stream() {
        let mut climb = Climb::new(2, 4);
        // Flat at 100 rows/s whatever the count, but the first window at 3 ran 10% faster.
        let windows = [100.0, 110.0, 100.0, 100.0];
        let chosen: Vec<usize> = windows
            .iter()
            .map(|&rate| climb.step(rate, &working()))
            .collect();
        assert_eq!(chosen, [3, 3, 1, 1], "{}", climb.reason());
        assert_eq!(climb.settled(), 1);
        let reason = climb.reason();
        assert!(
            reason.contains("3 gave 0% more rows/s than 2 (under the 5%"),
            "{reason}"
        );
    }

    #[test]
    fn steps_down_when_more_streams_bring_nothing() {
        let mut climb = Climb::new(2, 4);
        let chosen = run(&mut climb, 6, |n| [0.0, 200.0, 200.0, 195.0, 190.0][n]);
        assert_eq!(climb.current, 1, "{chosen:?}");
        // Held there, not probing every window.
        assert_eq!(run(&mut climb, 3, |_| 200.0), [1, 1, 1]);
    }

    #[test]
    fn keeps_its_count_when_fewer_streams_cost_rows() {
        let mut climb = Climb::new(2, 4);
        run(&mut climb, 8, |n| [0.0, 100.0, 200.0, 204.0, 204.0][n]);
        assert_eq!(climb.current, 2);
        let reason = climb.reason();
        assert!(
            reason.contains("1 gave 50% fewer rows/s than 2 (put back)"),
            "{reason}"
        );
        assert!(
            reason.contains("3 gave 2% more rows/s than 2 (under the 5%"),
            "{reason}"
        );
    }

    #[test]
    fn adds_no_stream_while_the_server_waits_for_the_client() {
        let mut climb = Climb::new(2, 4);
        let waiting = Tally {
            samples: 10,
            client: 9,
            working: 1,
            ..Tally::default()
        };
        for _ in 0..4 {
            climb.step(100.0, &waiting);
            assert!(climb.current <= 2);
        }
        assert!(climb.reason().contains("waited for inrush's rows"));
    }

    #[test]
    fn a_cap_of_one_never_moves() {
        let mut climb = Climb::new(1, 1);
        assert_eq!(run(&mut climb, 5, |_| 100.0), [1; 5]);
        assert!(climb.reason().contains("takes no more connections"));
    }
}

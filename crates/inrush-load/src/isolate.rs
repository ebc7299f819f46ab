//! Finding the rows a server refuses in a batch it took, or refused, as one, so each refused
//! row costs only itself: the rule every engine follows when rejects are allowed
//! (`--max-errors`), written once as a pure controller. The engine sends what [`Isolation`]
//! says, under a savepoint of its own, and reports the answer; the controller never waits.
//!
//! An attempt goes in whole or not at all (the engine rolls a refused one back). When the
//! server names the refused rows (COPY's error context, MariaDB's warnings, ODBC's parameter
//! status array), they are rejected and the rest goes again; when it names none, the attempt
//! is halved until a refused row is alone.
//!
//! The rest goes in windows: a refused attempt halves the rows the next one sends, an accepted
//! attempt doubles them. Sending the whole rest after each refused row cost a run of bad rows
//! (an input loaded a second time: every key a duplicate) the square of its length in rows
//! sent and checked; windows bound the waste to about twice the batch.

use std::ops::Range;

/// The controller for one batch of `rows` rows.
#[derive(Debug)]
pub struct Isolation {
    rows: usize,
    window: usize,
    /// Ranges still to send, the next last, each with whether it goes whole: rows the server
    /// read without complaint before the one it named go in one attempt whatever the window.
    work: Vec<(Range<usize>, bool)>,
    /// The attempt sent and not yet answered.
    sent: Option<(Range<usize>, bool)>,
}

impl Isolation {
    pub fn new(rows: usize) -> Isolation {
        Isolation {
            rows,
            window: rows.max(1),
            work: vec![(0..rows, false)],
            sent: None,
        }
    }

    /// The rows of the batch to send next, or `None` once every row went in or was refused.
    pub fn next_attempt(&mut self) -> Option<Range<usize>> {
        debug_assert!(self.sent.is_none(), "an attempt was not answered");
        while let Some((range, whole)) = self.work.pop() {
            if range.is_empty() {
                continue;
            }
            let range = if whole || range.len() <= self.window {
                range
            } else {
                let cut = range.start + self.window;
                self.work.push((cut..range.end, false));
                range.start..cut
            };
            self.sent = Some((range.clone(), whole));
            return Some(range);
        }
        None
    }

    /// The attempt went in.
    pub fn accepted(&mut self) {
        if let Some((_, whole)) = self.sent.take() {
            if !whole {
                self.window = self.window.saturating_mul(2).min(self.rows.max(1));
            }
        }
    }

    /// The attempt was refused, and the engine rolled it back. `named`: the rows the server
    /// said it refused, counted from 0 within the attempt, in any order (the engine's reading
    /// of its error; empty when it names none, and names out of the attempt are ignored).
    /// `read_before`: the server read the attempt's rows before the first named one without
    /// complaint (a statement that stops at its first bad row), so they go again whole.
    /// Returns the rows of the batch to reject, in order.
    pub fn refused(&mut self, named: &[usize], read_before: bool) -> Vec<usize> {
        self.split(named, read_before, false)
    }

    /// The attempt was refused, and the engine rolled it back; the server's words name the
    /// rows `named` (as for [`Isolation::refused`]) but are not the last word on them (MariaDB's
    /// LOAD DATA warns where a strict INSERT of the row says what is wrong): each goes again
    /// alone, and the rest around them. Returns the rows to reject: the attempt's one row
    /// when it was alone.
    pub fn suspected(&mut self, named: &[usize]) -> Vec<usize> {
        self.split(named, false, true)
    }

    fn split(&mut self, named: &[usize], read_before: bool, alone: bool) -> Vec<usize> {
        let Some((range, _)) = self.sent.take() else {
            return Vec::new();
        };
        if range.len() == 1 {
            self.window = (self.window / 2).max(1);
            return vec![range.start];
        }
        let mut named: Vec<usize> = named
            .iter()
            .filter(|&&k| k < range.len())
            .map(|&k| range.start + k)
            .collect();
        named.sort_unstable();
        named.dedup();
        let Some(&first) = named.first() else {
            // Nothing named: halve, and look in each half.
            let mid = range.start + range.len() / 2;
            self.work.push((mid..range.end, false));
            self.work.push((range.start..mid, false));
            return named;
        };
        self.window = (self.window / 2).max(1);
        // Pushed last to first, so the rows go in their order.
        let mut end = range.end;
        for &row in named.iter().rev() {
            self.work.push((row + 1..end, false));
            if alone {
                self.work.push((row..row + 1, true));
            }
            end = row;
        }
        self.work.push((range.start..first, read_before));
        match alone {
            true => Vec::new(),
            false => named,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Runs a batch against a server that refuses every attempt holding a bad row, naming the
    /// first bad row when `names`; returns (rows in, rows rejected, attempts).
    fn run(bad: &[bool], names: bool) -> (Vec<usize>, Vec<usize>, usize) {
        let mut isolation = Isolation::new(bad.len());
        let (mut loaded, mut rejected, mut attempts) = (Vec::new(), Vec::new(), 0);
        while let Some(range) = isolation.next_attempt() {
            attempts += 1;
            match range.clone().find(|&r| bad[r]) {
                None => {
                    loaded.extend(range);
                    isolation.accepted();
                }
                Some(row) => {
                    let named = if names {
                        vec![row - range.start]
                    } else {
                        vec![]
                    };
                    rejected.extend(isolation.refused(&named, names));
                }
            }
        }
        (loaded, rejected, attempts)
    }

    proptest! {
        #[test]
        fn every_row_goes_in_or_is_rejected_once_in_order(
            bad in proptest::collection::vec(proptest::bool::weighted(0.2), 0..200),
            names: bool,
        ) {
            let (loaded, rejected, _) = run(&bad, names);
            let good: Vec<usize> = (0..bad.len()).filter(|&r| !bad[r]).collect();
            let refused: Vec<usize> = (0..bad.len()).filter(|&r| bad[r]).collect();
            prop_assert_eq!(loaded, good);
            prop_assert_eq!(rejected, refused);
        }

        #[test]
        fn rows_named_at_once_are_all_rejected_and_the_rest_goes_in(
            bad in proptest::collection::vec(proptest::bool::weighted(0.3), 1..100),
        ) {
            // A server that reads every row and names each bad one (MariaDB's warnings).
            let mut isolation = Isolation::new(bad.len());
            let (mut loaded, mut rejected) = (Vec::new(), Vec::new());
            while let Some(range) = isolation.next_attempt() {
                let named: Vec<usize> =
                    range.clone().filter(|&r| bad[r]).map(|r| r - range.start).collect();
                if named.is_empty() {
                    loaded.extend(range);
                    isolation.accepted();
                } else {
                    rejected.extend(isolation.refused(&named, false));
                }
            }
            prop_assert_eq!(loaded, (0..bad.len()).filter(|&r| !bad[r]).collect::<Vec<_>>());
            prop_assert_eq!(rejected, (0..bad.len()).filter(|&r| bad[r]).collect::<Vec<_>>());
        }
    }

    #[test]
    fn suspected_rows_go_again_alone_and_only_those_refused_alone_are_rejected() {
        // The server warns about rows 2 and 5 of 8, but row 5 goes in when alone.
        let mut isolation = Isolation::new(8);
        assert_eq!(isolation.next_attempt(), Some(0..8));
        assert!(isolation.suspected(&[5, 2]).is_empty());
        let mut sent = Vec::new();
        let mut rejected = Vec::new();
        while let Some(range) = isolation.next_attempt() {
            sent.push(range.clone());
            if range == (2..3) {
                rejected.extend(isolation.suspected(&[0]));
            } else {
                isolation.accepted();
            }
        }
        assert_eq!(sent, [0..2, 2..3, 3..5, 5..6, 6..8]);
        assert_eq!(rejected, [2]);
    }

    #[test]
    fn a_clean_batch_goes_in_one_attempt() {
        assert_eq!(run(&[false; 1000], true).2, 1);
        assert_eq!(run(&[false; 1000], false).2, 1);
    }

    #[test]
    fn a_run_of_named_bad_rows_costs_a_bounded_number_of_attempts() {
        // Every row a duplicate: one attempt per row, never the rest again each time.
        let (_, rejected, attempts) = run(&[true; 1000], true);
        assert_eq!(rejected.len(), 1000);
        assert_eq!(attempts, 1000);
    }

    #[test]
    fn one_unnamed_bad_row_is_found_by_halving() {
        let mut bad = vec![false; 1024];
        bad[700] = true;
        let (loaded, rejected, attempts) = run(&bad, false);
        assert_eq!((loaded.len(), rejected), (1023, vec![700]));
        assert!(attempts <= 2 * 11 + 1, "{attempts} attempts");
    }

    #[test]
    fn names_out_of_the_attempt_are_ignored() {
        let mut isolation = Isolation::new(4);
        assert_eq!(isolation.next_attempt(), Some(0..4));
        assert_eq!(isolation.refused(&[9], true), Vec::<usize>::new());
        assert_eq!(isolation.next_attempt(), Some(0..2));
    }

    #[test]
    fn an_empty_batch_sends_nothing() {
        assert_eq!(Isolation::new(0).next_attempt(), None);
    }
}

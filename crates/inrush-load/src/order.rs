//! Putting the workers' chunks back in the input's order before one sink takes them.
//!
//! Workers finish units out of order. That is harmless while the server refuses nothing or the
//! whole load fails on the first refusal, but with `--max-errors` and a unique key the row the
//! server refuses is whichever occurrence of a key arrives second: the input's order makes it
//! every occurrence after the first, as COPY of the file would have it. One reader thread
//! numbers the units in input order ([`crate::worker::Order`]); this stage holds the chunks that
//! come early until the ones before them arrive.
//!
//! Memory stays bounded: the one reader is at most the work queue's depth plus one unit per
//! worker ahead of the sink, so at most that many units wait here.

use crate::shared::{Shared, CANCEL_POLL};
use crate::worker::Chunk;
use std::collections::BTreeMap;

/// Sends `input`'s chunks to `output` in `(unit, piece)` order until `input` closes; stops early
/// when the load is cancelled or the sink went away.
pub fn run(input: flume::Receiver<Chunk>, output: flume::Sender<Chunk>, shared: &Shared) {
    let mut early: BTreeMap<(u64, u32), Chunk> = BTreeMap::new();
    let mut next = (0u64, 0u32);
    loop {
        let chunk = match input.recv_timeout(CANCEL_POLL) {
            Ok(chunk) => chunk,
            Err(flume::RecvTimeoutError::Timeout) if !shared.is_cancelled() => continue,
            Err(_) => return,
        };
        early.insert((chunk.order.unit, chunk.order.piece), chunk);
        while let Some(chunk) = early.remove(&next) {
            next = match chunk.order.last {
                true => (next.0 + 1, 0),
                false => (next.0, next.1 + 1),
            };
            if output.send(chunk).is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::Order;

    fn chunk(unit: u64, piece: u32, last: bool) -> Chunk {
        Chunk {
            located: true,
            first_line: unit,
            order: Order { unit, piece, last },
            ..Chunk::empty()
        }
    }

    #[test]
    fn restores_unit_and_piece_order() {
        let shared = Shared::new(Default::default(), None);
        let (tx, rx) = flume::unbounded();
        let (out_tx, out_rx) = flume::unbounded();
        // Unit 1 has three pieces; unit 2 comes before all of them, unit 0 last.
        for c in [
            chunk(2, 0, true),
            chunk(1, 1, false),
            chunk(1, 0, false),
            chunk(3, 0, true),
            chunk(1, 2, true),
            chunk(0, 0, true),
        ] {
            tx.send(c).unwrap();
        }
        drop(tx);
        run(rx, out_tx, &shared);
        let got: Vec<(u64, u32)> = out_rx
            .iter()
            .map(|c| (c.order.unit, c.order.piece))
            .collect();
        assert_eq!(got, [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0), (3, 0)]);
    }
}

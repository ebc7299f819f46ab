//! Which piece of a copy may run next: a pure state machine, apart from the threads and the
//! databases that do the work (`run.rs`), so its order is tested without a server.
//!
//! A table's work is its load, then its builds (keys and indexes, [`Design::after_rows`]),
//! which do not wait for each other, then its report (`--verify` reads both sides). Its
//! keys steps ([`Design::after_keys`]: foreign keys, numbering) wait for its own builds and
//! for those of every table the step needs (a foreign key's parent): pgcopydb's order, where a
//! key is validated as soon as both its tables are in rather than after the last table.
//!
//! Two keys steps sharing a table never run at once: each locks every table it names (on
//! PostgreSQL, `ADD FOREIGN KEY` takes SHARE ROW EXCLUSIVE on both the child and the parent,
//! which conflicts with itself), so running them together would only park a worker on the
//! lock, and two keys between the same tables in opposite directions could deadlock.
//!
//! Nothing waits forever: every table a step needs is on the board, and becomes built once its
//! load and builds are done; a keys step runs once its tables are built and no running step
//! holds them, and a step's end lets its tables go. Only a failed task stops that, and a failure
//! ends the copy (`run.rs`).
//!
//! [`Design::after_rows`]: inrush_core::database::Design::after_rows
//! [`Design::after_keys`]: inrush_core::database::Design::after_keys

use std::collections::HashSet;

/// One table's work, as the board sees it (indices into its design's lists).
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// Its rows are still to be loaded.
    pub load: bool,
    /// Its builds not done yet.
    pub builds: Vec<usize>,
    /// Its keys steps not done yet, with the other tables (indices) each needs built first.
    pub keys: Vec<(usize, Vec<usize>)>,
    /// Other tables whose rows must be in before its load: under `--data-only`, the parents
    /// of the foreign keys the target checks its rows against (a check run beside a parent's
    /// load, not yet committed, would find the parent's rows missing).
    pub after: Vec<usize>,
}

/// A piece of work: a table's index, and a step's index in its design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Task {
    Load(usize),
    Build(usize, usize),
    /// The table's rows and builds are in: verify (with `--verify`) and report it.
    Finish(usize),
    Keys(usize, usize),
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Run(Task),
    /// Nothing may run now; what waits comes of what is running.
    Wait,
    /// Nothing left.
    Done,
}

#[derive(Debug)]
struct Table {
    /// Its rows are in (or were not to be loaded).
    loaded: bool,
    /// Tables whose rows its load waits for.
    after: Vec<usize>,
    builds_left: usize,
    /// Rows loaded and every build done.
    built: bool,
}

#[derive(Debug)]
pub(crate) struct Board {
    tables: Vec<Table>,
    /// In the plan's order (largest first): the order they are taken in.
    loads: Vec<usize>,
    builds: Vec<(usize, usize)>,
    finishes: Vec<usize>,
    /// Keys steps, ready or not, with every table each locks (its own first).
    keys: Vec<(usize, usize, Vec<usize>)>,
    /// Builds not ready yet: their table's rows are still loading.
    unloaded: Vec<Vec<usize>>,
    /// Tables a running keys step holds.
    held: HashSet<usize>,
    running: Vec<Task>,
}

impl Board {
    pub fn new(shapes: Vec<Shape>) -> Board {
        let mut board = Board {
            tables: Vec::with_capacity(shapes.len()),
            loads: Vec::new(),
            builds: Vec::new(),
            finishes: Vec::new(),
            keys: Vec::new(),
            unloaded: Vec::new(),
            held: HashSet::new(),
            running: Vec::new(),
        };
        for (t, shape) in shapes.into_iter().enumerate() {
            for (step, needs) in shape.keys {
                let mut locks = vec![t];
                locks.extend(needs.into_iter().filter(|&n| n != t));
                board.keys.push((t, step, locks));
            }
            board.tables.push(Table {
                loaded: !shape.load,
                after: shape.after.into_iter().filter(|&a| a != t).collect(),
                builds_left: shape.builds.len(),
                built: false,
            });
            match shape.load {
                true => {
                    board.loads.push(t);
                    board.unloaded.push(shape.builds);
                }
                false => {
                    board.unloaded.push(Vec::new());
                    board.loaded(t, shape.builds);
                }
            }
        }
        board
    }

    /// The next task, marked running.
    pub fn take(&mut self) -> Next {
        let task = self.ready();
        match task {
            Some(task) => {
                self.running.push(task);
                Next::Run(task)
            }
            // What waits comes of what is running.
            None if !self.running.is_empty() => Next::Wait,
            None => Next::Done,
        }
    }

    /// `task` ended well: what waited on it may run.
    pub fn done(&mut self, task: Task) {
        self.running.retain(|r| *r != task);
        match task {
            Task::Load(t) => {
                self.tables[t].loaded = true;
                let builds = std::mem::take(&mut self.unloaded[t]);
                self.loaded(t, builds);
            }
            Task::Build(t, _) => {
                self.tables[t].builds_left -= 1;
                if self.tables[t].builds_left == 0 {
                    self.built(t);
                }
            }
            Task::Finish(_) => {}
            Task::Keys(t, step) => {
                let at = self.keys.iter().position(|(k, s, _)| (*k, *s) == (t, step));
                if let Some(at) = at {
                    let (.., locks) = self.keys.remove(at);
                    for table in locks {
                        self.held.remove(&table);
                    }
                }
            }
        }
    }

    fn loaded(&mut self, t: usize, builds: Vec<usize>) {
        match builds.is_empty() {
            true => self.built(t),
            false => self.builds.extend(builds.into_iter().map(|b| (t, b))),
        }
    }

    fn built(&mut self, t: usize) {
        self.tables[t].built = true;
        self.finishes.push(t);
    }

    /// Loads first, to be done with the source's image; then builds, the largest table's first
    /// (they end the copy); then keys; then reports.
    fn ready(&mut self) -> Option<Task> {
        let waits = |t: usize| self.tables[t].after.iter().any(|&a| !self.tables[a].loaded);
        let loading = self.running.iter().any(|r| matches!(r, Task::Load(_)));
        // Parents' rows first; a cycle of parents (nothing loading, every load waiting) goes
        // in the plan's order, so that nothing waits forever.
        let next = match self.loads.iter().position(|&t| !waits(t)) {
            None if !loading && !self.loads.is_empty() => Some(0),
            at => at,
        };
        if let Some(at) = next {
            return Some(Task::Load(self.loads.remove(at)));
        }
        if let Some(at) = (0..self.builds.len()).min_by_key(|&i| self.builds[i]) {
            let (t, b) = self.builds.remove(at);
            return Some(Task::Build(t, b));
        }
        // A running step holds its own table, so it is never found again here.
        let ready = self.keys.iter().find(|(_, _, locks)| {
            locks.iter().all(|&l| self.tables[l].built)
                && !locks.iter().any(|l| self.held.contains(l))
        });
        if let Some((t, step, locks)) = ready {
            self.held.extend(locks.iter().copied());
            return Some(Task::Keys(*t, *step));
        }
        self.finishes.pop().map(Task::Finish)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(load: bool, builds: usize, keys: Vec<Vec<usize>>) -> Shape {
        Shape {
            load,
            builds: (0..builds).collect(),
            keys: keys.into_iter().enumerate().collect(),
            after: Vec::new(),
        }
    }

    fn run(board: &mut Board) -> Task {
        match board.take() {
            Next::Run(task) => task,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    #[test]
    fn a_tables_builds_wait_for_its_rows_and_not_for_each_other() {
        let mut board = Board::new(vec![shape(true, 2, vec![])]);
        assert_eq!(run(&mut board), Task::Load(0));
        assert_eq!(board.take(), Next::Wait);
        board.done(Task::Load(0));
        assert_eq!(run(&mut board), Task::Build(0, 0));
        assert_eq!(run(&mut board), Task::Build(0, 1));
        board.done(Task::Build(0, 0));
        assert_eq!(board.take(), Next::Wait);
        board.done(Task::Build(0, 1));
        assert_eq!(run(&mut board), Task::Finish(0));
        board.done(Task::Finish(0));
        assert_eq!(board.take(), Next::Done);
    }

    #[test]
    fn a_load_waits_for_the_rows_of_the_tables_it_comes_after_unless_they_wait_on_it() {
        let after = |load, after: Vec<usize>| Shape {
            after,
            ..shape(load, 0, vec![])
        };
        // 0 after 1; 2 and 3 after each other.
        let mut board = Board::new(vec![
            after(true, vec![1]),
            after(true, vec![]),
            after(true, vec![3]),
            after(true, vec![2]),
        ]);
        assert_eq!(run(&mut board), Task::Load(1));
        assert_eq!(board.take(), Next::Wait);
        board.done(Task::Load(1));
        assert_eq!(run(&mut board), Task::Load(0));
        board.done(Task::Load(0));
        assert_eq!(run(&mut board), Task::Load(2));
        assert_eq!(board.take(), Next::Run(Task::Finish(0)));
        board.done(Task::Load(2));
        assert_eq!(run(&mut board), Task::Load(3));
        // A parent already there, or not loaded by this copy, is not waited for.
        let mut board = Board::new(vec![after(true, vec![1]), after(false, vec![])]);
        assert_eq!(run(&mut board), Task::Load(0));
    }

    #[test]
    fn loads_come_first_then_the_largest_tables_builds() {
        let mut board = Board::new(vec![
            shape(true, 1, vec![]),
            shape(true, 1, vec![]),
            shape(true, 1, vec![]),
        ]);
        assert_eq!(run(&mut board), Task::Load(0));
        assert_eq!(run(&mut board), Task::Load(1));
        board.done(Task::Load(1));
        assert_eq!(run(&mut board), Task::Load(2));
        board.done(Task::Load(2));
        board.done(Task::Load(0));
        assert_eq!(run(&mut board), Task::Build(0, 0));
        assert_eq!(run(&mut board), Task::Build(1, 0));
    }

    #[test]
    fn a_foreign_key_waits_for_both_tables_built_and_no_longer() {
        // Table 0 (the child, largest) needs table 1; table 2 is unrelated and still loading.
        let mut board = Board::new(vec![
            shape(true, 1, vec![vec![1]]),
            shape(true, 1, vec![]),
            shape(true, 0, vec![]),
        ]);
        for t in 0..3 {
            assert_eq!(run(&mut board), Task::Load(t));
        }
        for t in 0..2 {
            board.done(Task::Load(t));
            assert_eq!(run(&mut board), Task::Build(t, 0));
        }
        board.done(Task::Build(0, 0));
        assert_eq!(run(&mut board), Task::Finish(0));
        assert_eq!(board.take(), Next::Wait);
        board.done(Task::Build(1, 0));
        assert_eq!(run(&mut board), Task::Keys(0, 0));
    }

    #[test]
    fn keys_steps_sharing_a_table_never_run_at_once() {
        // 0 -> 1 and 1 -> 0 (a cycle of foreign keys), and 2 -> 1.
        let mut board = Board::new(vec![
            shape(false, 0, vec![vec![1]]),
            shape(false, 0, vec![vec![0]]),
            shape(false, 0, vec![vec![1]]),
        ]);
        let first = run(&mut board);
        assert_eq!(first, Task::Keys(0, 0));
        // Every other step touches table 0 or 1: the reports come instead.
        let mut others = Vec::new();
        while let Next::Run(task) = board.take() {
            others.push(task);
        }
        assert!(
            others.iter().all(|t| matches!(t, Task::Finish(_))),
            "{others:?}"
        );
        board.done(first);
        assert!(matches!(run(&mut board), Task::Keys(_, 0)));
    }

    #[test]
    fn tables_loaded_before_count_as_loaded_at_once() {
        let mut board = Board::new(vec![
            shape(false, 0, vec![vec![1]]),
            shape(false, 1, vec![]),
        ]);
        assert_eq!(run(&mut board), Task::Build(1, 0));
        assert_eq!(run(&mut board), Task::Finish(0));
        assert_eq!(board.take(), Next::Wait);
        board.done(Task::Build(1, 0));
        assert_eq!(run(&mut board), Task::Keys(0, 0));
    }
}

//! `--resume` on the pipeline's side, whatever the target: which input file a ledger names,
//! and where a rerun reads on from given the blocks the target's ledger says are committed.

use crate::sources::{Opened, Origin, Sources};
use crate::{Error, Result};
use inrush_core::ledger::{resume_point, Committed, InputFile};
use inrush_core::Progress;
use std::collections::HashSet;

/// Several processes loading one input together (`--resume` on several hosts): a reader takes
/// each block from the target before it reads it, so no two processes parse, encode and load
/// the same block, and a block's rejects are written once. The target keeps the claims (a
/// PostgreSQL session lock per block), so a claim ends with the process that held it.
pub trait Claims: Send + Sync {
    /// Takes the block at `offset` (its first record on `line`) for this process; false when
    /// it is committed already or another process holds it.
    fn take(&self, offset: u64, line: u64) -> Result<bool>;
    /// Once the input is read to its end: waits for the blocks other processes held when this
    /// one came to them, and returns those their holders let go uncommitted (they stopped),
    /// taken by this process now, as (offset, line), for it to load.
    fn left_over(&self) -> Result<Vec<(u64, u64)>>;
}

/// A target's ledger of the blocks committed into one table (see `inrush_postgres::ledger` for
/// the design), kept in tables of the engine's own: the engine stores and reads rows, the rule
/// of [`open`] is written here once. Recording a block belongs to the engine's commit, in the
/// transaction that holds the block's rows.
#[allow(async_fn_in_trait)]
pub trait Ledger {
    /// Makes the ledger's tables when missing (and, in a ledger made before inrush recorded
    /// where an input's data starts, that column), safe beside another process doing the same.
    async fn create(&mut self) -> Result<()>;
    /// Registers the input unless it is registered already, by an earlier run or by another
    /// process at the same moment; a registration older than `data_start` learns it.
    async fn register(&mut self, id: &InputFile) -> Result<()>;
    /// The registration's size, modification time and fingerprint.
    async fn registered(&mut self, id: &InputFile) -> Result<Option<(i64, String, String)>>;
    /// The input's committed blocks, by offset.
    async fn blocks(&mut self, id: &InputFile) -> Result<Vec<Committed>>;
}

/// Registers the input in `ledger`, or checks it is the one registered, and returns its
/// committed blocks by offset. Registering before reading the registration is what lets two
/// processes start the same load together: whichever comes first registers, and both compare
/// with that.
pub async fn open(ledger: &mut impl Ledger, id: &InputFile) -> Result<Vec<Committed>> {
    ledger.create().await?;
    ledger.register(id).await?;
    if let Some((size, mtime, fingerprint)) = ledger.registered(id).await? {
        unchanged(id, (size, &mtime, &fingerprint))?;
    }
    ledger.blocks(id).await
}

/// A rerun's starting point.
pub struct Resume {
    /// Offsets of blocks committed past a gap, skipped as they come.
    pub skip: HashSet<u64>,
    /// Rows earlier runs committed.
    pub rows_before: u64,
}

/// Why a Parquet or Arrow file cannot be resumed.
const COLUMNAR: &str = "--resume works on CSV and JSON lines, not columnar files";

impl Resume {
    /// Moves the first input on past the committed blocks that follow each other from its
    /// start.
    pub fn start(
        committed: &[Committed],
        sources: &Sources,
        first: Option<&mut Opened>,
        progress: &Progress,
    ) -> Result<Resume> {
        let first = first.ok_or_else(|| Error::Usage(COLUMNAR.into()))?;
        let position = first.splitter.position();
        let (offset, line) = resume_point(committed, position);
        if offset > position.0 {
            first.splitter = sources.reopen_at(0, offset, line, progress.bytes_read.clone())?;
            // The first JSON line is committed too: it lies before the resume point.
            first.pending.clear();
        }
        Ok(Resume {
            skip: committed.iter().map(|c| c.offset as u64).collect(),
            rows_before: committed.iter().map(|c| c.rows as u64).sum(),
        })
    }
}

/// What identifies an input for --resume: its canonical path, the block size, and its size,
/// modification time and fingerprint; and where its data starts, the position of `first`'s
/// splitter (past a header) before it has cut a block. Standard input cannot be resumed.
/// `--resume`: refuses the input when the ledger describes it otherwise (`then`: its size,
/// modification time and fingerprint when the load began): two versions of one input must not
/// be mixed in one table.
pub fn unchanged(now: &InputFile, then: (i64, &str, &str)) -> Result<()> {
    let (size, mtime, fingerprint) = then;
    if (size, mtime, fingerprint) == (now.size, now.mtime.as_str(), now.fingerprint.as_str()) {
        return Ok(());
    }
    Err(Error::InputChanged {
        input: now.input.clone(),
        then: format!("{size} bytes, modified {mtime}, fingerprint {fingerprint}"),
        now: now.describe(),
    })
}

pub fn input_file(
    sources: &Sources,
    first: Option<&Opened>,
    block_size: usize,
) -> Result<InputFile> {
    // Refused here, before a ledger is read or made: its blocks are byte ranges of text.
    if sources.columnar() {
        return Err(Error::Usage(COLUMNAR.into()));
    }
    let input = match &sources.list[..] {
        [one] if one.name != "-" && matches!(one.origin, Origin::Path(_)) => one.name.as_str(),
        [one] if one.name == "-" => {
            return Err(Error::Usage(
                "--resume needs a file: standard input cannot be read again".into(),
            ))
        }
        _ => {
            return Err(Error::Usage(
                "--resume works on one input file at a time (standard input and queries cannot be read again)".into(),
            ))
        }
    };
    let open_error = |cause| inrush_read::Error::Open {
        path: input.into(),
        cause,
    };
    let path = std::fs::canonicalize(input).map_err(open_error)?;
    let meta = std::fs::metadata(&path).map_err(open_error)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok(InputFile {
        input: path.display().to_string(),
        block_size: block_size as i64,
        size: meta.len() as i64,
        mtime: mtime.to_string(),
        fingerprint: inrush_read::source::fingerprint(&path).map_err(open_error)?,
        data_start: first.map_or(0, |f| f.splitter.position().0 as i64),
    })
}

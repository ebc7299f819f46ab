//! Where refused rows go when the user allows some (`--max-errors N`): the reject file holds
//! each refused record as its original bytes (after the header, if the input had one), so it can
//! be fixed and loaded again; the log beside it (`<rejects>.log`, JSON lines) says where each
//! came from and why. Past the limit the load stops and nothing is committed.
//!
//! Records are written in the order workers refuse them, which with several workers is not
//! always input order: the log's line numbers give the input order.

use crate::{Error, Result};
use inrush_core::Location;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub struct Rejects {
    writers: Mutex<Writers>,
    count: AtomicU64,
    limit: u64,
    pub path: PathBuf,
    pub log_path: PathBuf,
}

struct Writers {
    records: BufWriter<std::fs::File>,
    log: BufWriter<std::fs::File>,
    /// A record with an unterminated quote: written last, or its open quote would swallow every
    /// record after it when the reject file is read again.
    open_quote: Option<Vec<u8>>,
}

impl Rejects {
    /// Creates (truncates) the reject file and its log; `header` is copied first when given.
    /// With `append` (a resumed load) both grow instead: the rows earlier runs refused stay.
    pub fn create(path: &Path, limit: u64, header: Option<&[u8]>, append: bool) -> Result<Rejects> {
        let log_path = PathBuf::from(format!("{}.log", path.display()));
        let fresh = !append || std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        // Locked while this load writes it (the lock ends with the process): two processes
        // loading one input on one host (`--resume`) would interleave their records. The lock
        // comes before the file is emptied, so a refused load empties nothing.
        let create = |p: &Path| {
            let mut options = std::fs::OpenOptions::new();
            options.create(true).write(true).append(append);
            // The rows refused are the input's data: the owner's alone, as the input may not be.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let file = options
                .open(p)
                .map_err(|e| Error::Rejects(format!("cannot create {}: {e}", p.display())))?;
            owner_only(&file, p)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(Error::Usage(format!(
                        "{} is being written by another inrush process: give each load its own --rejects file",
                        p.display()
                    )))
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::Rejects(format!("cannot lock {}: {e}", p.display())))
                }
            }
            if !append {
                file.set_len(0)
                    .map_err(|e| Error::Rejects(format!("cannot empty {}: {e}", p.display())))?;
            }
            Ok(BufWriter::with_capacity(64 * 1024, file))
        };
        let mut records = create(path)?;
        if let Some(header) = header.filter(|_| fresh) {
            records
                .write_all(header)
                .map_err(|e| write_error(path, e))?;
        }
        let log = create(&log_path)?;
        Ok(Rejects {
            writers: Mutex::new(Writers {
                records,
                log,
                open_quote: None,
            }),
            count: AtomicU64::new(0),
            limit,
            path: path.to_path_buf(),
            log_path,
        })
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed).min(self.limit)
    }

    /// Records one refused row; fails once more than `limit` rows were refused. `open_quote`:
    /// the record has an unterminated quote (and so runs to the end of the input).
    pub fn reject(
        &self,
        raw: &[u8],
        open_quote: bool,
        location: &Location,
        reason: &str,
        sqlstate: Option<&str>,
    ) -> Result<()> {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.limit {
            return Err(Error::TooManyRejects {
                limit: self.limit,
                last: format!("{location}: {reason}"),
            });
        }
        let position = if location.row { "row" } else { "line" };
        let entry = serde_json::json!({
            "file": location.file,
            position: location.line,
            "column": location.column,
            "value": location.value,
            "reason": reason,
            "sqlstate": sqlstate,
        });
        let mut w = self
            .writers
            .lock()
            .map_err(|_| Error::Rejects("reject writer poisoned".into()))?;
        if open_quote {
            w.open_quote = Some(raw.to_vec());
        } else {
            w.records
                .write_all(raw)
                .map_err(|e| write_error(&self.path, e))?;
            if !raw.ends_with(b"\n") && !raw.ends_with(b"\r") {
                w.records
                    .write_all(b"\n")
                    .map_err(|e| write_error(&self.path, e))?;
            }
        }
        writeln!(w.log, "{entry}").map_err(|e| write_error(&self.log_path, e))?;
        Ok(())
    }

    /// Writes out what is buffered, the open-quote record last.
    pub fn flush(&self) -> Result<()> {
        let mut w = self
            .writers
            .lock()
            .map_err(|_| Error::Rejects("reject writer poisoned".into()))?;
        if let Some(raw) = w.open_quote.take() {
            w.records
                .write_all(&raw)
                .map_err(|e| write_error(&self.path, e))?;
        }
        w.records.flush().map_err(|e| write_error(&self.path, e))?;
        w.log.flush().map_err(|e| write_error(&self.log_path, e))
    }
}

/// Tightens a reject file an earlier load made to its owner's reading and writing alone.
fn owner_only(file: &std::fs::File, path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let owner = std::fs::Permissions::from_mode(0o600);
        file.set_permissions(owner).map_err(|e| {
            Error::Rejects(format!(
                "cannot make {} its owner's alone: {e}",
                path.display()
            ))
        })?;
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::Rejects(format!("cannot write {}: {e}", path.display()))
}

//! `inrush._inrush`: what the Python package (`python/inrush`) calls. It runs the command line's
//! own code: a load's keyword arguments arrive as the `inrush load` arguments they stand for,
//! parsed and checked by the same code as the command's, so both refuse and do the same things.
//! Arrow data crosses through the Arrow C stream interface (`__arrow_c_stream__`): no copy, no
//! Python per row.
//!
//! Owns: releasing the GIL for the whole load, turning Ctrl-C into the load's own interrupt
//! (roll back, then `KeyboardInterrupt`), progress callbacks, and mapping each failure to the
//! exception class of `inrush.errors` its exit code stands for.

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::FromPyArrow;
use inrush_arrow::BatchStream;
use inrush_core::progress::{Phase, ProgressSnapshot, Reporter};
use inrush_load::job::{Batch, JobStep, Parts};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;

/// How often the waiting thread looks for Ctrl-C: Python runs signal handlers only on its main
/// thread, between bytecodes, so a thread in Rust must ask.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs the `inrush` command line in this process (the package's `inrush` script) and returns
/// its exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| inrush::main(argv.into_iter().map(Into::into)))
}

/// Has inrush's messages spell the command as `spelling`: the process is Python's, so its own
/// path would not run inrush.
#[pyfunction]
fn spell_command_as(spelling: String) {
    inrush::spell_command_as(spelling)
}

/// Loads as `inrush load <argv>` would; `stream` (any object with `__arrow_c_stream__`, or a
/// pyarrow RecordBatchReader) replaces the inputs. Returns the summary as JSON (what
/// `--json` prints).
#[pyfunction]
#[pyo3(signature = (argv, stream=None, name="DataFrame".to_string(), progress=None))]
fn load(
    py: Python<'_>,
    argv: Vec<String>,
    stream: Option<Bound<'_, PyAny>>,
    name: String,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let args = match parse(py, "load", argv)? {
        inrush::cli::Command::Load(args) => args,
        _ => return Err(PyRuntimeError::new_err("not a load")),
    };
    let stream = match stream {
        Some(stream) => {
            let reader = RecordBatchStreamReader::from_pyarrow_bound(&stream)?;
            Some(BatchStream::new(name, Box::new(reader)))
        }
        None => None,
    };
    let load = args.prepare(stream).map_err(|e| failure(py, &e))?;
    let reporter = Callback(progress);
    let interrupt = load.opts.interrupt.clone();
    let (outcome, keyboard) = py.detach(|| {
        std::thread::scope(|scope| {
            let (done, finished) = std::sync::mpsc::channel();
            let load = &load;
            let reporter = &reporter;
            // The load runs beside this thread, which stays free to see Ctrl-C.
            scope.spawn(move || {
                let _ = done.send(load.run(reporter));
            });
            let mut keyboard = None;
            loop {
                match finished.recv_timeout(SIGNAL_POLL) {
                    Ok(outcome) => return (outcome, keyboard),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            // Stops the load the way the command's Ctrl-C does: rolled back
                            // before the commit, finished (rebuilt) after it.
                            interrupt.signal();
                            keyboard.get_or_insert(e);
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        let lost = anyhow::anyhow!("the load's thread ended without a result");
                        return (Err(lost), keyboard);
                    }
                }
            }
        })
    });
    match (outcome, keyboard) {
        (Ok(summary), None) => Ok(serde_json::to_string(&summary).map_err(to_runtime)?),
        // Ctrl-C after the commit: the rows stay (as for the command), and the exception
        // must not let anyone think otherwise.
        (Ok(summary), Some(_)) => Err(PyKeyboardInterrupt::new_err(format!(
            "interrupted after the commit: the {} rows are in {}; what was left after the load (ANALYZE) was skipped",
            summary.rows, summary.table
        ))),
        (Err(_), Some(keyboard)) => Err(keyboard),
        (Err(e), None) => Err(failure(py, &e)),
    }
}

/// One step of a distributed write's coordinator (`inrush.spark`) on `to`: `begin` logs job
/// `job` into `table` (emptied by the decision when `overwrite`; its indexes planned as a load
/// of unknown size would, unless `keep_indexes`) before its tasks load with
/// `--prepare` or `--stage`, as the returned `parts` says (`parts`: "auto", "prepared" or
/// "staged"); `commit` lands `winners` (the parts of the attempts kept) and takes back the
/// job's others; `abort` takes back all. A streaming micro-batch gives its `query` and `batch`:
/// `begin` says `done` when the ledger has it already, `commit` records it. Returns what was
/// committed and taken back, as JSON.
#[pyfunction]
#[pyo3(signature = (to, job, step, table=String::new(), overwrite=false, parts="auto", winners=Vec::new(), query=None, batch=None, keep_indexes=false))]
#[allow(clippy::too_many_arguments)]
fn job(
    py: Python<'_>,
    to: String,
    job: String,
    step: &str,
    table: String,
    overwrite: bool,
    parts: &str,
    winners: Vec<String>,
    query: Option<String>,
    batch: Option<i64>,
    keep_indexes: bool,
) -> PyResult<String> {
    let parts = match parts {
        "auto" => Parts::Auto,
        "prepared" => Parts::Prepared,
        "staged" => Parts::Staged,
        other => {
            let message = format!("parts {other:?}: auto, prepared or staged");
            return Err(raise(py, "UsageError", &message, None));
        }
    };
    let batch = match (query, batch) {
        (Some(query), Some(id)) => Some(Batch { query, id }),
        (None, None) => None,
        _ => {
            let message = "a streaming batch needs both query and batch";
            return Err(raise(py, "UsageError", message, None));
        }
    };
    let step = match step {
        "begin" => JobStep::Begin {
            table,
            overwrite,
            parts,
            batch,
            keep_indexes,
        },
        "commit" => JobStep::Commit { winners, batch },
        "abort" => JobStep::Abort,
        other => return Err(PyRuntimeError::new_err(format!("no job step {other:?}"))),
    };
    let engine = inrush::engines::named(&to);
    let outcome = py.detach(|| engine.job(&to, &job, &step));
    let outcome = outcome.map_err(|e| failure(py, &e))?;
    serde_json::to_string(&outcome).map_err(to_runtime)
}

/// What `inrush plan <argv>` would print, as JSON.
#[pyfunction]
fn plan(py: Python<'_>, argv: Vec<String>) -> PyResult<String> {
    let args = match parse(py, "plan", argv)? {
        inrush::cli::Command::Plan(args) => args,
        _ => return Err(PyRuntimeError::new_err("not a plan")),
    };
    let plan = py.detach(|| args.plan()).map_err(|e| failure(py, &e))?;
    serde_json::to_string(&plan).map_err(to_runtime)
}

/// The arguments of `inrush <command>`, parsed as the command line parses them.
fn parse(py: Python<'_>, command: &str, argv: Vec<String>) -> PyResult<inrush::cli::Command> {
    let line = ["inrush".to_string(), command.to_string()]
        .into_iter()
        .chain(argv);
    match <inrush::cli::Cli as clap::Parser>::try_parse_from(line) {
        Ok(cli) => Ok(cli.command),
        Err(e) => Err(raise(py, "UsageError", &e.render().to_string(), None)),
    }
}

/// The exception of `inrush.errors` the failure's exit code stands for, with where the bad
/// row is when the failure is one row.
fn failure(py: Python<'_>, e: &anyhow::Error) -> PyErr {
    let code = inrush::exit_code(e);
    let class = match code {
        2 => "UsageError",
        3 => "ServerError",
        4 | 7 => "BadInputError",
        5 => "PartialCommitError",
        8 => "UnfinishedError",
        9 => "CommitUnknownError",
        130 => return PyKeyboardInterrupt::new_err(format!("{e:#}")),
        _ => "InrushError",
    };
    let location = match e.downcast_ref::<inrush_load::Error>() {
        Some(inrush_load::Error::BadRow { location, reason }) => Some((Some(location), reason)),
        Some(inrush_load::Error::ServerRefused {
            location, message, ..
        }) => Some((location.as_deref(), message)),
        _ => None,
    };
    let details = location.map(|(location, reason)| {
        let details = PyDict::new(py);
        let _ = details.set_item("reason", reason);
        if let Some(l) = location {
            let _ = details.set_item("file", &l.file);
            let _ = details.set_item("line", l.line);
            let _ = details.set_item("column", &l.column);
            let _ = details.set_item("value", &l.value);
        }
        details
    });
    let message = format!("{e:#}");
    let error = raise(py, class, message.trim_end(), details);
    // The command's exit code for the same failure, for scripts that map them.
    let _ = error.value(py).setattr("exit_code", code);
    error
}

/// An instance of `inrush.errors.<class>(message)`, its details set as attributes.
fn raise(py: Python<'_>, class: &str, message: &str, details: Option<Bound<'_, PyDict>>) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("inrush.errors")?.getattr(class)?;
        let error = class.call1((message,))?;
        if let Some(details) = details {
            for (key, value) in details.iter() {
                error.setattr(key.extract::<String>()?.as_str(), value)?;
            }
        }
        Ok(PyErr::from_value(error))
    })();
    made.unwrap_or_else(|e| e)
}

fn to_runtime(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// Phases and progress, to a Python callable `progress(phase, rows, bytes_read, bytes_total)`
/// (phase: inspect, load, commit, indexes, analyze, vacuum, done).
struct Callback(Option<Py<PyAny>>);

impl Callback {
    fn call(&self, phase: Option<&str>, snapshot: Option<ProgressSnapshot>) {
        let Some(callback) = &self.0 else { return };
        Python::attach(|py| {
            let s = snapshot.unwrap_or(ProgressSnapshot {
                bytes_read: 0,
                bytes_total: None,
                rows_sent: 0,
            });
            let args = (phase, s.rows_sent, s.bytes_read, s.bytes_total);
            // A failing callback must not fail the load: Python shows it as unraisable.
            if let Err(e) = callback.call1(py, args) {
                e.write_unraisable(py, None);
            }
        });
    }
}

impl Reporter for Callback {
    fn phase(&self, phase: Phase) {
        let name = match phase {
            Phase::Inspect => "inspect",
            Phase::Load => "load",
            Phase::Commit => "commit",
            Phase::Indexes => "indexes",
            Phase::Maintain { vacuum: true } => "vacuum",
            Phase::Maintain { vacuum: false } => "analyze",
            Phase::Done => "done",
        };
        self.call(Some(name), None);
    }

    fn progress(&self, snapshot: ProgressSnapshot) {
        self.call(None, Some(snapshot));
    }
}

#[pymodule]
fn _inrush(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(spell_command_as, m)?)?;
    m.add_function(wrap_pyfunction!(job, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

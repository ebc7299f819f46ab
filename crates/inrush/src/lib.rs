//! `inrush`: the command line over the library crates. Owns argument parsing, settings, the
//! progress display, the human and JSON summaries, and exit codes; nothing else. A library so
//! that other front ends (the Python module) run the very same commands: [`main`] is the whole
//! program, [`cli::LoadArgs::prepare`] a load as the command line describes it.
//!
//! Exit codes: 0 loaded; 1 unexpected error; 2 usage (also: an input that cannot be opened); 3
//! connection, server or permission problem; 4 input refused (bad row or malformed CSV: nothing
//! committed; for `recover`, rows that break a key it recreates); 5 partial commit (a
//! connection failed during the final COMMIT: see the message); 6 loaded and committed, with
//! rows refused into the reject file (`--max-errors`); 7 loaded and committed, but a foreign key
//! dropped for the load does not hold (added back NOT VALID); 8 committed, but putting back what
//! the load dropped failed after the commit (the rows stay: do not load them again; `inrush
//! recover` finishes); 130 interrupted (Ctrl-C or SIGTERM: everything rolled back).

pub mod cli;
mod copy;
mod demo;
pub mod engines;
mod generate;
mod lab;
pub mod report;

use clap::Parser;
use std::io::IsTerminal;

/// The spelling a front end that runs this code in its own process has set (the Python
/// package, whose process is `python`), before any message is written.
static SPELLING: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Has the messages spell the command as `spelling` (`inrush`, or `python -m inrush`).
pub fn spell_command_as(spelling: String) {
    let _ = SPELLING.set(spelling);
}

/// How the messages spell the command so that it runs as printed: `inrush` when that is what
/// the `PATH` finds for this very program, else this program's path (a fresh checkout's
/// `target/release/inrush` is on no `PATH`).
pub fn command() -> String {
    if let Some(spelling) = SPELLING.get() {
        return spelling.clone();
    }
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "inrush".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .filter_map(|dir| std::fs::canonicalize(dir.join("inrush")).ok())
            .next()
            .is_some_and(|found| found == me)
    });
    match on_path {
        true => "inrush".into(),
        false => me.display().to_string(),
    }
}

/// How a successful command ended; failures are errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Loaded and committed, but some rows went to the reject file (exit code 6).
    CompletedWithRejects,
}

/// Runs the command line `args` (the program name first) and returns its exit code.
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> u8 {
    let args = match cli::Cli::try_parse_from(args) {
        Ok(args) => args,
        // --help and --version are errors to clap, with exit code 0.
        Err(e) => {
            let _ = e.print();
            return e.exit_code() as u8;
        }
    };
    let json = args.wants_json();
    // Already set when a host process (Python) runs a second command: keep the first.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("INRUSH_LOG")
                // odbc-api logs each of a driver's diagnostics, which inrush's own error
                // already says.
                .unwrap_or_else(|_| "warn,odbc_api=off".into()),
        )
        .without_time()
        // Colour codes only for a terminal, and never when NO_COLOR is set (no-color.org).
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
    match cli::run(args) {
        Ok(Outcome::Done) => 0,
        Ok(Outcome::CompletedWithRejects) => 6,
        Err(e) => {
            let code = exit_code(&e);
            eprintln!("error: {e:#}");
            if json {
                // Scripts reading --json get the failure in the same channel as a success.
                println!(
                    "{}",
                    serde_json::json!({ "error": format!("{e:#}"), "exit_code": code })
                );
            }
            code
        }
    }
}

/// The documented exit code of a failure: its kind's (see [`inrush_load::Kind`]).
pub fn exit_code(e: &anyhow::Error) -> u8 {
    use inrush_load::Kind;
    let kind = if let Some(e) = e.downcast_ref::<inrush_load::Error>() {
        e.kind()
    } else if let Some(e) = e.downcast_ref::<inrush_read::Error>() {
        Kind::of_read(e)
    } else if let Some(e) = e.downcast_ref::<inrush_postgres::Error>() {
        e.kind()
    } else if let Some(e) = e.downcast_ref::<inrush_lab::Error>() {
        match e {
            inrush_lab::Error::Interrupted => Kind::Interrupted,
            inrush_lab::Error::Usage(_) | inrush_lab::Error::UnknownExperiment(_) => Kind::Usage,
            inrush_lab::Error::Postgres(_)
            | inrush_lab::Error::Query { .. }
            | inrush_lab::Error::Load(_) => Kind::Server,
            _ => Kind::Other,
        }
    } else {
        Kind::Other
    };
    kind.exit_code()
}

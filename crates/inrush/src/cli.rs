//! Argument definitions and their translation into library options.

use crate::demo::{self, DemoArgs};
use crate::generate::{self as generate_command, GenerateArgs};
use crate::lab::{self, LabArgs, LabCommand};
use crate::report::{self, OutputArgs};
use crate::{engines, Outcome};
use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};
use inrush_encode::DateOrder;
use inrush_load::{AfterLoad, LoadOptions, OnConflict, PartitionRouting, PlanOptions, QuerySource};
use inrush_read::csv::CsvOptions;
use inrush_read::encoding::Encoding;
use inrush_read::generate::{self, Schema, TextFormat};
use inrush_read::inputs::InputFormat;

#[derive(Parser, Debug)]
#[command(
    name = "inrush",
    version,
    about = "Bulk loader for PostgreSQL, MariaDB/MySQL and SQLite: parses on every core, streams each engine's bulk path (binary COPY, LOAD DATA LOCAL, prepared inserts) over several connections"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process; boxing the load's many options would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load CSV, TSV, JSON-lines, Parquet or Arrow IPC files (plain, .gz, .zst; directories,
    /// globs, or - for stdin), or a query's rows from another server, into a table (an existing
    /// one, or one --create makes).
    Load(LoadArgs),
    /// Start a private PostgreSQL, generate rows of `gen`'s sqlbulkcopy table, load them,
    /// compare with psql \copy.
    Demo(DemoArgs),
    /// Write seeded synthetic rows (CSV, JSON lines or Parquet) of three tables (sqlbulkcopy,
    /// insertbench, lineitem) for benchmarks and experiments.
    Gen(GenArgs),
    /// Print what a load would do around the COPY (indexes kept or rebuilt, and why).
    Plan(PlanArgs),
    /// Finish what interrupted loads and distributed writes left behind.
    ///
    /// Recreates the indexes, keys and constraints a load dropped (from the DDL journal),
    /// settles the transactions it left prepared, and carries out or takes back the
    /// distributed writes (Spark) a coordinator left, on every engine.
    Recover(RecoverArgs),
    /// Show the progress of `load --resume` loads (one process or several sharing an input):
    /// what each committed, and which blocks which processes are loading now.
    Status(StatusArgs),
    /// The insert-performance lab: run the insert-performance experiments against your server.
    Lab(LabArgs),
    /// Copy a whole database (tables, keys, indexes, foreign keys, numbering) between
    /// PostgreSQL, MariaDB/MySQL and SQLite: every table through the load path, from one
    /// consistent image of the source; a rerun resumes where a failed copy stopped.
    Copy(crate::copy::CopyArgs),
    /// Write the man pages, the shell completions or the Markdown reference of these commands.
    Generate(GenerateArgs),
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum FormatArg {
    Csv,
    /// CSV with a tab delimiter.
    Tsv,
    Jsonl,
    Parquet,
    Arrow,
}

impl FormatArg {
    fn format(self) -> InputFormat {
        match self {
            FormatArg::Csv => InputFormat::Csv,
            FormatArg::Tsv => InputFormat::Tsv,
            FormatArg::Jsonl => InputFormat::Jsonl,
            FormatArg::Parquet => InputFormat::Parquet,
            FormatArg::Arrow => InputFormat::Arrow,
        }
    }
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Input files, directories (their files) or globs: CSV, TSV, JSON lines (plain, .gz or
    /// .zst), Parquet or Arrow IPC; `-` reads standard input. (A load needs them unless
    /// --from-query; `inrush plan` does not.)
    pub inputs: Vec<String>,
    /// How the inputs are written (default: by their names, .csv .tsv .jsonl .ndjson .parquet
    /// .arrow .feather .ipc, looking through .gz/.zst; CSV when they say nothing).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Load the rows of this query, run on the --from server, instead of files.
    #[arg(long, requires = "from", conflicts_with = "inputs")]
    pub from_query: Option<String>,
    /// The server --from-query runs on: a libpq URI or key=value string (PostgreSQL), or
    /// mysql://user@host/database (MariaDB, MySQL; as for --to).
    #[arg(long)]
    pub from: Option<String>,
    /// --from a MariaDB/MySQL server: load its zero dates (0000-00-00, and dates with a zero
    /// month or day) as NULL; without it they are bad rows, since no other engine has them.
    #[arg(long, requires = "from_query")]
    pub zero_dates_null: bool,
    /// Cut --from-query into ranges of this integer column, one stream per connection.
    #[arg(long, requires = "from_query")]
    pub split_by: Option<String>,
    /// Target: PostgreSQL as a libpq URI (postgresql://user@host/db) or key=value string;
    /// PG* variables and .pgpass fill the gaps, as for psql (so without --to, PGHOST,
    /// PGUSER... or the local socket are used). MariaDB or MySQL: mysql://user@host:3306/db
    /// (or mariadb://; ~/.my.cnf gives the password). SQLite: sqlite:///path/to.db, or a path
    /// ending in .db, .sqlite or .sqlite3 (created when missing). Any other database with an
    /// ODBC driver: odbc:DSN=name;UID=user, or odbc:Driver={...};Server=...; (the whole
    /// connection string). Read from INRUSH_TO when not given.
    #[arg(long, env = "INRUSH_TO")]
    pub to: Option<String>,
    /// Target table, as in SQL: `orders`, `sales.orders`, `"Orders"`.
    #[arg(long)]
    pub table: String,
    /// The first line is a header; its names pick the columns.
    #[arg(long)]
    pub header: bool,
    /// The field delimiter (`tab` or `\t` for a tab) [default: ',', a tab for .tsv files].
    #[arg(long, default_value = ",", hide_default_value = true, value_parser = one_byte)]
    pub delimiter: u8,
    /// The quote character.
    #[arg(long, default_value = "\"", value_parser = one_byte)]
    pub quote: u8,
    /// The character that escapes a quote inside quoted text [default: the quote character].
    #[arg(long, value_parser = one_byte)]
    pub escape: Option<u8>,
    /// The unquoted text that means NULL.
    #[arg(long, default_value = "")]
    pub null: String,
    /// How text inputs are encoded, by PostgreSQL's names (case and dashes ignored): UTF8,
    /// LATIN1 (ISO-8859-1), WIN1252 (Windows-1252, CP1252), UTF16 (byte order from its mark),
    /// UTF16LE, UTF16BE. Converted to UTF-8 on the workers [default: UTF8, or UTF-16 when the
    /// file starts with its byte order mark].
    #[arg(long, value_parser = encoding_name)]
    pub encoding: Option<Encoding>,
    /// The order of day, month and year in dates like 01/02/2024, as PostgreSQL's DateStyle:
    /// set on every session of the load [default: the server's DateStyle].
    #[arg(long, value_enum, ignore_case = true)]
    pub datestyle: Option<DateStyleArg>,
    /// Table columns the fields feed, in order (overrides the header's names).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Parse/encode threads [default: one per core].
    #[arg(long)]
    pub workers: Option<usize>,
    /// Parallel COPY connections, fixed for the whole load [default: PostgreSQL: chosen during
    /// the load from the rows per second it measures, starting at cores (at most 4); other
    /// targets: cores, at most 4].
    #[arg(long)]
    pub connections: Option<usize>,
    /// Rows that may be refused before the load stops (0: stop at the first bad row; nothing is
    /// committed when the load stops). Refused rows go to the reject file.
    #[arg(long, default_value_t = 0)]
    pub max_errors: u64,
    /// Reject file: refused records as their original bytes; `<FILE>.log` says why (JSON lines).
    /// [default: <input>.rejects; ./inrush.rejects for standard input, a query or several
    /// inputs]
    #[arg(long)]
    pub rejects: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub plan: PlanFlags,
    /// Rows whose primary or unique key is already in the table: `error` (the default: the
    /// load fails, or the row is rejected with --max-errors), `skip` (first occurrence wins),
    /// or `update` (last occurrence wins; needs a primary key). Staged, then merged in one
    /// transaction.
    #[arg(long, value_enum, default_value = "error")]
    pub on_conflict: OnConflictArg,
    /// Commit block by block, each with a row in the target's ledger (PostgreSQL:
    /// inrush.load_ledger; MariaDB/MySQL and SQLite: inrush_load_ledger): after a crash or
    /// Ctrl-C, the same command loads only what is missing (nothing twice). Needs a file;
    /// refuses one that changed since.
    #[arg(long)]
    pub resume: bool,
    /// Empty the table first, in the load's own transaction (a failed load keeps the old rows),
    /// and write the rows frozen (COPY FREEZE): no VACUUM needed after. Uses one connection.
    #[arg(long)]
    pub truncate: bool,
    /// Create the table (it must not exist): names from the header, JSON keys, Parquet fields
    /// or the query's columns; types from the file's schema, the query's types, or the first
    /// block's values. Made and loaded in one transaction with COPY FREEZE (one connection);
    /// a failed load leaves no table.
    #[arg(long)]
    pub create: bool,
    /// With --create: column types that replace the guessed ones, as `col=type,...`
    /// (e.g. `zip=text,price=numeric(12,2)`).
    #[arg(long, requires = "create", value_parser = type_overrides)]
    pub types: Option<TypeOverrides>,
    /// Hold LOCK TABLE ... IN EXCLUSIVE MODE during the load (others may read, not write).
    /// Uses one connection.
    #[arg(long)]
    pub table_lock: bool,
    /// Find what the load would refuse, writing nothing: every row checked on the client, then
    /// written in a transaction rolled back, so the server checks keys, foreign keys, CHECK
    /// constraints and triggers; with --max-errors, lists every refused row in the reject file.
    #[arg(long)]
    pub check: bool,
    /// A task of a distributed write (what `inrush.spark` runs on each executor): leave the
    /// load's transactions prepared, named `inrush_JOB_PART_<n>`, for the job's coordinator to
    /// commit with its other tasks' (or roll back): PostgreSQL's prepared transactions, or an
    /// XA transaction on MariaDB/MySQL. Indexes and keys are kept.
    #[arg(long, value_name = "JOB:PART", value_parser = inrush_load::job::Prepare::parse)]
    pub prepare: Option<inrush_load::job::Prepare>,
    /// Like --prepare, for a server without prepared transactions (or a job that overwrites
    /// its table): commit the rows into the part's own table, inrush."stage_JOB_PART", which
    /// the job's coordinator moves into the table with its other tasks' (or drops).
    #[arg(long, value_name = "JOB:PART", value_parser = inrush_load::job::Prepare::parse, conflicts_with = "prepare")]
    pub stage: Option<inrush_load::job::Prepare>,
    /// Seconds the server may leave the load unanswered before it is taken for gone: a
    /// connection attempt, the check the load makes every second, or the question
    /// asked of the server after a COMMIT whose answer was lost. Then every connection of the
    /// load is closed and the message says what the table holds (PostgreSQL also sets it as
    /// each connection's TCP user timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub network_timeout: u64,
    /// Bytes of input per unit of parallel work.
    #[arg(long, default_value_t = 1 << 20, hide = true)]
    pub block_size: usize,
    /// Use text COPY even where binary is possible (for comparisons).
    #[arg(long, hide = true)]
    pub text: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum DateStyleArg {
    /// Day first: 31/12/2024.
    #[value(name = "DMY")]
    Dmy,
    /// Month first: 12/31/2024 (PostgreSQL's default).
    #[value(name = "MDY")]
    Mdy,
    /// Year first: 24/12/31 (a four-digit year first reads as year-month-day in every order).
    #[value(name = "YMD")]
    Ymd,
}

impl DateStyleArg {
    fn order(self) -> DateOrder {
        match self {
            DateStyleArg::Dmy => DateOrder::Dmy,
            DateStyleArg::Mdy => DateOrder::Mdy,
            DateStyleArg::Ymd => DateOrder::Ymd,
        }
    }
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum OnConflictArg {
    Error,
    Skip,
    Update,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterArg {
    Auto,
    VacuumAnalyze,
    Analyze,
    None,
}

/// How the load treats indexes (shared by `load` and `plan`).
#[derive(Args, Debug, Clone, Copy)]
pub struct PlanFlags {
    /// Keep every index during the load (never drop and rebuild).
    #[arg(long)]
    pub keep_indexes: bool,
    /// Rebuild secondary indexes after the load when it is at least this fraction of the
    /// table's current size (table plus indexes).
    #[arg(long, default_value_t = 0.2)]
    pub index_threshold: f64,
    /// What makes the table query-ready after the load: `auto` lets the plan choose (see
    /// `inrush plan`), or `vacuum-analyze`, `analyze`, `none` (statistics and the visibility
    /// map left to autovacuum).
    #[arg(long, value_enum, default_value_t = AfterArg::Auto)]
    pub after: AfterArg,
    /// The same as `--after none`.
    #[arg(long, conflicts_with = "after")]
    pub no_analyze: bool,
    /// Build primary keys and unique constraints after the load even when the table is not
    /// empty (by default only for empty tables). Rows that break one undo the load; meanwhile
    /// other sessions can insert unchecked.
    #[arg(long)]
    pub rebuild_unique: bool,
    /// Disable the table's triggers during the load and re-enable them after (needs ownership;
    /// journaled like dropped indexes, so a crash cannot leave them disabled).
    #[arg(long)]
    pub disable_triggers: bool,
    /// Never sort the rows. By default a small load into a table whose kept index is large
    /// (64 MiB or more) is sorted by that index's leading key (in memory, up to 256 MiB of
    /// input), so the index is filled in key order.
    #[arg(long)]
    pub no_sort: bool,
    /// SQLite: keep the rollback journal in memory and never wait for the disk during the
    /// load. A failed or interrupted load still rolls back, but a crash of the machine or of
    /// inrush (SIGKILL) during the load can corrupt the whole database file.
    #[arg(long)]
    pub fast_unsafe: bool,
    /// PostgreSQL, a partitioned table: who finds each row's partition. `client`: inrush,
    /// which COPYs each leaf's rows straight into the leaf, a foreign leaf's into its remote
    /// table on its own server (when it can reproduce the server's choice exactly; `inrush
    /// plan` says when not and why); `server`: COPY into the partitioned table; `auto`: client
    /// when the table has foreign partitions, server when all are local.
    #[arg(long, value_enum, default_value = "auto")]
    pub route: RouteArg,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum RouteArg {
    Auto,
    Client,
    Server,
}

impl RouteArg {
    fn routing(self) -> PartitionRouting {
        match self {
            RouteArg::Auto => PartitionRouting::Auto,
            RouteArg::Client => PartitionRouting::Client,
            RouteArg::Server => PartitionRouting::Server,
        }
    }
}

impl PlanFlags {
    fn options(self) -> PlanOptions {
        PlanOptions {
            rebuild_indexes: !self.keep_indexes,
            threshold: self.index_threshold,
            after: match (self.no_analyze, self.after) {
                (true, _) | (_, AfterArg::None) => AfterLoad::Nothing,
                (_, AfterArg::Auto) => AfterLoad::Auto,
                (_, AfterArg::VacuumAnalyze) => AfterLoad::VacuumAnalyze,
                (_, AfterArg::Analyze) => AfterLoad::Analyze,
            },
            rebuild_unique: self.rebuild_unique,
            disable_triggers: self.disable_triggers,
            fast_unsafe: self.fast_unsafe,
            keep_keys: None,
            sort_min_index_bytes: match self.no_sort {
                true => u64::MAX,
                false => PlanOptions::default().sort_min_index_bytes,
            },
        }
    }
}

/// `inrush plan` takes a load's own command line (`inrush load ...` with `plan` for `load`).
#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// The file to be loaded, when the inputs do not name it (its size is weighed against
    /// the table's); by default the load's inputs.
    #[arg(long)]
    pub input: Option<String>,
}

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// The server, as for `load --to` (a PostgreSQL URI or key=value string, mysql://..., or a
    /// SQLite file).
    #[arg(long, env = "INRUSH_TO")]
    pub to: Option<String>,
    /// Only this table (default: every table in the journal).
    #[arg(long)]
    pub table: Option<String>,
    /// Print what was done as one JSON object on stdout (recreated, committed, rolled_back,
    /// left_alone; without it, sentences on stderr).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The target, as for `load --to` (a PostgreSQL URI or key=value string, mysql://..., or a
    /// SQLite file).
    #[arg(long, env = "INRUSH_TO")]
    pub to: Option<String>,
    /// Only loads into this table (default: every load in the ledger).
    #[arg(long)]
    pub table: Option<String>,
    /// Print the loads as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Which table's rows: sqlbulkcopy (3 integers and 3 varchar(100)), insertbench
    /// (iibench's purchases_index), lineitem (TPC-H's columns and types).
    #[arg(default_value = "sqlbulkcopy")]
    pub schema: Schema,
    /// Output file.
    #[arg(short, long)]
    pub output: String,
    /// How the rows are written.
    #[arg(long, value_enum, default_value = "csv")]
    pub format: GenFormat,
    /// Start CSV with a header line (needed for insertbench, whose key the server fills).
    #[arg(long)]
    pub header: bool,
    /// Rows to write.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// The same seed writes the same bytes on every machine.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// What `gen` writes (a subset of what `load` reads).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum GenFormat {
    Csv,
    Jsonl,
    Parquet,
}

/// `--types col=type,...`: a comma inside a type's parentheses (`numeric(12,2)`) is the type's.
#[derive(Clone, Debug)]
pub struct TypeOverrides(Vec<(String, String)>);

fn type_overrides(s: &str) -> Result<TypeOverrides, String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices().chain([(s.len(), ',')]) {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
        .into_iter()
        .map(|item| match item.split_once('=') {
            Some((column, sql_type))
                if !column.trim().is_empty() && !sql_type.trim().is_empty() =>
            {
                Ok((column.trim().to_string(), sql_type.trim().to_string()))
            }
            _ => Err(format!("{item:?} is not column=type")),
        })
        .collect::<Result<_, _>>()
        .map(TypeOverrides)
}

fn encoding_name(s: &str) -> Result<Encoding, String> {
    s.parse().map_err(|e: inrush_read::Error| e.to_string())
}

fn one_byte(s: &str) -> Result<u8, String> {
    let s = match s {
        "\\t" | "tab" => "\t",
        other => other,
    };
    match s.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(format!("{s:?} is not a single one-byte character")),
    }
}

impl Cli {
    /// Whether the user asked for machine-readable output.
    pub fn wants_json(&self) -> bool {
        match &self.command {
            Command::Load(a) => a.output.json,
            Command::Demo(a) => a.output.json,
            Command::Plan(a) => a.load.output.json,
            Command::Status(a) => a.json,
            Command::Copy(a) => a.json,
            Command::Lab(LabArgs {
                command: LabCommand::Run(a),
            }) => a.json,
            Command::Recover(a) => a.json,
            Command::Gen(_) | Command::Lab(_) | Command::Generate(_) => false,
        }
    }
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Load(args) => load(args),
        Command::Demo(args) => demo::run(args).map(|()| Outcome::Done),
        Command::Lab(args) => lab::run(args).map(|()| Outcome::Done),
        Command::Plan(args) => {
            let json = args.load.output.json;
            let plan = args.plan()?;
            if json {
                println!("{}", serde_json::to_string(&plan)?);
            } else {
                print!("{plan}");
            }
            Ok(Outcome::Done)
        }
        Command::Recover(args) => {
            let to = args.to.as_deref().unwrap_or("");
            let told = report::ProgressReporter::new(false);
            let recovered = engines::named(to).recover(to, args.table.as_deref(), &told)?;
            report::print_recovered(&recovered, args.json)?;
            Ok(Outcome::Done)
        }
        Command::Status(args) => status(args).map(|()| Outcome::Done),
        Command::Copy(args) => crate::copy::run(args),
        Command::Generate(args) => generate_command::run(args, Cli::command()),
        Command::Gen(args) => {
            let text = match args.format {
                GenFormat::Parquet => None,
                GenFormat::Jsonl => Some(TextFormat::Jsonl),
                GenFormat::Csv => Some(TextFormat::Csv {
                    header: args.header,
                }),
            };
            let bytes = match text {
                None => inrush_arrow::generate::write_parquet(
                    std::path::Path::new(&args.output),
                    args.schema,
                    args.rows,
                    args.seed,
                )?,
                Some(format) => {
                    let file = std::fs::File::create(&args.output)
                        .with_context(|| format!("creating {}", args.output))?;
                    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
                    let bytes =
                        generate::write_text(&mut out, args.schema, format, args.rows, args.seed)?;
                    std::io::Write::flush(&mut out)?;
                    bytes
                }
            };
            eprintln!(
                "wrote {} rows, {:.1} MB to {}; load them into:\n{}",
                args.rows,
                bytes as f64 / 1e6,
                args.output,
                args.schema.create_sql(args.schema.name())
            );
            Ok(Outcome::Done)
        }
    }
}

fn load(args: LoadArgs) -> Result<Outcome> {
    let (json, progress) = (
        args.output.json,
        !args.output.no_progress && !args.output.json,
    );
    let recover = recover_command(args.to.as_deref(), &args.table);
    let load = args.prepare(None)?;
    stop_on_signal(&load.opts.interrupt)?;
    let reporter = report::ProgressReporter::new(progress);
    let summary = load.run(&reporter);
    reporter.finish();
    let summary = summary.map_err(|mut e| {
        if let Some(inrush_load::Error::Unfinished { recover: slot, .. }) = e.downcast_mut() {
            *slot = Some(recover);
        }
        e
    })?;
    report::print_summary(&summary, json)?;
    Ok(if summary.rows_rejected > 0 {
        Outcome::CompletedWithRejects
    } else {
        Outcome::Done
    })
}

/// The `inrush recover` that finishes a load of `table` into `to`, as a shell command, without
/// the password (libpq's `~/.pgpass` or `PGPASSWORD`, MariaDB's option file give it).
fn recover_command(to: Option<&str>, table: &str) -> String {
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let to = to.map_or(String::new(), |to| {
        format!(
            " --to {}",
            quoted(&inrush_core::secret::without_passwords(to))
        )
    });
    format!("{} recover{to} --table {}", crate::command(), quoted(table))
}

impl PlanArgs {
    /// What a load with these options would do, from the target's catalog.
    pub fn plan(self) -> Result<inrush_load::LoadPlan> {
        let PlanArgs { load: args, input } = self;
        // The size of the input is what the plan weighs: a file's (standard input and queries
        // have none known up front).
        let input = input.or_else(|| args.inputs.first().filter(|i| *i != "-").cloned());
        let to = args.to.as_deref().unwrap_or("");
        let mut opts = LoadOptions::new("", args.table);
        opts.plan = args.plan.options();
        opts.routing = args.plan.route.routing();
        opts.resume = args.resume;
        engines::named(to).plan(to, &opts, input.as_deref())
    }
}

/// A load as its arguments describe it, checked and ready to run.
pub struct PreparedLoad {
    pub opts: LoadOptions,
    /// `--to`, as written.
    to: String,
}

impl PreparedLoad {
    /// Runs the load into the engine `--to` names; progress goes to `reporter`.
    pub fn run(
        &self,
        reporter: &dyn inrush_core::progress::Reporter,
    ) -> Result<inrush_load::LoadSummary> {
        let target = engines::named(&self.to).target(&self.to)?;
        Ok(inrush_load::load_into(&*target, &self.opts, reporter)?)
    }
}

impl LoadArgs {
    /// The load's options, with conflicting ones refused (exit 2) before a connection is
    /// opened. A `stream` (the Python module's DataFrames) replaces the inputs.
    pub fn prepare(self, stream: Option<inrush_arrow::BatchStream>) -> Result<PreparedLoad> {
        let args = self;
        if args.inputs.is_empty() && args.from_query.is_none() && stream.is_none() {
            anyhow::bail!(inrush_load::Error::Usage(
                "nothing to load: name input files, directories or globs, - for standard input, or --from-query".into()
            ));
        }
        let csv = CsvOptions {
            delimiter: args.delimiter,
            quote: args.quote,
            escape: args.escape.unwrap_or(args.quote),
            null: args.null.into_bytes(),
            header: args.header,
        };
        csv.validate()?;
        let to = args.to.clone().unwrap_or_default();
        let mut opts = LoadOptions::new("", args.table);
        opts.inputs = args.inputs;
        opts.format = args.format.map(FormatArg::format);
        if let Some(sql) = args.from_query {
            let from = args.from.as_deref().unwrap_or("");
            let from = engines::named(from).source(from, args.zero_dates_null)?;
            opts.from_query = Some(QuerySource {
                from,
                sql,
                split_by: args.split_by,
            });
        }
        opts.csv = csv;
        opts.encoding = args.encoding;
        opts.date_order = args.datestyle.map(DateStyleArg::order);
        opts.columns = args.columns;
        if let Some(w) = args.workers {
            opts.workers = w;
        }
        if let Some(c) = args.connections {
            opts.connections = c;
            opts.adapt_connections = false;
        }
        opts.block_size = args.block_size.max(1);
        opts.network_timeout = std::time::Duration::from_secs(args.network_timeout);
        opts.force_text = args.text;
        opts.max_errors = args.max_errors;
        opts.check_only = args.check;
        opts.plan = args.plan.options();
        opts.routing = args.plan.route.routing();
        opts.truncate = args.truncate;
        opts.create = args.create;
        opts.create_types = args.types.map(|t| t.0).unwrap_or_default();
        opts.resume = args.resume;
        opts.on_conflict = match args.on_conflict {
            OnConflictArg::Error => OnConflict::Error,
            OnConflictArg::Skip => OnConflict::Skip,
            OnConflictArg::Update => OnConflict::Update,
        };
        opts.table_lock = args.table_lock;
        opts.prepare = args
            .prepare
            .or(args.stage.map(inrush_load::job::Prepare::staged));
        opts.rejects = args.rejects;
        if let Some(stream) = stream {
            opts.stream = Some(stream);
            // The command line needed an input to parse; the stream is the only one.
            opts.inputs.clear();
        }
        opts.validate()?;
        Ok(PreparedLoad { opts, to })
    }
}

/// `inrush status`: the `--resume` loads in the target's ledger, whatever its engine.
fn status(args: StatusArgs) -> Result<()> {
    let to = args.to.as_deref().unwrap_or("");
    let (loads, ledger) = engines::named(to).status(to, args.table.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string(&loads)?);
    } else if loads.is_empty() {
        eprintln!("no `inrush load --resume` recorded in {ledger}");
    } else {
        print!("{}", report::load_status(&loads));
    }
    Ok(())
}

/// Ctrl-C or SIGTERM asks the load to stop; what that means depends on the phase it is in, and
/// the message says so (see `inrush_load::Signalled`). A second signal exits at once only when
/// that leaves nothing dropped and nothing half-done: the server rolls back the open
/// transactions of a closed connection.
fn stop_on_signal(interrupt: &std::sync::Arc<inrush_load::Interrupt>) -> Result<()> {
    let interrupt = interrupt.clone();
    ctrlc::set_handler(move || {
        let signalled = interrupt.signal();
        eprintln!("\n{}", signalled.message());
        if signalled.may_exit_now() {
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recover_command_never_carries_the_password() {
        let inrush = crate::command();
        assert_eq!(
            recover_command(Some("postgresql://a:pw@h/d"), "it's"),
            format!("{inrush} recover --to 'postgresql://a@h/d' --table 'it'\\''s'")
        );
        assert_eq!(
            recover_command(None, "t"),
            format!("{inrush} recover --table 't'")
        );
    }
}

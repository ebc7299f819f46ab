use inrush_encode::DateOrder;
use inrush_read::csv::CsvOptions;
use inrush_read::encoding::Encoding;
use inrush_read::inputs::InputFormat;

/// How long a server may leave inrush unanswered before it is taken for silent, unless
/// `--network-timeout` says otherwise.
pub const NETWORK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Who routes the rows of a partitioned table to its partitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PartitionRouting {
    /// [`Client`](Self::Client) for a table with foreign partitions, whose rows would
    /// otherwise go through the coordinator one INSERT at a time; [`Server`](Self::Server)
    /// when every partition is local, where COPY into the parent measured faster.
    #[default]
    Auto,
    /// inrush, when it can reproduce the server's choice exactly (else the server, and the
    /// plan says why): each leaf's rows are COPYed straight into the leaf, a foreign leaf's
    /// into its remote table on its own server.
    Client,
    /// The server: COPY into the partitioned table.
    Server,
}

/// Everything a load needs, already validated by whoever built it (the CLI, a test).
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Files, directories or globs (see `inrush_read::inputs::expand`), or `-` for standard
    /// input. Ignored when `from_query` is set.
    pub inputs: Vec<String>,
    /// How the inputs are written; `None`: by their names (CSV when they say nothing).
    pub format: Option<InputFormat>,
    /// Load the rows of a query on another server instead of files.
    pub from_query: Option<QuerySource>,
    /// Load record batches from memory instead of files (the Python module's DataFrames).
    pub stream: Option<inrush_arrow::BatchStream>,
    /// As the user wrote it; resolved like SQL would (`orders`, `sales.orders`, `"Orders"`).
    pub table: String,
    pub csv: CsvOptions,
    /// How text inputs are encoded (`--encoding`); `None`: UTF-8, or UTF-16 where a byte
    /// order mark says so.
    pub encoding: Option<Encoding>,
    /// `--datestyle`: the field order of dates such as `01/02/2024`, set as DateStyle on every
    /// session of the load (the server's input functions read with it) and followed by the
    /// client's own date reading. `None`: the server's setting.
    pub date_order: Option<DateOrder>,
    /// `--network-timeout`: how long the server may leave the load unanswered (a connection
    /// attempt, the watch's look, a question about a COMMIT whose answer was lost) before the
    /// load takes it for gone.
    pub network_timeout: std::time::Duration,
    /// Table columns the input's fields feed, in order; `None`: from the header, else all.
    pub columns: Option<Vec<String>>,
    /// Parse/encode threads.
    pub workers: usize,
    /// Parallel COPY connections: the number the load starts with, or, with
    /// `adapt_connections` false (`--connections N`), the number it uses throughout.
    pub connections: usize,
    /// Let a PostgreSQL load choose its connections while it runs, from the rows per second it
    /// measures as streams are added and removed (see `inrush-postgres`'s `load::adapt`).
    pub adapt_connections: bool,
    /// Target bytes of input per block (the unit of parallel work).
    pub block_size: usize,
    /// Load through text COPY even when binary is possible (for comparisons).
    pub force_text: bool,
    /// Who finds a partitioned table's partition for each row.
    pub routing: PartitionRouting,
    /// Rows that may be refused (written to `rejects`) before the load stops; 0: stop at the
    /// first bad row.
    pub max_errors: u64,
    /// The reject file; default `<input>.rejects` (its log: `<rejects>.log`).
    pub rejects: Option<std::path::PathBuf>,
    /// What happens around the COPY (indexes).
    pub plan: crate::PlanOptions,
    /// What to do with rows whose key is already in the table.
    pub on_conflict: OnConflict,
    /// Commit block by block with a ledger, so a rerun loads what is missing and nothing twice.
    pub resume: bool,
    /// Empty the table in the load's own transaction (atomic: a failed load keeps the old rows)
    /// and load with COPY FREEZE. One transaction means one connection.
    pub truncate: bool,
    /// Create the table from the input (names from its header, types from its schema or
    /// values) in the load's own transaction, and load it with COPY FREEZE over one connection.
    pub create: bool,
    /// `--create`: column types that replace the guessed ones (name, SQL type).
    pub create_types: Vec<(String, String)>,
    /// LOCK TABLE ... IN EXCLUSIVE MODE for the load (other sessions may read, not write). A
    /// lock belongs to one transaction, so this too means one connection.
    pub table_lock: bool,
    /// Read, parse and check every row against the table, but load nothing (`--check`).
    pub check_only: bool,
    /// `--prepare JOB:PART`: a task of a distributed write, whose transactions end prepared
    /// for the job's coordinator to decide (see [`crate::job`]).
    pub prepare: Option<crate::job::Prepare>,
    /// Set from outside (a signal handler) to stop the load; says what stopping means in the
    /// phase the load is in.
    pub interrupt: std::sync::Arc<crate::Interrupt>,
}

impl LoadOptions {
    /// Defaults sized for this machine: one worker per core, starting with up to four
    /// connections and adapting that number during the load; one input.
    pub fn new(input: impl Into<String>, table: impl Into<String>) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        LoadOptions {
            inputs: vec![input.into()],
            format: None,
            from_query: None,
            table: table.into(),
            csv: CsvOptions::default(),
            encoding: None,
            date_order: None,
            network_timeout: NETWORK_TIMEOUT,
            columns: None,
            workers: cores,
            connections: cores.clamp(1, 4),
            adapt_connections: true,
            block_size: 1 << 20,
            force_text: false,
            routing: PartitionRouting::default(),
            max_errors: 0,
            rejects: None,
            interrupt: Default::default(),
            truncate: false,
            create: false,
            create_types: Vec::new(),
            resume: false,
            stream: None,
            on_conflict: OnConflict::Error,
            table_lock: false,
            check_only: false,
            prepare: None,
            plan: crate::PlanOptions::default(),
        }
    }
}

impl LoadOptions {
    /// Refuses options that cannot work together, before anything is read or changed: each
    /// message names the options and says why. Called by [`crate::load`]; callers that want
    /// the refusal earlier (the CLI) may call it first.
    pub fn validate(&self) -> crate::Result<()> {
        let conflict = |a: &str, b: &str, why: &str| {
            Err(crate::Error::Usage(format!(
                "{a} cannot be combined with {b}: {why}"
            )))
        };
        let on_conflict = self.on_conflict != OnConflict::Error;
        if self.workers == 0 || self.connections == 0 {
            return Err(crate::Error::Usage(
                "--workers and --connections must be at least 1".into(),
            ));
        }
        if self.create {
            let made_new = "--create makes a new table, loaded in one transaction";
            if self.resume {
                return conflict("--create", "--resume", made_new);
            }
            if self.truncate {
                return conflict("--create", "--truncate", made_new);
            }
            if on_conflict {
                return conflict("--create", "--on-conflict", made_new);
            }
        }
        if self.resume {
            let by_block = "--resume commits the input block by block";
            if self.truncate {
                return conflict("--resume", "--truncate", &format!("{by_block}, so a rerun would empty the table again (truncate first, then load with --resume)"));
            }
            if self.table_lock {
                return conflict(
                    "--resume",
                    "--table-lock",
                    &format!("{by_block}, and a lock lasts one transaction"),
                );
            }
            if on_conflict {
                return conflict(
                    "--resume",
                    "--on-conflict",
                    "--on-conflict merges the whole input in one transaction at the end",
                );
            }
            if self.check_only {
                return conflict(
                    "--resume",
                    "--check",
                    "--check loads nothing, so there is nothing to resume",
                );
            }
            if self.from_query.is_some() {
                return conflict(
                    "--resume",
                    "--from-query",
                    "a query cannot be read again from where it stopped",
                );
            }
            if self.stream.is_some() {
                return conflict(
                    "--resume",
                    "a DataFrame or Arrow stream",
                    "a stream cannot be read again from where it stopped (write it to a Parquet file and resume that)",
                );
            }
            if self.inputs.len() != 1 || self.inputs[0] == "-" {
                return conflict(
                    "--resume",
                    "several inputs or standard input",
                    "a rerun must read the very same file again",
                );
            }
        }
        if let (Some(encoding), Some(_)) = (self.encoding, &self.from_query) {
            return conflict(
                &format!("--encoding {}", encoding.name()),
                "--from-query",
                "a query's rows come from the server in UTF-8",
            );
        }
        if let (Some(encoding), Some(_)) = (self.encoding, &self.stream) {
            return conflict(
                &format!("--encoding {}", encoding.name()),
                "a DataFrame or Arrow stream",
                "Arrow strings are UTF-8",
            );
        }
        if on_conflict && self.truncate {
            return conflict("--on-conflict", "--truncate", "an emptied table has no rows to conflict with (--truncate alone refuses duplicate keys)");
        }
        let keeps_keys = if self.max_errors > 0 {
            Some("--max-errors")
        } else if self.resume {
            Some("--resume")
        } else if on_conflict {
            Some("--on-conflict")
        } else {
            None
        };
        if let (true, Some(other)) = (self.plan.rebuild_unique, keeps_keys) {
            return conflict(
                "--rebuild-unique",
                other,
                "the keys must be checked during the load, row by row, so they are kept",
            );
        }
        if self.plan.rebuild_unique && !self.plan.rebuild_indexes {
            return conflict(
                "--rebuild-unique",
                "--keep-indexes",
                "one rebuilds keys after the load, the other keeps every index",
            );
        }
        if self.prepare.is_some() {
            let task = "a task of a distributed write leaves its rows for the job to commit";
            let refused = [
                (self.resume, "--resume", "--resume commits block by block"),
                (self.create, "--create", "the job makes its table once, before its tasks"),
                (self.truncate, "--truncate", "the job empties its table once (mode overwrite)"),
                (on_conflict, "--on-conflict", "the merge commits on its own"),
                (self.check_only, "--check", "--check loads nothing"),
                (self.table_lock, "--table-lock", "every task would wait for the others' prepared transactions, which wait for the job"),
                (self.plan.disable_triggers, "--disable-triggers", "disabling them locks the table until the job decides, which the other tasks would wait for"),
            ];
            if let Some((_, option, why)) = refused.iter().find(|(asked, ..)| *asked) {
                let prepare = self.prepare.as_ref().map_or("--prepare", |p| p.option());
                return conflict(prepare, option, &format!("{task}; {why}"));
            }
        }
        if self.rejects.is_some() && self.max_errors == 0 {
            return Err(crate::Error::Usage(
                "--rejects names the reject file of --max-errors: give --max-errors N too (without it the first bad row stops the load)".into(),
            ));
        }
        Ok(())
    }

    /// Why the load keeps its keys (primary, unique, foreign) whatever the plan's size rule
    /// says, if it must.
    pub fn keeps_keys(&self) -> Option<&'static str> {
        if self.max_errors > 0 {
            Some("--max-errors: the server names each row that breaks a key, which goes to the reject file")
        } else if self.resume {
            Some("--resume commits block by block: a key put back after the load could not undo it")
        } else if self.on_conflict != OnConflict::Error {
            Some("--on-conflict merges the rows through the keys")
        } else {
            None
        }
    }
}

/// `--on-conflict`: rows whose primary key (or unique key) is already in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnConflict {
    /// The load fails (or the row goes to the reject file with `--max-errors`).
    #[default]
    Error,
    /// The row is left out; the first occurrence of a key in the input wins.
    Skip,
    /// The row replaces the existing one; the last occurrence of a key in the input wins.
    Update,
}

impl OnConflict {
    pub fn name(self) -> &'static str {
        match self {
            OnConflict::Error => "error",
            OnConflict::Skip => "skip",
            OnConflict::Update => "update",
        }
    }

    /// Refuses a mode `table` gives nothing to conflict on, the same on every engine: `unique`
    /// (it has a primary key or a unique index), and `primary`, for an engine whose update
    /// finds the row a row replaces by the primary key: whether the table has one (`None`
    /// where any unique key does).
    pub fn refuse_without_key(
        self,
        table: &str,
        unique: bool,
        primary: Option<bool>,
    ) -> crate::Result<()> {
        let mode = self.name();
        let refused = match self {
            OnConflict::Error => return Ok(()),
            _ if !unique => "no primary key or unique index for rows to conflict on",
            OnConflict::Update if primary == Some(false) => {
                "no primary key, which says which row a row replaces"
            }
            _ => return Ok(()),
        };
        Err(crate::Error::Usage(format!(
            "--on-conflict {mode}: {table} has {refused}"
        )))
    }
}

/// `--from-query`: rows streamed from a source server (PostgreSQL's `COPY (query) TO STDOUT`,
/// or another engine's result set as CSV).
#[derive(Debug, Clone)]
pub struct QuerySource {
    pub from: std::sync::Arc<dyn inrush_core::query::QueryServer>,
    pub sql: String,
    /// An integer column to cut the query into key ranges, one stream each.
    pub split_by: Option<String>,
}

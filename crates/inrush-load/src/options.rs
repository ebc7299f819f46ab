use inrush_postgres::ConnectOptions;
use inrush_read::csv::CsvOptions;
use inrush_read::inputs::InputFormat;

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
    pub target: ConnectOptions,
    /// As the user wrote it; resolved like SQL would (`orders`, `sales.orders`, `"Orders"`).
    pub table: String,
    pub csv: CsvOptions,
    /// Table columns the input's fields feed, in order; `None`: from the header, else all.
    pub columns: Option<Vec<String>>,
    /// Parse/encode threads.
    pub workers: usize,
    /// Parallel COPY connections.
    pub connections: usize,
    /// Target bytes of input per block (the unit of parallel work).
    pub block_size: usize,
    /// Load through text COPY even when binary is possible (for comparisons).
    pub force_text: bool,
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
    /// Set from outside (a signal handler) to stop the load: everything is rolled back.
    pub interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl LoadOptions {
    /// Defaults sized for this machine: one worker per core, up to four connections; one input.
    pub fn new(input: impl Into<String>, target: ConnectOptions, table: impl Into<String>) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        LoadOptions {
            inputs: vec![input.into()],
            format: None,
            from_query: None,
            target,
            table: table.into(),
            csv: CsvOptions::default(),
            columns: None,
            workers: cores,
            connections: cores.clamp(1, 4),
            block_size: 1 << 20,
            force_text: false,
            max_errors: 0,
            rejects: None,
            interrupt: Default::default(),
            check_only: false,
            truncate: false,
            create: false,
            create_types: Vec::new(),
            resume: false,
            on_conflict: OnConflict::Error,
            table_lock: false,
            plan: crate::PlanOptions::default(),
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
}

/// `--from-query`: rows streamed from a source server (`COPY (query) TO STDOUT`).
#[derive(Debug, Clone)]
pub struct QuerySource {
    pub from: ConnectOptions,
    pub sql: String,
    /// An integer column to cut the query into key ranges, one stream each.
    pub split_by: Option<String>,
}

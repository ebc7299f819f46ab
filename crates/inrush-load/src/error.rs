use inrush_core::Location;

/// Why a load did not complete. Every variant that concerns one row names where it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] inrush_read::Error),
    /// The target engine's driver failed (a connection, a statement, a key put back); its own
    /// error, whole, with the kind the engine gave it.
    #[error("{error}")]
    Driver {
        kind: Kind,
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server of `--from-query` could not be reached, or refused or failed the query.
    #[error(transparent)]
    Source(#[from] inrush_core::query::QueryError),
    /// A Parquet or Arrow input could not be read, or a column cannot take its Arrow type.
    #[error(transparent)]
    Arrow(#[from] inrush_arrow::Error),
    /// Options that cannot work together, or name what is not there (`--types` for a column
    /// the input does not have); refused before anything is changed.
    #[error("{0}")]
    Usage(String),
    /// The table the load names is not there (`place`: where it was looked for, as the engine
    /// says it: ` in database "d"`).
    #[error("table {table} does not exist{place} (--create makes it from the input)")]
    NoSuchTable { table: String, place: String },
    /// `--create` of a table that is there already.
    #[error("--create: table {table} exists already{place} (load into it without --create)")]
    TableExists { table: String, place: String },
    /// `--resume` found the input different from the one its ledger describes.
    #[error("--resume: {input} changed since its load began (then {then}; now {now}): load it without --resume into a table without its old rows, or restore the original file")]
    InputChanged {
        input: String,
        then: String,
        now: String,
    },
    /// The input does not fit the table (unknown header column, duplicate column...).
    #[error("{0}")]
    Columns(String),
    /// A row the client refused before sending it; nothing was committed.
    #[error("{location}: {reason}")]
    BadRow { location: Location, reason: String },
    /// The server refused a row during COPY (a constraint, a trigger...); nothing was committed.
    #[error("{}: {message}", location.as_ref().map_or_else(|| "server".to_string(), |l| l.to_string()))]
    ServerRefused {
        /// Boxed: the variant would otherwise make every `Result` of the crate 136 bytes.
        location: Option<Box<Location>>,
        message: String,
        sqlstate: Option<String>,
    },
    /// The commit window: some connections committed, others failed.
    #[error(
        "only {committed} of {connections} connections committed ({rows_committed} rows): {reason}"
    )]
    PartialCommit {
        committed: usize,
        connections: usize,
        rows_committed: u64,
        reason: String,
    },
    /// A COMMIT was sent and its answer never came back, and the server could not be asked in
    /// time whether it committed (see [`crate::commits`]): what the table holds is not known.
    /// `ask` is the query that tells, as the engine spells it.
    #[error("{}", commit_unknown_message(*unknown, *connections, *committed, *rows_committed, reason, ask, *rerun_asks))]
    CommitUnknown {
        unknown: usize,
        connections: usize,
        /// Connections known to have committed, and their rows.
        committed: usize,
        rows_committed: u64,
        reason: String,
        ask: String,
        /// The load recorded itself: a rerun asks the server first and loads nothing twice.
        rerun_asks: bool,
    },
    /// A distributed write's decision got no answer, and the server could not be asked
    /// whether it was taken.
    #[error("the decision of distributed write {job} got no answer ({reason}), and the server could not be reached to ask whether it was taken: its parts may or may not have landed. To find out: {ask}. Once the server answers, `inrush recover --to <the same target>` settles it either way: a decision that was taken is carried out, one that was not is rolled back")]
    DecisionUnknown {
        job: String,
        reason: String,
        ask: String,
    },
    /// More rows were refused than `--max-errors` allows; nothing was committed.
    #[error("more than {limit} rows refused (the last: {last}); nothing was committed")]
    TooManyRejects { limit: u64, last: String },
    #[error("reject file: {0}")]
    Rejects(String),
    /// Stopped from outside (Ctrl-C, SIGTERM) before committing: everything was rolled back.
    #[error("interrupted: the load was rolled back, nothing was committed")]
    Interrupted,
    /// Stopped from outside during a `--resume` load: the blocks it finished stay committed.
    #[error("interrupted: {rows} rows of this run are committed (with their ledger rows); run the same command again to load the rest")]
    InterruptedResumable { rows: u64 },
    /// Indexes dropped for the load could not be recreated. Their definitions stay in the DDL
    /// journal (`inrush.ddl_journal`) until `inrush recover` (or the next load) recreates them.
    #[error("{}indexes dropped for the load could not be recreated: {reason}; their definitions are kept in the DDL journal (PostgreSQL: inrush.ddl_journal, MariaDB: inrush_ddl_journal): run `inrush recover` to recreate them", load.as_ref().map_or(String::new(), |l| format!("{l}; and ")))]
    IndexesNotRestored {
        load: Option<String>,
        reason: String,
    },
    /// The load committed, then what it does after the commit (putting back what it dropped)
    /// failed. The rows stay: loading them again would put every row in twice. `left` names
    /// what is still dropped (kept in the DDL journal); `inrush recover`, or a rerun of the
    /// same load when `rerun_loads_nothing` (see [`crate::commits`]), puts it back.
    #[error("{}", unfinished_message(*rows, table, reason, left, recover.as_deref(), *rerun_loads_nothing))]
    Unfinished {
        rows: u64,
        table: String,
        reason: String,
        left: Vec<String>,
        /// The command that finishes the load, as the front end can spell it (the library
        /// does not know how the user wrote the target).
        recover: Option<String>,
        rerun_loads_nothing: bool,
    },
    /// A key put back after the load (a primary key or unique constraint built after it, a
    /// foreign key validated after it) does not hold for the input's rows: the load's rows
    /// were deleted again and every definition restored, valid as before.
    #[error("{constraint} of {table} does not hold for the input: {message}; the load was undone ({rows_undone} rows deleted again) and the table is as it was")]
    KeyViolated {
        constraint: String,
        table: String,
        message: String,
        rows_undone: u64,
    },
    /// Loaded rows name no row of the parent table through a foreign key that was checked once
    /// over the load's rows before the commit (instead of row by row): nothing was committed.
    #[error("foreign key {constraint} of {table} does not hold for the input: {examples} not present in {parent} (at most five shown); nothing was committed")]
    ForeignKeyBroken {
        constraint: String,
        table: String,
        parent: String,
        /// `(a, b)=(1, 2)`, for each example.
        examples: String,
    },
    /// Two connections of the load wait on each other (see `watch`): nothing was committed.
    #[error("connection {waiting} of {connections} waits for a row that connection {holding} of the same load wrote and has not committed (their transactions end together, so neither can finish): a key that occurs twice in the input while the table's unique index is kept, or a trigger that updates a shared row. Everything was rolled back. --max-errors sends each duplicate key to the reject file; --connections 1 loads in one transaction")]
    SelfBlocked {
        waiting: usize,
        holding: usize,
        connections: usize,
    },
    /// The `--from-query` runs on the target's server and waits on a lock the load holds (see
    /// `watch`): nothing was committed.
    #[error("the --from-query and connection {connection} of this load wait for each other's lock on the same server: the query reads a table the load locks (the target, under --truncate), so it cannot end before the load commits, nor the load before the query's last row. Everything was rolled back. Load into another table and rename it, or leave out --truncate")]
    QueryBlocked { connection: usize },
    /// A target engine other than PostgreSQL failed (opening the database, a statement).
    #[error("{engine}: {what}: {message}")]
    Engine {
        engine: &'static str,
        what: String,
        message: String,
        /// The server's own number for the error, where it gave one (MariaDB's `ER_*`): what
        /// an engine decides by, never the message's text.
        code: Option<u16>,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

fn unfinished_message(
    rows: u64,
    table: &str,
    reason: &str,
    left: &[String],
    recover: Option<&str>,
    rerun_loads_nothing: bool,
) -> String {
    let recover =
        recover.unwrap_or("inrush recover --to <the same target> --table <the same table>");
    let left = match left {
        [] => String::new(),
        left => format!(
            "; still dropped, kept in the DDL journal: {}",
            left.join(", ")
        ),
    };
    let rerun = match rerun_loads_nothing {
        true => "; a rerun of this same load finds its rows there, loads nothing again and puts back the rest",
        false => "; a rerun of this load WOULD load the rows again: its input (standard input, a query, a DataFrame) cannot be recognised when it comes again",
    };
    format!("the load committed {rows} rows into {table}: they stay, do not load them again. After the commit, putting back what the load dropped failed: {reason}{left}. To finish: {recover}{rerun}")
}

fn commit_unknown_message(
    unknown: usize,
    connections: usize,
    committed: usize,
    rows_committed: u64,
    reason: &str,
    ask: &str,
    rerun_asks: bool,
) -> String {
    let which = match connections {
        1 => "the load's COMMIT".to_string(),
        n => format!("the COMMIT of {unknown} of the load's {n} connections"),
    };
    let known = match committed {
        0 => String::new(),
        n => format!(" {n} other connection(s) committed ({rows_committed} rows)."),
    };
    let rerun = match rerun_asks {
        true => "Running the same load again asks the server first: it loads nothing if the rows are in, and loads them once if they are not",
        false => "Do not run the load again before that query says the transaction did not commit: its input (standard input, a query, a DataFrame, or a load the role could not record) cannot be recognised when it comes again",
    };
    format!("{which} got no answer ({reason}), and the server could not be reached to ask whether it committed: the table may or may not hold those rows.{known} To find out: {ask}. {rerun}")
}

/// What a failure means to the script that ran the load, whatever the engine: each kind is
/// one exit code (the table in docs/commits.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Anything not foreseen (1).
    Other,
    /// The command line: options that cannot work together, an input, a table or a column
    /// that is not there; nothing was changed (2).
    Usage,
    /// The server or the connection failed, or what was dropped could not be put back (3).
    Server,
    /// The input: rows refused by inrush or the engine; nothing was committed (4).
    BadInput,
    /// The commit window: some connections committed, others did not (5).
    PartialCommit,
    /// A foreign key put back after the load holds `NOT VALID`: the rows stay (7).
    KeyNotValid,
    /// Committed, then what the load dropped could not be put back (8).
    Unfinished,
    /// A COMMIT got no answer and the server could not be asked whether it committed (9).
    CommitUnknown,
    /// Stopped by a signal (130).
    Interrupted,
}

impl Kind {
    /// An input's failure: an input that is not there (or cannot be opened) is a mistake in
    /// the arguments; anything else in it is bad input.
    pub fn of_read(e: &inrush_read::Error) -> Kind {
        use inrush_read::Error as R;
        match e {
            R::Open { .. } | R::Inputs(_) | R::Options(_) => Kind::Usage,
            _ => Kind::BadInput,
        }
    }

    pub const fn exit_code(self) -> u8 {
        match self {
            Kind::Other => 1,
            Kind::Usage => 2,
            Kind::Server => 3,
            Kind::BadInput => 4,
            Kind::PartialCommit => 5,
            Kind::KeyNotValid => 7,
            Kind::Unfinished => 8,
            Kind::CommitUnknown => 9,
            Kind::Interrupted => 130,
        }
    }
}

impl Error {
    /// An engine driver's error, of `kind`.
    pub fn driver(kind: Kind, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Driver {
            kind,
            error: Box::new(error),
        }
    }

    /// The failure's kind: its exit code.
    pub fn kind(&self) -> Kind {
        use inrush_arrow::Error as A;
        match self {
            Error::Interrupted | Error::InterruptedResumable { .. } => Kind::Interrupted,
            Error::PartialCommit { .. } => Kind::PartialCommit,
            Error::Unfinished { .. } => Kind::Unfinished,
            Error::CommitUnknown { .. } | Error::DecisionUnknown { .. } => Kind::CommitUnknown,
            Error::Driver { kind, .. } => *kind,
            Error::Usage(_)
            | Error::NoSuchTable { .. }
            | Error::TableExists { .. }
            | Error::InputChanged { .. }
            // A query that reads what the load locks is a mistake in the arguments, found
            // only once both wait.
            | Error::QueryBlocked { .. }
            | Error::Arrow(A::Open { .. }) => Kind::Usage,
            Error::Read(e) => Kind::of_read(e),
            Error::BadRow { .. }
            | Error::TooManyRejects { .. }
            | Error::KeyViolated { .. }
            | Error::ForeignKeyBroken { .. }
            | Error::ServerRefused { .. }
            | Error::SelfBlocked { .. }
            | Error::Columns(_)
            | Error::Arrow(A::Incompatible { .. }) => Kind::BadInput,
            Error::Engine { .. } | Error::Source(_) | Error::IndexesNotRestored { .. } => {
                Kind::Server
            }
            Error::Arrow(_) | Error::Rejects(_) | Error::Internal(_) => Kind::Other,
        }
    }

    /// True when the input (not the environment) is at fault.
    pub fn is_bad_input(&self) -> bool {
        self.kind() == Kind::BadInput
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

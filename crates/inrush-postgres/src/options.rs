//! Connection settings read the way libpq reads them, so `--to` accepts what `psql` accepts.
//!
//! Precedence: the connection string, then `PG*` environment variables, then libpq's defaults;
//! a missing password is looked up in `PGPASSFILE` or `~/.pgpass`. `sslmode` takes `disable`,
//! `prefer` (the default) and `require` (encrypted, certificate not checked, as in libpq), plus
//! `verify-ca` and `verify-full` (certificate checked against `sslrootcert` or the system roots).
//!
//! A network that goes quiet must not hold a load forever: every TCP connection has
//! keepalives (idle 10 s, then every 5 s, 3 probes) and a user timeout of the network timeout
//! (30 s by default), unless the connection string sets its own; a connection attempt that gets
//! no answer within that timeout fails; and [`ConnectOptions::cut`] ends every connection made
//! from the same options at once (the load's watch does when the server stops answering it).

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::Config;

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    None,
    Ca,
    Full,
}

/// A resolved, connectable target.
#[derive(Clone)]
pub struct ConnectOptions {
    config: Config,
    verify: Verify,
    root_cert: Option<PathBuf>,
    /// Settings every session sets right after connecting (`SET name = 'value'`), so all the
    /// sessions of a load read text alike (`--datestyle`).
    settings: Vec<(&'static str, String)>,
    /// How long the server may leave a connection attempt, a look of the load's watch or a
    /// question about a lost COMMIT unanswered (`--network-timeout`).
    network_timeout: Duration,
    /// The connection string set `tcp_user_timeout` itself.
    own_user_timeout: bool,
    lifeline: Lifeline,
}

pub use inrush_load::NETWORK_TIMEOUT;

/// Shared by every clone of one [`ConnectOptions`]: once cut (with the reason), each of their
/// connections ends, so every statement waiting on a silent server returns an error at once.
#[derive(Clone)]
struct Lifeline(Arc<tokio::sync::watch::Sender<Option<String>>>);

impl Default for Lifeline {
    fn default() -> Self {
        Lifeline(Arc::new(tokio::sync::watch::Sender::new(None)))
    }
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.write_str(&self.describe())
    }
}

impl ConnectOptions {
    /// Parses a libpq URI (`postgresql://...`) or `key=value` string and fills the gaps from the
    /// environment the way libpq does.
    pub fn parse(conninfo: &str) -> Result<Self> {
        Self::parse_with_env(conninfo, &|k| std::env::var(k).ok())
    }

    fn parse_with_env(conninfo: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        // tokio-postgres knows disable/prefer/require; the verify modes are require plus checks.
        let (conninfo, mut verify) = strip_verify_modes(conninfo);
        let mut root_cert = extract_param(&conninfo, "sslrootcert").map(PathBuf::from);
        let conninfo = remove_param(&conninfo, "sslrootcert");
        let mut config = if conninfo.trim().is_empty() {
            Config::new()
        } else {
            Config::from_str(&conninfo).map_err(|e| Error::Config(e.to_string()))?
        };
        if config.get_hosts().is_empty() {
            match env("PGHOST") {
                Some(hosts) => {
                    for h in hosts.split(',') {
                        config.host(h);
                    }
                }
                None => {
                    config.host_path(default_socket_dir());
                }
            }
        }
        if config.get_ports().is_empty() {
            if let Some(port) = env("PGPORT").and_then(|p| p.parse().ok()) {
                config.port(port);
            }
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(os_user)
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE").or_else(|| config.get_user().map(str::to_string));
            if let Some(db) = db {
                config.dbname(&db);
            }
        }
        if config.get_password().is_none() {
            if let Some(pw) = env("PGPASSWORD") {
                config.password(pw);
            } else if let Some(pw) = pgpass_password(&config, env) {
                config.password(pw);
            }
        }
        if !conninfo.contains("sslmode") {
            match env("PGSSLMODE").as_deref() {
                Some("disable") => {
                    config.ssl_mode(SslMode::Disable);
                }
                Some("require") => {
                    config.ssl_mode(SslMode::Require);
                }
                Some("verify-ca") => {
                    config.ssl_mode(SslMode::Require);
                    verify = Verify::Ca;
                }
                Some("verify-full") => {
                    config.ssl_mode(SslMode::Require);
                    verify = Verify::Full;
                }
                _ => {}
            }
        }
        if root_cert.is_none() {
            root_cert = env("PGSSLROOTCERT").map(PathBuf::from);
        }
        if config.get_connect_timeout().is_none() {
            if let Some(secs) = env("PGCONNECT_TIMEOUT").and_then(|s| s.parse().ok()) {
                config.connect_timeout(std::time::Duration::from_secs(secs));
            }
        }
        if config.get_application_name().is_none() {
            config.application_name("inrush");
        }
        // The operating system's keepalive starts after two idle hours: far too late.
        if !conninfo.contains("keepalives_idle") {
            config.keepalives_idle(Duration::from_secs(10));
        }
        if !conninfo.contains("keepalives_interval") {
            config.keepalives_interval(Duration::from_secs(5));
        }
        if !conninfo.contains("keepalives_count") && !conninfo.contains("keepalives_retries") {
            config.keepalives_retries(3);
        }
        let own_user_timeout = conninfo.contains("tcp_user_timeout");
        if !own_user_timeout {
            config.tcp_user_timeout(NETWORK_TIMEOUT);
        }
        Ok(ConnectOptions {
            config,
            verify,
            root_cert,
            settings: Vec::new(),
            network_timeout: NETWORK_TIMEOUT,
            own_user_timeout,
            lifeline: Lifeline::default(),
        })
    }

    /// The same target with another network timeout (see the module's comment).
    pub fn with_network_timeout(&self, timeout: Duration) -> Self {
        let mut other = self.clone();
        other.network_timeout = timeout;
        if !other.own_user_timeout {
            other.config.tcp_user_timeout(timeout);
        }
        other
    }

    pub fn network_timeout(&self) -> Duration {
        self.network_timeout
    }

    /// Ends every connection made from these options (and their clones) now, and says why in
    /// what [`ConnectOptions::cut_because`] returns afterwards.
    pub fn cut(&self, why: String) {
        self.lifeline.0.send_replace(Some(why));
    }

    /// The same target, with connections of its own that a [`ConnectOptions::cut`] of these
    /// does not end (to ask the server about a COMMIT after the load's connections were cut).
    pub fn apart(&self) -> Self {
        let mut other = self.clone();
        other.lifeline = Lifeline::default();
        other
    }

    /// Why the connections were cut, if they were.
    pub fn cut_because(&self) -> Option<String> {
        self.lifeline.0.borrow().clone()
    }

    /// `user@host:port/dbname`, for messages. Never includes the password.
    pub fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "?".into(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}@{}:{}/{}",
            self.config.get_user().unwrap_or("?"),
            host,
            port,
            self.config.get_dbname().unwrap_or("?")
        )
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The same server, another database (tests and the demo make their own).
    pub fn with_dbname(&self, dbname: &str) -> Self {
        let mut other = self.clone();
        other.config.dbname(dbname);
        other
    }

    /// The same target, every session of which runs `SET name = 'value'` first. A SET rather
    /// than the startup packet's `options`, which connection poolers refuse.
    pub fn with_setting(&self, name: &'static str, value: &str) -> Self {
        let mut other = self.clone();
        other.settings.push((name, value.to_string()));
        other
    }

    /// The SET statements of [`ConnectOptions::with_setting`], as one batch.
    fn settings_sql(&self) -> Option<String> {
        (!self.settings.is_empty()).then(|| {
            self.settings
                .iter()
                .map(|(name, value)| format!("SET {name} = '{}';", value.replace('\'', "''")))
                .collect()
        })
    }

    /// Whether a connection may use TLS at all: never over Unix sockets or with sslmode=disable.
    fn may_use_tls(&self) -> bool {
        self.config.get_ssl_mode() != SslMode::Disable
            && self
                .config
                .get_hosts()
                .iter()
                .any(|h| matches!(h, Host::Tcp(_)))
    }

    /// The connector for this verification and root certificate, made once per process:
    /// native-tls reads the system's certificate bundle for every connector, twice, even when
    /// no root is used (about 50 ms of CPU here), and a load onto shards connects to several
    /// servers, each with its own options.
    fn tls(&self) -> Result<postgres_native_tls::MakeTlsConnector> {
        type Made = (
            (Verify, Option<PathBuf>),
            postgres_native_tls::MakeTlsConnector,
        );
        static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());
        let key = (self.verify, self.root_cert.clone());
        // Held while a connector is made, so concurrent connections make it once.
        let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, tls)) = made.iter().find(|(k, _)| *k == key) {
            return Ok(tls.clone());
        }
        let mut builder = native_tls::TlsConnector::builder();
        match self.verify {
            Verify::None => {
                // Nothing is checked (libpq's prefer/require).
                builder
                    .danger_accept_invalid_certs(true)
                    .danger_accept_invalid_hostnames(true)
                    .disable_built_in_roots(true);
            }
            Verify::Ca => {
                builder.danger_accept_invalid_hostnames(true);
            }
            Verify::Full => {}
        }
        if let Some(path) = &self.root_cert {
            let pem = std::fs::read(path).map_err(|cause| Error::Io {
                context: format!("sslrootcert {}", path.display()),
                cause,
            })?;
            let cert = native_tls::Certificate::from_pem(&pem)
                .map_err(|e| Error::Config(format!("sslrootcert: {e}")))?;
            builder.add_root_certificate(cert);
        }
        let connector = builder
            .build()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        let tls = postgres_native_tls::MakeTlsConnector::new(connector);
        made.push((key, tls.clone()));
        Ok(tls)
    }

    /// Connects on the current tokio runtime; the connection task is spawned onto it. An
    /// attempt the server leaves unanswered for the network timeout fails.
    pub async fn connect(&self) -> Result<tokio_postgres::Client> {
        match tokio::time::timeout(self.network_timeout, self.connect_now()).await {
            Ok(connected) => connected,
            Err(_) => Err(Error::Network(format!(
                "cannot connect to {}: no answer in {} s (--network-timeout)",
                self.describe(),
                self.network_timeout.as_secs()
            ))),
        }
    }

    async fn connect_now(&self) -> Result<tokio_postgres::Client> {
        let fail = |cause| Error::Connect {
            target: self.describe(),
            cause,
        };
        let lifeline = self.lifeline.0.subscribe();
        let client = if self.may_use_tls() {
            let (client, connection) = self.config.connect(self.tls()?).await.map_err(fail)?;
            spawn_connection(connection, lifeline);
            client
        } else {
            let (client, connection) = self
                .config
                .connect(tokio_postgres::NoTls)
                .await
                .map_err(fail)?;
            spawn_connection(connection, lifeline);
            client
        };
        if let Some(sql) = self.settings_sql() {
            client
                .batch_execute(&sql)
                .await
                .map_err(crate::query_error(sql.as_str()))?;
        }
        Ok(client)
    }

    /// Asks the server to cancel what the session behind `token` is running (a COPY, a lock
    /// wait, a VACUUM); best effort, over a new connection as the protocol wants.
    pub async fn cancel(&self, token: &tokio_postgres::CancelToken) -> Result<()> {
        let fail = |source| Error::Connect {
            target: self.describe(),
            cause: source,
        };
        match self.may_use_tls() {
            true => token.cancel_query(self.tls()?).await.map_err(fail),
            false => token
                .cancel_query(tokio_postgres::NoTls)
                .await
                .map_err(fail),
        }
    }

    /// [`ConnectOptions::cancel`] for a blocking connection's statement.
    pub fn cancel_blocking(&self, token: &postgres::CancelToken) -> Result<()> {
        let fail = |source| Error::Connect {
            target: self.describe(),
            cause: source,
        };
        match self.may_use_tls() {
            true => token.cancel_query(self.tls()?).map_err(fail),
            false => token.cancel_query(postgres::NoTls).map_err(fail),
        }
    }

    /// A blocking connection (for threads outside the runtime, e.g. the value resolver).
    pub fn connect_blocking(&self) -> Result<postgres::Client> {
        let config = postgres::Config::from(self.config.clone());
        let connected = if self.may_use_tls() {
            config.connect(self.tls()?)
        } else {
            config.connect(postgres::NoTls)
        };
        let mut client = connected.map_err(|cause| Error::Connect {
            target: self.describe(),
            cause,
        })?;
        if let Some(sql) = self.settings_sql() {
            client
                .batch_execute(&sql)
                .map_err(crate::query_error(sql.as_str()))?;
        }
        Ok(client)
    }
}

impl ConnectOptions {
    /// Runs SQL statements on a short-lived blocking connection (setup work: the demo, tests).
    pub fn execute_blocking(&self, sql: &str) -> Result<()> {
        let mut client = self.connect_blocking()?;
        client.batch_execute(sql).map_err(|cause| Error::Query {
            what: sql.chars().take(80).collect(),
            cause,
        })
    }

    /// The first column of the first row of `sql`, as text (`NULL` as `None`).
    pub fn query_text_blocking(&self, sql: &str) -> Result<Option<String>> {
        let mut client = self.connect_blocking()?;
        let rows = client.simple_query(sql).map_err(|cause| Error::Query {
            what: sql.chars().take(80).collect(),
            cause,
        })?;
        Ok(rows
            .iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).map(str::to_string)),
                _ => None,
            })
            .flatten())
    }
}

/// Drives `connection` until it closes or `lifeline` is cut; dropped then, it closes, and every
/// statement its client waits on fails at once.
fn spawn_connection<S, T>(
    connection: tokio_postgres::Connection<S, T>,
    mut lifeline: tokio::sync::watch::Receiver<Option<String>>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Options dropped (a sender gone) cut nothing: only a cut does.
    let cut = async move {
        if lifeline.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::spawn(async move {
        tokio::select! {
            closed = connection => if let Err(e) = closed {
                tracing::debug!("connection closed: {e}");
            },
            () = cut => tracing::debug!("connection cut"),
        }
    });
}

fn strip_verify_modes(conninfo: &str) -> (String, Verify) {
    for (mode, verify) in [("verify-full", Verify::Full), ("verify-ca", Verify::Ca)] {
        let needle = format!("sslmode={mode}");
        if conninfo.contains(&needle) {
            return (conninfo.replace(&needle, "sslmode=require"), verify);
        }
    }
    (conninfo.to_string(), Verify::None)
}

/// The value of `key` in a URI query or key=value string (values without spaces or quotes).
fn extract_param(conninfo: &str, key: &str) -> Option<String> {
    conninfo
        .split(|c: char| c == '?' || c == '&' || c.is_whitespace())
        .find_map(|part| {
            part.strip_prefix(key)?
                .strip_prefix('=')
                .map(str::to_string)
        })
}

fn remove_param(conninfo: &str, key: &str) -> String {
    let Some(value) = extract_param(conninfo, key) else {
        return conninfo.to_string();
    };
    let pair = format!("{key}={value}");
    let without = conninfo
        .replace(&format!("&{pair}"), "")
        .replace(&format!("{pair}&"), "")
        .replace(&pair, "");
    without.trim_end_matches('?').to_string()
}

/// libpq's default: the Unix socket directory, which differs between builds.
fn default_socket_dir() -> PathBuf {
    for dir in ["/var/run/postgresql", "/run/postgresql", "/tmp"] {
        if Path::new(dir).is_dir() {
            return PathBuf::from(dir);
        }
    }
    PathBuf::from("/tmp")
}

fn os_user() -> Option<String> {
    std::env::var("USER").ok().or_else(|| {
        // SAFETY: getpwuid returns a pointer to static storage or null; read before any other call.
        unsafe {
            let pw = libc::getpwuid(libc::geteuid());
            if pw.is_null() {
                return None;
            }
            Some(
                std::ffi::CStr::from_ptr((*pw).pw_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    })
}

/// Looks the password up in the password file like libpq (`hostname:port:database:username:password`,
/// `*` matches anything, `localhost` matches Unix sockets, `\` escapes `:` and `\`).
fn pgpass_password(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let path = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                "password file {} has group or world access; ignored (as libpq does)",
                path.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass_line(line);
            if fields.len() < 5 {
                return None;
            }
            let matches = wanted
                .iter()
                .zip(&fields)
                .all(|(want, have)| have == "*" || have == want);
            matches.then(|| fields[4..].join(":"))
        })
}

fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(f)) = (chars.next(), fields.last_mut()) {
                    f.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(conninfo: &str, env: &[(&str, &str)]) -> ConnectOptions {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConnectOptions::parse_with_env(conninfo, &|k| env.get(k).cloned()).unwrap()
    }

    #[test]
    fn uri_and_keyword_forms() {
        let a = parse(
            "postgresql://alice:secret@db.example:6543/sales?sslmode=disable",
            &[],
        );
        assert_eq!(a.describe(), "alice@db.example:6543/sales");
        let b = parse("host=/tmp/sock port=5433 user=bob dbname=x", &[]);
        assert_eq!(b.describe(), "bob@/tmp/sock:5433/x");
    }

    #[test]
    fn environment_fills_the_gaps() {
        let o = parse(
            "",
            &[
                ("PGHOST", "h1"),
                ("PGPORT", "7000"),
                ("PGUSER", "u"),
                ("PGDATABASE", "d"),
                ("PGPASSWORD", "pw"),
            ],
        );
        assert_eq!(o.describe(), "u@h1:7000/d");
        assert_eq!(o.config().get_password(), Some(&b"pw"[..]));
        let explicit = parse("host=h2 user=v", &[("PGHOST", "h1"), ("PGUSER", "u")]);
        assert_eq!(explicit.describe(), "v@h2:5432/v");
    }

    #[test]
    fn password_never_in_description_or_debug() {
        let o = parse("postgresql://alice:hunter2@h/db", &[]);
        assert!(!o.describe().contains("hunter2"));
        assert!(!format!("{o:?}").contains("hunter2"));
    }

    #[test]
    fn verify_modes_become_require_with_checks() {
        let o = parse(
            "host=h user=u sslmode=verify-full sslrootcert=/x/root.pem",
            &[],
        );
        assert_eq!(o.config().get_ssl_mode(), SslMode::Require);
        assert_eq!(o.verify, Verify::Full);
        assert_eq!(o.root_cert.as_deref(), Some(Path::new("/x/root.pem")));
        let env_mode = parse("host=h user=u", &[("PGSSLMODE", "require")]);
        assert_eq!(env_mode.config().get_ssl_mode(), SslMode::Require);
    }

    #[test]
    fn pgpass_lookup_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:*:*:*:nope\nh:5432:*:u:pa\\:ss:word\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let o = parse(
            "host=h user=u dbname=d",
            &[("PGPASSFILE", file.to_str().unwrap())],
        );
        assert_eq!(o.config().get_password(), Some(&b"pa:ss:word"[..]));
    }
}

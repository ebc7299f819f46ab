//! Which MariaDB or MySQL server a `--to` names, and how to reach it.
//!
//! `mysql://user:password@host:port/database` or `mariadb://...`, with `?socket=/path` for a
//! Unix socket and `?ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY` as the
//! `mysql` client spells it. PREFERRED, the default, encrypts when the server offers TLS and
//! goes on without it when the server has none, checking no certificate (as the `mysql` client
//! does); REQUIRED insists on TLS without checking the certificate, VERIFY_CA checks it against
//! `?ssl-ca=PATH` (else the system's roots), VERIFY_IDENTITY also checks the host name, and
//! REQUIRED with `ssl-ca` is VERIFY_CA, as for the `mysql` client. A password missing from the
//! URL comes from `MYSQL_PWD`, then from the `[client]` section of `~/.my.cnf`, as for the
//! `mysql` client. The password is never printed.

use inrush_core::secret::masked;
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use mysql_async::{Opts, OptsBuilder, SslOpts};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A server and database to load into.
#[derive(Clone)]
pub struct MysqlOptions {
    opts: Opts,
    /// PREFERRED's way in when the server offers no TLS: the same options without it.
    plain: Option<Opts>,
    /// Shared by every clone: the server said it has no TLS, so [`MysqlOptions::open`] goes
    /// straight to `plain` (one refused handshake per load, not one per connection).
    no_tls: Arc<AtomicBool>,
    /// The URL without its password, for messages.
    shown: String,
    /// Shared by every clone: once cut (with the reason), whatever a load waits on this server
    /// for through [`MysqlOptions::run`] ends (see [`inrush_load::pulse`]).
    lifeline: Arc<tokio::sync::watch::Sender<Option<String>>>,
    /// How long a coordinator's step waits on a silent server (a load's own limit is
    /// `LoadOptions::network_timeout`).
    network_timeout: Duration,
}

impl std::fmt::Debug for MysqlOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Whether `to` names a MariaDB or MySQL server.
pub fn is_mysql_url(to: &str) -> bool {
    to.starts_with("mysql://") || to.starts_with("mariadb://")
}

impl MysqlOptions {
    /// The server `--to` names.
    pub fn parse(to: &str) -> Result<MysqlOptions> {
        Self::parse_option("--to", to)
    }

    /// The server the option `flag` (`--to`, `--from`) names.
    pub fn parse_option(flag: &str, to: &str) -> Result<MysqlOptions> {
        let usage = |why: String| Error::Usage(format!("{flag} {}: {why}", masked(to)));
        let rest = to
            .strip_prefix("mysql://")
            .or_else(|| to.strip_prefix("mariadb://"))
            .ok_or_else(|| usage("not a mysql:// or mariadb:// URL".into()))?;
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut params = Vec::new();
        let mut ssl_mode = "PREFERRED".to_string();
        let mut ssl_ca = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "ssl-mode" | "ssl_mode" | "sslmode" => ssl_mode = value.to_ascii_uppercase(),
                "ssl-ca" | "ssl_ca" => ssl_ca = Some(root_certificate(value).map_err(usage)?),
                "socket" => params.push(format!("socket={value}")),
                other => {
                    return Err(usage(format!(
                        "unknown parameter {other:?} (known: socket, ssl-mode, ssl-ca)"
                    )))
                }
            }
        }
        let path_db = base.split_once('/').map(|(_, db)| db).unwrap_or("");
        if path_db.is_empty() {
            return Err(usage(
                "name the database: mysql://user@host/DATABASE".into(),
            ));
        }
        let url = match params.is_empty() {
            true => format!("mysql://{base}"),
            false => format!("mysql://{base}?{}", params.join("&")),
        };
        let opts = Opts::from_url(&url).map_err(|e| usage(e.to_string()))?;
        // The driver would move a connection to a loopback host onto the server's own Unix
        // socket (`SELECT @@socket`, looked up on this machine): through a tunnel or a proxy on
        // a local port that is another server's socket, or none. The URL's host and port are
        // where the rows go; `?socket=` asks for a socket. Keepalives every 10 s notice a
        // server that went away (the operating system's own start after two idle hours).
        let mut builder = OptsBuilder::from_opts(opts)
            .prefer_socket(false)
            .tcp_keepalive(Some(10_000u32));
        let has_password = base
            .split_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'));
        if !has_password {
            if let Some(password) = std::env::var("MYSQL_PWD")
                .ok()
                .or_else(option_file_password)
            {
                builder = builder.pass(Some(password));
            }
        }
        let tls = tls(&ssl_mode, ssl_ca).map_err(usage)?;
        // Every session of a load reads and writes UTF-8 and refuses what strict mode refuses.
        builder = builder.setup(vec![
            "SET NAMES utf8mb4",
            "SET SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, 'STRICT_ALL_TABLES')",
        ]);
        let plain = (ssl_mode == "PREFERRED").then(|| builder.clone().ssl_opts(None).into());
        Ok(MysqlOptions {
            opts: builder.ssl_opts(tls).into(),
            plain,
            no_tls: Arc::new(AtomicBool::new(false)),
            shown: masked(to),
            lifeline: Arc::new(tokio::sync::watch::Sender::new(None)),
            network_timeout: inrush_load::NETWORK_TIMEOUT,
        })
    }

    /// Runs `work` on `runtime` to its end, or until the load's watch cuts this server: then
    /// `work` is dropped (its connections close) and the reason is the error.
    pub(crate) fn run<T>(
        &self,
        runtime: &tokio::runtime::Runtime,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let mut cut = self.lifeline.subscribe();
        runtime.block_on(async {
            tokio::select! {
                done = work => done,
                _ = cut.wait_for(Option::is_some) => Err(Error::Engine {
                    engine: "MariaDB",
                    what: self.cut_because().unwrap_or_default(),
                    message: "the statement waited on it was abandoned".into(),
                    code: None,
                }),
            }
        })
    }

    /// Ends every wait of [`MysqlOptions::run`] on this server (and its clones), now and later.
    pub fn cut(&self, why: String) {
        self.lifeline.send_replace(Some(why));
    }

    /// Why the server was cut, if it was.
    pub fn cut_because(&self) -> Option<String> {
        self.lifeline.borrow().clone()
    }

    /// One look of the load's watch (see [`inrush_load::pulse`]) over a connection of its own,
    /// kept from one look to the next, waiting at most `within`: whether the server answered.
    pub(crate) fn look(
        &self,
        rt: &tokio::runtime::Runtime,
        conn: &mut Option<Conn>,
        within: Duration,
    ) -> bool {
        let answered = rt.block_on(async {
            // An error the server sends (too many connections, say) is an answer too.
            let look = async {
                if conn.is_none() {
                    match self.open().await {
                        Ok(new) => *conn = Some(new),
                        Err(mysql_async::Error::Server(_)) => return Some(()),
                        Err(_) => return None,
                    }
                }
                match conn.as_mut()?.query_drop("SELECT 1").await {
                    Ok(()) | Err(mysql_async::Error::Server(_)) => Some(()),
                    Err(_) => None,
                }
            };
            tokio::time::timeout(within, look).await
        });
        let answered = matches!(answered, Ok(Some(())));
        if !answered {
            // No answer, or a connection that broke: a new one for the next look.
            *conn = None;
        }
        answered
    }

    /// How long the server may leave a distributed write's step unanswered.
    pub fn network_timeout(&self) -> Duration {
        self.network_timeout
    }

    /// The same server, given `limit` to answer.
    pub fn with_network_timeout(&self, limit: Duration) -> MysqlOptions {
        MysqlOptions {
            network_timeout: limit,
            ..self.clone()
        }
    }

    /// The database the load goes into.
    pub fn database(&self) -> &str {
        self.opts.db_name().unwrap_or_default()
    }

    /// The URL as given, without its password.
    pub fn describe(&self) -> &str {
        &self.shown
    }

    /// A new connection, encrypted as `ssl-mode` says; PREFERRED without TLS when the server's
    /// handshake offers none (the driver itself would refuse it).
    async fn open(&self) -> std::result::Result<Conn, mysql_async::Error> {
        use mysql_async::{DriverError::NoClientSslFlagFromServer, Error::Driver};
        if let (Some(plain), true) = (&self.plain, self.no_tls.load(Ordering::Relaxed)) {
            return Conn::new(plain.clone()).await;
        }
        match (Conn::new(self.opts.clone()).await, &self.plain) {
            (Err(Driver(NoClientSslFlagFromServer)), Some(plain)) => {
                self.no_tls.store(true, Ordering::Relaxed);
                Conn::new(plain.clone()).await
            }
            (done, _) => done,
        }
    }

    pub(crate) async fn connect(&self) -> Result<mysql_async::Conn> {
        self.open().await.map_err(|e| Error::Engine {
            engine: "MariaDB",
            what: format!("connecting to {}", self.shown),
            code: crate::server_code(&e),
            message: e.to_string(),
        })
    }
}

/// What `ssl-mode` asks of TLS; `None` for none. PREFERRED and REQUIRED accept any
/// certificate (they guard against listening, not against a server in the middle), unless a
/// root is named, which makes REQUIRED check it as VERIFY_CA does.
fn tls(mode: &str, root: Option<Vec<u8>>) -> std::result::Result<Option<SslOpts>, String> {
    let roots = |opts: SslOpts| match &root {
        Some(pem) => opts.with_root_certs(vec![pem.clone().into()]),
        None => opts,
    };
    let unchecked = SslOpts::default()
        .with_danger_accept_invalid_certs(true)
        .with_danger_skip_domain_validation(true);
    let any_host = roots(SslOpts::default().with_danger_skip_domain_validation(true));
    Ok(match (mode, &root) {
        ("DISABLED", _) => None,
        ("PREFERRED", _) | ("REQUIRED", None) => Some(unchecked),
        ("REQUIRED", Some(_)) | ("VERIFY_CA", _) => Some(any_host),
        ("VERIFY_IDENTITY", _) => Some(roots(SslOpts::default())),
        (other, _) => {
            return Err(format!(
                "ssl-mode {other:?}: DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
            ))
        }
    })
}

/// The certificate `ssl-ca` names, read now so that a wrong path is a usage error, not a failed
/// handshake on every connection.
fn root_certificate(path: &str) -> std::result::Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("ssl-ca {path:?}: {e}"))
}

/// `password=` in the `[client]` section of `~/.my.cnf`.
fn option_file_password() -> Option<String> {
    let home = std::env::var_os("HOME")?;
    let text = std::fs::read_to_string(std::path::Path::new(&home).join(".my.cnf")).ok()?;
    let mut in_client = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_client = line == "[client]";
        } else if in_client {
            if let Some((key, value)) = line.split_once('=') {
                if key.trim() == "password" {
                    return Some(value.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_passwords_stay_hidden() {
        let o = MysqlOptions::parse("mariadb://app:s3cret@127.0.0.1:3399/shop?ssl-mode=disabled")
            .unwrap();
        assert_eq!(o.database(), "shop");
        assert_eq!(
            o.describe(),
            "mariadb://app:***@127.0.0.1:3399/shop?ssl-mode=disabled"
        );
        assert!(!format!("{o:?}").contains("s3cret"));
        assert!(is_mysql_url("mysql://h/d") && !is_mysql_url("postgresql://h/d"));
        let err = MysqlOptions::parse("mysql://app:pw@h")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("name the database") && !err.contains("pw@"),
            "{err}"
        );
        let err = MysqlOptions::parse("mysql://h/d?ssl-mode=sometimes")
            .unwrap_err()
            .to_string();
        assert!(err.contains("VERIFY_IDENTITY"), "{err}");
    }

    #[test]
    fn each_ssl_mode_asks_tls_for_what_it_promises() {
        let checks = |mode: &str, root: Option<Vec<u8>>| {
            tls(mode, root).unwrap().map(|o| {
                let checked = !o.accept_invalid_certs();
                (checked, checked && !o.skip_domain_validation())
            })
        };
        let pem = || Some(b"-----BEGIN CERTIFICATE-----".to_vec());
        assert_eq!(checks("DISABLED", None), None);
        assert_eq!(checks("PREFERRED", None), Some((false, false)));
        assert_eq!(checks("REQUIRED", None), Some((false, false)));
        assert_eq!(checks("REQUIRED", pem()), Some((true, false)));
        assert_eq!(checks("VERIFY_CA", None), Some((true, false)));
        assert_eq!(checks("VERIFY_IDENTITY", pem()), Some((true, true)));
        let plain = MysqlOptions::parse("mysql://h/d").unwrap();
        assert!(plain.plain.is_some(), "PREFERRED can go on without TLS");
        let required = MysqlOptions::parse("mysql://h/d?ssl-mode=required").unwrap();
        assert!(required.plain.is_none(), "REQUIRED never goes without it");
        let err = MysqlOptions::parse("mysql://u:pw@h/d?ssl-ca=/nowhere.pem")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/nowhere.pem") && !err.contains("pw@"),
            "{err}"
        );
    }
}

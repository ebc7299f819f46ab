//! `--to odbc:` connection strings for the tests' own databases, through Debian's drivers.

/// psqlODBC's, from a libpq `host= port= user= dbname=` conninfo.
pub fn psqlodbc(conninfo: &str) -> String {
    let mut to = String::from("odbc:Driver={PostgreSQL Unicode};");
    for pair in conninfo.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let key = match key {
            "host" => "Server",
            "port" => "Port",
            "user" => "Uid",
            "dbname" => "Database",
            "password" => "Pwd",
            _ => continue,
        };
        to.push_str(&format!("{key}={value};"));
    }
    to
}

/// MariaDB Connector/ODBC's, from a `mysql://user:password@host:port/database` URL.
pub fn mariadb_odbc(url: &str) -> String {
    let (_, rest) = url.split_once("://").unwrap();
    let (login, rest) = rest.split_once('@').unwrap();
    let (user, password) = login.split_once(':').unwrap();
    let (address, database) = rest.split_once('/').unwrap();
    let (host, port) = address.split_once(':').unwrap();
    format!(
        "odbc:Driver={{MariaDB Unicode}};Server={host};Port={port};Database={database};User={user};Password={password};"
    )
}

/// SQLite's driver's, for the database file at `path`.
pub fn sqlite_odbc(path: &std::path::Path) -> String {
    format!("odbc:Driver={{SQLite3}};Database={};", path.display())
}

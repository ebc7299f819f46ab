//! What the plan tells a user of each database about loads through ODBC: the statistics
//! command to run after it, the database's own bulk path where it is faster than any INSERT,
//! and how to build an index once after a large load. Advice only: inrush runs none of it,
//! and the servers it names are not tested here.

use crate::catalog::Index;
use crate::driver::Dbms;
use inrush_core::catalog::IndexInfo;

/// The plan's notes for a load into `table` (quoted) of the database the driver calls `dbms`.
pub(crate) fn notes(dbms: &str, table: &str) -> Vec<String> {
    let kind = Dbms::of(dbms);
    let statistics = match kind {
        Dbms::PostgreSql => format!("ANALYZE {table}"),
        Dbms::MariaDb => format!("ANALYZE TABLE {table}"),
        Dbms::Sqlite => "ANALYZE".to_string(),
        Dbms::SqlServer => format!("UPDATE STATISTICS {table}"),
        Dbms::Db2 => format!("RUNSTATS ON TABLE {table} AND INDEXES ALL"),
        Dbms::Oracle => "DBMS_STATS.GATHER_TABLE_STATS".to_string(),
        Dbms::Other => format!("{dbms}'s own statistics command"),
    };
    let mut notes = vec![format!(
        "no statistics are taken over ODBC: after a large load, run {statistics}"
    )];
    notes.extend(bulk_path(kind).map(str::to_string));
    notes
}

/// Where the database has a bulk path faster than INSERTs of parameter arrays, what it is and
/// what it asks of the table.
fn bulk_path(kind: Dbms) -> Option<&'static str> {
    match kind {
        Dbms::SqlServer => Some(
            "SQL Server logs every row of these INSERTs; its minimally logged path is bcp or \
             BULK INSERT with TABLOCK into a heap or an empty table under the SIMPLE or \
             BULK_LOGGED recovery model. Parallel BULK INSERTs with TABLOCK into a heap run \
             side by side; into a table with a clustered index the first lock blocks the rest",
        ),
        Dbms::Db2 => Some(
            "DB2 logs every row of these INSERTs; its own bulk path is LOAD (LOAD FROM CURSOR \
             from another table). ALTER TABLE ... ACTIVATE NOT LOGGED INITIALLY stops logging \
             for the unit of work, but a failure then leaves the table to be dropped, and the \
             commit writes every new page, which has made loads slower",
        ),
        Dbms::Oracle => Some(
            "Oracle writes redo for every row of these conventional INSERTs; a direct-path \
             INSERT /*+ APPEND_VALUES */ into a NOLOGGING table writes above the high-water \
             mark with little redo. With blocks under 8 kB Oracle has been seen to run array \
             DML row by row without saying so: if V$MYSTAT's 'redo entries' for the load come \
             close to its row count, it did",
        ),
        _ => None,
    }
}

/// The plan's rule for the indexes: all kept, since over ODBC inrush changes no definition;
/// on the databases inrush has a target of its own for, where that target rebuilds them.
pub(crate) fn indexes_rule(kind: Dbms, table: &str) -> String {
    let kept = format!(
        "indexes and keys are kept: over ODBC inrush changes none of {table}'s definitions"
    );
    let own = match kind {
        Dbms::PostgreSql => "--to postgresql://...",
        Dbms::MariaDb => "--to mysql://...",
        Dbms::Sqlite => "--to FILE.db",
        _ => return kept,
    };
    format!("{kept}; loaded through inrush's own target ({own}), a large load's secondary indexes are dropped and built once after it")
}

/// What the plan says of an index the driver lists (`quote` delimits its names): kept, and
/// on SQL Server, Oracle and DB2 how a secondary one can be built once after a large load.
pub(crate) fn index(
    kind: Dbms,
    table: &str,
    quote: impl Fn(&str) -> String,
    listed: &Index,
) -> IndexInfo {
    let name = quote(&listed.name);
    const KEPT: &str = "kept (inrush runs no DDL over ODBC); to build it once after a large load";
    let stays = match kind {
        Dbms::SqlServer if listed.clustered => {
            "kept: a clustered index holds the table's rows (disabled, it leaves the table unreadable)".to_string()
        }
        Dbms::SqlServer | Dbms::Oracle if listed.unique => {
            "kept: it enforces uniqueness during the load".to_string()
        }
        Dbms::SqlServer => format!(
            "{KEPT}, ALTER INDEX {name} ON {table} DISABLE before it and ALTER INDEX {name} ON {table} REBUILD after"
        ),
        Dbms::Oracle => {
            // Oracle's index names belong to a schema, not to the table.
            let index = match &listed.qualifier {
                Some(schema) => format!("{}.{name}", quote(schema)),
                None => name,
            };
            format!(
                "{KEPT}, ALTER INDEX {index} UNUSABLE before it (inserts then leave it alone while SKIP_UNUSABLE_INDEXES is TRUE, the default) and ALTER INDEX {index} REBUILD after"
            )
        }
        Dbms::Db2 => "kept (inrush runs no DDL over ODBC); DB2's LOAD utility builds every index once after its rows (INDEXING MODE REBUILD)".to_string(),
        _ => "kept: over ODBC inrush changes no definition".to_string(),
    };
    IndexInfo {
        name: listed.name.clone(),
        unique: listed.unique,
        stays: Some(stays),
        ..IndexInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_is_told_its_own_statistics_command() {
        assert!(notes("PostgreSQL", "\"t\"")[0].ends_with("run ANALYZE \"t\""));
        assert!(notes("MariaDB", "`t`")[0].ends_with("run ANALYZE TABLE `t`"));
        assert!(notes("Microsoft SQL Server", "\"t\"")[0].ends_with("UPDATE STATISTICS \"t\""));
        assert!(notes("DB2/LINUXX8664", "\"T\"")[0].contains("RUNSTATS ON TABLE \"T\""));
        assert!(notes("Firebird", "\"t\"")[0].ends_with("Firebird's own statistics command"));
    }

    #[test]
    fn only_sql_server_db2_and_oracle_are_pointed_to_a_bulk_path_of_their_own() {
        for (dbms, says) in [
            ("Microsoft SQL Server", "TABLOCK"),
            ("DB2/NT64", "NOT LOGGED INITIALLY"),
            ("Oracle", "APPEND_VALUES"),
        ] {
            let notes = notes(dbms, "t");
            assert_eq!(notes.len(), 2, "{dbms}");
            assert!(notes[1].contains(says), "{dbms}: {}", notes[1]);
        }
        for dbms in ["PostgreSQL", "MariaDB", "MySQL", "SQLite", "Firebird"] {
            assert_eq!(notes(dbms, "t").len(), 1, "{dbms}");
        }
    }

    fn listed(name: &str, unique: bool, clustered: bool) -> Index {
        Index {
            name: name.into(),
            qualifier: Some("SALES".into()),
            unique,
            clustered,
        }
    }

    fn says(kind: Dbms, index: &Index) -> String {
        let quote = |n: &str| format!("\"{n}\"");
        super::index(kind, "\"T\"", quote, index).stays.unwrap()
    }

    #[test]
    fn only_a_secondary_index_is_told_how_to_be_built_after_the_load() {
        let secondary = listed("IX", false, false);
        assert!(says(Dbms::SqlServer, &secondary).ends_with(
            "ALTER INDEX \"IX\" ON \"T\" DISABLE before it and ALTER INDEX \"IX\" ON \"T\" REBUILD after"
        ));
        let oracle = says(Dbms::Oracle, &secondary);
        assert!(
            oracle.contains("ALTER INDEX \"SALES\".\"IX\" UNUSABLE"),
            "{oracle}"
        );
        assert!(says(Dbms::Db2, &secondary).contains("INDEXING MODE REBUILD"));
        // Disabling a clustered index hides the rows; a disabled or unusable unique index
        // stops checking, or stops the inserts.
        for index in [listed("PK", true, true), listed("CX", false, true)] {
            assert!(
                says(Dbms::SqlServer, &index).contains("clustered index holds the table's rows")
            );
        }
        for kind in [Dbms::SqlServer, Dbms::Oracle] {
            assert!(says(kind, &listed("UQ", true, false)).contains("enforces uniqueness"));
        }
        for kind in [Dbms::PostgreSql, Dbms::MariaDb, Dbms::Sqlite, Dbms::Other] {
            assert_eq!(
                says(kind, &secondary),
                "kept: over ODBC inrush changes no definition"
            );
        }
    }

    #[test]
    fn the_rule_names_inrushs_own_target_where_there_is_one() {
        assert!(indexes_rule(Dbms::PostgreSql, "t").ends_with("(--to postgresql://...), a large load's secondary indexes are dropped and built once after it"));
        assert!(indexes_rule(Dbms::Sqlite, "t").contains("--to FILE.db"));
        assert!(indexes_rule(Dbms::SqlServer, "t").ends_with("none of t's definitions"));
    }
}

//! What the plan tells a user of each database about loads through ODBC: the statistics
//! command to run after it, and the database's own bulk path where it is faster than any
//! INSERT. Advice only: inrush runs none of it, and the servers it names are not tested here.

use crate::driver::Dbms;

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
}

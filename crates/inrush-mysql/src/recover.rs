//! `inrush recover` on MariaDB/MySQL.

use crate::ddl::{self, Dropped};
use crate::options::MysqlOptions;
use crate::{catalog, claim};
use inrush_load::summary;
use inrush_load::target::runtime;
use inrush_load::{Error, Result};

/// What `inrush recover` did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// The journal's entries added back.
    pub restored: Vec<Dropped>,
    /// Tables left to the live load that holds them (`schema`.`table`): it puts their
    /// definitions back when it ends.
    pub busy: Vec<String>,
    /// The distributed writes a coordinator left, finished or taken back.
    pub jobs: crate::job::Resolved,
}

impl Recovered {
    /// What was done, in the words `inrush recover` says on every engine.
    pub fn report(self) -> summary::Recovered {
        let jobs = self.jobs;
        let left_alone = jobs
            .busy
            .iter()
            .map(|job| format!("distributed write {job} (its coordinator is deciding now)"));
        let live = self.busy.iter().map(|t| summary::Recovered::live_load(t));
        let recreated = self
            .restored
            .iter()
            .map(|d| format!("index {} on {}.{}", d.index, d.schema, d.table));
        summary::Recovered {
            recreated: recreated.collect(),
            committed: jobs.committed,
            rolled_back: jobs.rolled_back,
            left_alone: left_alone.chain(live).collect(),
            nothing: "the DDL journal (inrush_ddl_journal) is empty, and no distributed write left an XA transaction prepared",
        }
    }
}

/// `inrush recover`: adds back what the DDL journal of the database holds (for one table, or
/// all), each table under its lock (see [`crate::claim`]); a table whose lock a live load holds
/// is left to it.
pub fn recover(options: &MysqlOptions, table: Option<&str>) -> Result<Recovered> {
    runtime()?.block_on(async {
        let jobs = crate::job::resolve(options).await?;
        let mut conn = options.connect().await?;
        let named = table.map(|t| catalog::split_name(t, options.database()));
        let pending = ddl::pending(
            &mut conn,
            named.as_ref().map(|(s, t)| (s.as_str(), t.as_str())),
        )
        .await?;
        let mut tables: Vec<(String, String)> = pending
            .iter()
            .map(|d| (d.schema.clone(), d.table.clone()))
            .collect();
        tables.dedup();
        let mut recovered = Recovered {
            jobs,
            ..Recovered::default()
        };
        for (schema, name) in tables {
            if !claim::try_take(&mut conn, &schema, &name).await? {
                recovered.busy.push(format!(
                    "{}.{}",
                    catalog::quote(&schema),
                    catalog::quote(&name)
                ));
                continue;
            }
            // Read again under the lock: a load may have ended and cleared them meanwhile.
            let restored = async {
                let entries = ddl::pending(&mut conn, Some((&schema, &name))).await?;
                ddl::restore(&mut conn, &entries).await?;
                Ok::<_, Error>(entries)
            }
            .await;
            claim::let_go(&mut conn, &schema, &name).await?;
            recovered.restored.extend(restored?);
        }
        let _ = conn.disconnect().await;
        Ok(recovered)
    })
}

//! One timed run: a fresh schema and table, seeded data, CHECKPOINT, then the clock runs from the
//! first statement until COMMIT (and any timed after-steps) return. WAL is the insert-LSN
//! difference; WAL records come from pg_stat_wal where the server has it; client CPU from
//! getrusage.

use crate::data;
use crate::methods::{self, Sampler};
use crate::plan::{expand, Method, RunPlan};
use crate::results::Measurement;
use crate::{Error, Result};
use inrush_postgres::{ConnectOptions, SessionInfo};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// What one run needs besides its plan.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub target: ConnectOptions,
    /// Rows to load (the plan's rows at the lab's scale).
    pub rows: u64,
    /// Unique within the lab run; names the schema.
    pub run_id: u32,
    /// Whether this user may CHECKPOINT.
    pub checkpoint: bool,
    pub seed: u64,
}

/// The rows as a CSV file for inrush's own load; deleted on drop.
pub(crate) struct CsvFile {
    pub path: std::path::PathBuf,
}

impl CsvFile {
    pub fn write(rows: &[data::Row], run_id: u32) -> Result<CsvFile> {
        use std::io::Write;
        let path =
            std::env::temp_dir().join(format!("inrush-lab-{}-{run_id}.csv", std::process::id()));
        let io = |cause| Error::Io {
            path: path.clone(),
            cause,
        };
        let file = std::fs::File::create(&path).map_err(io)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        for r in rows {
            writeln!(
                out,
                "{},{},{},{},{},{}",
                r.ints[0],
                r.ints[1],
                r.ints[2],
                quote(&r.chars[0]),
                quote(&r.chars[1]),
                quote(&r.chars[2])
            )
            .map_err(io)?;
        }
        out.flush().map_err(io)?;
        Ok(CsvFile { path })
    }
}

impl Drop for CsvFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// inrush's progress reports become the run's rate samples.
struct RateReporter(methods::SharedSampler);

impl inrush_core::Reporter for RateReporter {
    fn phase(&self, _: inrush_core::Phase) {}
    fn progress(&self, s: inrush_core::ProgressSnapshot) {
        if let Ok(mut sampler) = self.0.lock() {
            let new = s.rows_sent.saturating_sub(sampler.rows());
            if new > 0 {
                sampler.add(new);
            }
        }
    }
}

/// The load function of an engine: `inrush_postgres::load::run`, or `inrush_load::load_into`
/// with MariaDB's target.
pub(crate) type LoadFn<'a> = &'a (dyn Fn(
    &inrush_load::LoadOptions,
    &dyn inrush_core::Reporter,
) -> std::result::Result<inrush_load::LoadSummary, String>
         + Sync);

/// Runs inrush's own load (which has its own runtime) of `csv` into `table` on a thread of its
/// own; its progress becomes the run's rate samples.
pub(crate) fn inrush_load(
    load: LoadFn,
    csv: &std::path::Path,
    table: &str,
    connections: usize,
    sampler: &methods::SharedSampler,
) -> Result<()> {
    let mut opts = inrush_load::LoadOptions::new(csv.to_string_lossy(), table);
    opts.connections = connections.max(1);
    // The lab compares methods at a given number of connections.
    opts.adapt_connections = false;
    opts.plan.after = inrush_load::AfterLoad::Nothing;
    let reporter = RateReporter(sampler.clone());
    let summary = std::thread::scope(|s| {
        s.spawn(|| load(&opts, &reporter))
            .join()
            .map_err(|_| Error::Task("inrush's load panicked".into()))
    })?
    .map_err(|e| Error::Task(format!("inrush load: {e}")))?;
    if let Ok(mut sampler) = sampler.lock() {
        let rest = summary.rows.saturating_sub(sampler.rows());
        if rest > 0 {
            sampler.add(rest);
        }
    }
    Ok(())
}

/// Client CPU time (user + system) of this process so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid start.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Runs `plan` once and measures it; the run's schema is dropped afterwards, whatever happened.
pub async fn measure(plan: &RunPlan, ctx: &RunContext) -> Result<Measurement> {
    let control = ctx.target.connect().await?;
    let schema = format!("inrush_lab_{}_{}", std::process::id(), ctx.run_id);
    control
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .map_err(Error::query(format!("creating schema {schema}")))?;
    let result = timed(plan, ctx, &control, &schema).await;
    if let Err(e) = control
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
    {
        tracing::warn!("dropping {schema}: {e}");
    }
    result
}

async fn exec(client: &Client, sql: &str) -> Result<()> {
    client
        .batch_execute(sql)
        .await
        .map_err(Error::query(sql.chars().take(100).collect::<String>()))
}

async fn count(client: &Client, table: &str) -> Result<u64> {
    let row = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .map_err(Error::query(format!("counting {table}")))?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// WAL records written so far (pg_stat_wal, PostgreSQL 14+), after flushing this session's
/// pending statistics (15+). `None` where the view or column does not exist.
async fn wal_records(client: &Client) -> Option<u64> {
    let _ = client
        .batch_execute("SELECT pg_stat_force_next_flush()")
        .await;
    let row = client
        .query_one("SELECT wal_records::bigint FROM pg_stat_wal", &[])
        .await
        .ok()?;
    row.try_get::<_, i64>(0).ok().map(|v| v as u64)
}

async fn timed(
    plan: &RunPlan,
    ctx: &RunContext,
    control: &Client,
    schema: &str,
) -> Result<Measurement> {
    let table = format!("{schema}.t");
    let staging = format!("{schema}.staging");
    exec(control, &expand(&plan.create, schema, ctx.rows)).await?;
    let rows = if matches!(plan.method, Method::Produce { .. }) {
        Vec::new()
    } else {
        data::generate(plan.data, ctx.rows, ctx.seed)?
    };
    let csv = match plan.method {
        Method::InrushLoad { .. } => Some(CsvFile::write(&rows, ctx.run_id)?),
        _ => None,
    };
    if plan.method.uses_staging() {
        exec(control, &format!("CREATE TABLE {staging} (LIKE {table})")).await?;
        let fill = crate::plan::copy_binary(1);
        let sampler = Sampler::new(ctx.rows);
        methods::run(
            &fill,
            std::slice::from_ref(control),
            &staging,
            &staging,
            &rows,
            ctx.rows,
            &sampler,
            ctx.seed,
        )
        .await?;
    }
    for sql in &plan.setup {
        exec(control, &expand(sql, schema, ctx.rows)).await?;
    }

    let mut loaders = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..plan.method.connections() {
        let client = ctx.target.connect().await?;
        for (name, value) in &plan.session {
            exec(
                &client,
                &format!("SET {name} = '{}'", value.replace('\'', "''")),
            )
            .await?;
        }
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .map_err(Error::query("pg_backend_pid()"))?
            .get(0);
        pids.push(pid);
        loaders.push(client);
    }
    let before = count(control, &table).await?;
    if ctx.checkpoint {
        exec(control, "CHECKPOINT").await?;
    }
    let records0 = wal_records(control).await;
    let lsn0 = SessionInfo::wal_lsn(control).await;

    let clock = RunClock::start(ctx.rows);
    let sampler = &clock.sampler;
    match (&plan.method, &csv) {
        (Method::InrushLoad { connections }, Some(csv)) => {
            let load = |opts: &inrush_load::LoadOptions, reporter: &dyn inrush_core::Reporter| {
                inrush_postgres::load::run(&ctx.target, opts, reporter).map_err(|e| e.to_string())
            };
            inrush_load(&load, &csv.path, &table, *connections, sampler)?
        }
        _ => {
            methods::run(
                &plan.method,
                &loaders,
                &table,
                &staging,
                &rows,
                ctx.rows,
                sampler,
                ctx.seed,
            )
            .await?
        }
    }
    let mut extra = BTreeMap::new();
    for (label, sql) in &plan.after {
        let t = Instant::now();
        exec(control, &expand(sql, schema, ctx.rows)).await?;
        extra.insert(format!("{label}_seconds"), t.elapsed().as_secs_f64());
    }
    let (seconds, client_cpu_seconds) = clock.read();

    // Loading sessions flush their WAL statistics when they end.
    drop(loaders);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let alive: i64 = control
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&pids],
            )
            .await
            .map_err(Error::query("waiting for the loading sessions to end"))?
            .get(0);
        if alive == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let lsn1 = SessionInfo::wal_lsn(control).await;
    let records1 = wal_records(control).await;

    if !plan.followups.is_empty() {
        let mut ready = seconds;
        for (label, sql) in &plan.followups {
            let t = Instant::now();
            exec(control, &expand(sql, schema, ctx.rows)).await?;
            let s = t.elapsed().as_secs_f64();
            ready += s;
            extra.insert(format!("{label}_seconds"), s);
        }
        extra.insert("query_ready_seconds".into(), ready);
        if let (Some(a), Some(b)) = (lsn1, SessionInfo::wal_lsn(control).await) {
            extra.insert("followup_wal_bytes".into(), b.saturating_sub(a) as f64);
        }
    }

    let after = count(control, &table).await?;
    RunEnd {
        plan,
        table,
        asked: ctx.rows,
        counts: (before, after),
        seconds,
        log: (lsn0, lsn1),
        client_cpu_seconds,
        sampler,
    }
    .measurement(
        match (records0, records1) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        extra,
    )
}

/// A run's clocks, started at once for every engine: wall time, the client's CPU time, and
/// the insert-rate sampler its loaders tick.
pub(crate) struct RunClock {
    pub sampler: methods::SharedSampler,
    start: Instant,
    cpu0: f64,
}

impl RunClock {
    pub(crate) fn start(rows: u64) -> RunClock {
        let sampler = Sampler::new(rows);
        let (cpu0, start) = (cpu_seconds(), Instant::now());
        if let Ok(mut s) = sampler.lock() {
            s.start_at(start);
        }
        RunClock {
            sampler,
            start,
            cpu0,
        }
    }

    /// Wall seconds and client CPU seconds since the start.
    pub(crate) fn read(&self) -> (f64, f64) {
        (
            self.start.elapsed().as_secs_f64(),
            cpu_seconds() - self.cpu0,
        )
    }
}

/// How every engine's run ends: the figures it took, made one measurement once the table is
/// seen to hold exactly the rows the run was asked to add.
pub(crate) struct RunEnd<'a> {
    pub plan: &'a RunPlan,
    pub table: String,
    pub asked: u64,
    /// The table's rows before and after the run.
    pub counts: (u64, u64),
    pub seconds: f64,
    /// The engine's log position (WAL LSN, InnoDB's LSN) before and after, where it has one.
    pub log: (Option<u64>, Option<u64>),
    pub client_cpu_seconds: f64,
    pub sampler: &'a methods::SharedSampler,
}

impl RunEnd<'_> {
    pub(crate) fn measurement(
        self,
        wal_records: Option<u64>,
        extra: BTreeMap<String, f64>,
    ) -> Result<Measurement> {
        let (before, after) = self.counts;
        let loaded = after.saturating_sub(before);
        if loaded != self.asked || after < before {
            return Err(Error::RowCount {
                table: self.table,
                asked: self.asked,
                found: loaded,
            });
        }
        let plan = self.plan;
        let mut settings_changed: BTreeMap<String, String> = plan.session.iter().cloned().collect();
        settings_changed.extend(plan.server.iter().cloned());
        Ok(Measurement {
            rows: loaded,
            seconds: self.seconds,
            rows_per_second: loaded as f64 / self.seconds.max(1e-9),
            wal_bytes: match self.log {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
            wal_records,
            client_cpu_seconds: self.client_cpu_seconds,
            rate: self.sampler.lock().map(|s| s.samples()).unwrap_or_default(),
            settings_changed,
            extra,
        })
    }
}

//! The insert methods, all real: every row goes through a real client connection, the way the
//! seeds' programs sent theirs.

use crate::data::{self, Row, COLUMNS};
use crate::plan::Method;
use crate::results::RateSample;
use crate::{Error, Result};
use bytes::Bytes;
use futures_util::{future::try_join_all, SinkExt, StreamExt};
use inrush_encode::binary_copy::{TupleWriter, HEADER, TRAILER};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

/// Samples the insert rate: (elapsed, cumulative rows) at about 20 points of the run, taken by
/// the loading loops themselves.
#[derive(Debug)]
pub struct Sampler {
    start: Instant,
    step: u64,
    next: u64,
    done: u64,
    total: u64,
    samples: Vec<RateSample>,
}

pub type SharedSampler = Arc<Mutex<Sampler>>;

impl Sampler {
    pub fn new(total: u64) -> SharedSampler {
        let step = (total / 20).max(1);
        Arc::new(Mutex::new(Sampler {
            start: Instant::now(),
            step,
            next: step,
            done: 0,
            total,
            samples: Vec::new(),
        }))
    }

    /// Starts the clock where the run's timing starts.
    pub fn start_at(&mut self, start: Instant) {
        self.start = start;
    }

    pub fn add(&mut self, rows: u64) {
        self.done += rows;
        if self.done >= self.next || self.done >= self.total {
            self.samples.push(RateSample {
                seconds: self.start.elapsed().as_secs_f64(),
                rows: self.done,
            });
            while self.next <= self.done {
                self.next += self.step;
            }
        }
    }

    pub fn rows(&self) -> u64 {
        self.done
    }

    pub fn samples(&self) -> Vec<RateSample> {
        self.samples.clone()
    }
}

pub(crate) fn tick(sampler: &SharedSampler, rows: u64) {
    if let Ok(mut s) = sampler.lock() {
        s.add(rows);
    }
}

/// Runs `method` for `rows` into `table` over `clients` (as many as [`Method::connections`]).
/// `count` is the number of rows asked for ([`Method::Produce`] generates its own while timed).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    method: &Method,
    clients: &[Client],
    table: &str,
    staging: &str,
    rows: &[Row],
    count: u64,
    sampler: &SharedSampler,
    seed: u64,
) -> Result<()> {
    let first = clients
        .first()
        .ok_or_else(|| Error::Task("no loading connection".into()))?;
    match method {
        Method::Literal => literal(first, table, rows, sampler).await,
        Method::Prepared { commit_every, lock } => {
            prepared(first, table, rows, *commit_every, *lock, sampler).await
        }
        Method::MultiRow {
            rows_per_statement,
            commit_every,
            lock,
        } => {
            let lock = lock.then(|| format!("LOCK TABLE {table} IN EXCLUSIVE MODE"));
            multi_row(
                first,
                table,
                rows,
                *rows_per_statement,
                *commit_every,
                lock,
                sampler,
            )
            .await
        }
        Method::Pipelined {
            depth,
            commit_every,
        } => pipelined(first, table, rows, *depth, *commit_every, sampler).await,
        Method::Copy {
            binary,
            rows_per_copy,
            lock,
            freeze,
            ..
        } => {
            let opts = CopyOpts {
                binary: *binary,
                rows_per_copy: *rows_per_copy,
                lock: *lock,
                freeze: *freeze,
            };
            let n = clients.len();
            let shares = (0..n).map(|k| {
                let (a, b) = share(rows.len(), n, k);
                copy_rows(&clients[k], table, &rows[a..b], opts, sampler)
            });
            try_join_all(shares).await.map(|_| ())
        }
        Method::Produce { overlap, .. } => {
            produce(clients, table, count, *overlap, seed, sampler).await
        }
        Method::InsertSelect => {
            let n = first
                .execute(&format!("INSERT INTO {table} SELECT * FROM {staging}"), &[])
                .await
                .map_err(Error::query("INSERT ... SELECT from the staging table"))?;
            tick(sampler, n);
            Ok(())
        }
        Method::InrushLoad { .. } => Err(Error::Task(
            "inrush's own load runs through measure::inrush_load".into(),
        )),
        Method::CopyPipe => {
            let second = clients
                .get(1)
                .ok_or_else(|| Error::Task("the pipe needs two connections".into()))?;
            copy_pipe(first, second, table, staging, sampler).await
        }
    }
}

/// The `[a, b)` slice of `len` rows stream `k` of `n` loads.
pub fn share(len: usize, n: usize, k: usize) -> (usize, usize) {
    (len * k / n, len * (k + 1) / n)
}

fn params(row: &Row) -> [&(dyn ToSql + Sync); 6] {
    [
        &row.ints[0],
        &row.ints[1],
        &row.ints[2],
        &row.chars[0],
        &row.chars[1],
        &row.chars[2],
    ]
}

fn insert_sql(table: &str, rows_per_statement: usize) -> String {
    let tuples: Vec<String> = (0..rows_per_statement)
        .map(|r| {
            let p: Vec<String> = (1..=6).map(|c| format!("${}", r * 6 + c)).collect();
            format!("({})", p.join(","))
        })
        .collect();
    format!(
        "INSERT INTO {table} ({COLUMNS}) VALUES {}",
        tuples.join(",")
    )
}

/// Commits every `every` rows (BEGIN before the first row of each transaction); `None` leaves
/// each statement to autocommit.
struct Commits<'a> {
    client: &'a Client,
    every: Option<u64>,
    lock: Option<String>,
    pending: u64,
    open: bool,
}

impl<'a> Commits<'a> {
    fn new(client: &'a Client, every: Option<u64>, lock: Option<String>) -> Self {
        Commits {
            client,
            every,
            lock,
            pending: 0,
            open: false,
        }
    }

    async fn before(&mut self) -> Result<()> {
        if self.every.is_some() && !self.open {
            self.client
                .batch_execute("BEGIN")
                .await
                .map_err(Error::query("BEGIN"))?;
            if let Some(lock) = &self.lock {
                self.client
                    .batch_execute(lock)
                    .await
                    .map_err(Error::query("LOCK TABLE"))?;
            }
            self.open = true;
        }
        Ok(())
    }

    async fn after(&mut self, rows: u64) -> Result<()> {
        self.pending += rows;
        if let Some(every) = self.every {
            if self.pending >= every {
                self.commit().await?;
            }
        }
        Ok(())
    }

    async fn commit(&mut self) -> Result<()> {
        if self.open {
            self.client
                .batch_execute("COMMIT")
                .await
                .map_err(Error::query("COMMIT"))?;
            self.open = false;
        }
        self.pending = 0;
        Ok(())
    }
}

async fn literal(
    client: &Client,
    table: &str,
    rows: &[Row],
    sampler: &SharedSampler,
) -> Result<()> {
    for row in rows {
        let sql = format!(
            "INSERT INTO {table} ({COLUMNS}) VALUES {}",
            data::literal(row)
        );
        client
            .batch_execute(&sql)
            .await
            .map_err(Error::query("literal INSERT"))?;
        tick(sampler, 1);
    }
    Ok(())
}

async fn prepared(
    client: &Client,
    table: &str,
    rows: &[Row],
    commit_every: Option<u64>,
    lock: bool,
    sampler: &SharedSampler,
) -> Result<()> {
    let st = client
        .prepare(&insert_sql(table, 1))
        .await
        .map_err(Error::query("preparing the INSERT"))?;
    let lock = lock.then(|| format!("LOCK TABLE {table} IN EXCLUSIVE MODE"));
    let mut commits = Commits::new(client, commit_every, lock);
    for row in rows {
        commits.before().await?;
        client
            .execute(&st, &params(row))
            .await
            .map_err(Error::query("prepared INSERT"))?;
        commits.after(1).await?;
        tick(sampler, 1);
    }
    commits.commit().await
}

async fn multi_row(
    client: &Client,
    table: &str,
    rows: &[Row],
    k: usize,
    commit_every: u64,
    lock: Option<String>,
    sampler: &SharedSampler,
) -> Result<()> {
    let k = k.clamp(1, 10_000);
    let full = client
        .prepare(&insert_sql(table, k))
        .await
        .map_err(Error::query("preparing the multi-row INSERT"))?;
    let mut commits = Commits::new(client, Some(commit_every), lock);
    for chunk in rows.chunks(k) {
        commits.before().await?;
        let values: Vec<&(dyn ToSql + Sync)> = chunk.iter().flat_map(params).collect();
        if chunk.len() == k {
            client.execute(&full, &values).await
        } else {
            client
                .execute(&insert_sql(table, chunk.len()), &values)
                .await
        }
        .map_err(Error::query("multi-row INSERT"))?;
        commits.after(chunk.len() as u64).await?;
        tick(sampler, chunk.len() as u64);
    }
    commits.commit().await
}

async fn pipelined(
    client: &Client,
    table: &str,
    rows: &[Row],
    depth: usize,
    commit_every: u64,
    sampler: &SharedSampler,
) -> Result<()> {
    let st = client
        .prepare(&insert_sql(table, 1))
        .await
        .map_err(Error::query("preparing the INSERT"))?;
    let mut commits = Commits::new(client, Some(commit_every), None);
    for chunk in rows.chunks(depth.max(1)) {
        commits.before().await?;
        let all: Vec<[&(dyn ToSql + Sync); 6]> = chunk.iter().map(params).collect();
        // Every execute is sent before any result is awaited: the protocol's pipelining.
        try_join_all(all.iter().map(|p| client.execute(&st, p)))
            .await
            .map_err(Error::query("pipelined INSERT"))?;
        commits.after(chunk.len() as u64).await?;
        tick(sampler, chunk.len() as u64);
    }
    commits.commit().await
}

#[derive(Debug, Clone, Copy)]
struct CopyOpts {
    binary: bool,
    rows_per_copy: Option<u64>,
    lock: bool,
    freeze: bool,
}

/// Rows per CopyData message batch (and per rate sample check).
const CHUNK_ROWS: usize = 1000;

async fn copy_rows(
    client: &Client,
    table: &str,
    rows: &[Row],
    opts: CopyOpts,
    sampler: &SharedSampler,
) -> Result<()> {
    let per_copy = opts
        .rows_per_copy
        .map_or(rows.len().max(1), |n| n.max(1) as usize);
    let format = if opts.binary { "binary" } else { "text" };
    let freeze = if opts.freeze { ", FREEZE" } else { "" };
    let sql = format!("COPY {table} ({COLUMNS}) FROM STDIN (FORMAT {format}{freeze})");
    for batch in rows.chunks(per_copy) {
        let tx = opts.lock || opts.freeze;
        if tx {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(Error::query("BEGIN"))?;
        }
        if opts.freeze {
            client
                .batch_execute(&format!("TRUNCATE {table}"))
                .await
                .map_err(Error::query("TRUNCATE before COPY FREEZE"))?;
        }
        if opts.lock {
            client
                .batch_execute(&format!("LOCK TABLE {table} IN EXCLUSIVE MODE"))
                .await
                .map_err(Error::query("LOCK TABLE"))?;
        }
        let sink = client
            .copy_in::<_, Bytes>(&sql)
            .await
            .map_err(Error::query("COPY"))?;
        futures_util::pin_mut!(sink);
        let mut first = true;
        for chunk in batch.chunks(CHUNK_ROWS) {
            let mut w = TupleWriter::with_capacity(chunk.len() * 360 + HEADER.len());
            if opts.binary {
                if first {
                    w.bytes_mut().extend_from_slice(HEADER);
                }
                for row in chunk {
                    data::binary_tuple(row, &mut w);
                }
            } else {
                for row in chunk {
                    data::text_line(row, w.bytes_mut());
                }
            }
            first = false;
            sink.send(Bytes::from(w.into_inner()))
                .await
                .map_err(Error::query("sending COPY data"))?;
            tick(sampler, chunk.len() as u64);
        }
        if opts.binary {
            if first {
                sink.send(Bytes::from_static(HEADER))
                    .await
                    .map_err(Error::query("sending COPY data"))?;
            }
            sink.send(Bytes::from_static(TRAILER))
                .await
                .map_err(Error::query("sending COPY data"))?;
        }
        sink.finish()
            .await
            .map_err(Error::query("finishing COPY"))?;
        if tx {
            client
                .batch_execute("COMMIT")
                .await
                .map_err(Error::query("COMMIT"))?;
        }
    }
    Ok(())
}

/// Rows per produced chunk (each from its own seed, so both D8 modes send the same bytes).
const PRODUCE_CHUNK: u64 = 5000;

/// One stream's chunks: generated by inrush's generator, parsed, encoded by `encode` (binary
/// COPY, LOAD DATA text).
fn produce_chunks(
    stream: usize,
    rows: u64,
    seed: u64,
    encode: Encode,
    mut emit: impl FnMut(Bytes, u64) -> bool,
) -> Result<()> {
    let mut done = 0u64;
    let mut j = 0u64;
    while done < rows {
        let n = PRODUCE_CHUNK.min(rows - done);
        let chunk_seed = seed ^ ((stream as u64) << 40) ^ j;
        let rows = data::generate(crate::data::DataKind::Random, n, chunk_seed)?;
        if !emit(Bytes::from(encode(&rows)), n) {
            return Ok(());
        }
        done += n;
        j += 1;
    }
    Ok(())
}

/// How producers encode a chunk of rows for their engine.
pub(crate) type Encode = fn(&[Row]) -> Vec<u8>;

fn binary_tuples(rows: &[Row]) -> Vec<u8> {
    let mut w = TupleWriter::with_capacity(rows.len() * 360);
    for row in rows {
        data::binary_tuple(row, &mut w);
    }
    w.into_inner()
}

pub(crate) type Chunks = tokio::sync::mpsc::Receiver<(Bytes, u64)>;
pub(crate) type Producer = std::thread::JoinHandle<Result<()>>;

/// D8's producers, one thread per stream, each sending its share of `rows` in chunks to its
/// consumer. Serialised (`overlap` false): each channel holds its whole share, and the
/// producers have finished when this returns.
pub(crate) fn producers(
    streams: usize,
    rows: u64,
    overlap: bool,
    seed: u64,
    encode: Encode,
) -> Result<(Vec<Chunks>, Vec<Producer>)> {
    let mut receivers = Vec::new();
    let mut producers = Vec::new();
    for k in 0..streams {
        let (a, b) = share(rows as usize, streams, k);
        let share_rows = (b - a) as u64;
        let capacity = if overlap {
            4
        } else {
            (share_rows / PRODUCE_CHUNK + 2) as usize
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<(Bytes, u64)>(capacity);
        receivers.push(rx);
        producers.push(std::thread::spawn(move || {
            produce_chunks(k, share_rows, seed, encode, |bytes, n| {
                tx.blocking_send((bytes, n)).is_ok()
            })
        }));
    }
    if !overlap {
        join(std::mem::take(&mut producers))?;
    }
    Ok((receivers, producers))
}

pub(crate) fn join(producers: Vec<Producer>) -> Result<()> {
    for p in producers {
        p.join()
            .map_err(|_| Error::Task("a producer panicked".into()))??;
    }
    Ok(())
}

async fn produce(
    clients: &[Client],
    table: &str,
    rows: u64,
    overlap: bool,
    seed: u64,
    sampler: &SharedSampler,
) -> Result<()> {
    let sql = format!("COPY {table} ({COLUMNS}) FROM STDIN (FORMAT binary)");
    let (receivers, producers) = producers(clients.len(), rows, overlap, seed, binary_tuples)?;
    let consumers = clients.iter().zip(receivers).map(|(client, mut rx)| {
        let sql = sql.clone();
        async move {
            let sink = client
                .copy_in::<_, Bytes>(&sql)
                .await
                .map_err(Error::query("COPY"))?;
            futures_util::pin_mut!(sink);
            sink.send(Bytes::from_static(HEADER))
                .await
                .map_err(Error::query("sending COPY data"))?;
            while let Some((bytes, rows)) = rx.recv().await {
                sink.send(bytes)
                    .await
                    .map_err(Error::query("sending COPY data"))?;
                tick(sampler, rows);
            }
            sink.send(Bytes::from_static(TRAILER))
                .await
                .map_err(Error::query("sending COPY data"))?;
            sink.finish()
                .await
                .map_err(Error::query("finishing COPY"))?;
            Ok::<_, Error>(())
        }
    });
    let consumed = try_join_all(consumers).await;
    join(producers)?;
    consumed.map(|_| ())
}

const PIPE_BUFFER: usize = 256 * 1024;

async fn copy_pipe(
    from: &Client,
    to: &Client,
    table: &str,
    staging: &str,
    sampler: &SharedSampler,
) -> Result<()> {
    let out = from
        .copy_out(&format!("COPY {staging} TO STDOUT (FORMAT binary)"))
        .await
        .map_err(Error::query("COPY TO STDOUT"))?;
    futures_util::pin_mut!(out);
    let sink = to
        .copy_in::<_, Bytes>(&format!("COPY {table} FROM STDIN (FORMAT binary)"))
        .await
        .map_err(Error::query("COPY FROM STDIN"))?;
    futures_util::pin_mut!(sink);
    // COPY TO sends a message per row; forward them in 256 kB pieces, as a pipe would.
    let mut buf = bytes::BytesMut::with_capacity(PIPE_BUFFER);
    while let Some(bytes) = out.next().await {
        let bytes = bytes.map_err(Error::query("reading COPY TO STDOUT"))?;
        buf.extend_from_slice(&bytes);
        if buf.len() >= PIPE_BUFFER {
            sink.send(buf.split().freeze())
                .await
                .map_err(Error::query("sending COPY data"))?;
        }
    }
    if !buf.is_empty() {
        sink.send(buf.freeze())
            .await
            .map_err(Error::query("sending COPY data"))?;
    }
    let n = sink
        .finish()
        .await
        .map_err(Error::query("finishing COPY"))?;
    tick(sampler, n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_row_once() {
        for (len, n) in [(10, 3), (7, 7), (5, 8), (1000, 6)] {
            let mut next = 0;
            for k in 0..n {
                let (a, b) = share(len, n, k);
                assert_eq!(a, next);
                next = b;
            }
            assert_eq!(next, len);
        }
    }

    #[test]
    fn sampler_takes_about_twenty_points_ending_at_the_total() {
        let s = Sampler::new(1000);
        for _ in 0..1000 {
            s.lock().unwrap().add(1);
        }
        let samples = s.lock().unwrap().samples();
        assert!((19..=21).contains(&samples.len()), "{}", samples.len());
        assert_eq!(samples.last().unwrap().rows, 1000);
        assert!(samples
            .windows(2)
            .all(|w| w[0].rows < w[1].rows && w[0].seconds <= w[1].seconds));
    }

    #[test]
    fn multi_row_sql_numbers_parameters() {
        assert_eq!(
            insert_sql("t", 2),
            format!("INSERT INTO t ({COLUMNS}) VALUES ($1,$2,$3,$4,$5,$6),($7,$8,$9,$10,$11,$12)")
        );
    }
}

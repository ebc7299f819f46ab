//! The inputs of one load, and how each is opened and cut into blocks: files (CSV or JSON
//! lines, plain or compressed), standard input, a query streamed from another server, or
//! record batches handed over in memory.
//! Every source has its own splitter, line ending and line numbers; all feed the same workers.

use crate::columns::position_by_name;
use crate::{Error, LoadOptions, Result};
use bytes::Bytes;
use inrush_arrow::{ArrowFile, BatchStream, Part, RecordBatch, SchemaRef};
use inrush_core::query::{QueryServer, TextRows};
use inrush_read::binary::TupleSplitter;
use inrush_read::csv::{Block, CsvOptions, Record, RecordParser, Splitter};
use inrush_read::encoding::{self, Encoding};
use inrush_read::inputs::InputFormat;
use inrush_read::jsonl::JsonLineParser;
use inrush_read::source;
use std::io::Read;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

/// Where a source's bytes come from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A file path, or `-` for standard input.
    Path(String),
    /// A query's result on another server.
    Query {
        from: Arc<dyn QueryServer>,
        sql: String,
    },
    /// Record batches from memory (see [`Columnar::Stream`]).
    Stream,
}

/// Where a columnar source's batches come from.
#[derive(Debug)]
pub enum Columnar {
    /// A Parquet or Arrow IPC file, opened (its footer read) when the load starts: workers
    /// read its parts themselves.
    File(ArrowFile),
    /// Batches in memory, read in order by one reader and handed to workers in slices.
    Stream(BatchStream),
}

impl Columnar {
    pub fn schema(&self) -> SchemaRef {
        match self {
            Columnar::File(file) => file.schema(),
            Columnar::Stream(stream) => stream.schema(),
        }
    }
}

/// One input of the load.
#[derive(Debug)]
pub struct Source {
    /// How messages and the reject log name it: the path, `-`, or `query`/`query part 2 of 4`.
    pub name: String,
    pub origin: Origin,
    /// Bytes on disk, when known (for progress).
    pub size: Option<u64>,
    /// Whether a block can be read again by offset (plain regular files).
    pub seekable: bool,
    /// Fixed by the source's first line ending, before any of its blocks is sent.
    parser: OnceLock<RecordParser>,
    /// Fixed when the source is opened (`--encoding`, or a UTF-16 byte order mark).
    encoding: OnceLock<Encoding>,
    /// Set for Parquet and Arrow inputs.
    pub arrow: Option<Columnar>,
}

/// A unit of work and the source it came from.
pub struct Work {
    pub source: u32,
    /// The unit's number in the order the readers sent them (see `worker::Order`).
    pub seq: u64,
    pub unit: Unit,
}

/// What a worker takes: a block of text records, a part (row group) of a columnar file, which
/// the worker reads itself, a slice of a stream's batch, a block of a query's rows, or COPY
/// BINARY tuples of a query, which go on as they are.
pub enum Unit {
    Block(Block),
    Part(Part),
    /// A slice of a stream and the 0-based number of its first row.
    Batch(u64, RecordBatch),
    /// A block of a query's rows and the 0-based number of its first row.
    Rows(u64, TextRows),
    Tuples(Block),
}

/// A source opened and positioned at its first data record.
pub struct Opened {
    pub splitter: Splitter<Box<dyn Read + Send>>,
    /// CSV with a header: its names and raw bytes.
    pub header: Option<(Vec<String>, Bytes)>,
    /// Blocks read ahead (JSON lines: the first line, for its keys; `--create`: a sample for
    /// the types), loaded before the rest like any other.
    pub pending: Vec<Block>,
}

/// All the inputs, with how they are written.
#[derive(Debug)]
pub struct Sources {
    pub list: Vec<Source>,
    pub format: InputFormat,
    pub csv: CsvOptions,
    pub block_size: usize,
    /// `--encoding`: `None` reads UTF-8, or UTF-16 where a byte order mark says so.
    pub encoding: Option<Encoding>,
    /// A query whose columns have the very types of the target's: the columns to select, in
    /// COPY order, streamed as COPY BINARY tuples (set once the target's columns are known).
    pub passthrough: OnceLock<Vec<String>>,
    /// Files of the named directories left out: their names say no format inrush reads.
    pub skipped: Vec<String>,
    /// The load's interrupt: a pipe's reads end once a stop is asked.
    interrupt: Arc<crate::Interrupt>,
}

impl Source {
    pub fn file(path: String) -> Source {
        let meta = (path != "-")
            .then(|| std::fs::metadata(&path).ok())
            .flatten();
        let compressed = meta.as_ref().is_some_and(|m| m.is_file())
            && source::Compression::of_file(std::path::Path::new(&path))
                != source::Compression::None;
        Source {
            size: meta.as_ref().filter(|m| m.is_file()).map(|m| m.len()),
            seekable: meta.as_ref().is_some_and(|m| m.is_file()) && !compressed,
            name: path.clone(),
            origin: Origin::Path(path),
            parser: OnceLock::new(),
            encoding: OnceLock::new(),
            arrow: None,
        }
    }

    fn columnar(path: String) -> Result<Source> {
        let file = ArrowFile::open(std::path::Path::new(&path))?;
        Ok(Source {
            arrow: Some(Columnar::File(file)),
            ..Source::file(path)
        })
    }

    fn stream(stream: BatchStream) -> Source {
        Source {
            name: stream.name().to_string(),
            origin: Origin::Stream,
            size: None,
            seekable: false,
            parser: OnceLock::new(),
            encoding: OnceLock::new(),
            arrow: Some(Columnar::Stream(stream)),
        }
    }

    pub fn query(from: Arc<dyn QueryServer>, sql: String, name: String) -> Source {
        Source {
            name,
            origin: Origin::Query { from, sql },
            size: None,
            seekable: false,
            parser: OnceLock::new(),
            encoding: OnceLock::new(),
            arrow: None,
        }
    }

    /// The source's record parser; set when it was opened, before its first block was sent.
    pub fn parser(&self) -> Option<&RecordParser> {
        self.parser.get()
    }

    /// The encoding the source is in; UTF-8 until it is opened (and for queries).
    pub fn encoding(&self) -> Encoding {
        self.encoding.get().copied().unwrap_or(Encoding::Utf8)
    }

    /// Whether a block can be read again from the file by its offset: offsets of a UTF-16
    /// source are offsets in its UTF-8 stream.
    pub fn rereadable(&self) -> bool {
        self.seekable && !self.encoding().is_utf16()
    }

    /// The byte counted as a line break (`\r` for CR-only files).
    pub fn line_break(&self) -> u8 {
        self.parser.get().map_or(b'\n', |p| p.eol().terminator())
    }
}

impl Sources {
    /// The sources `opts` names: a query (cut into key ranges with `--split-by`, one per
    /// connection), or the expanded input arguments, all of one format.
    pub fn from_options(opts: &LoadOptions) -> Result<Sources> {
        if let Some(query) = &opts.from_query {
            refuse_text_flags(
                opts,
                "--from-query",
                "its rows come from the server with their columns' names, in UTF-8",
            )?;
            let parts = match &query.split_by {
                Some(column) => query
                    .from
                    .split(&query.sql, column, opts.connections.max(1))?,
                None => vec![query.sql.clone()],
            };
            let count = parts.len();
            let list = parts
                .into_iter()
                .enumerate()
                .map(|(i, sql)| {
                    let name = match count {
                        1 => "query".to_string(),
                        _ => format!("query part {} of {count}", i + 1),
                    };
                    Source::query(query.from.clone(), sql, name)
                })
                .collect();
            return Ok(Sources {
                interrupt: opts.interrupt.clone(),
                list,
                format: InputFormat::Csv,
                // What COPY TO writes: CSV with a header, the default quoting and NULL.
                csv: CsvOptions {
                    header: true,
                    ..CsvOptions::default()
                },
                block_size: opts.block_size,
                encoding: None,
                passthrough: OnceLock::new(),
                skipped: Vec::new(),
            });
        }
        if let Some(stream) = &opts.stream {
            refuse_text_flags(
                opts,
                stream.name(),
                "Arrow data names its columns and holds its strings in UTF-8",
            )?;
            return Ok(Sources {
                interrupt: opts.interrupt.clone(),
                list: vec![Source::stream(stream.clone())],
                format: InputFormat::Arrow,
                csv: opts.csv.clone(),
                block_size: opts.block_size,
                encoding: None,
                passthrough: OnceLock::new(),
                skipped: Vec::new(),
            });
        }
        let inrush_read::inputs::Expanded { files, skipped } =
            inrush_read::inputs::expand(&opts.inputs)?;
        if files.is_empty() {
            return Err(Error::Columns("no input given".into()));
        }
        let format = match opts.format {
            Some(format) => format,
            None => {
                let named = |f: &String| {
                    InputFormat::from_path(std::path::Path::new(f)).unwrap_or(InputFormat::Csv)
                };
                let format = named(&files[0]);
                if let Some(other) = files.iter().find(|f| named(f) != format) {
                    return Err(Error::Columns(format!(
                        "{} is {} but {} is {}: load one format at a time, or pass --format",
                        files[0],
                        format.name(),
                        other,
                        named(other).name()
                    )));
                }
                format
            }
        };
        match format {
            InputFormat::Parquet | InputFormat::Arrow => refuse_text_flags(
                opts,
                &files[0],
                &format!(
                    "{} files name their fields and hold their strings in UTF-8",
                    format.name()
                ),
            )?,
            // JSON lines are text in an encoding; their keys name the columns.
            InputFormat::Jsonl => refuse_csv_flags(
                opts,
                &files[0],
                "JSON lines name their fields by their keys",
            )?,
            InputFormat::Csv | InputFormat::Tsv => {}
        }
        let list = match format {
            InputFormat::Parquet | InputFormat::Arrow => files
                .into_iter()
                .map(Source::columnar)
                .collect::<Result<_>>()?,
            _ => files.into_iter().map(Source::file).collect(),
        };
        let mut csv = opts.csv.clone();
        // A tab-separated file is CSV with a tab, unless the user chose another delimiter than
        // the default comma.
        if format == InputFormat::Tsv && csv.delimiter == CsvOptions::default().delimiter {
            csv.delimiter = b'\t';
            csv.validate()?;
        }
        Ok(Sources {
            interrupt: opts.interrupt.clone(),
            list,
            format,
            csv,
            block_size: opts.block_size,
            encoding: opts.encoding,
            passthrough: OnceLock::new(),
            skipped,
        })
    }

    /// What the summary says about files a directory held that were not loaded.
    pub fn skipped_note(&self) -> Option<String> {
        (!self.skipped.is_empty()).then(|| {
            format!(
                "skipped (their names say no format inrush reads; name them to load them): {}",
                self.skipped.join(", ")
            )
        })
    }

    /// What named the columns, for messages: the first source's header, first line or fields.
    pub fn names_origin(&self) -> String {
        let first = self.list.first().map_or("", |s| s.name.as_str());
        match (&self.list.first().map(|s| &s.origin), self.format) {
            (Some(Origin::Query { .. }), _) => "the query".to_string(),
            (_, InputFormat::Jsonl) => format!("the first line of {first}"),
            (_, InputFormat::Parquet | InputFormat::Arrow) => format!("the fields of {first}"),
            _ => format!("the header of {first}"),
        }
    }

    /// How the summary names the input: the one source's name, or how many there are.
    pub fn describe(&self) -> String {
        match &self.list[..] {
            [one] => one.name.clone(),
            [first, ..] if matches!(first.origin, Origin::Query { .. }) => {
                format!("query ({} parts)", self.list.len())
            }
            [first, ..] => format!("{} files ({}, ...)", self.list.len(), first.name),
            [] => String::new(),
        }
    }

    /// The query of a `--from-query` load (its first part's, when split), and its server.
    pub fn query(&self) -> Option<(&dyn QueryServer, &str)> {
        match &self.list.first()?.origin {
            Origin::Query { from, sql } => Some((from.as_ref(), sql)),
            Origin::Path(_) | Origin::Stream => None,
        }
    }

    /// Opens source `i`, a query, as COPY BINARY tuples of the passthrough columns.
    pub fn open_tuples(
        &self,
        i: usize,
        columns: &[String],
        consumed: Arc<AtomicU64>,
    ) -> Result<TupleSplitter<Box<dyn Read + Send>>> {
        let source = &self.list[i];
        let Origin::Query { from, sql } = &source.origin else {
            return Err(Error::Internal("binary tuples from a file".into()));
        };
        let reader = from.copy_binary(sql, columns)?;
        Ok(TupleSplitter::new(
            source::counted(reader, consumed),
            source.name.clone(),
            self.block_size,
        ))
    }

    /// Source `i`'s rows, when it is a query whose server reads rows one at a time (see
    /// [`QueryServer::rows`]): its blocks, each with the 0-based number of its first row.
    pub fn open_rows(
        &self,
        i: usize,
    ) -> Result<Option<impl Iterator<Item = Result<(u64, TextRows)>> + Send + 'static>> {
        let Origin::Query { from, sql } = &self.list[i].origin else {
            return Ok(None);
        };
        if !from.reads_rows() {
            return Ok(None);
        }
        let mut next = 0u64;
        Ok(Some(from.rows(sql)?.blocks.map(move |block| {
            let block = block?;
            let first = next;
            next += block.rows() as u64;
            Ok((first, block))
        })))
    }

    /// Whether source `i`'s rows come as [`Unit::Rows`]: numbered, and never read again.
    pub fn reads_rows(&self, i: usize) -> bool {
        matches!(&self.list[i].origin, Origin::Query { from, .. } if from.reads_rows())
    }

    /// Whether the sources are columnar files (read by parts, not split into blocks).
    pub fn columnar(&self) -> bool {
        matches!(self.format, InputFormat::Parquet | InputFormat::Arrow)
    }

    /// The column names of a columnar load: `explicit` (`--columns`) or the first file's
    /// fields; and for every file, which of its fields (by name) feed them, in order.
    pub fn columnar_projection(
        &self,
        explicit: Option<&[String]>,
    ) -> Result<(Vec<String>, Vec<Vec<usize>>)> {
        let field_names = |columnar: &Columnar| -> Vec<String> {
            columnar
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        };
        let first = self.list[0]
            .arrow
            .as_ref()
            .ok_or_else(|| Error::Internal("a columnar source without its file".into()))?;
        let names = explicit.map_or_else(|| field_names(first), <[String]>::to_vec);
        let mut projections = Vec::with_capacity(self.list.len());
        for source in &self.list {
            let file = source
                .arrow
                .as_ref()
                .ok_or_else(|| Error::Internal("a columnar source without its file".into()))?;
            let fields = field_names(file);
            let projection = names
                .iter()
                .map(|name| {
                    position_by_name(fields.iter().map(String::as_str), name).ok_or_else(|| {
                        Error::Columns(format!(
                            "{} has no column {name:?} (it has: {})",
                            source.name,
                            fields.join(", ")
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            projections.push(projection);
        }
        Ok((names, projections))
    }

    /// Total bytes on disk, when every source's size is known.
    pub fn size(&self) -> Option<u64> {
        self.list.iter().map(|s| s.size).sum()
    }

    /// Opens source `i`: reads its header (CSV) or first line (JSON lines) and fixes its
    /// line ending. `consumed` counts the raw bytes read, for progress.
    pub fn open(&self, i: usize, consumed: Arc<AtomicU64>) -> Result<Opened> {
        let source = &self.list[i];
        let reader = self.open_decoded(i, consumed)?;
        let mut splitter = Splitter::new(
            reader,
            source.name.clone(),
            self.csv.clone(),
            self.block_size,
        );
        if self.format == InputFormat::Jsonl {
            splitter = splitter.without_quotes();
        }
        let eol = splitter.eol()?;
        let parser = source
            .parser
            .get_or_init(|| RecordParser::new(self.csv.clone(), eol));
        let encoding = source.encoding();
        let mut opened = Opened {
            splitter,
            header: None,
            pending: Vec::new(),
        };
        match self.format {
            InputFormat::Jsonl => opened.pending.extend(opened.splitter.take_first_record()?),
            _ if self.csv.header || matches!(source.origin, Origin::Query { .. }) => {
                opened.header = read_header(&mut opened.splitter, parser, encoding, &source.name)?;
            }
            _ => {}
        }
        Ok(opened)
    }

    /// The stream of source `i` as the splitter takes it (UTF-16 decoded), its encoding noted.
    fn open_decoded(&self, i: usize, consumed: Arc<AtomicU64>) -> Result<Box<dyn Read + Send>> {
        let source = &self.list[i];
        let (reader, encoding) = match &source.origin {
            Origin::Path(path) => {
                let interrupt = self.interrupt.clone();
                let stop: source::Stop = Arc::new(move || interrupt.cancels());
                encoding::decoded(
                    source::open(path, consumed, stop)?.reader,
                    self.encoding,
                    path,
                )?
            }
            Origin::Stream => return Err(Error::Internal("a stream read as text".into())),
            // A query source writes UTF-8 (see `QueryServer::csv`).
            Origin::Query { from, sql } => {
                (source::counted(from.csv(sql)?, consumed), Encoding::Utf8)
            }
        };
        let _ = source.encoding.set(encoding);
        Ok(reader)
    }

    /// Opens source `i` again at byte `offset` (line `line`) to resume a load there.
    pub fn reopen_at(
        &self,
        i: usize,
        offset: u64,
        line: u64,
        consumed: Arc<AtomicU64>,
    ) -> Result<Splitter<Box<dyn Read + Send>>> {
        let source = &self.list[i];
        let Origin::Path(path) = &source.origin else {
            return Err(Error::Internal("only files can be resumed".into()));
        };
        let parser = self.list[i]
            .parser()
            .ok_or_else(|| Error::Internal("resumed a source never opened".into()))?;
        let reader = if source.encoding().is_utf16() {
            // Offsets are in the decoded stream: decode from the start and skip to `offset`.
            let mut reader = self.open_decoded(i, consumed)?;
            std::io::copy(&mut (&mut reader).take(offset), &mut std::io::sink()).map_err(
                |cause| inrush_read::Error::Read {
                    name: source.name.clone(),
                    cause,
                },
            )?;
            reader
        } else {
            source::open_at(path, offset, consumed)?
        };
        let splitter = Splitter::resume(
            reader,
            source.name.clone(),
            self.csv.clone(),
            self.block_size,
            offset,
            line,
            parser.eol(),
        );
        Ok(match self.format {
            InputFormat::Jsonl => splitter.without_quotes(),
            _ => splitter,
        })
    }
}

/// Refuses the CSV flags, which `input` (a file name or `--from-query`) has no use for: `why`
/// says what it has instead.
fn refuse_csv_flags(opts: &LoadOptions, input: &str, why: &str) -> Result<()> {
    let flags = opts.csv.flags_set();
    if flags.is_empty() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{} {} CSV input: {input} is not CSV ({why})",
        flags.join(", "),
        if flags.len() == 1 {
            "applies to"
        } else {
            "apply to"
        },
    )))
}

/// [`refuse_csv_flags`], and `--encoding`, for inputs that are not text.
fn refuse_text_flags(opts: &LoadOptions, input: &str, why: &str) -> Result<()> {
    refuse_csv_flags(opts, input, why)?;
    match opts.encoding {
        Some(encoding) => Err(Error::Usage(format!(
            "--encoding {} applies to text inputs: {input} is not read as text ({why})",
            encoding.name()
        ))),
        None => Ok(()),
    }
}

/// The column names a JSON line's keys give, for mapping like a header.
pub fn first_line_keys(first: &Block, source: &Source) -> Result<Vec<String>> {
    let name = source.name.as_str();
    let data = source.encoding().to_utf8(&first.data);
    let text = std::str::from_utf8(&data).map_err(|e| Error::BadRow {
        location: inrush_core::Location::record(name, first.first_line),
        reason: source
            .encoding()
            .undecodable_reason(&data[e.valid_up_to()..]),
    })?;
    JsonLineParser::keys(text.trim_end()).map_err(|e| Error::BadRow {
        location: inrush_core::Location::record(name, first.first_line),
        reason: e.reason,
    })
}

/// Parses the header record: its column names, and its bytes (in UTF-8, as the reject file
/// holds every record) for the reject file.
fn read_header(
    splitter: &mut Splitter<Box<dyn Read + Send>>,
    parser: &RecordParser,
    encoding: Encoding,
    name: &str,
) -> Result<Option<(Vec<String>, Bytes)>> {
    let Some(block) = splitter.take_first_record()? else {
        return Ok(None);
    };
    let data = Bytes::from(encoding.to_utf8(&block.data).into_owned());
    let mut rec = Record::default();
    parser
        .parse(&data, 0, &mut rec)
        .map_err(|e| Error::BadRow {
            location: inrush_core::Location::record(name, 1),
            reason: format!("header: {e}"),
        })?;
    let names = rec
        .fields(&data)
        .map(|f| String::from_utf8_lossy(f.unwrap_or_default()).into_owned())
        .collect();
    Ok(Some((names, data)))
}

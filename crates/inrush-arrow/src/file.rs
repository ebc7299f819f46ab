//! Parquet and Arrow IPC files, read in parts.
//!
//! The format is told by magic bytes (`PAR1` at both ends, `ARROW1` at the start), never by the
//! file name. Opening reads only the footer (for IPC also each batch's small header, to count
//! its rows): workers then open their own handle per part, so parts are read in parallel
//! without sharing a cursor.
use crate::{Error, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Rows per batch handed out by [`ArrowFile::read_part`]: large enough to amortise per-batch
/// work, small enough that a wide row group is not decoded into one huge batch at once.
const BATCH_ROWS: usize = 8192;

/// The batches of one part, decoded one at a time as they are taken (see
/// [`ArrowFile::read_part`]).
pub type PartBatches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// Which container the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    /// The Arrow IPC file format (Feather v2), not the stream format.
    ArrowIpc,
}

/// A unit of work: a Parquet row group or an IPC record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub index: usize,
    /// 0-based number of the part's first row in the file.
    pub first_row: u64,
    pub rows: u64,
    /// Compressed size in the file, for progress.
    pub bytes: u64,
}

/// A Parquet or Arrow IPC file (by magic bytes, not extension), opened for reading in parts.
#[derive(Debug, Clone)]
pub struct ArrowFile {
    path: PathBuf,
    format: FileFormat,
    schema: SchemaRef,
    parts: Vec<Part>,
    /// Parquet's decoded footer, shared by every part's reader.
    parquet: Option<ArrowReaderMetadata>,
}

impl ArrowFile {
    pub fn open(path: &Path) -> Result<ArrowFile> {
        let mut file = File::open(path).map_err(|cause| Error::Open {
            path: path.to_path_buf(),
            cause,
        })?;
        let read_err = |cause| Error::Read {
            path: path.to_path_buf(),
            cause,
        };
        let len = file.metadata().map_err(read_err)?.len();
        let mut head = [0u8; 6];
        let mut tail = [0u8; 6];
        if len >= 12 {
            file.read_exact(&mut head).map_err(read_err)?;
            file.seek(SeekFrom::End(-6)).map_err(read_err)?;
            file.read_exact(&mut tail).map_err(read_err)?;
        }
        if &head[..4] == b"PAR1" && &tail[2..] == b"PAR1" {
            Self::open_parquet(path, file)
        } else if &head == b"ARROW1" && &tail == b"ARROW1" {
            Self::open_ipc(path, file, len)
        } else {
            Err(Error::UnknownFormat {
                path: path.to_path_buf(),
            })
        }
    }

    fn open_parquet(path: &Path, file: File) -> Result<ArrowFile> {
        let meta =
            ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|cause| {
                Error::Parquet {
                    path: path.to_path_buf(),
                    cause,
                }
            })?;
        let mut first_row = 0u64;
        let parts = meta
            .metadata()
            .row_groups()
            .iter()
            .enumerate()
            .map(|(index, rg)| {
                let rows = rg.num_rows().max(0) as u64;
                let part = Part {
                    index,
                    first_row,
                    rows,
                    bytes: rg.compressed_size().max(0) as u64,
                };
                first_row += rows;
                part
            })
            .collect();
        Ok(ArrowFile {
            path: path.to_path_buf(),
            format: FileFormat::Parquet,
            schema: meta.schema().clone(),
            parts,
            parquet: Some(meta),
        })
    }

    fn open_ipc(path: &Path, mut file: File, len: u64) -> Result<ArrowFile> {
        let ipc_err = |reason: String| Error::Ipc {
            path: path.to_path_buf(),
            reason,
        };
        let read_err = |cause| Error::Read {
            path: path.to_path_buf(),
            cause,
        };
        let reader = arrow_ipc::reader::FileReader::try_new(&mut file, None).map_err(|cause| {
            Error::Arrow {
                path: path.to_path_buf(),
                cause,
            }
        })?;
        let schema = reader.schema();
        drop(reader);

        // The footer lists each batch's block; its row count is in the block's own header.
        let mut trailer = [0u8; 10];
        file.seek(SeekFrom::End(-10)).map_err(read_err)?;
        file.read_exact(&mut trailer).map_err(read_err)?;
        let footer_len = arrow_ipc::reader::read_footer_length(trailer)
            .map_err(|e| ipc_err(e.to_string()))? as u64;
        if footer_len + 10 > len {
            return Err(ipc_err("footer longer than the file".into()));
        }
        let mut footer = vec![0u8; footer_len as usize];
        file.seek(SeekFrom::End(-10 - footer_len as i64))
            .map_err(read_err)?;
        file.read_exact(&mut footer).map_err(read_err)?;
        let footer = arrow_ipc::root_as_footer(&footer).map_err(|e| ipc_err(e.to_string()))?;
        let mut parts = Vec::new();
        let mut first_row = 0u64;
        let mut header = Vec::new();
        for (index, block) in footer.recordBatches().into_iter().flatten().enumerate() {
            let meta_len = usize::try_from(block.metaDataLength())
                .map_err(|_| ipc_err(format!("batch {index}: negative header length")))?;
            let offset = u64::try_from(block.offset())
                .map_err(|_| ipc_err(format!("batch {index}: negative offset")))?;
            if offset + meta_len as u64 > len || meta_len < 8 {
                return Err(ipc_err(format!("batch {index}: header outside the file")));
            }
            header.resize(meta_len, 0);
            file.seek(SeekFrom::Start(offset)).map_err(read_err)?;
            file.read_exact(&mut header).map_err(read_err)?;
            // `0xFFFFFFFF` and a length, or (before format 0.15) the length alone.
            let message = if header[..4] == [0xff; 4] {
                &header[8..]
            } else {
                &header[4..]
            };
            let rows = arrow_ipc::root_as_message(message)
                .ok()
                .and_then(|m| m.header_as_record_batch())
                .map(|b| b.length())
                .ok_or_else(|| ipc_err(format!("batch {index}: not a record batch header")))?;
            let rows = rows.max(0) as u64;
            parts.push(Part {
                index,
                first_row,
                rows,
                bytes: meta_len as u64 + block.bodyLength().max(0) as u64,
            });
            first_row += rows;
        }
        Ok(ArrowFile {
            path: path.to_path_buf(),
            format: FileFormat::ArrowIpc,
            schema,
            parts,
            parquet: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> FileFormat {
        self.format
    }

    /// Field names and types, in file order.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.rows).sum()
    }

    /// The units workers take: Parquet row groups, or IPC record batches.
    pub fn parts(&self) -> Vec<Part> {
        self.parts.clone()
    }

    /// Reads part `part`, only the given columns (file column indices, in that order), in
    /// batches of at most 8192 rows, each decoded as it is taken, so the caller never holds a
    /// part's batches at once (IPC: one record batch, which its file holds whole). The Parquet
    /// reader reads each column chunk page by page, so a worker's memory does not grow with the
    /// row group (about 50 MB peak for a whole load of 128 MB row groups, see BENCHMARKS.md).
    pub fn read_part(&self, part: usize, projection: &[usize]) -> Result<PartBatches> {
        if part >= self.parts.len() {
            return Err(Error::NoSuchPart {
                path: self.path.clone(),
                part,
                parts: self.parts.len(),
            });
        }
        let columns = self.schema.fields().len();
        if let Some(&index) = projection.iter().find(|&&i| i >= columns) {
            return Err(Error::NoSuchColumn {
                path: self.path.clone(),
                index,
                columns,
            });
        }
        let file = File::open(&self.path).map_err(|cause| Error::Open {
            path: self.path.clone(),
            cause,
        })?;
        let path = self.path.clone();
        let batches: PartBatches = match &self.parquet {
            Some(meta) => {
                let parquet_err = |cause| Error::Parquet {
                    path: self.path.clone(),
                    cause,
                };
                let mask = ProjectionMask::roots(meta.parquet_schema(), projection.iter().copied());
                let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
                    .with_row_groups(vec![part])
                    .with_projection(mask)
                    .with_batch_size(BATCH_ROWS)
                    .build()
                    .map_err(parquet_err)?;
                let path = path.clone();
                Box::new(reader.map(move |b| {
                    b.map_err(|cause| Error::Arrow {
                        path: path.clone(),
                        cause,
                    })
                }))
            }
            None => Box::new(self.read_ipc(file, part, projection)?.into_iter().map(Ok)),
        };
        // Readers return columns in file order; callers asked for `projection`'s order.
        let mut order: Vec<usize> = projection.to_vec();
        order.sort_unstable();
        order.dedup();
        let positions: Vec<usize> = projection
            .iter()
            .filter_map(|i| order.binary_search(i).ok())
            .collect();
        if positions.iter().enumerate().all(|(i, &p)| i == p) && positions.len() == order.len() {
            return Ok(batches);
        }
        Ok(Box::new(batches.map(move |b| {
            b?.project(&positions).map_err(|cause| Error::Arrow {
                path: path.clone(),
                cause,
            })
        })))
    }

    fn read_ipc(&self, file: File, part: usize, projection: &[usize]) -> Result<Vec<RecordBatch>> {
        let arrow_err = |cause| Error::Arrow {
            path: self.path.clone(),
            cause,
        };
        let mut sorted = projection.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut reader = arrow_ipc::reader::FileReader::try_new_buffered(file, Some(sorted))
            .map_err(arrow_err)?;
        reader.set_index(part).map_err(arrow_err)?;
        let batch = match reader.next() {
            Some(b) => b.map_err(arrow_err)?,
            None => {
                return Err(Error::NoSuchPart {
                    path: self.path.clone(),
                    part,
                    parts: self.parts.len(),
                })
            }
        };
        // Zero-copy slices, so callers see the same batch sizes as for Parquet.
        let rows = batch.num_rows();
        Ok((0..rows.div_ceil(BATCH_ROWS).max(1))
            .map(|i| {
                let start = i * BATCH_ROWS;
                batch.slice(start, BATCH_ROWS.min(rows - start))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int32Type;
    use arrow_array::{Array, ArrayRef, DictionaryArray, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new(
                "flag",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new("comment", DataType::Utf8, true),
        ]))
    }

    fn batch(start: i64, rows: usize) -> RecordBatch {
        let ids: Vec<i64> = (start..start + rows as i64).collect();
        // One dictionary for every batch: IPC files allow no replacement.
        let keys = arrow_array::Int32Array::from(
            ids.iter()
                .map(|i| (i % 7 != 0).then_some((i % 3) as i32))
                .collect::<Vec<_>>(),
        );
        let flags: DictionaryArray<Int32Type> =
            DictionaryArray::new(keys, Arc::new(StringArray::from(vec!["A", "N", "R"])));
        let comments =
            StringArray::from(ids.iter().map(|i| format!("row {i}")).collect::<Vec<_>>());
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(flags),
            Arc::new(comments),
        ];
        RecordBatch::try_new(schema(), columns).unwrap()
    }

    fn write_parquet(path: &Path, compression: Compression) {
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_compression(compression)
            .build();
        let file = File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, schema(), Some(props)).unwrap();
        w.write(&batch(0, 150)).unwrap();
        w.write(&batch(150, 100)).unwrap();
        w.close().unwrap();
    }

    fn ids(batches: &[RecordBatch], column: usize) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b
                    .column(column)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                a.values().to_vec()
            })
            .collect()
    }

    #[test]
    fn parquet_row_groups_are_parts() {
        let dir = tempfile::tempdir().unwrap();
        for (name, compression) in [
            ("snappy.data", Compression::SNAPPY),
            ("zstd.data", Compression::ZSTD(ZstdLevel::default())),
            ("lz4.data", Compression::LZ4_RAW),
            ("gzip.data", Compression::GZIP(Default::default())),
            ("none.data", Compression::UNCOMPRESSED),
        ] {
            let path = dir.path().join(name);
            write_parquet(&path, compression);
            let f = ArrowFile::open(&path).unwrap();
            assert_eq!(f.format(), FileFormat::Parquet);
            assert_eq!(f.rows(), 250);
            let parts = f.parts();
            assert_eq!(
                parts
                    .iter()
                    .map(|p| (p.index, p.first_row, p.rows))
                    .collect::<Vec<_>>(),
                [(0, 0, 100), (1, 100, 100), (2, 200, 50)],
                "{name}"
            );
            assert!(parts.iter().all(|p| p.bytes > 0));
            let s = f.schema();
            assert_eq!(s.field(0).name(), "id");
            assert!(matches!(s.field(1).data_type(), DataType::Dictionary(_, _)));

            let all = read(&f, 1, &[0, 1, 2]);
            assert_eq!(ids(&all, 0), (100..200).collect::<Vec<_>>());
            assert!(matches!(
                all[0].column(1).data_type(),
                DataType::Dictionary(_, _)
            ));
            // Projection in the caller's order, columns left out not read.
            let some = read(&f, 2, &[2, 0]);
            assert_eq!(some[0].num_columns(), 2);
            assert_eq!(some[0].schema().field(0).name(), "comment");
            assert_eq!(ids(&some, 1), (200..250).collect::<Vec<_>>());
            let comments = some[0]
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            assert_eq!(comments.value(0), "row 200");
        }
    }

    /// Every batch of a part, read.
    fn read(f: &ArrowFile, part: usize, projection: &[usize]) -> Vec<RecordBatch> {
        f.read_part(part, projection)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap()
    }

    #[test]
    fn arrow_ipc_batches_are_parts() {
        let dir = tempfile::tempdir().unwrap();
        // The extension says Parquet: the magic bytes decide.
        let path = dir.path().join("really-ipc.parquet");
        let file = File::create(&path).unwrap();
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema()).unwrap();
        w.write(&batch(0, 10)).unwrap();
        w.write(&batch(10, 20_000)).unwrap();
        w.write(&batch(20_010, 0)).unwrap();
        w.finish().unwrap();
        drop(w);
        let f = ArrowFile::open(&path).unwrap();
        assert_eq!(f.format(), FileFormat::ArrowIpc);
        assert_eq!(f.rows(), 20_010);
        assert_eq!(
            f.parts()
                .iter()
                .map(|p| (p.first_row, p.rows))
                .collect::<Vec<_>>(),
            [(0, 10), (10, 20_000), (20_010, 0)]
        );
        let b = read(&f, 1, &[1, 0]);
        assert_eq!(b.len(), 3, "sliced into bounded batches");
        assert!(b.iter().all(|b| b.num_rows() <= BATCH_ROWS));
        assert_eq!(ids(&b, 1), (10..20_010).collect::<Vec<_>>());
        assert!(b[0].column(0).is_null(0) == (10 % 7 == 0));
        assert_eq!(read(&f, 0, &[0])[0].num_rows(), 10);
    }

    #[test]
    fn wrong_inputs_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("x.parquet");
        std::fs::write(&csv, "a,b\n1,2\n3,4\n").unwrap();
        let e = ArrowFile::open(&csv).unwrap_err();
        assert!(matches!(e, Error::UnknownFormat { .. }), "{e}");
        let e = ArrowFile::open(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(e, Error::Open { .. }), "{e}");

        let path = dir.path().join("t.parquet");
        write_parquet(&path, Compression::SNAPPY);
        let f = ArrowFile::open(&path).unwrap();
        assert!(matches!(
            f.read_part(3, &[0]),
            Err(Error::NoSuchPart {
                part: 3,
                parts: 3,
                ..
            })
        ));
        assert!(matches!(
            f.read_part(0, &[3]),
            Err(Error::NoSuchColumn {
                index: 3,
                columns: 3,
                ..
            })
        ));
        // A truncated Parquet file fails on open, not later.
        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.path().join("cut.parquet");
        std::fs::write(&cut, [&bytes[..bytes.len() / 2], b"PAR1"].concat()).unwrap();
        assert!(ArrowFile::open(&cut).is_err());
    }
}

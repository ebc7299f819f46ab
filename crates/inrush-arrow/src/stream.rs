//! Record batches from memory: a DataFrame or any Arrow C stream a caller hands over (the
//! Python module's sources). Unlike a file, a stream can be read once only, in order, and its
//! size is unknown until it ends.
use crate::{Error, Result};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use std::sync::{Arc, Mutex};

/// Rows per unit of work cut from a stream's batches: a DataFrame often arrives as one batch
/// of millions of rows, which one worker alone would encode. Slices share the batch's buffers.
pub const SLICE_ROWS: usize = 16_384;

/// A stream of record batches, shared by the load's options and taken by the one reader that
/// reads it.
#[derive(Clone)]
pub struct BatchStream {
    name: String,
    schema: SchemaRef,
    reader: Arc<Mutex<Option<Box<dyn RecordBatchReader + Send>>>>,
}

impl std::fmt::Debug for BatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchStream")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl BatchStream {
    /// `name` is how messages and the reject log name the stream (`DataFrame`, say).
    pub fn new(name: impl Into<String>, reader: Box<dyn RecordBatchReader + Send>) -> Self {
        BatchStream {
            name: name.into(),
            schema: reader.schema(),
            reader: Arc::new(Mutex::new(Some(reader))),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The batches, cut into slices of at most [`SLICE_ROWS`] rows, each with the 0-based
    /// number of its first row. Only the first call gets them: a stream cannot be read twice.
    pub fn slices(&self) -> Result<impl Iterator<Item = Result<(u64, RecordBatch)>> + Send> {
        let reader = self
            .reader
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .ok_or_else(|| Error::StreamTaken {
                name: self.name.clone(),
            })?;
        let name = self.name.clone();
        let mut next_row = 0u64;
        Ok(reader.flat_map(move |batch| {
            let batch = match batch {
                Ok(batch) => batch,
                Err(cause) => {
                    let (name, cause) = (name.clone(), cause.to_string());
                    return vec![Err(Error::Stream { name, cause })];
                }
            };
            let first_row = next_row;
            next_row += batch.num_rows() as u64;
            (0..batch.num_rows())
                .step_by(SLICE_ROWS)
                .map(|start| {
                    let len = SLICE_ROWS.min(batch.num_rows() - start);
                    Ok((first_row + start as u64, batch.slice(start, len)))
                })
                .collect()
        }))
    }
}

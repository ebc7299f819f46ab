//! The engine's half of a worker: what turns one record's values into the bytes its streams
//! send. The worker reads records, counts their fields and says where a bad one is; how each
//! value is checked and written is the engine's (PostgreSQL's COPY tuples, MariaDB's
//! `LOAD DATA` lines, SQLite's values), behind [`RowEncoder`].

use crate::Error;
use inrush_arrow::{Coercion, Field, Prepared, TextForms};
use inrush_core::TargetColumn;
use inrush_read::encoding::Encoding;
use std::ops::Range;

/// One load's encoder, shared by the workers.
pub trait RowEncoder: Send + Sync {
    /// One worker's writer, with what it keeps from row to row (PostgreSQL's asks the server
    /// for values it cannot read itself, over a session of its own). `nul_free`: the text
    /// fields it is given were checked to hold no NUL byte.
    fn worker(&self, nul_free: bool) -> Box<dyn RowWriter + '_>;

    /// Whether the writer reads [`At::plain`] (worth a scan of every block to know).
    fn reads_plain(&self) -> bool {
        true
    }

    /// How a columnar input's `field` goes into the mapped column `column` (`target`); by
    /// default as its values' text forms ([`RowEncoder::text_forms`]), for [`RowWriter::row`].
    fn coercion(
        &self,
        field: &Field,
        column: usize,
        target: &TargetColumn,
    ) -> inrush_arrow::Result<Coercion> {
        let _ = column;
        Coercion::text(field, target, self.text_forms())
    }

    /// The engine's own text forms of the values whose PostgreSQL forms it does not read
    /// (lists, booleans, zones); PostgreSQL's by default.
    fn text_forms(&self) -> TextForms {
        TextForms::default()
    }

    /// The fields of the row of `data` (rows this encoder wrote) that starts at `pos`, into
    /// `fields` (`None` for NULL); where the row ends, or `None` if `data` is cut short. Only
    /// an engine whose plans route rows ([`crate::route`]) or sort them ([`crate::sort`]) is
    /// asked.
    fn fields<'d>(
        &self,
        data: &'d [u8],
        pos: usize,
        fields: &mut Vec<Option<&'d [u8]>>,
    ) -> Option<usize> {
        let _ = (data, pos, fields);
        None
    }
}

/// Writes one worker's rows.
pub trait RowWriter {
    /// Appends the row made of `fields` (one per mapped column, `None` for NULL) to `out`.
    /// A refused row leaves `out` as it was.
    fn row(&mut self, fields: &[Option<&str>], at: At, out: &mut Vec<u8>) -> Result<(), Refused>;

    /// Appends row `row` of a columnar batch (`columns` in the table's order); by default its
    /// values' text forms, through [`RowWriter::row`].
    fn arrow_row(
        &mut self,
        columns: &[Prepared],
        row: usize,
        at: At,
        texts: &mut ValueTexts,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        as_text(self, columns, row, at, texts, out)
    }

    /// Values the engine read for this worker one by one (PostgreSQL's deferred values).
    fn round_trips(&self) -> u64 {
        0
    }
}

/// [`RowWriter::arrow_row`]'s default, for writers that take text forms only sometimes.
pub fn as_text<W: RowWriter + ?Sized>(
    writer: &mut W,
    columns: &[Prepared],
    row: usize,
    at: At,
    texts: &mut ValueTexts,
    out: &mut Vec<u8>,
) -> Result<(), Refused> {
    texts.render(columns, row, false)?;
    let ValueTexts { text, spans } = texts;
    let fields = spans.iter().map(|s| s.clone().map(|r| &text[r]));
    gathered(spans.len(), fields, |fields| writer.row(fields, at, out))
}

/// Where a row stands, beside its values.
#[derive(Debug, Clone, Copy)]
pub struct At {
    /// The fields known to need no escaping.
    pub plain: PlainFields,
    /// Its place in the whole input: later inputs' rows after every row of earlier ones, and
    /// within an input in its order (`--on-conflict` keeps the first or the last of a key).
    pub position: u64,
}

/// Why a row was not written.
#[derive(Debug)]
pub enum Refused {
    /// Column `.0`'s value, for reason `.1`: the row's fault.
    Value(usize, String),
    /// The engine could not be asked: the load's fault, not the row's.
    Failed(Error),
}

/// The fields of a row known to hold no backslash, tab, line feed, carriage return or NUL (the
/// input block they were cut from has none), so a target that escapes those bytes in a line of
/// text can copy them without looking: bit `i` for field `i`. Fields past the 64th are never
/// known. (A mask, not a flag beside each field: the fields stay a plain `&str` each.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlainFields(pub u64);

impl PlainFields {
    /// The mask of one flag per field, in field order (the first 64 count).
    pub fn from_flags(flags: impl IntoIterator<Item = bool>) -> Self {
        let set = flags
            .into_iter()
            .take(64)
            .enumerate()
            .filter(|&(_, plain)| plain);
        PlainFields(set.fold(0, |mask, (i, _)| mask | 1 << i))
    }

    pub fn has(self, i: usize) -> bool {
        i < 64 && self.0 >> i & 1 == 1
    }
}

/// A columnar row's values as text, reused from row to row: an allocation per value cost
/// more than rendering it.
#[derive(Default)]
pub struct ValueTexts {
    pub text: String,
    /// Each value's bytes in `text`; `None` for NULL.
    pub spans: Vec<Option<Range<usize>>>,
}

impl ValueTexts {
    /// Renders row `row` of `columns`; a value with a NUL byte is refused unless the engine's
    /// text holds one (`nul`), as PostgreSQL's does not.
    pub fn render(&mut self, columns: &[Prepared], row: usize, nul: bool) -> Result<(), Refused> {
        self.fill(columns, row, nul, false)
    }

    /// [`Self::render`] for a writer that takes binary values as their bytes
    /// ([`Prepared::bytes`]): those are not rendered (their `\x` hex would be thrown away),
    /// and their span is `None`, as a NULL's.
    pub fn render_but_bytes(
        &mut self,
        columns: &[Prepared],
        row: usize,
        nul: bool,
    ) -> Result<(), Refused> {
        self.fill(columns, row, nul, true)
    }

    fn fill(
        &mut self,
        columns: &[Prepared],
        row: usize,
        nul: bool,
        bytes: bool,
    ) -> Result<(), Refused> {
        self.text.clear();
        self.spans.clear();
        for (i, column) in columns.iter().enumerate() {
            if column.is_null(row) || (bytes && column.bytes(row).is_some()) {
                self.spans.push(None);
                continue;
            }
            let start = self.text.len();
            column.text(row, &mut self.text);
            if !nul && self.text[start..].contains('\0') {
                return Err(Refused::Value(i, Encoding::Utf8.undecodable_reason(b"\0")));
            }
            self.spans.push(Some(start..self.text.len()));
        }
        Ok(())
    }
}

/// Calls `f` with `fields` (`width` of them) in one slice, gathered by one tight loop: an
/// iterator behind `dyn` cost a call and a chain of loads per field, 14% of a MariaDB load's
/// client CPU. Rows this wide fill a buffer on the stack; wider ones, a Vec.
pub fn gathered<'f, R>(
    width: usize,
    fields: impl Iterator<Item = Option<&'f str>>,
    f: impl FnOnce(&[Option<&'f str>]) -> R,
) -> R {
    let mut inline = [None; INLINE_FIELDS];
    if width <= INLINE_FIELDS {
        for (slot, field) in inline.iter_mut().zip(fields) {
            *slot = field;
        }
        return f(&inline[..width]);
    }
    f(&fields.collect::<Vec<_>>())
}

/// Rows of up to this many fields reach the writer from a buffer on the stack.
const INLINE_FIELDS: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fields_keep_the_first_64_flags_in_order() {
        let flags = (0..70).map(|i| i % 3 == 0 || i >= 63);
        let plain = PlainFields::from_flags(flags);
        for i in 0..70 {
            assert_eq!(plain.has(i), i < 64 && (i % 3 == 0 || i == 63), "field {i}");
        }
        assert_eq!(PlainFields::from_flags([]), PlainFields::default());
    }

    #[test]
    fn a_binary_value_is_rendered_only_for_a_writer_that_takes_text() {
        use arrow_array::{Array, BinaryArray, StringArray};
        let bytes = BinaryArray::from(vec![Some(&b"\x01"[..]), None]);
        let words = StringArray::from(vec![Some("a"), Some("b")]);
        let arrays: [&dyn Array; 2] = [&bytes, &words];
        let coercions: Vec<Coercion> = arrays
            .iter()
            .map(|array| {
                let field = Field::new("c", array.data_type().clone(), true);
                let column = TargetColumn {
                    name: "c".into(),
                    type_sql: "text".into(),
                    sql_type: inrush_core::SqlType::Text,
                    not_null: false,
                };
                Coercion::text(&field, &column, TextForms::default()).unwrap()
            })
            .collect();
        let columns: Vec<Prepared> = coercions
            .iter()
            .zip(arrays)
            .map(|(c, a)| c.prepare(a))
            .collect();
        let mut texts = ValueTexts::default();
        let shown = |texts: &ValueTexts| -> Vec<Option<String>> {
            let spans = texts.spans.iter();
            spans
                .map(|s| s.clone().map(|r| texts.text[r].to_string()))
                .collect()
        };
        texts.render(&columns, 0, false).unwrap();
        assert_eq!(shown(&texts), [Some("\\x01".into()), Some("a".into())]);
        texts.render_but_bytes(&columns, 0, false).unwrap();
        assert_eq!(shown(&texts), [None, Some("a".into())]);
        texts.render_but_bytes(&columns, 1, false).unwrap();
        assert_eq!(shown(&texts), [None, Some("b".into())]);
    }

    #[test]
    fn gathered_fields_are_the_fields_at_every_width() {
        for width in [0, 1, INLINE_FIELDS, INLINE_FIELDS + 1, 100] {
            let names: Vec<String> = (0..width).map(|i| i.to_string()).collect();
            let fields = names.iter().map(|n| Some(n.as_str()));
            let back = gathered(width, fields, |f| {
                f.iter().map(|v| v.unwrap().to_owned()).collect::<Vec<_>>()
            });
            assert_eq!(back, names);
        }
    }
}

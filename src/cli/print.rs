//! Printing query results as a text table, CSV or JSON lines, to any [`Write`].

use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::FormatOptions;
use datafusion::arrow::util::pretty::{
    pretty_format_batches_with_options, pretty_format_batches_with_schema,
};
use serde_json::{Map, Value};

use super::CliResult;
use super::args::{JsonBigInt, OutputFormat};
use super::json::column_to_json;

/// Prints one result (its schema and batches) in `format`.
///
/// Results without columns (DDL statements) print nothing.
pub fn print_batches<W: Write>(
    out: &mut W,
    format: OutputFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> CliResult<()> {
    print_batches_with(out, format, JsonBigInt::default(), schema, batches)
}

/// [`print_batches`], printing JSON integers beyond 2^53 as `big_ints` says.
pub fn print_batches_with<W: Write>(
    out: &mut W,
    format: OutputFormat,
    big_ints: JsonBigInt,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> CliResult<()> {
    if schema.fields().is_empty() {
        return Ok(());
    }
    match format {
        OutputFormat::Table => print_table(out, schema, batches),
        OutputFormat::Csv => print_csv(out, schema, batches),
        OutputFormat::Json => print_json_with(out, batches, big_ints),
    }
}

/// A boxed text table, with a header even when there are no rows; NULL reads `NULL`, so that
/// it differs from an empty string.
pub fn print_table<W: Write>(
    out: &mut W,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> CliResult<()> {
    if batches.iter().all(|b| b.num_rows() == 0) {
        let table = pretty_format_batches_with_schema(Arc::clone(schema), &[])?;
        writeln!(out, "{table}")?;
    } else {
        let options = FormatOptions::default()
            .with_display_error(true)
            .with_null("NULL");
        let table = pretty_format_batches_with_options(batches, &options)?;
        writeln!(out, "{table}")?;
    }
    Ok(())
}

/// CSV: a header row, then one row per record; fields are quoted when they hold a comma,
/// quote, CR or LF (RFC 4180); NULL is an empty field and an empty string `""` (as
/// PostgreSQL's CSV). Lines end with `\n`.
pub fn print_csv<W: Write>(
    out: &mut W,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> CliResult<()> {
    let header: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| csv_field(f.name()))
        .collect();
    writeln!(out, "{}", header.join(","))?;
    for batch in batches {
        let columns = batch_to_json(batch)?;
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = columns.iter().map(|c| csv_cell(&c[row])).collect();
            writeln!(out, "{}", cells.join(","))?;
        }
    }
    Ok(())
}

/// JSON lines: one object per row, keys in column order.
pub fn print_json<W: Write>(out: &mut W, batches: &[RecordBatch]) -> CliResult<()> {
    print_json_with(out, batches, JsonBigInt::default())
}

/// [`print_json`], with integers beyond 2^53 (snapshot ids, say) as strings when `big_ints`
/// is [`JsonBigInt::String`]: JavaScript and jq read JSON numbers as doubles, which keep
/// integers exact only up to 2^53.
pub fn print_json_with<W: Write>(
    out: &mut W,
    batches: &[RecordBatch],
    big_ints: JsonBigInt,
) -> CliResult<()> {
    for batch in batches {
        let columns = batch_to_json(batch)?;
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let object: Map<String, Value> = schema
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| (f.name().clone(), c[row].clone()))
                .collect();
            let mut object = Value::Object(object);
            if big_ints == JsonBigInt::String {
                big_ints_as_strings(&mut object);
            }
            serde_json::to_writer(&mut *out, &object)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The largest integer a double holds exactly, and every one below it.
const EXACT_IN_DOUBLE: u64 = 1 << 53;

/// Integers of `value` (at any depth) beyond +-2^53 as decimal strings.
fn big_ints_as_strings(value: &mut Value) {
    match value {
        Value::Number(n) => {
            let big = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > EXACT_IN_DOUBLE,
                (None, Some(i)) => i.unsigned_abs() > EXACT_IN_DOUBLE,
                (None, None) => false,
            };
            if big {
                *value = Value::String(n.to_string());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(big_ints_as_strings),
        Value::Object(fields) => fields.values_mut().for_each(big_ints_as_strings),
        _ => {}
    }
}

/// Every column of a batch as JSON values.
fn batch_to_json(batch: &RecordBatch) -> CliResult<Vec<Vec<Value>>> {
    let schema = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| column_to_json(f, c.as_ref()))
        .collect::<Result<_, _>>()?;
    Ok(columns)
}

/// The CSV text of a value: strings as they are, nested values as compact JSON, NULL empty.
fn csv_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One CSV field: NULL empty, an empty string quoted.
fn csv_cell(value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "\"\"".into(),
        other => csv_field(&csv_text(other)),
    }
}

/// Quotes a field when RFC 4180 requires it.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {

    use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch() -> RecordBatch {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let b: ArrayRef = Arc::new(StringArray::from(vec![Some("x,\"y\""), Some("plain")]));
        RecordBatch::try_from_iter([("a", a), ("b, c", b)]).unwrap()
    }

    fn render(format: OutputFormat, batches: &[RecordBatch], schema: &SchemaRef) -> String {
        let mut out = Vec::new();
        print_batches(&mut out, format, schema, batches).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_quotes_per_rfc_4180() {
        let b = batch();
        let text = render(OutputFormat::Csv, std::slice::from_ref(&b), &b.schema());
        assert_eq!(text, "a,\"b, c\"\n1,\"x,\"\"y\"\"\"\n,plain\n");
    }

    #[test]
    fn json_lines_keep_column_order() {
        let b = batch();
        let text = render(OutputFormat::Json, std::slice::from_ref(&b), &b.schema());
        assert_eq!(
            text,
            "{\"a\":1,\"b, c\":\"x,\\\"y\\\"\"}\n{\"a\":null,\"b, c\":\"plain\"}\n"
        );
    }

    #[test]
    fn table_has_header_without_rows() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
        let text = render(OutputFormat::Table, &[], &schema);
        assert_eq!(text, "+---+\n| n |\n+---+\n+---+\n");
        assert_eq!(render(OutputFormat::Csv, &[], &schema), "n\n");
        assert_eq!(render(OutputFormat::Json, &[], &schema), "");
    }

    #[test]
    fn table_prints_rows() {
        let b = batch();
        let text = render(OutputFormat::Table, std::slice::from_ref(&b), &b.schema());
        assert!(text.contains("| 1    | x,\"y\" |"), "{text}");
        assert!(text.contains("| NULL | plain |"), "{text}");
    }

    #[test]
    fn null_differs_from_an_empty_string() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some(""), None, Some("NULL")]));
        let b = RecordBatch::try_from_iter([("s", a)]).unwrap();
        let text = render(OutputFormat::Table, std::slice::from_ref(&b), &b.schema());
        let rows: Vec<&str> = text.lines().skip(3).take(2).collect();
        assert_eq!(rows, ["|      |", "| NULL |"], "{text}");
        let csv = render(OutputFormat::Csv, std::slice::from_ref(&b), &b.schema());
        assert_eq!(csv, "s\n\"\"\n\nNULL\n");
        let json = render(OutputFormat::Json, std::slice::from_ref(&b), &b.schema());
        assert_eq!(json, "{\"s\":\"\"}\n{\"s\":null}\n{\"s\":\"NULL\"}\n");
    }

    #[test]
    fn no_columns_prints_nothing() {
        let schema = Arc::new(Schema::empty());
        assert_eq!(render(OutputFormat::Table, &[], &schema), "");
    }
}

//! Comparing a metadata table's rows with the rows an answer file lists: the same column names in
//! the same order, then every row column by column, as a multiset unless the relation has a
//! defined order. Maps compare as sets of `[key, value]` pairs, structs by key.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value};

use crate::render::{self, Style, json_equal};

/// How many unmatched rows one comparison describes in full.
const DESCRIBED_ROWS: usize = 3;
/// Longest rendering of one value in a message.
const VALUE_CHARS: usize = 240;

/// The rows a query returned, rendered in the oracle's conventions.
pub struct Actual {
    pub fields: Vec<FieldRef>,
    pub rows: Vec<Vec<Value>>,
}

impl Actual {
    pub fn from_batches(
        schema_fields: Vec<FieldRef>,
        batches: &[RecordBatch],
    ) -> Result<Self, String> {
        Ok(Self {
            fields: schema_fields,
            rows: render::rows(batches, Style::PYICEBERG)?,
        })
    }

    pub fn names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name().clone()).collect()
    }
}

/// `{warehouse}` (the oracle's placeholder) replaced by `written_at` in every string.
pub fn substitute_warehouse(value: &Value, written_at: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("{warehouse}", written_at)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_warehouse(v, written_at))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute_warehouse(v, written_at)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Puts a value into a canonical form for its Arrow type: map pairs sorted by key (maps have
/// no order), recursively through structs and lists. Values of another shape stay as they are.
fn normalize(value: &Value, data_type: &DataType) -> Value {
    match (value, data_type) {
        (Value::Array(pairs), DataType::Map(entries, _)) => {
            let value_type = match entries.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => kv[1].data_type().clone(),
                _ => return value.clone(),
            };
            let mut pairs: Vec<Value> = pairs
                .iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([k, v]) => Value::from(vec![k.clone(), normalize(v, &value_type)]),
                    _ => pair.clone(),
                })
                .collect();
            pairs.sort_by_key(|pair| pair.get(0).map(Value::to_string).unwrap_or_default());
            Value::Array(pairs)
        }
        (Value::Object(object), DataType::Struct(fields)) => {
            let mut out = Map::new();
            for (key, v) in object {
                let normalized = match fields.iter().find(|f| f.name() == key) {
                    Some(field) => normalize(v, field.data_type()),
                    None => v.clone(),
                };
                out.insert(key.clone(), normalized);
            }
            Value::Object(out)
        }
        (Value::Array(items), DataType::List(element) | DataType::LargeList(element)) => {
            Value::Array(
                items
                    .iter()
                    .map(|v| normalize(v, element.data_type()))
                    .collect(),
            )
        }
        _ => value.clone(),
    }
}

/// A key that equal rows share: the exact scalar values (strings, integers, booleans, nulls),
/// leaving out floats, structs and lists, whose equality is looser.
fn bucket_key(row: &[Value]) -> String {
    row.iter()
        .map(|v| match v {
            Value::Number(n) if n.is_f64() => "~".to_string(),
            Value::Array(_) | Value::Object(_) => "~".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(VALUE_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The columns where two rows differ, as `column: expected X, got Y`.
fn differences(names: &[String], expected: &[Value], actual: &[Value]) -> Vec<String> {
    names
        .iter()
        .zip(expected.iter().zip(actual))
        .filter(|(_, (e, a))| !json_equal(e, a))
        .map(|(name, (e, a))| format!("{name}: expected {}, got {}", short(e), short(a)))
        .collect()
}

/// icefloe's `files` relations end with the spec's v3 delete-file fields, which Spark shows and
/// PyIceberg 0.12 does not; the PyIceberg columns must come first, in PyIceberg's order.
pub const FILES_ADDITIONS: [&str; 3] = [
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
];

/// `names` without a trailing [`FILES_ADDITIONS`].
fn without_additions(names: &[String]) -> &[String] {
    match names.len().checked_sub(FILES_ADDITIONS.len()) {
        Some(start) if names[start..].iter().eq(FILES_ADDITIONS.iter()) => &names[..start],
        _ => names,
    }
}

/// Compares `actual` with the expected rows (JSON objects). Returns every problem found; an
/// empty list means they agree.
pub fn compare(expected: &[Value], actual: &Actual, ordered: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let actual_names = actual.names();
    let columns: Vec<(usize, String)> = match expected.first().and_then(Value::as_object) {
        Some(first) => {
            let expected_names: Vec<String> = first.keys().cloned().collect();
            if expected_names != without_additions(&actual_names) {
                problems.push(format!(
                    "columns: expected {expected_names:?}, got {actual_names:?}"
                ));
            }
            expected_names
                .into_iter()
                .filter_map(|n| Some((actual_names.iter().position(|a| *a == n)?, n)))
                .collect()
        }
        None => actual_names.iter().cloned().enumerate().collect(),
    };
    let names: Vec<String> = columns.iter().map(|(_, n)| n.clone()).collect();
    let expected_rows: Vec<Vec<Value>> = expected
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|(i, name)| normalize(&row[name.as_str()], actual.fields[*i].data_type()))
                .collect()
        })
        .collect();
    let actual_rows: Vec<Vec<Value>> = actual
        .rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|(i, _)| normalize(&row[*i], actual.fields[*i].data_type()))
                .collect()
        })
        .collect();
    if expected_rows.len() != actual_rows.len() {
        problems.push(format!(
            "{} rows expected, {} got",
            expected_rows.len(),
            actual_rows.len()
        ));
    }
    if ordered {
        problems.extend(compare_ordered(&names, &expected_rows, &actual_rows));
    } else {
        problems.extend(compare_multiset(&names, expected_rows, actual_rows));
    }
    problems
}

fn compare_ordered(
    names: &[String],
    expected: &[Vec<Value>],
    actual: &[Vec<Value>],
) -> Vec<String> {
    expected
        .iter()
        .zip(actual)
        .enumerate()
        .filter_map(|(i, (e, a))| {
            let diffs = differences(names, e, a);
            (!diffs.is_empty()).then(|| format!("row {i}: {}", diffs.join("; ")))
        })
        .take(DESCRIBED_ROWS * 2)
        .collect()
}

fn compare_multiset(
    names: &[String],
    expected: Vec<Vec<Value>>,
    actual: Vec<Vec<Value>>,
) -> Vec<String> {
    let mut buckets: HashMap<String, Vec<Vec<Value>>> = HashMap::new();
    for row in actual {
        buckets.entry(bucket_key(&row)).or_default().push(row);
    }
    let mut unmatched_expected = Vec::new();
    for row in expected {
        let bucket = buckets.get_mut(&bucket_key(&row));
        let found = bucket.and_then(|rows| {
            let at = rows
                .iter()
                .position(|a| json_equal(&Value::from(row.clone()), &Value::from(a.clone())))?;
            Some(rows.swap_remove(at))
        });
        if found.is_none() {
            unmatched_expected.push(row);
        }
    }
    let unmatched_actual: Vec<Vec<Value>> = buckets.into_values().flatten().collect();
    describe_unmatched(names, &unmatched_expected, &unmatched_actual)
}

/// Each of the first unmatched expected rows beside the unmatched actual row closest to it.
fn describe_unmatched(
    names: &[String],
    expected: &[Vec<Value>],
    actual: &[Vec<Value>],
) -> Vec<String> {
    let mut problems = Vec::new();
    for row in expected.iter().take(DESCRIBED_ROWS) {
        let closest = actual
            .iter()
            .map(|a| differences(names, row, a))
            .min_by_key(Vec::len);
        match closest {
            Some(diffs) => problems.push(format!("row differs: {}", diffs.join("; "))),
            None => problems.push(format!("row missing: {}", short(&Value::from(row.clone())))),
        }
    }
    if expected.len() > DESCRIBED_ROWS {
        problems.push(format!(
            "{} more expected rows not found",
            expected.len() - DESCRIBED_ROWS
        ));
    }
    if expected.is_empty() {
        for row in actual.iter().take(DESCRIBED_ROWS) {
            problems.push(format!(
                "unexpected row: {}",
                short(&Value::from(row.clone()))
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use serde_json::json;
    use std::sync::Arc;

    fn actual(rows: Vec<Vec<Value>>) -> Actual {
        Actual {
            fields: vec![
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Field::new("b", DataType::Utf8, true)),
            ],
            rows,
        }
    }

    #[test]
    fn multisets_ignore_order_and_report_differences() {
        let expected = vec![json!({"a": 1, "b": "x"}), json!({"a": 2, "b": "y"})];
        let same = actual(vec![vec![json!(2), json!("y")], vec![json!(1), json!("x")]]);
        assert!(compare(&expected, &same, false).is_empty());
        assert!(!compare(&expected, &same, true).is_empty());
        let wrong = actual(vec![vec![json!(2), json!("y")], vec![json!(1), json!("z")]]);
        let problems = compare(&expected, &wrong, false);
        assert_eq!(problems, vec!["row differs: b: expected \"x\", got \"z\""]);
    }

    #[test]
    fn column_names_and_order_are_checked() {
        let expected = vec![json!({"b": "x", "a": 1})];
        let problems = compare(&expected, &actual(vec![vec![json!(1), json!("x")]]), false);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("columns:"));
    }

    #[test]
    fn the_warehouse_placeholder_is_replaced() {
        let v = json!({"p": "{warehouse}/db/t", "l": ["{warehouse}/x"]});
        assert_eq!(
            substitute_warehouse(&v, "file:///w"),
            json!({"p": "file:///w/db/t", "l": ["file:///w/x"]})
        );
    }
}

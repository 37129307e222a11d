//! What time travel must give, decided from a table's metadata JSON alone (never through
//! icefloe): the instant at which a snapshot was the current state of `main`, whether a
//! snapshot's schema is the current one, and what an incremental read between two snapshots
//! must do.
//!
//! "Current at an instant" follows the spec: the last `snapshot-log` entry at or before it;
//! before the log starts (or without a log), the newest ancestor of the current snapshot
//! committed at or before it.

use serde_json::Value;

/// An instant that selects a snapshot, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Instant {
    /// The snapshot was current on `main` at this instant (epoch milliseconds).
    At(i64),
    /// The snapshot was current, but the next commit has the same timestamp.
    NoGap,
    /// The snapshot was never current on `main` (a branch-only or expired-from-log snapshot).
    NeverCurrent,
}

/// The snapshot with this id in the metadata JSON.
pub fn snapshot(metadata: &Value, snapshot_id: i64) -> Option<&Value> {
    metadata["snapshots"]
        .as_array()?
        .iter()
        .find(|s| s["snapshot-id"].as_i64() == Some(snapshot_id))
}

/// `snapshot_id`, then its parent, grandparent, ... while they are in the metadata.
pub fn ancestors(metadata: &Value, snapshot_id: i64) -> Vec<&Value> {
    let mut chain = Vec::new();
    let mut next = snapshot(metadata, snapshot_id);
    while let Some(s) = next {
        if chain.len() > metadata["snapshots"].as_array().map_or(0, Vec::len) {
            break; // a cycle in broken metadata
        }
        chain.push(s);
        next = s["parent-snapshot-id"]
            .as_i64()
            .and_then(|parent| snapshot(metadata, parent));
    }
    chain
}

fn current_snapshot_id(metadata: &Value) -> Option<i64> {
    metadata["current-snapshot-id"]
        .as_i64()
        .filter(|&id| id != -1)
        .or_else(|| metadata["refs"]["main"]["snapshot-id"].as_i64())
}

/// Intervals `(snapshot id, from, until)` during which each snapshot was current on `main`:
/// the ancestors of the current snapshot committed before the log starts, then the log.
fn current_windows(metadata: &Value) -> Vec<(i64, i64, Option<i64>)> {
    let log: Vec<(i64, i64)> = metadata["snapshot-log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["snapshot-id"].as_i64()?, e["timestamp-ms"].as_i64()?)))
        .collect();
    let log_start = log.first().map(|&(_, ts)| ts);
    let mut before_log: Vec<(i64, i64)> = current_snapshot_id(metadata)
        .map(|id| ancestors(metadata, id))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| Some((s["snapshot-id"].as_i64()?, s["timestamp-ms"].as_i64()?)))
        .filter(|&(_, ts)| log_start.is_none_or(|start| ts < start))
        .collect();
    before_log.reverse();
    let timeline: Vec<(i64, i64)> = before_log.into_iter().chain(log).collect();
    timeline
        .iter()
        .enumerate()
        .map(|(i, &(id, from))| (id, from, timeline.get(i + 1).map(|&(_, ts)| ts)))
        .collect()
}

/// The snapshot current on `main` at `instant` (`None`: before the first one).
pub fn current_at(metadata: &Value, instant: i64) -> Option<i64> {
    current_windows(metadata)
        .into_iter()
        .rev()
        .find(|&(_, from, _)| from <= instant)
        .map(|(id, _, _)| id)
}

/// An instant inside the first interval in which `snapshot_id` was current on `main` that is
/// at least a millisecond long: its middle (its start when it is the last one).
pub fn instant_current(metadata: &Value, snapshot_id: i64) -> Instant {
    let windows: Vec<(i64, i64, Option<i64>)> = current_windows(metadata)
        .into_iter()
        .filter(|&(id, _, _)| id == snapshot_id)
        .collect();
    if windows.is_empty() {
        return Instant::NeverCurrent;
    }
    windows
        .iter()
        .filter_map(|&(_, from, until)| match until {
            None => Some(from),
            Some(until) if until > from => Some(from + (until - from - 1) / 2),
            Some(_) => None,
        })
        .find(|&instant| current_at(metadata, instant) == Some(snapshot_id))
        .map_or(Instant::NoGap, Instant::At)
}

/// How a snapshot's own schema compares with the table's current schema (top-level fields).
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaFit {
    Same,
    /// Same fields, except that these columns (by position) were `int` and are now `long`.
    IntWidened(Vec<usize>),
    /// Anything else: answers computed with the current schema do not apply.
    Other,
}

fn schema_by_id(metadata: &Value, schema_id: Option<i64>) -> Option<&Value> {
    let listed = metadata["schemas"].as_array().and_then(|all| {
        all.iter()
            .find(|s| s["schema-id"].as_i64() == schema_id.or(Some(0)))
    });
    listed.or_else(|| metadata.get("schema"))
}

/// The snapshot's schema (`schema-id`; the current one when absent) against the current one.
pub fn snapshot_schema_fit(metadata: &Value, snapshot_id: i64) -> SchemaFit {
    let current_id = metadata["current-schema-id"].as_i64();
    let snapshot_schema_id = snapshot(metadata, snapshot_id).and_then(|s| s["schema-id"].as_i64());
    let fields = |schema: Option<&Value>| -> Vec<(Value, Value, Value)> {
        schema
            .and_then(|s| s["fields"].as_array())
            .into_iter()
            .flatten()
            .map(|f| (f["id"].clone(), f["name"].clone(), f["type"].clone()))
            .collect()
    };
    let current = fields(schema_by_id(metadata, current_id));
    let old = match snapshot_schema_id {
        None => return SchemaFit::Same,
        Some(id) => fields(schema_by_id(metadata, Some(id))),
    };
    if old == current {
        return SchemaFit::Same;
    }
    let same_names = old.len() == current.len()
        && old
            .iter()
            .zip(&current)
            .all(|(o, c)| o.0 == c.0 && o.1 == c.1);
    let widened: Vec<usize> = (0..old.len())
        .filter(|&i| old[i].2 != current[i].2)
        .collect();
    let all_int_to_long = widened
        .iter()
        .all(|&i| old[i].2 == "int" && current[i].2 == "long");
    if same_names && all_int_to_long {
        SchemaFit::IntWidened(widened)
    } else {
        SchemaFit::Other
    }
}

/// What reading the rows appended after `from` up to `to` must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Incremental {
    /// Every snapshot after `from` up to `to` is an append: the rows they added.
    Appends,
    /// Snapshots that are not appends lie in between: an error naming one of them.
    NonAppend(Vec<i64>),
    /// `from` is not an ancestor of `to`.
    NotAncestor,
}

/// Decides an incremental read from `from` (exclusive) to `to` (inclusive).
pub fn incremental(metadata: &Value, from: i64, to: i64) -> Incremental {
    let chain = ancestors(metadata, to);
    let Some(end) = chain
        .iter()
        .position(|s| s["snapshot-id"].as_i64() == Some(from))
    else {
        return Incremental::NotAncestor;
    };
    let others: Vec<i64> = chain[..end]
        .iter()
        .filter(|s| s["summary"]["operation"].as_str() != Some("append"))
        .filter_map(|s| s["snapshot-id"].as_i64())
        .collect();
    if others.is_empty() {
        Incremental::Appends
    } else {
        Incremental::NonAppend(others)
    }
}

/// Whether an error text names the table (its last name part or directory) and what was asked.
pub fn names_both(error: &str, table: &str, asked: &[String]) -> bool {
    let text = error.to_lowercase();
    text.contains(&table.to_lowercase()) && asked.iter().any(|a| text.contains(&a.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata() -> Value {
        // 1 <- 2 <- 3 on main; 4 a branch-only child of 2; rollback to 2 then 5 <- 2.
        json!({
            "current-snapshot-id": 5,
            "current-schema-id": 1,
            "schemas": [
                {"schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "int"}]},
                {"schema-id": 1, "fields": [{"id": 1, "name": "a", "type": "long"}]}
            ],
            "snapshots": [
                {"snapshot-id": 1, "timestamp-ms": 100, "schema-id": 0, "summary": {"operation": "append"}},
                {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 200, "schema-id": 0, "summary": {"operation": "append"}},
                {"snapshot-id": 3, "parent-snapshot-id": 2, "timestamp-ms": 300, "schema-id": 1, "summary": {"operation": "delete"}},
                {"snapshot-id": 4, "parent-snapshot-id": 2, "timestamp-ms": 350, "summary": {"operation": "append"}},
                {"snapshot-id": 5, "parent-snapshot-id": 2, "timestamp-ms": 500, "schema-id": 1, "summary": {"operation": "append"}}
            ],
            "snapshot-log": [
                {"snapshot-id": 1, "timestamp-ms": 100},
                {"snapshot-id": 2, "timestamp-ms": 200},
                {"snapshot-id": 3, "timestamp-ms": 300},
                {"snapshot-id": 2, "timestamp-ms": 400},
                {"snapshot-id": 5, "timestamp-ms": 400}
            ]
        })
    }

    #[test]
    fn instants_follow_the_log() {
        let m = metadata();
        assert_eq!(instant_current(&m, 1), Instant::At(149));
        assert_eq!(instant_current(&m, 2), Instant::At(249));
        assert_eq!(instant_current(&m, 3), Instant::At(349));
        assert_eq!(instant_current(&m, 4), Instant::NeverCurrent);
        assert_eq!(instant_current(&m, 5), Instant::At(400));
        assert_eq!(current_at(&m, 99), None);
        assert_eq!(current_at(&m, 400), Some(5));
    }

    #[test]
    fn a_shared_timestamp_has_no_gap() {
        let mut m = metadata();
        m["snapshot-log"] = json!([
            {"snapshot-id": 1, "timestamp-ms": 100},
            {"snapshot-id": 2, "timestamp-ms": 100},
            {"snapshot-id": 5, "timestamp-ms": 500}
        ]);
        assert_eq!(instant_current(&m, 1), Instant::NoGap);
        assert_eq!(instant_current(&m, 2), Instant::At(299));
    }

    #[test]
    fn without_a_log_the_ancestors_of_main_count() {
        let mut m = metadata();
        m["snapshot-log"] = json!([]);
        assert_eq!(instant_current(&m, 1), Instant::At(149));
        assert_eq!(instant_current(&m, 2), Instant::At(349));
        assert_eq!(instant_current(&m, 3), Instant::NeverCurrent);
        assert_eq!(instant_current(&m, 5), Instant::At(500));
        // A log trimmed to its last entry: older ancestors come first.
        m["snapshot-log"] = json!([{"snapshot-id": 5, "timestamp-ms": 500}]);
        assert_eq!(current_at(&m, 250), Some(2));
    }

    #[test]
    fn schemas_compare() {
        let m = metadata();
        assert_eq!(snapshot_schema_fit(&m, 5), SchemaFit::Same);
        assert_eq!(snapshot_schema_fit(&m, 1), SchemaFit::IntWidened(vec![0]));
        assert_eq!(snapshot_schema_fit(&m, 4), SchemaFit::Same);
    }

    #[test]
    fn incremental_reads_decide() {
        let m = metadata();
        assert_eq!(incremental(&m, 1, 2), Incremental::Appends);
        assert_eq!(incremental(&m, 1, 5), Incremental::Appends);
        assert_eq!(incremental(&m, 1, 3), Incremental::NonAppend(vec![3]));
        assert_eq!(incremental(&m, 3, 5), Incremental::NotAncestor);
        assert_eq!(incremental(&m, 4, 4), Incremental::Appends);
    }
}

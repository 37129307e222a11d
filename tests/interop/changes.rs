//! Table changes as data against PyIceberg's models of the same REST objects
//! (`pyiceberg.table.update`): PyIceberg reads icefloe's JSON of every update and
//! requirement, applies the updates with `update_table_metadata` to the same base metadata
//! as icefloe's [`TableMetadata::apply`], checks the requirements against the same table, and
//! reads icefloe's `CommitTableRequest` (which icefloe reads back from PyIceberg's JSON).
//! The Python side is `tests/interop/changes.py`; one Python process per test.
//!
//! The two results are compared whole, after normalising what legitimately differs:
//! `last-updated-ms` and the snapshot-log time of a snapshot made current without being added
//! (both "now", read from two clocks); a `parent-snapshot-id` naming a removed snapshot (Java
//! and icefloe keep it, PyIceberg 0.12 clears it). The scenarios avoid the rules where
//! PyIceberg 0.12 departs from Java's builder, which icefloe follows: ids of added
//! schemas/specs/orders are the ones PyIceberg would keep as given, no list moves `main`
//! twice (Java drops the intermediate log entry), no removal cuts the snapshot log in the
//! middle (Java drops the history before it), and nothing is upgraded to v3 (PyIceberg 0.12
//! supports format versions up to 2).

use std::path::{Path, PathBuf};
use std::process::Command;

use icefloe::spec::{
    ApplyContext, CommitTableRequest, TableMetadata, TableRequirement, TableUpdate,
};
use serde_json::{Value, json};

use super::{python, say};

/// A time after every fixture's `last-updated-ms`.
const NOW: i64 = 1_900_000_000_000;

/// The refs table PyIceberg wrote (v2; snapshots A <- B <- C <- D and B <- E; `main` at E,
/// `dev` at D, tags `v1` (A) and `v2` (B), branch `audit` at A; the snapshot log A, B, E).
const REFS: &str = "tests/fixtures/pyiceberg/wh1/db/refs/metadata/\
                    00007-e38555de-eef1-42b8-9967-c5638edfaed1.metadata.json";
const A: i64 = 7019671183757973925;
const B: i64 = 5462064573681746782;
const C: i64 = 7170174670689733955;
const E: i64 = 5873455170700728928;

/// A v1 table Impala wrote.
const V1: &str = "tests/fixtures/external/impala_partitioned_v1/metadata/v2.metadata.json";

fn fixture(path: &str) -> TableMetadata {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    TableMetadata::parse(&std::fs::read(&path).unwrap()).unwrap()
}

fn updates(values: Value) -> Vec<TableUpdate> {
    serde_json::from_value(values).unwrap()
}

/// Runs `changes.py mode` on `input` (one process) and returns its output.
fn changes_py(python: &Path, mode: &str, input: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (source, target): (PathBuf, PathBuf) =
        (dir.path().join("in.json"), dir.path().join("out.json"));
    std::fs::write(&source, serde_json::to_vec(input).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/changes.py");
    let out = Command::new(python)
        .arg(&script)
        .args([
            std::ffi::OsStr::new(mode),
            source.as_os_str(),
            target.as_os_str(),
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "changes.py {mode} failed:\n{text}");
    serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap()
}

/// One list of updates applied by both to `base` (`None`: a new table).
struct Scenario {
    name: &'static str,
    base: Option<TableMetadata>,
    updates: Vec<TableUpdate>,
    previous_file: Option<&'static str>,
}

fn scenarios() -> Vec<Scenario> {
    let refs = fixture(REFS);
    let new_schema = json!({"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"},
        {"id": 2, "name": "category", "required": false, "type": "string"},
        {"id": 3, "name": "value", "required": false, "type": "long"},
        {"id": 4, "name": "note", "required": false, "type": "string"}]});
    let bucket_spec = json!({"spec-id": 1, "fields": [
        {"name": "id_bucket", "transform": "bucket[4]", "source-id": 1, "field-id": 1000}]});
    let statistics = |id: i64| {
        json!({"snapshot-id": id, "statistics-path": format!("file:///s/{id}.puffin"),
            "file-size-in-bytes": 100, "file-footer-size-in-bytes": 20,
            "blob-metadata": [{"type": "apache-datasketches-theta-v1", "snapshot-id": id,
                "sequence-number": 5, "fields": [1], "properties": {"ndv": "3"}}]})
    };
    vec![
        Scenario {
            name: "create",
            base: None,
            updates: updates(json!([
                {"action": "assign-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"},
                {"action": "upgrade-format-version", "format-version": 2},
                {"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": [
                    {"id": 1, "name": "id", "required": true, "type": "long"},
                    {"id": 2, "name": "at", "required": false, "type": "timestamptz"}]}},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "add-spec", "spec": {"spec-id": 0, "fields": [
                    {"name": "at_day", "transform": "day", "source-id": 2, "field-id": 1000}]}},
                {"action": "set-default-spec", "spec-id": -1},
                {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
                    {"transform": "identity", "source-id": 1, "direction": "desc",
                     "null-order": "nulls-last"}]}},
                {"action": "set-default-sort-order", "sort-order-id": -1},
                {"action": "set-location", "location": "file:///w/db/created"},
                {"action": "set-properties", "updates": {"owner": "ops"}}
            ])),
            previous_file: None,
        },
        Scenario {
            name: "evolve",
            base: Some(refs.clone()),
            updates: updates(json!([
                {"action": "add-schema", "schema": new_schema},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "add-spec", "spec": bucket_spec},
                {"action": "set-default-spec", "spec-id": -1},
                {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
                    {"transform": "identity", "source-id": 3, "direction": "desc",
                     "null-order": "nulls-last"}]}},
                {"action": "set-default-sort-order", "sort-order-id": -1},
                {"action": "set-properties", "updates": {"a": "1", "b": "2"}},
                {"action": "remove-properties", "removals": ["b"]},
                {"action": "set-location", "location": "file:///data/lake/wh1/db/refs2"}
            ])),
            previous_file: Some("file:///data/lake/wh1/db/refs/metadata/00007.metadata.json"),
        },
        Scenario {
            name: "append",
            base: Some(refs.clone()),
            updates: updates(json!([
                {"action": "add-snapshot", "snapshot": {"snapshot-id": 1234567890123_i64,
                    "parent-snapshot-id": E, "sequence-number": 6,
                    "timestamp-ms": 1_796_049_771_000_i64,
                    "summary": {"operation": "append", "added-records": "3"},
                    "manifest-list": "file:///data/lake/wh1/db/refs/metadata/snap-new.avro",
                    "schema-id": 0}},
                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                 "snapshot-id": 1234567890123_i64}
            ])),
            previous_file: Some("file:///data/lake/wh1/db/refs/metadata/00007.metadata.json"),
        },
        Scenario {
            name: "refs",
            base: Some(refs.clone()),
            updates: updates(json!([
                {"action": "set-snapshot-ref", "ref-name": "v3", "type": "tag",
                 "snapshot-id": C, "max-ref-age-ms": 1000},
                {"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch",
                 "snapshot-id": E, "min-snapshots-to-keep": 3},
                {"action": "remove-snapshot-ref", "ref-name": "v2"},
                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                 "snapshot-id": B}
            ])),
            previous_file: None,
        },
        Scenario {
            name: "statistics",
            base: Some(refs.clone()),
            updates: updates(json!([
                {"action": "set-statistics", "statistics": statistics(E)},
                {"action": "set-statistics", "statistics": statistics(A)},
                {"action": "remove-statistics", "snapshot-id": A},
                {"action": "set-partition-statistics", "partition-statistics": {
                    "snapshot-id": E, "statistics-path": "file:///s/p.parquet",
                    "file-size-in-bytes": 7}}
            ])),
            previous_file: None,
        },
        Scenario {
            name: "expire",
            base: Some(refs.clone()),
            updates: updates(json!([{"action": "remove-snapshots", "snapshot-ids": [A, C]}])),
            previous_file: Some("file:///data/lake/wh1/db/refs/metadata/00007.metadata.json"),
        },
        Scenario {
            name: "replace-structure",
            base: Some(refs),
            updates: updates(json!([
                {"action": "add-schema", "schema": new_schema},
                {"action": "set-current-schema", "schema-id": 1},
                {"action": "add-spec", "spec": bucket_spec},
                {"action": "set-default-spec", "spec-id": 1},
                {"action": "remove-schemas", "schema-ids": [0]},
                {"action": "remove-partition-specs", "spec-ids": [0]}
            ])),
            previous_file: None,
        },
        Scenario {
            name: "upgrade-v1-to-v2",
            base: Some(fixture(V1)),
            updates: updates(json!([
                {"action": "upgrade-format-version", "format-version": 2},
                {"action": "set-properties", "updates": {"upgraded": "true"}}
            ])),
            previous_file: Some("file:///v1/metadata/v2.metadata.json"),
        },
    ]
}

/// `m` with what may legitimately differ between the two normalised (see the module docs).
fn normalised(mut m: TableMetadata) -> TableMetadata {
    m.last_updated_ms = 0;
    let timestamps: std::collections::HashMap<i64, i64> = m
        .snapshots
        .iter()
        .map(|s| (s.snapshot_id, s.timestamp_ms))
        .collect();
    for entry in &mut m.snapshot_log {
        if timestamps.get(&entry.snapshot_id) != Some(&entry.timestamp_ms) {
            entry.timestamp_ms = 0;
        }
    }
    for s in &mut m.snapshots {
        if s.parent_snapshot_id
            .is_some_and(|p| !timestamps.contains_key(&p))
        {
            s.parent_snapshot_id = None;
        }
    }
    m.unknown_fields.clear();
    m
}

#[test]
fn pyiceberg_applies_our_updates_as_icefloe_does() {
    let Some(python) = python("changes: updates applied") else {
        return;
    };
    let scenarios = scenarios();
    let input = json!({"scenarios": scenarios.iter().map(|s| json!({
        "name": s.name,
        "base": s.base.as_ref().map(TableMetadata::to_json),
        "updates": s.updates,
        "previous-file": s.previous_file,
    })).collect::<Vec<_>>()});
    let results = changes_py(&python, "apply", &input);
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), scenarios.len());
    for (scenario, result) in scenarios.iter().zip(results) {
        let mut ctx = ApplyContext::new(NOW);
        ctx.previous_file = scenario.previous_file.map(str::to_string);
        let ours = match &scenario.base {
            Some(base) => base.apply(&scenario.updates, &ctx),
            None => TableMetadata::from_updates(&scenario.updates, &ctx),
        }
        .unwrap_or_else(|e| panic!("{}: icefloe refused: {e}", scenario.name));
        let theirs = result
            .get("metadata")
            .unwrap_or_else(|| panic!("{}: PyIceberg refused: {}", scenario.name, result["error"]));
        let theirs = TableMetadata::parse(theirs.to_string().as_bytes()).unwrap_or_else(|e| {
            panic!("{}: PyIceberg's result does not parse: {e}", scenario.name)
        });
        assert_eq!(
            normalised(ours),
            normalised(theirs),
            "{}: icefloe (left) and PyIceberg (right) differ",
            scenario.name
        );
    }
    say(&format!(
        "changes: {} lists of updates applied alike by icefloe and PyIceberg",
        scenarios.len()
    ));
}

/// Requirements that hold on the refs table, and as many that do not.
fn requirements() -> Vec<TableRequirement> {
    serde_json::from_value(json!([
        {"type": "assert-create"},
        {"type": "assert-table-uuid", "uuid": "5f93a12c-51c5-455f-8b75-acc87aee3539"},
        {"type": "assert-table-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": E},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": B},
        {"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": A},
        {"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": null},
        {"type": "assert-ref-snapshot-id", "ref": "nope", "snapshot-id": null},
        {"type": "assert-ref-snapshot-id", "ref": "nope", "snapshot-id": A},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 4},
        {"type": "assert-current-schema-id", "current-schema-id": 0},
        {"type": "assert-current-schema-id", "current-schema-id": 1},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
        {"type": "assert-default-spec-id", "default-spec-id": 1},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 1}
    ]))
    .unwrap()
}

#[test]
fn pyiceberg_reads_our_requests_and_checks_requirements_as_icefloe_does() {
    let Some(python) = python("changes: requirements and requests") else {
        return;
    };
    let base = fixture(REFS);
    let requirements = requirements();
    // Every kind of update and requirement in one request.
    let mut updates: Vec<TableUpdate> = scenarios().into_iter().flat_map(|s| s.updates).collect();
    for u in &mut updates {
        // PyIceberg has no add-schema `last-column-id` (deprecated): it would not come back.
        if let TableUpdate::AddSchema { last_column_id, .. } = u {
            *last_column_id = None;
        }
    }
    let request: CommitTableRequest = serde_json::from_value(json!({
        "identifier": {"namespace": ["db"], "name": "refs"},
        "requirements": requirements,
        "updates": updates,
    }))
    .unwrap();
    let input = json!({"base": base.to_json(), "requirements": requirements, "request": request});
    let out = changes_py(&python, "requests", &input);
    let checks = out["checks"].as_array().unwrap();
    for (requirement, check) in requirements.iter().zip(checks) {
        for (table, key) in [(Some(&base), "with-table"), (None, "without-table")] {
            let ours = requirement.check(table);
            let theirs = check[key].as_str().unwrap();
            assert_eq!(
                ours.is_ok(),
                theirs == "ok",
                "{requirement} {key}: icefloe {ours:?}, PyIceberg {theirs}"
            );
        }
    }
    let back: CommitTableRequest = serde_json::from_value(out["request"].clone())
        .unwrap_or_else(|e| panic!("PyIceberg's request does not read: {e}\n{}", out["request"]));
    assert_eq!(
        back, request,
        "PyIceberg's request (left) differs from icefloe's"
    );
    say(&format!(
        "changes: {} requirements checked alike, a request of {} updates read back alike",
        requirements.len(),
        updates.len()
    ));
}

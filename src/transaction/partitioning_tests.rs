//! Tests of [`UpdateSpec::apply`]: the ids, names and refusals of Java's
//! `BaseUpdatePartitionSpec` (whose unit tests `TestUpdatePartitionSpecV1` / `V2` state the
//! same cases), on v1 and v2 tables.

use super::*;

/// A table partitioned by `category` (identity, field 1000) and `day(ts)` (1001), with an
/// older spec 0 that had `bucket[16](id)` as field 1002 (`last-partition-id` 1002).
fn metadata(version: u8) -> TableMetadata {
    let old_spec = match version {
        1 => {
            r#"{"spec-id": 0, "fields": [
            {"source-id": 2, "field-id": 1000, "name": "category", "transform": "identity"}]}"#
        }
        _ => {
            r#"{"spec-id": 0, "fields": [
            {"source-id": 1, "field-id": 1002, "name": "id_bucket_16", "transform": "bucket[16]"}]}"#
        }
    };
    let json = format!(
        r#"{{
  "format-version": {version},
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "/t",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 4,
  "current-schema-id": 0,
  "schemas": [{{"type": "struct", "schema-id": 0, "fields": [
      {{"id": 1, "name": "id", "required": true, "type": "long"}},
      {{"id": 2, "name": "category", "required": false, "type": "string"}},
      {{"id": 3, "name": "ts", "required": false, "type": "timestamptz"}},
      {{"id": 4, "name": "data", "required": false, "type": "string"}}]}}],
  "schema": {{"type": "struct", "schema-id": 0, "fields": [
      {{"id": 1, "name": "id", "required": true, "type": "long"}},
      {{"id": 2, "name": "category", "required": false, "type": "string"}},
      {{"id": 3, "name": "ts", "required": false, "type": "timestamptz"}},
      {{"id": 4, "name": "data", "required": false, "type": "string"}}]}},
  "default-spec-id": 1,
  "partition-specs": [{old_spec}, {{"spec-id": 1, "fields": [
    {{"source-id": 2, "field-id": 1000, "name": "category", "transform": "identity"}},
    {{"source-id": 3, "field-id": 1001, "name": "ts_day", "transform": "day"}}]}}],
  "last-partition-id": {last},
  "default-sort-order-id": 0,
  "sort-orders": [{{"order-id": 0, "fields": []}}],
  "properties": {{}},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}}"#,
        last = if version == 1 { 1001 } else { 1002 },
    );
    TableMetadata::parse(json.as_bytes()).unwrap()
}

/// (field id, name, transform) of each field.
fn fields(spec: &PartitionSpec) -> Vec<(i32, String, String)> {
    spec.fields
        .iter()
        .map(|f| (f.field_id, f.name.clone(), f.transform.to_string()))
        .collect()
}

fn f(id: i32, name: &str, transform: &str) -> (i32, String, String) {
    (id, name.to_string(), transform.to_string())
}

#[test]
fn added_fields_take_new_ids_and_javas_names() {
    let metadata = metadata(2);
    let spec = UpdateSpec::new()
        .add_field("data", Transform::Truncate(4))
        .add_field_named("hourly", "ts", Transform::Hour)
        .add_field("id", Transform::Identity)
        .apply(&metadata)
        .unwrap();
    assert_eq!(spec.spec_id, 2);
    assert_eq!(
        fields(&spec),
        vec![
            f(1000, "category", "identity"),
            f(1001, "ts_day", "day"),
            f(1003, "data_trunc_4", "truncate[4]"),
            f(1004, "hourly", "hour"),
            f(1005, "id", "identity"),
        ]
    );
}

/// v2: a removed field leaves the spec; a field of an earlier spec comes back with its id
/// and name (its files keep being pruned by it); an identical earlier spec is reused.
#[test]
fn v2_removes_fields_and_recycles_earlier_ones() {
    let metadata = metadata(2);
    let spec = UpdateSpec::new()
        .remove_field("category")
        .remove_field_by_term("ts", Transform::Day)
        .add_field("id", Transform::Bucket(16))
        .apply(&metadata)
        .unwrap();
    assert_eq!(fields(&spec), vec![f(1002, "id_bucket_16", "bucket[16]")]);
    assert_eq!(spec.spec_id, 0, "the same fields as spec 0: it is reused");

    // A name given that differs from the earlier field's: a new field.
    let spec = UpdateSpec::new()
        .add_field_named("b16", "id", Transform::Bucket(16))
        .apply(&metadata)
        .unwrap();
    assert_eq!(fields(&spec)[2], f(1003, "b16", "bucket[16]"));
}

/// v1: field ids are positional, so a removed field stays as `void` under its id; a new field
/// wanting the name of a void one pushes it aside as `name_<id>`.
#[test]
fn v1_keeps_removed_fields_as_void() {
    let metadata = metadata(1);
    let spec = UpdateSpec::new()
        .remove_field("ts_day")
        .add_field("ts", Transform::Hour)
        .apply(&metadata)
        .unwrap();
    assert_eq!(
        fields(&spec),
        vec![
            f(1000, "category", "identity"),
            f(1001, "ts_day", "void"),
            f(1002, "ts_hour", "hour"),
        ]
    );
    // In v1 nothing is recycled: bucket(16, id) is new even if an old spec had it.
    let mut evolved = metadata.clone();
    evolved.partition_specs.push(spec.clone());
    evolved.default_spec_id = spec.spec_id;
    evolved.last_partition_id = 1002;
    let spec = UpdateSpec::new()
        .add_field_named("ts_day", "ts", Transform::Day)
        .apply(&evolved)
        .unwrap();
    assert_eq!(
        fields(&spec),
        vec![
            f(1000, "category", "identity"),
            f(1001, "ts_day_1001", "void"),
            f(1002, "ts_hour", "hour"),
            f(1003, "ts_day", "day"),
        ]
    );
}

#[test]
fn renames_and_a_removal_undone_in_the_same_change() {
    let metadata = metadata(2);
    let spec = UpdateSpec::new()
        .rename_field("ts_day", "day")
        .apply(&metadata)
        .unwrap();
    assert_eq!(fields(&spec)[1], f(1001, "day", "day"));

    // Removed and added again: the field stays (with the new name when one is given).
    let spec = UpdateSpec::new()
        .remove_field("ts_day")
        .add_field_named("by_day", "ts", Transform::Day)
        .apply(&metadata)
        .unwrap();
    assert_eq!(
        fields(&spec),
        vec![f(1000, "category", "identity"), f(1001, "by_day", "day")]
    );
    let unchanged = UpdateSpec::new()
        .remove_field("category")
        .add_field("category", Transform::Identity)
        .apply(&metadata)
        .unwrap();
    assert_eq!(unchanged.spec_id, 1, "the current spec itself");
}

#[test]
fn forbidden_changes_are_refused_naming_the_field() {
    let metadata = metadata(2);
    let refused = |update: UpdateSpec, wanted: &str| {
        let message = update.apply(&metadata).unwrap_err().to_string();
        assert!(message.contains(wanted), "{message:?} lacks {wanted:?}");
    };
    refused(
        UpdateSpec::new().add_field("ts", Transform::Day),
        "is already partition field 'ts_day'",
    );
    refused(
        UpdateSpec::new()
            .add_field("id", Transform::Bucket(8))
            .add_field("id", Transform::Bucket(8)),
        "is already added as 'id_bucket_8'",
    );
    refused(
        UpdateSpec::new()
            .add_field("ts", Transform::Hour)
            .add_field("ts", Transform::Month),
        "is redundant with the added time field 'ts_hour'",
    );
    refused(
        UpdateSpec::new().add_field_named("category", "data", Transform::Identity),
        "partition field 'category': already exists",
    );
    refused(
        UpdateSpec::new().add_field_named("data", "id", Transform::Bucket(2)),
        "is the name of a column",
    );
    refused(
        UpdateSpec::new().remove_field("nope"),
        "'nope' in the default spec",
    );
    refused(
        UpdateSpec::new().remove_field_by_term("id", Transform::Bucket(16)),
        "bucket[16](id) in the default spec",
    );
    refused(
        UpdateSpec::new()
            .add_field("id", Transform::Bucket(2))
            .remove_field("id_bucket_2"),
        "was added by this change",
    );
    refused(
        UpdateSpec::new()
            .rename_field("category", "c")
            .remove_field("category"),
        "cannot be renamed and removed",
    );
    refused(
        UpdateSpec::new().add_field("data", Transform::Day),
        "transform day is not valid for column 'data'",
    );
    refused(
        UpdateSpec::new().add_field("missing", Transform::Identity),
        "no column 'missing'",
    );
}

#[test]
fn a_spec_with_an_unknown_transform_is_not_evolved() {
    let mut metadata = metadata(2);
    metadata.partition_specs[1].fields[0].transform = Transform::Unknown("zorder".into());
    let err = UpdateSpec::new()
        .add_field("id", Transform::Bucket(2))
        .apply(&metadata)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

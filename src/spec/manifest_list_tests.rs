use apache_avro::types::Value;
use serde_json::{Value as Json, json};

use super::*;
use crate::spec::avro::test_util::{field, null, nullable, opt_field, record, some, write_avro};

fn field_summary_schema() -> Json {
    json!({
        "type": "array",
        "element-id": 508,
        "items": {
            "type": "record",
            "name": "r508",
            "fields": [
                field("contains_null", 509, json!("boolean")),
                opt_field("contains_nan", 518, json!("boolean")),
                opt_field("lower_bound", 510, json!("bytes")),
                opt_field("upper_bound", 511, json!("bytes")),
            ]
        }
    })
}

/// Java's v2 `manifest_file` schema.
fn java_v2_schema() -> Json {
    json!({
        "type": "record",
        "name": "manifest_file",
        "fields": [
            field("manifest_path", 500, json!("string")),
            field("manifest_length", 501, json!("long")),
            field("partition_spec_id", 502, json!("int")),
            field("content", 517, json!("int")),
            field("sequence_number", 515, json!("long")),
            field("min_sequence_number", 516, json!("long")),
            field("added_snapshot_id", 503, json!("long")),
            field("added_files_count", 504, json!("int")),
            field("existing_files_count", 505, json!("int")),
            field("deleted_files_count", 506, json!("int")),
            field("added_rows_count", 512, json!("long")),
            field("existing_rows_count", 513, json!("long")),
            field("deleted_rows_count", 514, json!("long")),
            opt_field("partitions", 507, field_summary_schema()),
            opt_field("key_metadata", 519, json!("bytes")),
        ]
    })
}

fn summary(contains_null: bool, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Value {
    let bytes = |b: Option<&[u8]>| b.map_or_else(null, |b| some(b.to_vec()));
    record(vec![
        ("contains_null", Value::Boolean(contains_null)),
        ("contains_nan", some(false)),
        ("lower_bound", bytes(lower)),
        ("upper_bound", bytes(upper)),
    ])
}

fn java_v2_entry(path: &str, content: i32, seq: i64, partitions: Value) -> Value {
    record(vec![
        ("manifest_path", Value::String(path.into())),
        ("manifest_length", Value::Long(1986)),
        ("partition_spec_id", Value::Int(0)),
        ("content", Value::Int(content)),
        ("sequence_number", Value::Long(seq)),
        ("min_sequence_number", Value::Long(seq - 1)),
        ("added_snapshot_id", Value::Long(77)),
        ("added_files_count", Value::Int(2)),
        ("existing_files_count", Value::Int(0)),
        ("deleted_files_count", Value::Int(1)),
        ("added_rows_count", Value::Long(10)),
        ("existing_rows_count", Value::Long(0)),
        ("deleted_rows_count", Value::Long(3)),
        ("partitions", partitions),
        ("key_metadata", null()),
    ])
}

fn java_v2_list() -> Vec<u8> {
    let parts = Value::Array(vec![summary(
        true,
        Some(&5i32.to_le_bytes()),
        Some(&9i32.to_le_bytes()),
    )]);
    write_avro(
        &java_v2_schema(),
        &[("format-version", "2"), ("snapshot-id", "77")],
        &[
            java_v2_entry("s3://b/t/metadata/a-m0.avro", 0, 4, some(parts)),
            java_v2_entry("s3://b/t/metadata/b-m0.avro", 1, 5, null()),
        ],
    )
}

#[test]
fn java_v2_list_decodes_every_field() {
    let files = parse_manifest_list(&java_v2_list(), FormatVersion::V2).unwrap();
    assert_eq!(files.len(), 2);
    let data = &files[0];
    assert_eq!(data.manifest_path, "s3://b/t/metadata/a-m0.avro");
    assert_eq!(data.manifest_length, 1986);
    assert_eq!(data.content, ManifestContent::Data);
    assert_eq!((data.sequence_number, data.min_sequence_number), (4, 3));
    assert_eq!(data.added_snapshot_id, 77);
    assert_eq!(data.added_files_count, Some(2));
    assert_eq!(data.deleted_files_count, Some(1));
    assert_eq!(data.deleted_rows_count, Some(3));
    assert_eq!(data.key_metadata, None);
    assert_eq!(data.first_row_id, None);
    let parts = data.partitions.as_ref().unwrap();
    assert_eq!(
        parts[0],
        FieldSummary {
            contains_null: true,
            contains_nan: Some(false),
            lower_bound: Some(5i32.to_le_bytes().to_vec()),
            upper_bound: Some(9i32.to_le_bytes().to_vec()),
        }
    );
    assert_eq!(files[1].content, ManifestContent::Deletes);
    assert_eq!(files[1].partitions, None);
}

/// Old Java (and Impala) v1 lists: no content or sequence numbers, and the counts are named
/// `added_data_files_count` etc. (found through their field ids).
#[test]
fn v1_list_defaults_and_old_field_names() {
    let schema = json!({
        "type": "record",
        "name": "manifest_file",
        "fields": [
            field("manifest_path", 500, json!("string")),
            field("manifest_length", 501, json!("long")),
            field("partition_spec_id", 502, json!("int")),
            opt_field("added_snapshot_id", 503, json!("long")),
            opt_field("added_data_files_count", 504, json!("int")),
            opt_field("existing_data_files_count", 505, json!("int")),
            opt_field("deleted_data_files_count", 506, json!("int")),
            opt_field("partitions", 507, field_summary_schema()),
        ]
    });
    let entry = record(vec![
        ("manifest_path", Value::String("/w/m.avro".into())),
        ("manifest_length", Value::Long(100)),
        ("partition_spec_id", Value::Int(1)),
        ("added_snapshot_id", some(9i64)),
        ("added_data_files_count", some(3)),
        ("existing_data_files_count", null()),
        ("deleted_data_files_count", some(0)),
        ("partitions", null()),
    ]);
    let bytes = write_avro(&schema, &[], &[entry]);
    let files = parse_manifest_list(&bytes, FormatVersion::V1).unwrap();
    let f = &files[0];
    assert_eq!(f.content, ManifestContent::Data);
    assert_eq!((f.sequence_number, f.min_sequence_number), (0, 0));
    assert_eq!(f.added_snapshot_id, 9);
    assert_eq!(f.partition_spec_id, 1);
    assert_eq!(f.added_files_count, Some(3));
    assert_eq!(f.existing_files_count, None);
    assert_eq!(f.deleted_files_count, Some(0));
    // The same list read as v2 lacks the required fields.
    let err = parse_manifest_list(&bytes, FormatVersion::V2).unwrap_err();
    assert!(err.to_string().contains("content (517)"), "{err}");
}

#[test]
fn v2_list_without_sequence_number_is_corrupt() {
    let mut schema = java_v2_schema();
    let fields = schema["fields"].as_array_mut().unwrap();
    fields.retain(|f| f["name"] != "sequence_number");
    let Value::Record(mut entry) = java_v2_entry("m.avro", 0, 1, null()) else {
        unreachable!()
    };
    entry.retain(|(name, _)| name != "sequence_number");
    let bytes = write_avro(&schema, &[], &[Value::Record(entry)]);
    let err = parse_manifest_list(&bytes, FormatVersion::V2).unwrap_err();
    assert!(matches!(err, crate::Error::Corrupt { .. }));
    assert!(err.to_string().contains("sequence_number (515)"), "{err}");
    assert!(err.to_string().contains("record 0"), "{err}");
}

/// BigQuery: every field a nullable union, in alphabetical order, no `partitions`.
#[test]
fn bigquery_style_all_nullable_list() {
    let names = [
        ("added_files_count", 504, "int"),
        ("added_snapshot_id", 503, "long"),
        ("content", 517, "int"),
        ("manifest_length", 501, "long"),
        ("manifest_path", 500, "string"),
        ("min_sequence_number", 516, "long"),
        ("partition_spec_id", 502, "int"),
        ("sequence_number", 515, "long"),
    ];
    let fields: Vec<Json> = names
        .iter()
        .map(|(n, id, t)| field(n, *id, nullable(json!({"type": t}))))
        .collect();
    let schema = json!({"type": "record", "name": "manifest_file", "fields": fields});
    let entry = record(vec![
        ("added_files_count", some(1)),
        ("added_snapshot_id", some(5128775320967886225i64)),
        ("content", some(0)),
        ("manifest_length", some(1986i64)),
        ("manifest_path", some("gs://b/t/metadata/m.avro")),
        ("min_sequence_number", some(0i64)),
        ("partition_spec_id", some(0)),
        ("sequence_number", some(0i64)),
    ]);
    let files =
        parse_manifest_list(&write_avro(&schema, &[], &[entry]), FormatVersion::V2).unwrap();
    assert_eq!(files[0].added_snapshot_id, 5128775320967886225);
    assert_eq!(files[0].manifest_path, "gs://b/t/metadata/m.avro");
    assert_eq!(files[0].added_files_count, Some(1));
    assert_eq!(files[0].existing_files_count, None);
}

#[test]
fn truncated_or_garbage_bytes_are_corrupt() {
    let bytes = java_v2_list();
    for cut in [0, 3, 10, bytes.len() / 2, bytes.len() - 1] {
        let err = parse_manifest_list(&bytes[..cut], FormatVersion::V2).unwrap_err();
        assert!(
            matches!(err, crate::Error::Corrupt { .. }),
            "cut {cut}: {err}"
        );
    }
    let err = parse_manifest_list(b"not avro at all", FormatVersion::V2).unwrap_err();
    assert!(matches!(err, crate::Error::Corrupt { .. }), "{err}");
    let err = err.in_file("s3://b/t/metadata/snap-1.avro");
    assert!(err.to_string().contains("snap-1.avro"), "{err}");
}

#[test]
fn wrong_avro_type_is_corrupt() {
    let mut schema = java_v2_schema();
    schema["fields"][1] = field("manifest_length", 501, json!("string"));
    let Value::Record(mut entry) = java_v2_entry("m.avro", 0, 1, null()) else {
        unreachable!()
    };
    entry[1].1 = Value::String("big".into());
    let bytes = write_avro(&schema, &[], &[Value::Record(entry)]);
    let err = parse_manifest_list(&bytes, FormatVersion::V2).unwrap_err();
    assert!(
        err.to_string().contains("manifest_file.manifest_length"),
        "{err}"
    );
}

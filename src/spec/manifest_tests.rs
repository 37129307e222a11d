use apache_avro::types::Value;
use serde_json::{Value as Json, json};

use super::*;
use crate::spec::avro::test_util::{
    field, java_map, kv_array, null, nullable, opt_field, record, some, write_avro,
};
use crate::spec::types::NestedField;

#[path = "manifest_fixture_tests.rs"]
mod fixtures;
#[path = "manifest_partition_tests.rs"]
mod partition;

/// Java's `data_file` (`r2`) schema; `v1` adds `block_size_in_bytes` and drops `content`.
fn data_file_schema(partition_fields: Json, v1: bool) -> Json {
    let mut fields = vec![];
    if !v1 {
        fields.push(field("content", 134, json!("int")));
    }
    fields.extend([
        field("file_path", 100, json!("string")),
        field("file_format", 101, json!("string")),
        field(
            "partition",
            102,
            json!({"type": "record", "name": "r102", "fields": partition_fields}),
        ),
        field("record_count", 103, json!("long")),
        field("file_size_in_bytes", 104, json!("long")),
    ]);
    if v1 {
        fields.push(field("block_size_in_bytes", 105, json!("long")));
    }
    fields.extend([
        opt_field("column_sizes", 108, java_map(117, 118, "long")),
        opt_field("value_counts", 109, java_map(119, 120, "long")),
        opt_field("null_value_counts", 110, java_map(121, 122, "long")),
        opt_field("nan_value_counts", 137, java_map(138, 139, "long")),
        opt_field("lower_bounds", 125, java_map(126, 127, "bytes")),
        opt_field("upper_bounds", 128, java_map(129, 130, "bytes")),
        opt_field("key_metadata", 131, json!("bytes")),
        opt_field(
            "split_offsets",
            132,
            json!({"type": "array", "items": "long", "element-id": 133}),
        ),
        opt_field(
            "equality_ids",
            135,
            json!({"type": "array", "items": "int", "element-id": 136}),
        ),
        opt_field("sort_order_id", 140, json!("int")),
    ]);
    if !v1 {
        fields.push(opt_field("referenced_data_file", 143, json!("string")));
    }
    json!({"type": "record", "name": "r2", "fields": fields})
}

fn entry_schema(data_file: Json, v1: bool) -> Json {
    let mut fields = vec![field("status", 0, json!("int"))];
    if v1 {
        fields.push(field("snapshot_id", 1, json!("long")));
    } else {
        fields.extend([
            opt_field("snapshot_id", 1, json!("long")),
            opt_field("sequence_number", 3, json!("long")),
            opt_field("file_sequence_number", 4, json!("long")),
        ]);
    }
    fields.push(field("data_file", 2, data_file));
    json!({"type": "record", "name": "manifest_entry", "fields": fields})
}

/// Partition fields of the v2 test manifest: `day(ts)`, `bucket[4](id)`, `identity(name)`,
/// `identity(amount)` (decimal(9,2) as Java's fixed), written with sanitized Avro names.
fn v2_partition_fields() -> Json {
    json!([
        field(
            "ts_x2Dday",
            1000,
            nullable(json!({"type": "int", "logicalType": "date"}))
        ),
        field("id_bucket", 1001, nullable(json!("int"))),
        field("name", 1002, nullable(json!("string"))),
        field(
            "amount",
            1003,
            nullable(json!({
                "type": "fixed", "name": "fixed_4", "size": 4,
                "logicalType": "decimal", "precision": 9, "scale": 2
            }))
        ),
    ])
}

/// The partition type, deliberately in another order than the Avro record: values are
/// matched by field id.
fn v2_partition_type() -> StructType {
    StructType::new(vec![
        NestedField::optional(1001, "id_bucket", PrimitiveType::Int),
        NestedField::optional(1000, "ts-day", PrimitiveType::Date),
        NestedField::optional(1002, "name", PrimitiveType::String),
        NestedField::optional(
            1003,
            "amount",
            PrimitiveType::Decimal {
                precision: 9,
                scale: 2,
            },
        ),
    ])
}

fn v2_data_file(path: &str, content: i32, partition: Value) -> Value {
    record(vec![
        ("content", Value::Int(content)),
        ("file_path", Value::String(path.into())),
        ("file_format", Value::String("PARQUET".into())),
        ("partition", partition),
        ("record_count", Value::Long(3)),
        ("file_size_in_bytes", Value::Long(1024)),
        ("column_sizes", some(kv_array(&[(1, 40i64), (2, 50i64)]))),
        ("value_counts", some(kv_array(&[(1, 3i64), (2, 3i64)]))),
        ("null_value_counts", some(kv_array(&[(1, 0i64), (2, 1i64)]))),
        ("nan_value_counts", null()),
        (
            "lower_bounds",
            some(kv_array(&[
                (1, 7i64.to_le_bytes().to_vec()),
                (2, b"ab".to_vec()),
            ])),
        ),
        (
            "upper_bounds",
            some(kv_array(&[(1, vec![1u8, 2, 3]), (2, b"zz".to_vec())])),
        ),
        ("key_metadata", null()),
        ("split_offsets", some(Value::Array(vec![Value::Long(4)]))),
        (
            "equality_ids",
            if content == 2 {
                some(Value::Array(vec![Value::Int(1)]))
            } else {
                null()
            },
        ),
        ("sort_order_id", some(0)),
        ("referenced_data_file", null()),
    ])
}

fn v2_partition(day: i32, bucket: i32, name: Option<&str>) -> Value {
    record(vec![
        ("ts_x2Dday", some(Value::Date(day))),
        ("id_bucket", some(bucket)),
        ("name", name.map_or_else(null, some)),
        (
            "amount",
            some(Value::Decimal((-12345i32).to_be_bytes().into())),
        ),
    ])
}

fn entry(status: i32, snapshot: Option<i64>, seqs: Option<(i64, i64)>, data_file: Value) -> Value {
    let opt = |v: Option<i64>| v.map_or_else(null, some);
    record(vec![
        ("status", Value::Int(status)),
        ("snapshot_id", opt(snapshot)),
        ("sequence_number", opt(seqs.map(|s| s.0))),
        ("file_sequence_number", opt(seqs.map(|s| s.1))),
        ("data_file", data_file),
    ])
}

fn manifest_file(added_snapshot_id: i64, sequence_number: i64) -> ManifestFile {
    let path = "s3://b/t/metadata/m0.avro";
    ManifestFile {
        sequence_number,
        min_sequence_number: 1,
        ..ManifestFile::new(path, 1986, 0, ManifestContent::Data, added_snapshot_id)
    }
}

const V2_METADATA: &[(&str, &str)] = &[
    ("schema", r#"{"type":"struct","schema-id":3,"fields":[]}"#),
    ("schema-id", "3"),
    ("partition-spec", "[]"),
    ("partition-spec-id", "0"),
    ("format-version", "2"),
    ("content", "data"),
    ("iceberg.engine", "spark"),
];

fn java_v2_manifest() -> Vec<u8> {
    let schema = entry_schema(data_file_schema(v2_partition_fields(), false), false);
    let records = [
        entry(
            1,
            None,
            None,
            v2_data_file("a.parquet", 0, v2_partition(19000, 3, Some("x"))),
        ),
        entry(
            0,
            Some(5),
            Some((2, 3)),
            v2_data_file("b.parquet", 0, v2_partition(19001, 0, None)),
        ),
        entry(
            2,
            Some(6),
            Some((1, 1)),
            v2_data_file("c.parquet", 2, v2_partition(1, 1, None)),
        ),
    ];
    write_avro(&schema, V2_METADATA, &records)
}

#[test]
fn java_v2_manifest_with_inheritance() {
    let m = parse_manifest(
        &java_v2_manifest(),
        &manifest_file(99, 8),
        &v2_partition_type(),
    )
    .unwrap();
    let [added, existing, deleted] = &m.entries[..] else {
        panic!("{} entries", m.entries.len())
    };
    assert_eq!(added.status, ManifestStatus::Added);
    assert_eq!(added.snapshot_id, Some(99));
    assert_eq!(
        (added.sequence_number, added.file_sequence_number),
        (Some(8), Some(8))
    );
    assert_eq!(existing.status, ManifestStatus::Existing);
    assert_eq!(existing.snapshot_id, Some(5));
    assert_eq!(
        (existing.sequence_number, existing.file_sequence_number),
        (Some(2), Some(3))
    );
    assert!(!deleted.is_alive() && added.is_alive() && existing.is_alive());
    assert_eq!(deleted.data_file.content, DataContentType::EqualityDeletes);
    assert_eq!(deleted.data_file.equality_ids, Some(vec![1]));

    let f = &added.data_file;
    assert_eq!(f.file_path, "a.parquet");
    assert_eq!(f.file_format, FileFormat::Parquet);
    assert_eq!((f.record_count, f.file_size_in_bytes), (3, 1024));
    assert_eq!(
        f.partition,
        vec![
            Some(Literal::Int(3)),
            Some(Literal::Date(19000)),
            Some(Literal::String("x".into())),
            Some(Literal::Decimal(-12345)),
        ]
    );
    assert_eq!(existing.data_file.partition[2], None);
    assert_eq!(f.column_sizes, HashMap::from([(1, 40), (2, 50)]));
    assert_eq!(f.null_value_counts[&2], 1);
    assert!(f.nan_value_counts.is_empty());
    assert_eq!(f.split_offsets, Some(vec![4]));
    assert_eq!(f.sort_order_id, Some(0));
    assert_eq!(f.equality_ids, None);
}

#[test]
fn bounds_decode_with_the_column_type() {
    let m = parse_manifest(
        &java_v2_manifest(),
        &manifest_file(1, 1),
        &v2_partition_type(),
    )
    .unwrap();
    let f = &m.entries[0].data_file;
    assert_eq!(
        f.lower_bound(1, &PrimitiveType::Long).unwrap(),
        Some(Literal::Long(7))
    );
    assert_eq!(
        f.lower_bound(2, &PrimitiveType::String).unwrap(),
        Some(Literal::String("ab".into()))
    );
    assert_eq!(
        f.upper_bound(2, &PrimitiveType::String).unwrap(),
        Some(Literal::String("zz".into()))
    );
    assert_eq!(f.lower_bound(42, &PrimitiveType::Long).unwrap(), None);
    let err = f.upper_bound(1, &PrimitiveType::Long).unwrap_err();
    assert!(matches!(err, crate::Error::Corrupt { .. }));
    assert!(err.to_string().contains("upper bound of field 1"), "{err}");
}

#[test]
fn manifest_metadata_from_the_header() {
    let md = parse_manifest_metadata(&java_v2_manifest()).unwrap();
    assert_eq!(md.schema_id, Some(3));
    assert_eq!(md.partition_spec_id, Some(0));
    assert_eq!(md.partition_spec.as_deref(), Some("[]"));
    assert_eq!(md.format_version, Some(2));
    assert_eq!(md.content, Some(ManifestContent::Data));
    assert!(md.schema.unwrap().contains("\"schema-id\":3"));
    assert_eq!(md.other.len(), 1);
    assert_eq!(md.other["iceberg.engine"], "spark");
    let m = parse_manifest(
        &java_v2_manifest(),
        &manifest_file(1, 1),
        &v2_partition_type(),
    )
    .unwrap();
    assert_eq!(m.metadata.content_type(), ManifestContent::Data);
    assert_eq!(m.metadata.other["iceberg.engine"], "spark");
}

#[test]
fn v1_manifest_reads_sequence_zero() {
    let partition = json!([field("category", 1000, nullable(json!("string")))]);
    let schema = entry_schema(data_file_schema(partition, true), true);
    let data_file = |path: &str| {
        record(vec![
            ("file_path", Value::String(path.into())),
            ("file_format", Value::String("parquet".into())),
            ("partition", record(vec![("category", some("alpha"))])),
            ("record_count", Value::Long(2)),
            ("file_size_in_bytes", Value::Long(500)),
            ("block_size_in_bytes", Value::Long(67108864)),
            ("column_sizes", null()),
            ("value_counts", null()),
            ("null_value_counts", null()),
            ("nan_value_counts", null()),
            ("lower_bounds", null()),
            ("upper_bounds", null()),
            ("key_metadata", null()),
            ("split_offsets", null()),
            ("equality_ids", null()),
            ("sort_order_id", null()),
        ])
    };
    let entries = [1, 0].map(|status| {
        record(vec![
            ("status", Value::Int(status)),
            ("snapshot_id", Value::Long(11)),
            ("data_file", data_file("d.parquet")),
        ])
    });
    let md = [("format-version", "1"), ("partition-spec", "[]")];
    let bytes = write_avro(&schema, &md, &entries);
    let ptype = StructType::new(vec![NestedField::optional(
        1000,
        "category",
        PrimitiveType::String,
    )]);
    let m = parse_manifest(&bytes, &manifest_file(11, 0), &ptype).unwrap();
    for e in &m.entries {
        assert_eq!(
            (e.sequence_number, e.file_sequence_number),
            (Some(0), Some(0))
        );
        assert_eq!(e.snapshot_id, Some(11));
        assert_eq!(e.data_file.content, DataContentType::Data);
        assert_eq!(e.data_file.file_format, FileFormat::Parquet);
        assert_eq!(
            e.data_file.partition,
            vec![Some(Literal::String("alpha".into()))]
        );
    }
    assert_eq!(m.metadata.content_type(), ManifestContent::Data);
}

/// BigQuery: every field a nullable union (`data_file` too), maps as arrays of nullable
/// `{key, value}` records without ids, a null partition, no metadata keys at all.
fn bigquery_manifest() -> Vec<u8> {
    let map = |name: &str, v: &str| {
        nullable(
            json!({"type": "array", "logicalType": "map", "items": nullable(json!({
                "type": "record", "name": name,
                "fields": [
                    {"name": "key", "type": nullable(json!({"type": "int"}))},
                    {"name": "value", "type": nullable(json!({"type": v}))}
                ]
            }))}),
        )
    };
    let data_file = json!({"type": "record", "name": "data_file", "fields": [
        field("file_format", 101, nullable(json!({"type": "string"}))),
        field("record_count", 103, nullable(json!({"type": "long"}))),
        field("file_size_in_bytes", 104, nullable(json!({"type": "long"}))),
        field("value_counts", 109, map("element0", "long")),
        field("lower_bounds", 125, map("element2", "bytes")),
        field("content", 134, nullable(json!({"type": "int"}))),
        field("file_path", 100, nullable(json!({"type": "string"}))),
        field("partition", 102, nullable(json!({"type": "record", "name": "partition", "fields": []}))),
    ]});
    let schema = json!({"type": "record", "name": "manifest_entry", "fields": [
        field("status", 0, nullable(json!({"type": "int"}))),
        field("data_file", 2, nullable(data_file)),
    ]});
    let kv = |k: i32, v: Value| some(record(vec![("key", some(k)), ("value", some(v))]));
    let file = record(vec![
        ("file_format", some("PARQUET")),
        ("record_count", some(2i64)),
        ("file_size_in_bytes", some(1234i64)),
        (
            "value_counts",
            some(Value::Array(vec![
                kv(1, Value::Long(2)),
                null(),
                kv(2, Value::Long(2)),
            ])),
        ),
        (
            "lower_bounds",
            some(Value::Array(vec![kv(
                1,
                Value::Bytes(1i64.to_le_bytes().to_vec()),
            )])),
        ),
        ("content", some(0)),
        ("file_path", some("gs://b/t/data/f.parquet")),
        ("partition", null()),
    ]);
    let entry = record(vec![("status", some(1)), ("data_file", some(file))]);
    write_avro(&schema, &[], &[entry])
}

#[test]
fn bigquery_style_manifest() {
    let m = parse_manifest(
        &bigquery_manifest(),
        &manifest_file(51, 0),
        &StructType::default(),
    )
    .unwrap();
    assert_eq!(m.metadata, ManifestMetadata::default());
    let e = &m.entries[0];
    assert_eq!(e.status, ManifestStatus::Added);
    assert_eq!(e.snapshot_id, Some(51));
    assert_eq!(
        (e.sequence_number, e.file_sequence_number),
        (Some(0), Some(0))
    );
    assert_eq!(e.data_file.file_path, "gs://b/t/data/f.parquet");
    assert_eq!(e.data_file.value_counts, HashMap::from([(1, 2), (2, 2)]));
    assert_eq!(
        e.data_file.lower_bound(1, &PrimitiveType::Long).unwrap(),
        Some(Literal::Long(1))
    );
    assert!(e.data_file.partition.is_empty());
    assert!(e.data_file.column_sizes.is_empty());
}

#[test]
fn truncated_or_garbage_manifest_is_corrupt() {
    let bytes = java_v2_manifest();
    let (mf, ptype) = (manifest_file(1, 1), v2_partition_type());
    for cut in [0, 5, bytes.len() / 2, bytes.len() - 3] {
        let err = parse_manifest(&bytes[..cut], &mf, &ptype).unwrap_err();
        assert!(
            matches!(err, crate::Error::Corrupt { .. }),
            "cut {cut}: {err}"
        );
    }
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff; // the sync marker after the block
    assert!(parse_manifest(&flipped, &mf, &ptype).is_err());
    assert!(parse_manifest_metadata(b"Obj\x01\xff").is_err());
}

#[test]
fn invalid_metadata_and_status_are_corrupt() {
    let schema = entry_schema(data_file_schema(json!([]), false), false);
    let file = v2_data_file("a.parquet", 0, record(vec![]));
    let ok = [entry(1, None, None, file.clone())];
    for md in [("format-version", "two"), ("content", "everything")] {
        let err = parse_manifest_metadata(&write_avro(&schema, &[md], &ok)).unwrap_err();
        assert!(err.to_string().contains(md.1), "{err}");
    }
    let bad = [entry(7, None, None, file)];
    let err = parse_manifest(
        &write_avro(&schema, &[], &bad),
        &manifest_file(1, 1),
        &StructType::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("manifest_entry.status 7"), "{err}");
}

/// The spec wants EXISTING entries of v2 manifests to carry their sequence numbers; one
/// without them is kept as `None` (lenient), while its snapshot id is still inherited.
#[test]
fn existing_entry_without_sequence_numbers_stays_none() {
    let schema = entry_schema(data_file_schema(json!([]), false), false);
    let file = v2_data_file("a.parquet", 0, record(vec![]));
    let bytes = write_avro(&schema, V2_METADATA, &[entry(0, None, None, file)]);
    let m = parse_manifest(&bytes, &manifest_file(42, 9), &StructType::default()).unwrap();
    let e = &m.entries[0];
    assert_eq!(e.snapshot_id, Some(42));
    assert_eq!((e.sequence_number, e.file_sequence_number), (None, None));
}

/// Metrics maps written as Avro maps (string keys) instead of Java's arrays of records.
#[test]
fn metrics_as_avro_maps() {
    let schema = json!({"type": "record", "name": "manifest_entry", "fields": [
        field("status", 0, json!("int")),
        field("data_file", 2, json!({"type": "record", "name": "r2", "fields": [
            field("file_path", 100, json!("string")),
            field("file_format", 101, json!("string")),
            field("record_count", 103, json!("long")),
            field("file_size_in_bytes", 104, json!("long")),
            opt_field("value_counts", 109, json!({"type": "map", "values": "long"})),
            opt_field("upper_bounds", 128, json!({"type": "map", "values": "bytes"})),
        ]})),
    ]});
    let map = |entries: Vec<(&str, Value)>| {
        some(Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        ))
    };
    let file = record(vec![
        ("file_path", Value::String("f.orc".into())),
        ("file_format", Value::String("orc".into())),
        ("record_count", Value::Long(1)),
        ("file_size_in_bytes", Value::Long(2)),
        ("value_counts", map(vec![("3", Value::Long(1))])),
        ("upper_bounds", map(vec![("3", Value::Bytes(vec![1]))])),
    ]);
    let rec = record(vec![("status", Value::Int(1)), ("data_file", file)]);
    let bytes = write_avro(&schema, &[("format-version", "2")], &[rec]);
    let m = parse_manifest(&bytes, &manifest_file(1, 4), &StructType::default()).unwrap();
    let f = &m.entries[0].data_file;
    assert_eq!(f.file_format, FileFormat::Orc);
    assert_eq!(f.value_counts, HashMap::from([(3, 1)]));
    assert_eq!(f.upper_bounds, Some(HashMap::from([(3, vec![1])])));
    assert_eq!(
        f.upper_bound(3, &PrimitiveType::Boolean).unwrap(),
        Some(Literal::Boolean(true))
    );
    // No sequence_number field but format-version 2: ADDED entries inherit.
    assert_eq!(m.entries[0].sequence_number, Some(4));
}

fn lineage_entry(
    status: ManifestStatus,
    path: &str,
    rows: i64,
    first: Option<i64>,
) -> ManifestEntry {
    let mut data_file = DataFile::new(DataContentType::Data, path, FileFormat::Parquet, rows, 100);
    data_file.first_row_id = first;
    ManifestEntry {
        status,
        snapshot_id: Some(1),
        sequence_number: Some(1),
        file_sequence_number: Some(1),
        data_file,
    }
}

/// The spec's example ("Row lineage example", manifest `added1`): a written id is kept, null
/// ones follow the manifest's `first_row_id` by the counts of the earlier null ones, and
/// EXISTING and DELETED entries count like ADDED ones.
#[test]
fn first_row_ids_inherit_from_the_manifest() {
    use ManifestStatus::{Added, Deleted, Existing};
    let mut entries = vec![
        lineage_entry(Existing, "data1", 25, Some(800)),
        lineage_entry(Added, "data2", 50, None),
        lineage_entry(Deleted, "data3", 7, None),
        lineage_entry(Existing, "data4", 3, None),
        lineage_entry(Added, "data5", 50, None),
    ];
    inherit_first_row_ids(&mut entries, Some(1000)).unwrap();
    let ids: Vec<Option<i64>> = entries.iter().map(|e| e.data_file.first_row_id).collect();
    assert_eq!(
        ids,
        [Some(800), Some(1000), Some(1050), Some(1057), Some(1060)]
    );
}

/// Without a manifest `first_row_id` (before v3, or a snapshot from before the upgrade) the
/// files keep null; delete files never get one; a sum past `i64::MAX` and a negative count
/// are corrupt.
#[test]
fn first_row_ids_not_inherited_without_a_manifest_id() {
    let mut entries = vec![lineage_entry(ManifestStatus::Added, "a", 5, None)];
    inherit_first_row_ids(&mut entries, None).unwrap();
    assert_eq!(entries[0].data_file.first_row_id, None);

    let mut deletes = vec![lineage_entry(ManifestStatus::Added, "d", 5, None)];
    deletes[0].data_file.content = DataContentType::PositionDeletes;
    inherit_first_row_ids(&mut deletes, Some(10)).unwrap();
    assert_eq!(deletes[0].data_file.first_row_id, None);

    let mut huge = vec![
        lineage_entry(ManifestStatus::Added, "a", i64::MAX, None),
        lineage_entry(ManifestStatus::Added, "b", 1, None),
    ];
    let err = inherit_first_row_ids(&mut huge, Some(1)).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    let mut negative = vec![lineage_entry(ManifestStatus::Added, "n", -1, None)];
    assert!(inherit_first_row_ids(&mut negative, Some(1)).is_err());
}

/// A v3 data manifest read through its list entry: the decoder applies the inheritance; a
/// deletes manifest's list entry passes none down.
#[test]
fn parsed_v3_manifest_inherits_first_row_ids() {
    let schema = entry_schema(data_file_schema(json!([]), false), false);
    let v3: Vec<(&str, &str)> = V2_METADATA
        .iter()
        .map(|(k, v)| (*k, if *k == "format-version" { "3" } else { *v }))
        .collect();
    let records = [
        entry(1, None, None, v2_data_file("a.parquet", 0, record(vec![]))),
        entry(1, None, None, v2_data_file("b.parquet", 0, record(vec![]))),
    ];
    let bytes = write_avro(&schema, &v3, &records);
    let mut list_entry = manifest_file(42, 9);
    list_entry.first_row_id = Some(100);
    let m = parse_manifest(&bytes, &list_entry, &StructType::default()).unwrap();
    let counts: Vec<i64> = m.entries.iter().map(|e| e.data_file.record_count).collect();
    let ids: Vec<Option<i64>> = m.entries.iter().map(|e| e.data_file.first_row_id).collect();
    assert_eq!(ids, [Some(100), Some(100 + counts[0])]);
}

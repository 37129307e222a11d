//! Tests of `manifest_writer`.

use std::collections::HashMap;
use std::path::Path;

use apache_avro::types::Value as AvroValue;

use super::*;
use crate::spec::avro::AvroFile;
use crate::spec::manifest::{ManifestStatus, parse_manifest, parse_manifest_metadata};
use crate::spec::manifest_list::parse_manifest_list;
use crate::spec::partition::{PartitionField, Transform};
use crate::spec::types::NestedField;

const SNAPSHOT_ID: i64 = 42;
const SEQUENCE_NUMBER: i64 = 7;

fn schema() -> Schema {
    use PrimitiveType as P;
    let decimal = P::Decimal {
        precision: 10,
        scale: 2,
    };
    let types = [
        P::Long,
        P::String,
        P::Timestamptz,
        P::Date,
        decimal.clone(),
        decimal,
        P::Uuid,
        P::Boolean,
        P::Binary,
        P::Fixed(4),
        P::Time,
        P::Timestamp,
        P::TimestampNs,
        P::TimestamptzNs,
        P::Int,
        P::Float,
        P::Double,
    ];
    let fields = types
        .into_iter()
        .enumerate()
        .map(|(i, ty)| NestedField::optional(i as i32 + 1, format!("c{}", i + 1), ty))
        .collect();
    Schema::new(3, fields)
}

fn metadata(version: FormatVersion) -> TableMetadata {
    let json = json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "/wh/t",
        "last-sequence-number": 0,
        "last-updated-ms": 1_700_000_000_000_i64,
        "last-column-id": 17,
        "current-schema-id": 3,
        "schemas": [schema().to_json()],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
    });
    let mut m = TableMetadata::parse(json.to_string().as_bytes()).unwrap();
    m.format_version = version;
    m
}

fn partition_field(source_id: i32, field_id: i32, name: &str, t: Transform) -> PartitionField {
    PartitionField {
        source_id,
        field_id,
        name: name.into(),
        transform: t,
    }
}

/// identity(c2), day(c3), bucket[16](c1).
fn spec() -> PartitionSpec {
    PartitionSpec {
        spec_id: 5,
        fields: vec![
            partition_field(2, 1000, "c2", Transform::Identity),
            partition_field(3, 1001, "c3_day", Transform::Day),
            partition_field(1, 1002, "c1-bucket", Transform::Bucket(16)),
        ],
    }
}

fn data_file(content: DataContentType, path: &str, partition: Vec<Option<Literal>>) -> DataFile {
    DataFile {
        content,
        file_path: path.into(),
        file_format: FileFormat::Parquet,
        partition,
        record_count: 100,
        file_size_in_bytes: 4096,
        column_sizes: HashMap::from([(1, 10), (2, 20)]),
        value_counts: HashMap::from([(1, 100), (2, 100)]),
        null_value_counts: HashMap::from([(1, 0), (2, 3)]),
        nan_value_counts: HashMap::new(),
        lower_bounds: Some(HashMap::from([(1, 5i64.to_le_bytes().to_vec())])),
        upper_bounds: Some(HashMap::from([(1, 99i64.to_le_bytes().to_vec())])),
        key_metadata: None,
        split_offsets: Some(vec![4, 2048]),
        equality_ids: None,
        sort_order_id: Some(0),
        first_row_id: None,
        referenced_data_file: None,
        content_offset: None,
        content_size_in_bytes: None,
    }
}

fn entry(status: ManifestStatus, data_file: DataFile) -> ManifestEntry {
    ManifestEntry {
        status,
        snapshot_id: Some(SNAPSHOT_ID),
        sequence_number: Some(3),
        file_sequence_number: Some(4),
        data_file,
    }
}

fn tuples() -> [Vec<Option<Literal>>; 3] {
    [
        vec![
            Some(Literal::String("a".into())),
            Some(Literal::Date(19_723)),
            Some(Literal::Int(7)),
        ],
        vec![None, Some(Literal::Date(-1)), None],
        vec![None, None, None],
    ]
}

fn list_entry(content: ManifestContent) -> ManifestFile {
    let mut m = ManifestFile::new("/wh/t/metadata/m.avro", 1, 5, content, SNAPSHOT_ID);
    m.sequence_number = SEQUENCE_NUMBER;
    m
}

/// Writes and reads back with our reader; checks the header too.
fn round_trip(
    version: FormatVersion,
    spec: &PartitionSpec,
    content: ManifestContent,
    entries: &[ManifestEntry],
) -> Vec<ManifestEntry> {
    let schema = schema();
    let bytes = write_manifest(&metadata(version), &schema, spec, content, entries).unwrap();
    let md = parse_manifest_metadata(&bytes).unwrap();
    assert_eq!(md.format_version, Some(version as u8));
    assert_eq!(md.content, Some(content));
    assert_eq!(md.schema_id, Some(3));
    assert_eq!(md.partition_spec_id, Some(spec.spec_id));
    let md_schema: Json = serde_json::from_str(md.schema.as_deref().unwrap()).unwrap();
    assert_eq!(Schema::from_json(&md_schema).unwrap(), schema);
    let fields: Json = serde_json::from_str(md.partition_spec.as_deref().unwrap()).unwrap();
    assert_eq!(
        &PartitionSpec::from_fields_json(spec.spec_id, &fields).unwrap(),
        spec
    );
    // An independent decoder (apache-avro, driven by the header's schema) reads every record
    // to the same files: the encoding follows the schema field by field.
    let decoded: Vec<(String, i64)> = apache_avro::Reader::new(&bytes[..])
        .unwrap()
        .map(|record| {
            let data_file = field_of(&record.unwrap(), "data_file");
            match (
                field_of(&data_file, "file_path"),
                field_of(&data_file, "record_count"),
            ) {
                (AvroValue::String(path), AvroValue::Long(count)) => (path, count),
                other => panic!("data_file decoded as {other:?}"),
            }
        })
        .collect();
    let expected: Vec<(String, i64)> = entries
        .iter()
        .map(|e| (e.data_file.file_path.clone(), e.data_file.record_count))
        .collect();
    assert_eq!(decoded, expected);
    let partition_type = spec.partition_type(&schema).unwrap();
    parse_manifest(&bytes, &list_entry(content), &partition_type)
        .unwrap()
        .entries
}

/// Field `name` of a record apache-avro decoded.
fn field_of(record: &AvroValue, name: &str) -> AvroValue {
    match record {
        AvroValue::Record(fields) => fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no field {name} in {record:?}")),
        other => panic!("not a record: {other:?}"),
    }
}

#[test]
fn v1_data_manifest_round_trips() {
    let entries: Vec<_> = tuples()
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let mut e = entry(
                ManifestStatus::Existing,
                data_file(DataContentType::Data, &format!("/d/{i}.parquet"), t),
            );
            // What the reader gives v1 entries.
            e.sequence_number = Some(0);
            e.file_sequence_number = Some(0);
            e
        })
        .collect();
    let read = round_trip(FormatVersion::V1, &spec(), ManifestContent::Data, &entries);
    assert_eq!(read, entries);
}

#[test]
fn v2_data_manifest_round_trips_with_inheritance() {
    let [a, b, c] = tuples();
    let mut added = entry(
        ManifestStatus::Added,
        data_file(DataContentType::Data, "/d/a.parquet", a),
    );
    added.snapshot_id = None;
    added.sequence_number = None;
    added.file_sequence_number = None;
    let mut no_metrics = data_file(DataContentType::Data, "/d/b.parquet", b);
    no_metrics.column_sizes.clear();
    no_metrics.lower_bounds = None;
    no_metrics.upper_bounds = Some(HashMap::new());
    no_metrics.key_metadata = Some(vec![1, 2]);
    let entries = vec![
        added.clone(),
        entry(ManifestStatus::Existing, no_metrics),
        entry(
            ManifestStatus::Deleted,
            data_file(DataContentType::Data, "/d/c.parquet", c),
        ),
    ];
    let read = round_trip(FormatVersion::V2, &spec(), ManifestContent::Data, &entries);
    let mut expected = entries;
    expected[0].snapshot_id = Some(SNAPSHOT_ID);
    expected[0].sequence_number = Some(SEQUENCE_NUMBER);
    expected[0].file_sequence_number = Some(SEQUENCE_NUMBER);
    assert_eq!(read, expected);
}

fn delete_entries() -> Vec<ManifestEntry> {
    let [a, b, _] = tuples();
    let mut position = data_file(DataContentType::PositionDeletes, "/d/pos.parquet", a);
    position.referenced_data_file = Some("/d/a.parquet".into());
    let mut equality = data_file(DataContentType::EqualityDeletes, "/d/eq.parquet", b);
    equality.equality_ids = Some(vec![1, 2]);
    equality.sort_order_id = None;
    vec![
        entry(ManifestStatus::Added, position),
        entry(ManifestStatus::Added, equality),
    ]
}

#[test]
fn v2_delete_manifest_round_trips() {
    let entries = delete_entries();
    let read = round_trip(
        FormatVersion::V2,
        &spec(),
        ManifestContent::Deletes,
        &entries,
    );
    assert_eq!(read, entries);
}

#[test]
fn v3_manifests_round_trip_with_a_deletion_vector() {
    let mut entries = delete_entries();
    let mut dv = data_file(
        DataContentType::PositionDeletes,
        "/d/dv.puffin",
        tuples()[0].clone(),
    );
    dv.file_format = FileFormat::Puffin;
    dv.referenced_data_file = Some("/d/a.parquet".into());
    dv.content_offset = Some(4);
    dv.content_size_in_bytes = Some(40);
    dv.split_offsets = None;
    dv.column_sizes.clear();
    dv.value_counts.clear();
    dv.null_value_counts.clear();
    dv.lower_bounds = None;
    dv.upper_bounds = None;
    entries.push(entry(ManifestStatus::Added, dv));
    let read = round_trip(
        FormatVersion::V3,
        &spec(),
        ManifestContent::Deletes,
        &entries,
    );
    assert_eq!(read, entries);

    let [a, _, _] = tuples();
    let mut data = data_file(DataContentType::Data, "/d/a.parquet", a);
    data.first_row_id = Some(1000);
    let entries = vec![entry(ManifestStatus::Added, data)];
    let read = round_trip(FormatVersion::V3, &spec(), ManifestContent::Data, &entries);
    assert_eq!(read, entries);
}

#[test]
fn unpartitioned_manifest_round_trips() {
    let entries = vec![entry(
        ManifestStatus::Added,
        data_file(DataContentType::Data, "/d/a.parquet", vec![]),
    )];
    let spec = PartitionSpec::unpartitioned();
    let read = round_trip(FormatVersion::V2, &spec, ManifestContent::Data, &entries);
    assert_eq!(read, entries);
}

#[test]
fn partition_values_of_every_type_round_trip() {
    let fields = schema()
        .columns()
        .iter()
        .map(|c| {
            partition_field(
                c.id,
                1000 + c.id,
                &format!("p{}", c.id),
                Transform::Identity,
            )
        })
        .collect();
    let spec = PartitionSpec { spec_id: 5, fields };
    let tuple = vec![
        Some(Literal::Long(-5)),
        Some(Literal::String("é".into())),
        Some(Literal::Timestamptz(1_700_000_000_000_000)),
        Some(Literal::Date(19_000)),
        Some(Literal::Decimal(-12_345)),
        Some(Literal::Decimal(9_999_999_999)),
        Some(Literal::Uuid([7; 16])),
        Some(Literal::Boolean(true)),
        Some(Literal::Binary(vec![0, 255])),
        Some(Literal::Fixed(vec![1, 2, 3, 4])),
        Some(Literal::Time(3_600_000_000)),
        Some(Literal::Timestamp(-1)),
        Some(Literal::TimestampNs(1_700_000_000_000_000_001)),
        Some(Literal::TimestamptzNs(2)),
        Some(Literal::Int(i32::MIN)),
        Some(Literal::Float(1.5)),
        Some(Literal::Double(-2.25)),
    ];
    let nulls = vec![None; tuple.len()];
    let entries: Vec<_> = [tuple, nulls]
        .into_iter()
        .map(|t| {
            entry(
                ManifestStatus::Existing,
                data_file(DataContentType::Data, "/d/x.parquet", t),
            )
        })
        .collect();
    let read = round_trip(FormatVersion::V2, &spec, ManifestContent::Data, &entries);
    assert_eq!(read, entries);
}

#[test]
fn decimal_sizes_follow_precision() {
    let sizes: Vec<_> = [1, 2, 9, 10, 18, 19, 38]
        .iter()
        .map(|&p| decimal_required_bytes(p).unwrap())
        .collect();
    assert_eq!(sizes, [1, 1, 4, 5, 8, 9, 16]);
    assert!(decimal_required_bytes(39).is_err());
    assert_eq!(sign_extended(-1, 3), Some(vec![0xFF; 3]));
    assert_eq!(sign_extended(128, 1), None);
    assert_eq!(sign_extended(-129, 1), None);
}

#[test]
fn avro_names_are_sanitized_as_java_does() {
    assert_eq!(avro_name("c1-bucket"), "c1_x2Dbucket");
    assert_eq!(avro_name("1st"), "_1st");
    assert_eq!(avro_name("ok_Name9"), "ok_Name9");
}

fn write_err(
    version: FormatVersion,
    content: ManifestContent,
    entries: &[ManifestEntry],
) -> String {
    match write_manifest(&metadata(version), &schema(), &spec(), content, entries) {
        Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn what_a_version_cannot_hold_is_an_error() {
    let [a, _, _] = tuples();
    let data = entry(
        ManifestStatus::Added,
        data_file(DataContentType::Data, "/d/a.parquet", a.clone()),
    );
    assert!(write_err(FormatVersion::V1, ManifestContent::Deletes, &[]).contains("version 1"));
    let mut dv = data.clone();
    dv.data_file.content_offset = Some(1);
    assert!(
        write_err(FormatVersion::V2, ManifestContent::Deletes, &[dv]).contains("content_offset")
    );
    let mut no_snapshot = data.clone();
    no_snapshot.snapshot_id = None;
    assert!(
        write_err(FormatVersion::V1, ManifestContent::Data, &[no_snapshot]).contains("snapshot_id")
    );
    let mut short = data.clone();
    short.data_file.partition.pop();
    assert!(write_err(FormatVersion::V2, ManifestContent::Data, &[short]).contains("entry 0"));
    let mut wrong = data;
    wrong.data_file.partition[1] = Some(Literal::Int(1));
    assert!(write_err(FormatVersion::V2, ManifestContent::Data, &[wrong]).contains("c3_day"));
}

fn full_list_entry(content: ManifestContent, path: &str) -> ManifestFile {
    ManifestFile {
        manifest_path: path.into(),
        manifest_length: 1234,
        partition_spec_id: 5,
        content,
        sequence_number: SEQUENCE_NUMBER,
        min_sequence_number: 2,
        added_snapshot_id: SNAPSHOT_ID,
        added_files_count: Some(1),
        existing_files_count: Some(2),
        deleted_files_count: Some(0),
        added_rows_count: Some(10),
        existing_rows_count: Some(20),
        deleted_rows_count: Some(0),
        partitions: Some(vec![
            FieldSummary {
                contains_null: true,
                contains_nan: Some(false),
                lower_bound: Some(b"a".to_vec()),
                upper_bound: Some(b"z".to_vec()),
            },
            FieldSummary::default(),
        ]),
        key_metadata: None,
        first_row_id: None,
    }
}

fn list_header(bytes: &[u8]) -> HashMap<String, String> {
    AvroFile::open(bytes)
        .unwrap()
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8(v.clone()).unwrap()))
        .collect()
}

/// The manifest path, snapshot id and number of partition summaries of each record of a
/// manifest list, as apache-avro decodes it.
fn decoded_list(bytes: &[u8]) -> Vec<(String, i64, Option<usize>)> {
    apache_avro::Reader::new(bytes)
        .unwrap()
        .map(|record| {
            let record = record.unwrap();
            let (AvroValue::String(path), AvroValue::Long(snapshot)) = (
                field_of(&record, "manifest_path"),
                field_of(&record, "added_snapshot_id"),
            ) else {
                panic!("decoded as {record:?}");
            };
            let summaries = match field_of(&record, "partitions") {
                AvroValue::Union(1, list) => match *list {
                    AvroValue::Array(items) => Some(items.len()),
                    other => panic!("partitions decoded as {other:?}"),
                },
                AvroValue::Union(0, _) => None,
                other => panic!("partitions decoded as {other:?}"),
            };
            (path, snapshot, summaries)
        })
        .collect()
}

/// What [`decoded_list`] should find for `manifests`.
fn listed(manifests: &[ManifestFile]) -> Vec<(String, i64, Option<usize>)> {
    manifests
        .iter()
        .map(|m| {
            let summaries = m.partitions.as_ref().map(Vec::len);
            (m.manifest_path.clone(), m.added_snapshot_id, summaries)
        })
        .collect()
}

#[test]
fn manifest_lists_round_trip() {
    // v1: data manifests only, no sequence numbers, optional counts.
    let mut v1 = full_list_entry(ManifestContent::Data, "/m/1.avro");
    v1.sequence_number = 0;
    v1.min_sequence_number = 0;
    v1.existing_rows_count = None;
    v1.key_metadata = Some(vec![9]);
    let bytes =
        write_manifest_list(FormatVersion::V1, SNAPSHOT_ID, None, 0, &[v1.clone()]).unwrap();
    assert_eq!(decoded_list(&bytes), listed(&[v1.clone()]));
    assert_eq!(
        parse_manifest_list(&bytes, FormatVersion::V1).unwrap(),
        [v1]
    );
    let header = list_header(&bytes);
    assert_eq!(header["snapshot-id"], "42");
    assert_eq!(header["parent-snapshot-id"], "null");
    assert_eq!(header["format-version"], "1");
    assert!(!header.contains_key("sequence-number"));

    let v2 = [
        full_list_entry(ManifestContent::Data, "/m/1.avro"),
        full_list_entry(ManifestContent::Deletes, "/m/2.avro"),
    ];
    let bytes = write_manifest_list(
        FormatVersion::V2,
        SNAPSHOT_ID,
        Some(41),
        SEQUENCE_NUMBER,
        &v2,
    )
    .unwrap();
    assert_eq!(decoded_list(&bytes), listed(&v2));
    assert_eq!(parse_manifest_list(&bytes, FormatVersion::V2).unwrap(), v2);
    let header = list_header(&bytes);
    assert_eq!(header["parent-snapshot-id"], "41");
    assert_eq!(header["sequence-number"], "7");
    assert_eq!(header["format-version"], "2");

    let mut v3 = v2.to_vec();
    v3[0].first_row_id = Some(500);
    let mut old = full_list_entry(ManifestContent::Data, "/m/0.avro");
    old.added_snapshot_id = 41;
    old.first_row_id = Some(0);
    v3.push(old);
    let bytes = write_manifest_list(
        FormatVersion::V3,
        SNAPSHOT_ID,
        Some(41),
        SEQUENCE_NUMBER,
        &v3,
    )
    .unwrap();
    assert_eq!(decoded_list(&bytes), listed(&v3));
    assert_eq!(parse_manifest_list(&bytes, FormatVersion::V3).unwrap(), v3);
    let header = list_header(&bytes);
    assert_eq!(header["first-row-id"], "500");
    assert_eq!(header["format-version"], "3");
}

#[test]
fn manifest_list_errors_name_the_manifest() {
    let deletes = full_list_entry(ManifestContent::Deletes, "/m/d.avro");
    let err = write_manifest_list(FormatVersion::V1, 1, None, 0, &[deletes]).unwrap_err();
    assert!(err.to_string().contains("/m/d.avro"), "{err}");
    let mut no_counts = full_list_entry(ManifestContent::Data, "/m/1.avro");
    no_counts.added_rows_count = None;
    let err = write_manifest_list(FormatVersion::V2, 1, None, 1, &[no_counts]).unwrap_err();
    assert!(err.to_string().contains("added_rows_count"), "{err}");
    let mut row_ids = full_list_entry(ManifestContent::Data, "/m/1.avro");
    row_ids.first_row_id = Some(1);
    assert!(write_manifest_list(FormatVersion::V2, 1, None, 1, &[row_ids]).is_err());
}

/// PyIceberg's manifests, read, written back and read again, give the same entries.
#[test]
fn pyiceberg_manifests_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pyiceberg/wh1/db/orders/metadata");
    let metadata = TableMetadata::parse(
        &std::fs::read(dir.join("00002-12fddab5-e74f-4436-9b0e-e263cc6ff7c0.metadata.json"))
            .unwrap(),
    )
    .unwrap();
    let schema = metadata.current_schema();
    let mut checked = 0;
    for list in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = list.file_name().to_string_lossy().into_owned();
        if !name.starts_with("snap-") {
            continue;
        }
        let list = std::fs::read(list.path()).unwrap();
        for m in parse_manifest_list(&list, metadata.format_version).unwrap() {
            let file_name = m.manifest_path.rsplit('/').next().unwrap();
            assert!(file_name.ends_with("-m0.avro"));
            let bytes = std::fs::read(dir.join(file_name)).unwrap();
            let spec = metadata.partition_spec_by_id(m.partition_spec_id).unwrap();
            let partition_type = spec.partition_type(schema).unwrap();
            let original = parse_manifest(&bytes, &m, &partition_type).unwrap();
            let written = write_manifest(
                &metadata,
                schema,
                spec,
                original.metadata.content_type(),
                &original.entries,
            )
            .unwrap();
            let again = parse_manifest(&written, &m, &partition_type).unwrap();
            assert!(!original.entries.is_empty());
            assert_eq!(again.entries, original.entries);
            // PyIceberg leaves `schema-id` out; we write the schema's.
            let (a, b) = (&again.metadata, &original.metadata);
            assert_eq!(a.schema_id, Some(schema.schema_id));
            assert_eq!(
                (a.partition_spec_id, a.format_version, a.content_type()),
                (b.partition_spec_id, b.format_version, b.content_type())
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "manifests listed by the two snapshots");
}

/// The writer schema in a container's header, as written.
fn header_schema(bytes: &[u8]) -> Json {
    let at = bytes.windows(11).position(|w| w == b"avro.schema").unwrap() + 11;
    // The value: a zig-zag length, then the JSON text.
    let (mut len, mut shift, mut i) = (0u64, 0, at);
    loop {
        let b = bytes[i];
        len |= u64::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let len = (len >> 1) as usize;
    serde_json::from_slice(&bytes[i..i + len]).unwrap()
}

/// Every Avro node (object) under `v` that has a field of this name.
fn fields_named<'a>(v: &'a Json, name: &str, out: &mut Vec<&'a Json>) {
    match v {
        Json::Object(o) => {
            if o.get("name").and_then(Json::as_str) == Some(name) {
                out.push(v);
            }
            o.values().for_each(|c| fields_named(c, name, out));
        }
        Json::Array(a) => a.iter().for_each(|c| fields_named(c, name, out)),
        _ => {}
    }
}

#[test]
fn the_header_keeps_the_map_logical_type_and_other_readers_decode_the_file() {
    // The spec (Avro appendix) writes Iceberg maps with non-string keys as arrays of key/value
    // records marked `"logicalType": "map"`; PyIceberg and DuckDB need the marker.
    let entries = vec![entry(
        ManifestStatus::Added,
        data_file(DataContentType::Data, "/d/0.parquet", tuples()[0].clone()),
    )];
    let bytes = write_manifest(
        &metadata(FormatVersion::V2),
        &schema(),
        &spec(),
        ManifestContent::Data,
        &entries,
    )
    .unwrap();
    let header = header_schema(&bytes);
    for name in [
        "column_sizes",
        "value_counts",
        "lower_bounds",
        "upper_bounds",
    ] {
        let mut found = Vec::new();
        fields_named(&header, name, &mut found);
        assert_eq!(found.len(), 1, "{name}");
        let array = &found[0]["type"][1];
        assert_eq!(array["type"], "array", "{name}: {array}");
        assert_eq!(array["logicalType"], "map", "{name}: {array}");
    }
    // apache-avro's own reader decodes every record of the container.
    let records: Vec<_> = apache_avro::Reader::new(&bytes[..])
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    assert_eq!(records.len(), 1);
    // And so does the manifest list writer's container.
    let list = write_manifest_list(
        FormatVersion::V2,
        1,
        None,
        1,
        &[full_list_entry(ManifestContent::Data, "/m/0.avro")],
    )
    .unwrap();
    let count = apache_avro::Reader::new(&list[..]).unwrap().count();
    assert_eq!(count, 1);
}

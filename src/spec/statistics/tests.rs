use serde_json::json;

use super::*;

#[test]
fn blob_metadata_reads_the_ndv_of_one_field_theta_sketches() {
    let theta = json!({"type": THETA_BLOB_TYPE, "snapshot-id": 5, "sequence-number": 2,
        "fields": [3], "properties": {"ndv": "55"}});
    let blob = BlobMetadata::from_json(&theta).unwrap();
    assert_eq!(blob.ndv(), Some((3, 55)));
    assert_eq!(BlobMetadata::from_json(&blob.to_json()).unwrap(), blob);
    let two_fields = json!({"type": THETA_BLOB_TYPE, "snapshot-id": 5, "sequence-number": 2,
        "fields": [3, 4], "properties": {"ndv": "55"}});
    assert_eq!(BlobMetadata::from_json(&two_fields).unwrap().ndv(), None);
    let other = json!({"type": "x", "snapshot-id": 5, "sequence-number": 2, "fields": [3],
        "properties": {"ndv": "55"}});
    assert_eq!(BlobMetadata::from_json(&other).unwrap().ndv(), None);
    let no_fields = json!({"type": "x", "snapshot-id": 5, "sequence-number": 2});
    let err = BlobMetadata::from_json(&no_fields).unwrap_err().to_string();
    assert!(err.contains("fields"), "{err}");
}

fn trino_metadata() -> TableMetadata {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let path = std::path::Path::new(&root)
        .join("tests/fixtures/external/impala_trino_variant/metadata/v2.metadata.json");
    TableMetadata::parse(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn statistics_serve_their_snapshot_and_its_descendants_only() {
    // Trino computed statistics for the current snapshot, whose parent has none.
    let mut m = trino_metadata();
    // (The fixture's metadata holds its ids rounded as a JSON tool left them.)
    let (current, parent) = (6_097_489_456_815_673_000, 8_332_248_857_076_198_000);
    let (file, age) = statistics_for(&m, current).unwrap();
    assert_eq!(age, StatisticsAge::Current);
    let ndvs: Vec<_> = file.blobs().iter().filter_map(BlobMetadata::ndv).collect();
    assert_eq!(ndvs, [(1, 55), (2, 55)]);
    assert!(statistics_for(&m, parent).is_none());
    // Moved to the parent, the statistics serve the child as an ancestor's.
    m.statistics[0].snapshot_id = parent;
    let (_, age) = statistics_for(&m, current).unwrap();
    assert_eq!(age, StatisticsAge::Ancestor);
    assert!(statistics_for(&m, 12345).is_none());
    assert!(partition_statistics_for(&m, current).is_none());
}

#[test]
fn partition_statistics_schema_follows_the_spec_per_version() {
    let partition = StructType::new(vec![NestedField::optional(1000, "p", PrimitiveType::Int)]);
    let v2 = partition_statistics_schema(partition.clone(), FormatVersion::V2);
    let ids: Vec<i32> = v2.columns().iter().map(|c| c.id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let required: Vec<bool> = v2.columns().iter().map(|c| c.required).collect();
    let expected = [
        true, true, true, true, true, false, false, false, false, false, false, false,
    ];
    assert_eq!(required, expected);
    let v3 = partition_statistics_schema(partition, FormatVersion::V3);
    let ids: Vec<i32> = v3.columns().iter().map(|c| c.id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7, 13, 8, 9, 10, 11, 12]);
    let names: Vec<&str> = v3.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[7], "dv_count");
    let required: Vec<bool> = v3.columns().iter().map(|c| c.required).collect();
    let expected = [
        true, true, true, true, true, true, true, true, true, true, false, false, false,
    ];
    assert_eq!(required, expected);
}

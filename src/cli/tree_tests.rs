use super::*;
use crate::spec::{DataFile, FileFormat, Literal};

const METADATA: &str = r#"{
  "format-version": 2,
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "file:///wh/db/orders",
  "last-sequence-number": 2,
  "last-updated-ms": 1704067300000,
  "last-column-id": 2,
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": false, "type": "long"},
    {"id": 2, "name": "order_ts", "required": false, "type": "timestamptz"}
  ]}],
  "default-spec-id": 0,
  "partition-specs": [{"spec-id": 0, "fields": [
    {"source-id": 2, "field-id": 1000, "name": "order_ts_day", "transform": "day"}
  ]}],
  "last-partition-id": 1000,
  "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],
  "properties": {},
  "current-snapshot-id": 222,
  "refs": {"main": {"snapshot-id": 222, "type": "branch"}},
  "snapshots": [
    {"snapshot-id": 111, "sequence-number": 1, "timestamp-ms": 1704067200000,
     "manifest-list": "file:///wh/db/orders/metadata/snap-111.avro",
     "summary": {"operation": "append"}, "schema-id": 0},
    {"snapshot-id": 222, "parent-snapshot-id": 111, "sequence-number": 2,
     "timestamp-ms": 1704067300000,
     "manifest-list": "file:///wh/db/orders/metadata/snap-222.avro",
     "summary": {"operation": "append"}, "schema-id": 0}
  ],
  "snapshot-log": [],
  "metadata-log": []
}"#;

const DAY_2024_01_01: i32 = 19723;

fn metadata() -> Arc<TableMetadata> {
    Arc::new(TableMetadata::parse(METADATA.as_bytes()).unwrap())
}

fn manifest(path: &str, added_by: i64, day: i32) -> ManifestFile {
    let bound = Literal::Date(day).to_bytes();
    ManifestFile {
        manifest_path: format!("file:///wh/db/orders/metadata/{path}"),
        manifest_length: 100,
        partition_spec_id: 0,
        content: ManifestContent::Data,
        sequence_number: 1,
        min_sequence_number: 1,
        added_snapshot_id: added_by,
        added_files_count: Some(1),
        existing_files_count: Some(0),
        deleted_files_count: Some(0),
        added_rows_count: Some(10),
        existing_rows_count: Some(0),
        deleted_rows_count: Some(0),
        partitions: Some(vec![FieldSummary {
            contains_null: false,
            contains_nan: None,
            lower_bound: Some(bound.clone()),
            upper_bound: Some(bound),
        }]),
        key_metadata: None,
        first_row_id: None,
    }
}

fn entry(name: &str, status: ManifestStatus, day: Option<i32>) -> ManifestEntry {
    ManifestEntry {
        status,
        snapshot_id: Some(111),
        sequence_number: Some(1),
        file_sequence_number: Some(1),
        data_file: DataFile {
            partition: vec![day.map(Literal::Date)],
            ..DataFile::new(
                DataContentType::Data,
                format!("/wh/db/orders/data/{name}"),
                FileFormat::Parquet,
                10,
                2048,
            )
        },
    }
}

fn table_tree() -> TableTree {
    let metadata = metadata();
    let m0 = ManifestTree {
        manifest: manifest("a-m0.avro", 111, DAY_2024_01_01),
        entries: Ok(Arc::new(vec![entry(
            "f1.parquet",
            ManifestStatus::Added,
            Some(DAY_2024_01_01),
        )])),
    };
    let m1 = ManifestTree {
        manifest: manifest("b-m0.avro", 222, DAY_2024_01_01 + 1),
        entries: Err(Arc::new(Error::not_found("b-m0.avro"))),
    };
    let snapshots = vec![
        SnapshotTree {
            snapshot: metadata.snapshots[0].clone(),
            manifests: Ok(vec![m0.clone()]),
        },
        SnapshotTree {
            snapshot: metadata.snapshots[1].clone(),
            manifests: Ok(vec![m0, m1]),
        },
    ];
    TableTree {
        name: "/wh/db/orders".to_string(),
        pointer: Some("metadata/version-hint.text -> 2".to_string()),
        metadata_location: "file:///wh/db/orders/metadata/v2.metadata.json".to_string(),
        location_aliases: vec!["/local/orders".to_string()],
        metadata,
        snapshots,
    }
}

#[test]
fn draws_the_whole_tree() {
    let text = render_tree(&table_tree(), TreeOptions::default());
    let expected = "\
/wh/db/orders  (pointer: metadata/version-hint.text -> 2)
└── metadata/v2.metadata.json  format v2, uuid 9c12d441-03fe-4693-9a96-a0705ddf69c1, location file:///wh/db/orders, current snapshot 222
    ├── refs
    │   └── branch main -> 222
    ├── snapshot 111  parent -  seq 1  append  2024-01-01T00:00:00Z  schema 0
    │   └── manifest list metadata/snap-111.avro
    │       └── manifest metadata/a-m0.avro  data  spec 0  added by snapshot 111  files +1 ~0 -0  rows +10 ~0 -0  partitions order_ts_day=[2024-01-01, 2024-01-01]
    │           └── data data/f1.parquet  added  10 rows  2.0 KiB  partition {order_ts_day=2024-01-01}
    └── snapshot 222  parent 111  seq 2  append  2024-01-01T00:01:40Z  schema 0  refs main (current)
        └── manifest list metadata/snap-222.avro
            ├── manifest metadata/a-m0.avro  data  spec 0  added by snapshot 111 (reused)  files +1 ~0 -0  rows +10 ~0 -0  partitions order_ts_day=[2024-01-01, 2024-01-01]
            └── manifest metadata/b-m0.avro  data  spec 0  added by snapshot 222  files +1 ~0 -0  rows +10 ~0 -0  partitions order_ts_day=[2024-01-02, 2024-01-02]
                └── error: not found: b-m0.avro
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn refs_show_type_target_and_retention() {
    let mut tree = table_tree();
    let mut metadata = (*tree.metadata).clone();
    let refs = [
        r#"{"snapshot-id": 111, "type": "tag", "max-ref-age-ms": 86400000}"#,
        r#"{"snapshot-id": 111, "type": "branch", "min-snapshots-to-keep": 2,
            "max-snapshot-age-ms": 3600000, "max-ref-age-ms": 604800000}"#,
        r#"{"snapshot-id": 999, "type": "tag"}"#,
    ];
    for (name, json) in ["v1", "audit", "gone"].into_iter().zip(refs) {
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        metadata.refs.insert(
            name.to_string(),
            SnapshotReference::from_json(&value).unwrap(),
        );
    }
    tree.metadata = Arc::new(metadata);
    let text = render_tree(&tree, TreeOptions::default());
    let expected = "\
    ├── refs
    │   ├── branch main -> 222
    │   ├── branch audit -> 111 (min-snapshots-to-keep 2, max-snapshot-age-ms 3600000, max-ref-age-ms 604800000)
    │   ├── tag gone -> 999 (snapshot not in the metadata)
    │   └── tag v1 -> 111 (max-ref-age-ms 86400000)
    ├── snapshot 111  parent -  seq 1  append  2024-01-01T00:00:00Z  schema 0  refs audit, v1
";
    assert!(text.contains(expected), "\n{text}");
    assert!(text.contains("schema 0  refs main (current)"), "{text}");
}

#[test]
fn no_refs_block_without_refs() {
    let mut tree = table_tree();
    let mut metadata = (*tree.metadata).clone();
    metadata.refs.clear();
    tree.metadata = Arc::new(metadata);
    let text = render_tree(&tree, TreeOptions::default());
    assert!(!text.contains("refs"), "{text}");
}

#[test]
fn limits_files_per_manifest() {
    let mut tree = table_tree();
    let entries: Vec<ManifestEntry> = (0..5)
        .map(|i| entry(&format!("f{i}.parquet"), ManifestStatus::Existing, None))
        .collect();
    tree.snapshots.truncate(1);
    if let Ok(manifests) = &mut tree.snapshots[0].manifests {
        manifests[0].entries = Ok(Arc::new(entries));
    }
    let text = render_tree(&tree, TreeOptions { max_files: 2 });
    assert!(
        text.contains(
            "├── data data/f0.parquet  existing  10 rows  2.0 KiB  partition {order_ts_day=null}"
        ),
        "{text}"
    );
    assert!(text.contains("└── … and 3 more"), "{text}");
    assert!(!text.contains("f2.parquet"), "{text}");
}

#[test]
fn snapshot_errors_show_in_place() {
    let mut tree = table_tree();
    tree.snapshots[0].manifests = Err(Arc::new(Error::corrupt("snap-111.avro", "bad block")));
    let text = render_tree(&tree, TreeOptions::default());
    assert!(text.contains("    │   └── manifest list metadata/snap-111.avro\n    │       └── error: corrupt snap-111.avro: bad block\n"), "{text}");
    // The manifest was not drawn under snapshot 111, so snapshot 222 draws its files.
    assert!(text.contains("data data/f1.parquet"), "{text}");
}

#[test]
fn paths_under_an_alias_are_relative() {
    let mut tree = table_tree();
    tree.metadata_location = "/local/orders/metadata/v2.metadata.json".to_string();
    let text = render_tree(&tree, TreeOptions::default());
    assert!(
        text.contains("└── metadata/v2.metadata.json  format v2"),
        "{text}"
    );
}

#[test]
fn draws_nested_nodes() {
    let tree = Node::new(
        "root",
        vec![
            Node::new("a", vec![Node::leaf("a1"), Node::leaf("a2")]),
            Node::new("b", vec![Node::leaf("b1")]),
        ],
    );
    assert_eq!(
        tree.draw(),
        "root\n├── a\n│   ├── a1\n│   └── a2\n└── b\n    └── b1\n"
    );
}

#[test]
fn relative_paths() {
    assert_eq!(
        relative_to("file:///wh/t/data/f.parquet", "file:///wh/t"),
        "data/f.parquet"
    );
    assert_eq!(
        relative_to("/wh/t/data/f.parquet", "file:///wh/t/"),
        "data/f.parquet"
    );
    assert_eq!(relative_to("file:/wh/t/x", "/wh/t"), "x");
    assert_eq!(relative_to("/wh/t2/x", "/wh/t"), "/wh/t2/x");
    assert_eq!(relative_to("s3://b/t/x", "s3://b/t"), "x");
}

#[test]
fn sizes_and_times() {
    assert_eq!(human_bytes(512), "512 B");
    assert_eq!(human_bytes(2048), "2.0 KiB");
    assert_eq!(human_bytes(1536 * 1024), "1.5 MiB");
    assert_eq!(
        format_timestamp_ms(1_704_067_200_123),
        "2024-01-01T00:00:00.123Z"
    );
}

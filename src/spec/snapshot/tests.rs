use serde_json::json;

use super::*;

fn v2_snapshot() -> JsonValue {
    json!({
        "snapshot-id": 3_055_729_675_574_597_004_i64,
        "parent-snapshot-id": 3_051_729_675_574_597_004_i64,
        "sequence-number": 1,
        "timestamp-ms": 1_555_100_955_770_i64,
        "summary": {"operation": "append", "added-data-files": "4", "total-records": "100"},
        "manifest-list": "s3://a/b/snap-1.avro",
        "schema-id": 1
    })
}

#[test]
fn snapshot_round_trips() {
    let s = Snapshot::from_json(&v2_snapshot()).unwrap();
    assert_eq!(s.snapshot_id, 3_055_729_675_574_597_004);
    assert_eq!(s.parent_snapshot_id, Some(3_051_729_675_574_597_004));
    assert_eq!(s.sequence_number, 1);
    let summary = s.summary.as_ref().unwrap();
    assert_eq!(summary.operation, Operation::Append);
    assert_eq!(summary.get("total-records"), Some("100"));
    assert_eq!(s.schema_id, Some(1));
    assert_eq!(s.to_json(), v2_snapshot());
}

#[test]
fn v3_fields_round_trip() {
    let v = json!({
        "snapshot-id": 1, "sequence-number": 2, "timestamp-ms": 3,
        "summary": {"operation": "overwrite"}, "manifest-list": "m.avro",
        "first-row-id": 100, "added-rows": 30, "key-id": "k1"
    });
    let s = Snapshot::from_json(&v).unwrap();
    assert_eq!((s.first_row_id, s.added_rows), (Some(100), Some(30)));
    assert_eq!(s.key_id.as_deref(), Some("k1"));
    assert_eq!(s.to_json(), v);
}

#[test]
fn v1_snapshot_with_embedded_manifests() {
    let v = json!({"snapshot-id": 5, "timestamp-ms": 7, "manifests": ["a.avro", "b.avro"]});
    let s = Snapshot::from_json(&v).unwrap();
    assert_eq!(s.sequence_number, 0);
    assert_eq!(s.manifest_list, None);
    assert_eq!(s.manifests, Some(vec!["a.avro".into(), "b.avro".into()]));
    assert_eq!(s.summary, None);
    assert_eq!(s.to_json(), v);
}

#[test]
fn ids_are_exact_i64() {
    let text = r#"{"snapshot-id": 9223372036854775807, "parent-snapshot-id": -9223372036854775808,
                   "timestamp-ms": 1, "manifest-list": "x"}"#;
    let s = Snapshot::from_json(&serde_json::from_str(text).unwrap()).unwrap();
    assert_eq!(s.snapshot_id, i64::MAX);
    assert_eq!(s.parent_snapshot_id, Some(i64::MIN));
    // Ids written by a writer that went through doubles.
    let text = r#"{"snapshot-id": 4685659321801244000, "timestamp-ms": 1.0, "manifest-list": "x"}"#;
    let s = Snapshot::from_json(&serde_json::from_str(text).unwrap()).unwrap();
    assert_eq!(s.snapshot_id, 4_685_659_321_801_244_000);
    assert_eq!(s.timestamp_ms, 1);
    for bad in [
        r#"{"snapshot-id": 1.5, "timestamp-ms": 1}"#,
        r#"{"snapshot-id": 9223372036854775808, "timestamp-ms": 1}"#,
        r#"{"snapshot-id": "1", "timestamp-ms": 1}"#,
        r#"{"timestamp-ms": 1}"#,
        r#"{"snapshot-id": 1}"#,
        r#"{"snapshot-id": 1, "timestamp-ms": 1, "summary": {"added-records": "1"}}"#,
    ] {
        let err = Snapshot::from_json(&serde_json::from_str(bad).unwrap()).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{bad}: {err}");
    }
}

#[test]
fn operations_parse_and_keep_unknown_names() {
    for (s, op) in [
        ("append", Operation::Append),
        ("replace", Operation::Replace),
        ("overwrite", Operation::Overwrite),
        ("delete", Operation::Delete),
        ("merge", Operation::Other("merge".into())),
    ] {
        assert_eq!(Operation::parse(s), op);
        assert_eq!(op.as_str(), s);
    }
}

#[test]
fn refs_round_trip() {
    let branch = json!({"snapshot-id": 9_223_372_036_854_775_807_i64, "type": "branch",
        "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 3, "max-ref-age-ms": 4});
    let tag = json!({"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 10});
    let plain = json!({"snapshot-id": 1, "type": "branch"});
    for v in [&branch, &tag, &plain] {
        assert_eq!(SnapshotReference::from_json(v).unwrap().to_json(), *v);
    }
    let r = SnapshotReference::from_json(&branch).unwrap();
    assert!(r.is_branch());
    assert_eq!(
        r.retention,
        SnapshotRetention::Branch {
            min_snapshots_to_keep: Some(2),
            max_snapshot_age_ms: Some(3),
            max_ref_age_ms: Some(4)
        }
    );
    assert!(!SnapshotReference::from_json(&tag).unwrap().is_branch());
    assert_eq!(
        SnapshotReference::from_json(&plain).unwrap(),
        SnapshotReference::branch(1)
    );
    let err =
        SnapshotReference::from_json(&json!({"snapshot-id": 1, "type": "label"})).unwrap_err();
    assert!(err.to_string().contains("label"), "{err}");
}

#[test]
fn log_entries_round_trip() {
    let s = json!({"timestamp-ms": 10, "snapshot-id": 11});
    assert_eq!(SnapshotLogEntry::from_json(&s).unwrap().to_json(), s);
    let m = json!({"timestamp-ms": 10, "metadata-file": "s3://t/metadata/v1.metadata.json"});
    let entry = MetadataLogEntry::from_json(&m).unwrap();
    assert_eq!(entry.metadata_file, "s3://t/metadata/v1.metadata.json");
    assert_eq!(entry.to_json(), m);
    assert!(MetadataLogEntry::from_json(&json!({"timestamp-ms": 1})).is_err());
}

/// A summary packed as the fast path of [`super::super::metadata`] packs it.
fn packed(operation: Operation, pairs: &[(&str, &str)]) -> Summary {
    let mut text = String::new();
    let mut ends = Vec::new();
    for (key, value) in pairs {
        text.push_str(key);
        ends.push(text.len() as u32);
        text.push_str(value);
        ends.push(text.len() as u32);
    }
    Summary::packed(
        operation,
        PackedProperties::new(text.into(), ends.into()).unwrap(),
    )
}

#[test]
fn packed_summaries_read_like_maps_and_the_last_repeat_wins() {
    let s = packed(
        Operation::Append,
        &[("b", "1"), ("a", "2"), ("b", "3"), ("", "")],
    );
    assert_eq!(
        (s.get("b"), s.get("a"), s.get("")),
        (Some("3"), Some("2"), Some(""))
    );
    assert_eq!(s.get("c"), None);
    let map: BTreeMap<String, String> = [("", ""), ("a", "2"), ("b", "3")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let eager = Summary::new(Operation::Append, map.clone());
    // `to_json` before and after the map is built, and equality both ways.
    assert_eq!(s.to_json(), eager.to_json());
    assert_eq!(s, eager);
    assert_eq!(eager, s);
    assert_eq!(s.properties(), &map);
    assert_eq!(s.to_json(), eager.to_json());
    assert_eq!(s.get("b"), Some("3"));
    assert_eq!(format!("{s:?}"), format!("{eager:?}"));
    assert_ne!(s, Summary::new(Operation::Delete, map.clone()));
    assert_ne!(s, Summary::new(Operation::Append, BTreeMap::new()));
    assert_eq!(
        packed(Operation::Append, &[("b", "1"), ("b", "3")]).into_properties(),
        BTreeMap::from([("b".to_string(), "3".to_string())])
    );
    assert_eq!(s.clone().into_properties(), map);
}

#[test]
fn changing_a_packed_summary_changes_what_it_reads() {
    let mut s = packed(Operation::Append, &[("a", "1"), ("a", "2")]);
    s.properties_mut().insert("b".into(), "3".into());
    s.properties_mut().remove("a");
    assert_eq!((s.get("a"), s.get("b")), (None, Some("3")));
    assert_eq!(s.to_json(), json!({"operation": "append", "b": "3"}));
    let copy = s.clone();
    assert_eq!(copy.into_properties().len(), 1);
    // A clone taken before the map is built builds its own.
    let fresh = packed(Operation::Delete, &[("x", "é")]);
    let copy = fresh.clone();
    assert_eq!(fresh.properties()["x"], "é");
    assert_eq!(copy.get("x"), Some("é"));
    assert_eq!(copy.properties()["x"], "é");
}

#[test]
fn packed_offsets_are_checked() {
    assert!(PackedProperties::new("ab".into(), Box::new([1, 2])).is_some());
    assert!(PackedProperties::new("ab".into(), Box::new([1])).is_none());
    assert!(PackedProperties::new("ab".into(), Box::new([2, 1])).is_none());
    assert!(PackedProperties::new("ab".into(), Box::new([1, 3])).is_none());
    assert!(PackedProperties::new("é".into(), Box::new([1, 2])).is_none());
}

#[test]
fn summaries_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Summary>();
}

use std::collections::BTreeMap;

use super::*;
use crate::spec::schema::MappedField;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The message of the error reading `key = value` through `read`, which must fail.
fn bad<T: std::fmt::Debug>(
    key: &str,
    value: &str,
    read: impl Fn(&BTreeMap<String, String>) -> Result<T>,
) -> String {
    let err = read(&props(&[(key, value)])).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(key) && message.contains(value),
        "{message}"
    );
    message
}

#[test]
fn keys_are_javas() {
    // org.apache.iceberg.TableProperties, spelled out independently of the constants.
    let keys = [
        (COMMIT_NUM_RETRIES.key(), "commit.retry.num-retries"),
        (COMMIT_MIN_RETRY_WAIT.key(), "commit.retry.min-wait-ms"),
        (COMMIT_MAX_RETRY_WAIT.key(), "commit.retry.max-wait-ms"),
        (
            MANIFEST_TARGET_SIZE_BYTES.key(),
            "commit.manifest.target-size-bytes",
        ),
        (
            METADATA_PREVIOUS_VERSIONS_MAX.key(),
            "write.metadata.previous-versions-max",
        ),
        (
            METADATA_DELETE_AFTER_COMMIT.key(),
            "write.metadata.delete-after-commit.enabled",
        ),
        (
            WRITE_TARGET_FILE_SIZE_BYTES.key(),
            "write.target-file-size-bytes",
        ),
        (PARQUET_COMPRESSION.key(), "write.parquet.compression-codec"),
        (
            PARQUET_COMPRESSION_LEVEL.key(),
            "write.parquet.compression-level",
        ),
        (
            PARQUET_ROW_GROUP_SIZE_BYTES.key(),
            "write.parquet.row-group-size-bytes",
        ),
        (
            PARQUET_PAGE_SIZE_BYTES.key(),
            "write.parquet.page-size-bytes",
        ),
        (
            DEFAULT_WRITE_METRICS_MODE.key(),
            "write.metadata.metrics.default",
        ),
        (GC_ENABLED.key(), "gc.enabled"),
        (
            MAX_SNAPSHOT_AGE_MS.key(),
            "history.expire.max-snapshot-age-ms",
        ),
        (
            MIN_SNAPSHOTS_TO_KEEP.key(),
            "history.expire.min-snapshots-to-keep",
        ),
        (MAX_REF_AGE_MS.key(), "history.expire.max-ref-age-ms"),
        (DEFAULT_NAME_MAPPING.key(), "schema.name-mapping.default"),
        (FORMAT_VERSION.key(), "format-version"),
    ];
    for (key, java) in keys {
        assert_eq!(key, java);
    }
}

#[test]
fn unset_keys_read_as_javas_defaults() {
    let none = BTreeMap::new();
    // The *_DEFAULT constants of TableProperties (and TableMetadata's default format version).
    assert_eq!(COMMIT_NUM_RETRIES.get(&none).unwrap(), 4);
    assert_eq!(
        COMMIT_MIN_RETRY_WAIT.get(&none).unwrap(),
        Duration::from_millis(100)
    );
    assert_eq!(
        COMMIT_MAX_RETRY_WAIT.get(&none).unwrap(),
        Duration::from_secs(60)
    );
    assert_eq!(MANIFEST_TARGET_SIZE_BYTES.get(&none).unwrap(), 8_388_608);
    assert_eq!(METADATA_PREVIOUS_VERSIONS_MAX.get(&none).unwrap(), 100);
    assert!(!METADATA_DELETE_AFTER_COMMIT.get(&none).unwrap());
    assert_eq!(
        WRITE_TARGET_FILE_SIZE_BYTES.get(&none).unwrap(),
        536_870_912
    );
    assert_eq!(PARQUET_COMPRESSION.get(&none).unwrap(), ParquetCodec::Zstd);
    assert_eq!(PARQUET_COMPRESSION_LEVEL.get(&none).unwrap(), None);
    assert_eq!(
        PARQUET_ROW_GROUP_SIZE_BYTES.get(&none).unwrap(),
        134_217_728
    );
    assert_eq!(PARQUET_PAGE_SIZE_BYTES.get(&none).unwrap(), 1_048_576);
    assert_eq!(
        DEFAULT_WRITE_METRICS_MODE.get(&none).unwrap(),
        MetricsMode::Truncate(16)
    );
    assert!(GC_ENABLED.get(&none).unwrap());
    assert_eq!(MAX_SNAPSHOT_AGE_MS.get(&none).unwrap(), 432_000_000);
    assert_eq!(MIN_SNAPSHOTS_TO_KEEP.get(&none).unwrap(), 1);
    assert_eq!(MAX_REF_AGE_MS.get(&none).unwrap(), None);
    assert_eq!(DEFAULT_NAME_MAPPING.get(&none).unwrap(), None);
    assert_eq!(FORMAT_VERSION.get(&none).unwrap(), 2);
    assert_eq!(FORMAT_VERSION.explicit(&none).unwrap(), None);
}

#[test]
fn set_values_parse_as_their_type() {
    let p = props(&[
        ("commit.retry.num-retries", " 7 "),
        ("commit.retry.min-wait-ms", "0"),
        ("write.metadata.previous-versions-max", "-3"),
        ("write.metadata.delete-after-commit.enabled", "TRUE"),
        ("write.target-file-size-bytes", "1000"),
        ("write.parquet.compression-codec", "Snappy"),
        ("write.parquet.compression-level", "-1"),
        ("gc.enabled", " False"),
        ("history.expire.max-ref-age-ms", "60000"),
        ("format-version", "3"),
        (
            "schema.name-mapping.default",
            r#"[{"field-id": 1, "names": ["id", "ID"]}]"#,
        ),
    ]);
    assert_eq!(COMMIT_NUM_RETRIES.get(&p).unwrap(), 7);
    assert_eq!(COMMIT_MIN_RETRY_WAIT.get(&p).unwrap(), Duration::ZERO);
    // Java keeps max(1, n) files; the property itself is any int.
    assert_eq!(METADATA_PREVIOUS_VERSIONS_MAX.get(&p).unwrap(), -3);
    assert!(METADATA_DELETE_AFTER_COMMIT.get(&p).unwrap());
    assert_eq!(WRITE_TARGET_FILE_SIZE_BYTES.get(&p).unwrap(), 1000);
    assert_eq!(PARQUET_COMPRESSION.get(&p).unwrap(), ParquetCodec::Snappy);
    assert_eq!(PARQUET_COMPRESSION_LEVEL.get(&p).unwrap(), Some(-1));
    assert!(!GC_ENABLED.get(&p).unwrap());
    assert_eq!(MAX_REF_AGE_MS.get(&p).unwrap(), Some(60_000));
    assert_eq!(FORMAT_VERSION.explicit(&p).unwrap(), Some(3));
    let mapping = DEFAULT_NAME_MAPPING.get(&p).unwrap().unwrap();
    assert_eq!(
        mapping.fields,
        [MappedField {
            field_id: Some(1),
            names: vec!["id".into(), "ID".into()],
            fields: vec![],
        }]
    );
    assert_eq!(mapping.field_id("ID"), Some(1));
}

#[test]
fn every_codec_and_metrics_mode_parses() {
    for (text, codec) in [
        ("zstd", ParquetCodec::Zstd),
        ("GZIP", ParquetCodec::Gzip),
        ("brotli", ParquetCodec::Brotli),
        ("snappy", ParquetCodec::Snappy),
        ("lz4", ParquetCodec::Lz4),
        ("uncompressed", ParquetCodec::Uncompressed),
        ("none", ParquetCodec::Uncompressed),
    ] {
        let p = props(&[("write.parquet.compression-codec", text)]);
        assert_eq!(PARQUET_COMPRESSION.get(&p).unwrap(), codec, "{text}");
    }
    for (text, mode) in [
        ("none", MetricsMode::None),
        ("Counts", MetricsMode::Counts),
        ("FULL", MetricsMode::Full),
        ("truncate(8)", MetricsMode::Truncate(8)),
        ("Truncate( 32 )", MetricsMode::Truncate(32)),
    ] {
        let p = props(&[("write.metadata.metrics.default", text)]);
        assert_eq!(DEFAULT_WRITE_METRICS_MODE.get(&p).unwrap(), mode, "{text}");
    }
}

#[test]
fn a_bad_integer_names_the_key_and_the_value() {
    let message = bad("commit.retry.num-retries", "banana", |p| {
        COMMIT_NUM_RETRIES.get(p)
    });
    assert!(message.contains("non-negative integer"), "{message}");
    bad("commit.retry.num-retries", "-1", |p| {
        COMMIT_NUM_RETRIES.get(p)
    });
    bad("commit.retry.num-retries", "4294967296", |p| {
        COMMIT_NUM_RETRIES.get(p)
    });
    bad("write.metadata.previous-versions-max", "1.5", |p| {
        METADATA_PREVIOUS_VERSIONS_MAX.get(p)
    });
    bad("write.parquet.compression-level", "max", |p| {
        PARQUET_COMPRESSION_LEVEL.get(p)
    });
    bad("format-version", "two", |p| FORMAT_VERSION.explicit(p));
    for value in ["0", "-5", "soon"] {
        bad("history.expire.min-snapshots-to-keep", value, |p| {
            MIN_SNAPSHOTS_TO_KEEP.get(p)
        });
        bad("history.expire.max-snapshot-age-ms", value, |p| {
            MAX_SNAPSHOT_AGE_MS.get(p)
        });
        bad("history.expire.max-ref-age-ms", value, |p| {
            MAX_REF_AGE_MS.get(p)
        });
    }
}

#[test]
fn a_bad_boolean_names_the_key_and_the_value() {
    // Java's Boolean.parseBoolean would read these as false; icefloe refuses them.
    for value in ["yes", "1", "banana", ""] {
        let message = bad("gc.enabled", value, |p| GC_ENABLED.get(p));
        assert!(message.contains("true or false"), "{message}");
    }
    bad("write.metadata.delete-after-commit.enabled", "on", |p| {
        METADATA_DELETE_AFTER_COMMIT.get(p)
    });
}

#[test]
fn a_bad_byte_size_names_the_key_and_the_value() {
    for (key, property) in [
        ("write.target-file-size-bytes", WRITE_TARGET_FILE_SIZE_BYTES),
        (
            "write.parquet.row-group-size-bytes",
            PARQUET_ROW_GROUP_SIZE_BYTES,
        ),
        ("write.parquet.page-size-bytes", PARQUET_PAGE_SIZE_BYTES),
        (
            "commit.manifest.target-size-bytes",
            MANIFEST_TARGET_SIZE_BYTES,
        ),
    ] {
        for value in ["big", "-1", "128MB"] {
            let message = bad(key, value, |p| property.get(p));
            assert!(message.contains("number of bytes"), "{message}");
        }
    }
    bad("commit.retry.max-wait-ms", "1m", |p| {
        COMMIT_MAX_RETRY_WAIT.get(p)
    });
}

#[test]
fn a_bad_enum_names_the_key_and_the_value() {
    let message = bad("write.parquet.compression-codec", "lzo2", |p| {
        PARQUET_COMPRESSION.get(p)
    });
    assert!(message.contains("zstd, gzip"), "{message}");
    for mode in ["truncate(0)", "truncate(-1)", "truncate", "partial"] {
        bad("write.metadata.metrics.default", mode, |p| {
            DEFAULT_WRITE_METRICS_MODE.get(p)
        });
    }
    bad("schema.name-mapping.default", "{not json", |p| {
        DEFAULT_NAME_MAPPING.get(p)
    });
}

#[test]
fn metadata_errors_name_the_table_and_long_values_are_cut() {
    let mut m = crate::spec::TableMetadata::parse(
        crate::catalog::test_support::metadata_json_with(
            "/wh/db/t",
            2,
            r#""commit.retry.num-retries": "banana""#,
        )
        .as_bytes(),
    )
    .unwrap();
    let message = COMMIT_NUM_RETRIES.get(&m).unwrap_err().to_string();
    assert!(
        message.contains("commit.retry.num-retries of /wh/db/t: 'banana'"),
        "{message}"
    );
    // One bad key does not spoil another.
    assert!(GC_ENABLED.get(&m).unwrap());
    let long = "x".repeat(500);
    m.properties
        .insert("schema.name-mapping.default".into(), long.clone());
    let message = DEFAULT_NAME_MAPPING.get(&m).unwrap_err().to_string();
    assert!(
        message.contains(&format!("'{}...'", &long[..100])),
        "{message}"
    );
    assert!(!message.contains(&long[..101]), "{message}");
}

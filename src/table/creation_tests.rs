//! Table creation: fresh field ids (expected ids written from the rule of Java's
//! `TypeUtil.assignFreshIds` / PyIceberg's `_SetFreshIDs`: a struct's fields first, then their
//! nested types in order), partition terms, metadata per format version, create-if-absent.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{Field, Fields};
use serde_json::json;

use super::*;
use crate::io::FileIO;
use crate::table::Table;

/// `id long, point struct<x double, inner struct<z int>>, tags list<string>,
/// props map<string, struct<a int>>, name string`, with arbitrary ids (they must be replaced).
fn nested_schema() -> Schema {
    let inner = Type::Struct(StructType::new(vec![NestedField::optional(
        77,
        "z",
        PrimitiveType::Int,
    )]));
    let point = Type::Struct(StructType::new(vec![
        NestedField::required(55, "x", PrimitiveType::Double),
        NestedField::optional(56, "inner", inner),
    ]));
    let tags = Type::List(ListType {
        element_field: Arc::new(NestedField::optional(90, "element", PrimitiveType::String)),
    });
    let value = Type::Struct(StructType::new(vec![NestedField::optional(
        3,
        "a",
        PrimitiveType::Int,
    )]));
    let props = Type::Map(MapType {
        key_field: Arc::new(NestedField::required(91, "key", PrimitiveType::String)),
        value_field: Arc::new(NestedField::optional(92, "value", value)),
    });
    Schema::from_struct(
        7,
        vec![40],
        StructType::new(vec![
            NestedField::required(40, "id", PrimitiveType::Long),
            NestedField::optional(41, "point", point),
            NestedField::optional(42, "tags", tags),
            NestedField::optional(43, "props", props),
            NestedField::optional(44, "name", PrimitiveType::String),
        ]),
    )
}

/// The ids the rule gives, by path: top level 1-5, then point's fields 6-7 and inner.z 8,
/// tags.element 9, props.key 10 and props.value 11, then the value struct's a 12.
const EXPECTED_IDS: &[(&str, i32)] = &[
    ("id", 1),
    ("point", 2),
    ("tags", 3),
    ("props", 4),
    ("name", 5),
    ("point.x", 6),
    ("point.inner", 7),
    ("point.inner.z", 8),
    ("tags.element", 9),
    ("props.key", 10),
    ("props.value", 11),
    ("props.value.a", 12),
];

/// Every field by dotted path.
fn ids_by_path(schema: &Schema) -> HashMap<String, i32> {
    fn walk(prefix: &str, t: &Type, out: &mut HashMap<String, i32>) {
        let children: Vec<&NestedField> = match t {
            Type::Primitive(_) => Vec::new(),
            Type::Struct(s) => s.fields.iter().map(|f| f.as_ref()).collect(),
            Type::List(l) => vec![l.element_field.as_ref()],
            Type::Map(m) => vec![m.key_field.as_ref(), m.value_field.as_ref()],
        };
        for f in children {
            let path = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            out.insert(path.clone(), f.id);
            walk(&path, &f.field_type, out);
        }
    }
    let mut out = HashMap::new();
    walk("", &Type::Struct(schema.fields.clone()), &mut out);
    out
}

fn expected_ids() -> HashMap<String, i32> {
    EXPECTED_IDS
        .iter()
        .map(|(p, id)| (p.to_string(), *id))
        .collect()
}

#[test]
fn iceberg_schema_gets_fresh_ids_in_java_order() {
    let m = TableCreation::new(nested_schema())
        .metadata("/wh/t")
        .unwrap();
    let schema = m.current_schema();
    assert_eq!(ids_by_path(schema), expected_ids());
    assert_eq!(schema.schema_id, 0);
    assert_eq!(
        schema.identifier_field_ids,
        vec![1],
        "follows the id column"
    );
    assert_eq!(m.last_column_id, 12);
    assert!(schema.field_by_name("id").unwrap().required);
    assert!(!schema.field_by_name("name").unwrap().required);
}

#[test]
fn arrow_schema_gets_the_same_ids_and_types() {
    let inner = Field::new(
        "inner",
        DataType::Struct(Fields::from(vec![Field::new("z", DataType::Int32, true)])),
        true,
    );
    let point = Field::new(
        "point",
        DataType::Struct(Fields::from(vec![
            Field::new("x", DataType::Float64, false),
            inner,
        ])),
        true,
    );
    let tags = Field::new(
        "tags",
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        true,
    );
    let value = DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, true)]));
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("k", DataType::Utf8, false),
            Field::new("v", value, true),
        ])),
        false,
    );
    let props = Field::new("props", DataType::Map(Arc::new(entries), false), true);
    let arrow = ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        point,
        tags,
        props,
        Field::new("name", DataType::Utf8View, true),
    ]);
    let m = TableCreation::from_arrow(Arc::new(arrow))
        .metadata("/wh/t")
        .unwrap();
    let schema = m.current_schema();
    assert_eq!(ids_by_path(schema), expected_ids());
    let expected = "struct<id: long, point: struct<x: double, inner: struct<z: int>>, \
                    tags: list<string>, props: map<string, struct<a: int>>, name: string>";
    assert_eq!(Type::Struct(schema.fields.clone()).to_string(), expected);
    assert!(schema.field_by_name("id").unwrap().required);
    assert!(schema.field_by_id(6).unwrap().required, "x is not nullable");
    assert!(
        schema.field_by_id(10).unwrap().required,
        "map keys are required"
    );
    assert!(!schema.field_by_id(9).unwrap().required, "nullable element");
}

#[test]
fn arrow_primitive_types_map_to_iceberg() {
    let uuid = Field::new("u", DataType::FixedSizeBinary(16), true)
        .with_metadata([(EXTENSION_NAME_KEY.to_string(), "arrow.uuid".to_string())].into());
    let cases = [
        (Field::new("a", DataType::Boolean, true), "boolean"),
        (Field::new("a", DataType::Int16, true), "int"),
        (Field::new("a", DataType::UInt32, true), "long"),
        (Field::new("a", DataType::Float32, true), "float"),
        (
            Field::new("a", DataType::Decimal128(10, 2), true),
            "decimal(10, 2)",
        ),
        (Field::new("a", DataType::Date32, true), "date"),
        (
            Field::new("a", DataType::Time64(TimeUnit::Microsecond), true),
            "time",
        ),
        (
            Field::new("a", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            "timestamp",
        ),
        (
            Field::new(
                "a",
                DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
                true,
            ),
            "timestamptz",
        ),
        (Field::new("a", DataType::LargeUtf8, true), "string"),
        (Field::new("a", DataType::BinaryView, true), "binary"),
        (
            Field::new("a", DataType::FixedSizeBinary(4), true),
            "fixed[4]",
        ),
        (uuid, "uuid"),
    ];
    for (field, expected) in cases {
        let t = arrow_to_iceberg_type(&field, FormatVersion::V2, "a").unwrap();
        assert_eq!(t.to_string(), expected, "{field:?}");
    }
    let ns = Field::new("a", DataType::Timestamp(TimeUnit::Nanosecond, None), true);
    let ns_tz = Field::new(
        "a",
        DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        true,
    );
    let v2 = |f: &Field| {
        arrow_to_iceberg_type(f, FormatVersion::V2, "a")
            .unwrap()
            .to_string()
    };
    let v3 = |f: &Field| {
        arrow_to_iceberg_type(f, FormatVersion::V3, "a")
            .unwrap()
            .to_string()
    };
    assert_eq!(
        (v2(&ns), v2(&ns_tz)),
        ("timestamp".into(), "timestamptz".into())
    );
    assert_eq!(
        (v3(&ns), v3(&ns_tz)),
        ("timestamp_ns".into(), "timestamptz_ns".into())
    );
    let err = arrow_to_iceberg_type(
        &Field::new("big", DataType::UInt64, true),
        FormatVersion::V2,
        "big",
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Unsupported(_)) && err.to_string().contains("'big'"),
        "{err}"
    );
}

#[test]
fn every_transform_parses() {
    let cases = [
        ("x", "x", Transform::Identity),
        ("identity(x)", "x", Transform::Identity),
        ("bucket(16, id)", "id", Transform::Bucket(16)),
        ("BUCKET( 4 ,id )", "id", Transform::Bucket(4)),
        ("truncate(4, name)", "name", Transform::Truncate(4)),
        ("year(ts)", "ts", Transform::Year),
        ("years(ts)", "ts", Transform::Year),
        ("month(ts)", "ts", Transform::Month),
        ("months(ts)", "ts", Transform::Month),
        ("day(order_ts)", "order_ts", Transform::Day),
        ("days(ts)", "ts", Transform::Day),
        ("hour(ts)", "ts", Transform::Hour),
        ("hours(ts)", "ts", Transform::Hour),
        ("void(x)", "x", Transform::Void),
        ("day(\"Mixed Case\")", "Mixed Case", Transform::Day),
        ("`a`", "a", Transform::Identity),
    ];
    for (term, column, transform) in cases {
        assert_eq!(
            parse_partition_term(term).unwrap(),
            (column.to_string(), transform),
            "{term}"
        );
    }
    assert_eq!(
        split_terms(" day(ts), bucket(16, id) ,x,"),
        ["day(ts)", "bucket(16, id)", "x"]
    );
}

#[test]
fn bad_terms_are_rejected_naming_them() {
    for (term, reason) in [
        ("bucket(0, id)", "'0' is not a positive integer"),
        ("truncate(-1, name)", "'-1' is not a positive integer"),
        ("bucket(id)", "bucket takes (N, column)"),
        ("day(a, b)", "day takes one column"),
        ("frob(id)", "unknown transform 'frob'"),
        ("day(ts", "missing ')'"),
        ("a b", "expected a column name"),
        ("day()", "no column named"),
    ] {
        let err = parse_partition_term(term).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { what, .. } if *what == format!("partition term '{term}'")),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&format!("'{term}'")) && text.contains(reason),
            "{text}"
        );
    }
}

fn orders() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(1, "id", PrimitiveType::Long),
            NestedField::optional(2, "name", PrimitiveType::String),
            NestedField::optional(3, "order_ts", PrimitiveType::Timestamptz),
            NestedField::optional(4, "d", PrimitiveType::Date),
            NestedField::optional(5, "category", PrimitiveType::String),
            NestedField::optional(6, "price", PrimitiveType::Double),
        ],
    )
}

#[test]
fn partition_spec_has_java_names_and_ids_from_1000() {
    let m = TableCreation::new(orders())
        .with_partitioning("day(order_ts), bucket(16, id), truncate(4, name), category, month(d)")
        .unwrap()
        .with_partition_field("price", Transform::Void)
        .metadata("/wh/t")
        .unwrap();
    let spec = m.default_partition_spec().unwrap();
    let got: Vec<(i32, i32, &str, String)> = spec
        .fields
        .iter()
        .map(|f| {
            (
                f.source_id,
                f.field_id,
                f.name.as_str(),
                f.transform.to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (3, 1000, "order_ts_day", "day".to_string()),
            (1, 1001, "id_bucket", "bucket[16]".to_string()),
            (2, 1002, "name_trunc", "truncate[4]".to_string()),
            (5, 1003, "category", "identity".to_string()),
            (4, 1004, "d_month", "month".to_string()),
            (6, 1005, "price_null", "void".to_string()),
        ]
    );
    assert_eq!(m.last_partition_id, 1005);
    let hours = TableCreation::new(orders())
        .with_partitioning("hour(order_ts), year(d)")
        .unwrap()
        .metadata("/wh/t")
        .unwrap();
    let names: Vec<&str> = hours.partition_specs[0]
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["order_ts_hour", "d_year"]);
}

#[test]
fn bad_partition_specs_are_rejected() {
    let with_id_bucket = {
        let mut fields: Vec<NestedField> =
            orders().columns().iter().map(|f| (**f).clone()).collect();
        fields.push(NestedField::optional(7, "id_bucket", PrimitiveType::Int));
        Schema::new(0, fields)
    };
    let cases = [
        (orders(), "day(nope)", "no column 'nope'"),
        (
            orders(),
            "day(id)",
            "transform day is not valid for column 'id' of type long",
        ),
        (
            orders(),
            "hour(d)",
            "transform hour is not valid for column 'd' of type date",
        ),
        (
            orders(),
            "bucket(4, price)",
            "not valid for column 'price' of type double",
        ),
        (
            orders(),
            "truncate(4, d)",
            "not valid for column 'd' of type date",
        ),
        (orders(), "day(order_ts), day(order_ts)", "already used"),
        (orders(), "day(order_ts), hour(order_ts)", "redundant"),
        (
            with_id_bucket,
            "bucket(4, id)",
            "'id_bucket': is already used",
        ),
    ];
    for (schema, terms, reason) in cases {
        let err = TableCreation::new(schema)
            .with_partitioning(terms)
            .unwrap()
            .metadata("/wh/t")
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { .. }),
            "{terms}: {err}"
        );
        assert!(err.to_string().contains(reason), "{terms}: {err}");
    }
}

#[test]
fn metadata_per_format_version_follows_the_spec_and_reparses() {
    for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
        let m = TableCreation::new(orders())
            .with_format_version(version)
            .with_property("write.target-file-size-bytes", "1000")
            .metadata("/wh/db/t/")
            .unwrap();
        let v = m.to_json();
        let n = version.number();
        assert_eq!(v["format-version"], json!(n));
        assert_eq!(v["location"], json!("/wh/db/t"));
        let uuid = v["table-uuid"].as_str().unwrap();
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{uuid}");
        assert_eq!(v["last-column-id"], json!(6));
        assert_eq!(v["current-schema-id"], json!(0));
        assert_eq!(v["default-spec-id"], json!(0));
        assert_eq!(v["partition-specs"], json!([{"spec-id": 0, "fields": []}]));
        assert_eq!(v["last-partition-id"], json!(999));
        assert_eq!(v["default-sort-order-id"], json!(0));
        assert_eq!(v["sort-orders"], json!([{"order-id": 0, "fields": []}]));
        assert_eq!(v["current-snapshot-id"], json!(-1));
        assert_eq!(v["refs"], json!({}));
        assert_eq!(v["snapshots"], json!([]));
        assert_eq!(
            v["properties"],
            json!({"write.target-file-size-bytes": "1000"})
        );
        // v1: the single `schema` and `partition-spec`, no sequence numbers.
        assert_eq!(v.get("schema").is_some(), n == 1, "v{n}");
        assert_eq!(v.get("partition-spec").is_some(), n == 1, "v{n}");
        assert_eq!(v.get("last-sequence-number").is_some(), n >= 2, "v{n}");
        assert_eq!(
            v.get("next-row-id").cloned(),
            (n == 3).then(|| json!(0)),
            "v{n}"
        );
        let bytes = serde_json::to_vec(&v).unwrap();
        assert_eq!(TableMetadata::parse(&bytes).unwrap(), m, "v{n}");
    }
}

#[test]
fn format_version_property_and_v3_types() {
    let m = TableCreation::new(orders())
        .with_property("format-version", "3")
        .metadata("/wh/t")
        .unwrap();
    assert_eq!(m.format_version, FormatVersion::V3);
    assert!(m.properties.is_empty(), "format-version is not stored");
    let err = TableCreation::new(orders())
        .with_property("format-version", "4")
        .metadata("/wh/t")
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let ns = Schema::new(
        0,
        vec![NestedField::optional(1, "ts", PrimitiveType::TimestampNs)],
    );
    let err = TableCreation::new(ns.clone())
        .metadata("/wh/t")
        .unwrap_err();
    assert!(err.to_string().contains("needs format version 3"), "{err}");
    assert!(
        TableCreation::new(ns)
            .with_format_version(FormatVersion::V3)
            .metadata("/wh/t")
            .is_ok()
    );
}

#[test]
fn sort_order_gets_id_1() {
    let m = TableCreation::new(orders())
        .with_sort_field(
            "id",
            Transform::Bucket(4),
            SortDirection::Descending,
            NullOrder::Last,
        )
        .metadata("/wh/t")
        .unwrap();
    assert_eq!(m.default_sort_order_id, 1);
    assert_eq!(
        m.to_json()["sort-orders"],
        json!([{"order-id": 1, "fields": [{"transform": "bucket[4]", "source-id": 1,
            "direction": "desc", "null-order": "nulls-last"}]}])
    );
    let err = TableCreation::new(orders())
        .with_sort_field(
            "nope",
            Transform::Identity,
            SortDirection::Ascending,
            NullOrder::First,
        )
        .metadata("/wh/t")
        .unwrap_err();
    assert!(err.to_string().contains("no column 'nope'"), "{err}");
}

#[tokio::test]
async fn create_at_writes_v1_and_the_hint_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("db/t").display().to_string();
    let io = FileIO::default();
    let table = TableCreation::new(orders())
        .with_partitioning("day(order_ts)")
        .unwrap()
        .create_at(&io, &location)
        .await
        .unwrap();
    let v1 = format!("{location}/metadata/v1.metadata.json");
    assert_eq!(table.metadata_location(), v1);
    let written = std::fs::read(&v1).unwrap();
    assert_eq!(
        &TableMetadata::parse(&written).unwrap(),
        table.metadata().as_ref()
    );
    let hint = std::fs::read_to_string(format!("{location}/metadata/version-hint.text")).unwrap();
    assert_eq!(hint, "1");
    let loaded = Table::load(io.clone(), &location).await.unwrap();
    assert_eq!(loaded.metadata(), table.metadata());

    let err = TableCreation::new(orders())
        .create_at(&io, &location)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::AlreadyExists { what } if what.starts_with(&format!("table {location} "))),
        "{err}"
    );
    assert_eq!(std::fs::read(&v1).unwrap(), written, "untouched");
}

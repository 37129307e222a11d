use serde_json::json;

use super::*;
use crate::spec::values::Literal as L;
use PrimitiveType as P;

fn uuid_bytes(s: &str) -> [u8; 16] {
    *uuid::Uuid::parse_str(s).unwrap().as_bytes()
}

fn dec(precision: u32, scale: u32) -> P {
    P::Decimal { precision, scale }
}

fn apply(t: &Transform, ty: &P, v: L) -> L {
    t.apply(ty, Some(&v)).unwrap().unwrap()
}

#[test]
fn transform_strings_round_trip() {
    for s in [
        "identity",
        "bucket[16]",
        "truncate[4]",
        "year",
        "month",
        "day",
        "hour",
        "void",
    ] {
        assert_eq!(Transform::parse(s).unwrap().to_string(), s);
    }
    assert_eq!(Transform::parse("BUCKET[4]").unwrap(), Transform::Bucket(4));
    assert_eq!(Transform::parse("Day").unwrap(), Transform::Day);
    for unknown in [
        "zorder",
        "bucket[abc]",
        "truncate[-1]",
        "bucket",
        "geohash[3]",
    ] {
        let t = Transform::parse(unknown).unwrap();
        assert_eq!(t, Transform::Unknown(unknown.into()));
        assert_eq!(t.to_string(), unknown);
    }
    for bad in ["bucket[0]", "truncate[0]", "bucket[99999999999]"] {
        assert!(
            matches!(Transform::parse(bad), Err(Error::InvalidArgument { .. })),
            "{bad}"
        );
    }
}

/// Spec Appendix B, "32-bit Hash Requirements": the test vectors.
#[test]
fn bucket_hash_matches_the_spec_vectors() {
    let ts = 1_510_871_468_000_000_i64; // 2017-11-16T22:31:08
    let cases = [
        (L::Int(34), 2_017_239_379),
        (L::Long(34), 2_017_239_379),
        (L::Decimal(1420), -500_754_589), // 14.20
        (L::Date(17_486), -653_330_422),  // 2017-11-16
        (L::Time(81_068_000_000), -662_762_989),
        (L::Timestamp(ts), -2_047_944_441),
        (L::Timestamp(ts + 1), -1_207_196_810),
        (L::Timestamptz(ts), -2_047_944_441), // 2017-11-16T14:31:08-08:00
        (L::Timestamptz(ts + 1), -1_207_196_810),
        (L::TimestampNs(ts * 1000), -2_047_944_441),
        (L::TimestampNs(ts * 1000 + 1001), -1_207_196_810),
        (L::TimestamptzNs(ts * 1000 + 1001), -1_207_196_810),
        (L::String("iceberg".into()), 1_210_000_089),
        (
            L::Uuid(uuid_bytes("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
            1_488_055_340,
        ),
        (L::Fixed(vec![0, 1, 2, 3]), -188_683_207),
        (L::Binary(vec![0, 1, 2, 3]), -188_683_207),
    ];
    for (v, expected) in cases {
        assert_eq!(Transform::bucket_hash(&v), Some(expected), "{v:?}");
    }
    assert_eq!(Transform::bucket_hash(&L::Double(1.0)), None);
}

#[test]
fn bucket_is_the_masked_hash_mod_n() {
    let b16 = Transform::Bucket(16);
    assert_eq!(apply(&b16, &P::Int, L::Int(34)), L::Int(2_017_239_379 % 16));
    // A negative hash is masked to non-negative first.
    let masked = (-500_754_589_i32 & i32::MAX) % 16;
    assert_eq!(apply(&b16, &dec(9, 2), L::Decimal(1420)), L::Int(masked));
    assert_eq!(b16.apply(&P::Long, None).unwrap(), None);
}

#[test]
fn truncate_follows_the_spec_examples() {
    let t10 = Transform::Truncate(10);
    assert_eq!(apply(&t10, &P::Int, L::Int(1)), L::Int(0));
    assert_eq!(apply(&t10, &P::Int, L::Int(-1)), L::Int(-10));
    assert_eq!(apply(&t10, &P::Int, L::Int(-10)), L::Int(-10));
    assert_eq!(apply(&t10, &P::Long, L::Long(-11)), L::Long(-20));
    assert_eq!(apply(&t10, &dec(9, 2), L::Decimal(1065)), L::Decimal(1060));
    assert_eq!(
        apply(&t10, &dec(9, 2), L::Decimal(-1065)),
        L::Decimal(-1070)
    );
    let t3 = Transform::Truncate(3);
    assert_eq!(
        apply(&t3, &P::String, L::String("iceberg".into())),
        L::String("ice".into())
    );
    assert_eq!(
        apply(&t3, &P::String, L::String("ab".into())),
        L::String("ab".into())
    );
    // Code points, not bytes.
    assert_eq!(
        apply(
            &Transform::Truncate(2),
            &P::String,
            L::String("😀é😂".into())
        ),
        L::String("😀é".into())
    );
    assert_eq!(
        apply(&t3, &P::Binary, L::Binary(vec![1, 2, 3, 4])),
        L::Binary(vec![1, 2, 3])
    );
    // Java's int arithmetic wraps at the minimum.
    assert_eq!(
        apply(&t10, &P::Int, L::Int(i32::MIN)),
        L::Int(2_147_483_646)
    );
}

#[test]
fn calendar_transforms_count_from_1970_and_round_down() {
    let ts = 1_510_871_468_000_000_i64; // 2017-11-16T22:31:08
    let (year, month, day, hour) = (
        Transform::Year,
        Transform::Month,
        Transform::Day,
        Transform::Hour,
    );
    assert_eq!(apply(&year, &P::Date, L::Date(17_486)), L::Int(47));
    assert_eq!(apply(&month, &P::Date, L::Date(17_486)), L::Int(574));
    assert_eq!(apply(&day, &P::Date, L::Date(17_486)), L::Date(17_486));
    assert_eq!(
        apply(&day, &P::Timestamp, L::Timestamp(ts)),
        L::Date(17_486)
    );
    assert_eq!(
        apply(&hour, &P::Timestamptz, L::Timestamptz(ts)),
        L::Int(419_686)
    );
    assert_eq!(
        apply(&hour, &P::TimestampNs, L::TimestampNs(ts * 1000)),
        L::Int(419_686)
    );
    // One microsecond (or nanosecond, or day) before the epoch.
    for (ty, v) in [
        (P::Timestamp, L::Timestamp(-1)),
        (P::TimestamptzNs, L::TimestamptzNs(-1)),
    ] {
        assert_eq!(apply(&year, &ty, v.clone()), L::Int(-1));
        assert_eq!(apply(&month, &ty, v.clone()), L::Int(-1));
        assert_eq!(apply(&day, &ty, v.clone()), L::Date(-1));
        assert_eq!(apply(&hour, &ty, v), L::Int(-1));
    }
    assert_eq!(apply(&year, &P::Date, L::Date(-1)), L::Int(-1));
    assert_eq!(apply(&month, &P::Date, L::Date(-1)), L::Int(-1));
    // 1969-01-01T00:00:00 is exactly one year before; 1900-01-01 is 70 years before.
    let y1969 = -365 * 86_400_000_000_i64;
    assert_eq!(apply(&year, &P::Timestamp, L::Timestamp(y1969)), L::Int(-1));
    assert_eq!(
        apply(&month, &P::Timestamp, L::Timestamp(y1969)),
        L::Int(-12)
    );
    assert_eq!(apply(&year, &P::Date, L::Date(-25_567)), L::Int(-70));
    assert_eq!(apply(&month, &P::Date, L::Date(-25_567)), L::Int(-840));
    // 2000-02-29 (leap day) is month 361.
    assert_eq!(apply(&month, &P::Date, L::Date(11_016)), L::Int(361));
}

#[test]
fn identity_and_void() {
    let v = L::Uuid([9; 16]);
    assert_eq!(apply(&Transform::Identity, &P::Uuid, v.clone()), v);
    assert_eq!(
        Transform::Void
            .apply(&P::String, Some(&L::String("x".into())))
            .unwrap(),
        None
    );
    assert!(matches!(
        Transform::Unknown("zorder".into()).apply(&P::Int, Some(&L::Int(1))),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn result_types_follow_the_spec() {
    let cases = [
        (Transform::Identity, P::Float, P::Float),
        (Transform::Bucket(4), P::String, P::Int),
        (Transform::Bucket(4), P::TimestamptzNs, P::Int),
        (Transform::Truncate(4), dec(9, 2), dec(9, 2)),
        (Transform::Year, P::Timestamp, P::Int),
        (Transform::Month, P::Date, P::Int),
        (Transform::Day, P::Timestamptz, P::Date),
        (Transform::Hour, P::TimestampNs, P::Int),
        (Transform::Void, P::Binary, P::Binary),
        (Transform::Unknown("zorder".into()), P::Long, P::String),
    ];
    for (t, source, expected) in cases {
        assert_eq!(t.result_type(&source).unwrap(), expected, "{t} of {source}");
    }
}

#[test]
fn transforms_reject_source_types_the_spec_does_not_allow() {
    let rejected = [
        (Transform::Identity, P::Variant),
        (Transform::Bucket(4), P::Boolean),
        (Transform::Bucket(4), P::Float),
        (Transform::Bucket(4), P::Double),
        (Transform::Truncate(4), P::Date),
        (Transform::Truncate(4), P::Uuid),
        (Transform::Truncate(4), P::Fixed(4)),
        (Transform::Truncate(4), P::Double),
        (Transform::Year, P::Time),
        (Transform::Month, P::Long),
        (Transform::Day, P::String),
        (Transform::Hour, P::Date),
    ];
    for (t, source) in rejected {
        assert!(
            matches!(t.result_type(&source), Err(Error::InvalidArgument { .. })),
            "{t} of {source}"
        );
        assert!(t.apply(&source, None).is_err(), "{t} of {source}");
    }
    assert!(Transform::Void.result_type(&P::Variant).is_ok());
}

fn schema() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(1, "id", P::Long),
            NestedField::optional(2, "ts", P::Timestamp),
            NestedField::optional(3, "d", P::Date),
            NestedField::optional(4, "name", P::String),
            NestedField::optional(5, "price", dec(9, 2)),
            NestedField::optional(6, "b", P::Binary),
        ],
    )
}

fn field(source_id: i32, field_id: i32, name: &str, transform: Transform) -> PartitionField {
    PartitionField {
        source_id,
        field_id,
        name: name.into(),
        transform,
    }
}

fn spec() -> PartitionSpec {
    PartitionSpec {
        spec_id: 1,
        fields: vec![
            field(4, 1000, "name", Transform::Identity),
            field(2, 1001, "ts_day", Transform::Day),
            field(2, 1002, "ts_month", Transform::Month),
            field(3, 1003, "d_year", Transform::Year),
            field(2, 1004, "ts_hour", Transform::Hour),
            field(1, 1005, "id_bucket", Transform::Bucket(16)),
            field(3, 1006, "d", Transform::Identity),
        ],
    }
}

#[test]
fn partition_type_has_one_optional_field_per_partition_field() {
    let t = spec().partition_type(&schema()).unwrap();
    let summary: Vec<_> = t
        .fields
        .iter()
        .map(|f| (f.id, f.name.as_str(), f.required, f.field_type.to_string()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1000, "name", false, "string".to_string()),
            (1001, "ts_day", false, "date".into()),
            (1002, "ts_month", false, "int".into()),
            (1003, "d_year", false, "int".into()),
            (1004, "ts_hour", false, "int".into()),
            (1005, "id_bucket", false, "int".into()),
            (1006, "d", false, "date".into()),
        ]
    );
}

#[test]
fn partition_type_names_a_field_whose_source_is_missing() {
    let bad = PartitionSpec {
        spec_id: 0,
        fields: vec![field(99, 1000, "gone_bucket", Transform::Bucket(2))],
    };
    let err = bad.partition_type(&schema()).unwrap_err().to_string();
    assert!(err.contains("gone_bucket") && err.contains("99"), "{err}");
    let wrong_type = PartitionSpec {
        spec_id: 0,
        fields: vec![field(4, 1000, "name_hour", Transform::Hour)],
    };
    assert!(wrong_type.partition_type(&schema()).is_err());
    // A void field of a dropped column stays readable.
    let void = PartitionSpec {
        spec_id: 0,
        fields: vec![
            field(99, 1000, "gone", Transform::Void),
            field(6, 1001, "b_null", Transform::Void),
        ],
    };
    let t = void.partition_type(&schema()).unwrap();
    assert_eq!(t.fields[0].field_type, Type::Primitive(P::Int));
    assert_eq!(t.fields[1].field_type, Type::Primitive(P::Binary));
    assert!(void.is_unpartitioned());
    assert!(!spec().is_unpartitioned());
    assert!(PartitionSpec::unpartitioned().is_unpartitioned());
}

#[test]
fn partition_paths_are_rendered_as_java_does() {
    let hour = 19_723 * 24 + 13; // 2024-01-01 13:00
    let values = [
        Some(L::String("a b/c=é".into())),
        Some(L::Date(19_723)),
        Some(L::Int(648)),
        Some(L::Int(54)),
        Some(L::Int(hour)),
        Some(L::Int(3)),
        None,
    ];
    assert_eq!(
        spec().partition_path(&schema(), &values).unwrap(),
        "name=a+b%2Fc%3D%C3%A9/ts_day=2024-01-01/ts_month=2024-01/d_year=2024/\
         ts_hour=2024-01-01-13/id_bucket=3/d=null"
    );
    let before_epoch = [
        None,
        Some(L::Date(-1)),
        Some(L::Int(-1)),
        Some(L::Int(-1)),
        Some(L::Int(-1)),
        None,
        Some(L::Date(-1)),
    ];
    assert_eq!(
        spec().partition_path(&schema(), &before_epoch).unwrap(),
        "name=null/ts_day=1969-12-31/ts_month=1969-12/d_year=1969/ts_hour=1969-12-31-23/\
         id_bucket=null/d=1969-12-31"
    );
    assert!(spec().partition_path(&schema(), &values[..2]).is_err());
}

#[test]
fn human_strings_of_identity_values() {
    let id = Transform::Identity;
    let ts = 1_510_871_468_000_000_i64;
    let cases = [
        (P::Timestamp, L::Timestamp(ts), "2017-11-16T22:31:08"),
        (
            P::Timestamp,
            L::Timestamp(ts + 123_000),
            "2017-11-16T22:31:08.123",
        ),
        (
            P::Timestamptz,
            L::Timestamptz(ts + 1),
            "2017-11-16T22:31:08.000001Z",
        ),
        (
            P::TimestampNs,
            L::TimestampNs(ts * 1000 + 1),
            "2017-11-16T22:31:08.000000001",
        ),
        (P::Timestamp, L::Timestamp(-1), "1969-12-31T23:59:59.999999"),
        (P::Timestamp, L::Timestamp(0), "1970-01-01T00:00"),
        (P::Time, L::Time(81_068_000_000), "22:31:08"),
        (P::Date, L::Date(17_486), "2017-11-16"),
        (dec(9, 2), L::Decimal(1420), "14.20"),
        (dec(9, 2), L::Decimal(-5), "-0.05"),
        (P::Double, L::Double(1.0), "1.0"),
        (P::Double, L::Double(1e20), "1.0E20"),
        (P::Double, L::Double(1.5e-5), "1.5E-5"),
        (P::Float, L::Float(0.1), "0.1"),
        (P::Double, L::Double(f64::NAN), "NaN"),
        (P::Boolean, L::Boolean(true), "true"),
        (P::Binary, L::Binary(vec![0, 1, 2, 3]), "AAECAw=="),
        (P::Fixed(2), L::Fixed(vec![0xff, 0xfe]), "//4="),
        (P::Binary, L::Binary(vec![1, 2, 3]), "AQID"),
        (
            P::Uuid,
            L::Uuid(uuid_bytes("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
        ),
    ];
    for (ty, v, expected) in cases {
        assert_eq!(id.to_human_string(&ty, Some(&v)), expected, "{ty}");
    }
    assert_eq!(
        Transform::Void.to_human_string(&P::Int, Some(&L::Int(1))),
        "null"
    );
}

#[test]
fn spec_json_round_trips() {
    let v = json!({"spec-id": 2, "fields": [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1001},
        {"name": "z", "transform": "zorder", "source-id": 3, "field-id": 1002}
    ]});
    let spec = PartitionSpec::from_json(&v).unwrap();
    assert_eq!(spec.spec_id, 2);
    assert_eq!(spec.fields[0].transform, Transform::Bucket(16));
    assert_eq!(
        spec.fields[2].transform,
        Transform::Unknown("zorder".into())
    );
    assert_eq!(spec.to_json(), v);
    assert_eq!(PartitionSpec::from_json(&spec.to_json()).unwrap(), spec);
}

#[test]
fn v1_fields_without_ids_and_v3_source_ids() {
    let fields = json!([
        {"name": "a", "transform": "identity", "source-id": 1},
        {"name": "b", "transform": "truncate[4]", "source-ids": [4, 5]}
    ]);
    let spec = PartitionSpec::from_fields_json(0, &fields).unwrap();
    assert_eq!(spec.fields[0].field_id, 1000);
    assert_eq!(spec.fields[1].field_id, 1001);
    assert_eq!(spec.fields[1].source_id, 4);
    assert_eq!(spec.highest_field_id(), Some(1001));
}

#[test]
fn malformed_specs_are_corrupt() {
    for v in [
        json!({"fields": []}),
        json!({"spec-id": 0}),
        json!({"spec-id": 0, "fields": {}}),
        json!({"spec-id": 0, "fields": [{"name": "a", "transform": "identity"}]}),
        json!({"spec-id": 0, "fields": [{"name": "a", "source-id": 1}]}),
        json!({"spec-id": 0, "fields": [{"transform": "identity", "source-id": 1}]}),
        json!({"spec-id": 0, "fields": [{"name": "a", "transform": "bucket[0]", "source-id": 1}]}),
    ] {
        let err = PartitionSpec::from_json(&v).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{v}: {err}");
    }
}

//! Partition tuples: every primitive type from the Avro kind writers use for it.

use apache_avro::types::Value;
use serde_json::{Value as Json, json};

use super::*;

#[test]
fn partition_value_of_the_wrong_kind_is_corrupt() {
    let ptype = StructType::new(vec![
        NestedField::optional(1001, "id_bucket", PrimitiveType::Int),
        NestedField::optional(1000, "ts-day", PrimitiveType::Long),
    ]);
    let err = parse_manifest(&java_v2_manifest(), &manifest_file(1, 1), &ptype).unwrap_err();
    assert!(matches!(err, crate::Error::Corrupt { .. }));
    assert!(err.to_string().contains("record 0"), "{err}");
    assert!(err.to_string().contains("long partition value"), "{err}");
}

/// Every primitive partition type read from the Avro kind Java writes for it.
#[test]
fn partition_values_of_every_type() {
    let uuid = [7u8; 16];
    let cases: Vec<(PrimitiveType, Json, Value, Literal)> = vec![
        (
            PrimitiveType::Boolean,
            json!("boolean"),
            Value::Boolean(true),
            Literal::Boolean(true),
        ),
        (
            PrimitiveType::Long,
            json!("int"),
            Value::Int(5),
            Literal::Long(5),
        ),
        (
            PrimitiveType::Float,
            json!("float"),
            Value::Float(1.5),
            Literal::Float(1.5),
        ),
        (
            PrimitiveType::Double,
            json!("double"),
            Value::Double(2.5),
            Literal::Double(2.5),
        ),
        (
            PrimitiveType::Date,
            json!("int"),
            Value::Int(3),
            Literal::Date(3),
        ),
        (
            PrimitiveType::Time,
            json!({"type": "long", "logicalType": "time-micros"}),
            Value::TimeMicros(9),
            Literal::Time(9),
        ),
        (
            PrimitiveType::Timestamp,
            json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": false}),
            Value::TimestampMicros(10),
            Literal::Timestamp(10),
        ),
        (
            PrimitiveType::Timestamptz,
            json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": true}),
            Value::TimestampMicros(11),
            Literal::Timestamptz(11),
        ),
        (
            PrimitiveType::TimestampNs,
            json!({"type": "long", "logicalType": "timestamp-nanos"}),
            Value::TimestampNanos(12),
            Literal::TimestampNs(12),
        ),
        (
            PrimitiveType::Uuid,
            json!({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
            Value::Uuid(apache_avro::Uuid::from_bytes(uuid)),
            Literal::Uuid(uuid),
        ),
        (
            PrimitiveType::Fixed(3),
            json!({"type": "fixed", "name": "fixed_3", "size": 3}),
            Value::Fixed(3, vec![1, 2, 3]),
            Literal::Fixed(vec![1, 2, 3]),
        ),
        (
            PrimitiveType::Binary,
            json!("bytes"),
            Value::Bytes(vec![9]),
            Literal::Binary(vec![9]),
        ),
        (
            PrimitiveType::Decimal {
                precision: 5,
                scale: 1,
            },
            json!({"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}),
            Value::Decimal(vec![0x01, 0x00].into()),
            Literal::Decimal(256),
        ),
    ];
    let avro_fields: Vec<Json> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, t, _, _))| field(&format!("p{i}"), 1000 + i as i32, nullable(t.clone())))
        .collect();
    let ptype = StructType::new(
        cases
            .iter()
            .enumerate()
            .map(|(i, (ty, ..))| {
                NestedField::optional(1000 + i as i32, format!("p{i}"), ty.clone())
            })
            .collect(),
    );
    let names: Vec<String> = (0..cases.len()).map(|i| format!("p{i}")).collect();
    let partition = record(
        names
            .iter()
            .zip(&cases)
            .map(|(n, c)| (n.as_str(), some(c.2.clone())))
            .collect(),
    );
    let schema = entry_schema(data_file_schema(json!(avro_fields), false), false);
    let bytes = write_avro(
        &schema,
        &[],
        &[entry(1, None, None, v2_data_file("a", 0, partition))],
    );
    let m = parse_manifest(&bytes, &manifest_file(1, 1), &ptype).unwrap();
    let expected: Vec<Option<Literal>> = cases.into_iter().map(|c| Some(c.3)).collect();
    assert_eq!(m.entries[0].data_file.partition, expected);
}

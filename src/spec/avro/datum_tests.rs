use apache_avro::schema::{ResolvedSchema, Schema};
use apache_avro::to_value;
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;

use super::*;

fn compile(schema: &Schema) -> Node {
    let resolved = ResolvedSchema::try_from(schema).unwrap();
    Node::compile(schema, resolved.get_names()).unwrap()
}

/// `value` encoded by apache-avro's writer, then decoded here, rendered comparably with the
/// apache-avro value (unions and logical types stripped to their physical value).
fn round_trip(schema_json: &str, value: Value) -> String {
    let schema = Schema::parse_str(schema_json).unwrap();
    let mut bytes = Vec::new();
    GenericDatumWriter::builder(&schema)
        .build()
        .unwrap()
        .write_value_ref(&mut bytes, &value)
        .unwrap();
    let node = compile(&schema);
    let mut input = bytes.as_slice();
    let datum = node.decode(&mut input).unwrap();
    assert!(input.is_empty(), "every byte consumed");
    render(&datum)
}

fn render(d: &Datum<'_>) -> String {
    match d {
        Datum::Null => "null".into(),
        Datum::Boolean(b) => b.to_string(),
        Datum::Int(i) => format!("i{i}"),
        Datum::Date(d) => format!("date{d}"),
        Datum::Long(l) => format!("l{l}"),
        Datum::Float(f) => format!("f{f}"),
        Datum::Double(f) => format!("d{f}"),
        Datum::Bytes(b) => format!("b{b:?}"),
        Datum::Fixed(b) => format!("x{b:?}"),
        Datum::String(s) => format!("{s:?}"),
        Datum::Millis => "millis".into(),
        Datum::Enum => "enum".into(),
        Datum::Array(items) => format!("[{}]", join(items.iter().map(render))),
        Datum::Map(entries) => format!(
            "{{{}}}",
            join(entries.iter().map(|(k, v)| format!("{k}: {}", render(v))))
        ),
        Datum::Record(schema, fields) => format!(
            "({})",
            join(schema.fields.iter().zip(fields).map(|(f, v)| format!(
                "{}#{:?}={}",
                f.name,
                f.field_id,
                render(v)
            )))
        ),
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

#[test]
fn every_primitive_and_logical_type_decodes_as_apache_avro_encodes_it() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (r#""null""#, Value::Null, "null"),
        (r#""boolean""#, Value::Boolean(true), "true"),
        (r#""int""#, Value::Int(-123_456), "i-123456"),
        (r#""long""#, Value::Long(i64::MIN), "l-9223372036854775808"),
        (r#""float""#, Value::Float(-1.5), "f-1.5"),
        (r#""double""#, Value::Double(f64::INFINITY), "dinf"),
        (r#""bytes""#, Value::Bytes(vec![0, 255]), "b[0, 255]"),
        (r#""string""#, Value::String("é€".into()), "\"é€\""),
        (
            r#"{"type": "fixed", "name": "f3", "size": 3}"#,
            Value::Fixed(3, vec![1, 2, 3]),
            "x[1, 2, 3]",
        ),
        (
            r#"{"type": "enum", "name": "e", "symbols": ["a", "b"]}"#,
            Value::Enum(1, "b".into()),
            "enum",
        ),
        (
            r#"{"type": "int", "logicalType": "date"}"#,
            Value::Date(-3),
            "date-3",
        ),
        (
            r#"{"type": "long", "logicalType": "time-micros"}"#,
            Value::TimeMicros(7),
            "l7",
        ),
        (
            r#"{"type": "long", "logicalType": "timestamp-micros"}"#,
            Value::TimestampMicros(-1),
            "l-1",
        ),
        (
            r#"{"type": "long", "logicalType": "timestamp-nanos"}"#,
            Value::TimestampNanos(9),
            "l9",
        ),
        (
            r#"{"type": "long", "logicalType": "timestamp-millis"}"#,
            Value::TimestampMillis(9),
            "millis",
        ),
        (
            r#"{"type": "int", "logicalType": "time-millis"}"#,
            Value::TimeMillis(9),
            "millis",
        ),
        (
            r#"{"type": "string", "logicalType": "uuid"}"#,
            Value::Uuid(uuid::Uuid::from_u128(1)),
            "\"00000000-0000-0000-0000-000000000001\"",
        ),
        (
            r#"{"type": "fixed", "name": "d", "size": 2, "logicalType": "decimal", "precision": 4, "scale": 1}"#,
            Value::Decimal(vec![0xff, 0x85].into()),
            "x[255, 133]",
        ),
    ];
    for (schema, value, expected) in cases {
        assert_eq!(round_trip(schema, value), expected, "{schema}");
    }
}

#[test]
fn records_arrays_maps_unions_and_named_references_decode_with_field_ids() {
    let schema = r#"{"type": "record", "name": "r", "fields": [
        {"name": "a", "type": ["null", "long"], "field-id": 1},
        {"name": "b", "type": ["null", "long"], "field-id": "2"},
        {"name": "s", "type": {"type": "record", "name": "s", "fields": [
            {"name": "x", "type": "int"}]}},
        {"name": "t", "type": ["null", "s"]},
        {"name": "list", "type": {"type": "array", "items": ["null", "string"]}},
        {"name": "m", "type": {"type": "map", "values": "int"}}]}"#;
    let record = Value::Record(vec![
        ("a".into(), Value::Union(1, Box::new(Value::Long(5)))),
        ("b".into(), Value::Union(0, Box::new(Value::Null))),
        ("s".into(), Value::Record(vec![("x".into(), Value::Int(1))])),
        (
            "t".into(),
            Value::Union(
                1,
                Box::new(Value::Record(vec![("x".into(), Value::Int(2))])),
            ),
        ),
        (
            "list".into(),
            Value::Array(vec![
                Value::Union(1, Box::new(Value::String("p".into()))),
                Value::Union(0, Box::new(Value::Null)),
            ]),
        ),
        (
            "m".into(),
            to_value(std::collections::HashMap::from([("k", 3)])).unwrap(),
        ),
    ]);
    assert_eq!(
        round_trip(schema, record),
        "(a#Some(1)=l5, b#Some(2)=null, s#None=(x#None=i1), t#None=(x#None=i2), \
         list#None=[\"p\", null], m#None={k: i3})"
    );
}

#[test]
fn blocks_with_byte_sizes_decode() {
    // An array written as one block with a negative count and its size: [1, 2].
    let node = Node::Array(Box::new(Node::Int));
    let bytes = [3u8, 4, 2, 4, 0]; // count -2, size 2, items 1 and 2, end
    let mut input = &bytes[..];
    assert_eq!(render(&node.decode(&mut input).unwrap()), "[i1, i2]");
    assert!(input.is_empty());
}

#[test]
fn hostile_input_is_an_error_not_a_panic_or_a_huge_allocation() {
    let array = Node::Array(Box::new(Node::Long));
    // A count of 2^62 items with two bytes left.
    let mut huge = vec![];
    let mut n: u64 = (1u64 << 62) << 1; // zig-zag of 2^62
    while n >= 0x80 {
        huge.push((n as u8) | 0x80);
        n >>= 7;
    }
    huge.push(n as u8);
    huge.extend([2, 4]);
    let err = array.decode(&mut huge.as_slice()).unwrap_err();
    assert!(
        matches!(err, AvroError::ItemsPastEnd { count, left: 2 } if count == 1 << 62),
        "{err}"
    );

    let nulls = Node::Array(Box::new(Node::Null));
    let err = nulls.decode(&mut huge.as_slice()).unwrap_err();
    assert!(matches!(err, AvroError::TooManyEmptyItems(_)), "{err}");

    let cases: Vec<(Node, Vec<u8>, &str)> = vec![
        (Node::Boolean, vec![2], "boolean"),
        (
            Node::Int,
            vec![0xfe, 0xff, 0xff, 0xff, 0x7f],
            "out of range",
        ),
        (Node::Long, vec![0xff; 11], "longer than 10 bytes"),
        (Node::String, vec![4, 0xc3, 0x28], "UTF-8"),
        (Node::String, vec![20, b'a'], "truncated"),
        (Node::Fixed(4), vec![1, 2], "truncated"),
        (Node::Double, vec![1, 2], "truncated"),
        (Node::Enum(2), vec![4], "out of range"),
        (
            Node::Union(vec![Node::Null, Node::Long]),
            vec![4],
            "branch 2",
        ),
        (
            Node::Union(vec![Node::Null, Node::Long]),
            vec![1],
            "branch -1",
        ),
    ];
    for (node, bytes, expected) in cases {
        let err = node.decode(&mut bytes.as_slice()).unwrap_err().to_string();
        assert!(err.contains(expected), "{node:?}: {err}");
    }
}

#[test]
fn a_reference_to_an_enclosing_record_is_refused() {
    let schema = Schema::parse_str(
        r#"{"type": "record", "name": "node", "fields": [
            {"name": "next", "type": ["null", "node"]}]}"#,
    )
    .unwrap();
    let resolved = ResolvedSchema::try_from(&schema).unwrap();
    let err = Node::compile(&schema, resolved.get_names()).unwrap_err();
    assert!(
        matches!(&err, AvroError::Recursive(name) if name == "node"),
        "{err}"
    );
}

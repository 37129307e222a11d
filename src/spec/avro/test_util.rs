//! Helpers for tests that write Iceberg-style Avro files with apache-avro's writer.

use apache_avro::types::Value;
use apache_avro::{Codec, DeflateSettings, Schema, Writer};

/// Writes `records` (validated against `schema`) with the given header metadata, deflated.
pub(crate) fn write_avro(
    schema: &serde_json::Value,
    metadata: &[(&str, &str)],
    records: &[Value],
) -> Vec<u8> {
    let schema = Schema::parse(schema).unwrap();
    let codec = Codec::Deflate(DeflateSettings::default());
    let mut writer = Writer::with_codec(&schema, Vec::new(), codec).unwrap();
    for (k, v) in metadata {
        writer.add_user_metadata((*k).to_string(), v).unwrap();
    }
    for r in records {
        writer.append_value_ref(r).unwrap();
    }
    writer.into_inner().unwrap()
}

/// A record value.
pub(crate) fn record(fields: Vec<(&str, Value)>) -> Value {
    Value::Record(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// The non-null branch of a `["null", T]` union.
pub(crate) fn some(v: impl Into<Value>) -> Value {
    Value::Union(1, Box::new(v.into()))
}

/// The null branch of a `["null", T]` union.
pub(crate) fn null() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

/// A Java-style `map<int, T>`: an array of `{key, value}` records.
pub(crate) fn kv_array<T: Into<Value> + Clone>(entries: &[(i32, T)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|(k, v)| record(vec![("key", Value::Int(*k)), ("value", v.clone().into())]))
            .collect(),
    )
}

/// `["null", T]` as a schema.
pub(crate) fn nullable(t: serde_json::Value) -> serde_json::Value {
    serde_json::json!(["null", t])
}

/// A record field with a `field-id` attribute.
pub(crate) fn field(name: &str, id: i32, t: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"name": name, "type": t, "field-id": id})
}

/// A nullable record field (Java writes `default: null`).
pub(crate) fn opt_field(name: &str, id: i32, t: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"name": name, "type": nullable(t), "default": null, "field-id": id})
}

/// Java's `map<int, T>` schema: an array of `k{key_id}_v{value_id}` records.
pub(crate) fn java_map(key_id: i32, value_id: i32, value: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": format!("k{key_id}_v{value_id}"),
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value, "field-id": value_id}
            ]
        }
    })
}

//! Table schemas (spec: "Schemas") and name mappings (spec: "Column Projection",
//! `schema.name-mapping.default`).

use std::collections::HashMap;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value as JsonValue, json};

use super::types::{NestedField, PrimitiveType, StructType, Type};
use crate::error::{Error, Result};

/// A table schema: a struct type with an id and optional identifier fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// `schema-id`; 0 for v1 metadata that has none.
    pub schema_id: i32,
    /// `identifier-field-ids`: the row identity, if declared.
    pub identifier_field_ids: Vec<i32>,
    /// The top-level fields.
    pub fields: StructType,
    /// Every field (nested ones too) by id, for O(1) lookups.
    index: HashMap<i32, Arc<NestedField>>,
}

impl Schema {
    /// A schema of the given top-level fields.
    pub fn new(schema_id: i32, fields: Vec<NestedField>) -> Self {
        Self::from_struct(schema_id, Vec::new(), StructType::new(fields))
    }

    /// A schema from an already built struct.
    pub fn from_struct(schema_id: i32, identifier_field_ids: Vec<i32>, fields: StructType) -> Self {
        let mut index = HashMap::new();
        index_fields(&fields, &mut index);
        Self {
            schema_id,
            identifier_field_ids,
            fields,
            index,
        }
    }

    /// The top-level fields.
    pub fn columns(&self) -> &[Arc<NestedField>] {
        &self.fields.fields
    }

    /// Any field, at any depth, by id.
    pub fn field_by_id(&self, id: i32) -> Option<&Arc<NestedField>> {
        self.index.get(&id)
    }

    /// The fields from the top level down to field `id`: the structs, lists and maps on the
    /// way (through a list's element, a map's key or value), then the field itself.
    pub fn path_to(&self, id: i32) -> Option<Vec<&NestedField>> {
        fn walk<'s>(fields: &[&'s NestedField], id: i32) -> Option<Vec<&'s NestedField>> {
            fields.iter().find_map(|f| {
                if f.id == id {
                    return Some(vec![*f]);
                }
                let children: Vec<&NestedField> = match &f.field_type {
                    Type::Struct(s) => s.fields.iter().map(AsRef::as_ref).collect(),
                    Type::List(l) => vec![l.element_field.as_ref()],
                    Type::Map(m) => vec![m.key_field.as_ref(), m.value_field.as_ref()],
                    Type::Primitive(_) => return None,
                };
                let mut path = walk(&children, id)?;
                path.insert(0, *f);
                Some(path)
            })
        }
        let top: Vec<&NestedField> = self.columns().iter().map(AsRef::as_ref).collect();
        walk(&top, id)
    }

    /// The dotted name of field `id` (`s.a`, `tags.element`, `m.value.x`).
    pub fn dotted_name(&self, id: i32) -> Option<String> {
        let path = self.path_to(id)?;
        let names: Vec<&str> = path.iter().map(|f| f.name.as_str()).collect();
        Some(names.join("."))
    }

    /// A top-level field by name.
    pub fn field_by_name(&self, name: &str) -> Option<&Arc<NestedField>> {
        self.fields.field_by_name(name)
    }

    /// The highest field id in use (0 for an empty schema).
    pub fn highest_field_id(&self) -> i32 {
        self.index.keys().copied().max().unwrap_or(0)
    }

    /// The first field (by id) that only format version 3 allows, as Java's
    /// `Schema.checkCompatibility` decides: a `timestamp_ns` / `timestamptz_ns` or other v3 type,
    /// or an `initial-default` / `write-default`.
    pub fn field_needing_v3(&self) -> Option<&Arc<NestedField>> {
        (1..=self.highest_field_id())
            .filter_map(|id| self.field_by_id(id))
            .find(|f| {
                let v3_type = f
                    .field_type
                    .as_primitive()
                    .is_some_and(PrimitiveType::is_v3);
                v3_type || f.initial_default.is_some() || f.write_default.is_some()
            })
    }

    /// The spec's JSON form.
    pub fn to_json(&self) -> JsonValue {
        let mut v = Type::Struct(self.fields.clone()).to_json();
        if let JsonValue::Object(m) = &mut v {
            m.insert("schema-id".into(), json!(self.schema_id));
            if !self.identifier_field_ids.is_empty() {
                m.insert(
                    "identifier-field-ids".into(),
                    json!(self.identifier_field_ids),
                );
            }
        }
        v
    }

    /// Parses the spec's JSON form; a missing `schema-id` (v1) reads as 0. Errors are
    /// [`Error::Corrupt`] without a path.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        let Type::Struct(fields) = Type::from_json(v)? else {
            return Err(Error::corrupt("", "a schema must be a struct"));
        };
        let schema_id = v
            .get("schema-id")
            .and_then(JsonValue::as_i64)
            .map(|id| {
                i32::try_from(id)
                    .map_err(|_| Error::corrupt("", format!("schema-id {id} is out of range")))
            })
            .transpose()?
            .unwrap_or(0);
        let identifier_field_ids = v
            .get("identifier-field-ids")
            .and_then(JsonValue::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| id.as_i64().and_then(|i| i32::try_from(i).ok()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self::from_struct(schema_id, identifier_field_ids, fields))
    }
}

fn index_fields(s: &StructType, index: &mut HashMap<i32, Arc<NestedField>>) {
    for f in &s.fields {
        index.insert(f.id, Arc::clone(f));
        index_type(&f.field_type, index);
    }
}

fn index_type(t: &Type, index: &mut HashMap<i32, Arc<NestedField>>) {
    match t {
        Type::Primitive(_) => {}
        Type::Struct(s) => index_fields(s, index),
        Type::List(l) => {
            index.insert(l.element_field.id, Arc::clone(&l.element_field));
            index_type(&l.element_field.field_type, index);
        }
        Type::Map(m) => {
            for f in [&m.key_field, &m.value_field] {
                index.insert(f.id, Arc::clone(f));
                index_type(&f.field_type, index);
            }
        }
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = JsonValue::deserialize(deserializer)?;
        Schema::from_json(&v).map_err(D::Error::custom)
    }
}

/// One entry of a name mapping: the field id for a list of names that a writer without field ids
/// may have used, with nested mappings for struct, list and map children.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MappedField {
    /// The field id the names map to (absent for names that map to nothing).
    #[serde(rename = "field-id", default, skip_serializing_if = "Option::is_none")]
    pub field_id: Option<i32>,
    /// The names (current and former).
    #[serde(default)]
    pub names: Vec<String>,
    /// Mappings for nested fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<MappedField>,
}

/// `schema.name-mapping.default`: how to find field ids for files written without them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NameMapping {
    /// The top-level mappings.
    pub fields: Vec<MappedField>,
}

impl NameMapping {
    /// Parses the JSON stored in the table property.
    pub fn parse(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The field id of a top-level column name, if mapped.
    pub fn field_id(&self, name: &str) -> Option<i32> {
        Self::find(&self.fields, name).and_then(|f| f.field_id)
    }

    /// The mapping of a top-level name (with its nested mappings).
    pub fn find<'a>(fields: &'a [MappedField], name: &str) -> Option<&'a MappedField> {
        fields.iter().find(|f| f.names.iter().any(|n| n == name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::types::PrimitiveType;

    #[test]
    fn schema_indexes_nested_fields_and_round_trips() {
        let json = json!({
            "type": "struct", "schema-id": 3, "identifier-field-ids": [1],
            "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"},
                {"id": 2, "name": "loc", "required": false, "type": {
                    "type": "struct", "fields": [
                        {"id": 3, "name": "lat", "required": false, "type": "double"}
                    ]}}
            ]
        });
        let s = Schema::from_json(&json).unwrap();
        assert_eq!(s.schema_id, 3);
        assert_eq!(s.field_by_id(3).unwrap().name, "lat");
        assert_eq!(
            s.field_by_id(3).unwrap().field_type,
            Type::Primitive(PrimitiveType::Double)
        );
        assert_eq!(s.highest_field_id(), 3);
        assert_eq!(s.to_json(), json);
    }

    #[test]
    fn v1_schema_without_id_reads_as_zero() {
        let s = Schema::from_json(&json!({"type": "struct", "fields": []})).unwrap();
        assert_eq!(s.schema_id, 0);
    }

    #[test]
    fn name_mapping_finds_ids_by_any_alias() {
        let m = NameMapping::parse(
            r#"[{"field-id": 1, "names": ["id", "record_id"]},
                {"field-id": 2, "names": ["data"], "fields": [{"field-id": 3, "names": ["x"]}]},
                {"names": ["unmapped"]}]"#,
        )
        .unwrap();
        assert_eq!(m.field_id("record_id"), Some(1));
        assert_eq!(m.field_id("data"), Some(2));
        assert_eq!(m.field_id("unmapped"), None);
        assert_eq!(m.field_id("nope"), None);
    }
}

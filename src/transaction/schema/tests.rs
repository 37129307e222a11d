//! Tests of [`UpdateSchema::apply`]: field ids as Java assigns them, positions, nested paths,
//! and every change the spec forbids refused with the column named.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::error::Error;
use crate::spec::{NestedField, StructType};

/// A table with a struct, a list of structs and a map of structs; `id` is the identifier
/// field, `day` the source of the partition spec, `n` of the sort order.
fn metadata(version: u8) -> TableMetadata {
    let json = format!(
        r#"{{
  "format-version": {version},
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "/t",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 13,
  "current-schema-id": 0,
  "schemas": [{{"type": "struct", "schema-id": 0, "identifier-field-ids": [1],
    "fields": [
      {{"id": 1, "name": "id", "required": true, "type": "long"}},
      {{"id": 2, "name": "n", "required": false, "type": "int"}},
      {{"id": 3, "name": "day", "required": false, "type": "date"}},
      {{"id": 4, "name": "s", "required": false, "type": {{"type": "struct", "fields": [
        {{"id": 7, "name": "a", "required": true, "type": "float"}},
        {{"id": 8, "name": "b", "required": false, "type": "decimal(9, 2)"}}]}}}},
      {{"id": 5, "name": "points", "required": false, "type": {{"type": "list",
        "element-id": 9, "element-required": true, "element": {{"type": "struct", "fields": [
          {{"id": 10, "name": "x", "required": false, "type": "int"}}]}}}}}},
      {{"id": 6, "name": "m", "required": false, "type": {{"type": "map",
        "key-id": 11, "key": "string", "value-id": 12, "value-required": false,
        "value": {{"type": "struct", "fields": [
          {{"id": 13, "name": "v", "required": false, "type": "date"}}]}}}}}}]}}],
  "default-spec-id": 0,
  "partition-specs": [{{"spec-id": 0, "fields": [
    {{"source-id": 3, "field-id": 1000, "name": "day_day", "transform": "day"}}]}}],
  "last-partition-id": 1000,
  "default-sort-order-id": 1,
  "sort-orders": [{{"order-id": 0, "fields": []}}, {{"order-id": 1, "fields": [
    {{"source-id": 2, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}}]}}],
  "properties": {{}},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}}"#
    );
    TableMetadata::parse(json.as_bytes()).unwrap()
}

fn names(fields: &[Arc<NestedField>]) -> Vec<(&str, i32)> {
    fields.iter().map(|f| (f.name.as_str(), f.id)).collect()
}

fn struct_of(field: &NestedField) -> &StructType {
    match &field.field_type {
        Type::Struct(s) => s,
        Type::List(l) => struct_of(&l.element_field),
        Type::Map(m) => struct_of(&m.value_field),
        other => panic!("{other} is no struct"),
    }
}

fn message(error: Error) -> String {
    error.to_string()
}

/// New columns take ids after `last-column-id`: the column's own first, then its struct's
/// fields, then their children (Java's `AssignFreshIds`), and land where asked.
#[test]
fn added_columns_get_ids_in_javas_order_at_their_positions() {
    let metadata = metadata(2);
    let nested = Type::Struct(StructType::new(vec![
        NestedField::optional(0, "p", PrimitiveType::Int),
        NestedField::optional(
            0,
            "q",
            Type::List(crate::spec::ListType {
                element_field: Arc::new(NestedField::optional(0, "element", PrimitiveType::Long)),
            }),
        ),
    ]));
    let (schema, last) = UpdateSchema::new()
        .add_column("tail", PrimitiveType::String)
        .add_column_with(NewColumn::new("deep", nested).at(ColumnPosition::First))
        .add_column_with(
            NewColumn::new("c", PrimitiveType::Boolean)
                .in_struct("s")
                .at(ColumnPosition::Before("b".into())),
        )
        .add_column_with(NewColumn::new("y", PrimitiveType::Double).in_struct("points"))
        .add_column_with(
            NewColumn::new("w", PrimitiveType::Long)
                .in_struct("m")
                .with_doc("in the map's values"),
        )
        .add_column_with(
            NewColumn::new("after_n", PrimitiveType::Int).at(ColumnPosition::After("N".into())),
        )
        .apply(&metadata)
        .unwrap();
    assert_eq!(
        names(schema.columns()),
        [
            ("deep", 15),
            ("id", 1),
            ("n", 2),
            ("after_n", 22),
            ("day", 3),
            ("s", 4),
            ("points", 5),
            ("m", 6),
            ("tail", 14),
        ]
    );
    let deep = struct_of(&schema.columns()[0]);
    assert_eq!(names(&deep.fields), [("p", 16), ("q", 17)]);
    assert_eq!(schema.field_by_id(18).unwrap().name, "element");
    assert_eq!(
        names(&struct_of(schema.field_by_name("s").unwrap()).fields),
        [("a", 7), ("c", 19), ("b", 8)]
    );
    assert_eq!(
        names(&struct_of(schema.field_by_name("points").unwrap()).fields),
        [("x", 10), ("y", 20)]
    );
    let m = struct_of(schema.field_by_name("m").unwrap());
    assert_eq!(names(&m.fields), [("v", 13), ("w", 21)]);
    assert_eq!(m.fields[1].doc.as_deref(), Some("in the map's values"));
    assert_eq!(last, 22);
    assert_eq!(schema.identifier_field_ids, [1]);
}

/// Renames, moves, docs and promotions by paths (short ones into lists and maps too), one
/// after the other: a renamed column goes by its new name.
#[test]
fn renames_moves_docs_and_promotions_apply_in_order() {
    let metadata = metadata(3);
    let (schema, last) = UpdateSchema::new()
        .rename_column("n", "count")
        .update_column_type("count", PrimitiveType::Long)
        .move_column("count", ColumnPosition::First)
        .rename_column("points.x", "px")
        .update_column_type("points.element.px", PrimitiveType::Long)
        .update_column_type(
            "s.b",
            PrimitiveType::Decimal {
                precision: 18,
                scale: 2,
            },
        )
        .update_column_type("s.a", PrimitiveType::Double)
        .update_column_type("m.v", PrimitiveType::Timestamp)
        .update_doc("S.A", Some("widened".into()))
        .make_optional("s.a")
        .move_column("day", ColumnPosition::After("m".into()))
        .apply(&metadata)
        .unwrap();
    assert_eq!(last, 13, "no new ids");
    assert_eq!(
        names(schema.columns()),
        [
            ("count", 2),
            ("id", 1),
            ("s", 4),
            ("points", 5),
            ("m", 6),
            ("day", 3)
        ]
    );
    let long = Type::Primitive(PrimitiveType::Long);
    assert_eq!(schema.field_by_id(2).unwrap().field_type, long);
    assert_eq!(schema.field_by_id(10).unwrap().name, "px");
    assert_eq!(schema.field_by_id(10).unwrap().field_type, long);
    let a = schema.field_by_id(7).unwrap();
    assert_eq!((a.doc.as_deref(), a.required), (Some("widened"), false));
    assert_eq!(a.field_type, Type::Primitive(PrimitiveType::Double));
    assert_eq!(
        schema.field_by_id(13).unwrap().field_type,
        Type::Primitive(PrimitiveType::Timestamp)
    );
}

/// Drops of a nested field and of a whole struct; the dropped ids stay used
/// (`last-column-id` does not go back), and a column added under the old name is new.
#[test]
fn drops_remove_fields_and_their_ids_are_not_reused() {
    let metadata = metadata(2);
    let (schema, last) = UpdateSchema::new()
        .drop_column("s.b")
        .drop_column("points")
        .add_column("points", PrimitiveType::String)
        .apply(&metadata)
        .unwrap();
    assert_eq!(
        names(&struct_of(schema.field_by_name("s").unwrap()).fields),
        [("a", 7)]
    );
    assert!(schema.field_by_id(5).is_none() && schema.field_by_id(9).is_none());
    assert_eq!(schema.field_by_name("points").unwrap().id, 14);
    assert_eq!(last, 14);
}

/// v3 defaults: a required column with a default gets it as `initial-default` and
/// `write-default`; `set_write_default` changes the latter only.
#[test]
fn v3_defaults_are_the_initial_and_write_defaults() {
    let metadata = metadata(3);
    let (schema, _) = UpdateSchema::new()
        .add_column_with(
            NewColumn::new("flag", PrimitiveType::Boolean)
                .required()
                .with_default(json!(true)),
        )
        .set_write_default("n", Some(json!(7)))
        .apply(&metadata)
        .unwrap();
    let flag = schema.field_by_name("flag").unwrap();
    assert!(flag.required);
    assert_eq!(
        (flag.initial_default.clone(), flag.write_default.clone()),
        (Some(json!(true)), Some(json!(true)))
    );
    let n = schema.field_by_name("n").unwrap();
    assert_eq!(
        (n.initial_default.clone(), n.write_default.clone()),
        (None, Some(json!(7)))
    );
}

/// What the spec forbids is refused, naming the column and the reason.
#[test]
fn forbidden_changes_are_refused_with_the_column_named() {
    let v2 = metadata(2);
    let v3 = metadata(3);
    let refused = |update: UpdateSchema, metadata: &TableMetadata| {
        message(update.apply(metadata).expect_err("refused"))
    };
    let cases: Vec<(UpdateSchema, &TableMetadata, &str)> = vec![
        (
            UpdateSchema::new().add_column_with(NewColumn::new("r", PrimitiveType::Int).required()),
            &v3,
            "column 'r': cannot be added as required without a default",
        ),
        (
            UpdateSchema::new()
                .add_column_with(NewColumn::new("d", PrimitiveType::Int).with_default(json!(1))),
            &v2,
            "defaults need format version 3, the table is v2",
        ),
        (
            UpdateSchema::new()
                .add_column_with(NewColumn::new("d", PrimitiveType::Int).with_default(json!("x"))),
            &v3,
            "column 'd': the default is not a value of its type",
        ),
        (
            UpdateSchema::new().add_column("n", PrimitiveType::Int),
            &v2,
            "column 'n': already exists",
        ),
        (
            UpdateSchema::new()
                .add_column_with(NewColumn::new("z", PrimitiveType::Int).in_struct("id")),
            &v2,
            "column 'id': is not a struct",
        ),
        (
            UpdateSchema::new().add_column_with(
                NewColumn::new("z", PrimitiveType::Int).at(ColumnPosition::After("nope".into())),
            ),
            &v2,
            "no such field beside it",
        ),
        (
            UpdateSchema::new().add_column("ns", PrimitiveType::TimestampNs),
            &v2,
            "needs format version 3",
        ),
        (
            UpdateSchema::new().rename_column("n", "id"),
            &v2,
            "a field of that name exists",
        ),
        (
            UpdateSchema::new().rename_column("points.element", "e"),
            &v2,
            "is a list's element",
        ),
        (
            UpdateSchema::new().drop_column("id"),
            &v2,
            "is an identifier field",
        ),
        (
            UpdateSchema::new().drop_column("day"),
            &v2,
            "partition spec 0 partitions by it",
        ),
        (
            UpdateSchema::new().drop_column("n"),
            &v2,
            "sort order 1 sorts by it",
        ),
        (
            UpdateSchema::new().drop_column("nope"),
            &v2,
            "not found: column 'nope' in the table's schema",
        ),
        (
            UpdateSchema::new().update_column_type("id", PrimitiveType::Int),
            &v2,
            "cannot change type from long to int",
        ),
        (
            UpdateSchema::new().update_column_type("m.v", PrimitiveType::Timestamp),
            &v2,
            "(and on v3 tables date -> timestamp)",
        ),
        (
            UpdateSchema::new().update_column_type("day", PrimitiveType::Timestamp),
            &v3,
            "a partition spec uses it",
        ),
        (
            UpdateSchema::new().update_column_type("s", PrimitiveType::Int),
            &v2,
            "only primitive columns change type",
        ),
        (
            UpdateSchema::new().require_column("n"),
            &v2,
            "column 'n': is optional and cannot become required",
        ),
        (
            UpdateSchema::new().make_optional("m.key"),
            &v2,
            "a map's key is always required",
        ),
        (
            UpdateSchema::new().make_optional("id"),
            &v2,
            "is an identifier field",
        ),
        (
            UpdateSchema::new().set_write_default("n", Some(json!(1))),
            &v2,
            "defaults need format version 3",
        ),
    ];
    for (update, metadata, expected) in cases {
        let got = refused(update.clone(), metadata);
        assert!(got.contains(expected), "{update:?}: {got}");
    }
    // Required stays required, a no-op; an unchanged schema asks for no commit.
    let (schema, _) = UpdateSchema::new().require_column("id").apply(&v2).unwrap();
    assert_eq!(schema.fields, v2.current_schema().fields);
}

/// Identifier fields by name; the table checks them (required, primitive) when the schema is
/// added.
#[test]
fn identifier_fields_are_set_by_name() {
    let (schema, _) = UpdateSchema::new()
        .set_identifier_fields(["id", "s.a"])
        .apply(&metadata(2))
        .unwrap();
    assert_eq!(schema.identifier_field_ids, [1, 7]);
}

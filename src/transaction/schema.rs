//! Schema evolution (spec: "Schema Evolution"): [`UpdateSchema`], the action that adds,
//! renames, drops, retypes, reorders and documents columns, and sets identifier fields, in
//! one metadata-only commit (`add-schema` + `set-current-schema`).
//!
//! Changes apply one after the other, each to the schema the previous ones leave: a column
//! renamed from `a` to `b` is `b` for the changes after it. New fields get ids as Java's
//! `SchemaUpdate` gives them: the table's `last-column-id` + 1 for the column, then its nested
//! fields (a struct's fields first, then their own children). What the spec forbids is refused
//! with an error naming the column, before anything is written:
//!
//! - a required column without a default (rows already written have no value), or a default
//!   on a table before format version 3;
//! - a type change that is not one of the spec's promotions (`int` -> `long`, `float` ->
//!   `double`, a decimal's precision widened; v3 also `date` -> `timestamp`/`timestamp_ns`);
//! - making an optional column required (rows already written may hold NULL);
//! - dropping an identifier field, or a column a partition spec or sort order of the table
//!   uses (its files keep being pruned and read by it);
//! - names already taken in the same struct, and changes to a list's element or a map's key or
//!   value other than their type, nullability and doc.
//!
//! Names are resolved exactly, or else case-insensitively when only one field matches; nested
//! fields are `s.inner`, `points.element.x` (or `points.x`), `m.key`, `m.value.x` (or `m.x`).
//! A schema changed by another writer since the transaction's base fails the commit with
//! [`Error::CommitConflict`], as Java's `assert-current-schema-id` does.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value as JsonValue;

use super::{Action, Changes, CommitContext, changed_since};
use crate::error::{Error, Result};
use crate::spec::changes::LAST_ADDED;
use crate::spec::{
    FormatVersion, Literal, NestedField, PrimitiveType, Schema, StructType, TableMetadata,
    TableRequirement, TableUpdate, Type,
};
use crate::table::assign_fresh_ids;

/// Where a column goes among its siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnPosition {
    /// Before every other field of its struct.
    First,
    /// Right after this sibling.
    After(String),
    /// Right before this sibling.
    Before(String),
}

/// A column to add ([`UpdateSchema::add_column_with`]): optional, at the end of its struct, unless said
/// otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct NewColumn {
    parent: Option<String>,
    name: String,
    field_type: Type,
    required: bool,
    default: Option<JsonValue>,
    doc: Option<String>,
    position: Option<ColumnPosition>,
}

impl NewColumn {
    /// An optional top-level column `name` of `field_type` (field ids inside a nested type are
    /// placeholders: fresh ones are assigned).
    pub fn new(name: impl Into<String>, field_type: impl Into<Type>) -> Self {
        Self {
            parent: None,
            name: name.into(),
            field_type: field_type.into(),
            required: false,
            default: None,
            doc: None,
            position: None,
        }
    }

    /// Adds the column to the struct `parent` (a list's element struct or a map's value
    /// struct when `parent` names the list or map).
    pub fn in_struct(mut self, parent: impl Into<String>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// Makes the column required (it then needs a default: [`NewColumn::with_default`]).
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// v3: the value of the column in rows written before it existed (`initial-default`) and
    /// for writers that give none (`write-default`), in the spec's JSON single-value form.
    pub fn with_default(mut self, value: JsonValue) -> Self {
        self.default = Some(value);
        self
    }

    /// The column's doc.
    pub fn with_doc(mut self, doc: impl Into<String>) -> Self {
        self.doc = Some(doc.into());
        self
    }

    /// Where the column goes.
    pub fn at(mut self, position: ColumnPosition) -> Self {
        self.position = Some(position);
        self
    }
}

/// One change of an [`UpdateSchema`].
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Add(NewColumn),
    Rename {
        path: String,
        name: String,
    },
    Drop {
        path: String,
    },
    Retype {
        path: String,
        to: PrimitiveType,
    },
    Nullable {
        path: String,
        optional: bool,
    },
    Doc {
        path: String,
        doc: Option<String>,
    },
    WriteDefault {
        path: String,
        value: Option<JsonValue>,
    },
    Move {
        path: String,
        position: ColumnPosition,
    },
    IdentifierFields(Vec<String>),
}

/// Evolves the table's current schema (see the module docs): build it with the methods below,
/// then add it to a transaction ([`super::Transaction::update_schema`]).
///
/// ```
/// use icefloe::spec::PrimitiveType;
/// use icefloe::transaction::{ColumnPosition, NewColumn, UpdateSchema};
///
/// let update = UpdateSchema::new()
///     .add_column_with(NewColumn::new("region", PrimitiveType::String).at(ColumnPosition::After("id".into())))
///     .rename_column("amount", "total")
///     .update_column_type("quantity", PrimitiveType::Long)
///     .drop_column("legacy");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateSchema {
    changes: Vec<Change>,
}

impl UpdateSchema {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no change was asked for.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Adds a column.
    pub fn add_column_with(mut self, column: NewColumn) -> Self {
        self.changes.push(Change::Add(column));
        self
    }

    /// Adds an optional top-level column at the end.
    pub fn add_column(self, name: impl Into<String>, field_type: impl Into<Type>) -> Self {
        self.add_column_with(NewColumn::new(name, field_type))
    }

    /// Renames the field `path` (its last part becomes `name`).
    pub fn rename_column(mut self, path: impl Into<String>, name: impl Into<String>) -> Self {
        self.changes.push(Change::Rename {
            path: path.into(),
            name: name.into(),
        });
        self
    }

    /// Drops the field `path` (and everything under it).
    pub fn drop_column(mut self, path: impl Into<String>) -> Self {
        self.changes.push(Change::Drop { path: path.into() });
        self
    }

    /// Promotes the primitive field `path` to `to`.
    pub fn update_column_type(mut self, path: impl Into<String>, to: PrimitiveType) -> Self {
        self.changes.push(Change::Retype {
            path: path.into(),
            to,
        });
        self
    }

    /// Makes the field `path` optional (`DROP NOT NULL`).
    pub fn make_optional(mut self, path: impl Into<String>) -> Self {
        self.changes.push(Change::Nullable {
            path: path.into(),
            optional: true,
        });
        self
    }

    /// Makes the field `path` required (`SET NOT NULL`): refused for an optional column, whose
    /// rows may hold NULL; accepted (a no-op) for a required one.
    pub fn require_column(mut self, path: impl Into<String>) -> Self {
        self.changes.push(Change::Nullable {
            path: path.into(),
            optional: false,
        });
        self
    }

    /// Sets (or with `None` removes) the doc of the field `path`.
    pub fn update_doc(mut self, path: impl Into<String>, doc: Option<String>) -> Self {
        self.changes.push(Change::Doc {
            path: path.into(),
            doc,
        });
        self
    }

    /// v3: sets (or with `None` removes) the `write-default` of the field `path`.
    pub fn set_write_default(mut self, path: impl Into<String>, value: Option<JsonValue>) -> Self {
        self.changes.push(Change::WriteDefault {
            path: path.into(),
            value,
        });
        self
    }

    /// Moves the field `path` among its siblings.
    pub fn move_column(mut self, path: impl Into<String>, position: ColumnPosition) -> Self {
        self.changes.push(Change::Move {
            path: path.into(),
            position,
        });
        self
    }

    /// Makes `paths` the schema's identifier fields (none: the schema has no row identity).
    pub fn set_identifier_fields<S: Into<String>>(
        mut self,
        paths: impl IntoIterator<Item = S>,
    ) -> Self {
        let paths = paths.into_iter().map(Into::into).collect();
        self.changes.push(Change::IdentifierFields(paths));
        self
    }

    /// The schema `metadata`'s current schema becomes with every change applied, and the
    /// table's `last-column-id` after it; the schema id is the current one (the catalog
    /// assigns the new schema's).
    pub fn apply(&self, metadata: &TableMetadata) -> Result<(Schema, i32)> {
        let current = metadata.current_schema();
        let mut work = Working {
            fields: current.fields.fields.clone(),
            identifier_ids: current.identifier_field_ids.clone(),
            last_column_id: metadata.last_column_id,
            metadata,
        };
        for change in &self.changes {
            work.apply(change)?;
        }
        let schema = Schema::from_struct(
            current.schema_id,
            work.identifier_ids,
            StructType {
                fields: work.fields,
            },
        );
        Ok((schema, work.last_column_id))
    }
}

#[async_trait]
impl Action for UpdateSchema {
    fn validate(&self, base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        if base.current_schema_id != current.current_schema_id
            || base.last_column_id != current.last_column_id
        {
            let (before, after) = (base.current_schema_id, current.current_schema_id);
            return Err(changed_since(base, "schema", before, after));
        }
        Ok(())
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let (schema, last_column_id) = self.apply(current)?;
        let old = current.current_schema();
        if schema.fields == old.fields && schema.identifier_field_ids == old.identifier_field_ids {
            return Ok(Changes::default());
        }
        Ok(Changes {
            requirements: vec![
                TableRequirement::AssertCurrentSchemaId {
                    current_schema_id: current.current_schema_id,
                },
                TableRequirement::AssertLastAssignedFieldId {
                    last_assigned_field_id: current.last_column_id,
                },
            ],
            updates: vec![
                TableUpdate::AddSchema {
                    schema,
                    last_column_id: Some(last_column_id),
                },
                TableUpdate::SetCurrentSchema {
                    schema_id: LAST_ADDED,
                },
            ],
        })
    }
}

/// One step from a field to a child: a struct's field by position, a list's element, a map's
/// key or value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Field(usize),
    Element,
    Key,
    Value,
}

/// The schema being changed.
struct Working<'a> {
    fields: Vec<Arc<NestedField>>,
    identifier_ids: Vec<i32>,
    last_column_id: i32,
    metadata: &'a TableMetadata,
}

fn column(path: &str) -> String {
    format!("column '{path}'")
}

impl Working<'_> {
    fn v3(&self) -> bool {
        self.metadata.format_version >= FormatVersion::V3
    }

    fn apply(&mut self, change: &Change) -> Result<()> {
        match change {
            Change::Add(new) => self.add(new),
            Change::Rename { path, name } => {
                let steps = self.resolve(path)?;
                let (parent, last) = split_last(path, &steps)?;
                let siblings = self.struct_fields(parent)?;
                if siblings
                    .iter()
                    .enumerate()
                    .any(|(i, f)| f.name == *name && i != last)
                {
                    return Err(Error::invalid(
                        column(path),
                        format_args!("cannot be renamed to '{name}': a field of that name exists"),
                    ));
                }
                if name.is_empty() {
                    return Err(Error::invalid(column(path), "cannot get an empty name"));
                }
                self.field_mut(&steps)?.name = name.clone();
                Ok(())
            }
            Change::Drop { path } => self.drop(path),
            Change::Retype { path, to } => self.retype(path, to),
            Change::Nullable { path, optional } => {
                let steps = self.resolve(path)?;
                let field = self.field(&steps)?;
                if *optional {
                    if steps.last() == Some(&Step::Key) {
                        return Err(Error::invalid(
                            column(path),
                            "a map's key is always required",
                        ));
                    }
                    if field.required && self.identifier_ids.contains(&field.id) {
                        return Err(Error::invalid(
                            column(path),
                            "is an identifier field, which must stay required",
                        ));
                    }
                } else if !field.required {
                    return Err(Error::invalid(
                        column(path),
                        "is optional and cannot become required: rows already written may \
                         hold NULL (the spec allows required -> optional only)",
                    ));
                }
                self.field_mut(&steps)?.required = !optional;
                Ok(())
            }
            Change::Doc { path, doc } => {
                let steps = self.resolve(path)?;
                self.field_mut(&steps)?.doc = doc.clone();
                Ok(())
            }
            Change::WriteDefault { path, value } => {
                let steps = self.resolve(path)?;
                if value.is_some() && !self.v3() {
                    return Err(needs_v3(path, self.metadata));
                }
                let field = self.field(&steps)?;
                if let Some(value) = value {
                    check_default(path, &field.field_type, value)?;
                }
                self.field_mut(&steps)?.write_default = value.clone();
                Ok(())
            }
            Change::Move { path, position } => {
                let steps = self.resolve(path)?;
                let (parent, at) = split_last(path, &steps)?;
                let siblings = self.struct_fields_mut(parent)?;
                let moved = siblings.remove(at);
                match place(siblings, position, path) {
                    Ok(to) => {
                        siblings.insert(to, moved);
                        Ok(())
                    }
                    Err(e) => {
                        siblings.insert(at, moved);
                        Err(e)
                    }
                }
            }
            Change::IdentifierFields(paths) => {
                let mut ids = Vec::with_capacity(paths.len());
                for path in paths {
                    let steps = self.resolve(path)?;
                    ids.push(self.field(&steps)?.id);
                }
                self.identifier_ids = ids;
                Ok(())
            }
        }
    }

    fn add(&mut self, new: &NewColumn) -> Result<()> {
        let what = match &new.parent {
            Some(parent) => format!("{parent}.{}", new.name),
            None => new.name.clone(),
        };
        if new.name.is_empty() {
            return Err(Error::invalid("a new column", "has no name"));
        }
        if new.required && new.field_type == Type::Primitive(PrimitiveType::Unknown) {
            return Err(Error::invalid(
                column(&what),
                "is of type unknown, which must be optional (it holds nulls only)",
            ));
        }
        if new.required && new.default.is_none() {
            return Err(Error::invalid(
                column(&what),
                "cannot be added as required without a default: the rows already written \
                 have no value for it (add it optional, or with a DEFAULT on a v3 table)",
            ));
        }
        if let Some(default) = &new.default {
            if !self.v3() {
                return Err(needs_v3(&what, self.metadata));
            }
            check_default(&what, &new.field_type, default)?;
        }
        let parent = match &new.parent {
            None => Vec::new(),
            Some(path) => {
                let mut steps = self.resolve(path)?;
                // A list's element struct, a map's value struct.
                match &self.field(&steps)?.field_type {
                    Type::List(_) => steps.push(Step::Element),
                    Type::Map(_) => steps.push(Step::Value),
                    _ => {}
                }
                if !matches!(self.field(&steps)?.field_type, Type::Struct(_)) {
                    return Err(Error::invalid(
                        column(path),
                        format_args!("is not a struct: '{}' cannot be added to it", new.name),
                    ));
                }
                steps
            }
        };
        if self
            .struct_fields(&parent)?
            .iter()
            .any(|f| f.name == new.name)
        {
            return Err(Error::invalid(column(&what), "already exists"));
        }
        let mut field = NestedField::optional(0, new.name.clone(), new.field_type.clone());
        field.required = new.required;
        field.doc = new.doc.clone();
        field.initial_default = new.default.clone();
        field.write_default = new.default.clone();
        let mut next = self.last_column_id;
        let [field] = &assign_fresh_ids(&[field], &mut next)[..] else {
            unreachable!("one field in, one out")
        };
        let version = self.metadata.format_version;
        let allowed = Schema::new(0, vec![field.clone()]);
        if let Some(f) = allowed.field_needing_v3()
            && version < FormatVersion::V3
        {
            return Err(Error::invalid(
                column(&what),
                format_args!(
                    "its type {} needs format version 3, the table is v{}",
                    f.field_type,
                    version.number()
                ),
            ));
        }
        let position = new.position.clone();
        let siblings = self.struct_fields_mut(&parent)?;
        let at = match &position {
            None => siblings.len(),
            Some(position) => place(siblings, position, &what)?,
        };
        siblings.insert(at, Arc::new(field.clone()));
        self.last_column_id = next;
        Ok(())
    }

    fn drop(&mut self, path: &str) -> Result<()> {
        let steps = self.resolve(path)?;
        let (parent, at) = split_last(path, &steps)?;
        let field = self.field(&steps)?;
        let mut ids = Vec::new();
        collect_ids(field, &mut ids);
        if let Some(id) = ids.iter().find(|id| self.identifier_ids.contains(id)) {
            return Err(Error::invalid(
                column(path),
                format_args!(
                    "cannot be dropped: field {id} is an identifier field of the schema \
                     (change the identifier fields first)"
                ),
            ));
        }
        let metadata = self.metadata;
        for spec in &metadata.partition_specs {
            if let Some(p) = spec.fields.iter().find(|p| ids.contains(&p.source_id)) {
                return Err(Error::invalid(
                    column(path),
                    format_args!(
                        "cannot be dropped: partition spec {} partitions by it ('{}', {}); \
                         its files are still pruned and read with that spec",
                        spec.spec_id, p.name, p.transform
                    ),
                ));
            }
        }
        for order in &metadata.sort_orders {
            if order.fields.iter().any(|s| ids.contains(&s.source_id)) {
                return Err(Error::invalid(
                    column(path),
                    format_args!(
                        "cannot be dropped: sort order {} sorts by it",
                        order.order_id
                    ),
                ));
            }
        }
        let siblings = self.struct_fields_mut(parent)?;
        if parent.is_empty() && siblings.len() == 1 {
            return Err(Error::invalid(
                column(path),
                "cannot be dropped: it is the table's last column",
            ));
        }
        siblings.remove(at);
        Ok(())
    }

    fn retype(&mut self, path: &str, to: &PrimitiveType) -> Result<()> {
        let steps = self.resolve(path)?;
        let field = self.field(&steps)?;
        let Type::Primitive(from) = &field.field_type else {
            return Err(Error::invalid(
                column(path),
                format_args!(
                    "is a {}: only primitive columns change type",
                    field.field_type
                ),
            ));
        };
        if from == to {
            return Ok(());
        }
        let date_to_timestamp = *from == PrimitiveType::Date;
        if !from.can_promote_to(to) || (date_to_timestamp && !self.v3()) {
            return Err(Error::invalid(
                column(path),
                format_args!(
                    "cannot change type from {from} to {to}: the spec allows int -> long, \
                     float -> double, a wider decimal precision{}",
                    match self.v3() {
                        true => ", date -> timestamp / timestamp_ns and unknown -> any type",
                        false => " (and on v3 tables date -> timestamp)",
                    }
                ),
            ));
        }
        if date_to_timestamp {
            let id = field.id;
            let partitioned = self
                .metadata
                .partition_specs
                .iter()
                .any(|s| s.fields.iter().any(|p| p.source_id == id));
            if partitioned {
                return Err(Error::invalid(
                    column(path),
                    "cannot change type from date to a timestamp: a partition spec uses it, \
                     and its partition values would change",
                ));
            }
            if field.initial_default.is_some() || field.write_default.is_some() {
                return Err(Error::invalid(
                    column(path),
                    "cannot change type from date to a timestamp while it has a default",
                ));
            }
        }
        self.field_mut(&steps)?.field_type = Type::Primitive(to.clone());
        Ok(())
    }

    /// The steps to the field `path` names.
    fn resolve(&self, path: &str) -> Result<Vec<Step>> {
        let parts: Vec<&str> = path.split('.').collect();
        // A whole name first: top-level names may hold dots.
        if let Some(i) = find(&self.fields, path) {
            return Ok(vec![Step::Field(i)]);
        }
        let not_found = || Error::not_found(format!("{} in the table's schema", column(path)));
        let mut steps = Vec::new();
        let mut at: Option<&NestedField> = None;
        for part in parts {
            let (step, child) = match at.map(|f| &f.field_type) {
                None => {
                    let i = find(&self.fields, part).ok_or_else(not_found)?;
                    (Step::Field(i), &self.fields[i])
                }
                Some(Type::Struct(s)) => {
                    let i = find(&s.fields, part).ok_or_else(not_found)?;
                    (Step::Field(i), &s.fields[i])
                }
                Some(Type::List(l)) if part.eq_ignore_ascii_case("element") => {
                    (Step::Element, &l.element_field)
                }
                Some(Type::List(l)) => match &l.element_field.field_type {
                    Type::Struct(s) => {
                        steps.push(Step::Element);
                        let i = find(&s.fields, part).ok_or_else(not_found)?;
                        (Step::Field(i), &s.fields[i])
                    }
                    _ => return Err(not_found()),
                },
                Some(Type::Map(m)) if part.eq_ignore_ascii_case("key") => (Step::Key, &m.key_field),
                Some(Type::Map(m)) if part.eq_ignore_ascii_case("value") => {
                    (Step::Value, &m.value_field)
                }
                Some(Type::Map(m)) => match &m.value_field.field_type {
                    Type::Struct(s) => {
                        steps.push(Step::Value);
                        let i = find(&s.fields, part).ok_or_else(not_found)?;
                        (Step::Field(i), &s.fields[i])
                    }
                    _ => return Err(not_found()),
                },
                Some(Type::Primitive(_)) => return Err(not_found()),
            };
            steps.push(step);
            at = Some(child);
        }
        Ok(steps)
    }

    fn field(&self, steps: &[Step]) -> Result<&NestedField> {
        let mut field: Option<&NestedField> = None;
        for step in steps {
            let next = match (field.map(|f| &f.field_type), step) {
                (None, Step::Field(i)) => self.fields.get(*i),
                (Some(Type::Struct(s)), Step::Field(i)) => s.fields.get(*i),
                (Some(Type::List(l)), Step::Element) => Some(&l.element_field),
                (Some(Type::Map(m)), Step::Key) => Some(&m.key_field),
                (Some(Type::Map(m)), Step::Value) => Some(&m.value_field),
                _ => None,
            };
            field = Some(next.ok_or_else(lost_step)?);
        }
        field.ok_or_else(lost_step)
    }

    fn field_mut(&mut self, steps: &[Step]) -> Result<&mut NestedField> {
        let Some((Step::Field(first), rest)) = steps.split_first() else {
            return Err(lost_step());
        };
        let mut field = Arc::make_mut(self.fields.get_mut(*first).ok_or_else(lost_step)?);
        for step in rest {
            let here = field;
            field = match (&mut here.field_type, step) {
                (Type::Struct(s), Step::Field(i)) => {
                    Arc::make_mut(s.fields.get_mut(*i).ok_or_else(lost_step)?)
                }
                (Type::List(l), Step::Element) => Arc::make_mut(&mut l.element_field),
                (Type::Map(m), Step::Key) => Arc::make_mut(&mut m.key_field),
                (Type::Map(m), Step::Value) => Arc::make_mut(&mut m.value_field),
                _ => return Err(lost_step()),
            };
        }
        Ok(field)
    }

    /// The fields of the struct at `steps` (the top level when empty).
    fn struct_fields(&self, steps: &[Step]) -> Result<&Vec<Arc<NestedField>>> {
        if steps.is_empty() {
            return Ok(&self.fields);
        }
        match &self.field(steps)?.field_type {
            Type::Struct(s) => Ok(&s.fields),
            _ => Err(lost_step()),
        }
    }

    fn struct_fields_mut(&mut self, steps: &[Step]) -> Result<&mut Vec<Arc<NestedField>>> {
        if steps.is_empty() {
            return Ok(&mut self.fields);
        }
        match &mut self.field_mut(steps)?.field_type {
            Type::Struct(s) => Ok(&mut s.fields),
            _ => Err(lost_step()),
        }
    }
}

/// A path the resolver made that does not lead anywhere: a bug, not the caller's.
fn lost_step() -> Error {
    Error::invalid("a schema path", "does not lead to a field (icefloe bug)")
}

/// The parent's steps and the field's position in it; refused for a list's element and a
/// map's key or value, which are not struct fields.
fn split_last<'s>(path: &str, steps: &'s [Step]) -> Result<(&'s [Step], usize)> {
    match steps.split_last() {
        Some((Step::Field(i), parent)) => Ok((parent, *i)),
        _ => Err(Error::invalid(
            column(path),
            "is a list's element or a map's key or value: it cannot be renamed, moved or \
             dropped (change its type, nullability or doc instead)",
        )),
    }
}

/// The position of the field called `name`: exactly, else the one field whose name matches
/// ignoring case.
fn find(fields: &[Arc<NestedField>], name: &str) -> Option<usize> {
    if let Some(i) = fields.iter().position(|f| f.name == name) {
        return Some(i);
    }
    let mut matching = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name.eq_ignore_ascii_case(name));
    match (matching.next(), matching.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// Where `position` puts a field among `siblings` (the field itself not among them).
fn place(siblings: &[Arc<NestedField>], position: &ColumnPosition, path: &str) -> Result<usize> {
    let sibling = |name: &str| {
        find(siblings, name).ok_or_else(|| {
            Error::invalid(
                column(path),
                format_args!("cannot be placed next to '{name}': no such field beside it"),
            )
        })
    };
    match position {
        ColumnPosition::First => Ok(0),
        ColumnPosition::After(name) => Ok(sibling(name)? + 1),
        ColumnPosition::Before(name) => sibling(name),
    }
}

fn collect_ids(field: &NestedField, ids: &mut Vec<i32>) {
    ids.push(field.id);
    match &field.field_type {
        Type::Primitive(_) => {}
        Type::Struct(s) => s.fields.iter().for_each(|f| collect_ids(f, ids)),
        Type::List(l) => collect_ids(&l.element_field, ids),
        Type::Map(m) => {
            collect_ids(&m.key_field, ids);
            collect_ids(&m.value_field, ids);
        }
    }
}

fn needs_v3(path: &str, metadata: &TableMetadata) -> Error {
    Error::invalid(
        column(path),
        format_args!(
            "cannot have a default: defaults need format version 3, the table is v{} \
             (SET TBLPROPERTIES ('format-version' = '3') upgrades it)",
            metadata.format_version.number()
        ),
    )
}

/// Checks that `value` is a JSON single value of `field_type` (primitive defaults only).
fn check_default(path: &str, field_type: &Type, value: &JsonValue) -> Result<()> {
    let Type::Primitive(p) = field_type else {
        return Err(Error::invalid(
            column(path),
            format_args!("is a {field_type}: only primitive columns take a default"),
        ));
    };
    Literal::from_json(p, value).map(|_| ()).map_err(|e| {
        Error::invalid(
            column(path),
            format_args!("the default is not a value of its type: {e}"),
        )
    })
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;

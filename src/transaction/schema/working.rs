//! The schema being changed by an [`super::UpdateSchema`]: fields found by path, and each
//! change applied with the spec's rules (see the module docs of [`super`]).

use std::sync::Arc;

use serde_json::Value as JsonValue;

use super::{Change, ColumnPosition, NewColumn};
use crate::error::{Error, Result};
use crate::spec::{
    FormatVersion, Literal, NestedField, PrimitiveType, Schema, StructType, TableMetadata, Type,
};
use crate::table::assign_fresh_ids;

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
pub(super) struct Working<'a> {
    fields: Vec<Arc<NestedField>>,
    identifier_ids: Vec<i32>,
    last_column_id: i32,
    metadata: &'a TableMetadata,
}

fn column(path: &str) -> String {
    format!("column '{path}'")
}

impl<'a> Working<'a> {
    /// The current schema of `metadata`, not changed yet.
    pub(super) fn new(metadata: &'a TableMetadata) -> Self {
        let current = metadata.current_schema();
        Self {
            fields: current.fields.fields.clone(),
            identifier_ids: current.identifier_field_ids.clone(),
            last_column_id: metadata.last_column_id,
            metadata,
        }
    }

    /// The schema as changed (with the current schema's id) and the `last-column-id`.
    pub(super) fn finish(self) -> (Schema, i32) {
        let current = self.metadata.current_schema();
        let fields = StructType {
            fields: self.fields,
        };
        let schema = Schema::from_struct(current.schema_id, self.identifier_ids, fields);
        (schema, self.last_column_id)
    }
    fn v3(&self) -> bool {
        self.metadata.format_version >= FormatVersion::V3
    }

    pub(super) fn apply(&mut self, change: &Change) -> Result<()> {
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

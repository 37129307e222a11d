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

use async_trait::async_trait;
use serde_json::Value as JsonValue;

use super::{Action, Changes, CommitContext, changed_since};
use crate::error::Result;
use crate::spec::changes::LAST_ADDED;
use crate::spec::{PrimitiveType, Schema, TableMetadata, TableRequirement, TableUpdate, Type};
use working::Working;

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
        let mut work = Working::new(metadata);
        for change in &self.changes {
            work.apply(change)?;
        }
        Ok(work.finish())
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

#[cfg(test)]
mod tests;
mod working;

//! The updates that evolve a table's structure: its format version, schemas, partition specs
//! and sort orders. Ids are assigned as Java's `TableMetadata.Builder` assigns them: an equal
//! entry already in the table is reused, otherwise the highest id + 1.

use super::apply::{MetadataBuilder, Outcome, Refused, refuse};
use super::update::LAST_ADDED;
use crate::spec::metadata::FormatVersion;
use crate::spec::partition::PARTITION_DATA_ID_START;
use crate::spec::types::Type;
use crate::spec::{PartitionSpec, Schema, SortOrder, Transform};

impl MetadataBuilder<'_> {
    /// `upgrade-format-version`.
    pub(super) fn upgrade_format(&mut self, version: FormatVersion) -> Outcome {
        let current = self.next.format_version;
        if version < current {
            return refuse(format!(
                "a v{} table cannot be downgraded to v{}",
                current.number(),
                version.number()
            ));
        }
        if version == current {
            return Ok(false);
        }
        self.next.format_version = version;
        if version >= FormatVersion::V3 && self.next.next_row_id.is_none() {
            // Spec: "When a table is upgraded to v3, its next-row-id is initialized to 0".
            self.next.next_row_id = Some(0);
        }
        Ok(true)
    }

    /// `add-schema`.
    pub(super) fn add_schema(&mut self, schema: &Schema, last_column_id: Option<i32>) -> Outcome {
        fields_allowed(schema, self.next.format_version)?;
        identifier_fields_valid(schema)?;
        let last = self
            .next
            .last_column_id
            .max(schema.highest_field_id())
            .max(last_column_id.unwrap_or(i32::MIN));
        let existing = self
            .next
            .schemas
            .iter()
            .find(|s| {
                s.fields == schema.fields && s.identifier_field_ids == schema.identifier_field_ids
            })
            .map(|s| s.schema_id);
        let changed = existing.is_none() || last != self.next.last_column_id;
        let id = match existing {
            Some(id) => id,
            None => {
                let id = next_id(self.next.schemas.iter().map(|s| s.schema_id), 0)?;
                let mut added = schema.clone();
                added.schema_id = id;
                self.next.schemas.push(added);
                self.structure_changed = true;
                id
            }
        };
        self.next.last_column_id = last;
        self.last_added_schema = Some(id);
        Ok(changed)
    }

    /// `set-current-schema`.
    pub(super) fn set_current_schema(&mut self, schema_id: i32) -> Outcome {
        let id = resolve(schema_id, self.last_added_schema, "schema")?;
        if id == self.next.current_schema_id {
            return Ok(false);
        }
        if self.next.schema_by_id(id).is_none() {
            return refuse(format!("schema {id} is not in the table"));
        }
        self.next.current_schema_id = id;
        self.structure_changed = true;
        Ok(true)
    }

    /// `add-spec`.
    pub(super) fn add_spec(&mut self, spec: &PartitionSpec) -> Outcome {
        let existing = self
            .next
            .partition_specs
            .iter()
            .find(|s| compatible(s, spec));
        if let Some(existing) = existing {
            self.last_added_spec = Some(existing.spec_id);
            return Ok(false);
        }
        let Some(schema) = self.next.schema_by_id(self.next.current_schema_id) else {
            return refuse("the table has no current schema to bind the spec to");
        };
        spec_fields_valid(spec, self.next.format_version)?;
        spec_binds(spec, schema)?;
        let id = next_id(self.next.partition_specs.iter().map(|s| s.spec_id), 0)?;
        let highest = spec
            .highest_field_id()
            .unwrap_or(PARTITION_DATA_ID_START - 1);
        self.next.last_partition_id = self.next.last_partition_id.max(highest);
        self.next.partition_specs.push(PartitionSpec {
            spec_id: id,
            fields: spec.fields.clone(),
        });
        self.last_added_spec = Some(id);
        self.structure_changed = true;
        Ok(true)
    }

    /// `set-default-spec`.
    pub(super) fn set_default_spec(&mut self, spec_id: i32) -> Outcome {
        let id = resolve(spec_id, self.last_added_spec, "partition spec")?;
        if id == self.next.default_spec_id {
            return Ok(false);
        }
        if self.next.partition_spec_by_id(id).is_none() {
            return refuse(format!("partition spec {id} is not in the table"));
        }
        self.next.default_spec_id = id;
        self.structure_changed = true;
        Ok(true)
    }

    /// `add-sort-order`.
    pub(super) fn add_sort_order(&mut self, order: &SortOrder) -> Outcome {
        let orders = &self.next.sort_orders;
        let existing = match order.is_unsorted() {
            true => orders.iter().find(|o| o.is_unsorted()),
            false => orders.iter().find(|o| o.fields == order.fields),
        };
        if let Some(existing) = existing {
            self.last_added_order = Some(existing.order_id);
            return Ok(false);
        }
        let id = match order.is_unsorted() {
            true => 0,
            false => {
                let Some(schema) = self.next.schema_by_id(self.next.current_schema_id) else {
                    return refuse("the table has no current schema to bind the sort order to");
                };
                order_binds(order, schema)?;
                next_id(orders.iter().map(|o| o.order_id), 1)?
            }
        };
        if self.next.sort_orders.iter().any(|o| o.order_id == id) {
            return refuse(format!("sort order id {id} is taken by another order"));
        }
        self.next.sort_orders.push(SortOrder {
            order_id: id,
            fields: order.fields.clone(),
        });
        self.last_added_order = Some(id);
        self.structure_changed = true;
        Ok(true)
    }

    /// `set-default-sort-order`.
    pub(super) fn set_default_sort_order(&mut self, order_id: i32) -> Outcome {
        let id = resolve(order_id, self.last_added_order, "sort order")?;
        if id == self.next.default_sort_order_id {
            return Ok(false);
        }
        if !self.next.sort_orders.iter().any(|o| o.order_id == id) {
            return refuse(format!("sort order {id} is not in the table"));
        }
        self.next.default_sort_order_id = id;
        self.structure_changed = true;
        Ok(true)
    }

    /// `remove-partition-specs`: unknown ids are ignored, the default spec is refused.
    pub(super) fn remove_specs(&mut self, spec_ids: &[i32]) -> Outcome {
        if spec_ids.contains(&self.next.default_spec_id) {
            return refuse(format!(
                "partition spec {} is the default spec",
                self.next.default_spec_id
            ));
        }
        let before = self.next.partition_specs.len();
        self.next
            .partition_specs
            .retain(|s| !spec_ids.contains(&s.spec_id));
        Ok(self.next.partition_specs.len() != before)
    }

    /// `remove-schemas`: unknown ids are ignored, the current schema is refused.
    pub(super) fn remove_schemas(&mut self, schema_ids: &[i32]) -> Outcome {
        if schema_ids.contains(&self.next.current_schema_id) {
            return refuse(format!(
                "schema {} is the current schema",
                self.next.current_schema_id
            ));
        }
        let before = self.next.schemas.len();
        self.next
            .schemas
            .retain(|s| !schema_ids.contains(&s.schema_id));
        Ok(self.next.schemas.len() != before)
    }
}

/// `id`, or for [`LAST_ADDED`] the id the last `add-*` of `kind` in this list resolved to.
fn resolve(id: i32, last_added: Option<i32>, kind: &str) -> Result<i32, Refused> {
    match (id, last_added) {
        (LAST_ADDED, Some(added)) => Ok(added),
        (LAST_ADDED, None) => refuse(format!(
            "-1 names the {kind} added last, but no {kind} was added before this update"
        )),
        (id, _) => Ok(id),
    }
}

/// The highest of `ids` + 1, and at least `first`.
fn next_id(ids: impl Iterator<Item = i32>, first: i32) -> Result<i32, Refused> {
    match ids.max() {
        None => Ok(first),
        Some(max) => match max.checked_add(1) {
            Some(id) => Ok(id.max(first)),
            None => refuse("every id is taken"),
        },
    }
}

/// Java's `PartitionSpec.compatibleWith`: the same fields (source, transform and name) in the
/// same order; field ids aside.
fn compatible(a: &PartitionSpec, b: &PartitionSpec) -> bool {
    a.fields.len() == b.fields.len()
        && a.fields.iter().zip(&b.fields).all(|(x, y)| {
            x.source_id == y.source_id && x.transform == y.transform && x.name == y.name
        })
}

/// Partition field names are non-empty and unique, field ids unique, and in v1 1000, 1001,
/// ... in order (Java: "Spec does not use sequential IDs that are required in v1").
fn spec_fields_valid(spec: &PartitionSpec, version: FormatVersion) -> Result<(), Refused> {
    for (i, field) in spec.fields.iter().enumerate() {
        if field.name.is_empty() {
            return refuse("a partition field has an empty name");
        }
        let earlier = &spec.fields[..i];
        if earlier.iter().any(|f| f.name == field.name) {
            return refuse(format!(
                "partition field name '{}' is used twice",
                field.name
            ));
        }
        if earlier.iter().any(|f| f.field_id == field.field_id) {
            return refuse(format!(
                "partition field id {} is used twice",
                field.field_id
            ));
        }
        let sequential = i32::try_from(i)
            .ok()
            .and_then(|i| PARTITION_DATA_ID_START.checked_add(i));
        if version == FormatVersion::V1 && Some(field.field_id) != sequential {
            return refuse(format!(
                "partition field '{}' has id {}: v1 specs number their fields 1000, 1001, ... \
                 in order",
                field.name, field.field_id
            ));
        }
    }
    Ok(())
}

/// Java's `PartitionSpec.checkCompatibility`: every field but a `void` one has a primitive
/// source column in `schema` that its transform accepts.
pub(super) fn spec_binds(spec: &PartitionSpec, schema: &Schema) -> Result<(), Refused> {
    spec.fields
        .iter()
        .filter(|f| f.transform != Transform::Void)
        .try_for_each(|f| {
            binds(
                schema,
                f.source_id,
                &f.transform,
                &format!("partition field '{}'", f.name),
            )
        })
}

/// Java's `SortOrder.checkCompatibility`: every field has a primitive source column in
/// `schema` that its transform accepts.
pub(super) fn order_binds(order: &SortOrder, schema: &Schema) -> Result<(), Refused> {
    order.fields.iter().try_for_each(|f| {
        binds(
            schema,
            f.source_id,
            &f.transform,
            &format!("sort order {} field", order.order_id),
        )
    })
}

fn binds(
    schema: &Schema,
    source_id: i32,
    transform: &Transform,
    what: &str,
) -> Result<(), Refused> {
    let Some(source) = schema.field_by_id(source_id) else {
        return refuse(format!(
            "{what}: source column {source_id} is not in the schema"
        ));
    };
    match &source.field_type {
        Type::Primitive(p) if transform.can_transform(p) => Ok(()),
        Type::Primitive(p) => refuse(format!(
            "{what}: transform {transform} cannot apply to column '{}' of type {p}",
            source.name
        )),
        other => refuse(format!(
            "{what}: source column '{}' has nested type {other}",
            source.name
        )),
    }
}

/// Java's `Schema.checkCompatibility(schema, formatVersion)`: `timestamp_ns`,
/// `timestamptz_ns`, `variant`, `geometry`, `unknown`, ... and `initial-default` /
/// `write-default` need v3.
fn fields_allowed(schema: &Schema, version: FormatVersion) -> Result<(), Refused> {
    match schema.field_needing_v3() {
        Some(f) if version < FormatVersion::V3 => refuse(format!(
            "column '{}' ({}) needs format version 3, the table is v{}",
            f.name,
            f.field_type,
            version.number()
        )),
        _ => Ok(()),
    }
}

/// `identifier-field-ids` name required primitive columns of the schema (Java's
/// `Schema.validateIdentifierField`, in part).
fn identifier_fields_valid(schema: &Schema) -> Result<(), Refused> {
    for id in &schema.identifier_field_ids {
        match schema.field_by_id(*id) {
            None => return refuse(format!("identifier field {id} is not in the schema")),
            Some(f) if !f.required || f.field_type.is_nested() => {
                return refuse(format!(
                    "identifier field '{}' must be a required primitive column",
                    f.name
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "schemas_tests.rs"]
mod tests;

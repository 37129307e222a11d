//! Partition evolution (spec: "Partition Evolution"): [`UpdateSpec`], the action that adds,
//! removes and renames fields of the table's default partition spec in one metadata-only
//! commit (`add-spec` + `set-default-spec`). Files written before keep their spec; new writes
//! use the new one; scans prune each file by its own spec.
//!
//! The rules are Java's `BaseUpdatePartitionSpec` (and PyIceberg's `UpdateSpec`), applied in
//! the order the changes were given:
//!
//! - a new field takes the table's `last-partition-id` + 1, or on v2 and later the id (and
//!   name) of a field of any earlier spec with the same source and transform, so that files
//!   written under that spec keep being pruned by it; its default name is the source name
//!   with `_bucket_N`, `_trunc_W`, `_year`, `_month`, `_day`, `_hour` or `_null`;
//! - a field already in the spec, or added twice, or a second time transform of one source
//!   among the added fields, is refused; removing and re-adding the same field in one update
//!   keeps it;
//! - on v1 tables a removed field stays in the spec with the `void` transform (v1 field ids
//!   are positional); on v2 it leaves the spec;
//! - names are unique, and a name of a schema column only for an identity (or void) field of
//!   that column; a void field in the way of a new name is renamed `name_<field id>`.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;

use super::{Action, Changes, CommitContext, changed_since};
use crate::error::{Error, Result};
use crate::spec::changes::LAST_ADDED;
use crate::spec::{
    FormatVersion, PartitionField, PartitionSpec, Schema, TableMetadata, TableRequirement,
    TableUpdate, Transform,
};
use crate::table::{evolved_partition_name, resolve_source};

/// One change of an [`UpdateSpec`].
#[derive(Debug, Clone, PartialEq)]
enum SpecChange {
    Add {
        name: Option<String>,
        source: String,
        transform: Transform,
    },
    RemoveByName(String),
    RemoveByTerm {
        source: String,
        transform: Transform,
    },
    Rename {
        name: String,
        to: String,
    },
}

/// Evolves the table's default partition spec (see the module docs): build it with the
/// methods below, then add it to a transaction ([`super::Transaction::update_spec`]).
///
/// ```
/// use icefloe::spec::Transform;
/// use icefloe::transaction::UpdateSpec;
///
/// // Spark's REPLACE PARTITION FIELD ts_day WITH hours(ts) AS ts_hour:
/// let update = UpdateSpec::new()
///     .remove_field("ts_day")
///     .add_field_named("ts_hour", "ts", Transform::Hour)
///     .add_field("id", Transform::Bucket(16));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateSpec {
    changes: Vec<SpecChange>,
}

impl UpdateSpec {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no change was asked for.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Adds a field partitioning by `transform` of the column `source` (a dotted path through
    /// structs), under Java's default name.
    pub fn add_field(mut self, source: impl Into<String>, transform: Transform) -> Self {
        self.changes.push(SpecChange::Add {
            name: None,
            source: source.into(),
            transform,
        });
        self
    }

    /// Adds a field called `name` partitioning by `transform` of the column `source`.
    pub fn add_field_named(
        mut self,
        name: impl Into<String>,
        source: impl Into<String>,
        transform: Transform,
    ) -> Self {
        self.changes.push(SpecChange::Add {
            name: Some(name.into()),
            source: source.into(),
            transform,
        });
        self
    }

    /// Removes the partition field called `name`.
    pub fn remove_field(mut self, name: impl Into<String>) -> Self {
        self.changes.push(SpecChange::RemoveByName(name.into()));
        self
    }

    /// Removes the partition field that applies `transform` to the column `source`.
    pub fn remove_field_by_term(mut self, source: impl Into<String>, transform: Transform) -> Self {
        self.changes.push(SpecChange::RemoveByTerm {
            source: source.into(),
            transform,
        });
        self
    }

    /// Renames the partition field `name` to `to`.
    pub fn rename_field(mut self, name: impl Into<String>, to: impl Into<String>) -> Self {
        self.changes.push(SpecChange::Rename {
            name: name.into(),
            to: to.into(),
        });
        self
    }

    /// The spec `metadata`'s default spec becomes with every change applied. Its `spec_id` is
    /// the id of an existing spec with the same fields, else the highest + 1 (the catalog
    /// assigns it the same way).
    pub fn apply(&self, metadata: &TableMetadata) -> Result<PartitionSpec> {
        let base = metadata.default_partition_spec().ok_or_else(|| {
            Error::corrupt(
                metadata.location.clone(),
                "the default partition spec is missing",
            )
        })?;
        if let Some(f) = base
            .fields
            .iter()
            .find(|f| matches!(f.transform, Transform::Unknown(_)))
        {
            return Err(Error::Unsupported(format!(
                "partition field '{}' has the unknown transform {}: a spec with it cannot be \
                 evolved",
                f.name, f.transform
            )));
        }
        let mut work = Evolution::new(metadata, base);
        for change in &self.changes {
            work.apply(change)?;
        }
        let fields = work.fields()?;
        let spec_id = metadata
            .partition_specs
            .iter()
            .find(|s| same_fields(&s.fields, &fields))
            .map(|s| s.spec_id)
            .unwrap_or_else(|| {
                let highest = metadata.partition_specs.iter().map(|s| s.spec_id).max();
                highest.map_or(0, |h| h.saturating_add(1))
            });
        Ok(PartitionSpec { spec_id, fields })
    }
}

#[async_trait]
impl Action for UpdateSpec {
    fn validate(&self, base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        if base.default_spec_id != current.default_spec_id
            || base.last_partition_id != current.last_partition_id
        {
            let (before, after) = (base.default_spec_id, current.default_spec_id);
            return Err(changed_since(base, "partition spec", before, after));
        }
        Ok(())
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let spec = self.apply(current)?;
        if spec.spec_id == current.default_spec_id {
            return Ok(Changes::default());
        }
        Ok(Changes {
            requirements: vec![
                TableRequirement::AssertLastAssignedPartitionId {
                    last_assigned_partition_id: current.last_partition_id,
                },
                TableRequirement::AssertDefaultSpecId {
                    default_spec_id: current.default_spec_id,
                },
            ],
            updates: vec![
                TableUpdate::AddSpec { spec },
                TableUpdate::SetDefaultSpec {
                    spec_id: LAST_ADDED,
                },
            ],
        })
    }
}

/// Same fields by source, transform and name (Java's `compatibleWith`): such a spec is reused.
fn same_fields(a: &[PartitionField], b: &[PartitionField]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.source_id == y.source_id && x.transform == y.transform && x.name == y.name
        })
}

/// The spec being changed: the base spec's fields and what the changes did to them so far.
struct Evolution<'a> {
    metadata: &'a TableMetadata,
    schema: &'a Schema,
    base: &'a PartitionSpec,
    last_assigned: i32,
    adds: Vec<PartitionField>,
    /// Source ids of the time-transform fields added.
    added_time: HashMap<i32, String>,
    deletes: HashSet<i32>,
    renames: HashMap<String, String>,
}

fn field_named(what: &str) -> String {
    format!("partition field '{what}'")
}

impl<'a> Evolution<'a> {
    fn new(metadata: &'a TableMetadata, base: &'a PartitionSpec) -> Self {
        Self {
            metadata,
            schema: metadata.current_schema(),
            base,
            last_assigned: metadata.last_partition_id,
            adds: Vec::new(),
            added_time: HashMap::new(),
            deletes: HashSet::new(),
            renames: HashMap::new(),
        }
    }

    fn apply(&mut self, change: &SpecChange) -> Result<()> {
        match change {
            SpecChange::Add {
                name,
                source,
                transform,
            } => self.add(name.as_deref(), source, transform),
            SpecChange::RemoveByName(name) => {
                self.not_added(name)?;
                if self.renames.contains_key(name) {
                    return Err(Error::invalid(
                        field_named(name),
                        "cannot be renamed and removed in one change",
                    ));
                }
                let id = self.base_named(name)?.field_id;
                self.deletes.insert(id);
                Ok(())
            }
            SpecChange::RemoveByTerm { source, transform } => {
                let source_id = self.source_id(source, transform)?;
                let term = format!("{transform}({source})");
                if self.added(source_id, transform).is_some() {
                    return Err(Error::invalid(
                        format_args!("partition term {term}"),
                        "was added by this change and cannot be removed by it",
                    ));
                }
                let field = self.base_by_term(source_id, transform).ok_or_else(|| {
                    Error::not_found(format!("a partition field {term} in the default spec"))
                })?;
                if self.renames.contains_key(&field.name) {
                    return Err(Error::invalid(
                        field_named(&field.name),
                        "cannot be renamed and removed in one change",
                    ));
                }
                self.deletes.insert(field.field_id);
                Ok(())
            }
            SpecChange::Rename { name, to } => self.rename(name, to),
        }
    }

    fn add(&mut self, name: Option<&str>, source: &str, transform: &Transform) -> Result<()> {
        if let Some(name) = name
            && self.adds.iter().any(|f| f.name == name)
        {
            return Err(Error::invalid(field_named(name), "is added twice"));
        }
        let source_id = self.source_id(source, transform)?;
        let term = format!("{transform}({source})");
        if let Some(existing) = self.base_by_term(source_id, transform) {
            if !self.deletes.contains(&existing.field_id) {
                return Err(Error::invalid(
                    format_args!("partition term {term}"),
                    format_args!("is already partition field '{}'", existing.name),
                ));
            }
            // Removed and added again in one change: the field stays.
            self.deletes.remove(&existing.field_id);
            return match name {
                Some(name) if name != existing.name => self.rename(&existing.name, name),
                _ => Ok(()),
            };
        }
        if let Some(added) = self.added(source_id, transform) {
            return Err(Error::invalid(
                format_args!("partition term {term}"),
                format_args!("is already added as '{}'", added.name),
            ));
        }
        let field = self.recycle_or_create(source_id, source, transform, name);
        if is_time(transform) {
            if let Some(other) = self.added_time.get(&source_id) {
                return Err(Error::invalid(
                    field_named(&field.name),
                    format_args!("is redundant with the added time field '{other}'"),
                ));
            }
            self.added_time.insert(source_id, field.name.clone());
        }
        if let Some(existing) = self.base.fields.iter().find(|f| f.name == field.name) {
            let renamed = format!("{}_{}", existing.name, existing.field_id);
            if self.deletes.contains(&existing.field_id) {
                self.renames.insert(existing.name.clone(), renamed);
            } else if existing.transform == Transform::Void {
                self.rename(&existing.name.clone(), &renamed)?;
            } else {
                return Err(Error::invalid(
                    field_named(&field.name),
                    "already exists in the spec",
                ));
            }
        }
        self.adds.push(field);
        Ok(())
    }

    /// On v2 and later, a field of an earlier spec with the same source and transform (and
    /// name, when one is given) comes back with its id; otherwise a new id.
    fn recycle_or_create(
        &mut self,
        source_id: i32,
        source: &str,
        transform: &Transform,
        name: Option<&str>,
    ) -> PartitionField {
        if self.metadata.format_version >= FormatVersion::V2 {
            let earlier = self
                .metadata
                .partition_specs
                .iter()
                .flat_map(|s| &s.fields)
                .find(|f| {
                    f.source_id == source_id
                        && f.transform == *transform
                        && name.is_none_or(|n| n == f.name)
                });
            if let Some(field) = earlier {
                return field.clone();
            }
        }
        self.last_assigned = self.last_assigned.saturating_add(1);
        PartitionField {
            source_id,
            field_id: self.last_assigned,
            name: name.map_or_else(|| evolved_partition_name(source, transform), str::to_string),
            transform: transform.clone(),
        }
    }

    fn rename(&mut self, name: &str, to: &str) -> Result<()> {
        if let Some(void) = self
            .base
            .fields
            .iter()
            .find(|f| f.name == to && f.transform == Transform::Void)
        {
            let renamed = format!("{}_{}", void.name, void.field_id);
            self.renames.insert(void.name.clone(), renamed);
        }
        if self.adds.iter().any(|f| f.name == name) {
            return Err(Error::invalid(
                field_named(name),
                "was added by this change and cannot be renamed by it (add it with its name)",
            ));
        }
        let field = self.base_named(name)?;
        if self.deletes.contains(&field.field_id) {
            return Err(Error::invalid(
                field_named(name),
                "cannot be removed and renamed in one change",
            ));
        }
        self.renames.insert(name.to_string(), to.to_string());
        Ok(())
    }

    /// The fields of the new spec: the base's (renamed; removed ones left out, or on v1 kept
    /// as `void`), then the added ones, with their names checked.
    fn fields(&self) -> Result<Vec<PartitionField>> {
        let v1 = self.metadata.format_version == FormatVersion::V1;
        let mut fields = Vec::new();
        for field in &self.base.fields {
            let deleted = self.deletes.contains(&field.field_id);
            if deleted && !v1 {
                continue;
            }
            let mut field = field.clone();
            if let Some(to) = self.renames.get(&field.name) {
                field.name = to.clone();
            }
            if deleted {
                field.transform = Transform::Void;
            }
            fields.push(field);
        }
        fields.extend(self.adds.iter().cloned());
        let mut names = HashSet::new();
        for field in &fields {
            self.check_name(field, &mut names)?;
        }
        Ok(fields)
    }

    /// PyIceberg's `validate_partition_name`: unique, not empty, and a schema column's name
    /// only for an identity or void field of that column.
    fn check_name<'f>(
        &self,
        field: &'f PartitionField,
        names: &mut HashSet<&'f str>,
    ) -> Result<()> {
        let name = field.name.as_str();
        if name.is_empty() {
            return Err(Error::invalid("a partition field", "has an empty name"));
        }
        if !names.insert(name) {
            return Err(Error::invalid(
                field_named(name),
                "is used twice in the spec",
            ));
        }
        let Some(column) = self.schema.field_by_name(name) else {
            return Ok(());
        };
        let own_column = matches!(field.transform, Transform::Identity | Transform::Void)
            && column.id == field.source_id;
        match own_column {
            true => Ok(()),
            false => Err(Error::invalid(
                field_named(name),
                "is the name of a column: only an identity field of that column may take it",
            )),
        }
    }

    fn source_id(&self, source: &str, transform: &Transform) -> Result<i32> {
        Ok(resolve_source(self.schema, source, transform, "partition")?.id)
    }

    fn base_named(&self, name: &str) -> Result<&'a PartitionField> {
        self.base
            .fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| Error::not_found(format!("{} in the default spec", field_named(name))))
    }

    fn base_by_term(&self, source_id: i32, transform: &Transform) -> Option<&'a PartitionField> {
        self.base
            .fields
            .iter()
            .find(|f| f.source_id == source_id && f.transform == *transform)
    }

    fn added(&self, source_id: i32, transform: &Transform) -> Option<&PartitionField> {
        self.adds
            .iter()
            .find(|f| f.source_id == source_id && f.transform == *transform)
    }

    fn not_added(&self, name: &str) -> Result<()> {
        match self.adds.iter().any(|f| f.name == name) {
            true => Err(Error::invalid(
                field_named(name),
                "was added by this change and cannot be removed by it",
            )),
            false => Ok(()),
        }
    }
}

fn is_time(transform: &Transform) -> bool {
    matches!(
        transform,
        Transform::Year | Transform::Month | Transform::Day | Transform::Hour
    )
}

#[cfg(test)]
#[path = "partitioning_tests.rs"]
mod tests;

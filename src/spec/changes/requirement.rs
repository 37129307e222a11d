//! What a commit requires of the table it changes (REST `TableRequirement`, discriminator
//! `type`): checked against the catalog's current metadata just before the updates are
//! applied, so that a change computed from a stale view of the table is refused instead of
//! applied over another writer's commit.

use std::fmt;

use super::update::TableUpdate;
use crate::error::Error;
use crate::spec::{SnapshotReference, TableMetadata};

/// One requirement of a commit (REST `TableRequirement`; JSON in [`super::json`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableRequirement {
    /// `assert-create`: the table must not exist yet.
    AssertCreate,
    /// `assert-table-uuid`: the table's `table-uuid` is `uuid` (compared ignoring case, as
    /// Java does).
    AssertTableUuid {
        /// `uuid`.
        uuid: String,
    },
    /// `assert-ref-snapshot-id`: branch or tag `ref` points at `snapshot-id`; `None` (JSON
    /// `null`): the ref must not exist.
    AssertRefSnapshotId {
        /// `ref`.
        ref_name: String,
        /// `snapshot-id`.
        snapshot_id: Option<i64>,
    },
    /// `assert-last-assigned-field-id`: the table's `last-column-id`.
    AssertLastAssignedFieldId {
        /// `last-assigned-field-id`.
        last_assigned_field_id: i32,
    },
    /// `assert-current-schema-id`: the table's `current-schema-id`.
    AssertCurrentSchemaId {
        /// `current-schema-id`.
        current_schema_id: i32,
    },
    /// `assert-last-assigned-partition-id`: the table's `last-partition-id`.
    AssertLastAssignedPartitionId {
        /// `last-assigned-partition-id`.
        last_assigned_partition_id: i32,
    },
    /// `assert-default-spec-id`: the table's `default-spec-id`.
    AssertDefaultSpecId {
        /// `default-spec-id`.
        default_spec_id: i32,
    },
    /// `assert-default-sort-order-id`: the table's `default-sort-order-id`.
    AssertDefaultSortOrderId {
        /// `default-sort-order-id`.
        default_sort_order_id: i32,
    },
}

/// A requirement that the table did not meet: which one, what it expected and what the table
/// has. A catalog reports it as [`Error::CommitConflict`] ([`RequirementFailed::into_conflict`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requirement {} failed: expected {expected}, found {found}", .requirement.kind())]
pub struct RequirementFailed {
    /// The requirement.
    pub requirement: TableRequirement,
    /// What it expected, e.g. `branch or tag 'main' at snapshot 3`.
    pub expected: String,
    /// What the table has, e.g. `branch 'main' at snapshot 4`, or `no table`.
    pub found: String,
}

impl RequirementFailed {
    /// The [`Error::CommitConflict`] a catalog returns for this failure on `table`.
    pub fn into_conflict(self, table: impl Into<String>) -> Error {
        Error::CommitConflict {
            table: table.into(),
            reason: self.to_string(),
        }
    }
}

impl TableRequirement {
    /// The `type` of this requirement, as the REST OpenAPI names it (`assert-create`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::AssertCreate => "assert-create",
            Self::AssertTableUuid { .. } => "assert-table-uuid",
            Self::AssertRefSnapshotId { .. } => "assert-ref-snapshot-id",
            Self::AssertLastAssignedFieldId { .. } => "assert-last-assigned-field-id",
            Self::AssertCurrentSchemaId { .. } => "assert-current-schema-id",
            Self::AssertLastAssignedPartitionId { .. } => "assert-last-assigned-partition-id",
            Self::AssertDefaultSpecId { .. } => "assert-default-spec-id",
            Self::AssertDefaultSortOrderId { .. } => "assert-default-sort-order-id",
        }
    }

    /// Whether the table meets this requirement. `current` is the table's metadata, `None`
    /// when there is no table yet: then only `assert-create` holds, and `assert-create` fails
    /// whenever a table exists.
    pub fn check(&self, current: Option<&TableMetadata>) -> Result<(), RequirementFailed> {
        let Some(table) = current else {
            return match self {
                Self::AssertCreate => Ok(()),
                _ => Err(self.failed("no table")),
            };
        };
        let found = match self {
            Self::AssertCreate => Some("a table".to_string()),
            Self::AssertTableUuid { uuid } => match &table.table_uuid {
                Some(have) if have.eq_ignore_ascii_case(uuid) => None,
                Some(have) => Some(format!("table uuid {have}")),
                None => Some("a table without a uuid".to_string()),
            },
            Self::AssertRefSnapshotId {
                ref_name,
                snapshot_id,
            } => ref_mismatch(table.refs.get(ref_name), ref_name, *snapshot_id),
            Self::AssertLastAssignedFieldId {
                last_assigned_field_id: want,
            } => differs("last-column-id", *want, table.last_column_id),
            Self::AssertCurrentSchemaId {
                current_schema_id: want,
            } => differs("current-schema-id", *want, table.current_schema_id),
            Self::AssertLastAssignedPartitionId {
                last_assigned_partition_id: want,
            } => differs("last-partition-id", *want, table.last_partition_id),
            Self::AssertDefaultSpecId {
                default_spec_id: want,
            } => differs("default-spec-id", *want, table.default_spec_id),
            Self::AssertDefaultSortOrderId {
                default_sort_order_id: want,
            } => differs("default-sort-order-id", *want, table.default_sort_order_id),
        };
        match found {
            None => Ok(()),
            Some(found) => Err(self.failed(found)),
        }
    }

    /// Checks every requirement in order; the first that fails is the error.
    pub fn check_all(
        requirements: &[TableRequirement],
        current: Option<&TableMetadata>,
    ) -> Result<(), RequirementFailed> {
        requirements.iter().try_for_each(|r| r.check(current))
    }

    /// What this requirement expects, in words.
    fn expectation(&self) -> String {
        match self {
            Self::AssertCreate => "no table".to_string(),
            Self::AssertTableUuid { uuid } => format!("table uuid {uuid}"),
            Self::AssertRefSnapshotId {
                ref_name,
                snapshot_id: Some(id),
            } => format!("branch or tag '{ref_name}' at snapshot {id}"),
            Self::AssertRefSnapshotId {
                ref_name,
                snapshot_id: None,
            } => format!("no branch or tag '{ref_name}'"),
            Self::AssertLastAssignedFieldId {
                last_assigned_field_id: id,
            } => format!("last-column-id {id}"),
            Self::AssertCurrentSchemaId {
                current_schema_id: id,
            } => format!("current-schema-id {id}"),
            Self::AssertLastAssignedPartitionId {
                last_assigned_partition_id: id,
            } => format!("last-partition-id {id}"),
            Self::AssertDefaultSpecId {
                default_spec_id: id,
            } => format!("default-spec-id {id}"),
            Self::AssertDefaultSortOrderId {
                default_sort_order_id: id,
            } => format!("default-sort-order-id {id}"),
        }
    }

    fn failed(&self, found: impl Into<String>) -> RequirementFailed {
        RequirementFailed {
            requirement: self.clone(),
            expected: self.expectation(),
            found: found.into(),
        }
    }

    /// The requirements of a commit that applies `updates` to `base` (Java's
    /// `UpdateRequirements.forUpdateTable`): the table is still `base`'s (its uuid, when it
    /// has one), and whatever the updates build on has not moved since `base`:
    ///
    /// | update | requirement (once per commit) |
    /// |---|---|
    /// | `set-snapshot-ref` of `r` | `assert-ref-snapshot-id` `r` at its snapshot in `base` (or absent) |
    /// | `add-schema` | `assert-last-assigned-field-id` |
    /// | `set-current-schema`, `remove-schemas` | `assert-current-schema-id` |
    /// | `add-spec` | `assert-last-assigned-partition-id` |
    /// | `set-default-spec`, `remove-partition-specs` | `assert-default-spec-id` |
    /// | `set-default-sort-order` | `assert-default-sort-order-id` |
    ///
    /// `remove-schemas` and `remove-partition-specs` also require every branch but `main` to
    /// be where it is in `base` (so no writer is still writing with what they remove), as
    /// Java does. (A commit that creates a table requires only [`Self::AssertCreate`].)
    pub fn for_update(base: &TableMetadata, updates: &[TableUpdate]) -> Vec<TableRequirement> {
        let mut out = Vec::new();
        if let Some(uuid) = &base.table_uuid {
            out.push(Self::AssertTableUuid { uuid: uuid.clone() });
        }
        let mut require = |r: TableRequirement| {
            if !out.contains(&r) {
                out.push(r);
            }
        };
        for update in updates {
            match update {
                TableUpdate::SetSnapshotRef { ref_name, .. } => {
                    require(Self::AssertRefSnapshotId {
                        ref_name: ref_name.clone(),
                        snapshot_id: base.refs.get(ref_name).map(|r| r.snapshot_id),
                    })
                }
                TableUpdate::AddSchema { .. } => require(Self::AssertLastAssignedFieldId {
                    last_assigned_field_id: base.last_column_id,
                }),
                TableUpdate::SetCurrentSchema { .. } => require(Self::AssertCurrentSchemaId {
                    current_schema_id: base.current_schema_id,
                }),
                TableUpdate::AddSpec { .. } => require(Self::AssertLastAssignedPartitionId {
                    last_assigned_partition_id: base.last_partition_id,
                }),
                TableUpdate::SetDefaultSpec { .. } => require(Self::AssertDefaultSpecId {
                    default_spec_id: base.default_spec_id,
                }),
                TableUpdate::SetDefaultSortOrder { .. } => {
                    require(Self::AssertDefaultSortOrderId {
                        default_sort_order_id: base.default_sort_order_id,
                    })
                }
                TableUpdate::RemovePartitionSpecs { .. } => {
                    require(Self::AssertDefaultSpecId {
                        default_spec_id: base.default_spec_id,
                    });
                    branches_unchanged(base).for_each(&mut require);
                }
                TableUpdate::RemoveSchemas { .. } => {
                    require(Self::AssertCurrentSchemaId {
                        current_schema_id: base.current_schema_id,
                    });
                    branches_unchanged(base).for_each(&mut require);
                }
                _ => {}
            }
        }
        out
    }
}

/// `None` when `reference` (the table's ref `name`) is what `want` says, else what it is.
fn ref_mismatch(
    reference: Option<&SnapshotReference>,
    name: &str,
    want: Option<i64>,
) -> Option<String> {
    match (reference, want) {
        (None, None) => None,
        (Some(r), Some(id)) if r.snapshot_id == id => None,
        (None, Some(_)) => Some(format!("no branch or tag '{name}'")),
        (Some(r), _) => {
            let kind = if r.is_branch() { "branch" } else { "tag" };
            Some(format!("{kind} '{name}' at snapshot {}", r.snapshot_id))
        }
    }
}

/// `None` when the table's `field` is `want`, else what it is.
fn differs(field: &str, want: i32, have: i32) -> Option<String> {
    (want != have).then(|| format!("{field} {have}"))
}

/// `assert-ref-snapshot-id` of every branch of `base` but `main`, at its snapshot.
fn branches_unchanged(base: &TableMetadata) -> impl Iterator<Item = TableRequirement> + '_ {
    base.refs
        .iter()
        .filter(|(name, r)| r.is_branch() && name.as_str() != SnapshotReference::MAIN_BRANCH)
        .map(|(name, r)| TableRequirement::AssertRefSnapshotId {
            ref_name: name.clone(),
            snapshot_id: Some(r.snapshot_id),
        })
}

impl fmt::Display for TableRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind(), self.expectation())
    }
}

#[cfg(test)]
#[path = "requirement_tests.rs"]
mod tests;

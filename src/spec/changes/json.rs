//! The JSON forms of [`TableUpdate`] and [`TableRequirement`], exactly as the REST OpenAPI
//! (`open-api/rest-catalog-open-api.yaml`) lays them out: the discriminator first (`action`,
//! `type`), then the fields under their spec names. Nested objects use the metadata file's
//! forms ([`Schema::to_json`], [`PartitionSpec::to_json`], [`Snapshot::to_json`], ...).
//!
//! Reading is as lenient as Java's `MetadataUpdateParser`: an `add-spec` spec without
//! `spec-id` (read-only in the OpenAPI) reads as spec 0 (the id is assigned when the update is
//! applied), the legacy `updated` / `removed` names of `set-properties` / `remove-properties`
//! are accepted, and an `assert-ref-snapshot-id` without `snapshot-id` means `null`. Errors
//! are [`Error::Corrupt`] with an empty path, naming the update and the field; an action the
//! OpenAPI defines but icefloe does not apply (`add-encryption-key`, ...) is
//! [`Error::Unsupported`].

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value as JsonValue, json};

use super::requirement::TableRequirement;
use super::update::TableUpdate;
use crate::error::{Error, Result};
use crate::spec::metadata::json::{self as j, Object};
use crate::spec::metadata::{FormatVersion, PartitionStatisticsFile, StatisticsFile};
use crate::spec::{PartitionSpec, Schema, Snapshot, SnapshotReference, SortOrder};

impl TableUpdate {
    /// The REST JSON object (`{"action": "add-schema", "schema": {...}}`).
    pub fn to_json(&self) -> JsonValue {
        let mut o = Map::new();
        o.insert("action".into(), json!(self.action()));
        let mut put = |key: &str, value: JsonValue| {
            o.insert(key.into(), value);
        };
        match self {
            Self::AssignUuid { uuid } => put("uuid", json!(uuid)),
            Self::UpgradeFormatVersion { format_version } => {
                put("format-version", json!(format_version.number()))
            }
            Self::AddSchema {
                schema,
                last_column_id,
            } => {
                put("schema", schema.to_json());
                if let Some(id) = last_column_id {
                    put("last-column-id", json!(id));
                }
            }
            Self::SetCurrentSchema { schema_id } => put("schema-id", json!(schema_id)),
            Self::AddSpec { spec } => put("spec", spec.to_json()),
            Self::SetDefaultSpec { spec_id } => put("spec-id", json!(spec_id)),
            Self::AddSortOrder { sort_order } => put("sort-order", sort_order.to_json()),
            Self::SetDefaultSortOrder { sort_order_id } => {
                put("sort-order-id", json!(sort_order_id))
            }
            Self::AddSnapshot { snapshot } => put("snapshot", snapshot.to_json()),
            Self::SetSnapshotRef {
                ref_name,
                reference,
            } => {
                put("ref-name", json!(ref_name));
                if let JsonValue::Object(fields) = reference.to_json() {
                    fields.into_iter().for_each(|(k, v)| put(&k, v));
                }
            }
            Self::RemoveSnapshots { snapshot_ids } => put("snapshot-ids", json!(snapshot_ids)),
            Self::RemoveSnapshotRef { ref_name } => put("ref-name", json!(ref_name)),
            Self::SetLocation { location } => put("location", json!(location)),
            Self::SetProperties { updates } => put("updates", json!(updates)),
            Self::RemoveProperties { removals } => put("removals", json!(removals)),
            Self::SetStatistics { statistics } => {
                // The deprecated `snapshot-id`, still written (as Java writes it) for servers
                // that require it.
                put("snapshot-id", json!(statistics.snapshot_id));
                put("statistics", statistics.to_json());
            }
            Self::RemoveStatistics { snapshot_id }
            | Self::RemovePartitionStatistics { snapshot_id } => {
                put("snapshot-id", json!(snapshot_id))
            }
            Self::SetPartitionStatistics {
                partition_statistics,
            } => put("partition-statistics", partition_statistics.to_json()),
            Self::RemovePartitionSpecs { spec_ids } => put("spec-ids", json!(spec_ids)),
            Self::RemoveSchemas { schema_ids } => put("schema-ids", json!(schema_ids)),
        }
        JsonValue::Object(o)
    }

    /// Parses the REST JSON object (see the module docs for what is accepted).
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        let o = j::object(v, "table update")?;
        let action = j::req_str(o, "action", "table update")?;
        let what = format!("table update '{action}'");
        let what = what.as_str();
        Ok(match action {
            "assign-uuid" => Self::AssignUuid {
                uuid: j::req_str(o, "uuid", what)?.to_string(),
            },
            "upgrade-format-version" => Self::UpgradeFormatVersion {
                format_version: FormatVersion::try_from(j::req_i64(o, "format-version", what)?)?,
            },
            "add-schema" => Self::AddSchema {
                schema: Schema::from_json(required(o, "schema", what)?)
                    .map_err(|e| Error::corrupt("", format!("{what}: invalid schema: {e}")))?,
                last_column_id: j::opt_i32(o, "last-column-id", what)?,
            },
            "set-current-schema" => Self::SetCurrentSchema {
                schema_id: j::req_i32(o, "schema-id", what)?,
            },
            "add-spec" => Self::AddSpec {
                spec: spec(required(o, "spec", what)?).map_err(|e| nested(e, what))?,
            },
            "set-default-spec" => Self::SetDefaultSpec {
                spec_id: j::req_i32(o, "spec-id", what)?,
            },
            "add-sort-order" => Self::AddSortOrder {
                sort_order: SortOrder::from_json(required(o, "sort-order", what)?)
                    .map_err(|e| nested(e, what))?,
            },
            "set-default-sort-order" => Self::SetDefaultSortOrder {
                sort_order_id: j::req_i32(o, "sort-order-id", what)?,
            },
            "add-snapshot" => Self::AddSnapshot {
                snapshot: Snapshot::from_json(required(o, "snapshot", what)?)
                    .map_err(|e| nested(e, what))?,
            },
            "set-snapshot-ref" => Self::SetSnapshotRef {
                ref_name: j::req_str(o, "ref-name", what)?.to_string(),
                reference: SnapshotReference::from_json(v).map_err(|e| nested(e, what))?,
            },
            "remove-snapshots" => Self::RemoveSnapshots {
                snapshot_ids: ints(o, "snapshot-ids", what)?,
            },
            "remove-snapshot-ref" => Self::RemoveSnapshotRef {
                ref_name: j::req_str(o, "ref-name", what)?.to_string(),
            },
            "set-location" => Self::SetLocation {
                location: j::req_str(o, "location", what)?.to_string(),
            },
            "set-properties" => Self::SetProperties {
                updates: j::string_map(either(o, "updates", "updated", what)?, what)?,
            },
            "remove-properties" => Self::RemoveProperties {
                removals: strings(either(o, "removals", "removed", what)?, what)?,
            },
            "set-statistics" => Self::SetStatistics {
                statistics: StatisticsFile::from_json(required(o, "statistics", what)?)
                    .map_err(|e| nested(e, what))?,
            },
            "remove-statistics" => Self::RemoveStatistics {
                snapshot_id: j::req_i64(o, "snapshot-id", what)?,
            },
            "set-partition-statistics" => Self::SetPartitionStatistics {
                partition_statistics: PartitionStatisticsFile::from_json(required(
                    o,
                    "partition-statistics",
                    what,
                )?)
                .map_err(|e| nested(e, what))?,
            },
            "remove-partition-statistics" => Self::RemovePartitionStatistics {
                snapshot_id: j::req_i64(o, "snapshot-id", what)?,
            },
            "remove-partition-specs" => Self::RemovePartitionSpecs {
                spec_ids: ints(o, "spec-ids", what)?,
            },
            "remove-schemas" => Self::RemoveSchemas {
                schema_ids: ints(o, "schema-ids", what)?,
            },
            "add-encryption-key"
            | "remove-encryption-key"
            | "add-view-version"
            | "set-current-view-version" => {
                return Err(Error::Unsupported(format!(
                    "{what}: icefloe does not apply this update to tables"
                )));
            }
            other => {
                return Err(Error::corrupt(
                    "",
                    format!("table update: unknown action '{other}'"),
                ));
            }
        })
    }
}

impl TableRequirement {
    /// The REST JSON object (`{"type": "assert-create"}`); `assert-ref-snapshot-id` always
    /// has its `snapshot-id`, `null` when the ref must not exist.
    pub fn to_json(&self) -> JsonValue {
        let mut o = Map::new();
        o.insert("type".into(), json!(self.kind()));
        let mut put = |key: &str, value: JsonValue| {
            o.insert(key.into(), value);
        };
        match self {
            Self::AssertCreate => {}
            Self::AssertTableUuid { uuid } => put("uuid", json!(uuid)),
            Self::AssertRefSnapshotId {
                ref_name,
                snapshot_id,
            } => {
                put("ref", json!(ref_name));
                put("snapshot-id", json!(snapshot_id));
            }
            Self::AssertLastAssignedFieldId {
                last_assigned_field_id: id,
            } => put("last-assigned-field-id", json!(id)),
            Self::AssertCurrentSchemaId {
                current_schema_id: id,
            } => put("current-schema-id", json!(id)),
            Self::AssertLastAssignedPartitionId {
                last_assigned_partition_id: id,
            } => put("last-assigned-partition-id", json!(id)),
            Self::AssertDefaultSpecId {
                default_spec_id: id,
            } => put("default-spec-id", json!(id)),
            Self::AssertDefaultSortOrderId {
                default_sort_order_id: id,
            } => put("default-sort-order-id", json!(id)),
        }
        JsonValue::Object(o)
    }

    /// Parses the REST JSON object.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        let o = j::object(v, "table requirement")?;
        let kind = j::req_str(o, "type", "table requirement")?;
        let what = format!("table requirement '{kind}'");
        let what = what.as_str();
        Ok(match kind {
            "assert-create" => Self::AssertCreate,
            "assert-table-uuid" => Self::AssertTableUuid {
                uuid: j::req_str(o, "uuid", what)?.to_string(),
            },
            "assert-ref-snapshot-id" => Self::AssertRefSnapshotId {
                ref_name: j::req_str(o, "ref", what)?.to_string(),
                snapshot_id: j::opt_i64(o, "snapshot-id", what)?,
            },
            "assert-last-assigned-field-id" => Self::AssertLastAssignedFieldId {
                last_assigned_field_id: j::req_i32(o, "last-assigned-field-id", what)?,
            },
            "assert-current-schema-id" => Self::AssertCurrentSchemaId {
                current_schema_id: j::req_i32(o, "current-schema-id", what)?,
            },
            "assert-last-assigned-partition-id" => Self::AssertLastAssignedPartitionId {
                last_assigned_partition_id: j::req_i32(o, "last-assigned-partition-id", what)?,
            },
            "assert-default-spec-id" => Self::AssertDefaultSpecId {
                default_spec_id: j::req_i32(o, "default-spec-id", what)?,
            },
            "assert-default-sort-order-id" => Self::AssertDefaultSortOrderId {
                default_sort_order_id: j::req_i32(o, "default-sort-order-id", what)?,
            },
            other => {
                return Err(Error::corrupt(
                    "",
                    format!("table requirement: unknown type '{other}'"),
                ));
            }
        })
    }
}

/// A required nested object or value.
fn required<'a>(o: &'a Object, key: &str, what: &str) -> Result<&'a JsonValue> {
    o.get(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| j::missing(what, key))
}

/// `key`, or its legacy name `legacy` when only that is present.
fn either<'a>(o: &'a Object, key: &str, legacy: &str, what: &str) -> Result<&'a JsonValue> {
    required(o, key, what).or_else(|e| required(o, legacy, what).map_err(|_| e))
}

/// A partition spec whose `spec-id` may be left out (it is read-only in the OpenAPI).
fn spec(v: &JsonValue) -> Result<PartitionSpec> {
    let o = j::object(v, "partition spec")?;
    match o.get("spec-id") {
        Some(id) if !id.is_null() => PartitionSpec::from_json(v),
        _ => PartitionSpec::from_fields_json(0, required(o, "fields", "partition spec")?),
    }
}

/// A required array of integers.
fn ints<T: TryFrom<i64>>(o: &Object, key: &str, what: &str) -> Result<Vec<T>> {
    let array = required(o, key, what)?
        .as_array()
        .ok_or_else(|| Error::corrupt("", format!("{what}: field '{key}' must be an array")))?;
    array
        .iter()
        .map(|v| {
            j::exact_i64(v)
                .and_then(|i| T::try_from(i).ok())
                .ok_or_else(|| {
                    Error::corrupt(
                        "",
                        format!("{what}: field '{key}' holds {v}, not an id in range"),
                    )
                })
        })
        .collect()
}

/// An array of strings.
fn strings(v: &JsonValue, what: &str) -> Result<Vec<String>> {
    let array = v
        .as_array()
        .ok_or_else(|| Error::corrupt("", format!("{what}: expected an array, found {v}")))?;
    array
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_string)
                .ok_or_else(|| Error::corrupt("", format!("{what}: expected a string, found {s}")))
        })
        .collect()
}

/// A nested object's error, said to be inside `what`.
fn nested(e: Error, what: &str) -> Error {
    match e {
        Error::Corrupt { reason, .. } => Error::corrupt("", format!("{what}: {reason}")),
        other => other,
    }
}

macro_rules! serde_via_json {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.to_json().serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let v = JsonValue::deserialize(deserializer)?;
                Self::from_json(&v).map_err(D::Error::custom)
            }
        }
    };
}

serde_via_json!(TableUpdate);
serde_via_json!(TableRequirement);

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;

//! Changes to a table as data: the Iceberg REST commit model (REST OpenAPI
//! `CommitTableRequest`). A commit is a list of [`TableRequirement`]s, checked against the
//! table's current metadata, plus a list of [`TableUpdate`]s, applied to it in order:
//!
//! ```
//! # fn main() -> icefloe::Result<()> {
//! use std::collections::BTreeMap;
//! use icefloe::spec::types::{NestedField, PrimitiveType};
//! use icefloe::spec::{
//!     ApplyContext, PartitionSpec, Schema, SortOrder, TableMetadata, TableRequirement,
//!     TableUpdate,
//! };
//! use icefloe::spec::changes::LAST_ADDED;
//!
//! // A new table, as a create transaction describes it.
//! let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
//! let create = [
//!     TableUpdate::AssignUuid { uuid: "2cc52516-5e73-41f2-b139-545d41a4e151".into() },
//!     TableUpdate::AddSchema { schema, last_column_id: None },
//!     TableUpdate::SetCurrentSchema { schema_id: LAST_ADDED },
//!     TableUpdate::AddSpec { spec: PartitionSpec::unpartitioned() },
//!     TableUpdate::SetDefaultSpec { spec_id: LAST_ADDED },
//!     TableUpdate::AddSortOrder { sort_order: SortOrder::unsorted() },
//!     TableUpdate::SetDefaultSortOrder { sort_order_id: LAST_ADDED },
//!     TableUpdate::SetLocation { location: "s3://b/db/orders".into() },
//! ];
//! let current = TableMetadata::from_updates(&create, &ApplyContext::new(1_700_000_000_000))?;
//!
//! // A later commit: its updates, and what they require of the table.
//! let owner = BTreeMap::from([("owner".to_string(), "ops".to_string())]);
//! let updates = [TableUpdate::SetProperties { updates: owner }];
//! let requirements = TableRequirement::for_update(&current, &updates);
//! // What a catalog does with them, under its lock or compare-and-swap:
//! TableRequirement::check_all(&requirements, Some(&current))
//!     .map_err(|failed| failed.into_conflict("db.orders"))?;
//! let ctx = ApplyContext::new(1_700_000_060_000)
//!     .with_previous_file("s3://b/db/orders/metadata/v1.metadata.json");
//! let next = current.apply(&updates, &ctx)?;
//! assert_eq!(next.property("owner"), Some("ops"));
//! assert_eq!(next.metadata_log.len(), 1);
//!
//! // The JSON a REST catalog sends.
//! assert_eq!(
//!     updates[0].to_json(),
//!     serde_json::json!({"action": "set-properties", "updates": {"owner": "ops"}})
//! );
//! # Ok(())
//! # }
//! ```
//!
//! Everything here is pure: applying updates takes the time as a parameter
//! ([`ApplyContext`]) and does no IO. The JSON forms (serde `Serialize` / `Deserialize`, and
//! `to_json` / `from_json`) are the OpenAPI's, so a REST catalog sends these types as they are.
//!
//! - [`requirement`]: the requirements, [`TableRequirement::check`], and
//!   [`TableRequirement::for_update`] (the requirements a list of updates needs);
//! - [`update`]: the updates;
//! - `apply` (with `schemas` and `snapshots`): [`TableMetadata::apply`] and
//!   [`TableMetadata::from_updates`], the rules of Java's `TableMetadata.Builder`;
//! - `creation`: [`TableMetadata::creation_updates`], a whole metadata as updates.

mod apply;
mod creation;
mod json;
pub mod requirement;
mod schemas;
mod snapshots;
#[cfg(test)]
mod test_support;
pub mod update;

use serde::{Deserialize, Serialize};

pub use apply::ApplyContext;
pub use requirement::{RequirementFailed, TableRequirement};
pub use update::{LAST_ADDED, TableUpdate};

#[cfg(doc)]
use crate::spec::TableMetadata;

/// A table's name in a catalog (REST `TableIdentifier`): its namespace levels and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableIdentifier {
    /// `namespace`: the levels, outermost first.
    pub namespace: Vec<String>,
    /// `name`.
    pub name: String,
}

/// The body of a REST table commit (REST `CommitTableRequest`): the requirements the table
/// must meet and the updates to apply to it, both in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitTableRequest {
    /// `identifier`: the table (optional for a single-table commit, whose URL names it;
    /// required in a multi-table transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<TableIdentifier>,
    /// `requirements`.
    pub requirements: Vec<TableRequirement>,
    /// `updates`.
    pub updates: Vec<TableUpdate>,
}

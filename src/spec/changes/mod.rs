//! Changes to a table as data: the Iceberg REST commit model (REST OpenAPI
//! `CommitTableRequest`). A commit is a list of [`TableRequirement`]s, checked against the
//! table's current metadata, plus a list of [`TableUpdate`]s, applied to it in order:
//!
//! ```
//! # fn example(current: &icefloe::spec::TableMetadata) -> icefloe::Result<()> {
//! use std::collections::BTreeMap;
//! use icefloe::spec::{ApplyContext, TableRequirement, TableUpdate};
//!
//! let updates = vec![TableUpdate::SetProperties {
//!     updates: BTreeMap::from([("owner".to_string(), "ops".to_string())]),
//! }];
//! let requirements = TableRequirement::for_update(current, &updates);
//! // What a catalog does with them, under its commit lock or compare-and-swap:
//! TableRequirement::check_all(&requirements, Some(current))
//!     .map_err(|failed| failed.into_conflict("db.orders"))?;
//! let ctx = ApplyContext::new(1_700_000_000_000).with_previous_file("s3://b/t/metadata/v3.metadata.json");
//! let next = current.apply(&updates, &ctx)?;
//! assert_eq!(next.property("owner"), Some("ops"));
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

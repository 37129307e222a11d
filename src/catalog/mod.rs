//! Catalogs: where a table's current metadata pointer lives, and how it is swapped.
//!
//! [`Catalog`] is the one interface every catalog implements: namespaces, tables, and
//! [`Catalog::commit_table`], the commit model of the Iceberg REST protocol (requirements that
//! must hold of the current metadata, updates that turn it into the next). Implementations:
//!
//! - [`SqliteCatalog`] ([`sqlite`]): the JDBC / PyIceberg `SqlCatalog` layout; the pointer is a
//!   row, swapped by a conditional update.
//! - [`DirectoryCatalog`] ([`directory`]): tables as directories under a root (Iceberg's
//!   "Hadoop" tables); the pointer is the newest `vN.metadata.json`, claimed by
//!   create-if-absent ([`file`](mod@file) holds the one rule that finds it).
//! - [`RestCatalog`] ([`rest`], feature `rest`): the Iceberg REST protocol; the server checks
//!   the requirements and applies the updates.
//!
//! [`connect`] opens any of them from the name a user gives (a database file, a REST URI, a
//! catalog of `.pyiceberg.yaml`); [`crate::session`] exposes a catalog to DataFusion
//! (`CatalogProvider`).

mod api;
mod commit;
pub mod config;
pub mod directory;
mod ident;
mod open;
#[cfg(feature = "rest")]
pub mod rest;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod test_support;

/// Locating the current metadata of a table directory (moved to [`crate::table::locate`]).
pub use crate::table::locate as file;
pub use api::Catalog;
pub(crate) use commit::now_ms;
pub use directory::DirectoryCatalog;
pub use ident::{Namespace, TableIdent};
pub use open::connect;
#[cfg(feature = "rest")]
pub use rest::RestCatalog;
pub use sqlite::SqliteCatalog;

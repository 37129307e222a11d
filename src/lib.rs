//! # icefloe: Apache Iceberg tables in Apache DataFusion
//!
//! icefloe reads Iceberg tables (format v1, v2 and v3) written by Spark, PyIceberg, Trino,
//! DuckDB and others, and answers SQL over them through DataFusion.
//!
//! The layers mirror the table's metadata tree (see `ARCHITECTURE.md`):
//! [`spec`] (pure types: metadata, snapshots, manifest lists, manifests), [`io`] (object store
//! access and relocation), [`catalog`] (where a table's current metadata pointer lives),
//! [`scan`] (planning a snapshot's files and handing them to DataFusion's Parquet reader), and
//! [`IcebergTableProvider`], the DataFusion `TableProvider`.
//!
//! ```no_run
//! # async fn example() -> icefloe::Result<()> {
//! use datafusion::prelude::SessionContext;
//! use icefloe::{IcebergTableProvider, TableOptions};
//! use std::sync::Arc;
//!
//! let ctx = SessionContext::new();
//! let table = IcebergTableProvider::open(&ctx, "/data/warehouse/db/orders", TableOptions::default()).await?;
//! ctx.register_table("orders", Arc::new(table))?;
//! let batches = ctx.sql("SELECT count(*) FROM orders").await?.collect().await?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Cargo features
//!
//! - `cli` (default): the `icefloe` binary and its library side, `icefloe::cli` (argument
//!   parsing with clap, the rustyline shell, indicatif progress bars). Embedders that only want
//!   the library turn it off with `default-features = false`; nothing else depends on it.
//! - `fuzzing`: entry points for the fuzz targets (`icefloe::fuzzing`).
#![deny(missing_docs, unreachable_pub)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::clone_on_ref_ptr
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::clone_on_ref_ptr
    )
)]

pub mod catalog;
#[cfg(feature = "cli")]
pub mod cli;
pub mod commit;
#[cfg(feature = "distributed")]
pub mod distributed;
pub mod dml;
mod error;
pub mod expr;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod io;
pub mod maintenance;
pub mod metadata_tables;
mod provider;
pub mod scan;
pub mod session;
pub mod spec;
pub mod sql;
pub mod statistics;
mod table;
pub mod to_arrow;
pub mod transaction;
pub mod write;

pub use error::{Error, Result};
pub use io::{FileIO, Relocation};
pub use provider::IcebergTableProvider;
pub use table::{Table, TableOptions};
pub use write::TableCreation;
pub use write::WriteTarget;

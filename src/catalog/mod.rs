//! Where a table's current metadata pointer lives: a metadata file or table directory
//! ([`file`](mod@file)), or a SQLite catalog in the JDBC / PyIceberg SqlCatalog layout ([`sqlite`]),
//! plus the DataFusion `CatalogProvider` over a catalog ([`datafusion`](mod@self::datafusion)).

pub mod datafusion;
pub mod file;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod test_support;

pub use self::datafusion::{
    IcebergCatalogProvider, IcebergCatalogs, IcebergSchemaProvider, register_catalog,
    register_catalog_as_default,
};
pub use sqlite::SqliteCatalog;

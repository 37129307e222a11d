//! The Iceberg table spec as Rust types: pure and synchronous, bytes in and out, no IO and no
//! DataFusion. One module per spec section.

pub(crate) mod avro;
pub mod changes;
pub mod manifest;
pub mod manifest_list;
pub mod manifest_writer;
pub mod metadata;
pub mod partition;
pub mod partition_summary;
pub mod properties;
pub mod puffin;
pub mod retention;
pub mod schema;
pub mod selection;
pub mod snapshot;
pub mod sort;
pub mod statistics;
pub mod summary;
pub mod types;
pub mod values;
pub mod wkb;

pub use changes::{
    ApplyContext, CommitTableRequest, RequirementFailed, TableIdentifier, TableRequirement,
    TableUpdate,
};
pub use manifest::{
    DataContentType, DataFile, FileFormat, Manifest, ManifestEntry, ManifestMetadata,
    ManifestStatus,
};
pub use manifest_list::{FieldSummary, ManifestContent, ManifestFile};
pub use metadata::{FormatVersion, TableMetadata};
pub use partition::{PartitionField, PartitionSpec, Transform};
pub use schema::{NameMapping, Schema};
pub use selection::{ResolvedSnapshot, SnapshotSelector};
pub use snapshot::{
    MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotReference, SnapshotRetention, Summary,
};
pub use sort::{SortField, SortOrder};
pub use types::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};
pub use values::{Literal, ValueError};

//! The messages icefloe's plan nodes travel as: protobuf (prost), holding datafusion-proto's own
//! messages for what DataFusion already knows how to encode (schemas, statistics, file groups,
//! physical expressions, Parquet options, scalars).
//!
//! A node's bytes are a format version, then the [`Node`] message length-delimited, and nothing
//! after it: a cut or padded buffer is refused, never read as a shorter message.

use std::collections::BTreeMap;

use datafusion::error::Result as DFResult;
use datafusion_proto::protobuf;
use datafusion_proto_common::protobuf_common as common;
use prost::Message;

use super::corrupt;

/// The format written; a reader refuses others.
pub(super) const FORMAT: u8 = 2;

/// One of icefloe's plan nodes.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Node {
    #[prost(oneof = "Kind", tags = "1, 2, 3, 4, 5, 6")]
    pub(super) kind: Option<Kind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum Kind {
    #[prost(message, tag = "1")]
    RowCount(RowCount),
    #[prost(message, boxed, tag = "2")]
    Scan(Box<Scan>),
    #[prost(message, tag = "3")]
    EqualityDeletes(EqualityDeletes),
    #[prost(message, tag = "4")]
    MetadataScan(MetadataScan),
    #[prost(message, tag = "5")]
    Write(Write),
    #[prost(message, tag = "6")]
    ChangeWrite(ChangeWrite),
}

/// `IcebergRowCountExec`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct RowCount {
    #[prost(uint64, tag = "1")]
    pub(super) rows: u64,
    /// 0: the manifest list's counts; 1: planning pruned every file.
    #[prost(uint32, tag = "2")]
    pub(super) source: u32,
    #[prost(message, optional, tag = "3")]
    pub(super) planning: Option<Planning>,
    #[prost(message, optional, tag = "4")]
    pub(super) schema: Option<protobuf::Schema>,
}

/// What planning read and skipped (`PlanStats`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct Planning {
    #[prost(uint64, tag = "1")]
    pub(super) manifests_total: u64,
    #[prost(uint64, tag = "2")]
    pub(super) manifests_pruned: u64,
    #[prost(uint64, tag = "3")]
    pub(super) data_files_total: u64,
    #[prost(uint64, tag = "4")]
    pub(super) data_files_pruned_by_partition: u64,
    #[prost(uint64, tag = "5")]
    pub(super) data_files_pruned_by_metrics: u64,
    #[prost(uint64, tag = "6")]
    pub(super) data_files_scanned: u64,
    #[prost(uint64, tag = "7")]
    pub(super) delete_files_matched: u64,
    #[prost(uint64, tag = "8")]
    pub(super) bytes_scanned: u64,
    #[prost(uint64, tag = "9")]
    pub(super) planning_nanos: u64,
}

/// A Parquet scan of data files: DataFusion's `DataSourceExec` over icefloe's guarded
/// `ParquetSource`, with what icefloe attaches to it.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Scan {
    /// The URL the scan's store is registered under in the coordinator's runtime.
    #[prost(string, tag = "1")]
    pub(super) object_store_url: String,
    #[prost(message, optional, tag = "2")]
    pub(super) origin: Option<Origin>,
    #[prost(message, optional, tag = "3")]
    pub(super) file_schema: Option<protobuf::Schema>,
    #[prost(message, optional, tag = "4")]
    pub(super) partition_columns: Option<protobuf::Schema>,
    /// Columns the reader makes (`_pos`, a row number).
    #[prost(message, optional, tag = "5")]
    pub(super) virtual_columns: Option<protobuf::Schema>,
    #[prost(message, repeated, tag = "6")]
    pub(super) file_groups: Vec<protobuf::FileGroup>,
    #[prost(message, optional, tag = "7")]
    pub(super) statistics: Option<common::Statistics>,
    #[prost(message, optional, tag = "8")]
    pub(super) projection: Option<protobuf::ProjectionExprs>,
    #[prost(message, optional, tag = "9")]
    pub(super) predicate: Option<protobuf::PhysicalExprNode>,
    #[prost(uint64, optional, tag = "10")]
    pub(super) limit: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    pub(super) batch_size: Option<u64>,
    #[prost(message, optional, tag = "12")]
    pub(super) parquet_options: Option<common::TableParquetOptions>,
    #[prost(message, repeated, tag = "13")]
    pub(super) output_ordering: Vec<protobuf::PhysicalSortExprNodeCollection>,
    #[prost(message, optional, tag = "14")]
    pub(super) constraints: Option<common::Constraints>,
    #[prost(bool, tag = "15")]
    pub(super) preserve_order: bool,
    /// Per file, in file group order, what DataFusion's encoding of it leaves out.
    #[prost(message, repeated, tag = "16")]
    pub(super) extras: Vec<FileExtras>,
}

/// Where a scan's files live and how they are read (`ScanOrigin`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct Origin {
    /// The store the files' locations name (`file://`, `s3://bucket`).
    #[prost(string, tag = "1")]
    pub(super) store: String,
    #[prost(message, optional, tag = "2")]
    pub(super) io: Option<Io>,
    #[prost(message, optional, tag = "3")]
    pub(super) adapter: Option<Adapter>,
    #[prost(message, optional, tag = "4")]
    pub(super) planning: Option<Planning>,
}

/// A `FileIO`: storage properties (credentials only when the codec sends them), relocation
/// rules and read limits.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Io {
    #[prost(btree_map = "string, string", tag = "1")]
    pub(super) properties: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    pub(super) relocation: Vec<Rule>,
    #[prost(message, optional, tag = "3")]
    pub(super) limits: Option<Limits>,
}

/// A relocation rule: locations under `old` are read under `new`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Rule {
    #[prost(string, tag = "1")]
    pub(super) old: String,
    #[prost(string, tag = "2")]
    pub(super) new: String,
}

/// `ReadLimits`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Limits {
    #[prost(uint64, tag = "1")]
    pub(super) metadata_bytes: u64,
    #[prost(uint64, tag = "2")]
    pub(super) manifest_list_bytes: u64,
    #[prost(uint64, tag = "3")]
    pub(super) manifest_bytes: u64,
    #[prost(uint64, tag = "4")]
    pub(super) decoded_bytes: u64,
    #[prost(uint64, tag = "5")]
    pub(super) delete_file_bytes: u64,
}

/// The field-id adapter: the table's name mapping (JSON), the v3 `initial-default` of columns
/// files may lack, and the format version.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Adapter {
    #[prost(string, optional, tag = "1")]
    pub(super) name_mapping: Option<String>,
    #[prost(btree_map = "string, message", tag = "2")]
    pub(super) defaults: BTreeMap<String, protobuf::ScalarValue>,
    #[prost(uint32, tag = "3")]
    pub(super) format_version: u32,
}

/// What one file of a scan carries besides DataFusion's encoding of it (path, size, range,
/// partition values): its statistics as a reader needs them, the rows that survive its
/// position deletes, and its name in errors when relocation moved it. One per file, in the order
/// of the file groups.
#[derive(Clone, PartialEq, Message)]
pub(super) struct FileExtras {
    /// The rows that survive position deletes, as runs of rows, each `count << 1 | skipped`.
    #[prost(uint64, repeated, tag = "3")]
    pub(super) selection: Vec<u64>,
    #[prost(bool, tag = "4")]
    pub(super) has_selection: bool,
    /// The file's name in errors, when relocation moved it and the name cannot be derived
    /// from `named_by` (which it usually is).
    #[prost(string, optional, tag = "5")]
    pub(super) named_as: Option<String>,
    /// The file's name in errors, derived: the location the metadata writes is relocation rule
    /// `named_by`'s old prefix followed by the last `named_suffix` bytes of the file's path.
    #[prost(uint32, optional, tag = "11")]
    pub(super) named_by: Option<u32>,
    #[prost(uint32, tag = "12")]
    pub(super) named_suffix: u32,
    /// The file's statistics, kept to what a reader uses: its row count, and the columns
    /// the manifest proves constant (identity partition values, which the reader puts in place
    /// of the column) or all null. Bounds that only prune are planning's business.
    #[prost(uint64, optional, tag = "6")]
    pub(super) rows: Option<u64>,
    #[prost(bool, tag = "7")]
    pub(super) rows_exact: bool,
    #[prost(btree_map = "uint32, message", tag = "8")]
    pub(super) constants: BTreeMap<u32, protobuf::ScalarValue>,
    #[prost(uint32, repeated, tag = "9")]
    pub(super) all_null: Vec<u32>,
    #[prost(bool, tag = "10")]
    pub(super) has_statistics: bool,
}

/// `IcebergEqualityDeleteExec`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct EqualityDeletes {
    #[prost(message, optional, tag = "1")]
    pub(super) io: Option<Io>,
    #[prost(message, repeated, tag = "2")]
    pub(super) files: Vec<DeleteFile>,
    #[prost(btree_map = "int32, message", tag = "3")]
    pub(super) key_types: BTreeMap<i32, protobuf::ArrowType>,
    /// Per data file ordinal, the indexes into `files` that apply.
    #[prost(message, repeated, tag = "4")]
    pub(super) per_file: Vec<Indexes>,
    #[prost(btree_map = "int32, uint64", tag = "5")]
    pub(super) key_columns: BTreeMap<i32, u64>,
    #[prost(uint64, tag = "6")]
    pub(super) ordinal_column: u64,
    #[prost(uint64, tag = "7")]
    pub(super) output: u64,
}

/// An equality delete file: what reading it needs.
#[derive(Clone, PartialEq, Message)]
pub(super) struct DeleteFile {
    #[prost(string, tag = "1")]
    pub(super) path: String,
    #[prost(int32, repeated, tag = "2")]
    pub(super) equality_ids: Vec<i32>,
    #[prost(int32, tag = "3")]
    pub(super) partition_spec_id: i32,
    #[prost(int64, tag = "4")]
    pub(super) data_sequence_number: i64,
    #[prost(int64, tag = "5")]
    pub(super) record_count: i64,
    #[prost(int64, tag = "6")]
    pub(super) file_size_in_bytes: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Indexes {
    #[prost(uint32, repeated, tag = "1")]
    pub(super) values: Vec<u32>,
}

/// `IcebergMetadataScanExec`: the metadata file a worker loads, the relation and the state it
/// shows, and the scan's hints, projection and limit.
#[derive(Clone, PartialEq, Message)]
pub(super) struct MetadataScan {
    #[prost(message, optional, tag = "1")]
    pub(super) io: Option<Io>,
    #[prost(string, tag = "2")]
    pub(super) metadata_location: String,
    /// The relation's name (`files`, `snapshots`, ...).
    #[prost(string, tag = "3")]
    pub(super) relation: String,
    #[prost(oneof = "Selector", tags = "4, 5, 6")]
    pub(super) selector: Option<Selector>,
    /// The filters handed to the relation (hints: DataFusion applies them above the scan).
    #[prost(message, repeated, tag = "7")]
    pub(super) filters: Vec<protobuf::LogicalExprNode>,
    #[prost(uint32, repeated, tag = "8")]
    pub(super) projection: Vec<u32>,
    #[prost(bool, tag = "9")]
    pub(super) projected: bool,
    #[prost(uint64, optional, tag = "10")]
    pub(super) limit: Option<u64>,
    /// The projected schema.
    #[prost(message, optional, tag = "11")]
    pub(super) schema: Option<protobuf::Schema>,
}

/// A snapshot selection other than the current snapshot.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum Selector {
    #[prost(int64, tag = "4")]
    SnapshotId(i64),
    #[prost(string, tag = "5")]
    Ref(String),
    #[prost(int64, tag = "6")]
    AsOfTimestampMs(i64),
}

/// A table provider of a logical plan (`IcebergTableProvider`, `IcebergMetadataTable`): the
/// metadata file the receiver loads, and what it reads of it.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Provider {
    #[prost(message, optional, tag = "1")]
    pub(super) io: Option<Io>,
    #[prost(string, tag = "2")]
    pub(super) metadata_location: String,
    #[prost(oneof = "Selector", tags = "4, 5, 6")]
    pub(super) selector: Option<Selector>,
    /// A metadata relation's name; none for the table's rows.
    #[prost(string, optional, tag = "7")]
    pub(super) relation: Option<String>,
    /// An incremental read: the snapshot the range starts after (up to `selector`).
    #[prost(int64, optional, tag = "8")]
    pub(super) incremental_from: Option<i64>,
}

/// `IcebergWriteExec`: what writing data files of a table needs (the metadata file the worker
/// loads, the columns, the files' sort order, the statement errors name), never the commit.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Write {
    #[prost(message, optional, tag = "1")]
    pub(super) io: Option<Io>,
    #[prost(string, tag = "2")]
    pub(super) metadata_location: String,
    /// The columns written: the Iceberg schema's JSON.
    #[prost(string, tag = "3")]
    pub(super) schema: String,
    #[prost(int32, optional, tag = "4")]
    pub(super) sort_order_id: Option<i32>,
    #[prost(string, tag = "5")]
    pub(super) statement: String,
    /// What the names of the statement's files start with.
    #[prost(string, tag = "6")]
    pub(super) token: String,
}

/// A data file written by an `IcebergWriteExec`, as its manifest entry will hold it.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct DataFile {
    #[prost(int32, tag = "1")]
    pub(crate) spec_id: i32,
    #[prost(int32, tag = "2")]
    pub(crate) content: i32,
    #[prost(string, tag = "3")]
    pub(crate) file_path: String,
    #[prost(string, tag = "4")]
    pub(crate) file_format: String,
    /// Each partition value in its binary single-value form; `partition_null[i]` marks nulls.
    #[prost(bytes = "vec", repeated, tag = "5")]
    pub(crate) partition: Vec<Vec<u8>>,
    #[prost(bool, repeated, tag = "6")]
    pub(crate) partition_null: Vec<bool>,
    #[prost(int64, tag = "7")]
    pub(crate) record_count: i64,
    #[prost(int64, tag = "8")]
    pub(crate) file_size_in_bytes: i64,
    #[prost(btree_map = "int32, int64", tag = "9")]
    pub(crate) column_sizes: BTreeMap<i32, i64>,
    #[prost(btree_map = "int32, int64", tag = "10")]
    pub(crate) value_counts: BTreeMap<i32, i64>,
    #[prost(btree_map = "int32, int64", tag = "11")]
    pub(crate) null_value_counts: BTreeMap<i32, i64>,
    #[prost(btree_map = "int32, int64", tag = "12")]
    pub(crate) nan_value_counts: BTreeMap<i32, i64>,
    #[prost(btree_map = "int32, bytes", tag = "13")]
    pub(crate) lower_bounds: BTreeMap<i32, Vec<u8>>,
    #[prost(btree_map = "int32, bytes", tag = "14")]
    pub(crate) upper_bounds: BTreeMap<i32, Vec<u8>>,
    #[prost(bool, tag = "15")]
    pub(crate) has_bounds: bool,
    #[prost(int64, repeated, tag = "16")]
    pub(crate) split_offsets: Vec<i64>,
    #[prost(bool, tag = "17")]
    pub(crate) has_split_offsets: bool,
    #[prost(int32, optional, tag = "18")]
    pub(crate) sort_order_id: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "19")]
    pub(crate) key_metadata: Option<Vec<u8>>,
    /// Delete files: the one data file they apply to, when it is one.
    #[prost(string, optional, tag = "20")]
    pub(crate) referenced_data_file: Option<String>,
    /// Deletion vectors: where the blob is in its Puffin file.
    #[prost(int64, optional, tag = "21")]
    pub(crate) content_offset: Option<i64>,
    #[prost(int64, optional, tag = "22")]
    pub(crate) content_size_in_bytes: Option<i64>,
    /// What each partition value is (see `write::literal_kind`), so that it is read back as
    /// it was written, whatever schema the receiver would type it by.
    #[prost(uint32, repeated, tag = "23")]
    pub(crate) partition_kinds: Vec<u32>,
    #[prost(int32, repeated, tag = "24")]
    pub(crate) equality_ids: Vec<i32>,
    #[prost(bool, tag = "25")]
    pub(crate) has_equality_ids: bool,
    #[prost(int64, optional, tag = "26")]
    pub(crate) first_row_id: Option<i64>,
}

/// A data file the statement's scan planned, with its deletes (indexes into the
/// [`ChangeWrite`]'s `deletes`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct ScanTask {
    #[prost(message, optional, tag = "1")]
    pub(super) data_file: Option<DataFile>,
    #[prost(int64, tag = "2")]
    pub(super) data_sequence_number: i64,
    #[prost(uint32, repeated, tag = "3")]
    pub(super) deletes: Vec<u32>,
}

/// A delete file that applies to planned data files (its spec id is its `DataFile`'s).
#[derive(Clone, PartialEq, Message)]
pub(super) struct DeleteTask {
    #[prost(message, optional, tag = "1")]
    pub(super) file: Option<DataFile>,
    #[prost(int64, tag = "2")]
    pub(super) data_sequence_number: i64,
}

/// `IcebergChangeWriteExec`: what writing the files of a row-level statement needs (the
/// metadata file the worker loads, the statement, the snapshot its rows were read from),
/// never the commit.
#[derive(Clone, PartialEq, Message)]
pub(super) struct ChangeWrite {
    #[prost(message, optional, tag = "1")]
    pub(super) io: Option<Io>,
    #[prost(string, tag = "2")]
    pub(super) metadata_location: String,
    /// `icefloe::dml::RowChangeKind`: 1 DELETE, 2 UPDATE, 3 MERGE.
    #[prost(uint32, tag = "3")]
    pub(super) kind: u32,
    /// The schema the rows were read with: the Iceberg schema's JSON.
    #[prost(string, tag = "4")]
    pub(super) schema: String,
    #[prost(int64, optional, tag = "5")]
    pub(super) base_snapshot: Option<i64>,
    #[prost(string, tag = "6")]
    pub(super) statement: String,
    /// What the names of the statement's files start with.
    #[prost(string, tag = "7")]
    pub(super) token: String,
    /// The tasks the statement's scan planned, when known (the writers need not plan).
    #[prost(bool, tag = "8")]
    pub(super) has_scanned: bool,
    #[prost(message, repeated, tag = "9")]
    pub(super) scanned: Vec<ScanTask>,
    /// Their delete files, each once.
    #[prost(message, repeated, tag = "10")]
    pub(super) deletes: Vec<DeleteTask>,
}

/// What one writer of a row-level statement wrote (one row of `IcebergChangeWriteExec`).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ChangeReport {
    #[prost(message, repeated, tag = "1")]
    pub(crate) data_files: Vec<DataFile>,
    #[prost(message, repeated, tag = "2")]
    pub(crate) delete_files: Vec<DataFile>,
    /// The data files the files stand for (see `icefloe::dml::Written::handled`).
    #[prost(string, repeated, tag = "3")]
    pub(crate) handled: Vec<String>,
    #[prost(uint64, tag = "4")]
    pub(crate) rows: u64,
    #[prost(uint64, tag = "5")]
    pub(crate) updated: u64,
    #[prost(uint64, tag = "6")]
    pub(crate) inserted: u64,
}

/// A node's bytes: the format version and the message.
pub(super) fn to_bytes<M: Message>(node: &M, buf: &mut Vec<u8>) {
    buf.push(FORMAT);
    buf.extend(node.encode_length_delimited_to_vec());
}

/// The node in `bytes`, refusing another format, a cut message and bytes after it.
pub(super) fn from_bytes<M: Message + Default>(bytes: &[u8]) -> DFResult<M> {
    let (&format, mut rest) = bytes
        .split_first()
        .ok_or_else(|| corrupt("empty: no format version"))?;
    if format != FORMAT {
        return Err(corrupt(format!(
            "format version {format} (this icefloe reads {FORMAT})"
        )));
    }
    let length = prost::decode_length_delimiter(&mut rest)
        .map_err(|e| corrupt(format!("the message length: {e}")))?;
    if rest.len() != length {
        return Err(corrupt(match rest.len() < length {
            true => format!(
                "truncated: the message has {length} bytes, {} are left",
                rest.len()
            ),
            false => format!("{} bytes left over after the message", rest.len() - length),
        }));
    }
    M::decode(rest).map_err(|e| corrupt(format!("the message: {e}")))
}

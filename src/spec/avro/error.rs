//! What can be wrong with Avro bytes, as a value: the decoders of this module return it, and
//! the container reader turns it into an [`Error::Corrupt`] naming the block or record (the
//! IO layer then adds the file, see [`Error::in_file`]).

use crate::error::Error;

/// Why Avro bytes (a header, a block, a datum, a writer schema) cannot be read.
///
/// The decoders on the hot path return it rather than an [`Error`]: it is small and needs no
/// allocation for the common cases (a truncated value, a bad varint).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AvroError {
    /// The file does not start with `Obj\x01`.
    #[error("not an Avro object container file (bad magic)")]
    BadMagic,
    /// The header has no `avro.schema` entry.
    #[error("no avro.schema")]
    NoSchema,
    /// The writer schema is not one Avro accepts.
    #[error("invalid avro.schema: {0}")]
    InvalidSchema(#[source] apache_avro::Error),
    /// Named types nest deeper than the decoder allows.
    #[error("the Avro schema nests too deeply")]
    TooDeep,
    /// A named type refers to itself.
    #[error("the Avro type {0} is recursive")]
    Recursive(String),
    /// A reference to a named type that is not defined.
    #[error("the Avro schema names an unknown type {0}")]
    UnknownType(String),
    /// The header names a codec that cannot be undone.
    #[error("unsupported codec '{0}'")]
    UnsupportedCodec(String),
    /// A block's sync marker is not the header's.
    #[error("sync marker does not match the header's")]
    SyncMismatch,
    /// A block claims more records than the memory bound leaves room for.
    #[error(
        "{count} records of {record_size} bytes each do not fit in the {budget} bytes left \
         for this file (ReadLimits::decoded_bytes)"
    )]
    TooManyRecords {
        /// The block's record count.
        count: u64,
        /// The memory one decoded record takes.
        record_size: u64,
        /// What was left of the bound.
        budget: u64,
    },
    /// A block inflates past the memory bound.
    #[error(
        "the block inflates past the {limit} bytes left for this file \
         (ReadLimits::decoded_bytes)"
    )]
    InflatesPast {
        /// What was left of the bound.
        limit: u64,
    },
    /// A deflate or zstandard block is broken.
    #[error("invalid {codec} block: {source}")]
    Decompress {
        /// `deflate` or `zstandard`.
        codec: &'static str,
        /// The decompressor's error.
        #[source]
        source: std::io::Error,
    },
    /// A snappy block is broken.
    #[error("invalid snappy block: {0}")]
    Snappy(#[source] snap::Error),
    /// A snappy block too short to hold its CRC-32.
    #[error("a snappy block of {0} bytes has no checksum")]
    SnappyWithoutChecksum(usize),
    /// A snappy block whose CRC-32 does not match its inflated bytes.
    #[error("snappy checksum {actual:08x} does not match {expected:08x}")]
    SnappyChecksum {
        /// The checksum of the inflated bytes.
        actual: u32,
        /// The checksum the block records.
        expected: u32,
    },
    /// Fewer bytes are left than a value needs.
    #[error("truncated: {needed} bytes expected, {left} left")]
    Truncated {
        /// The bytes the value needs.
        needed: usize,
        /// The bytes left.
        left: usize,
    },
    /// The input ends inside a variable-length integer.
    #[error("truncated (in a variable-length integer)")]
    TruncatedVarint,
    /// A variable-length integer with more than 10 bytes.
    #[error("a variable-length integer is longer than 10 bytes")]
    VarintTooLong,
    /// An `int` outside 32 bits.
    #[error("int value {0} is out of range")]
    IntOutOfRange(i64),
    /// A negative length or count.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// A boolean byte other than 0 or 1.
    #[error("invalid boolean byte {0}")]
    InvalidBoolean(u8),
    /// Text that is not UTF-8: `what` says which (`a string`, `a map key`, ...).
    #[error("{0} is not valid UTF-8")]
    NotUtf8(&'static str),
    /// An enum symbol index outside the enum.
    #[error("enum index {0} is out of range")]
    EnumIndex(i64),
    /// A union branch index outside the union.
    #[error("union branch {0} is out of range")]
    UnionBranch(i64),
    /// An array or map of more zero-width items (nulls) than the decoder allows.
    #[error("an array of {0} empty items")]
    TooManyEmptyItems(u64),
    /// An array or map block claiming more items than the bytes left could hold.
    #[error("truncated: a block of {count} items with {left} bytes left")]
    ItemsPastEnd {
        /// The block's item count.
        count: u64,
        /// The bytes left.
        left: usize,
    },
}

impl AvroError {
    /// An [`Error::Corrupt`] without a path: `context` (`invalid Avro header`, `Avro block
    /// after record 3`), then what is wrong; this error is kept as its source.
    pub(crate) fn corrupt(self, context: impl std::fmt::Display) -> Error {
        Error::corrupt_with("", format!("{context}: {self}"), self)
    }
}

//! [`ReadLimits`]: how much of a metadata file icefloe reads into memory.

use crate::error::{Error, Result};

/// Bounds on the metadata files icefloe reads whole into memory, so that a huge, sparse or
/// endless file (a manifest replaced by `/dev/zero`, a zip bomb in an Avro block, a block of
/// millions of empty records) is a typed [`Error::Corrupt`] naming it, not an out-of-memory
/// kill. The defaults are far above what
/// real tables write (Java rolls manifests at 8 MiB, and a metadata file with 2,000 snapshots
/// is about 1 MiB); raise them with the `with_*` methods for tables that need more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The largest metadata JSON file, plain or after gunzip: [`DEFAULT_METADATA_BYTES`].
    pub metadata_bytes: u64,
    /// The largest manifest list file: [`DEFAULT_AVRO_FILE_BYTES`].
    pub manifest_list_bytes: u64,
    /// The largest manifest file: [`DEFAULT_AVRO_FILE_BYTES`]. A manifest must also be the
    /// `manifest_length` its manifest-list entry records, or hold the entries it counts.
    pub manifest_bytes: u64,
    /// How much memory decoding one manifest list or manifest may take: its blocks as they
    /// inflate, plus its decoded entries counted at their inline size. [`DEFAULT_DECODED_BYTES`].
    pub decoded_bytes: u64,
    /// The largest position or equality delete file, read whole:
    /// [`DEFAULT_DELETE_FILE_BYTES`].
    pub delete_file_bytes: u64,
}

/// The default bound on a metadata JSON file: 128 MiB.
pub const DEFAULT_METADATA_BYTES: u64 = 128 << 20;

/// The default bound on a manifest list or manifest file: 256 MiB.
pub const DEFAULT_AVRO_FILE_BYTES: u64 = 256 << 20;

/// The default bound on the memory decoding one Avro file takes: 1 GiB.
pub const DEFAULT_DECODED_BYTES: u64 = 1 << 30;

/// The default bound on a delete file read whole: 1 GiB.
pub const DEFAULT_DELETE_FILE_BYTES: u64 = 1 << 30;

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            metadata_bytes: DEFAULT_METADATA_BYTES,
            manifest_list_bytes: DEFAULT_AVRO_FILE_BYTES,
            manifest_bytes: DEFAULT_AVRO_FILE_BYTES,
            decoded_bytes: DEFAULT_DECODED_BYTES,
            delete_file_bytes: DEFAULT_DELETE_FILE_BYTES,
        }
    }
}

impl ReadLimits {
    /// With another bound on metadata JSON files.
    pub fn with_metadata_bytes(mut self, bytes: u64) -> Self {
        self.metadata_bytes = bytes;
        self
    }

    /// With another bound on manifest list files.
    pub fn with_manifest_list_bytes(mut self, bytes: u64) -> Self {
        self.manifest_list_bytes = bytes;
        self
    }

    /// With another bound on manifest files.
    pub fn with_manifest_bytes(mut self, bytes: u64) -> Self {
        self.manifest_bytes = bytes;
        self
    }

    /// With another bound on delete files.
    pub fn with_delete_file_bytes(mut self, bytes: u64) -> Self {
        self.delete_file_bytes = bytes;
        self
    }

    /// With another bound on the memory decoding an Avro file takes.
    pub fn with_decoded_bytes(mut self, bytes: u64) -> Self {
        self.decoded_bytes = bytes;
        self
    }
}

/// The error for an object of `size` bytes when at most `max_bytes` may be read.
pub(super) fn check_size(location: &str, size: u64, max_bytes: u64) -> Result<()> {
    if size <= max_bytes {
        return Ok(());
    }
    Err(Error::corrupt(
        location,
        format!(
            "is {size} bytes, more than the {max_bytes} icefloe reads of such a file \
             (a larger bound can be set with FileIO::with_read_limits)"
        ),
    ))
}

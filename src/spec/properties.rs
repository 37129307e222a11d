//! Table properties (spec: "Table Properties"): every key icefloe reads, with its type and its
//! default, parsed in one place. The keys and defaults are Iceberg Java's
//! (`org.apache.iceberg.TableProperties`, cited per key); the table lists them.
//!
//! | key | type | default |
//! |---|---|---|
//! | `commit.retry.num-retries` | integer >= 0 | 4 |
//! | `commit.retry.min-wait-ms` | milliseconds | 100 |
//! | `commit.retry.max-wait-ms` | milliseconds | 60000 |
//! | `commit.manifest.target-size-bytes` | bytes | 8 MiB |
//! | `write.metadata.previous-versions-max` | integer | 100 |
//! | `write.metadata.delete-after-commit.enabled` | boolean | false |
//! | `write.target-file-size-bytes` | bytes | 512 MiB |
//! | `write.parquet.compression-codec` | [`ParquetCodec`] | zstd |
//! | `write.parquet.compression-level` | integer | none (the codec's own) |
//! | `write.parquet.row-group-size-bytes` | bytes | 128 MiB |
//! | `write.parquet.page-size-bytes` | bytes | 1 MiB |
//! | `write.metadata.metrics.default` | [`MetricsMode`] | `truncate(16)` |
//! | `gc.enabled` | boolean | true |
//! | `history.expire.max-snapshot-age-ms` | integer > 0 | 5 days |
//! | `history.expire.min-snapshots-to-keep` | integer > 0 | 1 |
//! | `history.expire.max-ref-age-ms` | integer > 0 | none (refs never age out) |
//! | `schema.name-mapping.default` | [`NameMapping`] JSON | none |
//! | `format-version` (creating a table only) | integer | 2 |
//! | `write.delete.mode`, `write.update.mode`, `write.merge.mode` | [`RowLevelMode`] | `copy-on-write` |
//! | `write.delete.isolation-level`, `write.update.isolation-level`, `write.merge.isolation-level` | `serializable` or `snapshot` | `serializable` |
//!
//! A property is read where it is used, never up front, so a scan does not fail because of a
//! bad commit or write property it does not read. An unset key is its default; a value that
//! is not of the key's type is an [`Error::InvalidArgument`] naming the key, the value and
//! (when read from table metadata) the table, never a silent fallback to the default. Values
//! are read with surrounding whitespace trimmed. Java parses numbers as strictly
//! (`PropertyUtil.propertyAsInt` throws); its booleans read anything but `true` as `false`,
//! where icefloe refuses a value that is neither `true` nor `false` (any case).
//!
//! ```
//! # fn example() -> icefloe::Result<()> {
//! use std::collections::BTreeMap;
//! use icefloe::spec::properties::{COMMIT_NUM_RETRIES, GC_ENABLED};
//!
//! let mut properties = BTreeMap::new();
//! assert_eq!(COMMIT_NUM_RETRIES.get(&properties)?, 4);
//! properties.insert("commit.retry.num-retries".to_string(), "banana".to_string());
//! let err = COMMIT_NUM_RETRIES.get(&properties).unwrap_err().to_string();
//! assert!(err.contains("commit.retry.num-retries") && err.contains("banana"));
//! assert!(GC_ENABLED.get(&properties)?, "a bad key does not spoil the others");
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::metadata::TableMetadata;
use super::schema::NameMapping;
use crate::error::{Error, Result};

/// Where properties are looked up: table metadata, or the loose map of a table being created.
pub trait PropertySource {
    /// The value set for `key`, if any.
    fn property(&self, key: &str) -> Option<&str>;

    /// The table the properties belong to (its location), named in errors.
    fn table(&self) -> Option<&str> {
        None
    }
}

impl PropertySource for TableMetadata {
    fn property(&self, key: &str) -> Option<&str> {
        TableMetadata::property(self, key)
    }

    fn table(&self) -> Option<&str> {
        Some(&self.location)
    }
}

impl<P: PropertySource + ?Sized> PropertySource for Arc<P> {
    fn property(&self, key: &str) -> Option<&str> {
        (**self).property(key)
    }

    fn table(&self) -> Option<&str> {
        (**self).table()
    }
}

impl PropertySource for BTreeMap<String, String> {
    fn property(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl PropertySource for HashMap<String, String> {
    fn property(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// One table property: its key, its default and how its value parses.
#[derive(Debug, Clone)]
pub struct Property<T> {
    key: &'static str,
    default: T,
    /// What a value must be, for errors: `'banana' is not {expected}`.
    expected: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<T: Clone> Property<T> {
    /// The key, as the table's `properties` spell it.
    pub const fn key(&self) -> &'static str {
        self.key
    }

    /// The value of an unset key (Java's default).
    pub fn default_value(&self) -> T {
        self.default.clone()
    }

    /// The value `properties` set, or the default when unset. A value that does not parse is
    /// an [`Error::InvalidArgument`] naming the key, the value and the table.
    pub fn get(&self, properties: &impl PropertySource) -> Result<T> {
        Ok(self
            .explicit(properties)?
            .unwrap_or_else(|| self.default_value()))
    }

    /// The value `properties` set (`None` when unset), parsed as [`Self::get`] does.
    pub fn explicit(&self, properties: &impl PropertySource) -> Result<Option<T>> {
        properties
            .property(self.key)
            .map(|text| {
                (self.parse)(text.trim())
                    .ok_or_else(|| self.error(properties, format_args!("is not {}", self.expected)))
            })
            .transpose()
    }

    /// An [`Error::InvalidArgument`] about the value `properties` set for this key (which
    /// parsed, but cannot be used: a compression level the codec does not have), naming the
    /// key, the value and the table: `table property KEY of TABLE: 'VALUE' REASON`.
    pub fn error(&self, properties: &impl PropertySource, reason: impl Display) -> Error {
        let what = match properties.table() {
            Some(table) => format!("table property {} of {table}", self.key),
            None => format!("table property {}", self.key),
        };
        let value = properties.property(self.key).unwrap_or_default();
        Error::invalid(what, format!("'{}' {reason}", shortened(value)))
    }
}

/// A value as errors quote it: at most 100 characters.
fn shortened(value: &str) -> String {
    const MAX: usize = 100;
    match value.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &value[..cut]),
        None => value.to_string(),
    }
}

/// Java's `COMMIT_NUM_RETRIES`: how many times a commit that lost its race is retried.
pub const COMMIT_NUM_RETRIES: Property<u32> = Property {
    key: "commit.retry.num-retries",
    default: 4,
    expected: NON_NEGATIVE,
    parse: integer::<u32>,
};

/// Java's `COMMIT_MIN_RETRY_WAIT_MS`: the first wait before a retry.
pub const COMMIT_MIN_RETRY_WAIT: Property<Duration> = Property {
    key: "commit.retry.min-wait-ms",
    default: Duration::from_millis(100),
    expected: MILLIS,
    parse: millis,
};

/// Java's `COMMIT_MAX_RETRY_WAIT_MS`: the longest wait before a retry (1 minute).
pub const COMMIT_MAX_RETRY_WAIT: Property<Duration> = Property {
    key: "commit.retry.max-wait-ms",
    default: Duration::from_millis(60_000),
    expected: MILLIS,
    parse: millis,
};

/// Java's `MANIFEST_TARGET_SIZE_BYTES`: the size rewritten (merged) manifests aim at (8 MiB).
pub const MANIFEST_TARGET_SIZE_BYTES: Property<u64> = Property {
    key: "commit.manifest.target-size-bytes",
    default: 8 * 1024 * 1024,
    expected: BYTES,
    parse: integer::<u64>,
};

/// Java's `METADATA_PREVIOUS_VERSIONS_MAX`: how many previous metadata files the metadata log
/// keeps (at least 1 is kept, as Java's `Math.max(1, ...)` does).
pub const METADATA_PREVIOUS_VERSIONS_MAX: Property<i32> = Property {
    key: "write.metadata.previous-versions-max",
    default: 100,
    expected: INTEGER,
    parse: integer::<i32>,
};

/// Java's `METADATA_DELETE_AFTER_COMMIT_ENABLED`: whether a commit deletes the metadata files
/// it drops from the metadata log.
pub const METADATA_DELETE_AFTER_COMMIT: Property<bool> = Property {
    key: "write.metadata.delete-after-commit.enabled",
    default: false,
    expected: BOOLEAN,
    parse: boolean,
};

/// Java's `WRITE_TARGET_FILE_SIZE_BYTES`: the size at which a data file is rolled (512 MiB).
pub const WRITE_TARGET_FILE_SIZE_BYTES: Property<u64> = Property {
    key: "write.target-file-size-bytes",
    default: 512 * 1024 * 1024,
    expected: BYTES,
    parse: integer::<u64>,
};

/// How a row-level change writes (Java's `RowLevelOperationMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowLevelMode {
    /// Data files with changed rows are rewritten without them.
    CopyOnWrite,
    /// Changed rows are marked deleted by delete files (v2: position deletes; v3: deletion
    /// vectors); data files stay.
    MergeOnRead,
}

impl RowLevelMode {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "copy-on-write" => Some(Self::CopyOnWrite),
            "merge-on-read" => Some(Self::MergeOnRead),
            _ => None,
        }
    }

    /// The property value (`copy-on-write`, `merge-on-read`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::CopyOnWrite => "copy-on-write",
            Self::MergeOnRead => "merge-on-read",
        }
    }
}

const MODE: &str = "'copy-on-write' or 'merge-on-read'";

fn distribution_mode(text: &str) -> Option<&'static str> {
    match text.to_ascii_lowercase().as_str() {
        "none" => Some("none"),
        "hash" => Some("hash"),
        "range" => Some("range"),
        _ => None,
    }
}

/// Java's `WRITE_DISTRIBUTION_MODE`: how a distributed engine spreads the rows of a write over
/// its tasks before each writes its files (`none`, `hash` by partition, `range` by the sort
/// order; Spark's `ALTER TABLE ... WRITE` sets it). icefloe writes from one process, where
/// every mode gives the same files: rows clustered by partition and sorted by the sort order.
pub const WRITE_DISTRIBUTION_MODE: Property<&'static str> = Property {
    key: "write.distribution-mode",
    default: "none",
    expected: "'none', 'hash' or 'range'",
    parse: distribution_mode,
};

/// Java's `DELETE_MODE`: how DELETE writes.
pub const DELETE_MODE: Property<RowLevelMode> = Property {
    key: "write.delete.mode",
    default: RowLevelMode::CopyOnWrite,
    expected: MODE,
    parse: RowLevelMode::parse,
};

/// Java's `UPDATE_MODE`: how UPDATE writes.
pub const UPDATE_MODE: Property<RowLevelMode> = Property {
    key: "write.update.mode",
    default: RowLevelMode::CopyOnWrite,
    expected: MODE,
    parse: RowLevelMode::parse,
};

/// Java's `MERGE_MODE`: how MERGE writes.
pub const MERGE_MODE: Property<RowLevelMode> = Property {
    key: "write.merge.mode",
    default: RowLevelMode::CopyOnWrite,
    expected: MODE,
    parse: RowLevelMode::parse,
};

const ISOLATION: &str = "'serializable' or 'snapshot'";

fn isolation(text: &str) -> Option<&'static str> {
    match text.to_ascii_lowercase().as_str() {
        "serializable" => Some("serializable"),
        "snapshot" => Some("snapshot"),
        _ => None,
    }
}

/// Java's `DELETE_ISOLATION_LEVEL`: which concurrent commits a DELETE tolerates.
pub const DELETE_ISOLATION_LEVEL: Property<&'static str> = Property {
    key: "write.delete.isolation-level",
    default: "serializable",
    expected: ISOLATION,
    parse: isolation,
};

/// Java's `UPDATE_ISOLATION_LEVEL`.
pub const UPDATE_ISOLATION_LEVEL: Property<&'static str> = Property {
    key: "write.update.isolation-level",
    default: "serializable",
    expected: ISOLATION,
    parse: isolation,
};

/// Java's `MERGE_ISOLATION_LEVEL`.
pub const MERGE_ISOLATION_LEVEL: Property<&'static str> = Property {
    key: "write.merge.isolation-level",
    default: "serializable",
    expected: ISOLATION,
    parse: isolation,
};

/// Java's `PARQUET_COMPRESSION`: the codec of data files (`zstd`, Java's default for new
/// tables since 1.4.0, `PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0`).
pub const PARQUET_COMPRESSION: Property<ParquetCodec> = Property {
    key: "write.parquet.compression-codec",
    default: ParquetCodec::Zstd,
    expected: "a Parquet codec: zstd, gzip, brotli, snappy, lz4 or uncompressed",
    parse: ParquetCodec::parse,
};

/// Java's `PARQUET_COMPRESSION_LEVEL`: the codec's level (default `null`: the codec's own).
pub const PARQUET_COMPRESSION_LEVEL: Property<Option<i32>> = Property {
    key: "write.parquet.compression-level",
    default: None,
    expected: INTEGER,
    parse: some_integer::<i32>,
};

/// Java's `PARQUET_ROW_GROUP_SIZE_BYTES`: the target row group size (128 MiB).
pub const PARQUET_ROW_GROUP_SIZE_BYTES: Property<u64> = Property {
    key: "write.parquet.row-group-size-bytes",
    default: 128 * 1024 * 1024,
    expected: BYTES,
    parse: integer::<u64>,
};

/// Java's `PARQUET_PAGE_SIZE_BYTES`: the target page size (1 MiB).
pub const PARQUET_PAGE_SIZE_BYTES: Property<u64> = Property {
    key: "write.parquet.page-size-bytes",
    default: 1024 * 1024,
    expected: BYTES,
    parse: integer::<u64>,
};

/// Java's `DEFAULT_WRITE_METRICS_MODE`: which column metrics data files record
/// (`truncate(16)`, `DEFAULT_WRITE_METRICS_MODE_DEFAULT`).
pub const DEFAULT_WRITE_METRICS_MODE: Property<MetricsMode> = Property {
    key: "write.metadata.metrics.default",
    default: MetricsMode::Truncate(16),
    expected: "a metrics mode: none, counts, truncate(N) with N > 0, or full",
    parse: MetricsMode::parse,
};

/// Java's `GC_ENABLED`: whether destructive operations (expiration, purge, orphan removal,
/// metadata files a commit drops) may delete the table's files; `false` when they may be
/// shared with other tables.
pub const GC_ENABLED: Property<bool> = Property {
    key: "gc.enabled",
    default: true,
    expected: BOOLEAN,
    parse: boolean,
};

/// Java's `MAX_SNAPSHOT_AGE_MS`: the default age (ms) beyond which a branch's ancestors may
/// expire (5 days).
pub const MAX_SNAPSHOT_AGE_MS: Property<i64> = Property {
    key: "history.expire.max-snapshot-age-ms",
    default: 5 * 24 * 60 * 60 * 1000,
    expected: POSITIVE,
    parse: positive::<i64>,
};

/// Java's `MIN_SNAPSHOTS_TO_KEEP`: the default count of a branch's snapshots always kept.
pub const MIN_SNAPSHOTS_TO_KEEP: Property<i32> = Property {
    key: "history.expire.min-snapshots-to-keep",
    default: 1,
    expected: POSITIVE,
    parse: positive::<i32>,
};

/// Java's `MAX_REF_AGE_MS`: the default age (ms) beyond which a ref other than `main` is
/// removed. Java's default is `Long.MAX_VALUE`; here `None`, never.
pub const MAX_REF_AGE_MS: Property<Option<i64>> = Property {
    key: "history.expire.max-ref-age-ms",
    default: None,
    expected: POSITIVE,
    parse: some_positive::<i64>,
};

/// Java's `DEFAULT_NAME_MAPPING`: how to find the field ids of files written without them
/// (spec: "Column Projection").
pub const DEFAULT_NAME_MAPPING: Property<Option<NameMapping>> = Property {
    key: "schema.name-mapping.default",
    default: None,
    expected: "a name mapping (a JSON list of {\"field-id\", \"names\", \"fields\"} objects)",
    parse: name_mapping,
};

/// Java's `FORMAT_VERSION`: the format version a table is created with; a reserved property,
/// read at creation and not stored (Java's `TableMetadata.DEFAULT_TABLE_FORMAT_VERSION`, 2).
/// Whether the number is a supported version is the creation's to say.
pub const FORMAT_VERSION: Property<i64> = Property {
    key: "format-version",
    default: 2,
    expected: INTEGER,
    parse: integer::<i64>,
};

const INTEGER: &str = "an integer";
const NON_NEGATIVE: &str = "a non-negative integer";
const POSITIVE: &str = "a positive integer";
const BYTES: &str = "a number of bytes (a non-negative integer)";
const MILLIS: &str = "a number of milliseconds (a non-negative integer)";
const BOOLEAN: &str = "true or false";

fn integer<T: FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}

fn some_integer<T: FromStr>(text: &str) -> Option<Option<T>> {
    integer(text).map(Some)
}

fn positive<T: FromStr + PartialOrd + Default>(text: &str) -> Option<T> {
    integer(text).filter(|n| *n > T::default())
}

fn some_positive<T: FromStr + PartialOrd + Default>(text: &str) -> Option<Option<T>> {
    positive(text).map(Some)
}

fn millis(text: &str) -> Option<Duration> {
    integer(text).map(Duration::from_millis)
}

fn boolean(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

fn name_mapping(text: &str) -> Option<Option<NameMapping>> {
    NameMapping::parse(text).ok().map(Some)
}

/// A Parquet compression codec (`write.parquet.compression-codec`, any case; Java's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParquetCodec {
    /// `zstd`.
    Zstd,
    /// `gzip`.
    Gzip,
    /// `brotli`.
    Brotli,
    /// `snappy`.
    Snappy,
    /// `lz4` (written as Parquet's `LZ4_RAW`).
    Lz4,
    /// `uncompressed` (also `none`).
    Uncompressed,
}

impl ParquetCodec {
    fn parse(text: &str) -> Option<Self> {
        Some(match text.to_ascii_lowercase().as_str() {
            "zstd" => Self::Zstd,
            "gzip" => Self::Gzip,
            "brotli" => Self::Brotli,
            "snappy" => Self::Snappy,
            "lz4" => Self::Lz4,
            "uncompressed" | "none" => Self::Uncompressed,
            _ => return None,
        })
    }
}

/// A column metrics mode (`write.metadata.metrics.default`; Java's `MetricsModes.fromString`:
/// any case, a truncation length above 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsMode {
    /// `none`: no metrics.
    None,
    /// `counts`: value, null and NaN counts, no bounds.
    Counts,
    /// `truncate(N)`: counts and bounds cut to N characters (strings) or bytes (binary).
    Truncate(usize),
    /// `full`: counts and whole bounds.
    Full,
}

impl MetricsMode {
    fn parse(text: &str) -> Option<Self> {
        let mode = text.to_ascii_lowercase();
        match mode.as_str() {
            "none" => Some(Self::None),
            "counts" => Some(Self::Counts),
            "full" => Some(Self::Full),
            _ => mode
                .strip_prefix("truncate(")
                .and_then(|rest| rest.strip_suffix(')'))
                .and_then(|n| positive::<usize>(n.trim()))
                .map(Self::Truncate),
        }
    }
}

#[cfg(test)]
#[path = "properties_tests.rs"]
mod tests;

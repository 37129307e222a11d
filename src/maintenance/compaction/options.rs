//! The options of a compaction ([`RewriteDataFiles`]), by Java's names, from Rust or as
//! `key=value` strings (SQL and the CLI).

use super::execute::{Cancel, Order};
use super::plan::Limits;
use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::maintenance::Progress;
use crate::spec::TableMetadata;
use crate::spec::properties::WRITE_TARGET_FILE_SIZE_BYTES;
use crate::transaction::ReplaceSortOrder;

/// How a group's rows are laid out in the files written.
#[derive(Debug, Clone, Default)]
pub enum Strategy {
    /// `binpack`: the rows as they are read (each output file sorted by the table's sort
    /// order when it has one).
    #[default]
    BinPack,
    /// `sort`: the rows of a group in one order: the table's sort order (`None`), or the one
    /// given.
    Sort(Option<ReplaceSortOrder>),
}

/// A compaction's options ([`super::rewrite_data_files`]): Java's defaults until set.
///
/// ```
/// use icefloe::maintenance::{RewriteDataFiles, Strategy};
///
/// # fn main() -> icefloe::Result<()> {
/// let options = RewriteDataFiles::new()
///     .with_strategy(Strategy::Sort(None))
///     .with_option("min-input-files", "2")?
///     .with_option("partial-progress.enabled", "true")?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RewriteDataFiles {
    pub(super) strategy: Strategy,
    pub(super) filter: Option<Predicate>,
    target: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    min_input_files: usize,
    delete_file_threshold: usize,
    delete_ratio_threshold: f64,
    max_group_bytes: u64,
    rewrite_all: bool,
    pub(super) partial_progress: bool,
    pub(super) max_commits: usize,
    pub(super) max_concurrent_groups: usize,
    pub(super) use_starting_sequence_number: bool,
    pub(super) remove_dangling_deletes: bool,
    pub(super) progress: Progress,
    pub(super) file_progress: Progress,
    pub(super) cancel: Cancel,
}

impl Default for RewriteDataFiles {
    fn default() -> Self {
        let limits = Limits::around(WRITE_TARGET_FILE_SIZE_BYTES.default_value());
        Self {
            strategy: Strategy::BinPack,
            filter: None,
            target: None,
            min: None,
            max: None,
            min_input_files: limits.min_input_files,
            delete_file_threshold: limits.delete_file_threshold,
            delete_ratio_threshold: limits.delete_ratio_threshold,
            max_group_bytes: limits.max_group_bytes,
            rewrite_all: false,
            partial_progress: false,
            max_commits: 10,
            max_concurrent_groups: 5,
            use_starting_sequence_number: true,
            remove_dangling_deletes: false,
            progress: Progress::default(),
            file_progress: Progress::default(),
            cancel: Cancel::default(),
        }
    }
}

impl RewriteDataFiles {
    /// Java's defaults: `binpack`, the table's target size, every file.
    pub fn new() -> Self {
        Self::default()
    }

    /// The strategy (`binpack` by default).
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Only files that may hold rows matching `filter` (Java's `filter` / Spark's `where`;
    /// whole files are rewritten).
    pub fn with_filter(mut self, filter: Predicate) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Reports `(bytes rewritten, bytes to rewrite)` as rows are written.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// Reports `(data files rewritten, data files to rewrite)` once planned and as each
    /// group's rewrite finishes (before its commit; a failed group counts as finished too).
    pub fn with_file_progress(mut self, progress: Progress) -> Self {
        self.file_progress = progress;
        self
    }

    /// Stops (deleting what was written, committing nothing more) when `cancel` is set.
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets one option by Java's name: `target-file-size-bytes`, `min-file-size-bytes`,
    /// `max-file-size-bytes`, `min-input-files`, `delete-file-threshold`,
    /// `delete-ratio-threshold`, `max-file-group-size-bytes`, `rewrite-all`,
    /// `partial-progress.enabled`, `partial-progress.max-commits`,
    /// `max-concurrent-file-group-rewrites`, `use-starting-sequence-number`,
    /// `remove-dangling-deletes`. An unknown name or a bad value is
    /// [`Error::InvalidArgument`].
    pub fn with_option(mut self, key: &str, value: &str) -> Result<Self> {
        let value = value.trim();
        let bad = |expected: &str| {
            Error::invalid(
                format_args!("rewrite option {key} = '{value}'"),
                format_args!("expected {expected}"),
            )
        };
        let bytes = || value.parse::<u64>().map_err(|_| bad("a number of bytes"));
        let count = || value.parse::<usize>().map_err(|_| bad("a whole number"));
        let flag = || match value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(bad("true or false")),
        };
        match key.trim() {
            "target-file-size-bytes" => self.target = Some(bytes()?.max(1)),
            "min-file-size-bytes" => self.min = Some(bytes()?),
            "max-file-size-bytes" => self.max = Some(bytes()?),
            "min-input-files" => self.min_input_files = count()?.max(1),
            "delete-file-threshold" => self.delete_file_threshold = count()?.max(1),
            "delete-ratio-threshold" => {
                self.delete_ratio_threshold = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| bad("a ratio from 0 to 1"))?;
            }
            "max-file-group-size-bytes" => self.max_group_bytes = bytes()?.max(1),
            "rewrite-all" => self.rewrite_all = flag()?,
            "partial-progress.enabled" => self.partial_progress = flag()?,
            "partial-progress.max-commits" => self.max_commits = count()?.max(1),
            "max-concurrent-file-group-rewrites" => self.max_concurrent_groups = count()?.max(1),
            "use-starting-sequence-number" => self.use_starting_sequence_number = flag()?,
            "remove-dangling-deletes" => self.remove_dangling_deletes = flag()?,
            other => {
                return Err(Error::invalid(
                    format_args!("rewrite option '{other}'"),
                    "is not an option of rewrite_data_files",
                ));
            }
        }
        Ok(self)
    }

    /// The limits on the table `metadata` describes: the target size from the option, else
    /// the table's `write.target-file-size-bytes`; min and max around it unless set.
    pub(super) fn limits(&self, metadata: &TableMetadata) -> Result<Limits> {
        let target = match self.target {
            Some(target) => target,
            None => WRITE_TARGET_FILE_SIZE_BYTES.get(metadata)?,
        };
        let mut limits = Limits::around(target);
        limits.min = self.min.unwrap_or(limits.min);
        limits.max = self.max.unwrap_or(limits.max);
        if limits.min > limits.target || limits.max < limits.target {
            return Err(Error::invalid(
                "rewrite options min-file-size-bytes / max-file-size-bytes",
                format_args!(
                    "must hold the target size {target} between them (min {}, max {})",
                    limits.min, limits.max
                ),
            ));
        }
        limits.min_input_files = self.min_input_files;
        limits.delete_file_threshold = self.delete_file_threshold;
        limits.delete_ratio_threshold = self.delete_ratio_threshold;
        limits.max_group_bytes = self.max_group_bytes;
        limits.rewrite_all = self.rewrite_all;
        Ok(limits)
    }

    /// The order the strategy writes rows in on the table `metadata` describes; `sort` on a
    /// table without a sort order and without one given is [`Error::InvalidArgument`].
    pub(super) fn order(&self, metadata: &TableMetadata) -> Result<Order> {
        let table_order = metadata
            .default_sort_order()
            .filter(|o| !o.is_unsorted())
            .cloned();
        match &self.strategy {
            Strategy::BinPack => Ok(Order::AsRead(table_order)),
            Strategy::Sort(Some(order)) => {
                let order = order.apply(metadata)?;
                match order.is_unsorted() {
                    true => Err(Error::invalid("the sort strategy's order", "has no field")),
                    false => Ok(Order::Sorted(order)),
                }
            }
            Strategy::Sort(None) => table_order.map(Order::Sorted).ok_or_else(|| {
                Error::invalid(
                    format_args!("the sort strategy on {}", metadata.location),
                    "the table has no sort order: give one (sort-order), or ALTER TABLE ... \
                     WRITE ORDERED BY first",
                )
            }),
        }
    }
}

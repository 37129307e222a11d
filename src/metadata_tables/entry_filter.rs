//! Pushed-down filters the file-level relations apply before and while reading manifests:
//! equality and `IN` lists on `content`, `status`, `snapshot_id`, `file_path` and the
//! partition struct's fields (ANDed; see [`super::partition_filter`]).
//! A manifest whose `content` or per-status file counts rule out every wanted entry is not
//! read; entries that fail are dropped as they are decoded. Anything else is left to
//! DataFusion, which re-applies every filter; [`EntryFilter::is_exact`] says whether all of
//! them were understood here (so a `LIMIT` may stop reading early).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use super::partition_filter::PartitionFilter;
use super::partition_struct::UnifiedPartition;
use crate::spec::{ManifestContent, ManifestEntry, ManifestFile, ManifestStatus};

/// A column a filter can be pushed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterColumn {
    /// `content` (of the data file).
    Content,
    /// `status` (of the entry).
    Status,
    /// `snapshot_id` (of the entry).
    SnapshotId,
    /// `file_path` (of the data file).
    FilePath,
}

impl FilterColumn {
    fn name(self) -> &'static str {
        match self {
            Self::Content => "content",
            Self::Status => "status",
            Self::SnapshotId => "snapshot_id",
            Self::FilePath => "file_path",
        }
    }
}

/// The allowed values per column (`None`: any).
#[derive(Debug, Clone, Default)]
pub(crate) struct EntryFilter {
    content: Option<Vec<i64>>,
    status: Option<Vec<i64>>,
    snapshot_id: Option<Vec<i64>>,
    file_path: Option<Vec<String>>,
    partition: Option<(UnifiedPartition, PartitionFilter)>,
    exact: bool,
}

impl EntryFilter {
    /// The filter of `filters` over the relation's pushable `columns` (top-level names) and,
    /// given the relation's partition struct and its path, that struct's fields.
    pub(crate) fn new(
        filters: &[Expr],
        columns: &[FilterColumn],
        partition: Option<(&UnifiedPartition, &[&str])>,
    ) -> Self {
        let mut filter = Self {
            exact: true,
            ..Self::default()
        };
        for expr in filters {
            if !filter.add(expr, columns, partition) {
                filter.exact = false;
            }
        }
        filter
    }

    /// Whether every filter was understood and is applied exactly here.
    pub(crate) fn is_exact(&self) -> bool {
        self.exact
    }

    /// Adds one conjunct; false when (part of) it is not understood.
    fn add(
        &mut self,
        expr: &Expr,
        columns: &[FilterColumn],
        partition: Option<(&UnifiedPartition, &[&str])>,
    ) -> bool {
        if let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) = expr
        {
            let left = self.add(left, columns, partition);
            return self.add(right, columns, partition) && left;
        }
        if let Some((unified, prefix)) = partition {
            let (_, filter) = self
                .partition
                .get_or_insert_with(|| (unified.clone(), PartitionFilter::default()));
            if filter.add(expr, prefix, unified) {
                return true;
            }
        }
        let Some((name, values)) = equality(expr) else {
            return false;
        };
        let Some(column) = columns.iter().find(|c| c.name() == name) else {
            return false;
        };
        match column {
            FilterColumn::FilePath => {
                let strings = values.iter().map(string).collect::<Option<Vec<_>>>();
                strings.is_some_and(|s| intersect(&mut self.file_path, s))
            }
            other => {
                let ints = values.iter().map(int).collect::<Option<Vec<_>>>();
                let slot = match other {
                    FilterColumn::Content => &mut self.content,
                    FilterColumn::Status => &mut self.status,
                    _ => &mut self.snapshot_id,
                };
                ints.is_some_and(|i| intersect(slot, i))
            }
        }
    }

    /// Whether a manifest may hold a wanted entry (by its content and per-status counts).
    pub(crate) fn may_contain(&self, manifest: &ManifestFile) -> bool {
        let content_ok = self.content.as_ref().is_none_or(|allowed| {
            allowed.iter().any(|c| match manifest.content {
                ManifestContent::Data => *c == 0,
                ManifestContent::Deletes => *c == 1 || *c == 2,
            })
        });
        let counts = [
            (0, manifest.existing_files_count),
            (1, manifest.added_files_count),
            (2, manifest.deleted_files_count),
        ];
        let status_ok = self.status.as_ref().is_none_or(|allowed| {
            counts
                .iter()
                .any(|(status, count)| allowed.contains(status) && count.is_none_or(|n| n > 0))
        });
        let partition_ok = self
            .partition
            .as_ref()
            .is_none_or(|(unified, filter)| filter.may_contain(manifest, unified));
        content_ok && status_ok && partition_ok
    }

    /// Whether an entry (of a manifest of `spec_id`) passes.
    pub(crate) fn keeps(&self, spec_id: i32, entry: &ManifestEntry) -> bool {
        let file = &entry.data_file;
        let status = match entry.status {
            ManifestStatus::Existing => 0,
            ManifestStatus::Added => 1,
            ManifestStatus::Deleted => 2,
        };
        allows(&self.content, file.content as i64)
            && allows(&self.status, status)
            && entry
                .snapshot_id
                .is_none_or(|id| allows(&self.snapshot_id, id))
            && self
                .file_path
                .as_ref()
                .is_none_or(|paths| paths.contains(&file.file_path))
            && self
                .partition
                .as_ref()
                .is_none_or(|(unified, filter)| filter.keeps(spec_id, entry, unified))
    }
}

fn allows(allowed: &Option<Vec<i64>>, value: i64) -> bool {
    allowed.as_ref().is_none_or(|a| a.contains(&value))
}

/// Narrows a column's allowed values to those also in `values`; always understood.
fn intersect<T: PartialEq>(slot: &mut Option<Vec<T>>, values: Vec<T>) -> bool {
    *slot = Some(match slot.take() {
        None => values,
        Some(old) => old.into_iter().filter(|v| values.contains(v)).collect(),
    });
    true
}

/// `column = literal`, `literal = column` or `column IN (literals)`: the column name and values.
fn equality(expr: &Expr) -> Option<(&str, Vec<&ScalarValue>)> {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => match (
            column_name(left),
            literal(right),
            column_name(right),
            literal(left),
        ) {
            (Some(name), Some(value), ..) | (.., Some(name), Some(value)) => {
                Some((name, vec![value]))
            }
            _ => None,
        },
        Expr::InList(list) if !list.negated => {
            let values = list.list.iter().map(literal).collect::<Option<Vec<_>>>()?;
            Some((column_name(&list.expr)?, values))
        }
        _ => None,
    }
}

fn column_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Column(c) => Some(c.name.as_str()),
        // Widening or to-string casts keep equality meaning the same as on the column.
        Expr::Cast(c)
            if matches!(
                c.field.data_type(),
                DataType::Int64 | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            ) =>
        {
            column_name(&c.expr)
        }
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(value, _) if !value.is_null() => Some(value),
        _ => None,
    }
}

fn int(value: &&ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::UInt8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok(),
        _ => None,
    }
}

fn string(value: &&ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Some(s.clone()),
        _ => None,
    }
}

//! Snapshot summaries: the `added-*` / `deleted-*` / `removed-*` counts of a snapshot's file
//! changes and the `total-*` counts carried over from the parent snapshot's summary, with
//! Java's property names (`SnapshotSummary`).

use std::collections::{BTreeMap, HashSet};

use crate::spec::DataFile;
use crate::spec::manifest::{DataContentType, FileFormat};
use crate::spec::snapshot::{Operation, Summary};

/// The totals a summary carries from snapshot to snapshot: each total, the count that adds to
/// it and the count that takes from it.
const TOTALS: [(&str, &str, &str); 6] = [
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-data-files", "added-data-files", "deleted-data-files"),
    (
        "total-delete-files",
        "added-delete-files",
        "removed-delete-files",
    ),
    (
        "total-position-deletes",
        "added-position-deletes",
        "removed-position-deletes",
    ),
    (
        "total-equality-deletes",
        "added-equality-deletes",
        "removed-equality-deletes",
    ),
];

/// Counts of the files a snapshot adds and removes, turned into its summary by
/// [`SummaryBuilder::build`]. As Java, a count that is zero is left out (but for totals).
#[derive(Debug, Default, Clone)]
pub struct SummaryBuilder {
    counts: BTreeMap<&'static str, i64>,
    partitions: HashSet<String>,
}

impl SummaryBuilder {
    /// A file (of partition spec `spec_id`) the snapshot adds.
    pub fn added(&mut self, spec_id: i32, file: &DataFile) {
        self.count(spec_id, file, true);
    }

    /// A file (of partition spec `spec_id`) the snapshot removes.
    pub fn removed(&mut self, spec_id: i32, file: &DataFile) {
        self.count(spec_id, file, false);
    }

    fn count(&mut self, spec_id: i32, file: &DataFile, added: bool) {
        let pick = |a: &'static str, r: &'static str| if added { a } else { r };
        let mut add = |key: &'static str, n: i64| *self.counts.entry(key).or_default() += n;
        add(
            pick("added-files-size", "removed-files-size"),
            file.file_size_in_bytes,
        );
        match file.content {
            DataContentType::Data => {
                add(pick("added-data-files", "deleted-data-files"), 1);
                add(pick("added-records", "deleted-records"), file.record_count);
            }
            DataContentType::PositionDeletes => {
                add(pick("added-delete-files", "removed-delete-files"), 1);
                match file.file_format == FileFormat::Puffin {
                    true => add(pick("added-dvs", "removed-dvs"), 1),
                    false => add(
                        pick(
                            "added-position-delete-files",
                            "removed-position-delete-files",
                        ),
                        1,
                    ),
                }
                add(
                    pick("added-position-deletes", "removed-position-deletes"),
                    file.record_count,
                );
            }
            DataContentType::EqualityDeletes => {
                add(pick("added-delete-files", "removed-delete-files"), 1);
                add(
                    pick(
                        "added-equality-delete-files",
                        "removed-equality-delete-files",
                    ),
                    1,
                );
                add(
                    pick("added-equality-deletes", "removed-equality-deletes"),
                    file.record_count,
                );
            }
        }
        self.partitions
            .insert(format!("{spec_id}/{:?}", file.partition));
    }

    /// The summary of `operation` on top of a snapshot whose summary is `parent` (`None`: the
    /// first snapshot). A parent summary without a total (some writers omit them) makes that
    /// total absent too, rather than wrong.
    pub fn build(self, operation: Operation, parent: Option<&Summary>) -> Summary {
        let mut properties: BTreeMap<String, String> = self
            .counts
            .iter()
            .filter(|(_, n)| **n != 0)
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .collect();
        if !self.partitions.is_empty() {
            properties.insert(
                "changed-partition-count".into(),
                self.partitions.len().to_string(),
            );
        }
        let count = |key: &str| self.counts.get(key).copied().unwrap_or(0);
        for (total, plus, minus) in TOTALS {
            let before = match parent {
                None => Some(0),
                Some(p) => p.get(total).and_then(|v| v.parse::<i64>().ok()),
            };
            if let Some(before) = before {
                let after = (before + count(plus) - count(minus)).max(0);
                properties.insert(total.to_string(), after.to_string());
            }
        }
        Summary::new(operation, properties)
    }
}

/// The summary of an append of `added` (data files, each with its partition spec id) on top of
/// a snapshot whose summary is `parent` (`None`: the first snapshot): [`SummaryBuilder`], with
/// the four `added-*` counts of an append written even when zero.
pub fn append_summary(parent: Option<&Summary>, added: &[(i32, &DataFile)]) -> Summary {
    let mut builder = SummaryBuilder::default();
    for (spec_id, file) in added {
        builder.added(*spec_id, file);
    }
    let mut summary = builder.build(Operation::Append, parent);
    let properties = summary.properties_mut();
    for key in [
        "added-data-files",
        "added-records",
        "added-files-size",
        "changed-partition-count",
    ] {
        properties
            .entry(key.to_string())
            .or_insert_with(|| "0".into());
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{FileFormat, Literal};

    fn file(records: i64, size: i64, day: i32) -> DataFile {
        DataFile {
            partition: vec![Some(Literal::Date(day))],
            ..DataFile::new(
                DataContentType::Data,
                "f.parquet",
                FileFormat::Parquet,
                records,
                size,
            )
        }
    }

    #[test]
    fn first_append_counts_files_records_sizes_and_partitions() {
        let (a, b, c) = (file(10, 100, 1), file(5, 50, 1), file(1, 10, 2));
        let s = append_summary(None, &[(0, &a), (0, &b), (0, &c)]);
        let get = |k: &str| s.get(k);
        assert_eq!(s.operation, Operation::Append);
        assert_eq!(get("added-data-files"), Some("3"));
        assert_eq!(get("added-records"), Some("16"));
        assert_eq!(get("added-files-size"), Some("160"));
        assert_eq!(get("changed-partition-count"), Some("2"));
        assert_eq!(get("total-records"), Some("16"));
        assert_eq!(get("total-data-files"), Some("3"));
        assert_eq!(get("total-delete-files"), Some("0"));
        assert_eq!(get("total-equality-deletes"), Some("0"));
    }

    #[test]
    fn totals_carry_over_and_vanish_when_the_parent_lacks_them() {
        let a = file(10, 100, 1);
        let first = append_summary(None, &[(0, &a)]);
        let second = append_summary(Some(&first), &[(0, &a)]);
        assert_eq!(second.get("total-records"), Some("20"));
        assert_eq!(second.get("total-files-size"), Some("200"));
        assert_eq!(second.get("total-delete-files"), Some("0"));
        let bare = Summary::new(Operation::Append, BTreeMap::new());
        let third = append_summary(Some(&bare), &[(0, &a)]);
        assert_eq!(third.get("total-records"), None);
        assert_eq!(third.get("added-records"), Some("10"));
    }
}

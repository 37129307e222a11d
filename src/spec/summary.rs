//! Snapshot summaries of appends: the `added-*` counts of the new files and the `total-*`
//! counts carried over from the parent snapshot's summary, with Java's property names.

use std::collections::{BTreeMap, HashSet};

use crate::spec::DataFile;
use crate::spec::manifest::DataContentType;
use crate::spec::snapshot::{Operation, Summary};

/// The totals a summary carries from snapshot to snapshot.
const TOTALS: [(&str, &str); 6] = [
    ("total-records", "added-records"),
    ("total-files-size", "added-files-size"),
    ("total-data-files", "added-data-files"),
    ("total-delete-files", "added-delete-files"),
    ("total-position-deletes", "added-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes"),
];

/// The summary of an append of `added` (data files, each with its partition spec id) on top of
/// a snapshot whose summary is `parent` (`None`: the first snapshot). A parent summary without
/// totals (some writers omit them) makes the new totals absent too, rather than wrong.
pub fn append_summary(parent: Option<&Summary>, added: &[(i32, &DataFile)]) -> Summary {
    let mut properties = BTreeMap::new();
    let data: Vec<&DataFile> = added
        .iter()
        .map(|(_, f)| *f)
        .filter(|f| f.content == DataContentType::Data)
        .collect();
    let records: i64 = data.iter().map(|f| f.record_count).sum();
    let size: i64 = data.iter().map(|f| f.file_size_in_bytes).sum();
    let partitions: HashSet<String> = added
        .iter()
        .map(|(spec, f)| format!("{spec}/{:?}", f.partition))
        .collect();
    let added_counts = [
        ("added-data-files", data.len() as i64),
        ("added-records", records),
        ("added-files-size", size),
        ("changed-partition-count", partitions.len() as i64),
    ];
    for (key, value) in added_counts {
        properties.insert(key.to_string(), value.to_string());
    }
    for (total, added_key) in TOTALS {
        let before = match parent {
            None => Some(0),
            Some(p) => p.get(total).and_then(|v| v.parse::<i64>().ok()),
        };
        let added_value = properties
            .get(added_key)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        if let Some(before) = before {
            properties.insert(total.to_string(), (before + added_value).to_string());
        }
    }
    Summary::new(Operation::Append, properties)
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

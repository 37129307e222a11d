//! The applicability rules, one by one, and a property test of the index against a naive
//! reading of the spec over generated tables.

use std::sync::Arc;

use super::*;
use crate::io::Relocation;
use crate::spec::DataFile;

/// Spec 0 unpartitioned, spec 1 identity(region).
fn metadata() -> TableMetadata {
    let json = r#"{
  "format-version": 2,
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "/wh/t",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 2,
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": true, "type": "long"},
    {"id": 2, "name": "region", "required": false, "type": "string"}]}],
  "default-spec-id": 1,
  "partition-specs": [{"spec-id": 0, "fields": []},
    {"spec-id": 1, "fields": [{"source-id": 2, "field-id": 1000, "name": "region", "transform": "identity"}]}],
  "last-partition-id": 1000,
  "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],
  "properties": {},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}"#;
    TableMetadata::parse(json.as_bytes()).unwrap()
}

pub(super) fn file(content: DataContentType, path: &str, region: Option<&str>) -> DataFile {
    DataFile {
        partition: region
            .map(|r| vec![Some(Literal::String(r.to_string()))])
            .unwrap_or_default(),
        equality_ids: (content == DataContentType::EqualityDeletes).then(|| vec![1]),
        ..DataFile::new(content, path, FileFormat::Parquet, 10, 100)
    }
}

fn data(path: &str, region: Option<&str>, seq: i64) -> FileScanTask {
    FileScanTask {
        data_file: file(DataContentType::Data, path, region),
        partition_spec_id: if region.is_some() { 1 } else { 0 },
        data_sequence_number: seq,
        deletes: Vec::new(),
    }
}

fn delete(content: DataContentType, path: &str, region: Option<&str>, seq: i64) -> DeleteFileTask {
    DeleteFileTask {
        file: file(content, path, region),
        partition_spec_id: if region.is_some() { 1 } else { 0 },
        data_sequence_number: seq,
    }
}

fn vector(path: &str, target: &str, seq: i64) -> DeleteFileTask {
    let mut dv = delete(DataContentType::PositionDeletes, path, Some("eu"), seq);
    dv.file.file_format = FileFormat::Puffin;
    dv.file.referenced_data_file = Some(target.to_string());
    dv
}

/// The paths of the delete files that apply to `task`.
fn applying(io: &FileIO, deletes: Vec<DeleteFileTask>, task: &FileScanTask) -> Vec<String> {
    let index = DeleteIndex::new(io, &metadata(), deletes);
    index
        .deletes_for(io, task)
        .iter()
        .map(|d| d.file.file_path.clone())
        .collect()
}

const POS: DataContentType = DataContentType::PositionDeletes;
const EQ: DataContentType = DataContentType::EqualityDeletes;

#[test]
fn position_deletes_apply_at_or_after_the_data_sequence_number() {
    let io = FileIO::default();
    let task = data("/wh/t/d.parquet", Some("eu"), 5);
    for (seq, applies) in [(4, false), (5, true), (6, true)] {
        let found = applying(
            &io,
            vec![delete(POS, "/wh/t/p.parquet", Some("eu"), seq)],
            &task,
        );
        assert_eq!(!found.is_empty(), applies, "delete seq {seq}");
    }
}

#[test]
fn equality_deletes_apply_only_strictly_after_the_data_sequence_number() {
    let io = FileIO::default();
    let task = data("/wh/t/d.parquet", Some("eu"), 5);
    for (seq, applies) in [(4, false), (5, false), (6, true)] {
        let found = applying(
            &io,
            vec![delete(EQ, "/wh/t/e.parquet", Some("eu"), seq)],
            &task,
        );
        assert_eq!(!found.is_empty(), applies, "delete seq {seq}");
    }
}

#[test]
fn partitioned_deletes_stay_in_their_partition_and_unpartitioned_ones_do_not() {
    let io = FileIO::default();
    let task = data("/wh/t/d.parquet", Some("eu"), 1);
    let deletes = vec![
        delete(POS, "/wh/t/p-eu.parquet", Some("eu"), 2),
        delete(POS, "/wh/t/p-us.parquet", Some("us"), 2),
        delete(EQ, "/wh/t/e-us.parquet", Some("us"), 2),
        delete(EQ, "/wh/t/e-all.parquet", None, 2),
        delete(POS, "/wh/t/p-all.parquet", None, 2),
    ];
    let mut found = applying(&io, deletes, &task);
    found.sort();
    assert_eq!(
        found,
        [
            "/wh/t/e-all.parquet",
            "/wh/t/p-all.parquet",
            "/wh/t/p-eu.parquet"
        ]
    );
    // The same values under another spec are another partition.
    let other_spec = FileScanTask {
        partition_spec_id: 0,
        ..data("/wh/t/d.parquet", Some("eu"), 1)
    };
    let eu_only = vec![delete(POS, "/wh/t/p-eu.parquet", Some("eu"), 2)];
    assert!(applying(&io, eu_only, &other_spec).is_empty());
}

#[test]
fn referenced_data_file_narrows_and_paths_compare_after_relocation() {
    let relocation = Relocation::new()
        .with_rule("hdfs://nn:8020/wh", "/tmp/wh")
        .with_rule("/wh", "/tmp/wh");
    let io = FileIO::new(Default::default(), relocation);
    let task = data("/wh/t/d.parquet", Some("eu"), 1);
    let mut named = delete(POS, "/wh/t/p.parquet", Some("eu"), 1);
    named.file.referenced_data_file = Some("hdfs://nn:8020/wh/t/d.parquet".into());
    let mut other = delete(POS, "/wh/t/q.parquet", Some("eu"), 1);
    other.file.referenced_data_file = Some("/wh/t/other.parquet".into());
    assert_eq!(
        applying(&io, vec![named, other], &task),
        ["/wh/t/p.parquet"]
    );
}

#[test]
fn equal_file_path_bounds_pin_one_data_file() {
    let io = FileIO::default();
    let task = data("/wh/t/d.parquet", Some("eu"), 1);
    let bounded = |target: &str, upper: &str| {
        let mut d = delete(POS, &format!("/wh/t/p-{upper}.parquet"), Some("eu"), 1);
        d.file.lower_bounds = Some([(FILE_PATH_FIELD_ID, target.as_bytes().to_vec())].into());
        d.file.upper_bounds = Some([(FILE_PATH_FIELD_ID, upper.as_bytes().to_vec())].into());
        d
    };
    let deletes = vec![
        bounded("/wh/t/d.parquet", "/wh/t/d.parquet"),
        bounded("/wh/t/x.parquet", "/wh/t/x.parquet"),
        // A range (or a truncated bound) only scopes by partition.
        bounded("/wh/t/a.parquet", "/wh/t/z.parquet"),
    ];
    let mut found = applying(&io, deletes, &task);
    found.sort();
    assert_eq!(
        found,
        [
            "/wh/t/p-/wh/t/d.parquet.parquet",
            "/wh/t/p-/wh/t/z.parquet.parquet"
        ]
    );
}

#[test]
fn a_deletion_vector_replaces_position_delete_files_but_not_equality_deletes() {
    let io = FileIO::default();
    let task = data("/wh/t/d.parquet", Some("eu"), 1);
    let deletes = vec![
        delete(POS, "/wh/t/p.parquet", Some("eu"), 2),
        vector("/wh/t/v.puffin", "/wh/t/d.parquet", 3),
        vector("/wh/t/w.puffin", "/wh/t/other.parquet", 3),
        delete(EQ, "/wh/t/e.parquet", Some("eu"), 3),
    ];
    assert_eq!(
        applying(&io, deletes, &task),
        ["/wh/t/v.puffin", "/wh/t/e.parquet"]
    );
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The spec read literally, one delete file at a time.
fn naive(metadata: &TableMetadata, deletes: &[DeleteFileTask], task: &FileScanTask) -> Vec<String> {
    let in_scope = |d: &DeleteFileTask| {
        let unpartitioned = metadata
            .partition_spec_by_id(d.partition_spec_id)
            .is_some_and(|s| s.fields.is_empty());
        unpartitioned
            || (d.partition_spec_id == task.partition_spec_id
                && d.file.partition == task.data_file.partition)
    };
    let targets = |d: &DeleteFileTask| {
        d.file
            .referenced_data_file
            .as_ref()
            .is_none_or(|p| *p == task.data_file.file_path)
    };
    let seq = task.data_sequence_number;
    let vectors: Vec<&DeleteFileTask> = deletes
        .iter()
        .filter(|d| d.file.file_format == FileFormat::Puffin)
        .filter(|d| in_scope(d) && targets(d) && seq <= d.data_sequence_number)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for d in deletes {
        let applies = match (d.file.content, &d.file.file_format) {
            (DataContentType::EqualityDeletes, _) => in_scope(d) && seq < d.data_sequence_number,
            (_, FileFormat::Puffin) => vectors.iter().any(|v| std::ptr::eq(*v, d)),
            _ => vectors.is_empty() && in_scope(d) && targets(d) && seq <= d.data_sequence_number,
        };
        if applies {
            out.push(d.file.file_path.clone());
        }
    }
    out.sort();
    out
}

#[test]
fn the_index_agrees_with_a_naive_reading_of_the_spec() {
    let io = FileIO::default();
    let metadata = metadata();
    let regions = [None, Some("eu"), Some("us")];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let data_files: Vec<FileScanTask> = (0..1 + rng.below(6))
            .map(|i| {
                let region = regions[rng.below(3) as usize];
                data(&format!("/wh/t/d{i}.parquet"), region, rng.below(5) as i64)
            })
            .collect();
        let deletes: Vec<DeleteFileTask> = (0..rng.below(8))
            .map(|i| {
                let seq = rng.below(6) as i64;
                let region = regions[rng.below(3) as usize];
                let target = format!("/wh/t/d{}.parquet", rng.below(7));
                match rng.below(4) {
                    0 => delete(EQ, &format!("/wh/t/e{i}.parquet"), region, seq),
                    1 => vector(&format!("/wh/t/v{i}.puffin"), &target, seq),
                    2 => {
                        let mut d = delete(POS, &format!("/wh/t/r{i}.parquet"), region, seq);
                        d.file.referenced_data_file = Some(target);
                        d
                    }
                    _ => delete(POS, &format!("/wh/t/p{i}.parquet"), region, seq),
                }
            })
            .collect();
        let index = DeleteIndex::new(&io, &metadata, deletes.clone());
        for task in &data_files {
            let mut found: Vec<String> = index
                .deletes_for(&io, task)
                .iter()
                .map(|d| d.file.file_path.clone())
                .collect();
            found.sort();
            assert_eq!(
                found,
                naive(&metadata, &deletes, task),
                "round {round}: {task:?}"
            );
        }
    }
}

#[test]
fn tasks_share_one_delete_file() {
    let io = FileIO::default();
    let index = DeleteIndex::new(
        &io,
        &metadata(),
        vec![delete(EQ, "/wh/t/e.parquet", None, 9)],
    );
    let a = index.deletes_for(&io, &data("/wh/t/a.parquet", Some("eu"), 1));
    let b = index.deletes_for(&io, &data("/wh/t/b.parquet", None, 1));
    assert!(Arc::ptr_eq(&a[0], &b[0]));
}

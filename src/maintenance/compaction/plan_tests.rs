//! The selection rules of Java's `SizeBasedFileRewritePlanner`, case by case.

use std::sync::Arc;

use super::*;
use crate::scan::DeleteFileTask;
use crate::spec::{DataFile, FileFormat, Literal};

const MB: i64 = 1024 * 1024;

fn task(name: &str, partition: i32, megabytes: i64) -> FileScanTask {
    let mut file = DataFile::new(
        DataContentType::Data,
        format!("/t/data/{name}.parquet"),
        FileFormat::Parquet,
        1_000,
        megabytes * MB,
    );
    file.partition = vec![Some(Literal::Int(partition))];
    FileScanTask {
        data_file: file,
        partition_spec_id: 0,
        data_sequence_number: 1,
        deletes: Vec::new(),
    }
}

/// A deletion vector of `task`'s file removing `rows` rows.
fn with_vector(mut task: FileScanTask, rows: i64) -> FileScanTask {
    let mut dv = DataFile::new(
        DataContentType::PositionDeletes,
        "/t/data/dv.puffin",
        FileFormat::Puffin,
        rows,
        100,
    );
    dv.referenced_data_file = Some(task.data_file.file_path.clone());
    task.deletes.push(Arc::new(DeleteFileTask {
        file: dv,
        partition_spec_id: 0,
        data_sequence_number: 2,
    }));
    task
}

fn names(groups: &[Group]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|g| {
            let paths = g.tasks.iter().map(|t| &t.data_file.file_path);
            paths
                .map(|p| {
                    p.trim_start_matches("/t/data/")
                        .trim_end_matches(".parquet")
                        .to_string()
                })
                .collect()
        })
        .collect()
}

/// Target 100 MB: files under 75 MB or over 180 MB are candidates; a partition's candidates
/// are rewritten when there are 5 of them, or more than one holding over 100 MB together.
#[test]
fn small_files_are_rewritten_per_partition_when_enough_of_them() {
    let limits = Limits::around(100 * MB as u64);
    let tasks = vec![
        task("a1", 1, 10),
        task("a2", 1, 10),
        task("a3", 1, 10),
        task("a4", 1, 10),
        task("a5", 1, 10),
        task("a-right-size", 1, 100),
        task("b1", 2, 60),
        task("b2", 2, 60),
        task("c1", 3, 10),
        task("c2", 3, 10),
        task("d-huge", 4, 400),
    ];
    let groups = plan_groups(tasks, &limits);
    assert_eq!(
        names(&groups),
        vec![
            vec!["a1", "a2", "a3", "a4", "a5"],
            vec!["b1", "b2"],
            vec!["d-huge"],
        ],
        "c: two small files of 20 MB in all are left; a-right-size is in range"
    );
    assert_eq!(groups[0].output_files, 1);
    assert_eq!(
        groups[1].output_files, 2,
        "120 MB in one file is over 110 % of the target"
    );
    assert_eq!(
        groups[2].output_files, 4,
        "400 MB split into 4 files of 100 MB"
    );
}

#[test]
fn output_files_follow_javas_rounding() {
    let limits = Limits::around(100);
    assert_eq!(limits.output_files(50), 1);
    assert_eq!(limits.output_files(100), 1);
    assert_eq!(
        limits.output_files(176),
        2,
        "remainder 76 > min 75: its own file"
    );
    assert_eq!(
        limits.output_files(170),
        2,
        "170 in one file would exceed 110"
    );
    assert_eq!(limits.output_files(305), 3, "avg 101.6 < 110: three files");
}

#[test]
fn deletes_make_files_candidates() {
    let mut limits = Limits::around(100 * MB as u64);
    // 40 % of a right-sized file deleted by its deletion vector: over the 30 % ratio.
    let deleted = with_vector(task("deleted", 1, 100), 400);
    let lightly = with_vector(task("lightly", 1, 100), 100);
    let groups = plan_groups(vec![deleted.clone(), lightly.clone()], &limits);
    assert_eq!(names(&groups), vec![vec!["deleted"]]);

    limits.delete_ratio_threshold = 1.0;
    limits.delete_file_threshold = 1;
    let groups = plan_groups(vec![deleted, lightly], &limits);
    assert_eq!(names(&groups), vec![vec!["deleted", "lightly"]]);
}

#[test]
fn rewrite_all_takes_every_file_and_groups_respect_their_maximum() {
    let mut limits = Limits::around(100 * MB as u64);
    limits.rewrite_all = true;
    limits.max_group_bytes = 150 * MB as u64;
    let tasks = vec![
        task("x1", 1, 100),
        task("x2", 1, 40),
        task("x3", 1, 40),
        task("y1", 2, 100),
    ];
    let groups = plan_groups(tasks, &limits);
    assert_eq!(
        names(&groups),
        vec![vec!["x1", "x2"], vec!["x3"], vec!["y1"]]
    );
}

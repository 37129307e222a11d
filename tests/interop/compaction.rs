//! Compacted tables read by other engines (issue 20, item 4), beyond `compacted_dml.rs` (the
//! seven row-level-change tables compacted with `rewrite-all`): a v3 table with deletion
//! vectors compacted with `remove-dangling-deletes` (its delete files gone), and a v3
//! copy-on-write table whose rows keep their `_row_id` and `_last_updated_sequence_number`
//! through the compaction, as PyIceberg, DuckDB's avro reader and pyarrow derive them from the
//! metadata (`dml.py lineage`). PyIceberg (through the SQLite catalog), DuckDB's iceberg
//! extension (the new metadata file) and icefloe must read the rows DuckDB leaves when it runs
//! the same statements on native tables (`dml.py check`).

use std::path::Path;
use std::sync::Arc;

use icefloe::WriteTarget;
use icefloe::maintenance::{RewriteDataFiles, rewrite_data_files};
use serde_json::json;

use super::dml::{COLUMNS, check_entry, run_dml_py, statements};
use super::{Warehouse, interop_py_script, python, run, warehouse};

/// (table, `PARTITION BY ... TBLPROPERTIES ...`, whether its changes leave delete files).
const CASES: [(&str, &str, bool); 2] = [
    (
        "db.vectors",
        "PARTITION BY (day(d)) TBLPROPERTIES ('format-version' = '3', \
         'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', \
         'write.merge.mode' = 'merge-on-read')",
        true,
    ),
    (
        "db.lineage",
        "PARTITION BY (region) TBLPROPERTIES ('format-version' = '3')",
        false,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_v3_tables_keep_rows_and_lineage_in_pyiceberg_and_duckdb() {
    let Some(python) = python("compacted_v3_tables_keep_rows_and_lineage_in_pyiceberg_and_duckdb")
    else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        catalog,
    } = warehouse("compaction").await;
    let options = RewriteDataFiles::new()
        .with_option("rewrite-all", "true")
        .and_then(|o| o.with_option("remove-dangling-deletes", "true"))
        .unwrap();
    let mut tables = Vec::new();
    let mut lineage = Vec::new();
    for (name, clauses, deletes) in CASES {
        run(&ctx, &format!("CREATE TABLE {name} ({COLUMNS}) {clauses}")).await;
        let statements = statements();
        for statement in &statements {
            run(&ctx, &statement.replace("{t}", name)).await;
        }
        let (namespace, short) = name.split_once('.').unwrap();
        let before = catalog.load_table(namespace, short).await.unwrap();
        let target = WriteTarget::sqlite(Arc::clone(&catalog), namespace, short).unwrap();
        let done = rewrite_data_files(&target, &options)
            .await
            .unwrap_or_else(|e| panic!("compacting {name}: {e}"));
        assert!(
            done.added_data_files < done.rewritten_data_files,
            "{name}: {done:?}"
        );
        assert_eq!(
            deletes,
            done.removed_delete_files > 0,
            "{name}: delete files removed: {done:?}"
        );
        let after = catalog.load_table(namespace, short).await.unwrap();
        let rows = dir.path().join(format!("{name}.arrow"));
        tables.push(check_entry(&ctx, &catalog, name, &statements, &rows).await);
        if name == "db.lineage" {
            lineage = vec![
                json!({"statement": "before compaction", "metadata": before.metadata_location()}),
                json!({"statement": "compaction", "metadata": after.metadata_location()}),
            ];
        }
    }
    std::fs::write(
        dir.path().join("lineage.json"),
        serde_json::to_vec_pretty(&json!({ "versions": lineage })).unwrap(),
    )
    .unwrap();
    assert!(
        run_dml_py(&python, dir.path(), "dml.json", "check", &warehouse, tables),
        "PyIceberg, DuckDB or icefloe read a compacted table differently from DuckDB's native \
         answer (output above)"
    );
    assert!(
        interop_py_script(&python, Path::new("dml.py"), &["lineage", &warehouse]),
        "row lineage changed through the compaction (output above)"
    );
}

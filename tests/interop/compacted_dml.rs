//! Tables changed by row-level statements, then compacted by icefloe
//! (`rewrite_position_delete_files`, then `rewrite_data_files` of every file), read back by
//! PyIceberg and DuckDB's iceberg extension as DuckDB's native tables hold the same rows after
//! the same statements: compaction changes files, never rows. The Python side is `dml.py
//! check` (the reference replays the statements on DuckDB native tables).

use icefloe::WriteTarget;
use icefloe::catalog::TableIdent;
use icefloe::maintenance::{
    RewriteDataFiles, RewritePositionDeletes, rewrite_data_files, rewrite_position_delete_files,
};

use super::dml::{CASES, apply_case, check_entry, run_dml_py};
use super::{Warehouse, python, warehouse};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_tables_read_as_the_rows_duckdb_leaves() {
    let Some(python) = python("compacted_tables_read_as_the_rows_duckdb_leaves") else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        catalog,
    } = warehouse("compacted dml").await;
    let mut tables = Vec::new();
    for case in &CASES {
        let statements = apply_case(&ctx, case).await;
        let ident = TableIdent::parse_dotted(case.name).unwrap();
        let target = WriteTarget::new(catalog.clone(), ident);
        rewrite_position_delete_files(
            &target,
            &RewritePositionDeletes::new()
                .with_option("min-input-files", "1")
                .unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: rewrite_position_delete_files: {e}", case.name));
        let all = RewriteDataFiles::new()
            .with_option("rewrite-all", "true")
            .unwrap();
        let result = rewrite_data_files(&target, &all)
            .await
            .unwrap_or_else(|e| panic!("{}: rewrite_data_files: {e}", case.name));
        assert!(result.rewritten_data_files > 0, "{}", case.name);
        let out = dir.path().join(case.name);
        std::fs::create_dir_all(&out).unwrap();
        let rows = out.join("rows.arrow");
        tables.push(check_entry(&ctx, &catalog, case.name, &statements, &rows).await);
    }
    assert!(
        run_dml_py(&python, dir.path(), "dml.json", "check", &warehouse, tables),
        "a compacted table reads differently from DuckDB's native one (output above)"
    );
}

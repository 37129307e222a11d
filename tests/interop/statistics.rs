//! Table and partition statistics icefloe computes, checked by independent readers: PyIceberg
//! 0.12 parses the `statistics` and `partition-statistics` icefloe committed (snapshot ids,
//! paths, sizes, blob types, fields, `ndv`) as icefloe's `"t$statistics"` shows them; the
//! Python `datasketches` package (Apache DataSketches' C++ library) deserializes every theta
//! blob, with the recorded `ndv` as its estimate and the data's distinct count (pyarrow's, over
//! PyIceberg's scan); pyarrow reads the partition statistics file, with the spec's field ids
//! and requiredness, and its rows' counts are PyIceberg's `inspect.partitions()` for the same
//! snapshot. PyIceberg 0.12 neither computes nor reads partition statistics files. The Python
//! side is `tests/interop/statistics.py`.

use std::path::Path;

use serde_json::json;

use super::{Warehouse, dump, interop_py_script, python, run, warehouse};

/// A partitioned table of `version` with merge-on-read deletes (position delete files in v2,
/// deletion vectors in v3) and an evolved spec, then both statistics computed.
fn statements(name: &str, version: u8) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE {name} (id BIGINT NOT NULL, region VARCHAR, name VARCHAR, d DATE, x DOUBLE) \
             PARTITION BY (region, bucket(2, id)) TBLPROPERTIES ('format-version' = '{version}', \
             'write.delete.mode' = 'merge-on-read')"
        ),
        format!(
            "INSERT INTO {name} SELECT v, CASE v % 3 WHEN 0 THEN 'eu' WHEN 1 THEN 'us' ELSE NULL END, \
             'n' || CAST(v % 37 AS VARCHAR), DATE '2024-01-01' + CAST(v % 45 AS INT), \
             CAST(v % 11 AS DOUBLE) / 4 FROM (SELECT unnest(range(0, 600)) AS v)"
        ),
        format!(
            "INSERT INTO {name} SELECT v, CASE v % 2 WHEN 0 THEN 'eu' ELSE 'ap' END, CAST(NULL AS VARCHAR) AS name, \
             DATE '2024-03-01', CAST(NULL AS DOUBLE) AS x FROM (SELECT unnest(range(600, 700)) AS v)"
        ),
        format!("DELETE FROM {name} WHERE id % 7 = 0"),
        format!("ALTER TABLE {name} ADD PARTITION FIELD month(d) AS d_month"),
        format!(
            "INSERT INTO {name} SELECT v, 'eu', 'late', DATE '2024-05-01' + CAST(v % 40 AS INT), 1.5 \
             FROM (SELECT unnest(range(700, 760)) AS v)"
        ),
        format!("DELETE FROM {name} WHERE id IN (3, 4, 701)"),
        format!("SELECT * FROM iceberg_compute_table_stats('{name}')"),
        format!("SELECT * FROM iceberg_compute_partition_stats('{name}')"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_read_the_same_in_pyiceberg_datasketches_and_pyarrow() {
    let Some(python) = python("statistics_read_the_same_in_pyiceberg_datasketches_and_pyarrow")
    else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        ..
    } = warehouse("statistics").await;
    let mut tables = Vec::new();
    for version in [2, 3] {
        let name = format!("db.stats_v{version}");
        for statement in statements(&name, version) {
            run(&ctx, &statement).await;
        }
        let relation = format!("db.\"stats_v{version}$statistics\"");
        let shown = dir
            .path()
            .join(format!("stats_v{version}.statistics.arrow"));
        dump(&ctx, &format!("SELECT * FROM {relation}"), &shown).await;
        tables.push(json!({"name": name, "format_version": version, "statistics": shown}));
    }
    std::fs::write(
        dir.path().join("statistics.json"),
        serde_json::to_vec_pretty(&json!({ "tables": tables })).unwrap(),
    )
    .unwrap();
    assert!(
        interop_py_script(&python, Path::new("statistics.py"), &["check", &warehouse]),
        "PyIceberg, datasketches or pyarrow read icefloe's statistics differently (output above)"
    );
}

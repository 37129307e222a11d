//! Row-level changes checked against independent engines: the same statements (INSERT,
//! DELETE, UPDATE, MERGE, TRUNCATE, INSERT OVERWRITE) run by icefloe on Iceberg tables and by
//! DuckDB on native tables must leave the same rows, and PyIceberg and DuckDB's iceberg extension must read icefloe's
//! tables (position deletes included) as DuckDB's native answer. Tables cover copy-on-write and
//! merge-on-read (v2 position deletes, v3 deletion vectors), v1, v2 and v3, a partition spec
//! evolved (by PyIceberg) between statements, unpartitioned and partitioned (identity, day, bucket,
//! truncate), NULLs in keys and partition columns, and files of thousands of rows whose columns
//! are delta-encoded, plain and dictionary-encoded. The Python side is `tests/interop/dml.py`.

use std::path::Path;

use datafusion::prelude::SessionContext;
use icefloe::catalog::SqliteCatalog;
use serde_json::{Value, json};

use super::{Warehouse, dump, interop_py_script, python, run, warehouse};

/// One table of the check: how icefloe creates it, and its DuckDB twin.
pub(super) struct Case {
    pub(super) name: &'static str,
    /// `PARTITION BY (...) TBLPROPERTIES (...)` of icefloe's CREATE TABLE.
    pub(super) clauses: &'static str,
}

pub(super) const COLUMNS: &str =
    "id BIGINT NOT NULL, name VARCHAR, region VARCHAR, d DATE, amount DOUBLE";

pub(super) const CASES: [Case; 7] = [
    Case {
        name: "db.cow_plain",
        clauses: "",
    },
    Case {
        name: "db.cow_parted",
        clauses: "PARTITION BY (region, day(d))",
    },
    Case {
        name: "db.mor_parted",
        clauses: "PARTITION BY (region, bucket(4, id)) TBLPROPERTIES ('write.delete.mode' = \
                  'merge-on-read', 'write.update.mode' = 'merge-on-read', \
                  'write.merge.mode' = 'merge-on-read')",
    },
    Case {
        name: "db.mor_plain",
        clauses: "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = \
                  'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
    },
    Case {
        name: "db.v3_cow",
        clauses: "PARTITION BY (truncate(2, name)) TBLPROPERTIES ('format-version' = '3')",
    },
    Case {
        name: "db.v3_mor",
        clauses: "PARTITION BY (day(d)) TBLPROPERTIES ('format-version' = '3', \
                  'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', \
                  'write.merge.mode' = 'merge-on-read')",
    },
    Case {
        name: "db.v1_cow",
        clauses: "PARTITION BY (region) TBLPROPERTIES ('format-version' = '1')",
    },
];

/// `INSERT INTO {t} VALUES ...` of rows `ids`, with NULLs in every nullable column.
pub(super) fn insert(ids: std::ops::RangeInclusive<i64>) -> String {
    let rows: Vec<String> = ids
        .map(|id| {
            let name = match id % 11 {
                0 => "NULL".to_string(),
                _ => format!("'n{id}'"),
            };
            let region = ["'eu'", "'us'", "'apac'", "NULL"][(id % 4) as usize];
            let day = 1 + id % 5;
            let amount = match id % 6 {
                0 => "NULL".to_string(),
                _ => format!("{}.5", id * 3),
            };
            format!("({id}, {name}, {region}, DATE '2024-01-0{day}', {amount})")
        })
        .collect();
    format!("INSERT INTO {{t}} VALUES {}", rows.join(", "))
}

/// The statements every table goes through, in both engines.
pub(super) fn statements() -> Vec<String> {
    let mut all = vec![insert(1..=40), insert(41..=60)];
    all.extend(
        [
            "DELETE FROM {t} WHERE id % 7 = 0",
            "UPDATE {t} SET amount = amount * 2, name = upper(name) WHERE id < 15",
            "DELETE FROM {t} WHERE region = 'eu'",
            "DELETE FROM {t} WHERE id IN (SELECT id + 1 FROM {t} WHERE id % 5 = 0)",
            "UPDATE {t} SET region = 'us' WHERE region IS NULL",
            "DELETE FROM {t} WHERE amount IS NULL AND id > 30",
            "UPDATE {t} SET d = DATE '2024-03-01' WHERE id % 3 = 1",
            "DELETE FROM {t} WHERE false",
            "INSERT INTO {t} VALUES (1000, 'late', 'eu', DATE '2024-01-05', 1.0)",
            "DELETE FROM {t} WHERE name LIKE 'N%' AND id NOT IN (SELECT id FROM {t} WHERE id > 50)",
            "UPDATE {t} SET amount = 0.5 WHERE amount IS NULL",
            "CREATE TABLE {t}_src (id BIGINT, name VARCHAR, amount DOUBLE)",
            "INSERT INTO {t}_src VALUES (2, 'm2', 1.0), (5, 'm5', NULL), (1001, 'm1001', 7.0), \
             (9, NULL, 2.0), (1002, NULL, NULL), (8, 'm8', 3.0)",
            "MERGE INTO {t} AS x USING {t}_src AS s ON x.id = s.id \
             WHEN MATCHED AND s.amount IS NULL THEN DELETE \
             WHEN MATCHED THEN UPDATE SET name = s.name, amount = x.amount + s.amount \
             WHEN NOT MATCHED THEN INSERT (id, name, region, d, amount) \
             VALUES (s.id, s.name, 'eu', DATE '2024-01-02', s.amount)",
            "MERGE INTO {t} AS x USING {t}_src AS s ON x.id = s.id + 10 \
             WHEN NOT MATCHED BY SOURCE AND x.id > 40 THEN UPDATE SET amount = 1.25 \
             WHEN MATCHED THEN DELETE",
        ]
        .map(String::from),
    );
    all
}

/// Creates `case`'s table and runs every statement on it; the statements (with `{t}`).
pub(super) async fn apply_case(ctx: &SessionContext, case: &Case) -> Vec<String> {
    let create = format!("CREATE TABLE {} ({COLUMNS}) {}", case.name, case.clauses);
    run(ctx, &create).await;
    let statements = statements();
    for statement in &statements {
        run(ctx, &statement.replace("{t}", case.name)).await;
    }
    statements
}

/// The entry of table `name` that `dml.py check` reads: DuckDB's DDL, the statements DuckDB
/// replays, the table's current metadata file and the rows icefloe reads (dumped to `rows`).
pub(super) async fn check_entry(
    ctx: &SessionContext,
    catalog: &SqliteCatalog,
    name: &str,
    statements: &[impl AsRef<str>],
    rows: &Path,
) -> Value {
    dump(ctx, &format!("SELECT * FROM {name}"), rows).await;
    let (namespace, short) = name.split_once('.').unwrap();
    let table = catalog.load_table(namespace, short).await.unwrap();
    let statements: Vec<&str> = statements.iter().map(AsRef::as_ref).collect();
    json!({
        "name": name,
        "duckdb_ddl": format!("CREATE TABLE {{t}} ({COLUMNS})"),
        "statements": statements,
        "metadata_location": table.metadata_location(),
        "icefloe_rows": rows,
    })
}

/// Writes `tables` to `file` in `dir` (`{"tables": [...]}`), then runs `dml.py command` on the
/// warehouse; whether it passed.
pub(super) fn run_dml_py(
    python: &Path,
    dir: &Path,
    file: &str,
    command: &str,
    warehouse: &str,
    tables: Vec<Value>,
) -> bool {
    std::fs::write(
        dir.join(file),
        serde_json::to_vec_pretty(&json!({ "tables": tables })).unwrap(),
    )
    .unwrap();
    interop_py_script(python, Path::new("dml.py"), &[command, warehouse])
}

/// Every case's statements run by icefloe and by DuckDB; PyIceberg, DuckDB's iceberg extension
/// and icefloe read the same rows as DuckDB's native tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_level_changes_leave_the_rows_duckdb_leaves() {
    let Some(python) = python("row_level_changes_leave_the_rows_duckdb_leaves") else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        catalog,
    } = warehouse("dml").await;
    let mut tables = Vec::new();
    for case in &CASES {
        let statements = apply_case(&ctx, case).await;
        let out = dir.path().join(case.name);
        std::fs::create_dir_all(&out).unwrap();
        let rows = out.join("rows.arrow");
        tables.push(check_entry(&ctx, &catalog, case.name, &statements, &rows).await);
    }
    // An evolved partition spec: PyIceberg adds `region` to an unpartitioned table between
    // icefloe's statements (old files stay unpartitioned, new ones are partitioned).
    for mode in ["copy-on-write", "merge-on-read"] {
        let name = format!("db.evolved_{}", mode.replace('-', "_"));
        let create = format!(
            "CREATE TABLE {name} ({COLUMNS}) TBLPROPERTIES ('write.delete.mode' = '{mode}', \
             'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')"
        );
        run(&ctx, &create).await;
        let all = statements();
        let (before, after) = all.split_at(3);
        for statement in before {
            run(&ctx, &statement.replace("{t}", &name)).await;
        }
        assert!(
            interop_py_script(
                &python,
                Path::new("dml.py"),
                &["evolve", &warehouse, &name, "region"]
            ),
            "PyIceberg could not evolve {name}"
        );
        for statement in after {
            run(&ctx, &statement.replace("{t}", &name)).await;
        }
        let (namespace, short) = name.split_once('.').unwrap();
        let table = catalog.load_table(namespace, short).await.unwrap();
        assert_eq!(table.metadata().partition_specs.len(), 2, "{name}: evolved");
        let rows = dir.path().join(format!("{name}.arrow"));
        tables.push(check_entry(&ctx, &catalog, &name, &all, &rows).await);
    }
    // INSERT OVERWRITE, dynamic then static; DuckDB says the same with DELETE and INSERT.
    run(
        &ctx,
        &format!("CREATE TABLE db.overwritten ({COLUMNS}) PARTITION BY (region)"),
    )
    .await;
    let overwritten = [
        (insert(1..=20), insert(1..=20)),
        (
            "SET icefloe.overwrite_mode = 'dynamic'".to_string(),
            "SELECT 1".to_string(),
        ),
        (
            "INSERT OVERWRITE {t} VALUES (100, 'o', 'eu', DATE '2024-02-01', 1.0), \
             (101, 'p', NULL, DATE '2024-02-02', NULL)"
                .to_string(),
            "DELETE FROM {t} WHERE region = 'eu' OR region IS NULL; INSERT INTO {t} VALUES \
             (100, 'o', 'eu', DATE '2024-02-01', 1.0), (101, 'p', NULL, DATE '2024-02-02', NULL)"
                .to_string(),
        ),
        (
            "SET icefloe.overwrite_mode = 'static'".to_string(),
            "SELECT 1".to_string(),
        ),
        (
            "INSERT OVERWRITE {t} SELECT * FROM {t} WHERE id > 5".to_string(),
            "CREATE TEMP TABLE kept AS SELECT * FROM {t} WHERE id > 5; DELETE FROM {t}; \
             INSERT INTO {t} SELECT * FROM kept"
                .to_string(),
        ),
    ];
    for (statement, _) in &overwritten {
        run(&ctx, &statement.replace("{t}", "db.overwritten")).await;
    }
    let rows = dir.path().join("overwritten.arrow");
    let duckdb: Vec<&String> = overwritten.iter().map(|(_, duckdb)| duckdb).collect();
    tables.push(check_entry(&ctx, &catalog, "db.overwritten", &duckdb, &rows).await);
    // TRUNCATE, then rows again.
    run(
        &ctx,
        &format!("CREATE TABLE db.truncated ({COLUMNS}) PARTITION BY (region)"),
    )
    .await;
    let truncated = vec![
        insert(1..=20),
        "DELETE FROM {t} WHERE id = 3".to_string(),
        "TRUNCATE TABLE {t}".to_string(),
        insert(30..=33),
    ];
    for statement in &truncated {
        run(&ctx, &statement.replace("{t}", "db.truncated")).await;
    }
    let rows = dir.path().join("truncated.arrow");
    tables.push(check_entry(&ctx, &catalog, "db.truncated", &truncated, &rows).await);
    // Files of thousands of rows, whose columns the writer encodes by their first values: `id`
    // (distinct, ascending) delta-encoded, `name` and `amount` (distinct) plain, `region` and
    // `d` (few values) with a dictionary; rewritten by copy-on-write and deleted from by
    // merge-on-read.
    for (name, mode) in [
        ("db.encoded_cow", "copy-on-write"),
        ("db.encoded_mor", "merge-on-read"),
    ] {
        let create = format!(
            "CREATE TABLE {name} ({COLUMNS}) TBLPROPERTIES ('format-version' = '3', \
             'write.delete.mode' = '{mode}', 'write.update.mode' = '{mode}')"
        );
        run(&ctx, &create).await;
        let encoded = vec![
            insert(1..=6000),
            "DELETE FROM {t} WHERE id % 7 = 0 OR region = 'eu'".to_string(),
            "UPDATE {t} SET amount = amount + 1 WHERE id > 5000".to_string(),
        ];
        for statement in &encoded {
            run(&ctx, &statement.replace("{t}", name)).await;
        }
        let (namespace, short) = name.split_once('.').unwrap();
        let files = column_text(
            &ctx,
            &format!("SELECT file_path FROM {namespace}.\"{short}$files\" WHERE content = 0 ORDER BY record_count DESC"),
        )
        .await;
        let first = files.first().expect("a data file");
        let encodings = column_encodings(first);
        use datafusion::parquet::basic::Encoding::*;
        let uses = |column: &str, encoding| encodings[column].contains(&encoding);
        assert!(
            uses("id", DELTA_BINARY_PACKED),
            "{name} {first}: {encodings:?}"
        );
        assert!(
            uses("amount", PLAIN) && !uses("amount", RLE_DICTIONARY),
            "{encodings:?}"
        );
        assert!(
            uses("region", RLE_DICTIONARY),
            "{name} {first}: {encodings:?}"
        );
        let rows = dir.path().join(format!("{name}.arrow"));
        tables.push(check_entry(&ctx, &catalog, name, &encoded, &rows).await);
    }
    assert!(
        run_dml_py(&python, dir.path(), "dml.json", "check", &warehouse, tables),
        "PyIceberg, DuckDB or icefloe disagree with DuckDB's native answer (output above)"
    );
}

/// The text values of the first column of `query`'s rows.
async fn column_text(ctx: &SessionContext, query: &str) -> Vec<String> {
    use datafusion::arrow::array::AsArray;
    let batches = ctx.sql(query).await.unwrap().collect().await.unwrap();
    let mut values = Vec::new();
    for batch in batches {
        let column = datafusion::arrow::compute::cast(
            batch.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        values.extend(column.as_string::<i32>().iter().flatten().map(String::from));
    }
    values
}

/// The encodings of each column of a local Parquet file (by the file's footer, read by the
/// parquet crate), by column name, over all its row groups.
fn column_encodings(
    uri: &str,
) -> std::collections::HashMap<String, Vec<datafusion::parquet::basic::Encoding>> {
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let reader = SerializedFileReader::new(file).unwrap();
    let mut encodings = std::collections::HashMap::<String, Vec<_>>::new();
    for group in reader.metadata().row_groups() {
        for column in group.columns() {
            let name = column.column_path().string();
            encodings
                .entry(name)
                .or_default()
                .extend(column.encodings());
        }
    }
    encodings
}

/// A small deterministic generator (an LCG): the same sequence on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// A random DELETE, UPDATE, MERGE or INSERT over the columns of [`COLUMNS`]; `next_id` gives
/// inserted rows fresh ids.
fn random_statement(rng: &mut Lcg, next_id: &mut i64) -> String {
    let regions = ["'eu'", "'us'", "'apac'", "NULL"];
    let m = 2 + rng.next(9);
    let r = rng.next(m);
    match rng.next(9) {
        0 => format!("DELETE FROM {{t}} WHERE id % {m} = {r}"),
        1 => match regions[rng.next(4) as usize] {
            "NULL" => "DELETE FROM {t} WHERE region IS NULL".to_string(),
            region => format!("DELETE FROM {{t}} WHERE region = {region} AND id % {m} = {r}"),
        },
        2 => format!(
            "UPDATE {{t}} SET amount = coalesce(amount, 0) + {} WHERE id % {m} = {r}",
            rng.next(100)
        ),
        3 => {
            let a = rng.next(60) as i64;
            format!(
                "UPDATE {{t}} SET region = {}, d = DATE '2024-02-0{}' WHERE id BETWEEN {a} AND {}",
                regions[rng.next(4) as usize],
                1 + rng.next(9),
                a + rng.next(20) as i64
            )
        }
        4 | 5 => {
            let rows: Vec<String> = (0..1 + rng.next(5))
                .map(|_| {
                    *next_id += 1;
                    format!(
                        "({}, 'r{}', {}, DATE '2024-01-0{}', {})",
                        *next_id,
                        rng.next(50),
                        regions[rng.next(4) as usize],
                        1 + rng.next(9),
                        match rng.next(4) {
                            0 => "NULL".to_string(),
                            n => format!("{n}.25"),
                        }
                    )
                })
                .collect();
            format!("INSERT INTO {{t}} VALUES {}", rows.join(", "))
        }
        6 => format!(
            "DELETE FROM {{t}} WHERE id IN (SELECT id + {} FROM {{t}} WHERE amount > {})",
            rng.next(3),
            rng.next(150)
        ),
        _ => {
            let source: Vec<String> = (0..1 + rng.next(6))
                .map(|_| {
                    let id = match rng.next(3) {
                        0 => {
                            *next_id += 1;
                            *next_id
                        }
                        _ => rng.next(70) as i64,
                    };
                    format!("({id}, {}.5)", rng.next(90))
                })
                .collect();
            // Distinct ids: a target row matched twice is an error in both engines.
            format!(
                "MERGE INTO {{t}} AS x USING (SELECT id, max(v) AS v FROM (VALUES {}) AS s0(id, v) \
                 GROUP BY id) AS s ON x.id = s.id \
                 WHEN MATCHED AND s.v > 50 THEN DELETE \
                 WHEN MATCHED THEN UPDATE SET amount = s.v \
                 WHEN NOT MATCHED THEN INSERT (id, name, region, d, amount) \
                 VALUES (s.id, 'm', 'us', DATE '2024-01-03', s.v)",
                source.join(", ")
            )
        }
    }
}

/// Random sequences of row-level statements (a property test with fixed seeds): after every
/// statement icefloe's rows equal DuckDB's after the same statements on a native table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_row_level_changes_match_duckdb_after_every_statement() {
    let Some(python) = python("random_row_level_changes_match_duckdb_after_every_statement") else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        ..
    } = warehouse("random dml").await;
    let cases = [
        (
            "db.random_cow",
            "PARTITION BY (region, bucket(3, id))",
            1u64,
        ),
        (
            "db.random_mor",
            "PARTITION BY (day(d)) TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', \
             'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
            2,
        ),
        (
            "db.random_v3",
            "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read', \
             'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
            3,
        ),
    ];
    let mut tables = Vec::new();
    for (name, clauses, seed) in cases {
        run(&ctx, &format!("CREATE TABLE {name} ({COLUMNS}) {clauses}")).await;
        let mut rng = Lcg(seed);
        let mut next_id = 1000;
        let mut statements = vec![insert(1..=60)];
        statements.extend((0..30).map(|_| random_statement(&mut rng, &mut next_id)));
        let mut dumps = Vec::new();
        for (i, statement) in statements.iter().enumerate() {
            run(&ctx, &statement.replace("{t}", name)).await;
            let path = dir.path().join(format!("{name}-{i}.arrow"));
            dump(&ctx, &format!("SELECT * FROM {name}"), &path).await;
            dumps.push(path);
        }
        tables.push(json!({
            "name": name,
            "duckdb_ddl": format!("CREATE TABLE {{t}} ({COLUMNS})"),
            "statements": statements,
            "dumps": dumps,
        }));
    }
    std::fs::write(
        dir.path().join("steps.json"),
        serde_json::to_vec_pretty(&json!({ "tables": tables })).unwrap(),
    )
    .unwrap();
    assert!(
        interop_py_script(&python, Path::new("dml.py"), &["steps", &warehouse]),
        "icefloe and DuckDB disagree after a statement (output above)"
    );
}

/// v3 row lineage through copy-on-write DELETE and UPDATE, derived from the metadata by
/// PyIceberg, DuckDB's avro reader and pyarrow (`dml.py lineage`): rows keep their `_row_id`
/// (stored in the rewritten files by its reserved field id) and sequence number; updated rows
/// keep their id and take the update's sequence number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_row_ids_survive_copy_on_write_changes() {
    let Some(python) = python("v3_row_ids_survive_copy_on_write_changes") else {
        return;
    };
    let Warehouse {
        dir, ctx, catalog, ..
    } = warehouse("lineage").await;
    run(
        &ctx,
        &format!(
            "CREATE TABLE db.lineage ({COLUMNS}) PARTITION BY (region) \
             TBLPROPERTIES ('format-version' = '3')"
        ),
    )
    .await;
    let steps: [(String, serde_json::Value); 5] = [
        (
            insert(1..=20).replace("{t}", "db.lineage"),
            json!({"inserted": true}),
        ),
        (
            insert(21..=30).replace("{t}", "db.lineage"),
            json!({"inserted": true}),
        ),
        (
            "DELETE FROM db.lineage WHERE id % 3 = 0".into(),
            json!({"deleted": (1..=30).filter(|i| i % 3 == 0).collect::<Vec<i64>>()}),
        ),
        (
            "UPDATE db.lineage SET amount = 0.5 WHERE id IN (4, 22)".into(),
            json!({"updated": [4, 22]}),
        ),
        (
            "DELETE FROM db.lineage WHERE id = 5".into(),
            json!({"deleted": [5]}),
        ),
    ];
    let mut versions = Vec::new();
    for (statement, mut expected) in steps {
        run(&ctx, &statement).await;
        let table = catalog.load_table("db", "lineage").await.unwrap();
        expected["metadata"] = json!(table.metadata_location());
        expected["statement"] = json!(statement.chars().take(60).collect::<String>());
        versions.push(expected);
    }
    std::fs::write(
        dir.path().join("lineage.json"),
        serde_json::to_vec_pretty(&json!({ "versions": versions })).unwrap(),
    )
    .unwrap();
    let warehouse = dir.path().to_str().unwrap();
    assert!(
        interop_py_script(&python, Path::new("dml.py"), &["lineage", warehouse]),
        "row lineage differs from what the metadata says (see the output above)"
    );
}

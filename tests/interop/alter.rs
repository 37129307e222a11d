//! Table evolution checked against PyIceberg: icefloe runs `ALTER TABLE` statements (and
//! INSERTs between them) on v2 and v3 tables; PyIceberg makes the same changes through its own
//! `update_schema()` / `transaction()` on a twin table it creates with icefloe's first schema,
//! and appends the same rows. Then PyIceberg's schemas of the two tables (field ids, names,
//! types, required, docs, defaults, identifier fields, `last-column-id`), partition specs, sort
//! orders, format versions and the files PyIceberg plans for filters must be equal, the files
//! icefloe wrote in the sort order must hold their rows in it, and the rows of icefloe's table
//! as PyIceberg, DuckDB's iceberg extension and icefloe read them must equal the twin's as
//! PyIceberg reads it. The other way round, a table PyIceberg evolved (schema and partition
//! spec) reads the same in icefloe as in PyIceberg. The Python side is
//! `tests/interop/alter.py`.

use std::path::Path;

use serde_json::{Value, json};

use super::{Warehouse, dump, interop_py_script, python, run, warehouse};

/// One step: icefloe's statement, and the same change as PyIceberg makes it.
fn steps(v3: bool) -> Vec<(String, Value)> {
    let insert = |sql: &str, rows: Value| (sql.to_string(), json!({"op": "insert", "rows": rows}));
    let mut steps = vec![
        insert(
            "INSERT INTO {t} VALUES (1, 10, 1.5, {x: 100}), (2, NULL, 2.5, NULL)",
            json!([{"id": 1, "n": 10, "price": 1.5, "s": {"x": 100}},
                   {"id": 2, "n": null, "price": 2.5, "s": null}]),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN note VARCHAR COMMENT 'free text'".into(),
            json!({"op": "add", "path": ["note"], "type": "string", "doc": "free text"}),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN region string FIRST".into(),
            json!({"op": "add", "path": ["region"], "type": "string", "first": true}),
        ),
        (
            "ALTER TABLE {t} ADD PARTITION FIELD region".into(),
            json!({"op": "add_partition", "source": "region", "transform": "identity"}),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN qty BIGINT AFTER n".into(),
            json!({"op": "add", "path": ["qty"], "type": "long", "after": "n"}),
        ),
        // PyIceberg 0.12 writes no table with two partition fields of one source.
        (
            "ALTER TABLE {t} ADD PARTITION FIELD truncate(100, qty) AS qty100".into(),
            json!({"op": "add_partition", "source": "qty", "transform": "truncate[100]",
                   "name": "qty100"}),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN info STRUCT<k VARCHAR, tags ARRAY<INT>>".into(),
            json!({"op": "add", "path": ["info"],
                   "type": {"struct": [["k", "string"], ["tags", {"list": "int"}]]}}),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN s.y DOUBLE".into(),
            json!({"op": "add", "path": ["s", "y"], "type": "double"}),
        ),
        insert(
            "INSERT INTO {t} (region, id, n, qty, price, s, note, info) VALUES \
             ('eu', 3, 30, 300, 3.5, {x: 300, y: 0.25}, 'new', {k: 'a', tags: [1, 2]})",
            json!([{"region": "eu", "id": 3, "n": 30, "qty": 300, "price": 3.5,
                    "s": {"x": 300, "y": 0.25}, "note": "new", "info": {"k": "a", "tags": [1, 2]}}]),
        ),
        (
            "ALTER TABLE {t} RENAME COLUMN n TO amount".into(),
            json!({"op": "rename", "path": ["n"], "to": "amount"}),
        ),
        (
            "ALTER TABLE {t} REPLACE PARTITION FIELD id_bucket WITH bucket(2, id)".into(),
            json!({"op": "replace_partition", "remove": "id_bucket", "source": "id",
                   "transform": "bucket[2]"}),
        ),
        (
            "ALTER TABLE {t} RENAME PARTITION FIELD qty100 TO qty_hundreds".into(),
            json!({"op": "rename_partition", "name": "qty100", "to": "qty_hundreds"}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN amount TYPE BIGINT".into(),
            json!({"op": "retype", "path": ["amount"], "type": "long"}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN price TYPE DOUBLE".into(),
            json!({"op": "retype", "path": ["price"], "type": "double"}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN s.x TYPE BIGINT".into(),
            json!({"op": "retype", "path": ["s", "x"], "type": "long"}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN amount COMMENT 'units'".into(),
            json!({"op": "doc", "path": ["amount"], "doc": "units"}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN region AFTER price".into(),
            json!({"op": "move", "path": ["region"], "after": "price"}),
        ),
        (
            "ALTER TABLE {t} DROP COLUMN note".into(),
            json!({"op": "drop", "path": ["note"]}),
        ),
        (
            "ALTER TABLE {t} ADD COLUMN note VARCHAR".into(),
            json!({"op": "add", "path": ["note"], "type": "string"}),
        ),
        (
            "ALTER TABLE {t} DROP COLUMN info.k".into(),
            json!({"op": "drop", "path": ["info", "k"]}),
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL".into(),
            json!({"op": "optional", "path": ["id"]}),
        ),
        (
            "ALTER TABLE {t} SET TBLPROPERTIES ('owner' = 'analytics')".into(),
            json!({"op": "properties", "set": {"owner": "analytics"}}),
        ),
        (
            "ALTER TABLE {t} WRITE ORDERED BY note DESC NULLS LAST, bucket(4, id)".into(),
            json!({"op": "sort", "fields": [["note", "identity", "desc", "nulls-last"],
                                            ["id", "bucket[4]", "asc", "nulls-first"]]}),
        ),
        insert(
            "INSERT INTO {t} (id, amount, price, region, note) VALUES \
             (4, 40, 4.5, 'us', 'last'), (5, 50, 5.5, 'us', NULL), (6, 60, 6.5, 'us', 'b'), \
             (7, 70, 7.5, 'us', 'last'), (8, 80, 8.5, 'eu', 'a')",
            json!([{"id": 4, "amount": 40, "price": 4.5, "region": "us", "note": "last"},
                   {"id": 5, "amount": 50, "price": 5.5, "region": "us", "note": null},
                   {"id": 6, "amount": 60, "price": 6.5, "region": "us", "note": "b"},
                   {"id": 7, "amount": 70, "price": 7.5, "region": "us", "note": "last"},
                   {"id": 8, "amount": 80, "price": 8.5, "region": "eu", "note": "a"}]),
        ),
    ];
    if v3 {
        steps.extend([
            (
                "ALTER TABLE {t} ADD COLUMN level INT NOT NULL DEFAULT 5".into(),
                json!({"op": "add", "path": ["level"], "type": "int", "required": true,
                       "default": 5}),
            ),
            (
                "ALTER TABLE {t} ALTER COLUMN qty SET NOT NULL".into(),
                json!({"op": "refused"}),
            ),
        ]);
    } else {
        steps.push((
            "ALTER TABLE {t} SET TBLPROPERTIES ('format-version' = '3')".into(),
            json!({"op": "upgrade", "version": 3}),
        ));
    }
    steps
}

/// icefloe evolves two tables by SQL; PyIceberg evolves their twins the same way and must see
/// the same schemas and rows; then PyIceberg evolves a table icefloe reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evolved_tables_read_the_same_in_pyiceberg_and_duckdb() {
    let Some(python) = python("evolved_tables_read_the_same_in_pyiceberg_and_duckdb") else {
        return;
    };
    let Warehouse {
        dir,
        path: warehouse,
        ctx,
        catalog,
    } = warehouse("alter").await;
    let mut tables = Vec::new();
    for version in [2, 3] {
        let name = format!("db.evolved_v{version}");
        run(
            &ctx,
            &format!(
                "CREATE TABLE {name} (id BIGINT NOT NULL, n INT, price FLOAT, s STRUCT<x INT>) \
                 PARTITION BY (bucket(4, id)) TBLPROPERTIES ('format-version' = '{version}')"
            ),
        )
        .await;
        let steps = steps(version == 3);
        for (statement, py) in &steps {
            let statement = statement.replace("{t}", &name);
            let outcome = icefloe::sql::sql(&ctx, &statement).await;
            let outcome = match outcome {
                Ok(frame) => frame.collect().await.map(|_| ()),
                Err(e) => Err(e),
            };
            let refused = py["op"] == "refused";
            match outcome {
                Err(e) if !refused => panic!("{statement}: {e}"),
                Ok(()) if refused => panic!("{statement}: should have been refused"),
                _ => {}
            }
        }
        let rows = dir.path().join(format!("{name}.arrow"));
        dump(&ctx, &format!("SELECT * FROM {name}"), &rows).await;
        let table = catalog
            .load_table("db", &format!("evolved_v{version}"))
            .await
            .unwrap();
        tables.push(json!({
            "name": name,
            "twin": format!("db.twin_v{version}"),
            "format_version": version,
            "steps": steps.iter().map(|(_, py)| py).collect::<Vec<_>>(),
            "metadata_location": table.metadata_location(),
            "icefloe_rows": rows,
        }));
    }
    std::fs::write(
        dir.path().join("alter.json"),
        serde_json::to_vec_pretty(&json!({ "tables": tables })).unwrap(),
    )
    .unwrap();
    let script = Path::new("alter.py");
    assert!(
        interop_py_script(&python, script, &["check", &warehouse]),
        "PyIceberg's twin, or a reader of icefloe's evolved table, disagrees (output above)"
    );

    // The other way: PyIceberg evolves a table it created and wrote; icefloe reads what
    // PyIceberg reads.
    assert!(
        interop_py_script(&python, script, &["pyiceberg", &warehouse]),
        "PyIceberg could not evolve its table"
    );
    let rows = dir.path().join("db.by_pyiceberg.arrow");
    dump(&ctx, "SELECT * FROM db.by_pyiceberg", &rows).await;
    assert!(
        interop_py_script(
            &python,
            script,
            &["compare", &warehouse, &rows.display().to_string()]
        ),
        "icefloe reads PyIceberg's evolved table differently (output above)"
    );
}

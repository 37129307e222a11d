//! ALTER TABLE through SQL and the Rust transactions behind it: SHOW CREATE TABLE of an evolved
//! table makes the same table, and evolutions racing another writer's fail as conflicts.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

use crate::catalog::{SqliteCatalog, TableIdent};
use crate::spec::Transform;
use crate::transaction::{ReplaceSortOrder, Transaction, UpdateSpec};
use crate::{Error, FileIO, Relocation};

async fn scratch(
    dir: &std::path::Path,
) -> (SessionContext, std::sync::Arc<dyn crate::catalog::Catalog>) {
    let db = dir.join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    let catalog = crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    run(&ctx, "CREATE SCHEMA db").await;
    (ctx, catalog)
}

async fn run(ctx: &SessionContext, statement: &str) -> String {
    let batches = crate::sql::sql(ctx, statement)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

/// DESCRIBE without the field-id column: a table made again numbers its fields afresh.
async fn described(ctx: &SessionContext, table: &str) -> Vec<String> {
    let batches = crate::sql::sql(ctx, &format!("DESCRIBE {table}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut lines = Vec::new();
    for batch in &batches {
        let columns: Vec<_> = (0..batch.num_columns())
            .filter(|i| batch.schema().field(*i).name() != "field_id")
            .map(|i| {
                datafusion::arrow::compute::cast(
                    batch.column(i),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
                .unwrap()
            })
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<&str> = columns
                .iter()
                .map(|c| match c.is_null(row) {
                    true => "NULL",
                    false => c.as_string::<i32>().value(row),
                })
                .collect();
            lines.push(cells.join(" | "));
        }
    }
    lines
}

#[tokio::test]
async fn show_create_table_of_an_evolved_table_makes_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, catalog) = scratch(dir.path()).await;
    for statement in [
        "CREATE TABLE db.t (id BIGINT NOT NULL, category VARCHAR COMMENT 'kind', ts TIMESTAMP) \
         PARTITION BY (category) TBLPROPERTIES ('format-version' = '3')",
        "ALTER TABLE db.t ADD COLUMN price DOUBLE AFTER id",
        "ALTER TABLE db.t ADD COLUMN level INT NOT NULL DEFAULT 3 COMMENT 'how deep'",
        "ALTER TABLE db.t ALTER COLUMN level SET DEFAULT 4",
        "ALTER TABLE db.t ADD COLUMN since DATE DEFAULT DATE '2024-02-29'",
        "ALTER TABLE db.t ALTER COLUMN price COMMENT 'in euros'",
        "ALTER TABLE db.t ADD PARTITION FIELD bucket(8, id)",
        "ALTER TABLE db.t REPLACE PARTITION FIELD category WITH truncate(3, category)",
        "ALTER TABLE db.t ADD PARTITION FIELD hours(ts)",
        "ALTER TABLE db.t WRITE LOCALLY ORDERED BY category DESC NULLS FIRST, bucket(4, id)",
        "ALTER TABLE db.t SET TBLPROPERTIES ('owner' = 'analytics')",
        "ALTER TABLE db.t SET IDENTIFIER FIELDS id",
        "ALTER TABLE db.t ADD COLUMN seen TIMESTAMP(6)",
    ] {
        run(&ctx, statement).await;
    }
    let shown = run(&ctx, "SHOW CREATE TABLE db.t").await;
    let created = crate::sql::sql(&ctx, "SHOW CREATE TABLE db.t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = created[0].column(0).as_string::<i32>().value(0).to_string();
    assert!(text.contains("WRITE LOCALLY ORDERED BY"), "{shown}");
    for statement in text.replace("db.t ", "db.u ").split(";\n") {
        run(&ctx, statement).await;
    }
    assert_eq!(described(&ctx, "db.t").await, described(&ctx, "db.u").await);
    // What DESCRIBE does not show: each column's write-default (what INSERT fills in).
    let write_defaults = |table: crate::table::Table| {
        let schema = table.metadata().current_schema().clone();
        let columns = schema.columns().iter();
        columns
            .map(|f| (f.name.clone(), f.write_default.clone()))
            .collect::<Vec<_>>()
    };
    let (t, u) = (
        TableIdent::parse_dotted("db.t").unwrap(),
        TableIdent::parse_dotted("db.u").unwrap(),
    );
    let (t, u) = (
        catalog.load_table(&t).await.unwrap(),
        catalog.load_table(&u).await.unwrap(),
    );
    let t_again = t.clone();
    let defaults = write_defaults(t);
    assert_eq!(
        defaults[4],
        ("level".to_string(), Some(serde_json::json!(4)))
    );
    assert_eq!(defaults, write_defaults(u.clone()));
    let identifiers =
        |t: &crate::table::Table| t.metadata().current_schema().identifier_field_ids.len();
    assert_eq!((identifiers(&t_again), identifiers(&u)), (1, 1));
    assert_eq!(
        run(&ctx, "SHOW TBLPROPERTIES db.t").await,
        run(&ctx, "SHOW TBLPROPERTIES db.u").await
    );
}

/// An evolution prepared on a base that another writer's evolution moved on from fails with
/// a conflict and changes nothing (Java's `assert-default-spec-id` / sort order checks).
#[tokio::test]
async fn evolutions_racing_another_writer_fail_as_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, catalog) = scratch(dir.path()).await;
    run(&ctx, "CREATE TABLE db.t (id BIGINT, v VARCHAR)").await;
    let ident = TableIdent::parse_dotted("db.t").unwrap();
    let base = catalog.load_table(&ident).await.unwrap();

    let first = Transaction::on(catalog.clone(), ident.clone(), base.clone())
        .update_spec(UpdateSpec::new().add_field("id", Transform::Bucket(4)))
        .replace_sort_order(ReplaceSortOrder::new().asc("v", Transform::Identity));
    first.commit().await.unwrap();

    let late_spec = Transaction::on(catalog.clone(), ident.clone(), base.clone())
        .update_spec(UpdateSpec::new().add_field("v", Transform::Truncate(2)));
    let err = late_spec.commit().await.unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");

    let late_order = Transaction::on(catalog.clone(), ident.clone(), base)
        .replace_sort_order(ReplaceSortOrder::new().desc("id", Transform::Identity));
    let err = late_order.commit().await.unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");

    let now = catalog.load_table(&ident).await.unwrap();
    let spec = now.metadata().default_partition_spec().unwrap();
    assert_eq!(spec.fields.len(), 1);
    assert_eq!(spec.fields[0].name, "id_bucket_4");
    let order = now.metadata().default_sort_order().unwrap();
    assert_eq!(order.fields.len(), 1);
    assert_eq!(order.fields[0].source_id, 2);
}

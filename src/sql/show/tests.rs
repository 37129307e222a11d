//! SHOW, DESCRIBE and SHOW CREATE TABLE: statements parsed, tables described, created again.

use super::*;
use datafusion::sql::sqlparser::dialect::GenericDialect;

fn parse(sql: &str) -> Option<Show> {
    parse_show(sql, &GenericDialect {}, true)
}

fn parts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn reads_each_form() {
    assert_eq!(
        parse("show tables;"),
        Some(Show::Tables {
            within: None,
            like: None
        })
    );
    assert_eq!(
        parse("SHOW TABLES IN Db LIKE 'ord%'"),
        Some(Show::Tables {
            within: Some(parts(&["db"])),
            like: Some("ord%".into())
        })
    );
    assert_eq!(
        parse("SHOW TABLES FROM ice.db"),
        Some(Show::Tables {
            within: Some(parts(&["ice", "db"])),
            like: None
        })
    );
    for sql in ["SHOW NAMESPACES", "show schemas", "SHOW DATABASES;"] {
        assert_eq!(parse(sql), Some(Show::Namespaces { like: None }), "{sql}");
    }
    assert_eq!(
        parse("SHOW TBLPROPERTIES db.\"Orders\" ('owner')"),
        Some(Show::Properties {
            table: parts(&["db", "Orders"]),
            key: Some("owner".into())
        })
    );
    assert_eq!(
        parse("SHOW CREATE TABLE db.orders"),
        Some(Show::CreateTable(parts(&["db", "orders"])))
    );
    assert_eq!(
        parse("DESCRIBE TABLE db.orders"),
        Some(Show::Describe(parts(&["db", "orders"])))
    );
    assert_eq!(
        parse("desc \"t@v1\""),
        Some(Show::Describe(parts(&["t@v1"])))
    );
    assert_eq!(
        parse("DESCRIBE table"),
        Some(Show::Describe(parts(&["table"])))
    );
}

#[test]
fn leaves_other_statements_to_datafusion() {
    for sql in [
        "SHOW ALL",
        "SHOW datafusion.execution.batch_size",
        "DESCRIBE SELECT 1",
        "SHOW TABLES extra",
        "SHOW TBLPROPERTIES t ('k'",
        "SHOW CREATE VIEW v",
        "SELECT 1",
        "SHOW COLUMNS FROM t",
    ] {
        assert_eq!(parse(sql), None, "{sql}");
    }
}

#[test]
fn patterns_as_sql_like_and_spark() {
    assert!(matches_pattern("ord%", "orders"));
    assert!(matches_pattern("ORD*", "orders"));
    assert!(matches_pattern("o_ders", "orders"));
    assert!(!matches_pattern("o_ders", "oders"));
    assert!(!matches_pattern("ord", "orders"));
    assert!(matches_pattern("%", ""));
}

async fn text_rows(ctx: &SessionContext, query: &str) -> Vec<String> {
    let batches = crate::sql::sql(ctx, query)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn create_statement_of(ctx: &SessionContext, table: &str) -> String {
    let batches = crate::sql::sql(ctx, &format!("SHOW CREATE TABLE {table}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let column = batches[0].column(0).as_any().downcast_ref::<StringArray>();
    column.unwrap().value(0).to_string()
}

/// The statement SHOW CREATE TABLE prints makes the same table: same DESCRIBE (types,
/// field ids, required flags, partition spec), same properties.
#[tokio::test]
async fn show_create_table_makes_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    crate::catalog::SqliteCatalog::create(&db, "default", crate::FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    crate::session::register_catalog_as_default(&ctx, &db, Default::default())
        .await
        .unwrap();
    crate::sql::sql(&ctx, "CREATE SCHEMA db").await.unwrap();
    crate::sql::sql(
        &ctx,
        "CREATE TABLE db.t (id BIGINT NOT NULL, \"Name\" VARCHAR, ok BOOLEAN, f FLOAT, d DOUBLE, \
         n INT, amount DECIMAL(12, 3), day DATE, ts TIMESTAMP, tz TIMESTAMP WITH TIME ZONE, \
         raw BYTEA, s STRUCT<x INT, y VARCHAR>, tags ARRAY<VARCHAR>) \
         PARTITION BY (month(day), bucket(8, id), truncate(3, \"Name\"), ok) \
         TBLPROPERTIES ('owner' = 'it''s me', 'format-version' = '2')",
    )
    .await
    .unwrap();
    let statement = create_statement_of(&ctx, "db.t").await;
    assert!(
        statement.starts_with("CREATE TABLE db.t (\n  id BIGINT NOT NULL,\n  \"Name\" VARCHAR,"),
        "{statement}"
    );
    let described = text_rows(&ctx, "DESCRIBE db.t").await;
    let properties = text_rows(&ctx, "SHOW TBLPROPERTIES db.t").await;
    crate::sql::sql(&ctx, "DROP TABLE db.t").await.unwrap();
    crate::sql::sql(&ctx, &statement).await.unwrap();
    assert_eq!(
        text_rows(&ctx, "DESCRIBE db.t").await,
        described,
        "{statement}"
    );
    assert_eq!(text_rows(&ctx, "SHOW TBLPROPERTIES db.t").await, properties);
    assert_eq!(create_statement_of(&ctx, "db.t").await, statement);
}

/// The v3 types are spelled so that CREATE TABLE reads them back as the same types.
#[tokio::test]
async fn show_create_table_of_v3_types_makes_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    crate::catalog::SqliteCatalog::create(&db, "default", crate::FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    crate::session::register_catalog_as_default(&ctx, &db, Default::default())
        .await
        .unwrap();
    crate::sql::sql(&ctx, "CREATE SCHEMA db").await.unwrap();
    crate::sql::sql(
        &ctx,
        "CREATE TABLE db.t (id INT, v VARIANT, g GEOMETRY('srid:3857'), h GEOGRAPHY, \
         k GEOGRAPHY('OGC:CRS84', 'karney'), u UNKNOWN, ts TIMESTAMP(9)) \
         TBLPROPERTIES ('format-version' = '3')",
    )
    .await
    .unwrap();
    let statement = create_statement_of(&ctx, "db.t").await;
    assert!(
        statement.starts_with(
            "CREATE TABLE db.t (\n  id INT,\n  v VARIANT,\n  g GEOMETRY('srid:3857'),\n  \
             h GEOGRAPHY,\n  k GEOGRAPHY('OGC:CRS84', 'karney'),\n  u UNKNOWN,\n  \
             ts TIMESTAMP(9)\n)"
        ),
        "{statement}"
    );
    let described = text_rows(&ctx, "DESCRIBE db.t").await;
    crate::sql::sql(&ctx, "DROP TABLE db.t").await.unwrap();
    crate::sql::sql(&ctx, &statement).await.unwrap();
    assert_eq!(
        text_rows(&ctx, "DESCRIBE db.t").await,
        described,
        "{statement}"
    );
}

/// A table outside any catalog: CREATE EXTERNAL TABLE at its location, the spec as the
/// `partitioning` option.
#[tokio::test]
async fn show_create_table_of_a_table_directory() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let location = dir.path().join("t").display().to_string();
    crate::sql::sql(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t (id BIGINT NOT NULL, at TIMESTAMP WITH TIME ZONE) STORED AS \
             ICEBERG LOCATION '{location}' OPTIONS ('partitioning' 'day(at)', 'format-version' '3')"
        ),
    )
    .await
    .unwrap();
    let statement = create_statement_of(&ctx, "t").await;
    // SQL's TIMESTAMP is nanoseconds: a v3 table keeps them (`timestamptz_ns`).
    assert!(statement.starts_with("CREATE EXTERNAL TABLE t (\n  id BIGINT NOT NULL,\n  at TIMESTAMP(9) WITH TIME ZONE\n)\nSTORED AS ICEBERG\nLOCATION '"), "{statement}");
    assert!(
        statement.contains("'format-version' '3'")
            && statement.contains("'partitioning' 'day(at)'"),
        "{statement}"
    );
    let described = text_rows(&ctx, "DESCRIBE t").await;
    // The same statement at another location makes the same table.
    let other = dir.path().join("t2").display().to_string();
    let again = statement
        .replacen("CREATE EXTERNAL TABLE t ", "CREATE EXTERNAL TABLE t2 ", 1)
        .replace(&location, &other);
    crate::sql::sql(&ctx, &again).await.unwrap();
    assert_eq!(text_rows(&ctx, "DESCRIBE t2").await, described);
}

#[test]
fn identifiers_quoted_only_when_needed() {
    assert_eq!(quote_ident("order_ts"), "order_ts");
    assert_eq!(quote_ident("Order"), "\"Order\"");
    assert_eq!(quote_ident("a b\""), "\"a b\"\"\"");
    assert_eq!(quote_ident("1x"), "\"1x\"");
}

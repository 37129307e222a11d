use super::*;
use datafusion::arrow::array::{BinaryArray, RecordBatch, StructArray};
use datafusion::arrow::datatypes::Schema as ArrowSchema;
use datafusion::datasource::MemTable;

/// A session with icefloe's functions and a table `t(id, v)` holding rows of the
/// `impala_trino_variant` fixture (bytes written by Trino), whose README gives their JSON.
async fn session() -> SessionContext {
    let ctx = SessionContext::new();
    register_functions(&ctx);
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    let rows = [
        ("010000", "142a000000"),                                 // 42
        ("010000", "030300050a0f140100000014020000001403000000"), // [1,2,3]
        (
            "11020003076167656e616d65",
            "0202000100050b141e00000015416c696365",
        ), // {"age":30,"name":"Alice"}
    ];
    let metadata = BinaryArray::from_iter_values(rows.iter().map(|r| hex(r.0)));
    let value = BinaryArray::from_iter_values(rows.iter().map(|r| hex(r.1)));
    let DataType::Struct(fields) = variant_data_type() else {
        unreachable!()
    };
    let v = StructArray::try_new(fields, vec![Arc::new(metadata), Arc::new(value)], None).unwrap();
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("v", variant_data_type(), true),
    ]));
    let ids = datafusion::arrow::array::Int32Array::from(vec![4, 24, 31]);
    let batch =
        RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(ids), Arc::new(v)]).unwrap();
    let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

/// The first column of a query, rendered as text, one string per row.
async fn column(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let options = datafusion::arrow::util::display::FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for batch in batches {
        let f = datafusion::arrow::util::display::ArrayFormatter::try_new(
            batch.column(0).as_ref(),
            &options,
        )
        .unwrap();
        out.extend((0..batch.num_rows()).map(|i| f.value(i).to_string()));
    }
    out
}

#[tokio::test]
async fn variant_to_json_gives_the_fixture_readme_values() {
    let ctx = session().await;
    let got = column(&ctx, "SELECT variant_to_json(v) FROM t ORDER BY id").await;
    assert_eq!(got, ["42", "[1,2,3]", r#"{"age":30,"name":"Alice"}"#]);
}

#[tokio::test]
async fn variant_get_walks_objects_and_arrays() {
    let ctx = session().await;
    let sql = "SELECT variant_to_json(variant_get(v, '$.name')) FROM t ORDER BY id";
    assert_eq!(column(&ctx, sql).await, ["NULL", "NULL", r#""Alice""#]);
    let sql = "SELECT variant_get(v, '[1]', 'long') FROM t ORDER BY id";
    assert_eq!(column(&ctx, sql).await, ["NULL", "2", "NULL"]);
    let sql = "SELECT variant_get(v, 'age', 'int') + 1 FROM t WHERE id = 31";
    assert_eq!(column(&ctx, sql).await, ["31"]);
    let sql = "SELECT variant_get(v, '$', 'string') FROM t ORDER BY id";
    assert_eq!(column(&ctx, sql).await, ["NULL", "NULL", "NULL"]);
}

#[tokio::test]
async fn parse_json_round_trips_through_variant_to_json() {
    let ctx = session().await;
    let sql = r#"SELECT variant_to_json(parse_json('{"b": [true, null, 1.5], "a": "x"}'))"#;
    // Objects come back with their keys sorted, as the variant encoding stores them.
    assert_eq!(
        column(&ctx, sql).await,
        [r#"{"a":"x","b":[true,null,1.5]}"#]
    );
    let err = ctx
        .sql("SELECT parse_json('{not json')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not JSON"), "{err}");
}

#[tokio::test]
async fn bad_arguments_are_planning_errors() {
    let ctx = session().await;
    for (sql, expected) in [
        ("SELECT variant_to_json(id) FROM t", "takes a variant"),
        (
            "SELECT variant_get(v, 'a', 'map') FROM t",
            "cannot extract as 'map'",
        ),
        ("SELECT variant_get(v) FROM t", "variant_get takes"),
    ] {
        let err = match ctx.sql(sql).await {
            Ok(df) => df.collect().await.unwrap_err(),
            Err(e) => e,
        };
        assert!(err.to_string().contains(expected), "{sql}: {err}");
    }
}

//! Metadata tables by SQL name (`"t$files"`, `t.files`, `ns.t.files`), by table function, and
//! at a state (`VERSION AS OF`, `"t@ref$relation"`). Counts come from the oracle's `inspect`
//! answers for `db.orders` (2 snapshots, one manifest and one data file each) and `db.refs`
//! (5 snapshots; `v1` has 1 manifest, `main` 3, `dev` 4; 5 refs; 3 snapshot-log entries).

use crate::sql::test_support::{
    ORDERS_FIRST, ORDERS_FIRST_MS, ORDERS_SECOND_MS, REFS_V1, WRITTEN_AT, error, row, session,
    warehouse,
};

const COUNT: &str = "SELECT count(*) FROM";

#[tokio::test]
async fn dollar_and_dotted_names_read_metadata_tables() {
    let ctx = session().await;
    let cases = [
        (r#""orders$snapshots""#, 2),
        ("orders.snapshots", 2),
        (r#"public."orders$history""#, 2),
        (r#"datafusion.public."refs$refs""#, 5),
        ("refs.refs", 5),
        ("refs.history", 3),
        (r#""refs$snapshots""#, 5),
        (r#""refs$metadata_log_entries""#, 8),
        (r#""refs$manifests""#, 3),
        (r#""refs@v1$manifests""#, 1),
        // Oracle all_manifests: 1 + 2 + 3 + 4 + 3 manifests over the five snapshots.
        (r#""refs$all_manifests""#, 13),
        (r#""orders$files""#, 2),
    ];
    for (name, expected) in cases {
        let query = format!("{COUNT} {name}");
        assert_eq!(row(&ctx, &query).await.unwrap(), [expected], "{query}");
        let batches = ctx.sql(&query).await.unwrap().collect().await.unwrap();
        assert_eq!(batches[0].num_rows(), 1, "{query}");
    }
}

#[tokio::test]
async fn version_clauses_apply_to_per_snapshot_relations() {
    let ctx = session().await;
    let cases = [
        (r#""refs$manifests" VERSION AS OF 'v1'"#.to_string(), 1),
        (format!(r#""refs$manifests" VERSION AS OF {REFS_V1}"#), 1),
        (r#""refs$manifests" VERSION AS OF 'dev'"#.to_string(), 4),
        (format!(r#""orders$files" VERSION AS OF {ORDERS_FIRST}"#), 1),
        (format!(r#"orders.files VERSION AS OF {ORDERS_FIRST}"#), 1),
        (
            format!(r#""orders$files" FOR SYSTEM_TIME AS OF {ORDERS_FIRST_MS}"#),
            1,
        ),
        (
            format!(r#""orders$manifests" TIMESTAMP AS OF {ORDERS_SECOND_MS}"#),
            2,
        ),
    ];
    for (name, expected) in cases {
        let query = format!("{COUNT} {name}");
        assert_eq!(row(&ctx, &query).await.unwrap(), [expected], "{query}");
    }
    let query = r#"SELECT added_snapshot_id FROM "refs$manifests" VERSION AS OF 'v1'"#;
    assert_eq!(row(&ctx, query).await.unwrap(), [REFS_V1]);
}

#[tokio::test]
async fn metadata_table_errors_name_what_was_asked() {
    let ctx = session().await;
    let cases = [
        (
            r#"SELECT * FROM "refs$history" VERSION AS OF 'v1'"#,
            vec!["history", "time travel"],
        ),
        (
            r#"SELECT * FROM "refs$manifests" VERSION AS OF 'nope'"#,
            vec!["refs", "nope"],
        ),
        (
            "SELECT * FROM iceberg_metadata('/no/such/table', 'snapshots')",
            vec!["iceberg_metadata('/no/such/table')"],
        ),
        (
            "SELECT * FROM iceberg_metadata('/no/such/table', 'nonsense')",
            vec!["not a metadata table", "snapshots"],
        ),
    ];
    for (query, needles) in cases {
        let err = error(&ctx, query).await;
        for needle in needles {
            assert!(err.contains(needle), "{query}: {err}");
        }
    }
}

#[tokio::test]
async fn iceberg_metadata_reads_a_location() {
    let ctx = session().await;
    let location = format!("{}/db/orders", warehouse());
    let relocate = format!("{WRITTEN_AT}={}", warehouse());
    let cases = [
        (format!("'{location}', 'snapshots', '{relocate}'"), 2),
        (
            format!("'{location}', 'MANIFESTS', {ORDERS_FIRST}, '{relocate}'"),
            1,
        ),
        (format!("'{location}', 'files', 'main', '{relocate}'"), 2),
        (format!("'{location}', 'history'"), 2),
    ];
    for (args, expected) in cases {
        let query = format!("{COUNT} iceberg_metadata({args})");
        assert_eq!(row(&ctx, &query).await.unwrap(), [expected], "{query}");
    }
}

#[tokio::test]
async fn catalog_tables_serve_metadata_tables() {
    use crate::sql::test_support::relocation;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    std::fs::copy(format!("{}/catalog.db", warehouse()), &db).unwrap();
    let ctx = datafusion::prelude::SessionContext::new();
    crate::sql::register(&ctx);
    crate::session::register_catalog_as_default(&ctx, &db, relocation())
        .await
        .unwrap();
    let cases = [
        (r#"db."orders$snapshots""#.to_string(), 2),
        ("db.orders.snapshots".to_string(), 2),
        ("db.refs.refs".to_string(), 5),
        (
            format!(r#"db."orders$manifests" VERSION AS OF {ORDERS_FIRST}"#),
            1,
        ),
        (
            format!("db.orders.manifests VERSION AS OF {ORDERS_FIRST}"),
            1,
        ),
    ];
    for (name, expected) in cases {
        let query = format!("{COUNT} {name}");
        assert_eq!(row(&ctx, &query).await.unwrap(), [expected], "{query}");
    }
    // A ref and a relation in one name: the relation of the ref's snapshot, as the clause
    // gives it.
    let named = row(&ctx, &format!(r#"{COUNT} db."refs@v1$manifests""#)).await;
    let clause = format!(r#"{COUNT} db."refs$manifests" VERSION AS OF 'v1'"#);
    let current = row(&ctx, &format!(r#"{COUNT} db."refs$manifests""#)).await;
    assert_eq!(named.unwrap(), row(&ctx, &clause).await.unwrap());
    assert_ne!(
        row(&ctx, &clause).await.unwrap(),
        current.unwrap(),
        "v1 is not the current snapshot"
    );
}

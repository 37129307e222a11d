//! One conformance suite for every [`Catalog`]: the SQLite catalog, the directory catalog and
//! the REST catalog run the same checks of the trait's contract (see
//! `icefloe::catalog::Catalog`): what a second writer sees, lost races, unknown tables, names
//! with dots and Unicode, drops.
//!
//! Each check gets two instances of one catalog on the same storage (two connections, two
//! directory catalogs, two REST clients), as two processes would have them. The REST server is
//! one icefloe did not write: PyIceberg's `SqlCatalog` behind the REST protocol
//! (`tests/interop/rest_adapter.py`, a fresh one per check), which decides every requirement
//! and update itself. Without `ICEFLOE_REST_PYTHON` the REST kind is NOT run (said on stderr).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch};
use icefloe::catalog::{Catalog, DirectoryCatalog, Namespace, SqliteCatalog, TableIdent};
use icefloe::spec::{NestedField, PrimitiveType, Schema, TableRequirement, TableUpdate};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::transaction::Transaction;
use icefloe::write::{AppendWriter, create_with_files};
use icefloe::{Error, FileIO, Table, TableCreation};

use crate::servers::RestAdapter;

/// The catalog kinds under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Sqlite,
    Directory,
    Rest,
}

/// The kinds this run can check: REST only with the adapter's Python (said when not).
fn kinds(test: &str) -> Vec<Kind> {
    let mut kinds = vec![Kind::Sqlite, Kind::Directory];
    match std::env::var_os("ICEFLOE_REST_PYTHON").filter(|p| !p.is_empty()) {
        Some(_) => kinds.push(Kind::Rest),
        None => eprintln!(
            "catalogs {test}: the REST catalog's contract checks were NOT run: \
             ICEFLOE_REST_PYTHON is not set (.ci/run sets it up)"
        ),
    }
    kinds
}

/// What a check's catalogs live in: a scratch directory, and for REST the server.
struct Scratch {
    _dir: tempfile::TempDir,
    _server: Option<RestAdapter>,
}

/// Two instances of one catalog in a new scratch directory (the first creates it).
async fn catalogs(kind: Kind) -> (Scratch, Arc<dyn Catalog>, Arc<dyn Catalog>) {
    let dir = tempfile::tempdir().expect("tmp");
    let io = FileIO::default();
    let (server, a, b): (_, Arc<dyn Catalog>, Arc<dyn Catalog>) = match kind {
        Kind::Sqlite => {
            let db = dir.path().join("catalog.db");
            let wh = dir.path().join("wh").display().to_string();
            let first = SqliteCatalog::create(&db, "c", io.clone()).expect("create catalog");
            let second = SqliteCatalog::open(&db, Some("c"), io).expect("open catalog");
            let (first, second) = (first.with_warehouse(&wh), second.with_warehouse(&wh));
            (None, Arc::new(first), Arc::new(second))
        }
        Kind::Directory => {
            let root = dir.path().join("wh");
            std::fs::create_dir_all(&root).expect("root");
            let root = root.display().to_string();
            let first = DirectoryCatalog::new(io.clone(), &root).expect("catalog");
            let second = DirectoryCatalog::new(io, &root).expect("catalog");
            (None, Arc::new(first), Arc::new(second))
        }
        Kind::Rest => {
            let server = RestAdapter::start(dir.path(), None).expect("start the REST adapter");
            let (first, second) = (
                server.catalog("rest-a").await,
                server.catalog("rest-b").await,
            );
            (Some(server), Arc::new(first), Arc::new(second))
        }
    };
    let scratch = Scratch {
        _dir: dir,
        _server: server,
    };
    (scratch, a, b)
}

/// Two instances of one catalog with namespace `db` and an empty table `db.t`, created
/// through the first.
async fn with_table(
    kind: Kind,
) -> (
    Scratch,
    Arc<dyn Catalog>,
    Arc<dyn Catalog>,
    TableIdent,
    Table,
) {
    let (scratch, a, b) = catalogs(kind).await;
    a.create_namespace(&namespace(&["db"]), BTreeMap::new())
        .await
        .expect("namespace");
    let t = ident(&["db"], "t");
    let created = a.create_table(&t, &creation()).await.expect("create");
    (scratch, a, b, t, created)
}

/// The local path of a table location (`/x` or `file:///x`).
fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap_or(location))
}

fn namespace(levels: &[&str]) -> Namespace {
    Namespace::new(levels.iter().copied()).expect("namespace")
}

fn ident(levels: &[&str], name: &str) -> TableIdent {
    TableIdent::new(namespace(levels), name).expect("ident")
}

fn creation() -> TableCreation {
    TableCreation::new(Schema::new(
        0,
        vec![NestedField::required(1, "id", PrimitiveType::Long)],
    ))
}

/// Writes `ids` as a data file of `table` and commits them as one append, returning the
/// committed version.
async fn append(
    catalog: &Arc<dyn Catalog>,
    ident: &TableIdent,
    table: Table,
    ids: &[i64],
) -> Table {
    let schema = table.metadata().current_schema().clone();
    let arrow = Arc::new(schema_to_arrow(&schema).expect("arrow schema"));
    let batch =
        RecordBatch::try_new(arrow, vec![Arc::new(Int64Array::from(ids.to_vec()))]).expect("batch");
    let mut writer = AppendWriter::new(table.io(), table.metadata(), &schema).expect("writer");
    writer.write(&batch).await.expect("write");
    let files = writer.finish().await.expect("finish");
    Transaction::on(Arc::clone(catalog), ident.clone(), table)
        .fast_append(files)
        .commit()
        .await
        .expect("append")
}

fn total_records(table: &Table) -> i64 {
    table
        .metadata()
        .current_snapshot()
        .and_then(|s| s.summary.as_ref())
        .and_then(|s| s.get("total-records"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_second_writer_sees_every_commit() {
    for kind in kinds("a_second_writer_sees_every_commit") {
        let (_scratch, a, b, t, created) = with_table(kind).await;
        assert!(b.table_exists(&t).await.expect("exists"), "{kind:?}");
        let seen = b.load_table(&t).await.expect("load");
        assert_eq!(seen.metadata().table_uuid, created.metadata().table_uuid);

        let appended = append(&a, &t, created, &[1, 2, 3]).await;
        let seen = b.load_table(&t).await.expect("load");
        assert_eq!(
            seen.metadata_location(),
            appended.metadata_location(),
            "{kind:?}"
        );
        assert_eq!(total_records(&seen), 3);

        // b commits on what it saw; a sees b's commit on top of its own.
        let both = append(&b, &t, seen, &[4]).await;
        let props = Transaction::on(Arc::clone(&b), t.clone(), both)
            .set_properties([("owner", "b")])
            .commit()
            .await
            .expect("properties");
        let seen = a.load_table(&t).await.expect("load");
        assert_eq!(
            seen.metadata_location(),
            props.metadata_location(),
            "{kind:?}"
        );
        assert_eq!(total_records(&seen), 4);
        assert_eq!(seen.metadata().property("owner"), Some("b"));
        assert_eq!(seen.metadata().snapshots.len(), 2);
        // Each commit logged the file it replaced.
        assert_eq!(seen.metadata().metadata_log.len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn a_requirement_that_does_not_hold_is_a_conflict_and_changes_nothing() {
    for kind in kinds("a_requirement_that_does_not_hold_is_a_conflict_and_changes_nothing") {
        let (_scratch, a, b, t, created) = with_table(kind).await;
        let stale = b.load_table(&t).await.expect("load");
        let appended = append(&a, &t, created, &[1]).await;

        // b states what it saw: main had no snapshot. That no longer holds.
        let requirements = [TableRequirement::AssertRefSnapshotId {
            ref_name: "main".into(),
            snapshot_id: stale.metadata().current_snapshot_id,
        }];
        let updates = [TableUpdate::SetProperties {
            updates: BTreeMap::from([("k".to_string(), "v".to_string())]),
        }];
        let err = b
            .commit_table(&t, &requirements, &updates)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::CommitConflict { .. }),
            "{kind:?}: {err}"
        );
        let err = b
            .commit_table(
                &t,
                &[TableRequirement::AssertTableUuid {
                    uuid: "00000000-0000-0000-0000-000000000000".into(),
                }],
                &updates,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::CommitConflict { .. }),
            "{kind:?}: {err}"
        );
        let err = b
            .commit_table(&t, &[TableRequirement::AssertCreate], &updates)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::CommitConflict { .. }),
            "{kind:?}: {err}"
        );
        let now = a.load_table(&t).await.expect("load");
        assert_eq!(
            now.metadata_location(),
            appended.metadata_location(),
            "{kind:?}"
        );
        assert_eq!(now.metadata().property("k"), None);
        // No metadata file was left by the refused commits.
        let metadata_dir = local(&now.metadata().location).join("metadata");
        let versions = std::fs::read_dir(metadata_dir)
            .expect("metadata dir")
            .filter(|e| {
                let name = e.as_ref().expect("entry").file_name();
                name.to_string_lossy().ends_with(".metadata.json")
            })
            .count();
        assert_eq!(versions, 2, "{kind:?}");
    }
}

#[tokio::test]
async fn racing_writers_all_commit_through_retries() {
    for kind in kinds("racing_writers_all_commit_through_retries") {
        let (_scratch, a, b, t, created) = with_table(kind).await;
        // Every writer starts from the same version: all but one lose their first race.
        let writers = (0..8).map(|i| {
            let catalog = if i % 2 == 0 {
                Arc::clone(&a)
            } else {
                Arc::clone(&b)
            };
            let (t, base) = (t.clone(), created.clone());
            tokio::spawn(async move { append(&catalog, &t, base, &[i]).await })
        });
        for writer in writers.collect::<Vec<_>>() {
            writer.await.expect("writer");
        }
        let last = b.load_table(&t).await.expect("load");
        assert_eq!(total_records(&last), 8, "{kind:?}");
        assert_eq!(last.metadata().snapshots.len(), 8, "{kind:?}");
    }
}

#[tokio::test]
async fn unknown_tables_and_namespaces_are_not_found_by_name() {
    for kind in kinds("unknown_tables_and_namespaces_are_not_found_by_name") {
        let (_scratch, a, _) = catalogs(kind).await;
        a.create_namespace(&namespace(&["db"]), BTreeMap::new())
            .await
            .expect("namespace");
        let t = ident(&["db"], "nope");
        let not_found = |r: Result<(), Error>| match r {
            Err(e @ Error::NotFound { .. }) => assert!(e.to_string().contains("nope"), "{e}"),
            other => panic!("{kind:?}: {other:?}"),
        };
        not_found(a.load_table(&t).await.map(drop));
        not_found(a.drop_table(&t, false).await);
        not_found(a.commit_table(&t, &[], &[]).await.map(drop));
        assert!(!a.table_exists(&t).await.expect("exists"));
        not_found(a.list_tables(&namespace(&["nope"])).await.map(drop));
        not_found(
            a.create_table(&ident(&["nope"], "t"), &creation())
                .await
                .map(drop),
        );
    }
}

#[tokio::test]
async fn names_with_dots_and_unicode_round_trip() {
    for kind in kinds("names_with_dots_and_unicode_round_trip") {
        let (_scratch, a, b) = catalogs(kind).await;
        let ns = namespace(&["données", "季節"]);
        a.create_namespace(&ns, BTreeMap::new())
            .await
            .expect("namespace");
        let names = ["t.v1", "日本", "Ünïcode table"];
        for name in names {
            a.create_table(&ident(&["données", "季節"], name), &creation())
                .await
                .expect(name);
        }
        let mut listed: Vec<String> = b
            .list_tables(&ns)
            .await
            .expect("list")
            .into_iter()
            .map(|t| t.name)
            .collect();
        listed.sort();
        let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(listed, expected, "{kind:?}");
        assert_eq!(
            b.list_namespaces(&Namespace::root()).await.expect("list"),
            vec![namespace(&["données"])],
            "{kind:?}"
        );
        assert_eq!(
            b.list_namespaces(&namespace(&["données"]))
                .await
                .expect("list"),
            vec![ns.clone()],
            "{kind:?}"
        );
        for name in names {
            let t = b
                .load_table(&ident(&["données", "季節"], name))
                .await
                .expect(name);
            assert!(t.metadata().location.ends_with(name), "{kind:?}");
        }
        // A level with a dot: a directory name may hold one; the SQLite catalog stores
        // namespaces dot-joined and refuses it rather than read it back as two levels.
        let dotted = namespace(&["a.b"]);
        let made = a.create_namespace(&dotted, BTreeMap::new()).await;
        match kind {
            Kind::Directory => made.expect("a dotted directory name"),
            Kind::Sqlite => assert!(
                matches!(made, Err(Error::InvalidArgument { .. })),
                "{made:?}"
            ),
            // The server's to decide: PyIceberg's SqlCatalog takes it (and lists it as two
            // levels, as its own clients see it).
            Kind::Rest => {}
        }
    }
}

#[tokio::test]
async fn tables_are_created_once_and_dropped_with_or_without_their_files() {
    for kind in kinds("tables_are_created_once_and_dropped_with_or_without_their_files") {
        let (_scratch, a, b, t, created) = with_table(kind).await;
        let again = b.create_table(&t, &creation()).await;
        assert!(
            matches!(again, Err(Error::AlreadyExists { .. })),
            "{kind:?}: {again:?}"
        );
        let appended = append(&a, &t, created, &[1, 2]).await;
        let data: Vec<String> = appended
            .metadata()
            .current_snapshot()
            .map(|_| ())
            .into_iter()
            .flat_map(|_| {
                let dir = local(&appended.metadata().location).join("data");
                std::fs::read_dir(dir)
                    .expect("data dir")
                    .map(|e| e.expect("entry").path().display().to_string())
            })
            .collect();
        assert_eq!(data.len(), 1);

        a.drop_table(&t, false).await.expect("drop");
        assert!(!b.table_exists(&t).await.expect("exists"), "{kind:?}");
        assert!(
            Path::new(&data[0]).exists(),
            "{kind:?}: a drop without purge keeps data"
        );

        let t2 = ident(&["db"], "t2");
        let created = a.create_table(&t2, &creation()).await.expect("create");
        let appended = append(&a, &t2, created, &[3]).await;
        let location = appended.metadata().location.clone();
        b.drop_table(&t2, true).await.expect("purge");
        assert!(!a.table_exists(&t2).await.expect("exists"));
        let left: Vec<_> = walk(&local(&location));
        assert!(left.is_empty(), "{kind:?}: purge left {left:?}");
    }
}

#[tokio::test]
async fn a_table_replaced_under_its_name_is_never_followed() {
    for kind in kinds("names_with_dots_and_unicode_round_trip") {
        let (_scratch, a, b) = catalogs(kind).await;
        a.create_namespace(&namespace(&["db"]), BTreeMap::new())
            .await
            .expect("namespace");
        let t = ident(&["db"], "t");
        let old = a.create_table(&t, &creation()).await.expect("create");
        b.drop_table(&t, true).await.expect("drop");
        b.create_table(&t, &creation()).await.expect("create again");
        let err = Transaction::on(Arc::clone(&a), t.clone(), old)
            .set_properties([("k", "v")])
            .commit()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("replaced"), "{kind:?}: {err}");
        let now = b.load_table(&t).await.expect("load");
        assert_eq!(now.metadata().property("k"), None);
    }
}

#[tokio::test]
async fn rename_and_register_where_the_catalog_keeps_pointers() {
    for kind in kinds("rename_and_register_where_the_catalog_keeps_pointers")
        .into_iter()
        .filter(|k| *k != Kind::Directory)
    {
        let (_scratch, a, b) = catalogs(kind).await;
        a.create_namespace(&namespace(&["db"]), BTreeMap::new())
            .await
            .expect("namespace");
        a.create_namespace(&namespace(&["other"]), BTreeMap::new())
            .await
            .expect("namespace");
        let (t, moved) = (ident(&["db"], "t"), ident(&["other"], "u"));
        let created = a.create_table(&t, &creation()).await.expect("create");
        a.rename_table(&t, &moved).await.expect("rename");
        assert!(!b.table_exists(&t).await.expect("exists"), "{kind:?}");
        let renamed = b.load_table(&moved).await.expect("load");
        assert_eq!(renamed.metadata_location(), created.metadata_location());
        let again = b.rename_table(&t, &moved).await;
        assert!(
            matches!(again, Err(Error::NotFound { .. })),
            "{kind:?}: {again:?}"
        );

        let copy = ident(&["db"], "copy");
        let registered = b
            .register_table(&copy, created.metadata_location())
            .await
            .expect("register");
        assert_eq!(
            registered.metadata().table_uuid,
            created.metadata().table_uuid
        );
        let twice = a.register_table(&copy, created.metadata_location()).await;
        assert!(
            matches!(twice, Err(Error::AlreadyExists { .. })),
            "{kind:?}: {twice:?}"
        );
    }
    let (_scratch, dir, _) = catalogs(Kind::Directory).await;
    let (t, moved) = (ident(&["db"], "t"), ident(&["other"], "u"));
    let refused = dir.rename_table(&t, &moved).await;
    assert!(matches!(refused, Err(Error::Unsupported(_))), "{refused:?}");
}

/// Every file under `dir` (none when it is gone).
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flat_map(|e| {
            let path = e.expect("entry").path();
            match path.is_dir() {
                true => walk(&path),
                false => vec![path],
            }
        })
        .collect()
}

#[tokio::test]
async fn a_staged_table_appears_with_its_first_rows_in_one_commit() {
    for kind in kinds("a_staged_table_appears_with_its_first_rows_in_one_commit") {
        let (_scratch, a, b) = catalogs(kind).await;
        a.create_namespace(&namespace(&["db"]), BTreeMap::new())
            .await
            .expect("namespace");
        let t = ident(&["db"], "ctas");
        let staged = a.stage_create(&t, &creation()).await.expect("stage");
        let other = b.stage_create(&t, &creation()).await.expect("stage again");
        assert!(
            !b.table_exists(&t).await.expect("exists"),
            "{kind:?}: staged is not created"
        );
        assert_eq!(staged.metadata_location(), "");

        // Two writers stage the same name and both write rows: one commit creates the table
        // with its rows, the other loses and its data files are deleted.
        let files = |table: &Table, ids: &[i64]| {
            let (table, ids) = (table.clone(), ids.to_vec());
            async move {
                let schema = table.metadata().current_schema().clone();
                let arrow = Arc::new(schema_to_arrow(&schema).expect("arrow schema"));
                let batch = RecordBatch::try_new(arrow, vec![Arc::new(Int64Array::from(ids))])
                    .expect("batch");
                let mut writer =
                    AppendWriter::new(table.io(), table.metadata(), &schema).expect("writer");
                writer.write(&batch).await.expect("write");
                writer.finish().await.expect("finish")
            }
        };
        let first = files(&staged, &[1, 2, 3]).await;
        let second = files(&other, &[7]).await;
        let lost_file = local(&second[0].1.file_path);
        let created = create_with_files(Arc::clone(&a), t.clone(), staged, first)
            .await
            .expect("create with rows");
        assert_eq!(total_records(&created), 3, "{kind:?}");
        assert_eq!(created.metadata().snapshots.len(), 1);
        let lost = create_with_files(Arc::clone(&b), t.clone(), other, second)
            .await
            .unwrap_err();
        assert!(
            matches!(lost, Error::AlreadyExists { .. }),
            "{kind:?}: {lost}"
        );
        assert!(
            !lost_file.exists(),
            "{kind:?}: the loser's data file is deleted"
        );

        let seen = b.load_table(&t).await.expect("load");
        assert_eq!(seen.metadata().table_uuid, created.metadata().table_uuid);
        assert_eq!(total_records(&seen), 3, "{kind:?}");
        let again = a.stage_create(&t, &creation()).await;
        assert!(
            matches!(again, Err(Error::AlreadyExists { .. })),
            "{kind:?}: {again:?}"
        );
        let nowhere = a.stage_create(&ident(&["nope"], "t"), &creation()).await;
        assert!(
            matches!(nowhere, Err(Error::NotFound { .. })),
            "{kind:?}: {nowhere:?}"
        );
    }
}

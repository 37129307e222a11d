//! Conformance: icefloe against tables written by other engines, with answers computed by
//! other readers (see `tests/fixtures/README.md`).
//!
//! The fixture root is `$ICEFLOE_FIXTURES` when set (CI points it at the full shared sets, and
//! then every table there must be checked), else the copied subset in `tests/fixtures`, where
//! tables that were not copied are skipped. Each suite collects every mismatch and fails once at
//! the end, listing them all.

mod bad_input;
mod catalogs;
mod compaction;
mod compaction_concurrency;
mod corruption;
mod dml_concurrency;
mod expire;
mod external;
mod harness_selftest;
mod inspect;
mod inspect_compare;
mod inspect_external;
mod inspect_filters;
mod inspect_options;
mod inspect_quirks;
mod inspect_travel;
mod inspect_types;
#[path = "../interop.rs"]
mod interop;
mod layering;
#[path = "../pruning.rs"]
mod pruning;
mod pyiceberg;
mod pyiceberg_incremental;
mod pyiceberg_refs;
mod pyiceberg_travel;
mod render;
mod rest;
mod s3;
mod safety;
#[path = "../servers.rs"]
mod servers;
mod sql_expr;
mod support;
mod time_travel;

use support::FixtureRoot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_tables_match_expected_answers() {
    let root = FixtureRoot::from_env();
    let report = external::check_all(&root).await;
    report.finish(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyiceberg_warehouse_matches_oracle() {
    let root = FixtureRoot::from_env();
    let report = pyiceberg::check_all(&root).await;
    report.finish(&root);
}

/// Metadata tables (`"t$files"`, ...) against PyIceberg's `inspect` answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyiceberg_metadata_tables_match_inspect() {
    let root = FixtureRoot::from_env();
    let report = inspect::check_all(&root).await;
    report.finish(&root);
}

/// Metadata tables of the external tables: invariants against their metadata and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_metadata_tables_hold_invariants() {
    let root = FixtureRoot::from_env();
    let report = inspect_external::check_all(&root).await;
    report.finish(&root);
}

/// Expiring every PyIceberg fixture table leaves its kept snapshots answering as the oracle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_fixture_tables_keep_their_answers() {
    let root = FixtureRoot::from_env();
    let report = expire::check_all(&root).await;
    report.finish(&root);
}

/// Every fixture table, compacted with `rewrite-all`, keeps its answers at every snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_tables_compacted_with_rewrite_all_keep_their_answers() {
    let root = FixtureRoot::from_env();
    let report = compaction::check_all(&root, compaction::Run::RewriteAll).await;
    report.finish(&root);
}

/// Every fixture table, compacted with Java's default options, keeps its answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_tables_compacted_with_default_options_keep_their_answers() {
    let root = FixtureRoot::from_env();
    let report = compaction::check_all(&root, compaction::Run::Defaults).await;
    report.finish(&root);
}

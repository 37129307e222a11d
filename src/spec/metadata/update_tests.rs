//! Tests of committing a snapshot to metadata.

use super::*;
#[test]
fn new_snapshot_ids_are_positive_and_distinct() {
    let ids: std::collections::HashSet<i64> = (0..1000).map(|_| new_snapshot_id()).collect();
    assert_eq!(ids.len(), 1000);
    assert!(ids.iter().all(|id| *id > 0));
}

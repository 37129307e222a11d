//! The retention policy, rule by rule and in combination. Every expected set is worked out by
//! hand from the spec's steps (module docs of `retention.rs`), written next to each case.

use serde_json::{Value, json};

use super::*;
use crate::catalog::test_support::metadata_json_with;

const NOW: i64 = 10_000_000_000;
const DAY: i64 = 86_400_000;

/// main's history: snapshot `i` (1..=5) is `AGES[i - 1]` days old, each the parent of the next.
const AGES: [i64; 5] = [10, 8, 6, 2, 1];

/// A table with main's five snapshots, snapshot 6 (3 days old, child of 2) for branches off
/// 2, `refs` (main added when absent) and `properties` (JSON object members).
fn table(refs: Value, properties: &str) -> TableMetadata {
    let mut snapshots: Vec<Value> = AGES
        .iter()
        .enumerate()
        .map(|(i, age)| {
            let id = i as i64 + 1;
            let mut s = json!({"snapshot-id": id, "sequence-number": id,
                "timestamp-ms": NOW - age * DAY, "manifest-list": format!("/t/snap-{id}.avro"),
                "summary": {"operation": "append"}});
            if id > 1 {
                s["parent-snapshot-id"] = json!(id - 1);
            }
            s
        })
        .collect();
    snapshots.push(
        json!({"snapshot-id": 6, "parent-snapshot-id": 2, "sequence-number": 6,
        "timestamp-ms": NOW - 3 * DAY, "manifest-list": "/t/snap-6.avro",
        "summary": {"operation": "append"}}),
    );
    let mut v: Value = serde_json::from_str(&metadata_json_with("/t", 2, properties)).unwrap();
    let mut refs = refs;
    if refs.get("main").is_none() {
        refs["main"] = json!({"snapshot-id": 5, "type": "branch"});
    }
    v["snapshots"] = json!(snapshots);
    v["current-snapshot-id"] = refs["main"]["snapshot-id"].clone();
    v["refs"] = refs;
    v["last-sequence-number"] = json!(6);
    TableMetadata::parse(v.to_string().as_bytes()).unwrap()
}

fn run(refs: Value, properties: &str) -> Retention {
    let m = table(refs, properties);
    retention(&m, &RetentionDefaults::of(&m, NOW).unwrap()).unwrap()
}

fn kept(r: &Retention) -> Vec<i64> {
    r.kept.iter().copied().collect()
}

#[test]
fn main_keeps_what_is_young_or_within_its_count() {
    // Defaults: 5 days, at least 1. Head 5 (1 day), 4 (2 days) are young; 3 (6 days) is old
    // and third: the walk stops there. 6 is on no branch.
    let r = run(json!({}), "");
    assert_eq!(kept(&r), [4, 5]);
    assert_eq!(r.expired, [1, 2, 3, 6]);
    assert!(r.removed_refs.is_empty());
}

#[test]
fn min_snapshots_to_keep_keeps_old_snapshots_at_the_head_of_a_branch() {
    // 3 kept whatever their age: 5, 4, 3; then 2 is old and fourth.
    let main = json!({"main": {"snapshot-id": 5, "type": "branch", "min-snapshots-to-keep": 3}});
    assert_eq!(kept(&run(main, "")), [3, 4, 5]);
    // The same from the table property.
    assert_eq!(
        kept(&run(
            json!({}),
            r#""history.expire.min-snapshots-to-keep": "3""#
        )),
        [3, 4, 5]
    );
    // A ref's own setting wins over the property.
    let main = json!({"main": {"snapshot-id": 5, "type": "branch", "min-snapshots-to-keep": 1}});
    let property = r#""history.expire.min-snapshots-to-keep": "4""#;
    assert_eq!(kept(&run(main, property)), [4, 5]);
}

#[test]
fn max_snapshot_age_bounds_the_walk_and_is_inclusive() {
    // 7 days: 5, 4, 3 (6 days) are young; 2 (8 days) is old and beyond the count.
    let main =
        json!({"main": {"snapshot-id": 5, "type": "branch", "max-snapshot-age-ms": 7 * DAY}});
    assert_eq!(kept(&run(main, "")), [3, 4, 5]);
    // Exactly 6 days old is not older than 6 days.
    let main =
        json!({"main": {"snapshot-id": 5, "type": "branch", "max-snapshot-age-ms": 6 * DAY}});
    assert_eq!(kept(&run(main, "")), [3, 4, 5]);
    // From the table property; a walk stops at the first old snapshot, so 1 (older) goes too.
    let property = format!(r#""history.expire.max-snapshot-age-ms": "{}""#, 9 * DAY);
    assert_eq!(kept(&run(json!({}), &property)), [2, 3, 4, 5]);
}

#[test]
fn old_refs_go_but_main_never_does() {
    // A tag on 1 (10 days) with max-ref-age 9 days is removed, so 1 expires.
    let refs = json!({"old": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 9 * DAY}});
    let r = run(refs, "");
    assert_eq!(r.removed_refs, ["old"]);
    assert!(!r.refs.contains_key("old"));
    assert_eq!(kept(&r), [4, 5]);
    // main past its own max-ref-age stays, with its ancestors' rules.
    let refs = json!({"main": {"snapshot-id": 5, "type": "branch", "max-ref-age-ms": 1}});
    let r = run(refs, "");
    assert!(r.removed_refs.is_empty());
    assert!(r.refs.contains_key("main"));
    assert_eq!(kept(&r), [4, 5]);
    // The table default applies to refs without their own; a ref's own setting wins.
    let refs = json!({
        "old": {"snapshot-id": 1, "type": "tag"},
        "kept": {"snapshot-id": 2, "type": "tag", "max-ref-age-ms": 30 * DAY}
    });
    let property = format!(r#""history.expire.max-ref-age-ms": "{}""#, 9 * DAY);
    let r = run(refs, &property);
    assert_eq!(r.removed_refs, ["old"]);
    assert_eq!(kept(&r), [2, 4, 5]);
}

#[test]
fn a_tag_keeps_its_snapshot_and_nothing_before_it() {
    // A tag on 3 (6 days old, no max-ref-age): 3 kept, though main alone would expire it;
    // tags keep no ancestors.
    let refs = json!({"v1": {"snapshot-id": 3, "type": "tag"}});
    let r = run(refs, "");
    assert_eq!(kept(&r), [3, 4, 5]);
    assert_eq!(r.expired, [1, 2, 6]);
}

#[test]
fn every_branch_walks_its_own_history() {
    // dev = 6 (3 days) -> 2 (8 days) -> 1; min 2 keeps 6 and 2; then 1 is old: stop.
    // main keeps 5, 4 as by default.
    let refs = json!({"dev": {"snapshot-id": 6, "type": "branch", "min-snapshots-to-keep": 2}});
    let r = run(refs, "");
    assert_eq!(kept(&r), [2, 4, 5, 6]);
    assert_eq!(r.expired, [1, 3]);
    // An old branch past its max-ref-age goes with its history: only main's rules are left.
    let refs = json!({"dev": {"snapshot-id": 6, "type": "branch", "min-snapshots-to-keep": 2,
        "max-ref-age-ms": DAY}});
    let r = run(refs, "");
    assert_eq!(r.removed_refs, ["dev"]);
    assert_eq!(kept(&r), [4, 5]);
}

#[test]
fn refs_to_missing_snapshots_go_and_a_missing_main_is_an_error() {
    let mut m = table(json!({"ghost": {"snapshot-id": 5, "type": "tag"}}), "");
    m.refs.get_mut("ghost").unwrap().snapshot_id = 99;
    let r = retention(&m, &RetentionDefaults::of(&m, NOW).unwrap()).unwrap();
    assert_eq!(r.removed_refs, ["ghost"]);
    m.refs.get_mut("main").unwrap().snapshot_id = 99;
    let err = retention(&m, &RetentionDefaults::of(&m, NOW).unwrap()).unwrap_err();
    assert!(err.to_string().contains("snapshot 99"), "{err}");
}

#[test]
fn bad_properties_are_named() {
    for (key, value) in [
        ("history.expire.min-snapshots-to-keep", "0"),
        ("history.expire.max-snapshot-age-ms", "-5"),
        ("history.expire.max-ref-age-ms", "soon"),
    ] {
        let m = table(json!({}), &format!(r#""{key}": "{value}""#));
        let err = RetentionDefaults::of(&m, NOW).unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(value), "{err}");
    }
}

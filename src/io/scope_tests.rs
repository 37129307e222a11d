//! What a destructive operation may delete: only under the table location.

use super::*;

fn setup() -> (tempfile::TempDir, String, TableScope) {
    let tmp = tempfile::tempdir().unwrap();
    let location = tmp.path().join("t").display().to_string();
    std::fs::create_dir_all(tmp.path().join("t/data")).unwrap();
    std::fs::create_dir_all(tmp.path().join("victim")).unwrap();
    let scope = TableScope::new(&FileIO::default(), &location).unwrap();
    (tmp, location, scope)
}

#[test]
fn files_under_the_location_in_any_spelling_are_in_scope() {
    let (_tmp, location, scope) = setup();
    assert_eq!(scope.check(&format!("{location}/data/a.parquet")), Ok(()));
    assert_eq!(
        scope.check(&format!("file://{location}/data/a.parquet")),
        Ok(())
    );
    assert_eq!(
        scope.check(&format!("{location}/data/./x/../b.parquet")),
        Ok(())
    );
}

#[test]
fn paths_outside_are_kept() {
    let (tmp, location, scope) = setup();
    let victim = tmp.path().join("victim/keep.txt").display().to_string();
    let outside = KeptReason::OutsideTable;
    for path in [
        victim.clone(),
        format!("file://{victim}"),
        format!("{location}/data/../../victim/keep.txt"),
        format!("{location}/../victim/keep.txt"),
        format!("{location}2/data/a.parquet"),
        location.clone(),
        "s3://bucket/t/data/a.parquet".to_string(),
        "/etc/passwd".to_string(),
    ] {
        assert_eq!(scope.check(&path), Err(outside), "{path}");
    }
}

#[test]
fn links_are_never_followed_out() {
    let (tmp, location, scope) = setup();
    std::fs::write(tmp.path().join("victim/keep.txt"), b"x").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("victim"), tmp.path().join("t/data/link")).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("victim/keep.txt"),
        tmp.path().join("t/data/f.parquet"),
    )
    .unwrap();
    let through_dir = format!("{location}/data/link/keep.txt");
    assert_eq!(scope.check(&through_dir), Err(KeptReason::OutsideTable));
    let link = format!("{location}/data/f.parquet");
    assert_eq!(scope.check(&link), Err(KeptReason::SymbolicLink));
}

#[tokio::test]
async fn delete_removes_only_what_is_in_scope() {
    let (tmp, location, scope) = setup();
    let inside = tmp.path().join("t/data/a.parquet");
    let victim = tmp.path().join("victim/keep.txt");
    std::fs::write(&inside, b"x").unwrap();
    std::fs::write(&victim, b"x").unwrap();
    let dotdot = format!("{location}/data/../../victim/keep.txt");
    assert_eq!(
        scope.delete(&dotdot).await.unwrap(),
        Err(KeptReason::OutsideTable)
    );
    assert!(victim.exists());
    let path = inside.display().to_string();
    assert_eq!(scope.delete(&path).await.unwrap(), Ok(()));
    assert!(!inside.exists());
    // Gone already: not an error.
    assert_eq!(scope.delete(&path).await.unwrap(), Ok(()));
}

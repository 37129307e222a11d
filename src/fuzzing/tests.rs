//! Issue 14, item 15: every parser entry over a few thousand mutants of the in-repo fixtures'
//! files, seeded (a failure names its seed and case), in a few seconds. `fuzz/run.sh` runs the
//! same entries coverage-guided, for longer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::mutation::{self, Report, mutate, mutate_avro, mutate_json};

/// The seed of every run: fixed, so a failure reproduces; `ICEFLOE_FUZZ_SEED` picks another.
fn seed() -> u64 {
    std::env::var("ICEFLOE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(14)
}

/// Mutants per parser; `ICEFLOE_FUZZ_CASES` runs more by hand.
fn cases(default: usize) -> usize {
    std::env::var("ICEFLOE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, keep, out);
        } else if keep(&path) {
            out.push(path);
        }
    }
}

/// Up to `max` of the smallest fixture files that `keep` takes, as bytes.
fn seeds(keep: &dyn Fn(&Path, &[u8]) -> bool, max: usize) -> Vec<Vec<u8>> {
    seeds_at_least(keep, max, 3)
}

fn seeds_at_least(keep: &dyn Fn(&Path, &[u8]) -> bool, max: usize, min: usize) -> Vec<Vec<u8>> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"));
    let mut paths = Vec::new();
    files(
        root,
        &|p| p.metadata().is_ok_and(|m| m.len() < 64 << 10),
        &mut paths,
    );
    let mut found: Vec<Vec<u8>> = paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok().filter(|b| keep(p, b)))
        .collect();
    found.sort_by_key(Vec::len);
    found.dedup();
    found.truncate(max);
    assert!(found.len() >= min, "too few seed files: {}", found.len());
    found
}

fn name_ends(path: &Path, ends: &[&str]) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    ends.iter().any(|e| name.ends_with(e))
}

fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// An Avro file whose writer schema has the given field (`manifest_path` for manifest lists,
/// `data_file` for manifests).
fn avro_with(field: &'static str) -> impl Fn(&Path, &[u8]) -> bool {
    move |p, b| {
        name_ends(p, &[".avro"]) && b.starts_with(b"Obj\x01") && contains(b, field.as_bytes())
    }
}

fn assert_quick(name: &str, report: Report) {
    eprintln!("{name}: {report:?}");
    assert!(
        report.cases > 100 && report.parsed > 0,
        "{name}: {report:?}"
    );
    assert!(
        report.slowest < Duration::from_secs(2),
        "{name}: an input took {:?}",
        report.slowest
    );
}

#[test]
fn metadata_json_mutants_are_typed_errors_or_read_back_the_same() {
    let seeds = seeds(
        &|p, _| name_ends(p, &[".metadata.json", ".metadata.json.gz"]),
        40,
    );
    let report = mutation::run(
        "metadata",
        &seeds,
        (cases(3000), seed()),
        mutate_json,
        super::metadata_json,
    );
    assert_quick("metadata", report);
}

#[test]
fn version_hint_mutants_are_typed_errors() {
    let mut seeds = seeds(
        &|p, _| name_ends(p, &["version-hint.text", "version-hint.txt"]),
        40,
    );
    seeds.extend([b"v12".to_vec(), b"00003-9c12d441.metadata.json".to_vec()]);
    let report = mutation::run(
        "version-hint",
        &seeds,
        (cases(3000), seed()),
        mutate_json,
        super::version_hint,
    );
    assert_quick("version hint", report);
}

#[test]
fn manifest_list_mutants_are_typed_errors() {
    let seeds = seeds(&avro_with("\"manifest_path\""), 40);
    let report = mutation::run(
        "manifest-list",
        &seeds,
        (cases(3000), seed()),
        mutate_avro,
        super::manifest_list,
    );
    assert_quick("manifest list", report);
}

#[test]
fn manifest_mutants_are_typed_errors() {
    let seeds = seeds(&avro_with("\"data_file\""), 40);
    let report = mutation::run(
        "manifest",
        &seeds,
        (cases(3000), seed()),
        mutate_avro,
        super::manifest,
    );
    assert_quick("manifest", report);
}

/// The deletion vectors of the fixtures' Puffin files (a 4-byte length, then the magic), and
/// the same bodies for the framing mode of [`super::deletion_vector`].
fn deletion_vectors() -> Vec<Vec<u8>> {
    const MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
    let puffins = seeds_at_least(&|p, _| name_ends(p, &[".puffin"]), 10, 1);
    let mut blobs = Vec::new();
    for puffin in &puffins {
        for at in (4..puffin.len().saturating_sub(4)).filter(|&i| puffin[i..i + 4] == MAGIC) {
            let len = u32::from_be_bytes([
                puffin[at - 4],
                puffin[at - 3],
                puffin[at - 2],
                puffin[at - 1],
            ]) as usize;
            if let Some(blob) = puffin.get(at - 4..at + len + 4) {
                blobs.push(blob.to_vec());
                let mut framed = vec![1u8];
                framed.extend_from_slice(&blob[4..blob.len() - 4]);
                blobs.push(framed);
            }
        }
    }
    blobs
}

#[test]
fn deletion_vector_mutants_are_typed_errors() {
    let seeds = deletion_vectors();
    assert!(seeds.len() >= 2, "{} vectors", seeds.len());
    let report = mutation::run(
        "deletion-vector",
        &seeds,
        (cases(3000), seed()),
        mutate,
        super::deletion_vector,
    );
    assert_quick("deletion vector", report);
}

#[test]
fn a_panicking_target_is_reported_with_its_input() {
    fn panics_on_a_zero(bytes: &[u8]) -> bool {
        assert!(!bytes.contains(&0), "a zero byte");
        true
    }
    let seeds = vec![vec![1u8, 2, 3], vec![4, 5, 6]];
    let failed = std::panic::catch_unwind(|| {
        mutation::run("selftest", &seeds, (5000, 1), mutate, panics_on_a_zero)
    })
    .unwrap_err();
    let message = failed.downcast_ref::<String>().unwrap();
    assert!(message.contains("selftest: case"), "{message}");
    assert!(
        message.contains("a zero byte") && message.contains("written"),
        "{message}"
    );
}

#[test]
fn mutants_are_reproducible_from_the_seed() {
    let seed = br#"{"a": [1, 2, {"b": "c"}], "d": 4}"#.to_vec();
    let make = |s| {
        let mut rng = mutation::Rng::new(s);
        (0..50)
            .map(|_| mutate_json(&seed, &[], &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(make(7), make(7));
    assert_ne!(make(7), make(8));
}

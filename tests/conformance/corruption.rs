//! The corruption suite (issue 14, item 14): every kind of file a table is made of (metadata
//! JSON, version hint, manifest list, manifest, Parquet data, position deletes, equality
//! deletes, deletion vectors, the SQLite catalog) mutated by seeded byte flips, truncations and
//! structural edits. Each case is read with icefloe (`SELECT *` and `count(*)`), and must be:
//!
//! - a typed error naming the mutated file, or
//! - the original answer, or
//! - a different answer from bytes that an independent decoder also accepts (serde_json for
//!   JSON, the apache-avro crate for Avro, the parquet crate's reader for Parquet, the blob's
//!   CRC-32 and the roaring crate for deletion vectors, SQLite itself): formats without
//!   checksums cannot tell such a change from data, and no reader can. For the files that say
//!   which version is current (metadata JSON, hint), a different answer must never be an older
//!   snapshot's.
//!
//! Never a panic, a hang (each case has a deadline), an older version, or a different answer
//! from bytes an independent decoder rejects. `ICEFLOE_CORRUPTION_SEED` and
//! `ICEFLOE_CORRUPTION_CASES` (per file, default 24 flips + 8 truncations + the structural
//! edits) change the run; the report says how many cases of each outcome each kind had.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use icefloe::catalog::SqliteCatalog;
use icefloe::scan::{ManifestCache, read_manifest, read_manifest_list};
use icefloe::spec::{DataContentType, SnapshotSelector};
use icefloe::{FileIO, IcebergTableProvider, Relocation, Table, TableOptions};
use serde_json::Value;

use super::support::{copy_dir, error_chain};

/// How long one case may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(20);

/// The kinds of file, as the report names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    MetadataJson,
    Hint,
    ManifestList,
    Manifest,
    Data,
    PositionDeletes,
    EqualityDeletes,
    DeletionVector,
    Catalog,
}

impl Kind {
    /// Whether the file says which version is current and icefloe can tell when it points
    /// back (a different answer must not be an older snapshot's). A catalog's pointer row is
    /// the authority itself: a row changed to name an older metadata file is that version.
    fn is_pointer(self) -> bool {
        matches!(self, Self::MetadataJson | Self::Hint)
    }
}

/// What a case came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Same,
    NamedError,
    /// A missing or invalid data-file path from a mutated manifest: the error names the path
    /// the manifest holds (which file holds it, `icefloe check` says).
    DanglingDataFile,
    ValidDifferent,
}

/// xorshift64*: a small seeded generator, so a failing case can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of one file.
#[derive(Debug, Clone)]
struct Mutation {
    what: String,
    bytes: Vec<u8>,
}

/// The mutations of a file: bit flips, truncations and the structural edits of its kind.
fn mutations(kind: Kind, original: &[u8], rng: &mut Rng, flips: usize) -> Vec<Mutation> {
    let mut out = Vec::new();
    let len = original.len();
    if len == 0 {
        // An empty file (a blank version hint): only what can be added to it.
        return structural(kind, original, rng);
    }
    for _ in 0..flips {
        let mut bytes = original.to_vec();
        let at = rng.below(len);
        let bit = 1u8 << rng.below(8);
        bytes[at] ^= bit;
        out.push(Mutation {
            what: format!("flip bit {bit:#04x} at {at}"),
            bytes,
        });
    }
    let mut cuts = vec![0, 1, len / 2, len.saturating_sub(1)];
    cuts.extend((0..flips / 3).map(|_| rng.below(len)));
    for cut in cuts {
        out.push(Mutation {
            what: format!("truncate to {cut}"),
            bytes: original[..cut].to_vec(),
        });
    }
    for _ in 0..flips / 4 {
        let mut bytes = original.to_vec();
        let at = rng.below(len);
        let n = 1 + rng.below(16);
        let end = (at + n).min(len);
        bytes[at..end].iter_mut().for_each(|b| *b = 0);
        out.push(Mutation {
            what: format!("zero {at}..{end}"),
            bytes,
        });
        let mut bytes = original.to_vec();
        let at = rng.below(len);
        let garbage: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
        bytes.splice(at..at, garbage.iter().copied());
        out.push(Mutation {
            what: format!("insert {} bytes at {at}", garbage.len()),
            bytes,
        });
    }
    out.extend(structural(kind, original, rng));
    out
}

/// Edits that keep a file's outer shape: JSON members removed or retyped, Parquet footer
/// lengths overwritten, the file made empty or doubled.
fn structural(kind: Kind, original: &[u8], rng: &mut Rng) -> Vec<Mutation> {
    let mut out = vec![
        Mutation {
            what: "empty".into(),
            bytes: Vec::new(),
        },
        Mutation {
            what: "doubled".into(),
            bytes: [original, original].concat(),
        },
    ];
    if matches!(kind, Kind::MetadataJson)
        && let Ok(json) = serde_json::from_slice::<Value>(original)
    {
        for _ in 0..12 {
            let mut edited = json.clone();
            let what = edit_json(&mut edited, rng);
            let bytes = serde_json::to_vec_pretty(&edited).expect("json");
            out.push(Mutation { what, bytes });
        }
    }
    if matches!(
        kind,
        Kind::Data | Kind::PositionDeletes | Kind::EqualityDeletes
    ) && original.len() > 8
    {
        let footer = original.len() - 8;
        for value in [0u32, 1, u32::MAX, footer as u32, footer as u32 + 1] {
            let mut bytes = original.to_vec();
            bytes[footer..footer + 4].copy_from_slice(&value.to_le_bytes());
            out.push(Mutation {
                what: format!("footer length {value:#x}"),
                bytes,
            });
        }
    }
    out
}

/// One random edit of a JSON document: a member removed, or a value replaced by another of
/// another type or another number; returns what was done.
fn edit_json(json: &mut Value, rng: &mut Rng) -> String {
    let mut path = Vec::new();
    let mut at = json;
    loop {
        let children = match &*at {
            Value::Object(map) => map.len(),
            Value::Array(items) => items.len(),
            _ => 0,
        };
        if children == 0 || (!path.is_empty() && rng.below(3) == 0) {
            break;
        }
        let pick = rng.below(children);
        path.push(pick);
        at = match at {
            Value::Object(map) => map.values_mut().nth(pick).expect("member"),
            Value::Array(items) => &mut items[pick],
            _ => unreachable!("has children"),
        };
    }
    let replacement = match rng.below(5) {
        0 => Value::Null,
        1 => Value::from(-1),
        2 => Value::from(i64::MAX),
        3 => Value::from("x"),
        _ => Value::Array(Vec::new()),
    };
    let what = format!("member {path:?} {} -> {replacement}", short(at));
    *at = replacement;
    what
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    text.chars().take(40).collect()
}

/// A fixture table copied to a temporary directory, with the kinds of its files.
struct Fixture {
    name: &'static str,
    dir: tempfile::TempDir,
    relocations: Vec<(String, String)>,
    files: Vec<(Kind, PathBuf)>,
    /// The answers of older snapshots (for the pointer files' check).
    older: Vec<Answer>,
    original: Answer,
}

/// What a read gives: the sorted rows as text and `count(*)`.
type Answer = (Vec<String>, i64);

/// The in-repo external tables the suite mutates, with a kind of delete file each.
const TABLES: [&str; 4] = [
    "impala_v2_no_deletes",
    "impala_v2_delete_positional",
    "impala_v2_delete_equality",
    "impala_v3_deletion_vectors",
];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

async fn load_fixture(name: &'static str, answers: &Value) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixtures_dir().join("external").join(name), dir.path());
    let spec = &answers[name];
    let relocations: Vec<(String, String)> = spec["relocate"]
        .as_array()
        .expect("relocate")
        .iter()
        .map(|r| {
            (
                r[0].as_str().expect("old").to_string(),
                dir.path().display().to_string(),
            )
        })
        .collect();
    let metadata = dir
        .path()
        .join(spec["latest_metadata_file"].as_str().expect("latest"));
    let mut files = vec![(Kind::MetadataJson, metadata)];
    for entry in std::fs::read_dir(dir.path().join("metadata")).expect("metadata dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if name.starts_with("version-hint") {
            files.push((Kind::Hint, path));
        } else if name.starts_with("snap-") {
            files.push((Kind::ManifestList, path));
        } else if name.ends_with(".avro") {
            files.push((Kind::Manifest, path));
        }
    }
    let options = options(&relocations, SnapshotSelector::Current);
    let table = Table::load(io(&relocations), &dir.path().display().to_string())
        .await
        .expect("the intact copy loads");
    files.extend(content_files(&table, dir.path()).await);
    files.sort();
    let original = answer(dir.path(), &options)
        .await
        .expect("the intact copy reads");
    let mut older = Vec::new();
    for scan in spec["scans"].as_array().expect("scans").iter().skip(1) {
        let id = scan["snapshot_id"].as_i64().expect("snapshot id");
        let at = self::options(&relocations, SnapshotSelector::SnapshotId(id));
        let old = answer(dir.path(), &at)
            .await
            .expect("an older snapshot reads");
        if old != original {
            older.push(old);
        }
    }
    Fixture {
        name,
        dir,
        relocations,
        files,
        older,
        original,
    }
}

fn io(relocations: &[(String, String)]) -> FileIO {
    let relocation = relocations.iter().fold(Relocation::new(), |r, (old, new)| {
        r.with_rule(old.clone(), new.clone())
    });
    FileIO::new(Arc::new(Default::default()), relocation)
}

fn options(relocations: &[(String, String)], selector: SnapshotSelector) -> TableOptions {
    relocations
        .iter()
        .fold(TableOptions::default(), |o, (old, new)| {
            o.with_relocation(old.clone(), new.clone())
        })
        .with_snapshot(selector)
}

/// The data and delete files of the current snapshot, by content.
async fn content_files(table: &Table, root: &Path) -> Vec<(Kind, PathBuf)> {
    let metadata = table.metadata();
    let Some(snapshot) = metadata.current_snapshot() else {
        return Vec::new();
    };
    let mut files = Vec::new();
    let list = read_manifest_list(table.io(), metadata, snapshot)
        .await
        .expect("list");
    for manifest in list.iter() {
        let read = read_manifest(table.io(), metadata, manifest)
            .await
            .expect("manifest");
        for entry in read.entries {
            let file = &entry.data_file;
            let kind = match file.content {
                DataContentType::Data => Kind::Data,
                DataContentType::EqualityDeletes => Kind::EqualityDeletes,
                DataContentType::PositionDeletes if file.file_path.ends_with(".puffin") => {
                    Kind::DeletionVector
                }
                DataContentType::PositionDeletes => Kind::PositionDeletes,
            };
            let name = file.file_path.rsplit('/').next().expect("name");
            let local = find(root, name).expect("the file is in the copy");
            if !files.iter().any(|(_, p)| *p == local) {
                files.push((kind, local));
            }
        }
    }
    files
}

fn find(root: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().and_then(|n| n.to_str()) == Some(name) {
            return Some(path);
        }
    }
    None
}

/// Reads the table at `dir` with icefloe in a fresh session: sorted rows and `count(*)`.
async fn answer(dir: &Path, options: &TableOptions) -> Result<Answer, String> {
    let ctx = SessionContext::new();
    let location = dir.display().to_string();
    let provider = IcebergTableProvider::open(&ctx, &location, options.clone())
        .await
        .map_err(|e| error_chain(&e))?;
    read_t(&ctx, Arc::new(provider)).await
}

async fn read_t(
    ctx: &SessionContext,
    provider: Arc<IcebergTableProvider>,
) -> Result<Answer, String> {
    ctx.register_table("t", provider)
        .map_err(|e| error_chain(&e))?;
    let batches = ctx
        .sql("SELECT * FROM t")
        .await
        .map_err(|e| error_chain(&e))?
        .collect()
        .await
        .map_err(|e| error_chain(&e))?;
    let text = pretty_format_batches(&batches)
        .map_err(|e| error_chain(&e))?
        .to_string();
    let mut rows: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    let counted = ctx
        .sql("SELECT count(*) FROM t")
        .await
        .map_err(|e| error_chain(&e))?
        .collect()
        .await
        .map_err(|e| error_chain(&e))?;
    let count = counted[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .map_or(-1, |a| a.value(0));
    Ok((rows, count))
}

/// Whether an independent decoder accepts the bytes of a file of `kind`.
fn independently_valid(kind: Kind, bytes: &[u8]) -> bool {
    let bytes = bytes.to_vec();
    std::panic::catch_unwind(move || match kind {
        Kind::MetadataJson => serde_json::from_slice::<Value>(&bytes).is_ok(),
        Kind::Hint => true,
        Kind::ManifestList | Kind::Manifest => avro_valid(&bytes),
        Kind::Data | Kind::PositionDeletes | Kind::EqualityDeletes => parquet_valid(&bytes),
        Kind::DeletionVector => puffin_valid(&bytes),
        Kind::Catalog => true,
    })
    .unwrap_or(false)
}

fn avro_valid(bytes: &[u8]) -> bool {
    let Ok(reader) = apache_avro::Reader::new(bytes) else {
        return false;
    };
    let mut records = 0;
    for record in reader {
        if record.is_err() {
            return false;
        }
        records += 1;
    }
    records > 0
}

fn parquet_valid(bytes: &[u8]) -> bool {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes.to_vec()))
    else {
        return false;
    };
    let Ok(reader) = builder.build() else {
        return false;
    };
    reader.into_iter().all(|batch| batch.is_ok())
}

/// A Puffin file whose footer parses and whose deletion-vector blobs carry a matching CRC-32
/// and a decodable 64-bit roaring bitmap.
fn puffin_valid(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n < 16 || &bytes[..4] != b"PFA1" || &bytes[n - 4..] != b"PFA1" {
        return false;
    }
    let footer_len = u32::from_le_bytes(bytes[n - 12..n - 8].try_into().expect("4")) as usize;
    let Some(start) = n.checked_sub(12 + footer_len) else {
        return false;
    };
    let Ok(footer) = serde_json::from_slice::<Value>(&bytes[start..n - 12]) else {
        return false;
    };
    let Some(blobs) = footer["blobs"].as_array() else {
        return false;
    };
    blobs.iter().all(|blob| {
        let (Some(offset), Some(length)) = (blob["offset"].as_u64(), blob["length"].as_u64())
        else {
            return false;
        };
        let (offset, length) = (offset as usize, length as usize);
        let Some(data) = bytes.get(offset..offset + length) else {
            return false;
        };
        if length < 12 || data[4..8] != [0xD1, 0xD3, 0x39, 0x64] {
            return false;
        }
        let crc = u32::from_be_bytes(data[length - 4..].try_into().expect("4"));
        crc == crc32fast::hash(&data[4..length - 4])
            && roaring::RoaringTreemap::deserialize_from(&data[8..length - 4]).is_ok()
    })
}

/// Counts per kind and outcome; the failures, each described.
#[derive(Default)]
struct Tally {
    counts: BTreeMap<(Kind, Outcome), usize>,
    failures: Vec<String>,
    /// The cases whose different answers independent decoders accept, for the report.
    valid_different: Vec<String>,
    cases: usize,
}

impl Tally {
    fn judge(
        &mut self,
        kind: Kind,
        file: &Path,
        what: &str,
        result: Result<Result<Answer, String>, String>,
        fixture: &Fixture,
        bytes: &[u8],
    ) {
        self.cases += 1;
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let case = format!("{} {kind:?} {name}: {what}", fixture.name);
        let outcome = match result {
            Err(crash) => return self.failures.push(format!("{case}: {crash}")),
            Ok(Err(error)) if error.contains(name) => Outcome::NamedError,
            Ok(Err(error)) if kind == Kind::Manifest && dangling_data_file(&error) => {
                Outcome::DanglingDataFile
            }
            Ok(Err(error)) => {
                return self
                    .failures
                    .push(format!("{case}: an error not naming the file: {error}"));
            }
            Ok(Ok(answer)) if answer == fixture.original => Outcome::Same,
            Ok(Ok(answer)) if kind.is_pointer() && fixture.older.contains(&answer) => {
                return self
                    .failures
                    .push(format!("{case}: an older snapshot's answer"));
            }
            Ok(Ok(_)) if independently_valid(kind, bytes) => {
                self.valid_different.push(case);
                Outcome::ValidDifferent
            }
            Ok(Ok(answer)) => {
                return self.failures.push(format!(
                    "{case}: a different answer ({} rows, count {}) from bytes no other decoder accepts",
                    answer.0.len(),
                    answer.1
                ));
            }
        };
        *self.counts.entry((kind, outcome)).or_default() += 1;
    }
}

/// Whether an error is about a data file path a manifest names that is not there (or is no
/// location at all).
fn dangling_data_file(error: &str) -> bool {
    let path_like = |e: &str| e.contains("/data/") || e.contains(".parquet");
    (error.contains("not found: data file") || error.contains("not found: /")) && path_like(error)
        || error.contains("invalid argument: location '") && path_like(error)
}

/// Runs one case on its own task, under the deadline: `Err` for a panic or a hang.
async fn run_case(dir: PathBuf, options: TableOptions) -> Result<Result<Answer, String>, String> {
    ManifestCache::global().clear();
    let task = tokio::spawn(async move { answer(&dir, &options).await });
    match tokio::time::timeout(DEADLINE, task).await {
        Err(_) => Err(format!("a hang (no answer within {DEADLINE:?})")),
        Ok(Err(join)) if join.is_panic() => Err("a panic".to_string()),
        Ok(Err(join)) => Err(format!("the task failed: {join}")),
        Ok(Ok(result)) => Ok(result),
    }
}

fn seed() -> u64 {
    std::env::var("ICEFLOE_CORRUPTION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1CEF_10E5)
}

fn flips_per_file() -> usize {
    std::env::var("ICEFLOE_CORRUPTION_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_files_give_named_errors_or_answers_their_bytes_carry() {
    let started = Instant::now();
    let answers: Value = serde_json::from_slice(
        &std::fs::read(fixtures_dir().join("external/expected_answers.json")).expect("answers"),
    )
    .expect("answers json");
    let mut rng = Rng(seed());
    let mut tally = Tally::default();
    for name in TABLES {
        let fixture = load_fixture(name, &answers).await;
        let options = options(&fixture.relocations, SnapshotSelector::Current);
        for (kind, file) in fixture.files.clone() {
            let original = std::fs::read(&file).expect("read");
            for mutation in mutations(kind, &original, &mut rng, flips_per_file()) {
                std::fs::write(&file, &mutation.bytes).expect("mutate");
                let result = run_case(fixture.dir.path().to_path_buf(), options.clone()).await;
                tally.judge(
                    kind,
                    &file,
                    &mutation.what,
                    result,
                    &fixture,
                    &mutation.bytes,
                );
                std::fs::write(&file, &original).expect("restore");
            }
        }
    }
    catalog_cases(&mut rng, &mut tally).await;
    let mut report = format!(
        "corruption suite (seed {:#x}): {} cases in {:.1} s\n",
        seed(),
        tally.cases,
        started.elapsed().as_secs_f64()
    );
    for ((kind, outcome), n) in &tally.counts {
        report.push_str(&format!("  {kind:?} {outcome:?}: {n}\n"));
    }
    for case in &tally.valid_different {
        report.push_str(&format!("  valid bytes, another answer: {case}\n"));
    }
    println!("{report}");
    assert!(
        tally.failures.is_empty(),
        "{report}{} failing case(s):\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

/// The SQLite catalog of the PyIceberg warehouse: its database file mutated (a copy; the
/// table files are read from the repository through relocation).
async fn catalog_cases(rng: &mut Rng, tally: &mut Tally) {
    let wh1 = fixtures_dir().join("pyiceberg/wh1");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("catalog.db");
    std::fs::copy(wh1.join("catalog.db"), &db).expect("copy catalog");
    let relocations = vec![(
        "file:///data/lake/wh1".to_string(),
        wh1.display().to_string(),
    )];
    let read = |db: PathBuf, relocations: Vec<(String, String)>| async move {
        let io = io(&relocations);
        let catalog = SqliteCatalog::open(&db, None, io).map_err(|e| error_chain(&e))?;
        let table = catalog
            .load_table("db", "orders")
            .await
            .map_err(|e| error_chain(&e))?;
        let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current)
            .map_err(|e| error_chain(&e))?;
        read_t(&SessionContext::new(), Arc::new(provider)).await
    };
    let original_answer = read(db.clone(), relocations.clone())
        .await
        .expect("the catalog reads");
    let fixture = Fixture {
        name: "pyiceberg_wh1",
        dir,
        relocations: relocations.clone(),
        files: Vec::new(),
        older: Vec::new(),
        original: original_answer,
    };
    let original = std::fs::read(&db).expect("read");
    for mutation in mutations(Kind::Catalog, &original, rng, flips_per_file() * 2) {
        std::fs::write(&db, &mutation.bytes).expect("mutate");
        ManifestCache::global().clear();
        let task = tokio::spawn(read(db.clone(), relocations.clone()));
        let result = match tokio::time::timeout(DEADLINE, task).await {
            Err(_) => Err("a hang".to_string()),
            Ok(Err(join)) => Err(format!("a panic or failed task: {join}")),
            Ok(Ok(result)) => Ok(result),
        };
        tally.judge(
            Kind::Catalog,
            &db,
            &mutation.what,
            result,
            &fixture,
            &mutation.bytes,
        );
        std::fs::write(&db, &original).expect("restore");
    }
}

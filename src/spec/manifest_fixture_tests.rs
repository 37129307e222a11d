//! Decodes every manifest list and manifest of the external fixture tables (written by Spark,
//! Impala, Trino, DuckDB's generators, BigQuery, ...). Skipped when the fixtures are absent.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::spec::manifest::{Manifest, ManifestStatus, parse_manifest, parse_manifest_metadata};
use crate::spec::manifest_list::{ManifestContent, ManifestFile, parse_manifest_list};
use crate::spec::metadata::FormatVersion;
use crate::spec::schema::Schema;
use crate::spec::types::{NestedField, PrimitiveType, StructType};
use crate::spec::values::Literal;

const FIXTURES: &str = "/work/shared/fixtures/external";

/// What a table's metadata files say, merged over all of them (specs and schemas are
/// immutable once written, so merging is safe).
#[derive(Default)]
struct TableInfo {
    format_version: i64,
    schemas: Vec<Schema>,
    /// spec id -> partition fields JSON.
    specs: BTreeMap<i64, Json>,
}

fn metadata_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "metadata") {
                out.push(path.clone());
            }
            metadata_dirs(&path, out);
        }
    }
}

fn read_json(path: &Path) -> Json {
    let raw = std::fs::read(path).unwrap();
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(raw).unwrap()
    };
    serde_json::from_str(&text).unwrap()
}

fn table_info(dir: &Path) -> TableInfo {
    let mut info = TableInfo::default();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with("metadata.json") {
            continue;
        }
        let m = read_json(&entry.path());
        info.format_version = info
            .format_version
            .max(m["format-version"].as_i64().unwrap_or(1));
        let schemas = m["schemas"].as_array().cloned().unwrap_or_default();
        for s in schemas.iter().chain(m.get("schema")) {
            info.schemas.extend(Schema::from_json(s).ok());
        }
        let specs = m["partition-specs"].as_array().cloned().unwrap_or_default();
        for spec in &specs {
            info.specs
                .insert(spec["spec-id"].as_i64().unwrap(), spec["fields"].clone());
        }
        if let Some(fields) = m.get("partition-spec") {
            info.specs.entry(0).or_insert_with(|| fields.clone());
        }
    }
    info
}

/// The result type of a transform (a small local copy of the spec's table, since
/// `partition.rs` belongs to someone else).
fn result_type(transform: &str, source: &PrimitiveType) -> PrimitiveType {
    match transform {
        "year" | "month" | "hour" => PrimitiveType::Int,
        "day" => PrimitiveType::Date,
        t if t.starts_with("bucket") => PrimitiveType::Int,
        _ => source.clone(),
    }
}

fn source_type(schemas: &[&Schema], source_id: i32) -> PrimitiveType {
    schemas
        .iter()
        .find_map(|s| s.field_by_id(source_id))
        .and_then(|f| f.field_type.as_primitive().cloned())
        .unwrap_or_else(|| panic!("no primitive source column {source_id}"))
}

fn partition_type(fields: &Json, schemas: &[&Schema]) -> StructType {
    let fields = fields.get("fields").unwrap_or(fields);
    let fields = fields.as_array().cloned().unwrap_or_default();
    let nested = fields.iter().enumerate().map(|(i, f)| {
        let source = source_type(schemas, f["source-id"].as_i64().unwrap() as i32);
        let id = f["field-id"]
            .as_i64()
            .map_or(1000 + i as i32, |id| id as i32);
        let ty = result_type(f["transform"].as_str().unwrap(), &source);
        NestedField::optional(id, f["name"].as_str().unwrap(), ty)
    });
    StructType::new(nested.collect())
}

fn is_manifest_list(bytes: &[u8]) -> bool {
    let reader = apache_avro::Reader::new(bytes).unwrap();
    matches!(reader.writer_schema(), apache_avro::Schema::Record(r) if r.name.name() == "manifest_file")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Decodes the lists of one metadata dir; returns manifest file name -> its list entry.
fn decode_lists(avro: &[(PathBuf, Vec<u8>)], info: &TableInfo) -> HashMap<String, ManifestFile> {
    let mut by_name = HashMap::new();
    for (path, bytes) in avro.iter().filter(|(_, b)| is_manifest_list(b)) {
        let md = parse_manifest_metadata(bytes).unwrap();
        let version = md.format_version.map_or(info.format_version, i64::from);
        let version = if version == 1 {
            FormatVersion::V1
        } else {
            FormatVersion::V2
        };
        let files = parse_manifest_list(bytes, version)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for f in files {
            by_name.insert(file_name(&f.manifest_path).to_string(), f);
        }
    }
    by_name
}

fn check_manifest(
    path: &Path,
    bytes: &[u8],
    list_entry: &ManifestFile,
    info: &TableInfo,
) -> Manifest {
    let md = parse_manifest_metadata(bytes).unwrap();
    let own_schema = md
        .schema
        .as_deref()
        .and_then(|s| Schema::from_json(&serde_json::from_str(s).ok()?).ok());
    let mut schemas: Vec<&Schema> = own_schema.iter().collect();
    schemas.extend(info.schemas.iter().rev());
    let spec = match &md.partition_spec {
        Some(spec) => serde_json::from_str(spec).unwrap(),
        None => info.specs[&md
            .partition_spec_id
            .unwrap_or(list_entry.partition_spec_id)
            .into()]
            .clone(),
    };
    let ptype = partition_type(&spec, &schemas);
    let m = parse_manifest(bytes, list_entry, &ptype)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!m.entries.is_empty(), "{}", path.display());
    for e in &m.entries {
        assert_eq!(e.data_file.partition.len(), ptype.fields.len());
        assert!(e.snapshot_id.is_some());
        if e.status == ManifestStatus::Added {
            assert!(e.sequence_number.is_some() && e.file_sequence_number.is_some());
        }
        for (id, _) in e
            .data_file
            .lower_bounds
            .iter()
            .flatten()
            .chain(e.data_file.upper_bounds.iter().flatten())
        {
            let Some(ty) = schemas
                .iter()
                .find_map(|s| s.field_by_id(*id)?.field_type.as_primitive().cloned())
            else {
                continue;
            };
            e.data_file
                .lower_bound(*id, &ty)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            e.data_file
                .upper_bound(*id, &ty)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        }
    }
    m
}

/// A stand-in list entry for a manifest no list references (an aborted commit).
fn orphan_entry() -> ManifestFile {
    ManifestFile::new("", 0, 0, ManifestContent::Data, 0)
}

/// A few facts checked against what the fixture README and the table metadata say.
fn check_known_values(decoded: &HashMap<String, Vec<Manifest>>) {
    let bigquery = &decoded["duckdb_bigquery"];
    let e = &bigquery[0].entries[0];
    assert_eq!(e.snapshot_id, Some(5128775320967886225));
    assert_eq!(e.data_file.record_count, 2);
    assert!(e.data_file.partition.is_empty());
    let v1 = &decoded["duckdb_legacy_v1_embedded_manifests"];
    let mut categories: Vec<_> = v1[0]
        .entries
        .iter()
        .map(|e| (e.sequence_number, e.data_file.partition.clone()))
        .collect();
    categories.sort_by_key(|c| format!("{c:?}"));
    let s = |v: &str| vec![Some(Literal::String(v.into()))];
    assert_eq!(
        categories,
        vec![(Some(0), s("alpha")), (Some(0), s("beta"))]
    );
}

#[test]
fn every_fixture_manifest_decodes() {
    let mut dirs = Vec::new();
    metadata_dirs(Path::new(FIXTURES), &mut dirs);
    let (mut lists, mut manifests) = (0, 0);
    let mut decoded: HashMap<String, Vec<Manifest>> = HashMap::new();
    for dir in &dirs {
        let table = dir.strip_prefix(FIXTURES).unwrap().iter().next().unwrap();
        let table = table.to_string_lossy().into_owned();
        let info = table_info(dir);
        let mut avro: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "avro"))
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        avro.sort();
        let by_name = decode_lists(&avro, &info);
        for (path, bytes) in &avro {
            if is_manifest_list(bytes) {
                lists += 1;
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy();
            let orphan = orphan_entry();
            let entry = by_name.get(name.as_ref()).unwrap_or(&orphan);
            let manifest = check_manifest(path, bytes, entry, &info);
            decoded.entry(table.clone()).or_default().push(manifest);
            manifests += 1;
        }
    }
    if dirs.is_empty() {
        return;
    }
    check_known_values(&decoded);
    eprintln!(
        "decoded {lists} manifest lists and {manifests} manifests in {} tables",
        dirs.len()
    );
}

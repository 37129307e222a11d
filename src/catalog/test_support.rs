//! Helpers shared by the catalog tests: minimal valid metadata files on local disk.

use std::io::Write;
use std::path::Path;

/// A minimal valid format-v2 metadata file for a table at `location`, with no snapshots.
pub(crate) fn metadata_json(location: &str) -> String {
    metadata_json_with(location, 2, "")
}

/// [`metadata_json`] of another format version, with `properties` (JSON object members,
/// e.g. `"k": "v"`).
pub(crate) fn metadata_json_with(location: &str, version: u8, properties: &str) -> String {
    format!(
        r#"{{
  "format-version": {version},
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "{location}",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 1,
  "current-schema-id": 0,
  "schemas": [{{"type": "struct", "schema-id": 0,
    "fields": [{{"id": 1, "name": "id", "required": true, "type": "long"}}]}}],
  "default-spec-id": 0,
  "partition-specs": [{{"spec-id": 0, "fields": []}}],
  "last-partition-id": 999,
  "default-sort-order-id": 0,
  "sort-orders": [{{"order-id": 0, "fields": []}}],
  "properties": {{{properties}}},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}}"#
    )
}

/// A metadata-looking stub without `format-version` (what some tools leave as `v0`).
pub(crate) const STUB_JSON: &str =
    r#"{"location": "/nowhere", "table-uuid": "x", "properties": {}}"#;

/// Writes `contents` to `path`, creating parent directories.
pub(crate) fn write(path: &Path, contents: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// Gzips `contents`.
pub(crate) fn gzip(contents: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(contents).unwrap();
    encoder.finish().unwrap()
}

/// Copies a directory tree (a writable copy of a fixture).
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

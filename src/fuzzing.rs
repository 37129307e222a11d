//! Entry points for fuzzers: every parser icefloe runs on bytes it reads from storage, as a
//! function that takes any bytes and must return. Each one panics only when a property is
//! broken: the parser panicked, returned an error that is not a typed [`Error::Corrupt`] (or
//! [`Error::Unsupported`]) without a path, or, for metadata JSON, parsed into something that
//! does not read back the same after [`TableMetadata::to_json`]. Decoding runs within a small
//! memory bound ([`FUZZ_DECODED_BYTES`]), so an input that would allocate without bound is
//! refused like a real read refuses it.
//!
//! The same entries serve the coverage-guided targets in `fuzz/` (`cargo fuzz`, built with the
//! `fuzzing` feature) and the seeded mutation loop of [`mutation`] that `cargo test --lib`
//! runs over the fixtures' bytes.
//!
//! Each entry returns whether the input parsed (a fuzzer ignores it; the mutation loop
//! counts it, to show how many mutants got past the first checks).
//!
//! A new parser gets an entry here, a target in `fuzz/fuzz_targets/` calling it, and a
//! [`mutation::run`] test over its seed files.

pub mod mutation;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::spec::manifest::{parse_manifest_metadata, parse_manifest_within};
use crate::spec::manifest_list::parse_manifest_list_within;
use crate::spec::{
    FormatVersion, ManifestContent, ManifestFile, PartitionSpec, Schema, StructType, TableMetadata,
};

/// The memory bound of the fuzzed Avro decoders: 64 MiB (inputs are small; a real read
/// allows 1 GiB).
pub const FUZZ_DECODED_BYTES: u64 = 64 << 20;

/// The bound on inflated metadata JSON: 64 MiB.
pub const FUZZ_METADATA_BYTES: u64 = 64 << 20;

/// Panics unless `result` is `Ok` or a typed decoder error: [`Error::Corrupt`] without a path
/// (the caller that read the bytes names the file) or [`Error::Unsupported`].
#[allow(clippy::panic)]
pub fn check<T>(parser: &str, result: Result<T>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(Error::Corrupt { path, .. }) if path.is_empty() => None,
        Err(Error::Unsupported(_)) => None,
        Err(other) => panic!("{parser}: not a typed decoder error: {other:?}"),
    }
}

/// A version hint ([`crate::table::locate::parse_version_hint`]): a hint or a typed error.
/// Whether the input was a hint.
pub fn version_hint(bytes: &[u8]) -> bool {
    check(
        "version hint",
        crate::table::locate::parse_version_hint(bytes),
    )
    .flatten()
    .is_some()
}

/// Table metadata JSON, plain or gzip ([`TableMetadata::parse_file`]). What parses must read
/// back the same from its own JSON. Whether the input parsed.
#[allow(clippy::panic)]
pub fn metadata_json(bytes: &[u8]) -> bool {
    let Some(metadata) = check(
        "metadata JSON",
        TableMetadata::parse_file(bytes, FUZZ_METADATA_BYTES),
    ) else {
        return false;
    };
    let written = metadata.to_json().to_string();
    match TableMetadata::parse(written.as_bytes()) {
        Ok(again) if again == metadata => true,
        Ok(again) => panic!("metadata JSON: read back differently:\n{metadata:?}\n{again:?}"),
        Err(e) => panic!("metadata JSON: its own JSON does not parse: {e}\n{written}"),
    }
}

/// A manifest list, read as each format version reads it. Whether one of them took it.
pub fn manifest_list(bytes: &[u8]) -> bool {
    let mut parsed = false;
    for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
        let list = parse_manifest_list_within(bytes, version, FUZZ_DECODED_BYTES);
        parsed |= check("manifest list", list).is_some();
    }
    parsed
}

/// A manifest, with the partition type its own header's `schema` and `partition-spec` give
/// (as the table would), else none. Whether it parsed.
pub fn manifest(bytes: &[u8]) -> bool {
    let Some(header) = check("manifest header", parse_manifest_metadata(bytes)) else {
        return false;
    };
    let partition_type = header_partition_type(&header).unwrap_or_else(|| StructType::new(vec![]));
    let list_entry = ManifestFile::new(
        "fuzz-m0.avro",
        i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        header.partition_spec_id.unwrap_or(0),
        header.content.unwrap_or(ManifestContent::Data),
        1,
    );
    check(
        "manifest",
        parse_manifest_within(bytes, &list_entry, &partition_type, FUZZ_DECODED_BYTES),
    )
    .is_some()
}

/// The partition struct of a manifest header's `schema` and `partition-spec` keys.
fn header_partition_type(header: &crate::spec::ManifestMetadata) -> Option<StructType> {
    let schema: serde_json::Value = serde_json::from_str(header.schema.as_deref()?).ok()?;
    let schema = Schema::from_json(&schema).ok()?;
    let fields: serde_json::Value = serde_json::from_str(header.partition_spec.as_deref()?).ok()?;
    let spec = PartitionSpec::from_fields_json(0, &fields).ok()?;
    spec.partition_type(&schema).ok()
}

/// A deletion vector blob (`deletion-vector-v1` of a Puffin file). With a first byte that is
/// odd, the rest is taken as the vector's magic and bitmap and framed with a length and a
/// checksum that match, so the bitmap decoder is reached, not only the checksum. Whether it
/// decoded.
pub fn deletion_vector(bytes: &[u8]) -> bool {
    let decode = |blob: &[u8]| {
        check(
            "deletion vector",
            crate::scan::deletes::puffin::decode_deletion_vector(blob, ""),
        )
        .is_some()
    };
    match bytes.split_first() {
        Some((mode, body)) if mode % 2 == 1 => {
            let mut blob = u32::try_from(body.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes()
                .to_vec();
            blob.extend_from_slice(body);
            blob.extend_from_slice(&crc32fast::hash(body).to_be_bytes());
            decode(&blob)
        }
        _ => decode(bytes),
    }
}

//! Deletion vectors (v3; spec: "Deletion Vectors", Puffin's `deletion-vector-v1`): the
//! deleted positions of data files as Roaring bitmaps, one blob per data file, all of one
//! statement in one Puffin file. Merge-on-read DELETE, UPDATE and MERGE write them for v3
//! tables.
//!
//! A Puffin file is the magic `PFA1`, the blobs, then the footer: the magic, a JSON payload
//! describing each blob (type, fields, offset, length, properties), the payload's length
//! (4 bytes, little-endian), 4 bytes of flags (0: the payload is not compressed) and the magic.
//! A `deletion-vector-v1` blob is a 4-byte big-endian length of the magic and the vector, the
//! magic `D1 D3 39 64`, the positions as a portable 64-bit Roaring bitmap, and a big-endian
//! CRC-32 of the magic and the vector; its `referenced-data-file` and `cardinality` properties
//! are set, and the manifest entry gives `referenced_data_file`, `content_offset` and
//! `content_size_in_bytes`.

use bytes::Bytes;
use roaring::RoaringTreemap;
use serde_json::json;

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{DataContentType, DataFile, FileFormat, Literal, TableMetadata};

/// Puffin's file magic.
const PUFFIN_MAGIC: [u8; 4] = *b"PFA1";
/// The magic that starts a deletion vector blob.
const VECTOR_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
/// The field id of `_pos`, which deletion vector blobs are computed from.
const ROW_POSITION_FIELD_ID: i32 = 2_147_483_645;

/// The deleted positions of one data file, with the partition its vector is recorded in.
#[derive(Debug, Clone)]
pub struct DeletionVector {
    /// The data file's `file_path`.
    pub data_file: String,
    /// The data file's partition spec id.
    pub spec_id: i32,
    /// The data file's partition tuple.
    pub partition: Vec<Option<Literal>>,
    /// Every deleted position of the data file (earlier deletes included: one vector per
    /// data file).
    pub positions: RoaringTreemap,
}

/// The `deletion-vector-v1` blob of `positions`.
pub(crate) fn encode_deletion_vector(positions: &RoaringTreemap) -> Result<Vec<u8>> {
    let mut body = VECTOR_MAGIC.to_vec();
    positions
        .serialize_into(&mut body)
        .map_err(|e| Error::invalid("a deletion vector", e))?;
    let length = u32::try_from(body.len())
        .map_err(|_| Error::invalid("a deletion vector", "it is larger than 4 GiB"))?;
    let mut blob = Vec::with_capacity(body.len() + 8);
    blob.extend(length.to_be_bytes());
    blob.extend(&body);
    blob.extend(crc32fast::hash(&body).to_be_bytes());
    Ok(blob)
}

/// Writes `vectors` as one Puffin file under the table's data directory and returns one
/// delete file entry per vector (each with its spec id): content position deletes, format
/// Puffin, the data file's partition, `record_count` the vector's cardinality.
pub async fn write_deletion_vectors(
    io: &FileIO,
    metadata: &TableMetadata,
    vectors: &[DeletionVector],
) -> Result<Vec<(i32, DataFile)>> {
    write_deletion_vectors_named(io, metadata, vectors, "").await
}

/// [`write_deletion_vectors`] into a file whose name starts with `file_prefix`.
pub(crate) async fn write_deletion_vectors_named(
    io: &FileIO,
    metadata: &TableMetadata,
    vectors: &[DeletionVector],
    file_prefix: &str,
) -> Result<Vec<(i32, DataFile)>> {
    let location = format!(
        "{}/data/{file_prefix}{}-deletes.puffin",
        metadata.location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    );
    let mut bytes = PUFFIN_MAGIC.to_vec();
    let mut blobs = Vec::with_capacity(vectors.len());
    let mut placed = Vec::with_capacity(vectors.len());
    for vector in vectors {
        let blob = encode_deletion_vector(&vector.positions)?;
        let offset = bytes.len() as i64;
        let length = blob.len() as i64;
        bytes.extend(blob);
        blobs.push(json!({
            "type": "deletion-vector-v1",
            "fields": [ROW_POSITION_FIELD_ID],
            "snapshot-id": -1,
            "sequence-number": -1,
            "offset": offset,
            "length": length,
            "properties": {
                "referenced-data-file": vector.data_file,
                "cardinality": vector.positions.len().to_string(),
            },
        }));
        placed.push((offset, length));
    }
    let payload = json!({
        "blobs": blobs,
        "properties": {"created-by": format!("icefloe {}", env!("CARGO_PKG_VERSION"))},
    })
    .to_string();
    let payload_length = u32::try_from(payload.len())
        .map_err(|_| Error::invalid(&location, "the Puffin footer is larger than 4 GiB"))?;
    bytes.extend(PUFFIN_MAGIC);
    bytes.extend(payload.as_bytes());
    bytes.extend(payload_length.to_le_bytes());
    bytes.extend([0u8; 4]);
    bytes.extend(PUFFIN_MAGIC);
    let size = bytes.len() as i64;
    io.write(&location, Bytes::from(bytes)).await?;
    Ok(vectors
        .iter()
        .zip(placed)
        .map(|(vector, (offset, length))| {
            let mut file = DataFile::new(
                DataContentType::PositionDeletes,
                location.clone(),
                FileFormat::Puffin,
                i64::try_from(vector.positions.len()).unwrap_or(i64::MAX),
                size,
            );
            file.partition = vector.partition.clone();
            file.referenced_data_file = Some(vector.data_file.clone());
            file.content_offset = Some(offset);
            file.content_size_in_bytes = Some(length);
            (vector.spec_id, file)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::deletes::puffin::decode_deletion_vector;

    #[test]
    fn blobs_decode_back_to_their_positions() {
        let positions: RoaringTreemap = [0u64, 9, 1 << 33].into_iter().collect();
        let blob = encode_deletion_vector(&positions).unwrap();
        let decoded = decode_deletion_vector(&blob, "f.puffin").unwrap();
        assert_eq!(decoded, positions);
    }

    #[tokio::test]
    async fn a_puffin_file_holds_each_vector_at_its_offset_and_a_footer_describing_it() {
        let dir = tempfile::tempdir().unwrap();
        let metadata = crate::spec::TableMetadata::parse(
            format!(
                r#"{{"format-version": 3, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
                "location": "{}", "last-sequence-number": 0, "last-updated-ms": 1,
                "last-column-id": 1, "current-schema-id": 0,
                "schemas": [{{"type": "struct", "schema-id": 0, "fields": []}}],
                "default-spec-id": 0, "partition-specs": [{{"spec-id": 0, "fields": []}}],
                "last-partition-id": 999, "default-sort-order-id": 0,
                "sort-orders": [{{"order-id": 0, "fields": []}}], "next-row-id": 0}}"#,
                dir.path().display()
            )
            .as_bytes(),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        let vectors = vec![
            DeletionVector {
                data_file: "a.parquet".into(),
                spec_id: 0,
                partition: vec![],
                positions: [1u64, 2].into_iter().collect(),
            },
            DeletionVector {
                data_file: "b.parquet".into(),
                spec_id: 0,
                partition: vec![],
                positions: [7u64].into_iter().collect(),
            },
        ];
        let files = write_deletion_vectors(&FileIO::default(), &metadata, &vectors)
            .await
            .unwrap();
        let bytes = std::fs::read(&files[0].1.file_path).unwrap();
        assert_eq!(&bytes[..4], b"PFA1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PFA1");
        assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], &[0, 0, 0, 0]);
        let n = bytes.len();
        let payload_length = u32::from_le_bytes(bytes[n - 12..n - 8].try_into().unwrap()) as usize;
        let payload: serde_json::Value =
            serde_json::from_slice(&bytes[n - 12 - payload_length..n - 12]).unwrap();
        assert_eq!(
            &bytes[n - 16 - payload_length..n - 12 - payload_length],
            b"PFA1"
        );
        for ((_, file), vector) in files.iter().zip(&vectors) {
            let offset = file.content_offset.unwrap() as usize;
            let length = file.content_size_in_bytes.unwrap() as usize;
            let decoded = decode_deletion_vector(&bytes[offset..offset + length], "f").unwrap();
            assert_eq!(decoded, vector.positions);
            assert_eq!(
                file.referenced_data_file.as_deref(),
                Some(vector.data_file.as_str())
            );
            assert_eq!(file.record_count, vector.positions.len() as i64);
        }
        let blobs = payload["blobs"].as_array().unwrap();
        assert_eq!(blobs[1]["properties"]["referenced-data-file"], "b.parquet");
        assert_eq!(blobs[1]["properties"]["cardinality"], "1");
        assert_eq!(blobs[0]["type"], "deletion-vector-v1");
        assert_eq!(blobs[0]["offset"], 4);
    }
}

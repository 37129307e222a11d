//! Puffin files (Puffin spec, "File structure"): the container of table statistics (and of v3
//! deletion vectors, whose blobs `scan::deletes::puffin` decodes without the footer).
//!
//! ```text
//! Magic Blob₁ Blob₂ ... Blobₙ Footer
//! Footer = Magic FooterPayload FooterPayloadSize Flags Magic
//! ```
//!
//! `Magic` is `PFA1`; `FooterPayloadSize` a 4-byte little-endian length of `FooterPayload`,
//! the UTF-8 JSON `FileMetadata` (`blobs`: one `BlobMetadata` each, `properties`); `Flags` four
//! bytes of which bit 0 of byte 0 says the payload is LZ4-compressed. Each blob's metadata
//! gives its `offset` and `length` in the file and its `compression-codec` (absent: stored as
//! is; `zstd`: one Zstandard frame; `lz4`: one LZ4 frame).
//!
//! [`PuffinFooter`] reads a footer from the file's tail, [`decode_blob`] undoes a blob's
//! codec within a bound, and [`PuffinWriter`] lays out a file (blobs stored uncompressed).
//! Errors are [`Error::Corrupt`] with an empty path (the caller names the file) or
//! [`Error::Unsupported`] for an LZ4 footer or blob.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{Map, Value as JsonValue, json};

use super::metadata::json as j;
use crate::error::{Error, Result};

/// `PFA1`: the first and the last four bytes of every Puffin file, and the footer's first.
pub const MAGIC: [u8; 4] = *b"PFA1";
/// The blob type of a serialized compact Apache DataSketches theta sketch of one column's
/// values (Puffin spec, "Blob types").
pub const THETA_BLOB_TYPE: &str = "apache-datasketches-theta-v1";
/// The blob property holding the number of distinct values estimated from a theta sketch.
pub const NDV_PROPERTY: &str = "ndv";
/// The file property naming the writer (`FileMetadata.properties`).
pub const CREATED_BY_PROPERTY: &str = "created-by";
/// `FooterPayloadSize`, `Flags` and the closing `Magic`: the fixed end of every file.
pub const TRAILER_SIZE: u64 = 12;
/// The smallest Puffin file: `Magic` followed by a footer with an empty payload.
const MIN_FILE_SIZE: u64 = 4 + 4 + TRAILER_SIZE;

/// One entry of the footer's `blobs` (`BlobMetadata`).
#[derive(Debug, Clone, PartialEq)]
pub struct PuffinBlob {
    /// `type`, such as [`THETA_BLOB_TYPE`].
    pub kind: String,
    /// `fields`: the field ids the blob was computed from, in order.
    pub fields: Vec<i32>,
    /// `snapshot-id`: the snapshot the blob was computed from.
    pub snapshot_id: i64,
    /// `sequence-number`: that snapshot's sequence number.
    pub sequence_number: i64,
    /// `offset`: where the blob starts in the file.
    pub offset: u64,
    /// `length`: its stored (possibly compressed) length.
    pub length: u64,
    /// `compression-codec` (`None`: stored as is).
    pub compression_codec: Option<String>,
    /// `properties`, such as [`NDV_PROPERTY`].
    pub properties: BTreeMap<String, String>,
}

/// A Puffin footer: the blobs of the file and its properties (`FileMetadata`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PuffinFooter {
    /// `blobs`.
    pub blobs: Vec<PuffinBlob>,
    /// `properties` (`created-by`, ...).
    pub properties: BTreeMap<String, String>,
}

impl PuffinFooter {
    /// The whole footer's size (`Magic` to `Magic`, the statistics file's
    /// `file-footer-size-in-bytes`) from the file's last [`TRAILER_SIZE`] bytes.
    pub fn size_from_trailer(trailer: &[u8], file_size: u64) -> Result<u64> {
        if file_size < MIN_FILE_SIZE {
            return Err(corrupt(format!(
                "{file_size} bytes is too short for a Puffin file"
            )));
        }
        let [a, b, c, d, flags, _, _, _, m0, m1, m2, m3] = trailer else {
            return Err(corrupt(format!(
                "the footer's last {TRAILER_SIZE} bytes are needed, {} given",
                trailer.len()
            )));
        };
        if [*m0, *m1, *m2, *m3] != MAGIC {
            return Err(corrupt(format!(
                "no Puffin magic at the end, found {:02X?}",
                [m0, m1, m2, m3]
            )));
        }
        if flags & 1 != 0 {
            return Err(Error::Unsupported(
                "a Puffin footer compressed with LZ4".to_string(),
            ));
        }
        let payload = u64::from(u32::from_le_bytes([*a, *b, *c, *d]));
        let size = payload + 4 + TRAILER_SIZE;
        if size + 4 > file_size {
            return Err(corrupt(format!(
                "the footer payload claims {payload} bytes, more than the file's {file_size}"
            )));
        }
        Ok(size)
    }

    /// Parses the footer from its bytes (the file's last `size` bytes, as
    /// [`Self::size_from_trailer`] gave them); blobs must lie between the file's opening magic
    /// and the footer.
    pub fn parse(footer: &[u8], file_size: u64) -> Result<Self> {
        let trailer = &footer[footer.len().saturating_sub(TRAILER_SIZE as usize)..];
        let size = Self::size_from_trailer(trailer, file_size)?;
        if footer.len() as u64 != size {
            return Err(corrupt(format!(
                "the footer is {size} bytes, {} given",
                footer.len()
            )));
        }
        if footer[..4] != MAGIC {
            return Err(corrupt("no Puffin magic at the start of the footer"));
        }
        let payload = &footer[4..footer.len() - TRAILER_SIZE as usize];
        let json: JsonValue = serde_json::from_slice(payload)
            .map_err(|e| Error::corrupt_with("", "the Puffin footer is not JSON", e))?;
        let parsed = Self::from_json(&json)?;
        let blobs_end = file_size - size;
        for (i, blob) in parsed.blobs.iter().enumerate() {
            let end = blob.offset.checked_add(blob.length);
            if blob.offset < 4 || end.is_none_or(|end| end > blobs_end) {
                return Err(corrupt(format!(
                    "blob {i} ({} bytes at {}) lies outside the blobs (4..{blobs_end})",
                    blob.length, blob.offset
                )));
            }
        }
        Ok(parsed)
    }

    /// The `FileMetadata` JSON object.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "Puffin footer";
        let o = j::object(v, WHAT)?;
        let blobs = j::opt_array(o, "blobs", WHAT)?
            .iter()
            .enumerate()
            .map(|(i, b)| blob_from_json(b).map_err(|e| e.within(format_args!("blob {i}"))))
            .collect::<Result<_>>()?;
        let properties = match o.get("properties") {
            None | Some(JsonValue::Null) => BTreeMap::new(),
            Some(p) => j::string_map(p, WHAT)?,
        };
        Ok(Self { blobs, properties })
    }

    /// The `FileMetadata` JSON object.
    pub fn to_json(&self) -> JsonValue {
        let blobs: Vec<JsonValue> = self.blobs.iter().map(blob_to_json).collect();
        let mut o = Map::new();
        o.insert("blobs".into(), JsonValue::Array(blobs));
        if !self.properties.is_empty() {
            o.insert("properties".into(), json!(self.properties));
        }
        JsonValue::Object(o)
    }
}

fn blob_from_json(v: &JsonValue) -> Result<PuffinBlob> {
    const WHAT: &str = "blob metadata";
    let o = j::object(v, WHAT)?;
    let non_negative = |key: &str| -> Result<u64> {
        let n = j::req_i64(o, key, WHAT)?;
        u64::try_from(n).map_err(|_| corrupt(format!("{WHAT}: '{key}' is negative ({n})")))
    };
    Ok(PuffinBlob {
        kind: j::req_str(o, "type", WHAT)?.to_string(),
        fields: field_ids(o, WHAT)?,
        snapshot_id: j::req_i64(o, "snapshot-id", WHAT)?,
        sequence_number: j::req_i64(o, "sequence-number", WHAT)?,
        offset: non_negative("offset")?,
        length: non_negative("length")?,
        compression_codec: j::opt_str(o, "compression-codec", WHAT)?.map(str::to_string),
        properties: match o.get("properties") {
            None | Some(JsonValue::Null) => BTreeMap::new(),
            Some(p) => j::string_map(p, WHAT)?,
        },
    })
}

/// The `fields` list of a blob's metadata (in a footer or in table metadata).
pub(crate) fn field_ids(o: &j::Object, what: &str) -> Result<Vec<i32>> {
    let Some(fields) = o.get("fields") else {
        return Err(j::missing(what, "fields"));
    };
    let list = fields
        .as_array()
        .ok_or_else(|| corrupt(format!("{what}: 'fields' must be a list of field ids")))?;
    list.iter()
        .map(|f| {
            f.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| corrupt(format!("{what}: field id {f} is not a 32-bit integer")))
        })
        .collect()
}

fn blob_to_json(b: &PuffinBlob) -> JsonValue {
    let mut o = Map::new();
    o.insert("type".into(), json!(b.kind));
    o.insert("fields".into(), json!(b.fields));
    o.insert("snapshot-id".into(), json!(b.snapshot_id));
    o.insert("sequence-number".into(), json!(b.sequence_number));
    o.insert("offset".into(), json!(b.offset));
    o.insert("length".into(), json!(b.length));
    if let Some(codec) = &b.compression_codec {
        o.insert("compression-codec".into(), json!(codec));
    }
    if !b.properties.is_empty() {
        o.insert("properties".into(), json!(b.properties));
    }
    JsonValue::Object(o)
}

/// A blob's content from its stored bytes (the file's `offset .. offset + length`), its
/// codec undone; at most `limit` bytes are inflated.
pub fn decode_blob(blob: &PuffinBlob, stored: &[u8], limit: u64) -> Result<Vec<u8>> {
    if stored.len() as u64 != blob.length {
        return Err(corrupt(format!(
            "blob of type {} is {} bytes, {} given",
            blob.kind,
            blob.length,
            stored.len()
        )));
    }
    match blob.compression_codec.as_deref() {
        None => Ok(stored.to_vec()),
        Some("zstd") => {
            let decoder = zstd::stream::read::Decoder::with_buffer(stored)
                .map_err(|e| Error::corrupt_with("", "a zstd blob", e))?;
            let mut out = Vec::new();
            decoder
                .take(limit.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| Error::corrupt_with("", "a zstd blob does not inflate", e))?;
            if out.len() as u64 > limit {
                return Err(corrupt(format!("a zstd blob inflates past {limit} bytes")));
            }
            Ok(out)
        }
        Some(other) => Err(Error::Unsupported(format!(
            "Puffin blob compression codec '{other}'"
        ))),
    }
}

/// A blob to write: its metadata but for where it lands.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBlob {
    /// `type`.
    pub kind: String,
    /// `fields`.
    pub fields: Vec<i32>,
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `sequence-number`.
    pub sequence_number: i64,
    /// `properties`.
    pub properties: BTreeMap<String, String>,
}

/// Lays out a Puffin file in memory: blobs stored uncompressed, an uncompressed footer.
#[derive(Debug)]
pub struct PuffinWriter {
    bytes: Vec<u8>,
    footer: PuffinFooter,
}

/// A finished Puffin file.
#[derive(Debug, Clone, PartialEq)]
pub struct PuffinFile {
    /// The whole file.
    pub bytes: Vec<u8>,
    /// The size of its footer (`file-footer-size-in-bytes`).
    pub footer_size: u64,
    /// Its footer.
    pub footer: PuffinFooter,
}

impl PuffinWriter {
    /// An empty file whose footer names its writer (`created-by`).
    pub fn new(created_by: &str) -> Self {
        let mut footer = PuffinFooter::default();
        footer
            .properties
            .insert(CREATED_BY_PROPERTY.to_string(), created_by.to_string());
        Self {
            bytes: MAGIC.to_vec(),
            footer,
        }
    }

    /// Appends a blob with content `payload`.
    pub fn add(&mut self, blob: NewBlob, payload: &[u8]) {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(payload);
        self.footer.blobs.push(PuffinBlob {
            kind: blob.kind,
            fields: blob.fields,
            snapshot_id: blob.snapshot_id,
            sequence_number: blob.sequence_number,
            offset,
            length: payload.len() as u64,
            compression_codec: None,
            properties: blob.properties,
        });
    }

    /// The file: the blobs, then the footer.
    pub fn finish(self) -> PuffinFile {
        let mut bytes = self.bytes;
        let payload = self.footer.to_json().to_string();
        let start = bytes.len();
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(payload.as_bytes());
        let payload_size = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        bytes.extend_from_slice(&payload_size.to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes.extend_from_slice(&MAGIC);
        PuffinFile {
            footer_size: (bytes.len() - start) as u64,
            bytes,
            footer: self.footer,
        }
    }
}

fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt("", reason)
}

#[cfg(test)]
mod tests;

//! Deletion vectors (v3): `deletion-vector-v1` blobs of Puffin files.
//!
//! A blob is a 4-byte big-endian length (of the magic and the vector), the magic
//! `D1 D3 39 64`, the deleted positions as a portable 64-bit Roaring bitmap, and a big-endian
//! CRC-32 of the magic and the vector. The manifest entry gives the blob's `content_offset`
//! and `content_size_in_bytes`, so one ranged read fetches it and the Puffin footer is never
//! needed.

use roaring::RoaringTreemap;

use crate::error::{Error, Result};

/// The magic that starts a deletion vector.
const MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];

/// The deleted positions of a `deletion-vector-v1` blob read from `file`.
pub(crate) fn decode_deletion_vector(blob: &[u8], file: &str) -> Result<RoaringTreemap> {
    let corrupt = |reason: String| Error::corrupt(file, format!("deletion vector: {reason}"));
    if blob.len() < 12 {
        return Err(corrupt(format!("{} bytes is too short", blob.len())));
    }
    let (length, rest) = blob.split_at(4);
    let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
    if length + 8 != blob.len() {
        return Err(corrupt(format!(
            "its length field says {length} bytes, the blob holds {}",
            blob.len() - 8
        )));
    }
    let (body, crc) = rest.split_at(length);
    if body[..4] != MAGIC {
        return Err(corrupt(format!("bad magic {:02X?}", &body[..4])));
    }
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let actual = crc32fast::hash(body);
    if expected != actual {
        return Err(corrupt(format!(
            "checksum {actual:08x} does not match {expected:08x}"
        )));
    }
    RoaringTreemap::deserialize_from(&body[4..])
        .map_err(|e| Error::corrupt_with(file, format!("deletion vector: {e}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob as the spec lays it out.
    fn blob(positions: &[u64]) -> Vec<u8> {
        let bitmap: RoaringTreemap = positions.iter().copied().collect();
        let mut body = MAGIC.to_vec();
        bitmap.serialize_into(&mut body).unwrap();
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend(&body);
        out.extend(crc32fast::hash(&body).to_be_bytes());
        out
    }

    #[test]
    fn round_trips_positions_beyond_32_bits() {
        let positions = [0, 7, 1 << 20, (1 << 32) + 3];
        let decoded = decode_deletion_vector(&blob(&positions), "f.puffin").unwrap();
        assert_eq!(decoded.iter().collect::<Vec<_>>(), positions);
    }

    #[test]
    fn bad_checksum_magic_and_length_are_corrupt() {
        let good = blob(&[1, 2, 3]);
        let mut bad_crc = good.clone();
        *bad_crc.last_mut().unwrap() ^= 1;
        let mut bad_magic = good.clone();
        bad_magic[4] = 0;
        let truncated = &good[..good.len() - 1];
        for (bytes, words) in [
            (&bad_crc[..], "checksum"),
            (&bad_magic[..], "magic"),
            (truncated, "length"),
            (&good[..5], "too short"),
        ] {
            let err = decode_deletion_vector(bytes, "f.puffin")
                .unwrap_err()
                .to_string();
            assert!(err.contains("f.puffin") && err.contains(words), "{err}");
        }
    }
}

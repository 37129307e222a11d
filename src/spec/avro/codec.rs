//! Avro block codecs (spec: Avro 1.11 "Object Container Files", "Required Codecs" and
//! "Optional Codecs"), undone within a bound: a block that would inflate past it is an error
//! once the bound is reached, so a small block that claims or expands to gigabytes (a zip
//! bomb) costs at most the bound, never an out-of-memory kill.

use std::io::Read;

use apache_avro::Codec;

use super::error::AvroError;

/// Inflates one block written with `codec` into `out` (cleared first); at most `limit` bytes
/// are produced. Errors say what is wrong with the block, without a path.
pub(super) fn inflate(
    codec: Codec,
    data: &[u8],
    out: &mut Vec<u8>,
    limit: u64,
) -> Result<(), AvroError> {
    out.clear();
    #[allow(unreachable_patterns)] // Codecs of features icefloe does not enable.
    match codec {
        Codec::Null => out.extend_from_slice(data),
        Codec::Deflate(_) => read_within(
            flate2::bufread::DeflateDecoder::new(data),
            "deflate",
            out,
            limit,
        )?,
        Codec::Snappy => snappy(data, out, limit)?,
        Codec::Zstandard(_) => {
            let decoder = zstd::stream::read::Decoder::with_buffer(data).map_err(|source| {
                AvroError::Decompress {
                    codec: "zstandard",
                    source,
                }
            })?;
            read_within(decoder, "zstandard", out, limit)?
        }
        other => return Err(AvroError::UnsupportedCodec(format!("{other:?}"))),
    }
    if out.len() as u64 > limit {
        return Err(AvroError::InflatesPast { limit });
    }
    Ok(())
}

/// Reads a decompressor of `codec` to its end into `out`, stopping one byte past `limit`.
fn read_within(
    reader: impl Read,
    codec: &'static str,
    out: &mut Vec<u8>,
    limit: u64,
) -> Result<(), AvroError> {
    reader
        .take(limit.saturating_add(1))
        .read_to_end(out)
        .map_err(|source| AvroError::Decompress { codec, source })?;
    if out.len() as u64 > limit {
        return Err(AvroError::InflatesPast { limit });
    }
    Ok(())
}

/// A snappy block: the compressed bytes, then the big-endian CRC-32 of the inflated bytes.
/// The inflated length is in the block's preamble, so it is checked before anything is
/// allocated.
fn snappy(data: &[u8], out: &mut Vec<u8>, limit: u64) -> Result<(), AvroError> {
    let body_len = data
        .len()
        .checked_sub(4)
        .ok_or(AvroError::SnappyWithoutChecksum(data.len()))?;
    let (body, crc) = data.split_at(body_len);
    let len = snap::raw::decompress_len(body).map_err(AvroError::Snappy)?;
    if len as u64 > limit {
        return Err(AvroError::InflatesPast { limit });
    }
    out.resize(len, 0);
    snap::raw::Decoder::new()
        .decompress(body, out)
        .map_err(AvroError::Snappy)?;
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let actual = crc32fast::hash(out);
    if expected != actual {
        return Err(AvroError::SnappyChecksum { actual, expected });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use apache_avro::{DeflateSettings, ZstandardSettings};

    use super::*;

    fn compressed(codec: Codec, plain: &[u8]) -> Vec<u8> {
        let mut bytes = plain.to_vec();
        codec.compress(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn every_codec_inflates_what_apache_avro_compresses() {
        let plain: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [
            Codec::Null,
            Codec::Deflate(DeflateSettings::default()),
            Codec::Snappy,
            Codec::Zstandard(ZstandardSettings::default()),
        ] {
            let mut out = Vec::new();
            inflate(codec, &compressed(codec, &plain), &mut out, 1 << 20).unwrap();
            assert_eq!(out, plain, "{codec:?}");
        }
    }

    #[test]
    fn a_block_inflating_past_the_limit_is_refused_at_the_limit() {
        let zeros = vec![0u8; 4 << 20];
        for codec in [
            Codec::Deflate(DeflateSettings::default()),
            Codec::Snappy,
            Codec::Zstandard(ZstandardSettings::default()),
        ] {
            let block = compressed(codec, &zeros);
            assert!(block.len() < 300_000, "{codec:?}: {}", block.len());
            let mut out = Vec::new();
            let err = inflate(codec, &block, &mut out, 1 << 20).unwrap_err();
            assert!(
                matches!(err, AvroError::InflatesPast { limit: 1_048_576 }),
                "{err}"
            );
            assert!(out.len() <= (1 << 20) + 1, "{codec:?} read {}", out.len());
            inflate(codec, &block, &mut out, 4 << 20).unwrap();
        }
    }

    #[test]
    fn a_snappy_block_is_checked() {
        let mut block = compressed(Codec::Snappy, b"some bytes, some bytes");
        let last = block.len() - 1;
        block[last] ^= 1;
        let err = inflate(Codec::Snappy, &block, &mut Vec::new(), 1000).unwrap_err();
        assert!(matches!(err, AvroError::SnappyChecksum { .. }), "{err}");
        let err = inflate(Codec::Snappy, &[1, 2], &mut Vec::new(), 1000).unwrap_err();
        assert!(matches!(err, AvroError::SnappyWithoutChecksum(2)), "{err}");
    }

    #[test]
    fn a_deflate_stream_of_repeated_blocks_is_stopped_at_the_limit() {
        // 1 MiB of zeros compressed to a non-final deflate block, repeated 4,096 times: 4 GiB
        // from about 4 MB. Only the limit's worth is ever inflated.
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&vec![0u8; 1 << 20]).unwrap();
        encoder.flush().unwrap();
        let chunk = encoder.get_ref().clone();
        let mut bomb = Vec::with_capacity(chunk.len() * 4096 + 2);
        for _ in 0..4096 {
            bomb.extend_from_slice(&chunk);
        }
        bomb.extend_from_slice(&[0x03, 0x00]); // a final, empty fixed-Huffman block
        let started = std::time::Instant::now();
        let mut out = Vec::new();
        let err = inflate(
            Codec::Deflate(DeflateSettings::default()),
            &bomb,
            &mut out,
            8 << 20,
        )
        .unwrap_err();
        assert!(
            matches!(err, AvroError::InflatesPast { limit } if limit == 8 << 20),
            "{err}"
        );
        assert!(out.len() <= (8 << 20) + 1);
        assert!(started.elapsed().as_secs() < 10);
    }
}

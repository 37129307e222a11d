use super::*;

/// The Puffin file Trino 481 wrote for `impala_trino_variant` (two zstd theta blobs).
const TRINO_STATS: &str = "tests/fixtures/external/impala_trino_variant/metadata/\
     20260629_095655_00023_wa2kj-bcc1a100-d380-42cf-bccf-2e32badf7ac5.stats";

fn trino_file() -> Vec<u8> {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    std::fs::read(std::path::Path::new(&root).join(TRINO_STATS)).unwrap()
}

fn footer_of(bytes: &[u8]) -> Result<PuffinFooter> {
    let len = bytes.len() as u64;
    let trailer = &bytes[bytes.len().saturating_sub(12)..];
    let size = PuffinFooter::size_from_trailer(trailer, len)?;
    PuffinFooter::parse(&bytes[bytes.len() - size as usize..], len)
}

#[test]
fn reads_the_footer_trino_wrote() {
    let bytes = trino_file();
    // The table metadata says: file-size-in-bytes 1389, file-footer-size-in-bytes 445.
    assert_eq!(bytes.len(), 1389);
    let trailer = &bytes[bytes.len() - 12..];
    assert_eq!(PuffinFooter::size_from_trailer(trailer, 1389).unwrap(), 445);
    let footer = footer_of(&bytes).unwrap();
    assert_eq!(footer.properties["created-by"], "Trino version 481");
    let fields: Vec<_> = footer.blobs.iter().map(|b| b.fields.clone()).collect();
    assert_eq!(fields, [vec![1], vec![2]]);
    for blob in &footer.blobs {
        assert_eq!(blob.kind, THETA_BLOB_TYPE);
        assert_eq!(blob.snapshot_id, 6_097_489_456_815_673_056);
        assert_eq!(blob.sequence_number, 2);
        assert_eq!(blob.compression_codec.as_deref(), Some("zstd"));
        assert_eq!(blob.properties[NDV_PROPERTY], "55");
        let start = blob.offset as usize;
        let stored = &bytes[start..start + blob.length as usize];
        let sketch = decode_blob(blob, stored, 1 << 20).unwrap();
        // A compact theta sketch (serial version 3, family 3) holding 55 hashes: preamble
        // longs 2 (exact mode), then 8 bytes a hash.
        assert_eq!((sketch[0] & 0x3F, sketch[1], sketch[2]), (2, 3, 3));
        assert_eq!(sketch.len(), 16 + 55 * 8);
    }
}

#[test]
fn written_files_have_the_layout_of_the_spec() {
    let mut writer = PuffinWriter::new("icefloe test");
    let blob = NewBlob {
        kind: THETA_BLOB_TYPE.to_string(),
        fields: vec![7],
        snapshot_id: 42,
        sequence_number: 3,
        properties: BTreeMap::from([(NDV_PROPERTY.to_string(), "9".to_string())]),
    };
    writer.add(blob.clone(), b"first");
    writer.add(blob, b"second blob");
    let file = writer.finish();
    let bytes = &file.bytes;
    assert_eq!(&bytes[..4], b"PFA1");
    assert_eq!(&bytes[bytes.len() - 4..], b"PFA1");
    assert_eq!(&bytes[4..9], b"first");
    // Footer: magic, JSON, its length (LE), four zero flag bytes, magic.
    let footer_start = bytes.len() - file.footer_size as usize;
    assert_eq!(footer_start, 4 + 5 + 11);
    assert_eq!(&bytes[footer_start..footer_start + 4], b"PFA1");
    let payload_len = bytes.len() - 12;
    let json_len = u32::from_le_bytes(bytes[payload_len..payload_len + 4].try_into().unwrap());
    assert_eq!(json_len as usize, file.footer_size as usize - 16);
    assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], &[0, 0, 0, 0]);
    // The payload as plain JSON, read without our parser.
    let json: JsonValue = serde_json::from_slice(&bytes[footer_start + 4..payload_len]).unwrap();
    assert_eq!(json["blobs"][1]["offset"], 9);
    assert_eq!(json["blobs"][1]["length"], 11);
    assert_eq!(json["blobs"][0]["properties"]["ndv"], "9");
    assert_eq!(json["properties"]["created-by"], "icefloe test");
    assert_eq!(footer_of(bytes).unwrap(), file.footer);
}

#[test]
fn broken_files_are_corrupt_and_lz4_unsupported() {
    let good = trino_file();
    let mut bad_magic = good.clone();
    *bad_magic.last_mut().unwrap() = b'X';
    let mut long_payload = good.clone();
    let at = good.len() - 12;
    long_payload[at..at + 4].copy_from_slice(&100_000u32.to_le_bytes());
    let mut not_json = good.clone();
    let footer_start = good.len() - 445;
    not_json[footer_start + 4] = b'#';
    let mut outside = good.clone();
    let text = String::from_utf8_lossy(&good[footer_start + 4..at])
        .replace("\"offset\":474", "\"offset\":999");
    outside.truncate(footer_start + 4);
    outside.extend(text.as_bytes());
    outside.extend((text.len() as u32).to_le_bytes());
    outside.extend([0, 0, 0, 0]);
    outside.extend(MAGIC);
    for (bytes, words) in [
        (&bad_magic[..], "magic"),
        (&long_payload[..], "claims"),
        (&not_json[..], "not JSON"),
        (&outside[..], "outside"),
        (&good[..10], "too short"),
    ] {
        let err = footer_of(bytes).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
    let mut lz4 = good.clone();
    lz4[at + 4] = 1;
    assert!(matches!(footer_of(&lz4), Err(Error::Unsupported(_))));
    let footer = footer_of(&good).unwrap();
    let blob = &footer.blobs[0];
    let stored = &good[blob.offset as usize..(blob.offset + blob.length) as usize];
    let err = decode_blob(blob, stored, 10).unwrap_err().to_string();
    assert!(err.contains("inflates past 10"), "{err}");
    let err = decode_blob(blob, &stored[1..], 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(err.contains("469 given"), "{err}");
}

use super::*;
use apache_avro::types::Value;
use apache_avro::{DeflateSettings, Writer, ZstandardSettings};

fn schema() -> Schema {
    Schema::parse_str(
        r#"{"type": "record", "name": "r", "fields": [
            {"name": "id", "type": "long", "field-id": 1},
            {"name": "name", "type": ["null", "string"], "field-id": 2}]}"#,
    )
    .unwrap()
}

/// Three blocks of records written with `codec` (a flush ends a block).
fn file(codec: Codec) -> Vec<u8> {
    let schema = schema();
    let mut writer = Writer::with_codec(&schema, Vec::new(), codec).unwrap();
    writer.add_user_metadata("k".into(), "v").unwrap();
    for block in 0..3_i64 {
        for i in 0..4 {
            let id = block * 10 + i;
            let name = if i % 2 == 0 {
                Value::Union(1, Box::new(Value::String(format!("n{id}"))))
            } else {
                Value::Union(0, Box::new(Value::Null))
            };
            let record = Value::Record(vec![("id".into(), Value::Long(id)), ("name".into(), name)]);
            writer.append_value_ref(&record).unwrap();
        }
        writer.flush().unwrap();
    }
    writer.into_inner().unwrap()
}

fn read(bytes: &[u8]) -> Result<Vec<(i64, Option<String>)>> {
    AvroFile::open(bytes)?.map_records("r", |r| {
        Ok((
            r.req("id", 1, Field::long)?,
            r.opt("name", 2, Field::string)?,
        ))
    })
}

#[test]
fn every_codec_and_block_reads_in_order() {
    let expected: Vec<(i64, Option<String>)> = [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]
        .into_iter()
        .map(|id| (id, (id % 2 == 0).then(|| format!("n{id}"))))
        .collect();
    for codec in [
        Codec::Null,
        Codec::Deflate(DeflateSettings::default()),
        Codec::Snappy,
        Codec::Zstandard(ZstandardSettings::default()),
    ] {
        let bytes = file(codec);
        assert_eq!(read(&bytes).unwrap(), expected, "{codec:?}");
        let file = AvroFile::open(&bytes).unwrap();
        assert_eq!(
            file.metadata().len(),
            1,
            "only user keys: {:?}",
            file.metadata().keys()
        );
        assert_eq!(file.metadata()["k"], b"v");
    }
}

#[test]
fn the_writer_schema_is_parsed_once_per_text() {
    let a = file(Codec::Null);
    let b = file(Codec::Deflate(DeflateSettings::default()));
    let (a, b) = (AvroFile::open(&a).unwrap(), AvroFile::open(&b).unwrap());
    assert!(Arc::ptr_eq(&a.schema, &b.schema));
}

#[test]
fn every_truncation_and_a_wrong_sync_marker_are_corrupt_not_panics() {
    let bytes = file(Codec::Deflate(DeflateSettings::default()));
    for cut in 0..bytes.len() {
        // A cut exactly between blocks is a shorter valid file.
        if let Err(e) = read(&bytes[..cut]) {
            assert!(matches!(e, Error::Corrupt { .. }), "cut {cut}: {e}");
        }
    }
    assert!(read(&bytes[..bytes.len() - 1]).is_err());
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let err = read(&flipped).unwrap_err();
    assert_eq!(
        err.to_string(),
        "corrupt: Avro block after record 8: sync marker does not match the header's"
    );
    assert!(
        matches!(avro_error(&err), Some(AvroError::SyncMismatch)),
        "{err:?}"
    );
    let err = read(b"Obj\x02rest").unwrap_err();
    assert!(
        matches!(avro_error(&err), Some(AvroError::BadMagic)),
        "{err:?}"
    );
}

/// The [`AvroError`] a decoding error carries as its source.
fn avro_error(err: &Error) -> Option<&AvroError> {
    std::error::Error::source(err)?.downcast_ref()
}

#[test]
fn unknown_codecs_are_named() {
    let mut bytes = file(Codec::Deflate(DeflateSettings::default()));
    let key = bytes.windows(10).position(|w| w == b"avro.codec").unwrap();
    let at = key + 11; // the key, then the value's length (one byte)
    assert_eq!(&bytes[at..at + 7], b"deflate");
    bytes[at..at + 7].copy_from_slice(b"lz4flat");
    let err = AvroFile::open(&bytes).err().unwrap().to_string();
    assert!(err.contains("unsupported codec 'lz4flat'"), "{err}");
}

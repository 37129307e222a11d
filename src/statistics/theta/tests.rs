use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Int32Array, RecordBatch, StringArray};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::*;
use crate::spec::puffin::{PuffinFooter, decode_blob};

fn fixture(path: &str) -> PathBuf {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    Path::new(&root)
        .join("tests/fixtures/external/impala_trino_variant")
        .join(path)
}

/// The `id` and `descr` columns of the table's only data file.
fn trino_rows() -> Vec<RecordBatch> {
    let data =
        fixture("data/20260629_095655_00023_wa2kj-0f39c7a5-6cc6-4be7-abc0-a45a62dacec5.parquet");
    let file = std::fs::File::open(data).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let mask = ProjectionMask::roots(builder.parquet_schema(), [0, 1]);
    let reader = builder.with_projection(mask).build().unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// Trino's theta sketch of field `field`, from its Puffin file.
fn trino_sketch(field: i32) -> CompactThetaSketch {
    let bytes = std::fs::read(fixture(
        "metadata/20260629_095655_00023_wa2kj-bcc1a100-d380-42cf-bccf-2e32badf7ac5.stats",
    ))
    .unwrap();
    let len = bytes.len() as u64;
    let size = PuffinFooter::size_from_trailer(&bytes[bytes.len() - 12..], len).unwrap();
    let footer = PuffinFooter::parse(&bytes[bytes.len() - size as usize..], len).unwrap();
    let blob = footer.blobs.iter().find(|b| b.fields == [field]).unwrap();
    let stored = &bytes[blob.offset as usize..(blob.offset + blob.length) as usize];
    CompactThetaSketch::deserialize(&decode_blob(blob, stored, 1 << 20).unwrap()).unwrap()
}

fn hashes(sketch: &CompactThetaSketch) -> BTreeSet<u64> {
    sketch.iter().map(|e| e.hash()).collect()
}

#[test]
fn our_sketches_hold_the_hashes_trino_wrote_for_the_same_values() {
    let batches = trino_rows();
    let mut ids = ColumnSketch::new().unwrap();
    let mut descrs = ColumnSketch::new().unwrap();
    let mut distinct_ids = BTreeSet::new();
    for batch in &batches {
        let id = batch.column(0);
        ids.update(id.as_ref(), &PrimitiveType::Int).unwrap();
        descrs
            .update(batch.column(1).as_ref(), &PrimitiveType::String)
            .unwrap();
        let id = id.as_any().downcast_ref::<Int32Array>().unwrap();
        distinct_ids.extend(id.iter().flatten());
        assert!(
            batch
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .is_some()
        );
    }
    for (field, ours) in [(1, ids), (2, descrs)] {
        let ours = ColumnSketch::union(&[ours]).unwrap();
        let trino = trino_sketch(field);
        // Under 4,096 distinct values both sketches are exact: the same set of hashes.
        assert_eq!(hashes(&ours), hashes(&trino), "field {field}");
        assert_eq!(ndv(&ours), ndv(&trino));
        assert_eq!(ours.seed_hash(), trino.seed_hash());
    }
    assert_eq!(distinct_ids.len(), 55);
}

#[test]
fn unions_estimate_past_the_exact_range_and_blobs_round_trip() {
    let mut parts = Vec::new();
    for part in 0..4 {
        let mut sketch = ColumnSketch::new().unwrap();
        // 100,000 distinct longs over four parts, each part overlapping the next by half.
        let values: Vec<i64> = (part * 20_000..part * 20_000 + 40_000).collect();
        let array = datafusion::arrow::array::Int64Array::from(values);
        sketch.update(&array, &PrimitiveType::Long).unwrap();
        parts.push(sketch);
    }
    let union = ColumnSketch::union(&parts).unwrap();
    let estimate = ndv(&union) as f64;
    // lg k 12: a relative standard error of about 1/sqrt(4096) = 1.6%; 5% is three of them.
    assert!((estimate - 100_000.0).abs() < 5_000.0, "{estimate}");
    assert_eq!(ndv_of_blob(&union.serialize()).unwrap(), ndv(&union));
    assert!(ndv_of_blob(&union.serialize()[..20]).is_err());
}

#[test]
fn nulls_and_empty_strings_are_not_values() {
    let mut sketch = ColumnSketch::new().unwrap();
    let array = StringArray::from(vec![Some(""), None, Some("a"), Some("a"), Some("b")]);
    sketch.update(&array, &PrimitiveType::String).unwrap();
    assert_eq!(ndv(&ColumnSketch::union(&[sketch]).unwrap()), 2);
}

//! The v3 types through [`DataFileWriter`]: what the Parquet file holds, and what is refused.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, Int64Array, NullArray,
};
use datafusion::arrow::array::{RecordBatch, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::{EdgeInterpolationAlgorithm, LogicalType};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::FileColumns;
use crate::Error;
use crate::spec::types::EdgeAlgorithm;
use crate::spec::{NestedField, PrimitiveType as P, Schema, StructType, Type};
use crate::to_arrow::schema_to_arrow;
use crate::write::{DataFileWriter, WriterOptions};

fn schema() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(1, "id", P::Long),
            NestedField::optional(2, "v", P::Variant),
            NestedField::optional(
                3,
                "g",
                P::Geometry {
                    crs: Some("srid:3857".into()),
                },
            ),
            NestedField::optional(
                4,
                "h",
                P::Geography {
                    crs: None,
                    algorithm: Some(EdgeAlgorithm::Karney),
                },
            ),
            NestedField::optional(5, "u", P::Unknown),
        ],
    )
}

/// The int32 42 of the `impala_trino_variant` fixture (metadata, value), written by Trino.
const VARIANT_42: ([u8; 3], [u8; 5]) = ([0x01, 0x00, 0x00], [0x14, 0x2a, 0x00, 0x00, 0x00]);

/// Two rows: a variant and a NULL one; `g` as given, `h` and `u` null.
fn batch(schema: &Schema, value: &[u8], g: Option<&[u8]>) -> RecordBatch {
    let arrow = Arc::new(schema_to_arrow(schema).unwrap());
    let DataType::Struct(parts) = arrow.field(1).data_type().clone() else {
        panic!()
    };
    let v = StructArray::try_new(
        parts,
        vec![
            Arc::new(BinaryArray::from_iter_values([
                &VARIANT_42.0[..],
                &[1, 0, 0],
            ])),
            Arc::new(BinaryArray::from_iter_values([value, &[0]])),
        ],
        Some(NullBuffer::from(vec![true, false])),
    )
    .unwrap();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1, 2])),
        Arc::new(v),
        Arc::new(BinaryViewArray::from(vec![g, None])),
        Arc::new(BinaryViewArray::from(vec![None::<&[u8]>, None])),
        Arc::new(NullArray::new(2)),
    ];
    RecordBatch::try_new(arrow, columns).unwrap()
}

async fn write(
    schema: &Schema,
    batch: &RecordBatch,
) -> crate::Result<(Arc<InMemory>, crate::spec::DataFile)> {
    let store = Arc::new(InMemory::new());
    let mut w = DataFileWriter::new(
        Arc::clone(&store) as Arc<dyn ObjectStore>,
        Path::from("t/a.parquet"),
        "memory:///t/a.parquet".into(),
        schema,
        WriterOptions::default(),
    )?;
    w.write(batch).await?;
    Ok((store, w.close().await?))
}

/// POINT(1 2), little-endian: the WKB example PostGIS documents for `ST_AsBinary`.
const POINT_1_2: &str = "0101000000000000000000f03f0000000000000040";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[tokio::test]
async fn v3_columns_get_their_parquet_types_and_unknown_no_column() {
    let schema = schema();
    let point = hex(POINT_1_2);
    let (store, file) = write(&schema, &batch(&schema, &VARIANT_42.1, Some(&point)))
        .await
        .unwrap();
    let bytes = store
        .get(&Path::from("t/a.parquet"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let root = reader.parquet_schema().root_schema();
    let fields: Vec<_> = root
        .get_fields()
        .iter()
        .map(|f| {
            (
                f.name().to_string(),
                f.get_basic_info().logical_type_ref().cloned(),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            ("id".to_string(), None),
            ("v".to_string(), Some(LogicalType::variant(None))),
            // Parquet's GEOMETRY CRS is the spec's; OGC:CRS84 and spherical are implicit.
            (
                "g".to_string(),
                Some(LogicalType::geometry(Some("srid:3857".into())))
            ),
            (
                "h".to_string(),
                Some(LogicalType::geography(
                    None,
                    Some(EdgeInterpolationAlgorithm::KARNEY)
                ))
            ),
        ],
        "no column for the unknown field"
    );
    // The variant and WKB bytes come back unchanged.
    let batch = reader.build().unwrap().next().unwrap().unwrap();
    let v = batch
        .column(1)
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let value = v.column(1).as_any().downcast_ref::<BinaryArray>().unwrap();
    assert_eq!(value.value(0), VARIANT_42.1);
    assert!(v.is_null(1));
    let g = batch
        .column(2)
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap();
    assert_eq!((g.value(0), g.is_null(1)), (&point[..], true));
    // No metrics for the variant's leaves (no field ids) nor for unknown.
    let mut counted: Vec<_> = file.value_counts.keys().copied().collect();
    counted.sort_unstable();
    assert_eq!(counted, [1, 3, 4]);
    // Bounds for id only: none for the variant, none for the geometry (a bounding box).
    assert!(file.lower_bounds.iter().flatten().all(|(id, _)| *id == 1));
}

#[tokio::test]
async fn malformed_variants_and_wkb_are_refused() {
    let schema = schema();
    let cut_short = &VARIANT_42.1[..3];
    let err = write(&schema, &batch(&schema, cut_short, None))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what, .. } if what.contains("'v'")),
        "{err:?}"
    );
    let cut = hex(POINT_1_2);
    let err = write(&schema, &batch(&schema, &VARIANT_42.1, Some(&cut[..20])))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what, reason }
            if what.contains("'g' in row 0") && reason.contains("not a WKB geometry")),
        "{err:?}"
    );
}

#[test]
fn v3_types_inside_nested_columns_are_refused_by_path() {
    let inner = StructType::new(vec![NestedField::optional(3, "payload", P::Variant)]);
    let schema = Schema::new(0, vec![NestedField::optional(1, "s", Type::Struct(inner))]);
    let err = FileColumns::of(&schema).unwrap_err().to_string();
    assert!(
        err.contains("'s.payload'") && err.contains("variant"),
        "{err}"
    );
    let fine = Schema::new(
        0,
        vec![NestedField::optional(
            1,
            "s",
            Type::Struct(StructType::new(vec![NestedField::optional(
                2,
                "x",
                P::TimestampNs,
            )])),
        )],
    );
    assert!(FileColumns::of(&fine).is_ok());
}

//! [`DataFileWriter`] end to end: a batch of every primitive type into an in-memory store, read
//! back, and every metric checked against values worked out by hand below.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryViewArray, BooleanArray, Date32Array, Decimal128Array,
    FixedSizeBinaryArray, Float32Array, Float64Array, Int32Array, Int64Array, ListArray,
    RecordBatch, StringArray, StringViewArray, StructArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, TimestampNanosecondArray,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::{Compression, GzipLevel, LogicalType, ZstdLevel};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::{DataFileWriter, WriterOptions};
use crate::Error;
use crate::spec::{
    DataContentType, FileFormat, ListType, NestedField, PrimitiveType as P, Schema, StructType,
    Type,
};
use crate::to_arrow::schema_to_arrow;

const TZ: &str = "+00:00";

fn schema() -> Schema {
    let st = StructType::new(vec![
        NestedField::optional(17, "name", P::String),
        NestedField::optional(18, "score", P::Double),
    ]);
    let tags = ListType {
        element_field: Arc::new(NestedField::optional(20, "element", P::Double)),
    };
    Schema::new(
        0,
        vec![
            NestedField::optional(1, "b", P::Boolean),
            NestedField::required(2, "i", P::Int),
            NestedField::optional(3, "l", P::Long),
            NestedField::optional(4, "f", P::Float),
            NestedField::optional(5, "d", P::Double),
            NestedField::optional(
                6,
                "dec",
                P::Decimal {
                    precision: 20,
                    scale: 2,
                },
            ),
            NestedField::optional(7, "date", P::Date),
            NestedField::optional(8, "time", P::Time),
            NestedField::optional(9, "ts", P::Timestamp),
            NestedField::optional(10, "tstz", P::Timestamptz),
            NestedField::optional(11, "ts_ns", P::TimestampNs),
            NestedField::optional(12, "tstz_ns", P::TimestamptzNs),
            NestedField::optional(13, "s", P::String),
            NestedField::optional(14, "u", P::Uuid),
            NestedField::optional(15, "fx", P::Fixed(3)),
            NestedField::optional(16, "bin", P::Binary),
            NestedField::optional(19, "st", Type::Struct(st)),
            NestedField::optional(21, "tags", Type::List(tags)),
        ],
    )
}

fn uuid_array(values: Vec<Option<[u8; 16]>>) -> ArrayRef {
    Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size(values.into_iter(), 16).unwrap())
}

/// Four rows; row 2 has a null struct whose children still hold values that must not count.
fn batch(schema: &Schema) -> RecordBatch {
    let arrow = Arc::new(schema_to_arrow(schema).unwrap());
    let DataType::Struct(st_fields) = arrow.field_with_name("st").unwrap().data_type().clone()
    else {
        panic!()
    };
    let DataType::List(element) = arrow.field_with_name("tags").unwrap().data_type().clone() else {
        panic!()
    };
    let st = StructArray::new(
        st_fields,
        vec![
            Arc::new(StringArray::from(vec![
                Some("zz-common-prefix-2"),
                Some("zz-common-prefix-1"),
                Some("zzzz-hidden-by-null-struct"),
                Some("b"),
            ])),
            Arc::new(Float64Array::from(vec![1.0, f64::NAN, 99.0, -4.0])),
        ],
        Some(NullBuffer::from(vec![true, true, false, true])),
    );
    let tags = ListArray::new(
        element,
        OffsetBuffer::new(vec![0, 2, 2, 2, 3].into()),
        Arc::new(Float64Array::from(vec![1.0, f64::NAN, 3.0])),
        Some(NullBuffer::from(vec![true, true, false, true])),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BooleanArray::from(vec![
            Some(true),
            None,
            Some(false),
            Some(true),
        ])),
        Arc::new(Int32Array::from(vec![3, -7, 12, 0])),
        Arc::new(Int64Array::from(vec![
            None,
            Some(5),
            Some(-9_000_000_000),
            Some(1),
        ])),
        Arc::new(Float32Array::from(vec![
            Some(1.5),
            Some(f32::NAN),
            Some(-0.0),
            None,
        ])),
        Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(0.0),
            Some(2.25),
            Some(-1.0),
        ])),
        Arc::new(
            Decimal128Array::from(vec![Some(12345), Some(-99), None, Some(7)])
                .with_precision_and_scale(20, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from(vec![
            Some(19000),
            Some(-1),
            None,
            Some(20000),
        ])),
        Arc::new(Time64MicrosecondArray::from(vec![
            Some(0),
            Some(86_399_999_999),
            None,
            Some(1),
        ])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_700_000_000_000_000),
            Some(-5),
            None,
            Some(0),
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![Some(10), None, Some(-20), Some(30)])
                .with_timezone(TZ),
        ),
        Arc::new(TimestampNanosecondArray::from(vec![
            Some(1_700_000_000_000_000_123),
            None,
            Some(-1),
            Some(7),
        ])),
        Arc::new(
            TimestampNanosecondArray::from(vec![None, None, Some(42), None]).with_timezone(TZ),
        ),
        Arc::new(StringViewArray::from(vec![
            Some("common-prefix-aaaa-2"),
            Some("common-prefix-aaaa-1"),
            Some("日本語テキスト"),
            None,
        ])),
        uuid_array(vec![
            Some([0x10; 16]),
            Some([0x02; 16]),
            None,
            Some([0xF0; 16]),
        ]),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                vec![Some([1u8, 2, 3]), Some([1, 2, 4]), Some([0, 0, 0]), None].into_iter(),
                3,
            )
            .unwrap(),
        ),
        Arc::new(BinaryViewArray::from(vec![
            Some(&[0x01u8; 20][..]),
            Some(&[0xFF; 17][..]),
            None,
            Some(&[0x00, 0x01][..]),
        ])),
        Arc::new(st),
        Arc::new(tags),
    ];
    RecordBatch::try_new(arrow, columns).unwrap()
}

fn small_row_groups() -> WriterOptions {
    WriterOptions {
        row_group_rows: 2,
        compression: Compression::SNAPPY,
        ..WriterOptions::default()
    }
}

async fn write(store: &Arc<InMemory>, path: &str, options: WriterOptions) -> crate::spec::DataFile {
    let schema = schema();
    let mut w = DataFileWriter::new(
        Arc::clone(store) as Arc<dyn ObjectStore>,
        Path::from(path),
        format!("memory:///{path}"),
        &schema,
        options,
    )
    .unwrap();
    w.write(&batch(&schema)).await.unwrap();
    w.close().await.unwrap()
}

async fn read_bytes(store: &InMemory, path: &str) -> bytes::Bytes {
    store
        .get(&Path::from(path))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
}

#[tokio::test]
async fn rows_read_back_unchanged_with_field_ids() {
    let store = Arc::new(InMemory::new());
    write(&store, "t/data/a.parquet", small_row_groups()).await;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(read_bytes(&store, "t/data/a.parquet").await)
            .unwrap();
    // (d) Every column, leaves and groups, carries its field id.
    let parquet = builder.parquet_schema();
    let ids: Vec<i32> = parquet
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.get_basic_info().id())
        .collect();
    assert_eq!(
        ids,
        [
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 21
        ]
    );
    let leaf_ids: Vec<i32> = parquet
        .columns()
        .iter()
        .map(|c| c.self_type().get_basic_info().id())
        .collect();
    assert_eq!(
        leaf_ids,
        [
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20
        ]
    );
    let uuid = parquet.column(13);
    assert_eq!(uuid.self_type().get_basic_info().id(), 14);
    assert_eq!(uuid.logical_type_ref(), Some(&LogicalType::Uuid));
    // (a) The rows.
    let read: Vec<RecordBatch> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    let read = concat_batches(&read[0].schema(), &read).unwrap();
    let written = batch(&schema());
    assert_eq!(read.num_rows(), 4);
    for (i, field) in written.schema().fields().iter().enumerate() {
        // Without an Arrow schema in the footer, types come from the Parquet schema (a
        // timestamptz reads with zone "UTC", not "+00:00"); icefloe's reader casts to the
        // table's types, as here.
        let column =
            datafusion::arrow::compute::cast(read.column(i), written.column(i).data_type())
                .unwrap_or_else(|e| panic!("{}: {e}", field.name()));
        if field.name() != "st" {
            assert_eq!(
                column.as_ref(),
                written.column(i).as_ref(),
                "{}",
                field.name()
            );
        }
    }
    // The struct comes back with its hidden child value as null.
    let st = read
        .column(16)
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    assert!(st.is_null(2));
    assert_eq!(
        st.column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .value(3),
        "b"
    );
}

fn le32(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn le64(v: i64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

#[tokio::test]
async fn metrics_match_the_data() {
    let store = Arc::new(InMemory::new());
    let file = write(&store, "t/data/m.parquet", small_row_groups()).await;
    let bytes = read_bytes(&store, "t/data/m.parquet").await;
    assert_eq!(file.content, DataContentType::Data);
    assert_eq!(file.file_format, FileFormat::Parquet);
    assert_eq!(file.file_path, "memory:///t/data/m.parquet");
    assert_eq!(file.record_count, 4);
    assert_eq!(file.file_size_in_bytes, bytes.len() as i64);
    // Two row groups of two rows; the first starts right after the magic.
    let splits = file.split_offsets.clone().unwrap();
    assert_eq!(splits.len(), 2);
    assert_eq!(splits[0], 4);
    assert!(splits[1] > splits[0] && splits[1] < file.file_size_in_bytes);

    let leaves: HashSet<i32> = (1..=18).filter(|id| *id != 19).chain([20]).collect();
    assert_eq!(
        file.column_sizes.keys().copied().collect::<HashSet<_>>(),
        leaves
    );
    assert!(file.column_sizes.values().all(|s| *s > 0));
    assert!(file.column_sizes.values().sum::<i64>() < file.file_size_in_bytes);

    // Every top-level and struct leaf has one value per row; the list leaf one per level
    // entry: 2 elements, an empty list, a null list, 1 element.
    let mut values: HashMap<i32, i64> = leaves.iter().map(|id| (*id, 4)).collect();
    values.insert(20, 5);
    assert_eq!(file.value_counts, values);
    let nulls: HashMap<i32, i64> = [
        (1, 1),
        (2, 0),
        (3, 1),
        (4, 1),
        (5, 0),
        (6, 1),
        (7, 1),
        (8, 1),
        (9, 1),
        (10, 1),
        (11, 1),
        (12, 3),
        (13, 1),
        (14, 1),
        (15, 1),
        (16, 1),
        // Row 2's struct is null, so are its children; the empty and the null list.
        (17, 1),
        (18, 1),
        (20, 2),
    ]
    .into();
    assert_eq!(file.null_value_counts, nulls);
    // Float columns outside lists: NaN in f, d and st.score (not the hidden 99.0's row).
    assert_eq!(
        file.nan_value_counts,
        HashMap::from([(4, 1), (5, 1), (18, 1)])
    );

    let lower = file.lower_bounds.clone().unwrap();
    let upper = file.upper_bounds.clone().unwrap();
    let expected_lower: HashMap<i32, Vec<u8>> = [
        (1, vec![0]),
        (2, le32(-7)),
        (3, le64(-9_000_000_000)),
        (4, (-0.0f32).to_le_bytes().to_vec()),
        (5, (-1.0f64).to_le_bytes().to_vec()),
        (6, vec![0x9D]), // -99 unscaled, minimal two's complement
        (7, le32(-1)),
        (8, le64(0)),
        (9, le64(-5)),
        (10, le64(-20)),
        (11, le64(-1)),
        (12, le64(42)),
        (13, b"common-prefix-aa".to_vec()), // 16 code points
        (14, vec![0x02; 16]),
        (15, vec![0, 0, 0]),
        (16, vec![0x00, 0x01]),
        (17, b"b".to_vec()),
        (18, (-4.0f64).to_le_bytes().to_vec()),
    ]
    .into();
    assert_eq!(lower, expected_lower);
    let expected_upper: HashMap<i32, Vec<u8>> = [
        (1, vec![1]),
        (2, le32(12)),
        (3, le64(5)),
        (4, 1.5f32.to_le_bytes().to_vec()),
        (5, 2.25f64.to_le_bytes().to_vec()),
        (6, vec![0x30, 0x39]), // 12345
        (7, le32(20000)),
        (8, le64(86_399_999_999)),
        (9, le64(1_700_000_000_000_000)),
        (10, le64(30)),
        (11, le64(1_700_000_000_000_000_123)),
        (12, le64(42)),
        (13, "日本語テキスト".as_bytes().to_vec()), // 7 code points: whole
        (14, vec![0xF0; 16]),
        (15, vec![1, 2, 4]),
        // 16: [0xFF; 17] cut to 16 bytes cannot be incremented: no upper bound.
        (17, b"zz-common-prefiy".to_vec()), // cut to 16, 'x' + 1
        (18, 1.0f64.to_le_bytes().to_vec()),
    ]
    .into();
    assert_eq!(upper, expected_upper);
}

#[tokio::test]
async fn several_batches_and_defaults() {
    let store = Arc::new(InMemory::new());
    let schema = schema();
    let mut w = DataFileWriter::new(
        Arc::clone(&store) as Arc<dyn ObjectStore>,
        Path::from("t/data/z.parquet"),
        "memory:///t/data/z.parquet".into(),
        &schema,
        WriterOptions::default(),
    )
    .unwrap();
    let b = batch(&schema);
    w.write(&b).await.unwrap();
    w.write(&b.slice(1, 2)).await.unwrap();
    assert!(w.bytes_written() > 0);
    let file = w.close().await.unwrap();
    assert_eq!(file.record_count, 6);
    assert_eq!(file.split_offsets, Some(vec![4]));
    assert_eq!(file.value_counts[&2], 6);
    assert_eq!(file.nan_value_counts[&4], 2);
    let bytes = read_bytes(&store, "t/data/z.parquet").await;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let meta = reader.metadata();
    assert!(matches!(
        meta.row_group(0).column(0).compression(),
        Compression::ZSTD(_)
    ));
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == "iceberg.schema"));
    // As Java: no Arrow schema (its view types would clash with other writers' files).
    assert!(!kv.iter().any(|k| k.key == "ARROW:schema"), "{kv:?}");
}

#[tokio::test]
async fn a_batch_of_the_wrong_shape_is_rejected_with_the_file_name() {
    let store = Arc::new(InMemory::new());
    let schema = Schema::new(0, vec![NestedField::required(1, "id", P::Long)]);
    let mut w = DataFileWriter::new(
        store,
        Path::from("x.parquet"),
        "memory:///x.parquet".into(),
        &schema,
        WriterOptions::default(),
    )
    .unwrap();
    let arrow = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
        datafusion::arrow::datatypes::Field::new("id", DataType::Int32, false),
    ]));
    let bad = RecordBatch::try_new(arrow, vec![Arc::new(Int32Array::from(vec![1]))]).unwrap();
    let err = w.write(&bad).await.unwrap_err().to_string();
    assert!(err.contains("memory:///x.parquet"), "{err}");
    // A null in a required column.
    let arrow = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
        datafusion::arrow::datatypes::Field::new("id", DataType::Int64, true),
    ]));
    let bad = RecordBatch::try_new(arrow, vec![Arc::new(Int64Array::from(vec![None]))]).unwrap();
    let err = w.write(&bad).await.unwrap_err().to_string();
    assert!(err.contains("memory:///x.parquet"), "{err}");
    w.abort().await.unwrap();
}

#[test]
fn options_come_from_table_properties() {
    let props = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let d = WriterOptions::from_properties(&HashMap::new()).unwrap();
    assert_eq!(d, WriterOptions::default());
    assert_eq!(d.truncate_length, 16);
    assert!(matches!(d.compression, Compression::ZSTD(_)));
    let o = WriterOptions::from_properties(&props(&[
        ("write.parquet.compression-codec", "SNAPPY"),
        ("write.parquet.row-group-size-bytes", "1048576"),
        ("write.metadata.metrics.default", "truncate(8)"),
    ]))
    .unwrap();
    assert_eq!(o.compression, Compression::SNAPPY);
    assert_eq!(o.row_group_size_bytes, 1 << 20);
    assert_eq!(o.truncate_length, 8);
    let full = props(&[("write.metadata.metrics.default", "full")]);
    assert_eq!(
        WriterOptions::from_properties(&full)
            .unwrap()
            .truncate_length,
        usize::MAX
    );
    for (key, value) in [
        ("write.parquet.compression-codec", "lzo2"),
        ("write.parquet.page-size-bytes", "big"),
        ("write.metadata.metrics.default", "truncate(0)"),
        ("write.parquet.compression-level", "99"),
    ] {
        let err = WriterOptions::from_properties(&props(&[(key, value)])).unwrap_err();
        let named = format!("table property {key}");
        assert!(
            matches!(&err, Error::InvalidArgument { what, .. } if what.starts_with(&named))
                && err.to_string().contains(&format!("'{value}'")),
            "{err}"
        );
    }
    // Levels: zstd's are 1 to 22, gzip's 0 to 9 (the parquet crate's ranges).
    let level = |codec: &str, level: &str| {
        WriterOptions::from_properties(&props(&[
            ("write.parquet.compression-codec", codec),
            ("write.parquet.compression-level", level),
        ]))
        .map(|o| o.compression)
    };
    assert_eq!(
        level("zstd", "22").unwrap(),
        Compression::ZSTD(ZstdLevel::try_new(22).unwrap())
    );
    assert_eq!(
        level("gzip", "9").unwrap(),
        Compression::GZIP(GzipLevel::try_new(9).unwrap())
    );
    for (codec, bad) in [
        ("zstd", "23"),
        ("gzip", "10"),
        ("gzip", "-1"),
        ("snappy", "x"),
    ] {
        let err = level(codec, bad).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, Error::InvalidArgument { .. })
                && message.contains("write.parquet.compression-level")
                && message.contains(&format!("'{bad}'")),
            "{codec} {bad}: {message}"
        );
    }
}

#[tokio::test]
async fn batches_without_field_id_metadata_are_written_with_the_table_ids() {
    use datafusion::arrow::datatypes::Fields;
    let inner = StructType::new(vec![NestedField::optional(3, "name", P::String)]);
    let list = ListType {
        element_field: Arc::new(NestedField::optional(5, "element", P::Long)),
    };
    let schema = Schema::new(
        0,
        vec![
            NestedField::optional(2, "st", Type::Struct(inner)),
            NestedField::optional(4, "xs", Type::List(list)),
        ],
    );
    // Plain Arrow fields, as a projection or a VALUES list would give.
    let name = Field::new("name", DataType::Utf8, true);
    let element = Arc::new(Field::new("item", DataType::Int64, true));
    let st = StructArray::new(
        Fields::from(vec![name.clone()]),
        vec![Arc::new(StringArray::from(vec!["q", "a"]))],
        None,
    );
    let xs = ListArray::new(
        Arc::clone(&element),
        OffsetBuffer::new(vec![0, 1, 3].into()),
        Arc::new(Int64Array::from(vec![1, 2, 3])),
        None,
    );
    let arrow = Arc::new(ArrowSchema::new(vec![
        Field::new("st", DataType::Struct(vec![name].into()), true),
        Field::new("xs", DataType::List(element), true),
    ]));
    let batch = RecordBatch::try_new(arrow, vec![Arc::new(st), Arc::new(xs)]).unwrap();
    let store = Arc::new(InMemory::new());
    let mut w = DataFileWriter::new(
        Arc::clone(&store) as Arc<dyn ObjectStore>,
        Path::from("p.parquet"),
        "memory:///p.parquet".into(),
        &schema,
        WriterOptions::default(),
    )
    .unwrap();
    w.write(&batch).await.unwrap();
    let file = w.close().await.unwrap();
    assert_eq!(file.value_counts, HashMap::from([(3, 2), (5, 3)]));
    assert_eq!(
        file.lower_bounds.unwrap(),
        HashMap::from([(3, b"a".to_vec())])
    );
    let bytes = read_bytes(&store, "p.parquet").await;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let leaf_ids: Vec<i32> = builder
        .parquet_schema()
        .columns()
        .iter()
        .map(|c| c.self_type().get_basic_info().id())
        .collect();
    assert_eq!(leaf_ids, [3, 5]);
    let read: Vec<RecordBatch> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    let (read, written) = (
        read[0]
            .column(1)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap(),
        batch
            .column(1)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap(),
    );
    assert_eq!(read.offsets(), written.offsets());
    assert_eq!(read.values().as_ref(), written.values().as_ref());
}

/// Writes `rows` rows of `id` (all distinct), `score` (all distinct, every 7th NULL) and `tag`
/// (10 values) as one file; the file's footer.
async fn write_keys(
    rows: i64,
) -> (
    RecordBatch,
    datafusion::parquet::file::metadata::ParquetMetaData,
) {
    let schema = Schema::new(
        0,
        vec![
            NestedField::required(1, "id", P::Long),
            NestedField::optional(2, "score", P::Double),
            NestedField::optional(3, "tag", P::String),
        ],
    );
    let arrow = Arc::new(schema_to_arrow(&schema).unwrap());
    let tags: Vec<String> = (0..rows).map(|i| format!("tag-{}", i % 10)).collect();
    let tags: ArrayRef = Arc::new(StringArray::from_iter_values(tags));
    let tags = datafusion::arrow::compute::cast(&tags, arrow.field(2).data_type()).unwrap();
    let batch = RecordBatch::try_new(
        arrow,
        vec![
            Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i * 3))),
            Arc::new(Float64Array::from_iter(
                (0..rows).map(|i| (i % 7 != 0).then_some(i as f64 * 0.25)),
            )),
            tags,
        ],
    )
    .unwrap();
    let store = Arc::new(InMemory::new());
    let mut w = DataFileWriter::new(
        Arc::clone(&store) as Arc<dyn ObjectStore>,
        Path::from("k.parquet"),
        "memory:///k.parquet".into(),
        &schema,
        WriterOptions::default(),
    )
    .unwrap();
    w.write(&batch).await.unwrap();
    let file = w.close().await.unwrap();
    assert_eq!(file.record_count, rows);
    let bytes = read_bytes(&store, "k.parquet").await;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let metadata = builder.metadata().as_ref().clone();
    let read: Vec<RecordBatch> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    let read = concat_batches(&read[0].schema(), &read).unwrap();
    for c in 0..3 {
        let written = datafusion::arrow::compute::cast(batch.column(c), read.column(c).data_type());
        assert_eq!(
            read.column(c).as_ref(),
            written.unwrap().as_ref(),
            "column {c}"
        );
    }
    (batch, metadata)
}

#[tokio::test]
async fn columns_of_distinct_values_are_written_without_a_dictionary() {
    use datafusion::parquet::basic::Encoding;
    let (_, metadata) = write_keys(20_000).await;
    let rg = metadata.row_group(0);
    let dictionary = |c: usize| rg.column(c).dictionary_page_offset().is_some();
    let encoded = |c: usize, e: Encoding| rg.column(c).encodings().any(|x| x == e);
    assert!(!dictionary(0), "id: distinct values");
    assert!(
        encoded(0, Encoding::DELTA_BINARY_PACKED),
        "id: ascending integers"
    );
    assert!(!dictionary(1), "score: distinct values and NULLs");
    assert!(encoded(1, Encoding::PLAIN) && !encoded(1, Encoding::DELTA_BINARY_PACKED));
    assert!(dictionary(2), "tag: 10 values");
    // A file too small to judge keeps the dictionary everywhere.
    let (_, metadata) = write_keys(500).await;
    let rg = metadata.row_group(0);
    assert!((0..3).all(|c| rg.column(c).dictionary_page_offset().is_some()));
}

#[test]
fn encodings_are_chosen_from_the_first_values() {
    use crate::write::data_file::{Chosen, choose_encodings};
    use datafusion::parquet::basic::Encoding;
    let batch = |values: Vec<i64>| -> RecordBatch {
        let arrow = ArrowSchema::new(vec![Field::new("v", DataType::Int64, false)]);
        RecordBatch::try_new(Arc::new(arrow), vec![Arc::new(Int64Array::from(values))]).unwrap()
    };
    let chosen = |encoding| {
        vec![Chosen {
            column: "v".to_string(),
            encoding,
        }]
    };
    // 4096 values, the last `repeats` of them copies of earlier ones.
    let repeating = |repeats: i64| {
        (0..4096)
            .map(|i| if i >= 4096 - repeats { i - 2000 } else { i })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        choose_encodings(&batch(repeating(0))),
        chosen(Encoding::DELTA_BINARY_PACKED)
    );
    // At most one repeat in 256: no dictionary, but the values no longer ascend.
    assert_eq!(
        choose_encodings(&batch(repeating(16))),
        chosen(Encoding::PLAIN)
    );
    assert!(choose_encodings(&batch(repeating(17))).is_empty());
    let scattered: Vec<i64> = (0..4096).map(|i: i64| (i * 7919) % 4099).collect();
    assert_eq!(choose_encodings(&batch(scattered)), chosen(Encoding::PLAIN));
    let booleans = ArrowSchema::new(vec![Field::new("b", DataType::Boolean, false)]);
    let booleans = RecordBatch::try_new(
        Arc::new(booleans),
        vec![Arc::new(BooleanArray::from(vec![true; 4096]))],
    )
    .unwrap();
    assert!(choose_encodings(&booleans).is_empty());
}

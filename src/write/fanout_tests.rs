//! [`split_by_partition`]: expected tuples worked out by hand (bucket values from the spec's
//! Appendix B hashes: int 34 -> 2017239379, "iceberg" -> 1210000089).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, Int64Array, RecordBatch, StringViewArray, StructArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Int32Type};

use super::split_by_partition;
use crate::spec::{
    Literal as L, NestedField, PartitionField, PartitionSpec, PrimitiveType as P, Schema,
    StructType, Transform, Type,
};
use crate::to_arrow::schema_to_arrow;

const TS: i64 = 1_700_000_000_000_000; // 2023-11-14T22:13:20Z: day 19675, hour 472222
const HOUR: i64 = 3_600_000_000;

fn schema() -> Schema {
    let s = StructType::new(vec![NestedField::optional(5, "k", P::Long)]);
    Schema::new(
        0,
        vec![
            NestedField::optional(1, "id", P::Int),
            NestedField::optional(2, "name", P::String),
            NestedField::optional(3, "ts", P::Timestamptz),
            NestedField::optional(4, "s", Type::Struct(s)),
        ],
    )
}

fn batch() -> RecordBatch {
    let arrow = Arc::new(schema_to_arrow(&schema()).unwrap());
    let DataType::Struct(s_fields) = arrow.field(3).data_type().clone() else {
        panic!()
    };
    let s = StructArray::new(
        s_fields,
        vec![Arc::new(Int64Array::from(vec![7, 7, 99, 8, 7]))],
        Some(NullBuffer::from(vec![true, true, false, true, true])),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![
            Some(34),
            Some(34),
            None,
            Some(15),
            Some(-1),
        ])),
        Arc::new(StringViewArray::from(vec![
            Some("iceberg"),
            Some("icecream"),
            Some("iceberg"),
            None,
            Some("ic"),
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![
                Some(TS),
                Some(TS + 1),
                Some(-1),
                None,
                Some(TS + HOUR),
            ])
            .with_timezone("+00:00"),
        ),
        Arc::new(s),
    ];
    RecordBatch::try_new(arrow, columns).unwrap()
}

fn spec(fields: &[(i32, &str, Transform)]) -> PartitionSpec {
    PartitionSpec {
        spec_id: 1,
        fields: fields
            .iter()
            .enumerate()
            .map(|(i, (source_id, name, transform))| PartitionField {
                source_id: *source_id,
                field_id: 1000 + i as i32,
                name: name.to_string(),
                transform: transform.clone(),
            })
            .collect(),
    }
}

fn ids(b: &RecordBatch) -> Vec<Option<i32>> {
    b.column(0).as_primitive::<Int32Type>().iter().collect()
}

#[test]
fn identity_and_day_with_nulls() {
    let spec = spec(&[
        (1, "id", Transform::Identity),
        (3, "ts_day", Transform::Day),
    ]);
    let parts = split_by_partition(&batch(), &spec, &schema()).unwrap();
    let tuples: Vec<_> = parts.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(
        tuples,
        vec![
            vec![Some(L::Int(34)), Some(L::Date(19675))],
            vec![None, Some(L::Date(-1))],
            vec![Some(L::Int(15)), None],
            vec![Some(L::Int(-1)), Some(L::Date(19675))],
        ]
    );
    assert_eq!(ids(&parts[0].1), [Some(34), Some(34)]);
    assert_eq!(ids(&parts[1].1), [None]);
    assert_eq!(parts.iter().map(|(_, b)| b.num_rows()).sum::<usize>(), 5);
    // Whole rows travel: the sub-batch keeps every column.
    assert_eq!(parts[0].1.num_columns(), 4);
}

#[test]
fn bucket_truncate_hour_and_void() {
    let spec = spec(&[
        (1, "id_bucket", Transform::Bucket(16)),
        (2, "name_trunc", Transform::Truncate(3)),
        (3, "ts_hour", Transform::Hour),
        (1, "gone", Transform::Void),
    ]);
    let parts = split_by_partition(&batch(), &spec, &schema()).unwrap();
    assert_eq!(parts.len(), 4);
    // 2017239379 % 16 = 3; "iceberg" and "icecream" share "ice"; the same hour.
    assert_eq!(
        parts[0].0,
        vec![
            Some(L::Int(3)),
            Some(L::String("ice".into())),
            Some(L::Int(472_222)),
            None
        ]
    );
    assert_eq!(parts[0].1.num_rows(), 2);
    assert_eq!(
        parts[1].0,
        vec![None, Some(L::String("ice".into())), Some(L::Int(-1)), None]
    );
    let [Some(L::Int(b)), None, None, None] = parts[2].0.as_slice() else {
        panic!("{:?}", parts[2].0)
    };
    assert!((0..16).contains(b));
    assert_eq!(
        parts[3].0[1..],
        [Some(L::String("ic".into())), Some(L::Int(472_223)), None]
    );
}

#[test]
fn bucket_of_a_string_follows_the_spec_hash() {
    let spec = spec(&[(2, "name_bucket", Transform::Bucket(16))]);
    let parts = split_by_partition(&batch(), &spec, &schema()).unwrap();
    // 1210000089 % 16 = 9.
    assert_eq!(parts[0].0, vec![Some(L::Int(9))]);
    assert_eq!(ids(&parts[0].1), [Some(34), None]);
}

#[test]
fn struct_sources_and_truncated_ints() {
    let spec = spec(&[
        (5, "k", Transform::Identity),
        (1, "id_trunc", Transform::Truncate(10)),
    ]);
    let parts = split_by_partition(&batch(), &spec, &schema()).unwrap();
    let tuples: Vec<_> = parts.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(
        tuples,
        vec![
            vec![Some(L::Long(7)), Some(L::Int(30))],
            // The null struct hides its child's 99.
            vec![None, None],
            vec![Some(L::Long(8)), Some(L::Int(10))],
            vec![Some(L::Long(7)), Some(L::Int(-10))],
        ]
    );
}

#[test]
fn one_partition_is_the_whole_batch_and_errors_name_the_field() {
    let b = batch();
    let parts = split_by_partition(&b, &spec(&[(1, "v", Transform::Void)]), &schema()).unwrap();
    assert_eq!(parts, vec![(vec![None], b.clone())]);
    let parts = split_by_partition(&b.slice(0, 0), &PartitionSpec::unpartitioned(), &schema());
    assert!(parts.unwrap().is_empty());
    let err = split_by_partition(&b, &spec(&[(9, "missing", Transform::Identity)]), &schema())
        .unwrap_err()
        .to_string();
    assert!(err.contains("'missing'"), "{err}");
    let err = split_by_partition(&b, &spec(&[(2, "name_day", Transform::Day)]), &schema())
        .unwrap_err()
        .to_string();
    assert!(err.contains("day"), "{err}");
    assert!(b.column(0).len() == 5);
}

#[test]
fn batches_without_field_ids_are_matched_by_schema_position() {
    use datafusion::arrow::datatypes::{Field, Schema as ArrowSchema};
    let b = batch();
    let plain = Arc::new(ArrowSchema::new(
        b.schema()
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let plain = RecordBatch::try_new(plain, b.columns().to_vec()).unwrap();
    let spec = spec(&[
        (5, "k", Transform::Identity),
        (1, "id", Transform::Identity),
    ]);
    let parts = split_by_partition(&plain, &spec, &schema()).unwrap();
    assert_eq!(parts[0].0, vec![Some(L::Long(7)), Some(L::Int(34))]);
    assert_eq!(parts[1].0, vec![None, None]);
    assert_eq!(parts.len(), 4);
}

/// Rows of one day, hour or month with different times are one run, one file: the runs are
/// keyed by the floored day or hour. Around midnight and before 1970 the floor, not the
/// truncation toward zero, decides: -1 µs is day -1, 0 is day 0.
#[test]
fn rows_of_one_day_with_different_times_are_one_partition() {
    let day = 24 * HOUR;
    let times = [0, 1, HOUR, day - 1, -1, -day, -day - 1, day, 2 * day - 1];
    let arrow = Arc::new(schema_to_arrow(&schema()).unwrap());
    let n = times.len();
    let ts = TimestampMicrosecondArray::from(times.map(Some).to_vec()).with_timezone("+00:00");
    let DataType::Struct(s_fields) = arrow.field(3).data_type().clone() else {
        panic!()
    };
    let s = StructArray::new_null(s_fields, n);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from((0..n as i32).collect::<Vec<_>>())),
        Arc::new(StringViewArray::from(vec![None::<&str>; n])),
        Arc::new(ts),
        Arc::new(s),
    ];
    let batch = RecordBatch::try_new(arrow, columns).unwrap();
    let split = |transform: Transform| {
        let parts = split_by_partition(&batch, &spec(&[(3, "t", transform)]), &schema()).unwrap();
        parts
            .iter()
            .map(|(tuple, rows)| (tuple[0].clone(), ids(rows)))
            .collect::<Vec<_>>()
    };
    let some = |ids: &[i32]| ids.iter().map(|i| Some(*i)).collect::<Vec<_>>();
    assert_eq!(
        split(Transform::Day),
        vec![
            (Some(L::Date(0)), some(&[0, 1, 2, 3])),
            (Some(L::Date(-1)), some(&[4, 5])),
            (Some(L::Date(-2)), some(&[6])),
            (Some(L::Date(1)), some(&[7, 8])),
        ]
    );
    assert_eq!(
        split(Transform::Hour),
        vec![
            (Some(L::Int(0)), some(&[0, 1])),
            (Some(L::Int(1)), some(&[2])),
            (Some(L::Int(23)), some(&[3])),
            (Some(L::Int(-1)), some(&[4])),
            (Some(L::Int(-24)), some(&[5])),
            (Some(L::Int(-25)), some(&[6])),
            (Some(L::Int(24)), some(&[7])),
            (Some(L::Int(47)), some(&[8])),
        ]
    );
    // Months: 1969-12 is -1, 1970-01 is 0.
    let months: Vec<Option<L>> = split(Transform::Month)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(months, vec![Some(L::Int(0)), Some(L::Int(-1))]);
}

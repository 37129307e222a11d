//! Truncation and float rules of [`super::bounds`].

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float32Array, Float64Array, Int32Array, StringArray, StructArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field};

use super::bounds::{
    BoundsCollector, truncate_bytes_upper, truncate_lower, truncate_str_lower, truncate_str_upper,
    truncate_upper,
};
use crate::spec::{Literal, NestedField, PrimitiveType, StructType, Type};

const MAX: char = '\u{10FFFF}';

#[test]
fn strings_at_or_under_the_length_are_kept_whole() {
    let sixteen = "abcdefghijklmnop";
    assert_eq!(sixteen.chars().count(), 16);
    assert_eq!(truncate_str_lower(sixteen, 16), sixteen);
    assert_eq!(truncate_str_upper(sixteen, 16).unwrap(), sixteen);
    // Even when its last code point could not be incremented.
    let max16: String = std::iter::repeat_n(MAX, 16).collect();
    assert_eq!(truncate_str_upper(&max16, 16).unwrap(), max16);
    assert_eq!(truncate_str_upper("", 16).unwrap(), "");
}

#[test]
fn longer_strings_are_cut_and_the_upper_bound_incremented() {
    let seventeen = "abcdefghijklmnopq";
    assert_eq!(truncate_str_lower(seventeen, 16), "abcdefghijklmnop");
    assert_eq!(
        truncate_str_upper(seventeen, 16).unwrap(),
        "abcdefghijklmnoq"
    );
    // Code points, not bytes: 17 two- and three-byte characters.
    let wide = "ééééééééééééééééé";
    assert_eq!(truncate_str_lower(wide, 16).chars().count(), 16);
    assert_eq!(
        truncate_str_upper(wide, 16).unwrap(),
        format!("{}ê", "é".repeat(15))
    );
    let cjk = "日本語のテキストはとても長いですね";
    assert_eq!(truncate_str_lower(cjk, 3), "日本語");
    assert_eq!(truncate_str_upper(cjk, 3).unwrap(), "日本誟");
}

#[test]
fn upper_bounds_carry_past_the_largest_code_point() {
    let s = format!("ab{MAX}{MAX}xyz");
    assert_eq!(truncate_str_upper(&s, 4).unwrap(), "ac");
    // Nothing to increment: no upper bound.
    let all_max: String = std::iter::repeat_n(MAX, 17).collect();
    assert_eq!(truncate_str_upper(&all_max, 16), None);
    // The surrogate gap is skipped: U+D7FF + 1 is U+E000.
    assert_eq!(truncate_str_upper("a\u{D7FF}zz", 2).unwrap(), "a\u{E000}");
    // Truncating to nothing leaves no upper bound, and an empty lower bound.
    assert_eq!(truncate_str_upper("abc", 0), None);
    assert_eq!(truncate_str_lower("abc", 0), "");
}

#[test]
fn binary_upper_bounds_carry_past_0xff() {
    assert_eq!(truncate_bytes_upper(&[1, 2, 3], 3).unwrap(), vec![1, 2, 3]);
    assert_eq!(
        truncate_bytes_upper(&[1, 2, 3, 4], 3).unwrap(),
        vec![1, 2, 4]
    );
    assert_eq!(
        truncate_bytes_upper(&[1, 0xFF, 0xFF, 4], 3).unwrap(),
        vec![2]
    );
    assert_eq!(truncate_bytes_upper(&[0xFF, 0xFF, 0xFF, 0], 3), None);
    assert_eq!(truncate_bytes_upper(&[0xFF; 3], 3).unwrap(), vec![0xFF; 3]);
    assert_eq!(
        truncate_lower(Literal::Binary(vec![9; 20]), 16),
        Literal::Binary(vec![9; 16])
    );
    assert_eq!(
        truncate_upper(Literal::Fixed(vec![7; 20]), 16),
        Some(Literal::Fixed([vec![7; 15], vec![8]].concat()))
    );
    // Other types are never truncated.
    assert_eq!(
        truncate_upper(Literal::Uuid([0xFF; 16]), 4),
        Some(Literal::Uuid([0xFF; 16]))
    );
}

fn collect(fields: Vec<NestedField>, columns: Vec<ArrayRef>) -> super::bounds::FinishedBounds {
    let fields: Vec<_> = fields.into_iter().map(Arc::new).collect();
    let mut c = BoundsCollector::default();
    c.update(&fields, &columns).unwrap();
    c.finish(16)
}

fn f32_bound(b: &[u8]) -> f32 {
    f32::from_le_bytes(b.try_into().unwrap())
}

fn f64_bound(b: &[u8]) -> f64 {
    f64::from_le_bytes(b.try_into().unwrap())
}

#[test]
fn float_bounds_skip_nan_and_widen_zeros() {
    let b = collect(
        vec![
            NestedField::optional(1, "only_pos_zero", PrimitiveType::Float),
            NestedField::optional(2, "only_neg_zero", PrimitiveType::Double),
            NestedField::optional(3, "mixed", PrimitiveType::Double),
            NestedField::optional(4, "all_nan", PrimitiveType::Float),
        ],
        vec![
            Arc::new(Float32Array::from(vec![Some(0.0), Some(f32::NAN), None])),
            Arc::new(Float64Array::from(vec![-0.0, -0.0])),
            Arc::new(Float64Array::from(vec![f64::NAN, -2.5, 0.0, 7.25, -0.0])),
            Arc::new(Float32Array::from(vec![f32::NAN, f32::NAN])),
        ],
    );
    let lower = f32_bound(&b.lower[&1]);
    let upper = f32_bound(&b.upper[&1]);
    assert!(lower == 0.0 && lower.is_sign_negative());
    assert!(upper == 0.0 && upper.is_sign_positive());
    let lower = f64_bound(&b.lower[&2]);
    let upper = f64_bound(&b.upper[&2]);
    assert!(lower == 0.0 && lower.is_sign_negative());
    assert!(upper == 0.0 && upper.is_sign_positive());
    assert_eq!(f64_bound(&b.lower[&3]), -2.5);
    assert_eq!(f64_bound(&b.upper[&3]), 7.25);
    assert!(!b.lower.contains_key(&4) && !b.upper.contains_key(&4));
    assert_eq!(b.nan_counts[&1], 1);
    assert_eq!(b.nan_counts[&2], 0);
    assert_eq!(b.nan_counts[&3], 1);
    assert_eq!(b.nan_counts[&4], 2);
}

#[test]
fn null_structs_hide_their_children_and_bounds_merge_across_batches() {
    let inner = StructType::new(vec![NestedField::optional(11, "n", PrimitiveType::Int)]);
    let fields = vec![
        Arc::new(NestedField::optional(10, "s", Type::Struct(inner))),
        Arc::new(NestedField::optional(12, "name", PrimitiveType::String)),
    ];
    // Row 1's struct is null; its child holds 1000, which must not become the upper bound.
    let child: ArrayRef = Arc::new(Int32Array::from(vec![5, 1000, -3]));
    let s = StructArray::new(
        vec![Field::new("n", DataType::Int32, true)].into(),
        vec![child],
        Some(NullBuffer::from(vec![true, false, true])),
    );
    let names: ArrayRef = Arc::new(StringArray::from(vec!["m", "b", "x"]));
    let mut c = BoundsCollector::default();
    c.update(&fields, &[Arc::new(s), names]).unwrap();
    let names: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
    let child: ArrayRef = Arc::new(Int32Array::from(vec![Some(4), None]));
    let s = StructArray::new(
        vec![Field::new("n", DataType::Int32, true)].into(),
        vec![child],
        None,
    );
    c.update(&fields, &[Arc::new(s), names]).unwrap();
    let b = c.finish(16);
    assert_eq!(b.lower[&11], (-3i32).to_le_bytes());
    assert_eq!(b.upper[&11], 5i32.to_le_bytes());
    assert_eq!(b.lower[&12], b"a");
    assert_eq!(b.upper[&12], b"x");
    assert!(b.nan_counts.is_empty());
}

#[test]
fn a_wrong_arrow_type_names_the_column() {
    let fields = vec![Arc::new(NestedField::optional(
        1,
        "id",
        PrimitiveType::Long,
    ))];
    let mut c = BoundsCollector::default();
    let err = c
        .update(&fields, &[Arc::new(Int32Array::from(vec![1]))])
        .unwrap_err()
        .to_string();
    assert!(err.contains("'id'") && err.contains("Int32"), "{err}");
}

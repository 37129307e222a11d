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

#[test]
fn string_and_binary_bounds_are_the_least_and_greatest_values_in_byte_order() {
    use datafusion::arrow::array::{
        BinaryArray, BinaryViewArray, LargeStringArray, StringViewArray, UInt32Array,
    };
    use datafusion::arrow::compute::take;
    // Values of up to 12 bytes are inline, longer ones share a prefix and differ late;
    // repeated values of a dictionary-decoded page share one view.
    let pool = [
        "delta",
        "alpha",
        "",
        "a-rather-long-name-0002",
        "a-rather-long-name-0001",
        "zz",
        "é",
        "a-rather-long-name-00010",
        "alpha ",
    ];
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    // Values equal in their first 8 bytes, zero bytes included.
    for (values, lower, upper) in [
        (vec!["ab\0", "ab"], "ab", "ab\0"),
        (vec!["abcdefgh\0", "abcdefgh"], "abcdefgh", "abcdefgh\0"),
        (
            vec!["abcdefghi", "abcdefgh\0", "abcdefgh"],
            "abcdefgh",
            "abcdefghi",
        ),
        (vec!["\0", ""], "", "\0"),
    ] {
        let field = NestedField::optional(1, "s", Type::Primitive(PrimitiveType::String));
        let strings: ArrayRef = Arc::new(StringArray::from(values.clone()));
        let b = collect(vec![field], vec![strings]);
        assert_eq!(b.lower[&1], lower.as_bytes(), "{values:?}");
        assert_eq!(b.upper[&1], upper.as_bytes(), "{values:?}");
    }
    for round in 0..400 {
        // A few values of the pool (so that any of them may be a bound), repeated, with nulls.
        let chosen: Vec<&str> = (0..2 + next() % 3)
            .map(|_| pool[next() % pool.len()])
            .collect();
        let values: Vec<Option<&str>> = (0..64)
            .map(|_| match next() % 8 {
                0 if round % 2 == 0 => None,
                _ => Some(chosen[next() % chosen.len()]),
            })
            .collect();
        let expected = {
            let present: Vec<&str> = values.iter().flatten().copied().collect();
            present
                .iter()
                .min()
                .zip(present.iter().max())
                .map(|(l, u)| (*l, *u))
        };
        // Views, views taken from one array of the pool (equal values share a view), and
        // offsets (Utf8, LargeUtf8).
        let strings: ArrayRef = match round % 4 {
            0 => Arc::new(StringViewArray::from(values.clone())),
            2 => Arc::new(StringArray::from(values.clone())),
            3 => Arc::new(LargeStringArray::from(values.clone())),
            _ => {
                let pooled = StringViewArray::from(pool.to_vec());
                let at = |v: &str| pool.iter().position(|p| *p == v).map(|i| i as u32);
                let indices =
                    UInt32Array::from(values.iter().map(|v| v.and_then(at)).collect::<Vec<_>>());
                take(&pooled, &indices, None).unwrap()
            }
        };
        let field = NestedField::optional(1, "s", Type::Primitive(PrimitiveType::String));
        let b = collect(vec![field], vec![strings]);
        let found = b.lower.get(&1).zip(b.upper.get(&1));
        let expected_bytes = expected.map(|(l, u)| {
            (
                truncate_lower(Literal::String(l.into()), 16).to_bytes(),
                truncate_upper(Literal::String(u.into()), 16).map(|u| u.to_bytes()),
            )
        });
        match (found, expected_bytes) {
            (Some((l, u)), Some((el, eu))) => {
                assert_eq!((l, Some(u)), (&el, eu.as_ref()), "round {round}");
            }
            (None, None) => assert!(values.iter().all(Option::is_none)),
            (f, e) => panic!("round {round}: found {f:?}, expected {e:?}"),
        }
        // The same over binary views and binary.
        let bytes: Vec<Option<&[u8]>> = values.iter().map(|v| v.map(str::as_bytes)).collect();
        let binary: ArrayRef = match round % 2 {
            0 => Arc::new(BinaryViewArray::from(bytes)),
            _ => Arc::new(BinaryArray::from(bytes)),
        };
        let field = NestedField::optional(2, "b", Type::Primitive(PrimitiveType::Binary));
        let b = collect(vec![field], vec![binary]);
        let lower = expected.map(|(l, _)| l.as_bytes()[..l.len().min(16)].to_vec());
        assert_eq!(b.lower.get(&2), lower.as_ref(), "round {round}");
    }
}

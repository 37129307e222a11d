//! Tests of `metrics`.

use super::*;
use crate::spec::{DataContentType, FileFormat};

pub(in crate::expr::eval) fn col(id: i32, ty: PrimitiveType) -> Reference {
    Reference {
        field_id: id,
        name: format!("c{id}"),
        ty,
    }
}

pub(in crate::expr::eval) fn cmp(op: BinaryOp, term: &Reference, v: Literal) -> Predicate {
    Predicate::Binary {
        op,
        term: term.clone(),
        value: v,
    }
}

pub(in crate::expr::eval) fn set(op: SetOp, term: &Reference, values: Vec<Literal>) -> Predicate {
    Predicate::Set {
        op,
        term: term.clone(),
        values,
    }
}

pub(in crate::expr::eval) fn un(op: UnaryOp, term: &Reference) -> Predicate {
    Predicate::Unary {
        op,
        term: term.clone(),
    }
}

fn empty_file(record_count: i64) -> DataFile {
    DataFile::new(
        DataContentType::Data,
        "s3://b/t/data/f.parquet",
        FileFormat::Parquet,
        record_count,
        1024,
    )
}

/// The metrics of one column, each optional (absent from the file's maps when `None`).
#[derive(Default, Clone)]
pub(in crate::expr::eval) struct Metrics {
    pub(in crate::expr::eval) values: Option<i64>,
    pub(in crate::expr::eval) nulls: Option<i64>,
    pub(in crate::expr::eval) nans: Option<i64>,
    pub(in crate::expr::eval) lower: Option<Vec<u8>>,
    pub(in crate::expr::eval) upper: Option<Vec<u8>>,
}

fn counts(values: i64, nulls: i64, nans: Option<i64>) -> Metrics {
    Metrics {
        values: Some(values),
        nulls: Some(nulls),
        nans,
        ..Metrics::default()
    }
}

fn bounded(values: i64, nulls: i64, nans: Option<i64>, lo: Literal, hi: Literal) -> Metrics {
    Metrics {
        lower: Some(lo.to_bytes()),
        upper: Some(hi.to_bytes()),
        ..counts(values, nulls, nans)
    }
}

pub(in crate::expr::eval) fn file_with(id: i32, m: &Metrics) -> DataFile {
    let mut f = empty_file(m.values.unwrap_or(100));
    let put = |map: &mut HashMap<i32, i64>, v: Option<i64>| {
        if let Some(v) = v {
            map.insert(id, v);
        }
    };
    put(&mut f.value_counts, m.values);
    put(&mut f.null_value_counts, m.nulls);
    put(&mut f.nan_value_counts, m.nans);
    f.lower_bounds = m.lower.clone().map(|b| HashMap::from([(id, b)]));
    f.upper_bounds = m.upper.clone().map(|b| HashMap::from([(id, b)]));
    f
}

/// Runs `(name, predicate, expected)` cases against one file.
fn check(file: &DataFile, cases: &[(&str, Predicate, bool)]) {
    for (name, p, expected) in cases {
        assert_eq!(file_may_match(p, file), *expected, "{name}: {p:?}");
    }
}

use BinaryOp::*;
use Literal as L;

#[test]
fn long_column_each_operator_below_inside_above() {
    let x = col(1, PrimitiveType::Long);
    let file = file_with(1, &bounded(100, 10, None, L::Long(10), L::Long(50)));
    let c = |op, v| cmp(op, &x, L::Long(v));
    check(
        &file,
        &[
            ("lt below", c(Lt, 5), false),
            ("lt at lower", c(Lt, 10), false),
            ("lt inside", c(Lt, 11), true),
            ("lt above", c(Lt, 60), true),
            ("lteq below", c(LtEq, 9), false),
            ("lteq at lower", c(LtEq, 10), true),
            ("gt above", c(Gt, 60), false),
            ("gt at upper", c(Gt, 50), false),
            ("gt inside", c(Gt, 49), true),
            ("gt below", c(Gt, -5), true),
            ("gteq above", c(GtEq, 51), false),
            ("gteq at upper", c(GtEq, 50), true),
            ("eq below", c(Eq, 9), false),
            ("eq lower", c(Eq, 10), true),
            ("eq inside", c(Eq, 30), true),
            ("eq upper", c(Eq, 50), true),
            ("eq above", c(Eq, 51), false),
            ("noteq inside", c(NotEq, 30), true),
            ("noteq outside", c(NotEq, 99), true),
            ("is null", un(UnaryOp::IsNull, &x), true),
            ("not null", un(UnaryOp::NotNull, &x), true),
            ("isnan of a long", un(UnaryOp::IsNan, &x), false),
            ("notnan of a long", un(UnaryOp::NotNan, &x), true),
            ("and", c(Gt, 20).and(c(Lt, 5)), false),
            ("or", c(Gt, 60).or(c(Lt, 11)), true),
            ("or, both out", c(Gt, 60).or(c(Lt, 10)), false),
            ("negated lt", c(Lt, 60).negate(), false),
            ("negated gt", c(Gt, 60).negate(), true),
            ("negated gteq", c(GtEq, 10).negate(), false),
        ],
    );
}

#[test]
fn in_lists() {
    let x = col(1, PrimitiveType::Long);
    let file = file_with(1, &bounded(100, 0, None, L::Long(10), L::Long(50)));
    let longs = |vs: &[i64]| vs.iter().map(|v| L::Long(*v)).collect::<Vec<_>>();
    let many_outside = longs(&(100..400).collect::<Vec<_>>());
    check(
        &file,
        &[
            (
                "all outside",
                set(SetOp::In, &x, longs(&[1, 2, 51, 99])),
                false,
            ),
            ("one at lower", set(SetOp::In, &x, longs(&[1, 10])), true),
            ("one inside", set(SetOp::In, &x, longs(&[30, 99])), true),
            ("empty", set(SetOp::In, &x, vec![]), false),
            ("over the limit", set(SetOp::In, &x, many_outside), true),
            ("not in", set(SetOp::NotIn, &x, longs(&[10, 50])), true),
        ],
    );
}

#[test]
fn single_valued_columns_prune_not_eq_and_not_in() {
    let x = col(1, PrimitiveType::Long);
    let file = file_with(1, &bounded(100, 7, None, L::Long(7), L::Long(7)));
    let longs = |vs: &[i64]| vs.iter().map(|v| L::Long(*v)).collect::<Vec<_>>();
    check(
        &file,
        &[
            ("noteq the value", cmp(NotEq, &x, L::Long(7)), false),
            ("noteq another", cmp(NotEq, &x, L::Long(8)), true),
            (
                "notin with it",
                set(SetOp::NotIn, &x, longs(&[8, 7])),
                false,
            ),
            ("notin without", set(SetOp::NotIn, &x, longs(&[8, 9])), true),
            ("is null (7 nulls)", un(UnaryOp::IsNull, &x), true),
        ],
    );
    // Truncatable bounds are never taken as one exact value.
    let s = col(2, PrimitiveType::String);
    let text = |v: &str| L::String(v.into());
    let file = file_with(2, &bounded(100, 0, None, text("abc"), text("abc")));
    check(
        &file,
        &[
            ("string noteq", cmp(NotEq, &s, text("abc")), true),
            (
                "string notin",
                set(SetOp::NotIn, &s, vec![text("abc")]),
                true,
            ),
        ],
    );
}

#[test]
fn all_null_columns() {
    let x = col(1, PrimitiveType::Long);
    let s = col(2, PrimitiveType::String);
    let d = col(3, PrimitiveType::Double);
    let mut file = file_with(1, &counts(100, 100, None));
    file.value_counts.extend([(2, 100), (3, 100)]);
    file.null_value_counts.extend([(2, 100), (3, 100)]);
    file.nan_value_counts.insert(3, 0);
    let text = |v: &str| L::String(v.into());
    check(
        &file,
        &[
            ("lt", cmp(Lt, &x, L::Long(5)), false),
            ("gteq", cmp(GtEq, &x, L::Long(5)), false),
            ("eq", cmp(Eq, &x, L::Long(5)), false),
            ("noteq", cmp(NotEq, &x, L::Long(5)), false),
            ("in", set(SetOp::In, &x, vec![L::Long(5)]), false),
            ("notin", set(SetOp::NotIn, &x, vec![L::Long(5)]), false),
            ("is null", un(UnaryOp::IsNull, &x), true),
            ("not null", un(UnaryOp::NotNull, &x), false),
            ("starts with", cmp(StartsWith, &s, text("a")), false),
            (
                "not starts with (nulls: kept)",
                cmp(NotStartsWith, &s, text("a")),
                true,
            ),
            ("double lt", cmp(Lt, &d, L::Double(1.0)), false),
            ("double isnan", un(UnaryOp::IsNan, &d), false),
            ("double notnan", un(UnaryOp::NotNan, &d), false),
        ],
    );
}

#[test]
fn missing_metrics_may_match() {
    let x = col(1, PrimitiveType::Long);
    let d = col(3, PrimitiveType::Double);
    let nothing = empty_file(100);
    let counts_only = file_with(1, &counts(100, 5, None));
    let mut upper_only = file_with(1, &counts(100, 0, None));
    upper_only.upper_bounds = Some(HashMap::from([(1, L::Long(50).to_bytes())]));
    // A field inside a list: no key in any map.
    let other_column = file_with(7, &bounded(100, 0, None, L::Long(10), L::Long(50)));
    let all = [
        cmp(Lt, &x, L::Long(i64::MIN)),
        cmp(Gt, &x, L::Long(i64::MAX)),
        cmp(Eq, &x, L::Long(99)),
        cmp(NotEq, &x, L::Long(99)),
        set(SetOp::In, &x, vec![L::Long(99)]),
        un(UnaryOp::IsNull, &x),
        un(UnaryOp::NotNull, &x),
        cmp(Lt, &d, L::Double(0.0)),
        un(UnaryOp::IsNan, &d),
    ];
    for p in &all {
        assert!(file_may_match(p, &nothing), "{p:?}");
        assert!(file_may_match(p, &other_column), "{p:?}");
    }
    assert!(file_may_match(&all[0], &counts_only));
    assert!(file_may_match(&all[0], &upper_only));
    assert!(!file_may_match(&all[1], &upper_only));
    assert!(!file_may_match(&un(UnaryOp::IsNull, &x), &upper_only));
    assert!(file_may_match(&un(UnaryOp::IsNull, &x), &counts_only));
}

#[test]
fn record_counts() {
    let x = col(1, PrimitiveType::Long);
    assert!(!file_may_match(&Predicate::AlwaysTrue, &empty_file(0)));
    assert!(file_may_match(&Predicate::AlwaysTrue, &empty_file(5)));
    assert!(!file_may_match(&Predicate::AlwaysFalse, &empty_file(5)));
    // Imported files with record_count -1: metrics unused.
    let mut imported = file_with(1, &bounded(100, 100, None, L::Long(1), L::Long(2)));
    imported.record_count = -1;
    assert!(file_may_match(&cmp(Gt, &x, L::Long(5)), &imported));
    assert!(!file_may_match(&Predicate::AlwaysFalse, &imported));
}

#[test]
fn truncated_string_bounds() {
    // Values all start with "abc" ("abcxyz", "abczzz"): bounds truncated to 3 characters,
    // the upper one incremented.
    let s = col(2, PrimitiveType::String);
    let text = |v: &str| L::String(v.into());
    let m = bounded(100, 0, None, text("abc"), text("abd"));
    let file = file_with(2, &m);
    let c = |op, v: &str| cmp(op, &s, text(v));
    check(
        &file,
        &[
            ("eq inside", c(Eq, "abcq"), true),
            ("eq at upper", c(Eq, "abd"), true),
            ("eq above", c(Eq, "abe"), false),
            ("eq below", c(Eq, "ab"), false),
            ("lt lower", c(Lt, "abc"), false),
            ("lteq lower", c(LtEq, "abc"), true),
            ("gt upper", c(Gt, "abd"), false),
            ("gt lower", c(Gt, "abc"), true),
            ("starts abc", c(StartsWith, "abc"), true),
            ("starts ab", c(StartsWith, "ab"), true),
            ("starts a", c(StartsWith, "a"), true),
            ("starts empty", c(StartsWith, ""), true),
            ("starts abcdef", c(StartsWith, "abcdef"), true),
            (
                "starts abd (the incremented upper)",
                c(StartsWith, "abd"),
                true,
            ),
            ("starts abe", c(StartsWith, "abe"), false),
            ("starts abb", c(StartsWith, "abb"), false),
            ("starts b", c(StartsWith, "b"), false),
            ("not starts abc (upper abd)", c(NotStartsWith, "abc"), true),
            ("not starts ab", c(NotStartsWith, "ab"), false),
            ("not starts a", c(NotStartsWith, "a"), false),
            ("not starts abd", c(NotStartsWith, "abd"), true),
            ("not starts b", c(NotStartsWith, "b"), true),
        ],
    );
    let with_nulls = file_with(
        2,
        &Metrics {
            nulls: Some(3),
            ..m
        },
    );
    assert!(file_may_match(&c(NotStartsWith, "ab"), &with_nulls));
}

#[test]
fn starts_with_across_bound_boundaries() {
    let s = col(2, PrimitiveType::String);
    let text = |v: &str| L::String(v.into());
    let file = file_with(2, &bounded(10, 0, None, text("apple"), text("banana")));
    let c = |v: &str| cmp(StartsWith, &s, text(v));
    check(
        &file,
        &[
            ("a", c("a"), true),
            ("ap", c("ap"), true),
            ("ao", c("ao"), false),
            ("applf", c("applf"), true),
            ("applea", c("applea"), true),
            ("appla", c("appla"), false),
            ("az", c("az"), true),
            ("b", c("b"), true),
            ("ba", c("ba"), true),
            ("banana! (above the upper bound)", c("banana!"), false),
            ("banana", c("banana"), true),
            ("banb", c("banb"), false),
            ("bb", c("bb"), false),
            ("c", c("c"), false),
            ("multi-byte above", c("é"), false),
            ("not starts a", cmp(NotStartsWith, &s, text("a")), true),
        ],
    );
    // Binary bounds compare unsigned bytes.
    let b = col(4, PrimitiveType::Binary);
    let file = file_with(
        4,
        &bounded(
            10,
            0,
            None,
            L::Binary(vec![0x10, 0x80]),
            L::Binary(vec![0xf0]),
        ),
    );
    let c = |v: &[u8]| cmp(StartsWith, &b, L::Binary(v.to_vec()));
    check(
        &file,
        &[
            ("0x10", c(&[0x10]), true),
            ("0x0f", c(&[0x0f]), false),
            ("0x10 0x7f", c(&[0x10, 0x7f]), false),
            ("0xf0", c(&[0xf0]), true),
            ("0xf0 0x00 (above the upper bound)", c(&[0xf0, 0x00]), false),
            ("0xf1", c(&[0xf1]), false),
        ],
    );
}

#[test]
fn nan_counts() {
    let d = col(3, PrimitiveType::Double);
    let dbl = |v| L::Double(v);
    let c = |op, v| cmp(op, &d, dbl(v));
    let none = file_with(3, &bounded(100, 0, Some(0), dbl(1.0), dbl(2.0)));
    check(
        &none,
        &[
            ("lt below", c(Lt, 0.5), false),
            ("gt above", c(Gt, 2.0), false),
            ("eq outside", c(Eq, 5.0), false),
            ("eq inside", c(Eq, 1.5), true),
            ("isnan", un(UnaryOp::IsNan, &d), false),
            ("notnan", un(UnaryOp::NotNan, &d), true),
            ("eq nan", c(Eq, f64::NAN), false),
            (
                "lt nan (totalOrder: numbers are below NaN)",
                c(Lt, f64::NAN),
                true,
            ),
            ("noteq", c(NotEq, 1.0), true),
        ],
    );
    let some = file_with(3, &bounded(100, 0, Some(5), dbl(1.0), dbl(2.0)));
    check(
        &some,
        &[
            ("lt below: -NaN is below", c(Lt, 0.5), true),
            ("gt above: +NaN is above", c(Gt, 2.0), true),
            ("eq outside: no NaN equals a number", c(Eq, 5.0), false),
            ("isnan", un(UnaryOp::IsNan, &d), true),
            ("notnan", un(UnaryOp::NotNan, &d), true),
            ("eq nan", c(Eq, f64::NAN), true),
        ],
    );
    let all = file_with(3, &counts(100, 0, Some(100)));
    check(
        &all,
        &[
            ("isnan", un(UnaryOp::IsNan, &d), true),
            ("notnan", un(UnaryOp::NotNan, &d), false),
            ("notnull", un(UnaryOp::NotNull, &d), true),
            ("eq", c(Eq, 1.0), false),
            ("in", set(SetOp::In, &d, vec![dbl(1.0)]), false),
            ("noteq: NaN != 1", c(NotEq, 1.0), true),
            ("gt: totalOrder", c(Gt, 1.0), true),
        ],
    );
    let nulls_and_nans = file_with(3, &counts(100, 40, Some(60)));
    assert!(!file_may_match(&un(UnaryOp::NotNan, &d), &nulls_and_nans));
    assert!(!file_may_match(&c(Eq, 1.0), &nulls_and_nans));
    let unknown = file_with(3, &bounded(100, 0, None, dbl(1.0), dbl(2.0)));
    assert!(file_may_match(&c(Lt, 0.5), &unknown));
    // Equality with a number prunes by the bounds whatever the NaN count.
    assert!(!file_may_match(&c(Eq, 5.0), &unknown));
    assert!(file_may_match(&un(UnaryOp::IsNan, &d), &unknown));
    // A NaN bound (old writers) is ignored.
    let nan_bound = file_with(3, &bounded(100, 0, Some(0), dbl(1.0), dbl(f64::NAN)));
    assert!(file_may_match(&c(Gt, 5.0), &nan_bound));
    assert!(!file_may_match(&c(Lt, 0.5), &nan_bound));
}

#[test]
fn signed_zeros() {
    let d = col(3, PrimitiveType::Double);
    let c = |op, v| cmp(op, &d, L::Double(v));
    // A writer that kept +0.0 as the lower bound although -0.0 is a value.
    let from_zero = file_with(3, &bounded(10, 0, Some(0), L::Double(0.0), L::Double(5.0)));
    check(
        &from_zero,
        &[
            ("eq -0", c(Eq, -0.0), true),
            ("eq +0", c(Eq, 0.0), true),
            ("lt +0 (totalOrder: -0 < +0)", c(Lt, 0.0), true),
            ("lteq -0 (IEEE: +0 <= -0)", c(LtEq, -0.0), true),
            ("in -0", set(SetOp::In, &d, vec![L::Double(-0.0)]), true),
            ("lt -1", c(Lt, -1.0), false),
        ],
    );
    let to_zero = file_with(
        3,
        &bounded(10, 0, Some(0), L::Double(-5.0), L::Double(-0.0)),
    );
    check(
        &to_zero,
        &[
            ("eq +0", c(Eq, 0.0), true),
            ("gteq +0 (IEEE: -0 >= +0)", c(GtEq, 0.0), true),
            ("gt -0 (maybe +0 values)", c(Gt, -0.0), true),
            ("gt 1", c(Gt, 1.0), false),
        ],
    );
    let zeros = file_with(3, &bounded(10, 0, Some(0), L::Double(0.0), L::Double(0.0)));
    assert!(file_may_match(&c(NotEq, 0.0), &zeros));
    assert!(file_may_match(&c(NotEq, -0.0), &zeros));
    let away = file_with(3, &bounded(10, 0, Some(0), L::Double(1.0), L::Double(5.0)));
    assert!(!file_may_match(&c(Eq, 0.0), &away));
    assert!(!file_may_match(&c(Eq, -0.0), &away));
    let f = col(5, PrimitiveType::Float);
    let floats = file_with(5, &bounded(10, 0, Some(0), L::Float(0.0), L::Float(1.0)));
    assert!(file_may_match(&cmp(Eq, &f, L::Float(-0.0)), &floats));
    assert!(!file_may_match(&cmp(Gt, &f, L::Float(1.0)), &floats));
}

#[test]
fn promoted_and_typed_bounds() {
    // int bounds (4 bytes) of a column promoted to long.
    let x = col(1, PrimitiveType::Long);
    let file = file_with(1, &bounded(10, 0, None, L::Int(-10), L::Int(50)));
    check(
        &file,
        &[
            ("lt", cmp(Lt, &x, L::Long(-10)), false),
            ("eq inside", cmp(Eq, &x, L::Long(0)), true),
            ("gt", cmp(Gt, &x, L::Long(50)), false),
            ("eq far", cmp(Eq, &x, L::Long(1 << 40)), false),
        ],
    );
    // float bounds (4 bytes) of a column promoted to double.
    let d = col(3, PrimitiveType::Double);
    let file = file_with(3, &bounded(10, 0, Some(0), L::Float(1.5), L::Float(2.5)));
    assert!(!file_may_match(&cmp(Gt, &d, L::Double(2.5)), &file));
    assert!(file_may_match(&cmp(Eq, &d, L::Double(1.5)), &file));
    // decimal(10,2), minimal big-endian two's complement.
    let dec = col(
        6,
        PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        },
    );
    let file = file_with(6, &bounded(10, 0, None, L::Decimal(-500), L::Decimal(4560)));
    check(
        &file,
        &[
            ("eq 100.00", cmp(Eq, &dec, L::Decimal(10_000)), false),
            ("eq -1.00", cmp(Eq, &dec, L::Decimal(-100)), true),
            ("lt -5.00", cmp(Lt, &dec, L::Decimal(-500)), false),
            ("lteq -5.00", cmp(LtEq, &dec, L::Decimal(-500)), true),
            ("gt 45.59", cmp(Gt, &dec, L::Decimal(4559)), true),
            ("gt 45.60", cmp(Gt, &dec, L::Decimal(4560)), false),
        ],
    );
    // timestamps, and date bounds of a column promoted to timestamp.
    let ts = col(7, PrimitiveType::Timestamptz);
    let day = 86_400_000_000_i64;
    let file = file_with(
        7,
        &bounded(
            10,
            0,
            None,
            L::Timestamptz(19_000 * day),
            L::Timestamptz(19_001 * day - 1),
        ),
    );
    assert!(!file_may_match(
        &cmp(Lt, &ts, L::Timestamptz(19_000 * day)),
        &file
    ));
    assert!(!file_may_match(
        &cmp(GtEq, &ts, L::Timestamptz(19_001 * day)),
        &file
    ));
    assert!(file_may_match(
        &cmp(Eq, &ts, L::Timestamptz(19_000 * day + 5)),
        &file
    ));
    let t = col(8, PrimitiveType::Timestamp);
    let file = file_with(8, &bounded(10, 0, None, L::Date(19_000), L::Date(19_010)));
    assert!(!file_may_match(
        &cmp(Lt, &t, L::Timestamp(19_000 * day)),
        &file
    ));
    assert!(file_may_match(
        &cmp(Eq, &t, L::Timestamp(19_010 * day)),
        &file
    ));
    assert!(!file_may_match(
        &cmp(Gt, &t, L::Timestamp(19_010 * day)),
        &file
    ));
    let ns = col(9, PrimitiveType::TimestampNs);
    let file = file_with(
        9,
        &bounded(10, 0, None, L::TimestampNs(1_000), L::TimestampNs(2_000)),
    );
    assert!(!file_may_match(&cmp(Gt, &ns, L::TimestampNs(2_000)), &file));
}

#[test]
fn unusable_bounds_may_match() {
    let x = col(1, PrimitiveType::Long);
    let mut garbled = bounded(10, 0, None, L::Long(1), L::Long(2));
    garbled.lower = Some(vec![1, 2, 3]);
    let file = file_with(1, &garbled);
    assert!(file_may_match(&cmp(Lt, &x, L::Long(0)), &file));
    assert!(!file_may_match(&cmp(Gt, &x, L::Long(2)), &file));
    // A value of another type than the bounds: no judgement.
    assert!(file_may_match(&cmp(Gt, &x, L::Int(5)), &file));
    // UUID bounds are never used (legacy signed order).
    let u = col(10, PrimitiveType::Uuid);
    let file = file_with(
        10,
        &bounded(10, 0, None, L::Uuid([0x10; 16]), L::Uuid([0x20; 16])),
    );
    assert!(file_may_match(&cmp(Eq, &u, L::Uuid([0xf0; 16])), &file));
    assert!(file_may_match(&cmp(Lt, &u, L::Uuid([0x00; 16])), &file));
    let all_null = file_with(10, &counts(10, 10, None));
    assert!(!file_may_match(
        &cmp(Eq, &u, L::Uuid([0xf0; 16])),
        &all_null
    ));
}

// ---- property test: metrics computed from generated columns never prune a match ----

/// A small deterministic generator (xorshift64), so failures reproduce.
pub(in crate::expr::eval) struct Rng(pub(in crate::expr::eval) u64);

impl Rng {
    pub(in crate::expr::eval) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    pub(in crate::expr::eval) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const PIECES: [&str; 11] = [
    "",
    "a",
    "ab",
    "abc",
    "abcabc",
    "abcabcabcabc",
    "b",
    "é",
    "\u{ffff}",
    "\u{10ffff}",
    "z",
];

/// One column of generated rows (`None` = NULL).
pub(in crate::expr::eval) struct Column {
    pub(in crate::expr::eval) ty: PrimitiveType,
    pub(in crate::expr::eval) rows: Vec<Option<Literal>>,
}

impl Column {
    pub(in crate::expr::eval) fn random(rng: &mut Rng) -> Column {
        let ty = rng
            .pick(&[
                PrimitiveType::Long,
                PrimitiveType::String,
                PrimitiveType::Double,
            ])
            .clone();
        let null_percent = *rng.pick(&[0, 0, 20, 50, 100]);
        let len = 1 + rng.below(8);
        let rows = (0..len)
            .map(|_| (!rng.chance(null_percent)).then(|| random_value(rng, &ty)))
            .collect();
        Column { ty, rows }
    }

    pub(in crate::expr::eval) fn nulls(&self) -> i64 {
        self.rows.iter().filter(|r| r.is_none()).count() as i64
    }

    pub(in crate::expr::eval) fn nans(&self) -> i64 {
        self.rows.iter().flatten().filter(|v| is_nan(v)).count() as i64
    }

    /// The bounds a writer records: min and max of the plain values (totalOrder, so -0.0
    /// before +0.0); strings truncated to 4 characters with the upper one incremented when
    /// `truncate`; zero bounds of either sign when `sloppy`.
    pub(in crate::expr::eval) fn bounds(
        &self,
        rng: &mut Rng,
        truncate: bool,
        sloppy: bool,
    ) -> (Option<Literal>, Option<Literal>) {
        let mut plain: Vec<&Literal> = self.rows.iter().flatten().filter(|v| !is_nan(v)).collect();
        plain.sort_by(|a, b| a.partial_cmp_same_type(b).unwrap_or(Ordering::Equal));
        let (Some(lo), Some(hi)) = (plain.first(), plain.last()) else {
            return (None, None);
        };
        let (mut lo, mut hi) = ((*lo).clone(), Some((*hi).clone()));
        if truncate {
            if let Literal::String(s) = &lo {
                lo = Literal::String(s.chars().take(4).collect());
            }
            if let Some(Literal::String(s)) = &hi {
                hi = truncate_upper(s, 4).map(Literal::String);
            }
        }
        if sloppy {
            lo = zero_as(lo, rng.chance(50));
            hi = hi.map(|h| zero_as(h, rng.chance(50)));
        }
        (Some(lo), hi)
    }

    /// The file a writer would produce for this column as field `id`, with some metrics
    /// left out at random.
    pub(in crate::expr::eval) fn file(&self, rng: &mut Rng, id: i32) -> DataFile {
        let (truncate, sloppy) = (rng.chance(50), rng.chance(30));
        let (lower, upper) = self.bounds(rng, truncate, sloppy);
        let float = is_float(&self.ty);
        let m = Metrics {
            values: (!rng.chance(10)).then_some(self.rows.len() as i64),
            nulls: (!rng.chance(10)).then_some(self.nulls()),
            nans: (float && !rng.chance(20)).then_some(self.nans()),
            lower: lower.filter(|_| !rng.chance(10)).map(|b| b.to_bytes()),
            upper: upper.filter(|_| !rng.chance(10)).map(|b| b.to_bytes()),
        };
        let mut file = file_with(id, &m);
        file.record_count = self.rows.len() as i64;
        file
    }

    pub(in crate::expr::eval) fn random_value(&self, rng: &mut Rng) -> Literal {
        let present: Vec<&Literal> = self.rows.iter().flatten().collect();
        if !present.is_empty() && rng.chance(60) {
            return (*rng.pick(&present)).clone();
        }
        random_value(rng, &self.ty)
    }

    /// A random predicate on `term` (of this column's type), up to `depth` levels of AND/OR.
    pub(in crate::expr::eval) fn random_predicate(
        &self,
        rng: &mut Rng,
        term: &Reference,
        depth: usize,
    ) -> Predicate {
        if depth > 0 && rng.chance(35) {
            let a = self.random_predicate(rng, term, depth - 1);
            let b = self.random_predicate(rng, term, depth - 1);
            let p = if rng.chance(50) { a.and(b) } else { a.or(b) };
            return if rng.chance(30) { p.negate() } else { p };
        }
        let p = self.random_leaf(rng, term);
        if rng.chance(20) { p.negate() } else { p }
    }

    fn random_leaf(&self, rng: &mut Rng, term: &Reference) -> Predicate {
        let float = is_float(&self.ty);
        let string = self.ty == PrimitiveType::String;
        match rng.below(10) {
            0 => un(*rng.pick(&[UnaryOp::IsNull, UnaryOp::NotNull]), term),
            1 if float => un(*rng.pick(&[UnaryOp::IsNan, UnaryOp::NotNan]), term),
            2 | 3 if string => {
                let op = *rng.pick(&[StartsWith, NotStartsWith]);
                let Literal::String(s) = self.random_value(rng) else {
                    unreachable!()
                };
                let n = rng.below(s.chars().count() + 2);
                cmp(op, term, Literal::String(s.chars().take(n).collect()))
            }
            4 => {
                let op = *rng.pick(&[SetOp::In, SetOp::NotIn]);
                let values = (0..rng.below(4)).map(|_| self.random_value(rng)).collect();
                set(op, term, values)
            }
            _ => {
                let op = *rng.pick(&[Lt, LtEq, Gt, GtEq, Eq, NotEq]);
                cmp(op, term, self.random_value(rng))
            }
        }
    }

    /// Whether some row satisfies `p` under IEEE or under totalOrder float semantics.
    pub(in crate::expr::eval) fn some_row_matches(&self, p: &Predicate) -> bool {
        self.rows
            .iter()
            .any(|r| eval(p, r, false) == Some(true) || eval(p, r, true) == Some(true))
    }
}

fn random_value(rng: &mut Rng, ty: &PrimitiveType) -> Literal {
    match ty {
        PrimitiveType::Long => match rng.below(20) {
            0 => Literal::Long(i64::MIN),
            1 => Literal::Long(i64::MAX),
            _ => Literal::Long(rng.below(41) as i64 - 20),
        },
        PrimitiveType::String => {
            let n = 1 + rng.below(3);
            Literal::String((0..n).map(|_| *rng.pick(&PIECES)).collect())
        }
        _ => {
            let negative_nan = f64::from_bits(f64::NAN.to_bits() | (1 << 63));
            let pool = [
                -2.5,
                -1.0,
                -0.0,
                0.0,
                0.5,
                1.0,
                3.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                negative_nan,
            ];
            Literal::Double(*rng.pick(&pool))
        }
    }
}

/// The spec's truncated upper bound: the first `n` characters with the last one that can
/// be incremented incremented (the rest dropped); `None` when none can.
fn truncate_upper(s: &str, n: usize) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= n {
        return Some(s.to_string());
    }
    (0..n).rev().find_map(|i| {
        let next = match chars[i] as u32 + 1 {
            0xd800 => 0xe000,
            c => c,
        };
        let next = char::from_u32(next)?;
        Some(chars[..i].iter().chain([&next]).collect())
    })
}

/// SQL three-valued evaluation of `p` on one value; `total` compares floats by totalOrder
/// (DataFusion), else by IEEE 754.
fn eval(p: &Predicate, v: &Option<Literal>, total: bool) -> Option<bool> {
    match p {
        Predicate::AlwaysTrue => Some(true),
        Predicate::AlwaysFalse => Some(false),
        Predicate::And(a, b) => match (eval(a, v, total), eval(b, v, total)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Predicate::Or(a, b) => match (eval(a, v, total), eval(b, v, total)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Predicate::Unary { op, .. } => Some(match op {
            UnaryOp::IsNull => v.is_none(),
            UnaryOp::NotNull => v.is_some(),
            UnaryOp::IsNan => is_nan(v.as_ref()?),
            UnaryOp::NotNan => !is_nan(v.as_ref()?),
        }),
        Predicate::Binary { op, value, .. } => {
            let x = v.as_ref()?;
            let ord = order(x, value, total);
            let starts = || Some(bytes_of(x)?.starts_with(bytes_of(value)?));
            Some(match op {
                Lt => ord == Some(Ordering::Less),
                LtEq => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                Gt => ord == Some(Ordering::Greater),
                GtEq => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
                Eq => ord == Some(Ordering::Equal),
                NotEq => ord != Some(Ordering::Equal),
                StartsWith => starts()?,
                NotStartsWith => !starts()?,
            })
        }
        Predicate::Set { op, values, .. } => {
            let x = v.as_ref()?;
            let found = values
                .iter()
                .any(|value| order(x, value, total) == Some(Ordering::Equal));
            Some(found == (*op == SetOp::In))
        }
    }
}

fn order(a: &Literal, b: &Literal, total: bool) -> Option<Ordering> {
    match (a, b) {
        (Literal::Double(x), Literal::Double(y)) if !total => x.partial_cmp(y),
        _ => a.partial_cmp_same_type(b),
    }
}

#[test]
fn truncated_upper_bounds_follow_the_spec() {
    assert_eq!(truncate_upper("abc", 4).as_deref(), Some("abc"));
    assert_eq!(truncate_upper("abcdef", 4).as_deref(), Some("abce"));
    assert_eq!(
        truncate_upper("ab\u{10ffff}\u{10ffff}x", 4).as_deref(),
        Some("ac")
    );
    assert_eq!(
        truncate_upper("abc\u{d7ff}x", 4).as_deref(),
        Some("abc\u{e000}")
    );
    assert_eq!(
        truncate_upper("\u{10ffff}\u{10ffff}\u{10ffff}\u{10ffff}x", 4),
        None
    );
}

#[test]
fn generated_files_never_lose_a_matching_row() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut cases, mut pruned) = (0, 0);
    for _ in 0..3_000 {
        let column = Column::random(&mut rng);
        let term = col(1, column.ty.clone());
        let file = column.file(&mut rng, 1);
        for _ in 0..10 {
            let p = column.random_predicate(&mut rng, &term, 2);
            let may = file_may_match(&p, &file);
            assert!(
                may || !column.some_row_matches(&p),
                "pruned a match: {p:?}\nrows {:?}\nfile {file:?}",
                column.rows
            );
            cases += 1;
            pruned += usize::from(!may);
        }
    }
    // The evaluator does prune: the property is not met by answering `true` everywhere.
    assert!(pruned * 5 > cases, "only {pruned} of {cases} pruned");
}

#[test]
fn all_rows_match_when_bounds_prove_it() {
    let x = col(1, PrimitiveType::Long);
    let file = file_with(1, &bounded(100, 0, None, L::Long(10), L::Long(50)));
    let c = |op, v| cmp(op, &x, L::Long(v));
    let cases = [
        ("lt above upper", c(Lt, 51), true),
        ("lt at upper", c(Lt, 50), false),
        ("le at upper", c(LtEq, 50), true),
        ("gt below lower", c(Gt, 9), true),
        ("ge inside", c(GtEq, 11), false),
        ("ne outside", c(NotEq, 60), true),
        ("ne inside", c(NotEq, 20), false),
        ("eq", c(Eq, 10), false),
        ("range", c(GtEq, 10).and(c(LtEq, 50)), true),
        (
            "or of halves, not proved leaf by leaf",
            c(Lt, 30).or(c(GtEq, 30)),
            false,
        ),
        ("or with a proved side", c(Lt, 60).or(c(Eq, 20)), true),
        ("not null", un(UnaryOp::NotNull, &x), true),
        ("is null", un(UnaryOp::IsNull, &x), false),
        ("always", Predicate::AlwaysTrue, true),
    ];
    for (name, p, expected) in &cases {
        assert_eq!(file_all_match(p, &file), *expected, "{name}: {p:?}");
    }
    // A NULL makes `x < 51` unknown on that row; unknown null counts prove nothing.
    let with_nulls = file_with(1, &bounded(100, 1, None, L::Long(10), L::Long(50)));
    assert!(!file_all_match(&c(Lt, 51), &with_nulls));
    let mut unknown = bounded(100, 0, None, L::Long(10), L::Long(50));
    unknown.nulls = None;
    assert!(!file_all_match(&c(Lt, 51), &file_with(1, &unknown)));
    // Empty and imported (negative count) files are never dropped by metrics.
    let mut empty = file.clone();
    empty.record_count = 0;
    assert!(!file_all_match(&c(Lt, 51), &empty));
    // Floats need a known NaN count of 0.
    let d = col(2, PrimitiveType::Double);
    let below = |m: &Metrics| file_all_match(&cmp(Lt, &d, L::Double(5.0)), &file_with(2, m));
    assert!(below(&bounded(
        10,
        0,
        Some(0),
        L::Double(1.0),
        L::Double(2.0)
    )));
    assert!(!below(&bounded(
        10,
        0,
        Some(1),
        L::Double(1.0),
        L::Double(2.0)
    )));
    assert!(!below(&bounded(
        10,
        0,
        None,
        L::Double(1.0),
        L::Double(2.0)
    )));
}

#[test]
fn generated_files_all_match_only_when_every_row_matches() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut cases, mut proved) = (0, 0);
    for _ in 0..3_000 {
        let column = Column::random(&mut rng);
        let term = col(1, column.ty.clone());
        let file = column.file(&mut rng, 1);
        for _ in 0..10 {
            let p = column.random_predicate(&mut rng, &term, 2);
            let all = file_all_match(&p, &file);
            let every_row = column
                .rows
                .iter()
                .all(|r| eval(&p, r, false) == Some(true) && eval(&p, r, true) == Some(true));
            assert!(
                !all || every_row,
                "claimed every row: {p:?}\nrows {:?}\nfile {file:?}",
                column.rows
            );
            cases += 1;
            proved += usize::from(all);
        }
    }
    // The evaluator does prove some: the property is not met by answering `false` everywhere.
    assert!(proved * 20 > cases, "only {proved} of {cases} proved");
}

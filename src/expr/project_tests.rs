//! Tests of `project`.

use super::*;
use crate::spec::NestedField;
use BinaryOp as B;
use Literal as L;
use PrimitiveType as P;

const DAY: i64 = 86_400_000_000;
/// 2017-11-16T00:00:00 in microseconds (day 17486).
const NOV16: i64 = 17_486 * DAY;

fn dec() -> P {
    P::Decimal {
        precision: 9,
        scale: 2,
    }
}

fn schema() -> Schema {
    let cols = [
        (1, "i", P::Int),
        (2, "l", P::Long),
        (3, "dec", dec()),
        (4, "s", P::String),
        (5, "bin", P::Binary),
        (6, "dt", P::Date),
        (7, "ts", P::Timestamp),
        (8, "tsns", P::TimestampNs),
        (9, "f", P::Double),
        (10, "other", P::Int),
    ];
    let fields = cols
        .into_iter()
        .map(|(id, name, ty)| NestedField::optional(id, name, ty))
        .collect();
    Schema::new(0, fields)
}

fn col(id: i32) -> Reference {
    let schema = schema();
    let field = schema.field_by_id(id).unwrap();
    Reference {
        field_id: id,
        name: field.name.clone(),
        ty: field.field_type.as_primitive().unwrap().clone(),
    }
}

/// A spec with one field per `(source id, transform)`, numbered 1000, 1001, ...
fn spec(fields: &[(i32, &str)]) -> PartitionSpec {
    let fields = fields
        .iter()
        .zip(1000..)
        .map(|(&(source_id, t), field_id)| PartitionField {
            source_id,
            field_id,
            name: format!("p{field_id}"),
            transform: Transform::parse(t).unwrap(),
        })
        .collect();
    PartitionSpec { spec_id: 1, fields }
}

fn part(field_id: i32, ty: P) -> Reference {
    Reference {
        field_id,
        name: format!("p{field_id}"),
        ty,
    }
}

fn bin(op: BinaryOp, term: Reference, value: Literal) -> Predicate {
    Predicate::Binary { op, term, value }
}

fn set(op: SetOp, term: Reference, values: Vec<Literal>) -> Predicate {
    Predicate::Set { op, term, values }
}

fn unary(op: UnaryOp, term: Reference) -> Predicate {
    Predicate::Unary { op, term }
}

fn project(p: &Predicate, spec: &PartitionSpec) -> Predicate {
    project_inclusive(p, spec, &schema())
}

/// `(source op, value, expected partition op and value)`; `None` expects `AlwaysTrue`.
type Case = (BinaryOp, Literal, Option<(BinaryOp, Literal)>);

/// Checks cases on a one-field spec whose partition field has type `ty`.
fn check(spec: &PartitionSpec, source: i32, ty: P, cases: Vec<Case>) {
    for (op, v, expected) in cases {
        let p = bin(op, col(source), v);
        let expected = expected.map_or(Predicate::AlwaysTrue, |(op, v)| {
            bin(op, part(1000, ty.clone()), v)
        });
        assert_eq!(project(&p, spec), expected, "{p:?}");
    }
}

#[test]
fn identity_keeps_every_test() {
    let s = spec(&[(1, "identity"), (9, "identity"), (4, "identity")]);
    for op in [B::Lt, B::LtEq, B::Gt, B::GtEq, B::Eq, B::NotEq] {
        let p = bin(op, col(1), L::Int(-5));
        assert_eq!(project(&p, &s), bin(op, part(1000, P::Int), L::Int(-5)));
    }
    for op in [B::StartsWith, B::NotStartsWith] {
        let p = bin(op, col(4), L::String("ab".into()));
        let expected = bin(op, part(1002, P::String), L::String("ab".into()));
        assert_eq!(project(&p, &s), expected);
    }
    for op in [SetOp::In, SetOp::NotIn] {
        let p = set(op, col(1), vec![L::Int(1), L::Int(2)]);
        let expected = set(op, part(1000, P::Int), vec![L::Int(1), L::Int(2)]);
        assert_eq!(project(&p, &s), expected);
    }
    for op in [
        UnaryOp::IsNull,
        UnaryOp::NotNull,
        UnaryOp::IsNan,
        UnaryOp::NotNan,
    ] {
        let p = unary(op, col(9));
        assert_eq!(project(&p, &s), unary(op, part(1001, P::Double)));
    }
}

#[test]
fn bucket_projects_only_equality() {
    let s = spec(&[(1, "bucket[16]"), (4, "bucket[16]")]);
    // Spec Appendix B: hash(34) = 2017239379, 2017239379 % 16 = 3;
    // hash("iceberg") = 1210000089, % 16 = 9.
    check(
        &s,
        1,
        P::Int,
        vec![
            (B::Eq, L::Int(34), Some((B::Eq, L::Int(3)))),
            (B::Lt, L::Int(34), None),
            (B::LtEq, L::Int(34), None),
            (B::Gt, L::Int(34), None),
            (B::GtEq, L::Int(34), None),
            (B::NotEq, L::Int(34), None),
        ],
    );
    let p = set(SetOp::In, col(1), vec![L::Int(34), L::Int(34)]);
    assert_eq!(project(&p, &s), bin(B::Eq, part(1000, P::Int), L::Int(3)));
    let p = set(
        SetOp::In,
        col(4),
        vec![L::String("iceberg".into()), L::String("iceberg".into())],
    );
    assert_eq!(project(&p, &s), bin(B::Eq, part(1001, P::Int), L::Int(9)));
    // 34 -> 3; 35, 36 -> whatever they are, but a set of buckets.
    let p = set(SetOp::In, col(1), vec![L::Int(34), L::Int(35)]);
    let Predicate::Set { op, term, values } = project(&p, &s) else {
        panic!("expected a set");
    };
    assert_eq!((op, term.field_id), (SetOp::In, 1000));
    assert!(values.contains(&L::Int(3)) && values.len() == 2);
    let p = set(SetOp::NotIn, col(1), vec![L::Int(34)]);
    assert_eq!(project(&p, &s), Predicate::AlwaysTrue);
    let p = bin(B::StartsWith, col(4), L::String("ice".into()));
    assert_eq!(project(&p, &s), Predicate::AlwaysTrue);
    let p = unary(UnaryOp::IsNull, col(1));
    assert_eq!(project(&p, &s), unary(UnaryOp::IsNull, part(1000, P::Int)));
}

#[test]
fn truncate_int_shifts_strict_bounds() {
    let s = spec(&[(1, "truncate[10]")]);
    check(
        &s,
        1,
        P::Int,
        vec![
            // x > 10 starts at 11, in block 10; x > 9 at 10, block 10.
            (B::Gt, L::Int(10), Some((B::GtEq, L::Int(10)))),
            (B::Gt, L::Int(9), Some((B::GtEq, L::Int(10)))),
            (B::GtEq, L::Int(10), Some((B::GtEq, L::Int(10)))),
            // Negative values round towards negative infinity: -1 is in block -10.
            (B::Eq, L::Int(-1), Some((B::Eq, L::Int(-10)))),
            (B::Gt, L::Int(-10), Some((B::GtEq, L::Int(-10)))),
            (B::GtEq, L::Int(-11), Some((B::GtEq, L::Int(-20)))),
            (B::NotEq, L::Int(5), None),
            // x < i32::MIN matches nothing, but there is no bound to write: conservative.
            (B::Lt, L::Int(i32::MIN), None),
            (B::Gt, L::Int(i32::MAX), None),
        ],
    );
    // Upper bounds also keep the partition of the lowest block, which Java's int
    // arithmetic wraps to 2147483646 (`truncate_int_keeps_the_wrapped_lowest_block`).
    let upper = |t: i32| {
        let wrapped = bin(B::Eq, part(1000, P::Int), L::Int(2_147_483_646));
        bin(B::LtEq, part(1000, P::Int), L::Int(t)).or(wrapped)
    };
    for (op, v, t) in [
        // x < 10 holds up to 9, in block 0.
        (B::Lt, 10, 0),
        (B::LtEq, 10, 10),
        (B::LtEq, 9, 0),
        // x < -9 holds up to -10, block -10; x < -10 up to -11, block -20.
        (B::Lt, -9, -10),
        (B::Lt, -10, -20),
        (B::LtEq, -10, -10),
    ] {
        let p = bin(op, col(1), L::Int(v));
        assert_eq!(project(&p, &s), upper(t), "{p:?}");
    }
    let p = set(
        SetOp::In,
        col(1),
        vec![L::Int(11), L::Int(5), L::Int(-1), L::Int(1)],
    );
    let expected = set(
        SetOp::In,
        part(1000, P::Int),
        vec![L::Int(-10), L::Int(0), L::Int(10)],
    );
    assert_eq!(project(&p, &s), expected);
    assert_eq!(
        project(&set(SetOp::NotIn, col(1), vec![L::Int(1)]), &s),
        Predicate::AlwaysTrue
    );
    // Longs: i64::MIN is a multiple of 8, so truncate[8] never wraps.
    let l = spec(&[(2, "truncate[8]")]);
    check(
        &l,
        2,
        P::Long,
        vec![
            (B::Lt, L::Long(8), Some((B::LtEq, L::Long(0)))),
            (B::Lt, L::Long(-8), Some((B::LtEq, L::Long(-16)))),
            (B::Gt, L::Long(-9), Some((B::GtEq, L::Long(-8)))),
            (B::Eq, L::Long(-1), Some((B::Eq, L::Long(-8)))),
        ],
    );
    // truncate[10] of i64::MIN: -8 + 10 = 2, MIN - 2 wraps to i64::MAX - 1.
    let l10 = spec(&[(2, "truncate[10]")]);
    let expected = bin(B::LtEq, part(1000, P::Long), L::Long(0)).or(bin(
        B::Eq,
        part(1000, P::Long),
        L::Long(i64::MAX - 1),
    ));
    assert_eq!(project(&bin(B::Lt, col(2), L::Long(10)), &l10), expected);
}

#[test]
fn truncate_int_keeps_the_wrapped_lowest_block() {
    // Java: i32::MIN % 10 = -8, (-8 + 10) % 10 = 2, MIN - 2 wraps to 2147483646; every
    // value of [MIN, MIN + 7] is in that partition.
    let s = spec(&[(1, "truncate[10]")]);
    let p = bin(B::Lt, col(1), L::Int(0));
    let expected = bin(B::LtEq, part(1000, P::Int), L::Int(-10)).or(bin(
        B::Eq,
        part(1000, P::Int),
        L::Int(2_147_483_646),
    ));
    assert_eq!(project(&p, &s), expected);
    let p = bin(B::GtEq, col(1), L::Int(i32::MIN + 1));
    assert_eq!(project(&p, &s), Predicate::AlwaysTrue);
    // MIN + 8 = -2147483640 is a multiple of 10: no wrap from there on.
    let p = bin(B::GtEq, col(1), L::Int(i32::MIN + 8));
    let expected = bin(B::GtEq, part(1000, P::Int), L::Int(i32::MIN + 8));
    assert_eq!(project(&p, &s), expected);
    // i32::MIN is a multiple of 4: truncate[4] never wraps.
    let s4 = spec(&[(1, "truncate[4]")]);
    let p = bin(B::Lt, col(1), L::Int(0));
    assert_eq!(
        project(&p, &s4),
        bin(B::LtEq, part(1000, P::Int), L::Int(-4))
    );
}

#[test]
fn truncate_decimal_steps_by_one_unscaled_unit() {
    let s = spec(&[(3, "truncate[10]")]);
    check(
        &s,
        3,
        dec(),
        vec![
            // 1.00 - 0.01 = 0.99, truncated to 0.90
            (B::Lt, L::Decimal(100), Some((B::LtEq, L::Decimal(90)))),
            (B::LtEq, L::Decimal(100), Some((B::LtEq, L::Decimal(100)))),
            // 12.34 + 0.01 = 12.35 -> 12.30
            (B::Gt, L::Decimal(1234), Some((B::GtEq, L::Decimal(1230)))),
            // -0.05 -> -0.10
            (B::Eq, L::Decimal(-5), Some((B::Eq, L::Decimal(-10)))),
            (B::GtEq, L::Decimal(-5), Some((B::GtEq, L::Decimal(-10)))),
        ],
    );
}

#[test]
fn truncate_string_counts_code_points() {
    let s = spec(&[(4, "truncate[3]")]);
    let st = |v: &str| L::String(v.into());
    check(
        &s,
        4,
        P::String,
        vec![
            (B::Lt, st("abcd"), Some((B::LtEq, st("abc")))),
            (B::LtEq, st("ab"), Some((B::LtEq, st("ab")))),
            (B::Gt, st("abcd"), Some((B::GtEq, st("abc")))),
            (B::GtEq, st("ab"), Some((B::GtEq, st("ab")))),
            // "ñandú": 5 code points, 7 bytes.
            (B::Eq, st("ñandú"), Some((B::Eq, st("ñan")))),
            (B::Eq, st("ééé€"), Some((B::Eq, st("ééé")))),
            (B::StartsWith, st("ab"), Some((B::StartsWith, st("ab")))),
            // Two code points (8 bytes) are still shorter than the width.
            (B::StartsWith, st("😀😀"), Some((B::StartsWith, st("😀😀")))),
            (B::StartsWith, st("abc"), Some((B::Eq, st("abc")))),
            (B::StartsWith, st("😀😀😀x"), Some((B::Eq, st("😀😀😀")))),
            (B::NotStartsWith, st("é"), Some((B::NotStartsWith, st("é")))),
            (B::NotStartsWith, st("abc"), Some((B::NotEq, st("abc")))),
            (B::NotStartsWith, st("abcd"), None),
            (B::NotEq, st("ab"), None),
        ],
    );
    let p = set(SetOp::In, col(4), vec![st("abcd"), st("x"), st("abce")]);
    let expected = set(SetOp::In, part(1000, P::String), vec![st("abc"), st("x")]);
    assert_eq!(project(&p, &s), expected);
    let p = unary(UnaryOp::NotNull, col(4));
    assert_eq!(
        project(&p, &s),
        unary(UnaryOp::NotNull, part(1000, P::String))
    );
}

#[test]
fn truncate_binary_counts_bytes() {
    let s = spec(&[(5, "truncate[2]")]);
    let b = |v: &[u8]| L::Binary(v.to_vec());
    check(
        &s,
        5,
        P::Binary,
        vec![
            (B::Eq, b(&[1, 2, 3]), Some((B::Eq, b(&[1, 2])))),
            (B::Lt, b(&[1, 2, 3]), Some((B::LtEq, b(&[1, 2])))),
            (B::StartsWith, b(&[1]), Some((B::StartsWith, b(&[1])))),
            (B::StartsWith, b(&[1, 2, 3]), Some((B::Eq, b(&[1, 2])))),
        ],
    );
}

#[test]
fn temporal_transforms_after_1970() {
    let day = spec(&[(7, "day")]);
    check(
        &day,
        7,
        P::Date,
        vec![
            // The last microsecond before 2017-11-16 is on 2017-11-15 (day 17485).
            (B::Lt, L::Timestamp(NOV16), Some((B::LtEq, L::Date(17_485)))),
            (
                B::LtEq,
                L::Timestamp(NOV16),
                Some((B::LtEq, L::Date(17_486))),
            ),
            (
                B::GtEq,
                L::Timestamp(NOV16),
                Some((B::GtEq, L::Date(17_486))),
            ),
            // 2017-11-16T23:59:59.999999 + 1µs is on the 17th.
            (
                B::Gt,
                L::Timestamp(NOV16 + DAY - 1),
                Some((B::GtEq, L::Date(17_487))),
            ),
            (B::Gt, L::Timestamp(NOV16), Some((B::GtEq, L::Date(17_486)))),
            (B::NotEq, L::Timestamp(NOV16), None),
        ],
    );
    // 2017-11-16T22:31:08: year 2017 - 1970 = 47, month 47 * 12 + 10 = 574,
    // hour 17486 * 24 + 22 = 419686.
    let ts = L::Timestamp(1_510_871_468_000_000);
    for (t, expected) in [("year", 47), ("month", 574), ("hour", 419_686)] {
        let s = spec(&[(7, t)]);
        let p = bin(B::Eq, col(7), ts.clone());
        assert_eq!(
            project(&p, &s),
            bin(B::Eq, part(1000, P::Int), L::Int(expected))
        );
    }
    // Dates: 2017-11-16 is day 17486; month of 2017-12-01 (day 17501) is 575.
    let month = spec(&[(6, "month")]);
    check(
        &month,
        6,
        P::Int,
        vec![
            (B::Lt, L::Date(17_501), Some((B::LtEq, L::Int(574)))),
            (B::GtEq, L::Date(17_501), Some((B::GtEq, L::Int(575)))),
            (B::Gt, L::Date(17_500), Some((B::GtEq, L::Int(575)))),
        ],
    );
}

#[test]
fn temporal_transforms_before_1970_admit_old_writers_values() {
    let day = spec(&[(7, "day")]);
    // 1969-12-31T12:00 = -43_200_000_000 µs: spec day -1, old writers day 0.
    let noon = L::Timestamp(-DAY / 2);
    check(
        &day,
        7,
        P::Date,
        vec![
            (B::Lt, noon.clone(), Some((B::LtEq, L::Date(0)))),
            (B::LtEq, noon.clone(), Some((B::LtEq, L::Date(0)))),
            // Lower bounds are not widened: old values are never smaller.
            (B::GtEq, noon.clone(), Some((B::GtEq, L::Date(-1)))),
            (B::Gt, noon.clone(), Some((B::GtEq, L::Date(-1)))),
            // x < 1969-12-30T00:00: the last µs is on 1969-12-29 (day -3) -> p <= -2.
            (B::Lt, L::Timestamp(-2 * DAY), Some((B::LtEq, L::Date(-2)))),
            // Non-negative upper bounds stay: x < 1970-01-02 -> p <= 0.
            (B::Lt, L::Timestamp(DAY), Some((B::LtEq, L::Date(0)))),
        ],
    );
    let p = bin(B::Eq, col(7), noon.clone());
    let expected = set(
        SetOp::In,
        part(1000, P::Date),
        vec![L::Date(-1), L::Date(0)],
    );
    assert_eq!(project(&p, &day), expected);
    let p = set(SetOp::In, col(7), vec![L::Timestamp(NOV16), noon]);
    let expected = set(
        SetOp::In,
        part(1000, P::Date),
        vec![L::Date(-1), L::Date(0), L::Date(17_486)],
    );
    assert_eq!(project(&p, &day), expected);

    // x < 1970-01-01T00:00: the last µs is in hour -1 (old writers: hour 0).
    let hour = spec(&[(7, "hour")]);
    check(
        &hour,
        7,
        P::Int,
        vec![(B::Lt, L::Timestamp(0), Some((B::LtEq, L::Int(0))))],
    );
    // Nanoseconds: x < 1 ns holds at 0 ns (hour 0); x < 0 ns at -1 ns (hour -1 -> 0).
    let hour_ns = spec(&[(8, "hour")]);
    check(
        &hour_ns,
        8,
        P::Int,
        vec![
            (B::Lt, L::TimestampNs(1), Some((B::LtEq, L::Int(0)))),
            (B::Lt, L::TimestampNs(0), Some((B::LtEq, L::Int(0)))),
            (
                B::Lt,
                L::TimestampNs(-3_600_000_000_000),
                Some((B::LtEq, L::Int(-1))),
            ),
        ],
    );

    // Dates: 1969-12-01 = day -31, 1969-11-15 = day -47 (month -2 = 1969-11),
    // 1969-01-01 = day -365, 1968-12-31 = day -366 (year -2 = 1968).
    let month = spec(&[(6, "month")]);
    let p = bin(B::Eq, col(6), L::Date(-47));
    let expected = set(SetOp::In, part(1000, P::Int), vec![L::Int(-2), L::Int(-1)]);
    assert_eq!(project(&p, &month), expected);
    check(
        &month,
        6,
        P::Int,
        vec![
            (B::Lt, L::Date(0), Some((B::LtEq, L::Int(0)))),
            (B::Lt, L::Date(-31), Some((B::LtEq, L::Int(-1)))),
            (B::GtEq, L::Date(-47), Some((B::GtEq, L::Int(-2)))),
        ],
    );
    let year = spec(&[(6, "year")]);
    check(
        &year,
        6,
        P::Int,
        vec![
            (B::LtEq, L::Date(-366), Some((B::LtEq, L::Int(-1)))),
            (B::Gt, L::Date(-366), Some((B::GtEq, L::Int(-1)))),
            (B::Gt, L::Date(-185), Some((B::GtEq, L::Int(-1)))),
        ],
    );
    // day of a date is exact in every writer: not widened.
    let day_of_date = spec(&[(6, "day")]);
    check(
        &day_of_date,
        6,
        P::Date,
        vec![
            (B::Lt, L::Date(-10), Some((B::LtEq, L::Date(-11)))),
            (B::Eq, L::Date(-10), Some((B::Eq, L::Date(-10)))),
        ],
    );
}

#[test]
fn bounds_past_the_range_are_always_true() {
    let day = spec(&[(7, "day")]);
    // i64::MAX + 1 does not exist; i64::MIN - 1 neither.
    let p = bin(B::Gt, col(7), L::Timestamp(i64::MAX));
    assert_eq!(project(&p, &day), Predicate::AlwaysTrue);
    let p = bin(B::Lt, col(7), L::Timestamp(i64::MIN));
    assert_eq!(project(&p, &day), Predicate::AlwaysTrue);
    // i64::MAX µs is 106751991.17 days: a day, but 2562047788 hours is not an int.
    let p = bin(B::GtEq, col(7), L::Timestamp(i64::MAX));
    let expected = bin(B::GtEq, part(1000, P::Date), L::Date(106_751_991));
    assert_eq!(project(&p, &day), expected);
    let hour = spec(&[(7, "hour")]);
    for op in [B::GtEq, B::Eq, B::LtEq] {
        let p = bin(op, col(7), L::Timestamp(i64::MAX));
        assert_eq!(project(&p, &hour), Predicate::AlwaysTrue, "{op:?}");
    }
}

#[test]
fn void_and_unrelated_columns_project_to_always_true() {
    let s = spec(&[(1, "void"), (4, "identity")]);
    for p in [
        bin(B::Eq, col(1), L::Int(1)),
        unary(UnaryOp::IsNull, col(1)),
        unary(UnaryOp::NotNull, col(1)),
        set(SetOp::In, col(1), vec![L::Int(1)]),
        bin(B::Eq, col(10), L::Int(1)),
        bin(B::Eq, col(10), L::Int(1)).or(bin(B::Eq, col(4), L::String("a".into()))),
    ] {
        assert_eq!(project(&p, &s), Predicate::AlwaysTrue, "{p:?}");
    }
    let p = bin(B::Eq, col(10), L::Int(1)).and(bin(B::Eq, col(4), L::String("a".into())));
    let expected = bin(B::Eq, part(1001, P::String), L::String("a".into()));
    assert_eq!(project(&p, &s), expected);
    let s = spec(&[(7, "day")]);
    assert_eq!(
        project(&unary(UnaryOp::IsNan, col(7)), &s),
        Predicate::AlwaysTrue
    );
    assert_eq!(project(&Predicate::AlwaysFalse, &s), Predicate::AlwaysFalse);
}

#[test]
fn several_fields_on_one_column_are_anded() {
    // An evolved spec: day(ts) then hour(ts); bucket and truncate of i.
    let s = spec(&[
        (7, "day"),
        (7, "hour"),
        (1, "bucket[16]"),
        (1, "truncate[4]"),
    ]);
    let p = bin(B::GtEq, col(7), L::Timestamp(NOV16 + 22 * 3_600_000_000));
    let expected = bin(B::GtEq, part(1000, P::Date), L::Date(17_486)).and(bin(
        B::GtEq,
        part(1001, P::Int),
        L::Int(419_686),
    ));
    assert_eq!(project(&p, &s), expected);
    let p = bin(B::Eq, col(1), L::Int(34));
    let expected =
        bin(B::Eq, part(1002, P::Int), L::Int(3)).and(bin(B::Eq, part(1003, P::Int), L::Int(32)));
    assert_eq!(project(&p, &s), expected);
    // Only the truncate field takes a range.
    let p = bin(B::Lt, col(1), L::Int(34)).or(unary(UnaryOp::IsNull, col(1)));
    let expected =
        bin(B::LtEq, part(1003, P::Int), L::Int(32)).or(unary(UnaryOp::IsNull, part(1002, P::Int))
            .and(unary(UnaryOp::IsNull, part(1003, P::Int))));
    assert_eq!(project(&p, &s), expected);
}

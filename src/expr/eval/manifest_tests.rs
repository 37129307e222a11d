//! Tests of `manifest`.

use super::*;
use crate::expr::eval::metrics::tests::{Column, Rng, cmp, col, set, un};
use crate::expr::{BinaryOp::*, SetOp, UnaryOp};
use crate::spec::NestedField;
use Literal as L;

/// Partition fields 1000 (int, e.g. a bucket), 1001 (string), 1002 (double).
fn partition_type() -> StructType {
    StructType::new(vec![
        NestedField::optional(1000, "id_bucket", PrimitiveType::Int),
        NestedField::optional(1001, "name", PrimitiveType::String),
        NestedField::optional(1002, "score", PrimitiveType::Double),
    ])
}

fn summary(null: bool, nan: Option<bool>, bounds: Option<(Literal, Literal)>) -> FieldSummary {
    FieldSummary {
        contains_null: null,
        contains_nan: nan,
        lower_bound: bounds.as_ref().map(|(lo, _)| lo.to_bytes()),
        upper_bound: bounds.as_ref().map(|(_, hi)| hi.to_bytes()),
    }
}

fn bucket() -> Reference {
    col(1000, PrimitiveType::Int)
}
fn name() -> Reference {
    col(1001, PrimitiveType::String)
}
fn score() -> Reference {
    col(1002, PrimitiveType::Double)
}

/// Runs `(name, predicate, expected)` cases against one manifest's summaries.
fn check(summaries: &[FieldSummary], cases: &[(&str, Predicate, bool)]) {
    let ty = partition_type();
    for (label, p, expected) in cases {
        let got = manifest_may_match(p, &ty, Some(summaries));
        assert_eq!(got, *expected, "{label}: {p:?}");
    }
}

fn text(v: &str) -> Literal {
    L::String(v.into())
}

/// Buckets 3..=7 with nulls, names "m".."q" without nulls, scores 1.0..2.0 without NaN.
fn ranged() -> Vec<FieldSummary> {
    vec![
        summary(true, Some(false), Some((L::Int(3), L::Int(7)))),
        summary(false, Some(false), Some((text("m"), text("q")))),
        summary(false, Some(false), Some((L::Double(1.0), L::Double(2.0)))),
    ]
}

#[test]
fn comparisons_below_inside_above() {
    let b = |op, v| cmp(op, &bucket(), L::Int(v));
    check(
        &ranged(),
        &[
            ("lt lower", b(Lt, 3), false),
            ("lt inside", b(Lt, 4), true),
            ("lteq lower", b(LtEq, 3), true),
            ("lteq below", b(LtEq, 2), false),
            ("gt upper", b(Gt, 7), false),
            ("gt inside", b(Gt, 6), true),
            ("gteq upper", b(GtEq, 7), true),
            ("gteq above", b(GtEq, 8), false),
            ("eq below", b(Eq, 2), false),
            ("eq inside", b(Eq, 5), true),
            ("eq above", b(Eq, 8), false),
            ("noteq", b(NotEq, 5), true),
            (
                "in outside",
                set(SetOp::In, &bucket(), vec![L::Int(1), L::Int(9)]),
                false,
            ),
            (
                "in inside",
                set(SetOp::In, &bucket(), vec![L::Int(1), L::Int(7)]),
                true,
            ),
            ("in empty", set(SetOp::In, &bucket(), vec![]), false),
            (
                "in over the limit",
                set(SetOp::In, &bucket(), (100..400).map(L::Int).collect()),
                true,
            ),
            ("notin", set(SetOp::NotIn, &bucket(), vec![L::Int(3)]), true),
            ("is null", un(UnaryOp::IsNull, &bucket()), true),
            ("not null", un(UnaryOp::NotNull, &bucket()), true),
            ("name is null", un(UnaryOp::IsNull, &name()), false),
            ("score isnan", un(UnaryOp::IsNan, &score()), false),
            ("score notnan", un(UnaryOp::NotNan, &score()), true),
            ("score gt", cmp(Gt, &score(), L::Double(2.0)), false),
            ("score eq -0", cmp(Eq, &score(), L::Double(-0.0)), false),
            ("and", b(Eq, 5).and(cmp(Eq, &name(), text("z"))), false),
            ("or", b(Eq, 9).or(cmp(Eq, &name(), text("n"))), true),
            ("always true", Predicate::AlwaysTrue, true),
            ("always false", Predicate::AlwaysFalse, false),
        ],
    );
}

#[test]
fn string_prefixes() {
    let s = |op, v: &str| cmp(op, &name(), text(v));
    check(
        &ranged(),
        &[
            ("starts m", s(StartsWith, "m"), true),
            ("starts q", s(StartsWith, "q"), true),
            ("starts qa (above q)", s(StartsWith, "qa"), false),
            ("starts l", s(StartsWith, "l"), false),
            ("starts r", s(StartsWith, "r"), false),
            ("starts empty", s(StartsWith, ""), true),
            ("not starts m", s(NotStartsWith, "m"), true),
        ],
    );
    let prefixed = vec![
        summary(false, None, None),
        summary(false, Some(false), Some((text("abc"), text("abd")))),
        summary(false, None, None),
    ];
    check(
        &prefixed,
        &[
            ("starts abc", s(StartsWith, "abc"), true),
            ("starts abe", s(StartsWith, "abe"), false),
            ("not starts ab", s(NotStartsWith, "ab"), false),
            ("not starts abc", s(NotStartsWith, "abc"), true),
        ],
    );
    let mut with_null = prefixed.clone();
    with_null[1].contains_null = true;
    check(
        &with_null,
        &[("not starts ab, nulls", s(NotStartsWith, "ab"), true)],
    );
}

#[test]
fn null_and_nan_only_fields() {
    let all_null = vec![
        summary(true, Some(false), None),
        summary(true, None, None),
        summary(true, Some(false), None),
    ];
    check(
        &all_null,
        &[
            ("is null", un(UnaryOp::IsNull, &bucket()), true),
            ("not null", un(UnaryOp::NotNull, &bucket()), false),
            ("eq", cmp(Eq, &bucket(), L::Int(1)), false),
            ("lt", cmp(Lt, &bucket(), L::Int(1)), false),
            ("noteq", cmp(NotEq, &bucket(), L::Int(1)), false),
            (
                "notin",
                set(SetOp::NotIn, &bucket(), vec![L::Int(1)]),
                false,
            ),
            ("in", set(SetOp::In, &bucket(), vec![L::Int(1)]), false),
            ("string not null", un(UnaryOp::NotNull, &name()), false),
            ("string starts", cmp(StartsWith, &name(), text("a")), false),
            ("double not null", un(UnaryOp::NotNull, &score()), false),
            ("double isnan", un(UnaryOp::IsNan, &score()), false),
        ],
    );
    let nan_only = vec![
        summary(false, Some(false), Some((L::Int(1), L::Int(1)))),
        summary(false, Some(false), Some((text("a"), text("a")))),
        summary(false, Some(true), None),
    ];
    check(
        &nan_only,
        &[
            ("isnan", un(UnaryOp::IsNan, &score()), true),
            ("notnan", un(UnaryOp::NotNan, &score()), false),
            ("is null", un(UnaryOp::IsNull, &score()), false),
            ("not null", un(UnaryOp::NotNull, &score()), true),
            ("eq 1", cmp(Eq, &score(), L::Double(1.0)), false),
            ("eq nan", cmp(Eq, &score(), L::Double(f64::NAN)), true),
            ("gt 1 (totalOrder)", cmp(Gt, &score(), L::Double(1.0)), true),
            ("noteq", cmp(NotEq, &score(), L::Double(1.0)), true),
            (
                "bucket noteq its one value",
                cmp(NotEq, &bucket(), L::Int(1)),
                false,
            ),
            (
                "bucket noteq another",
                cmp(NotEq, &bucket(), L::Int(2)),
                true,
            ),
            (
                "name noteq (truncatable)",
                cmp(NotEq, &name(), text("a")),
                true,
            ),
        ],
    );
    // contains_nan unknown (older writers): nulls and NaN may both be there.
    let unknown_nan = vec![
        summary(false, None, None),
        summary(false, None, None),
        summary(true, None, None),
    ];
    check(
        &unknown_nan,
        &[
            ("not null", un(UnaryOp::NotNull, &score()), true),
            ("isnan", un(UnaryOp::IsNan, &score()), true),
            ("lt", cmp(Lt, &score(), L::Double(1.0)), true),
        ],
    );
    // An empty manifest: no nulls, no values.
    let empty = vec![summary(false, Some(false), None); 3];
    check(
        &empty,
        &[
            ("is null", un(UnaryOp::IsNull, &bucket()), false),
            ("not null", un(UnaryOp::NotNull, &bucket()), true),
            ("eq", cmp(Eq, &bucket(), L::Int(1)), false),
        ],
    );
}

#[test]
fn float_ranges_are_conservative_with_nan() {
    let with_nan = vec![
        summary(false, None, None),
        summary(false, None, None),
        summary(false, Some(true), Some((L::Double(1.0), L::Double(2.0)))),
    ];
    let d = |op, v| cmp(op, &score(), L::Double(v));
    check(
        &with_nan,
        &[
            ("lt below", d(Lt, 0.0), true),
            ("gt above", d(Gt, 5.0), true),
            ("eq outside: no NaN equals a number", d(Eq, 5.0), false),
            ("isnan", un(UnaryOp::IsNan, &score()), true),
        ],
    );
    let zero = vec![
        summary(false, None, None),
        summary(false, None, None),
        summary(false, Some(false), Some((L::Double(0.0), L::Double(0.0)))),
    ];
    check(
        &zero,
        &[
            ("eq -0", d(Eq, -0.0), true),
            ("lt +0", d(Lt, 0.0), true),
            ("noteq -0", d(NotEq, -0.0), true),
            ("gt 0.5", d(Gt, 0.5), false),
        ],
    );
}

#[test]
fn what_cannot_be_judged_may_match() {
    let ty = partition_type();
    let never = cmp(Eq, &bucket(), L::Int(100));
    assert!(manifest_may_match(&never, &ty, None));
    // One summary short: positions cannot be trusted.
    assert!(manifest_may_match(&never, &ty, Some(&ranged()[..2])));
    assert!(!manifest_may_match(&never, &ty, Some(&ranged())));
    // A field id the spec does not have.
    let stranger = cmp(Eq, &col(77, PrimitiveType::Int), L::Int(100));
    assert!(manifest_may_match(&stranger, &ty, Some(&ranged())));
    // A bound that does not decode as the field's type.
    let mut garbled = ranged();
    garbled[0].lower_bound = Some(vec![1, 2]);
    assert!(manifest_may_match(
        &cmp(Lt, &bucket(), L::Int(0)),
        &ty,
        Some(&garbled)
    ));
    assert!(!manifest_may_match(
        &cmp(Gt, &bucket(), L::Int(7)),
        &ty,
        Some(&garbled)
    ));
    // A value of another type than the field's.
    let long = cmp(Eq, &col(1000, PrimitiveType::Long), L::Long(100));
    assert!(manifest_may_match(&long, &ty, Some(&ranged())));
}

#[test]
fn promoted_identity_partition_bounds() {
    // An identity partition on a column promoted int -> long: old summaries hold 4 bytes.
    let ty = StructType::new(vec![NestedField::optional(1000, "x", PrimitiveType::Long)]);
    let old = [summary(false, Some(false), Some((L::Int(-5), L::Int(5))))];
    let x = col(1000, PrimitiveType::Long);
    assert!(!manifest_may_match(
        &cmp(Gt, &x, L::Long(5)),
        &ty,
        Some(&old)
    ));
    assert!(manifest_may_match(
        &cmp(Eq, &x, L::Long(-5)),
        &ty,
        Some(&old)
    ));
}

/// Manifests summarising generated partition values never lose a matching value.
#[test]
fn generated_summaries_never_lose_a_matching_value() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut cases, mut pruned) = (0, 0);
    for _ in 0..3_000 {
        let column = Column::random(&mut rng);
        let ty = StructType::new(vec![NestedField::optional(1000, "p", column.ty.clone())]);
        let (truncate, sloppy) = (rng.chance(30), rng.chance(30));
        let (lower, upper) = column.bounds(&mut rng, truncate, sloppy);
        let nan_known = !is_float(&column.ty) || rng.chance(80);
        let summaries = [FieldSummary {
            contains_null: column.nulls() > 0,
            contains_nan: nan_known.then_some(column.nans() > 0),
            lower_bound: lower.map(|b| b.to_bytes()),
            upper_bound: upper.map(|b| b.to_bytes()),
        }];
        let term = col(1000, column.ty.clone());
        for _ in 0..10 {
            let p = column.random_predicate(&mut rng, &term, 2);
            let may = manifest_may_match(&p, &ty, Some(&summaries));
            assert!(
                may || !column.some_row_matches(&p),
                "pruned a match: {p:?}\nvalues {:?}\nsummary {summaries:?}",
                column.rows
            );
            cases += 1;
            pruned += usize::from(!may);
        }
    }
    assert!(pruned * 5 > cases, "only {pruned} of {cases} pruned");
}

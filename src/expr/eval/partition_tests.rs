//! Tests of `partition`.

use super::*;
use crate::spec::{PartitionField, PrimitiveType, Transform};
use BinaryOp as B;
use Literal as L;
use PrimitiveType as P;

/// A spec of identity fields 1000, 1001, ... (the evaluator only reads field ids).
fn spec(n: i32) -> PartitionSpec {
    let fields = (0..n)
        .map(|i| PartitionField {
            source_id: i + 1,
            field_id: 1000 + i,
            name: format!("p{i}"),
            transform: Transform::Identity,
        })
        .collect();
    PartitionSpec { spec_id: 0, fields }
}

fn p(field_id: i32, ty: P) -> Reference {
    Reference {
        field_id,
        name: format!("p{field_id}"),
        ty,
    }
}

fn bin(op: BinaryOp, term: Reference, value: Literal) -> Predicate {
    Predicate::Binary { op, term, value }
}

fn unary(op: UnaryOp, term: Reference) -> Predicate {
    Predicate::Unary { op, term }
}

fn set(op: SetOp, term: Reference, values: Vec<Literal>) -> Predicate {
    Predicate::Set { op, term, values }
}

fn may(pred: &Predicate, tuple: &[Option<Literal>]) -> bool {
    partition_may_match(pred, &spec(tuple.len() as i32), tuple)
}

#[test]
fn comparisons_with_null_are_null() {
    let x = || p(1000, P::Int);
    let null = [None];
    for op in [B::Lt, B::LtEq, B::Gt, B::GtEq, B::Eq, B::NotEq] {
        assert!(!may(&bin(op, x(), L::Int(5)), &null), "{op:?}");
    }
    assert!(!may(&set(SetOp::In, x(), vec![L::Int(5)]), &null));
    assert!(!may(&set(SetOp::NotIn, x(), vec![L::Int(5)]), &null));
    assert!(may(&unary(UnaryOp::IsNull, x()), &null));
    assert!(!may(&unary(UnaryOp::NotNull, x()), &null));
    // NULL OR TRUE is TRUE; NULL AND TRUE is NULL.
    let eq5 = bin(B::Eq, x(), L::Int(5));
    assert!(may(&eq5.clone().or(unary(UnaryOp::IsNull, x())), &null));
    assert!(!may(
        &Predicate::And(
            Box::new(unary(UnaryOp::IsNull, x())),
            Box::new(bin(B::NotEq, x(), L::Int(5)))
        ),
        &null
    ));
    let five = [Some(L::Int(5))];
    assert!(may(&eq5, &five));
    assert!(!may(&bin(B::NotEq, x(), L::Int(5)), &five));
    assert!(!may(&unary(UnaryOp::IsNull, x()), &five));
}

#[test]
fn several_fields_combine_with_three_valued_logic() {
    let (a, b) = (|| p(1000, P::Int), || p(1001, P::String));
    let tuple = [Some(L::Int(3)), None];
    let a_lt_5 = bin(B::Lt, a(), L::Int(5));
    let b_is_x = bin(B::Eq, b(), L::String("x".into()));
    let and = Predicate::And(Box::new(a_lt_5.clone()), Box::new(b_is_x.clone()));
    let or = Predicate::Or(Box::new(b_is_x.clone()), Box::new(a_lt_5.clone()));
    assert!(!may(&and, &tuple));
    assert!(may(&or, &tuple));
    let or = Predicate::Or(Box::new(b_is_x), Box::new(bin(B::Gt, a(), L::Int(5))));
    assert!(!may(&or, &tuple));
    assert!(may(&Predicate::AlwaysTrue, &tuple));
    assert!(!may(&Predicate::AlwaysFalse, &tuple));
}

#[test]
fn sets() {
    let x = || p(1000, P::Long);
    let t = [Some(L::Long(-7))];
    assert!(may(&set(SetOp::In, x(), vec![L::Long(1), L::Long(-7)]), &t));
    assert!(!may(&set(SetOp::In, x(), vec![L::Long(1)]), &t));
    assert!(!may(&set(SetOp::In, x(), vec![]), &t));
    assert!(!may(&set(SetOp::NotIn, x(), vec![L::Long(-7)]), &t));
    assert!(may(&set(SetOp::NotIn, x(), vec![L::Long(7)]), &t));
    assert!(may(&set(SetOp::NotIn, x(), vec![]), &t));
}

#[test]
fn nan_equals_nothing_and_is_only_nan() {
    let x = || p(1000, P::Double);
    let nan = [Some(L::Double(f64::NAN))];
    let one = [Some(L::Double(1.0))];
    for (pred, on_nan, on_one) in [
        (bin(B::Eq, x(), L::Double(1.0)), false, true),
        (bin(B::Eq, x(), L::Double(f64::NAN)), true, false),
        (bin(B::NotEq, x(), L::Double(1.0)), true, false),
        (bin(B::Lt, x(), L::Double(2.0)), false, true),
        (bin(B::LtEq, x(), L::Double(1.0)), false, true),
        // NaN sorts above everything in Arrow, DataFusion and Java comparators: kept.
        (bin(B::Gt, x(), L::Double(2.0)), true, false),
        (set(SetOp::In, x(), vec![L::Double(1.0)]), false, true),
        (set(SetOp::NotIn, x(), vec![L::Double(1.0)]), true, false),
        (unary(UnaryOp::IsNan, x()), true, false),
        (unary(UnaryOp::NotNan, x()), false, true),
        (unary(UnaryOp::NotNull, x()), true, true),
    ] {
        assert_eq!(may(&pred, &nan), on_nan, "NaN: {pred:?}");
        assert_eq!(may(&pred, &one), on_one, "1.0: {pred:?}");
    }
    assert!(!may(&unary(UnaryOp::IsNan, x()), &[None]));
    assert!(!may(&unary(UnaryOp::NotNan, x()), &[None]));
    // -0 = 0 in IEEE, -0 < 0 in total order: both kept.
    let neg_zero = [Some(L::Double(-0.0))];
    assert!(may(&bin(B::Eq, x(), L::Double(0.0)), &neg_zero));
    assert!(may(&bin(B::Lt, x(), L::Double(0.0)), &neg_zero));
    assert!(!may(&bin(B::Gt, x(), L::Double(0.0)), &neg_zero));
    // float partition values against double literals.
    let f = [Some(L::Float(1.5))];
    assert!(may(&bin(B::Eq, x(), L::Double(1.5)), &f));
    assert!(!may(&bin(B::Gt, x(), L::Double(1.5)), &f));
    assert!(may(
        &unary(UnaryOp::IsNan, x()),
        &[Some(L::Float(f32::NAN))]
    ));
}

#[test]
fn prefixes() {
    let s = || p(1000, P::String);
    let t = [Some(L::String("ñandú".into()))];
    let st = |v: &str| L::String(v.into());
    assert!(may(&bin(B::StartsWith, s(), st("ñan")), &t));
    assert!(!may(&bin(B::StartsWith, s(), st("nan")), &t));
    assert!(may(&bin(B::StartsWith, s(), st("")), &t));
    assert!(!may(&bin(B::NotStartsWith, s(), st("ñan")), &t));
    assert!(may(&bin(B::NotStartsWith, s(), st("ñandúes")), &t));
    assert!(!may(&bin(B::StartsWith, s(), st("a")), &[None]));
    assert!(!may(&bin(B::NotStartsWith, s(), st("a")), &[None]));
    let b = || p(1000, P::Binary);
    let t = [Some(L::Binary(vec![1, 2, 3]))];
    assert!(may(&bin(B::StartsWith, b(), L::Binary(vec![1, 2])), &t));
    assert!(!may(&bin(B::StartsWith, b(), L::Binary(vec![2])), &t));
}

#[test]
fn what_cannot_be_judged_may_match() {
    let t = [Some(L::Int(3))];
    // A field the spec does not have.
    assert!(may(&bin(B::Eq, p(2000, P::Int), L::Int(4)), &t));
    assert!(may(&unary(UnaryOp::IsNull, p(2000, P::Int)), &t));
    // A tuple shorter than the spec.
    assert!(partition_may_match(
        &bin(B::Eq, p(1001, P::Int), L::Int(4)),
        &spec(2),
        &t
    ));
    // A value of another kind.
    assert!(may(
        &bin(B::Eq, p(1000, P::String), L::String("3".into())),
        &t
    ));
    assert!(may(
        &bin(B::StartsWith, p(1000, P::String), L::String("3".into())),
        &t
    ));
    assert!(may(&unary(UnaryOp::IsNan, p(1000, P::Int)), &t));
    // int partition values (written before an int -> long promotion) widen.
    assert!(may(&bin(B::Eq, p(1000, P::Long), L::Long(3)), &t));
    assert!(!may(&bin(B::Gt, p(1000, P::Long), L::Long(3)), &t));
    assert!(!may(
        &bin(B::Eq, p(1000, P::Date), L::Date(4)),
        &[Some(L::Date(3))]
    ));
}

mod property {
    //! For random values and predicates: whenever a row's value makes the source
    //! predicate TRUE, the partition the spec puts it in is kept. Also for the values old
    //! Java writers gave pre-1970 rows, and exactly for identity.

    use super::super::partition_may_match;
    use crate::expr::predicate::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
    use crate::expr::project::project_inclusive;
    use crate::spec::{
        Literal, NestedField, PartitionField, PartitionSpec, PrimitiveType, Schema, Transform,
    };

    const HOUR: i64 = 3_600_000_000;
    const DAY: i64 = 24 * HOUR;

    /// xorshift64: small, deterministic.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next() % (hi - lo + 1) as u64) as i64
        }

        fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
            xs[self.below(xs.len())].clone()
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Kind {
        Int,
        Long,
        Dec,
        Str,
        Date,
        Ts,
        TsNs,
    }

    impl Kind {
        fn ty(self) -> PrimitiveType {
            match self {
                Kind::Int => PrimitiveType::Int,
                Kind::Long => PrimitiveType::Long,
                Kind::Dec => PrimitiveType::Decimal {
                    precision: 9,
                    scale: 2,
                },
                Kind::Str => PrimitiveType::String,
                Kind::Date => PrimitiveType::Date,
                Kind::Ts => PrimitiveType::Timestamp,
                Kind::TsNs => PrimitiveType::TimestampNs,
            }
        }

        fn transforms(self) -> &'static [&'static str] {
            match self {
                Kind::Int | Kind::Long => &[
                    "identity",
                    "bucket[16]",
                    "truncate[4]",
                    "truncate[10]",
                    "void",
                ],
                Kind::Dec => &["identity", "bucket[16]", "truncate[10]", "truncate[4]"],
                Kind::Str => &["identity", "bucket[16]", "truncate[4]", "truncate[2]"],
                Kind::Date => &["identity", "bucket[16]", "day", "month", "year"],
                Kind::Ts | Kind::TsNs => {
                    &["identity", "bucket[16]", "day", "month", "year", "hour"]
                }
            }
        }

        fn value(self, rng: &mut Rng) -> Literal {
            match self {
                Kind::Int if rng.below(8) == 0 => Literal::Int(rng.pick(&[
                    i32::MIN,
                    i32::MIN + 1,
                    i32::MIN + 7,
                    i32::MIN + 8,
                    i32::MAX - 1,
                    i32::MAX,
                ])),
                Kind::Int => Literal::Int(rng.range(-45, 45) as i32),
                Kind::Long if rng.below(8) == 0 => Literal::Long(rng.pick(&[
                    i64::MIN,
                    i64::MIN + 1,
                    i64::MIN + 7,
                    i64::MIN + 8,
                    i64::MAX,
                ])),
                Kind::Long => Literal::Long(rng.range(-45, 45)),
                Kind::Dec => Literal::Decimal(i128::from(rng.range(-300, 300))),
                Kind::Str => Literal::String(string(rng)),
                Kind::Date => Literal::Date(rng.range(-800, 800) as i32),
                Kind::Ts => Literal::Timestamp(micros(rng)),
                Kind::TsNs => {
                    let any = rng.range(0, 999);
                    let sub = rng.pick(&[0, 0, 1, 999, any]);
                    Literal::TimestampNs(micros(rng) * 1000 + sub)
                }
            }
        }
    }

    /// Short strings over a few one- to four-byte characters, often sharing a prefix.
    fn string(rng: &mut Rng) -> String {
        let mut s = String::from(rng.pick(&["", "", "aaaa", "aaé😀"]));
        for _ in 0..rng.below(5) {
            s.push(rng.pick(&['a', 'b', 'é', '😀']));
        }
        s
    }

    /// Microseconds near the epoch (about two years either side), often on a boundary.
    fn micros(rng: &mut Rng) -> i64 {
        let day = rng.range(-800, 800) * DAY;
        let within = match rng.below(5) {
            0 => 0,
            1 => rng.range(0, 23) * HOUR,
            2 => DAY - 1,
            _ => rng.range(0, DAY - 1),
        };
        day + within + rng.pick(&[0, 0, 0, -1, 1])
    }

    fn predicate(rng: &mut Rng, kind: Kind, depth: u32) -> Predicate {
        let x = Reference {
            field_id: 1,
            name: "x".into(),
            ty: kind.ty(),
        };
        match rng.below(if depth == 0 { 4 } else { 6 }) {
            0 => Predicate::Unary {
                op: rng.pick(&[UnaryOp::IsNull, UnaryOp::NotNull]),
                term: x,
            },
            1 => Predicate::Set {
                op: rng.pick(&[SetOp::In, SetOp::NotIn]),
                values: (0..rng.below(4)).map(|_| kind.value(rng)).collect(),
                term: x,
            },
            2 | 3 => {
                let mut ops = vec![
                    BinaryOp::Lt,
                    BinaryOp::LtEq,
                    BinaryOp::Gt,
                    BinaryOp::GtEq,
                    BinaryOp::Eq,
                    BinaryOp::NotEq,
                ];
                if let Kind::Str = kind {
                    ops.extend([BinaryOp::StartsWith, BinaryOp::NotStartsWith]);
                }
                let op = rng.pick(&ops);
                let value = match (kind.value(rng), op) {
                    (Literal::String(s), BinaryOp::StartsWith | BinaryOp::NotStartsWith) => {
                        Literal::String(s.chars().take(rng.below(7)).collect())
                    }
                    (v, _) => v,
                };
                Predicate::Binary { op, term: x, value }
            }
            4 => Predicate::And(
                Box::new(predicate(rng, kind, depth - 1)),
                Box::new(predicate(rng, kind, depth - 1)),
            ),
            _ => Predicate::Or(
                Box::new(predicate(rng, kind, depth - 1)),
                Box::new(predicate(rng, kind, depth - 1)),
            ),
        }
    }

    /// The source predicate on one row's value, in SQL logic (`None` = NULL): written
    /// independently of the evaluator under test.
    fn row(p: &Predicate, v: Option<&Literal>) -> Option<bool> {
        match p {
            Predicate::AlwaysTrue => Some(true),
            Predicate::AlwaysFalse => Some(false),
            Predicate::And(a, b) => match (row(a, v), row(b, v)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Predicate::Or(a, b) => match (row(a, v), row(b, v)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Predicate::Unary { op, .. } => match op {
                UnaryOp::IsNull => Some(v.is_none()),
                UnaryOp::NotNull => Some(v.is_some()),
                UnaryOp::IsNan | UnaryOp::NotNan => panic!("no floats here"),
            },
            Predicate::Binary { op, value, .. } => {
                let v = v?;
                let prefix = || match (v, value) {
                    (Literal::String(s), Literal::String(p)) => s.starts_with(p.as_str()),
                    _ => panic!("prefix of a non-string"),
                };
                let o = v.partial_cmp_same_type(value);
                Some(match op {
                    BinaryOp::StartsWith => prefix(),
                    BinaryOp::NotStartsWith => !prefix(),
                    BinaryOp::Lt => o?.is_lt(),
                    BinaryOp::LtEq => o?.is_le(),
                    BinaryOp::Gt => o?.is_gt(),
                    BinaryOp::GtEq => o?.is_ge(),
                    BinaryOp::Eq => o?.is_eq(),
                    BinaryOp::NotEq => o?.is_ne(),
                })
            }
            Predicate::Set { op, values, .. } => {
                let found = values.contains(v?);
                Some(match op {
                    SetOp::In => found,
                    SetOp::NotIn => !found,
                })
            }
        }
    }

    /// What early Java Iceberg releases wrote: temporal transforms rounded towards zero, so
    /// a negative value is one more unless the row is the first instant of its unit.
    fn old_writer(t: &Transform, ty: &PrimitiveType, v: Option<&Literal>) -> Option<Literal> {
        let spec_value = t.apply(ty, v).unwrap();
        let rounds = match t {
            Transform::Year | Transform::Month | Transform::Hour => true,
            Transform::Day => *ty != PrimitiveType::Date,
            _ => false,
        };
        let previous = match v {
            Some(Literal::Date(x)) => Some(Literal::Date(x - 1)),
            Some(Literal::Timestamp(x)) => Some(Literal::Timestamp(x - 1)),
            Some(Literal::TimestampNs(x)) => Some(Literal::TimestampNs(x - 1)),
            _ => None,
        };
        let at_start = previous.is_none_or(|p| t.apply(ty, Some(&p)).unwrap() != spec_value);
        match spec_value {
            Some(Literal::Int(x)) if rounds && x < 0 && !at_start => Some(Literal::Int(x + 1)),
            Some(Literal::Date(x)) if rounds && x < 0 && !at_start => Some(Literal::Date(x + 1)),
            other => other,
        }
    }

    /// The predicate's values: rows on and next to them hit the projections' edges.
    fn literals(p: &Predicate, out: &mut Vec<Literal>) {
        match p {
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                literals(a, out);
                literals(b, out);
            }
            Predicate::Binary { value, .. } => out.push(value.clone()),
            Predicate::Set { values, .. } => out.extend(values.iter().cloned()),
            _ => {}
        }
    }

    /// `v` moved by `delta` units of its representation (strings: a character added or
    /// removed), saturating.
    fn nudge(v: &Literal, delta: i32) -> Literal {
        let d = i64::from(delta);
        match v {
            Literal::Int(x) => Literal::Int(x.saturating_add(delta)),
            Literal::Date(x) => Literal::Date(x.saturating_add(delta)),
            Literal::Long(x) => Literal::Long(x.saturating_add(d)),
            Literal::Timestamp(x) => Literal::Timestamp(x.saturating_add(d)),
            Literal::TimestampNs(x) => Literal::TimestampNs(x.saturating_add(d)),
            Literal::Decimal(x) => Literal::Decimal(x + i128::from(delta)),
            Literal::String(s) if delta > 0 => Literal::String(format!("{s}a")),
            Literal::String(s) if delta < 0 => {
                let mut s = s.clone();
                s.pop();
                Literal::String(s)
            }
            other => other.clone(),
        }
    }

    fn spec_of(transforms: &[&str]) -> PartitionSpec {
        let fields = transforms
            .iter()
            .zip(1000..)
            .map(|(t, field_id)| PartitionField {
                source_id: 1,
                field_id,
                name: format!("x_{field_id}"),
                transform: Transform::parse(t).unwrap(),
            })
            .collect();
        PartitionSpec { spec_id: 0, fields }
    }

    fn check(kind: Kind, seed: u64) {
        let ty = kind.ty();
        let schema = Schema::new(0, vec![NestedField::optional(1, "x", ty.clone())]);
        let spec = spec_of(kind.transforms());
        let identity = spec_of(&["identity"]);
        let mut rng = Rng(seed);
        let (mut kept, mut pruned) = (0, 0);
        for _ in 0..1500 {
            let pred = predicate(&mut rng, kind, 2);
            let projected = project_inclusive(&pred, &spec, &schema);
            let exact = project_inclusive(&pred, &identity, &schema);
            let mut near = Vec::new();
            literals(&pred, &mut near);
            for _ in 0..20 {
                let v = match rng.below(8) {
                    0 => None,
                    1..4 if !near.is_empty() => {
                        let delta = rng.pick(&[-1, 0, 0, 1]);
                        Some(nudge(&rng.pick(&near), delta))
                    }
                    _ => Some(kind.value(&mut rng)),
                };
                let matches = row(&pred, v.as_ref()) == Some(true);
                let tuple: Vec<_> = spec
                    .fields
                    .iter()
                    .map(|f| f.transform.apply(&ty, v.as_ref()).unwrap())
                    .collect();
                let may = partition_may_match(&projected, &spec, &tuple);
                assert!(
                    may || !matches,
                    "pruned a matching row\n  value {v:?}\n  predicate {pred:?}\n  \
                     projected {projected:?}\n  tuple {tuple:?}"
                );
                let old: Vec<_> = spec
                    .fields
                    .iter()
                    .map(|f| old_writer(&f.transform, &ty, v.as_ref()))
                    .collect();
                assert!(
                    !matches || partition_may_match(&projected, &spec, &old),
                    "pruned an old writer's row\n  value {v:?}\n  predicate {pred:?}\n  \
                     projected {projected:?}\n  tuple {old:?}"
                );
                let by_identity = partition_may_match(&exact, &identity, std::slice::from_ref(&v));
                assert_eq!(by_identity, matches, "identity: {v:?} {pred:?}");
                if may { kept += 1 } else { pruned += 1 }
            }
        }
        // The projection prunes something, not only keeps everything.
        assert!(pruned > 1000, "{kind:?}: kept {kept}, pruned {pruned}");
    }

    #[test]
    fn ints_never_prune_a_matching_row() {
        check(Kind::Int, 0x9E37_79B9_7F4A_7C15);
    }

    #[test]
    fn longs_never_prune_a_matching_row() {
        check(Kind::Long, 0xD1B5_4A32_D192_ED03);
    }

    #[test]
    fn decimals_never_prune_a_matching_row() {
        check(Kind::Dec, 0x5851_F42D_4C95_7F2D);
    }

    #[test]
    fn strings_never_prune_a_matching_row() {
        check(Kind::Str, 0x2545_F491_4F6C_DD1D);
    }

    #[test]
    fn dates_never_prune_a_matching_row() {
        check(Kind::Date, 0x1234_5678_9ABC_DEF1);
    }

    #[test]
    fn timestamps_never_prune_a_matching_row() {
        check(Kind::Ts, 0x0F0F_0F0F_1234_5679);
    }

    #[test]
    fn nanosecond_timestamps_never_prune_a_matching_row() {
        check(Kind::TsNs, 0xA5A5_5A5A_DEAD_BEEF);
    }
}

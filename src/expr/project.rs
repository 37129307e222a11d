//! Inclusive projection (spec: "Scan Planning"; "Partition Transforms"): a predicate on source
//! columns becomes a predicate on a partition spec's fields that is TRUE for every partition
//! that may hold a matching row. It may also be TRUE for partitions that hold none (it only
//! prunes), never the other way round.
//!
//! How each leaf `x op v` projects onto a partition field `p = transform(x)`:
//!
//! | transform | projects | as |
//! |---|---|---|
//! | `identity` | everything | the same test on `p` |
//! | `bucket[N]` | `=`, `IN` | `p = bucket(v)`, `p IN` the buckets |
//! | `truncate[W]` int, long, decimal | `<`, `<=`, `>`, `>=`, `=`, `IN` | `x < v`: `p <= t(v - 1)`; `x <= v`: `p <= t(v)`; `x > v`: `p >= t(v + 1)`; `x >= v`: `p >= t(v)` (1 is one unit of the unscaled decimal) |
//! | `truncate[W]` string, binary | `<`, `<=`, `>`, `>=`, `=`, `IN`, `STARTS WITH`, `NOT STARTS WITH` | `<`/`<=`: `p <= t(v)`; `>`/`>=`: `p >= t(v)`; `STARTS WITH s`: `p = t(s)` when `s` has at least W code points (bytes for binary), else `p STARTS WITH s`; `NOT STARTS WITH s`: the same test when `s` is shorter than W, `p != s` when exactly W long |
//! | `year`, `month`, `day`, `hour` | `<`, `<=`, `>`, `>=`, `=`, `IN` | as truncate on ints, the unit being the source's (a day for dates, a microsecond or nanosecond for timestamps), then widened for pre-1970 values (below) |
//! | `void`, unknown | nothing | |
//!
//! `IS NULL` and `IS NOT NULL` project to the same test on `p` for every transform but `void`
//! (a transform maps null to null and only null to null); `isnan` and `NOT isnan` project only
//! through `identity`. `!=`, `NOT IN` and (but for the truncate cases above) `NOT STARTS WITH`
//! project only through `identity`: the negation of a lossy test says nothing about the other
//! rows of a partition. A leaf on a column the spec does not partition is `AlwaysTrue`; a
//! column partitioned by several fields (an evolved spec) gets the AND of their projections.
//! A leaf whose bound cannot be computed (a transform that fails on the value, `x < MIN`)
//! is `AlwaysTrue` too.
//!
//! **Values before 1970.** The spec's temporal transforms round down (`1969-12-31T12:00` is
//! day -1), but early Java Iceberg releases rounded towards zero (and other writers have had
//! the same bug since), so their files carry day 0 for that row: one more than the spec's
//! value whenever that is negative and the row is not the first instant of its year, month,
//! day or hour. Java's reader widens its
//! projections for that (`ProjectionUtil.fixInclusiveTimeProjection`), and so do we: an upper
//! bound `p <= t` with `t < 0` becomes `p <= t + 1`, and each negative `t` of an `=` or `IN`
//! also admits `t + 1`. Lower bounds need nothing (the old values are never smaller). `day` of
//! a `date` is exact in every writer and is not widened.
//!
//! **Java's int arithmetic.** `truncate[W]` of an int or long wraps at the type's minimum as
//! Java's does (`truncate[10]` of `i32::MIN` is `2147483646`), so the lowest, partial block
//! of values lands in one partition with a huge value. Upper bounds also admit that partition
//! and a lower bound that falls in that block projects to `AlwaysTrue`.

use super::predicate::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
use crate::spec::{Literal, PartitionField, PartitionSpec, PrimitiveType, Schema, Transform};

/// The inclusive projection of `predicate` (on source columns) onto the partition fields of
/// `spec`: a predicate over the partition tuple that is true for every partition that may hold
/// a row matching `predicate`. References in the result use the PARTITION field's id
/// (`PartitionField::field_id`), name and result type (`Transform::result_type`). Parts on
/// columns the spec does not partition by become AlwaysTrue.
///
/// The module docs list what each transform projects. `schema` supplies the source columns'
/// types (the predicate's own types are used for a column it does not have).
pub fn project_inclusive(
    predicate: &Predicate,
    spec: &PartitionSpec,
    schema: &Schema,
) -> Predicate {
    match predicate {
        Predicate::AlwaysTrue => Predicate::AlwaysTrue,
        Predicate::AlwaysFalse => Predicate::AlwaysFalse,
        Predicate::And(a, b) => {
            project_inclusive(a, spec, schema).and(project_inclusive(b, spec, schema))
        }
        Predicate::Or(a, b) => {
            project_inclusive(a, spec, schema).or(project_inclusive(b, spec, schema))
        }
        Predicate::Unary { term, .. }
        | Predicate::Binary { term, .. }
        | Predicate::Set { term, .. } => spec
            .fields
            .iter()
            .filter(|f| f.source_id == term.field_id)
            .map(|f| project_leaf(predicate, term, f, schema))
            .fold(Predicate::AlwaysTrue, Predicate::and),
    }
}

/// Projects one leaf on `term` through one partition field whose source is `term`.
fn project_leaf(
    leaf: &Predicate,
    term: &Reference,
    field: &PartitionField,
    schema: &Schema,
) -> Predicate {
    let source = schema
        .field_by_id(field.source_id)
        .and_then(|f| f.field_type.as_primitive())
        .unwrap_or(&term.ty);
    let Ok(ty) = field.transform.result_type(source) else {
        return Predicate::AlwaysTrue;
    };
    let target = Target {
        transform: &field.transform,
        source: &term.ty,
        part: Reference {
            field_id: field.field_id,
            name: field.name.clone(),
            ty,
        },
    };
    match (&field.transform, leaf) {
        (Transform::Void | Transform::Unknown(_), _) => Predicate::AlwaysTrue,
        (Transform::Identity, _) => target.rebind(leaf),
        (_, Predicate::Unary { op, .. }) => match op {
            UnaryOp::IsNull | UnaryOp::NotNull => target.rebind(leaf),
            UnaryOp::IsNan | UnaryOp::NotNan => Predicate::AlwaysTrue,
        },
        (_, Predicate::Binary { op, value, .. }) => target.binary(*op, value),
        (_, Predicate::Set { op, values, .. }) => match op {
            SetOp::In => target.set_in(values),
            SetOp::NotIn => Predicate::AlwaysTrue,
        },
        (_, _) => Predicate::AlwaysTrue,
    }
}

/// One partition field, receiving the projections of leaves on its source column.
struct Target<'a> {
    transform: &'a Transform,
    /// The source column's type (the type of the leaf's values).
    source: &'a PrimitiveType,
    /// The partition field.
    part: Reference,
}

impl Target<'_> {
    /// The same leaf on the partition field (exact for `identity`, and for the null tests).
    fn rebind(&self, leaf: &Predicate) -> Predicate {
        let term = self.part.clone();
        match leaf {
            Predicate::Unary { op, .. } => Predicate::Unary { op: *op, term },
            Predicate::Binary { op, value, .. } => Predicate::Binary {
                op: *op,
                term,
                value: value.clone(),
            },
            Predicate::Set { op, values, .. } => Predicate::Set {
                op: *op,
                term,
                values: values.clone(),
            },
            other => other.clone(),
        }
    }

    fn binary(&self, op: BinaryOp, v: &Literal) -> Predicate {
        match self.transform {
            Transform::Bucket(_) if op == BinaryOp::Eq => self.set_in(std::slice::from_ref(v)),
            Transform::Truncate(w) => match self.source {
                PrimitiveType::String | PrimitiveType::Binary => self.truncate_bytes(*w, op, v),
                _ => self.truncate_number(op, v),
            },
            Transform::Year | Transform::Month | Transform::Day | Transform::Hour => {
                self.temporal(op, v)
            }
            _ => Predicate::AlwaysTrue,
        }
    }

    /// `truncate[W]` of an int, long or decimal.
    fn truncate_number(&self, op: BinaryOp, v: &Literal) -> Predicate {
        match op {
            BinaryOp::Lt | BinaryOp::LtEq => {
                let Some(bound) = bound(op, v) else {
                    return Predicate::AlwaysTrue;
                };
                let upper = self.compare(BinaryOp::LtEq, self.apply(&bound));
                match self.wrapped_lowest_block() {
                    Some(wrapped) => upper.or(self.compare(BinaryOp::Eq, Some(wrapped))),
                    None => upper,
                }
            }
            BinaryOp::Gt | BinaryOp::GtEq => match bound(op, v) {
                Some(bound) => match self.apply(&bound) {
                    Some(t) if !wrapped(&bound, &t) => self.compare(BinaryOp::GtEq, Some(t)),
                    _ => Predicate::AlwaysTrue,
                },
                None => Predicate::AlwaysTrue,
            },
            BinaryOp::Eq => self.set_in(std::slice::from_ref(v)),
            _ => Predicate::AlwaysTrue,
        }
    }

    /// The partition value of the lowest block of ints or longs when truncating them wraps
    /// around (Java's arithmetic), if it does.
    fn wrapped_lowest_block(&self) -> Option<Literal> {
        let min = match self.source {
            PrimitiveType::Int => Literal::Int(i32::MIN),
            PrimitiveType::Long => Literal::Long(i64::MIN),
            _ => return None,
        };
        self.apply(&min).filter(|t| wrapped(&min, t))
    }

    /// `truncate[W]` of a string (W code points) or binary (W bytes).
    fn truncate_bytes(&self, width: u32, op: BinaryOp, v: &Literal) -> Predicate {
        let len = match v {
            Literal::String(s) => s.chars().count(),
            Literal::Binary(b) => b.len(),
            _ => return Predicate::AlwaysTrue,
        };
        let width = usize::try_from(width).unwrap_or(usize::MAX);
        let same = |op| Predicate::Binary {
            op,
            term: self.part.clone(),
            value: v.clone(),
        };
        match op {
            BinaryOp::Lt | BinaryOp::LtEq => self.compare(BinaryOp::LtEq, self.apply(v)),
            BinaryOp::Gt | BinaryOp::GtEq => self.compare(BinaryOp::GtEq, self.apply(v)),
            BinaryOp::Eq => self.set_in(std::slice::from_ref(v)),
            // A prefix shorter than W is a prefix of the partition value too; a longer one
            // fixes the whole partition value.
            BinaryOp::StartsWith if len < width => same(BinaryOp::StartsWith),
            BinaryOp::StartsWith => self.set_in(std::slice::from_ref(v)),
            // Exact: `x` starts with `s` iff `t(x)` does (shorter) or is `s` (as long as W).
            BinaryOp::NotStartsWith if len < width => same(BinaryOp::NotStartsWith),
            BinaryOp::NotStartsWith if len == width => same(BinaryOp::NotEq),
            _ => Predicate::AlwaysTrue,
        }
    }

    /// `year`, `month`, `day` and `hour`.
    fn temporal(&self, op: BinaryOp, v: &Literal) -> Predicate {
        match op {
            BinaryOp::Lt | BinaryOp::LtEq => match bound(op, v).and_then(|b| self.apply(&b)) {
                Some(t) => {
                    let widened = self.old_writer_value(&t).unwrap_or(t);
                    self.compare(BinaryOp::LtEq, Some(widened))
                }
                None => Predicate::AlwaysTrue,
            },
            BinaryOp::Gt | BinaryOp::GtEq => {
                let t = bound(op, v).and_then(|b| self.apply(&b));
                self.compare(BinaryOp::GtEq, t)
            }
            BinaryOp::Eq => self.set_in(std::slice::from_ref(v)),
            _ => Predicate::AlwaysTrue,
        }
    }

    /// The value a writer that rounds towards zero may have written for a row whose spec value
    /// is `t`, when that differs (see the module docs): `t + 1` for a negative `t`.
    fn old_writer_value(&self, t: &Literal) -> Option<Literal> {
        let rounded_towards_zero = match self.transform {
            Transform::Year | Transform::Month | Transform::Hour => true,
            Transform::Day => *self.source != PrimitiveType::Date,
            _ => false,
        };
        match t {
            _ if !rounded_towards_zero => None,
            Literal::Int(x) if *x < 0 => Some(Literal::Int(x + 1)),
            Literal::Date(x) if *x < 0 => Some(Literal::Date(x + 1)),
            _ => None,
        }
    }

    /// `p IN` the transformed values (`p =` for one); `AlwaysTrue` when one cannot be
    /// transformed.
    fn set_in(&self, values: &[Literal]) -> Predicate {
        let mut out = Vec::with_capacity(values.len());
        for v in values {
            let Some(t) = self.apply(v) else {
                return Predicate::AlwaysTrue;
            };
            out.extend(self.old_writer_value(&t));
            out.push(t);
        }
        out.sort_by(|a, b| {
            a.partial_cmp_same_type(b)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        out.dedup();
        let term = self.part.clone();
        match <[Literal; 1]>::try_from(out) {
            Ok([value]) => Predicate::Binary {
                op: BinaryOp::Eq,
                term,
                value,
            },
            Err(values) => Predicate::Set {
                op: SetOp::In,
                term,
                values,
            },
        }
    }

    /// `p op value`, or `AlwaysTrue` without a value.
    fn compare(&self, op: BinaryOp, value: Option<Literal>) -> Predicate {
        match value {
            Some(value) => Predicate::Binary {
                op,
                term: self.part.clone(),
                value,
            },
            None => Predicate::AlwaysTrue,
        }
    }

    fn apply(&self, v: &Literal) -> Option<Literal> {
        self.transform.apply(self.source, Some(v)).ok().flatten()
    }
}

/// The inclusive bound on the source for `x op v`: `v - 1` for `<`, `v + 1` for `>`, `v` for
/// `<=` and `>=`, one unit of the value's own representation (a day, microsecond, nanosecond,
/// unscaled decimal unit). `None` past the type's range (or for other kinds of value).
fn bound(op: BinaryOp, v: &Literal) -> Option<Literal> {
    let delta: i32 = match op {
        BinaryOp::Lt => -1,
        BinaryOp::Gt => 1,
        _ => return Some(v.clone()),
    };
    let wide = i64::from(delta);
    Some(match v {
        Literal::Int(x) => Literal::Int(x.checked_add(delta)?),
        Literal::Date(x) => Literal::Date(x.checked_add(delta)?),
        Literal::Long(x) => Literal::Long(x.checked_add(wide)?),
        Literal::Timestamp(x) => Literal::Timestamp(x.checked_add(wide)?),
        Literal::Timestamptz(x) => Literal::Timestamptz(x.checked_add(wide)?),
        Literal::TimestampNs(x) => Literal::TimestampNs(x.checked_add(wide)?),
        Literal::TimestamptzNs(x) => Literal::TimestamptzNs(x.checked_add(wide)?),
        Literal::Decimal(x) => Literal::Decimal(x.checked_add(i128::from(delta))?),
        _ => return None,
    })
}

/// Whether truncating `v` to `t` wrapped around (a truncation never increases a value).
fn wrapped(v: &Literal, t: &Literal) -> bool {
    t.partial_cmp_same_type(v) == Some(std::cmp::Ordering::Greater)
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;

//! Stage 2 pruning by partition tuple: a predicate from [`crate::expr::project`] (over
//! partition field ids) against one data file's partition values.
//!
//! Evaluation follows SQL's three-valued logic, with `AND` the minimum and `OR` the maximum of
//! FALSE < NULL < TRUE, and the file is kept only when the result is TRUE:
//!
//! | partition value `p` | `p = 5` | `p IS NULL` | `p IN (5, 6)` | `p NOT IN (5)` | `isnan(p)` |
//! |---|---|---|---|---|---|
//! | `5` | TRUE | FALSE | TRUE | FALSE | (not a float) TRUE |
//! | `7` | FALSE | FALSE | FALSE | TRUE | (not a float) TRUE |
//! | NULL | NULL | TRUE | NULL | NULL | NULL |
//!
//! A leaf that cannot be judged is TRUE (may match): a field id the spec does not have, a
//! value of another kind than the literal (other than int/long and float/double, which are
//! widened), `isnan` on a value that is not a float.
//!
//! **Floats.** IEEE comparison (NaN equals and orders with nothing, `-0 = 0`) and the total
//! order that Arrow, DataFusion and Java Iceberg's comparators use (NaN above everything,
//! `-0 < 0`) disagree on NaN and signed zeros. A comparison is TRUE when it holds in either,
//! so a partition is never pruned for a row that either semantics would return. `isnan` is
//! TRUE only for NaN.

use std::cmp::Ordering;

use crate::expr::predicate::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
use crate::spec::{Literal, PartitionSpec};

/// Whether a partition tuple (values in spec field order, as manifests store them; `None` =
/// null) may hold rows matching `projected` (a predicate over partition field ids from
/// `project_inclusive`). Evaluated with SQL three-valued logic on the tuple's values: returns
/// false only when the predicate is FALSE or NULL for the tuple.
///
/// ```
/// use icefloe::expr::eval::partition::partition_may_match;
/// use icefloe::expr::{BinaryOp, Predicate, Reference};
/// use icefloe::spec::{Literal, PartitionField, PartitionSpec, PrimitiveType, Transform};
///
/// let spec = PartitionSpec {
///     spec_id: 0,
///     fields: vec![PartitionField {
///         source_id: 1,
///         field_id: 1000,
///         name: "x_trunc".into(),
///         transform: Transform::Truncate(10),
///     }],
/// };
/// let p = Predicate::Binary {
///     op: BinaryOp::LtEq,
///     term: Reference { field_id: 1000, name: "x_trunc".into(), ty: PrimitiveType::Int },
///     value: Literal::Int(0),
/// };
/// assert!(partition_may_match(&p, &spec, &[Some(Literal::Int(-10))]));
/// assert!(!partition_may_match(&p, &spec, &[Some(Literal::Int(10))]));
/// assert!(!partition_may_match(&p, &spec, &[None]));
/// ```
pub fn partition_may_match(
    projected: &Predicate,
    spec: &PartitionSpec,
    partition: &[Option<Literal>],
) -> bool {
    let tuple = Tuple {
        spec,
        values: partition,
    };
    tuple.eval(projected) == Truth::True
}

/// A truth value of SQL's three-valued logic, ordered so that `AND` is `min` and `OR` `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Truth {
    False,
    Null,
    True,
}

impl From<bool> for Truth {
    fn from(b: bool) -> Self {
        if b { Truth::True } else { Truth::False }
    }
}

/// One partition tuple of one spec.
struct Tuple<'a> {
    spec: &'a PartitionSpec,
    values: &'a [Option<Literal>],
}

impl Tuple<'_> {
    fn eval(&self, p: &Predicate) -> Truth {
        match p {
            Predicate::AlwaysTrue => Truth::True,
            Predicate::AlwaysFalse => Truth::False,
            Predicate::And(a, b) => match self.eval(a) {
                Truth::False => Truth::False,
                left => left.min(self.eval(b)),
            },
            Predicate::Or(a, b) => match self.eval(a) {
                Truth::True => Truth::True,
                left => left.max(self.eval(b)),
            },
            Predicate::Unary { op, term } => match self.value(term) {
                Some(v) => unary(*op, v),
                None => Truth::True,
            },
            Predicate::Binary { op, term, value } => match self.value(term) {
                Some(Some(v)) => binary(*op, v, value),
                Some(None) => Truth::Null,
                None => Truth::True,
            },
            Predicate::Set { op, term, values } => match self.value(term) {
                Some(Some(v)) => set(*op, v, values),
                Some(None) => Truth::Null,
                None => Truth::True,
            },
        }
    }

    /// The tuple's value of the referenced partition field (`Some(None)` for null); `None`
    /// when the spec has no such field or the tuple is too short.
    fn value(&self, term: &Reference) -> Option<Option<&Literal>> {
        let i = self
            .spec
            .fields
            .iter()
            .position(|f| f.field_id == term.field_id)?;
        self.values.get(i).map(Option::as_ref)
    }
}

fn unary(op: UnaryOp, v: Option<&Literal>) -> Truth {
    match (op, v) {
        (UnaryOp::IsNull, v) => v.is_none().into(),
        (UnaryOp::NotNull, v) => v.is_some().into(),
        (UnaryOp::IsNan | UnaryOp::NotNan, None) => Truth::Null,
        (UnaryOp::IsNan, Some(v)) => is_nan(v).map_or(Truth::True, Truth::from),
        (UnaryOp::NotNan, Some(v)) => is_nan(v).map_or(Truth::True, |nan| (!nan).into()),
    }
}

fn binary(op: BinaryOp, v: &Literal, literal: &Literal) -> Truth {
    match op {
        BinaryOp::StartsWith => starts_with(v, literal).map_or(Truth::True, Truth::from),
        BinaryOp::NotStartsWith => {
            starts_with(v, literal).map_or(Truth::True, |starts| (!starts).into())
        }
        _ => compare(op, v, literal),
    }
}

/// `v IN values` is TRUE when some value equals `v`; `v NOT IN values` when none does.
fn set(op: SetOp, v: &Literal, values: &[Literal]) -> Truth {
    match op {
        SetOp::In => values
            .iter()
            .map(|x| compare(BinaryOp::Eq, v, x))
            .max()
            .unwrap_or(Truth::False),
        SetOp::NotIn => values
            .iter()
            .map(|x| compare(BinaryOp::NotEq, v, x))
            .min()
            .unwrap_or(Truth::True),
    }
}

/// `v op literal` for the comparison operators; TRUE when the values cannot be compared.
fn compare(op: BinaryOp, v: &Literal, literal: &Literal) -> Truth {
    match orderings(v, literal) {
        Some((ieee, total)) => (holds(op, ieee) || holds(op, Some(total))).into(),
        None => Truth::True,
    }
}

/// How `a` compares with `b`: the IEEE ordering (`None` when a float is NaN) and the total
/// one, which differ only for floats; `None` for values of different kinds.
fn orderings(a: &Literal, b: &Literal) -> Option<(Option<Ordering>, Ordering)> {
    if let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) {
        return Some((x.partial_cmp(&y), x.total_cmp(&y)));
    }
    let total = match (as_i64(a), as_i64(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.partial_cmp_same_type(b)?,
    };
    Some((Some(total), total))
}

/// Whether the comparison `op` holds for an ordering (`None`: unordered, only `!=` holds).
fn holds(op: BinaryOp, ordering: Option<Ordering>) -> bool {
    let Some(o) = ordering else {
        return op == BinaryOp::NotEq;
    };
    match op {
        BinaryOp::Lt => o.is_lt(),
        BinaryOp::LtEq => o.is_le(),
        BinaryOp::Gt => o.is_gt(),
        BinaryOp::GtEq => o.is_ge(),
        BinaryOp::Eq => o.is_eq(),
        BinaryOp::NotEq => o.is_ne(),
        // Not comparisons; `binary` never sends them here. May match.
        BinaryOp::StartsWith | BinaryOp::NotStartsWith => true,
    }
}

fn as_f64(v: &Literal) -> Option<f64> {
    match v {
        Literal::Float(x) => Some(f64::from(*x)),
        Literal::Double(x) => Some(*x),
        _ => None,
    }
}

/// ints and longs (a column promoted from int to long keeps int partition values).
fn as_i64(v: &Literal) -> Option<i64> {
    match v {
        Literal::Int(x) => Some(i64::from(*x)),
        Literal::Long(x) => Some(*x),
        _ => None,
    }
}

fn is_nan(v: &Literal) -> Option<bool> {
    as_f64(v).map(f64::is_nan)
}

/// Whether `v` starts with `prefix` (strings, or bytes of binary and fixed values); `None`
/// for other kinds.
fn starts_with(v: &Literal, prefix: &Literal) -> Option<bool> {
    match (v, prefix) {
        (Literal::String(s), Literal::String(p)) => Some(s.starts_with(p.as_str())),
        (Literal::Binary(b) | Literal::Fixed(b), Literal::Binary(p) | Literal::Fixed(p)) => {
            Some(b.starts_with(p))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;

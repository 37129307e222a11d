//! DataFusion `Expr` -> [`Predicate`]: exact or not at all.
//!
//! [`convert`] binds a filter over a table's read schema to field ids. The result selects
//! exactly the rows where DataFusion evaluates the filter to TRUE, or there is no result: a
//! conversion that is only "roughly right" would let a pruning stage skip files with matching
//! rows (or, with exact pushdown, return wrong answers).
//!
//! What this takes care of:
//! - Three-valued logic. `NOT` is pushed down while converting: each node is asked for its
//!   TRUE rows or its FALSE rows. `x IN (1, NULL)` is TRUE where `x = 1` but never FALSE, so
//!   `NOT (x IN (1, NULL))` matches nothing (not `x != 1`); `x > NULL` is neither, so
//!   `NOT (x > NULL) OR x = 1` is `x = 1`.
//! - Casts DataFusion's type coercion wraps around a column. A cast is looked through only when
//!   it is injective and order-preserving (`int -> long`, `float -> double`, decimal widening,
//!   string and binary encodings, finer timestamp units, `date -> timestamp`), or, for
//!   `long -> double` and `decimal(P <= 15) -> double`, when the literal lies where the cast is
//!   exact. Casts that could overflow are refused under `TRY_CAST` (it would give NULL).
//! - Literals the column's type cannot hold. The comparison is rewritten against the nearest
//!   column values: `CAST(int_col AS BIGINT) < 3000000000` is `int_col <= 2147483647`,
//!   `CAST(long_col AS DOUBLE) < 2.5` is `long_col <= 2`, `ts_us > <ns literal>` rounds to
//!   microseconds, and `=` a value the column cannot hold matches nothing.
//! - Zones: `timestamptz` columns are UTC in Arrow, so an instant is compared as is; a zoned
//!   literal against a zone-less column (or the reverse) converts only when the zone is UTC.
//!
//! Floats have DataFusion's semantics, which evaluators must share: comparisons follow IEEE 754
//! total order (`NaN` above `+inf`, so `x > 5` is TRUE for `NaN`; a negative `NaN` below
//! `-inf`) except that `-0.0 = 0.0` (zero literals are written as `0.0`). DataFusion's `IN`
//! compares bit for bit, so float `IN` lists holding a zero are not converted, nor are
//! comparisons with a `NaN` literal.
//!
//! Not converted: nested fields, expressions over columns (`x + 1`, `lower(s)`), column against
//! column, `ILIKE`, `SIMILAR TO`, `LIKE` patterns other than `'prefix%'` or wildcard-free ones
//! (and any with `\` or an escape character), lossy or narrowing casts.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{Between, BinaryExpr, InList, Like, ScalarFunction};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, Operator};

use super::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
use crate::spec::{Literal, PrimitiveType, Schema};
use crate::to_arrow::primitive_to_arrow;

/// A LIKE pattern as (literal prefix, whether a trailing run of `%` follows): `ab%` is
/// (`ab`, true), `ab` is (`ab`, false), and `c\_%` (what DataFusion makes of
/// `starts_with(c, 'c_')`) is (`c_`, true). `None` for any other wildcard, and for escapes
/// other than the backslash (arrow's) before `%`, `_` or itself.
fn like_prefix(pattern: &str, escape: Option<char>) -> Option<(String, bool)> {
    if escape.is_some_and(|e| e != '\\') {
        return None;
    }
    let mut prefix = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                escaped @ ('%' | '_' | '\\') => prefix.push(escaped),
                _ => return None,
            },
            '%' => return chars.all(|c| c == '%').then_some((prefix, true)),
            '_' => return None,
            other => prefix.push(other),
        }
    }
    Some((prefix, false))
}

/// Converts a DataFusion filter over a table's read schema into a bound Iceberg predicate.
/// Returns `None` when the filter (or a part that cannot be dropped safely) cannot be
/// converted exactly.
///
/// Columns are the read schema's top-level primitive fields, by name.
pub fn convert(expr: &Expr, schema: &Schema) -> Option<Predicate> {
    Converter { schema }.rows(expr, false)
}

/// Converts a conjunction of filters: converts each conjunct separately and ANDs the ones that
/// convert (dropping an unconvertible conjunct only widens the result, which is safe for
/// pruning). Returns the predicate and, per input filter, whether it converted exactly.
pub fn convert_filters(filters: &[Expr], schema: &Schema) -> (Predicate, Vec<bool>) {
    let mut all = Predicate::AlwaysTrue;
    let mut exact = Vec::with_capacity(filters.len());
    for filter in filters {
        let mut filter_exact = true;
        for conjunct in split_conjunction(filter) {
            match convert(conjunct, schema) {
                Some(p) => all = all.and(p),
                None => filter_exact = false,
            }
        }
        exact.push(filter_exact);
    }
    (all, exact)
}

/// A comparison operator, written with the column on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Lt,
    LtEq,
    Gt,
    GtEq,
    Eq,
    NotEq,
}

impl Cmp {
    fn from_operator(op: Operator) -> Option<Cmp> {
        Some(match op {
            Operator::Lt => Cmp::Lt,
            Operator::LtEq => Cmp::LtEq,
            Operator::Gt => Cmp::Gt,
            Operator::GtEq => Cmp::GtEq,
            Operator::Eq => Cmp::Eq,
            Operator::NotEq => Cmp::NotEq,
            _ => return None,
        })
    }

    /// The operator with its operands swapped: `5 < x` is `x > 5`.
    fn flip(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::LtEq => Cmp::GtEq,
            Cmp::Gt => Cmp::Lt,
            Cmp::GtEq => Cmp::LtEq,
            Cmp::Eq | Cmp::NotEq => self,
        }
    }

    /// The operator that is TRUE exactly where this one is FALSE (both are NULL on NULL).
    fn invert(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::GtEq,
            Cmp::LtEq => Cmp::Gt,
            Cmp::Gt => Cmp::LtEq,
            Cmp::GtEq => Cmp::Lt,
            Cmp::Eq => Cmp::NotEq,
            Cmp::NotEq => Cmp::Eq,
        }
    }

    fn to_binary_op(self) -> BinaryOp {
        match self {
            Cmp::Lt => BinaryOp::Lt,
            Cmp::LtEq => BinaryOp::LtEq,
            Cmp::Gt => BinaryOp::Gt,
            Cmp::GtEq => BinaryOp::GtEq,
            Cmp::Eq => BinaryOp::Eq,
            Cmp::NotEq => BinaryOp::NotEq,
        }
    }
}

/// How a column is seen through the casts around it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CastKind {
    /// No cast, or only injective, order-preserving ones.
    Lossless,
    /// An integer column read as a float: exact for literals below `limit` in magnitude.
    IntAsFloat { limit: f64 },
    /// A `decimal(P <= 15, S)` column read as a double: injective and monotonic.
    DecimalAsDouble,
}

/// A column, possibly seen through casts.
struct Term {
    reference: Reference,
    /// The Arrow type after the casts.
    view: DataType,
    cast: CastKind,
}

/// A literal placed among a column's values.
enum Fit {
    /// The literal is NULL.
    Null,
    /// The column type holds the literal exactly.
    Exact(Literal),
    /// The literal falls strictly between two column values (`None`: past the type's range).
    Between {
        below: Option<Literal>,
        above: Option<Literal>,
    },
}

struct Converter<'a> {
    schema: &'a Schema,
}

impl Converter<'_> {
    /// The rows where `e` is TRUE (`negated == false`) or FALSE (`negated == true`).
    fn rows(&self, e: &Expr, negated: bool) -> Option<Predicate> {
        match e {
            Expr::Alias(a) => self.rows(&a.expr, negated),
            Expr::Not(inner) => self.rows(inner, !negated),
            Expr::BinaryExpr(b) => self.binary(b, negated),
            Expr::Literal(v, _) => constant(v, negated),
            Expr::Column(_) => self.boolean_is(e, !negated),
            Expr::IsNull(x) | Expr::IsUnknown(x) => self.null_test(x, !negated),
            Expr::IsNotNull(x) | Expr::IsNotUnknown(x) => self.null_test(x, negated),
            Expr::IsTrue(x) => self.truth_test(x, true, negated),
            Expr::IsNotTrue(x) => self.truth_test(x, true, !negated),
            Expr::IsFalse(x) => self.truth_test(x, false, negated),
            Expr::IsNotFalse(x) => self.truth_test(x, false, !negated),
            Expr::Between(b) => self.between(b, negated),
            Expr::InList(l) => self.in_list(l, negated),
            Expr::Like(l) => self.like(l, negated),
            Expr::ScalarFunction(f) => self.function(f, negated),
            _ => None,
        }
    }

    fn binary(&self, b: &BinaryExpr, negated: bool) -> Option<Predicate> {
        match b.op {
            Operator::And | Operator::Or => {
                let left = self.rows(&b.left, negated)?;
                let right = self.rows(&b.right, negated)?;
                // De Morgan: the FALSE rows of `a AND b` are the FALSE rows of either side.
                Some(if (b.op == Operator::And) != negated {
                    left.and(right)
                } else {
                    left.or(right)
                })
            }
            Operator::IsDistinctFrom | Operator::IsNotDistinctFrom => {
                let (term, _, value) = self.sides(&b.left, Cmp::Eq, &b.right)?;
                let equal = (b.op == Operator::IsNotDistinctFrom) != negated;
                if value.is_null() {
                    let op = if equal {
                        UnaryOp::IsNull
                    } else {
                        UnaryOp::NotNull
                    };
                    return Some(unary(op, &term));
                }
                if equal {
                    compare(&term, Cmp::Eq, &value)
                } else {
                    Some(compare(&term, Cmp::NotEq, &value)?.or(unary(UnaryOp::IsNull, &term)))
                }
            }
            op => {
                let cmp = Cmp::from_operator(op)?;
                let cmp = if negated { cmp.invert() } else { cmp };
                let (term, cmp, value) = self.sides(&b.left, cmp, &b.right)?;
                compare(&term, cmp, &value)
            }
        }
    }

    /// A column and a literal, in either order; `cmp` is flipped when the column is on the right.
    fn sides(&self, left: &Expr, cmp: Cmp, right: &Expr) -> Option<(Term, Cmp, ScalarValue)> {
        if let (Some(term), Some(value)) = (self.term(left), literal(right)) {
            return Some((term, cmp, value));
        }
        Some((self.term(right)?, cmp.flip(), literal(left)?))
    }

    /// The rows where a boolean column is `value`.
    fn boolean_is(&self, e: &Expr, value: bool) -> Option<Predicate> {
        let term = self.term(e)?;
        let boolean = term.reference.ty == PrimitiveType::Boolean;
        boolean.then_some(Predicate::Binary {
            op: BinaryOp::Eq,
            term: term.reference,
            value: Literal::Boolean(value),
        })
    }

    fn null_test(&self, e: &Expr, is_null: bool) -> Option<Predicate> {
        let op = if is_null {
            UnaryOp::IsNull
        } else {
            UnaryOp::NotNull
        };
        Some(unary(op, &self.term(e)?))
    }

    /// The rows where `e IS <value>` (`negated`: `e IS NOT <value>`, which includes NULLs).
    fn truth_test(&self, e: &Expr, value: bool, negated: bool) -> Option<Predicate> {
        if !negated {
            return self.rows(e, !value);
        }
        let other = self.boolean_is(e, !value)?;
        Some(other.or(unary(UnaryOp::IsNull, &self.term(e)?)))
    }

    fn between(&self, b: &Between, negated: bool) -> Option<Predicate> {
        let term = self.term(&b.expr)?;
        let (low, high) = (literal(&b.low)?, literal(&b.high)?);
        Some(if b.negated == negated {
            compare(&term, Cmp::GtEq, &low)?.and(compare(&term, Cmp::LtEq, &high)?)
        } else {
            compare(&term, Cmp::Lt, &low)?.or(compare(&term, Cmp::Gt, &high)?)
        })
    }

    /// `x IN (..)` is TRUE where `x` equals a value and FALSE where it equals none and the list
    /// has no NULL (with a NULL it is NULL instead).
    fn in_list(&self, l: &InList, negated: bool) -> Option<Predicate> {
        let term = self.term(&l.expr)?;
        let mut values: Vec<Literal> = Vec::new();
        let mut has_null = false;
        for item in &l.list {
            match fit(&term, &literal(item)?)? {
                Fit::Null => has_null = true,
                Fit::Exact(v) => {
                    let seen = values
                        .iter()
                        .any(|o| o.partial_cmp_same_type(&v) == Some(Ordering::Equal));
                    if !seen {
                        values.push(v);
                    }
                }
                // No column value equals it.
                Fit::Between { .. } => {}
            }
        }
        // DataFusion's IN compares floats bit for bit (`-0.0` is not `0.0`), unlike `=`.
        let zero = |v: &Literal| {
            matches!(v, Literal::Float(f) if *f == 0.0)
                || matches!(v, Literal::Double(f) if *f == 0.0)
        };
        if values.iter().any(zero) {
            return None;
        }
        if l.negated == negated {
            Some(set(SetOp::In, &term, values))
        } else if has_null {
            Some(Predicate::AlwaysFalse)
        } else {
            Some(set(SetOp::NotIn, &term, values))
        }
    }

    fn like(&self, l: &Like, negated: bool) -> Option<Predicate> {
        if l.case_insensitive {
            return None;
        }
        let term = self.term(&l.expr)?;
        let pattern = literal(&l.pattern)?;
        if pattern.is_null() {
            return Some(Predicate::AlwaysFalse);
        }
        let pattern = string_value(&pattern)?;
        let (body, wildcard) = like_prefix(pattern, l.escape_char)?;
        let matches = l.negated == negated;
        if !wildcard {
            let cmp = if matches { Cmp::Eq } else { Cmp::NotEq };
            return compare(&term, cmp, &ScalarValue::Utf8(Some(body)));
        }
        prefix(&term, &body, matches)
    }

    fn function(&self, f: &ScalarFunction, negated: bool) -> Option<Predicate> {
        match (f.name(), f.args.as_slice()) {
            ("isnan", [arg]) => {
                let term = self.term(arg)?;
                let float = matches!(
                    term.reference.ty,
                    PrimitiveType::Float | PrimitiveType::Double
                );
                let op = if negated {
                    UnaryOp::NotNan
                } else {
                    UnaryOp::IsNan
                };
                float.then(|| unary(op, &term))
            }
            ("starts_with", [arg, p]) => {
                let term = self.term(arg)?;
                let p = literal(p)?;
                if p.is_null() {
                    return Some(Predicate::AlwaysFalse);
                }
                prefix(&term, string_value(&p)?, !negated)
            }
            _ => None,
        }
    }

    /// A column of the read schema, seen through the casts around it.
    fn term(&self, e: &Expr) -> Option<Term> {
        match e {
            Expr::Column(c) => {
                let field = self.schema.field_by_name(&c.name)?;
                let ty = field.field_type.as_primitive()?.clone();
                // Never a pruning term: `variant`, `unknown`, `geometry` and `geography` have
                // no value bounds (geometry bounds are bounding boxes), so a filter on them
                // stays with DataFusion.
                if !ty.has_value_bounds() {
                    return None;
                }
                let view = primitive_to_arrow(&ty, true, &field.name).ok()?;
                let reference = Reference {
                    field_id: field.id,
                    name: field.name.clone(),
                    ty,
                };
                Some(Term {
                    reference,
                    view,
                    cast: CastKind::Lossless,
                })
            }
            Expr::Cast(c) => self.cast_term(&c.expr, c.field.data_type(), false),
            Expr::TryCast(c) => self.cast_term(&c.expr, c.field.data_type(), true),
            Expr::Alias(a) => self.term(&a.expr),
            _ => None,
        }
    }

    fn cast_term(&self, inner: &Expr, to: &DataType, try_cast: bool) -> Option<Term> {
        let mut term = self.term(inner)?;
        term.cast = match (term.cast, classify_cast(&term.view, to, try_cast)?) {
            (CastKind::Lossless, step) => step,
            (kind, CastKind::Lossless) => kind,
            _ => return None,
        };
        term.view = to.clone();
        Some(term)
    }
}

/// TRUE, FALSE or NULL as a filter.
fn constant(v: &ScalarValue, negated: bool) -> Option<Predicate> {
    match v {
        _ if v.is_null() => Some(Predicate::AlwaysFalse),
        ScalarValue::Boolean(Some(b)) if *b != negated => Some(Predicate::AlwaysTrue),
        ScalarValue::Boolean(Some(_)) => Some(Predicate::AlwaysFalse),
        _ => None,
    }
}

fn unary(op: UnaryOp, term: &Term) -> Predicate {
    Predicate::Unary {
        op,
        term: term.reference.clone(),
    }
}

fn binary(op: BinaryOp, term: &Term, value: Literal) -> Predicate {
    Predicate::Binary {
        op,
        term: term.reference.clone(),
        value,
    }
}

/// `term <cmp> value` (column on the left).
fn compare(term: &Term, cmp: Cmp, value: &ScalarValue) -> Option<Predicate> {
    Some(match fit(term, value)? {
        Fit::Null => Predicate::AlwaysFalse,
        Fit::Exact(v) => binary(cmp.to_binary_op(), term, v),
        Fit::Between { below, above } => {
            let bound = match cmp {
                Cmp::Eq => return Some(Predicate::AlwaysFalse),
                Cmp::NotEq => return Some(unary(UnaryOp::NotNull, term)),
                Cmp::Lt | Cmp::LtEq => below.map(|v| (BinaryOp::LtEq, v)),
                Cmp::Gt | Cmp::GtEq => above.map(|v| (BinaryOp::GtEq, v)),
            };
            bound.map_or(Predicate::AlwaysFalse, |(op, v)| binary(op, term, v))
        }
    })
}

fn set(op: SetOp, term: &Term, mut values: Vec<Literal>) -> Predicate {
    match (op, values.len()) {
        (SetOp::In, 0) => Predicate::AlwaysFalse,
        (SetOp::NotIn, 0) => unary(UnaryOp::NotNull, term),
        (SetOp::In, 1) => binary(BinaryOp::Eq, term, values.remove(0)),
        (SetOp::NotIn, 1) => binary(BinaryOp::NotEq, term, values.remove(0)),
        _ => Predicate::Set {
            op,
            term: term.reference.clone(),
            values,
        },
    }
}

/// `term LIKE 'prefix%'` (`matches == false`: `NOT LIKE`) on a string column.
fn prefix(term: &Term, prefix: &str, matches: bool) -> Option<Predicate> {
    if term.reference.ty != PrimitiveType::String {
        return None;
    }
    Some(match (prefix.is_empty(), matches) {
        (true, true) => unary(UnaryOp::NotNull, term),
        (true, false) => Predicate::AlwaysFalse,
        (false, m) => {
            let op = if m {
                BinaryOp::StartsWith
            } else {
                BinaryOp::NotStartsWith
            };
            binary(op, term, Literal::String(prefix.to_string()))
        }
    })
}

/// The value of a literal, or of a cast or negation of one (DataFusion's simplifier folds those
/// anyway).
fn literal(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Alias(a) => literal(&a.expr),
        Expr::Cast(c) => literal(&c.expr)?.cast_to(c.field.data_type()).ok(),
        Expr::Negative(inner) => literal(inner)?.arithmetic_negate().ok(),
        _ => None,
    }
}

fn string_value(v: &ScalarValue) -> Option<&str> {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// Whether reading a `from` value as `to` keeps comparisons exact (see [`CastKind`]).
/// `try_cast`: a failing cast would give NULL, so casts that can overflow are refused.
fn classify_cast(from: &DataType, to: &DataType, try_cast: bool) -> Option<CastKind> {
    use DataType::*;
    let lossless = match (from, to) {
        _ if from == to => true,
        (Int32, Int64 | Float64) | (Float32, Float64) => true,
        (Int32, Decimal128(p, s) | Decimal256(p, s)) => {
            *s >= 0 && i16::from(*p) - i16::from(*s) >= 10
        }
        (Int64, Decimal128(p, s) | Decimal256(p, s)) => {
            *s >= 0 && i16::from(*p) - i16::from(*s) >= 19
        }
        (Decimal128(p1, s1), Decimal128(p2, s2) | Decimal256(p2, s2)) => {
            *s1 >= 0
                && s2 >= s1
                && i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1)
        }
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (
            Binary | LargeBinary | BinaryView | FixedSizeBinary(_),
            Binary | LargeBinary | BinaryView,
        ) => true,
        (Date32, Date64) | (Time64(TimeUnit::Microsecond), Time64(TimeUnit::Nanosecond)) => true,
        // Midnight of the day; can overflow for nanoseconds.
        (Date32, Timestamp(_, tz)) => !try_cast && tz.as_deref().is_none_or(is_utc),
        (Timestamp(u1, tz1), Timestamp(u2, tz2)) => {
            let finer = unit_nanos(*u2) <= unit_nanos(*u1);
            // A zone-less value cast to a zone is read as local time there.
            let zones = tz1.is_some() || tz2.as_deref().is_none_or(is_utc);
            finer && zones && (u1 == u2 || !try_cast)
        }
        _ => false,
    };
    if lossless {
        return Some(CastKind::Lossless);
    }
    match (from, to) {
        (Int32 | Int64, Float32) => Some(CastKind::IntAsFloat { limit: F32_EXACT }),
        (Int64, Float64) => Some(CastKind::IntAsFloat { limit: F64_EXACT }),
        (Decimal128(p, s), Float64) if *p <= 15 && *s >= 0 => Some(CastKind::DecimalAsDouble),
        _ => None,
    }
}

/// Every integer of smaller magnitude is exact in a `f32`.
const F32_EXACT: f64 = 16_777_216.0;
/// Every integer of smaller magnitude is exact in a `f64`.
const F64_EXACT: f64 = 9_007_199_254_740_992.0;
const NANOS_PER_DAY: i128 = 86_400 * 1_000_000_000;

fn is_utc(tz: &str) -> bool {
    matches!(
        tz,
        "UTC" | "utc" | "Z" | "+00:00" | "+0000" | "+00" | "-00:00" | "Etc/UTC"
    )
}

fn unit_nanos(unit: TimeUnit) -> i128 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// A literal's value, independent of its Arrow encoding.
enum Value {
    Bool(bool),
    /// `numerator / denominator` (> 0): integers and decimals.
    Exact(i128, i128),
    /// A float; integers below `limit` in magnitude are exact in its type.
    Float {
        value: f64,
        limit: f64,
    },
    /// Nanoseconds since the epoch (dates: midnight), with the literal's zone.
    Instant {
        nanos: i128,
        tz: Option<Arc<str>>,
    },
    /// Nanoseconds since midnight.
    TimeOfDay(i128),
    Str(String),
    Bytes(Vec<u8>),
}

/// The value of a non-NULL scalar.
fn value_of(v: &ScalarValue) -> Option<Value> {
    use ScalarValue as S;
    let int = |n: i128| Some(Value::Exact(n, 1));
    let decimal = |u: i128, s: i8| {
        let pow = 10_i128.checked_pow(u32::from(s.unsigned_abs()))?;
        Some(if s >= 0 {
            Value::Exact(u, pow)
        } else {
            Value::Exact(u.checked_mul(pow)?, 1)
        })
    };
    let float = |value: f64, limit: f64| Some(Value::Float { value, limit });
    let instant = |n: i64, unit: i128, tz: &Option<Arc<str>>| {
        Some(Value::Instant {
            nanos: i128::from(n) * unit,
            tz: tz.clone(),
        })
    };
    match v {
        S::Boolean(Some(b)) => Some(Value::Bool(*b)),
        S::Int8(Some(n)) => int((*n).into()),
        S::Int16(Some(n)) => int((*n).into()),
        S::Int32(Some(n)) => int((*n).into()),
        S::Int64(Some(n)) => int((*n).into()),
        S::UInt8(Some(n)) => int((*n).into()),
        S::UInt16(Some(n)) => int((*n).into()),
        S::UInt32(Some(n)) => int((*n).into()),
        S::UInt64(Some(n)) => int((*n).into()),
        S::Decimal32(Some(u), _, s) => decimal((*u).into(), *s),
        S::Decimal64(Some(u), _, s) => decimal((*u).into(), *s),
        S::Decimal128(Some(u), _, s) => decimal(*u, *s),
        S::Decimal256(Some(u), _, s) => decimal(u.to_i128()?, *s),
        S::Float16(Some(f)) => float(f64::from(*f), 2048.0),
        S::Float32(Some(f)) => float(f64::from(*f), F32_EXACT),
        S::Float64(Some(f)) => float(*f, F64_EXACT),
        S::Date32(Some(d)) => Some(Value::Instant {
            nanos: i128::from(*d) * NANOS_PER_DAY,
            tz: None,
        }),
        S::Date64(Some(ms)) => instant(*ms, 1_000_000, &None),
        S::TimestampSecond(Some(n), tz) => instant(*n, 1_000_000_000, tz),
        S::TimestampMillisecond(Some(n), tz) => instant(*n, 1_000_000, tz),
        S::TimestampMicrosecond(Some(n), tz) => instant(*n, 1_000, tz),
        S::TimestampNanosecond(Some(n), tz) => instant(*n, 1, tz),
        S::Time32Second(Some(n)) => Some(Value::TimeOfDay(i128::from(*n) * 1_000_000_000)),
        S::Time32Millisecond(Some(n)) => Some(Value::TimeOfDay(i128::from(*n) * 1_000_000)),
        S::Time64Microsecond(Some(n)) => Some(Value::TimeOfDay(i128::from(*n) * 1_000)),
        S::Time64Nanosecond(Some(n)) => Some(Value::TimeOfDay(i128::from(*n))),
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
            Some(Value::Str(s.clone()))
        }
        S::Binary(Some(b))
        | S::LargeBinary(Some(b))
        | S::BinaryView(Some(b))
        | S::FixedSizeBinary(_, Some(b)) => Some(Value::Bytes(b.clone())),
        S::Dictionary(_, inner) => value_of(inner),
        _ => None,
    }
}

/// Places a literal among the values of the term's column.
fn fit(term: &Term, v: &ScalarValue) -> Option<Fit> {
    use PrimitiveType as P;
    if v.is_null() {
        return Some(Fit::Null);
    }
    let value = value_of(v)?;
    let ty = &term.reference.ty;
    match (term.cast, ty) {
        (CastKind::IntAsFloat { limit }, P::Int | P::Long) => {
            int_from_float(ty, as_float(&value, limit)?, limit)
        }
        (CastKind::DecimalAsDouble, P::Decimal { precision, scale }) => {
            decimal_from_double(*precision, *scale, as_float(&value, F64_EXACT)?)
        }
        (CastKind::Lossless, _) => fit_lossless(term, ty, value),
        _ => None,
    }
}

/// A literal compared in a float domain, as a float of that domain.
fn as_float(value: &Value, limit: f64) -> Option<f64> {
    match value {
        Value::Float { value, .. } => Some(*value),
        // The integer must be exact in the float type it is compared in.
        Value::Exact(n, 1) => {
            let f = *n as f64;
            (f.abs() <= limit && f as i128 == *n).then_some(f)
        }
        _ => None,
    }
}

fn fit_lossless(term: &Term, ty: &PrimitiveType, value: Value) -> Option<Fit> {
    use PrimitiveType as P;
    let exact = |l: Literal| Some(Fit::Exact(l));
    match (ty, value) {
        (P::Boolean, Value::Bool(b)) => exact(Literal::Boolean(b)),
        (P::Int | P::Long | P::Decimal { .. }, Value::Exact(num, den)) => ratio(ty, num, den),
        (P::Int | P::Long, Value::Float { value, limit }) => int_from_float(ty, value, limit),
        (P::Decimal { precision, scale }, Value::Float { value, .. }) => {
            decimal_from_double(*precision, *scale, value)
        }
        (P::Double, v) => {
            let f = as_float(&v, F64_EXACT)?;
            // DataFusion compares `-0.0` and `0.0` as equal.
            let f = if f == 0.0 { 0.0 } else { f };
            (!f.is_nan()).then_some(Fit::Exact(Literal::Double(f)))
        }
        (P::Float, v) => float32_fit(as_float(&v, F32_EXACT)?),
        (P::Date | P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs, v) => {
            let Value::Instant { nanos, tz } = v else {
                return None;
            };
            zones_agree(&term.view, tz.as_deref()).then_some(())?;
            ratio(ty, nanos, 1)
        }
        (P::Time, Value::TimeOfDay(nanos)) => ratio(ty, nanos, 1),
        (P::String, Value::Str(s)) => exact(Literal::String(s)),
        (P::Binary, Value::Bytes(b)) => exact(Literal::Binary(b)),
        (P::Uuid, Value::Bytes(b)) => exact(Literal::Uuid(b.try_into().ok()?)),
        (P::Fixed(len), Value::Bytes(b)) if b.len() as u64 == *len => exact(Literal::Fixed(b)),
        _ => None,
    }
}

/// Whether a timestamp literal means the same instant as the (cast) column's raw values:
/// the zones only matter when one side has none and the other is not UTC.
fn zones_agree(view: &DataType, literal_tz: Option<&str>) -> bool {
    let view_tz = match view {
        DataType::Timestamp(_, tz) => tz.as_deref(),
        _ => None,
    };
    match (view_tz, literal_tz) {
        (None, None) | (Some(_), Some(_)) => true,
        (Some(tz), None) | (None, Some(tz)) => is_utc(tz),
    }
}

/// The column's integer representation: value in column units = value * mul / div, and the
/// range of representable column values.
fn integral_units(ty: &PrimitiveType) -> Option<(i128, i128, i128, i128)> {
    use PrimitiveType as P;
    let (i32_min, i32_max) = (i128::from(i32::MIN), i128::from(i32::MAX));
    let (i64_min, i64_max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    Some(match ty {
        P::Int => (1, 1, i32_min, i32_max),
        P::Long => (1, 1, i64_min, i64_max),
        P::Decimal { precision, scale } => {
            let max = 10_i128.checked_pow(*precision)? - 1;
            (10_i128.checked_pow(*scale)?, 1, -max, max)
        }
        P::Date => (1, NANOS_PER_DAY, i32_min, i32_max),
        P::Time | P::Timestamp | P::Timestamptz => (1, 1_000, i64_min, i64_max),
        P::TimestampNs | P::TimestamptzNs => (1, 1, i64_min, i64_max),
        _ => return None,
    })
}

/// Places `num / den` (natural units: numbers, nanoseconds) among an integral column's values.
fn ratio(ty: &PrimitiveType, num: i128, den: i128) -> Option<Fit> {
    let (mul, div, min, max) = integral_units(ty)?;
    let num = num.checked_mul(mul)?;
    let den = den.checked_mul(div)?;
    integral(ty, num.div_euclid(den), num.rem_euclid(den) == 0, min, max)
}

/// Places a value whose floor (in column units) is `floor` among an integral column's values.
fn integral(ty: &PrimitiveType, floor: i128, exact: bool, min: i128, max: i128) -> Option<Fit> {
    let lit = |n: i128| int_literal(ty, n);
    Some(if exact && (min..=max).contains(&floor) {
        Fit::Exact(lit(floor)?)
    } else if floor >= max {
        Fit::Between {
            below: Some(lit(max)?),
            above: None,
        }
    } else if floor < min {
        Fit::Between {
            below: None,
            above: Some(lit(min)?),
        }
    } else {
        Fit::Between {
            below: Some(lit(floor)?),
            above: Some(lit(floor + 1)?),
        }
    })
}

fn int_literal(ty: &PrimitiveType, n: i128) -> Option<Literal> {
    use PrimitiveType as P;
    Some(match ty {
        P::Int => Literal::Int(n.try_into().ok()?),
        P::Long => Literal::Long(n.try_into().ok()?),
        P::Decimal { .. } => Literal::Decimal(n),
        P::Date => Literal::Date(n.try_into().ok()?),
        P::Time => Literal::Time(n.try_into().ok()?),
        P::Timestamp => Literal::Timestamp(n.try_into().ok()?),
        P::Timestamptz => Literal::Timestamptz(n.try_into().ok()?),
        P::TimestampNs => Literal::TimestampNs(n.try_into().ok()?),
        P::TimestamptzNs => Literal::TimestamptzNs(n.try_into().ok()?),
        _ => return None,
    })
}

/// An integer column compared with a float, in a float type where integers below `limit`
/// are exact. Between `limit` and the type's range the column's rounded values could equal
/// the literal: refused.
fn int_from_float(ty: &PrimitiveType, value: f64, limit: f64) -> Option<Fit> {
    let (_, _, min, max) = integral_units(ty)?;
    // Column values past `limit` round, at most to `top` (the largest value rounded).
    let top = if limit == F64_EXACT {
        max as f64
    } else if limit == F32_EXACT {
        f64::from(max as f32)
    } else {
        f64::INFINITY
    };
    if value.is_nan() || (limit <= value.abs() && value.abs() <= top) {
        return None;
    }
    if value > max as f64 {
        return integral(ty, max, false, min, max);
    }
    if value < min as f64 {
        return integral(ty, min - 1, false, min, max);
    }
    let floor = value.floor();
    integral(ty, floor as i128, floor == value, min, max)
}

/// A `decimal(P <= 15, S)` column read as a double (`x as f64 / 10^S`, Arrow's cast): exact when
/// the literal is the image of a column value (the cast is injective and monotonic there).
fn decimal_from_double(precision: u32, scale: u32, value: f64) -> Option<Fit> {
    if precision > 15 || !value.is_finite() {
        return None;
    }
    let pow = 10_f64.powi(i32::try_from(scale).ok()?);
    let unscaled = (value * pow).round();
    if unscaled.abs() >= 10_f64.powi(i32::try_from(precision).ok()?) {
        return None;
    }
    let unscaled = unscaled as i128;
    (unscaled as f64 / pow == value).then_some(Fit::Exact(Literal::Decimal(unscaled)))
}

/// A `float` column compared with a double (the column is widened, exactly).
fn float32_fit(value: f64) -> Option<Fit> {
    if value.is_nan() {
        return None;
    }
    let rounded = value as f32;
    let back = f64::from(rounded);
    // DataFusion compares `-0.0` and `0.0` as equal.
    let float = |f: f32| Some(Literal::Float(if f == 0.0 { 0.0 } else { f }));
    Some(if back == value {
        Fit::Exact(float(rounded)?)
    } else if back < value {
        Fit::Between {
            below: float(rounded),
            above: float(rounded.next_up()),
        }
    } else {
        Fit::Between {
            below: float(rounded.next_down()),
            above: float(rounded),
        }
    })
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;

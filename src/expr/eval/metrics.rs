//! Stage 2, metrics: whether a data file may hold rows matching a predicate, judged from its
//! column metrics (spec: "Manifests", `data_file` fields 109 `value_counts`, 110
//! `null_value_counts`, 137 `nan_value_counts`, 125 `lower_bounds`, 128 `upper_bounds`; "Scan
//! Planning").
//!
//! The leaf rules live here once, over [`ColumnFacts`]: what metadata says about one column's
//! values. [`file_may_match`] builds the facts from a data file's metrics; stage 1
//! (`super::manifest`) builds them from manifest-list field summaries.
//!
//! | predicate | cannot match when (else: may match) |
//! |---|---|
//! | `x IS NULL` | no nulls |
//! | `x IS NOT NULL` | all null |
//! | `isnan(x)` | no NaN |
//! | `NOT isnan(x)` | every value null or NaN |
//! | `x < v`, `x <= v` | no plain value (all null or NaN); `lower >= v` (`lower > v`) |
//! | `x > v`, `x >= v` | no plain value; `upper <= v` (`upper < v`) |
//! | `x = v`, `x IN (..)` | no plain value; every `v` outside `[lower, upper]` |
//! | `x != v`, `x NOT IN (..)` | no plain value; `lower = upper` (a single value) among the `v`s |
//! | `x LIKE 'p%'` | no plain value; `lower[..len p] > p` or `upper[..len p] < p` |
//! | `x NOT LIKE 'p%'` | no nulls, and both `lower` and `upper` start with `p` |
//!
//! "Plain" values are neither null nor NaN; bounds bound only those, and may be truncated
//! (strings, binary): a lower bound is at most the smallest value, an upper bound at least the
//! largest, nothing more, so only tests that hold for any such bound are used.
//!
//! Floats: IEEE 754 says NaN satisfies no comparison and `-0.0 = 0.0`; DataFusion (arrow)
//! compares by IEEE totalOrder, where `+NaN` is above every number, `-NaN` below, and
//! `-0.0 < 0.0`. The rules hold under both: range tests on a column that may hold NaN, or
//! against a NaN value, never prune; equality with a number prunes by the bounds (no NaN
//! equals a number in either order); a zero bound stands for both zeros (adjacent in either
//! order). UUID bounds are never
//! used: legacy Java writers ordered UUIDs as signed numbers, not as unsigned bytes.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::expr::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
use crate::spec::{DataFile, Literal, PrimitiveType};

/// `IN` lists longer than this are not checked value by value (as Java's evaluators).
const IN_PREDICATE_LIMIT: usize = 200;

/// Whether a data file may hold rows matching `predicate` (over the table's field ids and
/// types), judged from its column metrics; `false` only when no row can match.
///
/// Bounds are decoded with each reference's type (`Literal::from_bytes`, which widens bounds
/// written before a type promotion); a bound that does not decode is ignored. Missing metrics
/// for a column (a v1 file without counts, a column added after the file was written, a field
/// inside a list or map) let the file match. A file with `record_count` 0 holds no rows and
/// never matches; a negative `record_count` (imported files) leaves every metric unused.
pub fn file_may_match(predicate: &Predicate, file: &DataFile) -> bool {
    if file.record_count == 0 {
        return false;
    }
    if file.record_count < 0 {
        return may_match(predicate, &|_| ColumnFacts::unknown());
    }
    may_match(predicate, &|term| file_facts(file, term))
}

/// Whether every row of `file` matches `predicate`, judged from its column metrics (the
/// strict counterpart of [`file_may_match`]); `true` only when metadata proves it. A DELETE
/// drops such a file without reading it.
///
/// The proof: each column the predicate reads is known to hold no NULL (and, for floats, no
/// NaN), so every comparison is TRUE or FALSE on every row and the predicate's negation is
/// its exact complement; and no row can match that negation ([`file_may_match`]). Delete
/// files are not looked at: what holds for all of a file's rows holds for its live ones.
pub fn file_all_match(predicate: &Predicate, file: &DataFile) -> bool {
    if file.record_count <= 0 {
        return false;
    }
    let plain = |term: &Reference| {
        let id = term.field_id;
        file.null_value_counts.get(&id) == Some(&0)
            && (!is_float(&term.ty) || file.nan_value_counts.get(&id) == Some(&0))
    };
    every_term(predicate, &plain) && !file_may_match(&predicate.clone().negate(), file)
}

/// Whether `f` holds for the column of every leaf of `predicate`.
fn every_term(predicate: &Predicate, f: &dyn Fn(&Reference) -> bool) -> bool {
    match predicate {
        Predicate::AlwaysTrue | Predicate::AlwaysFalse => true,
        Predicate::And(a, b) | Predicate::Or(a, b) => every_term(a, f) && every_term(b, f),
        Predicate::Unary { term, .. }
        | Predicate::Binary { term, .. }
        | Predicate::Set { term, .. } => f(term),
    }
}

/// The facts of one column of `file`, read from its metric maps.
fn file_facts(file: &DataFile, term: &Reference) -> ColumnFacts {
    let id = term.field_id;
    let values = file.value_counts.get(&id).copied();
    let nulls = file.null_value_counts.get(&id).copied();
    let nans = if is_float(&term.ty) {
        file.nan_value_counts.get(&id).copied()
    } else {
        Some(0)
    };
    let share = |count: Option<i64>| match (count, values) {
        (Some(0), _) => Share::None,
        (Some(n), Some(v)) if n == v => Share::All,
        _ => Share::Maybe,
    };
    // Plain values (neither null nor NaN) are absent when nulls, NaNs or both fill the column.
    let plain = match (values, nulls, nans) {
        (Some(v), Some(n), Some(m)) => n.checked_add(m) != Some(v),
        (Some(v), Some(n), None) | (Some(v), None, Some(n)) => n != v,
        _ => true,
    };
    let bound = |bounds: Option<&HashMap<i32, Vec<u8>>>| {
        let bytes = bounds?.get(&id)?;
        Literal::from_bytes(&term.ty, bytes).ok()
    };
    ColumnFacts {
        nulls: share(nulls),
        nans: share(nans),
        plain,
        lower: None,
        upper: None,
    }
    .with_bounds(
        bound(file.lower_bounds.as_ref()),
        bound(file.upper_bounds.as_ref()),
    )
}

/// How many of a column's rows have some property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Share {
    /// None of them (known).
    None,
    /// Some, all or none: not known.
    Maybe,
    /// All of them (known).
    All,
}

/// What metadata says about one column's values, in a data file or across a manifest.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ColumnFacts {
    /// Rows that are null.
    pub(super) nulls: Share,
    /// Rows that are NaN ([`Share::None`] for non-float columns).
    pub(super) nans: Share,
    /// Whether a plain value (neither null nor NaN) may exist; `false` only when known absent.
    pub(super) plain: bool,
    /// A lower bound of the plain values (maybe truncated), when known and usable.
    pub(super) lower: Option<Literal>,
    /// An upper bound of the plain values (maybe truncated), when known and usable.
    pub(super) upper: Option<Literal>,
}

impl ColumnFacts {
    /// Nothing known: every test may match.
    pub(super) fn unknown() -> Self {
        Self {
            nulls: Share::Maybe,
            nans: Share::Maybe,
            plain: true,
            lower: None,
            upper: None,
        }
    }

    /// Sets the bounds, dropping the unusable ones: NaN bounds (old writers) and UUID bounds
    /// (legacy signed order). Float bounds bound the plain values even when NaN rows exist:
    /// the tests that NaN rows could satisfy (ranges, `!=`) check [`Self::nans`] first. A zero lower bound becomes
    /// `-0.0` and a zero upper bound `+0.0`, so both zeros fall inside.
    pub(super) fn with_bounds(mut self, lower: Option<Literal>, upper: Option<Literal>) -> Self {
        let usable = |b: &Literal| match b {
            Literal::Float(_) | Literal::Double(_) => !is_nan(b),
            Literal::Uuid(_) => false,
            _ => true,
        };
        self.lower = lower.filter(usable).map(|b| zero_as(b, true));
        self.upper = upper.filter(usable).map(|b| zero_as(b, false));
        self
    }
}

/// Evaluates `predicate` against the facts `facts` gives for each referenced column: `false`
/// only when no row can match.
pub(super) fn may_match(predicate: &Predicate, facts: &dyn Fn(&Reference) -> ColumnFacts) -> bool {
    match predicate {
        Predicate::AlwaysTrue => true,
        Predicate::AlwaysFalse => false,
        Predicate::And(a, b) => may_match(a, facts) && may_match(b, facts),
        Predicate::Or(a, b) => may_match(a, facts) || may_match(b, facts),
        Predicate::Unary { op, term } => unary(*op, &facts(term)),
        Predicate::Binary { op, term, value } => binary(*op, &facts(term), value),
        Predicate::Set { op, term, values } => match op {
            SetOp::In => is_in(&facts(term), values),
            SetOp::NotIn => not_in(&facts(term), values),
        },
    }
}

fn unary(op: UnaryOp, f: &ColumnFacts) -> bool {
    match op {
        UnaryOp::IsNull => f.nulls != Share::None,
        UnaryOp::NotNull => f.nulls != Share::All,
        UnaryOp::IsNan => f.nans != Share::None,
        UnaryOp::NotNan => f.plain,
    }
}

fn binary(op: BinaryOp, f: &ColumnFacts, v: &Literal) -> bool {
    match op {
        BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => range(op, f, v),
        BinaryOp::Eq => equal(f, v),
        BinaryOp::NotEq => not_in(f, std::slice::from_ref(v)),
        BinaryOp::StartsWith => starts_with(f, v),
        BinaryOp::NotStartsWith => not_starts_with(f, v),
    }
}

/// `<`, `<=`, `>`, `>=`. NaN rows satisfy one side or the other under totalOrder, and every
/// number is below `+NaN`: neither can prune.
fn range(op: BinaryOp, f: &ColumnFacts, v: &Literal) -> bool {
    if f.nans != Share::None {
        return true;
    }
    if !f.plain {
        return false;
    }
    if is_nan(v) {
        return true;
    }
    let (bound, wanted): (_, &[Ordering]) = match op {
        BinaryOp::Lt => (&f.lower, &[Ordering::Less]),
        BinaryOp::LtEq => (&f.lower, &[Ordering::Less, Ordering::Equal]),
        BinaryOp::Gt => (&f.upper, &[Ordering::Greater]),
        _ => (&f.upper, &[Ordering::Greater, Ordering::Equal]),
    };
    match bound.as_ref().and_then(|b| b.partial_cmp_same_type(v)) {
        Some(ord) => wanted.contains(&ord),
        None => true,
    }
}

/// `=`: a NaN value matches NaN rows (totalOrder); others need a plain value in the bounds.
fn equal(f: &ColumnFacts, v: &Literal) -> bool {
    if is_nan(v) {
        return f.nans != Share::None;
    }
    if !f.plain {
        return false;
    }
    let above_lower = f.lower.as_ref().and_then(|lo| lo.partial_cmp_same_type(v));
    let below_upper = f.upper.as_ref().and_then(|hi| hi.partial_cmp_same_type(v));
    above_lower != Some(Ordering::Greater) && below_upper != Some(Ordering::Less)
}

fn is_in(f: &ColumnFacts, values: &[Literal]) -> bool {
    if values.len() > IN_PREDICATE_LIMIT {
        return f.plain || f.nans != Share::None;
    }
    values.iter().any(|v| equal(f, v))
}

/// `!=` and `NOT IN`: NULL rows never match, NaN rows always may (`NaN != v`); plain values
/// all fail only when the bounds pin a single value that is in the list.
fn not_in(f: &ColumnFacts, values: &[Literal]) -> bool {
    if f.nans != Share::None {
        return true;
    }
    if !f.plain {
        return false;
    }
    match single_value(f) {
        Some(only) => !values
            .iter()
            .any(|v| only.partial_cmp_same_type(v) == Some(Ordering::Equal)),
        None => true,
    }
}

/// The one plain value every row holds, when `lower == upper` says so. Bounds of types that
/// may be truncated (strings, binary, fixed) are never taken as exact: a writer that truncates
/// the upper bound without incrementing it would make `lower == upper` a lie.
fn single_value(f: &ColumnFacts) -> Option<&Literal> {
    let (lo, hi) = (f.lower.as_ref()?, f.upper.as_ref()?);
    match lo {
        Literal::String(_) | Literal::Binary(_) | Literal::Fixed(_) => None,
        _ => (lo.partial_cmp_same_type(hi)? == Ordering::Equal).then_some(lo),
    }
}

/// `LIKE 'p%'`: every value starting with `p` is at least `p` and below `p`'s successor, so
/// a lower bound whose first `len p` bytes are above `p`, or an upper bound whose first
/// `len p` bytes are below it, excludes them all (true of truncated bounds too).
fn starts_with(f: &ColumnFacts, v: &Literal) -> bool {
    if !f.plain {
        return false;
    }
    let Some(prefix) = bytes_of(v) else {
        return true;
    };
    let cut = |b: &Option<Literal>| {
        let bytes = bytes_of(b.as_ref()?)?;
        Some(bytes[..bytes.len().min(prefix.len())].cmp(prefix))
    };
    cut(&f.lower) != Some(Ordering::Greater) && cut(&f.upper) != Some(Ordering::Less)
}

/// `NOT LIKE 'p%'`: fails for every row only when there are no nulls and both bounds start with
/// `p` (then every value between them does; a truncated bound is a prefix of a real value).
fn not_starts_with(f: &ColumnFacts, v: &Literal) -> bool {
    if f.nulls != Share::None {
        return true;
    }
    if !f.plain {
        return false;
    }
    let starts = |b: &Option<Literal>| match (b.as_ref().and_then(bytes_of), bytes_of(v)) {
        (Some(bytes), Some(prefix)) => bytes.starts_with(prefix),
        _ => false,
    };
    !(starts(&f.lower) && starts(&f.upper))
}

fn bytes_of(v: &Literal) -> Option<&[u8]> {
    match v {
        Literal::String(s) => Some(s.as_bytes()),
        Literal::Binary(b) | Literal::Fixed(b) => Some(b),
        _ => None,
    }
}

pub(super) fn is_float(ty: &PrimitiveType) -> bool {
    matches!(ty, PrimitiveType::Float | PrimitiveType::Double)
}

fn is_nan(v: &Literal) -> bool {
    match v {
        Literal::Float(x) => x.is_nan(),
        Literal::Double(x) => x.is_nan(),
        _ => false,
    }
}

/// A float zero as `-0.0` (`negative`) or `+0.0`; every other value unchanged.
fn zero_as(v: Literal, negative: bool) -> Literal {
    match v {
        // Float patterns compare with `==`: `0.0` matches `-0.0` too.
        Literal::Float(0.0) => Literal::Float(if negative { -0.0 } else { 0.0 }),
        Literal::Double(0.0) => Literal::Double(if negative { -0.0 } else { 0.0 }),
        other => other,
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
pub(in crate::expr::eval) mod tests;

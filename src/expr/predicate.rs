//! The predicate tree, bound to field ids: what [`super::convert`] produces and the evaluators
//! read. Values are [`Literal`]s of the referenced field's type (the converter casts them).

use crate::spec::{Literal, PrimitiveType};

/// A reference to a column (top-level or nested primitive field) by field id, with its type.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The field id.
    pub field_id: i32,
    /// The column name in the read schema (for messages and EXPLAIN).
    pub name: String,
    /// The field's type; every literal compared with it has this type.
    pub ty: PrimitiveType,
}

/// Tests of a column alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `IS NULL`
    IsNull,
    /// `IS NOT NULL`
    NotNull,
    /// `isnan(x)` (floats and doubles only)
    IsNan,
    /// `NOT isnan(x)`
    NotNan,
}

/// Comparisons of a column with one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `=`
    Eq,
    /// `!=` (SQL semantics: NULL rows do not match)
    NotEq,
    /// `LIKE 'prefix%'` (strings; binary prefixes for binary columns)
    StartsWith,
    /// `NOT LIKE 'prefix%'`
    NotStartsWith,
}

/// Membership tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// `IN (...)`
    In,
    /// `NOT IN (...)` (SQL semantics: NULL rows do not match)
    NotIn,
}

/// A boolean predicate over a table's rows, with SQL semantics: a row matches when the
/// predicate is TRUE (not NULL). `Not` is only ever applied through [`Predicate::negate`],
/// which pushes it down to the leaves, so evaluators never see a `Not` node.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// Every row matches.
    AlwaysTrue,
    /// No row matches.
    AlwaysFalse,
    /// Both match.
    And(Box<Predicate>, Box<Predicate>),
    /// Either matches.
    Or(Box<Predicate>, Box<Predicate>),
    /// A test of one column.
    Unary {
        /// The test.
        op: UnaryOp,
        /// The column.
        term: Reference,
    },
    /// A comparison of one column with a value of its type.
    Binary {
        /// The comparison.
        op: BinaryOp,
        /// The column.
        term: Reference,
        /// The value (the column's type).
        value: Literal,
    },
    /// A membership test of one column (values of its type, no NULLs).
    Set {
        /// `IN` or `NOT IN`.
        op: SetOp,
        /// The column.
        term: Reference,
        /// The values.
        values: Vec<Literal>,
    },
}

impl Predicate {
    /// `self AND other`, simplified when either side is constant.
    pub fn and(self, other: Predicate) -> Predicate {
        match (self, other) {
            (Predicate::AlwaysFalse, _) | (_, Predicate::AlwaysFalse) => Predicate::AlwaysFalse,
            (Predicate::AlwaysTrue, p) | (p, Predicate::AlwaysTrue) => p,
            (a, b) => Predicate::And(Box::new(a), Box::new(b)),
        }
    }

    /// `self OR other`, simplified when either side is constant.
    pub fn or(self, other: Predicate) -> Predicate {
        match (self, other) {
            (Predicate::AlwaysTrue, _) | (_, Predicate::AlwaysTrue) => Predicate::AlwaysTrue,
            (Predicate::AlwaysFalse, p) | (p, Predicate::AlwaysFalse) => p,
            (a, b) => Predicate::Or(Box::new(a), Box::new(b)),
        }
    }

    /// `NOT self`, pushed down to the leaves (De Morgan; each leaf's operator inverted).
    ///
    /// SQL three-valued logic: `NOT (x < 5)` is `x >= 5`, and both are unknown for a NULL
    /// `x`, so neither matches a NULL row; `NOT (x IS NULL)` is `x IS NOT NULL`.
    pub fn negate(self) -> Predicate {
        match self {
            Predicate::AlwaysTrue => Predicate::AlwaysFalse,
            Predicate::AlwaysFalse => Predicate::AlwaysTrue,
            Predicate::And(a, b) => a.negate().or(b.negate()),
            Predicate::Or(a, b) => a.negate().and(b.negate()),
            Predicate::Unary { op, term } => Predicate::Unary {
                op: match op {
                    UnaryOp::IsNull => UnaryOp::NotNull,
                    UnaryOp::NotNull => UnaryOp::IsNull,
                    UnaryOp::IsNan => UnaryOp::NotNan,
                    UnaryOp::NotNan => UnaryOp::IsNan,
                },
                term,
            },
            Predicate::Binary { op, term, value } => Predicate::Binary {
                op: match op {
                    BinaryOp::Lt => BinaryOp::GtEq,
                    BinaryOp::LtEq => BinaryOp::Gt,
                    BinaryOp::Gt => BinaryOp::LtEq,
                    BinaryOp::GtEq => BinaryOp::Lt,
                    BinaryOp::Eq => BinaryOp::NotEq,
                    BinaryOp::NotEq => BinaryOp::Eq,
                    BinaryOp::StartsWith => BinaryOp::NotStartsWith,
                    BinaryOp::NotStartsWith => BinaryOp::StartsWith,
                },
                term,
                value,
            },
            Predicate::Set { op, term, values } => Predicate::Set {
                op: match op {
                    SetOp::In => SetOp::NotIn,
                    SetOp::NotIn => SetOp::In,
                },
                term,
                values,
            },
        }
    }

    /// The field ids the predicate reads.
    pub fn field_ids(&self) -> Vec<i32> {
        let mut ids = Vec::new();
        self.collect_ids(&mut ids);
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn collect_ids(&self, ids: &mut Vec<i32>) {
        match self {
            Predicate::AlwaysTrue | Predicate::AlwaysFalse => {}
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                a.collect_ids(ids);
                b.collect_ids(ids);
            }
            Predicate::Unary { term, .. }
            | Predicate::Binary { term, .. }
            | Predicate::Set { term, .. } => ids.push(term.field_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x() -> Reference {
        Reference {
            field_id: 1,
            name: "x".into(),
            ty: PrimitiveType::Long,
        }
    }

    fn lt(v: i64) -> Predicate {
        Predicate::Binary {
            op: BinaryOp::Lt,
            term: x(),
            value: Literal::Long(v),
        }
    }

    #[test]
    fn negation_reaches_the_leaves() {
        let p = lt(5).and(Predicate::Unary {
            op: UnaryOp::IsNull,
            term: x(),
        });
        let expected = Predicate::Binary {
            op: BinaryOp::GtEq,
            term: x(),
            value: Literal::Long(5),
        }
        .or(Predicate::Unary {
            op: UnaryOp::NotNull,
            term: x(),
        });
        assert_eq!(p.negate(), expected);
    }

    #[test]
    fn constants_simplify() {
        assert_eq!(lt(1).and(Predicate::AlwaysTrue), lt(1));
        assert_eq!(lt(1).or(Predicate::AlwaysTrue), Predicate::AlwaysTrue);
        assert_eq!(Predicate::AlwaysFalse.or(lt(1)), lt(1));
        assert_eq!(
            lt(1).and(Predicate::AlwaysFalse).negate(),
            Predicate::AlwaysTrue
        );
    }
}

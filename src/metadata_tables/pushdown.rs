//! Reading pushed-down filters: which values of an integer column a scan can be limited to
//! before any file is read.

use std::collections::HashSet;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

/// The values `column` may take in rows that pass every filter, when some filter pins it with
/// `column = <integer>` (either side) or `column IN (<integers>)`; `None` when no filter does.
/// Filters it cannot read are ignored: the answer is a superset, never too small.
pub(super) fn int64_values(filters: &[Expr], column: &str) -> Option<HashSet<i64>> {
    filters
        .iter()
        .filter_map(|filter| pinned(filter, column))
        .reduce(|a, b| a.intersection(&b).copied().collect())
}

/// The values one filter allows `column`, if it is a pin of that column.
fn pinned(filter: &Expr, column: &str) -> Option<HashSet<i64>> {
    match filter {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => match (is_column(left, column), is_column(right, column)) {
            (true, false) => integer(right).map(|v| HashSet::from([v])),
            (false, true) => integer(left).map(|v| HashSet::from([v])),
            _ => None,
        },
        Expr::InList(list) if !list.negated && is_column(&list.expr, column) => {
            list.list.iter().map(integer).collect()
        }
        _ => None,
    }
}

fn is_column(expr: &Expr, column: &str) -> bool {
    match expr {
        Expr::Column(c) => c.name == column,
        Expr::Cast(cast) => is_column(&cast.expr, column),
        _ => false,
    }
}

/// A non-null integer literal (of any width) as `i64`.
fn integer(expr: &Expr) -> Option<i64> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    if !value.data_type().is_integer() {
        return None;
    }
    match value
        .cast_to(&datafusion::arrow::datatypes::DataType::Int64)
        .ok()?
    {
        ScalarValue::Int64(v) => v,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit};

    use super::*;

    #[test]
    fn pins_are_read_and_intersected() {
        let c = || col("reference_snapshot_id");
        let cases = [
            (vec![c().eq(lit(5_i64))], Some(vec![5])),
            (vec![lit(7_i32).eq(c())], Some(vec![7])),
            (
                vec![c().in_list(vec![lit(1_i64), lit(2_i64)], false)],
                Some(vec![1, 2]),
            ),
            (
                vec![
                    c().in_list(vec![lit(1_i64), lit(2_i64)], false),
                    c().eq(lit(2_i64)),
                ],
                Some(vec![2]),
            ),
            (vec![c().in_list(vec![lit(1_i64)], true)], None),
            (vec![c().gt(lit(1_i64))], None),
            (vec![col("other").eq(lit(1_i64))], None),
            (vec![c().eq(lit("x"))], None),
            (vec![], None),
        ];
        for (filters, expected) in cases {
            let mut got: Option<Vec<i64>> =
                int64_values(&filters, "reference_snapshot_id").map(|s| s.into_iter().collect());
            if let Some(v) = got.as_mut() {
                v.sort_unstable();
            }
            assert_eq!(got, expected, "{filters:?}");
        }
    }
}

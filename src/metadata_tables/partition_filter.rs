//! Pushed-down equality filters on fields of the unified `partition` struct
//! (`partition.region = 'us'`, `partition.id_bucket IN (1, 2)`; under `data_file` for the
//! entries relations). A manifest whose spec lacks the field (its files' value is null) or
//! whose partition summary bounds exclude every wanted value is not read; an entry whose
//! value is not wanted is dropped. Values compare as the partition field's Arrow type.

use std::cmp::Ordering;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use super::partition_struct::UnifiedPartition;
use crate::spec::{Literal, ManifestEntry, ManifestFile};

/// One `field IN values` condition on the unified partition struct.
#[derive(Debug, Clone)]
struct Condition {
    /// The unified field position.
    at: usize,
    /// The wanted values, as the field's Arrow type.
    values: Vec<ScalarValue>,
}

/// The ANDed partition conditions of a scan.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionFilter {
    conditions: Vec<Condition>,
}

impl PartitionFilter {
    /// Adds `expr` if it is an equality or `IN` list on `prefix.<field>` (prefix: the path of
    /// the partition struct, `["partition"]` or `["data_file", "partition"]`); false if not.
    pub(crate) fn add(
        &mut self,
        expr: &Expr,
        prefix: &[&str],
        partition: &UnifiedPartition,
    ) -> bool {
        let Some((path, values)) = equality(expr) else {
            return false;
        };
        let Some((name, head)) = path.split_last() else {
            return false;
        };
        if head.len() != prefix.len() || head.iter().zip(prefix).any(|(a, b)| a != b) {
            return false;
        }
        let Some((at, data_type)) = partition.field(name) else {
            return false;
        };
        let cast = values
            .iter()
            .map(|v| v.cast_to(&data_type).ok())
            .collect::<Option<Vec<_>>>();
        // A value that does not survive the round trip (300 as an int8) is not pushed.
        let Some(cast) = cast.filter(|c| {
            c.iter()
                .zip(&values)
                .all(|(c, v)| c.cast_to(&v.data_type()).ok().as_ref() == Some(v))
        }) else {
            return false;
        };
        self.conditions.push(Condition { at, values: cast });
        true
    }

    /// Whether a manifest may hold a wanted entry.
    pub(crate) fn may_contain(
        &self,
        manifest: &ManifestFile,
        partition: &UnifiedPartition,
    ) -> bool {
        self.conditions.iter().all(|c| {
            let Some(position) = partition.spec_position(manifest.partition_spec_id, c.at) else {
                return false;
            };
            let summary = manifest.partitions.as_ref().and_then(|s| s.get(position));
            let Some(summary) = summary else {
                return true;
            };
            let bound = |b: &Option<Vec<u8>>| {
                b.as_ref()
                    .and_then(|bytes| partition.bound_scalar(c.at, bytes))
            };
            let (lower, upper) = (bound(&summary.lower_bound), bound(&summary.upper_bound));
            c.values.iter().any(|v| {
                let above = lower
                    .as_ref()
                    .is_none_or(|l| v.partial_cmp(l) != Some(Ordering::Less));
                let below = upper
                    .as_ref()
                    .is_none_or(|u| v.partial_cmp(u) != Some(Ordering::Greater));
                above && below
            })
        })
    }

    /// Whether an entry (from a manifest of `spec_id`) passes.
    pub(crate) fn keeps(
        &self,
        spec_id: i32,
        entry: &ManifestEntry,
        partition: &UnifiedPartition,
    ) -> bool {
        if self.conditions.is_empty() {
            return true;
        }
        let values = partition.unify(spec_id, &entry.data_file.partition);
        self.conditions.iter().all(|c| {
            let value: Option<&Literal> = values.get(c.at).copied().flatten();
            value
                .and_then(|v| partition.value_scalar(c.at, v))
                .is_some_and(|s| c.values.contains(&s))
        })
    }
}

/// `path = literal`, `literal = path` or `path IN (literals)`.
fn equality(expr: &Expr) -> Option<(Vec<String>, Vec<ScalarValue>)> {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => match (path(left), literal(right), path(right), literal(left)) {
            (Some(p), Some(v), ..) | (.., Some(p), Some(v)) => Some((p, vec![v])),
            _ => None,
        },
        Expr::InList(list) if !list.negated => {
            let values = list.list.iter().map(literal).collect::<Option<Vec<_>>>()?;
            Some((path(&list.expr)?, values))
        }
        _ => None,
    }
}

/// The field path of a column or nested `get_field` access.
fn path(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Column(c) => Some(vec![c.name.clone()]),
        Expr::ScalarFunction(f) if f.func.name() == "get_field" => {
            let (base, names) = f.args.split_first()?;
            let mut path = path(base)?;
            for name in names {
                match literal(name)? {
                    ScalarValue::Utf8(Some(s))
                    | ScalarValue::Utf8View(Some(s))
                    | ScalarValue::LargeUtf8(Some(s)) => path.push(s),
                    _ => return None,
                }
            }
            Some(path)
        }
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(value, _) if !value.is_null() => Some(value.clone()),
        _ => None,
    }
}

//! Stage 1: whether a manifest may hold files matching a projected predicate, judged from the
//! manifest list's partition summaries (spec: "Manifest Lists", `field_summary` 508: 509
//! `contains_null`, 518 `contains_nan`, 510 `lower_bound`, 511 `upper_bound`; "Scan Planning").
//!
//! A summary describes one partition field across every file of the manifest. Its bounds cover
//! the non-null, non-NaN values and are absent when there are none; `contains_nan` is absent for
//! writers older than the field. The leaf rules are the metrics rules (see `super::metrics`),
//! fed with these facts:
//!
//! | summary | nulls | NaNs (float fields) | plain values |
//! |---|---|---|---|
//! | `contains_null = false` | none | | |
//! | `contains_null`, no bounds, `contains_nan = false` | all | none | none |
//! | `contains_nan = false` | | none | |
//! | `contains_nan`, no nulls, no bounds | none | all | none |
//! | no bounds | | | none |
//! | otherwise | maybe | maybe | maybe |

use super::metrics::{ColumnFacts, Share, is_float, may_match};
use crate::expr::{Predicate, Reference};
use crate::spec::{FieldSummary, Literal, PrimitiveType, StructType};

/// Whether a manifest may hold files matching `projected` (a predicate over the partition field
/// ids of the manifest's spec, as `crate::expr::project::project_inclusive` produces), judged
/// from the manifest list's field summaries; `false` only when no file can match.
///
/// `partition_type` is the spec's partition struct type: its field ids are the partition field
/// ids and its field types the transforms' result types, which the summary bounds are encoded
/// in. `summaries` holds one summary per spec field in spec order; `None` (older writers), or a
/// list whose length does not match the partition type, lets the manifest match.
pub fn manifest_may_match(
    projected: &Predicate,
    partition_type: &StructType,
    summaries: Option<&[FieldSummary]>,
) -> bool {
    let Some(summaries) = summaries else {
        return true;
    };
    if summaries.len() != partition_type.fields.len() {
        return true;
    }
    may_match(projected, &|term| {
        summary_facts(partition_type, summaries, term).unwrap_or_else(ColumnFacts::unknown)
    })
}

/// The facts of the partition field `term` names: its summary decoded with its result type.
fn summary_facts(
    partition_type: &StructType,
    summaries: &[FieldSummary],
    term: &Reference,
) -> Option<ColumnFacts> {
    let position = partition_type
        .fields
        .iter()
        .position(|f| f.id == term.field_id)?;
    let ty = partition_type.fields[position].field_type.as_primitive()?;
    Some(facts(&summaries[position], ty))
}

fn facts(summary: &FieldSummary, ty: &PrimitiveType) -> ColumnFacts {
    let plain = summary.lower_bound.is_some() || summary.upper_bound.is_some();
    let nans = match (is_float(ty), summary.contains_nan) {
        (false, _) | (true, Some(false)) => Share::None,
        (true, Some(true)) if !summary.contains_null && !plain => Share::All,
        _ => Share::Maybe,
    };
    let nulls = match summary.contains_null {
        false => Share::None,
        true if !plain && nans == Share::None => Share::All,
        true => Share::Maybe,
    };
    let decode = |bytes: &Option<Vec<u8>>| Literal::from_bytes(ty, bytes.as_deref()?).ok();
    ColumnFacts {
        nulls,
        nans,
        plain,
        lower: None,
        upper: None,
    }
    .with_bounds(decode(&summary.lower_bound), decode(&summary.upper_bound))
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

//! How a table lays its rows out: partition evolution and the write order, in Spark's syntax.
//!
//! ```sql
//! ALTER TABLE db.t ADD PARTITION FIELD bucket(16, id) [AS shard];
//! ALTER TABLE db.t DROP PARTITION FIELD shard;              -- or by its term: bucket(16, id)
//! ALTER TABLE db.t REPLACE PARTITION FIELD ts_day WITH hours(ts) [AS ts_hour];
//! ALTER TABLE db.t RENAME PARTITION FIELD ts_hour TO hour;
//! ALTER TABLE db.t WRITE ORDERED BY category ASC NULLS LAST, bucket(4, id) DESC;
//! ALTER TABLE db.t WRITE LOCALLY ORDERED BY id;            -- distribution mode none
//! ALTER TABLE db.t WRITE DISTRIBUTED BY PARTITION [LOCALLY ORDERED BY id];
//! ALTER TABLE db.t WRITE UNORDERED;
//! ```
//!
//! Terms are a column (identity) or `bucket(N, col)`, `truncate(W, col)` (either argument
//! order), `years(col)`, `months(col)`, `days(col)`, `hours(col)` (singular too), `void(col)`.
//! A `DROP PARTITION FIELD` of a bare name that is no column names the partition field; as in
//! Spark. A write order also sets `write.distribution-mode` as Spark does: `range` for
//! `ORDERED BY`, `none` for `LOCALLY ORDERED BY` and `UNORDERED`, `hash` for `DISTRIBUTED BY
//! PARTITION` (which alone leaves the table unsorted).

use crate::error::Result;
use crate::spec::properties::WRITE_DISTRIBUTION_MODE;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{TableMetadata, Transform};
use crate::transaction::{ReplaceSortOrder, Transaction, UpdateProperties, UpdateSpec};

/// A partition or sort term: a transform of a column (a dotted path).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Term {
    pub(super) source: String,
    pub(super) transform: Transform,
    /// Written as a bare column name (no transform), so it may name a partition field.
    pub(super) bare: bool,
}

/// One field of a write order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SortItem {
    pub(super) term: Term,
    pub(super) direction: SortDirection,
    pub(super) null_order: Option<NullOrder>,
}

/// Spark's `write.distribution-mode` values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Distribution {
    None,
    Hash,
    Range,
}

impl Distribution {
    fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Hash => "hash",
            Self::Range => "range",
        }
    }
}

/// A partition-spec or write-order clause.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Layout {
    AddField {
        term: Term,
        name: Option<String>,
    },
    DropField(Term),
    ReplaceField {
        old: Term,
        term: Term,
        name: Option<String>,
    },
    RenameField {
        name: String,
        to: String,
    },
    Write {
        distribution: Distribution,
        order: Vec<SortItem>,
    },
}

/// `transaction` with the change `layout` makes on the table `metadata` describes.
pub(super) fn with_layout(
    transaction: Transaction,
    layout: &Layout,
    metadata: &TableMetadata,
) -> Result<Transaction> {
    let spec = UpdateSpec::new();
    let update = match layout {
        Layout::AddField { term, name } => add(spec, term, name.as_deref()),
        Layout::DropField(term) => drop(spec, term, metadata),
        Layout::ReplaceField { old, term, name } => {
            add(drop(spec, old, metadata), term, name.as_deref())
        }
        Layout::RenameField { name, to } => spec.rename_field(name, to),
        Layout::Write {
            distribution,
            order,
        } => {
            let order = sort_order(order);
            let mode = [(WRITE_DISTRIBUTION_MODE.key(), distribution.as_str())];
            return Ok(transaction
                .replace_sort_order(order)
                .update_properties(UpdateProperties::set(mode)));
        }
    };
    // Errors of the change itself surface before anything is committed.
    update.apply(metadata)?;
    Ok(transaction.update_spec(update))
}

/// The sort order of `items`; nulls first when ascending, last when descending, unless said
/// (Spark's defaults).
pub(super) fn sort_order(items: &[SortItem]) -> ReplaceSortOrder {
    items.iter().fold(ReplaceSortOrder::new(), |order, item| {
        let null_order = item.null_order.unwrap_or(match item.direction {
            SortDirection::Ascending => NullOrder::First,
            SortDirection::Descending => NullOrder::Last,
        });
        let Term {
            source, transform, ..
        } = &item.term;
        order.field(source, transform.clone(), item.direction, null_order)
    })
}

fn add(update: UpdateSpec, term: &Term, name: Option<&str>) -> UpdateSpec {
    let Term {
        source, transform, ..
    } = term;
    match name {
        Some(name) => update.add_field_named(name, source, transform.clone()),
        None => update.add_field(source, transform.clone()),
    }
}

/// A bare name that is no column of the table names a partition field (Spark's rule).
fn drop(update: UpdateSpec, term: &Term, metadata: &TableMetadata) -> UpdateSpec {
    let column = metadata.current_schema().field_by_name(&term.source);
    match (term.bare, column) {
        (true, None) => update.remove_field(&term.source),
        _ => update.remove_field_by_term(&term.source, term.transform.clone()),
    }
}

//! Sort order evolution (spec: "Sorting"): [`ReplaceSortOrder`], the action that makes a new
//! order the table's default (`add-sort-order` + `set-default-sort-order`), metadata only.
//! Writers then sort the rows of each data file by it and record its id in the file's
//! `sort_order_id`; files written before keep theirs.
//!
//! As Java's `ReplaceSortOrder`: an order with the same fields as an existing one reuses its
//! id, the empty order is the unsorted order 0, any other gets the highest id + 1. Ascending
//! fields put nulls first and descending ones last unless told otherwise (Spark's defaults).

use async_trait::async_trait;

use super::{Action, Changes, CommitContext, changed_since};
use crate::error::Result;
use crate::spec::changes::LAST_ADDED;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{SortField, SortOrder, TableMetadata, TableRequirement, TableUpdate, Transform};
use crate::table::resolve_source;

/// Replaces the table's default sort order (see the module docs).
///
/// ```
/// use icefloe::spec::Transform;
/// use icefloe::transaction::ReplaceSortOrder;
///
/// // WRITE ORDERED BY day(ts), id DESC
/// let order = ReplaceSortOrder::new().asc("ts", Transform::Day).desc("id", Transform::Identity);
/// let unsorted = ReplaceSortOrder::new();
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplaceSortOrder {
    fields: Vec<(String, Transform, SortDirection, NullOrder)>,
}

impl ReplaceSortOrder {
    /// The unsorted order, until fields are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sorts next by `transform` of the column `source` (a dotted path), ascending, nulls
    /// first.
    pub fn asc(self, source: impl Into<String>, transform: Transform) -> Self {
        self.field(
            source,
            transform,
            SortDirection::Ascending,
            NullOrder::First,
        )
    }

    /// Sorts next by `transform` of the column `source`, descending, nulls last.
    pub fn desc(self, source: impl Into<String>, transform: Transform) -> Self {
        self.field(
            source,
            transform,
            SortDirection::Descending,
            NullOrder::Last,
        )
    }

    /// Sorts next by `transform` of the column `source` as told.
    pub fn field(
        mut self,
        source: impl Into<String>,
        transform: Transform,
        direction: SortDirection,
        null_order: NullOrder,
    ) -> Self {
        self.fields
            .push((source.into(), transform, direction, null_order));
        self
    }

    /// The order `metadata`'s default order becomes: its `order_id` is an identical order's,
    /// 0 when unsorted, else the highest + 1 (as the catalog assigns it).
    pub fn apply(&self, metadata: &TableMetadata) -> Result<SortOrder> {
        let schema = metadata.current_schema();
        let mut fields = Vec::with_capacity(self.fields.len());
        for (source, transform, direction, null_order) in &self.fields {
            let column = resolve_source(schema, source, transform, "sort")?;
            fields.push(SortField {
                source_id: column.id,
                transform: transform.clone(),
                direction: *direction,
                null_order: *null_order,
            });
        }
        let order_id = match fields.is_empty() {
            true => 0,
            false => metadata
                .sort_orders
                .iter()
                .find(|o| o.fields == fields)
                .map(|o| o.order_id)
                .unwrap_or_else(|| {
                    let highest = metadata.sort_orders.iter().map(|o| o.order_id).max();
                    highest.unwrap_or(0).saturating_add(1)
                }),
        };
        Ok(SortOrder { order_id, fields })
    }
}

#[async_trait]
impl Action for ReplaceSortOrder {
    fn validate(&self, base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        if base.default_sort_order_id != current.default_sort_order_id {
            let (before, after) = (base.default_sort_order_id, current.default_sort_order_id);
            return Err(changed_since(base, "sort order", before, after));
        }
        Ok(())
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let order = self.apply(current)?;
        let unchanged = match current.default_sort_order() {
            Some(now) => now.fields == order.fields,
            None => order.is_unsorted(),
        };
        if unchanged {
            return Ok(Changes::default());
        }
        Ok(Changes {
            requirements: vec![TableRequirement::AssertDefaultSortOrderId {
                default_sort_order_id: current.default_sort_order_id,
            }],
            updates: vec![
                TableUpdate::AddSortOrder { sort_order: order },
                TableUpdate::SetDefaultSortOrder {
                    sort_order_id: LAST_ADDED,
                },
            ],
        })
    }
}

//! Sort orders (spec: "Sorting").
//!
//! A sort order lists fields, each a transform of a source column with a direction and a null
//! order. Order id 0 is reserved for the unsorted order (no fields).

use serde_json::{Value as JsonValue, json};

use super::metadata::json as j;
use super::partition::Transform;
use crate::error::{Error, Result};

/// A sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDirection {
    /// `asc`
    Ascending,
    /// `desc`
    Descending,
}

impl SortDirection {
    /// The spec's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ascending => "asc",
            Self::Descending => "desc",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "asc" => Some(Self::Ascending),
            "desc" => Some(Self::Descending),
            _ => None,
        }
    }
}

/// Where nulls sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullOrder {
    /// `nulls-first`
    First,
    /// `nulls-last`
    Last,
}

impl NullOrder {
    /// The spec's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::First => "nulls-first",
            Self::Last => "nulls-last",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "nulls-first" => Some(Self::First),
            "nulls-last" => Some(Self::Last),
            _ => None,
        }
    }
}

/// One field of a sort order.
#[derive(Debug, Clone, PartialEq)]
pub struct SortField {
    /// `source-id`.
    pub source_id: i32,
    /// `transform`.
    pub transform: Transform,
    /// `direction`.
    pub direction: SortDirection,
    /// `null-order`.
    pub null_order: NullOrder,
}

impl SortField {
    fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "sort field";
        let o = j::object(v, WHAT)?;
        let source_id = match j::opt_i32(o, "source-id", WHAT)? {
            Some(id) => id,
            // v3 multi-argument transforms list `source-ids`; keep the first.
            None => j::opt_array(o, "source-ids", WHAT)?
                .first()
                .and_then(j::exact_i64)
                .and_then(|id| i32::try_from(id).ok())
                .ok_or_else(|| j::missing(WHAT, "source-id"))?,
        };
        let transform = Transform::parse(j::req_str(o, "transform", WHAT)?)
            .map_err(|e| e.into_corrupt(WHAT))?;
        let direction = j::req_str(o, "direction", WHAT)?;
        let direction = SortDirection::parse(direction).ok_or_else(|| {
            Error::corrupt("", format!("{WHAT}: unknown direction '{direction}'"))
        })?;
        let null_order = j::req_str(o, "null-order", WHAT)?;
        let null_order = NullOrder::parse(null_order).ok_or_else(|| {
            Error::corrupt("", format!("{WHAT}: unknown null-order '{null_order}'"))
        })?;
        Ok(Self {
            source_id,
            transform,
            direction,
            null_order,
        })
    }

    fn to_json(&self) -> JsonValue {
        json!({
            "transform": self.transform.to_string(),
            "source-id": self.source_id,
            "direction": self.direction.as_str(),
            "null-order": self.null_order.as_str(),
        })
    }
}

/// A sort order.
#[derive(Debug, Clone, PartialEq)]
pub struct SortOrder {
    /// `order-id` (0 is the unsorted order).
    pub order_id: i32,
    /// The fields.
    pub fields: Vec<SortField>,
}

impl SortOrder {
    /// The unsorted order: id 0, no fields.
    pub fn unsorted() -> Self {
        Self {
            order_id: 0,
            fields: Vec::new(),
        }
    }

    /// Whether this order sorts nothing.
    pub fn is_unsorted(&self) -> bool {
        self.fields.is_empty()
    }

    /// Parses the JSON form.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "sort order";
        let o = j::object(v, WHAT)?;
        let order_id = j::req_i32(o, "order-id", WHAT)?;
        let fields = o
            .get("fields")
            .and_then(JsonValue::as_array)
            .ok_or_else(|| j::missing(WHAT, "fields"))?
            .iter()
            .map(SortField::from_json)
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.within(format_args!("sort order {order_id}")))?;
        Ok(Self { order_id, fields })
    }

    /// The JSON form.
    pub fn to_json(&self) -> JsonValue {
        json!({
            "order-id": self.order_id,
            "fields": self.fields.iter().map(SortField::to_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_order_round_trips() {
        let v = json!({"order-id": 3, "fields": [
            {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
            {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"}
        ]});
        let order = SortOrder::from_json(&v).unwrap();
        assert_eq!(order.order_id, 3);
        assert_eq!(order.fields[1].transform, Transform::Bucket(4));
        assert_eq!(order.fields[1].direction, SortDirection::Descending);
        assert_eq!(order.fields[0].null_order, NullOrder::First);
        assert_eq!(order.to_json(), v);
        assert!(
            SortOrder::from_json(&json!({"order-id": 0, "fields": []}))
                .unwrap()
                .is_unsorted()
        );
    }

    #[test]
    fn v3_source_ids_and_upper_case_are_accepted() {
        let v = json!({"order-id": 1, "fields": [
            {"transform": "identity", "source-ids": [5, 6], "direction": "ASC", "null-order": "NULLS-LAST"}
        ]});
        let order = SortOrder::from_json(&v).unwrap();
        assert_eq!(order.fields[0].source_id, 5);
        assert_eq!(order.fields[0].direction, SortDirection::Ascending);
    }

    #[test]
    fn bad_sort_orders_are_corrupt() {
        for v in [
            json!({"fields": []}),
            json!({"order-id": 1}),
            json!({"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
                "direction": "up", "null-order": "nulls-last"}]}),
            json!({"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
                "direction": "asc"}]}),
        ] {
            let err = SortOrder::from_json(&v).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        }
    }
}

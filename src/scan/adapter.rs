//! Column resolution by field id: the [`PhysicalExprAdapterFactory`] DataFusion's Parquet
//! reader calls once per file to rewrite the scan's projection and predicate from the table
//! schema to the file's own schema.
//!
//! For each table column the file's column with the same Iceberg field id is used, whatever its
//! name (renamed columns keep their data, a dropped-and-re-added name does not pick up the old
//! column). Files written without field ids get them from the table's name mapping
//! (`schema.name-mapping.default`). Columns the file lacks read as their v3 `initial-default`,
//! else NULL. Each resolved column's file type must be one the table's type may be read from
//! ([`check_column`]: the same type in any Parquet representation, or a spec promotion); the
//! promotions then become casts, done by DataFusion's default adapter once the names are
//! resolved.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result as DFResult;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, lit};
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapter, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};

use super::file_types::{Refusal, Why, check_column};
use crate::error::Error;
use crate::spec::{FormatVersion, NameMapping};
use crate::to_arrow::FIELD_ID_KEY;

/// Creates a [`FieldIdAdapter`] per file.
#[derive(Debug, Clone)]
pub(crate) struct FieldIdAdapterFactory {
    /// For files written without field ids.
    name_mapping: Option<Arc<NameMapping>>,
    /// Values of table columns a file lacks (v3 `initial-default`), by table column name.
    defaults: Arc<HashMap<String, ScalarValue>>,
    /// The table's format version, which decides the type promotions allowed.
    format_version: FormatVersion,
}

impl FieldIdAdapterFactory {
    pub(crate) fn new(
        name_mapping: Option<Arc<NameMapping>>,
        defaults: HashMap<String, ScalarValue>,
        format_version: FormatVersion,
    ) -> Self {
        Self {
            name_mapping,
            defaults: Arc::new(defaults),
            format_version,
        }
    }

    /// The name mapping, the defaults and the format version, as [`Self::new`] takes them.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn parts(
        &self,
    ) -> (
        Option<&NameMapping>,
        &HashMap<String, ScalarValue>,
        FormatVersion,
    ) {
        (
            self.name_mapping.as_deref(),
            &self.defaults,
            self.format_version,
        )
    }

    /// The field id of each file column: from its metadata, else from the name mapping.
    fn physical_ids(&self, physical: &ArrowSchema) -> HashMap<i32, usize> {
        let mut ids = HashMap::new();
        for (idx, field) in physical.fields().iter().enumerate() {
            let id = field_id(field).or_else(|| {
                self.name_mapping
                    .as_ref()
                    .and_then(|m| m.field_id(field.name()))
            });
            if let Some(id) = id {
                ids.entry(id).or_insert(idx);
            }
        }
        ids
    }
}

/// The Iceberg field id an Arrow field carries in its metadata.
pub(crate) fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID_KEY)?.parse().ok()
}

impl PhysicalExprAdapterFactory for FieldIdAdapterFactory {
    fn create(
        &self,
        logical_file_schema: SchemaRef,
        physical_file_schema: SchemaRef,
    ) -> DFResult<Arc<dyn PhysicalExprAdapter>> {
        let resolution = self.resolve(&logical_file_schema, &physical_file_schema)?;
        let resolved_schema = Arc::new(ArrowSchema::new(resolution.fields));
        let inner = DefaultPhysicalExprAdapter::new(
            Arc::clone(&resolved_schema),
            Arc::clone(&physical_file_schema),
        );
        Ok(Arc::new(FieldIdAdapter {
            renames: resolution.renames,
            missing: resolution.missing,
            refused: resolution.refused,
            resolved_schema,
            inner,
        }))
    }
}

/// How one file's columns serve the table's.
#[derive(Default)]
struct Resolution {
    /// Table column name -> the file column of the same field id.
    renames: HashMap<String, String>,
    /// Table columns the file lacks, with the value they read as.
    missing: HashMap<String, ScalarValue>,
    /// Table columns the file stores as a type they cannot be read from, with the reason.
    refused: HashMap<String, Refusal>,
    /// The table's columns the file has, named as in the file.
    fields: Vec<Field>,
}

impl FieldIdAdapterFactory {
    fn resolve(&self, logical: &ArrowSchema, physical: &ArrowSchema) -> DFResult<Resolution> {
        let physical_ids = self.physical_ids(physical);
        // A file with no ids at all and no mapping: fall back to names, as the last resort.
        let by_name = physical_ids.is_empty();
        let mut resolution = Resolution::default();
        for field in logical.fields() {
            // A virtual column (the Parquet row number behind `_pos`) is the reader's own, by
            // name: DataFusion appends it to the file's schema.
            let virtual_column = field
                .extension_type_name()
                .is_some_and(|n| n.starts_with("parquet.virtual."));
            if virtual_column && physical.index_of(field.name()).is_ok() {
                resolution.fields.push(field.as_ref().clone());
                continue;
            }
            // An `unknown` column has no file column (spec): NULL, whatever the file holds.
            let physical_idx = if field.data_type() == &DataType::Null {
                None
            } else if by_name {
                physical.index_of(field.name()).ok()
            } else {
                field_id(field).and_then(|id| physical_ids.get(&id).copied())
            };
            let Some(idx) = physical_idx else {
                let value = match self.defaults.get(field.name()) {
                    Some(v) => v.clone(),
                    None => ScalarValue::try_from(field.data_type())?,
                };
                resolution.missing.insert(field.name().clone(), value);
                continue;
            };
            let file_field = physical.field(idx);
            // Refused only when read: a query that does not touch the column still answers.
            if let Err(reason) = check_column(field, file_field, self.format_version) {
                resolution.refused.insert(field.name().clone(), reason);
            }
            let physical_name = file_field.name().clone();
            resolution
                .fields
                .push(field.as_ref().clone().with_name(&physical_name));
            resolution
                .renames
                .insert(field.name().clone(), physical_name);
        }
        Ok(resolution)
    }
}

/// Rewrites one file's expressions: table column names to file column names (by field id),
/// missing columns to their default values, then casts through DataFusion's default adapter.
#[derive(Debug)]
struct FieldIdAdapter {
    renames: HashMap<String, String>,
    missing: HashMap<String, ScalarValue>,
    refused: HashMap<String, Refusal>,
    resolved_schema: SchemaRef,
    inner: DefaultPhysicalExprAdapter,
}

impl PhysicalExprAdapter for FieldIdAdapter {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> DFResult<Arc<dyn PhysicalExpr>> {
        let resolved = expr
            .transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                if let Some(refusal) = self.refused.get(column.name()) {
                    let error = match refusal.why {
                        Why::NotAPromotion => {
                            Error::corrupt_with("", refusal.to_string(), refusal.clone())
                        }
                        Why::ShreddedVariant => Error::Unsupported(refusal.to_string()),
                    };
                    return Err(error.into());
                }
                if let Some(value) = self.missing.get(column.name()) {
                    return Ok(Transformed::yes(lit(value.clone())));
                }
                match self.renames.get(column.name()) {
                    Some(name) if name != column.name() => {
                        let idx = self.resolved_schema.index_of(name)?;
                        Ok(Transformed::yes(Arc::new(Column::new(name, idx))))
                    }
                    _ => Ok(Transformed::no(e)),
                }
            })
            .data()?;
        self.inner.rewrite(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch};

    fn with_id(name: &str, ty: DataType, id: i32) -> Field {
        Field::new(name, ty, true)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    }

    fn eval(expr: Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Vec<Option<i64>> {
        let out = expr
            .evaluate(batch)
            .unwrap()
            .into_array(batch.num_rows())
            .unwrap();
        let out = out.as_any().downcast_ref::<Int64Array>().unwrap();
        out.iter().collect()
    }

    #[test]
    fn renamed_and_promoted_columns_resolve_by_id() {
        // Table: id (long, field 1) named "id"; file: field 1 named "old_id", stored as int32.
        let logical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int64, 1),
            with_id("added", DataType::Int64, 9),
        ]));
        let physical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int32, 7), // same name, different column: must not be used
            with_id("old_id", DataType::Int32, 1),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&physical),
            vec![
                Arc::new(Int32Array::from(vec![100, 200])),
                Arc::new(Int32Array::from(vec![1, 2])),
            ],
        )
        .unwrap();
        let defaults = HashMap::from([("added".to_string(), ScalarValue::Int64(Some(-1)))]);
        let factory = FieldIdAdapterFactory::new(None, defaults, FormatVersion::V2);
        let adapter = factory.create(logical, physical).unwrap();
        let id = adapter.rewrite(Arc::new(Column::new("id", 0))).unwrap();
        assert_eq!(eval(id, &batch), vec![Some(1), Some(2)]);
        let added = adapter.rewrite(Arc::new(Column::new("added", 1))).unwrap();
        assert_eq!(eval(added, &batch), vec![Some(-1), Some(-1)]);
    }

    #[test]
    fn files_without_ids_use_the_name_mapping() {
        let logical = Arc::new(ArrowSchema::new(vec![with_id("id", DataType::Int64, 1)]));
        let physical = Arc::new(ArrowSchema::new(vec![Field::new(
            "record_id",
            DataType::Int64,
            true,
        )]));
        let batch = RecordBatch::try_new(
            Arc::clone(&physical),
            vec![Arc::new(Int64Array::from(vec![5]))],
        )
        .unwrap();
        let mapping =
            NameMapping::parse(r#"[{"field-id": 1, "names": ["id", "record_id"]}]"#).unwrap();
        let factory =
            FieldIdAdapterFactory::new(Some(Arc::new(mapping)), HashMap::new(), FormatVersion::V2);
        let adapter = factory.create(logical, physical).unwrap();
        let id = adapter.rewrite(Arc::new(Column::new("id", 0))).unwrap();
        assert_eq!(eval(id, &batch), vec![Some(5)]);
    }

    #[test]
    fn a_file_column_of_another_type_is_refused_when_read() {
        let logical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int64, 1),
            with_id("flag", DataType::Boolean, 3),
        ]));
        let physical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int64, 1),
            with_id("flag", DataType::Int64, 3),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&physical),
            vec![
                Arc::new(Int64Array::from(vec![4])),
                Arc::new(Int64Array::from(vec![9])),
            ],
        )
        .unwrap();
        let factory = FieldIdAdapterFactory::new(None, HashMap::new(), FormatVersion::V2);
        let adapter = factory.create(logical, physical).unwrap();
        let id = adapter.rewrite(Arc::new(Column::new("id", 0))).unwrap();
        assert_eq!(
            eval(id, &batch),
            vec![Some(4)],
            "the other column still reads"
        );
        let err = adapter
            .rewrite(Arc::new(Column::new("flag", 1)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'flag' (field id 3) is stored as Int64"),
            "{err}"
        );
    }

    #[test]
    fn unknown_columns_read_null_whatever_the_file_holds() {
        // Spec: `unknown` has no file column; a file holding field 2 anyway is not read.
        let logical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int64, 1),
            with_id("u", DataType::Null, 2),
        ]));
        let physical = Arc::new(ArrowSchema::new(vec![
            with_id("id", DataType::Int64, 1),
            with_id("u", DataType::Int64, 2),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&physical),
            vec![
                Arc::new(Int64Array::from(vec![4])),
                Arc::new(Int64Array::from(vec![9])),
            ],
        )
        .unwrap();
        let factory = FieldIdAdapterFactory::new(None, HashMap::new(), FormatVersion::V3);
        let adapter = factory.create(logical, physical).unwrap();
        let u = adapter.rewrite(Arc::new(Column::new("u", 1))).unwrap();
        let out = u.evaluate(&batch).unwrap().into_array(1).unwrap();
        assert_eq!(out.data_type(), &DataType::Null);
        assert_eq!(out.logical_null_count(), 1);
    }
}

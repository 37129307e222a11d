//! [`MetadataScanExec`]: the scan of a metadata relation, computing its rows when it runs (so
//! planning and `EXPLAIN` read nothing), with the projection and the limit applied.
//!
//! A plan node of icefloe's own (not DataFusion's `StreamingTableExec`, whose streams cannot be
//! looked into), so that `icefloe::distributed` can send it: a worker loads the same metadata
//! file and computes the same rows.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::TryStreamExt;
use tokio::sync::OnceCell;

use super::{IcebergMetadataTable, MetadataTableKind};
use crate::io::FileIO;
use crate::spec::SnapshotSelector;
use crate::table::Table;

/// The relation a scan reads: loaded, or (decoded in another process) the metadata file it is
/// loaded from when the scan first runs.
#[derive(Debug, Clone)]
pub(crate) struct Relation {
    pub(crate) io: FileIO,
    pub(crate) metadata_location: String,
    pub(crate) kind: MetadataTableKind,
    pub(crate) selector: SnapshotSelector,
}

/// See the module docs. One partition.
#[derive(Debug)]
pub(crate) struct MetadataScanExec {
    relation: Relation,
    loaded: OnceCell<IcebergMetadataTable>,
    filters: Vec<Expr>,
    projection: Option<Vec<usize>>,
    limit: Option<usize>,
    /// The relation's schema, projected.
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl MetadataScanExec {
    /// A scan of `table`, handing it `filters` (hints) and `limit`.
    pub(crate) fn new(
        table: &IcebergMetadataTable,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Self> {
        let schema = match projection {
            Some(p) => Arc::new(table.arrow_schema().project(p)?),
            None => table.arrow_schema(),
        };
        let relation = Relation {
            io: table.table().io().clone(),
            metadata_location: table.table().metadata_location().to_string(),
            kind: table.kind(),
            selector: table.selector().clone(),
        };
        let scan = Self::unloaded(
            relation,
            filters.to_vec(),
            projection.cloned(),
            limit,
            schema,
        );
        let _ = scan.loaded.set(table.clone());
        Ok(scan)
    }

    /// A scan of `relation`, loaded when it first runs; `schema` is its projected schema.
    pub(crate) fn unloaded(
        relation: Relation,
        filters: Vec<Expr>,
        projection: Option<Vec<usize>>,
        limit: Option<usize>,
        schema: SchemaRef,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            relation,
            loaded: OnceCell::new(),
            filters,
            projection,
            limit,
            schema,
            properties,
        }
    }

    /// The relation, the filters, the projection and the limit, as [`Self::unloaded`] takes them.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (&Relation, &[Expr], Option<&Vec<usize>>, Option<usize>) {
        (
            &self.relation,
            &self.filters,
            self.projection.as_ref(),
            self.limit,
        )
    }
}

impl DisplayAs for MetadataScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IcebergMetadataScanExec: relation={}",
            self.relation.kind
        )?;
        if self.projection.is_some() {
            let names: Vec<&str> = self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            write!(f, ", projection=[{}]", names.join(", "))?;
        }
        if let Some(limit) = self.limit {
            write!(f, ", fetch={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for MetadataScanExec {
    fn name(&self) -> &str {
        "IcebergMetadataScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match children.is_empty() {
            true => Ok(self),
            false => Err(DataFusionError::Internal(
                "IcebergMetadataScanExec has no children".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "IcebergMetadataScanExec has one partition, not partition {partition}"
            )));
        }
        let relation = self.relation.clone();
        let loaded = self.loaded.get().cloned();
        let (filters, projection, limit) =
            (self.filters.clone(), self.projection.clone(), self.limit);
        let rows = async move {
            let asked = || {
                format!(
                    "reading {} of {}",
                    relation.kind, relation.metadata_location
                )
            };
            let table = match loaded {
                Some(table) => table,
                None => load(&relation)
                    .await
                    .map_err(|e| DataFusionError::from(e).context(asked()))?,
            };
            let batches = table
                .batches(&filters, limit)
                .await
                .map_err(|e| DataFusionError::from(e).context(asked()))?;
            shaped(batches, projection.as_deref(), limit)
        };
        let batches = futures::stream::once(rows)
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }
}

async fn load(relation: &Relation) -> crate::Result<IcebergMetadataTable> {
    let table =
        Table::load_metadata_file(relation.io.clone(), relation.metadata_location.clone()).await?;
    IcebergMetadataTable::try_new(table, relation.kind, relation.selector.clone())
}

/// `batches` projected and cut to `limit` rows.
fn shaped(
    batches: Vec<RecordBatch>,
    projection: Option<&[usize]>,
    limit: Option<usize>,
) -> DFResult<Vec<RecordBatch>> {
    let mut left = limit.unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        if left == 0 {
            break;
        }
        let batch = match projection {
            Some(p) => batch.project(p)?,
            None => batch,
        };
        let batch = batch.slice(0, batch.num_rows().min(left));
        left -= batch.num_rows();
        out.push(batch);
    }
    Ok(out)
}

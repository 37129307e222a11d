//! `icefloe.SqlResult`: the rows of a statement `Catalog.sql` ran, as an Arrow stream
//! (the Arrow PyCapsule interface), so that `pyarrow.table(result)`,
//! `SessionContext.from_arrow(result)`, polars and DuckDB take it without a copy.

use datafusion::arrow::array::{RecordBatch, RecordBatchIterator};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::arrow::util::pretty::pretty_format_batches;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The capsule name of the Arrow C stream interface.
const ARROW_STREAM: &std::ffi::CStr = c"arrow_array_stream";

/// The rows a statement returned (for DML and DDL, DataFusion's one-row summaries: the
/// `count` of rows written).
#[pyclass(module = "icefloe._icefloe", name = "SqlResult", frozen)]
pub(crate) struct SqlResult {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl SqlResult {
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self { schema, batches }
    }
}

#[pymethods]
impl SqlResult {
    /// The rows as an Arrow C stream (the Arrow PyCapsule interface). The requested schema is
    /// not applied: the stream has the statement's own.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.clone().into_iter().map(Ok);
        let reader = RecordBatchIterator::new(batches, self.schema.clone());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, ARROW_STREAM)
    }

    /// The rows as a `pyarrow.Table` (needs pyarrow).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("pyarrow")?.call_method1("table", (slf,))
    }

    /// How many rows there are.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        match pretty_format_batches(&self.batches) {
            Ok(table) if !self.batches.is_empty() => table.to_string(),
            _ => format!("icefloe.SqlResult(no rows; schema {:?})", self.schema),
        }
    }
}

//! `IcebergEqualityDeleteExec` across processes: the equality delete files that apply to the
//! scan below it (what reading them needs), the key types, which files apply to which data
//! file, and the IO to read them with. A worker reads the delete files where it reads the data,
//! once per decoded plan.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result as DFResult;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::protobuf;

use super::origin::{io_from_wire, io_to_wire};
use super::{IcefloeCodec, corrupt, wire};
use crate::scan::deletes::DeleteFileTask;
use crate::scan::deletes::equality::{EqualityDeleteExec, EqualityDeletes};
use crate::spec::{DataContentType, DataFile, FileFormat};

pub(super) fn encode(
    node: &EqualityDeleteExec,
    codec: &IcefloeCodec,
) -> DFResult<wire::EqualityDeletes> {
    let (deletes, per_file, key_columns, ordinal_column) = node.parts();
    let (io, files, key_types) = deletes.parts();
    Ok(wire::EqualityDeletes {
        io: Some(io_to_wire(io, codec.sends_credentials())),
        files: files
            .iter()
            .map(|task| wire::DeleteFile {
                path: task.file.file_path.clone(),
                equality_ids: task.file.equality_ids.clone().unwrap_or_default(),
                partition_spec_id: task.partition_spec_id,
                data_sequence_number: task.data_sequence_number,
                record_count: task.file.record_count,
                file_size_in_bytes: task.file.file_size_in_bytes,
            })
            .collect(),
        key_types: key_types
            .iter()
            .map(|(id, ty)| Ok((*id, protobuf::ArrowType::try_from(ty)?)))
            .collect::<DFResult<_>>()?,
        per_file: per_file
            .iter()
            .map(|applying| wire::Indexes {
                values: applying.iter().map(|&i| i as u32).collect(),
            })
            .collect(),
        key_columns: key_columns
            .iter()
            .map(|(id, column)| (*id, *column as u64))
            .collect(),
        ordinal_column: ordinal_column as u64,
        output: node.schema().fields().len() as u64,
    })
}

pub(super) fn decode(
    node: &wire::EqualityDeletes,
    input: &Arc<dyn ExecutionPlan>,
    ctx: &TaskContext,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let io = io_from_wire(node.io.as_ref(), ctx)?;
    let files = node
        .files
        .iter()
        .map(|f| {
            let mut file = DataFile::new(
                DataContentType::EqualityDeletes,
                f.path.clone(),
                FileFormat::Parquet,
                f.record_count,
                f.file_size_in_bytes,
            );
            file.equality_ids = Some(f.equality_ids.clone());
            Arc::new(DeleteFileTask {
                file,
                partition_spec_id: f.partition_spec_id,
                data_sequence_number: f.data_sequence_number,
            })
        })
        .collect::<Vec<_>>();
    let key_types = node
        .key_types
        .iter()
        .map(|(id, ty)| {
            let ty = DataType::try_from(ty)
                .map_err(|e| corrupt(format!("the type of key field {id}: {e}")))?;
            Ok((*id, ty))
        })
        .collect::<DFResult<_>>()?;
    let index = |i: u64, what: &str| {
        usize::try_from(i).map_err(|_| corrupt(format!("{what} {i} is too large")))
    };
    let per_file = node
        .per_file
        .iter()
        .map(|applying| {
            applying
                .values
                .iter()
                .map(|&i| match (i as usize) < files.len() {
                    true => Ok(i as usize),
                    false => Err(corrupt(format!(
                        "delete file {i} of {} equality delete files",
                        files.len()
                    ))),
                })
                .collect::<DFResult<Vec<_>>>()
        })
        .collect::<DFResult<Vec<_>>>()?;
    let width = input.schema().fields().len();
    let column = |i: u64, what: &str| match index(i, what)? {
        c if c < width => Ok(c),
        c => Err(corrupt(format!(
            "{what} {c} of an input of {width} columns"
        ))),
    };
    let key_columns = node
        .key_columns
        .iter()
        .map(|(id, c)| Ok((*id, column(*c, "the key column")?)))
        .collect::<DFResult<_>>()?;
    let ordinal = column(node.ordinal_column, "the data file ordinal column")?;
    let output = index(node.output, "the output width")?;
    if output > width {
        return Err(corrupt(format!(
            "{output} output columns of an input of {width}"
        )));
    }
    let deletes = Arc::new(EqualityDeletes::new(io, files, key_types));
    let exec = EqualityDeleteExec::new(
        Arc::clone(input),
        deletes,
        per_file,
        key_columns,
        ordinal,
        output,
    )?;
    Ok(Arc::new(exec))
}

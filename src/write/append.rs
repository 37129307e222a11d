//! Appending Arrow batches to a table: rows split by the default partition spec, one Parquet
//! file per partition (rolled at `write.target-file-size-bytes`), then one commit
//! ([`crate::commit::append`]). The Rust form of `INSERT INTO`.

use std::collections::HashMap;

use datafusion::arrow::array::RecordBatch;

use super::{DataFileWriter, WriterOptions, split_by_partition};
use crate::commit::{AppendFiles, CommitTarget, append};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{DataFile, Literal, TableMetadata};
use crate::table::Table;

/// The table property bounding a data file's size.
pub const TARGET_FILE_SIZE_BYTES: &str = "write.target-file-size-bytes";

/// Its default (Java's: 512 MiB).
pub const TARGET_FILE_SIZE_DEFAULT: u64 = 512 * 1024 * 1024;

/// Writes `batches` (in the table's current schema) as data files of the table `target`
/// names, partitioned by its default spec, and commits them as one append to `branch`.
/// Returns the committed table. A failure before the commit deletes the files written.
pub async fn append_batches(
    io: &FileIO,
    target: CommitTarget<'_>,
    batches: &[RecordBatch],
    branch: &str,
) -> Result<Table> {
    let base = load(io, &target).await?;
    let files = write_files(io, &base, batches).await?;
    let paths: Vec<String> = files.iter().map(|(_, f)| f.file_path.clone()).collect();
    let mut request = AppendFiles::new(files);
    request.branch = branch.to_string();
    match append(io, target, request).await {
        Ok(table) => Ok(table),
        Err(e) => {
            for path in paths {
                let _ = io.delete(&path).await;
            }
            Err(e)
        }
    }
}

async fn load(io: &FileIO, target: &CommitTarget<'_>) -> Result<TableMetadata> {
    match target {
        CommitTarget::Directory { location } => Ok(Table::load(io.clone(), location)
            .await?
            .metadata()
            .as_ref()
            .clone()),
        CommitTarget::Catalog {
            catalog,
            namespace,
            table,
        } => Ok(catalog
            .load_table(namespace, table)
            .await?
            .metadata()
            .as_ref()
            .clone()),
    }
}

/// One writer per partition tuple, rolled when a file reaches the target size.
async fn write_files(
    io: &FileIO,
    metadata: &TableMetadata,
    batches: &[RecordBatch],
) -> Result<Vec<(i32, DataFile)>> {
    let schema = metadata.current_schema();
    let spec = metadata
        .default_partition_spec()
        .ok_or_else(|| Error::corrupt("table metadata", "the default partition spec is missing"))?;
    let properties: HashMap<String, String> = metadata
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let target_size = properties
        .get(TARGET_FILE_SIZE_BYTES)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(TARGET_FILE_SIZE_DEFAULT);
    let mut open: Vec<(Vec<Option<Literal>>, DataFileWriter)> = Vec::new();
    let mut done: Vec<(i32, DataFile)> = Vec::new();
    let result: Result<()> = async {
        for batch in batches {
            for (tuple, rows) in split_by_partition(batch, spec, schema)? {
                let index = match open.iter().position(|(t, _)| *t == tuple) {
                    Some(i) => i,
                    None => {
                        let writer = new_writer(io, metadata, &tuple, &properties)?;
                        open.push((tuple.clone(), writer));
                        open.len() - 1
                    }
                };
                open[index].1.write(&rows).await?;
                if open[index].1.bytes_written() >= target_size {
                    let (tuple, writer) = open.swap_remove(index);
                    done.push(finish(spec.spec_id, tuple, writer).await?);
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        for (_, writer) in open {
            let _ = writer.abort().await;
        }
        for (_, file) in &done {
            let _ = io.delete(&file.file_path).await;
        }
        return Err(e);
    }
    for (tuple, writer) in open {
        done.push(finish(spec.spec_id, tuple, writer).await?);
    }
    Ok(done)
}

fn new_writer(
    io: &FileIO,
    metadata: &TableMetadata,
    tuple: &[Option<Literal>],
    properties: &HashMap<String, String>,
) -> Result<DataFileWriter> {
    let schema = metadata.current_schema();
    let spec = metadata
        .default_partition_spec()
        .ok_or_else(|| Error::corrupt("table metadata", "the default partition spec is missing"))?;
    let partition_path = match spec.is_unpartitioned() {
        true => String::new(),
        false => format!("{}/", spec.partition_path(schema, tuple)?),
    };
    let location = format!(
        "{}/data/{partition_path}{}.parquet",
        metadata.location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    );
    let resolved = io.resolve(&location)?;
    DataFileWriter::new(
        resolved.store,
        resolved.path,
        location,
        schema,
        WriterOptions::from_properties(properties)?,
    )
}

async fn finish(
    spec_id: i32,
    tuple: Vec<Option<Literal>>,
    writer: DataFileWriter,
) -> Result<(i32, DataFile)> {
    let mut file = writer.close().await?;
    file.partition = tuple;
    Ok((spec_id, file))
}

#[cfg(test)]
#[path = "append_tests.rs"]
mod tests;

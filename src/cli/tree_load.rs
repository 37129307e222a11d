//! Loading what `icefloe tree` draws: the table, every snapshot's manifest list and every
//! manifest (each read once, however many snapshots list it), through the walk the
//! metadata tables read with. Read errors are kept in the tree
//! so that a broken file shows up in place instead of hiding the rest.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use futures::StreamExt;

use super::args::{TreeArgs, relocation_of};
use super::tree::{ManifestTree, SnapshotTree, TableTree, TreeOptions, render_tree};
use super::{CliError, CliResult};
use super::{catalog_table_name, open_catalog};
use crate::io::{FileIO, StorageProperties};
use crate::metadata_tables::walk;
use crate::spec::{ManifestEntry, ManifestFile, Snapshot};
use crate::table::locate::{Access, current_version, is_metadata_file, looks_like_catalog_name};
use crate::{Error, Table};

type Entries = Result<Arc<Vec<ManifestEntry>>, Arc<Error>>;
type Listed = Result<Arc<Vec<ManifestFile>>, Arc<Error>>;

/// `icefloe tree`: loads the table of `args` and draws its tree to `out`.
pub async fn run_tree<W: Write>(args: &TreeArgs, out: &mut W) -> CliResult<()> {
    let io = FileIO::new(
        Arc::new(RuntimeEnv::default()),
        relocation_of(&args.relocate),
    )
    .with_storage(StorageProperties::from_pairs(args.properties.clone()));
    let (table, pointer) = open_table(args, io).await?;
    let mut tree = load_tree(&table, args.location.clone(), Some(pointer)).await;
    if args.catalog.is_none() {
        tree.location_aliases.push(args.location.clone());
    }
    let options = TreeOptions {
        max_files: args.max_files,
    };
    out.write_all(render_tree(&tree, options).as_bytes())?;
    out.flush()?;
    match tree.unreadable() {
        0 => Ok(()),
        n => Err(CliError::Unreadable(n)),
    }
}

/// The table of `args` and how its metadata file was found.
async fn open_table(args: &TreeArgs, io: FileIO) -> CliResult<(Table, String)> {
    match &args.catalog {
        Some(spec) => {
            let ident = catalog_table_name(&args.location)?;
            let catalog = open_catalog(spec, &args.properties, io).await?;
            let table = catalog.load_table(&ident).await?;
            let pointer = format!("catalog {spec} {ident}");
            Ok((table, pointer))
        }
        None => {
            let pointer = describe_pointer(&io, &args.location).await;
            match Table::load(io, &args.location).await {
                Ok(table) => Ok((table, pointer)),
                Err(Error::NotFound { .. }) if looks_like_catalog_name(&args.location) => {
                    Err(CliError::Usage(format!(
                        "'{}' is not a table directory or metadata file; to draw a table of a \
                         catalog, name the catalog: icefloe tree --catalog FILE.db {}",
                        args.location, args.location
                    )))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// How a location leads to its metadata file: a metadata file itself, the version hint
/// (and the newer versions found after a stale one), or a listing of the metadata directory.
async fn describe_pointer(io: &FileIO, location: &str) -> String {
    if is_metadata_file(location) {
        return "metadata file".to_string();
    }
    match current_version(io, location, Access::Read).await {
        Ok(current) => {
            let mut text = current.found_by.to_string();
            for skipped in &current.skipped {
                text.push_str(&format!("; unreadable newer {skipped} skipped"));
            }
            text
        }
        Err(e) => format!("unresolved: {e}"),
    }
}

/// Reads every snapshot's manifests and their entries, through the same walk as the
/// `all_manifests` and `all_entries` relations ([`crate::metadata_tables::walk`]): manifest
/// lists and manifests read concurrently, each manifest once however many snapshots list it.
pub async fn load_tree(table: &Table, name: String, pointer: Option<String>) -> TableTree {
    let metadata = Arc::clone(table.metadata());
    let mut snapshots = metadata.snapshots.clone();
    snapshots.sort_by_key(|s| (s.sequence_number, s.timestamp_ms));
    let lists: Vec<(Snapshot, Listed)> = walk::manifest_lists(table.io(), &metadata, snapshots)
        .map(|(snapshot, listed)| (snapshot, listed.map_err(Arc::new)))
        .collect()
        .await;
    let manifests = walk::distinct_manifests(
        lists
            .iter()
            .filter_map(|(_, listed)| listed.as_ref().ok())
            .flat_map(|list| list.iter()),
    );
    let entries: HashMap<String, Entries> =
        walk::manifest_contents(table.io(), &metadata, manifests)
            .map(|(manifest, decoded)| {
                let entries = decoded.map(|m| Arc::new(m.entries)).map_err(Arc::new);
                (manifest.manifest_path, entries)
            })
            .collect()
            .await;
    let snapshots = lists
        .into_iter()
        .map(|(snapshot, listed)| SnapshotTree {
            snapshot,
            manifests: listed.map(|files| {
                files
                    .iter()
                    .cloned()
                    .map(|manifest| ManifestTree {
                        entries: entries[&manifest.manifest_path].clone(),
                        manifest,
                    })
                    .collect()
            }),
        })
        .collect();
    let relocated = table
        .io()
        .relocation()
        .apply(&metadata.location)
        .into_owned();
    TableTree {
        name,
        pointer,
        metadata_location: table.metadata_location().to_string(),
        location_aliases: vec![relocated],
        metadata,
        snapshots,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_nested_namespaces_at_the_last_dot() {
        let ident = catalog_table_name("db.orders").unwrap();
        assert_eq!(
            (ident.namespace.dotted(), ident.name),
            ("db".into(), "orders".into())
        );
        let ident = catalog_table_name("nested.inner.t").unwrap();
        assert_eq!(ident.namespace.levels(), ["nested", "inner"]);
        assert_eq!(ident.name, "t");
        assert!(catalog_table_name("orders").is_err());
        assert!(catalog_table_name("db.").is_err());
    }
}

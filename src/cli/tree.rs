//! `icefloe tree`: a table's metadata tree drawn with box-drawing characters, the way a person
//! sketches it: pointer, metadata file, refs (branches and tags with their retention),
//! snapshots, manifest lists, manifests and data files.
//!
//! Rendering is pure: [`render_tree`] takes a [`TableTree`] already loaded (see
//! [`super::load_tree`]) and returns text; broken files show up as `error:` lines in place.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat};

use super::error_chain;
use crate::Error;
use crate::scan::partition_type;
use crate::spec::{
    DataContentType, FieldSummary, FileFormat, ManifestContent, ManifestEntry, ManifestFile,
    ManifestStatus, Snapshot, SnapshotReference, StructType, TableMetadata, Type,
};

/// A table's metadata tree, loaded.
#[derive(Debug, Clone)]
pub struct TableTree {
    /// The table as the user named it (directory, metadata file or `namespace.table`).
    pub name: String,
    /// How the metadata file was found (`metadata/version-hint.text -> 2`, a catalog row, ...).
    pub pointer: Option<String>,
    /// The metadata file read.
    pub metadata_location: String,
    /// Other spellings of the table location that paths are also shown relative to: the
    /// relocated location, the directory the user named.
    pub location_aliases: Vec<String>,
    /// Its contents.
    pub metadata: Arc<TableMetadata>,
    /// Every snapshot in the metadata, oldest first.
    pub snapshots: Vec<SnapshotTree>,
}

impl TableTree {
    /// How many files of the tree could not be read (each is drawn as an `error:` line): manifest
    /// lists, and manifests counted once however many snapshots list them.
    pub fn unreadable(&self) -> usize {
        let mut manifests = std::collections::BTreeSet::new();
        let mut lists = 0;
        for snapshot in &self.snapshots {
            match &snapshot.manifests {
                Err(_) => lists += 1,
                Ok(listed) => manifests.extend(
                    listed
                        .iter()
                        .filter(|m| m.entries.is_err())
                        .map(|m| m.manifest.manifest_path.as_str()),
                ),
            }
        }
        lists + manifests.len()
    }
}

/// One snapshot and its manifests.
#[derive(Debug, Clone)]
pub struct SnapshotTree {
    /// The snapshot.
    pub snapshot: Snapshot,
    /// Its manifests, or why they could not be read.
    pub manifests: Result<Vec<ManifestTree>, Arc<Error>>,
}

/// One manifest of a snapshot's manifest list and its entries.
#[derive(Debug, Clone)]
pub struct ManifestTree {
    /// The manifest list entry.
    pub manifest: ManifestFile,
    /// The manifest's entries (shared by every snapshot that lists the manifest), or why they
    /// could not be read.
    pub entries: Result<Arc<Vec<ManifestEntry>>, Arc<Error>>,
}

/// The leaf that shows why a file could not be read: the error and its causes.
fn error_leaf(e: &Error) -> Node {
    Node::leaf(format!("error: {}", error_chain(e)))
}

/// How much to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeOptions {
    /// Entries shown per manifest before the rest are counted as `… and K more`.
    pub max_files: usize,
}

impl Default for TreeOptions {
    fn default() -> Self {
        Self { max_files: 20 }
    }
}

/// A node of a drawn tree: a one-line label and its children.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    /// The text on the node's line.
    pub label: String,
    /// The nodes below it.
    pub children: Vec<Node>,
}

impl Node {
    fn leaf(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            children: Vec::new(),
        }
    }

    fn new(label: impl Into<String>, children: Vec<Node>) -> Self {
        Self {
            label: label.into(),
            children,
        }
    }

    /// Draws the tree: the root's label, then its descendants behind `├── `, `└── ` and `│   `.
    pub fn draw(&self) -> String {
        let mut out = format!("{}\n", self.label);
        draw_children(&self.children, "", &mut out);
        out
    }
}

fn draw_children(children: &[Node], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, indent) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let _ = writeln!(out, "{prefix}{branch}{}", child.label);
        draw_children(&child.children, &format!("{prefix}{indent}"), out);
    }
}

/// Draws a loaded table tree.
pub fn render_tree(tree: &TableTree, options: TreeOptions) -> String {
    build_tree(tree, options).draw()
}

/// The nodes of a loaded table tree.
pub fn build_tree(tree: &TableTree, options: TreeOptions) -> Node {
    let renderer = Renderer {
        metadata: &tree.metadata,
        aliases: &tree.location_aliases,
        options,
    };
    let mut shown = HashSet::new();
    let refs = refs_node(&tree.metadata);
    let snapshots = refs
        .into_iter()
        .chain(
            tree.snapshots
                .iter()
                .map(|s| renderer.snapshot_node(s, &mut shown)),
        )
        .collect();
    let metadata_label = format!(
        "{}  {}",
        renderer.relative(&tree.metadata_location),
        metadata_summary(&tree.metadata)
    );
    let root_label = match &tree.pointer {
        Some(pointer) => format!("{}  (pointer: {pointer})", tree.name),
        None => tree.name.clone(),
    };
    Node::new(root_label, vec![Node::new(metadata_label, snapshots)])
}

fn metadata_summary(metadata: &TableMetadata) -> String {
    let current = metadata
        .current_snapshot_id
        .filter(|id| *id >= 0)
        .map_or_else(|| "none".to_string(), |id| id.to_string());
    format!(
        "format v{}, uuid {}, location {}, current snapshot {current}",
        metadata.format_version as u8,
        metadata.table_uuid.as_deref().unwrap_or("-"),
        metadata.location,
    )
}

/// The `refs` block: `main` first, then the other branches, then the tags, each with its
/// retention fields; `None` when the table has no refs.
fn refs_node(metadata: &TableMetadata) -> Option<Node> {
    let mut refs: Vec<(&String, &SnapshotReference)> = metadata.refs.iter().collect();
    if refs.is_empty() {
        return None;
    }
    refs.sort_by_key(|(name, r)| {
        (
            name.as_str() != SnapshotReference::MAIN_BRANCH,
            !r.is_branch(),
            name.as_str(),
        )
    });
    let lines = refs
        .into_iter()
        .map(|(name, r)| Node::leaf(ref_label(metadata, name, r)))
        .collect();
    Some(Node::new("refs", lines))
}

/// `branch main -> 123`, `tag v1 -> 111 (max-ref-age-ms 86400000)`.
pub fn ref_label(metadata: &TableMetadata, name: &str, reference: &SnapshotReference) -> String {
    let (kind, min_keep, max_snapshot_age, max_ref_age) = reference.retention_fields();
    let min_keep = min_keep.map(i64::from);
    let mut details: Vec<String> = [
        ("min-snapshots-to-keep", min_keep),
        ("max-snapshot-age-ms", max_snapshot_age),
        ("max-ref-age-ms", max_ref_age),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.map(|v| format!("{key} {v}")))
    .collect();
    if metadata.snapshot_by_id(reference.snapshot_id).is_none() {
        details.push("snapshot not in the metadata".to_string());
    }
    let mut label = format!("{kind} {name} -> {}", reference.snapshot_id);
    if !details.is_empty() {
        let _ = write!(label, " ({})", details.join(", "));
    }
    label
}

struct Renderer<'a> {
    metadata: &'a TableMetadata,
    aliases: &'a [String],
    options: TreeOptions,
}

impl Renderer<'_> {
    /// `path` relative to the table location (or one of its aliases) when it lies under it.
    fn relative<'p>(&self, path: &'p str) -> &'p str {
        std::iter::once(&self.metadata.location)
            .chain(self.aliases)
            .map(|base| relative_to(path, base))
            .find(|rel| rel.len() < path.len())
            .unwrap_or(path)
    }

    fn snapshot_node(&self, tree: &SnapshotTree, shown: &mut HashSet<String>) -> Node {
        let snapshot = &tree.snapshot;
        let children = match &tree.manifests {
            Ok(manifests) => manifests
                .iter()
                .map(|m| self.manifest_node(snapshot, m, shown))
                .collect(),
            Err(e) => vec![error_leaf(e)],
        };
        let list_label = match &snapshot.manifest_list {
            Some(list) => format!("manifest list {}", self.relative(list)),
            None => "manifests (listed in the metadata file)".to_string(),
        };
        let mut nodes = vec![Node::new(list_label, children)];
        nodes.extend(self.statistics_nodes(snapshot.snapshot_id));
        Node::new(self.snapshot_label(snapshot), nodes)
    }

    /// The snapshot's statistics files (spec: "Table Statistics", "Partition Statistics"):
    /// a Puffin file with a line per blob, and a partition statistics file.
    fn statistics_nodes(&self, snapshot_id: i64) -> Vec<Node> {
        let metadata = self.metadata;
        let mut nodes = Vec::new();
        for file in metadata
            .statistics
            .iter()
            .filter(|f| f.snapshot_id == snapshot_id)
        {
            let blobs = file.blobs();
            let blobs = blobs.iter().map(|b| {
                let columns: Vec<String> =
                    b.fields.iter().map(|id| self.column_name(*id)).collect();
                let ndv = b
                    .ndv()
                    .map_or_else(String::new, |(_, n)| format!("  ndv {n}"));
                Node::leaf(format!("blob {} of {}{ndv}", b.kind, columns.join(", ")))
            });
            let label = format!(
                "statistics {}  {} bytes, footer {}",
                self.relative(&file.statistics_path),
                file.file_size_in_bytes,
                file.file_footer_size_in_bytes
            );
            nodes.push(Node::new(label, blobs.collect()));
        }
        let partition = metadata.partition_statistics.iter();
        for file in partition.filter(|f| f.snapshot_id == snapshot_id) {
            nodes.push(Node::leaf(format!(
                "partition statistics {}  {} bytes",
                self.relative(&file.statistics_path),
                file.file_size_in_bytes
            )));
        }
        nodes
    }

    fn snapshot_label(&self, s: &Snapshot) -> String {
        let parent = s
            .parent_snapshot_id
            .map_or_else(|| "-".into(), |p| p.to_string());
        let operation = s.summary.as_ref().map_or("-", |sum| sum.operation.as_str());
        let schema = s.schema_id.map_or_else(|| "-".into(), |id| id.to_string());
        let mut label = format!(
            "snapshot {}  parent {parent}  seq {}  {operation}  {}  schema {schema}",
            s.snapshot_id,
            s.sequence_number,
            format_timestamp_ms(s.timestamp_ms)
        );
        let refs: Vec<&str> = self
            .metadata
            .refs
            .iter()
            .filter(|(_, r)| r.snapshot_id == s.snapshot_id)
            .map(|(name, _)| name.as_str())
            .collect();
        if !refs.is_empty() {
            let _ = write!(label, "  refs {}", refs.join(", "));
        }
        if self.metadata.current_snapshot_id == Some(s.snapshot_id) {
            label.push_str(" (current)");
        }
        label
    }

    fn manifest_node(
        &self,
        snapshot: &Snapshot,
        tree: &ManifestTree,
        shown: &mut HashSet<String>,
    ) -> Node {
        let m = &tree.manifest;
        let label = self.manifest_label(m, m.added_snapshot_id != snapshot.snapshot_id);
        // A manifest's files are drawn once, under the first snapshot that lists it.
        if !shown.insert(m.manifest_path.clone()) {
            return Node::leaf(label);
        }
        let children = match &tree.entries {
            Ok(entries) => self.entry_nodes(m, entries),
            Err(e) => vec![error_leaf(e)],
        };
        Node::new(label, children)
    }

    fn manifest_label(&self, m: &ManifestFile, reused: bool) -> String {
        let content = match m.content {
            ManifestContent::Data => "data",
            ManifestContent::Deletes => "deletes",
        };
        let mut label = format!(
            "manifest {}  {content}  spec {}  added by snapshot {}{}  files +{} ~{} -{}  rows +{} ~{} -{}",
            self.relative(&m.manifest_path),
            m.partition_spec_id,
            m.added_snapshot_id,
            if reused { " (reused)" } else { "" },
            count(m.added_files_count),
            count(m.existing_files_count),
            count(m.deleted_files_count),
            count(m.added_rows_count),
            count(m.existing_rows_count),
            count(m.deleted_rows_count),
        );
        if let Some(ranges) = self.partition_ranges(m) {
            let _ = write!(label, "  partitions {ranges}");
        }
        label
    }

    /// The partition type of a manifest's spec, when the metadata knows the spec.
    fn partition_type(&self, spec_id: i32) -> Option<StructType> {
        let spec = self.metadata.partition_spec_by_id(spec_id)?;
        partition_type(self.metadata, spec).ok()
    }

    fn partition_ranges(&self, m: &ManifestFile) -> Option<String> {
        let summaries = m.partitions.as_ref().filter(|s| !s.is_empty())?;
        let ty = self.partition_type(m.partition_spec_id);
        let ranges: Vec<String> = summaries
            .iter()
            .enumerate()
            .map(|(i, summary)| {
                let field = ty.as_ref().and_then(|t| t.fields.get(i));
                let name = field.map_or_else(|| format!("#{i}"), |f| f.name.clone());
                let ty = field.map(|f| &f.field_type);
                format!("{name}={}", summary_range(summary, ty))
            })
            .collect();
        Some(ranges.join(", "))
    }

    fn entry_nodes(&self, m: &ManifestFile, entries: &[ManifestEntry]) -> Vec<Node> {
        let ty = self.partition_type(m.partition_spec_id);
        let max = self.options.max_files;
        let mut nodes: Vec<Node> = entries
            .iter()
            .take(max)
            .map(|e| Node::leaf(self.entry_label(e, ty.as_ref())))
            .collect();
        if entries.len() > max {
            nodes.push(Node::leaf(format!("… and {} more", entries.len() - max)));
        }
        nodes
    }

    fn entry_label(&self, entry: &ManifestEntry, ty: Option<&StructType>) -> String {
        let file = &entry.data_file;
        let kind = match file.content {
            DataContentType::Data => "data",
            DataContentType::PositionDeletes if file.file_format == FileFormat::Puffin => {
                "deletion vector"
            }
            DataContentType::PositionDeletes => "position deletes",
            DataContentType::EqualityDeletes => "equality deletes",
        };
        let status = match entry.status {
            ManifestStatus::Added => "added",
            ManifestStatus::Existing => "existing",
            ManifestStatus::Deleted => "DELETED",
        };
        let mut label = format!(
            "{kind} {}  {status}  {} rows  {}",
            self.relative(&file.file_path),
            file.record_count,
            human_bytes(file.file_size_in_bytes)
        );
        if !file.partition.is_empty() {
            let _ = write!(
                label,
                "  partition {}",
                partition_tuple(&file.partition, ty)
            );
        }
        // What a delete file applies to: its data file, or the key columns it matches on.
        if let Some(target) = &file.referenced_data_file {
            let _ = write!(label, "  -> {}", self.relative(target));
        }
        if let Some(ids) = file.equality_ids.as_ref().filter(|ids| !ids.is_empty()) {
            let names: Vec<String> = ids.iter().map(|id| self.column_name(*id)).collect();
            let _ = write!(label, "  on ({})", names.join(", "));
        }
        label
    }

    /// A column's name in the current schema (or any older one), else `#id`.
    fn column_name(&self, id: i32) -> String {
        let metadata = self.metadata;
        std::iter::once(metadata.current_schema())
            .chain(metadata.schemas.iter().rev())
            .find_map(|s| s.columns().iter().find(|c| c.id == id))
            .map_or_else(|| format!("#{id}"), |c| c.name.clone())
    }
}

fn count<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// `[lower, upper]` of a partition field summary, decoded with the field's type.
fn summary_range(summary: &FieldSummary, ty: Option<&Type>) -> String {
    let decode = |bytes: &Option<Vec<u8>>| -> String {
        match (bytes, ty) {
            (None, _) => "null".into(),
            (Some(b), Some(Type::Primitive(p))) => crate::spec::Literal::from_bytes(p, b)
                .map_or_else(|_| "?".into(), |v| v.display(p).to_string()),
            (Some(_), _) => "?".into(),
        }
    };
    let mut text = if summary.lower_bound.is_none() && summary.upper_bound.is_none() {
        "[null]".to_string()
    } else {
        format!(
            "[{}, {}]",
            decode(&summary.lower_bound),
            decode(&summary.upper_bound)
        )
    };
    if summary.contains_null && !text.starts_with("[null]") {
        text.push_str(" with nulls");
    }
    text
}

/// `{name=value, ...}` of a data file's partition tuple.
fn partition_tuple(values: &[Option<crate::spec::Literal>], ty: Option<&StructType>) -> String {
    let parts: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let field = ty.and_then(|t| t.fields.get(i));
            let name = field.map_or_else(|| format!("#{i}"), |f| f.name.clone());
            let text = match (value, field.map(|f| &f.field_type)) {
                (None, _) => "null".to_string(),
                (Some(v), Some(Type::Primitive(p))) => v.display(p).to_string(),
                (Some(v), _) => format!("{v:?}"),
            };
            format!("{name}={text}")
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// `path` relative to `base` when it lies under it (`file:` spellings compared alike).
pub fn relative_to<'p>(path: &'p str, base: &str) -> &'p str {
    let strip_scheme = |p: &'p str| -> &'p str {
        p.strip_prefix("file://")
            .or_else(|| p.strip_prefix("file:"))
            .unwrap_or(p)
    };
    let base = base
        .strip_prefix("file://")
        .or_else(|| base.strip_prefix("file:"))
        .unwrap_or(base);
    let base = base.trim_end_matches('/');
    let candidates = [path, strip_scheme(path)];
    candidates
        .iter()
        .find_map(|p| p.strip_prefix(base).and_then(|rest| rest.strip_prefix('/')))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(path)
}

/// An ISO-8601 UTC time of epoch milliseconds (`2024-01-01T00:00:00Z`).
pub fn format_timestamp_ms(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms"),
        |t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
    )
}

/// A byte count for people: `512 B`, `2.0 KiB`, `1.5 MiB`.
pub fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes.abs() < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;

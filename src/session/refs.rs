//! Table states by name: `t.branch_<name>`, `t.tag_<name>` (Spark's forms) and `"t@<ref or
//! snapshot id>"`.
//!
//! | name | reads |
//! |---|---|
//! | `<t>.branch_<b>` | branch `b` (current schema); `branch_main` is the current snapshot |
//! | `<t>.tag_<g>` | tag `g` (the tagged snapshot's schema) |
//! | `<t>.snapshot_id_<id>` | snapshot `id` (its schema) |
//! | `<t>.at_timestamp_<ms>` | the snapshot current at `ms` epoch milliseconds |
//! | `"<t>@<ref>"`, `"<t>@<id>"` | a branch or tag; a snapshot id when no ref has that name |
//! | `<t>.<relation>`, `"<t>$<relation>"` | a metadata table (`snapshots`, `files`, ...: [`MetadataTableKind`]) |
//!
//! A metadata table of a table read at a state (`"t@v1$files"`, or a table registered at a ref)
//! shows that state when the relation is per snapshot (`files`, `manifests`, ...), and the
//! whole table otherwise.
//!
//! `<t>.<name>` is a two-part name for a table of the default schema (DataFusion reads `t` as a
//! schema; [`RefsCatalog`] answers for it) and a three-part name `ns.t.<name>` for a table of a
//! namespace of a catalog registered with
//! [`register_catalog_as_default`](crate::session::register_catalog_as_default) (which registers
//! one DataFusion catalog per namespace). `"<t>@<ref>"` is one quoted identifier, valid wherever
//! the table name is: `"orders@audit"`, `db."orders@audit"`, `db."orders$files"`. SQL folds
//! unquoted names to lower case; quote mixed-case ref names: `db.orders."branch_Dev"`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::common::plan_err;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DFResult};

use crate::error::Error;
use crate::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use crate::provider::IcebergTableProvider;
use crate::spec::snapshot::{SnapshotReference, SnapshotRetention};
use crate::spec::{SnapshotSelector, TableMetadata};

/// What a derived table name (`branch_x`, `tag_x`, ...) asks of its table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Derived {
    Branch(String),
    Tag(String),
    SnapshotId(i64),
    AsOfTimestamp(i64),
}

impl Derived {
    /// Reads Spark's names of table states; `None` for any other name.
    fn parse(name: &str) -> Option<Self> {
        let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(branch) = name.strip_prefix("branch_") {
            nonempty(branch).map(Self::Branch)
        } else if let Some(tag) = name.strip_prefix("tag_") {
            nonempty(tag).map(Self::Tag)
        } else if let Some(id) = name.strip_prefix("snapshot_id_") {
            id.parse().ok().map(Self::SnapshotId)
        } else if let Some(ms) = name.strip_prefix("at_timestamp_") {
            ms.parse().ok().map(Self::AsOfTimestamp)
        } else {
            None
        }
    }

    /// The selector, after checking that a `branch_`/`tag_` name names a ref of that kind.
    fn selector(&self, metadata: &TableMetadata) -> Result<SnapshotSelector, Error> {
        let kind_of = |name: &str| metadata.refs.get(name).map(|r| &r.retention);
        Ok(match self {
            Self::Branch(name) => match kind_of(name) {
                Some(SnapshotRetention::Tag { .. }) => {
                    return Err(wrong_kind(name, "a tag", "a branch", "tag_"));
                }
                Some(_) => SnapshotSelector::Ref(name.clone()),
                None if name == SnapshotReference::MAIN_BRANCH => SnapshotSelector::Current,
                None => SnapshotSelector::Ref(name.clone()),
            },
            Self::Tag(name) => match kind_of(name) {
                Some(SnapshotRetention::Branch { .. }) => {
                    return Err(wrong_kind(name, "a branch", "a tag", "branch_"));
                }
                _ => SnapshotSelector::Ref(name.clone()),
            },
            Self::SnapshotId(id) => SnapshotSelector::SnapshotId(*id),
            Self::AsOfTimestamp(ms) => SnapshotSelector::AsOfTimestamp(*ms),
        })
    }
}

fn wrong_kind(name: &str, is: &str, wanted: &str, prefix: &str) -> Error {
    Error::invalid(
        format_args!("ref '{name}'"),
        format_args!("is {is}, not {wanted} (name it {prefix}{name})"),
    )
}

/// The state a name given as a string asks for: the ref of that name; else, for a string of
/// digits, that snapshot id; `main` is the current snapshot also in a table without refs. An
/// unknown name stays a ref, which resolving reports as unknown.
pub(crate) fn selector_for_name(metadata: &TableMetadata, name: &str) -> SnapshotSelector {
    if metadata.refs.contains_key(name) {
        return SnapshotSelector::Ref(name.to_string());
    }
    if name == SnapshotReference::MAIN_BRANCH {
        return SnapshotSelector::Current;
    }
    match name.parse::<i64>() {
        Ok(id) => SnapshotSelector::SnapshotId(id),
        Err(_) => SnapshotSelector::Ref(name.to_string()),
    }
}

/// Whether `<t>.<name>` names a table derived from `t` (a state or a metadata table).
fn is_derived(name: &str) -> bool {
    Derived::parse(name).is_some() || MetadataTableKind::parse(name).is_some()
}

/// The table `<table_name>.<name>` derived from `base`: a ref or another state of it, or a
/// metadata table (see the module docs). `Ok(None)` when `name` is no derived name. The one place
/// such names are read.
pub(crate) fn derived_table(
    table_name: &str,
    base: &Arc<dyn TableProvider>,
    name: &str,
) -> DFResult<Option<Arc<dyn TableProvider>>> {
    if let Some(kind) = MetadataTableKind::parse(name) {
        return metadata_table(table_name, base, kind).map(Some);
    }
    let Some(derived) = Derived::parse(name) else {
        return Ok(None);
    };
    let asked = format!("{table_name}.{name}");
    let iceberg = iceberg(base, &asked, table_name)?;
    let at = derived
        .selector(iceberg.table().metadata())
        .and_then(|selector| iceberg.at(selector))
        .map_err(|e| DataFusionError::from(e).context(format!("reading {asked}")))?;
    Ok(Some(Arc::new(at)))
}

/// What follows a table's name in one quoted identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suffix<'a> {
    /// `"t@<ref or snapshot id>"`.
    At(&'a str),
    /// `"t$<relation>"`.
    Metadata(MetadataTableKind),
}

/// Splits `"t$<relation>"` (the last `$` followed by a relation name) or `"t@<ref>"` (the first
/// `@`) into the base table's name and the suffix; `None` for other names.
pub(crate) fn split_suffixed(name: &str) -> Option<(&str, Suffix<'_>)> {
    if let Some((table, relation)) = name.rsplit_once('$')
        && let Some(kind) = MetadataTableKind::parse(relation)
    {
        return Some((table, Suffix::Metadata(kind)));
    }
    let (table, at) = name.split_once('@')?;
    Some((table, Suffix::At(at)))
}

/// The table a suffixed name asks for, derived from `base` (the table `table_name`).
pub(crate) fn suffixed_table(
    table_name: &str,
    base: &Arc<dyn TableProvider>,
    suffix: Suffix<'_>,
) -> DFResult<Arc<dyn TableProvider>> {
    match suffix {
        Suffix::At(at) => table_at(table_name, base, at),
        Suffix::Metadata(kind) => metadata_table(table_name, base, kind),
    }
}

/// The metadata table `kind` of `base`: per-snapshot relations at `base`'s state, the others
/// of the whole table.
pub(crate) fn metadata_table(
    table_name: &str,
    base: &Arc<dyn TableProvider>,
    kind: MetadataTableKind,
) -> DFResult<Arc<dyn TableProvider>> {
    let asked = format!("{table_name}${kind}");
    let iceberg = iceberg(base, &asked, table_name)?;
    let selector = match kind.per_snapshot() {
        true => iceberg.selector().clone(),
        false => SnapshotSelector::Current,
    };
    let table = IcebergMetadataTable::try_new(iceberg.table().clone(), kind, selector)
        .map_err(|e| DataFusionError::from(e).context(format!("reading {asked}")))?;
    Ok(Arc::new(table))
}

/// The table `"<table_name>@<suffix>"`: `base` at the ref (or snapshot id) `suffix`.
pub(crate) fn table_at(
    table_name: &str,
    base: &Arc<dyn TableProvider>,
    suffix: &str,
) -> DFResult<Arc<dyn TableProvider>> {
    let asked = format!("{table_name}@{suffix}");
    let iceberg = iceberg(base, &asked, table_name)?;
    let selector = selector_for_name(iceberg.table().metadata(), suffix);
    let at = iceberg
        .at(selector)
        .map_err(|e| DataFusionError::from(e).context(format!("reading {asked}")))?;
    Ok(Arc::new(at))
}

fn iceberg<'a>(
    base: &'a Arc<dyn TableProvider>,
    asked: &str,
    table_name: &str,
) -> DFResult<&'a IcebergTableProvider> {
    match base.downcast_ref::<IcebergTableProvider>() {
        Some(iceberg) => Ok(iceberg),
        None => plan_err!(
            "{asked} names a state or a metadata table of an Iceberg table, and {table_name} is \
             not one"
        ),
    }
}

/// A catalog that answers as `inner` does, and also serves each table `t` of the schema
/// `default_schema` as a schema named `t` whose tables are `t`'s refs ([`TableRefsSchema`]), so
/// that `t.branch_x` resolves. Every schema it returns is wrapped in a [`RefsSchema`].
#[derive(Debug)]
pub(crate) struct RefsCatalog {
    inner: Arc<dyn CatalogProvider>,
    default_schema: String,
}

impl RefsCatalog {
    pub(crate) fn new(inner: Arc<dyn CatalogProvider>, default_schema: impl Into<String>) -> Self {
        Self {
            inner,
            default_schema: default_schema.into(),
        }
    }
}

impl CatalogProvider for RefsCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if let Some(schema) = self.inner.schema(name) {
            return Some(RefsSchema::wrap(schema));
        }
        let default = self.inner.schema(&self.default_schema)?;
        default
            .table_exist(name)
            // Through `RefsSchema`, so that `t.branch_x` sees `t` refreshed, as `t` itself does.
            .then(|| {
                Arc::new(TableRefsSchema::new(RefsSchema::wrap(default), name))
                    as Arc<dyn SchemaProvider>
            })
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }

    fn deregister_schema(
        &self,
        name: &str,
        cascade: bool,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        self.inner.deregister_schema(name, cascade)
    }
}

/// A schema that answers as `inner` does, and also serves `"t@<ref>"` and `"t$<relation>"` for
/// its tables `t` (and `"t@<ref>$<relation>"`).
#[derive(Debug)]
pub(crate) struct RefsSchema {
    inner: Arc<dyn SchemaProvider>,
}

impl RefsSchema {
    /// `inner` wrapped, unless it already is.
    pub(crate) fn wrap(inner: Arc<dyn SchemaProvider>) -> Arc<dyn SchemaProvider> {
        if inner.is::<Self>() {
            inner
        } else {
            Arc::new(Self { inner })
        }
    }
}

impl RefsSchema {
    /// `"t$<relation>"` where `t` is an Iceberg table and `<relation>` no metadata table: an
    /// error naming the closest one and the list (`Ok(None)` for any other name).
    async fn unknown_metadata_table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let Some((table_name, relation)) = name.rsplit_once('$') else {
            return Ok(None);
        };
        let is_iceberg = match self.table(table_name).await? {
            Some(base) => base.downcast_ref::<IcebergTableProvider>().is_some(),
            None => false,
        };
        if !is_iceberg {
            return Ok(None);
        }
        let names = MetadataTableKind::ALL.map(MetadataTableKind::name);
        let hint = crate::error::closest(relation, names)
            .map(|c| format!("; did you mean \"{table_name}${c}\"?"))
            .unwrap_or_default();
        plan_err!(
            "no metadata table '{relation}' of {table_name}{hint} (the metadata tables are {})",
            names.join(", ")
        )
    }
}

#[async_trait]
impl SchemaProvider for RefsSchema {
    fn owner_name(&self) -> Option<&str> {
        self.inner.owner_name()
    }

    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.inner.table(name).await? {
            // A table registered once (`--table`, `ctx.register_table`) is as fresh in every
            // statement as a catalog's, which are loaded for each.
            if let Some(iceberg) = table.downcast_ref::<IcebergTableProvider>() {
                iceberg.refresh().await?;
            }
            return Ok(Some(table));
        }
        let Some((table_name, suffix)) = split_suffixed(name) else {
            return self.unknown_metadata_table(name).await;
        };
        // `self`, not `inner`: the base of `"t@v1$files"` is `"t@v1"`.
        match self.table(table_name).await? {
            Some(base) => suffixed_table(table_name, &base, suffix).map(Some),
            None => Ok(None),
        }
    }

    async fn table_type(&self, name: &str) -> DFResult<Option<TableType>> {
        match self.inner.table_type(name).await? {
            Some(table_type) => Ok(Some(table_type)),
            None => Ok(self.table(name).await?.map(|t| t.table_type())),
        }
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> DFResult<Option<Arc<dyn TableProvider>>> {
        self.inner.register_table(name, table)
    }

    fn deregister_table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        self.inner.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name)
    }
}

/// The states of one table as a schema: its tables are `branch_<b>`, `tag_<g>`,
/// `snapshot_id_<id>`, `at_timestamp_<ms>` and the metadata tables (`snapshots`, ...), derived from the table `table` of `base`, which
/// is looked up afresh on every call.
///
/// `table_names` is empty: listing refs would mean loading the table in a synchronous call.
#[derive(Debug)]
pub(crate) struct TableRefsSchema {
    base: Arc<dyn SchemaProvider>,
    table: String,
}

impl TableRefsSchema {
    pub(crate) fn new(base: Arc<dyn SchemaProvider>, table: impl Into<String>) -> Self {
        Self {
            base,
            table: table.into(),
        }
    }
}

#[async_trait]
impl SchemaProvider for TableRefsSchema {
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        if !is_derived(name) {
            return Ok(None);
        }
        match self.base.table(&self.table).await? {
            Some(base) => derived_table(&self.table, &base, name),
            None => Ok(None),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        is_derived(name) && self.base.table_exist(&self.table)
    }
}

#[cfg(test)]
#[path = "refs_tests.rs"]
mod tests;

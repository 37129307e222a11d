//! Creating tables (spec: "Table Metadata", "Partitioning", "Sorting"): [`TableCreation`]
//! builds the first metadata file of a new table and writes it.
//!
//! Field ids are assigned the way Iceberg Java (`TypeUtil.assignFreshIds`) and PyIceberg
//! (`assign_fresh_schema_ids`) assign them: counting from 1, the fields of a struct get their
//! ids first, in order, and only then are their nested types visited, one field after the other
//! (a list's element id, a map's key then value id, before the element's or value's own
//! children). So `id long, point struct<x, y>, tags list<string>, name string` is numbered
//! `id`=1, `point`=2, `tags`=3, `name`=4, `x`=5, `y`=6, `tags.element`=7.
//!
//! Partition fields get ids from 1000 and Java's names: the source name for `identity`,
//! `<source>_bucket`, `<source>_trunc`, `<source>_year`, `_month`, `_day`, `_hour`, and
//! `<source>_null` for `void`. Partition terms parse from text ([`parse_partition_term`]):
//!
//! | term | transform |
//! |---|---|
//! | `x`, `identity(x)` | identity |
//! | `bucket(16, x)` | `bucket[16]` |
//! | `truncate(4, x)` | `truncate[4]` |
//! | `year(x)`, `month(x)`, `day(x)`, `hour(x)` (also Spark's `years`, `months`, `days`, `hours`) | year, month, day, hour |
//! | `void(x)` | void |
//!
//! The metadata follows the spec for each format version: a fresh `table-uuid`,
//! `last-column-id` the highest field id, `last-partition-id` the highest partition field id
//! (999 when unpartitioned), sort order 0 (unsorted) unless a sort order is given (then its id
//! is 1), no snapshots and no refs, `current-snapshot-id` -1, and in v3 `next-row-id` 0.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, TimeUnit};

use crate::error::{Error, Result};
use crate::spec::partition::PARTITION_DATA_ID_START;
use crate::spec::properties::FORMAT_VERSION;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{
    FormatVersion, ListType, MapType, NestedField, PartitionField, PartitionSpec, PrimitiveType,
    Schema, SortField, SortOrder, StructType, TableMetadata, Transform, Type,
};
use crate::to_arrow::variant::is_variant;
use crate::to_arrow::{EXTENSION_NAME_KEY, WKB_EXTENSION, geo_type};

/// What a new table is made of: a schema, a partition spec, a sort order, properties and a
/// format version (2 unless asked otherwise).
///
/// ```no_run
/// # async fn example() -> icefloe::Result<()> {
/// use icefloe::FileIO;
/// use icefloe::spec::{NestedField, PrimitiveType, Schema};
/// use icefloe::write::TableCreation;
///
/// let schema = Schema::new(0, vec![
///     NestedField::required(1, "id", PrimitiveType::Long),
///     NestedField::optional(2, "order_ts", PrimitiveType::Timestamptz),
/// ]);
/// let table = TableCreation::new(schema)
///     .with_partitioning("day(order_ts), bucket(16, id)")?
///     .with_property("write.target-file-size-bytes", "134217728")
///     .create_at(&FileIO::default(), "/warehouse/db/orders")
///     .await?;
/// println!("{}", table.metadata_location());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TableCreation {
    schema: SchemaSource,
    partitioning: Vec<(String, Transform)>,
    sort: Vec<(String, Transform, SortDirection, NullOrder)>,
    /// Docs of top-level columns, by name.
    docs: BTreeMap<String, String>,
    /// v3 defaults of top-level columns, by name, as JSON single values.
    defaults: BTreeMap<String, serde_json::Value>,
    properties: BTreeMap<String, String>,
    format_version: FormatVersion,
}

/// Where the schema comes from; ids are assigned afresh either way.
#[derive(Debug, Clone)]
enum SchemaSource {
    Iceberg(Schema),
    Arrow(Arc<ArrowSchema>),
}

impl TableCreation {
    /// A table of `schema`; its field ids are replaced by fresh ones (see the module docs),
    /// identifier fields follow their fields.
    pub fn new(schema: Schema) -> Self {
        Self::with_source(SchemaSource::Iceberg(schema))
    }

    /// A table whose schema is an Arrow schema: non-nullable fields become required, types map
    /// as [`arrow_to_iceberg_type`] says (checked when the metadata is built).
    pub fn from_arrow(schema: Arc<ArrowSchema>) -> Self {
        Self::with_source(SchemaSource::Arrow(schema))
    }

    fn with_source(schema: SchemaSource) -> Self {
        Self {
            schema,
            partitioning: Vec::new(),
            sort: Vec::new(),
            docs: BTreeMap::new(),
            defaults: BTreeMap::new(),
            properties: BTreeMap::new(),
            format_version: FormatVersion::V2,
        }
    }

    /// Adds one partition field: `transform` of the column `source` (a top-level name, or a
    /// dotted path into structs).
    pub fn with_partition_field(mut self, source: impl Into<String>, transform: Transform) -> Self {
        self.partitioning.push((source.into(), transform));
        self
    }

    /// Adds the partition fields of a comma-separated list of terms (`day(ts), bucket(16, id)`;
    /// see [`parse_partition_term`]).
    pub fn with_partitioning(mut self, terms: &str) -> Result<Self> {
        for term in split_terms(terms) {
            self.partitioning.push(parse_partition_term(term)?);
        }
        Ok(self)
    }

    /// Adds a sort field: `transform` of `source`, in `direction`, nulls where `null_order` says.
    pub fn with_sort_field(
        mut self,
        source: impl Into<String>,
        transform: Transform,
        direction: SortDirection,
        null_order: NullOrder,
    ) -> Self {
        self.sort
            .push((source.into(), transform, direction, null_order));
        self
    }

    /// Documents the top-level column `column` (its `doc`).
    pub fn with_column_doc(mut self, column: impl Into<String>, doc: impl Into<String>) -> Self {
        self.docs.insert(column.into(), doc.into());
        self
    }

    /// v3: gives the top-level column `column` a default, in the spec's JSON single-value
    /// form: its `write-default` (what a writer that gives no value writes) and its
    /// `initial-default`. A table before format version 3 refuses it when built.
    pub fn with_column_default(
        mut self,
        column: impl Into<String>,
        value: serde_json::Value,
    ) -> Self {
        self.defaults.insert(column.into(), value);
        self
    }

    /// Sets a table property. `format-version` is not stored: it sets the format version.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }

    /// Sets table properties (see [`Self::with_property`]).
    pub fn with_properties<K: Into<String>, V: Into<String>>(
        mut self,
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (k, v) in properties {
            self.properties.insert(k.into(), v.into());
        }
        self
    }

    /// Sets the format version (default 2).
    pub fn with_format_version(mut self, version: FormatVersion) -> Self {
        self.format_version = version;
        self
    }

    /// The format version the table will have: the `format-version` property when set, else
    /// [`Self::with_format_version`]'s.
    pub fn format_version(&self) -> Result<FormatVersion> {
        match FORMAT_VERSION.explicit(&self.properties)? {
            None => Ok(self.format_version),
            Some(n) => FormatVersion::try_from(n),
        }
    }

    /// The first metadata of the table at `location` (pure: nothing is written).
    ///
    /// Errors ([`Error::InvalidArgument`] / [`Error::Unsupported`]): a partition or sort term
    /// naming no column, a transform the column's type does not allow, two partition fields of
    /// the same name or the same transform of one column, an Arrow type with no Iceberg
    /// counterpart, a v3 type in a v1 or v2 table.
    pub fn metadata(&self, location: &str) -> Result<TableMetadata> {
        let format_version = self.format_version()?;
        let schema = self.fresh_schema(format_version)?;
        check_types_allowed(&schema, format_version)?;
        let spec = self.partition_spec(&schema)?;
        let sort_order = self.sort_order(&schema)?;
        let mut properties = self.properties.clone();
        properties.remove(FORMAT_VERSION.key());
        Ok(TableMetadata {
            format_version,
            table_uuid: Some(uuid::Uuid::new_v4().to_string()),
            location: location.trim_end_matches('/').to_string(),
            last_sequence_number: 0,
            last_updated_ms: crate::io::now_ms(),
            last_column_id: schema.highest_field_id(),
            current_schema_id: schema.schema_id,
            schemas: vec![schema],
            default_spec_id: spec.spec_id,
            last_partition_id: spec
                .highest_field_id()
                .unwrap_or(PARTITION_DATA_ID_START - 1),
            partition_specs: vec![spec],
            properties,
            current_snapshot_id: None,
            snapshots: Vec::new(),
            snapshot_log: Vec::new(),
            metadata_log: Vec::new(),
            default_sort_order_id: sort_order.order_id,
            sort_orders: vec![sort_order],
            refs: BTreeMap::new(),
            statistics: Vec::new(),
            partition_statistics: Vec::new(),
            next_row_id: (format_version >= FormatVersion::V3).then_some(0),
            unknown_fields: serde_json::Map::new(),
        })
    }

    /// The schema with fresh ids, schema id 0.
    fn fresh_schema(&self, version: FormatVersion) -> Result<Schema> {
        let (fields, identifiers) = match &self.schema {
            SchemaSource::Iceberg(schema) => {
                let names: Vec<String> = schema
                    .identifier_field_ids
                    .iter()
                    .filter_map(|id| schema.field_by_id(*id).map(|f| f.name.clone()))
                    .collect();
                let fields = schema.columns().iter().map(|f| (**f).clone()).collect();
                (fields, names)
            }
            SchemaSource::Arrow(arrow) => {
                let fields = arrow
                    .fields()
                    .iter()
                    .map(|f| arrow_field(f, version, f.name()))
                    .collect::<Result<Vec<_>>>()?;
                (fields, Vec::new())
            }
        };
        let fields = self.with_docs_and_defaults(fields)?;
        let mut next = 0;
        let fresh = assign_fresh_ids(&fields, &mut next);
        let identifier_field_ids = identifiers
            .iter()
            .filter_map(|name| fresh.iter().find(|f| &f.name == name).map(|f| f.id))
            .collect();
        Ok(Schema::from_struct(
            0,
            identifier_field_ids,
            StructType::new(fresh),
        ))
    }

    /// `fields` with the docs and defaults given for them; a name that is no column, or a
    /// default that is no value of its column's type, is [`Error::InvalidArgument`].
    fn with_docs_and_defaults(&self, mut fields: Vec<NestedField>) -> Result<Vec<NestedField>> {
        let column = |name: &str| {
            let at = fields.iter().position(|f| f.name == name);
            at.ok_or_else(|| Error::invalid(format_args!("column '{name}'"), "is not in the table"))
        };
        let mut docs = Vec::new();
        for (name, doc) in &self.docs {
            docs.push((column(name)?, doc.clone()));
        }
        let mut defaults = Vec::new();
        for (name, value) in &self.defaults {
            defaults.push((column(name)?, value.clone()));
        }
        for (at, doc) in docs {
            fields[at].doc = Some(doc);
        }
        for (at, value) in defaults {
            let field = &mut fields[at];
            let what = || format!("the default of column '{}'", field.name);
            let Type::Primitive(ty) = &field.field_type else {
                return Err(Error::invalid(
                    what(),
                    "only primitive columns take a default",
                ));
            };
            crate::spec::Literal::from_json(ty, &value)
                .map_err(|e| Error::invalid(what(), format_args!("is no {ty}: {e}")))?;
            field.initial_default = Some(value.clone());
            field.write_default = Some(value);
        }
        Ok(fields)
    }

    fn partition_spec(&self, schema: &Schema) -> Result<PartitionSpec> {
        let mut fields: Vec<PartitionField> = Vec::new();
        for (i, (source, transform)) in self.partitioning.iter().enumerate() {
            let field = resolve_source(schema, source, transform, "partition")?;
            let name = partition_name(source, transform);
            let clashes_with_column = schema.field_by_name(&name).is_some()
                && !(*transform == Transform::Identity && name == *source);
            if clashes_with_column || fields.iter().any(|f| f.name == name) {
                return Err(Error::invalid(
                    format_args!("partition field name '{name}'"),
                    "is already used by a column or partition field",
                ));
            }
            if let Some(other) = fields
                .iter()
                .find(|f| f.source_id == field.id && same_kind(&f.transform, transform))
            {
                return Err(Error::invalid(
                    format_args!("partition term {transform}({source})"),
                    format_args!("is redundant with '{}' ({})", other.name, other.transform),
                ));
            }
            let offset = i32::try_from(i).unwrap_or(i32::MAX);
            fields.push(PartitionField {
                source_id: field.id,
                field_id: PARTITION_DATA_ID_START.saturating_add(offset),
                name,
                transform: transform.clone(),
            });
        }
        Ok(PartitionSpec { spec_id: 0, fields })
    }

    fn sort_order(&self, schema: &Schema) -> Result<SortOrder> {
        if self.sort.is_empty() {
            return Ok(SortOrder::unsorted());
        }
        let fields = self
            .sort
            .iter()
            .map(|(source, transform, direction, null_order)| {
                let field = resolve_source(schema, source, transform, "sort")?;
                Ok(SortField {
                    source_id: field.id,
                    transform: transform.clone(),
                    direction: *direction,
                    null_order: *null_order,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SortOrder {
            order_id: 1,
            fields,
        })
    }
}

/// Java and Spark reject a second time-based transform of one column (year and day of `ts`)
/// and any transform repeated on a column.
fn same_kind(a: &Transform, b: &Transform) -> bool {
    let temporal = |t: &Transform| {
        matches!(
            t,
            Transform::Year | Transform::Month | Transform::Day | Transform::Hour
        )
    };
    a == b || (temporal(a) && temporal(b))
}

/// The field a partition or sort term names (a dotted path through structs), checked against
/// its transform: a primitive column the transform applies to.
pub(crate) fn resolve_source<'a>(
    schema: &'a Schema,
    source: &str,
    transform: &Transform,
    what: &str,
) -> Result<&'a Arc<NestedField>> {
    let term = || format!("{what} term {transform}({source})");
    let mut fields = &schema.fields;
    let mut found = None;
    for part in source.split('.') {
        let field = fields.field_by_name(part).ok_or_else(|| {
            Error::invalid(term(), format_args!("no column '{source}' in the schema"))
        })?;
        if let Type::Struct(s) = &field.field_type {
            fields = s;
        }
        found = Some(field);
    }
    let field = found.ok_or_else(|| Error::invalid(term(), "no column named"))?;
    let Type::Primitive(p) = &field.field_type else {
        return Err(Error::invalid(
            term(),
            format_args!("column '{source}' has nested type {}", field.field_type),
        ));
    };
    if matches!(transform, Transform::Unknown(_)) || !transform.can_transform(p) {
        return Err(Error::invalid(
            term(),
            format_args!("transform {transform} is not valid for column '{source}' of type {p}"),
        ));
    }
    schema
        .field_by_id(field.id)
        .ok_or_else(|| Error::invalid(term(), "no column"))
}

/// Java's partition field name for a transform of `source` in a new table's spec
/// (`PartitionSpec.Builder`: `id_bucket`, `name_trunc`, `ts_day`, ...).
pub(crate) fn partition_name(source: &str, transform: &Transform) -> String {
    match transform {
        Transform::Identity => source.to_string(),
        Transform::Bucket(_) => format!("{source}_bucket"),
        Transform::Truncate(_) => format!("{source}_trunc"),
        Transform::Year => format!("{source}_year"),
        Transform::Month => format!("{source}_month"),
        Transform::Day => format!("{source}_day"),
        Transform::Hour => format!("{source}_hour"),
        Transform::Void => format!("{source}_null"),
        Transform::Unknown(name) => format!("{source}_{name}"),
    }
}

/// Java's name for a partition field added by partition evolution
/// (`BaseUpdatePartitionSpec.PartitionNameGenerator`): as [`partition_name`], but with the
/// bucket count and truncate width (`id_bucket_16`, `name_trunc_4`).
pub(crate) fn evolved_partition_name(source: &str, transform: &Transform) -> String {
    match transform {
        Transform::Bucket(n) => format!("{source}_bucket_{n}"),
        Transform::Truncate(w) => format!("{source}_trunc_{w}"),
        other => partition_name(source, other),
    }
}

/// Splits `a, bucket(16, b), c` at the commas outside parentheses; empty terms are dropped.
pub fn split_terms(terms: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in terms.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(terms[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(terms[start..].trim());
    out.retain(|t| !t.is_empty());
    out
}

/// Parses one partition term: `col`, `identity(col)`, `bucket(N, col)`, `truncate(W, col)`,
/// `year(col)`, `month(col)`, `day(col)`, `hour(col)` (or `years`, `months`, `days`, `hours`),
/// `void(col)`. Names are case-insensitive; a column may be quoted with `"` or backticks.
///
/// Errors: [`Error::InvalidArgument`] naming the term for an unknown transform, a missing or
/// non-positive count or width, or a malformed term.
pub fn parse_partition_term(term: &str) -> Result<(String, Transform)> {
    let bad = |why: &str| Error::invalid(format_args!("partition term '{term}'"), why);
    let t = term.trim();
    let Some(open) = t.find('(') else {
        let column = unquote(t);
        if column.is_empty() || column.contains([' ', ')', ',']) {
            return Err(bad("expected a column name or transform(column)"));
        }
        return Ok((column, Transform::Identity));
    };
    let inner = t[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| bad("missing ')'"))?;
    let name = t[..open].trim().to_ascii_lowercase();
    let args: Vec<&str> = inner.split(',').map(str::trim).collect();
    let width = |n: &str| -> Result<u32> {
        match n.parse::<i32>() {
            Ok(n) if n > 0 => Ok(n.unsigned_abs()),
            _ => Err(bad(&format!("'{n}' is not a positive integer"))),
        }
    };
    let unknown = || bad(&format!("unknown transform '{name}'"));
    let (transform, column) = match (name.as_str(), args.as_slice()) {
        ("bucket" | "truncate", [n, c]) => (transform_named(&name, Some(width(n)?)), *c),
        ("bucket" | "truncate", _) => return Err(bad(&format!("{name} takes (N, column)"))),
        (_, [c]) => (transform_named(&name, None), *c),
        _ if transform_named(&name, None).is_some() => {
            return Err(bad(&format!("{name} takes one column")));
        }
        _ => return Err(unknown()),
    };
    let transform = transform.ok_or_else(unknown)?;
    let column = unquote(column);
    if column.is_empty() {
        return Err(bad("no column named"));
    }
    Ok((column, transform))
}

/// The transform a SQL partition or sort term names: `identity`, `year`/`years`,
/// `month`/`months`, `day`/`days`, `hour`/`hours`, `void`, and with a `width` `bucket` and
/// `truncate` (names in lower case). `None` for another name, or a width where none is taken
/// or none where one is.
pub(crate) fn transform_named(name: &str, width: Option<u32>) -> Option<Transform> {
    Some(match (name, width) {
        ("bucket", Some(n)) => Transform::Bucket(n),
        ("truncate", Some(w)) => Transform::Truncate(w),
        (_, Some(_)) => return None,
        ("identity", None) => Transform::Identity,
        ("year" | "years", None) => Transform::Year,
        ("month" | "months", None) => Transform::Month,
        ("day" | "days", None) => Transform::Day,
        ("hour" | "hours", None) => Transform::Hour,
        ("void", None) => Transform::Void,
        (_, None) => return None,
    })
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '`'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    s.to_string()
}

/// Renumbers `fields` (and everything under them) with fresh ids: a struct's fields first, then
/// their nested types in order (Java `AssignFreshIds`, PyIceberg `_SetFreshIDs`). `next` is the
/// last id used.
pub fn assign_fresh_ids(fields: &[NestedField], next: &mut i32) -> Vec<NestedField> {
    let ids: Vec<i32> = fields
        .iter()
        .map(|_| {
            *next += 1;
            *next
        })
        .collect();
    fields
        .iter()
        .zip(ids)
        .map(|(f, id)| NestedField {
            id,
            field_type: fresh_type(&f.field_type, next),
            ..f.clone()
        })
        .collect()
}

fn fresh_type(t: &Type, next: &mut i32) -> Type {
    match t {
        Type::Primitive(_) => t.clone(),
        Type::Struct(s) => {
            let fields: Vec<NestedField> = s.fields.iter().map(|f| (**f).clone()).collect();
            Type::Struct(StructType::new(assign_fresh_ids(&fields, next)))
        }
        Type::List(l) => {
            *next += 1;
            let element = NestedField {
                id: *next,
                field_type: fresh_type(&l.element_field.field_type, next),
                ..(*l.element_field).clone()
            };
            Type::List(ListType {
                element_field: Arc::new(element),
            })
        }
        Type::Map(m) => {
            let key_id = *next + 1;
            let value_id = *next + 2;
            *next += 2;
            let key = NestedField {
                id: key_id,
                field_type: fresh_type(&m.key_field.field_type, next),
                ..(*m.key_field).clone()
            };
            let value = NestedField {
                id: value_id,
                field_type: fresh_type(&m.value_field.field_type, next),
                ..(*m.value_field).clone()
            };
            Type::Map(MapType {
                key_field: Arc::new(key),
                value_field: Arc::new(value),
            })
        }
    }
}

/// Rejects the types (and defaults) a format version does not have: `timestamp_ns`,
/// `timestamptz_ns`, `variant`, `geometry`, ... and `initial-default` need v3.
fn check_types_allowed(schema: &Schema, version: FormatVersion) -> Result<()> {
    let required_unknown = (1..=schema.highest_field_id())
        .filter_map(|id| schema.field_by_id(id))
        .find(|f| f.required && f.field_type == Type::Primitive(PrimitiveType::Unknown));
    if let Some(f) = required_unknown {
        return Err(Error::invalid(
            format_args!("column '{}' (unknown)", f.name),
            "must be optional: an unknown column holds nulls only",
        ));
    }
    match schema.field_needing_v3() {
        Some(f) if version < FormatVersion::V3 => Err(Error::invalid(
            format_args!("column '{}' ({})", f.name, f.field_type),
            format_args!(
                "{} format version 3, the table is v{}",
                match f.initial_default.is_some() || f.write_default.is_some() {
                    true => "has a default, which needs",
                    false => "needs",
                },
                version.number()
            ),
        )),
        _ => Ok(()),
    }
}

/// An Arrow field as an Iceberg field (id 0: ids are assigned afterwards).
fn arrow_field(field: &Field, version: FormatVersion, path: &str) -> Result<NestedField> {
    let field_type = arrow_to_iceberg_type(field, version, path)?;
    let mut f = NestedField::optional(0, field.name(), field_type);
    f.required = !field.is_nullable();
    Ok(f)
}

/// The Iceberg type of an Arrow field (`path` names the column in errors):
///
/// | Arrow | Iceberg |
/// |---|---|
/// | Boolean | boolean |
/// | Int8, Int16, Int32, UInt8, UInt16 | int |
/// | Int64, UInt32 | long |
/// | Float16, Float32 / Float64 | float / double |
/// | Decimal128/32/64(P,S), P <= 38 | decimal(P,S) |
/// | Date32, Date64 | date |
/// | Time32, Time64 | time |
/// | Timestamp(s/ms/µs) | timestamp, or timestamptz with a zone |
/// | Timestamp(ns) | timestamp_ns / timestamptz_ns in v3; timestamp / timestamptz (µs) before, as PyIceberg's `downcast-ns-timestamp-to-us-on-write` |
/// | Utf8, LargeUtf8, Utf8View | string |
/// | Binary, LargeBinary, BinaryView | binary |
/// | FixedSizeBinary(16) with `arrow.uuid` | uuid |
/// | FixedSizeBinary(L) | `fixed[L]` |
/// | Struct, List, LargeList, FixedSizeList, Map | struct, list, map (nullable element / value = optional) |
/// | Dictionary(K, V) | the type of V |
/// | Struct with the `arrow.parquet.variant` extension | variant |
/// | Binary, LargeBinary, BinaryView with the `geoarrow.wkb` extension | geometry, or geography with `"edges"` in its metadata (CRS from `"crs"`) |
/// | Null | unknown |
///
/// Anything else (UInt64, Interval, Duration, Union, ...) is [`Error::Unsupported`].
pub fn arrow_to_iceberg_type(field: &Field, version: FormatVersion, path: &str) -> Result<Type> {
    arrow_data_type(field.data_type(), field, version, path)
}

fn arrow_data_type(
    dt: &DataType,
    field: &Field,
    version: FormatVersion,
    path: &str,
) -> Result<Type> {
    use PrimitiveType as P;
    let v3 = version >= FormatVersion::V3;
    let p = match dt {
        DataType::Struct(_) if is_variant(field) => P::Variant,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            if field.extension_type_name() == Some(WKB_EXTENSION) =>
        {
            geo_type(field, path)?
        }
        DataType::Null => P::Unknown,
        DataType::Boolean => P::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => {
            P::Int
        }
        DataType::Int64 | DataType::UInt32 => P::Long,
        DataType::Float16 | DataType::Float32 => P::Float,
        DataType::Float64 => P::Double,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s)
            if *p <= 38 && *s >= 0 =>
        {
            P::Decimal {
                precision: u32::from(*p),
                scale: s.unsigned_abs().into(),
            }
        }
        DataType::Date32 | DataType::Date64 => P::Date,
        DataType::Time32(_) | DataType::Time64(_) => P::Time,
        DataType::Timestamp(TimeUnit::Nanosecond, tz) if v3 => match tz {
            Some(_) => P::TimestamptzNs,
            None => P::TimestampNs,
        },
        DataType::Timestamp(_, tz) => match tz {
            Some(_) => P::Timestamptz,
            None => P::Timestamp,
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => P::String,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => P::Binary,
        DataType::FixedSizeBinary(16)
            if field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str)
                == Some("arrow.uuid") =>
        {
            P::Uuid
        }
        DataType::FixedSizeBinary(len) if *len >= 0 => P::Fixed(len.unsigned_abs().into()),
        DataType::Dictionary(_, value) => return arrow_data_type(value, field, version, path),
        DataType::Struct(fields) => {
            let fields = fields
                .iter()
                .map(|f| arrow_field(f, version, &format!("{path}.{}", f.name())))
                .collect::<Result<Vec<_>>>()?;
            return Ok(Type::Struct(StructType::new(fields)));
        }
        DataType::List(element)
        | DataType::LargeList(element)
        | DataType::ListView(element)
        | DataType::LargeListView(element)
        | DataType::FixedSizeList(element, _) => {
            let mut e = arrow_field(element, version, &format!("{path}.element"))?;
            e.name = "element".into();
            return Ok(Type::List(ListType {
                element_field: Arc::new(e),
            }));
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unsupported(path, dt));
            };
            let [key, value] = kv.iter().collect::<Vec<_>>()[..] else {
                return Err(unsupported(path, dt));
            };
            let mut key = arrow_field(key, version, &format!("{path}.key"))?;
            key.name = "key".into();
            key.required = true;
            let mut value = arrow_field(value, version, &format!("{path}.value"))?;
            value.name = "value".into();
            return Ok(Type::Map(MapType {
                key_field: Arc::new(key),
                value_field: Arc::new(value),
            }));
        }
        other => return Err(unsupported(path, other)),
    };
    Ok(Type::Primitive(p))
}

fn unsupported(path: &str, dt: &DataType) -> Error {
    Error::Unsupported(format!(
        "column '{path}' has Arrow type {dt}, which has no Iceberg type"
    ))
}

#[cfg(test)]
#[path = "creation_tests.rs"]
mod tests;

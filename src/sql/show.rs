//! Statements that describe the session's tables, answered by icefloe rather than DataFusion
//! (whose `SHOW TABLES` lists every `information_schema` view of every catalog, whose
//! `SHOW CREATE TABLE` is empty for tables, and whose `DESCRIBE` knows Arrow types only):
//!
//! - `SHOW TABLES [IN|FROM ns] [LIKE 'pattern']`: `namespace`, `table_name`, one row per table of
//!   the default catalog, ordered by both;
//! - `SHOW NAMESPACES` (also `SHOW SCHEMAS`, `SHOW DATABASES`) `[LIKE 'pattern']`: `namespace`;
//! - `SHOW TBLPROPERTIES t [('key')]`: `key`, `value`, `format-version` first;
//! - `SHOW CREATE TABLE t`: `createtab_stmt`, a statement that makes the same table (columns,
//!   partition spec, properties) when every column type has an SQL form;
//! - `DESCRIBE t` (`DESC t`, `DESCRIBE TABLE t`): `column_name`, `data_type` (the Iceberg type),
//!   `field_id`, `required`, `doc`, one row per field (nested fields as `s.a`,
//!   `tags.element`, `m.key`), then `# partition` rows (the default spec's terms) and
//!   `# sort order` rows.
//!
//! Patterns take `%` and `_` as SQL's `LIKE`, and `*` as Spark's. `DESCRIBE` and
//! `SHOW CREATE TABLE` of a table that is not an Iceberg table go to DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::catalog::CatalogProvider;
use datafusion::common::TableReference;
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::dialect::significant_tokens;
use super::types::geo_sql_type;
use crate::IcebergTableProvider;
use crate::error::closest;
use crate::session::IcebergCatalogs;
use crate::spec::properties::WRITE_DISTRIBUTION_MODE;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{NestedField, PrimitiveType, Schema, TableMetadata, Transform, Type};

const INFORMATION_SCHEMA: &str = "information_schema";

/// One of the statements of this module, as read from its tokens.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Show {
    /// `SHOW TABLES`: the namespace named (its parts), and a pattern.
    Tables {
        within: Option<Vec<String>>,
        like: Option<String>,
    },
    /// `SHOW NAMESPACES`.
    Namespaces { like: Option<String> },
    /// `SHOW TBLPROPERTIES t [('key')]`.
    Properties {
        table: Vec<String>,
        key: Option<String>,
    },
    /// `SHOW CREATE TABLE t`.
    CreateTable(Vec<String>),
    /// `DESCRIBE t`.
    Describe(Vec<String>),
}

/// The statement `sql` is, when it is one of this module's; `normalize` lower-cases unquoted
/// names (DataFusion's `enable_ident_normalization`).
pub(super) fn parse_show(sql: &str, dialect: &dyn Dialect, normalize: bool) -> Option<Show> {
    let mut tokens = significant_tokens(sql, dialect)?
        .into_iter()
        .map(|t| t.token)
        .filter(|t| !matches!(t, Token::EOF))
        .collect::<Vec<_>>();
    if tokens.last() == Some(&Token::SemiColon) {
        tokens.pop();
    }
    let mut cursor = Cursor {
        tokens: &tokens,
        at: 0,
        normalize,
    };
    let show = if cursor.keyword("show") {
        if cursor.keyword("tables") {
            let within = if cursor.keyword("in") || cursor.keyword("from") {
                Some(cursor.name()?)
            } else {
                None
            };
            Show::Tables {
                within,
                like: cursor.like()?,
            }
        } else if ["namespaces", "schemas", "databases"]
            .iter()
            .any(|k| cursor.keyword(k))
        {
            Show::Namespaces {
                like: cursor.like()?,
            }
        } else if cursor.keyword("tblproperties") {
            let table = cursor.name()?;
            let key = if cursor.eat(&Token::LParen) {
                let key = cursor.string()?;
                Some(cursor.eat(&Token::RParen).then_some(key)?)
            } else {
                None
            };
            Show::Properties { table, key }
        } else if cursor.keyword("create") && cursor.keyword("table") {
            Show::CreateTable(cursor.name()?)
        } else {
            return None;
        }
    } else if cursor.keyword("describe") || cursor.keyword("desc") {
        // `DESCRIBE TABLE t`; `DESCRIBE table` (a table named `table`) stays a name.
        if cursor.peek_keyword("table") && cursor.tokens.len() > cursor.at + 1 {
            cursor.at += 1;
        }
        Show::Describe(cursor.name()?)
    } else {
        return None;
    };
    (cursor.at == tokens.len()).then_some(show)
}

struct Cursor<'a> {
    tokens: &'a [Token],
    at: usize,
    normalize: bool,
}

impl Cursor<'_> {
    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.tokens.get(self.at),
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
    }

    fn keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        self.at += usize::from(found);
        found
    }

    fn eat(&mut self, token: &Token) -> bool {
        let found = self.tokens.get(self.at) == Some(token);
        self.at += usize::from(found);
        found
    }

    fn string(&mut self) -> Option<String> {
        let Some(Token::SingleQuotedString(s)) = self.tokens.get(self.at) else {
            return None;
        };
        self.at += 1;
        Some(s.clone())
    }

    fn like(&mut self) -> Option<Option<String>> {
        if self.keyword("like") {
            self.string().map(Some)
        } else {
            Some(None)
        }
    }

    /// A dotted name, its parts as DataFusion reads them.
    fn name(&mut self) -> Option<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            let Some(Token::Word(w)) = self.tokens.get(self.at) else {
                return None;
            };
            parts.push(match (self.normalize, w.quote_style) {
                (true, None) => w.value.to_lowercase(),
                _ => w.value.clone(),
            });
            self.at += 1;
            if !self.eat(&Token::Period) {
                return Some(parts);
            }
        }
    }
}

/// Answers `show` in `ctx`; `None` hands the statement to DataFusion (`DESCRIBE` and
/// `SHOW CREATE TABLE` of tables that are not Iceberg tables).
pub(super) async fn run_show(
    ctx: &SessionContext,
    state: &SessionState,
    show: &Show,
) -> DFResult<Option<DataFrame>> {
    let batch = match show {
        Show::Tables { within, like } => tables(state, within.as_deref(), like.as_deref())?,
        Show::Namespaces { like } => namespaces(state, like.as_deref())?,
        Show::Properties { table, key } => {
            let Some(provider) = iceberg_table(ctx, table).await? else {
                return datafusion::common::plan_err!(
                    "SHOW TBLPROPERTIES: {} is not an Iceberg table",
                    table.join(".")
                );
            };
            properties(provider.table().metadata(), key.as_deref())?
        }
        Show::CreateTable(name) => {
            let Some(provider) = iceberg_table(ctx, name).await? else {
                return Ok(None);
            };
            create_statement(state, name, &provider)?
        }
        Show::Describe(name) => {
            let Some(provider) = iceberg_table(ctx, name).await? else {
                return Ok(None);
            };
            describe(&provider)?
        }
    };
    ctx.read_batch(batch).map(Some)
}

fn reference(parts: &[String]) -> DFResult<TableReference> {
    Ok(match parts {
        [table] => TableReference::bare(table.as_str()),
        [schema, table] => TableReference::partial(schema.as_str(), table.as_str()),
        [catalog, schema, table] => {
            TableReference::full(catalog.as_str(), schema.as_str(), table.as_str())
        }
        _ => {
            return datafusion::common::plan_err!(
                "table name {} has more than three parts",
                parts.join(".")
            );
        }
    })
}

/// The Iceberg table `name` names; `None` for another kind of table. An unknown name is
/// DataFusion's own error.
async fn iceberg_table(
    ctx: &SessionContext,
    name: &[String],
) -> DFResult<Option<IcebergTableProvider>> {
    let provider = ctx.table_provider(reference(name)?).await?;
    Ok(provider.downcast_ref::<IcebergTableProvider>().cloned())
}

fn utf8_column(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

fn batch(fields: Vec<Field>, columns: Vec<ArrayRef>) -> DFResult<RecordBatch> {
    Ok(RecordBatch::try_new(
        Arc::new(ArrowSchema::new(fields)),
        columns,
    )?)
}

fn default_catalog(state: &SessionState) -> DFResult<(String, Arc<dyn CatalogProvider>)> {
    let name = state.config().options().catalog.default_catalog.clone();
    let catalog = state.catalog_list().catalog(&name).ok_or_else(|| {
        datafusion::error::DataFusionError::Plan(format!("no default catalog {name}"))
    })?;
    Ok((name, catalog))
}

/// `SHOW TABLES`.
fn tables(
    state: &SessionState,
    within: Option<&[String]>,
    like: Option<&str>,
) -> DFResult<RecordBatch> {
    let (catalog_name, catalog) = match within {
        Some([catalog, _]) => {
            let provider = state.catalog_list().catalog(catalog).ok_or_else(|| {
                let known = state.catalog_list().catalog_names();
                datafusion::error::DataFusionError::Plan(format!(
                    "no catalog {catalog}{}",
                    did_you_mean(catalog, &known)
                ))
            })?;
            (catalog.clone(), provider)
        }
        _ => default_catalog(state)?,
    };
    let mut schemas = match within {
        None => catalog.schema_names(),
        Some([schema] | [_, schema]) => {
            let known = catalog.schema_names();
            if catalog.schema(schema).is_none() {
                return datafusion::common::plan_err!(
                    "no namespace {schema} in catalog {catalog_name}{}",
                    did_you_mean(schema, &known)
                );
            }
            vec![schema.clone()]
        }
        Some(other) => {
            return datafusion::common::plan_err!(
                "SHOW TABLES IN takes a namespace or catalog.namespace, not {}",
                other.join(".")
            );
        }
    };
    schemas.retain(|s| s != INFORMATION_SCHEMA);
    schemas.sort();
    schemas.dedup();
    let (mut namespaces, mut names) = (Vec::new(), Vec::new());
    for schema_name in schemas {
        let Some(schema) = catalog.schema(&schema_name) else {
            continue;
        };
        let mut tables = schema.table_names();
        tables.sort();
        tables.dedup();
        for table in tables {
            if like.is_none_or(|p| matches_pattern(p, &table)) {
                namespaces.push(schema_name.clone());
                names.push(table);
            }
        }
    }
    batch(
        vec![
            utf8_column("namespace", false),
            utf8_column("table_name", false),
        ],
        vec![
            Arc::new(StringArray::from(namespaces)),
            Arc::new(StringArray::from(names)),
        ],
    )
}

/// `SHOW NAMESPACES`: the default catalog's schemas; in an Iceberg catalog session, its
/// namespaces and the other schemas that hold tables (DataFusion's empty `public` is left out).
fn namespaces(state: &SessionState, like: Option<&str>) -> DFResult<RecordBatch> {
    let (name, catalog) = default_catalog(state)?;
    let iceberg = IcebergCatalogs::lookup(state, &name);
    let mut names = catalog.schema_names();
    names.retain(|s| s != INFORMATION_SCHEMA && like.is_none_or(|p| matches_pattern(p, s)));
    if let Some(iceberg) = iceberg {
        names.retain(|s| {
            crate::session::has_namespace(&iceberg, s)
                || catalog
                    .schema(s)
                    .is_some_and(|schema| !schema.table_names().is_empty())
        });
    }
    names.sort();
    names.dedup();
    batch(
        vec![utf8_column("namespace", false)],
        vec![Arc::new(StringArray::from(names))],
    )
}

/// The table's properties as SHOW TBLPROPERTIES and SHOW CREATE TABLE give them:
/// `format-version` first, then the metadata's, in key order.
fn property_rows(metadata: &TableMetadata) -> Vec<(String, String)> {
    let version = metadata.format_version.number().to_string();
    std::iter::once(("format-version".to_string(), version))
        .chain(
            metadata
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        )
        .collect()
}

/// `SHOW TBLPROPERTIES`.
fn properties(metadata: &TableMetadata, key: Option<&str>) -> DFResult<RecordBatch> {
    let mut rows = property_rows(metadata);
    if let Some(key) = key {
        rows.retain(|(k, _)| k == key);
        if rows.is_empty() {
            let known: Vec<String> = metadata.properties.keys().cloned().collect();
            return datafusion::common::plan_err!(
                "the table has no property '{key}'{}",
                did_you_mean(key, &known)
            );
        }
    }
    let (keys, values): (Vec<String>, Vec<String>) = rows.into_iter().unzip();
    batch(
        vec![utf8_column("key", false), utf8_column("value", false)],
        vec![
            Arc::new(StringArray::from(keys)),
            Arc::new(StringArray::from(values)),
        ],
    )
}

fn did_you_mean(word: &str, known: &[String]) -> String {
    match closest(word, known.iter().map(String::as_str)) {
        Some(best) => format!("; did you mean {best}?"),
        None => String::new(),
    }
}

/// `%` any run, `_` one character (SQL), `*` any run (Spark); case-insensitive, as Spark.
fn matches_pattern(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('%' | '*', rest)) => (0..=t.len()).any(|skip| go(rest, &t[skip..])),
            Some(('_', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => {
                t.first()
                    .is_some_and(|x| x.to_lowercase().eq(c.to_lowercase()))
                    && go(rest, &t[1..])
            }
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// `DESCRIBE`: one row per field (depth first), then the default spec and the sort order.
fn describe(provider: &IcebergTableProvider) -> DFResult<RecordBatch> {
    let table = provider.table();
    let metadata = table.metadata();
    let schema = provider.iceberg_schema();
    let mut rows = DescribeRows::default();
    for field in schema.columns() {
        rows.field("", field);
    }
    match metadata.default_partition_spec() {
        Some(spec) if !spec.is_unpartitioned() => {
            for field in &spec.fields {
                let term = term(schema, &field.transform, field.source_id);
                rows.push(
                    "# partition",
                    term,
                    Some(field.field_id),
                    None,
                    Some(field.name.as_str()),
                );
            }
        }
        _ => rows.push("# partition", "(unpartitioned)".into(), None, None, None),
    }
    match metadata.default_sort_order() {
        Some(order) if !order.is_unsorted() => {
            for field in &order.fields {
                let term = term(schema, &field.transform, field.source_id);
                let direction = match field.direction {
                    SortDirection::Ascending => "ASC",
                    SortDirection::Descending => "DESC",
                };
                let nulls = match field.null_order {
                    NullOrder::First => "NULLS FIRST",
                    NullOrder::Last => "NULLS LAST",
                };
                let text = format!("{term} {direction} {nulls}");
                rows.push("# sort order", text, None, None, None);
            }
        }
        _ => rows.push("# sort order", "(unsorted)".into(), None, None, None),
    }
    rows.finish()
}

#[derive(Default)]
struct DescribeRows {
    names: Vec<String>,
    types: Vec<String>,
    ids: Vec<Option<i32>>,
    required: Vec<Option<bool>>,
    docs: Vec<Option<String>>,
}

impl DescribeRows {
    fn push(
        &mut self,
        name: &str,
        data_type: String,
        id: Option<i32>,
        required: Option<bool>,
        doc: Option<&str>,
    ) {
        self.names.push(name.to_string());
        self.types.push(data_type);
        self.ids.push(id);
        self.required.push(required);
        self.docs.push(doc.map(str::to_string));
    }

    /// `field` under `prefix`, then its nested fields.
    fn field(&mut self, prefix: &str, field: &NestedField) {
        let name = format!("{prefix}{}", field.name);
        let data_type = field.field_type.to_string();
        self.push(
            &name,
            data_type,
            Some(field.id),
            Some(field.required),
            field.doc.as_deref(),
        );
        let prefix = format!("{name}.");
        match &field.field_type {
            Type::Struct(s) => s.fields.iter().for_each(|f| self.field(&prefix, f)),
            Type::List(l) => self.field(&prefix, &l.element_field),
            Type::Map(m) => {
                self.field(&prefix, &m.key_field);
                self.field(&prefix, &m.value_field);
            }
            Type::Primitive(_) => {}
        }
    }

    fn finish(self) -> DFResult<RecordBatch> {
        batch(
            vec![
                utf8_column("column_name", false),
                utf8_column("data_type", false),
                Field::new("field_id", DataType::Int32, true),
                Field::new("required", DataType::Boolean, true),
                utf8_column("doc", true),
            ],
            vec![
                Arc::new(StringArray::from(self.names)),
                Arc::new(StringArray::from(self.types)),
                Arc::new(Int32Array::from(self.ids)),
                Arc::new(BooleanArray::from(self.required)),
                Arc::new(StringArray::from(self.docs)),
            ],
        )
    }
}

/// A partition or sort term as `CREATE TABLE ... PARTITION BY` reads it: `day(ts)`,
/// `bucket(16, id)`, `id`.
fn term(schema: &Schema, transform: &Transform, source_id: i32) -> String {
    let column = schema
        .dotted_name(source_id)
        .map(|path| {
            path.split('.')
                .map(quote_ident)
                .collect::<Vec<_>>()
                .join(".")
        })
        .unwrap_or_else(|| format!("<field {source_id}>"));
    match transform {
        Transform::Identity => column,
        Transform::Bucket(n) => format!("bucket({n}, {column})"),
        Transform::Truncate(w) => format!("truncate({w}, {column})"),
        Transform::Year => format!("year({column})"),
        Transform::Month => format!("month({column})"),
        Transform::Day => format!("day({column})"),
        Transform::Hour => format!("hour({column})"),
        Transform::Void => format!("void({column})"),
        Transform::Unknown(name) => format!("{name}({column})"),
    }
}

/// `name` as an SQL identifier: bare when it is lower-case letters, digits and `_` (not first
/// a digit), else double-quoted.
fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The SQL type icefloe's `CREATE TABLE` turns into `data_type` (`UUID`, `FIXED(n)` and `MAP`
/// have none in DataFusion's SQL: they are shown in Spark's spelling).
fn sql_type(data_type: &Type) -> String {
    match data_type {
        Type::Primitive(p) => match p {
            PrimitiveType::Boolean => "BOOLEAN".into(),
            PrimitiveType::Int => "INT".into(),
            PrimitiveType::Long => "BIGINT".into(),
            PrimitiveType::Float => "FLOAT".into(),
            PrimitiveType::Double => "DOUBLE".into(),
            PrimitiveType::Decimal { precision, scale } => format!("DECIMAL({precision}, {scale})"),
            PrimitiveType::Date => "DATE".into(),
            PrimitiveType::Time => "TIME".into(),
            // The precision, since a v3 table makes a bare TIMESTAMP `timestamp_ns`.
            PrimitiveType::Timestamp => "TIMESTAMP(6)".into(),
            PrimitiveType::Timestamptz => "TIMESTAMP(6) WITH TIME ZONE".into(),
            PrimitiveType::TimestampNs => "TIMESTAMP(9)".into(),
            PrimitiveType::TimestamptzNs => "TIMESTAMP(9) WITH TIME ZONE".into(),
            PrimitiveType::String => "VARCHAR".into(),
            PrimitiveType::Uuid => "UUID".into(),
            PrimitiveType::Fixed(len) => format!("FIXED({len})"),
            PrimitiveType::Binary => "BYTEA".into(),
            PrimitiveType::Variant => "VARIANT".into(),
            PrimitiveType::Unknown => "UNKNOWN".into(),
            PrimitiveType::Geometry { .. } | PrimitiveType::Geography { .. } => geo_sql_type(p),
        },
        Type::Struct(s) => {
            let fields: Vec<String> = s
                .fields
                .iter()
                .map(|f| format!("{} {}", quote_ident(&f.name), sql_type(&f.field_type)))
                .collect();
            format!("STRUCT<{}>", fields.join(", "))
        }
        Type::List(l) => format!("ARRAY<{}>", sql_type(&l.element_field.field_type)),
        Type::Map(m) => format!(
            "MAP<{}, {}>",
            sql_type(&m.key_field.field_type),
            sql_type(&m.value_field.field_type)
        ),
    }
}

/// Whether `name` is a table of a namespace of an Iceberg catalog of the session.
fn in_iceberg_catalog(state: &SessionState, name: &[String]) -> DFResult<bool> {
    let names = &state.config().options().catalog;
    let resolved = reference(name)?.resolve(&names.default_catalog, &names.default_schema);
    Ok(IcebergCatalogs::lookup(state, &resolved.catalog)
        .is_some_and(|catalog| crate::session::has_namespace(&catalog, &resolved.schema)))
}

/// A column of `CREATE TABLE`: its name, type, `NOT NULL`, v3 `DEFAULT` (the write-default)
/// and `COMMENT` (its doc).
fn column_definition(field: &NestedField) -> DFResult<String> {
    let mut text = format!(
        "  {} {}",
        quote_ident(&field.name),
        sql_type(&field.field_type)
    );
    if field.required {
        text.push_str(" NOT NULL");
    }
    if let (Some(value), Type::Primitive(ty)) = (&field.write_default, &field.field_type) {
        let literal = crate::spec::Literal::from_json(ty, value).map_err(crate::Error::from)?;
        let scalar = crate::to_arrow::literal_to_scalar(Some(&literal), ty)?;
        let sql = datafusion::sql::unparser::expr_to_sql(&datafusion::logical_expr::lit(scalar))?;
        text.push_str(&format!(" DEFAULT {sql}"));
    }
    if let Some(doc) = &field.doc {
        text.push_str(&format!(" COMMENT {}", quote_string(doc)));
    }
    Ok(text)
}

/// The `RENAME PARTITION FIELD` clauses that give the default spec's fields the names they
/// have where `CREATE TABLE ... PARTITION BY` names them otherwise (fields added by partition
/// evolution are named `id_bucket_16`, a new table's `id_bucket`).
fn partition_renames(metadata: &TableMetadata, schema: &Schema) -> Vec<String> {
    let Some(spec) = metadata.default_partition_spec() else {
        return Vec::new();
    };
    spec.fields
        .iter()
        .filter_map(|f| {
            let source = schema.dotted_name(f.source_id)?;
            let created = crate::table::partition_name(&source, &f.transform);
            (created != f.name).then(|| {
                format!(
                    "RENAME PARTITION FIELD {} TO {}",
                    quote_ident(&created),
                    quote_ident(&f.name)
                )
            })
        })
        .collect()
}

/// The `WRITE ...` clause of `ALTER TABLE` that gives a table its default sort order and
/// `write.distribution-mode`; `None` for an unsorted table.
fn write_order(metadata: &TableMetadata, schema: &Schema) -> Option<String> {
    let order = metadata.default_sort_order().filter(|o| !o.is_unsorted())?;
    let fields: Vec<String> = order
        .fields
        .iter()
        .map(|f| {
            let direction = match f.direction {
                SortDirection::Ascending => "ASC",
                SortDirection::Descending => "DESC",
            };
            let nulls = match f.null_order {
                NullOrder::First => "NULLS FIRST",
                NullOrder::Last => "NULLS LAST",
            };
            let term = term(schema, &f.transform, f.source_id);
            format!("{term} {direction} {nulls}")
        })
        .collect();
    let clause = match metadata.property(WRITE_DISTRIBUTION_MODE.key()) {
        Some("range") => "WRITE ORDERED BY",
        Some("hash") => "WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY",
        _ => "WRITE LOCALLY ORDERED BY",
    };
    Some(format!("{clause} {}", fields.join(", ")))
}

/// `SHOW CREATE TABLE`: `CREATE TABLE ns.t (...)` for a table of an Iceberg catalog,
/// `CREATE EXTERNAL TABLE t (...) STORED AS ICEBERG LOCATION '...'` for any other.
fn create_statement(
    state: &SessionState,
    name: &[String],
    provider: &IcebergTableProvider,
) -> DFResult<RecordBatch> {
    let table = provider.table();
    let metadata = table.metadata();
    let schema = metadata.current_schema();
    let columns: Vec<String> = schema
        .columns()
        .iter()
        .map(|f| column_definition(f))
        .collect::<DFResult<_>>()?;
    let terms: Vec<String> = metadata
        .default_partition_spec()
        .map(|spec| {
            spec.fields
                .iter()
                .map(|f| term(schema, &f.transform, f.source_id))
                .collect()
        })
        .unwrap_or_default();
    let mut properties = property_rows(metadata);
    let quoted_name = name
        .iter()
        .map(|p| quote_ident(p))
        .collect::<Vec<_>>()
        .join(".");
    let in_catalog = in_iceberg_catalog(state, name)?;
    let mut text = if in_catalog {
        format!("CREATE TABLE {quoted_name} (\n{}\n)", columns.join(",\n"))
    } else {
        format!(
            "CREATE EXTERNAL TABLE {quoted_name} (\n{}\n)\nSTORED AS ICEBERG\nLOCATION {}",
            columns.join(",\n"),
            quote_string(&metadata.location)
        )
    };
    if in_catalog {
        if !terms.is_empty() {
            text.push_str(&format!("\nPARTITION BY ({})", terms.join(", ")));
        }
        let pairs: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("  {} = {}", quote_string(k), quote_string(v)))
            .collect();
        text.push_str(&format!("\nTBLPROPERTIES (\n{}\n)", pairs.join(",\n")));
    } else {
        if !terms.is_empty() {
            properties.push(("partitioning".into(), terms.join(", ")));
        }
        let pairs: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("  {} {}", quote_string(k), quote_string(v)))
            .collect();
        text.push_str(&format!("\nOPTIONS (\n{}\n)", pairs.join(",\n")));
    }
    if in_catalog {
        for rename in partition_renames(metadata, schema) {
            text.push_str(&format!(";\nALTER TABLE {quoted_name} {rename}"));
        }
        let identifiers: Vec<String> = schema
            .identifier_field_ids
            .iter()
            .filter_map(|id| schema.dotted_name(*id))
            .map(|name| {
                name.split('.')
                    .map(quote_ident)
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect();
        if !identifiers.is_empty() {
            let fields = identifiers.join(", ");
            text.push_str(&format!(
                ";\nALTER TABLE {quoted_name} SET IDENTIFIER FIELDS {fields}"
            ));
        }
    }
    if let Some(order) = write_order(metadata, schema) {
        match in_catalog {
            true => text.push_str(&format!(";\nALTER TABLE {quoted_name} {order}")),
            false => text.push_str(&format!("\n-- sort order: {order}")),
        }
    }
    batch(
        vec![utf8_column("createtab_stmt", false)],
        vec![Arc::new(StringArray::from(vec![text]))],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    fn parse(sql: &str) -> Option<Show> {
        parse_show(sql, &GenericDialect {}, true)
    }

    fn parts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_each_form() {
        assert_eq!(
            parse("show tables;"),
            Some(Show::Tables {
                within: None,
                like: None
            })
        );
        assert_eq!(
            parse("SHOW TABLES IN Db LIKE 'ord%'"),
            Some(Show::Tables {
                within: Some(parts(&["db"])),
                like: Some("ord%".into())
            })
        );
        assert_eq!(
            parse("SHOW TABLES FROM ice.db"),
            Some(Show::Tables {
                within: Some(parts(&["ice", "db"])),
                like: None
            })
        );
        for sql in ["SHOW NAMESPACES", "show schemas", "SHOW DATABASES;"] {
            assert_eq!(parse(sql), Some(Show::Namespaces { like: None }), "{sql}");
        }
        assert_eq!(
            parse("SHOW TBLPROPERTIES db.\"Orders\" ('owner')"),
            Some(Show::Properties {
                table: parts(&["db", "Orders"]),
                key: Some("owner".into())
            })
        );
        assert_eq!(
            parse("SHOW CREATE TABLE db.orders"),
            Some(Show::CreateTable(parts(&["db", "orders"])))
        );
        assert_eq!(
            parse("DESCRIBE TABLE db.orders"),
            Some(Show::Describe(parts(&["db", "orders"])))
        );
        assert_eq!(
            parse("desc \"t@v1\""),
            Some(Show::Describe(parts(&["t@v1"])))
        );
        assert_eq!(
            parse("DESCRIBE table"),
            Some(Show::Describe(parts(&["table"])))
        );
    }

    #[test]
    fn leaves_other_statements_to_datafusion() {
        for sql in [
            "SHOW ALL",
            "SHOW datafusion.execution.batch_size",
            "DESCRIBE SELECT 1",
            "SHOW TABLES extra",
            "SHOW TBLPROPERTIES t ('k'",
            "SHOW CREATE VIEW v",
            "SELECT 1",
            "SHOW COLUMNS FROM t",
        ] {
            assert_eq!(parse(sql), None, "{sql}");
        }
    }

    #[test]
    fn patterns_as_sql_like_and_spark() {
        assert!(matches_pattern("ord%", "orders"));
        assert!(matches_pattern("ORD*", "orders"));
        assert!(matches_pattern("o_ders", "orders"));
        assert!(!matches_pattern("o_ders", "oders"));
        assert!(!matches_pattern("ord", "orders"));
        assert!(matches_pattern("%", ""));
    }

    async fn text_rows(ctx: &SessionContext, query: &str) -> Vec<String> {
        let batches = crate::sql::sql(ctx, query)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
            .lines()
            .map(str::to_string)
            .collect()
    }

    async fn create_statement_of(ctx: &SessionContext, table: &str) -> String {
        let batches = crate::sql::sql(ctx, &format!("SHOW CREATE TABLE {table}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let column = batches[0].column(0).as_any().downcast_ref::<StringArray>();
        column.unwrap().value(0).to_string()
    }

    /// The statement SHOW CREATE TABLE prints makes the same table: same DESCRIBE (types,
    /// field ids, required flags, partition spec), same properties.
    #[tokio::test]
    async fn show_create_table_makes_the_same_table() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        crate::catalog::SqliteCatalog::create(&db, "default", crate::FileIO::default()).unwrap();
        let ctx = SessionContext::new();
        crate::sql::register(&ctx);
        crate::session::register_catalog_as_default(&ctx, &db, Default::default())
            .await
            .unwrap();
        crate::sql::sql(&ctx, "CREATE SCHEMA db").await.unwrap();
        crate::sql::sql(
            &ctx,
            "CREATE TABLE db.t (id BIGINT NOT NULL, \"Name\" VARCHAR, ok BOOLEAN, f FLOAT, d DOUBLE, \
             n INT, amount DECIMAL(12, 3), day DATE, ts TIMESTAMP, tz TIMESTAMP WITH TIME ZONE, \
             raw BYTEA, s STRUCT<x INT, y VARCHAR>, tags ARRAY<VARCHAR>) \
             PARTITION BY (month(day), bucket(8, id), truncate(3, \"Name\"), ok) \
             TBLPROPERTIES ('owner' = 'it''s me', 'format-version' = '2')",
        )
        .await
        .unwrap();
        let statement = create_statement_of(&ctx, "db.t").await;
        assert!(
            statement
                .starts_with("CREATE TABLE db.t (\n  id BIGINT NOT NULL,\n  \"Name\" VARCHAR,"),
            "{statement}"
        );
        let described = text_rows(&ctx, "DESCRIBE db.t").await;
        let properties = text_rows(&ctx, "SHOW TBLPROPERTIES db.t").await;
        crate::sql::sql(&ctx, "DROP TABLE db.t").await.unwrap();
        crate::sql::sql(&ctx, &statement).await.unwrap();
        assert_eq!(
            text_rows(&ctx, "DESCRIBE db.t").await,
            described,
            "{statement}"
        );
        assert_eq!(text_rows(&ctx, "SHOW TBLPROPERTIES db.t").await, properties);
        assert_eq!(create_statement_of(&ctx, "db.t").await, statement);
    }

    /// The v3 types are spelled so that CREATE TABLE reads them back as the same types.
    #[tokio::test]
    async fn show_create_table_of_v3_types_makes_the_same_table() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        crate::catalog::SqliteCatalog::create(&db, "default", crate::FileIO::default()).unwrap();
        let ctx = SessionContext::new();
        crate::sql::register(&ctx);
        crate::session::register_catalog_as_default(&ctx, &db, Default::default())
            .await
            .unwrap();
        crate::sql::sql(&ctx, "CREATE SCHEMA db").await.unwrap();
        crate::sql::sql(
            &ctx,
            "CREATE TABLE db.t (id INT, v VARIANT, g GEOMETRY('srid:3857'), h GEOGRAPHY, \
             k GEOGRAPHY('OGC:CRS84', 'karney'), u UNKNOWN, ts TIMESTAMP(9)) \
             TBLPROPERTIES ('format-version' = '3')",
        )
        .await
        .unwrap();
        let statement = create_statement_of(&ctx, "db.t").await;
        assert!(
            statement.starts_with(
                "CREATE TABLE db.t (\n  id INT,\n  v VARIANT,\n  g GEOMETRY('srid:3857'),\n  \
                 h GEOGRAPHY,\n  k GEOGRAPHY('OGC:CRS84', 'karney'),\n  u UNKNOWN,\n  \
                 ts TIMESTAMP(9)\n)"
            ),
            "{statement}"
        );
        let described = text_rows(&ctx, "DESCRIBE db.t").await;
        crate::sql::sql(&ctx, "DROP TABLE db.t").await.unwrap();
        crate::sql::sql(&ctx, &statement).await.unwrap();
        assert_eq!(
            text_rows(&ctx, "DESCRIBE db.t").await,
            described,
            "{statement}"
        );
    }

    /// A table outside any catalog: CREATE EXTERNAL TABLE at its location, the spec as the
    /// `partitioning` option.
    #[tokio::test]
    async fn show_create_table_of_a_table_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = SessionContext::new();
        crate::sql::register(&ctx);
        let location = dir.path().join("t").display().to_string();
        crate::sql::sql(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE t (id BIGINT NOT NULL, at TIMESTAMP WITH TIME ZONE) STORED AS \
                 ICEBERG LOCATION '{location}' OPTIONS ('partitioning' 'day(at)', 'format-version' '3')"
            ),
        )
        .await
        .unwrap();
        let statement = create_statement_of(&ctx, "t").await;
        // SQL's TIMESTAMP is nanoseconds: a v3 table keeps them (`timestamptz_ns`).
        assert!(statement.starts_with("CREATE EXTERNAL TABLE t (\n  id BIGINT NOT NULL,\n  at TIMESTAMP(9) WITH TIME ZONE\n)\nSTORED AS ICEBERG\nLOCATION '"), "{statement}");
        assert!(
            statement.contains("'format-version' '3'")
                && statement.contains("'partitioning' 'day(at)'"),
            "{statement}"
        );
        let described = text_rows(&ctx, "DESCRIBE t").await;
        // The same statement at another location makes the same table.
        let other = dir.path().join("t2").display().to_string();
        let again = statement
            .replacen("CREATE EXTERNAL TABLE t ", "CREATE EXTERNAL TABLE t2 ", 1)
            .replace(&location, &other);
        crate::sql::sql(&ctx, &again).await.unwrap();
        assert_eq!(text_rows(&ctx, "DESCRIBE t2").await, described);
    }

    #[test]
    fn identifiers_quoted_only_when_needed() {
        assert_eq!(quote_ident("order_ts"), "order_ts");
        assert_eq!(quote_ident("Order"), "\"Order\"");
        assert_eq!(quote_ident("a b\""), "\"a b\"\"\"");
        assert_eq!(quote_ident("1x"), "\"1x\"");
    }
}

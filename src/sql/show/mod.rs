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
use crate::IcebergTableProvider;
use crate::error::closest;
use crate::session::IcebergCatalogs;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{NestedField, Schema, TableMetadata, Transform, Type};

mod create;

use create::{create_statement, quote_ident};

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

#[cfg(test)]
mod tests;

//! `ALTER TABLE` on Iceberg tables of a catalog, run by [`super::sql`] (DataFusion 55 has no
//! ALTER TABLE): every change is one metadata-only commit through a
//! [`crate::transaction::Transaction`].
//!
//! ```sql
//! ALTER TABLE db.t ADD COLUMN c BIGINT [NOT NULL DEFAULT 0] [COMMENT 'doc'] [FIRST | AFTER x];
//! ALTER TABLE db.t ADD COLUMNS (c BIGINT, s.inner INT);   -- nested: struct fields, points.x
//! ALTER TABLE db.t RENAME COLUMN c TO d;
//! ALTER TABLE db.t DROP COLUMN [IF EXISTS] d;              -- DROP COLUMNS (a, b)
//! ALTER TABLE db.t ALTER [COLUMN] c TYPE BIGINT;           -- SET DATA TYPE; promotions only
//! ALTER TABLE db.t ALTER [COLUMN] c DROP NOT NULL;         -- SET NOT NULL: refused if optional
//! ALTER TABLE db.t ALTER [COLUMN] c COMMENT 'doc';
//! ALTER TABLE db.t ALTER [COLUMN] c FIRST;                 -- AFTER x, BEFORE x
//! ALTER TABLE db.t ALTER [COLUMN] c SET DEFAULT 5;         -- v3 write-default; DROP DEFAULT
//! ALTER TABLE db.t SET IDENTIFIER FIELDS id, region;       -- DROP IDENTIFIER FIELDS id
//! ALTER TABLE db.t SET TBLPROPERTIES ('k' = 'v', ...);     -- 'format-version' upgrades
//! ALTER TABLE db.t UNSET TBLPROPERTIES [IF EXISTS] ('k', ...);
//! ALTER TABLE db.t RENAME TO db.u;
//! ```
//!
//! Types are Iceberg's names (`long`, `string`, `timestamptz`, `decimal(10, 2)`, ...) or any SQL
//! type DataFusion's `CREATE TABLE` takes (`BIGINT`, `VARCHAR`, `STRUCT<...>`, ...), mapped the
//! way `CREATE TABLE` maps them. What the schema rules refuse is listed in
//! [`crate::transaction::UpdateSchema`].

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{self as arrow_types, DataType as ArrowType};
use datafusion::common::{plan_datafusion_err, plan_err};
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::sqlparser::ast::{DataType, Expr, Ident, ObjectName};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::IcebergTarget;
use crate::spec::{FormatVersion, Literal, PrimitiveType, Schema, TableMetadata, Type};
use crate::table::arrow_to_iceberg_type;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::{ColumnPosition, NewColumn, Transaction, UpdateSchema};

/// An `ALTER TABLE` statement, as parsed (types and defaults are resolved when it runs).
#[derive(Debug, Clone)]
pub(super) struct Alter {
    pub(super) table: ObjectName,
    operation: Operation,
}

#[derive(Debug, Clone)]
enum Operation {
    Columns(Vec<ColumnChange>),
    SetProperties(Vec<(String, String)>),
    UnsetProperties { keys: Vec<String>, if_exists: bool },
    RenameTo(ObjectName),
}

#[derive(Debug, Clone)]
enum ColumnChange {
    Add {
        path: Vec<String>,
        data_type: DataType,
        not_null: bool,
        default: Option<Expr>,
        comment: Option<String>,
        position: Option<ColumnPosition>,
    },
    Rename {
        path: String,
        to: String,
    },
    Drop {
        path: String,
        if_exists: bool,
    },
    Retype {
        path: String,
        data_type: DataType,
    },
    Nullable {
        path: String,
        optional: bool,
    },
    Comment {
        path: String,
        doc: String,
    },
    Move {
        path: String,
        position: ColumnPosition,
    },
    WriteDefault {
        path: String,
        value: Option<Expr>,
    },
    IdentifierFields {
        paths: Vec<String>,
        set: bool,
    },
}

/// `query` as an `ALTER TABLE` statement; `None` when it is none; an error when it starts as
/// one but does not parse.
pub(super) fn parse_alter(
    query: &str,
    dialect: &dyn Dialect,
    normalize: bool,
) -> DFResult<Option<Alter>> {
    let mut parser = Parser::new(dialect)
        .try_with_sql(query)
        .map_err(|e| plan_datafusion_err!("{e}"))?;
    if !(word(&mut parser, "alter") && word(&mut parser, "table")) {
        return Ok(None);
    }
    let mut reader = Reader { parser, normalize };
    let alter = reader.statement().map_err(|e| {
        let message = match e {
            ParserError::ParserError(m) | ParserError::TokenizerError(m) => m,
            other => other.to_string(),
        };
        plan_datafusion_err!("ALTER TABLE: {message}")
    })?;
    Ok(Some(alter))
}

/// Consumes the unquoted word `w` (any case) if it is next.
fn word(parser: &mut Parser, w: &str) -> bool {
    match &parser.peek_token().token {
        Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w) => {
            parser.next_token();
            true
        }
        _ => false,
    }
}

struct Reader<'a> {
    parser: Parser<'a>,
    normalize: bool,
}

type Parsed<T> = Result<T, ParserError>;

impl Reader<'_> {
    fn word(&mut self, w: &str) -> bool {
        word(&mut self.parser, w)
    }

    fn words(&mut self, ws: &[&str]) -> bool {
        let matched = ws.iter().take_while(|w| self.word(w)).count();
        if matched == ws.len() {
            return true;
        }
        // `prev_token` undoes one `next_token`, whitespace included.
        for _ in 0..matched {
            self.parser.prev_token();
        }
        false
    }

    fn expect(&mut self, w: &str) -> Parsed<()> {
        match self.word(w) {
            true => Ok(()),
            false => self
                .parser
                .expected(&w.to_uppercase(), self.parser.peek_token()),
        }
    }

    fn ident(&mut self) -> Parsed<String> {
        let Ident {
            value, quote_style, ..
        } = self.parser.parse_identifier()?;
        Ok(match (self.normalize, quote_style) {
            (true, None) => value.to_lowercase(),
            _ => value,
        })
    }

    /// A column path: names joined by dots.
    fn path(&mut self) -> Parsed<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.parser.consume_token(&Token::Period) {
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    fn dotted(&mut self) -> Parsed<String> {
        Ok(self.path()?.join("."))
    }

    /// One path, or a parenthesised list of them; or a bare comma-separated list.
    fn paths(&mut self) -> Parsed<Vec<String>> {
        let parenthesised = self.parser.consume_token(&Token::LParen);
        let mut paths = vec![self.dotted()?];
        while self.parser.consume_token(&Token::Comma) {
            paths.push(self.dotted()?);
        }
        if parenthesised {
            self.parser.expect_token(&Token::RParen)?;
        }
        Ok(paths)
    }

    fn position(&mut self) -> Parsed<Option<ColumnPosition>> {
        Ok(if self.word("first") {
            Some(ColumnPosition::First)
        } else if self.word("after") {
            Some(ColumnPosition::After(self.ident()?))
        } else if self.word("before") {
            Some(ColumnPosition::Before(self.ident()?))
        } else {
            None
        })
    }

    fn statement(&mut self) -> Parsed<Alter> {
        let table = self.parser.parse_object_name(false)?;
        let operation = if self.word("add") {
            let plural = self.word("columns");
            if !plural {
                self.word("column");
            }
            let changes = match self.parser.consume_token(&Token::LParen) {
                true => {
                    let mut changes = vec![self.new_column()?];
                    while self.parser.consume_token(&Token::Comma) {
                        changes.push(self.new_column()?);
                    }
                    self.parser.expect_token(&Token::RParen)?;
                    changes
                }
                false => vec![self.new_column()?],
            };
            Operation::Columns(changes)
        } else if self.word("rename") {
            if self.word("to") {
                Operation::RenameTo(self.parser.parse_object_name(false)?)
            } else {
                self.expect("column")?;
                let path = self.dotted()?;
                self.expect("to")?;
                let to = self.ident()?;
                Operation::Columns(vec![ColumnChange::Rename { path, to }])
            }
        } else if self.words(&["drop", "identifier", "fields"]) {
            let paths = self.paths()?;
            Operation::Columns(vec![ColumnChange::IdentifierFields { paths, set: false }])
        } else if self.word("drop") {
            if !self.word("columns") {
                self.expect("column")?;
            }
            let if_exists = self.words(&["if", "exists"]);
            let paths = self.paths()?;
            let drops = paths
                .into_iter()
                .map(|path| ColumnChange::Drop { path, if_exists })
                .collect();
            Operation::Columns(drops)
        } else if self.word("alter") {
            self.word("column");
            let path = self.dotted()?;
            Operation::Columns(vec![self.column_change(path)?])
        } else if self.words(&["set", "identifier", "fields"]) {
            let paths = self.paths()?;
            Operation::Columns(vec![ColumnChange::IdentifierFields { paths, set: true }])
        } else if self.words(&["set", "tblproperties"]) {
            Operation::SetProperties(self.properties(true)?)
        } else if self.words(&["unset", "tblproperties"]) {
            let if_exists = self.words(&["if", "exists"]);
            let keys = self
                .properties(false)?
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            Operation::UnsetProperties { keys, if_exists }
        } else {
            return self.parser.expected(
                "ADD COLUMN, RENAME COLUMN, RENAME TO, DROP COLUMN, ALTER COLUMN, SET/DROP \
                 IDENTIFIER FIELDS, SET TBLPROPERTIES or UNSET TBLPROPERTIES",
                self.parser.peek_token(),
            );
        };
        let _ = self.parser.consume_token(&Token::SemiColon);
        match self.parser.peek_token().token {
            Token::EOF => Ok(Alter { table, operation }),
            _ => self
                .parser
                .expected("the end of the statement", self.parser.peek_token()),
        }
    }

    fn new_column(&mut self) -> Parsed<ColumnChange> {
        let path = self.path()?;
        let data_type = self.parser.parse_data_type()?;
        let (mut not_null, mut default, mut comment) = (false, None, None);
        loop {
            if self.words(&["not", "null"]) {
                not_null = true;
            } else if self.word("null") {
                not_null = false;
            } else if self.word("default") {
                default = Some(self.parser.parse_expr()?);
            } else if self.word("comment") {
                comment = Some(self.parser.parse_literal_string()?);
            } else {
                break;
            }
        }
        let position = self.position()?;
        Ok(ColumnChange::Add {
            path,
            data_type,
            not_null,
            default,
            comment,
            position,
        })
    }

    fn column_change(&mut self, path: String) -> Parsed<ColumnChange> {
        if self.word("type") || self.words(&["set", "data", "type"]) {
            let data_type = self.parser.parse_data_type()?;
            return Ok(ColumnChange::Retype { path, data_type });
        }
        if self.words(&["set", "not", "null"]) {
            return Ok(ColumnChange::Nullable {
                path,
                optional: false,
            });
        }
        if self.words(&["drop", "not", "null"]) {
            return Ok(ColumnChange::Nullable {
                path,
                optional: true,
            });
        }
        if self.word("comment") {
            let doc = self.parser.parse_literal_string()?;
            return Ok(ColumnChange::Comment { path, doc });
        }
        if self.words(&["set", "default"]) {
            let value = Some(self.parser.parse_expr()?);
            return Ok(ColumnChange::WriteDefault { path, value });
        }
        if self.words(&["drop", "default"]) {
            return Ok(ColumnChange::WriteDefault { path, value: None });
        }
        match self.position()? {
            Some(position) => Ok(ColumnChange::Move { path, position }),
            None => self.parser.expected(
                "TYPE, SET DATA TYPE, SET/DROP NOT NULL, COMMENT, SET/DROP DEFAULT, FIRST, \
                 AFTER or BEFORE",
                self.parser.peek_token(),
            ),
        }
    }

    /// `('k' = 'v', ...)`, or with `values` false `('k', ...)`.
    fn properties(&mut self, values: bool) -> Parsed<Vec<(String, String)>> {
        self.parser.expect_token(&Token::LParen)?;
        let mut properties = Vec::new();
        loop {
            let key = self.text()?;
            let value = match values {
                true => {
                    self.parser.expect_token(&Token::Eq)?;
                    self.text()?
                }
                false => String::new(),
            };
            properties.push((key, value));
            if !self.parser.consume_token(&Token::Comma) {
                break;
            }
        }
        self.parser.expect_token(&Token::RParen)?;
        Ok(properties)
    }

    /// A property key or value: a string, a number, a word, or dotted words.
    fn text(&mut self) -> Parsed<String> {
        let token = self.parser.next_token();
        let mut text = match &token.token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => return Ok(s.clone()),
            Token::Number(n, _) => return Ok(n.clone()),
            Token::Word(w) => w.value.clone(),
            _ => return self.parser.expected("a property key or value", token),
        };
        while self.parser.consume_token(&Token::Period) {
            text.push('.');
            text.push_str(&self.ident()?);
        }
        Ok(text)
    }
}

/// Runs `alter` on the Iceberg table `target` names.
pub(super) async fn run_alter(
    ctx: &SessionContext,
    state: &SessionState,
    alter: &Alter,
    target: &IcebergTarget,
) -> DFResult<DataFrame> {
    let IcebergTarget { catalog, ident } = target;
    match &alter.operation {
        Operation::RenameTo(to) => {
            let Some(to) = super::iceberg_target(state, to).await? else {
                return plan_err!(
                    "cannot rename {ident} to {to}: the new name must be in a namespace of the \
                     same Iceberg catalog"
                );
            };
            if !Arc::ptr_eq(&to.catalog, catalog) {
                return plan_err!("cannot rename {ident} to {}: another catalog", to.ident);
            }
            catalog.rename_table(ident, &to.ident).await?;
            return super::done(ctx);
        }
        Operation::SetProperties(properties) => {
            let mut transaction = Transaction::load(Arc::clone(catalog), ident.clone()).await?;
            let mut set = Vec::new();
            for (key, value) in properties {
                if key == "format-version" {
                    let version = value
                        .parse::<i64>()
                        .ok()
                        .and_then(|n| FormatVersion::try_from(n).ok())
                        .ok_or_else(|| {
                            plan_datafusion_err!(
                                "'format-version' = '{value}': the format versions are 1, 2 and 3"
                            )
                        })?;
                    transaction = transaction.upgrade_format_version(version);
                } else {
                    set.push((key.clone(), value.clone()));
                }
            }
            if !set.is_empty() {
                transaction = transaction.set_properties(set);
            }
            transaction.commit().await?;
        }
        Operation::UnsetProperties { keys, if_exists } => {
            let table = catalog.load_table(ident).await?;
            let missing: Vec<&String> = keys
                .iter()
                .filter(|k| table.metadata().property(k).is_none())
                .collect();
            if !missing.is_empty() && !if_exists {
                let missing: Vec<&str> = missing.iter().map(|k| k.as_str()).collect();
                return plan_err!(
                    "table {ident} has no property {} (UNSET TBLPROPERTIES IF EXISTS ignores \
                     missing keys)",
                    missing.join(", ")
                );
            }
            let present: Vec<&String> = keys
                .iter()
                .filter(|k| table.metadata().property(k).is_some())
                .collect();
            if !present.is_empty() {
                Transaction::on(Arc::clone(catalog), ident.clone(), table)
                    .remove_properties(present.into_iter().cloned())
                    .commit()
                    .await?;
            }
        }
        Operation::Columns(changes) => {
            let table = catalog.load_table(ident).await?;
            let update = schema_update(ctx, state, table.metadata(), changes).await?;
            if !update.is_empty() {
                Transaction::on(Arc::clone(catalog), ident.clone(), table)
                    .update_schema(update)
                    .commit()
                    .await?;
            }
        }
    }
    super::done(ctx)
}

/// The [`UpdateSchema`] of `changes` on the table `metadata` describes.
async fn schema_update(
    ctx: &SessionContext,
    state: &SessionState,
    metadata: &TableMetadata,
    changes: &[ColumnChange],
) -> DFResult<UpdateSchema> {
    let version = metadata.format_version;
    let mut update = UpdateSchema::new();
    for change in changes {
        update = match change.clone() {
            ColumnChange::Add {
                path,
                data_type,
                not_null,
                default,
                comment,
                position,
            } => {
                let Some((name, parent)) = path.split_last() else {
                    return plan_err!("ADD COLUMN needs a column name");
                };
                let shown = path.join(".");
                let field_type = iceberg_type(state, &data_type, version, &shown).await?;
                let mut column = NewColumn::new(name.clone(), field_type.clone());
                if !parent.is_empty() {
                    column = column.in_struct(parent.join("."));
                }
                if not_null {
                    column = column.required();
                }
                if let Some(default) = default {
                    column = column
                        .with_default(default_value(ctx, &default, &field_type, &shown).await?);
                }
                if let Some(doc) = comment {
                    column = column.with_doc(doc);
                }
                if let Some(position) = position {
                    column = column.at(position);
                }
                update.add_column_with(column)
            }
            ColumnChange::Rename { path, to } => update.rename_column(path, to),
            ColumnChange::Drop { path, if_exists } => {
                let dropped = update.clone().drop_column(path.clone());
                match dropped.apply(metadata) {
                    Err(crate::Error::NotFound { .. }) if if_exists => update,
                    _ => dropped,
                }
            }
            ColumnChange::Retype { path, data_type } => {
                let to = match iceberg_type(state, &data_type, version, &path).await? {
                    Type::Primitive(p) => p,
                    other => {
                        return plan_err!(
                            "column '{path}' cannot change type to {other}: only primitive \
                             types are promotions"
                        );
                    }
                };
                update.update_column_type(path, to)
            }
            ColumnChange::Nullable { path, optional } => match optional {
                true => update.make_optional(path),
                false => update.require_column(path),
            },
            ColumnChange::Comment { path, doc } => update.update_doc(path, Some(doc)),
            ColumnChange::Move { path, position } => update.move_column(path, position),
            ColumnChange::WriteDefault { path, value } => {
                let value = match value {
                    None => None,
                    Some(expr) => {
                        let (schema, _) = UpdateSchema::new().apply(metadata)?;
                        let field_type = field_type_at(&schema, &path).ok_or_else(|| {
                            plan_datafusion_err!("column '{path}' not found in table's schema")
                        })?;
                        Some(default_value(ctx, &expr, &field_type, &path).await?)
                    }
                };
                update.set_write_default(path, value)
            }
            ColumnChange::IdentifierFields { paths, set } => {
                let current = metadata.current_schema();
                let mut names: Vec<String> = match set {
                    true => Vec::new(),
                    false => current
                        .identifier_field_ids
                        .iter()
                        .filter_map(|id| full_name(current, *id))
                        .collect(),
                };
                if set {
                    names = paths;
                } else {
                    for path in &paths {
                        let before = names.len();
                        names.retain(|n| !n.eq_ignore_ascii_case(path));
                        if names.len() == before {
                            return plan_err!("column '{path}' is not an identifier field");
                        }
                    }
                }
                update.set_identifier_fields(names)
            }
        };
    }
    // Errors of the changes themselves surface here, before any commit.
    update.apply(metadata)?;
    Ok(update)
}

/// The type of the field `path` names (dotted, exact names).
fn field_type_at(schema: &Schema, path: &str) -> Option<Type> {
    let id = (1..=schema.highest_field_id())
        .find(|id| full_name(schema, *id).is_some_and(|n| n.eq_ignore_ascii_case(path)))?;
    schema.field_by_id(id).map(|f| f.field_type.clone())
}

/// The dotted name of field `id` (`s.inner`, `points.element.x`).
fn full_name(schema: &Schema, id: i32) -> Option<String> {
    fn walk(fields: &[Arc<crate::spec::NestedField>], id: i32, prefix: &str) -> Option<String> {
        for f in fields {
            let name = match prefix {
                "" => f.name.clone(),
                p => format!("{p}.{}", f.name),
            };
            if f.id == id {
                return Some(name);
            }
            let found = match &f.field_type {
                Type::Struct(s) => walk(&s.fields, id, &name),
                Type::List(l) => walk(std::slice::from_ref(&l.element_field), id, &name),
                Type::Map(m) => walk(
                    &[Arc::clone(&m.key_field), Arc::clone(&m.value_field)],
                    id,
                    &name,
                ),
                Type::Primitive(_) => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    walk(schema.columns(), id, "")
}

/// The Iceberg type of a SQL type: an Iceberg type name as it is, else the type DataFusion's
/// `CREATE TABLE` gives the SQL type, mapped as `CREATE TABLE` maps it.
async fn iceberg_type(
    state: &SessionState,
    data_type: &DataType,
    version: FormatVersion,
    path: &str,
) -> DFResult<Type> {
    if let Some(p) = super::types::custom_type(data_type, path)? {
        return Ok(Type::Primitive(p));
    }
    let text = data_type.to_string();
    if let Ok(p) = PrimitiveType::parse(&text.to_lowercase()) {
        return Ok(Type::Primitive(p));
    }
    let create = format!("CREATE TABLE icefloe_alter_type (c {text})");
    let dialect = state.config().options().sql_parser.dialect;
    let statement = state.sql_to_statement(&create, &dialect)?;
    let plan = state.statement_to_plan(statement).await?;
    let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(memory)) = plan else {
        return plan_err!("column '{path}': the type {text} has no Iceberg type");
    };
    let field = Arc::clone(memory.input.schema().field(0));
    Ok(arrow_to_iceberg_type(&field, version, path)?)
}

/// A constant default as the spec's JSON single value of `field_type`: DataFusion evaluates
/// the expression, cast to the column's Arrow type.
async fn default_value(
    ctx: &SessionContext,
    expr: &Expr,
    field_type: &Type,
    path: &str,
) -> DFResult<serde_json::Value> {
    let Type::Primitive(primitive) = field_type else {
        return plan_err!(
            "column '{path}' is a {field_type}: only primitive columns take a default"
        );
    };
    let batches = ctx.sql(&format!("SELECT {expr}")).await?.collect().await?;
    let value = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| Arc::clone(b.column(0)))
        .ok_or_else(|| plan_datafusion_err!("column '{path}': DEFAULT {expr} has no value"))?;
    let field = crate::spec::NestedField::optional(1, "c", field_type.clone());
    let arrow = schema_to_arrow(&Schema::new(0, vec![field]))?;
    let target = arrow.field(0).data_type();
    let strict = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let value = cast_with_options(&value, target, &strict).map_err(|e| {
        plan_datafusion_err!("column '{path}': DEFAULT {expr} is not a {primitive}: {e}")
    })?;
    if value.is_null(0) {
        return plan_err!(
            "column '{path}': DEFAULT {expr} is NULL; a column without a default reads NULL already"
        );
    }
    let literal = literal_at(&value, primitive).ok_or_else(|| {
        plan_datafusion_err!("column '{path}': a default of type {primitive} is not supported")
    })?;
    Ok(literal.to_json(primitive))
}

/// The first value of `array` (of the Arrow type of `ty`) as a [`Literal`].
fn literal_at(array: &dyn Array, ty: &PrimitiveType) -> Option<Literal> {
    use PrimitiveType as P;
    use arrow_types::*;
    Some(match (ty, array.data_type()) {
        (P::Boolean, _) => Literal::Boolean(array.as_boolean_opt()?.value(0)),
        (P::Int, _) => Literal::Int(array.as_primitive_opt::<Int32Type>()?.value(0)),
        (P::Long, _) => Literal::Long(array.as_primitive_opt::<Int64Type>()?.value(0)),
        (P::Float, _) => Literal::Float(array.as_primitive_opt::<Float32Type>()?.value(0)),
        (P::Double, _) => Literal::Double(array.as_primitive_opt::<Float64Type>()?.value(0)),
        (P::Decimal { .. }, _) => {
            Literal::Decimal(array.as_primitive_opt::<Decimal128Type>()?.value(0))
        }
        (P::Date, _) => Literal::Date(array.as_primitive_opt::<Date32Type>()?.value(0)),
        (P::Time, _) => Literal::Time(array.as_primitive_opt::<Time64MicrosecondType>()?.value(0)),
        (P::Timestamp | P::Timestamptz, ArrowType::Timestamp(_, _)) => {
            let micros = array
                .as_primitive_opt::<TimestampMicrosecondType>()?
                .value(0);
            match ty {
                P::Timestamp => Literal::Timestamp(micros),
                _ => Literal::Timestamptz(micros),
            }
        }
        (P::TimestampNs | P::TimestamptzNs, ArrowType::Timestamp(_, _)) => {
            let nanos = array
                .as_primitive_opt::<TimestampNanosecondType>()?
                .value(0);
            match ty {
                P::TimestampNs => Literal::TimestampNs(nanos),
                _ => Literal::TimestamptzNs(nanos),
            }
        }
        (P::String, _) => Literal::String(array.as_string_opt::<i32>()?.value(0).to_string()),
        (P::Binary, _) => Literal::Binary(array.as_binary_opt::<i32>()?.value(0).to_vec()),
        _ => return None,
    })
}

//! Column changes of `ALTER TABLE`: the statement's column clauses as one [`UpdateSchema`],
//! with SQL types mapped to Iceberg types and defaults evaluated to JSON single values.

use std::sync::Arc;

use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::common::{plan_datafusion_err, plan_err};
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{DataType, Expr};

use super::ColumnChange;
use crate::spec::{FormatVersion, PrimitiveType, Schema, TableMetadata, Type};
use crate::table::arrow_to_iceberg_type;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::{NewColumn, UpdateSchema};

/// The [`UpdateSchema`] of `changes` on the table `metadata` describes.
pub(super) async fn schema_update(
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
                        .filter_map(|id| current.dotted_name(*id))
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
    let id = (1..=schema.highest_field_id()).find(|id| {
        schema
            .dotted_name(*id)
            .is_some_and(|n| n.eq_ignore_ascii_case(path))
    })?;
    schema.field_by_id(id).map(|f| f.field_type.clone())
}

/// The Iceberg type of a SQL type: an Iceberg type name as it is, else the type DataFusion's
/// `CREATE TABLE` gives the SQL type, mapped as `CREATE TABLE` maps it.
async fn iceberg_type(
    state: &SessionState,
    data_type: &DataType,
    version: FormatVersion,
    path: &str,
) -> DFResult<Type> {
    if let Some(p) = crate::sql::types::custom_type(data_type, path)? {
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
pub(in crate::sql) async fn default_value(
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
    let literal = crate::write::literal_at(value.as_ref(), primitive, 0)?.ok_or_else(|| {
        plan_datafusion_err!("column '{path}': a default of type {primitive} is not supported")
    })?;
    Ok(literal.to_json(primitive))
}

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

mod columns;
mod layout;
mod parse;

pub(super) use columns::default_value;

use std::sync::Arc;

use datafusion::common::{plan_datafusion_err, plan_err};
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::sqlparser::ast::{DataType, Expr, ObjectName};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};

use super::IcebergTarget;
use crate::spec::FormatVersion;
use crate::transaction::{ColumnPosition, ReplaceSortOrder, Transaction};
use layout::Layout;
use parse::{Reader, word};

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
    Layout(Layout),
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
    let alter = reader
        .statement()
        .map_err(|e| plan_datafusion_err!("ALTER TABLE: {}", parser_message(e)))?;
    Ok(Some(alter))
}

/// A sort order as `WRITE ORDERED BY` takes it (`id DESC NULLS LAST, bucket(4, x)`), on its
/// own: the `sort-order` of `iceberg_rewrite_data_files`.
pub(super) fn parse_sort_order(
    text: &str,
    dialect: &dyn Dialect,
    normalize: bool,
) -> crate::Result<ReplaceSortOrder> {
    let refused = |e: ParserError| {
        crate::Error::invalid(format_args!("sort order '{text}'"), parser_message(e))
    };
    let parser = Parser::new(dialect).try_with_sql(text).map_err(refused)?;
    let mut reader = Reader { parser, normalize };
    let items = reader.sort_order().map_err(refused)?;
    Ok(layout::sort_order(&items))
}

/// A parser error's own text (sqlparser's `Display` prefixes its kind).
fn parser_message(e: ParserError) -> String {
    match e {
        ParserError::ParserError(m) | ParserError::TokenizerError(m) => m,
        other => other.to_string(),
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
        Operation::Layout(layout) => {
            let table = catalog.load_table(ident).await?;
            let metadata = Arc::clone(table.metadata());
            let transaction = Transaction::on(Arc::clone(catalog), ident.clone(), table);
            layout::with_layout(transaction, layout, &metadata)?
                .commit()
                .await?;
        }
        Operation::Columns(changes) => {
            let table = catalog.load_table(ident).await?;
            let update = columns::schema_update(ctx, state, table.metadata(), changes).await?;
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

#[cfg(test)]
mod tests;

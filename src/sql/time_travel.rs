//! [`TimeTravelPlanner`]: plans `FROM t FOR SYSTEM_TIME AS OF ...`, `TIMESTAMP AS OF ...` and
//! `VERSION AS OF ...` over Iceberg tables, through DataFusion's `RelationPlanner` extension.
//!
//! The clause's expression is any constant expression; it is planned, type-coerced and folded to
//! one value (so `now() - INTERVAL '1 hour'` works), then read as:
//!
//! | clause | value | reads |
//! |---|---|---|
//! | `FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF` | a timestamp, a date, a string (`2024-01-01 10:00:00`, ISO-8601 with or without a zone) or an integer (epoch milliseconds) | the snapshot current at that instant |
//! | `VERSION AS OF` | an integer | that snapshot |
//! | `VERSION AS OF` | a string | that branch or tag (`main`: the current snapshot); a string of digits that names no ref is a snapshot id |
//!
//! The clauses also apply to the per-snapshot metadata tables (`"t$files" VERSION AS OF 5`):
//! `manifests`, `entries`, `files`, `data_files`, `delete_files` and `partitions`.
//!
//! Timestamps without a time zone (`TIMESTAMP '2024-01-01 10:00:00'`, strings without an offset)
//! are UTC.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::common::{DFSchema, ScalarValue, not_impl_err, plan_datafusion_err, plan_err};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::sql::sqlparser::ast::{
    self as sql_ast, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, TableAlias,
    TableFactor, TableVersion,
};

use crate::error::Error;
use crate::metadata_tables::IcebergMetadataTable;
use crate::provider::IcebergTableProvider;
use crate::session::refs::selector_for_name;
use crate::spec::selection::{format_timestamp_ms, parse_timestamp_ms};
use crate::spec::{SnapshotSelector, TableMetadata};

/// Plans table factors with a version clause over Iceberg tables (see the module docs);
/// registered by [`crate::sql::register`].
///
/// Other table factors go on to DataFusion's planner. A version clause on a table that is not an
/// Iceberg table is a planning error, as is one the table cannot resolve (unknown snapshot id or
/// ref, a timestamp before the first snapshot); errors name the table and the clause.
#[derive(Debug, Default, Clone, Copy)]
pub struct TimeTravelPlanner;

impl RelationPlanner for TimeTravelPlanner {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DFResult<RelationPlanning> {
        match relation {
            TableFactor::Table {
                version: Some(_),
                args: Some(_),
                ..
            } => plan_err!("a version clause cannot follow a table function"),
            TableFactor::Table {
                name,
                alias,
                version: Some(version),
                ..
            } => {
                let planned = plan_versioned(name, alias, version, context)?;
                Ok(RelationPlanning::Planned(Box::new(planned)))
            }
            other => Ok(RelationPlanning::Original(Box::new(other))),
        }
    }
}

/// The scan of `name` at the state `version` asks for, under `name` (so qualified column
/// references keep working) and `alias`.
fn plan_versioned(
    name: ObjectName,
    alias: Option<TableAlias>,
    version: TableVersion,
    context: &mut dyn RelationPlannerContext,
) -> DFResult<PlannedRelation> {
    let table_ref = context.object_name_to_table_reference(name)?;
    let asked = AsOf::from_clause(version, context)?;
    let source = context
        .context_provider()
        .get_table_source(table_ref.clone())?;
    let provider = source_as_provider(&source).ok();
    let Some(at) = provider
        .as_deref()
        .map(|p| at_state(p, &asked, &table_ref))
        .transpose()?
        .flatten()
    else {
        return plan_err!(
            "{asked} needs an Iceberg table or one of its metadata tables, and {table_ref} is \
             neither"
        );
    };
    let plan = LogicalPlanBuilder::scan(table_ref, provider_as_source(at), None)?.build()?;
    Ok(PlannedRelation::new(plan, alias))
}

/// `provider` (an Iceberg table, or a per-snapshot metadata table) at the state `asked` names;
/// `None` for other providers. Errors say which table and what was asked.
fn at_state(
    provider: &dyn TableProvider,
    asked: &AsOf,
    table_ref: &TableReference,
) -> DFResult<Option<Arc<dyn TableProvider>>> {
    let context =
        |e: Error| DataFusionError::from(e).context(format!("reading {table_ref} {asked}"));
    if let Some(iceberg) = provider.downcast_ref::<IcebergTableProvider>() {
        let selector = asked.selector(iceberg.table().metadata());
        return Ok(Some(Arc::new(iceberg.at(selector).map_err(context)?)));
    }
    if let Some(relation) = provider.downcast_ref::<IcebergMetadataTable>() {
        let selector = asked.selector(relation.table().metadata());
        return Ok(Some(Arc::new(relation.at(selector).map_err(context)?)));
    }
    Ok(None)
}

/// What a version clause asks for, evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AsOf {
    /// `FOR SYSTEM_TIME AS OF` / `TIMESTAMP AS OF`: epoch milliseconds.
    Timestamp(i64),
    /// `VERSION AS OF <integer>`.
    SnapshotId(i64),
    /// `VERSION AS OF '<name>'`.
    Name(String),
}

impl fmt::Display for AsOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timestamp(ms) => write!(f, "AS OF {} ({ms} ms)", format_timestamp_ms(*ms)),
            Self::SnapshotId(id) => write!(f, "VERSION AS OF {id}"),
            Self::Name(name) => write!(f, "VERSION AS OF '{name}'"),
        }
    }
}

impl AsOf {
    /// The state asked for in a table with `metadata` (names: see [`selector_for_name`]).
    fn selector(&self, metadata: &TableMetadata) -> SnapshotSelector {
        match self {
            Self::Timestamp(ms) => SnapshotSelector::AsOfTimestamp(*ms),
            Self::SnapshotId(id) => SnapshotSelector::SnapshotId(*id),
            Self::Name(name) => selector_for_name(metadata, name),
        }
    }

    fn from_clause(
        version: TableVersion,
        context: &mut dyn RelationPlannerContext,
    ) -> DFResult<Self> {
        match version {
            TableVersion::ForSystemTimeAsOf(e) | TableVersion::TimestampAsOf(e) => {
                Self::timestamp(constant(e, context)?)
            }
            TableVersion::VersionAsOf(e) => Self::version(constant(e, context)?),
            TableVersion::Function(f) => Self::from_at_function(f, context),
            TableVersion::Changes { .. } => {
                not_impl_err!("CHANGES clauses (use iceberg_incremental(...) for appended rows)")
            }
        }
    }

    /// `AT(VERSION => ...)` (what `VERSION AS OF 'name'` is parsed as, see
    /// [`crate::sql::dialect`]) and `AT(TIMESTAMP => ...)`.
    fn from_at_function(
        function: sql_ast::Expr,
        context: &mut dyn RelationPlannerContext,
    ) -> DFResult<Self> {
        let unsupported = || {
            not_impl_err!(
                "the version clause {function}: icefloe reads FOR SYSTEM_TIME AS OF, \
                 TIMESTAMP AS OF, VERSION AS OF, AT(VERSION => ...) and AT(TIMESTAMP => ...)"
            )
        };
        let sql_ast::Expr::Function(f) = &function else {
            return unsupported();
        };
        let FunctionArguments::List(list) = &f.args else {
            return unsupported();
        };
        let is_at = f.name.to_string().eq_ignore_ascii_case("AT");
        let (kind, arg) = match list.args.as_slice() {
            [
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(arg),
                    ..
                },
            ] if is_at => (name.value.to_ascii_uppercase(), arg.clone()),
            _ => return unsupported(),
        };
        match kind.as_str() {
            "VERSION" => Self::version(constant(arg, context)?),
            "TIMESTAMP" => Self::timestamp(constant(arg, context)?),
            _ => unsupported(),
        }
    }

    /// A point in time: timestamps, dates, strings, integers (epoch milliseconds).
    fn timestamp(value: ScalarValue) -> DFResult<Self> {
        use ScalarValue as S;
        let ms = match &value {
            S::TimestampSecond(Some(s), _) => s.checked_mul(1000),
            S::TimestampMillisecond(Some(ms), _) | S::Date64(Some(ms)) => Some(*ms),
            S::TimestampMicrosecond(Some(us), _) => Some(us.div_euclid(1000)),
            S::TimestampNanosecond(Some(ns), _) => Some(ns.div_euclid(1_000_000)),
            S::Date32(Some(days)) => i64::from(*days).checked_mul(86_400_000),
            S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
                Some(parse_timestamp_ms(s)?)
            }
            v if v.data_type().is_integer() => integer(v),
            _ => None,
        };
        ms.map(Self::Timestamp).ok_or_else(|| {
            plan_datafusion_err!(
                "AS OF needs a timestamp, a date, a string or epoch milliseconds, not {value} ({})",
                value.data_type()
            )
        })
    }

    /// A snapshot id (integers) or a ref name (strings).
    fn version(value: ScalarValue) -> DFResult<Self> {
        use ScalarValue as S;
        match &value {
            S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
                Some(Self::Name(s.clone()))
            }
            v if v.data_type().is_integer() => integer(v).map(Self::SnapshotId),
            _ => None,
        }
        .ok_or_else(|| {
            plan_datafusion_err!(
                "VERSION AS OF needs a snapshot id or a branch or tag name, not {value} ({})",
                value.data_type()
            )
        })
    }
}

/// A non-null integer of any width as `i64`, when it fits.
fn integer(value: &ScalarValue) -> Option<i64> {
    match value.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(v) => v,
        _ => None,
    }
}

/// Plans `expr` without columns and folds it to one value.
fn constant(
    expr: sql_ast::Expr,
    context: &mut dyn RelationPlannerContext,
) -> DFResult<ScalarValue> {
    let text = expr.to_string();
    let schema = DFSchema::empty();
    let planned = context.sql_to_expr(expr, &schema)?;
    let options = Arc::new(context.context_provider().options().clone());
    let simplify = SimplifyContext::builder()
        .with_config_options(options)
        .with_current_time()
        .build();
    let simplifier = ExprSimplifier::new(simplify);
    match simplifier.simplify(simplifier.coerce(planned, &schema)?)? {
        Expr::Literal(value, _) if !value.is_null() => Ok(value),
        _ => plan_err!("the AS OF expression {text} is not a non-null constant"),
    }
}

#[cfg(test)]
#[path = "time_travel_tests.rs"]
mod tests;

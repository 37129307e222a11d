//! [`writes`]: whether a statement would change a table or a catalog, for read-only sessions
//! (`icefloe sql --read-only`).

use datafusion::error::Result as DFResult;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{ObjectName, Statement as SqlStatement, visit_relations};
use std::ops::ControlFlow;

use super::procedures::{IcebergProcedure, REWRITE_DATA_FILES};

/// The table functions that commit (maintenance procedures).
fn is_procedure(name: &ObjectName) -> bool {
    let Some(last) = name.0.last().and_then(|part| part.as_ident()) else {
        return false;
    };
    let last = last.value.to_lowercase();
    IcebergProcedure::ALL.iter().any(|(n, _)| *n == last)
        || last == "iceberg_expire_snapshots"
        || last == "iceberg_rollback_to_snapshot"
        || last == REWRITE_DATA_FILES
}

/// What in `query` (one statement or several, in the session's dialect) would write: `None`
/// when nothing does, else a short description of the first statement that would (an INSERT,
/// DDL that creates or drops, COPY, a maintenance procedure). Reads, `SHOW`, `SET`, `EXPLAIN`
/// (without `ANALYZE` of a write), views and `CREATE EXTERNAL TABLE` that opens an existing
/// table (no column list) do not write.
///
/// Errors: the statement does not parse.
pub fn writes(ctx: &SessionContext, query: &str) -> DFResult<Option<String>> {
    let state = ctx.state();
    // icefloe's own ALTER TABLE forms, which DataFusion's parser does not take.
    if let Some(alter) = super::parse_alter_statement(&state, query)? {
        return Ok(Some(format!("ALTER TABLE {} changes a table", alter.table)));
    }
    let statements = super::parse_with_icefloe_dialect(&state, query)?;
    Ok(statements.iter().find_map(statement_writes))
}

fn statement_writes(statement: &Statement) -> Option<String> {
    match statement {
        Statement::Statement(inner) => sql_statement_writes(inner),
        Statement::CreateExternalTable(create) if !create.columns.is_empty() => Some(format!(
            "CREATE EXTERNAL TABLE {} creates a table",
            create.name
        )),
        Statement::CreateExternalTable(_) => None,
        Statement::CopyTo(_) => Some("COPY writes files".to_string()),
        Statement::Explain(explain) if explain.options.analyze => {
            statement_writes(&explain.statement)
        }
        Statement::Explain(_) => None,
        _ => None,
    }
}

fn sql_statement_writes(statement: &SqlStatement) -> Option<String> {
    if let SqlStatement::Explain {
        statement, analyze, ..
    } = statement
    {
        return match analyze {
            true => sql_statement_writes(statement),
            false => None,
        };
    }
    let kind = match statement {
        SqlStatement::Query(_)
        | SqlStatement::ShowTables { .. }
        | SqlStatement::ShowColumns { .. }
        | SqlStatement::ShowVariable { .. }
        | SqlStatement::ShowFunctions { .. }
        | SqlStatement::ShowCreate { .. }
        | SqlStatement::ShowSchemas { .. }
        | SqlStatement::ShowDatabases { .. }
        | SqlStatement::ShowStatus { .. }
        | SqlStatement::ShowVariables { .. }
        | SqlStatement::ExplainTable { .. }
        | SqlStatement::Set(_)
        | SqlStatement::CreateView { .. } => None,
        SqlStatement::Insert(_) => Some("INSERT"),
        SqlStatement::Update { .. } => Some("UPDATE"),
        SqlStatement::Delete(_) => Some("DELETE"),
        SqlStatement::Merge { .. } => Some("MERGE"),
        SqlStatement::Truncate { .. } => Some("TRUNCATE"),
        SqlStatement::CreateTable(_) => Some("CREATE TABLE"),
        SqlStatement::CreateSchema { .. } => Some("CREATE SCHEMA"),
        SqlStatement::Drop { .. } => Some("DROP"),
        SqlStatement::AlterTable { .. } => Some("ALTER TABLE"),
        _ => Some("this statement"),
    };
    if let Some(kind) = kind {
        return Some(format!("{kind} changes a table or catalog"));
    }
    let mut procedure = None;
    let _ = visit_relations(statement, |name| {
        if is_procedure(name) {
            procedure = Some(format!("{name} commits to its table"));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    procedure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_and_writes_are_named() {
        let ctx = SessionContext::new();
        let reads = [
            "SELECT 1",
            "SELECT * FROM t VERSION AS OF 'v1'",
            "SHOW TABLES",
            "SET datafusion.execution.batch_size = 10",
            "EXPLAIN INSERT INTO t VALUES (1)",
            "CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '/x'",
            "CREATE VIEW v AS SELECT 1",
            "DESCRIBE t",
            "SELECT * FROM iceberg_scan('/x')",
        ];
        for sql in reads {
            assert_eq!(writes(&ctx, sql).unwrap(), None, "{sql}");
        }
        let written = [
            ("INSERT INTO t VALUES (1)", "INSERT"),
            ("EXPLAIN ANALYZE INSERT INTO t VALUES (1)", "INSERT"),
            ("CREATE TABLE db.t (x INT)", "CREATE TABLE"),
            ("CREATE TABLE db.t AS SELECT 1", "CREATE TABLE"),
            ("CREATE SCHEMA db", "CREATE SCHEMA"),
            ("DROP TABLE db.t", "DROP"),
            ("DELETE FROM t WHERE x = 1", "DELETE"),
            (
                "CREATE EXTERNAL TABLE t (x INT) STORED AS ICEBERG LOCATION '/x'",
                "creates",
            ),
            (
                "SELECT * FROM iceberg_expire_snapshots('db.t')",
                "iceberg_expire_snapshots",
            ),
            (
                "SELECT * FROM ICEBERG_CREATE_TAG('db.t', 'x')",
                "ICEBERG_CREATE_TAG",
            ),
            ("SELECT 1; INSERT INTO t VALUES (1)", "INSERT"),
            (
                "ALTER TABLE db.t ADD COLUMNS (tags ARRAY<VARCHAR>, s STRUCT<w INT>)",
                "ALTER TABLE db.t",
            ),
            (
                "ALTER TABLE db.t WRITE ORDERED BY bucket(4, id)",
                "ALTER TABLE",
            ),
            (
                "SELECT * FROM iceberg_compute_table_stats('db.t')",
                "iceberg_compute_table_stats",
            ),
            (
                "SELECT * FROM iceberg_rewrite_data_files('db.t', 'min-input-files=2')",
                "iceberg_rewrite_data_files",
            ),
        ];
        for (sql, named) in written {
            let why = writes(&ctx, sql).unwrap().unwrap_or_default();
            assert!(why.contains(named), "{sql}: {why}");
        }
    }
}

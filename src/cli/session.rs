//! The SQL session of `icefloe sql`: a DataFusion context with the catalog and tables of the
//! command line registered, running statements and printing their results.

use std::io::{BufWriter, Write};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::future::try_join_all;

use super::args::{OutputFormat, SqlArgs, relocation_of};
use super::print::print_batches;
use super::split::split_statements;
use super::{CliResult, shell};
use crate::session::register_catalog_as_default;
use crate::{IcebergTableProvider, TableOptions};

/// A DataFusion session with `information_schema` enabled and the catalog and tables of the
/// command line registered, printing results in one format.
#[derive(Clone)]
pub struct SqlSession {
    ctx: SessionContext,
    format: OutputFormat,
}

impl std::fmt::Debug for SqlSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlSession")
            .field("session_id", &self.ctx.session_id())
            .field("format", &self.format)
            .finish()
    }
}

impl SqlSession {
    /// A session over `ctx` printing in `format`.
    pub fn new(ctx: SessionContext, format: OutputFormat) -> Self {
        Self { ctx, format }
    }

    /// A fresh session with the `--catalog` (as the default catalog) and every `--table` of
    /// `args` registered, all read with the `--relocate` rules.
    ///
    /// The session (DataFusion's function registry: about a millisecond) is built on another
    /// thread while the tables' metadata files are read and parsed, all tables at once.
    pub async fn from_args(args: &SqlArgs) -> CliResult<Self> {
        let runtime = Arc::new(RuntimeEnv::default());
        let building = tokio::task::spawn_blocking({
            let runtime = Arc::clone(&runtime);
            move || {
                let config = SessionConfig::new().with_information_schema(true);
                let ctx = SessionContext::new_with_config_rt(config, runtime);
                crate::sql::register(&ctx);
                ctx
            }
        });
        let relocation = relocation_of(&args.relocate);
        let opened = try_join_all(args.tables.iter().map(|table| {
            let options = TableOptions::default().with_relocation_rules(relocation.clone());
            IcebergTableProvider::open_with_runtime(Arc::clone(&runtime), &table.location, options)
        }))
        .await?;
        let ctx = building
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?;
        if let Some(db) = &args.catalog {
            register_catalog_as_default(&ctx, db, relocation.clone()).await?;
        }
        for (table, provider) in args.tables.iter().zip(opened) {
            ctx.register_table(table.name.as_str(), Arc::new(provider))?;
        }
        Ok(Self::new(ctx, args.format))
    }

    /// The DataFusion context.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs one statement (parsed by [`crate::sql::sql`], so version clauses work) and prints
    /// its result to `out`.
    pub async fn run_statement<W: Write>(&self, sql: &str, out: &mut W) -> CliResult<()> {
        let df = crate::sql::sql(&self.ctx, sql).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        print_batches(out, self.format, &schema, &batches)?;
        out.flush()?;
        Ok(())
    }

    /// Runs the `;`-separated statements of `sql` in order, printing each result; stops at the
    /// first error.
    pub async fn run_script<W: Write>(&self, sql: &str, out: &mut W) -> CliResult<()> {
        for statement in split_statements(sql).into_all() {
            self.run_statement(&statement, out).await?;
        }
        Ok(())
    }
}

/// `icefloe sql`: runs the query of `args`, or the interactive shell when there is none.
pub async fn run_sql(args: SqlArgs) -> CliResult<()> {
    let session = SqlSession::from_args(&args).await?;
    match &args.query {
        Some(query) => {
            let mut out = BufWriter::new(std::io::stdout().lock());
            session.run_script(query, &mut out).await
        }
        None => shell::run_shell(&session).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(format: OutputFormat, sql: &str) -> CliResult<String> {
        let session = SqlSession::new(SessionContext::new(), format);
        let mut out = Vec::new();
        session.run_script(sql, &mut out).await?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[tokio::test]
    async fn runs_statements_in_order() {
        let text = run(OutputFormat::Csv, "SELECT 1 AS a; SELECT 'x;y' AS b;")
            .await
            .unwrap();
        assert_eq!(text, "a\n1\nb\nx;y\n");
    }

    #[tokio::test]
    async fn ddl_then_query() {
        let sql = "CREATE VIEW v AS SELECT 2 AS n; SELECT n FROM v";
        assert_eq!(run(OutputFormat::Json, sql).await.unwrap(), "{\"n\":2}\n");
    }

    #[tokio::test]
    async fn time_travel_and_refs_out_of_the_box() {
        use crate::sql::test_support::{WRITTEN_AT, warehouse};
        let args = SqlArgs {
            catalog: None,
            tables: vec![super::super::args::TableArg {
                name: "refs".into(),
                location: format!("{}/db/refs", warehouse()),
            }],
            relocate: vec![super::super::args::RelocateArg {
                old: WRITTEN_AT.into(),
                new: warehouse(),
            }],
            format: OutputFormat::Csv,
            query: None,
        };
        let session = SqlSession::from_args(&args).await.unwrap();
        let sql = "SELECT count(*) AS n FROM refs VERSION AS OF 'v1'; \
                   SELECT count(*) AS n FROM refs FOR SYSTEM_TIME AS OF 1796049769870; \
                   SELECT count(*) AS n FROM refs.branch_dev; \
                   SELECT count(*) AS n FROM \"refs@audit\"";
        let mut out = Vec::new();
        session.run_script(sql, &mut out).await.unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "n\n10\nn\n20\nn\n20\nn\n10\n"
        );
    }

    #[tokio::test]
    async fn stops_at_the_first_error() {
        let session = SqlSession::new(SessionContext::new(), OutputFormat::Csv);
        let mut out = Vec::new();
        let result = session
            .run_script("SELECT 1 AS a; SELECT * FROM nope; SELECT 3", &mut out)
            .await;
        assert!(matches!(result, Err(super::super::CliError::DataFusion(_))));
        assert_eq!(String::from_utf8(out).unwrap(), "a\n1\n");
    }
}

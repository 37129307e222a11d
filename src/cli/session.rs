//! The SQL session of `icefloe sql`: a DataFusion context with the catalog and tables of the
//! command line registered, running statements and printing their results.

use std::io::{BufWriter, IsTerminal, Read, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use futures::future::try_join_all;

use super::args::{DEFAULT_MAX_ROWS, JsonBigInt, OutputFormat, SqlArgs, relocation_of};
use super::print::{print_batches_with, print_table};
use super::shell::{Command, HELP, Input, InputBuffer};
use super::{CliError, CliResult, report_error_as, shell};
use crate::io::{FileIO, StorageProperties};
use crate::session::attach_as_default;
use crate::{IcebergTableProvider, TableOptions};

/// A DataFusion session with `information_schema` enabled and the catalog and tables of the
/// command line registered, printing results in one format.
#[derive(Clone)]
pub struct SqlSession {
    ctx: SessionContext,
    format: OutputFormat,
    /// `--read-only`: statements that would write are refused.
    read_only: bool,
    /// `--json-big-int`.
    json_big_int: JsonBigInt,
    /// `--max-rows` (0: every row).
    max_rows: usize,
    /// `--relocate` rules are in force: the first write says where it goes (once).
    relocating: Option<Arc<std::sync::atomic::AtomicBool>>,
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
        Self {
            ctx,
            format,
            read_only: false,
            json_big_int: JsonBigInt::default(),
            max_rows: DEFAULT_MAX_ROWS,
            relocating: None,
        }
    }

    /// This session showing at most `max_rows` rows of a table result (0: every row).
    pub fn with_max_rows(mut self, max_rows: usize) -> Self {
        self.max_rows = max_rows;
        self
    }

    /// This session refusing every statement that would write ([`crate::sql::writes`]).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// A fresh session with the `--catalog` (as the default catalog) and every `--table` of
    /// `args` registered, all read with the `--relocate` rules.
    ///
    /// The session (DataFusion's function registry: about a millisecond) is built on another
    /// thread while the tables' metadata files are read and parsed, all tables at once.
    pub async fn from_args(args: &SqlArgs) -> CliResult<Self> {
        let runtime = Arc::new(RuntimeEnv::default());
        let storage = StorageProperties::from_pairs(args.properties.clone());
        let building = tokio::task::spawn_blocking({
            let runtime = Arc::clone(&runtime);
            let storage = storage.clone();
            move || {
                let config =
                    storage.for_session(SessionConfig::new().with_information_schema(true));
                let ctx = SessionContext::new_with_config_rt(config, runtime);
                crate::sql::register(&ctx);
                ctx
            }
        });
        let relocation = relocation_of(&args.relocate);
        let opened = try_join_all(args.tables.iter().map(|table| {
            let options = TableOptions::default()
                .with_relocation_rules(relocation.clone())
                .with_storage(storage.clone());
            IcebergTableProvider::open_with_runtime(Arc::clone(&runtime), &table.location, options)
        }))
        .await?;
        let ctx = building
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?;
        if let Some(spec) = &args.catalog {
            let io = FileIO::new(Arc::clone(&runtime), relocation.clone()).with_storage(storage);
            let catalog = super::open_catalog(spec, &args.properties, io).await?;
            attach_as_default(&ctx, catalog).await?;
        }
        for (table, provider) in args.tables.iter().zip(opened) {
            ctx.register_table(table.name.as_str(), Arc::new(provider))?;
        }
        let mut session = Self::new(ctx, args.format).with_max_rows(args.max_rows);
        session.json_big_int = args.json_big_int;
        if args.read_only {
            session = session.read_only();
        }
        if !args.relocate.is_empty() {
            session.relocating = Some(Arc::default());
        }
        Ok(session)
    }

    /// Whether errors are reported as JSON objects (`--format json`).
    pub fn errors_as_json(&self) -> bool {
        self.format == OutputFormat::Json
    }

    /// The DataFusion context.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs one statement (parsed by [`crate::sql::sql`], so version clauses work) and prints
    /// its result to `out`: in `--format table` at most `--max-rows` rows, as they arrive
    /// (the rest are counted, not kept). Says how many rows there were and were shown.
    pub async fn run_statement<W: Write>(&self, sql: &str, out: &mut W) -> CliResult<Printed> {
        if self.read_only || self.relocating.is_some() {
            let writes = crate::sql::writes(&self.ctx, sql)?;
            if let Some(why) = writes {
                if self.read_only {
                    return Err(CliError::Usage(format!(
                        "refused by --read-only: {why} (run without --read-only to write)"
                    )));
                }
                let told = self
                    .relocating
                    .as_ref()
                    .map(|t| t.swap(true, Ordering::Relaxed));
                if told == Some(false) {
                    eprintln!(
                        "note: --relocate applies to writes too: files go under each rule's NEW \
                         and commits go to the table found there (--read-only refuses writes)"
                    );
                }
            }
        }
        let df = crate::sql::sql(&self.ctx, sql).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        if schema.fields().is_empty() {
            df.collect().await?;
            return Ok(Printed::default());
        }
        let printed = if self.format == OutputFormat::Table {
            let limit = match self.max_rows {
                0 => usize::MAX,
                n => n,
            };
            let mut stream = df.execute_stream().await?;
            let (mut kept, mut printed) = (Vec::new(), Printed::default());
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                let room = limit.saturating_sub(printed.shown);
                if room > 0 {
                    let take = room.min(batch.num_rows());
                    printed.shown += take;
                    kept.push(batch.slice(0, take));
                }
                printed.rows = Some(printed.rows.unwrap_or(0) + batch.num_rows());
            }
            printed.rows.get_or_insert(0);
            print_table(out, &schema, &kept)?;
            printed
        } else {
            let batches = df.collect().await?;
            let rows = batches.iter().map(|b| b.num_rows()).sum();
            print_batches_with(out, self.format, self.json_big_int, &schema, &batches)?;
            Printed {
                rows: Some(rows),
                shown: rows,
            }
        };
        out.flush()?;
        Ok(printed)
    }

    /// The footer of a result in `--format table`: `3 rows`, `1000 rows (40 shown)`, with the
    /// time taken when `elapsed` is given; `None` in other formats, and for statements without
    /// a result unless timed.
    pub fn footer(&self, printed: Printed, elapsed: Option<Duration>) -> Option<String> {
        if self.format != OutputFormat::Table {
            return None;
        }
        let time = elapsed.map(|e| {
            let ms = e.as_secs_f64() * 1000.0;
            if ms < 1000.0 {
                format!("{ms:.1} ms")
            } else {
                format!("{:.3} s", ms / 1000.0)
            }
        });
        let count = printed.rows.map(|rows| {
            let noun = if rows == 1 { "row" } else { "rows" };
            match printed.shown < rows {
                true => format!("{rows} {noun} ({} shown)", printed.shown),
                false => format!("{rows} {noun}"),
            }
        });
        match (count, time) {
            (Some(count), Some(time)) => Some(format!("{count} in {time}")),
            (Some(count), None) => Some(count),
            (None, Some(time)) => Some(format!("done in {time}")),
            (None, None) => None,
        }
    }

    /// Runs the `;`-separated statements of `sql` in order (the last one needs no `;`; a line
    /// `\q`, `quit` or `exit` between statements ends the script, as in the shell),
    /// printing each result to `out` and each error to `err` as it happens, and going on after
    /// an error unless `on_error` says [`OnError::Stop`]. The counts of what ran and failed
    /// are added to `tally`.
    ///
    /// Errors: the first statement's error with [`OnError::Stop`] (not written to `err`);
    /// an output error.
    pub async fn run_script<W: Write, E: Write>(
        &self,
        sql: &str,
        out: &mut W,
        err: &mut E,
        on_error: OnError,
        tally: &mut Tally,
    ) -> CliResult<()> {
        let mut buffer = InputBuffer::default();
        let mut statements = Vec::new();
        for line in sql.lines() {
            let inputs = buffer.feed(line);
            let exit = inputs.contains(&Input::Exit);
            statements.extend(inputs);
            if exit {
                break;
            }
        }
        statements.extend(buffer.take_rest().map(Input::statement));
        let mut timing = false;
        for input in statements {
            let statement = match input {
                Input::Statement(statement) => statement,
                Input::Command(command) => match command.sql() {
                    Some(sql) => sql,
                    None => {
                        match command {
                            Command::Timing(on) => timing = on.unwrap_or(!timing),
                            Command::Help => write!(out, "{HELP}")?,
                            Command::Unknown(text) => {
                                tally.total += 1;
                                tally.failed += 1;
                                let e = CliError::Usage(Command::unknown_message(&text));
                                if on_error == OnError::Stop {
                                    return Err(e);
                                }
                                out.flush()?;
                                report_error_as(err, &e, self.errors_as_json(), Some(tally.total));
                            }
                            _ => {}
                        }
                        continue;
                    }
                },
                Input::Exit => break,
            };
            tally.total += 1;
            let started = Instant::now();
            match self.run_statement(&statement, out).await {
                Ok(printed) => {
                    // A script shows the row count only when rows were left out (or `\timing`).
                    let elapsed = timing.then(|| started.elapsed());
                    if (printed.shown < printed.rows.unwrap_or(0) || timing)
                        && let Some(footer) = self.footer(printed, elapsed)
                    {
                        writeln!(out, "{footer}")?;
                    }
                }
                Err(CliError::Output(e)) => return Err(CliError::Output(e)),
                Err(e) => {
                    tally.failed += 1;
                    if on_error == OnError::Stop {
                        return Err(e);
                    }
                    out.flush()?;
                    report_error_as(err, &e, self.errors_as_json(), Some(tally.total));
                }
            }
        }
        Ok(())
    }
}

/// What [`SqlSession::run_statement`] printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Printed {
    /// The result's rows; `None` for a statement without a result (DDL).
    pub rows: Option<usize>,
    /// Of those, the rows printed.
    pub shown: usize,
}

/// What a script does after a failing statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Report it and go on (the exit status still says that something failed).
    Continue,
    /// Stop there.
    Stop,
}

/// How many statements of a script ran, and how many of them failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Statements run.
    pub total: usize,
    /// Of those, the failed ones.
    pub failed: usize,
}

impl Tally {
    /// `Ok` when nothing failed, else [`CliError::ScriptFailed`].
    pub fn result(self) -> CliResult<()> {
        match self.failed {
            0 => Ok(()),
            failed => Err(CliError::ScriptFailed {
                failed,
                total: self.total,
            }),
        }
    }
}

/// The SQL texts `args` asks to run, in order (QUERY, the commands, the files), named for
/// messages; statements piped into standard input when there are none and it is not a
/// terminal; `None` for the interactive shell.
fn scripts(args: &SqlArgs) -> CliResult<Option<Vec<String>>> {
    let mut scripts: Vec<String> = args.query.iter().chain(&args.commands).cloned().collect();
    for file in &args.files {
        let text = std::fs::read_to_string(file).map_err(|source| CliError::Input {
            what: file.display().to_string(),
            source,
        })?;
        scripts.push(text);
    }
    if !scripts.is_empty() {
        return Ok(Some(scripts));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut text = String::new();
    stdin
        .lock()
        .read_to_string(&mut text)
        .map_err(|source| CliError::Input {
            what: "standard input".into(),
            source,
        })?;
    Ok(Some(vec![text]))
}

/// `icefloe sql`: runs the statements of `args` (or piped in), or the interactive shell.
pub async fn run_sql(args: SqlArgs) -> CliResult<()> {
    let session = SqlSession::from_args(&args).await?;
    let Some(scripts) = scripts(&args)? else {
        return shell::run_shell(&session).await;
    };
    let on_error = match args.on_error_stop {
        true => OnError::Stop,
        false => OnError::Continue,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut err = std::io::stderr();
    let mut tally = Tally::default();
    for script in &scripts {
        session
            .run_script(script, &mut out, &mut err, on_error, &mut tally)
            .await?;
    }
    out.flush()?;
    tally.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(format: OutputFormat, sql: &str) -> CliResult<String> {
        let session = SqlSession::new(SessionContext::new(), format);
        let mut out = Vec::new();
        let mut tally = Tally::default();
        session
            .run_script(sql, &mut out, &mut Vec::new(), OnError::Stop, &mut tally)
            .await?;
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
            properties: Vec::new(),
            format: OutputFormat::Csv,
            query: None,
            commands: Vec::new(),
            files: Vec::new(),
            on_error_stop: false,
            read_only: false,
            json_big_int: JsonBigInt::Number,
            max_rows: DEFAULT_MAX_ROWS,
        };
        let session = SqlSession::from_args(&args).await.unwrap();
        let sql = "SELECT count(*) AS n FROM refs VERSION AS OF 'v1'; \
                   SELECT count(*) AS n FROM refs FOR SYSTEM_TIME AS OF 1796049769870; \
                   SELECT count(*) AS n FROM refs.branch_dev; \
                   SELECT count(*) AS n FROM \"refs@audit\"";
        let mut out = Vec::new();
        let mut tally = Tally::default();
        session
            .run_script(sql, &mut out, &mut Vec::new(), OnError::Stop, &mut tally)
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "n\n10\nn\n20\nn\n20\nn\n10\n"
        );
    }

    #[tokio::test]
    async fn stops_at_the_first_error_when_asked() {
        let session = SqlSession::new(SessionContext::new(), OutputFormat::Csv);
        let (mut out, mut err, mut tally) = (Vec::new(), Vec::new(), Tally::default());
        let result = session
            .run_script(
                "SELECT 1 AS a; SELECT * FROM nope; SELECT 3",
                &mut out,
                &mut err,
                OnError::Stop,
                &mut tally,
            )
            .await;
        assert!(matches!(result, Err(CliError::DataFusion(_))));
        assert_eq!(String::from_utf8(out).unwrap(), "a\n1\n");
        assert!(err.is_empty(), "the caller reports the error");
        assert_eq!(
            tally,
            Tally {
                total: 2,
                failed: 1
            }
        );
    }

    #[tokio::test]
    async fn goes_on_after_an_error_and_runs_a_last_statement_without_semicolon() {
        let session = SqlSession::new(SessionContext::new(), OutputFormat::Csv);
        let (mut out, mut err, mut tally) = (Vec::new(), Vec::new(), Tally::default());
        session
            .run_script(
                "SELECT 1 AS a; SELECT * FROM nope;\nSELECT 2 AS b",
                &mut out,
                &mut err,
                OnError::Continue,
                &mut tally,
            )
            .await
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a\n1\nb\n2\n");
        let err = String::from_utf8(err).unwrap();
        assert!(err.starts_with("Error: ") && err.contains("nope"), "{err}");
        assert_eq!(
            tally,
            Tally {
                total: 3,
                failed: 1
            }
        );
        assert!(matches!(
            tally.result(),
            Err(CliError::ScriptFailed {
                failed: 1,
                total: 3
            })
        ));
    }
}

//! Runs every `sql-tests/*.slt` file (sorted by name) through sqllogictest against DataFusion
//! with icefloe's SQL registered: one fresh `SessionContext` per file, `information_schema`
//! enabled, working directory = the package root (so `LOCATION 'tests/fixtures/...'` works).
//! Statements go through `icefloe::sql::sql`, the embedding call that parses the version
//! clauses (`FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF`, `VERSION AS OF`).
//!
//! A file may ask for more with directive comments (lines starting with `# icefloe: `):
//!
//! - `# icefloe: catalog <warehouse dir> <written-at prefix>`: registers the SQLite catalog
//!   `<warehouse dir>/catalog.db` as the session's default catalog, reading paths under
//!   `<written-at prefix>` from `<warehouse dir>` (so `db.orders`, `db.refs.branch_dev` work).
//! - `# icefloe: scratch-catalog`: a new, empty SQLite catalog (`catalog.db`, catalog name
//!   `default`) in a temporary warehouse directory, registered as the session's default catalog,
//!   for files that create tables: `CREATE SCHEMA db`, then `CREATE TABLE db.t ...`, CTAS and
//!   `DROP TABLE` act on it (tables go to `<warehouse>/db/t`). The directory is deleted when the
//!   file's run ends.
//!
//! For `CREATE EXTERNAL TABLE ... LOCATION` of new tables use sqllogictest's own temporary
//! directory: after `control substitution on`, `$__TEST_DIR__` in a statement is a fresh
//! directory for the file (`LOCATION '$__TEST_DIR__/t'`).
//!
//! `cargo test --test sqllogictests -- <filter>` runs only the files whose name contains
//! `<filter>`. Flags meant for libtest (`--nocapture`, ...) are ignored.
//!
//! Results are rendered with Arrow's display formatting: `NULL` for nulls, `(empty)` for the
//! empty string. Column types in `query` headers are checked: `I` for integers, `R` for floats
//! and decimals, `T` for everything else.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use async_trait::async_trait;
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};

/// One `.slt` file's database: a DataFusion session with icefloe registered.
struct IcefloeDb {
    ctx: SessionContext,
    /// The warehouse of `scratch-catalog`, deleted on drop.
    _scratch: Option<tempfile::TempDir>,
}

/// What a file's `# icefloe: ` directives ask for.
#[derive(Clone, Debug, Default, PartialEq)]
struct Directives {
    /// `(warehouse dir, written-at prefix)`: a SQLite catalog as the default catalog.
    catalog: Option<(PathBuf, String)>,
    /// `scratch-catalog`: a new empty catalog in a temporary warehouse.
    scratch_catalog: bool,
}

impl Directives {
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut directives = Self::default();
        for line in text.lines() {
            let Some(directive) = line.trim().strip_prefix("# icefloe: ") else {
                continue;
            };
            let words: Vec<&str> = directive.split_whitespace().collect();
            match words.as_slice() {
                ["catalog", dir, prefix] => {
                    directives.catalog = Some((PathBuf::from(dir), prefix.to_string()));
                }
                ["scratch-catalog"] => directives.scratch_catalog = true,
                _ => return Err(format!("unknown directive: {line}")),
            }
        }
        Ok(directives)
    }
}

impl IcefloeDb {
    async fn new(directives: Directives) -> Result<Self> {
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        if let Some((dir, prefix)) = &directives.catalog {
            let dir = dir.canonicalize()?;
            let relocation = icefloe::Relocation::new().with_rule(prefix, dir.to_string_lossy());
            icefloe::session::register_catalog_as_default(&ctx, dir.join("catalog.db"), relocation)
                .await?;
        }
        let mut scratch = None;
        if directives.scratch_catalog {
            let dir = tempfile::tempdir()?;
            let db = dir.path().join("catalog.db");
            icefloe::catalog::SqliteCatalog::create(&db, "default", icefloe::FileIO::default())?;
            icefloe::session::register_catalog_as_default(&ctx, &db, Default::default()).await?;
            scratch = Some(dir);
        }
        icefloe::sql::register(&ctx);
        Ok(Self {
            ctx,
            _scratch: scratch,
        })
    }

    /// Plans `sql` with `icefloe::sql::sql` (the AS OF clauses parse, refs resolve).
    async fn plan(&self, sql: &str) -> Result<DataFrame> {
        icefloe::sql::sql(&self.ctx, sql).await
    }
}

#[async_trait]
impl AsyncDB for IcefloeDb {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>> {
        let frame = self.plan(sql).await?;
        let schema = frame.schema().inner().clone();
        let batches = frame.collect().await?;
        if schema.fields().is_empty() {
            // DDL and other statements answer with an empty schema.
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        Ok(DBOutput::Rows {
            types,
            rows: render(&batches)?,
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "icefloe"
    }
}

fn column_type(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        t if t.is_integer() => DefaultColumnType::Integer,
        t if t.is_floating() => DefaultColumnType::FloatingPoint,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => DefaultColumnType::FloatingPoint,
        _ => DefaultColumnType::Text,
    }
}

/// Every value as text: `NULL`, `(empty)` for "", else Arrow's display form.
fn render(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            let values = formatters
                .iter()
                .zip(batch.columns())
                .map(|(formatter, column)| {
                    let text = formatter.value(row).to_string();
                    if text.is_empty() && column.is_valid(row) {
                        "(empty)".to_string()
                    } else {
                        text
                    }
                })
                .collect();
            rows.push(values);
        }
    }
    Ok(rows)
}

/// The `.slt` files to run, sorted; only those whose name contains `filter` if given.
fn slt_files(dir: &Path, filter: Option<&str>) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "slt"))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            filter.is_none_or(|f| name.is_some_and(|n| n.contains(f)))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The first argument that is not a flag: cargo passes `-- <filter>` through.
fn filter_argument() -> Option<String> {
    std::env::args().skip(1).find(|arg| !arg.starts_with('-'))
}

async fn run_file(path: &Path) -> std::result::Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let directives = Directives::parse(&text)?;
    let mut runner = Runner::new(move || IcefloeDb::new(directives.clone()));
    runner.with_column_validator(sqllogictest::strict_column_validator);
    runner
        .run_file_async(path)
        .await
        .map_err(|e| e.display(false).to_string())
}

async fn run_all() -> std::io::Result<(usize, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::set_current_dir(root)?;
    let files = slt_files(&root.join("sql-tests"), filter_argument().as_deref())?;
    let (mut passed, mut failed) = (0, 0);
    for path in files {
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        match run_file(&path).await {
            Ok(()) => {
                passed += 1;
                println!("ok      {name}");
            }
            Err(e) => {
                failed += 1;
                println!("FAILED  {name}\n{e}\n");
            }
        }
    }
    Ok((passed, failed))
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_all()) {
        Ok((passed, failed)) => {
            println!("sqllogictests: {passed} passed, {failed} failed");
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("sqllogictests: {e}");
            ExitCode::FAILURE
        }
    }
}

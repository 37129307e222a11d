//! Library side of the `icefloe` command line: argument types ([`args`]), output printers
//! ([`print`]), statement splitting ([`split`]), the SQL session and interactive shell, and the
//! `tree` view ([`tree`]), and the `demo` walk-through.
//!
//! The binary only parses [`Cli`] and calls [`run`]; everything here is testable without it.

pub mod args;
mod compact;
mod complete;
mod demo;
pub mod json;
mod maintain;
pub mod print;
mod session;
mod shell;
pub mod split;
pub mod tree;
mod tree_load;

use std::io::Write;

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;

pub use args::{Cli, Command, DemoArgs, OutputFormat, SqlArgs, TreeArgs};
pub use demo::run_demo;
pub use session::{OnError, Printed, SqlSession, Tally, run_sql};
pub use tree_load::{load_tree, run_tree};

/// An error of the command line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// Opening or reading a table or catalog failed.
    #[error(transparent)]
    Icefloe(#[from] crate::Error),
    /// Planning or running a query failed.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// Formatting a result failed.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// Writing to the output failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// Encoding a JSON row failed.
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The line editor of the interactive shell failed.
    #[error("line editor: {0}")]
    Shell(#[from] rustyline::error::ReadlineError),
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// A command line argument is unusable.
    #[error("{0}")]
    Usage(String),
    /// `icefloe check` found problems (listed on stdout).
    #[error("the check found {0} problem(s)")]
    CheckFailed(usize),
    /// `icefloe tree` drew files it could not read (as `error:` lines).
    #[error("{0} file(s) of the tree could not be read (shown as error: lines above)")]
    Unreadable(usize),
    /// An input file could not be read.
    #[error("reading {what}: {source}")]
    Input {
        /// The file (or `standard input`).
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// Statements of a script failed (each error was reported when it happened).
    #[error("{failed} of {total} statement(s) failed")]
    ScriptFailed {
        /// How many failed.
        failed: usize,
        /// How many ran.
        total: usize,
    },
}

/// A `Result` with [`CliError`].
pub type CliResult<T> = std::result::Result<T, CliError>;

/// Runs a parsed command line, printing results to stdout.
pub async fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Sql(args) => run_sql(args).await,
        Command::Tree(args) => run_tree(&args, &mut std::io::stdout().lock()).await,
        Command::Demo(args) => run_demo(&args, &mut std::io::stdout().lock()).await,
        Command::Branch(args) => {
            maintain::run_ref(
                maintain::RefKind::Branch,
                &args,
                &mut std::io::stdout().lock(),
            )
            .await
        }
        Command::Tag(args) => {
            maintain::run_ref(maintain::RefKind::Tag, &args, &mut std::io::stdout().lock()).await
        }
        Command::Rollback(args) => {
            maintain::run_rollback(&args, &mut std::io::stdout().lock()).await
        }
        Command::Expire(args) => maintain::run_expire(&args, &mut std::io::stdout().lock()).await,
        Command::RemoveOrphans(args) => {
            maintain::run_remove_orphans(&args, &mut std::io::stdout().lock()).await
        }
        Command::RewriteManifests(args) => {
            maintain::run_rewrite_manifests(&args, &mut std::io::stdout().lock()).await
        }
        Command::RewritePositionDeletes(args) => {
            maintain::run_rewrite_position_deletes(&args, &mut std::io::stdout().lock()).await
        }
        Command::RewriteDataFiles(args) => {
            compact::run_rewrite_data_files(&args, &mut std::io::stdout().lock()).await
        }
        Command::ComputeStats(args) => {
            maintain::run_compute_stats(&args, &mut std::io::stdout().lock()).await
        }
        Command::ComputePartitionStats(args) => {
            maintain::run_compute_partition_stats(&args, &mut std::io::stdout().lock()).await
        }
        Command::Check(args) => maintain::run_check(&args, &mut std::io::stdout().lock()).await,
        Command::Catalog(command) => run_catalog(&command, &mut std::io::stdout().lock()),
    }
}

/// The catalog of `--catalog SPEC` (see [`crate::catalog::connect`]), with the `--property`
/// pairs as catalog properties. A path that looks like a database file and does not exist is
/// a usage error that says how to make one.
pub(crate) async fn open_catalog(
    spec: &str,
    properties: &[(String, String)],
    io: crate::FileIO,
) -> CliResult<std::sync::Arc<dyn crate::catalog::Catalog>> {
    let path = std::path::Path::new(spec);
    let looks_like_file = spec.ends_with(".db") || spec.contains(std::path::MAIN_SEPARATOR);
    let is_uri = spec.contains("://");
    if looks_like_file && !is_uri && !path.exists() {
        return Err(CliError::Usage(format!(
            "catalog database {spec} does not exist: create one with `icefloe catalog create \
             {spec}` (then CREATE SCHEMA ns and CREATE TABLE ns.t ...), or name a REST catalog \
             (rest+https://host/path) or a catalog of .pyiceberg.yaml"
        )));
    }
    let properties = properties.iter().cloned().collect();
    Ok(crate::catalog::connect(spec, properties, io).await?)
}

/// The table `namespace.table` of a `--catalog`.
pub(crate) fn catalog_table_name(name: &str) -> CliResult<crate::catalog::TableIdent> {
    match name.rsplit_once('.') {
        Some((namespace, table)) if !namespace.is_empty() && !table.is_empty() => {
            Ok(crate::catalog::TableIdent::parse_dotted(name)?)
        }
        _ => Err(CliError::Usage(format!(
            "with --catalog the table is `namespace.table`, got '{name}'"
        ))),
    }
}

/// `icefloe catalog create PATH [--name NAME]`: a new catalog database, and how to open it
/// from icefloe and from PyIceberg.
pub fn run_catalog<W: Write>(command: &args::CatalogCommand, out: &mut W) -> CliResult<()> {
    let args::CatalogCommand::Create { path, name } = command;
    let catalog = crate::catalog::SqliteCatalog::create(path, name, crate::FileIO::default())?;
    let db = path.canonicalize().unwrap_or_else(|_| path.clone());
    writeln!(
        out,
        "created catalog '{name}' in {} (SQLite, PyIceberg SqlCatalog layout); tables go under {}",
        db.display(),
        catalog.warehouse()
    )?;
    writeln!(out, "icefloe: icefloe sql --catalog {}", path.display())?;
    writeln!(out, "{}", pyiceberg_line(name, &db, &catalog.warehouse()))?;
    Ok(())
}

/// The PyIceberg code that opens the SQLite catalog `name` in `db` with `warehouse`.
pub(crate) fn pyiceberg_line(name: &str, db: &std::path::Path, warehouse: &str) -> String {
    format!(
        "PyIceberg: from pyiceberg.catalog.sql import SqlCatalog; \
         catalog = SqlCatalog(\"{name}\", uri=\"sqlite:///{}\", warehouse=\"file://{warehouse}\")",
        db.display()
    )
}

/// Writes an error and its chain of causes (`Error: ...: cause: ...`) to `err`, one line.
pub fn report_error<W: Write>(err: &mut W, error: &(dyn std::error::Error + 'static)) {
    if let Some(message) = error_message(error) {
        // Nothing sensible is left to do when stderr itself fails.
        let _ = writeln!(err, "Error: {message}");
    }
}

/// [`report_error`] as one JSON object (`{"error": "..."}`) when `json` (`--format json`),
/// with the 1-based number of the failing statement of a script when there is one.
pub fn report_error_as<W: Write>(
    err: &mut W,
    error: &(dyn std::error::Error + 'static),
    json: bool,
    statement: Option<usize>,
) {
    if !json {
        return report_error(err, error);
    }
    if let Some(message) = error_message(error) {
        let mut object = serde_json::Map::new();
        object.insert("error".into(), message.into());
        if let Some(n) = statement {
            object.insert("statement".into(), n.into());
        }
        let _ = writeln!(err, "{}", serde_json::Value::Object(object));
    }
}

/// The one-line message of an error; `None` when it was reported already.
fn error_message(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let cli = error.downcast_ref::<CliError>();
    Some(match cli {
        // The one failing statement of a script was reported already.
        Some(CliError::ScriptFailed { total: 1, .. }) => return None,
        // sqlparser's message once, not DataFusion's debug form of it and then it again.
        Some(CliError::DataFusion(e)) => match e.find_root() {
            DataFusionError::SQL(parser, _) => parser.to_string(),
            _ => error_chain(error),
        },
        _ => error_chain(error),
    })
    .map(|message| without_rust_advice(&message))
}

/// A library message as the command line says it: the Rust API of a fix left out.
fn without_rust_advice(message: &str) -> String {
    message.replace(
        " (CLI), the 'relocate' option (CREATE EXTERNAL TABLE) or \
         TableOptions::with_relocation (Rust)",
        " (or the 'relocate' option of CREATE EXTERNAL TABLE)",
    )
}

/// An error and its causes on one line, skipping causes its message already includes; the
/// password of a URL's user info shows as `***`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    crate::error::chain(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_error_chain() {
        let inner = std::io::Error::other("disk on fire");
        let err = crate::Error::Io {
            path: "/t/x.avro".into(),
            source: Box::new(inner),
        };
        let mut out = Vec::new();
        report_error(&mut out, &CliError::from(err));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Error: I/O error on /t/x.avro: disk on fire\n"
        );
    }
}

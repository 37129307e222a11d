//! Command line arguments (clap derive).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::{Error, Result};
use crate::io::Relocation;

/// `icefloe`: SQL over Apache Iceberg tables with Apache DataFusion.
#[derive(Debug, Parser)]
#[command(name = "icefloe", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether errors are printed as JSON objects: `icefloe sql --format json`.
    pub fn errors_as_json(&self) -> bool {
        matches!(&self.command, Command::Sql(args) if args.format == OutputFormat::Json)
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run SQL over Iceberg tables: the given query, or an interactive shell without one.
    Sql(SqlArgs),
    /// Draw a table's metadata tree: snapshots, manifest lists, manifests and data files.
    Tree(TreeArgs),
    /// Make a demo warehouse with a SQLite catalog and walk through it: create a partitioned
    /// table, two commits, the metadata tree and tables, time travel, a pruned query.
    Demo(DemoArgs),
    /// Create a branch (at the current snapshot or --snapshot), or drop it with --drop.
    Branch(RefArgs),
    /// Create a tag (at the current snapshot or --snapshot), or drop it with --drop.
    Tag(RefArgs),
    /// Make an ancestor of the current snapshot current again.
    Rollback(RollbackArgs),
    /// Expire snapshots by the table's retention policy and delete the files only they reach.
    Expire(ExpireArgs),
    /// Delete the files under the table location that no metadata references (the leftovers
    /// of failed writes), older than a threshold (default: 3 days).
    RemoveOrphans(RemoveOrphansArgs),
    /// Merge the current snapshot's small data manifests into manifests of a target size
    /// (a `replace` snapshot; the rows do not change).
    RewriteManifests(RewriteManifestsArgs),
    /// Compact data files: rewrite small, oversized or heavily deleted files into files of the
    /// target size (a `replace` snapshot; the rows do not change), as Iceberg's
    /// `rewrite_data_files` does. Ctrl-C cancels without committing more.
    RewriteDataFiles(RewriteDataFilesArgs),
    /// Merge each partition's position delete files into one (on v3 tables: turn position
    /// deletes into one deletion vector per data file), as Iceberg's
    /// `rewrite_position_delete_files` does (a `replace` snapshot; the rows do not change).
    RewritePositionDeletes(RewritePositionDeletesArgs),
    /// Compute theta sketches of columns of the current snapshot into a Puffin statistics file
    /// and commit it (`set-statistics`): the distinct counts DataFusion plans joins with.
    ComputeStats(ComputeStatsArgs),
    /// Count the files, records and deletes of every partition of the current snapshot into
    /// a partition statistics file (Parquet) and commit it (`set-partition-statistics`):
    /// `"t$partitions"` then answers from it without reading manifests.
    ComputePartitionStats(ComputePartitionStatsArgs),
    /// Verify that every file the table's metadata reaches exists with its recorded size and
    /// that the recorded counts agree (reads trust the metadata; this looks). Exits non-zero
    /// when it finds a problem.
    Check(CheckArgs),
    /// Manage SQLite Iceberg catalogs (PyIceberg SqlCatalog / Java JdbcCatalog layout).
    #[command(subcommand)]
    Catalog(CatalogCommand),
}

/// Arguments of `icefloe check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,
}

/// Arguments of `icefloe rewrite-manifests`.
#[derive(Debug, Clone, clap::Args)]
pub struct RewriteManifestsArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// The size of the new manifests (default: commit.manifest.target-size-bytes, else 8 MiB).
    #[arg(long, value_name = "BYTES")]
    pub target_size: Option<u64>,
}

/// Arguments of `icefloe rewrite-position-deletes`.
#[derive(Debug, Clone, clap::Args)]
pub struct RewritePositionDeletesArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// An option by Iceberg's name (`min-input-files=2`, `rewrite-all=true`); may be repeated.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_property_arg)]
    pub options: Vec<(String, String)>,
}

/// Arguments of `icefloe rewrite-data-files`.
#[derive(Debug, Clone, clap::Args)]
pub struct RewriteDataFilesArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// How rows are laid out in the new files: as read, or sorted by the table's sort order
    /// (or --sort-order).
    #[arg(long, value_enum)]
    pub strategy: Option<CompactionStrategy>,

    /// Sort by these items instead of the table's order, as WRITE ORDERED BY takes them
    /// (`'id DESC NULLS LAST, bucket(4, x)'`); implies --strategy sort.
    #[arg(long, value_name = "ORDER")]
    pub sort_order: Option<String>,

    /// Only files that may hold rows matching this SQL condition on the table's columns.
    #[arg(long = "where", value_name = "CONDITION")]
    pub condition: Option<String>,

    /// An option by Iceberg's name (`min-input-files=2`, `target-file-size-bytes=N`,
    /// `partial-progress.enabled=true`, ...); may be repeated.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_property_arg)]
    pub options: Vec<(String, String)>,
}

/// The strategies of `icefloe rewrite-data-files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompactionStrategy {
    /// The rows as they are read (the default).
    Binpack,
    /// The rows of each group in one order.
    Sort,
}

/// Arguments of `icefloe compute-stats`.
#[derive(Debug, Clone, clap::Args)]
pub struct ComputeStatsArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// Only these top-level columns (comma-separated; default: every primitive column).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub columns: Vec<String>,
}

/// Arguments of `icefloe compute-partition-stats`.
#[derive(Debug, Clone, clap::Args)]
pub struct ComputePartitionStatsArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// Of this snapshot instead of the current one.
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<i64>,
}

/// Arguments of `icefloe remove-orphans`.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoveOrphansArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// Only files last modified before TS (epoch ms or ISO-8601) can be orphans (default:
    /// 3 days ago).
    #[arg(long, value_name = "TS")]
    pub older_than: Option<String>,

    /// List the orphans; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Which table a maintenance command acts on, and how to find it.
#[derive(Debug, Clone, clap::Args)]
pub struct TableTarget {
    /// The table: `namespace.table` with --catalog, a NAME of --table, or a table directory.
    pub table: String,

    /// The Iceberg catalog holding TABLE (`namespace.table`): a SQLite catalog database, a
    /// REST catalog (`rest+https://host/path`), or a catalog name of `.pyiceberg.yaml`.
    #[arg(long, value_name = "CATALOG")]
    pub catalog: Option<String>,

    /// Names a table directory: TABLE may then be NAME.
    #[arg(long = "table", value_name = "NAME=LOCATION", value_parser = parse_table_arg)]
    pub tables: Vec<TableArg>,

    /// Reads paths under OLD from NEW instead (for moved tables); may be repeated. The command
    /// also writes there: it commits to the table found under NEW and deletes only under its
    /// location (a moved table's recorded location refuses writes without the rule).
    #[arg(long = "relocate", value_name = "OLD=NEW", value_parser = parse_relocate_arg)]
    pub relocate: Vec<RelocateArg>,

    /// A storage or catalog property, as PyIceberg and Iceberg Java name them
    /// (`s3.endpoint=URL`, `s3.region=R`, `s3.path-style-access=true`, `gcs.service.host=URL`,
    /// a REST catalog's `token`, `credential`, `warehouse`, ...); may be repeated. Secrets are better left to the environment (`AWS_ACCESS_KEY_ID`, ...), which
    /// is read too.
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property_arg)]
    pub properties: Vec<(String, String)>,

    /// Prints what was done as text or as one JSON object.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

/// How maintenance commands report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    /// Sentences.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

/// Arguments of `icefloe branch` and `icefloe tag`.
#[derive(Debug, Clone, clap::Args)]
pub struct RefArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// The ref's name.
    pub name: String,

    /// The snapshot it points at (default: the current one).
    #[arg(long, value_name = "ID", conflicts_with = "drop")]
    pub snapshot: Option<i64>,

    /// Drops the ref instead (never `main`).
    #[arg(long)]
    pub drop: bool,
}

/// Arguments of `icefloe rollback`.
#[derive(Debug, Clone, clap::Args)]
pub struct RollbackArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// The ancestor to make current.
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "timestamp",
        conflicts_with = "timestamp"
    )]
    pub snapshot: Option<i64>,

    /// The newest ancestor committed at or before TS (epoch ms or ISO-8601) becomes current.
    #[arg(long, value_name = "TS")]
    pub timestamp: Option<String>,
}

/// Arguments of `icefloe expire`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExpireArgs {
    /// The table.
    #[command(flatten)]
    pub target: TableTarget,

    /// Snapshots older than TS (epoch ms or ISO-8601) may expire: the max-snapshot-age of
    /// every branch without its own setting.
    #[arg(long, value_name = "TS")]
    pub older_than: Option<String>,

    /// Keep at least N snapshots of every branch without its own setting.
    #[arg(long, value_name = "N")]
    pub retain_last: Option<i32>,

    /// Expire this snapshot too; may be repeated.
    #[arg(long = "snapshot", value_name = "ID")]
    pub snapshots: Vec<i64>,

    /// List what would expire and be deleted; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `icefloe demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Where to make the warehouse: a new or empty directory (default: a new directory under
    /// the system's temporary directory, kept afterwards).
    pub dir: Option<PathBuf>,
}

/// `icefloe catalog ...`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum CatalogCommand {
    /// Create a new, empty catalog database (PyIceberg and Java open it). Its tables go under
    /// the database's directory (`<dir>/<namespace>/<table>`), or under a namespace's
    /// `location` property (`CREATE SCHEMA ns WITH (location = '...')`).
    Create {
        /// The database file to create (never overwritten).
        path: PathBuf,
        /// The catalog's name in the database (the `catalog_name` column).
        #[arg(long, default_value = "default")]
        name: String,
    },
}

/// Arguments of `icefloe sql`.
#[derive(Debug, Clone, clap::Args)]
pub struct SqlArgs {
    /// The Iceberg catalog to use as the default catalog (its tables are `namespace.table`): a
    /// SQLite catalog database (JDBC / PyIceberg SqlCatalog layout), a REST catalog
    /// (`rest+https://host/path`; `--property token=...` or `credential=id:secret`), or a
    /// catalog name of PyIceberg's `.pyiceberg.yaml`.
    #[arg(long, value_name = "CATALOG")]
    pub catalog: Option<String>,

    /// Registers a table: LOCATION is a metadata file or a table directory.
    #[arg(long = "table", value_name = "NAME=LOCATION", value_parser = parse_table_arg)]
    pub tables: Vec<TableArg>,

    /// Reads paths under OLD from NEW instead (for moved tables); may be repeated. Writes
    /// follow the rule too: an INSERT or DDL writes its files under NEW and commits to the
    /// table found there (its pointer moves, the table under OLD is never touched); add
    /// --read-only to refuse every write.
    #[arg(long = "relocate", value_name = "OLD=NEW", value_parser = parse_relocate_arg)]
    pub relocate: Vec<RelocateArg>,

    /// A storage or catalog property, as PyIceberg and Iceberg Java name them
    /// (`s3.endpoint=URL`, `s3.region=R`, `s3.path-style-access=true`, `gcs.service.host=URL`,
    /// a REST catalog's `token`, `credential`, `warehouse`, ...); may be repeated. Secrets are better left to the environment (`AWS_ACCESS_KEY_ID`, ...), which
    /// is read too.
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property_arg)]
    pub properties: Vec<(String, String)>,

    /// Refuses every statement that would write (INSERT, CREATE/DROP, COPY, maintenance
    /// procedures), before it runs; reads, SHOW, SET, EXPLAIN and views work.
    #[arg(long)]
    pub read_only: bool,

    /// How results are printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,

    /// How --format json prints integers beyond 2^53 (snapshot ids): as numbers (the
    /// default; exact in the text, but JavaScript and jq round them) or as strings.
    #[arg(long, value_enum, default_value_t = JsonBigInt::Number)]
    pub json_big_int: JsonBigInt,

    /// Rows a --format table result shows (a footer gives the full count: "1000 rows (40
    /// shown)"); 0 shows every row. CSV and JSON always print every row.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ROWS)]
    pub max_rows: usize,

    /// SQL to run (statements separated by `;`, the last one's `;` optional). Without it,
    /// `-c` or `-f`, statements piped in are run; from a terminal an interactive shell starts.
    pub query: Option<String>,

    /// SQL to run, like QUERY; may be repeated (run in order, after QUERY).
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub commands: Vec<String>,

    /// A file of SQL statements to run; may be repeated (run in order, after the commands).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Stops at the first failing statement (psql's `ON_ERROR_STOP`). Without it a script
    /// goes on after an error, reports each one, and exits non-zero when any statement failed.
    #[arg(long)]
    pub on_error_stop: bool,
}

/// Rows a table result shows unless `--max-rows` says otherwise (as datafusion-cli).
pub const DEFAULT_MAX_ROWS: usize = 40;

/// Arguments of `icefloe tree`.
#[derive(Debug, Clone, clap::Args)]
pub struct TreeArgs {
    /// The table: a metadata file or table directory, or `namespace.table` with `--catalog`.
    pub location: String,

    /// Loads LOCATION (`namespace.table`) from this Iceberg catalog: a SQLite catalog
    /// database, a REST catalog (`rest+https://host/path`), or a name of `.pyiceberg.yaml`.
    #[arg(long, value_name = "CATALOG")]
    pub catalog: Option<String>,

    /// Reads paths under OLD from NEW instead (for moved tables); may be repeated.
    #[arg(long = "relocate", value_name = "OLD=NEW", value_parser = parse_relocate_arg)]
    pub relocate: Vec<RelocateArg>,

    /// A storage or catalog property, as PyIceberg and Iceberg Java name them
    /// (`s3.endpoint=URL`, `s3.region=R`, `s3.path-style-access=true`, `gcs.service.host=URL`,
    /// a REST catalog's `token`, `credential`, `warehouse`, ...); may be repeated. Secrets are better left to the environment (`AWS_ACCESS_KEY_ID`, ...), which
    /// is read too.
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property_arg)]
    pub properties: Vec<(String, String)>,

    /// Files shown per manifest before the rest are summarised.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_files: usize,
}

/// How JSON output prints integers beyond 2^53.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum JsonBigInt {
    /// JSON numbers (exact digits; readers that use doubles round them).
    #[default]
    Number,
    /// Decimal strings, exact in every reader.
    String,
}

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// A boxed text table.
    #[default]
    Table,
    /// CSV with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON object per row and line.
    Json,
}

/// A `--table NAME=LOCATION` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableArg {
    /// The name the table is registered under (`t` or `schema.t`).
    pub name: String,
    /// A metadata file or table directory.
    pub location: String,
}

/// A `--relocate OLD=NEW` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelocateArg {
    /// The prefix written in metadata.
    pub old: String,
    /// Where those files are now.
    pub new: String,
}

/// The relocation rules of a list of `--relocate` arguments.
pub fn relocation_of(rules: &[RelocateArg]) -> Relocation {
    rules.iter().fold(Relocation::new(), |r, rule| {
        r.with_rule(rule.old.as_str(), rule.new.as_str())
    })
}

// The value parsers return icefloe's error, which clap shows after the argument's name.

fn split_pair(s: &str, form: &str) -> Result<(String, String)> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(Error::invalid(
            format_args!("argument '{s}'"),
            format_args!("expected {form}"),
        )),
    }
}

fn parse_table_arg(s: &str) -> Result<TableArg> {
    let (name, location) = split_pair(s, "NAME=LOCATION")?;
    Ok(TableArg { name, location })
}

fn parse_property_arg(s: &str) -> Result<(String, String)> {
    split_pair(s, "KEY=VALUE")
}

fn parse_relocate_arg(s: &str) -> Result<RelocateArg> {
    // Validate with the library's own parser so both accept the same rules.
    Relocation::new().parse_rule(s)?;
    let (old, new) = split_pair(s, "OLD=NEW")?;
    Ok(RelocateArg { old, new })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("icefloe").chain(args.iter().copied()))
    }

    #[test]
    fn parses_sql_arguments() {
        let cli = parse(&[
            "sql",
            "--table",
            "t=/a/b",
            "--table",
            "u=/c",
            "--relocate",
            "s3://x=/y",
            "--format",
            "json",
            "SELECT 1",
        ])
        .unwrap();
        let Command::Sql(args) = cli.command else {
            panic!("not sql")
        };
        assert_eq!(args.tables.len(), 2);
        assert_eq!(
            args.tables[0],
            TableArg {
                name: "t".into(),
                location: "/a/b".into()
            }
        );
        assert_eq!(args.relocate[0].old, "s3://x");
        assert_eq!(args.format, OutputFormat::Json);
        assert_eq!(args.query.as_deref(), Some("SELECT 1"));
        assert_eq!(relocation_of(&args.relocate).apply("s3://x/f"), "/y/f");
    }

    #[test]
    fn rejects_malformed_pairs() {
        for (args, said) in [
            (
                ["sql", "--table", "t"],
                "argument 't': expected NAME=LOCATION",
            ),
            (
                ["sql", "--relocate", "=b"],
                "relocation rule '=b': has an empty side",
            ),
        ] {
            let err = parse(&args).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
            // The value parser's own error is kept, typed.
            let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<Error>());
            assert!(
                matches!(source, Some(Error::InvalidArgument { .. })),
                "{err:?}"
            );
            assert!(err.to_string().contains(said), "{err}");
        }
        assert!(parse(&["tree"]).is_err());
    }

    #[test]
    fn tree_defaults() {
        let cli = parse(&["tree", "/t"]).unwrap();
        let Command::Tree(args) = cli.command else {
            panic!("not tree")
        };
        assert_eq!(args.max_files, 20);
        assert!(args.catalog.is_none());
    }
}

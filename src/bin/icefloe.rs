//! `icefloe`: SQL over Apache Iceberg tables with Apache DataFusion, and a view of a table's
//! metadata tree. See `icefloe --help`.
#![deny(missing_docs, unreachable_pub)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::clone_on_ref_ptr
)]

use std::process::ExitCode;

use clap::Parser;
use icefloe::cli::{Cli, CliError, CliResult, report_error_as, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.errors_as_json();
    match main_inner(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report_error_as(&mut std::io::stderr().lock(), &e, json, None);
            ExitCode::FAILURE
        }
    }
}

fn main_inner(cli: Cli) -> CliResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let result = runtime.block_on(run(cli));
    // The process ends here: its worker threads need not be joined.
    runtime.shutdown_background();
    result
}

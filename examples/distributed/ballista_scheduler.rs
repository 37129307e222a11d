//! A Ballista scheduler with icefloe's codecs (pull scheduling); executors are
//! `examples/distributed/ballista_executor.rs`, and a client connects with
//! `SessionContext::remote_with_state("df://localhost:<port>", state)` and a state from
//! `icefloe::distributed::ballista::session_config`.
//!
//! ```sh
//! cargo run --features distributed --example ballista_scheduler
//! ```

use std::sync::Arc;

use ballista_core::serde::BallistaCodec;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionConfig;
use icefloe::distributed::{IcefloeCodec, ballista as on_ballista};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let codec = IcefloeCodec::new();
    let sessions: ballista_scheduler::SessionBuilder = Arc::new(|config: SessionConfig| {
        Ok(SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .build())
    });
    let configs = Arc::new(move || on_ballista::session_config(codec));
    let codecs = BallistaCodec::new(
        on_ballista::logical_codec(codec),
        on_ballista::physical_codec(codec),
    );
    let address = ballista_scheduler::standalone::new_standalone_scheduler_with_builder(
        sessions, configs, codecs,
    )
    .await?;
    println!("scheduler listening on {address}");
    tokio::signal::ctrl_c().await?;
    Ok(())
}

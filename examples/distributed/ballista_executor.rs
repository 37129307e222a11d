//! A Ballista executor that runs icefloe's plans, polling a scheduler that uses icefloe's
//! codecs (`examples/distributed/ballista_scheduler.rs`).
//!
//! ```sh
//! cargo run --features distributed --example ballista_executor -- localhost:50050 50061 50062
//! ```

use std::sync::Arc;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use icefloe::distributed::{IcefloeCodec, ballista as on_ballista};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scheduler = args.first().map_or("localhost:50050", String::as_str);
    let (host, port) = scheduler
        .rsplit_once(':')
        .ok_or("the scheduler as host:port")?;
    let flight_port = args.get(1).map_or(Ok(50061), |p| p.parse())?;
    let grpc_port = args.get(2).map_or(Ok(50062), |p| p.parse())?;
    let codec = IcefloeCodec::new();
    let config = ExecutorProcessConfig {
        scheduler_host: host.to_string(),
        scheduler_port: port.parse()?,
        scheduler_connect_timeout_seconds: 30,
        port: flight_port,
        grpc_port,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        override_logical_codec: Some(on_ballista::logical_codec(codec)),
        override_physical_codec: Some(on_ballista::physical_codec(codec)),
        ..Default::default()
    };
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}

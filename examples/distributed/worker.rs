//! A datafusion-distributed worker that runs icefloe's plans.
//!
//! ```sh
//! cargo run --features distributed --example distributed_worker -- 127.0.0.1:50051
//! ```
//!
//! It reaches object stores with the environment's credentials (`AWS_*`, ...); a coordinator
//! (`examples/distributed/query.rs`) sends it plans.

use icefloe::distributed::cluster;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:50051".to_string());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("worker listening on {}", listener.local_addr()?);
    cluster::serve_worker(cluster::worker(Default::default()), listener).await?;
    Ok(())
}

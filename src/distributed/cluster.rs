//! icefloe on datafusion-distributed: a coordinator session that plans Iceberg queries and
//! sends their stages to workers, and workers that run them.
//!
//! Planning stays on the coordinator (catalog, metadata, manifests, pruning, position deletes
//! read once), as in a single process; each worker gets the plan of its task with the data
//! files of its share of the scan and reads them from the object store itself. Only rows come
//! back: a scan of N files on W workers reads each file once.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use datafusion::execution::SessionStateBuilder;
//! use datafusion::prelude::SessionContext;
//! use icefloe::distributed::{IcefloeCodec, cluster};
//!
//! // On each worker machine:
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:50051").await?;
//! tokio::spawn(cluster::serve_worker(cluster::worker(Default::default()), listener));
//!
//! // On the coordinator:
//! let workers = vec!["http://worker-1:50051".parse()?, "http://worker-2:50051".parse()?];
//! let builder = SessionStateBuilder::new().with_default_features();
//! let state = cluster::coordinator(builder, workers, IcefloeCodec::new()).build();
//! let ctx = SessionContext::from(state);
//! icefloe::sql::register(&ctx);
//! ctx.sql("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION 's3://bucket/db/t'").await?;
//! ctx.sql("SELECT k, count(*) FROM t GROUP BY k").await?.show().await?;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::SessionContext;
use datafusion_distributed::{
    DistributedExt, SessionStateBuilderExt, Worker, WorkerQueryContext, WorkerResolver,
    WorkerSessionBuilder,
};
use tokio::net::TcpListener;
use url::Url;

use super::IcefloeCodec;
use super::nodes::{CommittedExec, committed_of};
use super::write::ParallelWrites;
use crate::io::StorageProperties;

/// `builder` as a coordinator: plans are distributed over `workers` (their URLs,
/// `http://host:port`), with icefloe's nodes sent by `codec` (which decides whether storage
/// credentials travel, [`IcefloeCodec::with_credentials`]); the files of an INSERT, DELETE,
/// UPDATE or MERGE are written by the workers and committed here, once ([`ParallelWrites`]).
pub fn coordinator(
    builder: SessionStateBuilder,
    workers: Vec<Url>,
    codec: IcefloeCodec,
) -> SessionStateBuilder {
    let mut builder = builder
        .with_physical_optimizer_rule(Arc::new(ParallelWrites))
        .with_distributed_worker_resolver(Workers(Arc::new(workers)))
        .with_distributed_user_codec(codec)
        .with_distributed_planner();
    let inner = builder.query_planner().take();
    builder.with_query_planner(Arc::new(CommitAnswers { inner }))
}

/// The query planner of a coordinator: datafusion-distributed's, a statement that commits
/// answered by its commit (see [`CommittedExec`]).
#[derive(Debug)]
struct CommitAnswers {
    inner: Option<Arc<dyn QueryPlanner + Send + Sync>>,
}

#[async_trait]
impl QueryPlanner for CommitAnswers {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let plan = match &self.inner {
            Some(inner) => inner.create_physical_plan(logical_plan, session).await?,
            None => {
                DefaultPhysicalPlanner::default()
                    .create_physical_plan(logical_plan, session)
                    .await?
            }
        };
        // A statement's plan (not EXPLAIN ANALYZE of it, which answers with its metrics).
        Ok(match committed_of(&plan) {
            Some(committed) if CommittedExec::answers_like(&plan) => {
                Arc::new(CommittedExec::new(plan, committed))
            }
            _ => plan,
        })
    }
}

/// A fixed list of worker URLs.
#[derive(Debug, Clone)]
struct Workers(Arc<Vec<Url>>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> DFResult<Vec<Url>> {
        Ok(self.0.as_ref().clone())
    }
}

/// A worker that runs icefloe's plan nodes, reaching object stores with `storage` (the
/// credentials a coordinator does not send) on top of the environment.
pub fn worker(storage: StorageProperties) -> Worker {
    Worker::from_session_builder(IcefloeSessions { storage })
}

/// Each task's session on a worker: icefloe's codec and functions, and the worker's storage
/// properties.
#[derive(Debug, Clone)]
struct IcefloeSessions {
    storage: StorageProperties,
}

#[async_trait]
impl WorkerSessionBuilder for IcefloeSessions {
    async fn build_session_state(&self, ctx: WorkerQueryContext) -> DFResult<SessionState> {
        let mut builder = ctx.builder.with_distributed_user_codec(IcefloeCodec::new());
        let config = builder.config().get_or_insert_default().clone();
        builder = builder.with_config(self.storage.clone().for_session(config));
        // icefloe's functions (`variant_get`, `parse_json`, ...), which plans name.
        let session = SessionContext::new_with_state(builder.build());
        crate::sql::register(&session);
        Ok(session.state())
    }
}

/// Serves `worker` (gRPC) on `listener` until the process ends or serving fails.
pub async fn serve_worker(worker: Worker, listener: TcpListener) -> DFResult<()> {
    let incoming = accepted(listener);
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// The connections `listener` accepts, each with `TCP_NODELAY` (tonic sets it only on the
/// connections it accepts itself: without it every small response waits for the peer's
/// delayed ACK, about 40 ms).
fn accepted(
    listener: TcpListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    futures::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.and_then(|(stream, _)| {
            stream.set_nodelay(true)?;
            Ok(stream)
        });
        Some((accepted, listener))
    })
}

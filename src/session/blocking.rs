//! Waiting for async work from DataFusion's synchronous callbacks.
//!
//! DataFusion asks some questions synchronously while planning (`CatalogProvider::schema_names`
//! and `schema`, `SchemaProvider::table_exist`, table functions), and the answers come from a
//! catalog or a store, which are async. Inside a multi-threaded Tokio runtime (the usual case,
//! and the CLI's) the work runs on the calling worker through `block_in_place`, so it uses the
//! session's runtime and does not stall the other workers. Anywhere else (a current-thread
//! runtime, where `block_in_place` is not allowed, or no runtime) it runs on a scoped helper
//! thread with its own current-thread runtime, and the call waits for it. The REST catalog's
//! HTTP connections live on a runtime of their own, so a request made from the helper thread
//! never waits for a connection task of the blocked runtime.

use std::future::Future;

use datafusion::error::{DataFusionError, Result as DFResult};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `future` to its end from synchronous code (see the module docs).
pub(crate) fn block_on<F>(future: F) -> DFResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    if let Ok(handle) = Handle::try_current()
        && handle.runtime_flavor() == RuntimeFlavor::MultiThread
    {
        return Ok(tokio::task::block_in_place(|| handle.block_on(future)));
    }
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(runtime.block_on(future))
        });
        worker.join().unwrap_or_else(|_| {
            Err(DataFusionError::Execution(
                "the thread waiting for the catalog or the store panicked".to_string(),
            ))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::block_on;

    #[test]
    fn works_without_a_runtime() {
        assert_eq!(block_on(async { 7 }).unwrap(), 7);
    }

    #[tokio::test]
    async fn works_inside_a_current_thread_runtime() {
        let waited = block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            8
        });
        assert_eq!(waited.unwrap(), 8);
    }
}

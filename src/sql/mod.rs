//! SQL integration: `CREATE EXTERNAL TABLE ... STORED AS ICEBERG` and the one call that wires
//! icefloe into a `SessionContext`.

mod factory;

use std::sync::Arc;

use datafusion::prelude::SessionContext;

pub use factory::IcebergTableFactory;

/// Registers icefloe's SQL extensions with a session: after this,
/// `CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '...'` opens an Iceberg table.
///
/// ```
/// # async fn example() -> datafusion::error::Result<()> {
/// let ctx = datafusion::prelude::SessionContext::new();
/// icefloe::sql::register(&ctx);
/// # Ok(())
/// # }
/// ```
pub fn register(ctx: &SessionContext) {
    let state = ctx.state_ref();
    state
        .write()
        .table_factories_mut()
        .insert("ICEBERG".to_string(), Arc::new(IcebergTableFactory));
}

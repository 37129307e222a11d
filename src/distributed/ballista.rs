//! icefloe on Ballista: the codecs a Ballista client, scheduler and executors need to run
//! queries over Iceberg tables.
//!
//! The client sends the logical plan; icefloe's providers travel through
//! [`IcefloeLogicalCodec`] (the scheduler loads the same metadata file and plans the scan:
//! manifests, pruning and position deletes are read there, once). The scheduler sends each
//! task's physical plan to an executor through [`IcefloeCodec`]; Ballista gives every task its
//! share of the scan's file groups, and the executor reads those files itself.
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use ballista::prelude::SessionContextExt;
//! use datafusion::execution::SessionStateBuilder;
//! use datafusion::prelude::SessionContext;
//! use icefloe::distributed::{IcefloeCodec, ballista as on_ballista};
//!
//! let config = on_ballista::session_config(IcefloeCodec::new());
//! let state = SessionStateBuilder::new().with_default_features().with_config(config).build();
//! let ctx = SessionContext::remote_with_state("df://scheduler:50050", state).await?;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::prelude::SessionConfig;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{ComposedPhysicalExtensionCodec, PhysicalExtensionCodec};

use super::IcefloeCodec;
use super::logical::IcefloeLogicalCodec;

/// The logical codec for a Ballista client and scheduler: icefloe's providers, Ballista's
/// codec for the rest. Sends credentials when `codec` does.
pub fn logical_codec(codec: IcefloeCodec) -> Arc<dyn LogicalExtensionCodec> {
    let inner = Arc::new(BallistaLogicalExtensionCodec::default());
    let logical = IcefloeLogicalCodec::wrapping(inner);
    Arc::new(match codec.sends_credentials() {
        true => logical.with_credentials(),
        false => logical,
    })
}

/// The physical codec for a Ballista scheduler and its executors: icefloe's nodes with
/// `codec`, Ballista's (shuffles) with its own.
pub fn physical_codec(codec: IcefloeCodec) -> Arc<dyn PhysicalExtensionCodec> {
    Arc::new(ComposedPhysicalExtensionCodec::new(vec![
        Arc::new(codec) as Arc<dyn PhysicalExtensionCodec>,
        Arc::new(BallistaPhysicalExtensionCodec::default()),
    ]))
}

/// A Ballista session configuration with icefloe's codecs, for the client (and, in standalone
/// mode, the scheduler and executor it starts).
pub fn session_config(codec: IcefloeCodec) -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(logical_codec(codec))
        .with_ballista_physical_extension_codec(physical_codec(codec))
}

//! A scan's IO across processes: its storage properties (credentials only when the codec may
//! send them), relocation rules and read limits; the store a worker reads through, registered
//! in its runtime under the URL the plan names; and planning's counts.

use std::sync::Arc;
use std::time::Duration;

use datafusion::error::Result as DFResult;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;

use super::{corrupt, wire};
use crate::io::storage::is_credential_key;
use crate::io::{FileIO, ReadLimits, Relocation, StorageProperties};
use crate::scan::plan::PlanStats;
use crate::spec::SnapshotSelector;

/// `io` as it travels; with `credentials` false, no property that holds a secret.
pub(super) fn io_to_wire(io: &FileIO, credentials: bool) -> wire::Io {
    let limits = io.read_limits();
    wire::Io {
        properties: io
            .storage()
            .iter()
            .filter(|(key, _)| credentials || !is_credential_key(key))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        relocation: io
            .relocation()
            .rules()
            .iter()
            .map(|(old, new)| wire::Rule {
                old: old.clone(),
                new: new.clone(),
            })
            .collect(),
        limits: Some(wire::Limits {
            metadata_bytes: limits.metadata_bytes,
            manifest_list_bytes: limits.manifest_list_bytes,
            manifest_bytes: limits.manifest_bytes,
            decoded_bytes: limits.decoded_bytes,
            delete_file_bytes: limits.delete_file_bytes,
        }),
    }
}

/// The IO of a decoded node, over the decoding task's runtime: the worker session's storage
/// properties with the sent ones on top (a worker supplies the credentials it was not sent).
pub(super) fn io_from_wire(io: Option<&wire::Io>, ctx: &TaskContext) -> DFResult<FileIO> {
    let io = io.ok_or_else(|| corrupt("a node without its IO"))?;
    let relocation = io.relocation.iter().fold(Relocation::new(), |r, rule| {
        r.with_rule(&rule.old, &rule.new)
    });
    let limits = io
        .limits
        .as_ref()
        .ok_or_else(|| corrupt("an IO without its read limits"))?;
    let limits = ReadLimits {
        metadata_bytes: limits.metadata_bytes,
        manifest_list_bytes: limits.manifest_list_bytes,
        manifest_bytes: limits.manifest_bytes,
        decoded_bytes: limits.decoded_bytes,
        delete_file_bytes: limits.delete_file_bytes,
    };
    let sent = StorageProperties::from_pairs(io.properties.clone());
    let storage = StorageProperties::of_session(ctx.session_config()).merged(&sent);
    Ok(FileIO::new(ctx.runtime_env(), relocation)
        .with_storage(storage)
        .with_read_limits(limits))
}

/// Makes `url` (the name the coordinator's runtime knows the store of `store` by) name that
/// store in `io`'s runtime: one the worker registered for `store`, else one built from the
/// storage properties.
pub(super) fn register_store(io: &FileIO, store: &str, url: &ObjectStoreUrl) -> DFResult<()> {
    let runtime = io.runtime();
    if runtime.object_store(url).is_ok() {
        return Ok(());
    }
    // Resolved without relocation: `store` is where relocation already led.
    let plain =
        FileIO::new(Arc::clone(runtime), Relocation::new()).with_storage(io.storage().clone());
    let found = plain.resolve(&format!("{store}/_"))?;
    runtime.register_object_store(url.as_ref(), found.store);
    Ok(())
}

pub(super) fn planning_to_wire(stats: &PlanStats) -> wire::Planning {
    let n = |v: usize| v as u64;
    wire::Planning {
        manifests_total: n(stats.manifests_total),
        manifests_pruned: n(stats.manifests_pruned),
        data_files_total: n(stats.data_files_total),
        data_files_pruned_by_partition: n(stats.data_files_pruned_by_partition),
        data_files_pruned_by_metrics: n(stats.data_files_pruned_by_metrics),
        data_files_scanned: n(stats.data_files_scanned),
        delete_files_matched: n(stats.delete_files_matched),
        bytes_scanned: stats.bytes_scanned,
        planning_nanos: u64::try_from(stats.planning_time.as_nanos()).unwrap_or(u64::MAX),
    }
}

pub(super) fn planning_from_wire(p: &wire::Planning) -> PlanStats {
    let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    PlanStats {
        manifests_total: n(p.manifests_total),
        manifests_pruned: n(p.manifests_pruned),
        data_files_total: n(p.data_files_total),
        data_files_pruned_by_partition: n(p.data_files_pruned_by_partition),
        data_files_pruned_by_metrics: n(p.data_files_pruned_by_metrics),
        data_files_scanned: n(p.data_files_scanned),
        delete_files_matched: n(p.delete_files_matched),
        bytes_scanned: p.bytes_scanned,
        planning_time: Duration::from_nanos(p.planning_nanos),
    }
}

pub(super) fn selector_to_wire(selector: &SnapshotSelector) -> Option<wire::Selector> {
    match selector {
        SnapshotSelector::Current => None,
        SnapshotSelector::SnapshotId(id) => Some(wire::Selector::SnapshotId(*id)),
        SnapshotSelector::Ref(name) => Some(wire::Selector::Ref(name.clone())),
        SnapshotSelector::AsOfTimestamp(ms) => Some(wire::Selector::AsOfTimestampMs(*ms)),
    }
}

pub(super) fn selector_from_wire(selector: Option<&wire::Selector>) -> SnapshotSelector {
    match selector {
        None => SnapshotSelector::Current,
        Some(wire::Selector::SnapshotId(id)) => SnapshotSelector::SnapshotId(*id),
        Some(wire::Selector::Ref(name)) => SnapshotSelector::Ref(name.clone()),
        Some(wire::Selector::AsOfTimestampMs(ms)) => SnapshotSelector::AsOfTimestamp(*ms),
    }
}

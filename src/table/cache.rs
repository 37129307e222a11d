//! A process-wide cache of decoded manifest lists, manifests and metadata files.
//!
//! Iceberg files are immutable: a path names the same bytes forever, so a decoded manifest can
//! be shared by every query and table of the process. Metadata files are the exception: a
//! table dropped and created again reuses `v1.metadata.json`, so a cached metadata file keeps
//! the bytes it was parsed from and is used only when the file still holds exactly those bytes
//! (it is read every time; only the parse is saved). Entries are keyed by the file's resolved
//! location (store and path, after relocation, so two copies of a table never share entries)
//! and by what decoding depended on (the table's format version for manifest lists; the
//! partition type for manifests, which changes when a source column is promoted). The cache is
//! bounded by an estimate of the decoded bytes it holds and evicts the least recently used
//! entries first.
//!
//! The bound defaults to [`DEFAULT_CAPACITY_BYTES`]; `ICEFLOE_MANIFEST_CACHE_BYTES` overrides it
//! at startup and [`ManifestCache::set_capacity_bytes`] at any time (0 disables caching).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use crate::spec::{Literal, Manifest, ManifestEntry, ManifestFile, TableMetadata};

/// The default bound: 256 MiB of decoded metadata.
pub const DEFAULT_CAPACITY_BYTES: usize = 256 * 1024 * 1024;

/// A decoded file in the cache.
#[derive(Debug, Clone)]
pub(crate) enum Cached {
    /// A manifest list.
    List(Arc<Vec<ManifestFile>>),
    /// A manifest, inheritance applied.
    Manifest(Arc<Manifest>),
    /// A metadata file: the bytes read and what they parse to.
    Metadata(Bytes, Arc<TableMetadata>),
}

struct Slot {
    value: Cached,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct State {
    slots: HashMap<String, Slot>,
    bytes: usize,
    clock: u64,
    hits: u64,
    misses: u64,
}

/// The cache; see the module docs. [`ManifestCache::global`] is the process-wide one.
pub struct ManifestCache {
    capacity: Mutex<usize>,
    state: Mutex<State>,
}

/// Hit and miss counts and the bytes held, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that had to read the file.
    pub misses: u64,
    /// The estimated decoded bytes held.
    pub bytes: usize,
    /// The number of files held.
    pub entries: usize,
}

impl ManifestCache {
    /// An empty cache holding at most `capacity_bytes` (estimated).
    pub fn new(capacity_bytes: usize) -> Self {
        Self {
            capacity: Mutex::new(capacity_bytes),
            state: Mutex::new(State::default()),
        }
    }

    /// The process-wide cache.
    pub fn global() -> &'static ManifestCache {
        static GLOBAL: OnceLock<ManifestCache> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            let capacity = std::env::var("ICEFLOE_MANIFEST_CACHE_BYTES")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_CAPACITY_BYTES);
            ManifestCache::new(capacity)
        })
    }

    /// Changes the bound, evicting entries until it holds; 0 disables caching.
    pub fn set_capacity_bytes(&self, capacity_bytes: usize) {
        *lock(&self.capacity) = capacity_bytes;
        let mut state = lock(&self.state);
        evict(&mut state, capacity_bytes);
    }

    /// Drops every entry.
    pub fn clear(&self) {
        let mut state = lock(&self.state);
        state.slots.clear();
        state.bytes = 0;
    }

    /// Counts and size.
    pub fn stats(&self) -> CacheStats {
        let state = lock(&self.state);
        CacheStats {
            hits: state.hits,
            misses: state.misses,
            bytes: state.bytes,
            entries: state.slots.len(),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Cached> {
        let mut state = lock(&self.state);
        state.clock += 1;
        let now = state.clock;
        match state.slots.get_mut(key) {
            Some(slot) => {
                slot.last_used = now;
                let value = slot.value.clone();
                state.hits += 1;
                Some(value)
            }
            None => {
                state.misses += 1;
                None
            }
        }
    }

    pub(crate) fn insert(&self, key: String, value: Cached) {
        let capacity = *lock(&self.capacity);
        let bytes = key.len() + value.approx_bytes();
        if bytes > capacity {
            return;
        }
        let mut state = lock(&self.state);
        state.clock += 1;
        let last_used = state.clock;
        if let Some(old) = state.slots.insert(
            key,
            Slot {
                value,
                bytes,
                last_used,
            },
        ) {
            state.bytes -= old.bytes;
        }
        state.bytes += bytes;
        evict(&mut state, capacity);
    }
}

/// Evicts least recently used entries until `state` holds at most `capacity` bytes.
fn evict(state: &mut State, capacity: usize) {
    if state.bytes <= capacity {
        return;
    }
    let mut order: Vec<(u64, String)> = state
        .slots
        .iter()
        .map(|(k, s)| (s.last_used, k.clone()))
        .collect();
    order.sort_unstable();
    for (_, key) in order {
        if state.bytes <= capacity {
            break;
        }
        if let Some(slot) = state.slots.remove(&key) {
            state.bytes -= slot.bytes;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every update is a few plain
    // assignments), so a poisoned lock is still usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cached {
    /// An estimate of the heap and inline bytes the decoded value holds.
    fn approx_bytes(&self) -> usize {
        match self {
            Cached::List(list) => list.iter().map(manifest_file_bytes).sum(),
            Cached::Manifest(m) => m.entries.iter().map(entry_bytes).sum::<usize>() + 256,
            // The bytes held, and about three times as much parsed (measured on metadata
            // files of many snapshots: strings and maps dominate).
            Cached::Metadata(raw, _) => raw.len() * 4 + 1024,
        }
    }
}

fn manifest_file_bytes(m: &ManifestFile) -> usize {
    let summaries: usize = m
        .partitions
        .iter()
        .flatten()
        .map(|s| {
            48 + s.lower_bound.as_ref().map_or(0, Vec::len)
                + s.upper_bound.as_ref().map_or(0, Vec::len)
        })
        .sum();
    std::mem::size_of::<ManifestFile>() + m.manifest_path.len() + summaries
}

fn entry_bytes(e: &ManifestEntry) -> usize {
    let f = &e.data_file;
    // A hash map entry of small keys and values costs about 24 bytes with its control byte and
    // spare capacity.
    let counts = (f.column_sizes.len()
        + f.value_counts.len()
        + f.null_value_counts.len()
        + f.nan_value_counts.len())
        * 24;
    let bounds: usize = [&f.lower_bounds, &f.upper_bounds]
        .into_iter()
        .flatten()
        .flat_map(|m| m.values())
        .map(|v| v.len() + 40)
        .sum();
    let partition: usize = f.partition.iter().flatten().map(literal_bytes).sum();
    std::mem::size_of::<ManifestEntry>()
        + f.file_path.len()
        + counts
        + bounds
        + partition
        + f.split_offsets.as_ref().map_or(0, |s| s.len() * 8)
        + f.referenced_data_file.as_ref().map_or(0, String::len)
}

fn literal_bytes(l: &Literal) -> usize {
    std::mem::size_of::<Literal>()
        + match l {
            Literal::String(s) => s.len(),
            Literal::Fixed(b) | Literal::Binary(b) => b.len(),
            _ => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(path: &str) -> Cached {
        Cached::List(Arc::new(vec![ManifestFile::new(
            path.to_string(),
            100,
            0,
            crate::spec::ManifestContent::Data,
            1,
        )]))
    }

    #[test]
    fn hits_misses_and_least_recently_used_eviction() {
        let one = list("a").approx_bytes() + 1;
        let cache = ManifestCache::new(2 * one);
        assert!(cache.get("a").is_none());
        cache.insert("a".into(), list("a"));
        cache.insert("b".into(), list("b"));
        assert!(cache.get("a").is_some()); // a is now newer than b
        cache.insert("c".into(), list("c"));
        assert!(cache.get("b").is_none(), "b was the least recently used");
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (3, 2, 2));
        assert!(stats.bytes <= 2 * one);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = ManifestCache::new(1000);
        cache.insert("a".into(), list("a"));
        cache.set_capacity_bytes(0);
        assert_eq!(cache.stats().entries, 0);
        cache.insert("b".into(), list("b"));
        assert!(cache.get("b").is_none());
    }
}

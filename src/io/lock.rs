//! A commit lock for writers on one machine: an advisory lock on a file named for the table's
//! (canonical) metadata directory in `<temp dir>/icefloe-commit-locks/`, taken around a commit's
//! load-to-swap window, so that local writers (threads and processes) queue instead of racing
//! and losing. Nothing is written into the table.
//!
//! It is an optimisation, never what makes a commit correct: the swap stays an atomic
//! create-if-absent (or the catalog's conditional update), so writers that do not take the
//! lock (other engines, other machines, another temporary directory) still race safely. Object
//! stores have no such lock; a lock not had within the wait is given up and the commit runs
//! optimistically.

use std::time::{Duration, Instant};

use super::FileIO;

/// The directory of the lock files, under the system's temporary directory.
const LOCK_DIR: &str = "icefloe-commit-locks";

/// How often a held lock is tried again.
const POLL: Duration = Duration::from_millis(2);

/// A held commit lock; released when dropped.
#[derive(Debug)]
pub struct CommitLock {
    file: std::fs::File,
}

impl Drop for CommitLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl FileIO {
    /// Takes the commit lock of the table at `table_location` (its metadata records it),
    /// waiting up to `wait`; `None` when the table is not on the local file system or the lock
    /// could not be had (the commit then goes on without it).
    pub async fn lock_commits(&self, table_location: &str, wait: Duration) -> Option<CommitLock> {
        let dir = self.local_path(&format!(
            "{}/metadata",
            table_location.trim_end_matches('/')
        ))?;
        let dir = std::fs::canonicalize(dir).ok()?;
        let locks = std::env::temp_dir().join(LOCK_DIR);
        std::fs::create_dir_all(&locks).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(locks.join(lock_name(&dir)))
            .ok()?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(CommitLock { file }),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    tokio::time::sleep(POLL).await;
                }
                Err(_) => return None,
            }
        }
    }
}

/// The lock file of a canonical directory: two CRC-32s of its path (a collision only makes
/// two tables' local writers take turns).
fn lock_name(dir: &std::path::Path) -> String {
    let path = dir.to_string_lossy();
    let reversed: Vec<u8> = path.bytes().rev().collect();
    format!(
        "{:08x}{:08x}.lock",
        crc32fast::hash(path.as_bytes()),
        crc32fast::hash(&reversed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        let location = dir.path().display().to_string();
        let io = FileIO::default();
        let held = io.lock_commits(&location, Duration::from_secs(1)).await;
        assert!(held.is_some());
        let started = Instant::now();
        let second = io.lock_commits(&location, Duration::from_millis(50)).await;
        assert!(second.is_none() && started.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert!(
            io.lock_commits(&location, Duration::from_millis(50))
                .await
                .is_some()
        );
        // Nothing is written into the table.
        assert_eq!(
            std::fs::read_dir(dir.path().join("metadata"))
                .unwrap()
                .count(),
            0
        );
        // Not local: no lock, no error.
        assert!(
            io.lock_commits("s3://b/t", Duration::from_millis(1))
                .await
                .is_none()
        );
    }
}

//! How often and how long a commit retries after losing a race (`commit.retry.*`).

use std::time::Duration;

use crate::error::{Error, Result};
use crate::spec::{TableMetadata, properties};

/// The retry settings of a table (`commit.retry.*` properties, Java's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The first wait.
    pub min_wait: Duration,
    /// The longest wait.
    pub max_wait: Duration,
}

impl RetryPolicy {
    /// The policy a table's properties set.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the property whose value is not a number.
    pub fn of(metadata: &TableMetadata) -> Result<Self> {
        Ok(Self {
            retries: properties::COMMIT_NUM_RETRIES.get(metadata)?,
            min_wait: properties::COMMIT_MIN_RETRY_WAIT.get(metadata)?,
            max_wait: properties::COMMIT_MAX_RETRY_WAIT.get(metadata)?,
        })
    }

    /// The error of a commit to `table` that lost its race on every attempt (`attempt` is
    /// the last one, 0-based; `last` what the catalog said the last time).
    pub(crate) fn exhausted(&self, table: &str, attempt: u32, last: &str) -> Error {
        Error::CommitConflict {
            table: table.to_string(),
            reason: format!(
                "another writer committed first {} times (commit.retry.num-retries = {}); \
                 the last time: {last}",
                attempt + 1,
                self.retries
            ),
        }
    }

    /// The wait before retry `n` (0-based): doubling from the minimum, capped.
    pub(crate) fn wait(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.min(20));
        self.min_wait.saturating_mul(factor).min(self.max_wait)
    }

    /// [`RetryPolicy::wait`] spread by a random factor in [0.5, 1.5) (capped at the maximum),
    /// so that writers that lost the same race do not all come back at once and collide again.
    pub(crate) fn jittered_wait(&self, n: u32) -> Duration {
        self.wait(n).mul_f64(0.5 + unit_random()).min(self.max_wait)
    }
}

/// A uniform random number in [0, 1), from the operating system's randomness (through
/// `uuid`'s v4 generator, already a dependency).
fn unit_random() -> f64 {
    let bits = (uuid::Uuid::new_v4().as_u128() >> 75) as u64; // 53 random bits
    bits as f64 / (1u64 << 53) as f64
}

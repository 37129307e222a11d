//! The one error type of icefloe.
//!
//! Variants are named for what the caller should do next, and carry the object they are about
//! (a file path, a snapshot id, a ref name, a column) plus the underlying `source` where there is
//! one. Conversion into [`DataFusionError`] happens only at the DataFusion boundary.
//!
//! Messages name locations, and a location may carry credentials (`s3://key:secret@bucket/t`):
//! the messages of [`Error`] and of the error chains icefloe prints show the password of a
//! URL's user info as `***` ([`redact`]). The fields keep what was given.

use std::borrow::Cow;
use std::fmt;

use datafusion::error::DataFusionError;

/// A `Result` with icefloe's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading or writing an Iceberg table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file, table, namespace, snapshot or ref does not exist.
    #[error("not found: {}", Redacted(.what))]
    NotFound {
        /// What was looked for, e.g. `metadata file s3://b/t/metadata/v3.metadata.json`.
        what: String,
        /// The store's error, when the miss came from storage.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// A file exists but its bytes do not form what the spec says they must (truncated JSON,
    /// a broken Avro block, a manifest entry without a required field, ...). Pure decoders
    /// leave `path` empty; the IO layer that read the bytes names the file
    /// ([`Error::in_file`]).
    #[error("corrupt{}: {}", Spaced(.path), Redacted(.reason))]
    Corrupt {
        /// The file (or object) that is broken.
        path: String,
        /// What is wrong with it.
        reason: String,
        /// The decoder's error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// Valid input that icefloe does not support (yet): a format version above 3, a shredded
    /// `variant` column, ...
    #[error("unsupported: {}", Redacted(.0))]
    Unsupported(String),

    /// The caller cancelled a long operation (a compaction): what it wrote was deleted and
    /// nothing was committed.
    #[error("cancelled: {}", Redacted(.0))]
    Cancelled(String),

    /// The caller asked for something that cannot be: an unknown transform string, a bad
    /// relocation rule, a table name with no namespace, ...
    #[error("invalid argument: {}: {}", Redacted(.what), Redacted(.reason))]
    InvalidArgument {
        /// What the caller gave, e.g. `partition spec 3`, `ref 'b1'`, `location x/../y`,
        /// `relocation rule 'a='`.
        what: String,
        /// Why it cannot be (a sentence going on from `what`: `has an empty side`).
        reason: String,
    },

    /// A table, namespace or ref to be created (or renamed to) already exists.
    #[error("already exists: {}", Redacted(.what))]
    AlreadyExists {
        /// What exists, e.g. `table db.orders`.
        what: String,
    },

    /// A commit's requirements did not hold (another writer committed first), or the retries
    /// ran out. Nothing was committed: the caller may refresh and try again.
    #[error("commit conflict on {}: {}", Redacted(.table), Redacted(.reason))]
    CommitConflict {
        /// The table whose pointer moved.
        table: String,
        /// What the catalog saw.
        reason: String,
    },

    /// A commit whose outcome cannot be known (the catalog answered with a server error, or the
    /// connection broke after the request was sent): the table may or may not have the change.
    /// The caller must neither retry blindly nor delete the files the commit wrote; reload the
    /// table to see.
    #[error("commit state unknown on {}: {}", Redacted(.table), Redacted(.reason))]
    CommitStateUnknown {
        /// The table.
        table: String,
        /// What happened.
        reason: String,
        /// The underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// An object store request failed for a reason other than a missing object.
    #[error("I/O error on {}", Redacted(.path))]
    Io {
        /// The object the request was for.
        path: String,
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The SQLite catalog failed.
    #[error("catalog {}: {}", Redacted(.catalog), Redacted(.reason))]
    Catalog {
        /// The catalog file or name.
        catalog: String,
        /// What failed.
        reason: String,
        /// The database error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The table was found at another place than the location its metadata records (it was
    /// copied or moved): reading relocates it, but a write or a deletion would act on the
    /// recorded location, which is another table.
    #[error(
        "the table at {found} records its location as {recorded}: it was copied or moved. \
         Reads relocate it, but writes and destructive commands refuse it, since they would \
         act on {recorded}. To write to the copy, relocate explicitly: `--relocate \
         {recorded}={found}` (CLI), the 'relocate' option (CREATE EXTERNAL TABLE) or \
         TableOptions::with_relocation (Rust); new files then go under {found}",
        found = Redacted(.found),
        recorded = Redacted(.recorded)
    )]
    Moved {
        /// The location the metadata records.
        recorded: String,
        /// Where the table was found.
        found: String,
    },

    /// DataFusion or Arrow failed while icefloe drove them.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
}

impl Error {
    /// A [`Error::Corrupt`] without an underlying error.
    pub fn corrupt(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// A [`Error::Corrupt`] caused by a decoder error.
    pub fn corrupt_with(
        path: impl Into<String>,
        reason: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.into(),
            source: Some(Box::new(source)),
        }
    }

    /// An [`Error::InvalidArgument`]: `what` the caller gave (`partition spec 3`, `ref 'b1'`,
    /// `property commit.retry.num-retries`) and why it cannot be.
    pub fn invalid(what: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Self::InvalidArgument {
            what: what.to_string(),
            reason: reason.to_string(),
        }
    }

    /// A [`Error::NotFound`] that did not come from storage.
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound {
            what: what.into(),
            source: None,
        }
    }

    /// Says which file names the object a [`Error::NotFound`] or an invalid location
    /// ([`Error::InvalidArgument`]) is about: a dangling reference is named with where it is.
    pub fn named_by(self, referrer: &str) -> Self {
        match self {
            Self::NotFound { what, source } => Self::NotFound {
                what: format!("{what} (named by {referrer})"),
                source,
            },
            Self::InvalidArgument { what, reason } => Self::InvalidArgument {
                what: format!("{what} (named by {referrer})"),
                reason,
            },
            other => other,
        }
    }

    /// Says where inside a larger object the error is: `context` (`manifest entry 3`,
    /// `sort order 2`) goes before the reason of an [`Error::Corrupt`] and before the `what`
    /// of an [`Error::InvalidArgument`]. The path, the source and every other variant are
    /// kept as they are.
    pub fn within(self, context: impl fmt::Display) -> Self {
        match self {
            Self::Corrupt {
                path,
                reason,
                source,
            } => Self::Corrupt {
                path,
                reason: format!("{context}: {reason}"),
                source,
            },
            Self::InvalidArgument { what, reason } => Self::InvalidArgument {
                what: format!("{context}: {what}"),
                reason,
            },
            other => other,
        }
    }

    /// An error about a value found in a file being decoded: a value that is an invalid
    /// argument when a caller gives it (a transform string, ...) makes the file corrupt when
    /// the file holds it. An [`Error::InvalidArgument`] becomes an [`Error::Corrupt`] without a
    /// path whose reason is `context` and what was wrong, and whose source is the original
    /// error; every other error gets `context` as [`Error::within`] gives it.
    pub(crate) fn into_corrupt(self, context: impl fmt::Display) -> Self {
        match self {
            Self::InvalidArgument {
                ref what,
                ref reason,
            } => Self::corrupt_with("", format!("{context}: {what}: {reason}"), self),
            other => other.within(context),
        }
    }

    /// Re-labels a context-free error (for example one raised by a pure decoder that was handed
    /// bytes) with the path of the file those bytes came from.
    pub fn in_file(self, path: &str) -> Self {
        match self {
            Self::Corrupt {
                path: inner,
                reason,
                source,
            } if inner.is_empty() => Self::Corrupt {
                path: path.to_string(),
                reason,
                source,
            },
            Self::Unsupported(msg) => Self::Unsupported(format!("{path}: {msg}")),
            other => other,
        }
    }
}

/// A path with a space before it, or nothing for an empty path (`corrupt: ...` rather than
/// `corrupt : ...` for bytes whose file is not known); redacted as [`Redacted`] is.
struct Spaced<'a>(&'a str);

impl fmt::Display for Spaced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            "" => Ok(()),
            path => write!(f, " {}", redact(path)),
        }
    }
}

/// Text shown through [`redact`].
struct Redacted<'a>(&'a str);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.0))
    }
}

/// `text` with the password of every URL's user info replaced by `***`:
/// `s3://key:secret@bucket/t` becomes `s3://key:***@bucket/t`. A user info without a password
/// (`abfss://container@account...`) is not a secret and stays.
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    const SCHEME_END: &str = "://";
    if !text.contains(SCHEME_END) || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(SCHEME_END) {
        let (head, tail) = rest.split_at(at + SCHEME_END.len());
        out.push_str(head);
        // The authority ends at the path, query or fragment, or where the text around it
        // goes on (a quote, a space, a bracket).
        let end = tail
            .find(|c: char| c.is_whitespace() || "/?#'\"`()<>[]{},;".contains(c))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rsplit_once('@') {
            Some((user_info, host)) if user_info.contains(':') => {
                let user = user_info
                    .split_once(':')
                    .map_or(user_info, |(user, _)| user);
                out.push_str(user);
                out.push_str(":***@");
                out.push_str(host);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// An error and its causes on one line, `: `-joined, skipping a cause whose text the message
/// already includes (a decoder's error is often both in the reason and the source); redacted
/// as [`Error`]'s messages are.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = redact(&error.to_string()).into_owned();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        let cause_text = redact(&cause_text);
        if !text.contains(cause_text.as_ref()) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl From<Error> for DataFusionError {
    fn from(err: Error) -> Self {
        match err {
            Error::DataFusion(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;

/// The candidate closest to `word`, for a "did you mean" hint: equal once case, `_` and `-`
/// are ignored, or within an edit distance of a third of its length (at least 1, at most 3).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let fold = |s: &str| s.to_lowercase().replace('_', "-");
    let folded = fold(word);
    let limit = (folded.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(&folded, &fold(c)), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

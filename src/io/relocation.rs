//! Relocation of moved tables: metadata written on another machine names paths that are not
//! where the files are now. A [`Relocation`] rewrites every path read (catalog pointers,
//! manifest lists, manifests, data and delete files) from an old prefix to a new one.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// Prefix-rewriting rules, old prefix -> new location.
///
/// Prefixes match on whole path segments, and a few spellings of the same place are treated
/// alike: `file:///a/b`, `file:/a/b` and `/a/b`; `./t` and `t`; and a scheme-less absolute
/// prefix `/a/b` also matches `hdfs://host:port/a/b` (Hadoop writers often mix both forms).
/// The longest matching prefix wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relocation {
    rules: Vec<(String, String)>,
}

impl Relocation {
    /// No rules: paths are read as written.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule: paths under `old` are read under `new` instead.
    pub fn with_rule(mut self, old: impl Into<String>, new: impl Into<String>) -> Self {
        self.rules.push((old.into(), new.into()));
        // Longest prefix first, so nested rules beat their parents.
        self.rules
            .sort_by_key(|(old, _)| std::cmp::Reverse(canonical(old).len()));
        self
    }

    /// Parses `OLD=NEW` (the CLI's `--relocate` form).
    pub fn parse_rule(self, rule: &str) -> Result<Self> {
        let (old, new) = rule.split_once('=').ok_or_else(|| {
            Error::invalid(
                format_args!("relocation rule '{rule}'"),
                "is not of the form OLD=NEW",
            )
        })?;
        if old.is_empty() || new.is_empty() {
            return Err(Error::invalid(
                format_args!("relocation rule '{rule}'"),
                "has an empty side",
            ));
        }
        Ok(self.with_rule(old, new))
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules, longest old prefix first.
    pub fn rules(&self) -> &[(String, String)] {
        &self.rules
    }

    /// Rewrites one path; paths under no rule come back unchanged.
    pub fn apply<'a>(&self, path: &'a str) -> Cow<'a, str> {
        match self.split(path) {
            None => Cow::Borrowed(path),
            Some((new, rest)) if rest.is_empty() => Cow::Owned(new.to_string()),
            Some((new, rest)) => Cow::Owned(format!("{new}/{rest}")),
        }
    }

    /// The new location of the rule covering `path` (without a trailing slash) and the rest of
    /// the path below the old prefix (no leading slash), or `None` when no rule applies.
    pub fn split(&self, path: &str) -> Option<(&str, String)> {
        self.rules.iter().find_map(|(old, new)| {
            strip_prefix(path, old).map(|rest| (new.trim_end_matches('/'), rest))
        })
    }
}

/// The spelling used to compare prefixes: `file:` URLs and bare absolute paths become the bare
/// path, relative paths lose a leading `./`, and repeated slashes collapse.
fn canonical(p: &str) -> String {
    let p = if let Some(rest) = p.strip_prefix("file://") {
        rest
    } else if let Some(rest) = p.strip_prefix("file:") {
        rest
    } else {
        p
    };
    let mut p = p;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let (scheme, body) = match p.split_once("://") {
        Some((s, b)) => (Some(s), b),
        None => (None, p),
    };
    let mut out = String::with_capacity(p.len());
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    } else if body.starts_with('/') {
        out.push('/');
    }
    let segments: Vec<&str> = body
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    out.push_str(&segments.join("/"));
    out
}

/// The rest of `path` after `prefix` (no leading slash), if `prefix` covers it.
fn strip_prefix(path: &str, prefix: &str) -> Option<String> {
    let canon_path = canonical(path);
    let canon_prefix = canonical(prefix);
    if let Some(rest) = segment_rest(&canon_path, &canon_prefix) {
        return Some(rest.to_string());
    }
    // A bare absolute prefix also matches the same path under any scheme and authority.
    if canon_prefix.starts_with('/')
        && let Some((_, after_scheme)) = canon_path.split_once("://")
    {
        let path_part = after_scheme.find('/').map(|i| &after_scheme[i..])?;
        return segment_rest(path_part, &canon_prefix).map(str::to_string);
    }
    None
}

fn segment_rest<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let prefix = prefix.trim_end_matches('/');
    let rest = path.strip_prefix(prefix)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_every_spelling_of_a_prefix() {
        let r = Relocation::new().with_rule("file:///data/lake/wh1", "/fix/wh1");
        assert_eq!(
            r.apply("file:///data/lake/wh1/db/t/x.avro"),
            "/fix/wh1/db/t/x.avro"
        );
        assert_eq!(r.apply("/data/lake/wh1/db/t"), "/fix/wh1/db/t");
        assert_eq!(r.apply("file:/data/lake/wh1"), "/fix/wh1");
        assert_eq!(r.apply("/data/lake/wh10/x"), "/data/lake/wh10/x");
    }

    #[test]
    fn relative_and_dot_prefixes_match() {
        let r = Relocation::new().with_rule("lineitem_iceberg", "/fx/lineitem_iceberg");
        assert_eq!(
            r.apply("lineitem_iceberg/metadata/snap-1.avro"),
            "/fx/lineitem_iceberg/metadata/snap-1.avro"
        );
        assert_eq!(r.apply("./lineitem_iceberg"), "/fx/lineitem_iceberg");
    }

    #[test]
    fn bare_absolute_prefix_matches_hdfs_urls() {
        let r = Relocation::new().with_rule("/test-warehouse/t", "/fx/t");
        assert_eq!(
            r.apply("hdfs://localhost:20500/test-warehouse/t/data/a.parq"),
            "/fx/t/data/a.parq"
        );
        let r = Relocation::new().with_rule("hdfs://localhost:20500/test-warehouse/t", "/fx/t");
        assert_eq!(
            r.apply("hdfs://localhost:20500/test-warehouse/t/d"),
            "/fx/t/d"
        );
    }

    #[test]
    fn longest_prefix_wins() {
        let r = Relocation::new()
            .with_rule("s3://b/wh", "/a")
            .with_rule("s3://b/wh/db/t", "/b");
        assert_eq!(r.apply("s3://b/wh/db/t/f"), "/b/f");
        assert_eq!(r.apply("s3://b/wh/db/u/f"), "/a/db/u/f");
    }

    #[test]
    fn cli_rule_syntax() {
        assert!(Relocation::new().parse_rule("a=b").is_ok());
        assert!(Relocation::new().parse_rule("ab").is_err());
        assert!(Relocation::new().parse_rule("=b").is_err());
    }
}

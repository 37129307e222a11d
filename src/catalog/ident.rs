//! Names in a catalog: [`Namespace`] (a list of levels) and [`TableIdent`] (a namespace and a
//! table name), as the Iceberg REST protocol has them.
//!
//! A level is any non-empty Unicode string; how it is stored is the catalog's business: the
//! SQLite catalog joins levels with `.` (as Java's `JdbcCatalog` and PyIceberg's `SqlCatalog`
//! do, so a level there may not contain a dot), a directory catalog makes each level a
//! directory (no `/`, not `.` or `..`), the REST protocol separates levels with `0x1F`.

use std::fmt;

use crate::error::{Error, Result};

/// A namespace: its levels, outermost first. The empty namespace is the catalog's root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Namespace(Vec<String>);

impl Namespace {
    /// The namespace of these levels.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty level.
    pub fn new<S: Into<String>>(levels: impl IntoIterator<Item = S>) -> Result<Self> {
        let levels: Vec<String> = levels.into_iter().map(Into::into).collect();
        if levels.iter().any(String::is_empty) {
            return Err(Error::invalid(
                format!("namespace {:?}", levels),
                "a namespace level cannot be empty",
            ));
        }
        Ok(Self(levels))
    }

    /// The catalog's root (no level).
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// A namespace written with dots (`db`, `nested.inner`): each dot separates two levels.
    /// The empty string is the root.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty level (`a..b`, `.a`).
    pub fn parse_dotted(dotted: &str) -> Result<Self> {
        match dotted {
            "" => Ok(Self::root()),
            _ => Self::new(dotted.split('.')),
        }
    }

    /// The levels, outermost first.
    pub fn levels(&self) -> &[String] {
        &self.0
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The namespace that holds this one (`None` for the root).
    pub fn parent(&self) -> Option<Namespace> {
        let (_, parent) = self.0.split_last()?;
        Some(Self(parent.to_vec()))
    }

    /// A namespace inside this one.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty level.
    pub fn child(&self, level: impl Into<String>) -> Result<Namespace> {
        let mut levels = self.0.clone();
        levels.push(level.into());
        Self::new(levels)
    }

    /// The levels joined with `.` (how the SQLite catalog stores a namespace).
    pub fn dotted(&self) -> String {
        self.0.join(".")
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dotted())
    }
}

/// A table's name in a catalog: its namespace and its name there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableIdent {
    /// The namespace.
    pub namespace: Namespace,
    /// The table's name in it (any non-empty string).
    pub name: String,
}

impl TableIdent {
    /// `name` in `namespace`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty name.
    pub fn new(namespace: Namespace, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::invalid(
                format!("table name in namespace '{namespace}'"),
                "a table name cannot be empty",
            ));
        }
        Ok(Self { namespace, name })
    }

    /// A name written with dots (`db.orders`, `nested.inner.deep_table`): the last part is the
    /// table, the ones before it the namespace's levels.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty part.
    pub fn parse_dotted(dotted: &str) -> Result<Self> {
        let (namespace, name) = dotted.rsplit_once('.').unwrap_or(("", dotted));
        if dotted.starts_with('.') || (dotted.contains('.') && namespace.is_empty()) {
            return Err(Error::invalid(
                format!("table name '{dotted}'"),
                "a name part cannot be empty",
            ));
        }
        Self::new(Namespace::parse_dotted(namespace)?, name)
    }
}

impl fmt::Display for TableIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.namespace.is_root() {
            true => f.write_str(&self.name),
            false => write!(f, "{}.{}", self.namespace, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_split_into_levels() {
        let ident = TableIdent::parse_dotted("nested.inner.deep_table").unwrap();
        assert_eq!(ident.namespace.levels(), ["nested", "inner"]);
        assert_eq!(ident.name, "deep_table");
        assert_eq!(ident.to_string(), "nested.inner.deep_table");
        assert_eq!(ident.namespace.parent().unwrap().dotted(), "nested");
        let bare = TableIdent::parse_dotted("t").unwrap();
        assert!(bare.namespace.is_root());
        assert_eq!(bare.to_string(), "t");
    }

    #[test]
    fn empty_parts_are_refused() {
        for bad in ["", ".t", "a..t", "a.", "."] {
            assert!(
                matches!(
                    TableIdent::parse_dotted(bad),
                    Err(Error::InvalidArgument { .. })
                ),
                "{bad}"
            );
        }
        assert!(Namespace::new(["a", ""]).is_err());
        assert_eq!(Namespace::parse_dotted("").unwrap(), Namespace::root());
    }

    #[test]
    fn levels_keep_any_unicode() {
        let ns = Namespace::new(["données", "a.b"]).unwrap();
        assert_eq!(ns.levels()[1], "a.b");
        let child = ns.child("日本").unwrap();
        assert_eq!(child.levels().len(), 3);
        assert_eq!(child.parent(), Some(ns));
    }
}

//! Catalog configuration a user already has: PyIceberg's `.pyiceberg.yaml` and its
//! `PYICEBERG_CATALOG__<NAME>__<KEY>` environment variables, read by PyIceberg's own rules, so
//! a catalog name means the same catalog in icefloe as in PyIceberg.
//!
//! - The file is the first `.pyiceberg.yaml` found in `$PYICEBERG_HOME`, the home directory,
//!   then the working directory; its keys are case-insensitive (lowercased).
//! - `PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID=...` sets `s3.access-key-id` of catalog
//!   `prod`: the variable is lowercased, split at the first two `__`, and in each part `__`
//!   becomes `.` and `_` becomes `-`. Variables win over the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use crate::error::{Error, Result};

/// The file PyIceberg reads.
pub const PYICEBERG_YAML: &str = ".pyiceberg.yaml";

/// The properties of catalog `name` (case-insensitive) from PyIceberg's configuration in this
/// process's environment; `None` when neither the file nor a variable names it.
///
/// Errors: [`Error::Corrupt`] naming the file when it is not YAML or not shaped as PyIceberg's.
pub fn pyiceberg_catalog(name: &str) -> Result<Option<BTreeMap<String, String>>> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dirs = [
        std::env::var_os("PYICEBERG_HOME").map(PathBuf::from),
        home,
        std::env::current_dir().ok(),
    ];
    let file = dirs
        .into_iter()
        .flatten()
        .map(|d| d.join(PYICEBERG_YAML))
        .find(|p| p.is_file());
    let text = match &file {
        Some(path) => Some((
            path.as_path(),
            std::fs::read_to_string(path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: Box::new(e),
            })?,
        )),
        None => None,
    };
    catalog_properties(
        name,
        text.as_ref().map(|(p, t)| (*p, t.as_str())),
        std::env::vars(),
    )
}

/// [`pyiceberg_catalog`] from a file's text (and its path, for errors) and variables.
pub fn catalog_properties(
    name: &str,
    file: Option<(&Path, &str)>,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Option<BTreeMap<String, String>>> {
    let wanted = name.to_lowercase();
    let mut found: Option<BTreeMap<String, String>> = None;
    if let Some((path, text)) = file {
        let corrupt = |reason: String| Error::corrupt(path.display().to_string(), reason);
        let docs = YamlLoader::load_from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if let Some(Yaml::Hash(root)) = docs.first() {
            let catalogs = root.iter().find(|(k, _)| {
                k.as_str()
                    .is_some_and(|k| k.eq_ignore_ascii_case("catalog"))
            });
            match catalogs.map(|(_, v)| v) {
                None => {}
                Some(Yaml::Hash(catalogs)) => {
                    for (k, v) in catalogs {
                        if k.as_str().is_none_or(|k| k.to_lowercase() != wanted) {
                            continue;
                        }
                        let Yaml::Hash(entries) = v else {
                            return Err(corrupt(format!("catalog.{wanted} must be a mapping")));
                        };
                        let mut properties = BTreeMap::new();
                        for (key, value) in entries {
                            let (Some(key), Some(value)) = (key.as_str(), scalar(value)) else {
                                return Err(corrupt(format!(
                                    "catalog.{wanted}: every key must be text and every value a \
                                     scalar"
                                )));
                            };
                            properties.insert(key.to_lowercase(), value);
                        }
                        found = Some(properties);
                    }
                }
                Some(_) => return Err(corrupt("`catalog` must be a mapping".into())),
            }
        }
    }
    let prefix = format!("pyiceberg_catalog__{wanted}__");
    for (var, value) in vars {
        let lower = var.to_lowercase();
        let Some(key) = lower.strip_prefix(&prefix) else {
            continue;
        };
        let key = key.replace("__", ".").replace('_', "-");
        found.get_or_insert_with(BTreeMap::new).insert(key, value);
    }
    Ok(found)
}

/// A scalar YAML value as PyIceberg's strictyaml reads it: text.
fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
catalog:
  prod:
    type: rest
    uri: https://catalog.example.com
    warehouse: lake
    credential: id:secret
    s3.endpoint: http://127.0.0.1:9000
    S3.Region: eu-west-1
  Local:
    type: sql
    uri: sqlite:////tmp/catalog.db
";

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn catalogs_are_read_as_pyiceberg_reads_them() {
        let path = Path::new("/home/u/.pyiceberg.yaml");
        let prod = catalog_properties("PROD", Some((path, FILE)), vars(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(prod["type"], "rest");
        assert_eq!(prod["uri"], "https://catalog.example.com");
        assert_eq!(prod["s3.endpoint"], "http://127.0.0.1:9000");
        assert_eq!(prod["s3.region"], "eu-west-1", "keys are lowercased");
        let local = catalog_properties("local", Some((path, FILE)), vars(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(local["uri"], "sqlite:////tmp/catalog.db");
        assert!(
            catalog_properties("other", Some((path, FILE)), vars(&[]))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn variables_win_and_name_keys_as_pyiceberg_does() {
        let path = Path::new("/home/u/.pyiceberg.yaml");
        let env = vars(&[
            ("PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID", "AKIA"),
            ("PYICEBERG_CATALOG__PROD__URI", "http://override"),
            ("PYICEBERG_CATALOG__NEW__TYPE", "rest"),
            ("PYICEBERG_HOME", "/x"),
        ]);
        let prod = catalog_properties("prod", Some((path, FILE)), env.clone())
            .unwrap()
            .unwrap();
        assert_eq!(prod["s3.access-key-id"], "AKIA");
        assert_eq!(prod["uri"], "http://override");
        let new = catalog_properties("new", None, env).unwrap().unwrap();
        assert_eq!(new["type"], "rest");
    }

    #[test]
    fn a_broken_file_is_corrupt_naming_it() {
        let path = Path::new("/home/u/.pyiceberg.yaml");
        let err =
            catalog_properties("prod", Some((path, "catalog: [unclosed")), vars(&[])).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(".pyiceberg.yaml"), "{err}");
        let err = catalog_properties("prod", Some((path, "catalog:\n  prod: 3\n")), vars(&[]))
            .unwrap_err();
        assert!(err.to_string().contains("catalog.prod"), "{err}");
    }
}

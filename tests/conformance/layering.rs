//! The layers of `src/` form the order ARCHITECTURE.md draws: every `crate::<module>` path in
//! a module's code (comments and test files aside) names a module below it. A new import
//! against the order fails here, naming the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first: each may use only the ones before it.
const LAYERS: &[&str] = &[
    "error",
    "spec",
    "io",
    "to_arrow",
    "table",
    "expr",
    "scan",
    "catalog",
    "transaction",
    "commit",
    "write",
    "dml",
    "maintenance",
    "metadata_tables",
    "statistics",
    "provider",
    "session",
    "sql",
    "distributed",
    "cli",
    "fuzzing",
];

/// The source root, found at run time (a test binary may outlive a moved checkout).
fn src() -> PathBuf {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    Path::new(&root).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether a file holds only tests (they may use anything).
fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with("_tests.rs") || name == "tests.rs" || name == "test_support.rs"
}

/// The top-level module a file belongs to (`None`: the crate root or the binary).
fn module_of(src: &Path, path: &Path) -> Option<String> {
    let first = path.strip_prefix(src).ok()?.components().next()?;
    let name = first
        .as_os_str()
        .to_str()?
        .trim_end_matches(".rs")
        .to_string();
    (name != "lib" && name != "bin").then_some(name)
}

/// The module an item re-exported at the crate root comes from (`crate::Table`).
fn root_item_module(item: &str) -> Option<&'static str> {
    Some(match item {
        "Error" | "Result" => "error",
        "FileIO" | "Relocation" => "io",
        "Table" | "TableOptions" | "TableCreation" => "table",
        "WriteTarget" => "transaction",
        "IcebergTableProvider" => "provider",
        _ => return None,
    })
}

/// Every `crate::<module>` a line of code names (its comment cut off), `crate::{a, b::c}`
/// groups and items re-exported at the crate root included.
fn named_modules(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or_default();
    fn first_segment(path: &str) -> Option<&str> {
        let path = path.trim();
        let end = path
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(path.len());
        let segment = &path[..end];
        match segment.starts_with(char::is_uppercase) {
            true => root_item_module(segment),
            false => (!segment.is_empty()).then_some(segment),
        }
    }
    let mut named = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `icefloe_crate::` or `$crate::` are not paths of this crate.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or_default();
                named.extend(group.split(',').filter_map(first_segment));
            }
            None => named.extend(first_segment(rest)),
        }
    }
    named
}

#[test]
fn every_import_goes_down_the_layers() {
    let src = src();
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let (mut checked, mut against) = (0, Vec::new());
    for path in files.iter().filter(|p| !is_test_file(p)) {
        let Some(module) = module_of(&src, path) else {
            continue;
        };
        let Some(&own) = rank.get(module.as_str()) else {
            against.push(format!(
                "{}: module '{module}' is not in LAYERS (add it where it belongs)",
                path.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).expect("source");
        for (n, line) in text.lines().enumerate() {
            for used in named_modules(line) {
                checked += 1;
                match rank.get(used) {
                    Some(&r) if r > own => against.push(format!(
                        "{}:{}: {module} uses crate::{used}, a layer above it",
                        path.display(),
                        n + 1
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(
        checked > 300,
        "only {checked} crate paths found: is src/ read?"
    );
    assert!(against.is_empty(), "{}", against.join("\n"));
}

#[test]
fn the_parser_of_paths_finds_what_it_should() {
    assert_eq!(
        named_modules("use crate::table::{Table, locate}; // crate::cli"),
        ["table"]
    );
    assert_eq!(named_modules("let x = crate::io::now_ms() + 1;"), ["io"]);
    assert!(named_modules("/// see [`crate::sql`]").is_empty());
    assert!(named_modules("$crate::spec::x").is_empty());
    assert_eq!(
        named_modules("use crate::{Error, cli::args, Table};"),
        ["error", "cli", "table"]
    );
}

//! Tab completion for the shell: SQL keywords, namespaces, tables (`ns.` completes the tables
//! of `ns`) and the columns of the tables the line names (`t.` completes the columns of `t`).
//!
//! The names come from a snapshot of the session's default catalog ([`Words`]), taken in the
//! background when the shell starts and after each statement, so that completing never waits
//! for a catalog or a metadata file.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Keywords offered for completion: the statements and clauses icefloe users type.
const KEYWORDS: &[&str] = &[
    "ALL",
    "ANALYZE",
    "AND",
    "AS",
    "ASC",
    "AVG",
    "BETWEEN",
    "BY",
    "CALL",
    "CASE",
    "CAST",
    "COUNT",
    "CREATE",
    "CROSS",
    "DATE",
    "DESC",
    "DESCRIBE",
    "DISTINCT",
    "DROP",
    "ELSE",
    "END",
    "EXCEPT",
    "EXISTS",
    "EXPLAIN",
    "EXTERNAL",
    "FALSE",
    "FIRST",
    "FOR",
    "FROM",
    "FULL",
    "GROUP",
    "HAVING",
    "ICEBERG",
    "IF",
    "ILIKE",
    "IN",
    "INNER",
    "INSERT",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "LAST",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LOCATION",
    "MAX",
    "MIN",
    "NAMESPACES",
    "NOT",
    "NULL",
    "NULLS",
    "OF",
    "OFFSET",
    "ON",
    "OPTIONS",
    "OR",
    "ORDER",
    "OUTER",
    "PARTITION",
    "PURGE",
    "RIGHT",
    "SCHEMA",
    "SELECT",
    "SET",
    "SHOW",
    "STORED",
    "SUM",
    "SYSTEM_TIME",
    "TABLE",
    "TABLES",
    "TBLPROPERTIES",
    "THEN",
    "TIMESTAMP",
    "TRUE",
    "UNION",
    "USING",
    "VALUES",
    "VERSION",
    "VIEW",
    "WHEN",
    "WHERE",
    "WITH",
];

/// Tables whose columns are looked up for a snapshot (each costs a metadata read the first
/// time).
const MAX_TABLES_WITH_COLUMNS: usize = 200;

/// The names of one snapshot of the session.
#[derive(Debug, Default)]
struct Names {
    namespaces: Vec<String>,
    /// (namespace, table), sorted.
    tables: Vec<(String, String)>,
    /// Columns by table name as written: `ns.t`, and `t` for tables of the default schema.
    columns: BTreeMap<String, Vec<String>>,
    /// The default schema.
    default_schema: String,
}

/// The names completion offers, shared between the shell and its helper.
#[derive(Debug, Clone, Default)]
pub(crate) struct Words {
    names: Arc<RwLock<Names>>,
}

impl Words {
    /// Takes a new snapshot of `ctx`'s names on a task of its own.
    pub(crate) fn refresh_in_background(&self, ctx: &SessionContext) {
        let (ctx, words) = (ctx.clone(), self.clone());
        tokio::spawn(async move {
            let names = snapshot(&ctx).await;
            *words.names.write().unwrap_or_else(|e| e.into_inner()) = names;
        });
    }

    /// The completions of `word` (the text before the cursor back to a separator) in `line`.
    fn candidates(&self, line: &str, word: &str) -> Vec<String> {
        let names = self.names.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        if let Some((qualifier, partial)) = word.rsplit_once('.') {
            let qualifier_lower = qualifier.to_lowercase();
            for (namespace, table) in &names.tables {
                if *namespace == qualifier_lower && starts_with(table, partial) {
                    out.push(format!("{qualifier}.{table}"));
                }
            }
            if let Some(columns) = names.columns.get(&qualifier_lower) {
                out.extend(
                    columns
                        .iter()
                        .filter(|c| starts_with(c, partial))
                        .map(|c| format!("{qualifier}.{c}")),
                );
            }
        } else if !word.is_empty() {
            let upper = word.chars().next().is_some_and(char::is_uppercase);
            out.extend(
                KEYWORDS
                    .iter()
                    .filter(|k| starts_with(k, word))
                    .map(|k| match upper {
                        true => k.to_string(),
                        false => k.to_lowercase(),
                    }),
            );
            out.extend(
                names
                    .namespaces
                    .iter()
                    .filter(|n| starts_with(n, word))
                    .cloned(),
            );
            out.extend(
                names
                    .tables
                    .iter()
                    .filter(|(ns, t)| *ns == names.default_schema && starts_with(t, word))
                    .map(|(_, t)| t.clone()),
            );
            for mentioned in identifiers(line) {
                if let Some(columns) = names.columns.get(&mentioned) {
                    out.extend(columns.iter().filter(|c| starts_with(c, word)).cloned());
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

fn starts_with(candidate: &str, prefix: &str) -> bool {
    candidate.len() >= prefix.len()
        && candidate.is_char_boundary(prefix.len())
        && candidate[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.'
}

/// The dotted names of `line`, lower-cased (as SQL reads them unquoted).
fn identifiers(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split(|c: char| !is_word_char(c))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The names of `ctx`'s default catalog now; tables that fail to load are left out.
async fn snapshot(ctx: &SessionContext) -> Names {
    let state = ctx.state();
    let options = &state.config().options().catalog;
    let (default_catalog, default_schema) = (
        options.default_catalog.clone(),
        options.default_schema.clone(),
    );
    let mut names = Names {
        default_schema: default_schema.clone(),
        ..Names::default()
    };
    let Some(catalog) = ctx.catalog(&default_catalog) else {
        return names;
    };
    for namespace in catalog.schema_names() {
        if namespace == "information_schema" {
            continue;
        }
        if let Some(schema) = catalog.schema(&namespace) {
            for table in schema.table_names() {
                names.tables.push((namespace.clone(), table));
            }
        }
        names.namespaces.push(namespace);
    }
    names.tables.sort();
    let wanted: Vec<(String, String)> = names
        .tables
        .iter()
        .take(MAX_TABLES_WITH_COLUMNS)
        .cloned()
        .collect();
    let lookups = wanted.into_iter().map(|(namespace, table)| {
        let ctx = ctx.clone();
        let bare = (namespace == default_schema).then(|| table.clone());
        async move {
            let reference = TableReference::partial(namespace.as_str(), table.as_str());
            let provider = ctx.table_provider(reference).await.ok()?;
            let columns: Vec<String> = provider
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            Some((format!("{namespace}.{table}"), bare, columns))
        }
    });
    let found: Vec<_> = futures::stream::iter(lookups)
        .buffer_unordered(16)
        .collect()
        .await;
    for (key, bare, columns) in found.into_iter().flatten() {
        if let Some(bare) = bare {
            names.columns.insert(bare, columns.clone());
        }
        names.columns.insert(key.to_lowercase(), columns);
    }
    names
}

/// The shell's rustyline helper: completion only.
pub(crate) struct Completion {
    words: Words,
}

impl Completion {
    /// Completion from `words`.
    pub(crate) fn new(words: Words) -> Self {
        Self { words }
    }
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !is_word_char(*c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let candidates = self
            .words
            .candidates(line, &before[start..])
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, candidates))
    }
}

impl Hinter for Completion {
    type Hint = String;
}

impl Highlighter for Completion {}

impl Validator for Completion {}

impl Helper for Completion {}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Words {
        let names = Names {
            namespaces: vec!["db".into(), "public".into()],
            tables: vec![
                ("db".into(), "orders".into()),
                ("db".into(), "order_items".into()),
                ("public".into(), "events".into()),
            ],
            columns: [
                (
                    "db.orders".to_string(),
                    vec!["order_id".into(), "amount".into()],
                ),
                ("events".to_string(), vec!["event_ts".into()]),
                ("public.events".to_string(), vec!["event_ts".into()]),
            ]
            .into_iter()
            .collect(),
            default_schema: "public".into(),
        };
        Words {
            names: Arc::new(RwLock::new(names)),
        }
    }

    #[test]
    fn keywords_in_the_case_typed() {
        let w = words();
        assert_eq!(w.candidates("SEL", "SEL"), vec!["SELECT"]);
        assert_eq!(w.candidates("sel", "sel"), vec!["select"]);
        assert!(w.candidates("", "").is_empty());
    }

    #[test]
    fn tables_of_a_namespace_and_columns_of_a_table() {
        let w = words();
        assert_eq!(
            w.candidates("SELECT * FROM db.ord", "db.ord"),
            vec!["db.order_items", "db.orders"]
        );
        assert_eq!(
            w.candidates("SELECT db.orders.am", "db.orders.am"),
            vec!["db.orders.amount"]
        );
        assert_eq!(w.candidates("SELECT * FROM ev", "ev"), vec!["events"]);
        assert_eq!(
            w.candidates("SELECT * FROM d", "d"),
            vec!["date", "db", "desc", "describe", "distinct", "drop"]
        );
    }

    #[test]
    fn columns_of_the_tables_the_line_names() {
        let w = words();
        assert_eq!(
            w.candidates("SELECT ord FROM db.orders", "ord"),
            vec!["order", "order_id"]
        );
        assert_eq!(
            w.candidates("SELECT event FROM events", "event"),
            vec!["event_ts", "events"]
        );
        assert!(w.candidates("SELECT amo FROM events", "amo").is_empty());
    }
}

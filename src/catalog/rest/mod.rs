//! [`RestCatalog`]: the Iceberg REST catalog protocol (`open-api/rest-catalog-open-api.yaml`)
//! behind the [`Catalog`] trait (feature `rest`).
//!
//! - `GET /v1/config` first: the server's `defaults` under the client's properties, its
//!   `overrides` over them (`prefix`, `uri`, storage properties), and the `endpoints` it serves
//!   (HEAD requests are used only where it lists them).
//! - Namespaces (multi-level, joined by the unit separator 0x1F in paths) and tables, with
//!   paging; tables load with `snapshots=all` (`refs` with `snapshot-loading-mode=refs`, for
//!   reads only).
//! - Commits are `POST .../tables/{t}` with the requirements and updates as JSON; `POST
//!   .../transactions/commit` when a change spans tables ([`RestCatalog::commit_transaction`]).
//!   409 is [`Error::CommitConflict`] (the transaction retries it); a 5xx, a timeout or a lost
//!   answer on a commit is [`Error::CommitStateUnknown`] (the commit may have happened).
//! - Authentication: a `token`, or OAuth2 client credentials (`credential`,
//!   `oauth2-server-uri`, `scope`) refreshed before they expire. The client asks for vended
//!   credentials (`X-Iceberg-Access-Delegation`): the `config` and `storage-credentials` of a
//!   loaded table reach its object store (see [`crate::io::storage`]); S3 credentials that expire
//!   are renewed from `GET .../tables/{t}/credentials` (a load of the table where the server
//!   does not list that endpoint) while the table is in use.

mod client;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Catalog, Namespace, TableIdent};
use crate::error::{Error, Result};
use crate::io::storage::CredentialRefresh;
use crate::io::{FileIO, StorageProperties};
use crate::spec::{TableMetadata, TableRequirement, TableUpdate};
use crate::table::{Table, TableCreation};
use client::{Answer, RestClient, error_message};

/// Characters kept as they are in a path segment (RFC 3986's unreserved ones).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The endpoint of a table's vended credentials (REST spec 1.7+).
const CREDENTIALS_ENDPOINT: &str =
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials";

/// Pages of a listing read at most (a server that never ends a listing is refused).
const MAX_PAGES: usize = 10_000;

/// An Iceberg REST catalog.
pub struct RestCatalog {
    client: Arc<RestClient>,
    /// `/v1` or `/v1/<prefix>`.
    base: String,
    /// The properties in force: the server's defaults, the client's, the server's overrides.
    properties: BTreeMap<String, String>,
    /// The endpoints the server says it serves (`"HEAD /v1/{prefix}/namespaces/{namespace}"`);
    /// `None` when it does not say.
    endpoints: Option<BTreeSet<String>>,
    io: FileIO,
}

impl std::fmt::Debug for RestCatalog {
    /// The catalog's name and address only: its properties hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestCatalog")
            .field("client", &self.client)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// One table change of a multi-table transaction.
#[derive(Debug, Clone)]
pub struct TableChange {
    /// The table.
    pub ident: TableIdent,
    /// What must hold of its current metadata.
    pub requirements: Vec<TableRequirement>,
    /// The changes.
    pub updates: Vec<TableUpdate>,
}

impl RestCatalog {
    /// Connects to the catalog `name` described by `properties` (as PyIceberg's: `uri`,
    /// `warehouse`, `prefix`, `token` or `credential` (+ `oauth2-server-uri`, `scope`),
    /// `header.<name>`, and storage properties such as `s3.endpoint`): asks the server for its
    /// configuration (`GET /v1/config`) and merges it in. Tables are read and written through
    /// `io` (its runtime), with the merged storage properties.
    ///
    /// Errors: [`Error::Catalog`] naming the catalog when the server cannot be reached or
    /// refuses; [`Error::InvalidArgument`] for a property that is not valid.
    pub async fn connect(
        name: &str,
        properties: BTreeMap<String, String>,
        io: FileIO,
    ) -> Result<Self> {
        let client = RestClient::new(name, &properties)?;
        let query: Vec<(&str, String)> = properties
            .get("warehouse")
            .map(|w| ("warehouse", w.clone()))
            .into_iter()
            .collect();
        let answer = client.send(Method::GET, "/v1/config", &query, None).await?;
        if !answer.status.is_success() {
            return Err(Error::Catalog {
                catalog: name.to_string(),
                reason: format!("GET /v1/config: {}", error_message(&answer)),
                source: None,
            });
        }
        let mut merged = text_map(answer.body.get("defaults"));
        merged.extend(properties);
        merged.extend(text_map(answer.body.get("overrides")));
        let endpoints = answer
            .body
            .get("endpoints")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            });
        // The overrides may move the catalog (`uri`) or change how it authenticates.
        let client = match merged.get("uri") != Some(&client.uri) {
            true => RestClient::new(name, &merged)?,
            false => client,
        };
        let base = match merged.get("prefix").map(|p| p.trim_matches('/')) {
            Some(prefix) if !prefix.is_empty() => {
                let segments: Vec<String> = prefix
                    .split('/')
                    .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
                    .collect();
                format!("/v1/{}", segments.join("/"))
            }
            _ => "/v1".to_string(),
        };
        let storage = storage_of(&merged);
        let storage = io.storage().merged(&storage);
        let io = io.with_storage(storage);
        Ok(Self {
            client: Arc::new(client),
            base,
            properties: merged,
            endpoints,
            io,
        })
    }

    /// The properties in force (the server's defaults and overrides merged with the client's).
    /// Secrets are among them: never print them.
    pub fn properties(&self) -> &BTreeMap<String, String> {
        &self.properties
    }

    fn catalog_error(&self, what: &str, answer: &Answer) -> Error {
        Error::Catalog {
            catalog: self.client.name.clone(),
            reason: format!("{what}: {}", error_message(answer)),
            source: None,
        }
    }

    fn namespace_path(&self, namespace: &Namespace) -> String {
        format!("{}/namespaces/{}", self.base, encode_namespace(namespace))
    }

    fn table_path(&self, ident: &TableIdent) -> String {
        format!(
            "{}/tables/{}",
            self.namespace_path(&ident.namespace),
            utf8_percent_encode(&ident.name, SEGMENT)
        )
    }

    fn namespace_label(&self, namespace: &Namespace) -> String {
        format!("namespace {namespace} in catalog {}", self.client.name)
    }

    fn table_label(&self, ident: &TableIdent) -> String {
        format!("table {ident} in catalog {}", self.client.name)
    }

    fn namespace_missing(&self, namespace: &Namespace) -> Error {
        Error::NotFound {
            what: self.namespace_label(namespace),
            source: None,
        }
    }

    fn table_missing(&self, ident: &TableIdent) -> Error {
        Error::NotFound {
            what: self.table_label(ident),
            source: None,
        }
    }

    /// Whether the server lists `endpoint` (`"HEAD /v1/{prefix}/namespaces/{namespace}"`).
    fn serves(&self, endpoint: &str) -> bool {
        self.endpoints
            .as_ref()
            .is_some_and(|list| list.contains(endpoint))
    }

    /// Every page of a listing at `path`, each page's `key` array.
    async fn list_pages(
        &self,
        path: &str,
        query: Vec<(&str, String)>,
        key: &str,
        what: &str,
        not_found: impl Fn() -> Error,
    ) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut query = query.clone();
            if let Some(token) = &token {
                query.push(("pageToken", token.clone()));
            }
            let answer = self.client.send(Method::GET, path, &query, None).await?;
            match answer.status {
                s if s.is_success() => {}
                StatusCode::NOT_FOUND => return Err(not_found()),
                _ => return Err(self.catalog_error(what, &answer)),
            }
            if let Some(page) = answer.body.get(key).and_then(Value::as_array) {
                items.extend(page.iter().cloned());
            }
            token = answer
                .body
                .get("next-page-token")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if token.is_none() {
                return Ok(items);
            }
        }
        Err(Error::Catalog {
            catalog: self.client.name.clone(),
            reason: format!("{what}: the listing did not end after {MAX_PAGES} pages"),
            source: None,
        })
    }

    /// A loaded table from a `LoadTableResult` (or `CommitTableResponse`): its metadata as
    /// the server sent it, read through the catalog's IO with the table's own storage
    /// configuration and vended credentials on top.
    fn table_of(&self, ident: &TableIdent, body: &Value) -> Result<Table> {
        self.table_in(ident, body, false)
    }

    /// [`Self::table_of`]; a `staged` answer (of a `stage-create`) has no metadata location.
    fn table_in(&self, ident: &TableIdent, body: &Value, staged: bool) -> Result<Table> {
        let corrupt = |reason: &str| {
            Error::corrupt(
                format!("the answer for {}", self.table_label(ident)),
                reason.to_string(),
            )
        };
        let location = match (
            body.get("metadata-location").and_then(Value::as_str),
            staged,
        ) {
            (_, true) => "",
            (Some(location), false) => location,
            (None, false) => return Err(corrupt("has no metadata-location")),
        };
        let metadata = body
            .get("metadata")
            .ok_or_else(|| corrupt("has no metadata"))?;
        let bytes = serde_json::to_vec(metadata).map_err(|e| corrupt(&e.to_string()))?;
        let metadata = TableMetadata::parse(&bytes).map_err(|e| e.into_corrupt(location))?;
        let mut storage = text_map(body.get("config"));
        let vended = vended_for(body, &metadata.location);
        let expiring = vended.contains_key("s3.session-token-expires-at-ms");
        storage.extend(vended);
        // Credentials vended for this table are its own: its store is not shared with a table
        // of the same bucket that got others (see `crate::io::storage`).
        if !storage.is_empty() {
            storage.insert(
                crate::io::storage::CREDENTIAL_SCOPE.to_string(),
                metadata.location.clone(),
            );
        }
        let io = match storage.is_empty() {
            true => self.io.clone(),
            false => {
                let mut vended = storage_of(&storage);
                if expiring {
                    vended = vended.with_credential_refresh(
                        self.credential_refresh(ident, &metadata.location),
                    );
                }
                let table_storage = self.io.storage().merged(&vended);
                self.io.clone().with_storage(table_storage)
            }
        };
        Ok(Table::from_parts(
            io,
            location.to_string(),
            Arc::new(metadata),
        ))
    }

    /// Where the store of `ident` (at `location`) gets new credentials when the vended ones
    /// expire: `GET .../tables/{t}/credentials` where the server lists that endpoint, else a
    /// load of the table (`snapshots=refs`), taking the credentials for `location` either way.
    fn credential_refresh(&self, ident: &TableIdent, location: &str) -> CredentialRefresh {
        let client = Arc::clone(&self.client);
        let endpoint = self.serves(CREDENTIALS_ENDPOINT);
        let path = self.table_path(ident);
        let label = self.table_label(ident);
        let location = location.to_string();
        CredentialRefresh::new(move || {
            let (client, path, label, location) = (
                Arc::clone(&client),
                path.clone(),
                label.clone(),
                location.clone(),
            );
            Box::pin(async move {
                let answer = match endpoint {
                    true => {
                        let path = format!("{path}/credentials");
                        client.send(Method::GET, &path, &[], None).await?
                    }
                    false => {
                        let query = [("snapshots", "refs".to_string())];
                        client.send(Method::GET, &path, &query, None).await?
                    }
                };
                if !answer.status.is_success() {
                    return Err(Error::Catalog {
                        catalog: client.name.clone(),
                        reason: format!("new credentials for {label}: {}", error_message(&answer)),
                        source: None,
                    });
                }
                let mut config = match endpoint {
                    true => BTreeMap::new(),
                    false => text_map(answer.body.get("config")),
                };
                config.extend(vended_for(&answer.body, &location));
                Ok(storage_of(&config))
            })
        })
    }

    /// `GET .../tables/{t}?snapshots=<snapshots>`.
    async fn load(&self, ident: &TableIdent, snapshots: &str) -> Result<Table> {
        let query = [("snapshots", snapshots.to_string())];
        let answer = self
            .client
            .send(Method::GET, &self.table_path(ident), &query, None)
            .await?;
        match answer.status {
            s if s.is_success() => self.table_of(ident, &answer.body),
            StatusCode::NOT_FOUND => Err(self.table_missing(ident)),
            _ => Err(self.catalog_error(&format!("loading table {ident}"), &answer)),
        }
    }

    /// Commits changes to several tables at once (`POST /v1/{prefix}/transactions/commit`):
    /// all of them or none. Errors as [`Catalog::commit_table`]'s.
    pub async fn commit_transaction(&self, changes: &[TableChange]) -> Result<()> {
        let body = json!({
            "table-changes": changes
                .iter()
                .map(|c| commit_request(&c.ident, &c.requirements, &c.updates))
                .collect::<Vec<_>>(),
        });
        let path = format!("{}/transactions/commit", self.base);
        let label = changes
            .iter()
            .map(|c| c.ident.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let answer = self.commit_send(&path, &body, &label).await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            _ => Err(self.commit_error(&label, &answer)),
        }
    }

    /// A commit's request; an answer that never came (or a 5xx) leaves the outcome unknown.
    async fn commit_send(&self, path: &str, body: &Value, label: &str) -> Result<Answer> {
        let answer = match self.client.send(Method::POST, path, &[], Some(body)).await {
            Ok(answer) => answer,
            Err(e) => {
                return Err(Error::CommitStateUnknown {
                    table: label.to_string(),
                    reason: format!("the catalog {} did not answer the commit", self.client.name),
                    source: Some(Box::new(e)),
                });
            }
        };
        if answer.status.is_server_error() {
            return Err(Error::CommitStateUnknown {
                table: label.to_string(),
                reason: format!(
                    "the catalog {} answered the commit with {}",
                    self.client.name,
                    error_message(&answer)
                ),
                source: None,
            });
        }
        Ok(answer)
    }

    fn commit_error(&self, label: &str, answer: &Answer) -> Error {
        match answer.status {
            StatusCode::CONFLICT => Error::CommitConflict {
                table: label.to_string(),
                reason: error_message(answer),
            },
            StatusCode::NOT_FOUND => Error::NotFound {
                what: format!(
                    "{label} in catalog {} ({})",
                    self.client.name,
                    error_message(answer)
                ),
                source: None,
            },
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => {
                Error::invalid(format_args!("commit to {label}"), error_message(answer))
            }
            _ => self.catalog_error(&format!("commit to {label}"), answer),
        }
    }

    /// `exists` through `HEAD` where the server lists it, else through `GET`.
    async fn exists(&self, path: &str, head_endpoint: &str) -> Result<bool> {
        let method = match self.serves(head_endpoint) {
            true => Method::HEAD,
            false => Method::GET,
        };
        let answer = self.client.send(method, path, &[], None).await?;
        match answer.status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.catalog_error(&format!("checking {path}"), &answer)),
        }
    }
}

/// The properties of a JSON object of an answer, as text (servers send strings; numbers and
/// booleans are taken, anything else left out); none for a missing object.
/// The `config` of the answer's `storage-credentials` entry whose prefix is the longest one
/// `location` starts with (none: empty).
fn vended_for(body: &Value, location: &str) -> BTreeMap<String, String> {
    let Some(credentials) = body.get("storage-credentials").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    credentials
        .iter()
        .filter_map(|c| {
            let prefix = c.get("prefix")?.as_str()?;
            location
                .starts_with(prefix)
                .then_some((prefix.len(), c.get("config")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, config)| text_map(config))
        .unwrap_or_default()
}

fn text_map(object: Option<&Value>) -> BTreeMap<String, String> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    object
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), text(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The storage properties among a catalog's or table's properties.
fn storage_of(properties: &BTreeMap<String, String>) -> StorageProperties {
    StorageProperties::from_pairs(
        properties
            .iter()
            .filter(|(k, _)| crate::io::storage::is_store_key(k))
            .map(|(k, v)| (k.clone(), v.clone())),
    )
}

/// A namespace in a path: its levels joined by 0x1F, percent-encoded.
fn encode_namespace(namespace: &Namespace) -> String {
    utf8_percent_encode(&namespace.levels().join("\u{1f}"), SEGMENT).to_string()
}

/// A namespace of a REST answer (`["a", "b"]`).
fn namespace_of(v: &Value) -> Option<Namespace> {
    let levels: Option<Vec<String>> = v
        .as_array()?
        .iter()
        .map(|l| l.as_str().map(str::to_string))
        .collect();
    Namespace::new(levels?).ok()
}

/// A `CommitTableRequest`.
fn commit_request(
    ident: &TableIdent,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Value {
    json!({
        "identifier": {"namespace": ident.namespace.levels(), "name": ident.name},
        "requirements": requirements.iter().map(TableRequirement::to_json).collect::<Vec<_>>(),
        "updates": updates.iter().map(TableUpdate::to_json).collect::<Vec<_>>(),
    })
}

/// A `CreateTableRequest` for `creation` (the server assigns ids and the location).
fn create_request(name: &str, creation: &TableCreation, stage: bool) -> Result<Value> {
    // The metadata a creation makes, for its schema, spec, order and properties; its location
    // is a stand-in the request does not carry.
    let metadata = creation.metadata("rest://pending")?.to_json();
    let first = |list: &str, current: &str, id: &str| -> Value {
        let wanted = metadata.get(current).cloned().unwrap_or(Value::Null);
        metadata
            .get(list)
            .and_then(Value::as_array)
            .and_then(|items| {
                items
                    .iter()
                    .find(|i| i.get(id) == Some(&wanted))
                    .or(items.first())
            })
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut properties = metadata
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let (Some(props), Some(version)) = (
        properties.as_object_mut(),
        metadata.get("format-version").and_then(Value::as_i64),
    ) {
        props.insert("format-version".into(), json!(version.to_string()));
    }
    Ok(json!({
        "name": name,
        "schema": first("schemas", "current-schema-id", "schema-id"),
        "partition-spec": first("partition-specs", "default-spec-id", "spec-id"),
        "write-order": first("sort-orders", "default-sort-order-id", "order-id"),
        "stage-create": stage,
        "properties": properties,
    }))
}

#[async_trait]
impl Catalog for RestCatalog {
    fn name(&self) -> &str {
        &self.client.name
    }

    fn io(&self) -> &FileIO {
        &self.io
    }

    async fn list_namespaces(&self, parent: &Namespace) -> Result<Vec<Namespace>> {
        let mut query = Vec::new();
        if !parent.is_root() {
            query.push(("parent", parent.levels().join("\u{1f}")));
        }
        let path = format!("{}/namespaces", self.base);
        let items = self
            .list_pages(&path, query, "namespaces", "listing namespaces", || {
                self.namespace_missing(parent)
            })
            .await?;
        let mut namespaces: Vec<Namespace> = items.iter().filter_map(namespace_of).collect();
        // A server that ignores `parent` lists every namespace: keep the children only.
        namespaces.retain(|n| {
            n.parent().as_ref() == Some(parent) || (parent.is_root() && n.levels().len() == 1)
        });
        namespaces.sort();
        namespaces.dedup();
        Ok(namespaces)
    }

    async fn namespace_exists(&self, namespace: &Namespace) -> Result<bool> {
        if namespace.is_root() {
            return Ok(true);
        }
        self.exists(
            &self.namespace_path(namespace),
            "HEAD /v1/{prefix}/namespaces/{namespace}",
        )
        .await
    }

    async fn create_namespace(
        &self,
        namespace: &Namespace,
        properties: BTreeMap<String, String>,
    ) -> Result<()> {
        let body = json!({"namespace": namespace.levels(), "properties": properties});
        let path = format!("{}/namespaces", self.base);
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::CONFLICT => Err(Error::AlreadyExists {
                what: self.namespace_label(namespace),
            }),
            _ => Err(self.catalog_error(&format!("creating namespace {namespace}"), &answer)),
        }
    }

    async fn namespace_properties(
        &self,
        namespace: &Namespace,
    ) -> Result<BTreeMap<String, String>> {
        let answer = self
            .client
            .send(Method::GET, &self.namespace_path(namespace), &[], None)
            .await?;
        match answer.status {
            s if s.is_success() => Ok(text_map(answer.body.get("properties"))),
            StatusCode::NOT_FOUND => Err(self.namespace_missing(namespace)),
            _ => Err(self.catalog_error(&format!("loading namespace {namespace}"), &answer)),
        }
    }

    async fn update_namespace_properties(
        &self,
        namespace: &Namespace,
        removals: &[String],
        updates: BTreeMap<String, String>,
    ) -> Result<()> {
        if let Some(both) = removals.iter().find(|k| updates.contains_key(*k)) {
            return Err(Error::invalid(
                format_args!("property '{both}' of {}", self.namespace_label(namespace)),
                "is both removed and set",
            ));
        }
        let body = json!({"removals": removals, "updates": updates});
        let path = format!("{}/properties", self.namespace_path(namespace));
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(self.namespace_missing(namespace)),
            _ => Err(self.catalog_error(
                &format!("updating the properties of namespace {namespace}"),
                &answer,
            )),
        }
    }

    async fn drop_namespace(&self, namespace: &Namespace) -> Result<()> {
        let answer = self
            .client
            .send(Method::DELETE, &self.namespace_path(namespace), &[], None)
            .await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(self.namespace_missing(namespace)),
            StatusCode::CONFLICT => Err(Error::invalid(
                self.namespace_label(namespace),
                format_args!("is not empty ({})", error_message(&answer)),
            )),
            _ => Err(self.catalog_error(&format!("dropping namespace {namespace}"), &answer)),
        }
    }

    async fn list_tables(&self, namespace: &Namespace) -> Result<Vec<TableIdent>> {
        let path = format!("{}/tables", self.namespace_path(namespace));
        let items = self
            .list_pages(&path, Vec::new(), "identifiers", "listing tables", || {
                self.namespace_missing(namespace)
            })
            .await?;
        let mut tables: Vec<TableIdent> = items
            .iter()
            .filter_map(|i| {
                let ns = namespace_of(i.get("namespace")?)?;
                TableIdent::new(ns, i.get("name")?.as_str()?).ok()
            })
            .collect();
        tables.sort();
        tables.dedup();
        Ok(tables)
    }

    async fn table_exists(&self, ident: &TableIdent) -> Result<bool> {
        self.exists(
            &self.table_path(ident),
            "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        )
        .await
    }

    /// Loads with `snapshots=refs` when the catalog's `snapshot-loading-mode` (Java's
    /// property) is `refs`: only the snapshots branches and tags point at come, which is all a
    /// query of the current state or a ref needs, and less to send for a long history. Time
    /// travel to another snapshot then fails to find it; writes and maintenance always load
    /// every snapshot ([`Catalog::load_table_for_write`]).
    async fn load_table(&self, ident: &TableIdent) -> Result<Table> {
        let refs_only = self
            .properties
            .get("snapshot-loading-mode")
            .is_some_and(|mode| mode.eq_ignore_ascii_case("refs"));
        self.load(ident, if refs_only { "refs" } else { "all" })
            .await
    }

    /// Always the whole table: a commit builds on every snapshot, also when reads load the
    /// refs' snapshots only (`known` may be such a read).
    async fn refresh(&self, ident: &TableIdent, known: &Table) -> Result<Option<Table>> {
        let current = self.load(ident, "all").await?;
        let same = current.metadata_location() == known.metadata_location()
            && current.metadata().snapshots.len() == known.metadata().snapshots.len();
        Ok((!same).then_some(current))
    }

    async fn load_table_for_write(&self, ident: &TableIdent) -> Result<Table> {
        let table = self.load(ident, "all").await?;
        table.ensure_writable()?;
        Ok(table)
    }

    async fn create_table(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let body = create_request(&ident.name, creation, false)?;
        let path = format!("{}/tables", self.namespace_path(&ident.namespace));
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status {
            s if s.is_success() => self.table_of(ident, &answer.body),
            StatusCode::CONFLICT => Err(Error::AlreadyExists {
                what: self.table_label(ident),
            }),
            StatusCode::NOT_FOUND => Err(self.namespace_missing(&ident.namespace)),
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => Err(Error::invalid(
                format_args!("creating {}", self.table_label(ident)),
                error_message(&answer),
            )),
            _ => Err(self.catalog_error(&format!("creating table {ident}"), &answer)),
        }
    }

    /// `POST .../tables` with `stage-create`: the server names the location (and may vend
    /// credentials for it) and creates nothing. A server that refuses to stage (400, 406,
    /// 422, 501: lakana-server says "not implemented" with a 400) is
    /// [`Error::Unsupported`], so that callers fall back to creating first.
    async fn stage_create(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let body = create_request(&ident.name, creation, true)?;
        let path = format!("{}/tables", self.namespace_path(&ident.namespace));
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status.as_u16() {
            200..=299 => self.table_in(ident, &answer.body, true),
            409 => Err(Error::AlreadyExists {
                what: self.table_label(ident),
            }),
            404 => Err(self.namespace_missing(&ident.namespace)),
            400 | 406 | 422 | 501 => Err(Error::Unsupported(format!(
                "staging the creation of {}: {}",
                self.table_label(ident),
                error_message(&answer)
            ))),
            _ => Err(self.catalog_error(&format!("staging table {ident}"), &answer)),
        }
    }

    async fn register_table(&self, ident: &TableIdent, metadata_location: &str) -> Result<Table> {
        let body = json!({"name": ident.name, "metadata-location": metadata_location});
        let path = format!("{}/register", self.namespace_path(&ident.namespace));
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status {
            s if s.is_success() => self.table_of(ident, &answer.body),
            StatusCode::CONFLICT => Err(Error::AlreadyExists {
                what: self.table_label(ident),
            }),
            StatusCode::NOT_FOUND => Err(Error::NotFound {
                what: format!(
                    "{} (or the register endpoint: {})",
                    self.namespace_label(&ident.namespace),
                    error_message(&answer)
                ),
                source: None,
            }),
            _ => Err(self.catalog_error(&format!("registering table {ident}"), &answer)),
        }
    }

    /// Drops the table; with `purge` the server is asked to delete its files
    /// (`purgeRequested=true`; when it does so is the server's to decide).
    async fn drop_table(&self, ident: &TableIdent, purge: bool) -> Result<()> {
        let query = [("purgeRequested", purge.to_string())];
        let answer = self
            .client
            .send(Method::DELETE, &self.table_path(ident), &query, None)
            .await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(self.table_missing(ident)),
            _ => Err(self.catalog_error(&format!("dropping table {ident}"), &answer)),
        }
    }

    async fn rename_table(&self, from: &TableIdent, to: &TableIdent) -> Result<()> {
        let ident = |t: &TableIdent| json!({"namespace": t.namespace.levels(), "name": t.name});
        let body = json!({"source": ident(from), "destination": ident(to)});
        let path = format!("{}/tables/rename", self.base);
        let answer = self
            .client
            .send(Method::POST, &path, &[], Some(&body))
            .await?;
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(Error::NotFound {
                what: format!(
                    "{} or namespace {} ({})",
                    self.table_label(from),
                    to.namespace,
                    error_message(&answer)
                ),
                source: None,
            }),
            StatusCode::CONFLICT => Err(Error::AlreadyExists {
                what: self.table_label(to),
            }),
            _ => Err(self.catalog_error(&format!("renaming table {from} to {to}"), &answer)),
        }
    }

    async fn commit_table(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table> {
        let body = commit_request(ident, requirements, updates);
        let label = self.table_label(ident);
        let answer = self
            .commit_send(&self.table_path(ident), &body, &label)
            .await?;
        match answer.status {
            s if s.is_success() => self.table_of(ident, &answer.body).map_err(|e| {
                // It was committed; only the answer is bad.
                Error::CommitStateUnknown {
                    table: label.clone(),
                    reason: "the catalog accepted the commit but its answer is not readable".into(),
                    source: Some(Box::new(e)),
                }
            }),
            _ => Err(self.commit_error(&label, &answer)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_joined_by_the_unit_separator_and_encoded() {
        let ns = Namespace::new(["a b", "c/d", "é"]).unwrap();
        assert_eq!(encode_namespace(&ns), "a%20b%1Fc%2Fd%1F%C3%A9");
        assert_eq!(
            namespace_of(&json!(["x", "y"])),
            Some(Namespace::new(["x", "y"]).unwrap())
        );
        assert_eq!(namespace_of(&json!("x")), None);
    }

    #[test]
    fn storage_properties_are_picked_from_a_config() {
        let config: BTreeMap<String, String> = [
            ("s3.endpoint", "http://x"),
            ("uri", "http://catalog"),
            ("credential", "secret"),
            ("adls.sas-token.acct", "t"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let storage = storage_of(&config);
        assert_eq!(storage.get("s3.endpoint"), Some("http://x"));
        assert_eq!(storage.get("adls.sas-token.acct"), Some("t"));
        assert_eq!(storage.get("credential"), None, "catalog secrets stay out");
    }

    #[test]
    fn create_requests_carry_schema_spec_order_and_version() {
        use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
        let arrow = ArrowSchema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("day", DataType::Date32, true),
        ]);
        let creation = TableCreation::from_arrow(Arc::new(arrow))
            .with_partitioning("day(day)")
            .unwrap()
            .with_property("owner", "me");
        let body = create_request("t", &creation, true).unwrap();
        assert_eq!(body["name"], "t");
        assert_eq!(body["stage-create"], true);
        assert_eq!(body["schema"]["fields"][0]["name"], "id");
        assert_eq!(body["partition-spec"]["fields"][0]["transform"], "day");
        assert_eq!(body["properties"]["owner"], "me");
        assert_eq!(body["properties"]["format-version"], "2");
        assert!(body.get("location").is_none());
    }
}

//! Object stores built from a location and its properties: `s3://` and `s3a://` (feature `aws`),
//! `gs://` (`gcp`), `abfss://`, `abfs://`, `wasbs://` and `wasb://` (`azure`).
//!
//! The properties are the ones users already have in PyIceberg and Iceberg Java (`s3.endpoint`,
//! `s3.access-key-id`, `gcs.oauth2.token`, `adls.sas-token.<account>`, ...; see
//! [`StorageProperties`]), on top of the environment as `object_store` reads it (`AWS_*`,
//! `GOOGLE_*`, `AZURE_*`). A catalog passes its own properties, a REST catalog the credentials it
//! vends for a table.
//!
//! One store is built per bucket (or container) and set of properties, and shared by the whole
//! process ([`cloud_store`]). DataFusion finds a store by its URL's scheme and host only, so the
//! store of a set of properties is registered under a URL of its own
//! (`s3://bucket.p1a2b3c4d5e6f7a8b`): two tables of one bucket with different credentials never
//! share a store, and a store an application registers under the plain `s3://bucket` is used as
//! it is.
//!
//! S3 keys given as properties (`s3.access-key-id`, `s3.secret-access-key`,
//! `s3.session-token`: what a REST catalog vends, new with every load of a table) are not part
//! of what picks the store: they are the store's current credentials, and properties that bring
//! newer ones for the same store replace them in place. So a table loaded again with fresh
//! vended credentials keeps its one store (no new store, connection pool and registration per
//! statement), and every request from then on, also of a statement already running, signs with
//! the newest credentials. Credentials that say when they expire
//! (`s3.session-token-expires-at-ms`) and came with a [`CredentialRefresh`] (a REST catalog's,
//! for the table it vended them for) are renewed by the store itself once three quarters of
//! their life has passed, so a statement longer than their life goes on. What does pick the
//! store besides the bucket and the other
//! properties is the credential's scope ([`CREDENTIAL_SCOPE`], set by the REST catalog to the
//! prefix the credentials were vended for): tables whose credentials are scoped to their own
//! locations never share a store.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// A property naming what the credentials among the properties are for (a REST catalog's
/// `storage-credentials` prefix, or the table's location): stores of different scopes are never
/// shared, while a later set of credentials of the same scope replaces the earlier one.
pub const CREDENTIAL_SCOPE: &str = "icefloe.credential-scope";

/// The S3 properties that are credentials: they rotate, and do not pick the store.
const S3_CREDENTIAL_KEYS: [&str; 7] = [
    "s3.access-key-id",
    "s3.secret-access-key",
    "s3.session-token",
    "s3.session-token-expires-at-ms",
    "client.access-key-id",
    "client.secret-access-key",
    "client.session-token",
];

/// Storage configuration: Iceberg FileIO properties (`s3.endpoint`, `s3.region`,
/// `s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`, `s3.path-style-access`,
/// `client.region`, `gcs.oauth2.token`, `gcs.service.host`, `adls.account-key`,
/// `adls.sas-token[.<account>]`, `adls.connection-string[.<account>]`, ...) and, passed through,
/// `object_store`'s own keys (`aws_*`, `google_*`, `azure_*`). Other keys are ignored (a
/// catalog's properties hold many that are not about storage).
///
/// Its `Debug` shows the keys only: values may be secrets.
#[derive(Clone, Default)]
pub struct StorageProperties {
    properties: BTreeMap<String, String>,
    /// A hash of the properties but the S3 credentials: which store they pick.
    shape: u64,
    /// Where newer credentials come from when these expire (a REST catalog's, for the table
    /// it vended them for); not a property, and not compared.
    refresh: Option<CredentialRefresh>,
}

impl PartialEq for StorageProperties {
    fn eq(&self, other: &Self) -> bool {
        self.properties == other.properties
    }
}

impl Eq for StorageProperties {}

/// What a [`CredentialRefresh`] gives: the properties with the newest credentials.
pub(crate) type RefreshFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<StorageProperties>> + Send>>;

/// Fetches newer credentials for a store whose current ones expire (`s3.session-token-expires-at-ms`):
/// a REST catalog's credentials endpoint for the table they were vended for.
#[derive(Clone)]
pub(crate) struct CredentialRefresh(Arc<dyn Fn() -> RefreshFuture + Send + Sync>);

impl CredentialRefresh {
    pub(crate) fn new(fetch: impl Fn() -> RefreshFuture + Send + Sync + 'static) -> Self {
        Self(Arc::new(fetch))
    }
}

impl fmt::Debug for CredentialRefresh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CredentialRefresh(..)")
    }
}

impl fmt::Debug for StorageProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.properties.keys()).finish()
    }
}

impl StorageProperties {
    /// No properties: stores are configured from the environment alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// Properties from `(key, value)` pairs (later pairs win).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let properties: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Self::from_map(properties)
    }

    fn from_map(properties: BTreeMap<String, String>) -> Self {
        let hash = |pairs: &mut dyn Iterator<Item = (&String, &String)>| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            let mut any = false;
            for pair in pairs {
                pair.hash(&mut hasher);
                any = true;
            }
            if any { hasher.finish() } else { 0 }
        };
        let shape = hash(
            &mut properties
                .iter()
                .filter(|(k, _)| !S3_CREDENTIAL_KEYS.contains(&k.as_str())),
        );
        Self {
            properties,
            shape,
            refresh: None,
        }
    }

    /// These properties with `other`'s on top (`other` wins on a shared key, and with its
    /// credential refresh).
    pub fn merged(&self, other: &StorageProperties) -> Self {
        if other.properties.is_empty() && other.refresh.is_none() {
            return self.clone();
        }
        let mut properties = self.properties.clone();
        properties.extend(other.properties.clone());
        let mut merged = Self::from_map(properties);
        merged.refresh = other.refresh.clone().or_else(|| self.refresh.clone());
        merged
    }

    /// These properties, with `refresh` fetching newer credentials when theirs expire.
    pub(crate) fn with_credential_refresh(mut self, refresh: CredentialRefresh) -> Self {
        self.refresh = Some(refresh);
        self
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }

    /// Whether there are no properties.
    pub fn is_empty(&self) -> bool {
        self.properties.is_empty()
    }

    /// Every property, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The storage properties of a session: those set by [`StorageProperties::for_session`],
    /// else none.
    pub fn of_session(config: &datafusion::prelude::SessionConfig) -> Self {
        config
            .get_extension::<StorageProperties>()
            .map(|p| (*p).clone())
            .unwrap_or_default()
    }

    /// `config` with these properties as its sessions' storage properties: every table the
    /// session opens by location (CREATE EXTERNAL TABLE, `iceberg_scan`, the procedures) and
    /// every catalog it opens reaches its store with them.
    pub fn for_session(
        self,
        config: datafusion::prelude::SessionConfig,
    ) -> datafusion::prelude::SessionConfig {
        config.with_extension(Arc::new(self))
    }

    /// A hash of every key and value but the S3 credentials (0 for none): which store these
    /// properties pick (see the module docs).
    pub(crate) fn shape(&self) -> u64 {
        self.shape
    }
}

/// Whether `key` is an Iceberg FileIO property (`s3.*`, `gcs.*`, `adls.*`, `client.*`): about
/// reaching a store, possibly a secret, never a table property.
pub(crate) fn is_file_io_key(key: &str) -> bool {
    ["s3.", "gcs.", "adls.", "client."]
        .iter()
        .any(|prefix| key.starts_with(prefix))
}

/// Whether `key` configures a store: a FileIO property, one of `object_store`'s own keys
/// (`aws_*`, `google_*`, `azure_*`), or [`CREDENTIAL_SCOPE`].
pub(crate) fn is_store_key(key: &str) -> bool {
    key == CREDENTIAL_SCOPE
        || is_file_io_key(key)
        || ["aws_", "google_", "azure_"]
            .iter()
            .any(|prefix| key.starts_with(prefix))
}

/// Whether `key` holds a credential or a secret (keys, tokens, passwords, SAS and connection
/// strings, service account files), as opposed to where and how a store is reached (endpoint,
/// region, path style): what a process may hand on to another only when allowed to.
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
pub(crate) fn is_credential_key(key: &str) -> bool {
    if key == CREDENTIAL_SCOPE {
        return false;
    }
    let key = key.to_ascii_lowercase();
    [
        "secret",
        "token",
        "password",
        "credential",
        "key",
        "sas",
        "connection-string",
        "connection_string",
        "signature",
        "service_account",
        "service-account",
    ]
    .iter()
    .any(|marker| key.contains(marker))
}

/// Whether `scheme` names a store this module builds (whatever the features built in).
pub(crate) fn is_cloud_scheme(scheme: &str) -> bool {
    matches!(
        scheme,
        "s3" | "s3a" | "gs" | "abfss" | "abfs" | "wasbs" | "wasb"
    )
}

/// The store of `store` (`s3://bucket`, `gs://bucket`, `abfss://container@account.host`) for
/// `properties`, built once per process and reused, with the URL DataFusion finds it by; `None`
/// when the scheme is not a cloud store.
///
/// Errors: [`Error::Unsupported`] when icefloe was built without the scheme's feature;
/// [`Error::InvalidArgument`] naming the location for a bad property or location.
pub(crate) fn cloud_store(
    store: &str,
    properties: &StorageProperties,
) -> Result<Option<(ObjectStoreUrl, Arc<dyn ObjectStore>)>> {
    type Cache = Mutex<BTreeMap<(String, u64), Built>>;
    static STORES: LazyLock<Cache> = LazyLock::new(Default::default);

    let Some((scheme, authority)) = store.split_once("://") else {
        return Ok(None);
    };
    if !is_cloud_scheme(scheme) {
        return Ok(None);
    }
    let key = (store.to_string(), properties.shape());
    if let Some(found) = STORES.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        if let Some(rotating) = &found.credentials {
            rotating.update(properties)?;
        }
        return Ok(Some((found.url.clone(), Arc::clone(&found.store))));
    }
    let built = build(scheme, authority, store, properties)?;
    let built = Built {
        url: registry_url(scheme, authority, properties.shape())?,
        store: built.0,
        credentials: built.1,
    };
    let mut stores = STORES.lock().unwrap_or_else(|e| e.into_inner());
    let entry = stores.entry(key).or_insert(built);
    if let Some(rotating) = &entry.credentials {
        rotating.update(properties)?;
    }
    Ok(Some((entry.url.clone(), Arc::clone(&entry.store))))
}

/// A store of the process cache, and its credentials when they rotate.
struct Built {
    url: ObjectStoreUrl,
    store: Arc<dyn ObjectStore>,
    credentials: Option<Arc<RotatingS3Credential>>,
}

/// The S3 credentials given as properties, replaced in place by newer ones (see the module
/// docs), and renewed through the properties' [`CredentialRefresh`] once three quarters of
/// their life (`s3.session-token-expires-at-ms`) has passed: a statement that outlives the
/// credentials it started with goes on with new ones. Its `Debug` shows none of them.
#[derive(Default)]
pub(crate) struct RotatingS3Credential {
    /// The store, for errors.
    store: String,
    #[cfg(feature = "aws")]
    held: std::sync::RwLock<Option<Held>>,
    refresh: std::sync::RwLock<Option<CredentialRefresh>>,
    /// One renewal at a time.
    renewing: tokio::sync::Mutex<()>,
}

/// The current S3 credentials, and when they came and expire (ms since the epoch).
#[cfg(feature = "aws")]
#[derive(Clone)]
struct Held {
    credential: Arc<object_store::aws::AwsCredential>,
    received: i64,
    expires: Option<i64>,
    /// When a renewal was last tried: not again within [`RENEW_PAUSE_MS`].
    tried: Option<i64>,
}

/// How long after a renewal that failed (or brought nothing newer) the next is tried.
#[cfg(feature = "aws")]
const RENEW_PAUSE_MS: i64 = 1_000;

#[cfg(feature = "aws")]
impl Held {
    /// Whether a renewal is due at `now`: past three quarters of the credentials' life.
    fn renewal_due(&self, now: i64) -> bool {
        let Some(expires) = self.expires else {
            return false;
        };
        let due = self.received + (expires - self.received).max(0) * 3 / 4;
        now >= due && self.tried.is_none_or(|t| now >= t + RENEW_PAUSE_MS)
    }
}

#[cfg(feature = "aws")]
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl fmt::Debug for RotatingS3Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RotatingS3Credential(..)")
    }
}

impl RotatingS3Credential {
    #[cfg(feature = "aws")]
    fn new(store: &str) -> Self {
        Self {
            store: store.to_string(),
            ..Self::default()
        }
    }

    /// Takes the credentials of `properties` (and their refresh) unless the current ones
    /// expire later: a table loaded earlier never brings back older credentials. None there
    /// leaves them as they are.
    #[cfg(feature = "aws")]
    fn update(&self, properties: &StorageProperties) -> Result<()> {
        if let Some(refresh) = &properties.refresh {
            *self.refresh.write().unwrap_or_else(|e| e.into_inner()) = Some(refresh.clone());
        }
        let Some(next) = s3_credential(&self.store, properties)? else {
            return Ok(());
        };
        let expires = match properties.get("s3.session-token-expires-at-ms") {
            None => None,
            Some(text) => Some(text.trim().parse::<i64>().map_err(|_| {
                bad_property(
                    &self.store,
                    "s3.session-token-expires-at-ms",
                    "is not a time in milliseconds since the epoch",
                )
            })?),
        };
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        let newer = match held.as_ref() {
            None => true,
            Some(current) if *current.credential == next => false,
            Some(current) => match (current.expires, expires) {
                (Some(current), Some(incoming)) => incoming >= current,
                _ => true,
            },
        };
        if newer {
            *held = Some(Held {
                credential: Arc::new(next),
                received: now_ms(),
                expires,
                tried: None,
            });
        }
        Ok(())
    }

    #[cfg(not(feature = "aws"))]
    fn update(&self, _: &StorageProperties) -> Result<()> {
        Ok(())
    }

    /// The current credentials, and whether their renewal is due now.
    #[cfg(feature = "aws")]
    fn current(&self) -> object_store::Result<(Held, bool)> {
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        let held = held.clone().ok_or_else(|| object_store::Error::Generic {
            store: "S3",
            source: "no credentials were given".into(),
        })?;
        let due = held.renewal_due(now_ms());
        Ok((held, due))
    }
}

#[cfg(feature = "aws")]
#[async_trait::async_trait]
impl object_store::CredentialProvider for RotatingS3Credential {
    type Credential = object_store::aws::AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<Self::Credential>> {
        let (held, due) = self.current()?;
        let refresh = self
            .refresh
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let (true, Some(refresh)) = (due, refresh) else {
            return Ok(held.credential);
        };
        let _one = self.renewing.lock().await;
        // Another request may have renewed them while this one waited.
        let (held, due) = self.current()?;
        if !due {
            return Ok(held.credential);
        }
        if let Some(current) = self
            .held
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            current.tried = Some(now_ms());
        }
        let renewed = match (refresh.0)().await {
            Ok(properties) => self.update(&properties),
            Err(e) => Err(e),
        };
        match renewed {
            Ok(()) => Ok(self.current()?.0.credential),
            // Credentials that have not expired yet still serve.
            Err(_) if held.expires.is_some_and(|at| now_ms() < at) => Ok(held.credential),
            Err(e) => Err(object_store::Error::Generic {
                store: "S3",
                source: format!(
                    "the credentials for {} expired and could not be renewed: {e}",
                    self.store
                )
                .into(),
            }),
        }
    }
}

/// The S3 key pair (and session token) among `properties`; `None` without a key pair.
#[cfg(feature = "aws")]
fn s3_credential(
    store: &str,
    properties: &StorageProperties,
) -> Result<Option<object_store::aws::AwsCredential>> {
    let get = |a: &str, b: &str| properties.get(a).or_else(|| properties.get(b));
    let key_id = get("s3.access-key-id", "client.access-key-id");
    let secret = get("s3.secret-access-key", "client.secret-access-key");
    let token = get("s3.session-token", "client.session-token");
    match (key_id, secret) {
        (Some(key_id), Some(secret)) => Ok(Some(object_store::aws::AwsCredential {
            key_id: key_id.to_string(),
            secret_key: secret.to_string(),
            token: token.map(str::to_string),
        })),
        (None, None) if token.is_none() => Ok(None),
        _ => Err(bad_property(
            store,
            "s3.access-key-id",
            "s3.access-key-id and s3.secret-access-key go together (with s3.session-token, \
             if any)",
        )),
    }
}

/// The URL a built store is registered under: its scheme, and a host made of the bucket (or
/// container and account) and the properties' fingerprint.
fn registry_url(scheme: &str, authority: &str, fingerprint: u64) -> Result<ObjectStoreUrl> {
    let host: String = authority
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' => c,
            _ => '.',
        })
        .collect();
    ObjectStoreUrl::parse(format!("{scheme}://{host}.p{fingerprint:016x}")).map_err(|e| {
        Error::invalid(
            format_args!("location {scheme}://{authority}"),
            format!("is not a store location: {e}"),
        )
    })
}

/// The store, and the credentials that rotate in it (S3 keys given as properties).
type BuiltStore = (Arc<dyn ObjectStore>, Option<Arc<RotatingS3Credential>>);

fn build(
    scheme: &str,
    authority: &str,
    store: &str,
    properties: &StorageProperties,
) -> Result<BuiltStore> {
    match scheme {
        "s3" | "s3a" => s3(store, properties),
        "gs" => Ok((gcs(authority, store, properties)?, None)),
        _ => Ok((azure(scheme, authority, store, properties)?, None)),
    }
}

/// The error of a store whose feature was not built in.
#[allow(dead_code)] // with every feature on
fn not_built(store: &str, feature: &str) -> Error {
    Error::Unsupported(format!(
        "{store}: this build of icefloe has no {feature} object store (build it with the cargo \
         feature `{feature}`, which the icefloe command line has)"
    ))
}

/// An error about the store's configuration, naming the store and the property (never its value).
#[allow(dead_code)] // with no cloud feature on
fn bad_property(store: &str, key: &str, reason: impl fmt::Display) -> Error {
    Error::invalid(format_args!("storage property '{key}' for {store}"), reason)
}

/// An error of `object_store`'s builder for `store` (its messages name keys, not values).
#[allow(dead_code)] // with no cloud feature on
fn build_error(store: &str, e: object_store::Error) -> Error {
    Error::invalid(
        format_args!("object store {store}"),
        format!("cannot be configured: {e}"),
    )
}

/// A boolean property value as Iceberg writes them.
#[allow(dead_code)] // with no cloud feature on
fn boolean(store: &str, key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad_property(store, key, "must be true or false")),
    }
}

/// A duration in seconds (PyIceberg's `s3.connect-timeout`, `s3.request-timeout`: a float) as
/// `object_store` takes it.
#[allow(dead_code)] // with no cloud feature on
fn seconds(store: &str, key: &str, value: &str) -> Result<String> {
    match value.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(format!("{}ms", (s * 1000.0).ceil() as u64)),
        _ => Err(bad_property(
            store,
            key,
            "must be a positive number of seconds",
        )),
    }
}

/// The retry policy of every store: Iceberg Java's `s3.retry.*` properties where given, else
/// its defaults (5 retries, 20 s at most between two), and never retrying for more than a
/// minute, so that an unreachable endpoint fails in bounded time.
#[allow(dead_code)] // with no cloud feature on
fn retry(store: &str, properties: &StorageProperties) -> Result<object_store::RetryConfig> {
    let number = |key: &str, default: u64| -> Result<u64> {
        match properties.get(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| bad_property(store, key, "must be a whole number")),
        }
    };
    let retries = number("s3.retry.num-retries", 5)?;
    let min_wait = number("s3.retry.min-wait-ms", 100)?;
    let max_wait = number("s3.retry.max-wait-ms", 20_000)?.max(min_wait);
    let defaults = object_store::RetryConfig::default();
    Ok(object_store::RetryConfig {
        max_retries: usize::try_from(retries).unwrap_or(usize::MAX),
        backoff: object_store::BackoffConfig {
            init_backoff: std::time::Duration::from_millis(min_wait),
            max_backoff: std::time::Duration::from_millis(max_wait),
            ..defaults.backoff
        },
        retry_timeout: std::time::Duration::from_secs(60),
    })
}

#[cfg(feature = "aws")]
fn s3(store: &str, properties: &StorageProperties) -> Result<BuiltStore> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

    let mut config: Vec<(&str, String)> = Vec::new();
    let mut sse_type = None;
    let mut sse_key = None;
    for (key, value) in properties.iter() {
        let target = match key {
            "s3.endpoint" => {
                if value.starts_with("http://") {
                    config.push(("allow_http", "true".into()));
                }
                "endpoint"
            }
            "s3.region" | "client.region" => "region",
            // The key pair and token go to the rotating credential below.
            key if S3_CREDENTIAL_KEYS.contains(&key) => continue,
            "s3.path-style-access" => {
                let path_style = boolean(store, key, value)?;
                config.push(("virtual_hosted_style_request", (!path_style).to_string()));
                continue;
            }
            "s3.force-virtual-addressing" => {
                let virtual_hosted = boolean(store, key, value)?;
                config.push(("virtual_hosted_style_request", virtual_hosted.to_string()));
                continue;
            }
            "s3.anonymous" => {
                config.push(("skip_signature", boolean(store, key, value)?.to_string()));
                continue;
            }
            "s3.role-arn" => "role_arn",
            "s3.role-session-name" => "role_session_name",
            "s3.proxy-uri" => "proxy_url",
            "s3.connect-timeout" => {
                config.push(("connect_timeout", seconds(store, key, value)?));
                continue;
            }
            "s3.request-timeout" => {
                config.push(("timeout", seconds(store, key, value)?));
                continue;
            }
            "s3.requester-pays-enabled" => {
                config.push(("request_payer", boolean(store, key, value)?.to_string()));
                continue;
            }
            "s3.sse.type" => {
                sse_type = Some(value);
                continue;
            }
            "s3.sse.key" => {
                sse_key = Some(value);
                continue;
            }
            "s3.remote-signing-enabled" if boolean(store, key, value)? => {
                return Err(Error::Unsupported(format!(
                    "{store}: the catalog asks for remote request signing \
                     (s3.remote-signing-enabled), which icefloe does not do; ask it for vended \
                     credentials instead"
                )));
            }
            passed if passed.starts_with("aws_") => passed,
            _ => continue,
        };
        config.push((target, value.to_string()));
    }
    match (sse_type.map(str::to_ascii_lowercase).as_deref(), sse_key) {
        (None | Some("none"), _) => {}
        (Some("s3"), _) => config.push(("server_side_encryption", "AES256".into())),
        (Some("kms"), key) => {
            config.push(("server_side_encryption", "aws:kms".into()));
            if let Some(key) = key {
                config.push(("sse_kms_key_id", key.to_string()));
            }
        }
        (Some("dsse-kms"), key) => {
            config.push(("server_side_encryption", "aws:kms:dsse".into()));
            if let Some(key) = key {
                config.push(("sse_kms_key_id", key.to_string()));
            }
        }
        (Some(other), _) => {
            return Err(bad_property(
                store,
                "s3.sse.type",
                format!("'{other}' is not one of none, s3, kms, dsse-kms"),
            ));
        }
    }
    let mut builder = AmazonS3Builder::from_env()
        .with_url(store)
        .with_retry(retry(store, properties)?);
    for (key, value) in config {
        let parsed: AmazonS3ConfigKey = key
            .parse()
            .map_err(|e| bad_property(store, key, format_args!("{e}")))?;
        builder = builder.with_config(parsed, value);
    }
    let rotating = match s3_credential(store, properties)? {
        Some(_) => {
            let rotating = Arc::new(RotatingS3Credential::new(store));
            rotating.update(properties)?;
            builder = builder.with_credentials(Arc::clone(&rotating) as _);
            Some(rotating)
        }
        None => None,
    };
    let built = builder.build().map_err(|e| build_error(store, e))?;
    Ok((Arc::new(built), rotating))
}

#[cfg(not(feature = "aws"))]
fn s3(store: &str, _: &StorageProperties) -> Result<BuiltStore> {
    Err(not_built(store, "aws"))
}

#[cfg(feature = "gcp")]
fn gcs(bucket: &str, store: &str, properties: &StorageProperties) -> Result<Arc<dyn ObjectStore>> {
    use object_store::StaticCredentialProvider;
    use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder, GoogleConfigKey};

    let mut builder = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_retry(retry(store, properties)?);
    for (key, value) in properties.iter() {
        match key {
            "gcs.oauth2.token" => {
                let credential = GcpCredential {
                    bearer: value.to_string(),
                };
                builder =
                    builder.with_credentials(Arc::new(StaticCredentialProvider::new(credential)));
            }
            "gcs.service.host" => {
                if value.starts_with("http://") {
                    builder = builder.with_config(
                        "allow_http"
                            .parse()
                            .map_err(|e| bad_property(store, key, format_args!("{e}")))?,
                        "true",
                    );
                }
                builder = builder.with_base_url(value);
            }
            "gcs.no-auth" | "gcs.anonymous" => {
                builder = builder.with_skip_signature(boolean(store, key, value)?);
            }
            passed if passed.starts_with("google_") => {
                let parsed: GoogleConfigKey = passed
                    .parse()
                    .map_err(|e| bad_property(store, key, format_args!("{e}")))?;
                builder = builder.with_config(parsed, value);
            }
            _ => {}
        }
    }
    let built = builder.build().map_err(|e| build_error(store, e))?;
    Ok(Arc::new(built))
}

#[cfg(not(feature = "gcp"))]
fn gcs(_: &str, store: &str, _: &StorageProperties) -> Result<Arc<dyn ObjectStore>> {
    Err(not_built(store, "gcp"))
}

/// `container@account.host` of an Azure location: (container, account, host).
#[allow(dead_code)] // without feature `azure`
fn azure_parts<'a>(store: &str, authority: &'a str) -> Result<(&'a str, &'a str, &'a str)> {
    let invalid = || {
        Error::invalid(
            format_args!("location {store}"),
            "is not an Azure location: it must be <scheme>://<container>@<account>.<host>/...",
        )
    };
    let (container, host) = authority.split_once('@').ok_or_else(invalid)?;
    let account = host.split('.').next().unwrap_or_default();
    if container.is_empty() || account.is_empty() {
        return Err(invalid());
    }
    Ok((container, account, host))
}

/// The `key=value;...` fields of an Azure connection string.
#[allow(dead_code)] // without feature `azure`
fn connection_string(text: &str) -> BTreeMap<String, String> {
    text.split(';')
        .filter_map(|field| field.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

#[cfg(feature = "azure")]
fn azure(
    scheme: &str,
    authority: &str,
    store: &str,
    properties: &StorageProperties,
) -> Result<Arc<dyn ObjectStore>> {
    use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};

    let (container, account, host) = azure_parts(store, authority)?;
    let mut config: Vec<(String, String)> = vec![
        ("account_name".into(), account.to_string()),
        ("container_name".into(), container.to_string()),
    ];
    // Java's per-account keys: `adls.sas-token.<account>[.<host>]`.
    let for_account = |key: &str, base: &str| -> bool {
        key.strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|named| named == host || named == account)
    };
    let mut connection = None;
    for (key, value) in properties.iter() {
        let target = match key {
            "adls.account-name" => "account_name",
            "adls.account-key" => "access_key",
            "adls.sas-token" => "sas_key",
            k if for_account(k, "adls.sas-token") => "sas_key",
            "adls.connection-string" => {
                connection.get_or_insert(value);
                continue;
            }
            k if for_account(k, "adls.connection-string") => {
                connection = Some(value);
                continue;
            }
            "adls.tenant-id" => "tenant_id",
            "adls.client-id" => "client_id",
            "adls.client-secret" => "client_secret",
            "adls.token" => "bearer_token",
            passed if passed.starts_with("azure_") => passed,
            _ => continue,
        };
        config.push((target.to_string(), value.to_string()));
    }
    if let Some(text) = connection {
        let fields = connection_string(text);
        for (field, target) in [
            ("accountname", "account_name"),
            ("accountkey", "access_key"),
            ("sharedaccesssignature", "sas_key"),
            ("blobendpoint", "endpoint"),
        ] {
            if let Some(value) = fields.get(field) {
                if field == "blobendpoint" && value.starts_with("http://") {
                    config.push(("allow_http".into(), "true".into()));
                }
                config.push((target.to_string(), value.clone()));
            }
        }
    }
    let _ = scheme;
    let mut builder = MicrosoftAzureBuilder::from_env().with_retry(retry(store, properties)?);
    for (key, value) in config {
        let parsed: AzureConfigKey = key
            .parse()
            .map_err(|e| bad_property(store, &key, format_args!("{e}")))?;
        builder = builder.with_config(parsed, value);
    }
    let built = builder.build().map_err(|e| build_error(store, e))?;
    Ok(Arc::new(built))
}

#[cfg(not(feature = "azure"))]
fn azure(_: &str, _: &str, store: &str, _: &StorageProperties) -> Result<Arc<dyn ObjectStore>> {
    Err(not_built(store, "azure"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_keys_never_values() {
        let p = StorageProperties::from_pairs([
            ("s3.secret-access-key", "very-secret"),
            ("s3.region", "eu-west-1"),
        ]);
        let shown = format!("{p:?}");
        assert!(shown.contains("s3.secret-access-key"), "{shown}");
        assert!(!shown.contains("very-secret") && !shown.contains("eu-west-1"));
    }

    #[test]
    fn properties_share_stores_by_content() {
        let a = StorageProperties::from_pairs([("s3.region", "a")]);
        let b = StorageProperties::from_pairs([("s3.region", "a")]);
        let c = StorageProperties::from_pairs([("s3.region", "c")]);
        assert_eq!(a.shape(), b.shape());
        assert_ne!(a.shape(), c.shape());
        assert_eq!(StorageProperties::new().shape(), 0);
        let merged = a.merged(&c);
        assert_eq!(merged.get("s3.region"), Some("c"));
        assert_eq!(merged, c);
        // The S3 key pair does not pick the store; the scope it is vended for does.
        let keys = |id: &str, scope: &str| {
            StorageProperties::from_pairs([
                ("s3.region", "a"),
                ("s3.access-key-id", id),
                ("s3.secret-access-key", "s"),
                (CREDENTIAL_SCOPE, scope),
            ])
        };
        assert_eq!(
            keys("one", "s3://b/t1").shape(),
            keys("two", "s3://b/t1").shape()
        );
        assert_ne!(
            keys("one", "s3://b/t1").shape(),
            keys("one", "s3://b/t2").shape()
        );
    }

    #[cfg(feature = "aws")]
    #[tokio::test]
    async fn s3_credentials_rotate_in_one_store() {
        use object_store::CredentialProvider;
        let vended = |token: &str| {
            StorageProperties::from_pairs([
                ("s3.endpoint", "http://127.0.0.1:1"),
                ("s3.region", "us-east-1"),
                ("s3.access-key-id", "AKIA"),
                ("s3.secret-access-key", "secret"),
                ("s3.session-token", token),
                (CREDENTIAL_SCOPE, "s3://rotating/t"),
            ])
        };
        let (url1, one) = cloud_store("s3://rotating", &vended("t1"))
            .unwrap()
            .unwrap();
        let (url2, two) = cloud_store("s3://rotating", &vended("t2"))
            .unwrap()
            .unwrap();
        assert_eq!(url1, url2);
        assert!(Arc::ptr_eq(&one, &two), "new credentials, the same store");
        let rotating = RotatingS3Credential::new("s3://r");
        rotating.update(&vended("t1")).unwrap();
        rotating.update(&StorageProperties::new()).unwrap();
        let got = rotating.get_credential().await.unwrap();
        assert_eq!(
            got.token.as_deref(),
            Some("t1"),
            "no keys: the current ones stay"
        );
        rotating.update(&vended("t2")).unwrap();
        let got = rotating.get_credential().await.unwrap();
        assert_eq!(
            (got.key_id.as_str(), got.token.as_deref()),
            ("AKIA", Some("t2"))
        );
        assert!(!format!("{rotating:?}").contains("secret"));
        let half = StorageProperties::from_pairs([("s3.access-key-id", "AKIA")]);
        let err = cloud_store("s3://rotating-half", &half).err().unwrap();
        assert!(err.to_string().contains("s3.secret-access-key"), "{err}");
    }

    #[cfg(feature = "aws")]
    #[tokio::test]
    async fn expiring_s3_credentials_are_renewed_and_never_replaced_by_older_ones() {
        use object_store::CredentialProvider;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let vended = |token: &str, expires: i64| {
            StorageProperties::from_pairs([
                ("s3.access-key-id", "AKIA".to_string()),
                ("s3.secret-access-key", "secret".to_string()),
                ("s3.session-token", token.to_string()),
                ("s3.session-token-expires-at-ms", expires.to_string()),
            ])
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let refresh = CredentialRefresh::new(move || {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move { Ok(vended(&format!("renewed-{n}"), now_ms() + 3_600_000)) })
        });
        let rotating = RotatingS3Credential::new("s3://r");
        // Half an hour left of an hour: not due yet.
        let fresh = vended("fresh", now_ms() + 1_800_000);
        rotating
            .update(&fresh.with_credential_refresh(refresh.clone()))
            .unwrap();
        let got = rotating.get_credential().await.unwrap();
        assert_eq!(got.token.as_deref(), Some("fresh"));
        assert_eq!(calls.load(Ordering::SeqCst), 0);

        // Credentials that expired (or are about to): renewed once, however many requests ask.
        let rotating = Arc::new(RotatingS3Credential::new("s3://r"));
        let stale = vended("stale", now_ms() - 1);
        rotating
            .update(&stale.with_credential_refresh(refresh.clone()))
            .unwrap();
        let asks = (0..8).map(|_| {
            let rotating = Arc::clone(&rotating);
            tokio::spawn(async move { rotating.get_credential().await.unwrap() })
        });
        for got in futures::future::join_all(asks).await {
            assert_eq!(got.unwrap().token.as_deref(), Some("renewed-1"));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // A table loaded before the renewal brings back nothing older.
        rotating
            .update(&vended("older", now_ms() + 60_000))
            .unwrap();
        let got = rotating.get_credential().await.unwrap();
        assert_eq!(got.token.as_deref(), Some("renewed-1"));

        // A renewal that fails: expired credentials give an error naming the store, no secret.
        let failing = CredentialRefresh::new(|| {
            Box::pin(async { Err(Error::invalid("catalog c", "is down")) })
        });
        let rotating = RotatingS3Credential::new("s3://r");
        rotating
            .update(&vended("stale", now_ms() - 1).with_credential_refresh(failing))
            .unwrap();
        let err = rotating.get_credential().await.unwrap_err().to_string();
        assert!(err.contains("s3://r") && err.contains("is down"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn credentials_are_told_from_where_a_store_is() {
        for key in [
            "s3.access-key-id",
            "s3.secret-access-key",
            "s3.session-token",
            "client.secret-access-key",
            "gcs.oauth2.token",
            "adls.account-key",
            "adls.sas-token.account.dfs.core.windows.net",
            "adls.connection-string.account",
            "aws_secret_access_key",
            "google_service_account_key",
            "azure_storage_account_key",
            "token",
        ] {
            assert!(is_credential_key(key), "{key}");
        }
        for key in [
            "s3.endpoint",
            "s3.region",
            "s3.path-style-access",
            "client.region",
            "gcs.service.host",
            "gcs.project-id",
            "aws_allow_http",
            CREDENTIAL_SCOPE,
        ] {
            assert!(!is_credential_key(key), "{key}");
        }
    }

    #[test]
    fn registry_urls_keep_bucket_and_credentials_apart() {
        let a = registry_url("s3", "bucket", 1).unwrap();
        let b = registry_url("s3", "bucket", 2).unwrap();
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("s3://bucket."), "{}", a.as_str());
        let c1 = registry_url("abfss", "c1@acct.dfs.core.windows.net", 1).unwrap();
        let c2 = registry_url("abfss", "c2@acct.dfs.core.windows.net", 1).unwrap();
        assert_ne!(c1, c2, "two containers of one account are two stores");
    }

    #[test]
    fn azure_locations_name_container_and_account() {
        let (container, account, host) = azure_parts(
            "abfss://c@acct.dfs.core.windows.net",
            "c@acct.dfs.core.windows.net",
        )
        .unwrap();
        assert_eq!(
            (container, account, host),
            ("c", "acct", "acct.dfs.core.windows.net")
        );
        let err = azure_parts(
            "abfss://acct.dfs.core.windows.net",
            "acct.dfs.core.windows.net",
        )
        .unwrap_err();
        assert!(err.to_string().contains("<container>@<account>"), "{err}");
        let fields = connection_string(
            "DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=k==;BlobEndpoint=http://127.0.0.1:10000/dev;",
        );
        assert_eq!(fields["accountname"], "dev");
        assert_eq!(fields["accountkey"], "k==");
        assert_eq!(fields["blobendpoint"], "http://127.0.0.1:10000/dev");
    }

    #[cfg(feature = "azure")]
    #[test]
    fn azure_stores_take_the_container_account_and_java_style_keys() {
        let p = StorageProperties::from_pairs([
            (
                "adls.sas-token.acct.dfs.core.windows.net",
                "sv=2024&sig=abc",
            ),
            ("adls.sas-token.other", "never-used"),
        ]);
        let (url, store) = cloud_store("abfss://data@acct.dfs.core.windows.net", &p)
            .unwrap()
            .unwrap();
        assert!(
            url.as_str()
                .starts_with("abfss://data.acct.dfs.core.windows.net.p")
        );
        let shown = store.to_string();
        assert!(shown.contains("acct") && shown.contains("data"), "{shown}");
        let emulator = StorageProperties::from_pairs([(
            "adls.connection-string",
            "AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1",
        )]);
        assert!(
            cloud_store(
                "wasbs://c@devstoreaccount1.blob.core.windows.net",
                &emulator
            )
            .is_ok()
        );
        let err = cloud_store("abfss://acct.dfs.core.windows.net", &p)
            .err()
            .unwrap();
        assert!(err.to_string().contains("<container>@<account>"), "{err}");
    }

    #[cfg(feature = "gcp")]
    #[test]
    fn gcs_stores_take_a_token_or_no_auth() {
        let token = StorageProperties::from_pairs([("gcs.oauth2.token", "ya29.token")]);
        let (_, store) = cloud_store("gs://bucket-g", &token).unwrap().unwrap();
        assert!(store.to_string().contains("bucket-g"), "{store}");
        let anonymous = StorageProperties::from_pairs([
            ("gcs.no-auth", "true"),
            ("gcs.service.host", "http://127.0.0.1:4443"),
        ]);
        assert!(cloud_store("gs://bucket-g", &anonymous).is_ok());
        let bad = StorageProperties::from_pairs([("gcs.no-auth", "maybe")]);
        let err = cloud_store("gs://bucket-g", &bad).err().unwrap();
        assert!(err.to_string().contains("gcs.no-auth"), "{err}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn s3_stores_are_built_once_per_bucket_and_properties() {
        let p = StorageProperties::from_pairs([
            ("s3.endpoint", "http://127.0.0.1:1"),
            ("s3.region", "us-east-1"),
            ("s3.access-key-id", "k"),
            ("s3.secret-access-key", "s"),
            ("s3.path-style-access", "true"),
        ]);
        let (url1, one) = cloud_store("s3://bucket-a", &p).unwrap().unwrap();
        let (url2, two) = cloud_store("s3://bucket-a", &p).unwrap().unwrap();
        assert!(Arc::ptr_eq(&one, &two));
        assert_eq!(url1, url2);
        let (url3, three) = cloud_store("s3://bucket-b", &p).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&one, &three));
        assert_ne!(url1, url3);
        assert!(cloud_store("file://", &p).unwrap().is_none());
        let bad = StorageProperties::from_pairs([("s3.path-style-access", "yes please")]);
        let err = cloud_store("s3://bucket-a", &bad).err().unwrap();
        assert!(err.to_string().contains("s3.path-style-access"), "{err}");
        let signing = StorageProperties::from_pairs([("s3.remote-signing-enabled", "true")]);
        let err = cloud_store("s3://bucket-a", &signing).err().unwrap();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
    }
}

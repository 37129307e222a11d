//! The HTTP side of the REST catalog: requests with the catalog's headers and token, OAuth2
//! client credentials (with refresh), retries of reads, and the REST error model turned into
//! icefloe's errors.
//!
//! No secret (token, client secret, vended credential) is ever part of an error or of `Debug`.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::error::{Error, Result};

/// How long a request may take, unless `rest.request-timeout-ms` says otherwise.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Tries of a read (GET, HEAD) that failed on the network or with 429/502/503/504.
const READ_TRIES: u32 = 3;
/// A token is refreshed this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// The runtime every REST catalog's HTTP connections live on: a request goes out and its answer
/// is read there, and the caller waits for the result. So a caller blocked in a synchronous
/// DataFusion callback (see `crate::session`'s `block_on`) never waits for a connection task
/// of its own runtime, whichever runtime made the connection.
fn http_runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    let made = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("icefloe-rest-http")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    made.as_ref().map_err(|e| Error::Catalog {
        catalog: "REST".into(),
        reason: format!("the runtime of the HTTP client could not be started: {e}"),
        source: None,
    })
}

/// Sends `request` on the [`http_runtime`] and reads the whole answer there.
async fn exchange_on_http_runtime(
    request: reqwest::RequestBuilder,
) -> Result<std::result::Result<(StatusCode, bytes::Bytes), reqwest::Error>> {
    let task = http_runtime()?.spawn(async move {
        let response = request.send().await?;
        let status = response.status();
        Ok((status, response.bytes().await?))
    });
    task.await.map_err(|e| Error::Catalog {
        catalog: "REST".into(),
        reason: "the HTTP request's task failed".into(),
        source: Some(Box::new(e)),
    })
}

/// An answer of the catalog: its status and JSON body (`Value::Null` for none).
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Value,
}

/// How the client authenticates.
enum Auth {
    None,
    /// A token given by the user (`token`).
    Static(String),
    /// OAuth2 client credentials (`credential`: `client_id:client_secret` or a secret alone),
    /// exchanged at `server` for tokens, refreshed before they expire.
    ClientCredentials {
        server: String,
        client_id: Option<String>,
        secret: String,
        scope: String,
        token: Mutex<Option<(String, Option<Instant>)>>,
    },
}

/// The HTTP client of one REST catalog.
pub(super) struct RestClient {
    /// The catalog's name, for errors.
    pub(super) name: String,
    /// The base URI (`http://host:port/path`, no trailing slash).
    pub(super) uri: String,
    http: reqwest::Client,
    auth: Auth,
}

impl std::fmt::Debug for RestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = match &self.auth {
            Auth::None => "none",
            Auth::Static(_) => "token",
            Auth::ClientCredentials { .. } => "oauth2 client credentials",
        };
        f.debug_struct("RestClient")
            .field("name", &self.name)
            .field("uri", &self.uri)
            .field("auth", &auth)
            .finish()
    }
}

impl RestClient {
    /// A client for the catalog `name` from its properties: `uri`, `token` or `credential`
    /// (with `oauth2-server-uri`, `scope`), `header.<name>` headers, `rest.request-timeout-ms`.
    pub(super) fn new(name: &str, properties: &BTreeMap<String, String>) -> Result<Self> {
        let uri = properties
            .get("uri")
            .ok_or_else(|| Error::invalid(format_args!("REST catalog {name}"), "needs a `uri`"))?
            .trim_end_matches('/')
            .to_string();
        if !(uri.starts_with("http://") || uri.starts_with("https://")) {
            return Err(Error::invalid(
                format_args!("REST catalog {name}"),
                format_args!("uri '{uri}' is not an http:// or https:// address"),
            ));
        }
        let mut headers = HeaderMap::new();
        // As PyIceberg and Java ask by default: the catalog may vend storage credentials.
        headers.insert(
            HeaderName::from_static("x-iceberg-access-delegation"),
            HeaderValue::from_static("vended-credentials"),
        );
        headers.insert(
            HeaderName::from_static("x-client-version"),
            HeaderValue::from_static(concat!("icefloe ", env!("CARGO_PKG_VERSION"))),
        );
        for (key, value) in properties {
            let Some(header) = key.strip_prefix("header.") else {
                continue;
            };
            let bad = |why: &str| {
                Error::invalid(
                    format_args!("property '{key}' of REST catalog {name}"),
                    why.to_string(),
                )
            };
            let header_name =
                HeaderName::from_bytes(header.as_bytes()).map_err(|_| bad("not a header name"))?;
            let mut header_value =
                HeaderValue::from_str(value).map_err(|_| bad("not a header value"))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let timeout = match properties.get("rest.request-timeout-ms") {
            Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| {
                Error::invalid(
                    format_args!("property 'rest.request-timeout-ms' of REST catalog {name}"),
                    "must be a whole number of milliseconds",
                )
            })?),
            None => REQUEST_TIMEOUT,
        };
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(timeout)
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .build()
            .map_err(|e| Error::Catalog {
                catalog: name.to_string(),
                reason: "the HTTP client could not be made".into(),
                source: Some(Box::new(e.without_url())),
            })?;
        let auth = match (properties.get("token"), properties.get("credential")) {
            (Some(token), _) => Auth::Static(token.clone()),
            (None, Some(credential)) => {
                let (client_id, secret) = match credential.split_once(':') {
                    Some((id, secret)) => (Some(id.to_string()), secret.to_string()),
                    None => (None, credential.clone()),
                };
                let server = properties
                    .get("oauth2-server-uri")
                    .cloned()
                    .unwrap_or_else(|| format!("{uri}/v1/oauth/tokens"));
                let scope = properties
                    .get("scope")
                    .cloned()
                    .unwrap_or_else(|| "catalog".into());
                Auth::ClientCredentials {
                    server,
                    client_id,
                    secret,
                    scope,
                    token: Mutex::new(None),
                }
            }
            (None, None) => Auth::None,
        };
        Ok(Self {
            name: name.to_string(),
            uri,
            http,
            auth,
        })
    }

    /// The bearer token to send, fetched or refreshed first when needed (`force`: a 401 said
    /// the one held is no longer good).
    async fn token(&self, force: bool) -> Result<Option<String>> {
        match &self.auth {
            Auth::None => Ok(None),
            Auth::Static(token) => Ok(Some(token.clone())),
            Auth::ClientCredentials {
                server,
                client_id,
                secret,
                scope,
                token,
            } => {
                let mut held = token.lock().await;
                let fresh = |expires: &Option<Instant>| {
                    expires.is_none_or(|at| Instant::now() + REFRESH_MARGIN < at)
                };
                if let Some((value, expires)) = held.as_ref()
                    && !force
                    && fresh(expires)
                {
                    return Ok(Some(value.clone()));
                }
                let got = self
                    .exchange(server, client_id.as_deref(), secret, scope)
                    .await?;
                *held = Some(got.clone());
                Ok(Some(got.0))
            }
        }
    }

    /// OAuth2 client credentials: `grant_type=client_credentials` at `server`.
    async fn exchange(
        &self,
        server: &str,
        client_id: Option<&str>,
        secret: &str,
        scope: &str,
    ) -> Result<(String, Option<Instant>)> {
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials");
            if let Some(id) = client_id {
                form.append_pair("client_id", id);
            }
            form.append_pair("client_secret", secret);
            form.append_pair("scope", scope);
            form.finish()
        };
        let failed = |reason: String, source: Option<reqwest::Error>| Error::Catalog {
            catalog: self.name.clone(),
            reason: format!("getting an OAuth2 token from {server}: {reason}"),
            source: source.map(|e| Box::new(e.without_url()) as _),
        };
        let request = self
            .http
            .post(server)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        let (status, bytes) = exchange_on_http_runtime(request)
            .await?
            .map_err(|e| failed("the request failed".into(), Some(e)))?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            let why = body
                .get("error_description")
                .or_else(|| body.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            return Err(failed(format!("{status}: {why}"), None));
        }
        let token = body
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| failed("the answer has no access_token".into(), None))?;
        let expires = body
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|s| Instant::now() + Duration::from_secs(s));
        Ok((token.to_string(), expires))
    }

    /// Sends a request to `path` (after the base URI: `/v1/...`) and returns the answer,
    /// whatever its status; network failures are errors. Reads are tried up to three times on a
    /// network failure or a 429/502/503/504; a 401 fetches a new token once and tries again.
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Answer> {
        let url = format!("{}{path}", self.uri);
        let read = method == Method::GET || method == Method::HEAD;
        let tries = if read { READ_TRIES } else { 1 };
        let mut attempt = 0;
        let mut force_token = false;
        loop {
            attempt += 1;
            let mut request = self.http.request(method.clone(), &url).query(query);
            if let Some(token) = self.token(force_token).await? {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                        Error::invalid(
                            format_args!("the token of REST catalog {}", self.name),
                            "is not a valid header value",
                        )
                    })?;
                value.set_sensitive(true);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            if let Some(body) = body {
                request = request
                    .header("content-type", "application/json")
                    .body(body.to_string());
            }
            let (status, bytes) = match exchange_on_http_runtime(request).await? {
                Ok(answer) => answer,
                Err(e) if attempt < tries => {
                    drop(e);
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                Err(e) => return Err(self.network_error(&method, path, e)),
            };
            if status == StatusCode::UNAUTHORIZED
                && !force_token
                && matches!(self.auth, Auth::ClientCredentials { .. })
            {
                force_token = true;
                continue;
            }
            if attempt < tries && retryable(status) {
                tokio::time::sleep(backoff(attempt)).await;
                continue;
            }
            let body = match bytes.is_empty() {
                true => Value::Null,
                false => serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&bytes[..bytes.len().min(500)]).into())
                }),
            };
            return Ok(Answer { status, body });
        }
    }

    /// A request that failed before an answer came, naming the catalog and the request.
    pub(super) fn network_error(&self, method: &Method, path: &str, e: reqwest::Error) -> Error {
        let what = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "failed"
        };
        Error::Catalog {
            catalog: self.name.clone(),
            reason: format!("{method} {}{path} {what}", self.uri),
            source: Some(Box::new(e.without_url())),
        }
    }
}

fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100 * 4u64.pow(attempt.saturating_sub(1).min(4)))
}

/// The message of a REST error answer (`{"error": {"message", "type", "code"}}`), or the
/// status alone.
pub(super) fn error_message(answer: &Answer) -> String {
    let error = answer.body.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| answer.body.as_str());
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str);
    match (kind, message) {
        (Some(kind), Some(message)) => format!("{} {kind}: {message}", answer.status.as_u16()),
        (None, Some(message)) => format!("{}: {message}", answer.status),
        _ => answer.status.to_string(),
    }
}

//! Servers the tests and benches start on loopback, each through a Python launcher of
//! `tests/interop/` that prints its port and stops the server when its standard input closes
//! (so none outlives the process that started it): moto's S3 server (`s3.py server`),
//! lakana-server, a REST catalog (`rest.py server`, used by `tests/conformance/rest.rs`), and
//! the REST protocol over PyIceberg's SqlCatalog (`rest_adapter.py server`, [`RestAdapter`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use icefloe::io::{FileIO, StorageProperties};

/// A running server.
pub struct S3 {
    pub endpoint: String,
    _stdin: ChildStdin,
    _child: Child,
}

/// The server of `cell`, started by `start` on first use and shared by every test of the
/// process; `None` when it could not start, said on stderr (seen in CI logs even when the test
/// passes) as "`checks` `test`: the ... checks were NOT run: why".
#[allow(dead_code)] // not every user shares a server
pub fn shared<T>(
    cell: &'static std::sync::OnceLock<Result<T, String>>,
    start: impl FnOnce() -> Result<T, String>,
    checks: &str,
    test: &str,
) -> Option<&'static T> {
    match cell.get_or_init(start) {
        Ok(server) => Some(server),
        Err(why) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{checks} {test}: the {checks} checks were NOT run: {why}"
            );
            None
        }
    }
}

/// Runs `python script args...`, waits up to `wait` for the port it prints on its first
/// line, and returns the port with the child and its standard input (hold it: closing it stops
/// the server).
pub fn spawn_server(
    python: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
    wait: Duration,
) -> Result<(u16, ChildStdin, Child), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(script);
    let mut child = Command::new(python)
        .arg(&script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", script.display()))?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = send.send(line);
    });
    let line = receive
        .recv_timeout(wait)
        .map_err(|_| format!("{} did not start within {wait:?}", script.display()))?;
    let port = line
        .trim()
        .parse()
        .map_err(|_| format!("{} printed {line:?}, not a port", script.display()))?;
    Ok((port, stdin, child))
}

/// The REST catalog of `tests/interop/rest_adapter.py`: the REST protocol over PyIceberg's
/// `SqlCatalog`, OAuth2 client credentials [`RestAdapter::CREDENTIAL`], every listing paged.
#[allow(dead_code)] // not every user starts one
pub struct RestAdapter {
    pub uri: String,
    _stdin: ChildStdin,
    _child: Child,
}

#[allow(dead_code)]
impl RestAdapter {
    /// The OAuth2 client credentials the adapter accepts.
    pub const CREDENTIAL: &str = "icefloe:s3cret";

    /// Starts an adapter keeping its catalog (and, without `s3`, its warehouse) under
    /// `state`, with the Python of `ICEFLOE_REST_PYTHON`; why not, when it cannot. With `s3`
    /// (a moto endpoint) the warehouse is the bucket `icefloe-vended` there (which must
    /// exist), and the adapter vends its credentials.
    pub fn start(state: &Path, s3: Option<&str>) -> Result<Self, String> {
        let python = std::env::var_os("ICEFLOE_REST_PYTHON")
            .filter(|p| !p.is_empty())
            .ok_or("ICEFLOE_REST_PYTHON is not set (.ci/run sets it up)")?;
        let mut args = vec![std::ffi::OsStr::new("server"), state.as_os_str()];
        args.extend(s3.map(std::ffi::OsStr::new));
        let (port, stdin, child) = spawn_server(
            Path::new(&python),
            "rest_adapter.py",
            &args,
            Duration::from_secs(120),
        )?;
        Ok(Self {
            uri: format!("http://127.0.0.1:{port}"),
            _stdin: stdin,
            _child: child,
        })
    }

    /// The client properties that reach it: its uri and the credential.
    pub fn properties(&self) -> std::collections::BTreeMap<String, String> {
        [("uri", self.uri.as_str()), ("credential", Self::CREDENTIAL)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A client of it named `name`.
    pub async fn catalog(&self, name: &str) -> icefloe::catalog::RestCatalog {
        icefloe::catalog::RestCatalog::connect(name, self.properties(), FileIO::default())
            .await
            .unwrap_or_else(|e| panic!("connect to the REST adapter: {e}"))
    }

    /// `GET` of one of its test endpoints (`/test/stats`), as JSON; `POST` when `post`.
    pub fn test_endpoint(&self, path: &str, post: bool) -> serde_json::Value {
        let address = self.uri.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).expect("connect to the adapter");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let method = if post { "POST" } else { "GET" };
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|_| panic!("{path}: {answer}"))
    }
}

impl S3 {
    /// Starts moto with the Python of `ICEFLOE_PYTHON`; why not, when it cannot.
    pub fn start() -> Result<Self, String> {
        let python = std::env::var_os("ICEFLOE_PYTHON")
            .filter(|p| !p.is_empty())
            .ok_or("ICEFLOE_PYTHON is not set (.ci/run sets it up)")?;
        let python = Path::new(&python);
        let has_moto = Command::new(python)
            .args(["-c", "import moto.server"])
            .status()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        if !has_moto.success() {
            return Err(format!("{} has no moto[server]", python.display()));
        }
        let server = std::ffi::OsStr::new("server");
        let (port, stdin, child) =
            spawn_server(python, "s3.py", &[server], Duration::from_secs(60))?;
        Ok(Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            _stdin: stdin,
            _child: child,
        })
    }

    /// The storage properties that reach the server.
    pub fn storage(&self) -> StorageProperties {
        StorageProperties::from_pairs([
            ("s3.endpoint", self.endpoint.as_str()),
            ("s3.region", "us-east-1"),
            ("s3.access-key-id", "testing"),
            ("s3.secret-access-key", "testing"),
            ("s3.path-style-access", "true"),
        ])
    }

    /// Makes a bucket (a plain `PUT /<bucket>`).
    pub fn create_bucket(&self, bucket: &str) {
        let address = self.endpoint.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).expect("connect to moto");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "PUT /{bucket} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(answer.contains(" 200 "), "CreateBucket {bucket}: {answer}");
    }

    /// Copies every file under `dir` to `target/<relative path>`.
    #[allow(dead_code)] // not every user uploads
    pub async fn upload(&self, io: &FileIO, dir: &Path, target: &str) {
        use futures::StreamExt;
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                match path.is_dir() {
                    true => stack.push(path),
                    false => files.push(path),
                }
            }
        }
        futures::stream::iter(files)
            .map(|path| {
                let relative = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let to = format!("{target}/{relative}");
                async move {
                    let bytes = std::fs::read(&path).unwrap();
                    io.write(&to, bytes.into()).await.unwrap();
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<()>>()
            .await;
    }
}

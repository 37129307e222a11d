//! A moto S3 server on loopback for benches (`tests/interop/s3.py server`, the tests' own
//! launcher), when `ICEFLOE_PYTHON` names a Python with `moto[server]`; it stops when the bench
//! process ends (its standard input closes).

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

impl S3 {
    /// Starts the server; `None` (said) without a Python with moto.
    pub fn start() -> Option<Self> {
        let python = std::env::var_os("ICEFLOE_PYTHON")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/s3.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = child.stdout.take()?;
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = send.send(line);
        });
        let port: u16 = receive
            .recv_timeout(Duration::from_secs(60))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Some(Self {
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

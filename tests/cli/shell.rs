//! The interactive shell driven through a pseudo-terminal, keystroke by keystroke, as a user
//! at a terminal drives it: commands, footers, completion, Ctrl-C and the history file.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::wh1_args;

/// What the terminal receives as the shell starts reading a line.
const NEW_PROMPT: &str = "\x1b[?2004h";

/// How long any one answer may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// `icefloe sql` on a pseudo-terminal, with everything it printed collected.
struct Shell {
    child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of the screen earlier expectations consumed.
    seen: usize,
}

impl Shell {
    fn start(args: &[String], home: &Path) -> Shell {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors into the given integers; null name and
        // termios ask for the defaults.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (master, slave) = unsafe {
            (
                std::fs::File::from_raw_fd(master),
                OwnedFd::from_raw_fd(slave),
            )
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_icefloe"));
        command
            .args(args)
            .env("HOME", home)
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec. The child leads a new
        // session whose controlling terminal is the pty (standard input by then), so that
        // Ctrl-C typed there is a SIGINT to it, as at a real terminal.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("the icefloe binary starts");
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let collected = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            // Ends when the child closes the terminal (EIO) or the test drops the master.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                collected.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Shell {
            child,
            master,
            screen,
            seen: 0,
        }
    }

    fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits until the output after the last expectation holds `needle`; returns that output.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = {
                let screen = self.screen.lock().unwrap();
                String::from_utf8_lossy(&screen[self.seen..]).into_owned()
            };
            if let Some(at) = text.find(needle) {
                self.seen += text[..at + needle.len()].len();
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} within {PATIENCE:?}; the shell printed:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types a line and Enter, and waits for the next prompt (rustyline turns bracketed paste
    /// on as each line starts: the prompt itself is redrawn while typing, so it marks nothing);
    /// returns what was printed on the way.
    fn line(&mut self, text: &str) -> String {
        self.send(text);
        self.send("\r");
        self.expect(NEW_PROMPT)
    }

    fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the shell did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wh1_shell(home: &Path, extra: &[&str]) -> Shell {
    let mut args = vec!["sql".to_string()];
    args.extend(wh1_args());
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut shell = Shell::start(&args, home);
    shell.expect(NEW_PROMPT);
    shell
}

#[test]
fn commands_footers_and_null() {
    let home = tempfile::tempdir().unwrap();
    let mut shell = wh1_shell(home.path(), &[]);

    let text = shell.line("\\?");
    assert!(
        text.contains("\\d NAME") && text.contains("\\timing"),
        "{text}"
    );

    let text = shell.line("\\d");
    for name in ["namespace", "table_name", "| orders ", "| refs "] {
        assert!(text.contains(name), "{name} missing from \\d:\n{text}");
    }
    assert!(!text.contains("information_schema"), "{text}");

    let text = shell.line("\\dn");
    assert!(
        text.contains("| namespace ") && text.contains("| db "),
        "{text}"
    );

    let text = shell.line("\\d db.orders");
    for expected in ["field_id", "| order_id ", "# partition", "# sort order"] {
        assert!(
            text.contains(expected),
            "{expected} missing from \\d db.orders:\n{text}"
        );
    }

    // The footer: the row count, how many were shown (40 by default), the time.
    let text = shell.line("SELECT value FROM range(100) ORDER BY value;");
    assert!(text.contains("100 rows (40 shown) in "), "{text}");
    assert!(
        text.contains("| 39    |") && !text.contains("| 40    |"),
        "{text}"
    );
    let text = shell.line("\\timing");
    assert!(text.contains("timing is off"), "{text}");
    let text = shell.line("SELECT 1 AS a;");
    assert!(text.contains("\n1 row") && !text.contains(" ms"), "{text}");

    let text = shell.line("SELECT NULL AS n, '' AS e;");
    assert!(text.contains("| NULL |   |"), "{text}");

    let text = shell.line("\\nope");
    assert!(text.contains("unknown command \\nope"), "{text}");

    shell.send("\\q\r");
    assert!(shell.wait().success());
}

#[test]
fn tab_completes_keywords_tables_and_columns() {
    let home = tempfile::tempdir().unwrap();
    let mut shell = wh1_shell(home.path(), &[]);
    // The names are gathered in the background as the shell starts.
    std::thread::sleep(Duration::from_millis(1000));
    shell.send("SELECT count(*) AS n FROM db.ord\t");
    let text = shell.line(";");
    assert!(text.contains("| 20 |"), "{text}");
    // A keyword in the case typed; a column of a table the line names.
    shell.send("sel\t order_id AS third FROM db.orders WHERE order_i\t");
    let text = shell.line(" = 3;");
    assert!(
        text.contains("| 3     |") && !text.contains("Error"),
        "{text}"
    );
}

#[test]
fn ctrl_c_cancels_the_statement_and_keeps_the_shell_and_its_history() {
    let home = tempfile::tempdir().unwrap();
    let mut shell = wh1_shell(home.path(), &[]);
    let text = shell.line("SELECT 41 + 1 AS answer;");
    assert!(text.contains("| 42     |"), "{text}");
    // Saved as it runs, not only at exit.
    let history = home.path().join(".icefloe_history");
    let saved = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(saved.contains("SELECT 41 + 1 AS answer;"), "{saved:?}");

    // Minutes of work: cancelled, and the shell takes the next statement.
    shell.send("SELECT sum(value) FROM range(1, 100000000000);\r");
    std::thread::sleep(Duration::from_millis(1500));
    shell.send("\x03");
    shell.expect("cancelled");
    shell.expect(NEW_PROMPT);
    let text = shell.line("SELECT 'still here' AS s;");
    assert!(text.contains("| still here |"), "{text}");

    // A shell that is killed keeps what was typed.
    shell.child.kill().unwrap();
    let _ = shell.child.wait();
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.contains("range(1, 100000000000)"), "{saved}");
    assert!(saved.contains("SELECT 'still here' AS s;"), "{saved}");
}

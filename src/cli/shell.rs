//! The interactive shell of `icefloe sql`: reads lines until a `;` ends a statement, runs it,
//! prints the result (at most `--max-rows` rows and a footer with the row count and the time
//! taken) or the error, and goes on until `\q`, `quit`, `exit` or end of input.
//!
//! Between statements a line starting with `\` is a command (`\?` lists them, as in psql).
//! Ctrl-C while a statement runs cancels it and keeps the shell; Ctrl-C at the prompt drops
//! the unfinished statement. Each statement is appended to `~/.icefloe_history` as it is run.
//! Tab completes keywords, namespaces, tables and columns ([`super::complete`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;

use super::complete::{Completion, Words};
use super::session::SqlSession;
use super::split::{is_blank_sql, split_statements};
use super::{CliError, CliResult, report_error_as};

const PROMPT: &str = "icefloe> ";
const CONTINUATION_PROMPT: &str = "      -> ";
const HISTORY_FILE: &str = ".icefloe_history";

/// What `\?` and `help` print.
pub(crate) const HELP: &str = "\
Statements end with `;` and may span lines. Commands (at the start of a line):
  \\d            list tables (SHOW TABLES)
  \\d NAME       describe a table: Iceberg types, field ids, partition spec, sort order
  \\dn           list namespaces (SHOW NAMESPACES)
  \\timing [on|off]  show the time each statement takes (on by default in the shell)
  \\? or help    this text
  \\q, quit, exit  leave
Also: SHOW TBLPROPERTIES t, SHOW CREATE TABLE t, \"t$snapshots\" and the other metadata
tables, VERSION AS OF / TIMESTAMP AS OF. Ctrl-C cancels a running statement; Tab completes
keywords, namespaces, tables and columns.
";

/// A shell command (a line starting with `\`, or `help`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// `\?`, `\h`, `help`.
    Help,
    /// `\d`, `\dt`.
    Tables,
    /// `\d NAME`.
    Describe(String),
    /// `\dn`.
    Namespaces,
    /// `\timing`, `\timing on|off`: `None` toggles.
    Timing(Option<bool>),
    /// Anything else starting with `\`.
    Unknown(String),
}

impl Command {
    /// The command `line` is, if it is one (`\q` and friends are [`Input::Exit`]).
    fn parse(line: &str) -> Option<Self> {
        let line = line.trim().trim_end_matches(';').trim();
        if line.eq_ignore_ascii_case("help") {
            return Some(Self::Help);
        }
        let rest = line.strip_prefix('\\')?;
        let (name, argument) = match rest.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (rest, ""),
        };
        Some(match (name, argument) {
            ("?" | "h" | "help", _) => Self::Help,
            ("d" | "dt", "") => Self::Tables,
            ("d" | "dt", table) => Self::Describe(table.to_string()),
            ("dn", "") => Self::Namespaces,
            ("timing", "") => Self::Timing(None),
            ("timing", "on") => Self::Timing(Some(true)),
            ("timing", "off") => Self::Timing(Some(false)),
            _ => Self::Unknown(line.to_string()),
        })
    }

    /// The statement this command runs, for those that run one.
    pub(crate) fn sql(&self) -> Option<String> {
        match self {
            Self::Tables => Some("SHOW TABLES".into()),
            Self::Describe(table) => Some(format!("DESCRIBE {table}")),
            Self::Namespaces => Some("SHOW NAMESPACES".into()),
            Self::Help | Self::Timing(_) | Self::Unknown(_) => None,
        }
    }

    /// The error for an unknown command.
    pub(crate) fn unknown_message(text: &str) -> String {
        format!("unknown command {text}: \\? lists the commands")
    }
}

/// What input asks for, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// Leave the shell.
    Exit,
    /// Run this complete statement.
    Statement(String),
    /// Run this command.
    Command(Command),
}

impl Input {
    /// A statement.
    pub(crate) fn statement(sql: String) -> Self {
        Self::Statement(sql)
    }
}

/// Input collected so far: lines are joined until `;` ends statements.
#[derive(Debug, Default)]
pub(crate) struct InputBuffer {
    pending: String,
}

impl InputBuffer {
    /// Whether a statement is unfinished.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Drops an unfinished statement (Ctrl-C).
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
    }

    /// The unfinished statement, if it holds more than comments (the last statement of a
    /// script needs no `;`).
    pub(crate) fn take_rest(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        let rest = rest.trim();
        (!is_blank_sql(rest)).then(|| rest.to_string())
    }

    /// Adds one line; returns what it completes: statements, or one command or
    /// [`Input::Exit`] (those only between statements).
    pub(crate) fn feed(&mut self, line: &str) -> Vec<Input> {
        if self.pending.is_empty() {
            if is_exit_command(line) {
                return vec![Input::Exit];
            }
            if let Some(command) = Command::parse(line) {
                return vec![Input::Command(command)];
            }
        }
        self.pending.push_str(line);
        self.pending.push('\n');
        let split = split_statements(&self.pending);
        self.pending = if is_blank_sql(&split.rest) {
            String::new()
        } else {
            split.rest + "\n"
        };
        split.statements.into_iter().map(Input::Statement).collect()
    }
}

fn is_exit_command(line: &str) -> bool {
    let command = line.trim().trim_end_matches(';').trim();
    command == "\\q" || command.eq_ignore_ascii_case("quit") || command.eq_ignore_ascii_case("exit")
}

/// `$HOME/.icefloe_history`, when there is a home directory.
fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(HISTORY_FILE))
}

/// Runs the shell until the user leaves; statement errors are printed and the shell goes on.
pub(crate) async fn run_shell(session: &SqlSession) -> CliResult<()> {
    let words = Words::default();
    words.refresh_in_background(session.context());
    let mut editor: Editor<Completion, FileHistory> = Editor::new()?;
    editor.set_helper(Some(Completion::new(words.clone())));
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(path);
    }
    let mut buffer = InputBuffer::default();
    let mut timing = true;
    loop {
        let prompt = if buffer.is_empty() {
            PROMPT
        } else {
            CONTINUATION_PROMPT
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        for input in buffer.feed(&line) {
            let statement = match input {
                Input::Exit => return Ok(()),
                Input::Statement(statement) => {
                    remember(&mut editor, history.as_ref(), format!("{statement};"));
                    statement
                }
                Input::Command(command) => {
                    remember(&mut editor, history.as_ref(), line.trim().to_string());
                    match command.sql() {
                        Some(sql) => sql,
                        None => {
                            match command {
                                Command::Timing(on) => {
                                    timing = on.unwrap_or(!timing);
                                    let state = if timing { "on" } else { "off" };
                                    println!("timing is {state}");
                                }
                                Command::Unknown(text) => {
                                    let e = CliError::Usage(Command::unknown_message(&text));
                                    let json = session.errors_as_json();
                                    report_error_as(&mut std::io::stderr().lock(), &e, json, None);
                                }
                                _ => print!("{HELP}"),
                            }
                            continue;
                        }
                    }
                }
            };
            run_one(session, &statement, timing).await;
            words.refresh_in_background(session.context());
        }
    }
    Ok(())
}

/// Adds `entry` to the history and appends it to the history file at once, so that a shell
/// that is killed keeps what was typed.
fn remember(editor: &mut Editor<Completion, FileHistory>, path: Option<&PathBuf>, entry: String) {
    if matches!(editor.add_history_entry(entry), Ok(true))
        && let Some(path) = path
    {
        let _ = editor.append_history(path);
    }
}

/// Runs one statement, printing its result and footer, or its error; Ctrl-C cancels it
/// (dropping the query stops its work; a commit either happened or did not).
async fn run_one(session: &SqlSession, statement: &str, timing: bool) {
    let started = Instant::now();
    let mut out = std::io::stdout().lock();
    let result = tokio::select! {
        result = session.run_statement(statement, &mut out) => Some(result),
        _ = tokio::signal::ctrl_c() => None,
    };
    let _ = out.flush();
    match result {
        Some(Ok(printed)) => {
            let elapsed = timing.then(|| started.elapsed());
            if let Some(footer) = session.footer(printed, elapsed) {
                let _ = writeln!(out, "{footer}");
            }
        }
        Some(Err(e)) => {
            let json = session.errors_as_json();
            report_error_as(&mut std::io::stderr().lock(), &e, json, None);
        }
        None => {
            let _ = writeln!(out);
            // Dropping a write stops it, but one that reached its commit may have committed.
            match crate::sql::writes(session.context(), statement) {
                Ok(Some(_)) => eprintln!(
                    "cancelled (a write stopped while committing may still have committed: the \
                     table's $snapshots shows it; files it left are removed by remove-orphans)"
                ),
                _ => eprintln!("cancelled"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(names: &[&str]) -> Vec<Input> {
        names
            .iter()
            .map(|s| Input::Statement(s.to_string()))
            .collect()
    }

    #[test]
    fn joins_lines_until_semicolon() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("SELECT"), vec![]);
        assert!(!b.is_empty());
        assert_eq!(
            b.feed("  1;  SELECT 2; SELECT"),
            statements(&["SELECT\n  1", "SELECT 2"])
        );
        assert_eq!(b.feed("3;"), statements(&["SELECT\n3"]));
        assert!(b.is_empty());
    }

    #[test]
    fn semicolons_in_strings_do_not_end_input() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("SELECT 'a;"), vec![]);
        assert_eq!(b.feed("b';"), statements(&["SELECT 'a;\nb'"]));
    }

    #[test]
    fn exit_commands_only_between_statements() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("\\q"), vec![Input::Exit]);
        assert_eq!(b.feed(" QUIT; "), vec![Input::Exit]);
        assert_eq!(b.feed("exit"), vec![Input::Exit]);
        assert_eq!(b.feed("SELECT"), vec![]);
        assert_eq!(b.feed("exit"), vec![]);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn blank_and_comment_lines_leave_buffer_empty() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed(""), vec![]);
        assert_eq!(b.feed("-- note"), vec![]);
        assert!(b.is_empty());
    }

    #[test]
    fn backslash_commands_between_statements() {
        let mut b = InputBuffer::default();
        let command = |c| vec![Input::Command(c)];
        assert_eq!(b.feed("\\?"), command(Command::Help));
        assert_eq!(b.feed("help"), command(Command::Help));
        assert_eq!(b.feed("\\d"), command(Command::Tables));
        assert_eq!(
            b.feed("\\d  db.orders ;"),
            command(Command::Describe("db.orders".into()))
        );
        assert_eq!(b.feed("\\dn"), command(Command::Namespaces));
        assert_eq!(b.feed("\\timing"), command(Command::Timing(None)));
        assert_eq!(
            b.feed("\\timing off"),
            command(Command::Timing(Some(false)))
        );
        assert_eq!(b.feed("\\x"), command(Command::Unknown("\\x".into())));
        // Inside a statement a backslash line is part of it.
        assert_eq!(b.feed("SELECT"), vec![]);
        assert_eq!(b.feed("\\d"), vec![]);
        assert_eq!(
            Command::Describe("t".into()).sql().as_deref(),
            Some("DESCRIBE t")
        );
        assert_eq!(Command::Tables.sql().as_deref(), Some("SHOW TABLES"));
        assert_eq!(
            Command::Namespaces.sql().as_deref(),
            Some("SHOW NAMESPACES")
        );
        assert_eq!(Command::Help.sql(), None);
    }
}

//! The interactive shell of `icefloe sql`: reads lines until a `;` ends a statement, runs it,
//! prints the result or the error, and goes on until `\q`, `quit`, `exit` or end of input.

use std::io::Write;
use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::session::SqlSession;
use super::split::{is_blank_sql, split_statements};
use super::{CliResult, report_error};

const PROMPT: &str = "icefloe> ";
const CONTINUATION_PROMPT: &str = "      -> ";
const HISTORY_FILE: &str = ".icefloe_history";

/// What a line of input asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// Leave the shell.
    Exit,
    /// Run these complete statements (possibly none: the statement goes on).
    Run(Vec<String>),
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

    /// Adds one line; returns the statements it completes, or [`Input::Exit`].
    pub(crate) fn feed(&mut self, line: &str) -> Input {
        if self.pending.is_empty() && is_exit_command(line) {
            return Input::Exit;
        }
        self.pending.push_str(line);
        self.pending.push('\n');
        let split = split_statements(&self.pending);
        self.pending = if is_blank_sql(&split.rest) {
            String::new()
        } else {
            split.rest + "\n"
        };
        Input::Run(split.statements)
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
    let mut editor = DefaultEditor::new()?;
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(path);
    }
    let mut buffer = InputBuffer::default();
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
        match buffer.feed(&line) {
            Input::Exit => break,
            Input::Run(statements) => {
                for statement in statements {
                    let _ = editor.add_history_entry(format!("{statement};"));
                    run_one(session, &statement).await;
                }
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

async fn run_one(session: &SqlSession, statement: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = session.run_statement(statement, &mut out).await {
        let _ = out.flush();
        report_error(&mut std::io::stderr().lock(), &e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_lines_until_semicolon() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("SELECT"), Input::Run(vec![]));
        assert!(!b.is_empty());
        assert_eq!(
            b.feed("  1;  SELECT 2; SELECT"),
            Input::Run(vec!["SELECT\n  1".into(), "SELECT 2".into()])
        );
        assert_eq!(b.feed("3;"), Input::Run(vec!["SELECT\n3".into()]));
        assert!(b.is_empty());
    }

    #[test]
    fn semicolons_in_strings_do_not_end_input() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("SELECT 'a;"), Input::Run(vec![]));
        assert_eq!(b.feed("b';"), Input::Run(vec!["SELECT 'a;\nb'".into()]));
    }

    #[test]
    fn exit_commands_only_between_statements() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed("\\q"), Input::Exit);
        assert_eq!(b.feed(" QUIT; "), Input::Exit);
        assert_eq!(b.feed("exit"), Input::Exit);
        assert_eq!(b.feed("SELECT"), Input::Run(vec![]));
        assert_eq!(b.feed("exit"), Input::Run(vec![]));
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn blank_and_comment_lines_leave_buffer_empty() {
        let mut b = InputBuffer::default();
        assert_eq!(b.feed(""), Input::Run(vec![]));
        assert_eq!(b.feed("-- note"), Input::Run(vec![]));
        assert!(b.is_empty());
    }
}

//! Splitting SQL text into statements at the `;` that end them.
//!
//! A `;` ends a statement only outside string literals (`'...'`, `''` escapes a quote), quoted
//! identifiers (`"..."`, `` `...` ``), dollar-quoted strings (`$$...$$`, `$tag$...$tag$`),
//! line comments (`-- ...`) and block comments (`/* ... */`, nested as in PostgreSQL). The
//! splitter does not parse SQL: DataFusion does that for each statement it returns.

/// The result of splitting SQL text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// Complete statements (each ended by `;`), trimmed, without the `;`. Statements that hold
    /// only whitespace and comments are dropped.
    pub statements: Vec<String>,
    /// Text after the last `;`, trimmed; it may be an unfinished statement, or empty.
    pub rest: String,
}

impl Split {
    /// Every statement, the unterminated rest included when it holds more than comments.
    pub fn into_all(self) -> Vec<String> {
        let mut all = self.statements;
        if !is_blank_sql(&self.rest) {
            all.push(self.rest);
        }
        all
    }
}

/// Where the scanner is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Code,
    Quoted(char),
    Dollar(String),
    LineComment,
    BlockComment(usize),
}

/// Splits `sql` at every `;` that is outside quotes and comments.
pub fn split_statements(sql: &str) -> Split {
    let mut statements = Vec::new();
    let mut state = State::Code;
    let mut start = 0;
    let mut i = 0;
    while i < sql.len() {
        let (next_state, step) = advance(&state, &sql[i..]);
        if state == State::Code && next_state == State::Code && sql[i..].starts_with(';') {
            push_statement(&mut statements, &sql[start..i]);
            start = i + 1;
        }
        state = next_state;
        i += step;
    }
    Split {
        statements,
        rest: sql[start..].trim().to_string(),
    }
}

/// Whether `sql` holds nothing but whitespace, comments and `;`.
pub fn is_blank_sql(sql: &str) -> bool {
    let mut state = State::Code;
    let mut i = 0;
    while i < sql.len() {
        let (next_state, step) = advance(&state, &sql[i..]);
        let ch = sql[i..].chars().next().unwrap_or(' ');
        let in_code = state == State::Code && next_state == State::Code;
        if in_code && !ch.is_whitespace() && ch != ';' {
            return false;
        }
        if matches!(next_state, State::Quoted(_) | State::Dollar(_)) {
            return false;
        }
        state = next_state;
        i += step;
    }
    true
}

fn push_statement(statements: &mut Vec<String>, text: &str) {
    if !is_blank_sql(text) {
        statements.push(text.trim().to_string());
    }
}

/// One scanning step at the start of `rest`: the next state and how many bytes were consumed.
fn advance(state: &State, rest: &str) -> (State, usize) {
    let ch = rest.chars().next().map_or(1, char::len_utf8);
    match state {
        State::Code => advance_code(rest, ch),
        State::Quoted(q) => {
            let mut doubled = String::with_capacity(2);
            doubled.push(*q);
            doubled.push(*q);
            if rest.starts_with(&doubled) {
                (state.clone(), 2)
            } else if rest.starts_with(*q) {
                (State::Code, 1)
            } else {
                (state.clone(), ch)
            }
        }
        State::Dollar(tag) if rest.starts_with(tag.as_str()) => (State::Code, tag.len()),
        State::LineComment if rest.starts_with('\n') => (State::Code, 1),
        State::BlockComment(depth) => advance_block_comment(*depth, rest, ch),
        _ => (state.clone(), ch),
    }
}

fn advance_code(rest: &str, ch: usize) -> (State, usize) {
    if rest.starts_with("--") {
        return (State::LineComment, 2);
    }
    if rest.starts_with("/*") {
        return (State::BlockComment(1), 2);
    }
    if let Some(tag) = dollar_tag(rest) {
        let len = tag.len();
        return (State::Dollar(tag), len);
    }
    match rest.chars().next() {
        Some(q @ ('\'' | '"' | '`')) => (State::Quoted(q), 1),
        _ => (State::Code, ch),
    }
}

fn advance_block_comment(depth: usize, rest: &str, ch: usize) -> (State, usize) {
    if rest.starts_with("*/") {
        let state = if depth == 1 {
            State::Code
        } else {
            State::BlockComment(depth - 1)
        };
        (state, 2)
    } else if rest.starts_with("/*") {
        (State::BlockComment(depth + 1), 2)
    } else {
        (State::BlockComment(depth), ch)
    }
}

/// A dollar-quote opener (`$$` or `$tag$`) at the start of `rest`.
fn dollar_tag(rest: &str) -> Option<String> {
    let body = rest.strip_prefix('$')?;
    let end = body.find('$')?;
    let tag = &body[..end];
    let valid = tag.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !tag.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| format!("${tag}$"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(sql: &str) -> Vec<String> {
        split_statements(sql).into_all()
    }

    #[test]
    fn splits_plain_statements() {
        assert_eq!(
            all("SELECT 1 AS a; SELECT 2 AS b"),
            ["SELECT 1 AS a", "SELECT 2 AS b"]
        );
        assert_eq!(all("SELECT 1;"), ["SELECT 1"]);
        assert_eq!(all(" ; ;SELECT 1;;"), ["SELECT 1"]);
    }

    #[test]
    fn ignores_semicolons_in_quotes() {
        assert_eq!(
            all("SELECT 'a;b', 'it''s;'; SELECT 2"),
            ["SELECT 'a;b', 'it''s;'", "SELECT 2"]
        );
        assert_eq!(
            all(r#"SELECT 1 AS "x;y"; SELECT 2"#),
            [r#"SELECT 1 AS "x;y""#, "SELECT 2"]
        );
        assert_eq!(all("SELECT `a;b`"), ["SELECT `a;b`"]);
        assert_eq!(
            all("SELECT $$a;b$$; SELECT $t$;$t$"),
            ["SELECT $$a;b$$", "SELECT $t$;$t$"]
        );
    }

    #[test]
    fn ignores_semicolons_in_comments() {
        assert_eq!(
            all("SELECT 1 -- one; two\n; SELECT 2"),
            ["SELECT 1 -- one; two", "SELECT 2"]
        );
        assert_eq!(
            all("SELECT /* a; /* b; */ c; */ 1; SELECT 2"),
            ["SELECT /* a; /* b; */ c; */ 1", "SELECT 2"]
        );
    }

    #[test]
    fn drops_comment_only_statements() {
        assert_eq!(all("-- nothing\n; /* x */ ;SELECT 1"), ["SELECT 1"]);
        assert!(all("-- only a comment").is_empty());
    }

    #[test]
    fn keeps_unfinished_rest() {
        let s = split_statements("SELECT 1; SELECT 'a;\nb");
        assert_eq!(s.statements, ["SELECT 1"]);
        assert_eq!(s.rest, "SELECT 'a;\nb");
        let s = split_statements("SELECT 1;\n");
        assert_eq!(s.rest, "");
    }

    #[test]
    fn handles_multibyte_text() {
        assert_eq!(
            all("SELECT 'é;ü' AS ñ; SELECT 2"),
            ["SELECT 'é;ü' AS ñ", "SELECT 2"]
        );
    }

    #[test]
    fn blank_detection() {
        assert!(is_blank_sql("  -- x\n /* y */ ;"));
        assert!(!is_blank_sql("-- x\nSELECT"));
        assert!(!is_blank_sql("'"));
    }
}

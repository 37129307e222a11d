//! The `ALTER TABLE` grammar, read token by token with sqlparser's [`Parser`] (DataFusion 55's
//! parser has no Iceberg forms of it).

use datafusion::sql::sqlparser::ast::Ident;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::layout::{Distribution, Layout, SortItem, Term};
use super::{Alter, ColumnChange, Operation};
use crate::spec::Transform;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::table::transform_named;
use crate::transaction::ColumnPosition;

/// Consumes the unquoted word `w` (any case) if it is next.
pub(super) fn word(parser: &mut Parser, w: &str) -> bool {
    match &parser.peek_token().token {
        Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w) => {
            parser.next_token();
            true
        }
        _ => false,
    }
}

pub(super) struct Reader<'a> {
    pub(super) parser: Parser<'a>,
    pub(super) normalize: bool,
}

type Parsed<T> = Result<T, ParserError>;

impl Reader<'_> {
    fn word(&mut self, w: &str) -> bool {
        word(&mut self.parser, w)
    }

    fn words(&mut self, ws: &[&str]) -> bool {
        let matched = ws.iter().take_while(|w| self.word(w)).count();
        if matched == ws.len() {
            return true;
        }
        // `prev_token` undoes one `next_token`, whitespace included.
        for _ in 0..matched {
            self.parser.prev_token();
        }
        false
    }

    fn expect(&mut self, w: &str) -> Parsed<()> {
        match self.word(w) {
            true => Ok(()),
            false => self
                .parser
                .expected(&w.to_uppercase(), self.parser.peek_token()),
        }
    }

    fn ident(&mut self) -> Parsed<String> {
        let Ident {
            value, quote_style, ..
        } = self.parser.parse_identifier()?;
        Ok(match (self.normalize, quote_style) {
            (true, None) => value.to_lowercase(),
            _ => value,
        })
    }

    /// A column path: names joined by dots.
    fn path(&mut self) -> Parsed<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.parser.consume_token(&Token::Period) {
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    fn dotted(&mut self) -> Parsed<String> {
        Ok(self.path()?.join("."))
    }

    /// One path, or a parenthesised list of them; or a bare comma-separated list.
    fn paths(&mut self) -> Parsed<Vec<String>> {
        let parenthesised = self.parser.consume_token(&Token::LParen);
        let mut paths = vec![self.dotted()?];
        while self.parser.consume_token(&Token::Comma) {
            paths.push(self.dotted()?);
        }
        if parenthesised {
            self.parser.expect_token(&Token::RParen)?;
        }
        Ok(paths)
    }

    fn position(&mut self) -> Parsed<Option<ColumnPosition>> {
        Ok(if self.word("first") {
            Some(ColumnPosition::First)
        } else if self.word("after") {
            Some(ColumnPosition::After(self.ident()?))
        } else if self.word("before") {
            Some(ColumnPosition::Before(self.ident()?))
        } else {
            None
        })
    }

    pub(super) fn statement(&mut self) -> Parsed<Alter> {
        let table = self.parser.parse_object_name(false)?;
        let operation = if let Some(layout) = self.layout()? {
            Operation::Layout(layout)
        } else if self.word("add") {
            let plural = self.word("columns");
            if !plural {
                self.word("column");
            }
            let changes = match self.parser.consume_token(&Token::LParen) {
                true => {
                    let mut changes = vec![self.new_column()?];
                    while self.parser.consume_token(&Token::Comma) {
                        changes.push(self.new_column()?);
                    }
                    self.parser.expect_token(&Token::RParen)?;
                    changes
                }
                false => vec![self.new_column()?],
            };
            Operation::Columns(changes)
        } else if self.word("rename") {
            if self.word("to") {
                Operation::RenameTo(self.parser.parse_object_name(false)?)
            } else {
                self.expect("column")?;
                let path = self.dotted()?;
                self.expect("to")?;
                let to = self.ident()?;
                Operation::Columns(vec![ColumnChange::Rename { path, to }])
            }
        } else if self.words(&["drop", "identifier", "fields"]) {
            let paths = self.paths()?;
            Operation::Columns(vec![ColumnChange::IdentifierFields { paths, set: false }])
        } else if self.word("drop") {
            if !self.word("columns") {
                self.expect("column")?;
            }
            let if_exists = self.words(&["if", "exists"]);
            let paths = self.paths()?;
            let drops = paths
                .into_iter()
                .map(|path| ColumnChange::Drop { path, if_exists })
                .collect();
            Operation::Columns(drops)
        } else if self.word("alter") {
            self.word("column");
            let path = self.dotted()?;
            Operation::Columns(vec![self.column_change(path)?])
        } else if self.words(&["set", "identifier", "fields"]) {
            let paths = self.paths()?;
            Operation::Columns(vec![ColumnChange::IdentifierFields { paths, set: true }])
        } else if self.words(&["set", "tblproperties"]) {
            Operation::SetProperties(self.properties(true)?)
        } else if self.words(&["unset", "tblproperties"]) {
            let if_exists = self.words(&["if", "exists"]);
            let keys = self
                .properties(false)?
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            Operation::UnsetProperties { keys, if_exists }
        } else {
            return self.parser.expected(
                "ADD COLUMN, RENAME COLUMN, RENAME TO, DROP COLUMN, ALTER COLUMN, SET/DROP \
                 IDENTIFIER FIELDS, SET TBLPROPERTIES, UNSET TBLPROPERTIES, ADD/DROP/REPLACE/\
                 RENAME PARTITION FIELD or WRITE",
                self.parser.peek_token(),
            );
        };
        let _ = self.parser.consume_token(&Token::SemiColon);
        match self.parser.peek_token().token {
            Token::EOF => Ok(Alter { table, operation }),
            _ => self
                .parser
                .expected("the end of the statement", self.parser.peek_token()),
        }
    }

    fn new_column(&mut self) -> Parsed<ColumnChange> {
        let path = self.path()?;
        let data_type = self.parser.parse_data_type()?;
        let (mut not_null, mut default, mut comment) = (false, None, None);
        loop {
            if self.words(&["not", "null"]) {
                not_null = true;
            } else if self.word("null") {
                not_null = false;
            } else if self.word("default") {
                default = Some(self.parser.parse_expr()?);
            } else if self.word("comment") {
                comment = Some(self.parser.parse_literal_string()?);
            } else {
                break;
            }
        }
        let position = self.position()?;
        Ok(ColumnChange::Add {
            path,
            data_type,
            not_null,
            default,
            comment,
            position,
        })
    }

    fn column_change(&mut self, path: String) -> Parsed<ColumnChange> {
        if self.word("type") || self.words(&["set", "data", "type"]) {
            let data_type = self.parser.parse_data_type()?;
            return Ok(ColumnChange::Retype { path, data_type });
        }
        if self.words(&["set", "not", "null"]) {
            return Ok(ColumnChange::Nullable {
                path,
                optional: false,
            });
        }
        if self.words(&["drop", "not", "null"]) {
            return Ok(ColumnChange::Nullable {
                path,
                optional: true,
            });
        }
        if self.word("comment") {
            let doc = self.parser.parse_literal_string()?;
            return Ok(ColumnChange::Comment { path, doc });
        }
        if self.words(&["set", "default"]) {
            let value = Some(self.parser.parse_expr()?);
            return Ok(ColumnChange::WriteDefault { path, value });
        }
        if self.words(&["drop", "default"]) {
            return Ok(ColumnChange::WriteDefault { path, value: None });
        }
        match self.position()? {
            Some(position) => Ok(ColumnChange::Move { path, position }),
            None => self.parser.expected(
                "TYPE, SET DATA TYPE, SET/DROP NOT NULL, COMMENT, SET/DROP DEFAULT, FIRST, \
                 AFTER or BEFORE",
                self.parser.peek_token(),
            ),
        }
    }

    /// `('k' = 'v', ...)`, or with `values` false `('k', ...)`.
    fn properties(&mut self, values: bool) -> Parsed<Vec<(String, String)>> {
        self.parser.expect_token(&Token::LParen)?;
        let mut properties = Vec::new();
        loop {
            let key = self.text()?;
            let value = match values {
                true => {
                    self.parser.expect_token(&Token::Eq)?;
                    self.text()?
                }
                false => String::new(),
            };
            properties.push((key, value));
            if !self.parser.consume_token(&Token::Comma) {
                break;
            }
        }
        self.parser.expect_token(&Token::RParen)?;
        Ok(properties)
    }

    /// A property key or value: a string, a number, a word, or dotted words.
    fn text(&mut self) -> Parsed<String> {
        let token = self.parser.next_token();
        let mut text = match &token.token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => return Ok(s.clone()),
            Token::Number(n, _) => return Ok(n.clone()),
            Token::Word(w) => w.value.clone(),
            _ => return self.parser.expected("a property key or value", token),
        };
        while self.parser.consume_token(&Token::Period) {
            text.push('.');
            text.push_str(&self.ident()?);
        }
        Ok(text)
    }

    /// A partition-spec or write-order clause (see [`super::layout`]), if one is next.
    fn layout(&mut self) -> Parsed<Option<Layout>> {
        Ok(Some(if self.words(&["add", "partition", "field"]) {
            let term = self.term()?;
            let name = self.alias()?;
            Layout::AddField { term, name }
        } else if self.words(&["drop", "partition", "field"]) {
            Layout::DropField(self.term()?)
        } else if self.words(&["replace", "partition", "field"]) {
            let old = self.term()?;
            self.expect("with")?;
            let term = self.term()?;
            let name = self.alias()?;
            Layout::ReplaceField { old, term, name }
        } else if self.words(&["rename", "partition", "field"]) {
            let name = self.ident()?;
            self.expect("to")?;
            let to = self.ident()?;
            Layout::RenameField { name, to }
        } else if self.word("write") {
            self.write_spec()?
        } else {
            return Ok(None);
        }))
    }

    fn alias(&mut self) -> Parsed<Option<String>> {
        match self.word("as") {
            true => Ok(Some(self.ident()?)),
            false => Ok(None),
        }
    }

    /// `WRITE` followed by `[LOCALLY] ORDERED BY ...`, `UNORDERED` and `DISTRIBUTED BY
    /// PARTITION`, in any order.
    fn write_spec(&mut self) -> Parsed<Layout> {
        let (mut hash, mut unordered, mut order) = (false, false, None);
        loop {
            if self.words(&["distributed", "by", "partition"]) {
                hash = true;
            } else if self.words(&["locally", "ordered", "by"]) {
                order = Some((true, self.sort_items()?));
            } else if self.words(&["ordered", "by"]) {
                order = Some((false, self.sort_items()?));
            } else if self.word("unordered") {
                unordered = true;
            } else {
                break;
            }
        }
        let distribution = match (hash, unordered, &order) {
            (false, false, None) => {
                return self.parser.expected(
                    "ORDERED BY, LOCALLY ORDERED BY, UNORDERED or DISTRIBUTED BY PARTITION",
                    self.parser.peek_token(),
                );
            }
            (_, true, Some(_)) => return Err(bad("UNORDERED and ORDERED BY contradict")),
            (true, _, Some((false, _))) => {
                return Err(bad(
                    "DISTRIBUTED BY PARTITION takes LOCALLY ORDERED BY (ORDERED BY is a range \
                     distribution)",
                ));
            }
            (true, _, _) => Distribution::Hash,
            (false, _, Some((false, _))) => Distribution::Range,
            (false, _, _) => Distribution::None,
        };
        let order = order.map(|(_, items)| items).unwrap_or_default();
        Ok(Layout::Write {
            distribution,
            order,
        })
    }

    /// Sort items and nothing after them (a sort order given on its own).
    pub(super) fn sort_order(&mut self) -> Parsed<Vec<SortItem>> {
        let items = self.sort_items()?;
        self.parser.expect_token(&Token::EOF)?;
        Ok(items)
    }

    /// Sort items, comma-separated, optionally in parentheses.
    fn sort_items(&mut self) -> Parsed<Vec<SortItem>> {
        let parenthesised = self.parser.consume_token(&Token::LParen);
        let mut items = vec![self.sort_item()?];
        while self.parser.consume_token(&Token::Comma) {
            items.push(self.sort_item()?);
        }
        if parenthesised {
            self.parser.expect_token(&Token::RParen)?;
        }
        Ok(items)
    }

    fn sort_item(&mut self) -> Parsed<SortItem> {
        let term = self.term()?;
        let direction = match self.word("desc") {
            true => SortDirection::Descending,
            false => {
                self.word("asc");
                SortDirection::Ascending
            }
        };
        let null_order = if self.words(&["nulls", "first"]) {
            Some(NullOrder::First)
        } else if self.words(&["nulls", "last"]) {
            Some(NullOrder::Last)
        } else {
            None
        };
        Ok(SortItem {
            term,
            direction,
            null_order,
        })
    }

    /// A column, or a transform of one: `bucket(16, id)`, `truncate(4, name)` (or
    /// `truncate(name, 4)`), `days(ts)`, ...
    fn term(&mut self) -> Parsed<Term> {
        let path = self.path()?;
        if !self.parser.consume_token(&Token::LParen) {
            return Ok(Term {
                source: path.join("."),
                transform: Transform::Identity,
                bare: true,
            });
        }
        let name = path.join(".").to_lowercase();
        let (mut number, mut column) = (None, None);
        loop {
            if let Token::Number(n, _) = &self.parser.peek_token().token {
                let width = n
                    .parse::<i32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad(&format!("'{n}' is not a positive integer")))?;
                number = Some(width.unsigned_abs());
                self.parser.next_token();
            } else {
                column = Some(self.dotted()?);
            }
            if !self.parser.consume_token(&Token::Comma) {
                break;
            }
        }
        self.parser.expect_token(&Token::RParen)?;
        let transform = transform_named(&name, number).ok_or_else(|| {
            bad(&format!(
                "'{name}' with {} is not a partition transform (identity, bucket(N, col), \
                 truncate(W, col), years, months, days, hours or void(col))",
                match number {
                    Some(_) => "a number",
                    None => "no number",
                }
            ))
        })?;
        let source = column.ok_or_else(|| bad(&format!("{name}(...) names no column")))?;
        Ok(Term {
            source,
            transform,
            bare: false,
        })
    }
}

fn bad(message: &str) -> ParserError {
    ParserError::ParserError(message.to_string())
}

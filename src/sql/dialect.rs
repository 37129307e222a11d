//! [`IcebergDialect`]: any sqlparser dialect with table versioning switched on, and the parser
//! entry point that reads `VERSION AS OF 'ref'`.
//!
//! sqlparser parses `FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF` and `VERSION AS OF` only for
//! dialects that declare `supports_table_versioning` (BigQuery, Databricks, MsSql, Snowflake),
//! not for the generic dialect DataFusion uses by default. [`IcebergDialect`] wraps the session's
//! dialect and answers every question the way the wrapped dialect does, except that one.
//!
//! sqlparser reads `VERSION AS OF` followed by an unsigned number only. [`parse_statements`]
//! also accepts a string (a branch or tag name, as in Spark) and a negative snapshot id there:
//! it rewrites `VERSION AS OF 'audit'` to the equivalent `AT(VERSION => 'audit')` clause, which
//! sqlparser reads as a versioning function and the time-travel planner understands.

use std::any::TypeId;
use std::collections::VecDeque;
use std::iter::Peekable;
use std::str::Chars;

use datafusion::error::Result as DFResult;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::ast::{
    ColumnOption, Expr, GranteesType, Ident, ObjectNamePart, Statement as SqlStatement,
};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect, Precedence, dialect_from_str};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// A sqlparser dialect that behaves as the one it wraps, with table versioning
/// (`FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF`, `VERSION AS OF`, `AT(...)`) enabled.
///
/// ```
/// use datafusion::sql::sqlparser::parser::Parser;
/// use icefloe::sql::IcebergDialect;
///
/// let sql = "SELECT * FROM orders FOR SYSTEM_TIME AS OF '2024-01-01 00:00:00'";
/// assert!(Parser::parse_sql(&IcebergDialect::default(), sql).is_ok());
/// ```
#[derive(Debug)]
pub struct IcebergDialect {
    inner: Box<dyn Dialect>,
}

impl IcebergDialect {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn Dialect>) -> Self {
        Self { inner }
    }

    /// Wraps the dialect DataFusion names `name` (the values of
    /// `datafusion.sql_parser.dialect`: `generic`, `postgresql`, ...); `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        dialect_from_str(name).map(Self::new)
    }
}

impl Default for IcebergDialect {
    /// Wraps the generic dialect, DataFusion's default.
    fn default() -> Self {
        Self::new(Box::new(GenericDialect {}))
    }
}

/// Forwards the `fn name(&self) -> bool` questions of [`Dialect`] to the wrapped dialect.
macro_rules! forward_flags {
    ($($name:ident)*) => {
        $(fn $name(&self) -> bool { self.inner.$name() })*
    };
}

impl Dialect for IcebergDialect {
    fn dialect(&self) -> TypeId {
        // Dialect-specific parser branches (`dialect_of!`) see the wrapped dialect.
        self.inner.dialect()
    }

    fn supports_table_versioning(&self) -> bool {
        true
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.inner.is_delimited_identifier_start(ch)
    }

    fn is_nested_delimited_identifier_start(&self, ch: char) -> bool {
        self.inner.is_nested_delimited_identifier_start(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.inner.identifier_quote_style(identifier)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.inner.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.inner.is_identifier_part(ch)
    }

    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.inner.is_custom_operator_part(ch)
    }

    fn peek_nested_delimited_identifier_quotes(
        &self,
        chars: Peekable<Chars<'_>>,
    ) -> Option<(char, Option<char>)> {
        self.inner.peek_nested_delimited_identifier_quotes(chars)
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        self.inner.parse_prefix(parser)
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        self.inner.parse_infix(parser, expr, precedence)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.inner.get_next_precedence(parser)
    }

    fn get_next_precedence_default(&self, parser: &Parser) -> Result<u8, ParserError> {
        self.inner.get_next_precedence_default(parser)
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<SqlStatement, ParserError>> {
        self.inner.parse_statement(parser)
    }

    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        self.inner.parse_column_option(parser)
    }

    fn prec_value(&self, prec: Precedence) -> u8 {
        self.inner.prec_value(prec)
    }

    fn prec_unknown(&self) -> u8 {
        self.inner.prec_unknown()
    }

    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        self.inner.is_reserved_for_identifier(kw)
    }

    fn get_reserved_keywords_for_select_item_operator(&self) -> &[Keyword] {
        self.inner.get_reserved_keywords_for_select_item_operator()
    }

    fn get_reserved_grantees_types(&self) -> &[GranteesType] {
        self.inner.get_reserved_grantees_types()
    }

    fn is_column_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_column_alias(kw, parser)
    }

    fn is_select_item_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_select_item_alias(explicit, kw, parser)
    }

    fn is_table_factor(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_table_factor(kw, parser)
    }

    fn is_table_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_table_alias(kw, parser)
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_table_factor_alias(explicit, kw, parser)
    }

    fn is_identifier_generating_function_name(
        &self,
        ident: &Ident,
        name_parts: &[ObjectNamePart],
    ) -> bool {
        self.inner
            .is_identifier_generating_function_name(ident, name_parts)
    }

    forward_flags!(
        supports_string_literal_backslash_escape ignores_wildcard_escapes
        supports_unicode_string_literal supports_filter_during_aggregation
        supports_window_clause_named_window_reference supports_within_after_array_aggregation
        supports_partition_by_after_order_by supports_array_join_syntax supports_group_by_expr
        supports_group_by_with_modifier supports_left_associative_joins_without_parens
        supports_outer_join_operator supports_cross_join_constraint supports_connect_by
        supports_execute_immediate supports_match_recognize supports_in_empty_list
        supports_start_transaction_modifier supports_end_transaction_modifier
        supports_named_fn_args_with_eq_operator supports_named_fn_args_with_colon_operator
        supports_named_fn_args_with_assignment_operator supports_named_fn_args_with_rarrow_operator
        supports_named_fn_args_with_expr_name supports_numeric_prefix
        supports_numeric_literal_underscores supports_window_function_null_treatment_arg
        supports_dictionary_syntax support_map_literal_syntax supports_lambda_functions
        supports_parenthesized_set_variables supports_comma_separated_set_assignments
        supports_update_order_by supports_select_wildcard_except convert_type_before_value
        supports_triple_quoted_string supports_trailing_commas supports_limit_comma
        supports_string_literal_concatenation supports_string_literal_concatenation_with_newline
        supports_projection_trailing_commas supports_from_trailing_commas
        supports_column_definition_trailing_commas supports_object_name_double_dot_notation
        supports_struct_literal supports_empty_projections supports_select_expr_star
        supports_from_first_select supports_from_first_insert supports_pipe_operator
        supports_user_host_grantee supports_match_against supports_select_wildcard_exclude
        supports_select_exclude supports_create_table_multi_schema_info_sources
        supports_select_modifiers describe_requires_table_keyword allow_extract_custom
        allow_extract_single_quotes supports_extract_comma_syntax supports_subquery_as_function_arg
        supports_create_view_comment_syntax supports_array_typedef_without_element_type
        supports_parens_around_table_factor supports_values_as_table_factor
        supports_dollar_placeholder supports_dollar_as_money_prefix supports_create_index_with_clause
        require_interval_qualifier supports_explain_with_utility_options
        supports_asc_desc_in_column_definition supports_factorial_operator
        supports_bitwise_shift_operators supports_nested_comments supports_multiline_comment_hints
        supports_eq_alias_assignment supports_try_convert supports_bang_not_operator
        supports_listen_notify supports_load_data supports_load_extension supports_top_before_distinct
        supports_boolean_literals supports_show_like_before_in supports_comment_on
        supports_create_table_select supports_partiql supports_constraint_keyword_without_name
        supports_key_column_option supports_table_sample_before_alias supports_insert_set
        supports_insert_table_function supports_insert_table_query supports_insert_format
        supports_insert_table_alias supports_set_stmt_without_operator supports_string_escape_constant
        supports_table_hints requires_single_line_comment_whitespace
        supports_array_typedef_with_brackets supports_geometric_types supports_order_by_all
        supports_set_names supports_space_separated_column_options supports_alter_column_type_using
        supports_comma_separated_drop_column_list supports_notnull_operator
        supports_data_type_signed_suffix supports_interval_options
        supports_create_table_like_parenthesized supports_semantic_view_table_factor
        supports_quote_delimited_string supports_comment_optimizer_hint
        supports_double_ampersand_operator supports_binary_kw_as_cast supports_select_wildcard_replace
        supports_select_wildcard_ilike supports_select_wildcard_rename
        supports_select_wildcard_with_alias supports_optimize_table supports_install supports_detach
        supports_prewhere supports_with_fill supports_limit_by supports_interpolate supports_settings
        supports_select_format supports_comma_separated_trim supports_cte_without_as
        supports_select_item_multi_column_alias supports_xml_expressions supports_create_table_using
        supports_long_type_as_bigint supports_map_literal_with_angle_brackets
    );
}

/// Parses `sql` (one or more `;`-separated statements) with `dialect`, after rewriting the
/// `VERSION AS OF` forms sqlparser does not read (see the module docs). `recursion_limit` bounds
/// the parser's nesting depth (DataFusion's `datafusion.sql_parser.recursion_limit`).
pub fn parse_statements(
    sql: &str,
    dialect: &IcebergDialect,
    recursion_limit: usize,
) -> DFResult<VecDeque<Statement>> {
    let sql = rewrite_version_clauses(sql, dialect);
    let sql = reorder_create_clauses(&sql, dialect);
    DFParserBuilder::new(sql.as_str())
        .with_dialect(dialect)
        .with_recursion_limit(recursion_limit)
        .build()?
        .parse_statements()
}

/// Rewrites every `VERSION AS OF 'name'` and `VERSION AS OF -123` to `AT(VERSION => ...)`,
/// keeping all other text as written. SQL that does not tokenize is returned unchanged, for the
/// parser to report.
/// The tokens of `sql` without white space, or `None` when it does not tokenize (then the
/// text goes to the parser as it is, to fail there with its message).
pub(super) fn significant_tokens(sql: &str, dialect: &dyn Dialect) -> Option<Vec<TokenWithSpan>> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    Some(
        tokens
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .collect(),
    )
}

fn rewrite_version_clauses(sql: &str, dialect: &dyn Dialect) -> String {
    let Some(tokens) = significant_tokens(sql, dialect) else {
        return sql.to_string();
    };
    let tokens: Vec<&TokenWithSpan> = tokens.iter().collect();
    let offsets = LineOffsets::new(sql);
    let mut out = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i < tokens.len() {
        let Some(len) = version_literal_len(&tokens[i..]) else {
            i += 1;
            continue;
        };
        let start = offsets.byte(tokens[i].span.start);
        let literal = offsets.byte(tokens[i + 3].span.start);
        let end = offsets.byte(tokens[i + len - 1].span.end);
        out.push_str(&sql[copied..start]);
        out.push_str("AT(VERSION => ");
        out.push_str(&sql[literal..end]);
        out.push(')');
        copied = end;
        i += len;
    }
    out.push_str(&sql[copied..]);
    out
}

/// `CREATE TABLE ... PARTITION BY (...) TBLPROPERTIES (...)` with the two clauses swapped:
/// Spark takes them in either order, sqlparser only with `TBLPROPERTIES` first. Everything else
/// is returned as it is.
fn reorder_create_clauses(sql: &str, dialect: &dyn Dialect) -> String {
    let Some(tokens) = significant_tokens(sql, dialect) else {
        return sql.to_string();
    };
    let tokens: Vec<&TokenWithSpan> = tokens.iter().collect();
    let word = |i: usize, kw: Keyword| {
        matches!(tokens.get(i).map(|t| &t.token),
            Some(Token::Word(w)) if w.keyword == kw && w.quote_style.is_none())
    };
    let offsets = LineOffsets::new(sql);
    let mut swaps = Vec::new();
    let (mut depth, mut statement_start, mut partition) = (0usize, 0usize, None);
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::SemiColon if depth == 0 => {
                (statement_start, partition) = (i + 1, None);
            }
            _ if depth > 0 || !word(statement_start, Keyword::CREATE) => {}
            _ if word(i, Keyword::PARTITION) && word(i + 1, Keyword::BY) => partition = Some(i),
            _ if word(i, Keyword::TBLPROPERTIES)
                && matches!(tokens.get(i + 1).map(|t| &t.token), Some(Token::LParen)) =>
            {
                if let Some(p) = partition.take() {
                    let mut end = i + 1;
                    let mut inner = 0usize;
                    while end < tokens.len() {
                        match tokens[end].token {
                            Token::LParen => inner += 1,
                            Token::RParen => {
                                inner -= 1;
                                if inner == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        end += 1;
                    }
                    if end < tokens.len() {
                        swaps.push((
                            offsets.byte(tokens[p].span.start),
                            offsets.byte(tokens[i].span.start),
                            offsets.byte(tokens[end].span.end),
                        ));
                        i = end;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut out = String::with_capacity(sql.len() + swaps.len());
    let mut copied = 0;
    for (partition, properties, end) in swaps {
        out.push_str(&sql[copied..partition]);
        out.push_str(&sql[properties..end]);
        out.push(' ');
        out.push_str(sql[partition..properties].trim_end());
        copied = end;
    }
    out.push_str(&sql[copied..]);
    out
}

/// The number of tokens of `VERSION AS OF <literal>` at the start of `tokens`, when the literal is
/// one sqlparser does not read there: a string, or a minus sign and a number.
fn version_literal_len(tokens: &[&TokenWithSpan]) -> Option<usize> {
    let keyword = |i: usize, kw: Keyword| {
        matches!(tokens.get(i).map(|t| &t.token),
            Some(Token::Word(w)) if w.keyword == kw && w.quote_style.is_none())
    };
    if !(keyword(0, Keyword::VERSION) && keyword(1, Keyword::AS) && keyword(2, Keyword::OF)) {
        return None;
    }
    match (
        tokens.get(3).map(|t| &t.token),
        tokens.get(4).map(|t| &t.token),
    ) {
        (Some(Token::SingleQuotedString(_)), _) => Some(4),
        (Some(Token::Minus), Some(Token::Number(..))) => Some(5),
        _ => None,
    }
}

/// Byte offsets of the tokenizer's (1-based line, 1-based character column) locations.
struct LineOffsets<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineOffsets<'a> {
    fn new(sql: &'a str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { sql, line_starts }
    }

    fn byte(&self, location: Location) -> usize {
        let line = usize::try_from(location.line.saturating_sub(1)).unwrap_or(usize::MAX);
        let Some(&start) = self.line_starts.get(line) else {
            return self.sql.len();
        };
        let column = usize::try_from(location.column.saturating_sub(1)).unwrap_or(usize::MAX);
        self.sql[start..]
            .char_indices()
            .nth(column)
            .map_or(self.sql.len(), |(i, _)| start + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_by_before_tblproperties_is_reordered() {
        let dialect = IcebergDialect::default();
        let sql = "CREATE TABLE db.t (x INT, s VARCHAR) PARTITION BY (bucket(4, x), s) \
                   TBLPROPERTIES ('a' = 'b;c', 'format-version' = '3') AS SELECT 1, ')'";
        assert_eq!(
            reorder_create_clauses(sql, &dialect),
            "CREATE TABLE db.t (x INT, s VARCHAR) TBLPROPERTIES ('a' = 'b;c', 'format-version' = \
             '3') PARTITION BY (bucket(4, x), s) AS SELECT 1, ')'"
        );
        for unchanged in [
            "CREATE TABLE t (x INT) TBLPROPERTIES ('a' = 'b') PARTITION BY (x)",
            "SELECT 'PARTITION BY x TBLPROPERTIES (1)'",
            "SELECT * FROM t; INSERT INTO u SELECT 1",
        ] {
            assert_eq!(reorder_create_clauses(unchanged, &dialect), unchanged);
        }
    }

    fn table_version(sql: &str) -> String {
        let statements = parse_statements(sql, &IcebergDialect::default(), 50).unwrap();
        let text = statements[0].to_string();
        let from = text.find(" FROM ").unwrap();
        text[from + 6..].to_string()
    }

    #[test]
    fn parses_the_three_forms() {
        let cases = [
            (
                "SELECT * FROM t FOR SYSTEM_TIME AS OF '2024-01-01'",
                "t FOR SYSTEM_TIME AS OF '2024-01-01'",
            ),
            (
                "SELECT * FROM t TIMESTAMP AS OF TIMESTAMP '2024-01-01 00:00:00' AS x",
                // sqlparser prints the alias first.
                "t AS x TIMESTAMP AS OF TIMESTAMP '2024-01-01 00:00:00'",
            ),
            (
                "SELECT * FROM db.t VERSION AS OF 123",
                "db.t VERSION AS OF 123",
            ),
        ];
        for (sql, expected) in cases {
            assert_eq!(table_version(sql), expected, "{sql}");
        }
    }

    #[test]
    fn rewrites_string_and_negative_versions() {
        let sql = "SELECT 'VERSION AS OF ''x''' FROM t VERSION  AS OF 'audit'\n\
                   JOIN u VERSION AS OF -42 ON true -- VERSION AS OF 'c'";
        let rewritten = rewrite_version_clauses(sql, &IcebergDialect::default());
        assert_eq!(
            rewritten,
            "SELECT 'VERSION AS OF ''x''' FROM t AT(VERSION => 'audit')\n\
             JOIN u AT(VERSION => -42) ON true -- VERSION AS OF 'c'"
        );
        assert!(
            table_version(sql).starts_with("t AT(VERSION => 'audit') JOIN u AT(VERSION => -42)")
        );
    }

    #[test]
    fn multibyte_text_keeps_offsets() {
        let sql = "SELECT 'é€' AS \"ü\" FROM t VERSION AS OF 'zweig_ä'";
        let rewritten = rewrite_version_clauses(sql, &IcebergDialect::default());
        assert_eq!(
            rewritten,
            "SELECT 'é€' AS \"ü\" FROM t AT(VERSION => 'zweig_ä')"
        );
    }

    #[test]
    fn wraps_other_dialects() {
        let dialect = IcebergDialect::from_name("postgresql").unwrap();
        let sql = "SELECT 'a' || 'b' FROM t FOR SYSTEM_TIME AS OF now()";
        assert!(parse_statements(sql, &dialect, 50).is_ok());
        assert!(IcebergDialect::from_name("nope").is_none());
    }

    #[test]
    fn untokenizable_sql_is_left_for_the_parser() {
        let sql = "SELECT 'unterminated";
        assert_eq!(
            rewrite_version_clauses(sql, &IcebergDialect::default()),
            sql
        );
        assert!(parse_statements(sql, &IcebergDialect::default(), 50).is_err());
    }
}

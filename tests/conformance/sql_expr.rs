//! The answer files' query descriptions translated into DataFusion SQL over table `t`:
//! the external set's named aggregates and the PyIceberg oracle's structured filters.

use serde_json::Value;

use crate::support::{ident, string_literal};

/// One aggregate query: `SELECT {select} FROM t [WHERE {filter}]`.
#[derive(Debug, PartialEq)]
pub struct AggregateQuery {
    pub select: String,
    pub filter: Option<String>,
}

impl AggregateQuery {
    pub fn sql(&self) -> String {
        match &self.filter {
            Some(f) => format!("SELECT {} FROM t WHERE {f}", self.select),
            None => format!("SELECT {} FROM t", self.select),
        }
    }

    fn count_where(filter: String) -> Self {
        Self {
            select: "count(*)".to_string(),
            filter: Some(filter),
        }
    }

    fn select(select: String) -> Self {
        Self {
            select,
            filter: None,
        }
    }
}

/// TPC-H Q6 (revenue change forecast) with its standard substitution parameters.
const TPCH_Q6: &str = "SELECT sum(l_extendedprice * l_discount) FROM t \
     WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
     AND l_discount BETWEEN CAST('0.05' AS DECIMAL(15,2)) AND CAST('0.07' AS DECIMAL(15,2)) \
     AND l_quantity < 24";

/// Translates a named aggregate of `external/expected_answers.json` into SQL, e.g.
/// `sum_l_quantity`, `distinct_uuid`, `rows_N_F`, `rows_with_l_linenumber_multiple_of_5`.
pub fn external_aggregate(name: &str) -> Option<String> {
    if name == "tpch_q6_revenue" {
        return Some(TPCH_Q6.to_string());
    }
    external_aggregate_query(name).map(|q| q.sql())
}

fn external_aggregate_query(name: &str) -> Option<AggregateQuery> {
    if let Some(flag) = name.strip_prefix("rows_returnflag_") {
        return Some(AggregateQuery::count_where(format!(
            "l_returnflag = {}",
            string_literal(flag)
        )));
    }
    if let Some((column, n)) = name
        .strip_prefix("rows_with_")
        .and_then(|rest| rest.split_once("_multiple_of_"))
    {
        let n: i64 = n.parse().ok()?;
        return Some(AggregateQuery::count_where(format!(
            "{} % {n} = 0",
            ident(column)
        )));
    }
    if let Some(column) = name
        .strip_prefix("rows_")
        .and_then(|r| r.strip_suffix("_true"))
    {
        return Some(AggregateQuery::count_where(ident(column)));
    }
    if let Some((flag, status)) = name.strip_prefix("rows_").and_then(|r| r.split_once('_'))
        && flag.len() == 1
        && status.len() == 1
    {
        return Some(AggregateQuery::count_where(format!(
            "l_returnflag = {} AND l_linestatus = {}",
            string_literal(flag),
            string_literal(status)
        )));
    }
    let (function, column) = name.split_once('_')?;
    let select = match function {
        "distinct" => format!("count(DISTINCT {})", ident(column)),
        "nonnull" => format!("count({})", ident(column)),
        "sum" | "min" | "max" => format!("{function}({})", ident(column)),
        _ => return None,
    };
    Some(AggregateQuery::select(select))
}

/// The SQL for one of the oracle's per-column aggregates (`count`, `sum`, `min`, `max`,
/// `nan_count`, `count_true`) over a column of Iceberg type `ty`.
///
/// Integer sums are taken as `DECIMAL(38,0)` because the oracle's exact sums can overflow
/// int64 on the way; float min/max skip NaN as the oracle (Arrow's `min_max`) does.
pub fn oracle_aggregate(column: &str, ty: &str, key: &str) -> Option<String> {
    let c = ident(column);
    let is_float = matches!(ty, "float" | "double");
    let sql = match key {
        "count" => format!("count({c})"),
        "sum" if matches!(ty, "int" | "long") => format!("sum(CAST({c} AS DECIMAL(38,0)))"),
        "sum" => format!("sum({c})"),
        "min" | "max" if is_float => format!("{key}({c}) FILTER (WHERE NOT isnan({c}))"),
        "min" | "max" => format!("{key}({c})"),
        "nan_count" => format!("count({c}) FILTER (WHERE isnan({c}))"),
        "count_true" => format!("count({c}) FILTER (WHERE {c})"),
        _ => return None,
    };
    Some(sql)
}

/// Translates an oracle filter `expr` (`{"op": "eq", "column": .., "type": .., "value": ..}`,
/// `{"op": "and", "args": [..]}`, ...) into a SQL predicate.
pub fn filter(expr: &Value) -> Result<String, String> {
    let op = expr["op"]
        .as_str()
        .ok_or_else(|| format!("no op in {expr}"))?;
    match op {
        "and" | "or" => {
            let parts = args(expr)?
                .iter()
                .map(filter)
                .collect::<Result<Vec<_>, _>>()?;
            let joiner = if op == "and" { " AND " } else { " OR " };
            Ok(format!("({})", parts.join(joiner)))
        }
        "not" => match args(expr)? {
            [only] => Ok(format!("(NOT {})", filter(only)?)),
            other => Err(format!("not with {} args", other.len())),
        },
        _ => predicate(op, expr),
    }
}

fn args(expr: &Value) -> Result<&[Value], String> {
    expr["args"]
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("no args in {expr}"))
}

fn predicate(op: &str, expr: &Value) -> Result<String, String> {
    let column = ident(
        expr["column"]
            .as_str()
            .ok_or_else(|| format!("no column in {expr}"))?,
    );
    let ty = expr["type"]
        .as_str()
        .ok_or_else(|| format!("no type in {expr}"))?;
    let value = &expr["value"];
    let sql = match op {
        "is_null" => format!("{column} IS NULL"),
        "not_null" => format!("{column} IS NOT NULL"),
        "is_nan" => format!("isnan({column})"),
        "not_nan" => format!("NOT isnan({column})"),
        "starts_with" => format!("starts_with({column}, {})", literal(ty, value)?),
        "not_starts_with" => format!("NOT starts_with({column}, {})", literal(ty, value)?),
        "in" | "not_in" => {
            let items = value
                .as_array()
                .ok_or_else(|| format!("{op} without a list in {expr}"))?
                .iter()
                .map(|v| literal(ty, v))
                .collect::<Result<Vec<_>, _>>()?;
            let not = if op == "not_in" { "NOT " } else { "" };
            format!("{column} {not}IN ({})", items.join(", "))
        }
        _ => format!("{column} {} {}", comparison(op)?, literal(ty, value)?),
    };
    Ok(format!("({sql})"))
}

fn comparison(op: &str) -> Result<&'static str, String> {
    Ok(match op {
        "eq" => "=",
        "ne" => "<>",
        "lt" => "<",
        "lte" => "<=",
        "gt" => ">",
        "gte" => ">=",
        other => return Err(format!("unknown filter op {other}")),
    })
}

/// A literal of Iceberg type `ty` in the column's own Arrow type, so that the predicate stays a
/// plain `column op literal` for icefloe's pruning.
pub fn literal(ty: &str, value: &Value) -> Result<String, String> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => return Err(format!("literal {other} of type {ty}")),
    };
    if let Some(precision_scale) = ty.strip_prefix("decimal(") {
        let precision_scale = precision_scale.trim_end_matches(')').replace(' ', "");
        return Ok(format!(
            "CAST({} AS DECIMAL({precision_scale}))",
            string_literal(&text)
        ));
    }
    let sql = match ty {
        "string" => string_literal(&text),
        "boolean" => text.to_uppercase(),
        "int" => format!("CAST({} AS INT)", string_literal(&text)),
        "long" => format!("CAST({} AS BIGINT)", string_literal(&text)),
        "float" => format!("CAST({} AS REAL)", string_literal(&text)),
        "double" => format!("CAST({} AS DOUBLE)", string_literal(&text)),
        "date" => format!("DATE {}", string_literal(&text)),
        "time" => format!("arrow_cast({}, 'Time64(µs)')", string_literal(&text)),
        "timestamp" => format!("arrow_cast({}, 'Timestamp(µs)')", string_literal(&text)),
        "timestamptz" => format!(
            "arrow_cast({}, 'Timestamp(µs, \"+00:00\")')",
            string_literal(&text)
        ),
        "uuid" => format!(
            "arrow_cast(X{}, 'FixedSizeBinary(16)')",
            string_literal(&text.replace('-', ""))
        ),
        "binary" => format!("X{}", string_literal(&text)),
        other => return Err(format!("no SQL literal for type {other}")),
    };
    Ok(sql)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn external_aggregates_translate() {
        let cases = [
            ("distinct_uuid", "SELECT count(DISTINCT \"uuid\") FROM t"),
            ("sum_l_quantity", "SELECT sum(\"l_quantity\") FROM t"),
            ("nonnull_x", "SELECT count(\"x\") FROM t"),
            (
                "rows_l_orderkey_bool_true",
                "SELECT count(*) FROM t WHERE \"l_orderkey_bool\"",
            ),
            (
                "rows_returnflag_A",
                "SELECT count(*) FROM t WHERE l_returnflag = 'A'",
            ),
            (
                "rows_N_F",
                "SELECT count(*) FROM t WHERE l_returnflag = 'N' AND l_linestatus = 'F'",
            ),
            (
                "rows_with_l_linenumber_multiple_of_5",
                "SELECT count(*) FROM t WHERE \"l_linenumber\" % 5 = 0",
            ),
        ];
        for (name, sql) in cases {
            assert_eq!(external_aggregate(name).as_deref(), Some(sql), "{name}");
        }
        assert_eq!(external_aggregate("median_x"), None);
    }

    #[test]
    fn filters_translate() {
        let expr = json!({"op": "and", "args": [
            {"op": "eq", "column": "id", "type": "long", "value": 300},
            {"op": "not_in", "column": "c", "type": "string", "value": ["a'b", "c"]}
        ]});
        assert_eq!(
            filter(&expr).unwrap(),
            "((\"id\" = CAST('300' AS BIGINT)) AND (\"c\" NOT IN ('a''b', 'c')))"
        );
        let dec = json!({"op": "lt", "column": "p", "type": "decimal(10, 2)", "value": "1.50"});
        assert_eq!(
            filter(&dec).unwrap(),
            "(\"p\" < CAST('1.50' AS DECIMAL(10,2)))"
        );
    }
}

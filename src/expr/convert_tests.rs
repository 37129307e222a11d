//! Tests of `convert`.

use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::expr::Like;
use datafusion::prelude::*;

use super::*;
use crate::spec::{NestedField, StructType, Type};
use crate::to_arrow::schema_to_arrow;

use BinaryOp as B;
use Literal as L;
use Predicate as P;
use PrimitiveType as T;

fn schema() -> Schema {
    let p = |id, name: &str, ty: T| NestedField::optional(id, name, ty);
    let inner = StructType::new(vec![p(19, "x", T::Int)]);
    Schema::new(
        0,
        vec![
            p(1, "i", T::Int),
            p(2, "l", T::Long),
            p(3, "f", T::Float),
            p(4, "d", T::Double),
            p(
                5,
                "dec",
                T::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            p(6, "dt", T::Date),
            p(7, "ts", T::Timestamp),
            p(8, "tstz", T::Timestamptz),
            p(9, "tsns", T::TimestampNs),
            p(10, "tstzns", T::TimestamptzNs),
            p(11, "t", T::Time),
            p(12, "s", T::String),
            p(13, "b", T::Binary),
            p(14, "u", T::Uuid),
            p(15, "fx", T::Fixed(4)),
            p(16, "flag", T::Boolean),
            p(
                17,
                "big",
                T::Decimal {
                    precision: 38,
                    scale: 10,
                },
            ),
            NestedField::optional(18, "st", Type::Struct(inner)),
            p(40, "geom", T::Geometry { crs: None }),
            p(41, "var", T::Variant),
            p(42, "unk", T::Unknown),
        ],
    )
}

fn r(name: &str) -> Reference {
    let schema = schema();
    let field = schema.field_by_name(name).unwrap();
    Reference {
        field_id: field.id,
        name: name.to_string(),
        ty: field.field_type.as_primitive().unwrap().clone(),
    }
}

fn bin(op: BinaryOp, name: &str, value: Literal) -> Predicate {
    P::Binary {
        op,
        term: r(name),
        value,
    }
}

fn un(op: UnaryOp, name: &str) -> Predicate {
    P::Unary { op, term: r(name) }
}

fn set(op: SetOp, name: &str, values: Vec<Literal>) -> Predicate {
    P::Set {
        op,
        term: r(name),
        values,
    }
}

fn conv(e: &Expr) -> Option<Predicate> {
    convert(e, &schema())
}

fn sv(v: ScalarValue) -> Expr {
    lit(v)
}

fn cast_to(e: Expr, ty: DataType) -> Expr {
    cast(e, ty)
}

fn check(cases: Vec<(Expr, Option<Predicate>)>) {
    let wrong: Vec<String> = cases
        .into_iter()
        .filter_map(|(e, expected)| {
            let got = conv(&e);
            (got != expected).then(|| format!("{e}\n  got      {got:?}\n  expected {expected:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

const DAY_2024_01_01: i32 = 19_723;
const US_2024_01_01: i64 = 1_704_067_200_000_000;

/// The filter DataFusion's SQL planner and optimizer make of `WHERE <filter>` over the
/// test schema: the coerced shapes a table provider receives.
async fn sql_filter(filter: &str) -> Option<Expr> {
    let arrow = Arc::new(schema_to_arrow(&schema()).unwrap());
    let ctx = SessionContext::new();
    let table = MemTable::try_new(arrow, vec![vec![]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let plan = ctx
        .sql(&format!("SELECT * FROM t WHERE {filter}"))
        .await
        .unwrap()
        .into_optimized_plan()
        .unwrap();
    let mut found = None;
    plan.apply(|p| {
        if let LogicalPlan::Filter(f) = p {
            found = Some(f.predicate.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    found
}

#[tokio::test]
async fn sql_filters_convert() {
    let f32_01 = 0.1_f32;
    let cases: Vec<(&str, Option<Predicate>)> = vec![
        ("i = 5", Some(bin(B::Eq, "i", L::Int(5)))),
        ("5 < i", Some(bin(B::Gt, "i", L::Int(5)))),
        ("5 >= i", Some(bin(B::LtEq, "i", L::Int(5)))),
        ("i <> 5", Some(bin(B::NotEq, "i", L::Int(5)))),
        // CAST(i AS BIGINT) against a value no int holds.
        ("i < 3000000000", Some(bin(B::LtEq, "i", L::Int(i32::MAX)))),
        ("i > 3000000000", Some(P::AlwaysFalse)),
        (
            "i >= -3000000000",
            Some(bin(B::GtEq, "i", L::Int(i32::MIN))),
        ),
        ("i = 3000000000", Some(P::AlwaysFalse)),
        ("i <> 3000000000", Some(un(UnaryOp::NotNull, "i"))),
        ("i < 2.5", Some(bin(B::LtEq, "i", L::Int(2)))),
        // CAST(l AS DOUBLE): exact where every long is a double.
        ("l < 2.5", Some(bin(B::LtEq, "l", L::Long(2)))),
        ("l >= 2.5", Some(bin(B::GtEq, "l", L::Long(3)))),
        ("l >= -2.5", Some(bin(B::GtEq, "l", L::Long(-2)))),
        ("l = 2.5", Some(P::AlwaysFalse)),
        ("l > 1e20", Some(P::AlwaysFalse)),
        ("l < 1e20", Some(bin(B::LtEq, "l", L::Long(i64::MAX)))),
        ("l > 1e17", None),
        ("f > 1.5", Some(bin(B::Gt, "f", L::Float(1.5)))),
        ("f > 0.1", Some(bin(B::GtEq, "f", L::Float(f32_01)))),
        (
            "f < 0.1",
            Some(bin(B::LtEq, "f", L::Float(f32_01.next_down()))),
        ),
        ("f = 0.1", Some(P::AlwaysFalse)),
        ("d > 1", Some(bin(B::Gt, "d", L::Double(1.0)))),
        ("d <= 0.1", Some(bin(B::LtEq, "d", L::Double(0.1)))),
        ("dec > 1.5", Some(bin(B::Gt, "dec", L::Decimal(150)))),
        ("dec = 1", Some(bin(B::Eq, "dec", L::Decimal(100)))),
        ("dec > 1.555", Some(bin(B::GtEq, "dec", L::Decimal(156)))),
        ("dec <= -1.555", Some(bin(B::LtEq, "dec", L::Decimal(-156)))),
        ("dec = 1.555", Some(P::AlwaysFalse)),
        (
            "big > 1.5",
            Some(bin(B::Gt, "big", L::Decimal(15_000_000_000))),
        ),
        (
            "dt = DATE '2024-01-01'",
            Some(bin(B::Eq, "dt", L::Date(DAY_2024_01_01))),
        ),
        (
            "dt < '2024-01-01'",
            Some(bin(B::Lt, "dt", L::Date(DAY_2024_01_01))),
        ),
        // CAST(dt AS TIMESTAMP(ns)): days are midnights.
        (
            "dt < TIMESTAMP '2024-01-01 10:00:00'",
            Some(bin(B::LtEq, "dt", L::Date(DAY_2024_01_01))),
        ),
        (
            "dt > TIMESTAMP '2024-01-01 10:00:00'",
            Some(bin(B::GtEq, "dt", L::Date(DAY_2024_01_01 + 1))),
        ),
        (
            "dt >= TIMESTAMP '2024-01-01 00:00:00'",
            Some(bin(B::GtEq, "dt", L::Date(DAY_2024_01_01))),
        ),
        (
            "ts > '2024-01-01'",
            Some(bin(B::Gt, "ts", L::Timestamp(US_2024_01_01))),
        ),
        (
            "tstz > '2024-01-01'",
            Some(bin(B::Gt, "tstz", L::Timestamptz(US_2024_01_01))),
        ),
        (
            "tstz > TIMESTAMP '2024-01-01 00:00:00'",
            Some(bin(B::Gt, "tstz", L::Timestamptz(US_2024_01_01))),
        ),
        (
            "tstz > TIMESTAMPTZ '2024-01-01 02:00:00+02:00'",
            Some(bin(B::Gt, "tstz", L::Timestamptz(US_2024_01_01))),
        ),
        (
            "tsns > TIMESTAMP '2024-01-01 00:00:00'",
            Some(bin(B::Gt, "tsns", L::TimestampNs(US_2024_01_01 * 1000))),
        ),
        (
            "tstzns <= '2024-01-01T00:00:00Z'",
            Some(bin(
                B::LtEq,
                "tstzns",
                L::TimestamptzNs(US_2024_01_01 * 1000),
            )),
        ),
        (
            "t > '10:00:00'",
            Some(bin(B::Gt, "t", L::Time(36_000_000_000))),
        ),
        ("s = 'a'", Some(bin(B::Eq, "s", L::String("a".into())))),
        ("s >= 'a'", Some(bin(B::GtEq, "s", L::String("a".into())))),
        (
            "s LIKE 'ab%'",
            Some(bin(B::StartsWith, "s", L::String("ab".into()))),
        ),
        (
            "s NOT LIKE 'ab%'",
            Some(bin(B::NotStartsWith, "s", L::String("ab".into()))),
        ),
        (
            "starts_with(s, 'ab')",
            Some(bin(B::StartsWith, "s", L::String("ab".into()))),
        ),
        (
            "s LIKE 'abc'",
            Some(bin(B::Eq, "s", L::String("abc".into()))),
        ),
        ("s LIKE 'a_c%'", None),
        ("s LIKE '%bc'", None),
        ("s LIKE 'a%c'", None),
        ("s ILIKE 'ab%'", None),
        (
            "s IN ('a', NULL)",
            Some(bin(B::Eq, "s", L::String("a".into()))),
        ),
        ("i NOT IN (1, NULL)", Some(P::AlwaysFalse)),
        (
            "i IN (1, 2, 3, 4)",
            Some(set(
                SetOp::In,
                "i",
                vec![L::Int(1), L::Int(2), L::Int(3), L::Int(4)],
            )),
        ),
        (
            "i IN (1, 2, 4, 3000000000)",
            Some(set(SetOp::In, "i", vec![L::Int(1), L::Int(2), L::Int(4)])),
        ),
        (
            "i NOT IN (1, 2, 4, 3000000000)",
            Some(set(
                SetOp::NotIn,
                "i",
                vec![L::Int(1), L::Int(2), L::Int(4)],
            )),
        ),
        (
            "i BETWEEN 1 AND 5",
            Some(bin(B::GtEq, "i", L::Int(1)).and(bin(B::LtEq, "i", L::Int(5)))),
        ),
        (
            "i NOT BETWEEN 1 AND 5",
            Some(bin(B::Lt, "i", L::Int(1)).or(bin(B::Gt, "i", L::Int(5)))),
        ),
        ("b = X'0102'", Some(bin(B::Eq, "b", L::Binary(vec![1, 2])))),
        (
            "u = X'000102030405060708090a0b0c0d0e0f'",
            Some(bin(B::Eq, "u", L::Uuid(std::array::from_fn(|i| i as u8)))),
        ),
        ("flag", Some(bin(B::Eq, "flag", L::Boolean(true)))),
        ("NOT flag", Some(bin(B::Eq, "flag", L::Boolean(false)))),
        ("flag IS TRUE", Some(bin(B::Eq, "flag", L::Boolean(true)))),
        (
            "flag IS NOT TRUE",
            Some(bin(B::Eq, "flag", L::Boolean(false)).or(un(UnaryOp::IsNull, "flag"))),
        ),
        ("isnan(d)", Some(un(UnaryOp::IsNan, "d"))),
        ("NOT isnan(f)", Some(un(UnaryOp::NotNan, "f"))),
        ("i IS NULL", Some(un(UnaryOp::IsNull, "i"))),
        ("s IS NOT NULL", Some(un(UnaryOp::NotNull, "s"))),
        ("i IS NOT DISTINCT FROM 5", Some(bin(B::Eq, "i", L::Int(5)))),
        (
            "i IS DISTINCT FROM 5",
            Some(bin(B::NotEq, "i", L::Int(5)).or(un(UnaryOp::IsNull, "i"))),
        ),
        (
            "NOT (i > 5 AND s = 'a')",
            Some(bin(B::LtEq, "i", L::Int(5)).or(bin(B::NotEq, "s", L::String("a".into())))),
        ),
        (
            "i > 5 OR l < 3",
            Some(bin(B::Gt, "i", L::Int(5)).or(bin(B::Lt, "l", L::Long(3)))),
        ),
        (
            "ts > TIMESTAMP '2024-01-01 00:00:00.000001500'",
            Some(bin(B::Gt, "ts", L::Timestamp(US_2024_01_01 + 1))),
        ),
        (
            "dt BETWEEN '2024-01-01' AND '2024-01-31'",
            Some(bin(B::GtEq, "dt", L::Date(DAY_2024_01_01)).and(bin(
                B::LtEq,
                "dt",
                L::Date(DAY_2024_01_01 + 30),
            ))),
        ),
        (
            "i IN (1, NULL, 2, 3, 4)",
            Some(set(SetOp::In, "i", (1..=4).map(L::Int).collect())),
        ),
        (
            "l IN (1, 2, 3, 4.5)",
            Some(set(SetOp::In, "l", (1..=3).map(L::Long).collect())),
        ),
        (
            "f IN (1.5, 2.5, 3.5, 0.1)",
            Some(set(
                SetOp::In,
                "f",
                vec![L::Float(1.5), L::Float(2.5), L::Float(3.5)],
            )),
        ),
        ("s LIKE 'a!%%' ESCAPE '!'", None),
        ("CAST(i AS VARCHAR) < '5'", None),
        ("i + 1 > 5", None),
        ("i = l", None),
        ("lower(s) = 'a'", None),
        ("i > 5 AND lower(s) = 'a'", None),
    ];
    let mut wrong = Vec::new();
    for (filter, expected) in cases {
        let expr = sql_filter(filter).await.unwrap();
        let got = conv(&expr);
        if got != expected {
            wrong.push(format!(
                "WHERE {filter}: {expr}\n  got      {got:?}\n  expected {expected:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn literal_types_convert_to_the_column_type() {
    let ts = |v| Some(bin(B::Gt, "ts", L::Timestamp(v)));
    let utc = |v| ScalarValue::TimestampMicrosecond(Some(v), Some("UTC".into()));
    check(vec![
        // Integers of every width.
        (col("i").eq(lit(5_i8)), Some(bin(B::Eq, "i", L::Int(5)))),
        (col("i").eq(lit(5_u64)), Some(bin(B::Eq, "i", L::Int(5)))),
        (col("l").eq(lit(5_i16)), Some(bin(B::Eq, "l", L::Long(5)))),
        (
            col("l").lt(lit(u64::MAX)),
            Some(bin(B::LtEq, "l", L::Long(i64::MAX))),
        ),
        (col("l").gt(lit(u64::MAX)), Some(P::AlwaysFalse)),
        (
            col("i").gt_eq(lit(i64::MIN)),
            Some(bin(B::GtEq, "i", L::Int(i32::MIN))),
        ),
        // Floats.
        (
            col("d").eq(lit(1.5_f32)),
            Some(bin(B::Eq, "d", L::Double(1.5))),
        ),
        (
            col("d").lt(lit(f64::INFINITY)),
            Some(bin(B::Lt, "d", L::Double(f64::INFINITY))),
        ),
        (col("d").eq(lit(f64::NAN)), None),
        (
            col("f").eq(lit(0.5_f32)),
            Some(bin(B::Eq, "f", L::Float(0.5))),
        ),
        (
            col("f").eq(lit(3_i32)),
            Some(bin(B::Eq, "f", L::Float(3.0))),
        ),
        (col("f").eq(lit(16_777_217_i32)), None),
        (
            col("f").gt(lit(1e300_f64)),
            Some(bin(B::GtEq, "f", L::Float(f32::INFINITY))),
        ),
        // Decimals of other scales.
        (
            col("dec").eq(sv(ScalarValue::Decimal128(Some(15), 5, 1))),
            Some(bin(B::Eq, "dec", L::Decimal(150))),
        ),
        (
            col("dec").lt(sv(ScalarValue::Decimal128(Some(1555), 6, 3))),
            Some(bin(B::LtEq, "dec", L::Decimal(155))),
        ),
        (
            col("dec").eq(sv(ScalarValue::Decimal128(Some(1), 3, -2))),
            Some(bin(B::Eq, "dec", L::Decimal(10_000))),
        ),
        (
            col("dec").eq(sv(ScalarValue::Decimal64(Some(12345), 10, 4))),
            Some(P::AlwaysFalse),
        ),
        (
            col("dec").lt(lit(1_000_000_000_i64)),
            Some(bin(B::LtEq, "dec", L::Decimal(9_999_999_999))),
        ),
        (
            col("dec").eq(lit(1.5_f64)),
            Some(bin(B::Eq, "dec", L::Decimal(150))),
        ),
        (col("dec").eq(lit(0.123_f64)), None),
        (col("big").eq(lit(1.5_f64)), None),
        (
            col("i").eq(sv(ScalarValue::Decimal128(Some(200), 5, 2))),
            Some(bin(B::Eq, "i", L::Int(2))),
        ),
        (
            col("i").lt(sv(ScalarValue::Decimal128(Some(-250), 5, 2))),
            Some(bin(B::LtEq, "i", L::Int(-3))),
        ),
        // Dates.
        (
            col("dt").eq(sv(ScalarValue::Date32(Some(7)))),
            Some(bin(B::Eq, "dt", L::Date(7))),
        ),
        (
            col("dt").eq(sv(ScalarValue::Date64(Some(2 * 86_400_000)))),
            Some(bin(B::Eq, "dt", L::Date(2))),
        ),
        (
            col("dt").eq(sv(ScalarValue::Date64(Some(1)))),
            Some(P::AlwaysFalse),
        ),
        // Timestamps in every unit.
        (
            col("ts").gt(sv(ScalarValue::TimestampSecond(Some(1), None))),
            ts(1_000_000),
        ),
        (
            col("ts").gt(sv(ScalarValue::TimestampMillisecond(Some(1), None))),
            ts(1_000),
        ),
        (
            col("ts").gt(sv(ScalarValue::TimestampMicrosecond(Some(1), None))),
            ts(1),
        ),
        (
            col("ts").gt(sv(ScalarValue::TimestampNanosecond(Some(1_000), None))),
            ts(1),
        ),
        (
            col("ts").gt(sv(ScalarValue::TimestampNanosecond(Some(1_500), None))),
            Some(bin(B::GtEq, "ts", L::Timestamp(2))),
        ),
        (
            col("ts").lt(sv(ScalarValue::TimestampNanosecond(Some(-1_500), None))),
            Some(bin(B::LtEq, "ts", L::Timestamp(-2))),
        ),
        (
            col("ts").eq(sv(ScalarValue::TimestampNanosecond(Some(1_500), None))),
            Some(P::AlwaysFalse),
        ),
        (
            col("ts").gt(sv(ScalarValue::Date32(Some(1)))),
            ts(86_400_000_000),
        ),
        (
            col("tsns").gt(sv(ScalarValue::TimestampSecond(Some(1), None))),
            Some(bin(B::Gt, "tsns", L::TimestampNs(1_000_000_000))),
        ),
        (
            col("tstzns").eq(sv(ScalarValue::TimestampMillisecond(
                Some(1),
                Some("+00:00".into()),
            ))),
            Some(bin(B::Eq, "tstzns", L::TimestamptzNs(1_000_000))),
        ),
        // Zones: a UTC instant is the same instant; a zone-less value on a UTC column is
        // read as UTC; a zoned value on a zone-less column is ambiguous.
        (
            col("tstz").gt(sv(utc(1))),
            Some(bin(B::Gt, "tstz", L::Timestamptz(1))),
        ),
        (
            col("tstz").gt(sv(ScalarValue::TimestampMicrosecond(
                Some(1),
                Some("+02:00".into()),
            ))),
            Some(bin(B::Gt, "tstz", L::Timestamptz(1))),
        ),
        (
            col("tstz").gt(sv(ScalarValue::TimestampMicrosecond(Some(1), None))),
            Some(bin(B::Gt, "tstz", L::Timestamptz(1))),
        ),
        (col("ts").gt(sv(utc(1))), ts(1)),
        (
            col("ts").gt(sv(ScalarValue::TimestampMicrosecond(
                Some(1),
                Some("+02:00".into()),
            ))),
            None,
        ),
        // Times.
        (
            col("t").eq(sv(ScalarValue::Time32Second(Some(10)))),
            Some(bin(B::Eq, "t", L::Time(10_000_000))),
        ),
        (
            col("t").lt(sv(ScalarValue::Time64Nanosecond(Some(1_500)))),
            Some(bin(B::LtEq, "t", L::Time(1))),
        ),
        // Strings and bytes in every encoding.
        (
            col("s").eq(sv(ScalarValue::Utf8View(Some("a".into())))),
            Some(bin(B::Eq, "s", L::String("a".into()))),
        ),
        (
            col("s").eq(sv(ScalarValue::LargeUtf8(Some("a".into())))),
            Some(bin(B::Eq, "s", L::String("a".into()))),
        ),
        (col("s").eq(lit(5)), None),
        (
            col("b").eq(sv(ScalarValue::Binary(Some(vec![1])))),
            Some(bin(B::Eq, "b", L::Binary(vec![1]))),
        ),
        (
            col("b").eq(sv(ScalarValue::LargeBinary(Some(vec![1])))),
            Some(bin(B::Eq, "b", L::Binary(vec![1]))),
        ),
        (
            col("b").eq(sv(ScalarValue::BinaryView(Some(vec![1])))),
            Some(bin(B::Eq, "b", L::Binary(vec![1]))),
        ),
        (
            col("b").eq(sv(ScalarValue::FixedSizeBinary(1, Some(vec![1])))),
            Some(bin(B::Eq, "b", L::Binary(vec![1]))),
        ),
        (
            col("fx").eq(sv(ScalarValue::FixedSizeBinary(4, Some(vec![1, 2, 3, 4])))),
            Some(bin(B::Eq, "fx", L::Fixed(vec![1, 2, 3, 4]))),
        ),
        (
            col("fx").eq(sv(ScalarValue::Binary(Some(vec![1, 2, 3])))),
            None,
        ),
        (
            col("u").eq(sv(ScalarValue::Binary(Some(vec![1, 2, 3])))),
            None,
        ),
        (
            col("flag").eq(lit(true)),
            Some(bin(B::Eq, "flag", L::Boolean(true))),
        ),
        (
            col("flag").not_eq(lit(false)),
            Some(bin(B::NotEq, "flag", L::Boolean(false))),
        ),
        // NULL literals: no row matches, negated or not.
        (
            col("i").eq(sv(ScalarValue::Int32(None))),
            Some(P::AlwaysFalse),
        ),
        (
            col("i").lt(sv(ScalarValue::Null)).not(),
            Some(P::AlwaysFalse),
        ),
        // Unknown and nested columns, column-to-column.
        (col("nope").eq(lit(1)), None),
        (col("st").is_null(), None),
        (col("i").eq(col("l")), None),
        (lit(1).eq(lit(1)), None),
    ]);
}

#[test]
fn casts_on_the_column() {
    let ns = |u| DataType::Timestamp(TimeUnit::Nanosecond, u);
    let us = |u| DataType::Timestamp(TimeUnit::Microsecond, u);
    check(vec![
        // Lossless widenings are looked through.
        (
            cast_to(col("i"), DataType::Int64).eq(lit(5_i64)),
            Some(bin(B::Eq, "i", L::Int(5))),
        ),
        (
            try_cast(col("i"), DataType::Int64).eq(lit(5_i64)),
            Some(bin(B::Eq, "i", L::Int(5))),
        ),
        (
            cast_to(cast_to(col("i"), DataType::Int64), DataType::Float64).lt(lit(2.5)),
            Some(bin(B::LtEq, "i", L::Int(2))),
        ),
        (
            cast_to(col("f"), DataType::Float64).eq(lit(0.5)),
            Some(bin(B::Eq, "f", L::Float(0.5))),
        ),
        (
            cast_to(col("s"), DataType::Utf8).eq(lit("a")),
            Some(bin(B::Eq, "s", L::String("a".into()))),
        ),
        (
            cast_to(col("s"), DataType::LargeUtf8).like(lit("a%")),
            Some(bin(B::StartsWith, "s", L::String("a".into()))),
        ),
        (
            cast_to(col("fx"), DataType::Binary)
                .eq(sv(ScalarValue::Binary(Some(vec![1, 2, 3, 4])))),
            Some(bin(B::Eq, "fx", L::Fixed(vec![1, 2, 3, 4]))),
        ),
        (
            cast_to(col("dec"), DataType::Decimal128(12, 3)).eq(sv(ScalarValue::Decimal128(
                Some(1500),
                12,
                3,
            ))),
            Some(bin(B::Eq, "dec", L::Decimal(150))),
        ),
        (
            cast_to(col("i"), DataType::Decimal128(12, 2)).gt(sv(ScalarValue::Decimal128(
                Some(150),
                12,
                2,
            ))),
            Some(bin(B::GtEq, "i", L::Int(2))),
        ),
        (
            cast_to(col("dt"), DataType::Date64).eq(sv(ScalarValue::Date64(Some(86_400_000)))),
            Some(bin(B::Eq, "dt", L::Date(1))),
        ),
        (
            cast_to(col("ts"), ns(None))
                .gt(sv(ScalarValue::TimestampNanosecond(Some(1_500), None))),
            Some(bin(B::GtEq, "ts", L::Timestamp(2))),
        ),
        (
            cast_to(col("ts"), us(Some("+00:00".into()))).gt(sv(
                ScalarValue::TimestampMicrosecond(Some(1), Some("+00:00".into())),
            )),
            Some(bin(B::Gt, "ts", L::Timestamp(1))),
        ),
        (
            cast_to(col("tstz"), us(None)).gt(sv(ScalarValue::TimestampMicrosecond(Some(1), None))),
            Some(bin(B::Gt, "tstz", L::Timestamptz(1))),
        ),
        (
            cast_to(col("t"), DataType::Time64(TimeUnit::Nanosecond))
                .eq(sv(ScalarValue::Time64Nanosecond(Some(2_000)))),
            Some(bin(B::Eq, "t", L::Time(2))),
        ),
        // long -> double is exact only below 2^53; int -> float below 2^24.
        (
            cast_to(col("l"), DataType::Float64).lt(lit(2.5)),
            Some(bin(B::LtEq, "l", L::Long(2))),
        ),
        (cast_to(col("l"), DataType::Float64).lt(lit(1e16)), None),
        (
            cast_to(col("i"), DataType::Float32).lt(lit(2.5_f32)),
            Some(bin(B::LtEq, "i", L::Int(2))),
        ),
        (cast_to(col("i"), DataType::Float32).lt(lit(3e7_f32)), None),
        (
            cast_to(col("i"), DataType::Float32).lt(lit(2_147_483_648.0_f32)),
            None,
        ),
        (
            cast_to(col("i"), DataType::Float32).lt(lit(1e10_f32)),
            Some(bin(B::LtEq, "i", L::Int(i32::MAX))),
        ),
        // decimal(P <= 15) -> double: the literal must be a column value's image.
        (
            cast_to(col("dec"), DataType::Float64).eq(lit(0.1)),
            Some(bin(B::Eq, "dec", L::Decimal(10))),
        ),
        (
            cast_to(col("dec"), DataType::Float64).gt(lit(1.5)),
            Some(bin(B::Gt, "dec", L::Decimal(150))),
        ),
        (cast_to(col("dec"), DataType::Float64).gt(lit(0.123)), None),
        (cast_to(col("big"), DataType::Float64).gt(lit(1.5)), None),
        // Narrowing or lossy casts are not.
        (cast_to(col("l"), DataType::Int32).eq(lit(5)), None),
        (cast_to(col("d"), DataType::Float32).eq(lit(0.5_f32)), None),
        (cast_to(col("f"), DataType::Int32).eq(lit(1)), None),
        (cast_to(col("s"), DataType::Int32).eq(lit(1)), None),
        (cast_to(col("i"), DataType::Utf8).eq(lit("1")), None),
        (
            cast_to(col("dec"), DataType::Decimal128(9, 2)).eq(lit(1)),
            None,
        ),
        (
            cast_to(col("dec"), DataType::Decimal128(12, 1)).eq(lit(1)),
            None,
        ),
        (
            cast_to(col("i"), DataType::Decimal128(9, 0)).eq(lit(1)),
            None,
        ),
        (cast_to(col("i"), DataType::Int16).eq(lit(1_i16)), None),
        (
            cast_to(col("tsns"), us(None)).gt(sv(ScalarValue::TimestampMicrosecond(Some(1), None))),
            None,
        ),
        (
            cast_to(col("ts"), DataType::Date32).eq(sv(ScalarValue::Date32(Some(1)))),
            None,
        ),
        (
            cast_to(col("ts"), us(Some("America/New_York".into()))).gt(sv(
                ScalarValue::TimestampMicrosecond(Some(1), Some("America/New_York".into())),
            )),
            None,
        ),
        // A TRY_CAST that can overflow would give NULL instead of failing.
        (
            try_cast(col("ts"), ns(None))
                .gt(sv(ScalarValue::TimestampNanosecond(Some(1_000), None))),
            None,
        ),
        (try_cast(col("ts"), ns(None)).is_null(), None),
        (
            cast_to(col("i"), DataType::Int64).is_null(),
            Some(un(UnaryOp::IsNull, "i")),
        ),
        // Casts of the literal are folded.
        (
            col("i").eq(cast_to(lit(5_i64), DataType::Int32)),
            Some(bin(B::Eq, "i", L::Int(5))),
        ),
    ]);
}

#[test]
fn negation_follows_three_valued_logic() {
    let null_i = || sv(ScalarValue::Int32(None));
    let in_null = || col("i").in_list(vec![lit(1), null_i()], false);
    let not_in_null = || col("i").in_list(vec![lit(1), null_i()], true);
    check(vec![
        (
            col("i").lt(lit(5)).not(),
            Some(bin(B::GtEq, "i", L::Int(5))),
        ),
        (
            col("i").lt(lit(5)).not().not(),
            Some(bin(B::Lt, "i", L::Int(5))),
        ),
        (col("i").is_null().not(), Some(un(UnaryOp::NotNull, "i"))),
        (
            col("i").gt(null_i()).not().or(col("i").eq(lit(1))),
            Some(bin(B::Eq, "i", L::Int(1))),
        ),
        (col("i").gt(-lit(5)), Some(bin(B::Gt, "i", L::Int(-5)))),
        (in_null(), Some(bin(B::Eq, "i", L::Int(1)))),
        (in_null().not(), Some(P::AlwaysFalse)),
        (not_in_null(), Some(P::AlwaysFalse)),
        (not_in_null().not(), Some(bin(B::Eq, "i", L::Int(1)))),
        (
            col("i").in_list(vec![lit(1), lit(2)], false).not(),
            Some(set(SetOp::NotIn, "i", vec![L::Int(1), L::Int(2)])),
        ),
        (
            col("i").in_list(vec![null_i()], false),
            Some(P::AlwaysFalse),
        ),
        (
            col("i").in_list(vec![lit(1), lit(1)], false),
            Some(bin(B::Eq, "i", L::Int(1))),
        ),
        (col("d").in_list(vec![lit(0.0), lit(1.0)], false), None),
        (
            col("d").in_list(vec![lit(2.0), lit(1.0)], true),
            Some(set(SetOp::NotIn, "d", vec![L::Double(2.0), L::Double(1.0)])),
        ),
        (
            col("d").eq(lit(-0.0)),
            Some(bin(B::Eq, "d", L::Double(0.0))),
        ),
        (
            col("f").gt(lit(-1e-50)),
            Some(bin(B::GtEq, "f", L::Float(0.0))),
        ),
        (
            col("f").lt(lit(-1e-50)),
            Some(bin(B::LtEq, "f", L::Float(-f32::from_bits(1)))),
        ),
        // BETWEEN with a NULL bound: `i >= NULL AND i <= 5` is never TRUE but FALSE above 5.
        (col("i").between(null_i(), lit(5)), Some(P::AlwaysFalse)),
        (
            col("i").between(null_i(), lit(5)).not(),
            Some(bin(B::Gt, "i", L::Int(5))),
        ),
        (
            col("i").not_between(null_i(), lit(5)),
            Some(bin(B::Gt, "i", L::Int(5))),
        ),
        (
            col("i").between(lit(1), lit(5)).not(),
            Some(bin(B::Lt, "i", L::Int(1)).or(bin(B::Gt, "i", L::Int(5)))),
        ),
        // NULL in AND / OR.
        (
            col("i").eq(lit(1)).or(sv(ScalarValue::Boolean(None))),
            Some(bin(B::Eq, "i", L::Int(1))),
        ),
        (
            col("i").eq(lit(1)).or(sv(ScalarValue::Boolean(None))).not(),
            Some(P::AlwaysFalse),
        ),
        (
            col("i").eq(lit(1)).and(sv(ScalarValue::Boolean(None))),
            Some(P::AlwaysFalse),
        ),
        (lit(true), Some(P::AlwaysTrue)),
        (lit(true).not(), Some(P::AlwaysFalse)),
        (sv(ScalarValue::Boolean(None)).not(), Some(P::AlwaysFalse)),
        // IS [NOT] TRUE / FALSE / UNKNOWN.
        (
            col("i").gt(lit(5)).is_true(),
            Some(bin(B::Gt, "i", L::Int(5))),
        ),
        (
            col("i").gt(lit(5)).is_false(),
            Some(bin(B::LtEq, "i", L::Int(5))),
        ),
        (col("i").gt(lit(5)).is_not_true(), None),
        (
            col("i").gt(lit(5)).is_not_true().not(),
            Some(bin(B::Gt, "i", L::Int(5))),
        ),
        (
            col("i").gt(lit(5)).is_not_false().not(),
            Some(bin(B::LtEq, "i", L::Int(5))),
        ),
        (
            col("flag").is_false(),
            Some(bin(B::Eq, "flag", L::Boolean(false))),
        ),
        (
            col("flag").is_not_false(),
            Some(bin(B::Eq, "flag", L::Boolean(true)).or(un(UnaryOp::IsNull, "flag"))),
        ),
        (
            col("flag").is_true().not(),
            Some(bin(B::Eq, "flag", L::Boolean(false)).or(un(UnaryOp::IsNull, "flag"))),
        ),
        (col("flag").is_unknown(), Some(un(UnaryOp::IsNull, "flag"))),
        (
            col("flag").is_not_unknown().not(),
            Some(un(UnaryOp::IsNull, "flag")),
        ),
        (col("i").not(), None),
        // IS [NOT] DISTINCT FROM NULL.
        (
            binary_expr(col("i"), Operator::IsNotDistinctFrom, null_i()),
            Some(un(UnaryOp::IsNull, "i")),
        ),
        (
            binary_expr(col("i"), Operator::IsDistinctFrom, null_i()),
            Some(un(UnaryOp::NotNull, "i")),
        ),
        (
            binary_expr(col("i"), Operator::IsDistinctFrom, lit(5)).not(),
            Some(bin(B::Eq, "i", L::Int(5))),
        ),
    ]);
}

#[test]
fn like_patterns() {
    let like = |p: &str, negated: bool, escape: Option<char>, ci: bool| {
        Expr::Like(Like::new(
            negated,
            Box::new(col("s")),
            Box::new(lit(p)),
            escape,
            ci,
        ))
    };
    let s = |v: &str| L::String(v.into());
    check(vec![
        (
            like("ab%", false, None, false),
            Some(bin(B::StartsWith, "s", s("ab"))),
        ),
        (
            like("ab%%", false, None, false),
            Some(bin(B::StartsWith, "s", s("ab"))),
        ),
        (
            like("ab%", true, None, false),
            Some(bin(B::NotStartsWith, "s", s("ab"))),
        ),
        (
            like("ab%", true, None, false).not(),
            Some(bin(B::StartsWith, "s", s("ab"))),
        ),
        (
            like("ab", false, None, false),
            Some(bin(B::Eq, "s", s("ab"))),
        ),
        (
            like("ab", true, None, false),
            Some(bin(B::NotEq, "s", s("ab"))),
        ),
        (
            like("%", false, None, false),
            Some(un(UnaryOp::NotNull, "s")),
        ),
        (like("%", true, None, false), Some(P::AlwaysFalse)),
        (like("a_%", false, None, false), None),
        (like("a%b%", false, None, false), None),
        (
            like("a\\%%", false, None, false),
            Some(bin(B::StartsWith, "s", s("a%"))),
        ),
        // DataFusion's form of `starts_with(s, 'c_')`.
        (
            like("c\\_%", false, None, false),
            Some(bin(B::StartsWith, "s", s("c_"))),
        ),
        (like("c\\x%", false, None, false), None),
        (like("a!%%", false, Some('!'), false), None),
        (like("ab%", false, None, true), None),
        (col("i").like(lit("1%")), None),
        (
            col("s").like(sv(ScalarValue::Utf8(None))),
            Some(P::AlwaysFalse),
        ),
        (col("s").like(col("s")), None),
    ]);
}

#[test]
fn functions() {
    let isnan = |e: Expr| {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            datafusion::functions::math::isnan(),
            vec![e],
        ))
    };
    let starts = |e: Expr, p: Expr| {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            datafusion::functions::string::starts_with(),
            vec![e, p],
        ))
    };
    check(vec![
        (isnan(col("d")), Some(un(UnaryOp::IsNan, "d"))),
        (isnan(col("d")).not(), Some(un(UnaryOp::NotNan, "d"))),
        (
            isnan(cast_to(col("f"), DataType::Float64)),
            Some(un(UnaryOp::IsNan, "f")),
        ),
        (isnan(col("i")), None),
        (
            starts(col("s"), lit("ab")),
            Some(bin(B::StartsWith, "s", L::String("ab".into()))),
        ),
        (
            starts(col("s"), lit("ab")).not(),
            Some(bin(B::NotStartsWith, "s", L::String("ab".into()))),
        ),
        (starts(col("b"), lit("ab")), None),
    ]);
}

#[test]
fn unconvertible_parts() {
    let bad = || col("s").ilike(lit("a%"));
    let good = || col("i").gt(lit(5));
    check(vec![
        (good().and(bad()), None),
        (good().or(bad()), None),
        (good().and(bad()).not(), None),
    ]);
    let filters = vec![
        good().and(bad()),
        col("s").eq(lit("x")),
        col("i").eq(col("l")),
    ];
    let (p, exact) = convert_filters(&filters, &schema());
    assert_eq!(
        p,
        bin(B::Gt, "i", L::Int(5)).and(bin(B::Eq, "s", L::String("x".into())))
    );
    assert_eq!(exact, vec![false, true, false]);
    let (p, exact) = convert_filters(&[], &schema());
    assert_eq!((p, exact), (P::AlwaysTrue, vec![]));
}

/// What "exact" means for floats: DataFusion compares them by IEEE 754 total order (`NaN`
/// above everything) except that `-0.0 = 0.0`, and `IN` compares bit for bit.
#[tokio::test]
async fn datafusion_float_comparison_semantics() {
    let schema = Arc::new(ArrowSchema::new(vec![Field::new(
        "d",
        DataType::Float64,
        true,
    )]));
    let values = Float64Array::from(vec![f64::NAN, -0.0, 0.0, 1.0]);
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)]).unwrap();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let list = "5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0";
    for (filter, expected) in [
        ("d > 5".to_string(), 1),
        ("d <> 1".to_string(), 3),
        ("d = 0.0".to_string(), 2),
        ("d < 0.0".to_string(), 0),
        ("d >= -0.0".to_string(), 4),
        (format!("d IN (0.0, {list})"), 1),
        (format!("d NOT IN (0.0, {list})"), 3),
    ] {
        let batches = ctx
            .sql(&format!("SELECT * FROM t WHERE {filter}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, expected, "WHERE {filter}");
    }
}

/// The rows of the oracle table: column name -> one value per row.
fn oracle_columns() -> Vec<(&'static str, Vec<Option<Literal>>)> {
    let us = US_2024_01_01;
    let day = DAY_2024_01_01;
    let col = |v: Vec<Option<Literal>>| v;
    vec![
        (
            "i",
            col([
                None,
                Some(i32::MIN),
                Some(-3),
                Some(0),
                Some(2),
                Some(3),
                Some(5),
                Some(i32::MAX),
                Some(1),
                Some(4),
            ]
            .map(|v| v.map(L::Int))
            .to_vec()),
        ),
        (
            "l",
            col([
                Some(5),
                None,
                Some(i64::MIN),
                Some(-3),
                Some(2),
                Some(3),
                Some((1 << 53) + 1),
                Some(i64::MAX),
                Some(0),
                Some(1),
            ]
            .map(|v| v.map(L::Long))
            .to_vec()),
        ),
        (
            "f",
            col([
                Some(0.1_f32),
                Some(f32::NAN),
                None,
                Some(-0.0),
                Some(0.0),
                Some(1.5),
                Some(0.1_f32.next_up()),
                Some(f32::INFINITY),
                Some(f32::NEG_INFINITY),
                Some(-f32::from_bits(1)),
            ]
            .map(|v| v.map(L::Float))
            .to_vec()),
        ),
        (
            "d",
            col([
                Some(f64::NAN),
                Some(0.1),
                Some(-0.0),
                None,
                Some(0.0),
                Some(1.0),
                Some(5.0),
                Some(-f64::NAN),
                Some(f64::INFINITY),
                Some(2.5),
            ]
            .map(|v| v.map(L::Double))
            .to_vec()),
        ),
        (
            "dec",
            col([
                Some(150),
                Some(155),
                Some(156),
                Some(-156),
                None,
                Some(100),
                Some(0),
                Some(9_999_999_999),
                Some(10),
                Some(-1),
            ]
            .map(|v| v.map(L::Decimal))
            .to_vec()),
        ),
        (
            "dt",
            col([
                Some(day),
                Some(day - 1),
                Some(day + 1),
                Some(0),
                Some(-1),
                None,
                Some(day + 30),
                Some(day + 31),
                Some(1),
                Some(2),
            ]
            .map(|v| v.map(L::Date))
            .to_vec()),
        ),
        (
            "ts",
            col([
                Some(us),
                Some(us + 1),
                Some(us + 2),
                Some(us - 1),
                Some(0),
                Some(-1),
                None,
                Some(us + 86_400_000_000),
                Some(1),
                Some(2),
            ]
            .map(|v| v.map(L::Timestamp))
            .to_vec()),
        ),
        (
            "s",
            col(["a", "ab", "abc", "b", "", "-", "a%", "ab_", "A", "abd"]
                .map(|v| (v != "-").then(|| L::String(v.into())))
                .to_vec()),
        ),
        (
            "flag",
            col([
                Some(true),
                Some(false),
                None,
                Some(true),
                Some(false),
                None,
                Some(true),
                Some(true),
                Some(false),
                Some(false),
            ]
            .map(|v| v.map(L::Boolean))
            .to_vec()),
        ),
    ]
}

/// A reference evaluator of predicates over one row, with DataFusion's float semantics.
fn eval(p: &Predicate, row: &std::collections::HashMap<i32, Option<Literal>>) -> bool {
    let zero = |l: &Literal| match l {
        L::Float(f) if *f == 0.0 => L::Float(0.0),
        L::Double(f) if *f == 0.0 => L::Double(0.0),
        other => other.clone(),
    };
    let cmp = |a: &Literal, b: &Literal| zero(a).partial_cmp_same_type(&zero(b)).unwrap();
    match p {
        P::AlwaysTrue => true,
        P::AlwaysFalse => false,
        P::And(a, b) => eval(a, row) && eval(b, row),
        P::Or(a, b) => eval(a, row) || eval(b, row),
        P::Unary { op, term } => {
            let v = row[&term.field_id].as_ref();
            let nan = v.map(|v| {
                matches!(v, L::Float(f) if f.is_nan()) || matches!(v, L::Double(f) if f.is_nan())
            });
            match op {
                UnaryOp::IsNull => v.is_none(),
                UnaryOp::NotNull => v.is_some(),
                UnaryOp::IsNan => nan == Some(true),
                UnaryOp::NotNan => nan == Some(false),
            }
        }
        P::Binary { op, term, value } => {
            let Some(v) = row[&term.field_id].as_ref() else {
                return false;
            };
            let starts = || match (v, value) {
                (L::String(a), L::String(b)) => a.starts_with(b.as_str()),
                _ => panic!("prefix of {v:?}"),
            };
            let ord = cmp(v, value);
            match op {
                B::Lt => ord.is_lt(),
                B::LtEq => ord.is_le(),
                B::Gt => ord.is_gt(),
                B::GtEq => ord.is_ge(),
                B::Eq => ord.is_eq(),
                B::NotEq => ord.is_ne(),
                B::StartsWith => starts(),
                B::NotStartsWith => !starts(),
            }
        }
        P::Set { op, term, values } => {
            let Some(v) = row[&term.field_id].as_ref() else {
                return false;
            };
            let found = values.iter().any(|x| cmp(v, x).is_eq());
            (*op == SetOp::In) == found
        }
    }
}

/// Every converted filter selects exactly the rows DataFusion selects, on rows chosen at
/// the edges (NULLs, type limits, NaN, signed zeros, values next to the literals).
#[tokio::test]
async fn converted_filters_select_the_rows_datafusion_selects() {
    let schema = schema();
    let columns = oracle_columns();
    let rows = columns[0].1.len();
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (name, values) in &columns {
        let field = schema.field_by_name(name).unwrap();
        let ty = field.field_type.as_primitive().unwrap();
        fields.push(crate::to_arrow::field_to_arrow(field, true, name).unwrap());
        let scalars = values
            .iter()
            .map(|v| crate::to_arrow::literal_to_scalar(v.as_ref(), ty).unwrap());
        arrays.push(ScalarValue::iter_to_array(scalars).unwrap());
    }
    fields.push(Field::new("rid", DataType::Int64, false));
    arrays.push(Arc::new(
        datafusion::arrow::array::Int64Array::from_iter_values(0..rows as i64),
    ));
    let arrow = Arc::new(ArrowSchema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&arrow), arrays).unwrap();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(arrow, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let row_values: Vec<std::collections::HashMap<i32, Option<Literal>>> = (0..rows)
        .map(|r| {
            columns
                .iter()
                .map(|(name, values)| (schema.field_by_name(name).unwrap().id, values[r].clone()))
                .collect()
        })
        .collect();
    let filters = [
        "i < 3000000000",
        "NOT (i < 3000000000)",
        "i >= -3000000000",
        "i <> 3000000000",
        "i < 2.5",
        "NOT (i < 2.5)",
        "i IN (1, NULL, 2, 3, 4)",
        "NOT (i IN (1, NULL, 2, 3, 4))",
        "i NOT IN (1, NULL)",
        "NOT (i NOT IN (1, NULL))",
        "i NOT IN (1, 2, 4, 3000000000)",
        "i BETWEEN 1 AND 4",
        "i NOT BETWEEN 1 AND 4",
        "NOT (i > NULL) OR i = 5",
        "i IS DISTINCT FROM 5",
        "i IS NOT DISTINCT FROM 5",
        "NOT (i IS NULL)",
        "l < 2.5",
        "l >= 2.5",
        "NOT (l >= -2.5)",
        "l = 2.5",
        "l <> 2.5",
        "l > 1e20",
        "l < 1e20",
        "l IN (1, 2, 3, 4.5)",
        "l > 9007199254740992",
        "f > 0.1",
        "f < 0.1",
        "f >= 0.1",
        "f <= 0.1",
        "f = 0.1",
        "f <> 0.1",
        "NOT (f > 0.1)",
        "f > 1.5",
        "f = 0",
        "f < 0",
        "f >= 0",
        "f > -1e-50",
        "f < -1e-50",
        "isnan(f)",
        "NOT isnan(f)",
        "f IN (1.5, 2.5, 3.5, 0.1)",
        "d > 1",
        "d <= 0.1",
        "d = 0",
        "d = -0.0",
        "d <> 0",
        "d > -0.0",
        "NOT (d > 2)",
        "d < 5",
        "isnan(d)",
        "NOT isnan(d)",
        "d IN (2.5, 5, 6, 7)",
        "d NOT IN (2.5, 5, 6, 7)",
        "dec > 1.5",
        "dec > 1.555",
        "dec <= -1.555",
        "dec = 1.555",
        "NOT (dec = 1.555)",
        "dec = 1",
        "dec < 100000000",
        "NOT (dec > 1.555)",
        "dt < TIMESTAMP '2024-01-01 10:00:00'",
        "dt > TIMESTAMP '2024-01-01 10:00:00'",
        "NOT (dt >= TIMESTAMP '2024-01-01 00:00:01')",
        "dt = TIMESTAMP '2024-01-01 10:00:00'",
        "dt BETWEEN '2024-01-01' AND '2024-01-31'",
        "dt NOT BETWEEN '2024-01-01' AND '2024-01-31'",
        "ts > TIMESTAMP '2024-01-01 00:00:00.000001500'",
        "NOT (ts > TIMESTAMP '2024-01-01 00:00:00.000001500')",
        "ts <= '2024-01-01'",
        "ts = TIMESTAMP '2024-01-01 00:00:00.000001500'",
        "s LIKE 'ab%'",
        "s NOT LIKE 'ab%'",
        "NOT (s LIKE 'ab%')",
        "s LIKE 'ab'",
        "starts_with(s, 'a')",
        "NOT starts_with(s, 'a')",
        "s IN ('a', NULL)",
        "NOT (s IN ('a', NULL))",
        "s >= 'ab'",
        "flag",
        "NOT flag",
        "flag IS TRUE",
        "flag IS NOT TRUE",
        "flag IS FALSE",
        "flag IS NOT FALSE",
        "NOT (flag IS NOT FALSE)",
        "flag IS UNKNOWN",
        "flag IS NOT UNKNOWN",
        "flag = false",
        "NOT (i > 2 AND s LIKE 'a%')",
        "NOT (i > 2 OR flag)",
        "i > 2 AND (l < 3 OR d > 1)",
    ];
    let mut unconverted = Vec::new();
    for filter in filters {
        let batches = ctx
            .sql(&format!("SELECT rid FROM t WHERE {filter}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let mut expected: Vec<i64> = Vec::new();
        for b in &batches {
            let ids = b
                .column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                .unwrap();
            expected.extend(ids.values().iter());
        }
        expected.sort_unstable();
        let expr = sql_filter_over(&ctx, filter).await;
        let Some(p) = conv(&expr) else {
            unconverted.push(format!("{filter}: {expr}"));
            continue;
        };
        let got: Vec<i64> = (0..rows)
            .filter(|r| eval(&p, &row_values[*r]))
            .map(|r| r as i64)
            .collect();
        assert_eq!(
            got, expected,
            "WHERE {filter}\n  as {expr}\n  converted to {p:?}"
        );
    }
    assert!(unconverted.is_empty(), "not converted: {unconverted:?}");
}

async fn sql_filter_over(ctx: &SessionContext, filter: &str) -> Expr {
    let plan = ctx
        .sql(&format!("SELECT rid FROM t WHERE {filter}"))
        .await
        .unwrap()
        .into_optimized_plan()
        .unwrap();
    let mut found = None;
    plan.apply(|p| {
        if let LogicalPlan::Filter(f) = p {
            found = Some(f.predicate.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    found.unwrap()
}

#[test]
fn columns_without_value_bounds_are_never_pruning_terms() {
    // Geometry bounds are bounding-box corners and variants have no order: a filter on them
    // must stay with DataFusion, even a null test.
    for name in ["geom", "var", "unk"] {
        for e in [
            col(name).is_null(),
            col(name).is_not_null(),
            col(name).eq(sv(ScalarValue::Binary(Some(vec![1, 2])))),
        ] {
            assert_eq!(conv(&e), None, "{e}");
        }
    }
    check(vec![(col("b").is_null(), Some(un(UnaryOp::IsNull, "b")))]);
}

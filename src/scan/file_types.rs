//! Which Arrow types a data file may hold a table column as.
//!
//! A Parquet file reaches the scan as the Arrow schema the parquet crate derives from it; the
//! table's column (matched by field id) has the Arrow type of its Iceberg type
//! (`src/to_arrow.rs`). DataFusion casts one into the other, and it casts almost anything
//! (`Int64` to `Boolean` is `value != 0`), so before it does, [`check_column`] allows only:
//!
//! - the same Iceberg type, in any representation Parquet readers produce for it: strings as
//!   `Utf8`, `LargeUtf8` or `Utf8View`, binary as `Binary`, `LargeBinary` or `BinaryView` (and
//!   one as the other, as PyIceberg and Java read unannotated byte arrays), dictionary-encoded
//!   values, decimals of any Arrow width;
//! - the spec's type promotions ("Schema Evolution"): int -> long, float -> double,
//!   decimal(P, S) -> decimal(P', S) with P' >= P, and from v3 date -> timestamp / timestamp_ns
//!   (an all-null column, like v3's unknown, reads as any type);
//! - narrower storage of the same kind of value, as PyIceberg and Java read it: 8/16-bit and
//!   unsigned integers that fit, float16, `Date64` for date, `Time32` (ms, s) for time,
//!   `Timestamp` in s or ms for timestamp / timestamptz (the micros they become are exact);
//!   INT96 timestamps are read as micros ([`crate::scan`] asks DataFusion to), as Java does;
//! - fixed(16) for uuid (PyIceberg: pyarrow reads a Parquet UUID as fixed(16));
//! - struct, list and map when their children are allowed (children matched by field id);
//! - for `variant`, a struct of exactly the binary `metadata` and `value` (an unshredded
//!   variant; a shredded one, with `typed_value`, is refused as not supported yet: dropping
//!   `typed_value` would lose the values stored there); for `geometry` / `geography`, binary WKB.
//!
//! `unknown` columns are never read from a file (spec: they have no file column); the adapter
//! reads them as NULL whatever a file holds under their field id.
//!
//! Nanosecond timestamps are not micros: a `timestamp` column stored in ns (or `timestamp_ns`
//! stored in µs) is refused, as PyIceberg refuses it by default (it would truncate or invent
//! precision), and so is a zoned timestamp read as `timestamp` (an instant is not a wall-clock
//! time; PyIceberg refuses it too). Anything else is refused with a reason naming the column
//! and its field id, like PyIceberg's "Cannot promote long to boolean"; the scan makes it an
//! `Error::Corrupt` of the file.

use datafusion::arrow::datatypes::{DataType, Field, Fields, TimeUnit};

use crate::spec::FormatVersion;
use crate::to_arrow::variant::is_variant;
use crate::to_arrow::{EXTENSION_NAME_KEY, FIELD_ID_KEY, WKB_EXTENSION};

/// Why a file's column cannot be read as the table's column: it names the column (its path,
/// `c.element` for a list's element), its field id and both types.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "column '{column}'{} is stored as {stored}, which cannot be read as {read_as}: {}",
    FieldId(*.field_id),
    match .why {
        Why::NotAPromotion => "only the spec's type promotions are allowed",
        Why::ShreddedVariant => "shredded variants are not supported yet",
    }
)]
pub(crate) struct Refusal {
    /// The column's path in the table (`c.element`, `point.x`).
    pub(crate) column: String,
    /// The table column's field id, when its Arrow field carries one.
    pub(crate) field_id: Option<i32>,
    /// The Arrow type the file stores.
    pub(crate) stored: DataType,
    /// The Iceberg type of the table's column (`long`, `a struct`).
    pub(crate) read_as: String,
    /// Why: a file that is wrong, or one icefloe cannot read yet.
    pub(crate) why: Why,
}

/// Why a [`Refusal`]: the file's type is not one the table's may be read from (the file is
/// wrong for the table), or it is a representation icefloe does not read yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Neither the same type nor a spec promotion.
    NotAPromotion,
    /// A variant stored shredded (`typed_value`), which icefloe cannot read yet.
    ShreddedVariant,
}

/// ` (field id 3)`, or nothing without an id.
struct FieldId(Option<i32>);

impl std::fmt::Display for FieldId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(id) => write!(f, " (field id {id})"),
            None => Ok(()),
        }
    }
}

type Checked = Result<(), Refusal>;

/// Checks that `file`, the data file's column, may be read as the table's column `table`.
pub(crate) fn check_column(table: &Field, file: &Field, version: FormatVersion) -> Checked {
    check_field(table, file, version, table.name())
}

/// Checks the column `file` of a delete file, which must hold field `id` as `table_type`.
pub(crate) fn check_delete_column(file: &Field, table_type: &DataType, id: i32) -> Checked {
    let metadata = [(FIELD_ID_KEY.to_string(), id.to_string())].into();
    let table = Field::new(file.name(), table_type.clone(), true).with_metadata(metadata);
    // Delete files exist from v2 on; v3's promotions (date -> timestamp) never apply to keys
    // of the same column anyway.
    check_column(&table, file, FormatVersion::V3)
}

fn check_field(table: &Field, file: &Field, version: FormatVersion, path: &str) -> Checked {
    let mismatch = || Err(mismatch(table, file, path));
    if is_variant(table) {
        return check_variant(table, file, path);
    }
    match (table.data_type(), file.data_type()) {
        (_, DataType::Dictionary(_, values)) => {
            let values = file
                .as_ref()
                .clone()
                .with_data_type(values.as_ref().clone());
            check_field(table, &values, version, path)
        }
        (DataType::Struct(t), DataType::Struct(f)) => check_struct(t, f, version, path),
        (DataType::List(t), DataType::List(f) | DataType::LargeList(f))
        | (DataType::List(t), DataType::FixedSizeList(f, _)) => {
            check_field(t, f, version, &format!("{path}.element"))
        }
        (DataType::Map(t, _), DataType::Map(f, _)) => check_map(t, f, version, path),
        (t, f) if !t.is_nested() && !f.is_nested() => match readable_as(f, t, version) {
            true => Ok(()),
            false => mismatch(),
        },
        _ => mismatch(),
    }
}

/// A variant is read from a struct of exactly `metadata` and `value`, both binary.
fn check_variant(table: &Field, file: &Field, path: &str) -> Checked {
    let DataType::Struct(parts) = file.data_type() else {
        return Err(mismatch(table, file, path));
    };
    let binary = |name: &str| {
        parts
            .find(name)
            .is_some_and(|(_, f)| is_bytes(f.data_type()))
    };
    if binary("metadata") && parts.find("typed_value").is_some() {
        let mut refusal = mismatch(table, file, path);
        refusal.why = Why::ShreddedVariant;
        return Err(refusal);
    }
    match parts.len() == 2 && binary("metadata") && binary("value") {
        true => Ok(()),
        false => Err(mismatch(table, file, path)),
    }
}

fn check_struct(table: &Fields, file: &Fields, version: FormatVersion, path: &str) -> Checked {
    let by_id = file.iter().any(|f| field_id(f).is_some());
    for child in table {
        let found = file.iter().find(|f| match by_id {
            true => field_id(f).is_some() && field_id(f) == field_id(child),
            false => f.name() == child.name(),
        });
        if let Some(found) = found {
            check_field(child, found, version, &format!("{path}.{}", child.name()))?;
        }
    }
    Ok(())
}

fn check_map(table: &Field, file: &Field, version: FormatVersion, path: &str) -> Checked {
    let (DataType::Struct(t), DataType::Struct(f)) = (table.data_type(), file.data_type()) else {
        return Err(mismatch(table, file, path));
    };
    for (index, part) in ["key", "value"].iter().enumerate() {
        let (Some(t), Some(f)) = (t.get(index), f.get(index)) else {
            return Err(mismatch(table, file, path));
        };
        check_field(t, f, version, &format!("{path}.{part}"))?;
    }
    Ok(())
}

/// Whether a primitive file type may be read as the table's primitive type `table`.
fn readable_as(file: &DataType, table: &DataType, version: FormatVersion) -> bool {
    use DataType as D;
    let v3 = version >= FormatVersion::V3;
    match (table, file) {
        (_, D::Null) => true, // an all-null column (v3 `unknown`) reads as nulls of any type
        (D::Boolean, D::Boolean) => true,
        (D::Int32, D::Int8 | D::Int16 | D::Int32 | D::UInt8 | D::UInt16) => true,
        (D::Int64, D::Int8 | D::Int16 | D::Int32 | D::Int64) => true,
        (D::Int64, D::UInt8 | D::UInt16 | D::UInt32) => true,
        (D::Float32, D::Float16 | D::Float32) => true,
        (D::Float64, D::Float16 | D::Float32 | D::Float64) => true,
        (t, f) if t.is_decimal() && f.is_decimal() => decimal_widens(f, t),
        (D::Date32, D::Date32 | D::Date64) => true,
        (D::Time64(TimeUnit::Microsecond), D::Time32(_) | D::Time64(TimeUnit::Microsecond)) => true,
        (D::Timestamp(unit, zone), D::Timestamp(file_unit, file_zone)) => {
            micros_compatible(*unit, *file_unit) && (zone.is_some() || file_zone.is_none())
        }
        (D::Timestamp(_, None), D::Date32) => v3,
        (t, f) if is_text(t) || is_bytes(t) => is_text(f) || is_bytes(f),
        (D::FixedSizeBinary(n), D::FixedSizeBinary(m)) => n == m,
        _ => false,
    }
}

/// Whether a timestamp stored in `file` units reads exactly as `table` units.
fn micros_compatible(table: TimeUnit, file: TimeUnit) -> bool {
    match table {
        TimeUnit::Nanosecond => file == TimeUnit::Nanosecond,
        _ => file != TimeUnit::Nanosecond,
    }
}

fn decimal_widens(file: &DataType, table: &DataType) -> bool {
    let parts = |t: &DataType| match *t {
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => Some((p, s)),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => Some((p, s)),
        _ => None,
    };
    match (parts(file), parts(table)) {
        (Some((p, s)), Some((tp, ts))) => s == ts && p <= tp,
        _ => false,
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_bytes(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

fn is_uuid(field: &Field) -> bool {
    field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str) == Some("arrow.uuid")
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID_KEY)?.parse().ok()
}

/// The refusal of reading the file's `file` as the table's `table` (at `path`).
fn mismatch(table: &Field, file: &Field, path: &str) -> Refusal {
    Refusal {
        column: path.to_string(),
        field_id: field_id(table),
        stored: file.data_type().clone(),
        read_as: iceberg_name(table),
        why: Why::NotAPromotion,
    }
}

/// The Iceberg type whose Arrow form `field` has (`src/to_arrow.rs`), for messages.
fn iceberg_name(field: &Field) -> String {
    use DataType as D;
    if is_variant(field) {
        return "variant".into();
    }
    if field.extension_type_name() == Some(WKB_EXTENSION) {
        return "geometry / geography (WKB)".into();
    }
    match field.data_type() {
        D::Boolean => "boolean".into(),
        D::Int32 => "int".into(),
        D::Int64 => "long".into(),
        D::Float32 => "float".into(),
        D::Float64 => "double".into(),
        D::Decimal128(p, s) => format!("decimal({p}, {s})"),
        D::Date32 => "date".into(),
        D::Time64(_) => "time".into(),
        D::Timestamp(TimeUnit::Nanosecond, None) => "timestamp_ns".into(),
        D::Timestamp(TimeUnit::Nanosecond, Some(_)) => "timestamptz_ns".into(),
        D::Timestamp(_, None) => "timestamp".into(),
        D::Timestamp(_, Some(_)) => "timestamptz".into(),
        t if is_text(t) => "string".into(),
        t if is_bytes(t) => "binary".into(),
        D::FixedSizeBinary(16) if is_uuid(field) => "uuid".into(),
        D::FixedSizeBinary(n) => format!("fixed[{n}]"),
        D::Struct(_) => "a struct".into(),
        D::List(_) => "a list".into(),
        D::Map(..) => "a map".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    use datafusion::arrow::datatypes::DataType as D;

    fn with_id(ty: D, id: i32) -> Field {
        Field::new("c", ty, true)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    }

    fn readable(table: D, file: D, version: FormatVersion) -> bool {
        check_column(&with_id(table, 1), &with_id(file, 1), version).is_ok()
    }

    fn us(zone: Option<&str>) -> D {
        D::Timestamp(TimeUnit::Microsecond, zone.map(Into::into))
    }

    fn ns(zone: Option<&str>) -> D {
        D::Timestamp(TimeUnit::Nanosecond, zone.map(Into::into))
    }

    #[test]
    fn the_same_type_and_the_spec_promotions_read() {
        use FormatVersion::{V2, V3};
        let ms = D::Timestamp(TimeUnit::Millisecond, None);
        let dict = D::Dictionary(Box::new(D::Int32), Box::new(D::Utf8));
        for (table, file, version) in [
            (D::Int64, D::Int32, V2),
            (D::Int64, D::UInt32, V2),
            (D::Int32, D::Int16, V2),
            (D::Float64, D::Float32, V2),
            (D::Decimal128(9, 2), D::Decimal128(5, 2), V2),
            (D::Decimal128(9, 2), D::Decimal64(9, 2), V2),
            (D::Utf8View, D::Utf8, V2),
            (D::Utf8View, D::LargeUtf8, V2),
            (D::Utf8View, D::Binary, V2),
            (D::Utf8View, dict, V2),
            (D::BinaryView, D::Binary, V2),
            (D::FixedSizeBinary(16), D::FixedSizeBinary(16), V2),
            (D::Date32, D::Date64, V2),
            (
                D::Time64(TimeUnit::Microsecond),
                D::Time32(TimeUnit::Millisecond),
                V2,
            ),
            (us(None), us(None), V2),
            (us(None), ms, V2),
            (us(Some("+00:00")), us(Some("UTC")), V2),
            (us(Some("+00:00")), us(None), V2),
            (ns(None), ns(None), V3),
            (us(None), D::Date32, V3),
            (ns(None), D::Date32, V3),
            (D::Boolean, D::Null, V3),
        ] {
            assert!(
                readable(table.clone(), file.clone(), version),
                "{file} as {table}"
            );
        }
    }

    #[test]
    fn other_types_are_refused() {
        use FormatVersion::{V2, V3};
        for (table, file, version) in [
            (D::Boolean, D::Int64, V3),
            (D::Int32, D::Int64, V3),
            (D::Int32, D::UInt32, V3),
            (D::Int64, D::UInt64, V3),
            (D::Utf8View, D::Int64, V3),
            (D::Float32, D::Float64, V3),
            (D::Int64, D::Float64, V3),
            (D::Decimal128(9, 2), D::Decimal128(10, 2), V3),
            (D::Decimal128(9, 2), D::Decimal128(9, 3), V3),
            (D::Decimal128(9, 2), D::Int64, V3),
            (D::FixedSizeBinary(16), D::FixedSizeBinary(8), V3),
            (D::FixedSizeBinary(16), D::Binary, V3),
            (D::Date32, us(None), V3),
            (
                D::Time64(TimeUnit::Microsecond),
                D::Time64(TimeUnit::Nanosecond),
                V3,
            ),
            (ns(None), us(None), V3),
            (us(None), ns(None), V3),
            (us(None), us(Some("UTC")), V3),
            (us(Some("+00:00")), D::Date32, V3),
            (us(None), D::Date32, V2),
        ] {
            assert!(
                !readable(table.clone(), file.clone(), version),
                "{file} as {table}"
            );
        }
    }

    #[test]
    fn nested_children_are_checked_by_field_id() {
        let table = D::Struct(Fields::from(vec![
            with_id(D::Int64, 2),
            with_id(D::Boolean, 3),
        ]));
        // Field 3 comes first in the file; field 2 is stored narrower, which is allowed.
        let good = D::Struct(Fields::from(vec![
            with_id(D::Boolean, 3),
            with_id(D::Int32, 2),
        ]));
        let bad = D::Struct(Fields::from(vec![
            with_id(D::Int64, 3),
            with_id(D::Int64, 2),
        ]));
        assert!(readable(table.clone(), good, FormatVersion::V2));
        let err =
            check_column(&with_id(table, 1), &with_id(bad, 1), FormatVersion::V2).unwrap_err();
        let expected = Refusal {
            column: "c.c".into(),
            field_id: Some(3),
            stored: D::Int64,
            read_as: "boolean".into(),
            why: Why::NotAPromotion,
        };
        assert_eq!(err, expected);

        let list = |ty| D::List(Arc::new(with_id(ty, 4)));
        assert!(readable(list(D::Int64), list(D::Int32), FormatVersion::V2));
        assert!(!readable(list(D::Int32), list(D::Int64), FormatVersion::V2));
        assert!(!readable(list(D::Int32), D::Int32, FormatVersion::V2));
    }

    #[test]
    fn the_error_names_the_column_its_id_and_both_types() {
        let table = with_id(D::Boolean, 7).with_name("flag");
        let file = with_id(D::Int64, 7).with_name("flag");
        let text = check_column(&table, &file, FormatVersion::V2)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("column 'flag' (field id 7) is stored as Int64")
                && text.contains("cannot be read as boolean"),
            "{text}"
        );
    }

    #[test]
    fn variants_read_from_unshredded_groups_only() {
        let variant = |children: Vec<Field>| D::Struct(Fields::from(children));
        let part = |name: &str, ty: D| Field::new(name, ty, false);
        let table = with_id(crate::to_arrow::variant::variant_data_type(), 3).with_metadata(
            HashMap::from([
                (FIELD_ID_KEY.to_string(), "3".to_string()),
                (
                    EXTENSION_NAME_KEY.to_string(),
                    "arrow.parquet.variant".to_string(),
                ),
            ]),
        );
        let check = |file: D| check_column(&table, &with_id(file, 3), FormatVersion::V3);
        let unshredded = variant(vec![part("metadata", D::Binary), part("value", D::Binary)]);
        assert_eq!(check(unshredded), Ok(()));
        let views = variant(vec![
            part("value", D::BinaryView),
            part("metadata", D::Binary),
        ]);
        assert_eq!(check(views), Ok(()));

        let shredded = variant(vec![
            part("metadata", D::Binary),
            part("value", D::Binary),
            part("typed_value", D::Int64),
        ]);
        let refusal = check(shredded).unwrap_err();
        assert_eq!(refusal.why, Why::ShreddedVariant);
        assert!(
            refusal
                .to_string()
                .contains("shredded variants are not supported")
        );
        for other in [
            D::Binary,
            variant(vec![part("metadata", D::Binary)]),
            variant(vec![part("metadata", D::Binary), part("value", D::Utf8)]),
            variant(vec![
                part("metadata", D::Binary),
                part("value", D::Binary),
                part("extra", D::Binary),
            ]),
        ] {
            let refusal = check(other.clone()).unwrap_err();
            assert_eq!(refusal.why, Why::NotAPromotion, "{other}");
            assert_eq!(refusal.read_as, "variant");
        }
    }
}

//! Single values of primitive types, in the two forms the spec defines (Appendix D):
//! the binary form used for lower/upper bounds in manifests, and the JSON form used for
//! defaults and for partition values in metadata.

use std::cmp::Ordering;
use std::fmt;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde_json::{Value as JsonValue, json};

use super::types::PrimitiveType;
use crate::error::Error;

const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;

/// Why a value's binary or JSON form (spec Appendix D) cannot be decoded as a given type.
///
/// It converts into an [`Error::Corrupt`] without a path, which keeps it as its source;
/// callers say which value it was ([`Error::within`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A binary form of a length the type does not have.
    #[error("{len} bytes is not a valid {ty} value")]
    Length {
        /// The type the value was decoded as.
        ty: PrimitiveType,
        /// The length of the binary form.
        len: usize,
    },
    /// A `string` value whose bytes are not UTF-8.
    #[error("string value is not UTF-8")]
    NotUtf8,
    /// A JSON form that is not one of the type (a string for an `int`, a malformed date, ...).
    #[error("{json} is not a valid JSON {ty} value")]
    Json {
        /// The type the value was decoded as.
        ty: PrimitiveType,
        /// The JSON text.
        json: String,
    },
    /// A type whose values icefloe cannot hold (`variant`, `geometry`, ...).
    #[error("values of type {0} are not supported")]
    Unsupported(String),
}

impl From<ValueError> for Error {
    fn from(e: ValueError) -> Self {
        Error::corrupt_with("", e.to_string(), e)
    }
}

/// A value of a primitive Iceberg type.
///
/// Temporal values keep the spec's physical representation (days, microseconds or nanoseconds
/// since the epoch; microseconds since midnight), decimals their unscaled value: the type
/// supplies the rest (unit, scale, zone).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `boolean`
    Boolean(bool),
    /// `int`
    Int(i32),
    /// `long`
    Long(i64),
    /// `float`
    Float(f32),
    /// `double`
    Double(f64),
    /// `decimal(P,S)`: the unscaled value.
    Decimal(i128),
    /// `date`: days since 1970-01-01.
    Date(i32),
    /// `time`: microseconds since midnight.
    Time(i64),
    /// `timestamp`: microseconds since the epoch, no zone.
    Timestamp(i64),
    /// `timestamptz`: microseconds since the epoch, UTC.
    Timestamptz(i64),
    /// `timestamp_ns`: nanoseconds since the epoch, no zone.
    TimestampNs(i64),
    /// `timestamptz_ns`: nanoseconds since the epoch, UTC.
    TimestamptzNs(i64),
    /// `string`
    String(String),
    /// `uuid`, as its 16 bytes in big-endian (RFC 4122) order.
    Uuid([u8; 16]),
    /// `fixed[L]`
    Fixed(Vec<u8>),
    /// `binary`
    Binary(Vec<u8>),
}

impl Literal {
    /// Decodes the binary single-value form of a value of type `ty` (spec Appendix D,
    /// "Binary single-value serialization").
    ///
    /// Bounds written before a type promotion keep their old width: a `long` bound may be 4
    /// bytes (written as `int`), a `double` bound 4 bytes (written as `float`), a timestamp
    /// bound may have been written for a `date`. Those are widened here.
    pub fn from_bytes(ty: &PrimitiveType, bytes: &[u8]) -> Result<Self, ValueError> {
        use PrimitiveType as P;
        let wrong = || ValueError::Length {
            ty: ty.clone(),
            len: bytes.len(),
        };
        Ok(match ty {
            P::Boolean => match bytes {
                [b] => Literal::Boolean(*b != 0),
                _ => return Err(wrong()),
            },
            P::Int => Literal::Int(i32::from_le_bytes(bytes.try_into().map_err(|_| wrong())?)),
            P::Date => Literal::Date(i32::from_le_bytes(bytes.try_into().map_err(|_| wrong())?)),
            P::Long => Literal::Long(le_i64_or_i32(bytes).ok_or_else(wrong)?),
            P::Time => Literal::Time(le_i64(bytes).ok_or_else(wrong)?),
            P::Timestamp => Literal::Timestamp(timestamp_or_date(bytes, 1).ok_or_else(wrong)?),
            P::Timestamptz => Literal::Timestamptz(timestamp_or_date(bytes, 1).ok_or_else(wrong)?),
            P::TimestampNs => {
                Literal::TimestampNs(timestamp_or_date(bytes, 1000).ok_or_else(wrong)?)
            }
            P::TimestamptzNs => {
                Literal::TimestamptzNs(timestamp_or_date(bytes, 1000).ok_or_else(wrong)?)
            }
            P::Float => Literal::Float(f32::from_le_bytes(bytes.try_into().map_err(|_| wrong())?)),
            P::Double => match bytes.len() {
                8 => Literal::Double(f64::from_le_bytes(bytes.try_into().map_err(|_| wrong())?)),
                4 => Literal::Double(f64::from(f32::from_le_bytes(
                    bytes.try_into().map_err(|_| wrong())?,
                ))),
                _ => return Err(wrong()),
            },
            P::Decimal { .. } => Literal::Decimal(be_twos_complement(bytes).ok_or_else(wrong)?),
            P::String => {
                Literal::String(String::from_utf8(bytes.to_vec()).map_err(|_| ValueError::NotUtf8)?)
            }
            P::Uuid => Literal::Uuid(bytes.try_into().map_err(|_| wrong())?),
            P::Fixed(_) => Literal::Fixed(bytes.to_vec()),
            P::Binary => Literal::Binary(bytes.to_vec()),
            P::Variant | P::Unknown | P::Geometry { .. } | P::Geography { .. } => {
                return Err(ValueError::Unsupported(ty.to_string()));
            }
        })
    }

    /// Encodes the binary single-value form (spec Appendix D).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Literal::Boolean(b) => vec![u8::from(*b)],
            Literal::Int(v) | Literal::Date(v) => v.to_le_bytes().to_vec(),
            Literal::Long(v)
            | Literal::Time(v)
            | Literal::Timestamp(v)
            | Literal::Timestamptz(v)
            | Literal::TimestampNs(v)
            | Literal::TimestamptzNs(v) => v.to_le_bytes().to_vec(),
            Literal::Float(v) => v.to_le_bytes().to_vec(),
            Literal::Double(v) => v.to_le_bytes().to_vec(),
            Literal::Decimal(v) => minimal_be_twos_complement(*v),
            Literal::String(s) => s.as_bytes().to_vec(),
            Literal::Uuid(u) => u.to_vec(),
            Literal::Fixed(b) | Literal::Binary(b) => b.clone(),
        }
    }

    /// Decodes the JSON single-value form (spec Appendix D, "JSON single-value
    /// serialization") of a value of type `ty`.
    pub fn from_json(ty: &PrimitiveType, v: &JsonValue) -> Result<Self, ValueError> {
        use PrimitiveType as P;
        let wrong = || ValueError::Json {
            ty: ty.clone(),
            json: v.to_string(),
        };
        let s = || v.as_str().ok_or_else(wrong);
        Ok(match ty {
            P::Boolean => Literal::Boolean(v.as_bool().ok_or_else(wrong)?),
            P::Int => Literal::Int(
                v.as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(wrong)?,
            ),
            P::Long => Literal::Long(v.as_i64().ok_or_else(wrong)?),
            P::Float => Literal::Float(json_float(v).ok_or_else(wrong)? as f32),
            P::Double => Literal::Double(json_float(v).ok_or_else(wrong)?),
            P::Decimal { scale, .. } => {
                Literal::Decimal(parse_decimal(s()?, *scale).ok_or_else(wrong)?)
            }
            P::Date => Literal::Date(parse_date(s()?).ok_or_else(wrong)?),
            P::Time => Literal::Time(parse_time(s()?).ok_or_else(wrong)?),
            P::Timestamp => Literal::Timestamp(parse_timestamp(s()?, 1).ok_or_else(wrong)?),
            P::Timestamptz => Literal::Timestamptz(parse_timestamp(s()?, 1).ok_or_else(wrong)?),
            P::TimestampNs => Literal::TimestampNs(parse_timestamp(s()?, 1000).ok_or_else(wrong)?),
            P::TimestamptzNs => {
                Literal::TimestamptzNs(parse_timestamp(s()?, 1000).ok_or_else(wrong)?)
            }
            P::String => Literal::String(s()?.to_string()),
            P::Uuid => Literal::Uuid(parse_uuid(s()?).ok_or_else(wrong)?),
            P::Fixed(_) => Literal::Fixed(parse_hex(s()?).ok_or_else(wrong)?),
            P::Binary => Literal::Binary(parse_hex(s()?).ok_or_else(wrong)?),
            P::Variant | P::Unknown | P::Geometry { .. } | P::Geography { .. } => {
                return Err(ValueError::Unsupported(ty.to_string()));
            }
        })
    }

    /// Encodes the JSON single-value form; `ty` supplies the decimal scale.
    pub fn to_json(&self, ty: &PrimitiveType) -> JsonValue {
        match self {
            Literal::Boolean(b) => json!(b),
            Literal::Int(v) => json!(v),
            Literal::Long(v) => json!(v),
            Literal::Float(v) => json!(v),
            Literal::Double(v) => json!(v),
            Literal::String(s) => json!(s),
            Literal::Fixed(b) | Literal::Binary(b) => json!(hex_upper(b)),
            other => json!(other.display(ty).to_string()),
        }
    }

    /// A displayable form in the spec's human-readable notation (ISO dates and times, decimals
    /// with their scale, hex bytes, uuids with dashes).
    pub fn display<'a>(&'a self, ty: &'a PrimitiveType) -> LiteralDisplay<'a> {
        LiteralDisplay { value: self, ty }
    }

    /// Compares two values of the same type; `None` for values of different kinds.
    /// Floats compare by IEEE total order, strings and bytes lexicographically (unsigned).
    pub fn partial_cmp_same_type(&self, other: &Literal) -> Option<Ordering> {
        use Literal as L;
        Some(match (self, other) {
            (L::Boolean(a), L::Boolean(b)) => a.cmp(b),
            (L::Int(a), L::Int(b)) | (L::Date(a), L::Date(b)) => a.cmp(b),
            (L::Long(a), L::Long(b))
            | (L::Time(a), L::Time(b))
            | (L::Timestamp(a), L::Timestamp(b))
            | (L::Timestamptz(a), L::Timestamptz(b))
            | (L::TimestampNs(a), L::TimestampNs(b))
            | (L::TimestamptzNs(a), L::TimestamptzNs(b)) => a.cmp(b),
            (L::Float(a), L::Float(b)) => a.total_cmp(b),
            (L::Double(a), L::Double(b)) => a.total_cmp(b),
            (L::Decimal(a), L::Decimal(b)) => a.cmp(b),
            (L::String(a), L::String(b)) => a.cmp(b),
            (L::Uuid(a), L::Uuid(b)) => a.cmp(b),
            (L::Fixed(a), L::Fixed(b)) | (L::Binary(a), L::Binary(b)) => a.cmp(b),
            _ => return None,
        })
    }
}

/// See [`Literal::display`].
pub struct LiteralDisplay<'a> {
    value: &'a Literal,
    ty: &'a PrimitiveType,
}

impl fmt::Display for LiteralDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Long(v) => write!(f, "{v}"),
            Literal::Float(v) => write!(f, "{v}"),
            Literal::Double(v) => write!(f, "{v}"),
            Literal::Decimal(v) => {
                let scale = match self.ty {
                    PrimitiveType::Decimal { scale, .. } => *scale,
                    _ => 0,
                };
                f.write_str(&format_decimal(*v, scale))
            }
            Literal::Date(d) => f.write_str(&format_date(*d)),
            Literal::Time(t) => f.write_str(&format_time(*t)),
            Literal::Timestamp(t) => f.write_str(&format_timestamp(*t, 1, false)),
            Literal::Timestamptz(t) => f.write_str(&format_timestamp(*t, 1, true)),
            Literal::TimestampNs(t) => f.write_str(&format_timestamp(*t, 1000, false)),
            Literal::TimestamptzNs(t) => f.write_str(&format_timestamp(*t, 1000, true)),
            Literal::String(s) => f.write_str(s),
            Literal::Uuid(u) => f.write_str(&uuid::Uuid::from_bytes(*u).hyphenated().to_string()),
            Literal::Fixed(b) | Literal::Binary(b) => f.write_str(&hex_upper(b)),
        }
    }
}

fn le_i64(bytes: &[u8]) -> Option<i64> {
    Some(i64::from_le_bytes(bytes.try_into().ok()?))
}

fn le_i64_or_i32(bytes: &[u8]) -> Option<i64> {
    match bytes.len() {
        8 => le_i64(bytes),
        4 => Some(i64::from(i32::from_le_bytes(bytes.try_into().ok()?))),
        _ => None,
    }
}

/// A timestamp bound, or a 4-byte date bound written before a date -> timestamp promotion.
fn timestamp_or_date(bytes: &[u8], per_micro: i64) -> Option<i64> {
    match bytes.len() {
        8 => le_i64(bytes),
        4 => {
            let days = i64::from(i32::from_le_bytes(bytes.try_into().ok()?));
            Some(days * 86_400_000_000 * per_micro)
        }
        _ => None,
    }
}

fn be_twos_complement(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let negative = bytes[0] & 0x80 != 0;
    let mut buf = if negative { [0xffu8; 16] } else { [0u8; 16] };
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

fn minimal_be_twos_complement(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    // Drop leading bytes that only repeat the sign, keeping the sign bit in the first byte.
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

fn json_float(v: &JsonValue) -> Option<f64> {
    match v {
        JsonValue::Number(n) => n.as_f64(),
        JsonValue::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => other.parse().ok(),
        },
        _ => None,
    }
}

/// Parses a decimal string into an unscaled value at `scale`; more fractional digits than the
/// scale is an error (no silent rounding).
pub fn parse_decimal(s: &str, scale: u32) -> Option<i128> {
    let s = s.trim();
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part
        .bytes()
        .chain(frac_part.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let frac_trimmed = frac_part.trim_end_matches('0');
    if frac_trimmed.len() > scale as usize {
        return None;
    }
    let mut unscaled: i128 = 0;
    for b in int_part.bytes() {
        unscaled = unscaled
            .checked_mul(10)?
            .checked_add(i128::from(b - b'0'))?;
    }
    for i in 0..scale as usize {
        let digit = frac_part.as_bytes().get(i).map_or(0, |b| b - b'0');
        unscaled = unscaled.checked_mul(10)?.checked_add(i128::from(digit))?;
    }
    Some(if negative { -unscaled } else { unscaled })
}

/// Formats an unscaled decimal with its scale (`12345`, 2 -> `123.45`).
pub fn format_decimal(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int_part, frac_part) = padded.split_at(padded.len() - scale);
    format!("{sign}{int_part}.{frac_part}")
}

fn parse_date(s: &str) -> Option<i32> {
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(chrono::Datelike::num_days_from_ce(&d) - UNIX_EPOCH_DAYS_FROM_CE)
}

/// ISO date of a day count since the epoch.
pub fn format_date(days: i32) -> String {
    NaiveDate::from_num_days_from_ce_opt(days + UNIX_EPOCH_DAYS_FROM_CE).map_or_else(
        || format!("{days} days"),
        |d| d.format("%Y-%m-%d").to_string(),
    )
}

fn parse_time(s: &str) -> Option<i64> {
    let t = NaiveTime::parse_from_str(s, "%H:%M:%S%.f").ok()?;
    Some(i64::from(t.num_seconds_from_midnight()) * 1_000_000 + i64::from(t.nanosecond() / 1000))
}

fn format_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    format!(
        "{:02}:{:02}:{:02}.{frac:06}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// Parses an ISO-8601 timestamp, with or without a zone offset, into units of
/// `1 / (1_000_000 * per_micro)` seconds since the epoch (UTC when an offset is given).
fn parse_timestamp(s: &str, per_micro: i64) -> Option<i64> {
    let nanos = if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        dt.timestamp_nanos_opt()?
    } else {
        let dt = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
            .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"))
            .ok()?;
        dt.and_utc().timestamp_nanos_opt()?
    };
    Some(if per_micro == 1 {
        nanos.div_euclid(1000)
    } else {
        nanos
    })
}

fn format_timestamp(value: i64, per_micro: i64, with_zone: bool) -> String {
    let (secs, nanos, digits) = if per_micro == 1 {
        (
            value.div_euclid(1_000_000),
            value.rem_euclid(1_000_000) * 1000,
            6,
        )
    } else {
        (
            value.div_euclid(1_000_000_000),
            value.rem_euclid(1_000_000_000),
            9,
        )
    };
    let Some(dt) = DateTime::from_timestamp(secs, nanos as u32) else {
        return format!("{value}");
    };
    let frac = if digits == 6 { nanos / 1000 } else { nanos };
    let zone = if with_zone { "+00:00" } else { "" };
    format!(
        "{}.{frac:0digits$}{zone}",
        dt.naive_utc().format("%Y-%m-%dT%H:%M:%S")
    )
}

fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    uuid::Uuid::parse_str(s).ok().map(|u| *u.as_bytes())
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrimitiveType as P;

    fn dec(p: u32, s: u32) -> P {
        P::Decimal {
            precision: p,
            scale: s,
        }
    }

    #[test]
    fn binary_form_round_trips_for_every_primitive() {
        let cases = [
            (P::Boolean, Literal::Boolean(true)),
            (P::Int, Literal::Int(-7)),
            (P::Long, Literal::Long(i64::MIN)),
            (P::Float, Literal::Float(1.5)),
            (P::Double, Literal::Double(-0.25)),
            (dec(10, 2), Literal::Decimal(-12345)),
            (P::Date, Literal::Date(-1)),
            (P::Time, Literal::Time(81_068_123_456)),
            (P::Timestamp, Literal::Timestamp(-1)),
            (P::Timestamptz, Literal::Timestamptz(1_510_871_468_123_456)),
            (P::TimestampNs, Literal::TimestampNs(1)),
            (P::TimestamptzNs, Literal::TimestamptzNs(2)),
            (P::String, Literal::String("iceberg ❄".into())),
            (P::Uuid, Literal::Uuid([7; 16])),
            (P::Fixed(3), Literal::Fixed(vec![1, 2, 3])),
            (P::Binary, Literal::Binary(vec![0, 255])),
        ];
        for (ty, lit) in cases {
            assert_eq!(
                Literal::from_bytes(&ty, &lit.to_bytes()).unwrap(),
                lit,
                "{ty}"
            );
        }
    }

    #[test]
    fn decimals_use_minimal_big_endian_twos_complement() {
        assert_eq!(Literal::Decimal(0).to_bytes(), vec![0x00]);
        assert_eq!(Literal::Decimal(127).to_bytes(), vec![0x7f]);
        assert_eq!(Literal::Decimal(128).to_bytes(), vec![0x00, 0x80]);
        assert_eq!(Literal::Decimal(-1).to_bytes(), vec![0xff]);
        assert_eq!(Literal::Decimal(-129).to_bytes(), vec![0xff, 0x7f]);
        // The spec's example: 1234.56 as decimal(6,2) -> unscaled 123456 = 0x01E240
        assert_eq!(
            Literal::from_bytes(&dec(6, 2), &[0x01, 0xE2, 0x40]).unwrap(),
            Literal::Decimal(123_456)
        );
    }

    #[test]
    fn promoted_bounds_are_widened() {
        assert_eq!(
            Literal::from_bytes(&P::Long, &5i32.to_le_bytes()).unwrap(),
            Literal::Long(5)
        );
        assert_eq!(
            Literal::from_bytes(&P::Double, &1.5f32.to_le_bytes()).unwrap(),
            Literal::Double(1.5)
        );
        assert_eq!(
            Literal::from_bytes(&P::Timestamp, &1i32.to_le_bytes()).unwrap(),
            Literal::Timestamp(86_400_000_000)
        );
    }

    #[test]
    fn malformed_binary_values_are_errors_not_panics() {
        for (ty, bytes) in [
            (P::Int, &[1, 2][..]),
            (P::Long, &[1, 2, 3]),
            (P::Uuid, &[1]),
            (dec(9, 2), &[]),
            (P::Boolean, &[]),
        ] {
            let err = Literal::from_bytes(&ty, bytes).unwrap_err();
            let expected = ValueError::Length {
                ty: ty.clone(),
                len: bytes.len(),
            };
            assert_eq!(err, expected, "{ty}");
        }
        assert_eq!(
            Literal::from_bytes(&P::String, &[0xff, 0xfe]),
            Err(ValueError::NotUtf8)
        );
        let variant = P::Variant;
        assert_eq!(
            Literal::from_bytes(&variant, &[1]),
            Err(ValueError::Unsupported("variant".into()))
        );
        // Converted, the error is a Corrupt without a path, keeping the value error as its source.
        let err = Error::from(ValueError::NotUtf8).within("lower bound of field 3");
        assert!(
            matches!(&err, Error::Corrupt { path, reason, source: Some(source) }
                if path.is_empty()
                    && reason == "lower bound of field 3: string value is not UTF-8"
                    && source.downcast_ref::<ValueError>() == Some(&ValueError::NotUtf8)),
            "{err:?}"
        );
    }

    #[test]
    fn malformed_json_values_name_the_value_and_type() {
        let err = Literal::from_json(&P::Date, &json!("2024-13-01")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"2024-13-01\" is not a valid JSON date value"
        );
        assert!(Literal::from_json(&P::Int, &json!(1u64 << 40)).is_err());
    }

    #[test]
    fn json_form_matches_the_spec_examples() {
        let cases = [
            (P::Boolean, json!(true), Literal::Boolean(true)),
            (P::Int, json!(34), Literal::Int(34)),
            (dec(9, 2), json!("14.20"), Literal::Decimal(1420)),
            (P::Date, json!("2017-11-16"), Literal::Date(17_486)),
            (
                P::Time,
                json!("22:31:08.123456"),
                Literal::Time(81_068_123_456),
            ),
            (
                P::Timestamp,
                json!("2017-11-16T22:31:08.123456"),
                Literal::Timestamp(1_510_871_468_123_456),
            ),
            (
                P::Timestamptz,
                json!("2017-11-16T22:31:08.123456+00:00"),
                Literal::Timestamptz(1_510_871_468_123_456),
            ),
            (
                P::TimestampNs,
                json!("2017-11-16T22:31:08.123456789"),
                Literal::TimestampNs(1_510_871_468_123_456_789),
            ),
            (
                P::Uuid,
                json!("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
                Literal::Uuid(
                    *uuid::Uuid::parse_str("f79c3e09-677c-4bbd-a479-3f349cb785e7")
                        .unwrap()
                        .as_bytes(),
                ),
            ),
            (P::Binary, json!("0102FF"), Literal::Binary(vec![1, 2, 255])),
        ];
        for (ty, j, lit) in cases {
            assert_eq!(Literal::from_json(&ty, &j).unwrap(), lit, "{ty}");
            assert_eq!(lit.to_json(&ty), j, "{ty}");
        }
        assert_eq!(
            Literal::from_json(&P::Timestamp, &json!("1969-12-31T23:59:59.123456")).unwrap(),
            Literal::Timestamp(-876_544)
        );
    }

    #[test]
    fn decimal_strings_parse_exactly() {
        assert_eq!(parse_decimal("-0.05", 2), Some(-5));
        assert_eq!(parse_decimal("123", 2), Some(12300));
        assert_eq!(parse_decimal("1.234", 2), None);
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(format_decimal(12345, 0), "12345");
        assert_eq!(format_decimal(9_999_999_999, 2), "99999999.99");
    }
}

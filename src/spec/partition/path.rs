//! Human-readable partition values and partition paths, in the form Java writes them
//! (`TransformUtil.human*`, `PartitionSpec.partitionToPath`), so directory names match other
//! engines'.

use std::fmt::Write as _;

use super::Transform;
use super::transform::civil_from_days;
use crate::spec::types::PrimitiveType;
use crate::spec::values::{Literal, format_decimal};

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// See [`Transform::to_human_string`].
pub(super) fn human_string(t: &Transform, ty: &PrimitiveType, v: Option<&Literal>) -> String {
    let Some(v) = v else {
        return "null".into();
    };
    let ordinal = match v {
        Literal::Int(i) | Literal::Date(i) => Some(i64::from(*i)),
        Literal::Long(i) => Some(*i),
        _ => None,
    };
    match (t, ordinal) {
        (Transform::Void, _) => "null".into(),
        (Transform::Year, Some(y)) => format!("{:04}", 1970 + y),
        (Transform::Month, Some(m)) => {
            format!("{:04}-{:02}", 1970 + m.div_euclid(12), 1 + m.rem_euclid(12))
        }
        (Transform::Day, Some(d)) => {
            let (y, m, d) = civil_from_days(d);
            format!("{y:04}-{m:02}-{d:02}")
        }
        (Transform::Hour, Some(h)) => {
            let (y, m, d) = civil_from_days(h.div_euclid(24));
            format!("{y:04}-{m:02}-{d:02}-{:02}", h.rem_euclid(24))
        }
        _ => human_value(v, ty),
    }
}

/// A value's own text, as Java's `toString` of the matching Java value gives it.
fn human_value(v: &Literal, ty: &PrimitiveType) -> String {
    match v {
        Literal::Boolean(b) => b.to_string(),
        Literal::Int(i) => i.to_string(),
        Literal::Long(i) => i.to_string(),
        Literal::Float(f) => java_float(*f),
        Literal::Double(f) => java_float(*f),
        Literal::Decimal(d) => match ty {
            PrimitiveType::Decimal { scale, .. } => format_decimal(*d, *scale),
            _ => d.to_string(),
        },
        Literal::Date(d) => local_date(i64::from(*d)),
        Literal::Time(t) => local_time(t.rem_euclid(SECONDS_PER_DAY * 1_000_000) * 1000),
        Literal::Timestamp(t) => local_date_time(*t, 1000),
        Literal::Timestamptz(t) => local_date_time(*t, 1000) + "Z",
        Literal::TimestampNs(t) => local_date_time(*t, 1),
        Literal::TimestamptzNs(t) => local_date_time(*t, 1) + "Z",
        Literal::String(s) => s.clone(),
        Literal::Uuid(u) => uuid::Uuid::from_bytes(*u).hyphenated().to_string(),
        Literal::Fixed(b) | Literal::Binary(b) => base64(b),
    }
}

/// Java's `Float.toString` / `Double.toString`: plain between 10^-3 and 10^7 (always with a
/// fraction), `d.dddE±n` outside.
fn java_float<T>(x: T) -> String
where
    T: Into<f64> + Copy + std::fmt::Debug + std::fmt::LowerExp,
{
    let f: f64 = x.into();
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 || (1e-3..1e7).contains(&f.abs()) {
        return format!("{x:?}");
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let dot = if mantissa.contains('.') { "" } else { ".0" };
    format!("{mantissa}{dot}E{exp}")
}

/// Java's `LocalDate.toString`: at least four year digits, `+` above 9999.
fn local_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!("{year}-{m:02}-{d:02}")
}

/// Java's `LocalTime.toString` of a nanosecond of the day: `HH:mm`, then `:ss` when seconds
/// or a fraction are set, the fraction in 3, 6 or 9 digits.
fn local_time(nano_of_day: i64) -> String {
    let secs = nano_of_day / NANOS_PER_SECOND;
    let nanos = nano_of_day % NANOS_PER_SECOND;
    let mut s = format!("{:02}:{:02}", secs / 3600, (secs / 60) % 60);
    if secs % 60 != 0 || nanos != 0 {
        let _ = write!(s, ":{:02}", secs % 60);
    }
    if nanos != 0 {
        let _ = if nanos % 1_000_000 == 0 {
            write!(s, ".{:03}", nanos / 1_000_000)
        } else if nanos % 1000 == 0 {
            write!(s, ".{:06}", nanos / 1000)
        } else {
            write!(s, ".{nanos:09}")
        };
    }
    s
}

/// Java's `LocalDateTime.toString` of `value` units of `nanos_per_unit` nanoseconds since the
/// epoch.
fn local_date_time(value: i64, nanos_per_unit: i64) -> String {
    let units_per_second = NANOS_PER_SECOND / nanos_per_unit;
    let secs = value.div_euclid(units_per_second);
    let nanos = value.rem_euclid(units_per_second) * nanos_per_unit;
    let day = secs.div_euclid(SECONDS_PER_DAY);
    let second_of_day = secs.rem_euclid(SECONDS_PER_DAY);
    format!(
        "{}T{}",
        local_date(day),
        local_time(second_of_day * NANOS_PER_SECOND + nanos)
    )
}

/// Standard base64 with padding (Java's `Base64.getEncoder()`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Java's `URLEncoder.encode(s, UTF_8)`: letters, digits and `.-*_` stay, space becomes `+`,
/// every other byte is `%XX`.
pub(super) fn url_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

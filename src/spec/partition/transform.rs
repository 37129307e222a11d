//! The arithmetic of the partition transforms: the bucket hash (spec Appendix B), truncation
//! ("Truncate Transform Details") and the calendar transforms.

use std::io::Cursor;

use super::Transform;
use crate::error::{Error, Result};
use crate::spec::values::Literal;

const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Applies `t` to a non-null value whose type the caller has already checked.
pub(super) fn apply(t: &Transform, v: &Literal) -> Result<Option<Literal>> {
    let result = match t {
        Transform::Identity => v.clone(),
        Transform::Bucket(n) => Literal::Int(bucket(v, *n)?),
        Transform::Truncate(w) => truncate(v, *w)?,
        Transform::Year => Literal::Int(to_i32(t, v, years(v))?),
        Transform::Month => Literal::Int(to_i32(t, v, months(v))?),
        Transform::Day => Literal::Date(to_i32(t, v, days(v))?),
        Transform::Hour => Literal::Int(to_i32(t, v, hours(v))?),
        Transform::Void => return Ok(None),
        Transform::Unknown(name) => {
            return Err(Error::Unsupported(format!(
                "partition transform '{name}' cannot be evaluated"
            )));
        }
    };
    Ok(Some(result))
}

fn to_i32(t: &Transform, v: &Literal, result: Option<i64>) -> Result<i32> {
    let result = result.ok_or_else(|| mismatch(t, v))?;
    i32::try_from(result).map_err(|_| {
        Error::invalid(
            format_args!("value {v:?}"),
            format_args!("{t} gives {result}, outside the int range"),
        )
    })
}

fn mismatch(t: &Transform, v: &Literal) -> Error {
    Error::invalid(
        format_args!("value {v:?}"),
        format_args!("transform {t} does not apply to it"),
    )
}

/// The spec's hash: murmur3 x86 32-bit, seed 0, over the value's hash bytes.
///
/// int and date hash as a long; timestamps in nanoseconds are hashed as microseconds;
/// decimals hash their minimal big-endian two's-complement unscaled bytes.
pub(super) fn hash(v: &Literal) -> Option<i32> {
    let bytes = match v {
        Literal::Int(x) | Literal::Date(x) => i64::from(*x).to_le_bytes().to_vec(),
        Literal::Long(x) | Literal::Time(x) | Literal::Timestamp(x) | Literal::Timestamptz(x) => {
            x.to_le_bytes().to_vec()
        }
        Literal::TimestampNs(x) | Literal::TimestamptzNs(x) => {
            x.div_euclid(1000).to_le_bytes().to_vec()
        }
        Literal::Decimal(_) => v.to_bytes(),
        Literal::String(s) => s.as_bytes().to_vec(),
        Literal::Uuid(u) => u.to_vec(),
        Literal::Fixed(b) | Literal::Binary(b) => b.clone(),
        Literal::Boolean(_) | Literal::Float(_) | Literal::Double(_) => return None,
    };
    // Reading from memory cannot fail.
    let h = murmur3::murmur3_32(&mut Cursor::new(bytes), 0).ok()?;
    Some(h as i32)
}

fn bucket(v: &Literal, n: u32) -> Result<i32> {
    let t = Transform::Bucket(n);
    if n == 0 {
        return Err(Error::invalid("transform bucket[0]", "has no buckets"));
    }
    let h = hash(v).ok_or_else(|| mismatch(&t, v))?;
    let b = i64::from(h & i32::MAX) % i64::from(n);
    // b < min(n, 2^31), so it fits.
    i32::try_from(b).map_err(|_| mismatch(&t, v))
}

fn truncate(v: &Literal, w: u32) -> Result<Literal> {
    if w == 0 {
        return Err(Error::invalid("transform truncate[0]", "has no width"));
    }
    let width = usize::try_from(w).unwrap_or(usize::MAX);
    Ok(match v {
        // Java computes `v - (((v % W) + W) % W)` in the value's own width and wraps.
        Literal::Int(x) => {
            let r = i64::from(*x).rem_euclid(i64::from(w));
            Literal::Int(x.wrapping_sub(r as i32))
        }
        Literal::Long(x) => Literal::Long(x.wrapping_sub(x.rem_euclid(i64::from(w)))),
        Literal::Decimal(x) => x
            .checked_sub(x.rem_euclid(i128::from(w)))
            .map(Literal::Decimal)
            .ok_or_else(|| mismatch(&Transform::Truncate(w), v))?,
        Literal::String(s) => Literal::String(s.chars().take(width).collect()),
        Literal::Binary(b) => Literal::Binary(b[..b.len().min(width)].to_vec()),
        _ => return Err(mismatch(&Transform::Truncate(w), v)),
    })
}

/// Microseconds since the epoch of a timestamp value (nanoseconds rounded down).
fn micros(v: &Literal) -> Option<i64> {
    match v {
        Literal::Timestamp(x) | Literal::Timestamptz(x) => Some(*x),
        Literal::TimestampNs(x) | Literal::TimestamptzNs(x) => Some(x.div_euclid(1000)),
        _ => None,
    }
}

fn days(v: &Literal) -> Option<i64> {
    match v {
        Literal::Date(d) => Some(i64::from(*d)),
        _ => micros(v).map(|m| m.div_euclid(MICROS_PER_DAY)),
    }
}

fn hours(v: &Literal) -> Option<i64> {
    micros(v).map(|m| m.div_euclid(MICROS_PER_HOUR))
}

fn years(v: &Literal) -> Option<i64> {
    days(v).map(|d| civil_from_days(d).0 - 1970)
}

fn months(v: &Literal) -> Option<i64> {
    let (y, m, _) = civil_from_days(days(v)?);
    Some((y - 1970) * 12 + i64::from(m) - 1)
}

/// The proleptic Gregorian (year, month 1-12, day 1-31) of a day count since 1970-01-01
/// (the well-known era-based civil-from-days conversion; exact for every i64 day count we
/// can produce from an i64 of microseconds).
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year, March-based
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // month is in 1..=12 and day in 1..=31 by construction.
    (year, month as u32, day as u32)
}

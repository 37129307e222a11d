//! Avro binary data decoded straight from the bytes into borrowed [`Datum`]s.
//!
//! A writer schema is compiled once into a [`Node`] tree (named types followed, field names
//! and `field-id` attributes kept), and each record is then decoded by walking that tree. A
//! datum borrows its strings and bytes from the decoded block and its field names from the
//! tree, so a record costs one small allocation per record, array or map in it, not one per
//! field name and nullable union as a generic `Value` tree does. Union branches are resolved
//! while decoding: a datum is never a union, only the value of the branch that was written.
//!
//! Logical types decode as their physical type (a `decimal` is its bytes, a `timestamp-micros`
//! a long), except `date`, which keeps its kind so it never widens into a long, and the
//! millisecond time types, never mistaken for Iceberg's microseconds.

use apache_avro::schema::{InnerDecimalSchema, Name, NamesRef, Schema, UuidSchema};

use super::error::AvroError;

/// One node of a compiled writer schema.
#[derive(Debug)]
pub(crate) enum Node {
    Null,
    Boolean,
    Int,
    /// An int with logical type `date`.
    Date,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed(usize),
    /// `time-millis` (an int), `timestamp-millis` or `local-timestamp-millis` (longs).
    Millis {
        int: bool,
    },
    /// An enum, with its number of symbols.
    Enum(usize),
    Array(Box<Node>),
    Map(Box<Node>),
    Record(Box<RecordNode>),
    Union(Vec<Node>),
}

/// A record type of a compiled writer schema.
#[derive(Debug)]
pub(crate) struct RecordNode {
    pub(crate) fields: Vec<FieldNode>,
}

/// One field of a record type, with its Iceberg `field-id` attribute when it has one.
#[derive(Debug)]
pub(crate) struct FieldNode {
    pub(crate) name: String,
    pub(crate) field_id: Option<i32>,
    pub(crate) node: Node,
}

/// A decoded value, borrowing from the block it was decoded from and from its schema.
#[derive(Debug, Clone)]
pub(crate) enum Datum<'a> {
    Null,
    Boolean(bool),
    Int(i32),
    /// Days from the epoch (`date`): kept apart so it never reads as a plain number.
    Date(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
    String(&'a str),
    Fixed(&'a [u8]),
    /// A millisecond time or timestamp (see [`Node::Millis`]); Iceberg has no use for its value.
    Millis,
    /// An enum symbol (checked to exist); Iceberg has no use for its value.
    Enum,
    Array(Vec<Datum<'a>>),
    Map(Vec<(&'a str, Datum<'a>)>),
    Record(&'a RecordNode, Vec<Datum<'a>>),
}

impl Datum<'_> {
    /// The Avro kind, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Datum::Null => "null",
            Datum::Boolean(_) => "boolean",
            Datum::Int(_) => "int",
            Datum::Date(_) => "date",
            Datum::Long(_) => "long",
            Datum::Float(_) => "float",
            Datum::Double(_) => "double",
            Datum::Bytes(_) => "bytes",
            Datum::String(_) => "string",
            Datum::Fixed(_) => "fixed",
            Datum::Millis => "millisecond time",
            Datum::Enum => "enum",
            Datum::Array(_) => "array",
            Datum::Map(_) => "map",
            Datum::Record(..) => "record",
        }
    }
}

/// How deep named types may nest; deeper (or recursive) schemas are refused. Iceberg's
/// deepest, a manifest entry's partition tuple, is three levels down.
const MAX_DEPTH: usize = 64;

/// How many items an array or map of zero-width items (nulls) may hold: such items consume no
/// input, so their count cannot be checked against the bytes left.
const MAX_ZERO_WIDTH_ITEMS: u64 = 1 << 16;

impl Node {
    /// Compiles a parsed writer schema; `names` resolves its references to named types.
    pub(crate) fn compile(schema: &Schema, names: &NamesRef<'_>) -> Result<Node, AvroError> {
        Self::compile_at(schema, names, &mut Vec::new())
    }

    fn compile_at<'s>(
        schema: &'s Schema,
        names: &NamesRef<'s>,
        open: &mut Vec<&'s Name>,
    ) -> Result<Node, AvroError> {
        if open.len() > MAX_DEPTH {
            return Err(AvroError::TooDeep);
        }
        Ok(match schema {
            Schema::Null => Node::Null,
            Schema::Boolean => Node::Boolean,
            Schema::Int => Node::Int,
            Schema::Date => Node::Date,
            Schema::TimeMillis => Node::Millis { int: true },
            Schema::TimestampMillis | Schema::LocalTimestampMillis => Node::Millis { int: false },
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => Node::Long,
            Schema::Float => Node::Float,
            Schema::Double => Node::Double,
            Schema::Bytes | Schema::BigDecimal | Schema::Uuid(UuidSchema::Bytes) => Node::Bytes,
            Schema::String | Schema::Uuid(UuidSchema::String) => Node::String,
            Schema::Decimal(d) => match &d.inner {
                InnerDecimalSchema::Bytes => Node::Bytes,
                InnerDecimalSchema::Fixed(f) => Node::Fixed(f.size),
            },
            Schema::Fixed(f) | Schema::Duration(f) | Schema::Uuid(UuidSchema::Fixed(f)) => {
                Node::Fixed(f.size)
            }
            Schema::Enum(e) => Node::Enum(e.symbols.len()),
            Schema::Array(a) => Node::Array(Box::new(Self::compile_at(&a.items, names, open)?)),
            Schema::Map(m) => Node::Map(Box::new(Self::compile_at(&m.types, names, open)?)),
            Schema::Union(u) => Node::Union(
                u.variants()
                    .iter()
                    .map(|v| Self::compile_at(v, names, open))
                    .collect::<Result<_, _>>()?,
            ),
            Schema::Record(r) => {
                if open.contains(&&r.name) {
                    return Err(AvroError::Recursive(r.name.to_string()));
                }
                open.push(&r.name);
                let fields = r
                    .fields
                    .iter()
                    .map(|f| {
                        Ok(FieldNode {
                            name: f.name.clone(),
                            field_id: attribute_id(&f.custom_attributes, "field-id"),
                            node: Self::compile_at(&f.schema, names, open)?,
                        })
                    })
                    .collect::<Result<_, AvroError>>();
                open.pop();
                Node::Record(Box::new(RecordNode { fields: fields? }))
            }
            Schema::Ref { name } => {
                let target = names
                    .get(name)
                    .ok_or_else(|| AvroError::UnknownType(name.to_string()))?;
                if open.contains(&name) {
                    return Err(AvroError::Recursive(name.to_string()));
                }
                Self::compile_at(target, names, open)?
            }
        })
    }

    /// Decodes one value of this type from the front of `input`.
    pub(crate) fn decode<'a>(&'a self, input: &mut &'a [u8]) -> Result<Datum<'a>, AvroError> {
        Ok(match self {
            Node::Null => Datum::Null,
            Node::Boolean => match take(input, 1)?[0] {
                0 => Datum::Boolean(false),
                1 => Datum::Boolean(true),
                other => return Err(AvroError::InvalidBoolean(other)),
            },
            Node::Int => Datum::Int(read_int(input)?),
            Node::Date => Datum::Date(read_int(input)?),
            Node::Long => Datum::Long(read_long(input)?),
            Node::Millis { int } => {
                if *int {
                    read_int(input)?;
                } else {
                    read_long(input)?;
                }
                Datum::Millis
            }
            Node::Float => Datum::Float(f32::from_le_bytes(fixed_array(input)?)),
            Node::Double => Datum::Double(f64::from_le_bytes(fixed_array(input)?)),
            Node::Bytes => Datum::Bytes(read_bytes(input)?),
            Node::String => Datum::String(
                std::str::from_utf8(read_bytes(input)?)
                    .map_err(|_| AvroError::NotUtf8("a string"))?,
            ),
            Node::Fixed(size) => Datum::Fixed(take(input, *size)?),
            Node::Enum(symbols) => {
                let index = read_long(input)?;
                if usize::try_from(index).map_or(true, |i| i >= *symbols) {
                    return Err(AvroError::EnumIndex(index));
                }
                Datum::Enum
            }
            Node::Array(items) => {
                let mut out = Vec::new();
                read_blocks(input, items.min_width(), &mut out, |input| {
                    items.decode(input)
                })?;
                Datum::Array(out)
            }
            Node::Map(values) => {
                let mut out = Vec::new();
                read_blocks(input, 1, &mut out, |input| {
                    let key = std::str::from_utf8(read_bytes(input)?)
                        .map_err(|_| AvroError::NotUtf8("a map key"))?;
                    Ok((key, values.decode(input)?))
                })?;
                Datum::Map(out)
            }
            Node::Record(record) => {
                let mut fields = Vec::with_capacity(record.fields.len());
                record.decode_into(input, &mut fields)?;
                Datum::Record(record, fields)
            }
            Node::Union(variants) => {
                let index = read_long(input)?;
                let variant = usize::try_from(index)
                    .ok()
                    .and_then(|i| variants.get(i))
                    .ok_or(AvroError::UnionBranch(index))?;
                variant.decode(input)?
            }
        })
    }

    /// The fewest bytes a value of this type takes (0 or 1 is all that matters here).
    fn min_width(&self) -> usize {
        match self {
            Node::Null | Node::Fixed(0) => 0,
            Node::Record(r) => r
                .fields
                .iter()
                .map(|f| f.node.min_width())
                .max()
                .unwrap_or(0),
            _ => 1,
        }
    }
}

impl RecordNode {
    /// Decodes the fields of one record of this type into `out` (appended, in field order).
    pub(crate) fn decode_into<'a>(
        &'a self,
        input: &mut &'a [u8],
        out: &mut Vec<Datum<'a>>,
    ) -> Result<(), AvroError> {
        for field in &self.fields {
            out.push(field.node.decode(input)?);
        }
        Ok(())
    }
}

/// Reads the blocks of an array or map (a count, its items, ..., then a zero count; a negative
/// count is followed by the block's size in bytes) into `out`, one `item` call per item. A
/// count larger than the input could hold is refused before anything is read for it.
fn read_blocks<'a, T>(
    input: &mut &'a [u8],
    item_width: usize,
    out: &mut Vec<T>,
    mut item: impl FnMut(&mut &'a [u8]) -> Result<T, AvroError>,
) -> Result<(), AvroError> {
    let mut total: u64 = 0;
    loop {
        let count = read_long(input)?;
        if count == 0 {
            return Ok(());
        }
        if count < 0 {
            read_long(input)?;
        }
        let count = count.unsigned_abs();
        total = total.saturating_add(count);
        if item_width == 0 && total > MAX_ZERO_WIDTH_ITEMS {
            return Err(AvroError::TooManyEmptyItems(total));
        }
        if item_width > 0 && count > input.len() as u64 {
            return Err(AvroError::ItemsPastEnd {
                count,
                left: input.len(),
            });
        }
        // Bounded: by the bytes left, or by the cap on empty items.
        out.reserve(usize::try_from(count).unwrap_or(0));
        for _ in 0..count {
            out.push(item(input)?);
        }
    }
}

/// Avro's zig-zag variable-length long.
pub(crate) fn read_long(input: &mut &[u8]) -> Result<i64, AvroError> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first().ok_or(AvroError::TruncatedVarint)?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err(AvroError::VarintTooLong)
}

/// An Avro `int`: a zig-zag long that fits in 32 bits.
fn read_int(input: &mut &[u8]) -> Result<i32, AvroError> {
    let v = read_long(input)?;
    i32::try_from(v).map_err(|_| AvroError::IntOutOfRange(v))
}

/// A non-negative long used as a length or count.
pub(crate) fn read_len(input: &mut &[u8]) -> Result<usize, AvroError> {
    let n = read_long(input)?;
    usize::try_from(n).map_err(|_| AvroError::NegativeLength(n))
}

/// Length-prefixed bytes.
fn read_bytes<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], AvroError> {
    let len = read_len(input)?;
    take(input, len)
}

/// The next `N` bytes as an array.
fn fixed_array<const N: usize>(input: &mut &[u8]) -> Result<[u8; N], AvroError> {
    let mut out = [0u8; N];
    out.copy_from_slice(take(input, N)?);
    Ok(out)
}

/// The next `n` bytes.
pub(crate) fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], AvroError> {
    if input.len() < n {
        return Err(AvroError::Truncated {
            needed: n,
            left: input.len(),
        });
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// Reads an integer attribute (`field-id`) of a schema element, written as a number or a
/// numeric string.
fn attribute_id(
    attributes: &std::collections::BTreeMap<String, serde_json::Value>,
    key: &str,
) -> Option<i32> {
    let v = attributes.get(key)?;
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .and_then(|i| i32::try_from(i).ok())
}

#[cfg(test)]
#[path = "datum_tests.rs"]
mod tests;

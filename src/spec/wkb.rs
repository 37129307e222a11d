//! Well-known binary (WKB), the form of `geometry` and `geography` values (spec: Appendix G
//! "Geospatial Notes": OGC Simple Feature Access, ISO WKB). [`validate`] checks that bytes are
//! one whole WKB geometry before a writer stores them; it decodes no coordinates.
//!
//! A geometry is a byte order (`0` big-endian, `1` little-endian), a `u32` type and a body:
//!
//! | type (ISO: + 1000 Z, + 2000 M, + 3000 ZM) | body |
//! |---|---|
//! | 1 Point | one point: 2, 3 or 4 `f64` by dimension |
//! | 2 LineString | `u32` n, n points |
//! | 3 Polygon | `u32` rings, each `u32` n and n points |
//! | 4 MultiPoint, 5 MultiLineString, 6 MultiPolygon | `u32` n, n geometries of type 1, 2, 3 |
//! | 7 GeometryCollection | `u32` n, n geometries of any type |
//!
//! The parts of a multi-geometry or collection have the collection's dimension. Extended WKB
//! (PostGIS' flag bits for Z, M and an embedded SRID) is not ISO WKB and is refused, as are
//! trailing bytes and nesting deeper than [`MAX_DEPTH`].

/// How deep collections may nest.
pub const MAX_DEPTH: usize = 64;

/// Why bytes are not one WKB geometry: what was wrong, at which byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a WKB geometry: {reason} at byte {offset}")]
pub struct WkbError {
    /// The byte where the problem was found.
    pub offset: usize,
    /// What was expected there.
    pub reason: &'static str,
}

/// Checks that `bytes` are exactly one ISO WKB geometry (see the module docs).
pub fn validate(bytes: &[u8]) -> Result<(), WkbError> {
    let mut reader = Reader { bytes, at: 0 };
    reader.geometry(None, MAX_DEPTH)?;
    match reader.at == bytes.len() {
        true => Ok(()),
        false => Err(reader.error("bytes after the geometry")),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// A geometry's header: its base type (1-7) and coordinates per point (2-4).
#[derive(Clone, Copy, PartialEq)]
struct Header {
    base: u32,
    dimensions: usize,
}

impl Reader<'_> {
    fn error(&self, reason: &'static str) -> WkbError {
        WkbError {
            offset: self.at,
            reason,
        }
    }

    /// One geometry; `parent` (the collection's header) constrains its dimension.
    fn geometry(&mut self, parent: Option<Header>, depth: usize) -> Result<Header, WkbError> {
        let little = match self.take(1, "a byte order")? {
            [0] => false,
            [1] => true,
            _ => return Err(self.error("a byte order of 0 or 1")),
        };
        let header = self.header(little)?;
        if parent.is_some_and(|p| p.dimensions != header.dimensions) {
            return Err(self.error("a part of the collection's dimension"));
        }
        let point = header.dimensions * 8;
        match header.base {
            1 => self.skip(point, "a point's coordinates")?,
            2 => self.points(little, point)?,
            3 => {
                for _ in 0..self.count(little, 4)? {
                    self.points(little, point)?;
                }
            }
            4..=7 => self.parts(little, header, depth)?,
            _ => return Err(self.error("a geometry type 1 to 7")),
        }
        Ok(header)
    }

    fn header(&mut self, little: bool) -> Result<Header, WkbError> {
        let code = self.u32(little)?;
        let (base, dimensions) = (code % 1000, code / 1000);
        match dimensions {
            0..=3 => Ok(Header {
                base,
                dimensions: [2, 3, 3, 4][dimensions as usize],
            }),
            _ => Err(self.error("an ISO WKB type code (extended WKB is not ISO WKB)")),
        }
    }

    /// The parts of a multi-geometry (4, 5, 6: all points, lines or polygons) or collection.
    fn parts(&mut self, little: bool, header: Header, depth: usize) -> Result<(), WkbError> {
        let depth = depth
            .checked_sub(1)
            .ok_or_else(|| self.error("collections nested at most 64 deep"))?;
        // Each part takes at least its header and one count or point.
        for _ in 0..self.count(little, 9)? {
            let part = self.geometry(Some(header), depth)?;
            if header.base != 7 && part.base != header.base - 3 {
                return Err(self.error("a part of the multi-geometry's type"));
            }
        }
        Ok(())
    }

    /// A count then that many points of `point` bytes.
    fn points(&mut self, little: bool, point: usize) -> Result<(), WkbError> {
        let n = self.count(little, point)?;
        self.skip(n * point, "the points")
    }

    /// A `u32` count of items of at least `min_size` bytes each, which the bytes left can hold.
    fn count(&mut self, little: bool, min_size: usize) -> Result<usize, WkbError> {
        let n = usize::try_from(self.u32(little)?).map_err(|_| self.error("a count"))?;
        let left = self.bytes.len() - self.at;
        match n.checked_mul(min_size).is_some_and(|need| need <= left) {
            true => Ok(n),
            false => Err(self.error("a count the bytes left can hold")),
        }
    }

    fn u32(&mut self, little: bool) -> Result<u32, WkbError> {
        let bytes: [u8; 4] = self
            .take(4, "a 32-bit integer")?
            .try_into()
            .map_err(|_| self.error("a 32-bit integer"))?;
        Ok(match little {
            true => u32::from_le_bytes(bytes),
            false => u32::from_be_bytes(bytes),
        })
    }

    fn skip(&mut self, n: usize, what: &'static str) -> Result<(), WkbError> {
        self.take(n, what).map(drop)
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8], WkbError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.error(what));
        };
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// WKB packed from the format with Python's `struct` (POINT(1 2) little-endian is also the
    /// example PostGIS documents for `ST_AsBinary`).
    #[test]
    fn documented_geometries_are_valid() {
        for wkb in [
            // POINT(1 2), little- and big-endian
            "0101000000000000000000f03f0000000000000040",
            "00000000013ff00000000000004000000000000000",
            // LINESTRING(0 0, 1 1)
            "01020000000200000000000000000000000000000000000000000000000000f03f000000000000f03f",
            // POLYGON((0 0, 1 0, 1 1, 0 0))
            "0103000000010000000400000000000000000000000000000000000000000000000000f03f0000000000000000000000000000f03f000000000000f03f00000000000000000000000000000000",
            // MULTIPOINT((1 2))
            "0104000000010000000101000000000000000000f03f0000000000000040",
            // POINT Z (1 2 3)
            "01e9030000000000000000f03f00000000000000400000000000000840",
            // GEOMETRYCOLLECTION EMPTY
            "010700000000000000",
        ] {
            assert_eq!(validate(&hex(wkb)), Ok(()), "{wkb}");
        }
    }

    #[test]
    fn other_bytes_are_refused_with_the_place() {
        let point = hex("0101000000000000000000f03f0000000000000040");
        for (bytes, reason) in [
            (vec![], "a byte order"),
            (point[..20].to_vec(), "a point's coordinates"),
            ([&point[..], &[0]].concat(), "bytes after the geometry"),
            (hex("0201000000"), "a byte order of 0 or 1"),
            (hex("0109000000"), "a geometry type 1 to 7"),
            // EWKB: POINT with the SRID flag
            (
                hex("0101000020e6100000000000000000f03f0000000000000040"),
                "an ISO WKB type code",
            ),
            // a line claiming 2^32-1 points
            (hex("0102000000ffffffff"), "a count the bytes left can hold"),
            // MULTIPOINT holding a LINESTRING
            (
                hex("01040000000100000001020000000000000000"),
                "a part of the multi-geometry",
            ),
        ] {
            let err = validate(&bytes).unwrap_err();
            assert!(err.reason.starts_with(reason), "{bytes:02x?}: {err}");
        }
        // Collections nested deeper than MAX_DEPTH.
        let mut deep = Vec::new();
        for _ in 0..=MAX_DEPTH {
            deep.extend(hex("010700000001000000"));
        }
        deep.extend(hex("010700000000000000"));
        let err = validate(&deep).unwrap_err();
        assert!(err.reason.contains("nested"), "{err}");
    }
}

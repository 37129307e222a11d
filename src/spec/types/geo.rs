//! The parameters of the v3 geospatial types (spec: "Primitive Types", `geometry(C)` and
//! `geography(C, A)`; Appendix G "Geospatial Notes") and their string form.
//!
//! Both parameters may be left out: `geometry`, `geography`, `geography(srid:4326)` and
//! `geography(srid:4326, karney)` are all valid. The CRS defaults to [`DEFAULT_CRS`] and the
//! algorithm to `spherical`. The strings are kept as written, so metadata round-trips.

use std::fmt;

use super::{PrimitiveType, corrupt};
use crate::error::Result;

/// The CRS of a geometry or geography type that names none (spec: "If not specified, C is
/// `OGC:CRS84`"): longitude / latitude on WGS84.
pub const DEFAULT_CRS: &str = "OGC:CRS84";

/// How a `geography` interpolates the edge between two points (spec: "Edge-Interpolation
/// Algorithm", Appendix G). Only `spherical` is a true great-circle arc; the others are
/// geodesics on the ellipsoid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeAlgorithm {
    /// `spherical`: edges are the shortest path on a sphere (the default).
    Spherical,
    /// `vincenty`: geodesic on the ellipsoid by Vincenty's formulae.
    Vincenty,
    /// `thomas`: Thomas' second-order approximation.
    Thomas,
    /// `andoyer`: Andoyer-Lambert first-order approximation.
    Andoyer,
    /// `karney`: Karney's exact geodesics.
    Karney,
}

impl EdgeAlgorithm {
    /// Every algorithm, in the spec's order.
    pub const ALL: [EdgeAlgorithm; 5] = [
        Self::Spherical,
        Self::Vincenty,
        Self::Thomas,
        Self::Andoyer,
        Self::Karney,
    ];

    /// The spec's lower-case name (`spherical`, `vincenty`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Spherical => "spherical",
            Self::Vincenty => "vincenty",
            Self::Thomas => "thomas",
            Self::Andoyer => "andoyer",
            Self::Karney => "karney",
        }
    }

    /// The algorithm of a name, ignoring case (Java's `EdgeAlgorithm.fromName`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for EdgeAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `geometry`, `geometry(C)`, `geography`, `geography(C)` or `geography(C, A)` (spaces
/// allowed around the parameters); `None` for any other type string.
pub(super) fn parse(t: &str) -> Result<Option<PrimitiveType>> {
    if let Some(rest) = t.strip_prefix("geometry") {
        let Some(args) = arguments(t, rest)? else {
            return Ok(None);
        };
        if args.contains(',') {
            return Err(corrupt(format!("geometry type '{t}' takes one parameter")));
        }
        let crs = non_empty(args);
        return Ok(Some(PrimitiveType::Geometry { crs }));
    }
    if let Some(rest) = t.strip_prefix("geography") {
        let Some(args) = arguments(t, rest)? else {
            return Ok(None);
        };
        let (crs, algorithm) = match args.split_once(',') {
            Some((crs, algorithm)) => {
                let algorithm = EdgeAlgorithm::from_name(algorithm.trim()).ok_or_else(|| {
                    corrupt(format!("unknown edge-interpolation algorithm in '{t}'"))
                })?;
                (crs, Some(algorithm))
            }
            None => (args, None),
        };
        let crs = non_empty(crs);
        return Ok(Some(PrimitiveType::Geography { crs, algorithm }));
    }
    Ok(None)
}

/// What is between the parentheses after the type name (`""` without any); `None` when the
/// name only starts the word (`geometryx`).
fn arguments<'a>(t: &str, rest: &'a str) -> Result<Option<&'a str>> {
    let rest = rest.trim_start();
    if rest.is_empty() {
        return Ok(Some(""));
    }
    let Some(open) = rest.strip_prefix('(') else {
        return Ok(None);
    };
    open.strip_suffix(')')
        .filter(|args| !args.contains(['(', ')']))
        .map(|args| Some(args.trim()))
        .ok_or_else(|| corrupt(format!("malformed parameters in type '{t}'")))
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// `geometry` or `geometry(C)`, as the type was written.
pub(super) fn fmt_geometry(f: &mut fmt::Formatter<'_>, crs: Option<&str>) -> fmt::Result {
    match crs {
        Some(crs) => write!(f, "geometry({crs})"),
        None => f.write_str("geometry"),
    }
}

/// `geography`, `geography(C)` or `geography(C, A)`, as the type was written (an algorithm
/// without a CRS is shown with [`DEFAULT_CRS`]).
pub(super) fn fmt_geography(
    f: &mut fmt::Formatter<'_>,
    crs: Option<&str>,
    algorithm: Option<EdgeAlgorithm>,
) -> fmt::Result {
    match (crs, algorithm) {
        (None, None) => f.write_str("geography"),
        (Some(crs), None) => write!(f, "geography({crs})"),
        (crs, Some(a)) => write!(f, "geography({}, {a})", crs.unwrap_or(DEFAULT_CRS)),
    }
}

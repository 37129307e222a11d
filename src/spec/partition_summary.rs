//! The manifest list's `partitions` field summaries of a manifest: per partition field, whether
//! any file's value is null or NaN and the lower and upper bound of the other values (in the
//! binary single-value form), computed from the partition tuples of the manifest's files.

use std::cmp::Ordering;

use crate::spec::{FieldSummary, Literal, StructType, Type};

/// The field summaries of a manifest whose files have these partition tuples (in spec field
/// order, as `partition_type` lists the fields). NaN is tracked for float fields only.
pub fn summarize<'a>(
    partition_type: &StructType,
    partitions: impl IntoIterator<Item = &'a [Option<Literal>]>,
) -> Vec<FieldSummary> {
    let mut acc: Vec<Acc> = partition_type
        .fields
        .iter()
        .map(|f| Acc {
            float: matches!(
                f.field_type,
                Type::Primitive(crate::spec::PrimitiveType::Float)
                    | Type::Primitive(crate::spec::PrimitiveType::Double)
            ),
            ..Acc::default()
        })
        .collect();
    for tuple in partitions {
        for (field, value) in acc.iter_mut().zip(tuple) {
            field.add(value.as_ref());
        }
    }
    acc.into_iter().map(Acc::finish).collect()
}

#[derive(Default)]
struct Acc {
    float: bool,
    contains_null: bool,
    contains_nan: bool,
    lower: Option<Literal>,
    upper: Option<Literal>,
}

impl Acc {
    fn add(&mut self, value: Option<&Literal>) {
        let Some(value) = value else {
            self.contains_null = true;
            return;
        };
        if is_nan(value) {
            self.contains_nan = true;
            return;
        }
        if self
            .lower
            .as_ref()
            .is_none_or(|lo| value.partial_cmp_same_type(lo) == Some(Ordering::Less))
        {
            self.lower = Some(value.clone());
        }
        if self
            .upper
            .as_ref()
            .is_none_or(|hi| value.partial_cmp_same_type(hi) == Some(Ordering::Greater))
        {
            self.upper = Some(value.clone());
        }
    }

    fn finish(self) -> FieldSummary {
        FieldSummary {
            contains_null: self.contains_null,
            contains_nan: self.float.then_some(self.contains_nan),
            lower_bound: self.lower.map(|l| l.to_bytes()),
            upper_bound: self.upper.map(|u| u.to_bytes()),
        }
    }
}

fn is_nan(value: &Literal) -> bool {
    match value {
        Literal::Float(f) => f.is_nan(),
        Literal::Double(d) => d.is_nan(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::spec::{NestedField, PrimitiveType};

    fn field(id: i32, ty: PrimitiveType) -> Arc<NestedField> {
        Arc::new(NestedField {
            id,
            name: format!("p{id}"),
            required: false,
            field_type: Type::Primitive(ty),
            doc: None,
            initial_default: None,
            write_default: None,
        })
    }

    #[test]
    fn bounds_nulls_and_nans_per_field() {
        let ty = StructType {
            fields: vec![
                field(1000, PrimitiveType::Int),
                field(1001, PrimitiveType::Double),
            ],
        };
        let tuples = [
            vec![Some(Literal::Int(5)), Some(Literal::Double(f64::NAN))],
            vec![Some(Literal::Int(-3)), Some(Literal::Double(2.5))],
            vec![None, Some(Literal::Double(-1.0))],
        ];
        let s = summarize(&ty, tuples.iter().map(Vec::as_slice));
        assert!(s[0].contains_null);
        assert_eq!(s[0].contains_nan, None);
        assert_eq!(s[0].lower_bound, Some(Literal::Int(-3).to_bytes()));
        assert_eq!(s[0].upper_bound, Some(Literal::Int(5).to_bytes()));
        assert!(!s[1].contains_null);
        assert_eq!(s[1].contains_nan, Some(true));
        assert_eq!(s[1].lower_bound, Some(Literal::Double(-1.0).to_bytes()));
        assert_eq!(s[1].upper_bound, Some(Literal::Double(2.5).to_bytes()));
    }

    #[test]
    fn all_null_fields_have_no_bounds() {
        let ty = StructType {
            fields: vec![field(1000, PrimitiveType::String)],
        };
        let tuples = [vec![None], vec![None]];
        let s = summarize(&ty, tuples.iter().map(Vec::as_slice));
        assert!(s[0].contains_null);
        assert_eq!(
            (s[0].lower_bound.as_ref(), s[0].upper_bound.as_ref()),
            (None, None)
        );
    }
}

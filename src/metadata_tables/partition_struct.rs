//! The `partition` column of the file-level relations: one struct type unifying the partition
//! fields of every spec of the table (by partition field id, as PyIceberg's `specs_struct`),
//! so files written under different specs share one column; a spec's tuple fills the fields
//! it has and leaves the others null.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::ScalarValue;

use super::arrow_error;
use crate::error::Result;
use crate::scan::partition_type;
use crate::spec::{Literal, NestedField, PrimitiveType, StructType, TableMetadata, Transform};
use crate::to_arrow::{literal_to_scalar, primitive_to_arrow};

/// The unified partition struct of a table.
#[derive(Debug, Clone)]
pub(crate) struct UnifiedPartition {
    /// `(field id, type)` per unified field, in column order.
    types: Vec<(i32, PrimitiveType)>,
    /// The Arrow fields, in column order.
    fields: Fields,
    /// Per spec id: the unified position of each of the spec's fields, in spec order.
    positions: HashMap<i32, Vec<usize>>,
}

impl UnifiedPartition {
    /// Every partition field of every spec, ordered where its id is first seen (specs in
    /// metadata order); a field id seen again takes the later spec's name and type, except
    /// that a `void` field (a v1 spec's dropped field) keeps the type its values were written
    /// with. PyIceberg takes the void field's type (the source column's) there and shows the
    /// transformed values reinterpreted in it (days as microseconds).
    pub(crate) fn new(metadata: &TableMetadata) -> Result<Self> {
        let mut unified: Vec<(i32, String, PrimitiveType)> = Vec::new();
        let mut positions = HashMap::new();
        for spec in &metadata.partition_specs {
            let spec_type = partition_type(metadata, spec)?;
            let mut spec_positions = Vec::with_capacity(spec_type.fields.len());
            for (field, spec_field) in spec_type.fields.iter().zip(&spec.fields) {
                let ty = field
                    .field_type
                    .as_primitive()
                    .cloned()
                    .unwrap_or(PrimitiveType::Binary);
                let void = spec_field.transform == Transform::Void;
                match unified.iter().position(|(id, ..)| *id == field.id) {
                    Some(at) => {
                        unified[at].1 = field.name.clone();
                        if !void {
                            unified[at].2 = ty;
                        }
                        spec_positions.push(at);
                    }
                    None => {
                        spec_positions.push(unified.len());
                        unified.push((field.id, field.name.clone(), ty));
                    }
                }
            }
            positions.insert(spec.spec_id, spec_positions);
        }
        let fields = unified
            .iter()
            .map(|(_, name, ty)| Ok(Field::new(name, primitive_to_arrow(ty, false, name)?, true)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            types: unified.into_iter().map(|(id, _, ty)| (id, ty)).collect(),
            fields: Fields::from(fields),
            positions,
        })
    }

    /// Whether no spec of the table has a partition field.
    pub(crate) fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The unified positions ordered by partition field id: the field order of the unified
    /// partition type of partition statistics files (spec: "Partition Statistics File",
    /// "sorted by the field ids in ascending order").
    pub(crate) fn by_field_id(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.types.len()).collect();
        order.sort_by_key(|at| self.types[*at].0);
        order
    }

    /// The unified partition type (spec: "Partition Statistics File"): every field optional,
    /// by ascending field id, with the partition field ids.
    pub(crate) fn struct_type(&self) -> StructType {
        let fields = self.by_field_id().into_iter().map(|at| {
            let (id, ty) = &self.types[at];
            let name = self.fields.get(at).map_or("", |f| f.name().as_str());
            NestedField::optional(*id, name, ty.clone())
        });
        StructType::new(fields.collect())
    }

    /// The field id and type of each unified field `at`.
    pub(crate) fn field_type(&self, at: usize) -> Option<(i32, &PrimitiveType)> {
        self.types.get(at).map(|(id, ty)| (*id, ty))
    }

    /// The unified positions of spec `spec_id`'s fields, in spec order.
    pub(crate) fn spec_positions(&self, spec_id: i32) -> Option<&[usize]> {
        self.positions.get(&spec_id).map(Vec::as_slice)
    }

    /// The Arrow type of the column.
    pub(crate) fn data_type(&self) -> DataType {
        DataType::Struct(self.fields.clone())
    }

    /// The unified values of one file's tuple (written under `spec_id`), by unified position.
    pub(crate) fn unify<'a>(
        &self,
        spec_id: i32,
        tuple: &'a [Option<Literal>],
    ) -> Vec<Option<&'a Literal>> {
        let mut values = vec![None; self.types.len()];
        if let Some(positions) = self.positions.get(&spec_id) {
            for (value, at) in tuple.iter().zip(positions) {
                values[*at] = value.as_ref();
            }
        }
        values
    }

    /// The unified position and Arrow type of the field named `name` (`None` when no field,
    /// or more than one, has that name).
    pub(crate) fn field(&self, name: &str) -> Option<(usize, DataType)> {
        let mut matches = self
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name() == name);
        let (at, field) = matches.next()?;
        matches
            .next()
            .is_none()
            .then(|| (at, field.data_type().clone()))
    }

    /// The position, within spec `spec_id`'s fields, of the unified field `at`.
    pub(crate) fn spec_position(&self, spec_id: i32, at: usize) -> Option<usize> {
        self.positions.get(&spec_id)?.iter().position(|p| *p == at)
    }

    /// A value of the unified field `at` as its Arrow scalar.
    pub(crate) fn value_scalar(&self, at: usize, value: &Literal) -> Option<ScalarValue> {
        let (_, ty) = self.types.get(at)?;
        let scalar = literal_to_scalar(Some(value), ty).ok()?;
        scalar.cast_to(self.fields.get(at)?.data_type()).ok()
    }

    /// A binary single-value bound of the unified field `at` as its Arrow scalar.
    pub(crate) fn bound_scalar(&self, at: usize, bytes: &[u8]) -> Option<ScalarValue> {
        let (_, ty) = self.types.get(at)?;
        self.value_scalar(at, &Literal::from_bytes(ty, bytes).ok()?)
    }

    /// The column for rows of `(spec id, partition tuple)`.
    pub(crate) fn array<'a>(
        &self,
        rows: impl Iterator<Item = (i32, &'a [Option<Literal>])>,
    ) -> Result<ArrayRef> {
        let unified: Vec<_> = rows.map(|(spec, tuple)| self.unify(spec, tuple)).collect();
        if self.types.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(unified.len(), None)));
        }
        let columns = self
            .types
            .iter()
            .zip(self.fields.iter())
            .enumerate()
            .map(|(at, ((_, ty), field))| {
                let values = unified.iter().map(|row| row[at]);
                column(values, ty, field.data_type())
            })
            .collect::<Result<Vec<_>>>()?;
        let array =
            StructArray::try_new(self.fields.clone(), columns, None).map_err(arrow_error)?;
        Ok(Arc::new(array))
    }
}

/// One typed column of values of `ty`, as `data_type`.
pub(crate) fn column<'a>(
    values: impl Iterator<Item = Option<&'a Literal>>,
    ty: &PrimitiveType,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let scalars = values
        .map(|v| literal_to_scalar(v, ty).or_else(|_| literal_to_scalar(None, ty)))
        .collect::<Result<Vec<_>>>()?;
    let array = if scalars.is_empty() {
        datafusion::arrow::array::new_empty_array(data_type)
    } else {
        ScalarValue::iter_to_array(scalars)?
    };
    if array.data_type() == data_type {
        return Ok(array);
    }
    cast(&array, data_type).map_err(arrow_error)
}

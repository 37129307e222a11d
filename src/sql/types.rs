//! SQL spellings of the Iceberg v3 types DataFusion's SQL has no type for: `VARIANT`,
//! `UNKNOWN`, `GEOMETRY`, `GEOMETRY('srid:4326')`, `GEOGRAPHY('OGC:CRS84', 'karney')` in
//! `CREATE TABLE` and `ALTER TABLE ... ADD COLUMN` (the parameters may be quoted or bare), and
//! how `SHOW CREATE TABLE` writes them back.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema as ArrowSchema};
use datafusion::common::plan_datafusion_err;
use datafusion::error::Result as DFResult;
use datafusion::sql::sqlparser::ast::{ColumnDef, DataType as SqlType};

use crate::spec::PrimitiveType;
use crate::to_arrow::{extension_metadata, primitive_to_arrow};

/// The Iceberg type an SQL type names when DataFusion has none for it (sqlparser's custom
/// types `VARIANT`, `UNKNOWN`, `GEOMETRY(..)`, `GEOGRAPHY(..)`); `None` for other types. A
/// malformed parameter list is an error naming the column.
pub(super) fn custom_type(data_type: &SqlType, column: &str) -> DFResult<Option<PrimitiveType>> {
    let SqlType::Custom(name, modifiers) = data_type else {
        return Ok(None);
    };
    let name = name.to_string().to_lowercase();
    if !["variant", "unknown", "geometry", "geography"].contains(&name.as_str()) {
        return Ok(None);
    }
    let text = match modifiers.is_empty() {
        true => name,
        false => format!("{name}({})", modifiers.join(", ")),
    };
    PrimitiveType::parse(&text)
        .map(Some)
        .map_err(|e| plan_datafusion_err!("column '{column}': {e}"))
}

/// The columns of a `CREATE TABLE` whose SQL type is one of [`custom_type`]'s, with their
/// Iceberg types; in `columns` their type becomes `BYTEA` so that DataFusion can plan the
/// statement (the planned schema then gets them back with [`restore_custom_types`]).
pub(super) fn take_custom_types(
    columns: &mut [ColumnDef],
) -> DFResult<Vec<(String, PrimitiveType)>> {
    let mut taken = Vec::new();
    for column in columns {
        let name = column.name.value.clone();
        if let Some(p) = custom_type(&column.data_type, &name)? {
            column.data_type = SqlType::Bytea;
            taken.push((name, p));
        }
    }
    Ok(taken)
}

/// `schema` with the columns [`take_custom_types`] took given the Arrow form of their Iceberg
/// type (extension metadata included), which `CREATE TABLE` maps back to that type.
pub(super) fn restore_custom_types(
    schema: &ArrowSchema,
    taken: &[(String, PrimitiveType)],
) -> DFResult<Arc<ArrowSchema>> {
    let fields = schema
        .fields()
        .iter()
        .map(|field| {
            let Some((_, p)) = taken.iter().find(|(name, _)| name == field.name()) else {
                return Ok(field.as_ref().clone());
            };
            let data_type = primitive_to_arrow(p, true, field.name())?;
            let metadata = extension_metadata(p).into_iter().collect();
            Ok(Field::new(field.name(), data_type, field.is_nullable()).with_metadata(metadata))
        })
        .collect::<DFResult<Vec<_>>>()?;
    Ok(Arc::new(ArrowSchema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// How `SHOW CREATE TABLE` writes a geometry or geography type so that [`custom_type`] reads
/// it back: `GEOMETRY`, `GEOMETRY('srid:4326')`, `GEOGRAPHY('OGC:CRS84', 'karney')`.
pub(super) fn geo_sql_type(p: &PrimitiveType) -> String {
    let (name, crs, algorithm) = match p {
        PrimitiveType::Geometry { crs } => ("GEOMETRY", crs, None),
        PrimitiveType::Geography { crs, algorithm } => ("GEOGRAPHY", crs, *algorithm),
        other => return other.to_string().to_uppercase(),
    };
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    match (crs, algorithm) {
        (None, None) => name.to_string(),
        (Some(crs), None) => format!("{name}({})", quote(crs)),
        (crs, Some(a)) => {
            let crs = crs.as_deref().unwrap_or(crate::spec::types::DEFAULT_CRS);
            format!("{name}({}, {})", quote(crs), quote(a.name()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn column_type(sql_type: &str) -> SqlType {
        let sql = format!("CREATE TABLE t (c {sql_type})");
        let statements = Parser::parse_sql(&GenericDialect {}, &sql).unwrap();
        let datafusion::sql::sqlparser::ast::Statement::CreateTable(create) = &statements[0] else {
            panic!("{statements:?}")
        };
        create.columns[0].data_type.clone()
    }

    #[test]
    fn custom_sql_types_name_iceberg_types() {
        for (sql, iceberg) in [
            ("VARIANT", "variant"),
            ("variant", "variant"),
            ("UNKNOWN", "unknown"),
            ("GEOMETRY", "geometry"),
            ("GEOMETRY('srid:4326')", "geometry(srid:4326)"),
            (
                "GEOGRAPHY('OGC:CRS84', 'karney')",
                "geography(OGC:CRS84, karney)",
            ),
        ] {
            let got = custom_type(&column_type(sql), "c").unwrap();
            assert_eq!(
                got.map(|p| p.to_string()).as_deref(),
                Some(iceberg),
                "{sql}"
            );
        }
        assert_eq!(custom_type(&column_type("INT"), "c").unwrap(), None);
        assert_eq!(custom_type(&column_type("WIDGET"), "c").unwrap(), None);
        let err = custom_type(&column_type("GEOGRAPHY('x', 'nope')"), "c").unwrap_err();
        assert!(err.to_string().contains("column 'c'"), "{err}");
    }

    #[test]
    fn show_create_table_spellings_parse_back() {
        for iceberg in [
            "geometry",
            "geometry(srid:4326)",
            "geography",
            "geography(projjson:crs1)",
            "geography(OGC:CRS84, vincenty)",
        ] {
            let p = PrimitiveType::parse(iceberg).unwrap();
            let again = custom_type(&column_type(&geo_sql_type(&p)), "c").unwrap();
            assert_eq!(again, Some(p), "{iceberg}");
        }
    }
}

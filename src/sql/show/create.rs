//! `SHOW CREATE TABLE`: the statements that make the same table again (columns with their
//! docs and v3 defaults, the partition spec with its field names, properties, identifier
//! fields and the write order).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;

use super::super::types::geo_sql_type;
use super::{batch, property_rows, reference, term, utf8_column};
use crate::IcebergTableProvider;
use crate::session::IcebergCatalogs;
use crate::spec::properties::WRITE_DISTRIBUTION_MODE;
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{NestedField, PrimitiveType, Schema, TableMetadata, Type};

/// `name` as an SQL identifier: bare when it is lower-case letters, digits and `_` (not first
/// a digit), else double-quoted.
pub(super) fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The SQL type icefloe's `CREATE TABLE` turns into `data_type` (`UUID`, `FIXED(n)` and `MAP`
/// have none in DataFusion's SQL: they are shown in Spark's spelling).
fn sql_type(data_type: &Type) -> String {
    match data_type {
        Type::Primitive(p) => match p {
            PrimitiveType::Boolean => "BOOLEAN".into(),
            PrimitiveType::Int => "INT".into(),
            PrimitiveType::Long => "BIGINT".into(),
            PrimitiveType::Float => "FLOAT".into(),
            PrimitiveType::Double => "DOUBLE".into(),
            PrimitiveType::Decimal { precision, scale } => format!("DECIMAL({precision}, {scale})"),
            PrimitiveType::Date => "DATE".into(),
            PrimitiveType::Time => "TIME".into(),
            // The precision, since a v3 table makes a bare TIMESTAMP `timestamp_ns`.
            PrimitiveType::Timestamp => "TIMESTAMP(6)".into(),
            PrimitiveType::Timestamptz => "TIMESTAMP(6) WITH TIME ZONE".into(),
            PrimitiveType::TimestampNs => "TIMESTAMP(9)".into(),
            PrimitiveType::TimestamptzNs => "TIMESTAMP(9) WITH TIME ZONE".into(),
            PrimitiveType::String => "VARCHAR".into(),
            PrimitiveType::Uuid => "UUID".into(),
            PrimitiveType::Fixed(len) => format!("FIXED({len})"),
            PrimitiveType::Binary => "BYTEA".into(),
            PrimitiveType::Variant => "VARIANT".into(),
            PrimitiveType::Unknown => "UNKNOWN".into(),
            PrimitiveType::Geometry { .. } | PrimitiveType::Geography { .. } => geo_sql_type(p),
        },
        Type::Struct(s) => {
            let fields: Vec<String> = s
                .fields
                .iter()
                .map(|f| format!("{} {}", quote_ident(&f.name), sql_type(&f.field_type)))
                .collect();
            format!("STRUCT<{}>", fields.join(", "))
        }
        Type::List(l) => format!("ARRAY<{}>", sql_type(&l.element_field.field_type)),
        Type::Map(m) => format!(
            "MAP<{}, {}>",
            sql_type(&m.key_field.field_type),
            sql_type(&m.value_field.field_type)
        ),
    }
}

/// Whether `name` is a table of a namespace of an Iceberg catalog of the session.
fn in_iceberg_catalog(state: &SessionState, name: &[String]) -> DFResult<bool> {
    let names = &state.config().options().catalog;
    let resolved = reference(name)?.resolve(&names.default_catalog, &names.default_schema);
    Ok(IcebergCatalogs::lookup(state, &resolved.catalog)
        .is_some_and(|catalog| crate::session::has_namespace(&catalog, &resolved.schema)))
}

/// A column of `CREATE TABLE`: its name, type, `NOT NULL`, v3 `DEFAULT` (the write-default)
/// and `COMMENT` (its doc).
fn column_definition(field: &NestedField) -> DFResult<String> {
    let mut text = format!(
        "  {} {}",
        quote_ident(&field.name),
        sql_type(&field.field_type)
    );
    if field.required {
        text.push_str(" NOT NULL");
    }
    if let (Some(value), Type::Primitive(ty)) = (&field.write_default, &field.field_type) {
        let literal = crate::spec::Literal::from_json(ty, value).map_err(crate::Error::from)?;
        let scalar = crate::to_arrow::literal_to_scalar(Some(&literal), ty)?;
        let sql = datafusion::sql::unparser::expr_to_sql(&datafusion::logical_expr::lit(scalar))?;
        text.push_str(&format!(" DEFAULT {sql}"));
    }
    if let Some(doc) = &field.doc {
        text.push_str(&format!(" COMMENT {}", quote_string(doc)));
    }
    Ok(text)
}

/// The `RENAME PARTITION FIELD` clauses that give the default spec's fields the names they
/// have where `CREATE TABLE ... PARTITION BY` names them otherwise (fields added by partition
/// evolution are named `id_bucket_16`, a new table's `id_bucket`).
fn partition_renames(metadata: &TableMetadata, schema: &Schema) -> Vec<String> {
    let Some(spec) = metadata.default_partition_spec() else {
        return Vec::new();
    };
    spec.fields
        .iter()
        .filter_map(|f| {
            let source = schema.dotted_name(f.source_id)?;
            let created = crate::table::partition_name(&source, &f.transform);
            (created != f.name).then(|| {
                format!(
                    "RENAME PARTITION FIELD {} TO {}",
                    quote_ident(&created),
                    quote_ident(&f.name)
                )
            })
        })
        .collect()
}

/// The `WRITE ...` clause of `ALTER TABLE` that gives a table its default sort order and
/// `write.distribution-mode`; `None` for an unsorted table.
fn write_order(metadata: &TableMetadata, schema: &Schema) -> Option<String> {
    let order = metadata.default_sort_order().filter(|o| !o.is_unsorted())?;
    let fields: Vec<String> = order
        .fields
        .iter()
        .map(|f| {
            let direction = match f.direction {
                SortDirection::Ascending => "ASC",
                SortDirection::Descending => "DESC",
            };
            let nulls = match f.null_order {
                NullOrder::First => "NULLS FIRST",
                NullOrder::Last => "NULLS LAST",
            };
            let term = term(schema, &f.transform, f.source_id);
            format!("{term} {direction} {nulls}")
        })
        .collect();
    let clause = match metadata.property(WRITE_DISTRIBUTION_MODE.key()) {
        Some("range") => "WRITE ORDERED BY",
        Some("hash") => "WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY",
        _ => "WRITE LOCALLY ORDERED BY",
    };
    Some(format!("{clause} {}", fields.join(", ")))
}

/// `SHOW CREATE TABLE`: `CREATE TABLE ns.t (...)` for a table of an Iceberg catalog,
/// `CREATE EXTERNAL TABLE t (...) STORED AS ICEBERG LOCATION '...'` for any other.
pub(super) fn create_statement(
    state: &SessionState,
    name: &[String],
    provider: &IcebergTableProvider,
) -> DFResult<RecordBatch> {
    let table = provider.table();
    let metadata = table.metadata();
    let schema = metadata.current_schema();
    let columns: Vec<String> = schema
        .columns()
        .iter()
        .map(|f| column_definition(f))
        .collect::<DFResult<_>>()?;
    let terms: Vec<String> = metadata
        .default_partition_spec()
        .map(|spec| {
            spec.fields
                .iter()
                .map(|f| term(schema, &f.transform, f.source_id))
                .collect()
        })
        .unwrap_or_default();
    let mut properties = property_rows(metadata);
    let quoted_name = name
        .iter()
        .map(|p| quote_ident(p))
        .collect::<Vec<_>>()
        .join(".");
    let in_catalog = in_iceberg_catalog(state, name)?;
    let mut text = if in_catalog {
        format!("CREATE TABLE {quoted_name} (\n{}\n)", columns.join(",\n"))
    } else {
        format!(
            "CREATE EXTERNAL TABLE {quoted_name} (\n{}\n)\nSTORED AS ICEBERG\nLOCATION {}",
            columns.join(",\n"),
            quote_string(&metadata.location)
        )
    };
    if in_catalog {
        if !terms.is_empty() {
            text.push_str(&format!("\nPARTITION BY ({})", terms.join(", ")));
        }
        let pairs: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("  {} = {}", quote_string(k), quote_string(v)))
            .collect();
        text.push_str(&format!("\nTBLPROPERTIES (\n{}\n)", pairs.join(",\n")));
    } else {
        if !terms.is_empty() {
            properties.push(("partitioning".into(), terms.join(", ")));
        }
        let pairs: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("  {} {}", quote_string(k), quote_string(v)))
            .collect();
        text.push_str(&format!("\nOPTIONS (\n{}\n)", pairs.join(",\n")));
    }
    if in_catalog {
        for rename in partition_renames(metadata, schema) {
            text.push_str(&format!(";\nALTER TABLE {quoted_name} {rename}"));
        }
        let identifiers: Vec<String> = schema
            .identifier_field_ids
            .iter()
            .filter_map(|id| schema.dotted_name(*id))
            .map(|name| {
                name.split('.')
                    .map(quote_ident)
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect();
        if !identifiers.is_empty() {
            let fields = identifiers.join(", ");
            text.push_str(&format!(
                ";\nALTER TABLE {quoted_name} SET IDENTIFIER FIELDS {fields}"
            ));
        }
    }
    if let Some(order) = write_order(metadata, schema) {
        match in_catalog {
            true => text.push_str(&format!(";\nALTER TABLE {quoted_name} {order}")),
            false => text.push_str(&format!("\n-- sort order: {order}")),
        }
    }
    batch(
        vec![utf8_column("createtab_stmt", false)],
        vec![Arc::new(StringArray::from(vec![text]))],
    )
}

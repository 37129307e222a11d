use super::*;
use datafusion::arrow::array::{BinaryArray, Int32Array};
use parquet_variant_json::VariantToJson;

/// Rows of the `impala_trino_variant` fixture (written by Trino 481), as `(metadata, value)`
/// hex, with the decoded JSON its README gives (from the source test, not from icefloe).
const TRINO_ROWS: &[(&str, &str, &str)] = &[
    ("010000", "142a000000", "42"),
    ("010000", "1568656c6c6f", r#""hello""#),
    (
        "010000",
        "030300050a0f140100000014020000001403000000",
        "[1,2,3]",
    ),
    (
        "11020003076167656e616d65",
        "0202000100050b141e00000015416c696365",
        r#"{"age":30,"name":"Alice"}"#,
    ),
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A variant's encoded `(metadata, value)`.
type Encoded = (Vec<u8>, Vec<u8>);

fn column(rows: &[Option<Encoded>]) -> StructArray {
    let part = |pick: fn(&Encoded) -> &[u8]| -> ArrayRef {
        Arc::new(BinaryArray::from_iter_values(
            rows.iter().map(|r| r.as_ref().map_or(&[][..], pick)),
        ))
    };
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    StructArray::try_new(
        variant_fields(),
        vec![part(|r| &r.0), part(|r| &r.1)],
        Some(nulls),
    )
    .unwrap()
}

fn trino_column() -> StructArray {
    let mut rows: Vec<_> = TRINO_ROWS
        .iter()
        .map(|(m, v, _)| Some((hex(m), hex(v))))
        .collect();
    rows.push(None);
    column(&rows)
}

#[test]
fn trino_variants_decode_to_the_readme_json() {
    let array = trino_column();
    let variants = VariantColumn::try_new(&array, "v").unwrap();
    assert_eq!(variants.len(), TRINO_ROWS.len() + 1);
    for (row, (_, _, json)) in TRINO_ROWS.iter().enumerate() {
        let variant = variants.get(row).unwrap().unwrap();
        assert_eq!(variant.to_json_string().unwrap(), *json, "row {row}");
    }
    assert!(
        variants.get(TRINO_ROWS.len()).unwrap().is_none(),
        "SQL NULL"
    );
}

#[test]
fn malformed_variants_are_errors_not_panics() {
    for (metadata, value) in [
        ("010000", "142a00"),       // int32 cut short
        ("01", "00"),               // metadata header without offsets
        ("010000", "0201000000"),   // object naming field 0 of an empty dictionary
        ("020000", "00"),           // unsupported metadata version
        ("010000", "3c0a000000ab"), // binary longer than its bytes
    ] {
        let array = column(&[Some((hex(metadata), hex(value)))]);
        let variants = VariantColumn::try_new(&array, "v").unwrap();
        let err = variants.get(0).unwrap_err();
        assert!(
            matches!(&err, Error::Corrupt { reason, .. } if reason.contains("row 0")),
            "{metadata}/{value}: {err:?}"
        );
    }
}

#[test]
fn shredded_and_other_shapes_are_refused_by_name() {
    let typed = Field::new("typed_value", DataType::Int32, true);
    let fields = Fields::from(vec![
        Field::new("metadata", DataType::Binary, false),
        Field::new("value", DataType::Binary, true),
        typed,
    ]);
    let children: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values([hex("010000")])),
        Arc::new(BinaryArray::from(vec![None::<&[u8]>])),
        Arc::new(Int32Array::from(vec![7])),
    ];
    let shredded = StructArray::try_new(fields, children, None).unwrap();
    let ints = Int32Array::from(vec![1]);
    for array in [&shredded as &dyn Array, &ints] {
        let err = VariantColumn::try_new(array, "v").unwrap_err().to_string();
        assert!(
            err.contains("column 'v'") && err.contains("shredded"),
            "{err}"
        );
    }
}

#[test]
fn built_columns_read_back_the_same_variants() {
    let source = trino_column();
    let variants = VariantColumn::try_new(&source, "v").unwrap();
    let mut builder = VariantColumnBuilder::default();
    for row in 0..variants.len() {
        builder.append(variants.get(row).unwrap()).unwrap();
    }
    let built = builder.finish().unwrap();
    assert_eq!(built.data_type(), &variant_data_type());
    let again = VariantColumn::try_new(built.as_ref(), "v").unwrap();
    for (row, (_, _, json)) in TRINO_ROWS.iter().enumerate() {
        let variant = again.get(row).unwrap().unwrap();
        assert_eq!(variant.to_json_string().unwrap(), *json, "row {row}");
    }
    assert!(again.get(TRINO_ROWS.len()).unwrap().is_none());
}

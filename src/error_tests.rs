use super::*;

#[test]
fn within_prefixes_corrupt_reasons_and_keeps_path_and_source() {
    let source = std::io::Error::other("bad byte");
    let err = Error::corrupt_with("/t/m.avro", "field 3", source).within("record 7");
    let Error::Corrupt {
        path,
        reason,
        source,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(path, "/t/m.avro");
    assert_eq!(reason, "record 7: field 3");
    assert_eq!(
        source.as_ref().map(|s| s.to_string()).as_deref(),
        Some("bad byte")
    );
    assert_eq!(err.to_string(), "corrupt /t/m.avro: record 7: field 3");
    // Other variants are left alone.
    let missing = Error::not_found("snapshot 1").within("ref 'b1'");
    assert_eq!(missing.to_string(), "not found: snapshot 1");
}

#[test]
fn a_corrupt_error_without_a_path_reads_as_one() {
    assert_eq!(
        Error::corrupt("", "truncated").to_string(),
        "corrupt: truncated"
    );
    assert_eq!(
        Error::corrupt("", "truncated")
            .in_file("/t/v1.metadata.json")
            .to_string(),
        "corrupt /t/v1.metadata.json: truncated"
    );
}

#[test]
fn an_invalid_argument_found_in_a_file_is_corruption_with_the_argument_error_as_source() {
    let invalid = Error::invalid(
        "transform 'bucket[0]'",
        "the argument must be a positive int",
    );
    let err = invalid.into_corrupt("partition field 'b'");
    let Error::Corrupt {
        path,
        reason,
        source: Some(source),
    } = &err
    else {
        panic!("{err:?}");
    };
    assert!(path.is_empty());
    assert_eq!(
        reason,
        "partition field 'b': transform 'bucket[0]': the argument must be a positive int"
    );
    assert!(source.downcast_ref::<Error>().is_some(), "{source:?}");
    // A corrupt error only gets the context.
    let corrupt = Error::corrupt("", "no name").into_corrupt("partition field 0");
    assert_eq!(corrupt.to_string(), "corrupt: partition field 0: no name");
}

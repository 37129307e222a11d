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

#[test]
fn an_invalid_argument_names_what_was_given_and_why() {
    let err = Error::invalid("relocation rule 'a='", "has an empty side");
    assert!(
        matches!(&err, Error::InvalidArgument { what, reason }
            if what == "relocation rule 'a='" && reason == "has an empty side"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "invalid argument: relocation rule 'a=': has an empty side"
    );
    let err = err.within("--relocate").named_by("the command line");
    assert_eq!(
        err.to_string(),
        "invalid argument: --relocate: relocation rule 'a=' (named by the command line): has \
         an empty side"
    );
}

#[test]
fn named_by_says_which_file_names_a_missing_object() {
    let err = Error::not_found("manifest m.avro").named_by("manifest list snap-1.avro");
    assert_eq!(
        err.to_string(),
        "not found: manifest m.avro (named by manifest list snap-1.avro)"
    );
}

#[test]
fn every_message_names_its_object() {
    let io = || Box::new(std::io::Error::other("disk on fire"));
    let cases = [
        (Error::not_found("snapshot 7"), "snapshot 7"),
        (Error::corrupt("/t/m.avro", "bad block"), "/t/m.avro"),
        (
            Error::Unsupported("format version 4".into()),
            "format version 4",
        ),
        (Error::invalid("ref 'b1'", "is a tag"), "ref 'b1'"),
        (
            Error::AlreadyExists {
                what: "table db.t".into(),
            },
            "table db.t",
        ),
        (
            Error::CommitConflict {
                table: "db.t".into(),
                reason: "the pointer moved".into(),
            },
            "db.t",
        ),
        (
            Error::CommitStateUnknown {
                table: "db.t".into(),
                reason: "the connection broke".into(),
                source: None,
            },
            "db.t",
        ),
        (
            Error::Io {
                path: "/t/x.avro".into(),
                source: io(),
            },
            "/t/x.avro",
        ),
        (
            Error::Catalog {
                catalog: "/c.db".into(),
                reason: "opening the database failed".into(),
                source: None,
            },
            "/c.db",
        ),
        (
            Error::Moved {
                recorded: "/old/t".into(),
                found: "/new/t".into(),
            },
            "/new/t",
        ),
    ];
    for (err, object) in cases {
        assert!(err.to_string().contains(object), "{err}");
    }
}

#[test]
fn passwords_in_urls_never_reach_a_message() {
    assert_eq!(
        redact("location 's3://AKIA:wJalrXUtnFEMI@bucket/t/x' and https://u:p@h:8080/a?b"),
        "location 's3://AKIA:***@bucket/t/x' and https://u:***@h:8080/a?b"
    );
    // No password: nothing to hide (an Azure container, a plain path with an @).
    for text in [
        "abfss://container@account.dfs.core.windows.net/t",
        "/tmp/a@b:c/t",
        "file:///tmp/user:x@y",
        "no url here: a@b",
    ] {
        assert_eq!(redact(text), text);
    }
    let secret = "s3://key:hunter2@bucket/t";
    let errors = [
        Error::not_found(format!("table {secret}")),
        Error::corrupt(secret, "truncated"),
        Error::invalid(format!("location '{secret}'"), "is not valid"),
        Error::Io {
            path: secret.into(),
            source: Box::new(std::io::Error::other(format!("GET {secret} failed"))),
        },
        Error::Moved {
            recorded: secret.into(),
            found: "/copy".into(),
        },
    ];
    for err in errors {
        let shown = [
            err.to_string(),
            chain(&err),
            format!("{}", DataFusionError::from(err)),
        ];
        for text in shown {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("s3://key:***@bucket"), "{text}");
        }
    }
}

#[test]
fn a_chain_skips_causes_the_message_already_says() {
    let io = std::io::Error::other("disk on fire");
    let err = Error::Io {
        path: "/t/x.avro".into(),
        source: Box::new(io),
    };
    assert_eq!(chain(&err), "I/O error on /t/x.avro: disk on fire");
    let source = std::io::Error::other("bad byte 7");
    let err = Error::corrupt_with("/t/m.avro", "bad byte 7", source);
    assert_eq!(chain(&err), "corrupt /t/m.avro: bad byte 7");
}

#[test]
fn closest_suggests_near_misses_only() {
    let options = ["snapshot-id", "ref", "as-of-timestamp", "partitioning"];
    assert_eq!(closest("snapshot_id", options), Some("snapshot-id"));
    assert_eq!(closest("SnapshotId", options), Some("snapshot-id"));
    assert_eq!(closest("partitionning", options), Some("partitioning"));
    assert_eq!(closest("owner", options), None);
    assert_eq!(closest("write.target-file-size-bytes", options), None);
    assert_eq!(
        closest("snapshot", ["snapshots", "history"]),
        Some("snapshots")
    );
}

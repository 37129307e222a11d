use super::*;

#[test]
fn every_primitive_round_trips_through_its_string_form() {
    for s in [
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "decimal(38, 10)",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "fixed[16]",
        "binary",
        "variant",
    ] {
        let p = PrimitiveType::parse(s).unwrap();
        assert_eq!(p.to_string(), s);
    }
    assert_eq!(
        PrimitiveType::parse("decimal(9,2)").unwrap(),
        PrimitiveType::Decimal {
            precision: 9,
            scale: 2
        }
    );
}

#[test]
fn bad_type_strings_are_errors() {
    for s in [
        "decimal(39, 2)",
        "decimal(5, 6)",
        "fixed[x]",
        "bigint",
        "decimal(9)",
    ] {
        let err = PrimitiveType::parse(s).unwrap_err();
        assert!(
            matches!(&err, Error::Corrupt { path, reason, .. }
                if path.is_empty() && reason.contains(&format!("'{s}'"))),
            "{s}: {err:?}"
        );
    }
}

#[test]
fn a_bad_nested_type_names_its_field() {
    let json = json!({"type": "struct", "fields": [
        {"id": 1, "name": "outer", "required": true, "type": {"type": "struct", "fields": [
            {"id": 2, "name": "inner", "required": true, "type": "bigint"}]}}]});
    let err = Type::from_json(&json).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { path, reason, .. }
            if path.is_empty() && reason == "field 'outer': field 'inner': unknown type 'bigint'"),
        "{err:?}"
    );
}

#[test]
fn nested_types_round_trip() {
    let json = json!({
        "type": "struct",
        "fields": [
            {"id": 1, "name": "a", "required": true, "type": "long"},
            {"id": 2, "name": "tags", "required": false,
             "type": {"type": "list", "element-id": 3, "element": "string", "element-required": false}},
            {"id": 4, "name": "props", "required": false, "doc": "d",
             "type": {"type": "map", "key-id": 5, "key": "string", "value-id": 6, "value": "int", "value-required": true}},
            {"id": 7, "name": "j", "required": false, "type": "int", "initial-default": -1, "write-default": -999}
        ]
    });
    let t = Type::from_json(&json).unwrap();
    assert_eq!(t.to_json(), json);
    let Type::Struct(s) = &t else { panic!() };
    assert_eq!(s.field_by_id(7).unwrap().initial_default, Some(json!(-1)));
}

#[test]
fn promotions_follow_the_spec() {
    use PrimitiveType::*;
    assert!(Int.can_promote_to(&Long));
    assert!(Float.can_promote_to(&Double));
    assert!(
        Decimal {
            precision: 9,
            scale: 2
        }
        .can_promote_to(&Decimal {
            precision: 18,
            scale: 2
        })
    );
    assert!(
        !Decimal {
            precision: 9,
            scale: 2
        }
        .can_promote_to(&Decimal {
            precision: 18,
            scale: 3
        })
    );
    assert!(!Long.can_promote_to(&Int));
}

#[test]
fn v3_types_parse_and_print_as_written() {
    use PrimitiveType::*;
    for (text, parsed) in [
        ("unknown", Unknown),
        ("variant", Variant),
        ("geometry", Geometry { crs: None }),
        (
            "geometry(srid:4326)",
            Geometry {
                crs: Some("srid:4326".into()),
            },
        ),
        (
            "geography",
            Geography {
                crs: None,
                algorithm: None,
            },
        ),
        (
            "geography(projjson:crs1)",
            Geography {
                crs: Some("projjson:crs1".into()),
                algorithm: None,
            },
        ),
        (
            "geography(OGC:CRS84, karney)",
            Geography {
                crs: Some("OGC:CRS84".into()),
                algorithm: Some(EdgeAlgorithm::Karney),
            },
        ),
    ] {
        let p = PrimitiveType::parse(text).unwrap();
        assert_eq!(p, parsed, "{text}");
        assert_eq!(p.to_string(), text);
        assert!(p.is_v3() && !p.has_value_bounds(), "{text}");
    }
    // Spaces and case as Java's parser takes them; the defaults the spec names.
    let g = PrimitiveType::parse("geography( srid:4269 , VINCENTY )").unwrap();
    assert_eq!(g.crs(), Some("srid:4269"));
    assert_eq!(g.edge_algorithm(), Some(EdgeAlgorithm::Vincenty));
    let g = PrimitiveType::parse("geometry").unwrap();
    assert_eq!((g.crs(), g.edge_algorithm()), (Some("OGC:CRS84"), None));
    let g = PrimitiveType::parse("geography").unwrap();
    assert_eq!(g.edge_algorithm(), Some(EdgeAlgorithm::Spherical));
    for bad in [
        "geography(srid:4326, wiggly)",
        "geometry(a, b)",
        "geometry(srid:4326",
        "geometryx",
    ] {
        assert!(PrimitiveType::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn unknown_promotes_to_any_type_and_nothing_to_unknown() {
    use PrimitiveType::*;
    for to in [Int, String, Variant, Geometry { crs: None }] {
        assert!(Unknown.can_promote_to(&to), "{to}");
    }
    assert!(!Int.can_promote_to(&Unknown));
    assert!(!Binary.can_promote_to(&Geometry { crs: None }));
}

//! `cargo fuzz run version_hint --features version_hint`: the version hint parser must return a
//! hint or a typed error without a path for any bytes. Built only with the `version_hint`
//! feature, since `icefloe::catalog::file::parse_version_hint` is added by the catalog work
//! (`run.sh` turns the feature on when it finds the function).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::check(
        "version hint",
        icefloe::catalog::file::parse_version_hint(data),
    );
});

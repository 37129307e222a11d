//! `cargo fuzz run version_hint`: the version hint parser must return a hint or a typed error
//! without a path for any bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::version_hint(data);
});

//! `cargo fuzz run metadata_json`: see `icefloe::fuzzing::metadata_json` for what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::metadata_json(data);
});

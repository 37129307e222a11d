//! `cargo fuzz run manifest_list`: see `icefloe::fuzzing::manifest_list` for what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::manifest_list(data);
});

//! `cargo fuzz run manifest`: see `icefloe::fuzzing::manifest` for what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::manifest(data);
});

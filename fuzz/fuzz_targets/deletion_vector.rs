//! `cargo fuzz run deletion_vector`: see `icefloe::fuzzing::deletion_vector` for what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    icefloe::fuzzing::deletion_vector(data);
});

//! Links the `icefloe` executable position-dependent on Linux (glibc).
//!
//! A position-independent executable of this size (DataFusion and its function registry)
//! carries about 230,000 relative relocations, which the dynamic loader applies at every
//! start: a million-byte table walked and a thousand pages of `.data.rel.ro` written. That
//! was 4 ms of a 5.5 ms `icefloe --version`; linked with `-no-pie` the start takes 1.3 ms.
//! Only the executable is affected: the library, tests and benches link as before. The cost
//! is that the executable's own code is not address-randomized.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

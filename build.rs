//! Link options for the `pincer` binary, and nothing else (no code generation).
//!
//! On Linux with glibc the binary is linked with packed relative relocations
//! (`-z pack-relative-relocs`, DT_RELR): the position-independent binary carries about
//! 89,000 relative relocations (vtables, string and panic-location pointers), which as
//! classic RELA entries are 2 MiB of the file that the loader reads at every start and
//! that then stay resident (`RssFile`) for the life of the gateway. Packed, they take a
//! few KiB. The loader must know DT_RELR: glibc 2.36 or newer (the binary says so in its
//! version needs, so an older glibc refuses it at start with a clear message).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os == "linux" && target_env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

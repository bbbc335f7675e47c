//! Link options for the `pincer` binary, and nothing else (no code generation).
//!
//! On Linux with glibc 2.36 or newer the binary is linked with packed relative
//! relocations (`-z pack-relative-relocs`, DT_RELR): the position-independent binary
//! carries about 89,000 relative relocations (vtables, string and panic-location
//! pointers), which as classic RELA entries are 2 MiB of the file that the loader reads
//! at every start and that then stay resident (`RssFile`) for the life of the gateway.
//! Packed, they take a few KiB. The loader must know DT_RELR (glibc 2.36), so the flag
//! is used only when the machine building has that glibc and builds for itself; a
//! build on an older system (Ubuntu 22.04 has 2.35) or a cross build links as before.
//! `PINCER_PACK_RELOCS=0` turns it off, e.g. to build on a new system for an old one.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PINCER_PACK_RELOCS");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let gnu_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && gnu_linux && var("PINCER_PACK_RELOCS") != "0" && glibc_knows_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is 2.36 or newer (`getconf GNU_LIBC_VERSION` prints
/// e.g. "glibc 2.36").
fn glibc_knows_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}

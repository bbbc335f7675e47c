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
//!
//! With rustc's own lld (the default linker for x86_64 Linux since Rust 1.90) the
//! functions that start-up, connecting the channels and an idle gateway run, then those
//! a turn adds, are laid out next to each other at the start of `.text`
//! (`--symbol-ordering-file`, the list in `build/code-order.txt`). The kernel maps code
//! in 64 KiB windows around every page run, so 2.7 MiB of functions scattered over
//! 15 MiB of code kept 11.5 MiB of it resident; packed, 3 MiB. Names the build no longer
//! has are skipped, so a stale list only loses some of the effect;
//! `scripts/code-order.sh` makes it again.
//! `PINCER_ORDER_CODE=0` turns it off; a linker of your own (`-C linker`, or
//! `CARGO_TARGET_<triple>_LINKER`) turns it off too, as GNU ld has no such option.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PINCER_PACK_RELOCS");
    println!("cargo:rerun-if-env-changed=PINCER_ORDER_CODE");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    println!("cargo:rerun-if-changed=build/code-order.txt");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let gnu_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && gnu_linux && var("PINCER_PACK_RELOCS") != "0" && glibc_knows_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("PINCER_ORDER_CODE") != "0"
        && rustc_links_with_lld()
    {
        let list = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("build/code-order.txt");
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            list.display()
        );
    }
    // `scripts/code-order.sh` reads the layout of a normal release build from the
    // linker's map: the binary is stripped, and a build that keeps its symbols would
    // name its functions differently (the profile is part of every crate's hash).
    println!("cargo:rerun-if-env-changed=PINCER_LINK_MAP");
    if let Ok(map) = std::env::var("PINCER_LINK_MAP") {
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
    }
}

/// Whether the binary is linked by rustc's own lld: no linker was chosen for the target
/// (flags or environment), which on x86_64 Linux means lld since Rust 1.90.
fn rustc_links_with_lld() -> bool {
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let chosen = flags.split('\x1f').any(|flag| {
        flag.contains("linker") || flag.contains("link-self-contained") || flag.contains("fuse-ld")
    });
    !chosen && std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_none()
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

//! Finds libgaio and measures the C API's public structs.
//!
//! The library: `GAIO_LIB_DIR` (a directory holding libgaio.so), else pkg-config's
//! `gaio` (an installed gaio), else the workspace's own CMake build (`../../build/src`).
//! The headers: `GAIO_INCLUDE_DIR`, else pkg-config's, else the checkout's `include/`.
//! The layout: tests/layout.c, compiled with the system C compiler against those
//! headers, prints the size and field offsets of each struct gaio-sys declares; they
//! become constants the layout test compares with Rust's own (tests/layout.rs).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let here = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..");
    println!("cargo:rerun-if-env-changed=GAIO_LIB_DIR");
    println!("cargo:rerun-if-env-changed=GAIO_INCLUDE_DIR");
    println!("cargo:rerun-if-changed=tests/layout.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib_dir = env::var("GAIO_LIB_DIR")
        .ok()
        .map(PathBuf::from)
        .or_else(|| pkg_config("libdir"))
        .unwrap_or_else(|| root.join("build/src"));
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=gaio");
    // Tests and examples run from the build tree: let them find the library there
    // (dependents get the directory as DEP_GAIO_LIB_DIR and do the same).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    println!("cargo:lib_dir={}", lib_dir.display());

    let include = env::var("GAIO_INCLUDE_DIR")
        .ok()
        .map(PathBuf::from)
        .or_else(|| pkg_config("includedir"))
        .unwrap_or_else(|| root.join("include"));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    layout(&here.join("tests/layout.c"), &include, &out);
}

/// A variable of pkg-config's `gaio` package, if pkg-config finds one.
fn pkg_config(var: &str) -> Option<PathBuf> {
    let o = Command::new("pkg-config").arg(format!("--variable={}", var)).arg("gaio").output().ok()?;
    let s = String::from_utf8(o.stdout).ok()?;
    let s = s.trim();
    if o.status.success() && !s.is_empty() {
        Some(PathBuf::from(s))
    } else {
        None
    }
}

/// Compiles and runs the probe; writes `layout.rs` (its output) into out.
fn layout(src: &Path, include: &Path, out: &Path) {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let exe = out.join("layout_probe");
    let st = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(src)
        .arg(format!("-I{}", include.display()))
        .status()
        .unwrap_or_else(|e| panic!("gaio-sys: running the C compiler '{}': {}", cc, e));
    assert!(st.success(), "gaio-sys: compiling {} failed", src.display());
    let o = Command::new(&exe).output().expect("gaio-sys: running the layout probe");
    assert!(o.status.success(), "gaio-sys: the layout probe failed");
    std::fs::write(out.join("layout.rs"), o.stdout).expect("gaio-sys: writing layout.rs");
}

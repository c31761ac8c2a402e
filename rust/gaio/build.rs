//! The tests and examples find libgaio where gaio-sys found it (an rpath).
fn main() {
    if let Ok(dir) = std::env::var("DEP_GAIO_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}

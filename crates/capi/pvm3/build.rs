//! Gives the library PVM 3.4's soname and builds the variadic half
//! (`src/packf.c`).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpvm3.so.3");
    println!("cargo:rerun-if-changed=src/packf.c");
    cc::Build::new()
        .file("src/packf.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("pvm3packf");
}

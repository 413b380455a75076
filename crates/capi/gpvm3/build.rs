//! Gives the library PVM 3.4's soname.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgpvm3.so.3");
}

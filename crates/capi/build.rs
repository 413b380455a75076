//! Gives `libthreadwire.so` its soname, so that programs linked against it
//! record `libthreadwire.so.0` and a later compatible build can replace it.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libthreadwire.so.0");
    }
}

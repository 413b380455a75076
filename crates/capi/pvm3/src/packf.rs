//! `pvm_packf` and `pvm_unpackf`, exported: jumps to their C bodies in
//! `packf.c`.
//!
//! The C functions take C's variable arguments, which stable Rust can
//! neither define nor forward, and a Rust cdylib exports only the symbols
//! Rust defines. A naked function defines the symbol and jumps, leaving
//! every register and the stack as the caller set them — the arguments,
//! and on x86-64 the count of vector registers in `al` — so the C body
//! reads them as if called directly.

unsafe extern "C" {
    fn threadwire_pvm_packf();
    fn threadwire_pvm_unpackf();
}

macro_rules! jump_to {
    ($name:ident => $target:ident) => {
        /// PVM's function of this name (`packf.c`).
        #[unsafe(naked)]
        #[no_mangle]
        pub extern "C" fn $name() {
            #[cfg(target_arch = "x86_64")]
            core::arch::naked_asm!("jmp {}", sym $target);
            #[cfg(target_arch = "aarch64")]
            core::arch::naked_asm!("b {}", sym $target);
        }
    };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("pvm_packf's jump is written for x86-64 and aarch64 only");

jump_to!(pvm_packf => threadwire_pvm_packf);
jump_to!(pvm_unpackf => threadwire_pvm_unpackf);

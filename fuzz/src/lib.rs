//! kiln's fuzz targets: their checks ([`checks`], which the test suite's corpus replay includes
//! by path) and the `main` every target binary defines with [`fuzz_main!`].

pub mod checks;
pub use checks::*;

/// Defines a fuzz target binary (`#![no_main]`) running `$check` on each input: the
/// `fuzz_target!` of libfuzzer-sys and a `main` that starts libFuzzer's driver.
///
/// libFuzzer's own `main` cannot be used: kiln links MLIR's static libraries, mlir-sys links all
/// of them, and `libMLIRMlirOptMain.a` defines a `main` (mlir-opt's) that the linker may take
/// first; a target built so parses libFuzzer's flags as LLVM options and exits.
#[macro_export]
macro_rules! fuzz_main {
    ($check:path) => {
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $check(data));

        extern "C" {
            fn LLVMFuzzerRunDriver(
                argc: *mut i32,
                argv: *mut *mut *mut std::ffi::c_char,
                callback: extern "C" fn(*const u8, usize) -> i32,
            ) -> i32;
        }

        extern "C" fn one_input(data: *const u8, size: usize) -> i32 {
            // SAFETY: libFuzzer passes `size` readable bytes at `data`.
            unsafe { libfuzzer_sys::test_input_wrap(data, size) }
        }

        #[no_mangle]
        pub extern "C" fn main(mut argc: i32, mut argv: *mut *mut std::ffi::c_char) -> i32 {
            // SAFETY: argc and argv are the process's, as the C runtime passes them to `main`.
            unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, one_input) }
        }
    };
}

//! Compiles `shim/registration.cpp`, the selective MLIR registration (see that file for why).

use std::{env, path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=shim/registration.cpp");
    for var in ["MLIR_SYS_220_PREFIX", "LLVM_SYS_221_PREFIX"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let include_dir = llvm_config("--includedir");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .include(include_dir.trim())
        .file("shim/registration.cpp")
        .warnings(true)
        .compile("kiln_mlir_shim");
}

/// Runs the llvm-config of the LLVM that mlir-sys and llvm-sys link (same prefix variables).
fn llvm_config(arg: &str) -> String {
    let candidates: Vec<PathBuf> = ["MLIR_SYS_220_PREFIX", "LLVM_SYS_221_PREFIX"]
        .iter()
        .filter_map(env::var_os)
        .map(|prefix| PathBuf::from(prefix).join("bin/llvm-config"))
        .chain([
            PathBuf::from("llvm-config-22"),
            PathBuf::from("llvm-config"),
        ])
        .collect();
    for program in &candidates {
        if let Ok(out) = Command::new(program).arg(arg).output() {
            if out.status.success() {
                return String::from_utf8(out.stdout).expect("llvm-config output is UTF-8");
            }
        }
    }
    panic!("llvm-config not found (tried {candidates:?}); set MLIR_SYS_220_PREFIX");
}

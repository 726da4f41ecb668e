//! Compiles the C++ shims: `shim/registration.cpp`, the selective MLIR registration, and
//! `shim/optimize.cpp`, the host optimisation pipeline with libmvec, and `shim/approximate.cpp`,
//! MLIR's polynomial approximations of math functions (see those files for why).

use std::{env, path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=shim/registration.cpp");
    println!("cargo:rerun-if-changed=shim/optimize.cpp");
    println!("cargo:rerun-if-changed=shim/approximate.cpp");
    for var in ["MLIR_SYS_220_PREFIX", "LLVM_SYS_221_PREFIX"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    println!("cargo:rerun-if-env-changed=CXX");

    let include_dir = llvm_config("--includedir");
    let cxxflags = llvm_config("--cxxflags");
    let mut build = cc::Build::new();
    // Unless CXX says otherwise, compile with the clang++ of that same LLVM (package clang-22):
    // it is always there when the LLVM is, while g++ need not be.
    if env::var_os("CXX").is_none() {
        let clang = PathBuf::from(llvm_config("--bindir").trim()).join("clang++");
        if clang.exists() {
            build.compiler(clang);
        }
    }
    build
        .cpp(true)
        .std("c++17")
        .include(include_dir.trim())
        .file("shim/registration.cpp")
        .warnings(true);
    // optimize.cpp and approximate.cpp include LLVM's C++ headers, which want LLVM's own flags (-fno-exceptions,
    // the __STDC_* macros).
    let wanted = |f: &&str| f.starts_with("-D") || *f == "-fno-exceptions";
    for flag in cxxflags.split_whitespace().filter(wanted) {
        build.flag(flag);
    }
    // LLVM's headers are not -Wextra clean.
    build.flag_if_supported("-Wno-unused-parameter");
    build.file("shim/optimize.cpp").file("shim/approximate.cpp").compile("kiln_mlir_shim");
}

/// Runs the llvm-config of the LLVM that mlir-sys and llvm-sys link (same prefix variables).
fn llvm_config(arg: &str) -> String {
    let candidates: Vec<PathBuf> = ["MLIR_SYS_220_PREFIX", "LLVM_SYS_221_PREFIX"]
        .iter()
        .filter_map(env::var_os)
        .map(|prefix| PathBuf::from(prefix).join("bin/llvm-config"))
        .chain([PathBuf::from("llvm-config-22"), PathBuf::from("llvm-config")])
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

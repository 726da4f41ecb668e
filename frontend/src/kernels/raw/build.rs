//! CUDA C++ to a binary: [`compile_source`] is the one place a raw kernel's cubin (or PTX) is
//! produced, so a disk cache of compiled binaries wraps this function alone.

use kiln_runtime::nvrtc::{self, Compiled, Program};

use crate::error::Result;

/// kiln's `complex<T>` header (see the file), given to NVRTC in memory.
pub(crate) const COMPLEX_HEADER: &str = include_str!("complex.cuh");

/// Headers every program can include without an include path: kiln's `complex<T>` as
/// `<kiln/complex.cuh>`, and as `<cupy/complex.cuh>` so CuPy's kernels compile as written.
pub(crate) const HEADERS: [(&str, &str); 2] = [("kiln/complex.cuh", COMPLEX_HEADER), ("cupy/complex.cuh", COMPLEX_HEADER)];

/// A raw module's source and how to compile it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Source {
    /// Names the program in NVRTC's log and kiln's errors.
    pub(crate) name: String,
    pub(crate) code: String,
    /// The user's NVRTC options.
    pub(crate) options: Vec<String>,
    pub(crate) name_expressions: Vec<String>,
}

/// The options NVRTC gets: the user's, and the CUDA toolkit's `include` directory (for
/// `<cuda_fp16.h>` and the like) when one is installed and the user gave no `-I` of it.
pub(crate) fn nvrtc_options(user: &[String]) -> Vec<String> {
    let mut options = user.to_vec();
    if let Some(include) = nvrtc::cuda_roots().into_iter().map(|r| r.join("include")).find(|d| d.is_dir()) {
        let flag = format!("--include-path={}", include.display());
        let short = format!("-I{}", include.display());
        if !options.iter().any(|o| *o == flag || *o == short) {
            options.push(flag);
        }
    }
    options
}

/// Compiles `source` with NVRTC for a device of compute capability `sm` (`major * 10 + minor`):
/// a cubin for `sm_XX`, or PTX when NVRTC does not know the device, and the lowered name of each
/// name expression. Errors: `RuntimeError::Nvrtc` (no libnvrtc; a compilation error, with the
/// log).
pub(crate) fn compile_source(source: &Source, sm: u32) -> Result<Compiled> {
    let options = nvrtc_options(&source.options);
    let program = Program {
        name: &source.name,
        source: &source.code,
        options: &options,
        headers: &HEADERS,
        name_expressions: &source.name_expressions,
    };
    Ok(nvrtc::compile(&program, sm)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_options_come_first_and_stay() {
        let user = vec!["-std=c++17".to_string(), "--use_fast_math".to_string()];
        let options = nvrtc_options(&user);
        assert_eq!(options[..2], user[..]);
        // At most the toolkit's include directory is added, once.
        assert!(options.len() <= 3, "{options:?}");
        assert_eq!(nvrtc_options(&options), options);
    }
}

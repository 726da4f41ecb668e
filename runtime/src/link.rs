//! Relocatable device code linked into a loadable cubin: NVRTC's `-dc`
//! (`--relocatable-device-code=true`) output and the libraries it needs, through the driver's
//! linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkAddFile`, `cuLinkComplete`), as CuPy's
//! `RawModule(..., options=('-dc',))` does. Dynamic parallelism (a kernel launching kernels)
//! needs the toolkit's device runtime, `libcudadevrt.a` ([`cudadevrt`]).

use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};

use cudarc::driver::{result, sys};

use crate::device::Device;
use crate::error::{CudaError, KernelError, KernelStage, LibraryError, Result};
use crate::module::{JitLogs, ModuleImage};
use crate::RuntimeError;

/// The NVRTC options that ask for relocatable device code (CuPy's list): such a program is
/// linked before it loads, with cudadevrt.
pub const RELOCATABLE_OPTIONS: [&str; 5] = [
    "-dc",
    "--device-c",
    "-rdc=true",
    "--relocatable-device-code=true",
    "--relocatable-device-code",
];

/// Whether NVRTC `options` ask for relocatable device code ([`RELOCATABLE_OPTIONS`]).
pub fn is_relocatable(options: &[String]) -> bool {
    options.iter().any(|o| RELOCATABLE_OPTIONS.contains(&o.trim()))
}

/// The toolkit's device runtime library, `libcudadevrt.a` (`lib64`, then `lib`, under each
/// toolkit root: `KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`...). Errors: not
/// found, a [`RuntimeError::Library`] naming `cuLinkAddFile` and every place looked in.
pub fn cudadevrt() -> Result<PathBuf> {
    kiln_cache::cuda_toolkit::cudadevrt().map(Path::to_path_buf).ok_or_else(|| {
        let searched: Vec<String> = kiln_cache::cuda_toolkit::cudadevrt_candidates()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        RuntimeError::Library(LibraryError {
            call: "cuLinkAddFile",
            status: format!(
                "relocatable device code (-dc) needs the CUDA toolkit's libcudadevrt.a, not found \
                 (looked in: {}; set KILN_CUDA_PATH to the toolkit)",
                searched.join(", ")
            ),
        })
    })
}

/// Links `image` (relocatable device code: a cubin from NVRTC with `-dc`, or PTX, relocatable or
/// not: [`crate::link_ptx_to_cubin`] is this without libraries) with the `libraries` (static device libraries, `.a`, such as [`cudadevrt`]) into a cubin for `device`.
/// `name` names the code in errors and in the linker's log. Errors: the driver's linker refusing
/// an input (an unresolved `extern __device__` symbol, a library of another architecture), a
/// [`RuntimeError::Kernel`] at [`KernelStage::Link`] with the linker's log.
pub fn link_relocatable(
    device: Device,
    name: &str,
    image: ModuleImage<'_>,
    libraries: &[&Path],
) -> Result<Vec<u8>> {
    let state = device.state()?;
    let cname = CString::new(name).unwrap_or_else(|_| CString::new("kernel").expect("no NUL"));
    let (kind, data): (sys::CUjitInputType, Vec<u8>) = match image {
        ModuleImage::Ptx(text) => {
            let ptx = CString::new(text).map_err(|_| {
                RuntimeError::InvalidArgument(format!("the PTX of `{name}` contains a NUL byte"))
            })?;
            (sys::CUjitInputType::CU_JIT_INPUT_PTX, ptx.into_bytes_with_nul())
        }
        ModuleImage::Cubin(bytes) => (sys::CUjitInputType::CU_JIT_INPUT_CUBIN, bytes.to_vec()),
    };
    let paths: Vec<CString> = libraries
        .iter()
        .map(|p| {
            CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| {
                RuntimeError::InvalidArgument(format!("{} contains a NUL byte", p.display()))
            })
        })
        .collect::<Result<_>>()?;
    let _bound = state.bind()?;
    let mut logs = JitLogs::new();
    let error = |call: &'static str, e: result::DriverError, logs: &JitLogs| {
        RuntimeError::Kernel(Box::new(KernelError {
            kernel: name.to_owned(),
            stage: KernelStage::Link,
            cuda: Some(CudaError::from_driver(call, e)),
            log: logs.all(),
            dump_path: None,
        }))
    };
    let mut link = std::ptr::null_mut();
    // SAFETY: option arrays and log buffers outlive the link state (destroyed below).
    unsafe {
        sys::cuLinkCreate_v2(
            logs.options.len() as u32,
            logs.options.as_mut_ptr(),
            logs.values.as_mut_ptr(),
            &mut link,
        )
    }
    .result()
    .map_err(|e| error("cuLinkCreate", e, &logs))?;
    struct Destroy(sys::CUlinkState);
    impl Drop for Destroy {
        fn drop(&mut self) {
            // SAFETY: created above, destroyed once.
            let _ = unsafe { sys::cuLinkDestroy(self.0) };
        }
    }
    let _destroy = Destroy(link);
    // SAFETY: `data` holds the image (PTX with its NUL), alive for the call; a NUL-terminated
    // name; no options.
    unsafe {
        sys::cuLinkAddData_v2(
            link,
            kind,
            data.as_ptr() as *mut c_void,
            data.len(),
            cname.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(|e| error("cuLinkAddData", e, &logs))?;
    for path in &paths {
        // SAFETY: a NUL-terminated path; no options.
        unsafe {
            sys::cuLinkAddFile_v2(
                link,
                sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
                path.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|e| error("cuLinkAddFile", e, &logs))?;
    }
    let mut cubin = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: out-pointers to locals; the cubin belongs to the link state, copied before it is
    // destroyed.
    unsafe { sys::cuLinkComplete(link, &mut cubin, &mut size) }
        .result()
        .map_err(|e| error("cuLinkComplete", e, &logs))?;
    if cubin.is_null() || size == 0 {
        return Err(RuntimeError::Kernel(Box::new(KernelError {
            kernel: name.to_owned(),
            stage: KernelStage::Link,
            cuda: None,
            log: format!("the linker returned an empty cubin\n{}", logs.all()),
            dump_path: None,
        })));
    }
    // SAFETY: `size` bytes owned by the live link state.
    Ok(unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocatable_options() {
        let s = |v: &[&str]| v.iter().map(|o| o.to_string()).collect::<Vec<_>>();
        assert!(is_relocatable(&s(&["-std=c++17", "-dc"])));
        assert!(is_relocatable(&s(&["--relocatable-device-code=true"])));
        assert!(is_relocatable(&s(&["-rdc=true"])));
        assert!(!is_relocatable(&s(&["-rdc=false", "--device-debug"])));
        assert!(!is_relocatable(&[]));
    }
}

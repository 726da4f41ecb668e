//! Two small device kernels for the solver calls, so that neither a batch's pointer array nor
//! its `info` array crosses the bus: [`pointer_array`] writes the addresses of a strided batch
//! on the device (no host array, no pageable upload), and [`any_nonzero`] folds an `info` array
//! into one flag, so that [`super::Info::check`] reads four bytes back instead of four a matrix.
//! One CUDA C source, compiled by NVRTC for the device on first use and cached per device.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::Strided;
use crate::device::Device;
use crate::error::Result;
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::DeviceBuffer;
use crate::module::Function;
use crate::stream::Stream;

const SOURCE: &str = r#"
#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// out[i] = base + i * step (bytes): the addresses of a strided batch.
extern "C" __global__ void kiln_solver_pointers(unsigned long long* out, unsigned long long base,
                                                unsigned long long step, long long n) {
    GRID_STRIDE(i, n) { out[i] = base + (unsigned long long)i * step; }
}

// out[i] = base0 + i * step0, out[n + i] = base1 + i * step1: two batches' addresses at once.
extern "C" __global__ void kiln_solver_pointers2(unsigned long long* out, unsigned long long base0,
                                                 unsigned long long step0,
                                                 unsigned long long base1,
                                                 unsigned long long step1, long long n) {
    GRID_STRIDE(i, n) {
        out[i] = base0 + (unsigned long long)i * step0;
        out[n + i] = base1 + (unsigned long long)i * step1;
    }
}

// *flag = 1 when some of the n ints is not 0 (left as it was otherwise).
extern "C" __global__ void kiln_solver_any_nonzero(const int* info, long long n,
                                                   unsigned int* flag) {
    GRID_STRIDE(i, n) {
        if (info[i] != 0) *flag = 1u;
    }
}
"#;

/// The kernels of [`SOURCE`], in the order of [`NAMES`].
const NAMES: [&str; 3] =
    ["kiln_solver_pointers", "kiln_solver_pointers2", "kiln_solver_any_nonzero"];

/// Kernel `name` (one of [`NAMES`]) of [`SOURCE`] on `device`: the source is compiled (or
/// found in the disk cache, [`crate::kiln_modules`]) and loaded once per device, on the first
/// use of any of its kernels.
fn kernel(device: Device, name: &str) -> Result<Function> {
    static MODULES: OnceLock<Mutex<HashMap<usize, Vec<Function>>>> = OnceLock::new();
    let index = NAMES.iter().position(|&n| n == name).ok_or_else(|| {
        crate::error::RuntimeError::InvalidArgument(format!("no solver kernel {name}"))
    })?;
    let map = MODULES.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(fs) = map.get(&device.id()) {
        return Ok(fs[index].clone());
    }
    let disk = crate::kiln_modules::process_disk_cache();
    let module = crate::kiln_modules::kiln_module(device, "kiln_solver", SOURCE, disk)?;
    let fs = NAMES.iter().map(|n| module.function(n)).collect::<Result<Vec<_>>>()?;
    let f = fs[index].clone();
    map.insert(device.id(), fs);
    Ok(f)
}

/// The addresses of the batch's `batch` matrices (elements of `elem` bytes), written on the
/// device on `stream` (for the pointer-array calls); the array is freed in stream order.
pub(super) fn pointer_array(
    stream: &Stream,
    s: Strided,
    batch: usize,
    elem: usize,
) -> Result<DeviceBuffer> {
    let out = DeviceBuffer::alloc_on(stream, 8 * batch)?;
    if batch == 0 {
        return Ok(out);
    }
    let f = kernel(stream.device(), "kiln_solver_pointers")?;
    let (base, step, n) = (s.ptr, (s.stride * elem) as u64, batch as i64);
    let args: [&dyn KernelArg; 4] = [&out, &base, &step, &n];
    // SAFETY: kiln_solver_pointers(out, base, step, n) writes the `n` u64 of `out`.
    unsafe { f.launch_on(stream, LaunchConfig::grid_stride(batch, 256, 4096), &args)? };
    Ok(out)
}

/// The addresses of two batches of `batch` matrices (elements of `elem` bytes) in one array
/// (`a`'s first, then `b`'s at byte `8 * batch`), written on the device by one kernel on
/// `stream`; freed in stream order.
pub(super) fn pointer_arrays(
    stream: &Stream,
    a: Strided,
    b: Strided,
    batch: usize,
    elem: usize,
) -> Result<DeviceBuffer> {
    let out = DeviceBuffer::alloc_on(stream, 16 * batch)?;
    if batch == 0 {
        return Ok(out);
    }
    let f = kernel(stream.device(), "kiln_solver_pointers2")?;
    let (sa, sb) = ((a.stride * elem) as u64, (b.stride * elem) as u64);
    let n = batch as i64;
    let args: [&dyn KernelArg; 6] = [&out, &a.ptr, &sa, &b.ptr, &sb, &n];
    // SAFETY: kiln_solver_pointers2(out, base0, step0, base1, step1, n) writes the `2 n` u64
    // of `out`.
    unsafe { f.launch_on(stream, LaunchConfig::grid_stride(batch, 256, 4096), &args)? };
    Ok(out)
}

/// Whether any of the first `len` `i32` of `info` is not zero: one kernel sets entry `len` (which
/// must be there, zeroed) when one is, and four bytes are read back (which waits for the
/// buffer's stream).
pub(super) fn any_nonzero(info: &DeviceBuffer, len: usize) -> Result<bool> {
    if len == 0 {
        return Ok(false);
    }
    if info.len() < 4 * (len + 1) {
        return Err(crate::error::RuntimeError::InvalidArgument(format!(
            "any_nonzero: {} bytes for {len} entries and the flag",
            info.len()
        )));
    }
    let stream = info.stream();
    let f = kernel(stream.device(), "kiln_solver_any_nonzero")?;
    let (n, flag) = (len as i64, info.ptr() + 4 * len as u64);
    let args: [&dyn KernelArg; 3] = [info, &n, &flag];
    // SAFETY: kiln_solver_any_nonzero(info, n, flag) reads the `n` i32 of `info` and writes the
    // u32 after them (checked above).
    unsafe { f.launch_on(stream, LaunchConfig::grid_stride(len, 256, 1024), &args)? };
    let mut out = [0u8; 4];
    // SAFETY: the four bytes at `flag` lie in `info` (checked above), on the stream's device.
    unsafe { crate::memory::download(stream, &mut out, flag)? };
    Ok(u32::from_ne_bytes(out) != 0)
}

#[cfg(test)]
mod tests {
    /// The library's prebuilt cubin of this module was made from this very source.
    #[test]
    fn the_prebuilt_module_is_of_this_source() {
        crate::kiln_modules::assert_prebuilt_current("kiln_solver", super::SOURCE);
    }
}

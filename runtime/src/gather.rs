//! A strided gather: elements read through a layout (offset, shape, strides in elements,
//! negative or zero allowed) written C-contiguously into a new buffer. The library wrappers'
//! fallback for operands cuBLAS or cuFFT cannot read through strides. One small CUDA C kernel
//! per element size (`gather.cu`), one of kiln's modules ([`crate::kiln_modules`]): carried
//! compiled for sm_90, else compiled by NVRTC once and kept in the disk cache.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::device::Device;
use crate::error::{Result, RuntimeError};
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::{DeviceBuffer, DeviceCopy};
use crate::module::Function;
use crate::stream::Stream;

/// Most axes a gather takes (after merging axes that are contiguous with each other).
pub const MAX_RANK: usize = 8;

/// The kernels' CUDA C++ (carried compiled for sm_90: `runtime/prebuilt/kiln_gather.*`).
pub const SOURCE: &str = include_str!("gather.cu");

/// The kernel's `Dims` argument: extents then strides, padded with 1 and 0.
#[derive(Clone, Copy)]
#[repr(C)]
struct Dims([i64; 2 * MAX_RANK]);
// SAFETY: sixteen i64, no padding, every bit pattern valid.
unsafe impl DeviceCopy for Dims {}

/// Merges axes of extent 1 away and adjacent axes that step through memory as one; returns
/// (extents, strides) with the same elements in the same C order.
pub fn merge_axes(shape: &[usize], strides: &[isize]) -> (Vec<usize>, Vec<isize>) {
    let mut out: Vec<(usize, isize)> = Vec::new();
    for (&n, &s) in shape.iter().zip(strides) {
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some((pn, ps)) if *ps == s * n as isize => {
                *pn *= n;
                *ps = s;
            }
            _ => out.push((n, s)),
        }
    }
    out.into_iter().unzip()
}

/// The gather kernel for `size`-byte elements on `device`: from kiln's module
/// ([`crate::kiln_modules`]: the prebuilt cubin on sm_90, else the disk cache or NVRTC).
fn function(device: Device, size: usize) -> Result<Function> {
    static FUNCTIONS: OnceLock<Mutex<HashMap<(usize, usize), Function>>> = OnceLock::new();
    let map = FUNCTIONS.get_or_init(Default::default);
    if let Some(f) = map.lock().unwrap_or_else(|p| p.into_inner()).get(&(device.id(), size)) {
        return Ok(f.clone());
    }
    let disk = crate::kiln_modules::process_disk_cache();
    let module = crate::kiln_modules::kiln_module(device, "kiln_gather", SOURCE, disk)?;
    let f = module.function(&format!("kiln_gather_{size}"))?;
    map.lock().unwrap_or_else(|p| p.into_inner()).insert((device.id(), size), f.clone());
    Ok(f)
}

/// A new C-contiguous buffer of the `shape` elements of `size` bytes read from `src` at
/// `offset + Σ index[i] * strides[i]` (elements), on the current stream.
/// Errors: an element size other than 1, 2, 4, 8 or 16, a layout reaching outside `src`, more
/// than [`MAX_RANK`] axes once merged.
pub fn gather(
    src: &DeviceBuffer,
    size: usize,
    offset: isize,
    shape: &[usize],
    strides: &[isize],
) -> Result<DeviceBuffer> {
    let n: usize = shape.iter().product();
    let out = DeviceBuffer::alloc(n * size)?;
    if n == 0 {
        return Ok(out);
    }
    if ![1, 2, 4, 8, 16].contains(&size) {
        return Err(RuntimeError::InvalidArgument(format!("gather: {size}-byte elements")));
    }
    let (lo, hi) = shape.iter().zip(strides).fold((offset, offset), |(lo, hi), (&e, &s)| {
        let reach = (e as isize - 1) * s;
        (lo + reach.min(0), hi + reach.max(0))
    });
    if lo < 0 || (hi as usize + 1) * size > src.len() {
        return Err(RuntimeError::InvalidArgument(format!(
            "gather: elements {lo}..={hi} of a buffer of {} bytes ({size}-byte elements)",
            src.len()
        )));
    }
    let (ext, st) = merge_axes(shape, strides);
    if ext.len() > MAX_RANK {
        return Err(RuntimeError::InvalidArgument(format!(
            "gather: {} axes (at most {MAX_RANK})",
            ext.len()
        )));
    }
    let mut dims = Dims([0; 2 * MAX_RANK]);
    for i in 0..MAX_RANK {
        dims.0[i] = ext.get(i).map_or(1, |&e| e as i64);
        dims.0[MAX_RANK + i] = st.get(i).map_or(0, |&s| s as i64);
    }
    let f = function(src.device(), size)?;
    let stream = Stream::current()?;
    let (n64, rank, off) = (n as i64, ext.len() as i32, offset as i64);
    let args: [&dyn KernelArg; 6] = [src, &out, &n64, &rank, &off, &dims];
    let config = LaunchConfig::grid_stride(n, 256, 65535);
    // SAFETY: kiln_gather_<size>(src, dst, n, rank, offset, dims) reads elements of `src` at
    // the positions checked in bounds above and writes the `n` elements of `out`.
    unsafe { f.launch_on(&stream, config, &args)? };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::merge_axes;

    #[test]
    fn the_prebuilt_module_is_of_this_source() {
        crate::kiln_modules::assert_prebuilt_current("kiln_gather", super::SOURCE);
    }

    #[test]
    fn contiguous_axes_merge_and_unit_axes_vanish() {
        assert_eq!(merge_axes(&[2, 3, 4], &[12, 4, 1]), (vec![24], vec![1]));
        assert_eq!(merge_axes(&[2, 1, 4], &[4, 99, 1]), (vec![8], vec![1]));
        // A transpose does not merge.
        assert_eq!(merge_axes(&[3, 2], &[1, 3]), (vec![3, 2], vec![1, 3]));
        // A broadcast axis stays (stride 0).
        assert_eq!(merge_axes(&[5, 3], &[0, 1]), (vec![5, 3], vec![0, 1]));
        assert_eq!(merge_axes(&[1, 1], &[7, 7]), (vec![], vec![]));
    }
}

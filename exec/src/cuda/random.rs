//! Random words and normals on a CUDA device: cuRAND's Philox4x32-10 generator fills device
//! memory (the distributions built on them are the frontend's: `kiln::random`).

use kiln_ir::DType;
use kiln_runtime::rand::{generate, Draw};
use kiln_runtime::Device;

use super::{DeviceArray, Result};

/// A device array of `count` values of `dtype` drawn by `draw` on device `ordinal`, Philox
/// seeded with `seed`. `dtype` must be the draw's type (uint32 words, float32 or float64
/// normals).
pub fn draw(
    ordinal: usize,
    draw: Draw,
    dtype: DType,
    count: usize,
    seed: u64,
) -> Result<DeviceArray> {
    let expected = match draw {
        Draw::U32 => DType::UInt32,
        Draw::NormalF32 { .. } => DType::Float32,
        Draw::NormalF64 { .. } => DType::Float64,
    };
    assert_eq!(dtype, expected, "this draw fills {expected}");
    let _current = Device::new(ordinal)?.use_scoped()?;
    let out = DeviceArray::empty(dtype, &[count])?;
    // SAFETY: `out` holds `count` elements of the draw's type (checked above), on the current
    // device and stream; it outlives the queued call (freed in stream order).
    unsafe { generate(draw, seed, 0, count, out.buffer().ptr())? };
    Ok(out)
}

//! cuRAND: the Philox4x32-10 generator filling device buffers on the current stream.
//!
//! One generator per device, reseeded for every call: a call's numbers depend only on its seed
//! (and offset), so callers get reproducible, independent streams by passing their own seeds.

use std::sync::OnceLock;

use cudarc::curand::sys as cr;

use crate::error::{Result, RuntimeError};
use crate::libs::{ensure_loaded, Handles};
use crate::stream::Stream;

/// What a call draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Draw {
    /// Uniform 32-bit words (`curandGenerate`).
    U32,
    /// Normal float32 of this mean and deviation (`curandGenerateNormal`; `n` must be even).
    NormalF32 { mean: f32, std: f32 },
    /// Normal float64 (`curandGenerateNormalDouble`; `n` must be even).
    NormalF64 { mean: f64, std: f64 },
}

struct Generator(cr::curandGenerator_t);
static CURAND: OnceLock<bool> = OnceLock::new();
fn generators() -> &'static Handles<Generator> {
    static H: OnceLock<Handles<Generator>> = OnceLock::new();
    H.get_or_init(Handles::new)
}

fn check(call: &'static str, s: cr::curandStatus_t) -> Result<()> {
    if s == cr::curandStatus_t::CURAND_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, s))
    }
}

/// Fills `n` elements at `out` with `draw`, from Philox seeded with `seed` at `offset`
/// (numbers already drawn in that stream), on the current stream.
///
/// # Safety
/// `out` is a device address of the current device with room for `n` elements of the draw's
/// type (u32, f32, f64), alive until the stream has run the call.
pub unsafe fn generate(draw: Draw, seed: u64, offset: u64, n: usize, out: u64) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if !matches!(draw, Draw::U32) && n % 2 == 1 {
        return Err(RuntimeError::InvalidArgument(format!(
            "curandGenerateNormal: an odd count ({n})"
        )));
    }
    ensure_loaded("libcurand", &CURAND, &["curand"])?;
    let stream = Stream::current()?;
    generators().with(
        "curandCreateGenerator",
        Some(&stream),
        || {
            let mut g = std::ptr::null_mut();
            // SAFETY: writes a new generator; the device's context is current.
            check("curandCreateGenerator", unsafe {
                cr::curandCreateGenerator(
                    &mut g,
                    cr::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10,
                )
            })?;
            Ok(Generator(g))
        },
        |g| {
            // SAFETY: a live generator and stream of the current device; then the caller's
            // contract for `out`.
            unsafe {
                check(
                    "curandSetStream",
                    cr::curandSetStream(g.0, stream.raw() as cr::cudaStream_t),
                )?;
                check(
                    "curandSetPseudoRandomGeneratorSeed",
                    cr::curandSetPseudoRandomGeneratorSeed(g.0, seed),
                )?;
                check("curandSetGeneratorOffset", cr::curandSetGeneratorOffset(g.0, offset))?;
                match draw {
                    Draw::U32 => {
                        check("curandGenerate", cr::curandGenerate(g.0, out as *mut u32, n))
                    }
                    Draw::NormalF32 { mean, std } => check(
                        "curandGenerateNormal",
                        cr::curandGenerateNormal(g.0, out as *mut f32, n, mean, std),
                    ),
                    Draw::NormalF64 { mean, std } => check(
                        "curandGenerateNormalDouble",
                        cr::curandGenerateNormalDouble(g.0, out as *mut f64, n, mean, std),
                    ),
                }
            }
        },
    )
}

//! `kiln::random`: random arrays, NumPy's `Generator` API (CuPy's `cupy.random`).
//!
//! Random arrays are made at once, as materialised host arrays: drawing numbers is not an op of
//! the graph (nothing to fuse or simplify, and a lazy draw would change with every evaluation).
//! The generator is PCG64 (`rand_pcg`), with `rand`/`rand_distr`'s distributions:
//! - a seed gives the same numbers on every run and machine with the same kiln version;
//! - the numbers are **not** NumPy's for the same seed (NumPy seeds PCG64 through a
//!   `SeedSequence` and has its own samplers), and not the GPU's.
//!
//! On a CUDA backend the numbers are drawn on the device by cuRAND's Philox4x32-10 generator
//! (seeded, per draw, by the next word of the generator's PCG64 stream) and the arrays stay in
//! device memory: same distributions, **not bit-identical** to the CPU's draws for the same
//! seed (see the `random_gpu` module for how each distribution is made).
//!
//! Module functions draw from one global generator, seeded from the operating system until
//! [`seed`] is called; a [`Generator`] is an independent stream (`np.random.default_rng(seed)`).
//!
//! Dtypes: float32 or float64 for the float distributions (float32 draws are made in float32),
//! any integer dtype for [`integers`]. Errors: another dtype ([`IrError::UnsupportedDType`]);
//! bounds out of the dtype's range, `high <= low`, a negative or NaN scale ([`crate::Error::Value`]).

use std::sync::{Mutex, OnceLock};

use kiln_ir::{DType, HostArray, HostElement, IrError};
use rand::{Rng, RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64;

use crate::array::Array;
use crate::error::{value_err, Result};

/// An independent stream of random numbers (`np.random.Generator`).
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Pcg64,
}

/// `np.random.default_rng(seed)`: a generator from a seed, or from the operating system's
/// entropy for `None`.
pub fn default_rng(seed: Option<u64>) -> Generator {
    match seed {
        Some(s) => Generator::new(s),
        None => Generator { rng: Pcg64::from_rng(&mut rand::rng()) },
    }
}

fn float_dtype(op: &str, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::Float32 | DType::Float64) {
        Ok(())
    } else {
        Err(IrError::UnsupportedDType {
            op: op.into(),
            dtypes: vec![dtype],
            accepted: "float32, float64".into(),
        }
        .into())
    }
}

fn array<T: HostElement>(shape: &[usize], v: Vec<T>) -> Array {
    Array::from_host(HostArray::from_vec(shape, v).expect("one value per element"))
}

impl Generator {
    /// A generator seeded with `seed`: the same seed gives the same numbers.
    pub fn new(seed: u64) -> Generator {
        Generator { rng: Pcg64::seed_from_u64(seed) }
    }

    /// Floats of `dtype` drawn by `f64s` (float64) or `f32s` (float32), one per element.
    fn floats(
        &mut self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        f64s: impl Fn(&mut Pcg64) -> f64,
        f32s: impl Fn(&mut Pcg64) -> f32,
    ) -> Result<Array> {
        float_dtype(op, dtype)?;
        let n: usize = shape.iter().product();
        let rng = &mut self.rng;
        Ok(if dtype == DType::Float64 {
            array(shape, (0..n).map(|_| f64s(rng)).collect::<Vec<f64>>())
        } else {
            array(shape, (0..n).map(|_| f32s(rng)).collect::<Vec<f32>>())
        })
    }

    /// `rng.random(size, dtype)`: uniform floats in [0, 1).
    pub fn try_random(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        if let Some(gpu) = crate::random_gpu::device() {
            float_dtype("random", dtype)?;
            return crate::random_gpu::random(gpu, shape, dtype, self.rng.next_u64());
        }
        self.floats("random", shape, dtype, |r| r.random::<f64>(), |r| r.random::<f32>())
    }

    /// `rng.uniform(low, high, size)`: `low + (high - low) * u` for `u` uniform in [0, 1); as in
    /// NumPy, rounding may give `high` itself, and `high < low` draws from (high, low].
    /// Errors: a non-finite bound.
    pub fn try_uniform(
        &mut self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        if !(low.is_finite() && high.is_finite()) {
            return Err(value_err(
                "uniform",
                format!("low and high must be finite, got {low} and {high}"),
            ));
        }
        let (l32, w32) = (low as f32, (high - low) as f32);
        if let Some(gpu) = crate::random_gpu::device() {
            float_dtype("uniform", dtype)?;
            let u = crate::random_gpu::random(gpu, shape, dtype, self.rng.next_u64())?;
            return Ok(if dtype == DType::Float64 {
                u * (high - low) + low
            } else {
                u * w32 + l32
            });
        }
        self.floats(
            "uniform",
            shape,
            dtype,
            |r| low + (high - low) * r.random::<f64>(),
            |r| l32 + w32 * r.random::<f32>(),
        )
    }

    /// `rng.standard_normal(size, dtype)`: normal with mean 0 and standard deviation 1.
    pub fn try_standard_normal(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        if let Some(gpu) = crate::random_gpu::device() {
            float_dtype("standard_normal", dtype)?;
            return crate::random_gpu::normal(gpu, 0.0, 1.0, shape, dtype, self.rng.next_u64());
        }
        self.floats(
            "standard_normal",
            shape,
            dtype,
            |r| StandardNormal.sample(r),
            |r| StandardNormal.sample(r),
        )
    }

    /// `rng.normal(loc, scale, size)`: `loc + scale * z`, `z` standard normal. Errors: a negative
    /// or NaN `scale` (NumPy's "scale < 0").
    pub fn try_normal(
        &mut self,
        loc: f64,
        scale: f64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        if scale.is_nan() || scale < 0.0 {
            return Err(value_err("normal", format!("scale < 0 (got {scale})")));
        }
        let (l32, s32) = (loc as f32, scale as f32);
        if let Some(gpu) = crate::random_gpu::device() {
            float_dtype("normal", dtype)?;
            return crate::random_gpu::normal(gpu, loc, scale, shape, dtype, self.rng.next_u64());
        }
        self.floats(
            "normal",
            shape,
            dtype,
            |r| loc + scale * <StandardNormal as Distribution<f64>>::sample(&StandardNormal, r),
            |r| l32 + s32 * <StandardNormal as Distribution<f32>>::sample(&StandardNormal, r),
        )
    }

    /// `rng.integers(low, high, size, dtype)`: integers uniform in [low, high) (`endpoint=False`).
    /// Errors: `high <= low`, a bound outside the dtype's range, a dtype that is not an integer.
    pub fn try_integers(
        &mut self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        let Some((lo, hi)) = dtype.int_range().filter(|_| dtype.is_integer()) else {
            return Err(IrError::UnsupportedDType {
                op: "integers".into(),
                dtypes: vec![dtype],
                accepted: "int, uint".into(),
            }
            .into());
        };
        if (low as i128) < lo {
            return Err(value_err("integers", format!("low is out of bounds for {dtype}")));
        }
        if (high as i128) - 1 > hi {
            return Err(value_err("integers", format!("high is out of bounds for {dtype}")));
        }
        if high <= low {
            return Err(value_err("integers", "low >= high"));
        }
        if let Some(gpu) = crate::random_gpu::device() {
            return crate::random_gpu::integers(gpu, low, high, shape, dtype, self.rng.next_u64());
        }
        let n: usize = shape.iter().product();
        let draws: Vec<i64> = (0..n).map(|_| self.rng.random_range(low..high)).collect();
        // In range for the dtype by the checks above, so the conversions are exact.
        Ok(match dtype {
            DType::Int8 => array(shape, draws.iter().map(|&v| v as i8).collect::<Vec<_>>()),
            DType::Int16 => array(shape, draws.iter().map(|&v| v as i16).collect::<Vec<_>>()),
            DType::Int32 => array(shape, draws.iter().map(|&v| v as i32).collect::<Vec<_>>()),
            DType::Int64 => array(shape, draws),
            DType::UInt8 => array(shape, draws.iter().map(|&v| v as u8).collect::<Vec<_>>()),
            DType::UInt16 => array(shape, draws.iter().map(|&v| v as u16).collect::<Vec<_>>()),
            DType::UInt32 => array(shape, draws.iter().map(|&v| v as u32).collect::<Vec<_>>()),
            DType::UInt64 => array(shape, draws.iter().map(|&v| v as u64).collect::<Vec<_>>()),
            _ => unreachable!("an integer dtype"),
        })
    }
}

/// The panicking forms of the generator's methods.
impl Generator {
    /// [`Generator::try_random`], panicking on error.
    #[track_caller]
    pub fn random(&mut self, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_random(shape, dtype))
    }
    /// [`Generator::try_uniform`], panicking on error.
    #[track_caller]
    pub fn uniform(&mut self, low: f64, high: f64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_uniform(low, high, shape, dtype))
    }
    /// [`Generator::try_standard_normal`], panicking on error.
    #[track_caller]
    pub fn standard_normal(&mut self, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_standard_normal(shape, dtype))
    }
    /// [`Generator::try_normal`], panicking on error.
    #[track_caller]
    pub fn normal(&mut self, loc: f64, scale: f64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_normal(loc, scale, shape, dtype))
    }
    /// [`Generator::try_integers`], panicking on error.
    #[track_caller]
    pub fn integers(&mut self, low: i64, high: i64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_integers(low, high, shape, dtype))
    }
}

fn global() -> &'static Mutex<Generator> {
    static GLOBAL: OnceLock<Mutex<Generator>> = OnceLock::new();
    GLOBAL.get_or_init(|| Mutex::new(default_rng(None)))
}

fn with_global<T>(f: impl FnOnce(&mut Generator) -> T) -> T {
    // A panic while drawing cannot leave the generator half-updated in a harmful way: keep going.
    let mut g = global().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut g)
}

/// `np.random.seed(s)` / `cupy.random.seed(s)`: restarts the global generator from `s`.
pub fn seed(s: u64) {
    with_global(|g| *g = Generator::new(s));
}

macro_rules! global_fns {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident ($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        pub fn $try_name($($arg: $ty),*) -> Result<Array> {
            with_global(|g| g.$try_name($($arg),*))
        }

        #[doc = concat!("[`", stringify!($try_name), "`], panicking on error.")]
        #[track_caller]
        pub fn $name($($arg: $ty),*) -> Array {
            crate::unwrap($try_name($($arg),*))
        }
    )*};
}

global_fns! {
    /// Uniform floats in [0, 1) from the global generator ([`Generator::try_random`]).
    random, try_random(shape: &[usize], dtype: DType);
    /// `low + (high - low) * u` from the global generator ([`Generator::try_uniform`]).
    uniform, try_uniform(low: f64, high: f64, shape: &[usize], dtype: DType);
    /// Standard normal floats from the global generator ([`Generator::try_standard_normal`]).
    standard_normal, try_standard_normal(shape: &[usize], dtype: DType);
    /// Normal floats of mean `loc` and deviation `scale` ([`Generator::try_normal`]).
    normal, try_normal(loc: f64, scale: f64, shape: &[usize], dtype: DType);
    /// Integers in [low, high) from the global generator ([`Generator::try_integers`]).
    integers, try_integers(low: i64, high: i64, shape: &[usize], dtype: DType);
}

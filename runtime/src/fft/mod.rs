//! cuFFT: batched one-dimensional transforms with cuFFT's advanced layout, run on the current
//! stream, their plans kept in a per-device LRU cache with statistics
//! (`cupy.fft.config.get_plan_cache()`).
//!
//! A transform is described by an [`FftLayout`]: `batch` transforms of length `n`, element `x`
//! of transform `b` read at `b * idist + x * istride` and written at `b * odist + x * ostride`
//! (in elements of the input and output types). Multi-axis transforms are made of these by the
//! caller, one axis at a time. cuFFT allocates each plan's work area itself (`cudaMalloc`, not
//! kiln's pool): the cache's limit bounds that memory too.

use std::collections::VecDeque;
use std::sync::OnceLock;

pub mod callbacks;
pub use callbacks::{CallbackKind, Callbacks, JitCallback};

use cudarc::cufft::sys as ff;

use crate::error::{Result, RuntimeError};
use crate::libs::{ensure_loaded, Handles};
use crate::stream::Stream;

/// The transform type (`cufftType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftType {
    /// complex64 to complex64.
    C2C,
    /// float32 to complex64 (n/2+1 outputs).
    R2C,
    /// complex64 (n/2+1 inputs) to float32.
    C2R,
    /// complex128 to complex128.
    Z2Z,
    /// float64 to complex128.
    D2Z,
    /// complex128 to float64.
    Z2D,
}

impl FftType {
    fn raw(self) -> ff::cufftType {
        use ff::cufftType::*;
        match self {
            FftType::C2C => CUFFT_C2C,
            FftType::R2C => CUFFT_R2C,
            FftType::C2R => CUFFT_C2R,
            FftType::Z2Z => CUFFT_Z2Z,
            FftType::D2Z => CUFFT_D2Z,
            FftType::Z2D => CUFFT_Z2D,
        }
    }

    /// Bytes of an input and an output element.
    pub fn element_sizes(self) -> (usize, usize) {
        match self {
            FftType::C2C => (8, 8),
            FftType::Z2Z => (16, 16),
            FftType::R2C => (4, 8),
            FftType::C2R => (8, 4),
            FftType::D2Z => (8, 16),
            FftType::Z2D => (16, 8),
        }
    }

    /// Elements of input and output along a transform of length `n`.
    fn extents(self, n: usize) -> (usize, usize) {
        match self {
            FftType::C2C | FftType::Z2Z => (n, n),
            FftType::R2C | FftType::D2Z => (n, n / 2 + 1),
            FftType::C2R | FftType::Z2D => (n / 2 + 1, n),
        }
    }
}

/// `batch` transforms of length `n` (see the module docs for the strides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FftLayout {
    pub ty: FftType,
    pub n: usize,
    pub batch: usize,
    pub istride: usize,
    pub idist: usize,
    pub ostride: usize,
    pub odist: usize,
}

/// The plan cache's statistics for one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlanCacheInfo {
    /// Plans held.
    pub size: usize,
    /// Most plans held (least recently used evicted beyond it; 0: no caching).
    pub limit: usize,
    /// Transforms that found their plan in the cache.
    pub hits: u64,
    /// Transforms that made a plan.
    pub misses: u64,
}

/// CuPy's default: 16 plans per device.
pub const DEFAULT_PLAN_CACHE_SIZE: usize = 16;

/// A plan handle, and what its JIT callbacks were given by address: cuFFT keeps the addresses of
/// the caller-info array (`void **caller_info`) and of the callback's name (read when the plan
/// is made: a name freed before then fails the plan with `CUFFT_INVALID_SIZE`), so both live,
/// boxed, as long as the plan.
struct Plan(ff::cufftHandle, Vec<(Box<[u64; 1]>, std::ffi::CString)>);

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: the plan was made by `cufftCreate` and is destroyed once (its device's
        // context is current: plans are dropped under `Handles::with`).
        let _ = unsafe { ff::cufftDestroy(self.0) };
    }
}

/// What a plan is cached under: its layout and the JIT callbacks linked into it (none for a
/// plain plan).
#[derive(Clone, Debug, PartialEq, Eq)]
struct PlanKey {
    layout: FftLayout,
    load: Option<JitCallback>,
    store: Option<JitCallback>,
}

/// Most recently used at the back.
struct PlanCache {
    plans: VecDeque<(PlanKey, Plan)>,
    info: PlanCacheInfo,
}

impl PlanCache {
    fn trim(&mut self) {
        while self.plans.len() > self.info.limit {
            self.plans.pop_front();
        }
        self.info.size = self.plans.len();
    }
}

static CUFFT: OnceLock<bool> = OnceLock::new();
fn caches() -> &'static Handles<PlanCache> {
    static H: OnceLock<Handles<PlanCache>> = OnceLock::new();
    H.get_or_init(Handles::new)
}

/// Starts loading cuFFT on a thread of its own, once per process (before a plan with an FFT
/// first runs), so that the first transform does not wait for the loader. Never fails: a
/// library that does not load is reported by the first call, as without a preload.
pub fn preload() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    crate::libs::preload(&STARTED, || {
        let _ = ensure_loaded("libcufft", &CUFFT, &["cufft"]);
    });
}

/// Runs `f` with the current device's plan cache; `stream`: the stream `f` queues transforms on
/// (the plans' work areas are shared by every stream, see [`crate::libs`]).
fn with_cache<T>(
    stream: Option<&Stream>,
    f: impl FnOnce(&mut PlanCache) -> Result<T>,
) -> Result<T> {
    ensure_loaded("libcufft", &CUFFT, &["cufft"])?;
    caches().with(
        "cufftCreate",
        stream,
        || {
            Ok(PlanCache {
                plans: VecDeque::new(),
                info: PlanCacheInfo { limit: DEFAULT_PLAN_CACHE_SIZE, ..Default::default() },
            })
        },
        f,
    )
}

fn check(call: &'static str, r: ff::cufftResult) -> Result<()> {
    if r == ff::cufftResult::CUFFT_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, r))
    }
}

fn make_plan(key: &PlanKey) -> Result<Plan> {
    let l = &key.layout;
    let mut handle: ff::cufftHandle = 0;
    // SAFETY: writes a new plan handle.
    check("cufftCreate", unsafe { ff::cufftCreate(&mut handle) })?;
    let mut plan = Plan(handle, Vec::new());
    for (kind, cb) in [(CallbackKind::Load, &key.load), (CallbackKind::Store, &key.store)] {
        if let Some(cb) = cb {
            let mut info = Box::new([cb.caller_info]);
            let name = callbacks::c_name(kind, cb)?;
            // SAFETY: a created plan, not made yet; the info array and the name live as long
            // as the plan (a CString's bytes stay where they are when it moves).
            unsafe { callbacks::attach(plan.0, kind, l.ty, cb, &name, &mut info)? };
            plan.1.push((info, name));
        }
    }
    let with_callbacks = key.load.is_some() || key.store.is_some();
    let (ni, no) = l.ty.extents(l.n);
    let mut n = [l.n as i64];
    // Non-null embeds turn on the advanced layout (strides and distances); for rank 1 cuFFT
    // reads no extent from them beyond their presence. A packed layout (unit strides,
    // transforms one after another) gets null embeds: cuFFT's basic layout, the plan CuPy and
    // torch make for contiguous data.
    let mut inembed = [ni as i64];
    let mut onembed = [no as i64];
    let packed =
        l.istride == 1 && l.ostride == 1 && (l.batch == 1 || (l.idist == ni && l.odist == no));
    let embed = |e: &mut [i64; 1]| if packed { std::ptr::null_mut() } else { e.as_mut_ptr() };
    let (ip, op) = (embed(&mut inembed), embed(&mut onembed));
    let mut work = 0usize;
    // SAFETY: a fresh plan; the arrays hold `rank` = 1 element each and live across the call
    // (or are null: the basic layout).
    let made = unsafe {
        ff::cufftMakePlanMany64(
            plan.0,
            1,
            n.as_mut_ptr(),
            ip,
            l.istride as i64,
            l.idist as i64,
            op,
            l.ostride as i64,
            l.odist as i64,
            l.ty.raw(),
            l.batch as i64,
            &mut work,
        )
    };
    if with_callbacks && made != ff::cufftResult::CUFFT_SUCCESS {
        // cuFFT links the callbacks into its kernels here: a failure is theirs (a name or
        // prototype cuFFT cannot find, or code nvJitLink cannot link).
        return Err(RuntimeError::library(
            "cufftMakePlanMany64 with JIT callbacks",
            format!(
                "{made:?} (cuFFT could not link the callbacks: check their names and prototypes: {})",
                [(CallbackKind::Load, &key.load), (CallbackKind::Store, &key.store)]
                    .iter()
                    .filter_map(|(k, cb)| cb.as_ref().map(|cb| callbacks::prototype(*k, l.ty, &cb.name)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ));
    }
    check("cufftMakePlanMany64", made)?;
    Ok(plan)
}

/// Queues the transforms of `l` from `input` to `output` on the current stream (`inverse`:
/// `CUFFT_INVERSE`, for the complex-to-complex types; unnormalised both ways, as cuFFT).
/// The complex-to-real types overwrite their input.
///
/// # Safety
/// `input` and `output` are device addresses of the current device holding every element the
/// layout addresses, of the type's input and output element types; they stay allocated until
/// the stream has run the transform. In place (`input == output`) only with identical input
/// and output layouts.
pub unsafe fn exec(l: &FftLayout, inverse: bool, input: u64, output: u64) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { exec_with(l, inverse, input, output, None, None) }
}

/// [`exec`] with JIT callbacks linked into the transform: `load` for its input elements,
/// `store` for its output elements (see [`callbacks`]). The plan is cached under the layout and
/// the callbacks. Errors: cuFFT cannot link a callback (its name or prototype), and [`exec`]'s.
///
/// # Safety
/// As [`exec`]; and each callback's code reads and writes only memory that is valid for the
/// transform (its `dataIn`/`dataOut` at the offsets cuFFT gives, its caller info array).
pub unsafe fn exec_with(
    l: &FftLayout,
    inverse: bool,
    input: u64,
    output: u64,
    load: Option<&JitCallback>,
    store: Option<&JitCallback>,
) -> Result<()> {
    if l.n == 0 || l.batch == 0 {
        return Ok(());
    }
    let stream = Stream::current()?;
    let key = PlanKey { layout: *l, load: load.cloned(), store: store.cloned() };
    with_cache(Some(&stream), |cache| {
        let hit = cache.plans.iter().position(|(k, _)| *k == key);
        let entry = match hit {
            Some(i) => {
                cache.info.hits += 1;
                cache.plans.remove(i).expect("found above")
            }
            None => {
                cache.info.misses += 1;
                let plan = make_plan(&key)?;
                (key, plan)
            }
        };
        let plan = entry.1 .0;
        // SAFETY: a live plan and stream of the current device.
        check("cufftSetStream", unsafe {
            ff::cufftSetStream(plan, stream.raw() as ff::cudaStream_t)
        })?;
        let dir = if inverse { 1 } else { -1 };
        let (i, o) = (input as *mut std::ffi::c_void, output as *mut std::ffi::c_void);
        // SAFETY: the caller's contract; the plan's type matches the call made for it.
        let (call, r) = unsafe {
            match l.ty {
                FftType::C2C => ("cufftExecC2C", ff::cufftExecC2C(plan, i.cast(), o.cast(), dir)),
                FftType::Z2Z => ("cufftExecZ2Z", ff::cufftExecZ2Z(plan, i.cast(), o.cast(), dir)),
                FftType::R2C => ("cufftExecR2C", ff::cufftExecR2C(plan, i.cast(), o.cast())),
                FftType::D2Z => ("cufftExecD2Z", ff::cufftExecD2Z(plan, i.cast(), o.cast())),
                FftType::C2R => ("cufftExecC2R", ff::cufftExecC2R(plan, i.cast(), o.cast())),
                FftType::Z2D => ("cufftExecZ2D", ff::cufftExecZ2D(plan, i.cast(), o.cast())),
            }
        };
        cache.plans.push_back(entry);
        cache.trim();
        check(call, r)
    })
}

/// The current device's plan cache statistics.
pub fn plan_cache_info() -> Result<PlanCacheInfo> {
    with_cache(None, |c| Ok(c.info))
}

/// Sets the most plans the current device's cache holds (0 turns caching off); evicts the least
/// recently used beyond it (`PlanCache.set_size`).
pub fn set_plan_cache_size(limit: usize) -> Result<()> {
    with_cache(None, |c| {
        c.info.limit = limit;
        c.trim();
        Ok(())
    })
}

/// Destroys every cached plan of the current device (`PlanCache.clear`); statistics are kept.
pub fn clear_plan_cache() -> Result<()> {
    with_cache(None, |c| {
        c.plans.clear();
        c.info.size = 0;
        Ok(())
    })
}

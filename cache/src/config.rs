//! kiln's configuration: every `KILN_*` environment variable the library reads, read once per
//! process ([`config`]) into the typed fields of [`Config`], with one grammar for their values.
//! The README's "Configuration" table lists them all, with the test- and bench-only variables
//! that their tests and benchmarks read themselves.
//!
//! # Values
//!
//! - Surrounding white space is ignored, and an empty value is the same as an unset variable.
//! - Words (booleans, choices, `off`, `all`) are case-insensitive.
//! - A *boolean* is `1`, `on`, `true` or `yes`; `0`, `off`, `false` or `no`.
//! - An *integer* is decimal digits, within the range its variable gives.
//! - A *choice* is one of the words its variable lists.
//! - A *list* is items separated by commas (empty items skipped), each valid on its own: an
//!   invalid item is dropped, the others kept.
//! - A *path* is taken as written (not trimmed), relative to the working directory.
//! - A few variables combine these (`off` or a path; `off` or an integer; two integers
//!   `THREADS,TILE`; bytes or a percentage): their field says how.
//!
//! # Invalid values
//!
//! An invalid value is never an error: the variable takes its default, and one line on stderr
//! names the variable, the value and what it accepts (`kiln: KILN_GPU_TIER=`quick` ignored:
//! expected `fast` or `optimized`; using the default`), printed once, when [`config`] first
//! reads the environment. The configuration is read lazily, in the middle of a user's
//! computation, where a panic over a tuning variable would lose the work. [`Config::warnings`]
//! keeps the lines.
//!
//! # When it is read
//!
//! [`config`] reads the environment the first time the library asks for a setting and keeps it
//! for the process: a program that sets a variable for itself (`std::env::set_var`) does so
//! before its first kiln call (as `kiln-bench` does for `KILN_CACHE_DIR`); child processes
//! read their own. [`Config::from_env`] reads the environment again, [`Config::from_vars`]
//! reads given variables (tests).

use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::cuda_toolkit::ToolkitEnv;

/// The stages `KILN_DUMP` can name, in pipeline order (`all` names them all).
/// The names of `kiln_compiler::pipeline::Stage`, which a test keeps equal.
pub const DUMP_STAGES: &[&str] =
    &["graph", "simplified", "int-matmul", "regions", "schedule", "mlir", "llvm", "ptx", "asm"];

/// What runs a schedule's regions on the CPU (`KILN_CODEGEN`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codegen {
    /// `host`: host code compiled through MLIR and LLVM, the evaluator for what it does not
    /// support.
    #[default]
    Host,
    /// `eval`: the reference evaluator for every region.
    Eval,
}

/// Which code tiers new kernels get (`KILN_HOST_TIER`, `KILN_GPU_TIER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TierSetting {
    /// Unset: fast code first, optimised code when it is worth it.
    #[default]
    Auto,
    /// `fast`: fast code only.
    Fast,
    /// `optimized`: optimised code only.
    Optimized,
}

/// The math library of GPU kernels (`KILN_GPU_MATH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMath {
    /// `libdevice`: NVIDIA's `__nv_*` functions.
    Libdevice,
    /// `polynomial`: kiln's own approximations (float32 only).
    Polynomial,
}

/// Where the cubin of a new GPU kernel comes from (`KILN_GPU_LINK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuLink {
    /// `ptx`: none; the PTX is loaded and the driver compiles it.
    Ptx,
    /// `ptxas`: the toolkit's `ptxas`, as a whole program.
    Ptxas,
    /// `cubin`: the driver's `cuLink*` (relocatable code).
    Cubin,
    /// `nvjitlink`: nvJitLink in the process (relocatable code).
    NvJitLink,
}

/// Whether new elementwise GPU kernels run in kiln's bytecode interpreter while their code
/// compiles (`KILN_GPU_INTERP`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GpuInterp {
    /// `on`: a region whose code is in no cache runs interpreted until its compile, on a
    /// thread of its own, lands.
    #[default]
    On,
    /// `off`: every kernel compiles before its first launch.
    Off,
    /// `always`: every region the interpreter can run is interpreted, nothing compiled (for
    /// measuring the interpreter).
    Always,
}

/// How uploads of at most 16 bytes in whole aligned words are written (`KILN_GPU_SMALL_UPLOAD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallUpload {
    /// `off`: as any upload, a copy through pinned staging (for measuring).
    Off,
    /// `memset`: a `cuMemsetD32Async` per 32-bit word.
    Memset,
    /// `write` (or `on`, the default): a `cuStreamWriteValue64` per aligned 64-bit word where
    /// the device has 64-bit stream memory operations (memsets where the driver refuses one),
    /// memsets for the rest.
    Write,
}

/// A limit of a device's memory pool (`KILN_GPU_MEMORY_LIMIT`, CuPy's
/// `CUPY_GPU_MEMORY_LIMIT` syntax): a byte count (`1073741824`) or a percentage of the device's
/// memory (`50%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemoryLimit {
    /// So many bytes.
    Bytes(usize),
    /// This fraction (0 to 1) of the device's memory.
    Fraction(f64),
}

impl FromStr for MemoryLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = || format!("invalid memory limit `{text}`");
        match text.strip_suffix('%') {
            Some(percent) => {
                let p: f64 = percent.trim().parse().map_err(|_| bad())?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(bad());
                }
                Ok(MemoryLimit::Fraction(p / 100.0))
            }
            None => text.parse().map(MemoryLimit::Bytes).map_err(|_| bad()),
        }
    }
}

/// Parses a boolean of the grammar (module docs): `None` when `text` is none of its words.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Some(true),
        "0" | "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// Whether `text` is the word `off` (of variables that take `off` or a path or number).
fn is_off(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case("off")
}

/// Every setting of the library's environment variables. Unset variables have their defaults;
/// an `Option` that is `None` leaves the choice to the code that uses it (its default is in
/// the field's docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `KILN_DEVICE`: the backend, `cpu`, `cuda` (device 0) or `cuda:N`, as written (trimmed);
    /// `None`: a CUDA device when there is one, else the CPU. The runtime parses it
    /// (`kiln_runtime::Backend`, the grammar of device strings everywhere) and ignores an
    /// invalid value with a notice on stderr.
    pub device: Option<String>,
    /// `KILN_CODEGEN`: what runs regions on the CPU (default [`Codegen::Host`]).
    pub codegen: Codegen,
    /// `KILN_CACHE_DIR`: the kernel cache's directory (a path, or `off`: `None`, no disk
    /// cache); unset: `$XDG_CACHE_HOME/kiln`, else `$HOME/.cache/kiln`, else `None`.
    pub cache_dir: Option<PathBuf>,
    /// `KILN_DUMP`: the stages whose text each materialisation writes, a list of
    /// [`DUMP_STAGES`] or `all` (default none).
    pub dump: Vec<String>,
    /// `KILN_DUMP_DIR`: where dumps go (default `kiln-dump`).
    pub dump_dir: PathBuf,
    /// `KILN_EGG_ITERS`: the simplifier's iteration limit (an integer; default 16, the
    /// compiler's `DEFAULT_ITER_LIMIT`).
    pub egg_iters: Option<usize>,
    /// `KILN_EGG_NODES`: the simplifier's e-node limit (an integer; default 20000,
    /// `DEFAULT_NODE_LIMIT`).
    pub egg_nodes: Option<usize>,
    /// `KILN_EGG_TIME_MS`: the simplifier's time limit in milliseconds (an integer; default
    /// 1000, `DEFAULT_TIME_LIMIT_MS`).
    pub egg_time_ms: Option<u64>,
    /// `KILN_FAST_MATH`: float rewrites that are not IEEE-exact (a boolean; default off).
    pub fast_math: bool,
    /// `KILN_DISPATCH_STRUCTURE`: a one-root materialisation finds its plan by its root's
    /// structural number, kept as the expression was built, with no walk (a boolean; default
    /// on; off: every call takes the dispatch walk's key, for measurements).
    pub dispatch_structure: bool,
    /// `KILN_HOST_TIER`: the tiers of host kernels (default [`TierSetting::Auto`]).
    pub host_tier: TierSetting,
    /// `KILN_HOST_LIBMVEC`: glibc's vector math functions offered to the vectoriser (a
    /// boolean; default on).
    pub host_libmvec: bool,
    /// `KILN_HOST_LABEL_BLOCK`: a host scatter's screened argmin labels (k-means') taken 16
    /// positions at once, a vector lane a position (a boolean; default on).
    pub host_label_block: bool,
    /// `KILN_HOST_DISTANCES`: how those blocks take k-means' float32 sums of squared
    /// differences for the screen, `expanded` (`Σx² - 2·Σxc + Σc²`: a fused multiply-add a
    /// term, an absolute error bound) or `direct` (`Σ(x - c)²`); `true` for `expanded`.
    pub host_expanded_distances: bool,
    /// `KILN_HOST_BLOCK_SCATTER`: how those blocks scatter their 16 positions, `unrolled`
    /// (undecided labels computed first, under one branch a block, then the 16 positions'
    /// scatters without a branch) or `loop` (a loop over the positions, each with its branch);
    /// `true` for `unrolled`.
    pub host_block_scatter_unrolled: bool,
    /// `KILN_HOST_HUGE_PAGES`: on the CPU backend, large host data given to kiln (`from_vec`,
    /// `from_slice`, `load_npy`) copied into a buffer on transparent huge pages (a boolean;
    /// default on).
    pub host_huge_pages: bool,
    /// `KILN_GPU_TIER`: the tiers of GPU kernels (default [`TierSetting::Auto`]).
    pub gpu_tier: TierSetting,
    /// `KILN_GPU_MATH`: the math library of GPU kernels; `None`: libdevice when it is found,
    /// else polynomial.
    pub gpu_math: Option<GpuMath>,
    /// `KILN_GPU_LINK`: where new GPU kernels' cubins come from; `None`: `ptxas` when it is
    /// found, else the PTX.
    pub gpu_link: Option<GpuLink>,
    /// `KILN_GPU_INTERP`: new elementwise GPU kernels interpreted while they compile (`on`,
    /// `off`, `always`; default on).
    pub gpu_interp: GpuInterp,
    /// `KILN_GPU_COMPILE_AHEAD`: a plan's new GPU kernels compiled at once on the compile
    /// workers before its first step runs (a boolean; default on).
    pub gpu_compile_ahead: bool,
    /// `KILN_GPU_JIT_OPT`: the optimisation level (0 to 4) of fast-tier code's compile from
    /// PTX: the driver JIT's (`CU_JIT_OPTIMIZATION_LEVEL`) for PTX the driver compiles (no
    /// `ptxas` found, or `KILN_GPU_LINK=ptx`), `ptxas -O` (4 being 3) where `ptxas` makes the
    /// cubin; `None`: the driver's default (4), `ptxas -O3`.
    pub gpu_jit_opt: Option<u32>,
    /// `KILN_GPU_GRAPHS`: launch lists replayed as CUDA graphs (`on`, `off` or `auto`; `None`:
    /// `auto`, which the runtime's `replay::mode` takes as on).
    pub gpu_graphs: Option<bool>,
    /// `KILN_GPU_SMALL_UPLOAD`: how uploads of at most 16 bytes in whole aligned words are
    /// written ([`SmallUpload`]; default `write`).
    pub gpu_small_upload: SmallUpload,
    /// `KILN_GPU_SPLIT_UNROLL`: loads in flight per thread of split row reductions' lane loop,
    /// 1, 2, 4 or 8 (tuning; default 4, the lowering's `SPLIT_UNROLL`).
    pub gpu_split_unroll: Option<usize>,
    /// `KILN_GPU_WRITE_UNROLL`: elements per thread and step of a row kernel's output pass
    /// (their loads in flight together), 1, 2, 4 or 8 (tuning; default the lowering's
    /// `WRITE_UNROLL`).
    pub gpu_write_unroll: Option<usize>,
    /// `KILN_ONLINE_SOFTMAX`: softmaxes and layer norms fold their two reductions in one pass
    /// (a boolean, for both targets); `None`: on the GPU only.
    pub online_softmax: Option<bool>,
    /// `KILN_CONST_DIV`: float division by a constant as its reciprocal and one exact correction
    /// (the same bits as the division; a boolean, default on; off: `arith.divf`, for measuring).
    pub const_div: bool,
    /// `KILN_GPU_ROW_DIV`: float32 division in GPU row kernels' output pass by a divisor
    /// fixed for the row (layer norm's deviation, softmax's sum): `on` (default) its
    /// reciprocal once a row and two exact FMA corrections, the IEEE division for the whole
    /// step where an operand is out of range; `hoist` only a row value's division by a
    /// constant computed once; `off` neither (for measuring). 2, 1, 0.
    pub gpu_row_div: u8,
    /// `KILN_GPU_ROW_BOUNDS`: launch bounds of GPU row kernels, the blocks a multiprocessor
    /// holds at once (`.maxntid` and `.minnctapersm`: ptxas keeps the registers within them):
    /// `off` (`Some(0)`) or 1 to 8 (tuning); `None`: the lowering's choice (where the output
    /// pass divides by a row's value, see `gpu_row_div`: 4 with a layer norm's moments, else 5;
    /// otherwise none).
    pub gpu_row_bounds: Option<usize>,
    /// `KILN_GPU_ROW_SORT`: how the GPU sorts lines of at most 8192 elements along the last
    /// axis, `radix` (default: a block radix sort per line, `kiln-exec`'s `cuda/radix_rows.cu`)
    /// or `bitonic` (the generated bitonic line sort where it takes the dtype, for measuring);
    /// `true` for `radix`.
    pub gpu_row_sort_radix: bool,
    /// `KILN_GPU_SCAN_LOOKBACK`: how a tile of a GPU scan along the last axis finds its prefix,
    /// `chunk` (default: the published totals of the tiles before it in its chunk of tiles
    /// after the inclusive prefix published at the chunk before's end) or `fenwick` (a Fenwick
    /// tree of published totals, for measuring); `true` for `fenwick`.
    pub gpu_scan_fenwick: bool,
    /// `KILN_GPU_ROW_CACHE`: `off` turns GPU row kernels' shared-memory row cache off (default
    /// on); see [`gpu_row_cache_unroll`](Self::gpu_row_cache_unroll) for a number.
    pub gpu_row_cache: bool,
    /// `KILN_GPU_ROW_CACHE` as an integer from 1 to 32: the row cache fill's loads in flight
    /// per thread (tuning; default 8, the lowering's `ROW_CACHE_UNROLL`).
    pub gpu_row_cache_unroll: Option<usize>,
    /// `KILN_ARG_SCREEN`: unrolled argmin/argmax over float32 sums of non-negative terms
    /// decided by a float32 pass where its error bound allows, folded exactly elsewhere (the
    /// same results either way; for measuring it): `off` (`Some(0)`), or the terms of each
    /// sum the pass takes a step, 1, 2, 4 or 8 (default on: the lowering's choice, 2 on the GPU
    /// where a scatter block takes several tiles, else 1).
    pub arg_screen: Option<usize>,
    /// `KILN_GPU_SCATTER=THREADS,TILE`: a GPU scatter block's threads (a power of two from 64
    /// to 1024) and tile (32 to `THREADS` positions) (tuning; default 256,128).
    pub gpu_scatter: Option<(usize, usize)>,
    /// `KILN_GPU_SCATTER_BOUNDS`: launch bounds of GPU scatter kernels, the blocks a
    /// multiprocessor should hold at once (`.maxntid` and `.minnctapersm`: ptxas keeps the
    /// registers within them; the launch asks for the largest shared-memory carve-out): `off`
    /// (`Some(0)`) or 1 to 8 (tuning; default the lowering's `SCATTER_MIN_BLOCKS`).
    pub gpu_scatter_bounds: Option<usize>,
    /// `KILN_GPU_SCATTER_POSITIONS`: positions a thread of a GPU scatter kernel's label phase
    /// computes at once (1, 2 or 4: each centre's load used for all of them; tuning; default
    /// the lowering's choice).
    pub gpu_scatter_positions: Option<usize>,
    /// `KILN_GPU_SCATTER_STAGE`: loads a thread of a GPU scatter kernel issues before their
    /// stores when it copies a tile's rows to shared memory (1 to 16; tuning; default the
    /// lowering's choice).
    pub gpu_scatter_stage: Option<usize>,
    /// `KILN_GPU_SCATTER_BLOCKS`: most blocks of a GPU scatter kernel whose bins fit shared
    /// memory (1 to 8192; tuning; default the lowering's choice).
    pub gpu_scatter_blocks: Option<usize>,
    /// `KILN_GPU_SCATTER_HELD`: a GPU scatter kernel's small inputs not indexed by position
    /// (k-means' centres) copied once a block into shared memory and read there (a boolean;
    /// tuning; default the lowering's choice).
    pub gpu_scatter_held: Option<bool>,
    /// `KILN_GPU_SCATTER_OWNED`: a GPU scatter kernel's bins each owned by one thread, which
    /// adds a tile's positions of its row in position order (the label phase marks them in
    /// bit masks), rather than private copies of the bins combined a few positions at a time
    /// (a boolean; tuning; default the lowering's choice).
    pub gpu_scatter_owned: Option<bool>,
    /// `KILN_GPU_SCATTER_QUEUE`: a GPU scatter kernel on a device with bulk copies (`sm_90`)
    /// takes its rows from a queue of tile buffers that producer warps fill by bulk copies,
    /// consumer warps taking tiles of 32 positions on their own (a boolean; tuning; default
    /// the lowering's choice).
    pub gpu_scatter_queue: Option<bool>,
    /// `KILN_GPU_SCATTER_WARP`: a GPU scatter kernel whose outputs all have one-element rows
    /// takes no tiles, every thread combining its positions, float bins in one copy per warp (a
    /// warp's positions of one row in lane order), rather than tiles with float bins in a copy
    /// per group of threads (a boolean; tuning; default the lowering's choice).
    pub gpu_scatter_warp: Option<bool>,
    /// `KILN_GPU_SCATTER_WARP_TILE`: a tiled GPU scatter kernel's warps each take tiles of
    /// this many positions on their own (`off`, 8, 16 or 32: their rows staged in the warp's
    /// shared memory, bins owned by the warp's threads, a copy a warp, no block barrier in the
    /// tile loop), rather than the block taking tiles together (tuning; default the
    /// lowering's choice).
    pub gpu_scatter_warp_tile: Option<usize>,
    /// `KILN_GPU_SCREEN_EXPANDED`: a GPU scatter's screened labels (k-means' argmin of squared
    /// distances) from `‖x‖² − 2·x·c + ‖c‖²` in float32, one fused multiply-add a term, with
    /// the screen's bound widened for it (the labels the evaluator's either way; a boolean;
    /// tuning; default the lowering's choice).
    pub gpu_screen_expanded: Option<bool>,
    /// `KILN_GPU_POOL`: the device memory pools cache freed blocks (a boolean; default on;
    /// off for compute-sanitizer; `async` for the driver's stream-ordered pool, below).
    pub gpu_pool: bool,
    /// `KILN_GPU_POOL=async`: each device's default pool is the driver's stream-ordered pool
    /// (`cuMemAllocAsync`, CuPy's `MemoryAsyncPool`; default off).
    pub gpu_pool_async: bool,
    /// `KILN_GPU_MEMORY_LIMIT`: a limit of each device's default pool (default none).
    pub gpu_memory_limit: Option<MemoryLimit>,
    /// `KILN_STREAM_POOL`: pooled streams per device (an integer from 1; default 8, the
    /// runtime's `DEFAULT_STREAM_POOL_SIZE`).
    pub stream_pool: Option<usize>,
    /// The CUDA toolkit's search variables (`KILN_CUDA_PATH`, `KILN_PTXAS`, `KILN_LIBDEVICE`,
    /// `KILN_NCCL`, and `CUDA_PATH`, `CUDA_HOME`, `PATH`, `HOME`, `VIRTUAL_ENV`): see
    /// [`crate::cuda_toolkit`].
    pub toolkit: ToolkitEnv,
    /// One line per invalid value, each ignored (the module docs).
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads this process's environment (again: [`config`] keeps the first reading).
    pub fn from_env() -> Config {
        Config::from_vars(|name| std::env::var_os(name))
    }

    /// Reads the variables `var` gives (by name; `None` when unset).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Config {
        let mut r = Reader { var, warnings: Vec::new() };
        let tiers = [("fast", TierSetting::Fast), ("optimized", TierSetting::Optimized)];
        let row_cache = r.parse("KILN_GPU_ROW_CACHE", "`off` or an integer from 1 to 32", |t| {
            if is_off(t) {
                Some(None)
            } else {
                t.parse().ok().filter(|n| (1..=32).contains(n)).map(Some)
            }
        });
        // `Some(Some(b))`: a boolean; `Some(None)`: `async`.
        let gpu_pool = r.parse("KILN_GPU_POOL", "a boolean, or `async`", |t| {
            if t.trim().eq_ignore_ascii_case("async") {
                Some(None)
            } else {
                parse_bool(t).map(Some)
            }
        });
        let toolkit = ToolkitEnv {
            kiln_cuda_path: r.path("KILN_CUDA_PATH"),
            cuda_path: r.path("CUDA_PATH"),
            cuda_home: r.path("CUDA_HOME"),
            ptxas: r.path("KILN_PTXAS"),
            libdevice: r.path("KILN_LIBDEVICE"),
            path: r.raw("PATH"),
            home: r.path("HOME"),
            nccl: r.path("KILN_NCCL"),
            virtual_env: r.path("VIRTUAL_ENV"),
        };
        Config {
            device: r.text("KILN_DEVICE"),
            codegen: r
                .choice("KILN_CODEGEN", &[("host", Codegen::Host), ("eval", Codegen::Eval)])
                .unwrap_or_default(),
            cache_dir: r.cache_dir(toolkit.home.as_deref()),
            dump: r.dump(),
            dump_dir: r.path("KILN_DUMP_DIR").unwrap_or_else(|| PathBuf::from("kiln-dump")),
            egg_iters: r.int("KILN_EGG_ITERS", 0..=usize::MAX as u64).map(|v| v as usize),
            egg_nodes: r.int("KILN_EGG_NODES", 0..=usize::MAX as u64).map(|v| v as usize),
            egg_time_ms: r.int("KILN_EGG_TIME_MS", 0..=u64::MAX),
            fast_math: r.bool("KILN_FAST_MATH").unwrap_or(false),
            dispatch_structure: r.bool("KILN_DISPATCH_STRUCTURE").unwrap_or(true),
            host_tier: r.choice("KILN_HOST_TIER", &tiers).unwrap_or_default(),
            host_libmvec: r.bool("KILN_HOST_LIBMVEC").unwrap_or(true),
            host_label_block: r.bool("KILN_HOST_LABEL_BLOCK").unwrap_or(true),
            host_expanded_distances: r
                .choice("KILN_HOST_DISTANCES", &[("expanded", true), ("direct", false)])
                .unwrap_or(true),
            host_block_scatter_unrolled: r
                .choice("KILN_HOST_BLOCK_SCATTER", &[("unrolled", true), ("loop", false)])
                .unwrap_or(true),
            host_huge_pages: r.bool("KILN_HOST_HUGE_PAGES").unwrap_or(true),
            gpu_tier: r.choice("KILN_GPU_TIER", &tiers).unwrap_or_default(),
            gpu_math: r.choice(
                "KILN_GPU_MATH",
                &[("libdevice", GpuMath::Libdevice), ("polynomial", GpuMath::Polynomial)],
            ),
            gpu_link: r.choice(
                "KILN_GPU_LINK",
                &[
                    ("ptx", GpuLink::Ptx),
                    ("ptxas", GpuLink::Ptxas),
                    ("cubin", GpuLink::Cubin),
                    ("nvjitlink", GpuLink::NvJitLink),
                ],
            ),
            gpu_interp: r
                .choice(
                    "KILN_GPU_INTERP",
                    &[
                        ("on", GpuInterp::On),
                        ("off", GpuInterp::Off),
                        ("always", GpuInterp::Always),
                    ],
                )
                .unwrap_or_default(),
            gpu_compile_ahead: r.bool("KILN_GPU_COMPILE_AHEAD").unwrap_or(true),
            gpu_jit_opt: r.int("KILN_GPU_JIT_OPT", 0..=4).map(|v| v as u32),
            gpu_graphs: r
                .parse("KILN_GPU_GRAPHS", "`on`, `off` or `auto`", |t| {
                    if t.trim().eq_ignore_ascii_case("auto") {
                        Some(None)
                    } else {
                        parse_bool(t).map(Some)
                    }
                })
                .flatten(),
            gpu_small_upload: r
                .choice(
                    "KILN_GPU_SMALL_UPLOAD",
                    &[
                        ("off", SmallUpload::Off),
                        ("memset", SmallUpload::Memset),
                        ("write", SmallUpload::Write),
                        ("on", SmallUpload::Write),
                    ],
                )
                .unwrap_or(SmallUpload::Write),
            gpu_split_unroll: r.parse("KILN_GPU_SPLIT_UNROLL", "1, 2, 4 or 8", |t| {
                t.parse().ok().filter(|u| [1, 2, 4, 8].contains(u))
            }),
            gpu_write_unroll: r.parse("KILN_GPU_WRITE_UNROLL", "1, 2, 4 or 8", |t| {
                t.parse().ok().filter(|u| [1, 2, 4, 8].contains(u))
            }),
            online_softmax: r.bool("KILN_ONLINE_SOFTMAX"),
            const_div: r.bool("KILN_CONST_DIV").unwrap_or(true),
            gpu_row_div: r
                .choice("KILN_GPU_ROW_DIV", &[("on", 2), ("hoist", 1), ("off", 0)])
                .unwrap_or(2),
            gpu_row_bounds: r.parse("KILN_GPU_ROW_BOUNDS", "`off` or 1 to 8", |t| {
                if is_off(t) {
                    Some(0)
                } else {
                    t.parse().ok().filter(|n| (1..=8).contains(n))
                }
            }),
            gpu_row_sort_radix: r
                .choice("KILN_GPU_ROW_SORT", &[("radix", true), ("bitonic", false)])
                .unwrap_or(true),
            gpu_scan_fenwick: r
                .choice("KILN_GPU_SCAN_LOOKBACK", &[("chunk", false), ("fenwick", true)])
                .unwrap_or(false),
            gpu_row_cache: row_cache != Some(None),
            gpu_row_cache_unroll: row_cache.flatten(),
            arg_screen: r.parse("KILN_ARG_SCREEN", "`off`, or 1, 2, 4 or 8", |t| {
                if is_off(t) {
                    Some(0)
                } else {
                    t.parse().ok().filter(|u| [1, 2, 4, 8].contains(u))
                }
            }),
            gpu_scatter: r.parse(
                "KILN_GPU_SCATTER",
                "THREADS,TILE: threads a power of two from 64 to 1024, a tile from 32 to THREADS",
                |t| {
                    let (t, p) = t.split_once(',')?;
                    let (t, p): (usize, usize) = (t.trim().parse().ok()?, p.trim().parse().ok()?);
                    (t.is_power_of_two() && (64..=1024).contains(&t) && (32..=t).contains(&p))
                        .then_some((t, p))
                },
            ),
            gpu_scatter_bounds: r.parse("KILN_GPU_SCATTER_BOUNDS", "`off`, or 1 to 8", |t| {
                if is_off(t) {
                    Some(0)
                } else {
                    t.parse().ok().filter(|u| (1..=8).contains(u))
                }
            }),
            gpu_scatter_positions: r.parse("KILN_GPU_SCATTER_POSITIONS", "1, 2 or 4", |t| {
                t.parse().ok().filter(|u| [1, 2, 4].contains(u))
            }),
            gpu_scatter_stage: r.int("KILN_GPU_SCATTER_STAGE", 1..=16).map(|v| v as usize),
            gpu_scatter_blocks: r.int("KILN_GPU_SCATTER_BLOCKS", 1..=8192).map(|v| v as usize),
            gpu_scatter_held: r.bool("KILN_GPU_SCATTER_HELD"),
            gpu_scatter_owned: r.bool("KILN_GPU_SCATTER_OWNED"),
            gpu_scatter_queue: r.bool("KILN_GPU_SCATTER_QUEUE"),
            gpu_scatter_warp: r.bool("KILN_GPU_SCATTER_WARP"),
            gpu_scatter_warp_tile: r.parse(
                "KILN_GPU_SCATTER_WARP_TILE",
                "`off`, 8, 16 or 32",
                |t| {
                    if is_off(t) {
                        Some(0)
                    } else {
                        t.parse().ok().filter(|u| [8, 16, 32].contains(u))
                    }
                },
            ),
            gpu_screen_expanded: r.bool("KILN_GPU_SCREEN_EXPANDED"),
            gpu_pool: gpu_pool != Some(Some(false)),
            gpu_pool_async: gpu_pool == Some(None),
            gpu_memory_limit: r.parse(
                "KILN_GPU_MEMORY_LIMIT",
                "a byte count or a percentage (`50%`)",
                |t| t.parse().ok(),
            ),
            stream_pool: r.int("KILN_STREAM_POOL", 1..=usize::MAX as u64).map(|v| v as usize),
            toolkit,
            warnings: r.warnings,
        }
    }
}

/// The process's configuration, read from the environment the first time it is asked for
/// (each invalid value's line printed on stderr then).
pub fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let config = Config::from_env();
        for line in &config.warnings {
            eprintln!("kiln: {line}");
        }
        config
    })
}

/// Reads variables by the grammar, collecting the invalid ones' lines.
struct Reader<F> {
    var: F,
    warnings: Vec<String>,
}

impl<F: Fn(&str) -> Option<OsString>> Reader<F> {
    /// The value as given; `None` when unset or empty.
    fn raw(&self, name: &str) -> Option<OsString> {
        (self.var)(name).filter(|v| !v.is_empty())
    }

    /// A path.
    fn path(&self, name: &str) -> Option<PathBuf> {
        self.raw(name).map(PathBuf::from)
    }

    /// The value as text, trimmed; `None` when unset or blank (or not UTF-8, with a warning).
    fn text(&mut self, name: &str) -> Option<String> {
        match self.raw(name)?.into_string() {
            Ok(text) => Some(text.trim().to_string()).filter(|t| !t.is_empty()),
            Err(raw) => {
                self.invalid(name, &raw.to_string_lossy(), "UTF-8 text");
                None
            }
        }
    }

    /// The value parsed by `parse`; `None`, with a warning saying `expected`, when it fails.
    fn parse<T>(
        &mut self,
        name: &str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.text(name)?;
        let value = parse(&text);
        if value.is_none() {
            self.invalid(name, &text, expected);
        }
        value
    }

    fn invalid(&mut self, name: &str, value: &str, expected: &str) {
        self.warnings
            .push(format!("{name}=`{value}` ignored: expected {expected}; using the default"));
    }

    fn bool(&mut self, name: &str) -> Option<bool> {
        self.parse(name, "a boolean (`1`, `on`, `true`, `yes`, `0`, `off`, `false`, `no`)", |t| {
            parse_bool(t)
        })
    }

    fn int(&mut self, name: &str, range: RangeInclusive<u64>) -> Option<u64> {
        let expected = match *range.end() {
            end if end >= usize::MAX as u64 => format!("an integer from {}", range.start()),
            end => format!("an integer from {} to {end}", range.start()),
        };
        self.parse(name, &expected, |t| t.parse().ok().filter(|v| range.contains(v)))
    }

    fn choice<T: Copy>(&mut self, name: &str, words: &[(&str, T)]) -> Option<T> {
        let names: Vec<String> = words.iter().map(|(w, _)| format!("`{w}`")).collect();
        let expected = match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "nothing".into(),
        };
        self.parse(name, &expected, |t| {
            words.iter().find(|(w, _)| w.eq_ignore_ascii_case(t)).map(|&(_, v)| v)
        })
    }

    /// `KILN_CACHE_DIR` (`off`, or a path), else the XDG or home cache directory.
    fn cache_dir(&mut self, home: Option<&std::path::Path>) -> Option<PathBuf> {
        match self.raw("KILN_CACHE_DIR") {
            Some(dir) if dir.to_str().is_some_and(is_off) => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => match self.path("XDG_CACHE_HOME") {
                Some(xdg) => Some(xdg.join("kiln")),
                None => home.map(|h| h.join(".cache").join("kiln")),
            },
        }
    }

    /// `KILN_DUMP`: a list of [`DUMP_STAGES`] and `all`.
    fn dump(&mut self) -> Vec<String> {
        const NAME: &str = "KILN_DUMP";
        let Some(text) = self.text(NAME) else { return Vec::new() };
        let mut stages = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let item = item.to_ascii_lowercase();
            if item == "all" {
                stages.extend(DUMP_STAGES.iter().map(|s| s.to_string()));
            } else if DUMP_STAGES.contains(&item.as_str()) {
                stages.push(item);
            } else {
                self.warnings.push(format!(
                    "{NAME} item `{item}` ignored: expected one of {} or `all`",
                    DUMP_STAGES.join(", ")
                ));
            }
        }
        stages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn read(pairs: &[(&str, &str)]) -> Config {
        Config::from_vars(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into()))
    }

    #[test]
    fn defaults() {
        let c = read(&[]);
        assert_eq!(c.device, None);
        assert_eq!(c.codegen, Codegen::Host);
        assert_eq!(c.cache_dir, None);
        assert!(c.dump.is_empty());
        assert_eq!(c.dump_dir, PathBuf::from("kiln-dump"));
        assert_eq!(
            (c.egg_iters, c.egg_nodes, c.egg_time_ms, c.fast_math),
            (None, None, None, false)
        );
        assert_eq!((c.host_tier, c.gpu_tier), (TierSetting::Auto, TierSetting::Auto));
        assert!(c.host_libmvec && c.gpu_pool && c.gpu_row_cache && c.arg_screen.is_none());
        assert!(c.host_label_block && c.host_expanded_distances && c.host_block_scatter_unrolled);
        assert!(c.host_huge_pages && c.dispatch_structure && c.gpu_compile_ahead);
        assert!(c.const_div && c.gpu_row_sort_radix && !c.gpu_scan_fenwick);
        assert_eq!((c.gpu_math, c.gpu_link, c.online_softmax), (None, None, None));
        assert_eq!((c.gpu_split_unroll, c.gpu_row_cache_unroll, c.gpu_scatter), (None, None, None));
        assert_eq!(c.gpu_scatter_bounds, None);
        assert_eq!((c.gpu_scatter_positions, c.gpu_scatter_stage), (None, None));
        assert_eq!((c.gpu_memory_limit, c.stream_pool), (None, None));
        assert_eq!(c.toolkit, ToolkitEnv::default());
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn the_grammar() {
        let c = read(&[
            ("KILN_DEVICE", " cuda:1 "),
            ("KILN_CODEGEN", "EVAL"),
            ("KILN_DUMP", "graph, ,MLIR"),
            ("KILN_EGG_ITERS", " 3 "),
            ("KILN_FAST_MATH", "yes"),
            ("KILN_HOST_TIER", "optimized"),
            ("KILN_HOST_LIBMVEC", "0"),
            ("KILN_HOST_LABEL_BLOCK", "off"),
            ("KILN_HOST_DISTANCES", "Direct"),
            ("KILN_HOST_BLOCK_SCATTER", "loop"),
            ("KILN_HOST_HUGE_PAGES", "off"),
            ("KILN_DISPATCH_STRUCTURE", "off"),
            ("KILN_GPU_TIER", "Fast"),
            ("KILN_GPU_MATH", "polynomial"),
            ("KILN_GPU_LINK", "cubin"),
            ("KILN_GPU_JIT_OPT", " 2"),
            ("KILN_GPU_COMPILE_AHEAD", "off"),
            ("KILN_GPU_SPLIT_UNROLL", "8"),
            ("KILN_ONLINE_SOFTMAX", "off"),
            ("KILN_GPU_ROW_CACHE", "16"),
            ("KILN_GPU_SCATTER", "512, 64"),
            ("KILN_GPU_SCATTER_BOUNDS", "off"),
            ("KILN_ARG_SCREEN", "off"),
            ("KILN_GPU_POOL", "OFF"),
            ("KILN_GPU_MEMORY_LIMIT", "50%"),
            ("KILN_STREAM_POOL", "2"),
            ("KILN_CUDA_PATH", "/k"),
            ("KILN_PTXAS", "/bin/ptxas"),
        ]);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.device.as_deref(), Some("cuda:1"));
        assert_eq!(c.codegen, Codegen::Eval);
        assert_eq!(c.dump, ["graph", "mlir"]);
        assert_eq!((c.egg_iters, c.fast_math), (Some(3), true));
        assert_eq!((c.host_tier, c.gpu_tier), (TierSetting::Optimized, TierSetting::Fast));
        assert!(!c.host_libmvec && !c.gpu_pool && !c.gpu_pool_async && c.gpu_row_cache);
        assert!(
            !c.host_label_block && !c.host_expanded_distances && !c.host_block_scatter_unrolled
        );
        assert!(!c.host_huge_pages && !c.dispatch_structure && !c.gpu_compile_ahead);
        let e =
            read(&[("KILN_HOST_DISTANCES", "expanded"), ("KILN_HOST_BLOCK_SCATTER", "Unrolled")]);
        assert!(
            e.host_expanded_distances && e.host_block_scatter_unrolled && e.warnings.is_empty()
        );
        let bad = read(&[("KILN_HOST_DISTANCES", "gemm")]);
        assert!(bad.host_expanded_distances && bad.warnings.len() == 1, "{bad:?}");
        assert_eq!(c.arg_screen, Some(0));
        assert_eq!(read(&[("KILN_ARG_SCREEN", "8")]).arg_screen, Some(8));
        let a = read(&[("KILN_GPU_POOL", "Async")]);
        assert!(a.gpu_pool && a.gpu_pool_async && a.warnings.is_empty(), "{a:?}");
        let bad = read(&[("KILN_GPU_POOL", "asink")]);
        assert!(bad.gpu_pool && !bad.gpu_pool_async && bad.warnings.len() == 1, "{bad:?}");
        assert_eq!((c.gpu_math, c.gpu_link), (Some(GpuMath::Polynomial), Some(GpuLink::Cubin)));
        assert_eq!(read(&[("KILN_GPU_LINK", "nvjitlink")]).gpu_link, Some(GpuLink::NvJitLink));
        assert_eq!(read(&[]).gpu_interp, GpuInterp::On);
        assert_eq!(read(&[("KILN_GPU_INTERP", "always")]).gpu_interp, GpuInterp::Always);
        assert_eq!(read(&[("KILN_GPU_INTERP", "off")]).gpu_interp, GpuInterp::Off);
        assert_eq!(c.gpu_jit_opt, Some(2));
        assert_eq!(read(&[("KILN_GPU_JIT_OPT", "5")]).gpu_jit_opt, None);
        for (text, want) in [("on", Some(true)), ("off", Some(false)), ("Auto", None)] {
            let g = read(&[("KILN_GPU_GRAPHS", text)]);
            assert!(g.gpu_graphs == want && g.warnings.is_empty(), "{text}: {g:?}");
        }
        let bad = read(&[("KILN_GPU_GRAPHS", "sometimes")]);
        assert!(bad.gpu_graphs.is_none() && bad.warnings.len() == 1, "{bad:?}");
        assert_eq!((c.gpu_split_unroll, c.online_softmax), (Some(8), Some(false)));
        assert_eq!((c.gpu_row_cache_unroll, c.gpu_scatter), (Some(16), Some((512, 64))));
        assert_eq!(c.gpu_scatter_bounds, Some(0));
        assert_eq!(read(&[("KILN_GPU_SCATTER_BOUNDS", "4")]).gpu_scatter_bounds, Some(4));
        assert_eq!(read(&[("KILN_GPU_SCATTER_BOUNDS", "9")]).warnings.len(), 1);
        let s = read(&[("KILN_GPU_SCATTER_POSITIONS", "2"), ("KILN_GPU_SCATTER_STAGE", "8")]);
        assert_eq!((s.gpu_scatter_positions, s.gpu_scatter_stage), (Some(2), Some(8)));
        let s = read(&[("KILN_GPU_SCATTER_POSITIONS", "3"), ("KILN_GPU_SCATTER_STAGE", "17")]);
        assert_eq!(
            (s.gpu_scatter_positions, s.gpu_scatter_stage, s.warnings.len()),
            (None, None, 2)
        );
        assert_eq!(
            (c.gpu_memory_limit, c.stream_pool),
            (Some(MemoryLimit::Fraction(0.5)), Some(2))
        );
        assert_eq!(c.toolkit.kiln_cuda_path, Some(PathBuf::from("/k")));
        assert_eq!(c.toolkit.ptxas, Some(PathBuf::from("/bin/ptxas")));
        assert_eq!(read(&[("KILN_DUMP", "all")]).dump, DUMP_STAGES);
        assert!(!read(&[("KILN_GPU_ROW_CACHE", "off")]).gpu_row_cache);
        assert!(!read(&[("KILN_CONST_DIV", "off")]).const_div);
        assert_eq!(read(&[("KILN_GPU_ROW_DIV", "hoist")]).gpu_row_div, 1);
        assert_eq!(read(&[("KILN_GPU_ROW_BOUNDS", "5")]).gpu_row_bounds, Some(5));
        assert_eq!(read(&[("KILN_GPU_ROW_BOUNDS", "off")]).gpu_row_bounds, Some(0));
        assert_eq!(read(&[("KILN_GPU_ROW_BOUNDS", "9")]).gpu_row_bounds, None);
        assert!(!read(&[("KILN_GPU_ROW_SORT", "Bitonic")]).gpu_row_sort_radix);
        assert!(read(&[("KILN_GPU_ROW_SORT", "radix")]).gpu_row_sort_radix);
        assert!(read(&[("KILN_GPU_SCAN_LOOKBACK", "Fenwick")]).gpu_scan_fenwick);
        assert!(!read(&[("KILN_GPU_SCAN_LOOKBACK", "chunk")]).gpu_scan_fenwick);
        // Empty or blank is unset.
        assert_eq!(read(&[("KILN_DEVICE", "  "), ("KILN_GPU_POOL", "")]), read(&[]));
    }

    #[test]
    fn invalid_values_take_the_default_with_a_warning() {
        let c = read(&[
            ("KILN_EGG_NODES", "lots"),
            ("KILN_FAST_MATH", "2"),
            ("KILN_GPU_TIER", "quick"),
            ("KILN_GPU_SPLIT_UNROLL", "3"),
            ("KILN_GPU_ROW_CACHE", "64"),
            ("KILN_GPU_SCATTER", "100,32"),
            ("KILN_GPU_MEMORY_LIMIT", "150%"),
            ("KILN_STREAM_POOL", "0"),
            ("KILN_DUMP", "graph,gpu"),
        ]);
        let defaults = read(&[]);
        assert_eq!((c.egg_nodes, c.fast_math, c.gpu_tier), (None, false, TierSetting::Auto));
        assert_eq!((c.gpu_split_unroll, c.gpu_row_cache_unroll, c.gpu_scatter), (None, None, None));
        assert!(c.gpu_row_cache);
        assert_eq!((c.gpu_memory_limit, c.stream_pool), (None, None));
        assert_eq!(c.dump, ["graph"]);
        assert_eq!(c.warnings.len(), 9, "{:?}", c.warnings);
        assert_eq!(
            c.warnings.iter().find(|w| w.starts_with("KILN_GPU_TIER")).unwrap(),
            "KILN_GPU_TIER=`quick` ignored: expected `fast` or `optimized`; using the default"
        );
        assert!(c.warnings.iter().any(|w| w.starts_with("KILN_DUMP item `gpu` ignored")));
        assert!(c.warnings.iter().any(|w| w.contains("an integer from 1")), "{:?}", c.warnings);
        assert_ne!(c, defaults);
    }

    #[test]
    fn cache_directory() {
        let dir = |pairs: &[(&str, &str)]| read(pairs).cache_dir;
        assert_eq!(dir(&[("KILN_CACHE_DIR", "/c"), ("HOME", "/h")]), Some("/c".into()));
        assert_eq!(dir(&[("KILN_CACHE_DIR", "off"), ("HOME", "/h")]), None);
        assert_eq!(dir(&[("KILN_CACHE_DIR", " Off ")]), None);
        assert_eq!(dir(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]), Some("/x/kiln".into()));
        assert_eq!(dir(&[("HOME", "/h")]), Some("/h/.cache/kiln".into()));
        assert_eq!(dir(&[]), None);
    }

    #[test]
    fn memory_limits() {
        assert_eq!("1024".parse::<MemoryLimit>(), Ok(MemoryLimit::Bytes(1024)));
        assert_eq!(" 50 % ".parse::<MemoryLimit>(), Ok(MemoryLimit::Fraction(0.5)));
        assert!("150%".parse::<MemoryLimit>().is_err());
        assert!("lots".parse::<MemoryLimit>().is_err());
    }

    /// Every variable the configuration reads is in the README's table.
    #[test]
    fn the_readme_lists_every_variable() {
        let names = RefCell::new(Vec::new());
        Config::from_vars(|name| {
            names.borrow_mut().push(name.to_string());
            None
        });
        let readme = include_str!("../../README.md");
        let table = &readme[readme.find("## Configuration").expect("a Configuration section")..];
        for name in names.into_inner().iter().filter(|n| n.starts_with("KILN_")) {
            assert!(table.contains(&format!("`{name}`")), "{name} is not in the README's table");
        }
    }
}

//! Kernel MLIR text to machine code for this CPU, in two tiers.
//!
//! The MLIR text is parsed, lowered by [`HOST_PIPELINE`] and translated to LLVM IR; the host
//! CPU's name and features are set on every function (so the vectoriser and the code generator
//! use AVX2/AVX-512 where the machine has them, with 512-bit vectors preferred on AVX-512
//! machines), the module is optimised, the target machine emits an object file of it, and
//! LLVM's ORC JIT links that into the process (`toolchain::orc`). Calls to libm (`sinf`,
//! `expm1`, ...) resolve to the process's libm; vectorised loops call glibc's vector math
//! library (libmvec) where it is present ([`libmvec_enabled`]).
//!
//! The object file is what the disk cache keeps (`host_cache`): a kernel read from it is only
//! linked ([`load_object`]), the same machine code as when it was compiled.
//!
//! - [`Tier::Fast`]: a short pipeline (inlining, scalar clean-up, LICM, loop rotation, the loop
//!   vectoriser with libmvec, clean-up) and code generation at `-O0` (fast instruction
//!   selection and register allocation): ~7 ms for a small kernel, code up to ~1.5x slower.
//! - [`Tier::Optimized`]: `default<O3>` and code generation at `-O3`: ~17 ms.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use inkwell::attributes::AttributeLoc;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::OptimizationLevel;
use melior::ir::operation::OperationLike;
use melior::ir::Module;

use super::lower::{HOST_ENTRY, KERNEL, MATH_ATTR};
use super::MathLib;
use crate::toolchain::mlir::{
    approximate_math, capture_diagnostics, new_context, run_pipeline, translate_to_llvm, verify,
    HOST_PIPELINE,
};
use crate::toolchain::orc::{self, Loaded};
use crate::toolchain::ptx::{ms_since, PtxTimes};
use crate::CompileError;

/// How much optimisation a kernel's code gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Quick to compile; loops vectorised, code generation unoptimised.
    Fast,
    /// `default<O3>` and optimised code generation.
    Optimized,
}

impl Tier {
    /// `fast` or `optimized` (as `KILN_HOST_TIER` spells them, and the disk cache stores them).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Optimized => "optimized",
        }
    }

    /// The tier of a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Tier> {
        [Tier::Fast, Tier::Optimized].into_iter().find(|t| t.name() == name)
    }

    /// The tier new kernels get under `setting` (`KILN_HOST_TIER`, `KILN_GPU_TIER`), and
    /// whether they are compiled again optimised when worth it: that tier only when one is
    /// named, else fast first.
    pub fn of_setting(setting: kiln_cache::config::TierSetting) -> (Tier, bool) {
        use kiln_cache::config::TierSetting;
        match setting {
            TierSetting::Fast => (Tier::Fast, false),
            TierSetting::Optimized => (Tier::Optimized, false),
            TierSetting::Auto => (Tier::Fast, true),
        }
    }
}

/// The [`Tier::Fast`] pipeline: enough to turn the MLIR loops into vectorised ones.
///
/// `instcombine` is spelled `instcombine<no-verify-fixpoint>`, as in LLVM's default pipelines:
/// named plainly in a textual pipeline it checks that one iteration reached a fixpoint and
/// aborts the process (`LLVM ERROR: Instruction Combining ... did not reach a fixpoint`) when
/// it did not, which some kernels trigger (a found case: `codegen::runs::fast_tier_instcombine_fixpoint`).
const FAST_PIPELINE: &str = "always-inline,function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,\
     simplifycfg,loop-mssa(licm),loop(loop-rotate,indvars),loop-mssa(licm),inject-tli-mappings,\
     loop-vectorize<interleave-forced-only>,instcombine<no-verify-fixpoint>,simplifycfg,early-cse,dce)";

/// `kiln_kernel_host(buffers, params, start, end)`.
pub(crate) type EntryFn = unsafe extern "C" fn(*const *mut u8, *const i64, i64, i64);

/// Where the time of one compilation (or load from the disk cache) went, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// MLIR: parse, verify, host pipeline, translation to LLVM IR.
    pub mlir: f64,
    /// LLVM's optimisation pipeline.
    pub optimize: f64,
    /// Code generation: the object file.
    pub jit: f64,
    /// Linking the object file into the process (ORC).
    pub link: f64,
    /// The disk cache: looking the entry up and reading it, or writing it.
    pub disk: f64,
}

/// Where a kernel's machine code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled by this process (MLIR, LLVM).
    Compiled,
    /// Read from the disk cache and linked, neither MLIR nor LLVM's optimiser or code generator
    /// run.
    DiskCache,
}

/// Machine code of one kernel, linked into the process.
pub struct HostCode {
    pub entry: EntryFn,
    pub tier: Tier,
    pub origin: Origin,
    /// How long compiling (or loading) it took.
    pub times: CompileTimes,
    _code: Loaded,
}

impl std::fmt::Debug for HostCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCode")
            .field("tier", &self.tier)
            .field("origin", &self.origin)
            .field("times", &self.times)
            .finish()
    }
}

thread_local! {
    /// One MLIR context per thread (creating one loads every dialect).
    static MLIR: melior::Context = new_context();
    /// The host target machine (its CPU name and features).
    static HOST: Result<HostTarget, String> = HostTarget::new();
}

struct HostTarget {
    /// Optimises the module (both tiers) and generates [`Tier::Optimized`] code.
    machine: TargetMachine,
    /// Generates [`Tier::Fast`] code (`-O0`: fast instruction selection and register allocation).
    fast: TargetMachine,
    cpu: String,
    features: String,
}

impl HostTarget {
    fn new() -> Result<HostTarget, String> {
        Target::initialize_native(&InitializationConfig::default())?;
        let triple = TargetMachine::get_default_triple();
        let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
        let cpu = TargetMachine::get_host_cpu_name().to_string();
        let features = TargetMachine::get_host_cpu_features().to_string();
        // The JIT's code model (large on x86-64): calls to libm and libmvec are absolute
        // addresses, linked at any distance from the code.
        let machine = |level| {
            target
                .create_target_machine(
                    &triple,
                    &cpu,
                    &features,
                    level,
                    RelocMode::Default,
                    CodeModel::JITDefault,
                )
                .ok_or_else(|| {
                    format!("no target machine for {}", triple.as_str().to_string_lossy())
                })
        };
        Ok(HostTarget {
            machine: machine(OptimizationLevel::Aggressive)?,
            fast: machine(OptimizationLevel::None)?,
            cpu,
            features,
        })
    }
}

/// What the host's code is generated for: (target triple, CPU name, CPU features), the parts of
/// the disk cache's key that name the machine: those [`HostTarget`] is made with, asked of LLVM
/// without making target machines (a warm start needs none).
pub(crate) fn host_target() -> (String, String, String) {
    let triple = TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned();
    (
        triple,
        TargetMachine::get_host_cpu_name().to_string(),
        TargetMachine::get_host_cpu_features().to_string(),
    )
}

/// Parses kernel MLIR text and runs the host pipeline on it.
fn parse_and_lower<'c>(
    context: &'c melior::Context,
    text: &str,
) -> Result<Module<'c>, CompileError> {
    parse_and_lower_timed(context, text, &mut PtxTimes::default())
}

/// [`parse_and_lower`], recording the parse (and verification) and pass times in `times`.
fn parse_and_lower_timed<'c>(
    context: &'c melior::Context,
    text: &str,
    times: &mut PtxTimes,
) -> Result<Module<'c>, CompileError> {
    let t = Instant::now();
    let (module, diagnostics) = capture_diagnostics(context, || Module::parse(context, text));
    let mut module =
        module.ok_or_else(|| CompileError::Verify(format!("{diagnostics}\n{text}")))?;
    verify(&module)?;
    times.parse = ms_since(t);
    let t = Instant::now();
    let math = module
        .as_operation()
        .attribute(MATH_ATTR)
        .ok()
        .and_then(|a| a.to_string().strip_prefix('"')?.strip_suffix('"').map(String::from));
    if math.as_deref() == Some(MathLib::Polynomial.name()) {
        approximate_math(&module)?;
    }
    run_pipeline(&mut module, HOST_PIPELINE)?;
    times.passes = ms_since(t);
    Ok(module)
}

/// Parses kernel MLIR text, lowers it to the `llvm` dialect and hands the module to `f`
/// (in this thread's MLIR context), recording the parse and pass times in `times`.
pub(crate) fn with_lowered<T>(
    text: &str,
    times: &mut PtxTimes,
    f: impl FnOnce(&Module) -> Result<T, CompileError>,
) -> Result<T, CompileError> {
    MLIR.with(|context| {
        let module = parse_and_lower_timed(context, text, times)?;
        f(&module)
    })
}

/// The LLVM IR of kernel MLIR text before optimisation (canonical: no host CPU in it).
pub(crate) fn translate(text: &str) -> Result<String, CompileError> {
    let llvm = inkwell::context::Context::create();
    MLIR.with(|context| {
        let module = parse_and_lower(context, text)?;
        let m = translate_to_llvm(&module, &llvm)?;
        Ok(m.print_to_string().to_string())
    })
}

/// `KilnVecFn` of `shim/optimize.cpp`: one vector variant of a scalar function.
#[repr(C)]
struct VecFn {
    scalar: *const std::ffi::c_char,
    vector: *const std::ffi::c_char,
    lanes: u32,
    abi: *const std::ffi::c_char,
}

extern "C" {
    /// Defined in `shim/optimize.cpp`: optimises a module for the host (`default<O3>`, or the
    /// textual `pipeline` if not null), the vector variants in `fns[..count]` offered to the
    /// vectorisers. Returns 0, or 1 with a message in `error` if the pipeline does not parse.
    fn kiln_llvm_optimize_host(
        module: *mut std::ffi::c_void,
        machine: *mut std::ffi::c_void,
        fns: *const VecFn,
        count: usize,
        pipeline: *const std::ffi::c_char,
        error: *mut std::ffi::c_char,
        error_len: usize,
    ) -> i32;
}

/// One libmvec entry, as owned strings.
struct VecEntry {
    scalar: std::ffi::CString,
    vector: std::ffi::CString,
    lanes: u32,
    abi: std::ffi::CString,
}

/// glibc's vector math functions present in this process for this CPU, by scalar name (the
/// libm function and, where LLVM has one, the intrinsic): empty when libmvec.so.1 does not load
/// or `KILN_HOST_LIBMVEC=off`. AVX-512 variants (`_ZGVe`, 16 float lanes) where the CPU has
/// AVX-512F, AVX2 ones (`_ZGVd`, 8 lanes) where it has AVX2. libmvec's functions are within
/// 4 ulps (glibc's requirement for them), against 1 to 2 for the scalar ones.
fn libmvec_table() -> &'static [VecEntry] {
    static TABLE: std::sync::OnceLock<Vec<VecEntry>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        // Make the running process's symbols (libm, libc) visible to LLVM's symbol searches.
        inkwell::support::load_visible_symbols();
        if !kiln_cache::config().host_libmvec {
            return Vec::new();
        }
        if inkwell::support::load_library_permanently(std::path::Path::new("libmvec.so.1")).is_err()
        {
            return Vec::new();
        }
        let features = TargetMachine::get_host_cpu_features().to_string();
        let isas: &[(char, u32)] = if features.contains("+avx512f") {
            &[('e', 512), ('d', 256)]
        } else if features.contains("+avx2") {
            &[('d', 256)]
        } else {
            &[]
        };
        // (name, arity, has an LLVM intrinsic)
        const FNS: &[(&str, usize, bool)] = &[
            ("acos", 1, true),
            ("acosh", 1, false),
            ("asin", 1, true),
            ("asinh", 1, false),
            ("atan", 1, true),
            ("atanh", 1, false),
            ("atan2", 2, true),
            ("cbrt", 1, false),
            ("cos", 1, true),
            ("cosh", 1, true),
            ("erf", 1, false),
            ("exp", 1, true),
            ("exp2", 1, true),
            ("exp10", 1, true),
            ("expm1", 1, false),
            ("hypot", 2, false),
            ("log", 1, true),
            ("log10", 1, true),
            ("log1p", 1, false),
            ("log2", 1, true),
            ("pow", 2, true),
            ("sin", 1, true),
            ("sinh", 1, true),
            ("tan", 1, true),
            ("tanh", 1, true),
        ];
        let mut table = Vec::new();
        for &(isa, bits) in isas {
            for &(name, arity, intrinsic) in FNS {
                for (suffix, elem_bits, llvm_ty) in [("f", 32, "f32"), ("", 64, "f64")] {
                    let lanes = bits / elem_bits;
                    let scalar = format!("{name}{suffix}");
                    let params = "v".repeat(arity);
                    let vector = format!("_ZGV{isa}N{lanes}{params}_{scalar}");
                    if inkwell::support::search_for_address_of_symbol(&vector).is_none() {
                        continue;
                    }
                    let abi = format!("_ZGV_LLVM_N{lanes}{params}");
                    let mut names = vec![scalar.clone()];
                    if intrinsic {
                        names.push(format!("llvm.{name}.{llvm_ty}"));
                    }
                    for s in names {
                        table.push(VecEntry {
                            scalar: std::ffi::CString::new(s).expect("no NUL"),
                            vector: std::ffi::CString::new(vector.clone()).expect("no NUL"),
                            lanes,
                            abi: std::ffi::CString::new(abi.clone()).expect("no NUL"),
                        });
                    }
                }
            }
        }
        table
    })
}

/// Whether loops may call glibc's vector math functions (libmvec), which are less accurate
/// than the scalar libm ones (within 4 ulps rather than 1 or 2).
pub fn libmvec_enabled() -> bool {
    !libmvec_table().is_empty()
}

/// The vector functions offered to the vectorisers, one `scalar vector` pair a line (part of
/// the disk cache's key: another glibc may offer others).
pub(crate) fn libmvec_names() -> String {
    libmvec_table()
        .iter()
        .map(|e| format!("{} {}\n", e.scalar.to_string_lossy(), e.vector.to_string_lossy()))
        .collect()
}

/// Kernel MLIR text to an LLVM module optimised for the host CPU (in `context`).
fn optimized_module<'c>(
    text: &str,
    tier: Tier,
    context: &'c inkwell::context::Context,
    times: &mut CompileTimes,
) -> Result<inkwell::module::Module<'c>, CompileError> {
    let table: Vec<VecFn> = libmvec_table()
        .iter()
        .map(|e| VecFn {
            scalar: e.scalar.as_ptr(),
            vector: e.vector.as_ptr(),
            lanes: e.lanes,
            abi: e.abi.as_ptr(),
        })
        .collect();
    let t0 = Instant::now();
    let module = MLIR.with(|mlir| -> Result<_, CompileError> {
        let m = parse_and_lower(mlir, text)?;
        translate_to_llvm(&m, context)
    })?;
    let t1 = Instant::now();
    HOST.with(|host| -> Result<(), CompileError> {
        let host = host.as_ref().map_err(|e| CompileError::Llvm(e.clone()))?;
        let cpu = context.create_string_attribute("target-cpu", &host.cpu);
        let features = context.create_string_attribute("target-features", &host.features);
        // Full-width AVX-512 vectors where the CPU has them (LLVM's tuning stops at 256 bits on
        // most AVX-512 parts; these loops are compute-bound, which is what 512 bits are for).
        let width = if host.features.contains("+avx512f") { "512" } else { "256" };
        let width = context.create_string_attribute("prefer-vector-width", width);
        for f in module.get_functions() {
            if f.count_basic_blocks() > 0 {
                f.add_attribute(AttributeLoc::Function, cpu);
                f.add_attribute(AttributeLoc::Function, features);
                f.add_attribute(AttributeLoc::Function, width);
            }
        }
        // Only the host entry is called from outside: the kernel is inlined into it and need
        // not be compiled on its own.
        if let Some(k) = module.get_function(KERNEL) {
            k.set_linkage(inkwell::module::Linkage::Internal);
            let inline = inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline");
            k.add_attribute(AttributeLoc::Function, context.create_enum_attribute(inline, 0));
        }
        module.set_triple(&host.machine.get_triple());
        module.set_data_layout(&host.machine.get_target_data().get_data_layout());
        let pipeline = std::ffi::CString::new(FAST_PIPELINE.split_whitespace().collect::<String>())
            .expect("no NUL");
        let pipeline = match tier {
            Tier::Fast => pipeline.as_ptr(),
            Tier::Optimized => std::ptr::null(),
        };
        let mut error = [0 as std::ffi::c_char; 512];
        // SAFETY: the module and the machine are live for the call, and the shim only runs passes
        // on the module; `table` has `table.len()` entries whose strings live in
        // `libmvec_table()` for the whole process; `pipeline` is null or a NUL-terminated string
        // alive for the call; `error` has `error.len()` bytes.
        let failed = unsafe {
            kiln_llvm_optimize_host(
                module.as_mut_ptr().cast(),
                host.machine.as_mut_ptr().cast(),
                table.as_ptr(),
                table.len(),
                pipeline,
                error.as_mut_ptr(),
                error.len(),
            )
        };
        if failed != 0 {
            // SAFETY: the shim wrote a NUL-terminated message into `error`.
            let message = unsafe { std::ffi::CStr::from_ptr(error.as_ptr()) };
            return Err(CompileError::Llvm(format!(
                "host pipeline: {}",
                message.to_string_lossy()
            )));
        }
        Ok(())
    })?;
    times.mlir = (t1 - t0).as_secs_f64();
    times.optimize = t1.elapsed().as_secs_f64();
    Ok(module)
}

/// The LLVM IR of kernel MLIR text after optimisation for this machine's CPU (vectorised
/// loops, libmvec calls): for reading, not canonical.
pub(crate) fn optimized_ir(text: &str, tier: Tier) -> Result<String, CompileError> {
    let llvm = inkwell::context::Context::create();
    let module = optimized_module(text, tier, &llvm, &mut CompileTimes::default())?;
    let ir = module.print_to_string().to_string();
    Ok(ir)
}

/// The assembly of kernel MLIR text optimised at `tier` for this machine's CPU: for reading, not
/// canonical (it names this CPU's instructions).
pub(crate) fn assembly(text: &str, tier: Tier) -> Result<String, CompileError> {
    let llvm = inkwell::context::Context::create();
    let module = optimized_module(text, tier, &llvm, &mut CompileTimes::default())?;
    HOST.with(|host| {
        let host = host.as_ref().map_err(|e| CompileError::Llvm(e.clone()))?;
        let buffer = host
            .machine
            .write_to_memory_buffer(&module, FileType::Assembly)
            .map_err(|e| CompileError::Llvm(format!("assembly: {e}")))?;
        Ok(String::from_utf8_lossy(buffer.as_slice()).into_owned())
    })
}

/// Kernels compiled by this process (through MLIR and LLVM), for tests and reports.
static COMPILED: AtomicU64 = AtomicU64::new(0);

/// Number of kernels this process compiled through MLIR and LLVM (not counting those read from
/// the disk cache).
pub fn llvm_compile_count() -> u64 {
    COMPILED.load(Ordering::Relaxed)
}

/// Compiles kernel MLIR text to an object file of this CPU's machine code at `tier`, recording
/// the time of each stage in `times`.
pub(crate) fn compile_object(
    text: &str,
    tier: Tier,
    times: &mut CompileTimes,
) -> Result<Vec<u8>, CompileError> {
    COMPILED.fetch_add(1, Ordering::Relaxed);
    let context = inkwell::context::Context::create();
    let module = optimized_module(text, tier, &context, times)?;
    let t = Instant::now();
    let object = HOST.with(|host| {
        let host = host.as_ref().map_err(|e| CompileError::Llvm(e.clone()))?;
        let machine = match tier {
            Tier::Fast => &host.fast,
            Tier::Optimized => &host.machine,
        };
        let buffer = machine
            .write_to_memory_buffer(&module, FileType::Object)
            .map_err(|e| CompileError::Llvm(format!("object file: {e}")))?;
        Ok::<_, CompileError>(buffer.as_slice().to_vec())
    })?;
    times.jit = t.elapsed().as_secs_f64();
    Ok(object)
}

/// Links an object file made by [`compile_object`] at `tier` into the process.
/// Errors: [`CompileError::Jit`] when it does not link (not an object of this machine, a symbol
/// it calls not in the process).
pub(crate) fn load_object(
    object: &[u8],
    tier: Tier,
    origin: Origin,
    mut times: CompileTimes,
) -> Result<HostCode, CompileError> {
    // The vector math functions the code may call are loaded (and the process's symbols
    // visible) before it is linked.
    libmvec_table();
    let t = Instant::now();
    let (code, address) = orc::load(object, HOST_ENTRY)
        .map_err(|e| CompileError::Jit(format!("{HOST_ENTRY}: {e}")))?;
    times.link = t.elapsed().as_secs_f64();
    // SAFETY: `address` is that of `kiln_kernel_host`, generated from the module text built by
    // `lower`, whose signature is `(ptr, ptr, i64, i64) -> ()`, i.e. `EntryFn` in the C ABI; the
    // code stays mapped while `code` lives (in the `HostCode`).
    let entry = unsafe { std::mem::transmute::<usize, EntryFn>(address as usize) };
    tracing::debug!(
        ?tier,
        ?origin,
        mlir_ms = times.mlir * 1e3,
        opt_ms = times.optimize * 1e3,
        codegen_ms = times.jit * 1e3,
        link_ms = times.link * 1e3,
        "host kernel ready"
    );
    Ok(HostCode { entry, tier, origin, times, _code: code })
}

/// Compiles kernel MLIR text to host machine code of the given tier; returns it with its object
/// file (for the disk cache).
pub(crate) fn compile_with_object(
    text: &str,
    tier: Tier,
) -> Result<(HostCode, Vec<u8>), CompileError> {
    let mut times = CompileTimes::default();
    let object = compile_object(text, tier, &mut times)?;
    Ok((load_object(&object, tier, Origin::Compiled, times)?, object))
}

/// Compiles kernel MLIR text to host machine code of the given tier.
pub(crate) fn compile(text: &str, tier: Tier) -> Result<HostCode, CompileError> {
    compile_with_object(text, tier).map(|(code, _)| code)
}

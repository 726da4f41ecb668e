//! The CUDA backend of materialisation: schedules run as PTX kernels on a device, arrays held
//! in device memory (from the device's caching memory pool) between materialisations.
//!
//! Each region is lowered for the GPU; its code comes from the disk cache (`KILN_CACHE_DIR`:
//! PTX and the cubin linked from it, keyed by the kernel's MLIR text, target and versions, see
//! [`kiln_runtime::DiskCache`]) or is compiled to PTX ([`compile_ptx`]: cached in
//! memory by its MLIR text, so a new shape of a known structure compiles nothing), linked to a
//! cubin and stored; it is loaded as a module (cached per device by its code) and launched on
//! its stream: a grid-stride loop over chunks of work items. A
//! region code generation does not support yet (copies, concatenation, vendor calls, complex
//! dtypes) runs on the host: its inputs are copied down, it runs as on the CPU backend, and its
//! outputs are copied up.
//!
//! # Streams
//!
//! Each region runs on the stream the schedule gives it ([`kiln_compiler::streams`]): stream 0
//! is the caller's current stream, stream `k` the device's pool stream `k - 1`
//! ([`Device::pool_stream`]). Small independent kernels so run side by side. When the schedule
//! uses a pool stream, an event recorded on the caller's stream as it starts is waited for by
//! each pool stream before its first region (the inputs were written there); before a region,
//! its stream waits for the events recorded after its producers on other streams; at the end
//! the caller's stream waits for every pool stream used. A region's outputs are allocated for
//! its stream; a buffer used on more than one stream is freed only after that join, and what
//! the schedule returns is ordered on the caller's stream, as with one stream. After an error
//! the streams used are synchronised before any buffer is freed. An input ordered on another
//! stream (made under another current stream, or by another thread) is waited for on the
//! caller's stream first, and its stream waits for the schedule's work at the end, so its free
//! there comes after the reads.
//! [`last_run_streams`] tells which stream each region of the thread's last schedule ran on.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use kiln_cache::config::GpuLink;
use kiln_compiler::codegen::gpu::{disk_cache_key, gpu_tier, GpuKernel, GPU_HOT_CALLS};
use kiln_compiler::codegen::{lower, CodeTarget, Kernel, LowerOptions, Tier, GPU_ENTRY};
use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::Compiled;
use kiln_compiler::schedule::{BufferId, Schedule, Step};
use kiln_compiler::streams::{StreamPlan, POOL_STREAMS};
use kiln_compiler::toolchain::ptx::PtxTarget;
use kiln_compiler::CompileError;
use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{with_data, DType, HostArray};
use kiln_runtime::{
    link_ptx_to_cubin, ptxas_cubin, ptxas_path, CachedKernel, Device, DeviceBuffer, DiskCache,
    Event, Function, KernelArg, LaunchConfig, Lookup, ModuleImage, RuntimeError, Stream,
};

use crate::walk::{walk, Walker};
use crate::{check_inputs, ExecError as Error, Operand, RanCode};

type Result<T> = std::result::Result<T, Error>;

/// A materialised array in device memory: C-contiguous elements of `dtype` (booleans one byte
/// each), in a block of the device's memory pool.
pub struct DeviceArray {
    buf: DeviceBuffer,
    dtype: DType,
    shape: Vec<usize>,
}

impl Operand for DeviceArray {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
}

impl std::fmt::Debug for DeviceArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceArray({} {:?} on cuda:{})", self.dtype, self.shape, self.buf.device().id())
    }
}

impl DeviceArray {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The device buffer.
    pub fn buffer(&self) -> &DeviceBuffer {
        &self.buf
    }

    /// Copies a host array to the current device (on the current stream).
    pub fn upload(h: &HostArray) -> Result<DeviceArray> {
        let bytes = host_bytes(h.data());
        let mut buf = DeviceBuffer::alloc(bytes.len())?;
        if !bytes.is_empty() {
            buf.copy_from_host(bytes)?;
        }
        Ok(DeviceArray { buf, dtype: h.dtype(), shape: h.shape().to_vec() })
    }

    /// Uninitialised device memory for `shape` elements of `dtype`.
    pub fn empty(dtype: DType, shape: &[usize]) -> Result<DeviceArray> {
        let buf = DeviceBuffer::alloc(numel(shape) * dtype.itemsize())?;
        Ok(DeviceArray { buf, dtype, shape: shape.to_vec() })
    }

    /// A copy in new device memory (a device-to-device copy on the current stream).
    pub fn duplicate(&self) -> Result<DeviceArray> {
        let mut buf = DeviceBuffer::alloc(self.buf.len())?;
        let stream = buf.stream().clone();
        // The copy reads after this array's writer on its own stream, and its later frees there
        // come after the copy.
        let _foreign = ForeignInputs::order_streams(stream.clone(), [self.buf.stream()])?;
        buf.copy_from_device(&self.buf, &stream)?;
        Ok(DeviceArray { buf, dtype: self.dtype, shape: self.shape.clone() })
    }

    /// Copies the array to the host (synchronising with its stream).
    pub fn download(&self) -> Result<HostArray> {
        let mut data = Data::zeros(self.dtype, numel(&self.shape));
        let bytes = host_bytes_mut(&mut data);
        if !bytes.is_empty() {
            self.buf.copy_to_host(bytes)?;
        }
        Ok(HostArray::new(&self.shape, data)?)
    }
}

/// The elements' bytes.
fn host_bytes(d: &Data) -> &[u8] {
    // SAFETY: every element type of `Data` (bool, integers, f16/bf16, floats, complex of
    // floats) is plain data without padding, so its vector's memory is `len * itemsize`
    // initialised bytes, borrowed for as long as `d`.
    with_data!(d, v => unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice())) })
}

/// The elements' bytes, to be overwritten by a download.
fn host_bytes_mut(d: &mut Data) -> &mut [u8] {
    // SAFETY: as in `host_bytes`; writes come from a device buffer of the same dtype, so every
    // element written is a valid value of its type (booleans are stored as 0 or 1 by kernels).
    with_data!(d, v => unsafe {
        std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
    })
}

/// The device materialisation runs on, with its PTX target.
pub struct Gpu {
    device: Device,
    target: PtxTarget,
    max_blocks: u32,
    /// The CUDA driver's version (part of the disk cache's key).
    driver: i32,
    /// The kernel cache on disk (`KILN_CACHE_DIR`); `None` when turned off.
    disk: Option<DiskCache>,
}

impl Gpu {
    /// The device of ordinal `ordinal`, set up once per process.
    pub fn get(ordinal: usize) -> Result<&'static Gpu> {
        static GPU: OnceLock<std::result::Result<Gpu, RuntimeError>> = OnceLock::new();
        GPU.get_or_init(|| {
            let device = Device::new(ordinal)?;
            device.make_current()?;
            let (major, minor) = device.compute_capability()?;
            let sms = device.multiprocessor_count()?;
            let target = PtxTarget { sm: major * 10 + minor, ..PtxTarget::default() };
            let driver = kiln_runtime::driver_version()?;
            Ok(Gpu { device, target, max_blocks: sms * 32, driver, disk: DiskCache::from_env() })
        })
        .as_ref()
        .map_err(|e| Error::Runtime(e.clone()))
    }

    /// The PTX target of the device.
    pub fn target(&self) -> PtxTarget {
        self.target
    }
}

impl Gpu {
    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Its compute capability as `major * 10 + minor` (90 for sm_90).
    pub fn sm(&self) -> u32 {
        self.target.sm
    }

    /// The CUDA driver's version.
    pub fn driver(&self) -> i32 {
        self.driver
    }

    /// The kernel cache on disk, unless turned off.
    pub fn disk(&self) -> Option<&DiskCache> {
        self.disk.as_ref()
    }
}

pub mod random;
mod vendor;

/// A region ready to launch: its kernel and the loaded function (`None`: a library call, or
/// it runs on the host).
struct Ready {
    kernel: Option<Loaded>,
    /// The library call of a vendor region the GPU executor takes (cuBLAS, cuFFT).
    vendor: Option<kiln_compiler::vendor::VendorCall>,
}

/// A region's loaded kernel: fast code first where [`gpu_tier`] says so, replaced by
/// optimised code once the kernel has run [`GPU_HOT_CALLS`] times, in this plan or others
/// (compiled by the thread that makes that call; others go on with the fast code meanwhile).
struct Loaded {
    current: RwLock<Arc<(GpuKernel, Function)>>,
    /// The region lowered for optimised code, while the current code is fast and may upgrade.
    upgrade: Mutex<Option<Kernel>>,
    /// Calls of the fast kernel, counted across plans ([`fast_calls`]).
    calls: Arc<AtomicU64>,
}

/// Calls of each fast-tier kernel in this process, by its MLIR text: a plan made again (a
/// resized one: another shape of the same structure) finds its kernel's count, so a kernel
/// called with ever new shapes is optimised as one called with one shape.
fn fast_calls(mlir: &str) -> Arc<AtomicU64> {
    static CALLS: OnceLock<Mutex<HashMap<String, Arc<AtomicU64>>>> = OnceLock::new();
    let mut calls = CALLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    calls.entry(mlir.to_owned()).or_default().clone()
}

impl Loaded {
    fn new(code: (GpuKernel, Function), upgrade: Option<Kernel>, calls: Arc<AtomicU64>) -> Loaded {
        Loaded { current: RwLock::new(Arc::new(code)), upgrade: Mutex::new(upgrade), calls }
    }

    /// The code for this call: optimised first if the fast code has become hot.
    fn for_call(&self, gpu: &Gpu) -> Arc<(GpuKernel, Function)> {
        let code = self.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        if code.0.tier == Tier::Fast
            && self.calls.fetch_add(1, Ordering::Relaxed) + 1 >= GPU_HOT_CALLS
        {
            let upgrade = self.upgrade.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(kernel) = upgrade {
                match load_or_compile(gpu, kernel, Tier::Optimized) {
                    Ok(optimized) => {
                        let optimized = Arc::new(optimized);
                        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
                            optimized.clone();
                        return optimized;
                    }
                    // The fast code stays; it computes the same values.
                    Err(e) => tracing::warn!(error = %e, "optimising a GPU kernel failed"),
                }
            }
        }
        code
    }
}

/// Regions ready to launch, by (plan, step): a plan kept in the plan cache is reused as is, so
/// a repeated materialisation skips lowering, the PTX cache and the module lookup. The entry
/// holds the plan, so its address is not reused while the entry lives.
#[allow(clippy::type_complexity)]
fn ready_cache() -> &'static Mutex<HashMap<(usize, usize), (Arc<Compiled>, Arc<Ready>)>> {
    static CACHE: OnceLock<Mutex<HashMap<(usize, usize), (Arc<Compiled>, Arc<Ready>)>>> =
        OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn prepare(gpu: &Gpu, region: &Region) -> Result<Ready> {
    let kernel = match lower(region, &LowerOptions::gpu()) {
        Ok(k) => k,
        Err(CompileError::Unsupported { op, reason, .. }) => {
            tracing::debug!(op = %op, reason = %reason, "no GPU code for the region; a library or the host runs it");
            return Ok(Ready { kernel: None, vendor: vendor::plan(region) });
        }
        Err(e) => return Err(e.into()),
    };
    let (tier, upgrades) = gpu_tier();
    let (code, upgrade, calls) = match tier {
        Tier::Optimized => (load_or_compile(gpu, kernel, tier)?, None, Arc::default()),
        Tier::Fast => {
            let fast = lower(region, &LowerOptions::gpu_tier(Tier::Fast))?;
            let calls = fast_calls(&fast.mlir);
            if upgrades && calls.load(Ordering::Relaxed) + 1 >= GPU_HOT_CALLS {
                // Hot already (under other plans): optimised at once.
                (load_or_compile(gpu, kernel, Tier::Optimized)?, None, calls)
            } else {
                (load_or_compile(gpu, fast, tier)?, upgrades.then_some(kernel), calls)
            }
        }
    };
    Ok(Ready { kernel: Some(Loaded::new(code, upgrade, calls)), vendor: None })
}

/// A kernel lowered for the GPU compiled to PTX for `gpu` at `tier` (cached in memory by its
/// MLIR text, math library and tier).
fn compile_ptx(kernel: Kernel, gpu: &Gpu, tier: Tier) -> Result<GpuKernel> {
    let code = kiln_compiler::codegen::compile(kernel, CodeTarget::Ptx(gpu.target), tier)?;
    Ok(code.into_ptx().expect("a PTX target gives PTX"))
}

/// A lowered kernel's code at `tier`, loaded: from the disk cache when it holds it, else
/// compiled (and stored there, with its cubin where [`cubin_source`] makes one).
fn load_or_compile(gpu: &Gpu, kernel: Kernel, tier: Tier) -> Result<(GpuKernel, Function)> {
    let source = cubin_source();
    let Some(disk) = &gpu.disk else {
        let k = compile_ptx(kernel, gpu, tier)?;
        let function = load_new(gpu, &k, source)?.0;
        return Ok((k, function));
    };
    let key = disk_cache_key(&kernel, gpu.target, tier, gpu.driver);
    if let Lookup::Hit(entry) = disk.lookup(&key) {
        let image = match (source, entry.cubin.is_empty()) {
            (CubinSource::None, _) | (_, true) => ModuleImage::Ptx(&entry.ptx),
            (_, false) => ModuleImage::Cubin(&entry.cubin),
        };
        match load(gpu, image) {
            Ok(function) => {
                let k = GpuKernel {
                    kernel,
                    ptx: entry.ptx.into(),
                    compile_ms: 0.0,
                    times: Default::default(),
                    tier,
                };
                return Ok((k, function));
            }
            Err(e) => {
                tracing::warn!(target: "kiln::cache", error = %e, "cached kernel does not load; rebuilding it")
            }
        }
    }
    let k = compile_ptx(kernel, gpu, tier)?;
    let (function, cubin) = load_new(gpu, &k, source)?;
    let entry = CachedKernel { ptx: k.ptx.to_string(), cubin };
    if let Err(e) = disk.store(&key, &entry) {
        tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
    }
    Ok((k, function))
}

/// Loads newly compiled code: its cubin from `source` (returned, for the disk cache), or its
/// PTX (an empty cubin returned). A cubin ptxas cannot make is logged and the PTX loaded.
fn load_new(gpu: &Gpu, k: &GpuKernel, source: CubinSource) -> Result<(Function, Vec<u8>)> {
    let cubin = match source {
        CubinSource::None => None,
        CubinSource::Ptxas => match ptxas_cubin("kiln_region", &k.ptx, gpu.target.sm) {
            Ok(cubin) => Some(cubin),
            Err(e) => {
                tracing::warn!(error = %e, "ptxas failed; loading the PTX");
                None
            }
        },
        CubinSource::CuLink => Some(link_ptx_to_cubin(gpu.device, "kiln_region", &k.ptx)?),
    };
    match cubin {
        Some(cubin) => Ok((load(gpu, ModuleImage::Cubin(&cubin))?, cubin)),
        None => Ok((load(gpu, ModuleImage::Ptx(&k.ptx))?, Vec::new())),
    }
}

/// Where the cubin of a new kernel comes from, for the disk cache to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CubinSource {
    /// None: the PTX is loaded (`cuModuleLoadDataEx`) and the driver compiles it; the disk
    /// cache keeps the PTX, and the driver's own cache (`~/.nv/ComputeCache`) its compilation.
    None,
    /// The CUDA toolkit's `ptxas` ([`kiln_runtime::ptxas_path`]), as a whole program: the code
    /// the driver's JIT would make. The default where a toolkit is installed.
    Ptxas,
    /// `cuLinkCreate/AddData/Complete`: relocatable code (as `ptxas -c`), slower on an H200
    /// (its loads were scheduled one after another's use): ew_chain 0.162 ms against 0.152,
    /// sum_cols 0.107 against 0.085, sum_all 0.122 against 0.081.
    CuLink,
}

/// `KILN_GPU_LINK`: `ptx` ([`CubinSource::None`]), `ptxas`, or `cubin` ([`CubinSource::CuLink`]);
/// unset, `ptxas` where it is found, else `ptx`. Read once per process.
fn cubin_source() -> CubinSource {
    static SOURCE: OnceLock<CubinSource> = OnceLock::new();
    *SOURCE.get_or_init(|| {
        let found = if ptxas_path().is_some() { CubinSource::Ptxas } else { CubinSource::None };
        match kiln_cache::config().gpu_link {
            Some(GpuLink::Ptx) => CubinSource::None,
            Some(GpuLink::Cubin) => CubinSource::CuLink,
            Some(GpuLink::Ptxas) => {
                if found == CubinSource::None {
                    tracing::warn!("KILN_GPU_LINK=ptxas but no ptxas is found; loading PTX");
                }
                found
            }
            None => found,
        }
    })
}

fn load(gpu: &Gpu, image: ModuleImage<'_>) -> Result<Function> {
    let module = gpu.device.load_module("kiln_region", image)?;
    Ok(module.function(GPU_ENTRY)?)
}

/// Runs a plan's schedule on the device: `inputs[k]` is the graph's `input {index=k}`. Returns
/// the schedule's outputs in device memory. `cached`: the plan lives in the plan cache (its
/// prepared kernels may be kept by its address).
pub fn run_schedule(
    gpu: &Gpu,
    plan: &Arc<Compiled>,
    cached: bool,
    inputs: &[Arc<DeviceArray>],
) -> Result<Vec<Arc<DeviceArray>>> {
    let sched: &Schedule = &plan.schedule;
    let _current = gpu.device.use_scoped()?;
    // Inputs ordered on another stream than the caller's wait for it before anything reads them.
    let _foreign = ForeignInputs::order(Stream::current_on(gpu.device)?, inputs)?;
    let _range = kiln_runtime::profile::range("kiln: materialize");
    let mut cuda = Cuda {
        gpu,
        plan,
        cached,
        used_on: vec![0; sched.buffers.len()],
        deferred: Vec::new(),
        // Declared after the buffers the walk holds: on an error it is dropped first,
        // synchronising the streams.
        lanes: Lanes::new(gpu.device, &sched.streams)?,
        ran: Vec::with_capacity(sched.steps.len()),
        code: Vec::with_capacity(sched.steps.len()),
        stream_index: 0,
    };
    let outputs = walk(sched, inputs, &mut cuda)?;
    LAST_RUN.with(|r| *r.borrow_mut() = std::mem::take(&mut cuda.ran));
    crate::record_run(std::mem::take(&mut cuda.code));
    Ok(outputs)
}

/// The CUDA side of [`walk`].
struct Cuda<'a> {
    gpu: &'a Gpu,
    plan: &'a Arc<Compiled>,
    cached: bool,
    /// The streams (bit k: stream k) each buffer is used on; a buffer used on several waits
    /// for the join to be freed.
    used_on: Vec<u32>,
    /// Buffers released while used on several streams: freed after the join.
    deferred: Vec<Arc<DeviceArray>>,
    lanes: Lanes,
    ran: Vec<RanOn>,
    /// How each region ran (see [`crate::last_run_code`]).
    code: Vec<(usize, RanCode)>,
    /// The schedule stream of the step being run.
    stream_index: u32,
}

impl Walker for Cuda<'_> {
    type Buf = Arc<DeviceArray>;

    fn step(
        &mut self,
        si: usize,
        step: &Step,
        reads: &[&Arc<DeviceArray>],
    ) -> Result<Vec<Self::Buf>> {
        let (gpu, plan, sched) = (self.gpu, self.plan, &self.plan.schedule);
        let region = &plan.partition.regions[step.region];
        // An NVTX range per kernel, named after its region (`nsys` shows it on the timeline).
        let _kernel_range = kiln_runtime::profile::nvtx_enabled().then(|| {
            let ops = region.op_names();
            kiln_runtime::profile::range(&format!(
                "kiln region {}: {} ({})",
                step.region,
                region.kind.name(),
                ops.join(" ")
            ))
        });
        let reads: Vec<Arc<DeviceArray>> = reads.iter().map(|a| (*a).clone()).collect();
        let key = (Arc::as_ptr(plan) as usize, si);
        let hit = if self.cached {
            ready_cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key).map(|e| e.1.clone())
        } else {
            None
        };
        let ready = match hit {
            Some(r) => r,
            None => {
                let r = Arc::new(prepare(gpu, region)?);
                if self.cached {
                    ready_cache()
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key, (plan.clone(), r.clone()));
                }
                r
            }
        };
        let index = sched.streams.streams.get(step.region).copied().unwrap_or(0);
        self.stream_index = index;
        let stream = self.lanes.before(&sched.streams, step.region)?;
        let code = ready.kernel.as_ref().map(|loaded| loaded.for_call(gpu));
        let tier = code.as_ref().map(|c| c.0.tier);
        self.ran.push(RanOn { region: step.region, stream: index, cuda_stream: stream.id(), tier });

        // Outputs are allocated for the step's stream, and it launches (or copies) there.
        let on_stream = stream.use_scoped();
        let (outs, ran) = match &code {
            Some(code) => (launch(gpu, &code.0, &code.1, &reads)?, RanCode::Gpu(code.clone())),
            None if let Some(call) = &ready.vendor => {
                (vec![vendor::run(call, &reads)?], RanCode::Library)
            }
            None => {
                let host: Vec<HostArray> =
                    reads.iter().map(|a| a.download()).collect::<Result<_>>()?;
                let refs: Vec<&HostArray> = host.iter().collect();
                let (outs, ran) =
                    crate::cpu::run_one(crate::cpu::HostRun::Compiled, step.region, region, &refs)?;
                (outs.iter().map(DeviceArray::upload).collect::<Result<_>>()?, ran)
            }
        };
        self.code.push((step.region, ran));
        drop(on_stream);
        self.lanes.after(&sched.streams, step.region, &stream)?;
        for b in &step.reads {
            self.used_on[b.0 as usize] |= 1 << index;
        }
        Ok(outs.into_iter().map(Arc::new).collect())
    }

    fn release(&mut self, b: BufferId, value: Arc<DeviceArray>) {
        if self.used_on[b.0 as usize].count_ones() > 1 {
            self.deferred.push(value);
        }
    }

    fn failed(&mut self) {
        self.lanes.settle();
    }

    fn wrote(&mut self, b: BufferId) {
        self.used_on[b.0 as usize] = 1 << self.stream_index;
    }

    fn end(&mut self, written: Vec<&mut Arc<DeviceArray>>) -> Result<()> {
        if self.lanes.join()? {
            // The caller's stream now follows every stream used: the frees and later uses of
            // what the schedule wrote are ordered there.
            for a in written.into_iter().chain(self.deferred.iter_mut()) {
                order_on(a, &self.lanes.current)?;
            }
        }
        Ok(())
    }
}

/// Where a region of a schedule ran on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RanOn {
    /// The region (and step) index.
    pub region: usize,
    /// Its stream in the schedule (the fusion report's `stream` column): 0 the caller's.
    pub stream: u32,
    /// The CUDA stream it ran on ([`Stream::id`]: 0 for the null stream).
    pub cuda_stream: u64,
    /// The tier of the generated code that ran (`None`: a library call, or the host ran it).
    pub tier: Option<Tier>,
}

thread_local! {
    static LAST_RUN: RefCell<Vec<RanOn>> = const { RefCell::new(Vec::new()) };
}

/// The stream each region of the last schedule this thread ran on a GPU was launched on, in
/// order (empty before any): for checking a fusion report against what ran.
pub fn last_run_streams() -> Vec<RanOn> {
    LAST_RUN.with(|r| r.borrow().clone())
}

/// Makes the array's free and later uses ordered on `stream` (which follows every stream that
/// used it).
fn order_on(a: &mut Arc<DeviceArray>, stream: &Stream) -> Result<()> {
    if a.buf.stream() == stream {
        return Ok(());
    }
    match Arc::get_mut(a) {
        Some(d) => d.buf.set_stream(stream)?,
        // Not reached: the schedule holds the only handle of what it wrote. Wait for the
        // array's stream instead, so no work there still uses it.
        None => a.buf.stream().synchronize()?,
    }
    Ok(())
}

/// The streams, other than the caller's current one, that a schedule's inputs are ordered on
/// (the current stream of another thread, or of the scope that made them): their writers may
/// still run there, and their frees will be ordered there. The caller's stream waits for each
/// before the schedule reads its inputs, and each waits for the caller's stream once the
/// schedule's work is queued there (when this is dropped, after the join), so that a free of
/// an input on its own stream comes after the schedule's reads.
pub struct ForeignInputs {
    current: Stream,
    streams: Vec<Stream>,
}

impl ForeignInputs {
    fn order(current: Stream, inputs: &[Arc<DeviceArray>]) -> Result<ForeignInputs> {
        Self::order_streams(current, inputs.iter().map(|a| a.buf.stream()))
    }

    /// Orders work about to be queued on `current` after the work queued so far on each of
    /// `streams` (the streams of the buffers it will read or write), and, when dropped, the
    /// later work of each after it.
    pub fn order_streams<'s>(
        current: Stream,
        streams: impl IntoIterator<Item = &'s Stream>,
    ) -> Result<ForeignInputs> {
        let mut foreign: Vec<Stream> = Vec::new();
        for s in streams {
            if *s != current && !foreign.contains(s) {
                current.wait_event(&record(s)?)?;
                foreign.push(s.clone());
            }
        }
        Ok(ForeignInputs { current, streams: foreign })
    }
}

impl Drop for ForeignInputs {
    fn drop(&mut self) {
        if self.streams.is_empty() {
            return;
        }
        match record(&self.current) {
            Ok(done) => {
                for s in &self.streams {
                    if s.wait_event(&done).is_err() {
                        let _ = self.current.synchronize();
                    }
                }
            }
            // No event: wait for the reads instead.
            Err(_) => {
                let _ = self.current.synchronize();
            }
        }
    }
}

/// The streams a schedule runs on: stream 0 the caller's current stream, stream `k` the
/// device's pool stream `k - 1`, with the events between them.
struct Lanes {
    device: Device,
    current: Stream,
    /// Pool streams by index `k - 1`, taken on first use.
    pool: Vec<Option<Stream>>,
    /// Recorded on the caller's stream as the schedule starts, when it uses a pool stream.
    fork: Option<Event>,
    /// The events recorded after regions that another stream waits for, by region.
    recorded: HashMap<usize, Event>,
    joined: bool,
}

impl Lanes {
    fn new(device: Device, plan: &StreamPlan) -> Result<Lanes> {
        let current = Stream::current_on(device)?;
        let fork = if plan.is_single_stream() { None } else { Some(record(&current)?) };
        Ok(Lanes {
            device,
            current,
            pool: vec![None; POOL_STREAMS as usize],
            fork,
            recorded: HashMap::new(),
            joined: false,
        })
    }

    /// The stream of plan index `index`; a pool stream first waits for the fork.
    fn stream(&mut self, index: u32) -> Result<Stream> {
        let Some(k) = (index as usize).checked_sub(1) else {
            return Ok(self.current.clone());
        };
        let slot = self.pool.get_mut(k).ok_or_else(|| {
            Error::from(CompileError::InvalidInput(format!(
                "stream {index}: the pool has {POOL_STREAMS} streams"
            )))
        })?;
        if let Some(s) = slot {
            return Ok(s.clone());
        }
        let s = self.device.pool_stream(k)?;
        if let Some(fork) = &self.fork {
            s.wait_event(fork)?;
        }
        *slot = Some(s.clone());
        Ok(s)
    }

    /// The stream of `region`, after it waited for the events of its producers elsewhere.
    fn before(&mut self, plan: &StreamPlan, region: usize) -> Result<Stream> {
        let stream = self.stream(plan.streams.get(region).copied().unwrap_or(0))?;
        for p in plan.waits_of(region) {
            let event = self.recorded.get(&p).ok_or_else(|| {
                Error::from(CompileError::InvalidInput(format!(
                    "region {region} waits for region {p}, which has not run"
                )))
            })?;
            stream.wait_event(event)?;
        }
        Ok(stream)
    }

    /// Records the event after `region` when another stream waits for it.
    fn after(&mut self, plan: &StreamPlan, region: usize, stream: &Stream) -> Result<()> {
        if plan.records_after(region) {
            self.recorded.insert(region, record(stream)?);
        }
        Ok(())
    }

    /// Makes the caller's stream wait for every pool stream used; whether there was one.
    fn join(&mut self) -> Result<bool> {
        let mut any = false;
        for s in self.pool.iter().flatten() {
            self.current.wait_event(&record(s)?)?;
            any = true;
        }
        self.joined = true;
        Ok(any)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.settle();
    }
}

impl Lanes {
    /// After an error: lets everything queued on the streams used finish, so that the buffers
    /// freed next are in use on no stream.
    fn settle(&mut self) {
        if self.joined || self.pool.iter().all(Option::is_none) {
            return;
        }
        // The schedule stopped on an error: let everything queued finish, so the buffers freed
        // next are in use on no stream.
        for s in self.pool.iter().flatten() {
            let _ = s.synchronize();
        }
        let _ = self.current.synchronize();
    }
}

/// A new event (without timing) recorded on `stream`.
fn record(stream: &Stream) -> Result<Event> {
    let event = Event::with_flags(stream.device(), false, true)?;
    event.record(stream)?;
    Ok(event)
}

/// Launches a compiled region over fresh output buffers.
fn launch(
    gpu: &Gpu,
    k: &GpuKernel,
    function: &Function,
    inputs: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let kernel = &k.kernel;
    check_inputs(0, &kernel.inputs, inputs)?;
    let mut outs: Vec<DeviceArray> = kernel
        .outputs
        .iter()
        .map(|(dt, shape)| DeviceArray::empty(*dt, shape))
        .collect::<Result<_>>()?;
    if kernel.gpu_scatter.is_some_and(|gs| gs.zero_outputs) {
        for o in &mut outs {
            o.buf.memset(0)?;
        }
    }
    // A scatter of no positions still writes its initial array.
    if kernel.work_items == 0 && kernel.gpu_scatter.is_none()
        || kernel.gpu_grid.is_some_and(|gs| gs.blocks == 0)
    {
        return Ok(outs);
    }
    let chunk = kernel.min_chunk.max(1);
    let chunks = kernel.work_items.div_ceil(chunk);
    // A split reduction: one block per (group of work items, split), its scratch and zeroed
    // counters.
    let mut split_bufs = Vec::new();
    if let Some(sp) = kernel.gpu_split {
        split_bufs.push(DeviceBuffer::alloc(sp.scratch_bytes(kernel.work_items))?);
        let mut counters = DeviceBuffer::alloc(4 * kernel.work_items)?;
        counters.memset(0)?;
        split_bufs.push(counters);
    }
    // A scatter: its blocks' partials and the counter that finds the last block.
    if let Some(gs) = kernel.gpu_scatter {
        split_bufs.push(DeviceBuffer::alloc(gs.scratch_bytes)?);
        let mut counter = DeviceBuffer::alloc(4)?;
        counter.memset(0)?;
        split_bufs.push(counter);
    }
    // A scan by tiles: a scratch it does not use, and the zeroed words the tiles publish.
    if let Some(gs) = kernel.gpu_grid {
        split_bufs.push(DeviceBuffer::alloc(gs.scratch_bytes)?);
        let mut counter = DeviceBuffer::alloc(4 * gs.counter_words)?;
        counter.memset(0)?;
        split_bufs.push(counter);
    }
    let config = match (kernel.gpu_split, kernel.gpu_block) {
        _ if let Some(gs) = kernel.gpu_scatter => {
            LaunchConfig::linear(gs.blocks as u32, gs.threads as u32)
        }
        _ if let Some(gs) = kernel.gpu_grid => {
            LaunchConfig::linear(gs.blocks as u32, gs.threads as u32)
        }
        (Some(sp), Some((threads, items))) => LaunchConfig::linear(
            (kernel.work_items.div_ceil(items) * sp.splits) as u32,
            threads as u32,
        ),
        (_, Some((threads, items))) => LaunchConfig::linear(
            kernel.work_items.div_ceil(items).min(gpu.max_blocks as usize) as u32,
            threads as u32,
        ),
        (_, None) => LaunchConfig::grid_stride(chunks, 256, gpu.max_blocks),
    }
    .with_shared_mem(kernel.gpu_shared as u32);
    // More dynamic shared memory than a launch gets without opting in (a GPU line sort).
    if kernel.gpu_shared > 48 * 1024 {
        function.set_max_dynamic_shared_memory(kernel.gpu_shared as u32)?;
    }
    let scalars: Vec<i64> =
        kernel.params.iter().copied().chain([kernel.work_items as i64, chunk as i64]).collect();
    let mut args: Vec<&dyn KernelArg> =
        Vec::with_capacity(inputs.len() + outs.len() + scalars.len());
    args.extend(inputs.iter().map(|a| &a.buf as &dyn KernelArg));
    args.extend(outs.iter().map(|a| &a.buf as &dyn KernelArg));
    args.extend(split_bufs.iter().map(|b| b as &dyn KernelArg));
    args.extend(scalars.iter().map(|s| s as &dyn KernelArg));
    let stream = Stream::current()?;
    // SAFETY: `kiln_gpu` takes the region's input then output buffers (device pointers, each
    // holding the dtype and shape checked above, outputs freshly allocated at their full size),
    // for a split reduction its scratch and zeroed counters (sized by `GpuSplit`), for a
    // scatter its scratch and zeroed counter (sized by `GpuScatter`), for a scan by tiles its
    // unused scratch and zeroed published words (sized by `GpuGrid`), then its i64
    // parameters, the number of work items and the chunk size, as the lowering
    // declares them; it touches only elements of those buffers.
    unsafe { function.launch_on(&stream, config, &args)? };
    Ok(outs)
}

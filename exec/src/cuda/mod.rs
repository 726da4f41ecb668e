//! The CUDA backend of materialisation: schedules run as PTX kernels on a device, arrays held
//! in device memory (from the device's caching memory pool) between materialisations.
//!
//! Each region is lowered for the GPU; its code comes from the disk cache (`KILN_CACHE_DIR`:
//! PTX and the cubin linked from it, keyed by the kernel's MLIR text, target and versions, see
//! [`kiln_runtime::DiskCache`]) or is compiled to PTX ([`compile_ptx`]: cached in
//! memory by its MLIR text, so a new shape of a known structure compiles nothing), linked to a
//! cubin and stored; it is loaded as a module (cached per device by its code) and launched on
//! its stream: a grid-stride loop over chunks of work items. A sort region of lines of at most
//! 8192 elements (a [`kiln_compiler::codegen::RowSort`]) runs as the block radix sort of
//! `rows.rs`, one of long lines (a
//! [`kiln_compiler::codegen::RadixSort`]) runs as the radix sort of `radix.rs` (NVRTC-compiled
//! CUDA C++, through the disk cache); a `sort_take` region (a
//! [`kiln_compiler::codegen::SortTake`]: order statistics) as the radix select of `select.rs`
//! (an `argtopk` region, a [`kiln_compiler::codegen::TopK`], as its top-k). A
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

use kiln_cache::config::{GpuInterp, GpuLink};
use kiln_compiler::codegen::gpu::{disk_cache_key, gpu_is_hot, gpu_tier, GpuKernel};
use kiln_compiler::codegen::{
    lower, radix_sort, row_sort, sort_take, topk, CodeTarget, Kernel, LowerOptions, Tier, GPU_ENTRY,
};
use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::Compiled;
use kiln_compiler::schedule::{BufferId, Schedule, Step};
use kiln_compiler::streams::{StreamPlan, POOL_STREAMS};
use kiln_compiler::toolchain::ptx::PtxTarget;
use kiln_compiler::vendor::VendorCall;
use kiln_compiler::CompileError;
use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{with_data, DType, HostArray};
use kiln_runtime::{
    link_ptx_to_cubin, nvjitlink, ptxas_cubin, ptxas_path, CachedKernel, Device, DeviceBuffer,
    DiskCache, Event, Function, KernelArg, LaunchConfig, Lookup, ModuleImage, RuntimeError, Stream,
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

    /// An array over `buf`: C-contiguous elements of `dtype` (booleans one byte each, 0 or 1)
    /// in `shape`; `buf` must hold exactly their bytes (memory another library owns comes in
    /// through [`DeviceBuffer::from_foreign`]). Errors: a length that is not the shape's.
    pub fn from_buffer(buf: DeviceBuffer, dtype: DType, shape: &[usize]) -> Result<DeviceArray> {
        let bytes = device_bytes(dtype, shape);
        if buf.len() != bytes {
            return Err(Error::InvalidInput(format!(
                "a device buffer of {} bytes for {dtype} {shape:?} ({bytes} bytes)",
                buf.len()
            )));
        }
        Ok(DeviceArray { buf, dtype, shape: shape.to_vec() })
    }

    /// The first `rows` rows (along the first axis) of the array, sharing its memory: no copy,
    /// the view keeps the array alive (a compaction's result is the first rows of the buffer
    /// its kernel wrote). Errors: a 0-d array, or more rows than it has.
    pub fn leading(self: &Arc<Self>, rows: usize) -> Result<DeviceArray> {
        let mut shape = self.shape.clone();
        match shape.first_mut() {
            Some(r) if rows <= *r => *r = rows,
            _ => return Err(Error::InvalidInput(format!("the first {rows} rows of {self:?}"))),
        }
        let bytes = device_bytes(self.dtype, &shape);
        // SAFETY: the first `bytes` of this array's buffer (no more than its length) are device
        // memory of its stream's device, readable and writable by its kernels, kept alive by
        // the `Arc` the view owns; the array's writer ran on that stream, so it is ready there.
        let buf = unsafe {
            DeviceBuffer::from_foreign(
                self.buf.ptr(),
                bytes,
                self.buf.stream(),
                Box::new(self.clone()),
            )?
        };
        DeviceArray::from_buffer(buf, self.dtype, &shape)
    }

    /// Copies a host array to the current device (on the current stream).
    pub fn upload(h: &HostArray) -> Result<DeviceArray> {
        let bytes = h.as_bytes();
        kiln_runtime::host_trace::point("upload: start");
        let mut buf = DeviceBuffer::alloc(bytes.len())?;
        kiln_runtime::host_trace::point("upload: alloc");
        if !bytes.is_empty() {
            buf.copy_from_host(bytes)?;
        }
        kiln_runtime::host_trace::point("upload: copy");
        Ok(DeviceArray { buf, dtype: h.dtype(), shape: h.shape().to_vec() })
    }

    /// Uninitialised device memory for `shape` elements of `dtype`. Errors: out of memory,
    /// also where the shape's bytes overflow ([`device_bytes`]), before anything runs.
    pub fn empty(dtype: DType, shape: &[usize]) -> Result<DeviceArray> {
        let buf = DeviceBuffer::alloc(device_bytes(dtype, shape))?;
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

    /// A copy on `device`, from another device peer to peer
    /// ([`DeviceBuffer::copy_from_peer`]) or, on the same device, a device-to-device copy;
    /// queued on `device`'s current stream after this array's writer (its later frees there
    /// come after the copy).
    pub fn copy_to(&self, device: Device) -> Result<DeviceArray> {
        let stream = Stream::current_on(device)?;
        let mut buf = DeviceBuffer::alloc_on(&stream, self.buf.len())?;
        let _foreign = ForeignInputs::order_streams(stream.clone(), [self.buf.stream()])?;
        if device == self.buf.device() {
            buf.copy_from_device(&self.buf, &stream)?;
        } else {
            buf.copy_from_peer(&self.buf, &stream)?;
        }
        Ok(DeviceArray { buf, dtype: self.dtype, shape: self.shape.clone() })
    }

    /// Copies the array to the host (synchronising with its stream). Errors: a host allocation
    /// the allocator refuses ([`kiln_ir::IrError::OutOfHostMemory`]), a failed copy.
    pub fn download(&self) -> Result<HostArray> {
        let n = numel(&self.shape);
        let mut data = Data::try_zeros(self.dtype, n).ok_or_else(|| {
            Error::Ir(kiln_ir::IrError::OutOfHostMemory {
                op: "download".into(),
                dtype: self.dtype,
                shape: self.shape.as_slice().into(),
                bytes: self.buf.len(),
            })
        })?;
        let bytes = host_bytes_mut(&mut data);
        if !bytes.is_empty() {
            self.buf.copy_to_host(bytes)?;
        }
        Ok(HostArray::new(&self.shape, data)?)
    }
}

/// Region input `i` of `reads` (a library or NVRTC step's operand), or an error naming `what`
/// reads it.
pub(super) fn region_input<'a>(
    reads: &'a [Arc<DeviceArray>],
    i: usize,
    what: &str,
) -> Result<&'a Arc<DeviceArray>> {
    reads.get(i).ok_or_else(|| Error::InvalidInput(format!("{what}: no region input {i}")))
}

/// The bytes of `shape` elements of `dtype` in device memory, `usize::MAX` where the count
/// overflows or passes `isize::MAX`: the pool refuses that with its out-of-memory error
/// ([`RuntimeError::OutOfMemory`]) before any kernel is launched. An array that cannot exist
/// (`arange(2**62)`: 2^65 bytes of int64) wrapped here to 0 bytes, got the pool's empty block
/// (a null pointer) and its kernel wrote through it: CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error
/// that lost every array on the device.
pub(crate) fn device_bytes(dtype: DType, shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    kiln_ir::shape::checked_nbytes(shape, dtype.itemsize()).unwrap_or(usize::MAX)
}

/// The elements' bytes, to be overwritten by a download.
fn host_bytes_mut(d: &mut Data) -> &mut [u8] {
    // SAFETY: every element type is plain data without padding (`Data::as_bytes`); writes come
    // from a device buffer of the same dtype, so every element written is a valid value of its
    // type (booleans are stored as 0 or 1 by kernels).
    with_data!(d, v => unsafe {
        std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
    })
}

/// Blocks of a grid-stride launch per multiprocessor ([`Gpu`]'s `max_blocks` is this many
/// times the multiprocessors).
const MAX_BLOCKS_PER_SM: usize = 32;

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
    /// The device of ordinal `ordinal`, set up once per process (each device its own: its
    /// PTX target, kernels and modules are kept per device).
    pub fn get(ordinal: usize) -> Result<&'static Gpu> {
        type Slot = OnceLock<std::result::Result<Gpu, RuntimeError>>;
        static GPUS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());
        let slot: &'static Slot = {
            let mut gpus = GPUS.lock().unwrap_or_else(|e| e.into_inner());
            if ordinal >= gpus.len() {
                // Checked before growing the table: an ordinal past the devices is an error.
                Device::new(ordinal)?;
                gpus.resize_with(ordinal + 1, || Box::leak(Box::default()));
            }
            gpus[ordinal]
        };
        slot.get_or_init(|| {
            // No context is made here (the attributes and the driver's version need none):
            // a process's first call compiles its new kernels while the copies of its inputs
            // wait for the context (`Ahead`; the interpreter's warm-up thread, when it runs,
            // makes it meanwhile). A thread's first use of the context leaves it current
            // there (`bind`).
            let device = Device::new(ordinal)?;
            let (major, minor) = device.compute_capability()?;
            let sms = device.multiprocessor_count()?;
            let target = PtxTarget { sm: major * 10 + minor, ..PtxTarget::default() };
            let driver = kiln_runtime::driver_version()?;
            Ok(Gpu {
                device,
                target,
                max_blocks: sms * MAX_BLOCKS_PER_SM as u32,
                driver,
                disk: DiskCache::from_env(),
            })
        })
        .as_ref()
        .map_err(|e| Error::Runtime(e.clone()))
    }

    /// The PTX target of the device.
    pub fn target(&self) -> PtxTarget {
        self.target
    }

    /// The device's streaming multiprocessors.
    pub(super) fn multiprocessors(&self) -> usize {
        self.max_blocks as usize / MAX_BLOCKS_PER_SM
    }
}

/// Starts, on threads of their own, what the first call of a new kernel on device `ordinal`
/// would pay once: loading the CUDA libraries this program called in its last processes
/// ([`remembered`]), the bytecode interpreter ([`interp`], unless `KILN_GPU_INTERP=off`),
/// and where kernels compile through nvJitLink (`KILN_GPU_LINK=nvjitlink`) loading the library
/// and its first compile ([`nvjitlink::warm_up`]). The frontend calls it when it
/// picks the CUDA backend, long before the first materialisation; a compile that comes first
/// waits for the library's `OnceLock` and pays the rest itself. Nothing here can fail a later
/// compile.
pub fn warm_up(ordinal: usize) {
    if let Some(disk) = DiskCache::from_env() {
        // After `cuInit` (in `Gpu::get`), beside the context's creation: a library loaded
        // meanwhile held the loader's lock from `cuInit`, and its process gained nothing
        // (gmm, H200, session 42).
        let _ = std::thread::Builder::new().name("kiln-warm-libs".into()).spawn(move || {
            if Gpu::get(ordinal).is_ok() {
                remembered::preload_remembered(&disk);
            }
        });
    }
    if kiln_cache::config().gpu_interp != GpuInterp::Off {
        let _ = std::thread::Builder::new()
            .name("kiln-warm-interp".into())
            .spawn(move || interp::warm_up(ordinal));
    }
    if !prepare::links_in_process() {
        return;
    }
    let _ = std::thread::Builder::new().name("kiln-warm-link".into()).spawn(move || {
        if let Ok((major, minor)) = Device::new(ordinal).and_then(|d| d.compute_capability()) {
            nvjitlink::warm_up(major * 10 + minor);
        }
    });
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

mod ahead;
mod fft_fusion;
pub mod interp;
mod launch;
mod linalg;
mod lto;
mod prepare;
mod radix;
pub mod random;
mod remembered;
mod replay;
mod rows;
mod select;
mod streams;
#[cfg(test)]
mod tests;
mod vendor;

pub use ahead::{queued_ahead, Ahead};
pub use fft_fusion::{
    decision as fft_callback_decision, decisions as fft_callback_decisions,
    set_mode as set_fft_callback_mode, Decision as FftCallbackDecision, Mode as FftCallbackMode,
    Side as FftCallbackSide,
};
use launch::launch;
pub use lto::{compile_lto_cached, lto_compile_count};
use prepare::{prepare, ready_cache};
pub use streams::{last_run_streams, ForeignInputs, RanOn};
use streams::{order_on, Lanes, LAST_RUN};
pub(crate) use vendor::preload_libraries;

/// Runs a plan's schedule on the device: `inputs[k]` is the graph's `input {index=k}`. Returns
/// the schedule's outputs in device memory. `cached`: the plan lives in the plan cache (its
/// prepared kernels may be kept by its address).
/// `ahead`: its new kernels' preparation, started before ([`Ahead::start`] of the same plan).
pub fn run_schedule(
    gpu: &'static Gpu,
    plan: &Arc<Compiled>,
    cached: bool,
    inputs: &[Arc<DeviceArray>],
    ahead: Ahead,
) -> Result<Vec<Arc<DeviceArray>>> {
    debug_assert!(ahead.is_for(plan), "an Ahead started for another plan");
    // Another plan's steps would hand this plan's steps the wrong kernels.
    let ahead = if ahead.is_for(plan) { ahead } else { Ahead::none() };
    let sched: &Schedule = &plan.schedule;
    let _current = gpu.device.use_scoped()?;
    kiln_runtime::host_trace::point("run: device scoped");
    // Inputs ordered on another stream than the caller's wait for it before anything reads them.
    let _foreign = ForeignInputs::order(Stream::current_on(gpu.device)?, inputs)?;
    let _range = kiln_runtime::profile::range("kiln: materialize");
    kiln_runtime::host_trace::point("run: foreign inputs, range");
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
        pending: None,
        replay: replay::Replaying::new(gpu.device, sched),
        ahead,
    };
    kiln_runtime::host_trace::point("run: lanes");
    let outputs = walk(sched, inputs, &mut cuda)?;
    kiln_runtime::host_trace::point("run: walk end");
    LAST_RUN.with(|r| *r.borrow_mut() = std::mem::take(&mut cuda.ran));
    crate::record_run(std::mem::take(&mut cuda.code));
    kiln_runtime::host_trace::point("run: recorded");
    Ok(outputs)
}

/// The CUDA side of [`walk`].
struct Cuda<'a> {
    gpu: &'static Gpu,
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
    /// What a step left for the next: an FFT's producer or consumer fused into it as a cuFFT
    /// callback, or to be measured ([`fft_fusion`]).
    pending: Option<fft_fusion::Pending>,
    /// The launch list being recorded ([`replay`]).
    replay: replay::Replaying,
    /// The plan's new kernels, prepared on the compile workers ([`ahead`]).
    ahead: ahead::Ahead,
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
        kiln_runtime::host_trace::point("step: start");
        let reads: Vec<Arc<DeviceArray>> = reads.iter().map(|a| (*a).clone()).collect();
        let key = prepare::ready_key(plan, si, gpu);
        let hit = if self.cached {
            ready_cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key).map(|e| e.1.clone())
        } else {
            None
        };
        let ready = match hit {
            Some(r) => r,
            None => {
                let mut r = match self.ahead.take(gpu, si, region) {
                    Some(r) => r?,
                    None => prepare(gpu, region, prepare::may_interpret(plan, si))?,
                };
                let side = if r.kernel().is_some() {
                    Some((si + 1, fft_fusion::Side::Load))
                } else {
                    r.vendor.is_some().then_some((si, fft_fusion::Side::Store))
                };
                r.fft_site =
                    side.and_then(|(f, side)| fft_fusion::find(plan, f, side)).map(Arc::new);
                let r = Arc::new(r);
                if self.cached {
                    ready_cache()
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key, (plan.clone(), r.clone()));
                }
                r
            }
        };
        kiln_runtime::host_trace::point("step: ready lookup");
        let fft_pending = self.pending.as_ref().is_some_and(|p| p.step() + 1 == si);
        self.replay.before(si, replay::not_recorded(&ready, region, fft_pending))?;
        let index = sched.streams.streams.get(step.region).copied().unwrap_or(0);
        self.stream_index = index;
        let stream = self.lanes.before(&sched.streams, step.region)?;
        kiln_runtime::host_trace::point("step: lanes before");
        let mut loaded = ready.kernel();
        if loaded.is_none() && interp::interpreting() == GpuInterp::Off {
            // A thread that runs no interpreted code waits for the compile.
            loaded = ready.pending.as_ref().and_then(|p| p.wait());
        }
        let code = loaded.map(|loaded| loaded.for_call(gpu));
        kiln_runtime::host_trace::point("step: for_call");
        let tier = code.as_ref().map(|c| c.0.tier);
        self.ran.push(RanOn { region: step.region, stream: index, cuda_stream: stream.id(), tier });

        // Outputs are allocated for the step's stream, and it launches (or copies) there.
        let on_stream = stream.use_scoped();
        let mut pending = self.pending.take().filter(|p| p.step() + 1 == si);
        // The consumer of an FFT left by the previous step, which runs it with its store
        // callback (or measures it).
        let stored = match pending.take() {
            Some(p @ fft_fusion::Pending::Store { .. }) => {
                fft_fusion::store_step(gpu, region, code.as_ref(), &reads, p)?
            }
            p => {
                pending = p;
                None
            }
        };
        let fusion = match (&code, &pending, &stored) {
            (Some(_), None, None) => fft_fusion::plan_for(gpu, ready.fft_site.as_ref())?,
            _ => None,
        };
        kiln_runtime::host_trace::point("step: fft checks");
        let (outs, ran) = match (&code, fusion, stored) {
            (_, _, Some(done)) => done,
            (Some(_), Some((fft_fusion::Plan::Fuse(entry), _)), None) => {
                // The FFT of the next step computes this region in its load callback.
                let k = &region.body.node(region.body.outputs()[0]);
                let out = DeviceArray::empty(k.dtype, &k.shape)?;
                let (step, inputs) = (si, reads.clone());
                self.pending =
                    Some(fft_fusion::Pending::Load { step, entry, inputs, measure: None });
                (vec![out], RanCode::Library)
            }
            (Some(code), fusion, None) => {
                if let Some((fft_fusion::Plan::Kernel { measure: Some(entry) }, c)) = fusion {
                    let (step, inputs, measure) = (si, reads.clone(), Some((c, code.clone())));
                    self.pending = Some(fft_fusion::Pending::Load { step, entry, inputs, measure });
                }
                (launch(gpu, &code.0, &code.1, &reads)?, RanCode::Gpu(code.clone()))
            }
            (None, _, None) if let Some(pending) = &ready.pending => {
                let i = &pending.interpreted;
                (i.run(&reads)?, RanCode::GpuInterpreted(i.program.clone()))
            }
            (None, _, None) if let Some(call @ VendorCall::Fft(_)) = &ready.vendor => {
                let store = ready.fft_site.as_ref();
                let (outs, next) = fft_fusion::fft_step(gpu, si, call, &reads, pending, store)?;
                self.pending = next;
                (outs, RanCode::Library)
            }
            (None, _, None) if let Some(call) = &ready.vendor => {
                (vendor::run(call, &reads)?, RanCode::Library)
            }
            (None, _, None)
                if kiln_runtime::nvrtc::nvrtc_available()
                    && let Ok(sort) = row_sort(region) =>
            {
                (rows::run(gpu, region, &sort, &reads)?, RanCode::GpuRowSort)
            }
            (None, _, None)
                if kiln_runtime::nvrtc::nvrtc_available()
                    && let Ok(sort) = radix_sort(region) =>
            {
                (radix::run(gpu, region, &sort, &reads)?, RanCode::GpuRadixSort)
            }
            (None, _, None)
                if kiln_runtime::nvrtc::nvrtc_available()
                    && let Ok(s) = sort_take(region) =>
            {
                let ran = if s.in_shared { RanCode::GpuRadixSelect } else { RanCode::GpuRadixSort };
                (select::run(gpu, region, &s, &reads)?, ran)
            }
            (None, _, None)
                if kiln_runtime::nvrtc::nvrtc_available()
                    && let Ok(t) = topk(region) =>
            {
                (select::run_topk(gpu, region, &t, &reads)?, RanCode::GpuRadixSelect)
            }
            (None, _, None) => {
                let host: Vec<HostArray> =
                    reads.iter().map(|a| a.download()).collect::<Result<_>>()?;
                let refs: Vec<&HostArray> = host.iter().collect();
                let (outs, ran) = crate::cpu::run_one(
                    crate::cpu::HostRun::Compiled,
                    step.region,
                    region,
                    &refs,
                    None,
                )?;
                (outs.iter().map(DeviceArray::upload).collect::<Result<_>>()?, ran)
            }
        };
        kiln_runtime::host_trace::point("step: ran");
        self.code.push((step.region, ran));
        drop(on_stream);
        self.lanes.after(&sched.streams, step.region, &stream)?;
        kiln_runtime::host_trace::point("step: lanes after");
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
        self.replay.end()?;
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

//! New elementwise kernels run by kiln's bytecode interpreter (`interp.cu`, the programs of
//! [`kiln_compiler::bytecode`]) while their code compiles on a worker thread, so a new
//! expression's first call launches at once instead of waiting for MLIR, LLVM and `ptxas` (or
//! the driver's JIT) (`KILN_GPU_INTERP`, default on; see [`interpreting`]).
//!
//! A region is interpreted when its code is in no cache (the disk cache's, or without one the
//! process's PTX), its program exists ([`Bytecode::of`]), no FFT may take it as its load
//! callback, and a compile worker has room; its [`Pending`]
//! holds the interpreter's launch until the worker's code lands, and every call after that runs
//! the compiled kernel. The workers (at most [`compile_workers`], each keeping its MLIR context
//! and target machines) take compiles in order; when [`MAX_QUEUED`] wait, the caller compiles
//! itself as before. A compile made on a worker stores its cubin in the disk cache, and a
//! process that ends with compiles queued waits for them (at most [`EXIT_WAIT`], where a disk
//! cache keeps them), so the next process finds them. The workers also prepare a plan's new
//! kernels side by side ([`super::ahead`], [`on_worker`]).

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc;
use std::sync::Condvar;

use kiln_cache::config::GpuInterp;
use kiln_compiler::bytecode::{Bytecode, MAX_INPUTS, MAX_OUTPUTS};
use kiln_runtime::memory::DeviceCopy;

use super::prepare::Loaded;
use super::*;

/// The interpreter's CUDA C++ (compiled ahead for sm_90: `runtime/prebuilt/kiln_interp.*`).
pub(crate) const SOURCE: &str = include_str!("interp.cu");

/// Threads of the interpreter's blocks, at most (its `__launch_bounds__`).
const THREADS: usize = 256;
/// Elements a thread of `kiln_interp` runs the program for at once (`LANES` in `interp.cu`);
/// `kiln_interp_1` runs one.
const LANES: usize = 4;
/// Arrays of fewer elements than this a multiprocessor run one element a thread: four lanes
/// made each thread's pass four times as long where there were threads to spare (64 ops on
/// 1,024 elements: 0.080 ms with four, 0.034 with one, H200).
const SMALL_PER_SM: usize = 1024;
/// Shared memory a launch gets without opting in: the register file's and the kernel's static
/// shared memory (the program, decoded and not, and the buffers' addresses: 6,272 bytes) share it.
const LAUNCH_SHARED_BYTES: usize = 48 * 1024;

/// The buffers of a launch, by value (`Buffers` in `interp.cu`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Buffers {
    inputs: [u64; MAX_INPUTS],
    outputs: [u64; MAX_OUTPUTS],
}

// SAFETY: plain device addresses, copied as the kernel's parameter.
unsafe impl DeviceCopy for Buffers {}

/// Whether this process interprets new kernels (`KILN_GPU_INTERP`), unless the thread said
/// otherwise ([`no_interpreter`]).
pub(super) fn interpreting() -> GpuInterp {
    if NEVER.with(|n| n.get()) {
        return GpuInterp::Off;
    }
    kiln_cache::config().gpu_interp
}

thread_local! {
    static NEVER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Until the guard drops, this thread runs no interpreted code: a region being interpreted
/// waits for its compile first, and the thread's new regions compile before they launch.
/// For tests and measurements that read a first call's compiled code.
pub fn no_interpreter() -> NoInterpreter {
    NoInterpreter(NEVER.with(|n| n.replace(true)))
}

/// The guard of [`no_interpreter`].
pub struct NoInterpreter(bool);

impl Drop for NoInterpreter {
    fn drop(&mut self) {
        NEVER.with(|n| n.set(self.0));
    }
}

/// The interpreter's functions on `gpu`'s device ([`kiln_runtime::kiln_modules`]): four lanes
/// a thread, and one.
fn functions(gpu: &Gpu) -> Result<[Function; 2]> {
    let module = kiln_runtime::kiln_modules::kiln_module(
        gpu.device,
        "kiln_interp",
        SOURCE,
        gpu.disk.as_ref(),
    )?;
    Ok([module.function("kiln_interp")?, module.function("kiln_interp_1")?])
}

/// Loads the interpreter on device `ordinal` ahead of the first call (the frontend's
/// warm-up, on a thread of its own, unless `KILN_GPU_INTERP=off`).
pub(super) fn warm_up(ordinal: usize) {
    if let Ok(gpu) = Gpu::get(ordinal) {
        let _ = functions(gpu);
    }
}

/// A program ready to run: its code in device memory, the interpreter loaded.
pub struct Interpreted {
    pub program: Arc<Bytecode>,
    code: DeviceBuffer,
    /// The interpreter's function for this program's lanes (four a thread, or one).
    function: Function,
    /// Blocks, threads and dynamic shared memory (bytes) of its launches.
    launch: (u32, u32, u32),
}

impl Interpreted {
    /// `program` on `gpu`: its code uploaded (and the upload finished, so any stream may read
    /// it), the interpreter loaded.
    pub fn new(gpu: &Gpu, program: Bytecode) -> Result<Interpreted> {
        let [four, one] = functions(gpu)?;
        let sms = gpu.multiprocessors();
        let lanes = if program.elements < sms * SMALL_PER_SM { 1 } else { LANES };
        let function = if lanes == 1 { one } else { four };
        let file_bytes = LAUNCH_SHARED_BYTES.saturating_sub(function.shared_size_bytes()? as usize);
        let (blocks, threads, bytes) =
            launch_shape(program.registers, program.elements, sms, lanes, file_bytes);
        // As much of each multiprocessor's L1 as shared memory as it takes (the register files
        // are the bound), and a grid of the blocks the device holds at once: a grid of 2,048
        // threads' worth a multiprocessor ran a second wave of a third of it (session 42).
        function.set_preferred_shared_memory_carveout(100)?;
        let resident = function.max_active_blocks(threads, bytes)?;
        let blocks = if resident > 0 { blocks.min(sms * resident) } else { blocks };
        let mut code = DeviceBuffer::alloc(8 * program.code.len().max(1))?;
        if !program.code.is_empty() {
            code.copy_from_host(&program.code)?;
        }
        code.stream().synchronize()?;
        let launch = (blocks as u32, threads as u32, bytes as u32);
        Ok(Interpreted { program: Arc::new(program), code, function, launch })
    }

    /// Runs the program over `inputs` (its dtypes and shapes) into fresh outputs, on the
    /// current stream.
    pub fn run(&self, inputs: &[Arc<DeviceArray>]) -> Result<Vec<DeviceArray>> {
        let p = &self.program;
        check_inputs(0, &p.inputs, inputs)?;
        let outs: Vec<DeviceArray> = p
            .outputs
            .iter()
            .map(|(dt, shape)| DeviceArray::empty(*dt, shape))
            .collect::<Result<_>>()?;
        if p.elements == 0 {
            return Ok(outs);
        }
        let mut bufs = Buffers { inputs: [0; MAX_INPUTS], outputs: [0; MAX_OUTPUTS] };
        for (slot, a) in bufs.inputs.iter_mut().zip(inputs) {
            *slot = a.buf.ptr();
        }
        for (slot, a) in bufs.outputs.iter_mut().zip(&outs) {
            *slot = a.buf.ptr();
        }
        let (ncode, nprologue, n) = (p.code.len() as u32, p.prologue as u32, p.elements as u64);
        let (blocks, threads, bytes) = self.launch;
        let config = LaunchConfig::linear(blocks, threads).with_shared_mem(bytes);
        let args: [&dyn KernelArg; 5] = [&self.code, &ncode, &nprologue, &n, &bufs];
        let stream = Stream::current()?;
        // SAFETY: `kiln_interp(code, ncode, nprologue, n, buffers)` (and `kiln_interp_1`)
        // reads `ncode` words of `code` (this program, uploaded and finished; its first
        // `nprologue` words, at most `ncode`, once a block), keeps registers below
        // `p.registers` (each thread's lanes in the dynamic shared memory given), then for each
        // element e < n reads the inputs the program's loads name at e (or 0) and writes the
        // outputs its stores name at e: the inputs were checked to hold the program's dtypes
        // and shapes (each `n` elements or, read at 0, at least one), the outputs are fresh
        // buffers of `n` elements of theirs.
        unsafe { self.function.launch_on(&stream, config, &args)? };
        Ok(outs)
    }
}

/// Blocks, threads and dynamic shared memory (bytes) of a launch of a program of `registers`
/// registers over `elements` elements on `sms` multiprocessors, `lanes` elements a thread: the
/// register file (`lanes` lanes a thread, 8 bytes each) within `file_bytes`, small arrays in
/// small blocks so that every multiprocessor takes a share; at most 2,048 threads a
/// multiprocessor (the caller bounds the grid by what the device holds at once).
fn launch_shape(
    registers: usize,
    elements: usize,
    sms: usize,
    lanes: usize,
    file_bytes: usize,
) -> (usize, usize, usize) {
    let per_thread = registers.max(1) * lanes * 8;
    let fit = (file_bytes / per_thread / 32 * 32).clamp(32, THREADS);
    let spread = elements.div_ceil(lanes * sms.max(1)).next_multiple_of(32);
    let threads = spread.clamp(32, fit);
    let blocks = elements.div_ceil(threads * lanes).min(sms.max(1) * (2048 / threads));
    (blocks, threads, per_thread * threads)
}

/// A region interpreted until its compile lands.
pub(super) struct Pending {
    pub(super) interpreted: Interpreted,
    compiled: OnceLock<Loaded>,
    done: Mutex<bool>,
    landed: Condvar,
}

impl Pending {
    fn new(interpreted: Interpreted) -> Pending {
        Pending {
            interpreted,
            compiled: OnceLock::new(),
            done: Mutex::new(false),
            landed: Condvar::new(),
        }
    }

    /// Interpreted for good (`KILN_GPU_INTERP=always`): nothing compiles.
    pub(super) fn always(interpreted: Interpreted) -> Pending {
        let p = Pending::new(interpreted);
        p.finish(None);
        p
    }

    /// The compiled code, once it landed.
    pub(super) fn compiled(&self) -> Option<&Loaded> {
        self.compiled.get()
    }

    /// Waits for the compile to end: its code (`None` where it failed, or where nothing
    /// compiles).
    pub(super) fn wait(&self) -> Option<&Loaded> {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = self.landed.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        self.compiled.get()
    }

    fn finish(&self, code: Option<Loaded>) {
        if let Some(code) = code {
            let _ = self.compiled.set(code);
        }
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.landed.notify_all();
    }
}

/// Compiles waiting or running on the workers, at most.
const MAX_QUEUED: usize = 64;

/// Compile workers: half the host's cores, 1 to 8 (read once).
pub fn compile_workers() -> usize {
    static WORKERS: OnceLock<usize> = OnceLock::new();
    *WORKERS
        .get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get() / 2).clamp(1, 8))
}

pub(super) type Job = Box<dyn FnOnce() + Send>;

static QUEUED: AtomicUsize = AtomicUsize::new(0);

fn queue() -> &'static Mutex<mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for k in 0..compile_workers() {
            let rx = rx.clone();
            let _ =
                std::thread::Builder::new().name(format!("kiln-compile-{k}")).spawn(move || loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(job) = job else { return };
                    // A job that panics ends, not its worker (its own caller hears of it).
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    QUEUED.fetch_sub(1, Ordering::AcqRel);
                });
        }
        // A process that ends with compiles queued waits for them (their code reaches the
        // disk cache for the next process): at most `EXIT_WAIT`, and only where a disk cache
        // keeps them. `ptxas`'s files go after that wait (handlers run in the reverse order
        // of their registration), so that a compile still running then leaves none behind.
        kiln_runtime::remove_ptxas_files_at_exit();
        // SAFETY: `wait_at_exit` is a plain function that only reads atomics and sleeps.
        unsafe { libc::atexit(wait_at_exit) };
        Mutex::new(tx)
    })
}

/// How long a process's end waits for its queued compiles.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a queued compile stores its code in a disk cache (else the exit does not wait).
static TO_DISK: AtomicBool = AtomicBool::new(false);

extern "C" fn wait_at_exit() {
    if TO_DISK.load(Ordering::Acquire) {
        wait_queued(EXIT_WAIT);
    }
}

/// Waits until no compile is queued or running, for at most `limit`.
fn wait_queued(limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while QUEUED.load(Ordering::Acquire) > 0 && start.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Interprets `program` while a worker runs `compile` (the region's code, loaded), or `None`
/// where the workers are full or the interpreter does not load (the caller compiles).
pub(super) fn interpret_while(
    gpu: &Gpu,
    program: Bytecode,
    compile: impl FnOnce() -> Result<Loaded> + Send + 'static,
) -> Option<Arc<Pending>> {
    if !reserve() {
        return None;
    }
    let interpreted = match Interpreted::new(gpu, program) {
        Ok(i) => i,
        Err(e) => {
            QUEUED.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(error = %e, "the bytecode interpreter does not load; compiling first");
            return None;
        }
    };
    let pending = Arc::new(Pending::new(interpreted));
    let landing = pending.clone();
    let job: Job = Box::new(move || {
        kiln_runtime::host_trace::point("interp: compile start");
        let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(compile)) {
            Ok(Ok(code)) => Some(code),
            // The interpreter goes on: it computes the same values.
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "compiling an interpreted GPU kernel failed");
                None
            }
            Err(_) => {
                tracing::warn!("compiling an interpreted GPU kernel panicked");
                None
            }
        };
        landing.finish(code);
    });
    submit(gpu, job);
    Some(pending)
}

/// Runs `job` (a compile for `gpu`) on a compile worker, counted among the queued compiles (so
/// a process's end waits for it too); here where no worker could start. Not at all where
/// [`MAX_QUEUED`] compiles wait (`false`: the caller does the work itself).
pub(super) fn on_worker(gpu: &Gpu, job: Job) -> bool {
    let room = reserve();
    if room {
        submit(gpu, job);
    }
    room
}

/// Counts a compile in [`QUEUED`] where fewer than [`MAX_QUEUED`] are: whether it was.
fn reserve() -> bool {
    if QUEUED.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED {
        QUEUED.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// Queues `job` (a compile for `gpu`, counted in [`QUEUED`] by the caller) on the workers, or
/// runs it here where none could start.
fn submit(gpu: &Gpu, job: Job) {
    if gpu.disk.is_some() {
        TO_DISK.store(true, Ordering::Release);
    }
    if let Err(mpsc::SendError(job)) = queue().lock().unwrap_or_else(|e| e.into_inner()).send(job) {
        job();
        QUEUED.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits until no compile is queued or running (tests and measurements).
pub fn wait_for_compiles() {
    wait_queued(std::time::Duration::MAX);
}

#[cfg(test)]
mod tests {
    use kiln_compiler::bytecode::{Family, Ty, MAX_CODE, MAX_REGISTERS};

    use super::SOURCE;

    /// The value of `#define NAME value` in the source.
    fn define(name: &str) -> Option<u64> {
        SOURCE.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("#define") && w.next() == Some(name))
                .then(|| w.next()?.parse().ok())
                .flatten()
        })
    }

    #[test]
    fn the_source_numbers_ops_and_types_as_the_translator() {
        for &(family, name) in Family::ALL {
            let define = format!("OP_{}", name.to_uppercase());
            assert_eq!(self::define(&define), Some(family as u64), "{define}");
        }
        for (ty, name) in [
            (Ty::Bool, "T_BOOL"),
            (Ty::I32, "T_I32"),
            (Ty::I64, "T_I64"),
            (Ty::F32, "T_F32"),
            (Ty::F64, "T_F64"),
        ] {
            assert_eq!(define(name), Some(ty as u64), "{name}");
        }
        assert_eq!(define("MAX_REGISTERS"), Some(MAX_REGISTERS as u64));
        assert_eq!(define("MAX_CODE"), Some(MAX_CODE as u64));
        assert_eq!(define("MAX_INPUTS"), Some(super::MAX_INPUTS as u64));
        assert_eq!(define("MAX_OUTPUTS"), Some(super::MAX_OUTPUTS as u64));
        assert_eq!(define("LANES"), Some(super::LANES as u64));
        assert_eq!(define("OP_ERF"), None, "no op the translator does not write");
    }

    #[test]
    fn launches_fit_the_shared_memory_and_spread_small_arrays() {
        // The interpreter's static shared memory on sm_90 (ptxas -v): 6,272 bytes.
        const FILE: usize = super::LAUNCH_SHARED_BYTES - 6272;
        for lanes in [1, super::LANES] {
            for registers in 1..=MAX_REGISTERS {
                for elements in [1, 1024, 100_000, 1 << 26] {
                    let (blocks, threads, bytes) =
                        super::launch_shape(registers, elements, 132, lanes, FILE);
                    assert!(bytes <= FILE, "{registers} registers: {bytes} bytes");
                    assert!(threads % 32 == 0 && (32..=256).contains(&threads));
                    // Every element, or as many blocks as the device holds at once.
                    let resident = 132 * (2048 / threads) * threads;
                    assert!(blocks >= 1 && blocks * threads * lanes >= elements.min(resident));
                }
            }
        }
        // 1,024 elements on 132 multiprocessors: 8 blocks of 32 threads at four lanes, 32 at
        // one, not one block of 256.
        assert_eq!(super::launch_shape(2, 1024, 132, super::LANES, FILE).0, 8);
        assert_eq!(super::launch_shape(2, 1024, 132, 1, FILE).0, 32);
        assert_eq!(super::launch_shape(2, 1 << 26, 132, super::LANES, FILE).1, 256);
    }

    #[test]
    fn a_job_that_panics_leaves_its_worker_and_the_count() {
        use std::sync::atomic::Ordering;
        use std::time::Duration;

        use super::{queue, wait_queued, QUEUED};
        let (tx, rx) = std::sync::mpsc::channel();
        QUEUED.fetch_add(2, Ordering::AcqRel);
        let workers = queue().lock().unwrap();
        workers.send(Box::new(|| panic!("a compile job's panic (expected by this test)"))).unwrap();
        workers.send(Box::new(move || tx.send(7).unwrap())).unwrap();
        drop(workers);
        // The next job ran (with one worker, on the thread the panic left), and both were
        // counted off: a process's end and `wait_for_compiles` do not wait for them forever.
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(7));
        wait_queued(Duration::from_secs(10));
        assert_eq!(QUEUED.load(Ordering::Acquire), 0);
    }

    #[test]
    fn the_prebuilt_interpreter_is_of_this_source() {
        kiln_runtime::kiln_modules::assert_prebuilt_current("kiln_interp", SOURCE);
    }
}

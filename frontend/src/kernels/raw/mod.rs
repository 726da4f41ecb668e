//! CuPy's raw kernels: [`RawKernel`] and [`RawModule`], CUDA C++ compiled at run time with
//! NVRTC (or PTX and cubins loaded as they are) and launched on kiln's arrays.
//!
//! Unlike `ElementwiseKernel` and `ReductionKernel`, whose code kiln traces into its graph, a
//! raw kernel is opaque code launched as written, so it is a **fusion boundary**: the arrays it
//! is given are materialised before the launch, and the arrays it writes are new leaf arrays
//! after it, which later expressions read as inputs.
//!
//! # Arrays written in place, and kiln's lazy arrays
//! kiln's arrays are values: an expression holding an array (`let w = &y * 2.0`, not yet
//! computed) must see the value `y` had when `w` was written, and an array read on the host
//! keeps that copy. So an array the kernel writes is passed as [`RawArg::Out`] (`(&mut y).into()`)
//! and, at the launch:
//! - it is materialised on the device (with every other array argument, in one evaluation);
//! - if nothing else can see its buffer (no other handle or pending expression holds `y`, no
//!   other array shares the buffer), the kernel writes that buffer, in place as in CuPy;
//!   otherwise the buffer is copied on the device first and the kernel writes the copy, so the
//!   other readers keep the old value (copy on write);
//! - after the launch `y` is replaced by a new array holding the written buffer: a host copy
//!   cached in the old array is not the new array's (it is dropped with the old array, or kept
//!   by whoever still holds the old array, for whom it is still right).
//!
//! Arrays only read are passed as [`RawArg::In`]; the kernel must not write them (their buffers
//! may be shared). The kernel sees an array's elements in C order, contiguous: a lazy view
//! (`x.t()`, a slice) is materialised into its own buffer first (CuPy passes a view's base
//! pointer and leaves its strides to the kernel).
//!
//! # Arguments
//! Arrays are device pointers; scalars are passed by value as CuPy's table maps them: `bool` →
//! `bool`, `i8`/`i16`/`i32`/`i64` → `signed char`/`short`/`int`/`long long`, the unsigned ones
//! likewise, `f16` → `half`, `f32` → `float`, `f64` → `double`, `Complex<f32>`/`Complex<f64>` →
//! `complex<float>`/`complex<double>`, `usize`/`isize` → `unsigned long long`/`long long`.
//! Where the driver reports the kernel's parameters (`cuFuncGetParamInfo`, CUDA 12.4+), their
//! number and sizes are checked before anything is evaluated ([`Error::KernelArgCount`],
//! [`Error::KernelArgSize`]; CuPy checks nothing), and an integer given for an integer parameter
//! of another size is converted when its value fits (CuPy's guide passes a Python `int`, 8
//! bytes, to an `unsigned int N`; a value out of the parameter's range is an [`Error::Value`]).
//! A 4-byte parameter given an integer is taken for an `int`: a `float` one needs an `f32`.
//!
//! # Compile log, globals
//! [`RawModule::compile_log`] returns NVRTC's warnings (kept in the disk cache with the binary);
//! [`RawModule::get_global`] reads a `__device__`/`__constant__` variable as an array (a copy:
//! CuPy gives a pointer to it).
//!
//! # Streams
//! A launch on another stream than the current one waits for the work kiln queued on the
//! current stream (the arrays' evaluation), and later work on the current stream waits for it,
//! so the results and the buffers' reuse stay ordered.
//!
//! # Compilation
//! Source is compiled once per module by NVRTC (`libnvrtc` of the CUDA toolkit, loaded at run
//! time from the library path, `KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME` or `/usr/local/cuda`)
//! into a cubin for the device's `sm_XX` (PTX for the driver when NVRTC does not know the
//! device), with the toolkit's `include` directory on the include path when there is one. Complex
//! numbers: kiln gives NVRTC its own small `complex<T>` header in memory, as
//! `<kiln/complex.cuh>` and as `<cupy/complex.cuh>`, so CuPy's kernels compile as written
//! without CuPy's headers (`<cuda/std/complex>` is the toolkit's, when its include path works).
//! The compiled binary is kept in the disk kernel cache (`KILN_CACHE_DIR`, shared with the
//! compiler's kernels; see [`build`]), so a new process skips NVRTC; the loaded module is cached
//! per device by its code.
//!
//! # Errors
//! Every use on the CPU backend is [`Error::GpuRequired`]; a compilation, loading or launch
//! error is an [`Error::RuntimeIn`] naming the module or kernel (`RawKernel my_add`) around the
//! runtime's error (`RuntimeError::Nvrtc(..)` with NVRTC's log; [`Error::runtime`] gives it);
//! a name the module does not have is [`Error::UnknownKernel`]; an unreadable module file is
//! [`Error::Io`]; wrong arguments name the kernel (`RawKernel my_add`).

mod args;
pub(crate) mod build;

use std::path::Path;
use std::sync::{Arc, Mutex};

use kiln_runtime::{
    Function, FunctionAttributes, KernelStage, LaunchConfig, Module, ModuleImage, RuntimeError,
    Stream,
};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use build::{compile_cached, compile_source, Source};

pub use args::{Dim3, RawArg, ScalarArg};

/// What a module is made from.
#[derive(Debug)]
enum Code {
    Source(Source),
    Ptx(String),
    Cubin(Vec<u8>),
}

/// A module loaded on the device: the driver's module and each name expression's lowered name.
struct Loaded {
    module: Arc<Module>,
    lowered_names: Vec<(String, String)>,
    /// NVRTC's log of the compilation (warnings), for a module made from source.
    log: String,
}

struct ModuleInner {
    /// Names the module in errors: `RawModule`, `RawModule(path)`, `RawKernel my_func`.
    label: String,
    code: Code,
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// A module of CUDA kernels (CuPy's `cupy.RawModule`): CUDA C++ compiled with NVRTC when first
/// used, or a PTX or cubin file loaded as it is; its kernels are taken with
/// [`RawModule::get_function`]. Cheap to clone (clones share the loaded module).
///
/// ```no_run
/// use kiln_frontend::{arange, DType, RawModule, RawArg};
/// let module = RawModule::new(r#"
/// template<typename T>
/// __global__ void fx3(T* arr, int N) {
///     unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
///     if (tid < N) { arr[tid] = arr[tid] * 3; }
/// }"#, &["-std=c++11"], &["fx3<float>", "fx3<double>"]);
/// let ker_float = module.get_function("fx3<float>")?;      // compiles here
/// let mut a = arange(10).astype(DType::Float32);
/// // SAFETY: fx3<float>(float*, int) writes elements 0..10 of `a`, which has 10.
/// unsafe { ker_float.try_launch(1, 10, &mut [(&mut a).into(), 10i32.into()], 0, None)? };
/// assert_eq!(a.to_vec::<f32>()[..3], [0.0, 3.0, 6.0]);
/// # Ok::<(), kiln_frontend::Error>(())
/// ```
///
/// See [the module docs](self) for arguments, in-place writes and compilation.
#[derive(Clone)]
pub struct RawModule {
    inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for RawModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawModule").field("label", &self.inner.label).finish()
    }
}

/// `e` naming the raw module or kernel `label` where it names nothing: a device or NVRTC error
/// becomes [`Error::RuntimeIn`] (`RawKernel k: compiling `k.cu` with NVRTC failed ...`).
fn named(e: Error, label: &str) -> Error {
    match e {
        Error::Runtime(source) => Error::RuntimeIn { op: label.to_string(), source },
        other => other,
    }
}

/// The device raw kernels run on; `what` names the user of it in the CPU backend's error.
fn gpu_for(what: &str) -> Result<&'static Gpu> {
    match crate::current_backend() {
        kiln_runtime::Backend::Cuda(ordinal) => Ok(Gpu::get(ordinal)?),
        kiln_runtime::Backend::Cpu => Err(Error::GpuRequired { what: what.to_string() }),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl RawModule {
    fn with(label: String, code: Code) -> RawModule {
        RawModule { inner: Arc::new(ModuleInner { label, code, loaded: Mutex::new(None) }) }
    }

    /// `cupy.RawModule(code=code, options=options, name_expressions=name_expressions)`: CUDA
    /// C++ compiled with NVRTC when first used. `options` are NVRTC's (`-std=c++17`,
    /// `--use_fast_math`; an `-arch` replaces the device's); `name_expressions` are template
    /// instantiations (`fx3<float>`) to compile, found by that name with
    /// [`RawModule::get_function`]. Nothing is checked until then.
    ///
    /// Relocatable device code (`-dc`, `--device-c`, `-rdc=true`,
    /// `--relocatable-device-code=true`, as CuPy's `options=('-dc',)`) is linked, when loaded,
    /// with the CUDA toolkit's `libcudadevrt.a` by the driver's linker: what dynamic parallelism
    /// (a kernel launching kernels) and `extern __device__` functions need. Errors then: the
    /// library not found (`RuntimeError::Library` naming `cuLinkAddFile` and where it was looked
    /// for: `lib64`, `lib`, `targets/x86_64-linux/lib` under `KILN_CUDA_PATH`, `CUDA_PATH`,
    /// `CUDA_HOME`, `/usr/local/cuda`), an unresolved symbol (`RuntimeError::Kernel` at the link
    /// stage, with the linker's log).
    pub fn new(code: &str, options: &[&str], name_expressions: &[&str]) -> RawModule {
        let source = Source {
            name: "raw_module.cu".into(),
            code: code.to_string(),
            options: strings(options),
            name_expressions: strings(name_expressions),
        };
        RawModule::with("RawModule".into(), Code::Source(source))
    }

    /// `cupy.RawModule(path=path)`: a `.ptx` file (compiled by the driver when loaded) or a
    /// `.cubin`/`.fatbin` file for the device. Errors: a file that cannot be read
    /// ([`Error::Io`]), another extension or PTX that is not UTF-8 ([`Error::Value`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<RawModule> {
        let path = path.as_ref();
        let label = format!("RawModule({})", path.display());
        let io = |e: std::io::Error| Error::Io {
            op: "RawModule".into(),
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let code = match path.extension().and_then(|e| e.to_str()) {
            Some("ptx") => {
                Code::Ptx(String::from_utf8(std::fs::read(path).map_err(io)?).map_err(|_| {
                    crate::error::value_err(
                        "RawModule",
                        format!("{}: the PTX is not UTF-8 text", path.display()),
                    )
                })?)
            }
            Some("cubin" | "fatbin") => Code::Cubin(std::fs::read(path).map_err(io)?),
            _ => {
                return Err(crate::error::value_err(
                    "RawModule",
                    format!("{}: expected a .ptx, .cubin or .fatbin file", path.display()),
                ))
            }
        };
        Ok(RawModule::with(label, code))
    }

    /// A module of PTX text, compiled by the driver when first used.
    pub fn from_ptx(ptx: &str) -> RawModule {
        RawModule::with("RawModule(ptx)".into(), Code::Ptx(ptx.to_string()))
    }

    /// A module of a cubin or fatbin image for the device.
    pub fn from_cubin(image: &[u8]) -> RawModule {
        RawModule::with("RawModule(cubin)".into(), Code::Cubin(image.to_vec()))
    }

    /// The CUDA C++ source, for a module made from source.
    pub fn code(&self) -> Option<&str> {
        match &self.inner.code {
            Code::Source(s) => Some(&s.code),
            Code::Ptx(_) | Code::Cubin(_) => None,
        }
    }

    /// The NVRTC options given (empty for PTX and cubins).
    pub fn options(&self) -> &[String] {
        match &self.inner.code {
            Code::Source(s) => &s.options,
            Code::Ptx(_) | Code::Cubin(_) => &[],
        }
    }

    /// The name expressions given.
    pub fn name_expressions(&self) -> &[String] {
        match &self.inner.code {
            Code::Source(s) => &s.name_expressions,
            Code::Ptx(_) | Code::Cubin(_) => &[],
        }
    }

    /// Compiles (source) and loads the module on the device now, if not done yet (CuPy's
    /// `compile()`). Errors: the CPU backend, NVRTC's errors, the driver refusing the code.
    pub fn try_compile(&self) -> Result<()> {
        self.loaded().map(|_| ())
    }

    /// The module loaded on the device, compiling it the first time. A device or NVRTC error
    /// names the module ([`Error::RuntimeIn`]).
    fn loaded(&self) -> Result<Arc<Loaded>> {
        self.load().map_err(|e| named(e, &self.inner.label))
    }

    fn load(&self) -> Result<Arc<Loaded>> {
        let gpu = gpu_for(&self.inner.label)?;
        let mut slot = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(loaded) = &*slot {
            return Ok(loaded.clone());
        }
        let device = gpu.device();
        let label = &self.inner.label;
        let loaded = match &self.inner.code {
            Code::Source(source) => {
                let (compiled, cached) =
                    compile_cached(source, gpu.sm(), gpu.disk(), gpu.driver())?;
                let linked = build::link_relocatable(device, label, source, &compiled)?;
                let image = match &linked {
                    Some(cubin) => ModuleImage::Cubin(cubin),
                    None => compiled.image()?,
                };
                let module = match device.load_module(label, image) {
                    Ok(module) => module,
                    Err(e) if cached => {
                        // A cached binary the driver refuses (a damaged entry): compile afresh.
                        tracing::warn!(target: "kiln::cache", error = %e, "cached raw module does not load; rebuilding it");
                        let fresh = compile_source(source, gpu.sm())?;
                        let linked = build::link_relocatable(device, label, source, &fresh)?;
                        let image = match &linked {
                            Some(cubin) => ModuleImage::Cubin(cubin),
                            None => fresh.image()?,
                        };
                        let module = device.load_module(label, image)?;
                        return Ok(self.keep(
                            &mut slot,
                            Loaded { module, lowered_names: fresh.lowered_names, log: fresh.log },
                        ));
                    }
                    Err(e) => return Err(e.into()),
                };
                Loaded { module, lowered_names: compiled.lowered_names, log: compiled.log }
            }
            Code::Ptx(ptx) => Loaded {
                module: device.load_module(label, ModuleImage::Ptx(ptx))?,
                lowered_names: Vec::new(),
                log: String::new(),
            },
            Code::Cubin(image) => Loaded {
                module: device.load_module(label, ModuleImage::Cubin(image))?,
                lowered_names: Vec::new(),
                log: String::new(),
            },
        };
        Ok(self.keep(&mut slot, loaded))
    }

    /// The compiler's messages for a module that compiled: NVRTC's log (its warnings; kept in
    /// the disk cache with the binary, so a cached module has it too) for source, the driver
    /// JIT's information log for PTX; empty when there is nothing to say, and for a cubin.
    /// Compiles and loads the module the first time. Errors: as
    /// [`RawModule::try_compile`] (a compilation error carries NVRTC's log itself).
    pub fn compile_log(&self) -> Result<String> {
        let loaded = self.loaded()?;
        let jit = loaded.module.info_log();
        Ok(match (loaded.log.trim().is_empty(), jit.trim().is_empty()) {
            (false, false) => format!("{}\n{jit}", loaded.log.trim_end()),
            (false, true) => loaded.log.clone(),
            _ => jit.to_string(),
        })
    }

    /// A `__device__` or `__constant__` variable of the module, read as an array of `shape`
    /// and `dtype` (CuPy's `RawModule.get_global(name)` gives a `MemoryPointer` to it; kiln's
    /// arrays are values, so this is a copy of its bytes now, taken on the current stream after
    /// the work queued there). `name` is the variable's symbol: an `extern "C"` name, or a name
    /// expression given to [`RawModule::new`] (`&x<float>`), whose lowered name is used.
    /// Errors: the CPU backend, compilation, no such symbol ([`Error::UnknownKernel`]), a
    /// shape and dtype of another size than the variable's ([`Error::Value`]).
    pub fn get_global(
        &self,
        name: &str,
        shape: &[usize],
        dtype: kiln_ir::DType,
    ) -> Result<crate::Array> {
        let loaded = self.loaded()?;
        let symbol =
            loaded.lowered_names.iter().find(|(e, _)| e == name).map_or(name, |(_, l)| l.as_str());
        let (ptr, bytes) = loaded.module.global(symbol).map_err(|_| Error::UnknownKernel {
            module: self.inner.label.clone(),
            name: name.to_string(),
            name_expressions: self.name_expressions().to_vec(),
        })?;
        let want = shape.iter().product::<usize>() * dtype.itemsize();
        if want != bytes {
            return Err(crate::error::value_err(
                "get_global",
                format!("`{name}` has {bytes} bytes; shape {shape:?} of {dtype} needs {want}"),
            ));
        }
        let device = gpu_for(&self.inner.label)?.device();
        let _current = device.use_scoped()?;
        let stream = Stream::current_on(device)?;
        let mut host = vec![0u8; bytes];
        // SAFETY: `ptr..ptr + bytes` is the module's variable on this device, alive while
        // `loaded` holds the module; `host` has `bytes` bytes.
        unsafe { kiln_runtime::memory::download(&stream, &mut host, ptr.0)? };
        let data = kiln_ir::Data::from_le_bytes(dtype, &host);
        Ok(crate::Array::from_host(kiln_ir::HostArray::new(shape, data)?))
    }

    /// Keeps the loaded module in the slot and returns it.
    fn keep(&self, slot: &mut Option<Arc<Loaded>>, loaded: Loaded) -> Arc<Loaded> {
        let loaded = Arc::new(loaded);
        *slot = Some(loaded.clone());
        loaded
    }

    /// The kernel `name`: a name expression of the module (its lowered name is looked up), or
    /// the name of an `extern "C"` kernel. Returns the function and its entry name.
    fn function(&self, name: &str) -> Result<(Function, String)> {
        let loaded = self.loaded()?;
        let entry =
            loaded.lowered_names.iter().find(|(e, _)| e == name).map_or(name, |(_, l)| l.as_str());
        match loaded.module.function(entry) {
            Ok(f) => Ok((f, entry.to_string())),
            Err(RuntimeError::Kernel(k)) if k.stage == KernelStage::GetFunction => {
                Err(Error::UnknownKernel {
                    module: self.inner.label.clone(),
                    name: name.to_string(),
                    name_expressions: self.name_expressions().to_vec(),
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `module.get_function(name)`: the kernel `name`, a name expression given to
    /// [`RawModule::new`] (`fx3<float>`) or the name of an `extern "C"` kernel. Compiles and
    /// loads the module the first time. Errors: the CPU backend ([`Error::GpuRequired`]),
    /// compilation, a name the module does not have ([`Error::UnknownKernel`]).
    pub fn get_function(&self, name: &str) -> Result<RawKernel> {
        let (function, entry) = self.function(name)?;
        Ok(RawKernel {
            module: self.clone(),
            name: name.to_string(),
            cooperative: false,
            resolved: Arc::new(Mutex::new(Some((function, entry)))),
        })
    }
}

/// A CUDA kernel written in CUDA C++ (CuPy's `cupy.RawKernel`), compiled with NVRTC when first
/// used and launched with a grid, a block, arguments, dynamic shared memory and a stream. Cheap
/// to clone.
///
/// ```no_run
/// use kiln_frontend::{arange, zeros, DType, RawKernel};
/// let add_kernel = RawKernel::new(r#"
/// extern "C" __global__
/// void my_add(const float* x1, const float* x2, float* y) {
///     int tid = blockDim.x * blockIdx.x + threadIdx.x;
///     y[tid] = x1[tid] + x2[tid];
/// }"#, "my_add", &[]);
/// let x1 = arange(25).astype(DType::Float32).reshape(&[5, 5]);
/// let x2 = arange(25).astype(DType::Float32).reshape(&[5, 5]);
/// let mut y = zeros(&[5, 5], DType::Float32);
/// // SAFETY: my_add reads 25 floats of x1 and x2 and writes 25 of y, which have 25 each.
/// unsafe { add_kernel.try_launch(5, 5, &mut [(&x1).into(), (&x2).into(), (&mut y).into()], 0, None)? };
/// assert_eq!(y.to_vec::<f32>()[..3], [0.0, 2.0, 4.0]);
/// # Ok::<(), kiln_frontend::Error>(())
/// ```
///
/// See [the module docs](self) for arguments, in-place writes and compilation.
#[derive(Clone)]
pub struct RawKernel {
    module: RawModule,
    name: String,
    /// Launched with `cuLaunchCooperativeKernel`.
    cooperative: bool,
    /// The loaded function and its entry name, once resolved.
    resolved: Arc<Mutex<Option<(Function, String)>>>,
}

impl std::fmt::Debug for RawKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawKernel").field("name", &self.name).field("module", &self.module).finish()
    }
}

impl RawKernel {
    /// `cupy.RawKernel(code, name, options)`: the kernel `name` of CUDA C++ `code` (an
    /// `extern "C"` kernel, or a template instantiation written as `name`, which is then
    /// compiled as a name expression), compiled with NVRTC `options` when first used.
    pub fn new(code: &str, name: &str, options: &[&str]) -> RawKernel {
        // A plain C name is found as is; anything else (`fx3<float>`) must be lowered.
        let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let source = Source {
            name: format!("{name}.cu"),
            code: code.to_string(),
            options: strings(options),
            name_expressions: if plain { Vec::new() } else { vec![name.to_string()] },
        };
        let module = RawModule::with(format!("RawKernel {name}"), Code::Source(source));
        RawKernel {
            module,
            name: name.to_string(),
            cooperative: false,
            resolved: Arc::new(Mutex::new(None)),
        }
    }

    /// The kernel's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The module it is in.
    pub fn module(&self) -> &RawModule {
        &self.module
    }

    /// The CUDA C++ source, for a kernel made from source.
    pub fn code(&self) -> Option<&str> {
        self.module.code()
    }

    /// The NVRTC options.
    pub fn options(&self) -> &[String] {
        self.module.options()
    }

    /// The loaded function, compiling and loading the module the first time.
    fn resolve(&self) -> Result<(Function, String)> {
        let mut slot = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = &*slot {
            return Ok(r.clone());
        }
        let r = self.module.function(&self.name)?;
        *slot = Some(r.clone());
        Ok(r)
    }

    /// The kernel's entry point in the module: its name, or the lowered (mangled) name of a
    /// template instantiation (`_Z3fx3IfEvPT_i` for `fx3<float>`). Compiles the first time.
    pub fn entry_name(&self) -> Result<String> {
        gpu_for(&self.module.inner.label)?;
        Ok(self.resolve()?.1)
    }

    /// Launches the kernel: `kernel((grid,), (block,), args, shared_mem=shared_mem)` in CuPy,
    /// on `stream` (the current stream when `None`). `grid` and `block` are `5`, `(5,)`,
    /// `(16, 16)` or `(8, 8, 4)`. Arrays are materialised first; [`RawArg::Out`] arrays are
    /// replaced by the written buffers (see [the module docs](self)).
    ///
    /// Errors (every array left as it was): the CPU backend ([`Error::GpuRequired`]); the
    /// module's compilation or loading; arguments whose number or sizes are not the kernel's
    /// parameters' ([`Error::KernelArgCount`], [`Error::KernelArgSize`], when the driver reports
    /// them); an array's evaluation; a launch the driver refuses (block over 1024 threads,
    /// shared memory over the limit).
    ///
    /// # Safety
    /// The kernel runs arbitrary device code. Its arguments must mean what its parameters
    /// declare (an `f32` array for a `float*`); it may only write the elements of
    /// [`RawArg::Out`] arrays, within their size, with valid values of their dtype (`bool`
    /// elements 0 or 1), and must not write [`RawArg::In`] arrays.
    pub unsafe fn try_launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        args: &mut [RawArg<'_>],
        shared_mem: u32,
        stream: Option<&Stream>,
    ) -> Result<()> {
        let gpu = gpu_for(&format!("RawKernel {}", self.name))?;
        let (function, _) = self.resolve()?;
        let (g, b) = (grid.into(), block.into());
        let config = LaunchConfig {
            grid: (g.0, g.1, g.2),
            block: (b.0, b.1, b.2),
            shared_mem_bytes: shared_mem,
        };
        let label = format!("RawKernel {}", self.name);
        // SAFETY: forwarded to the caller.
        unsafe { args::launch(gpu, &label, &function, config, args, stream, self.cooperative) }
            .map_err(|e| named(e, &label))
    }

    /// The kernel launched cooperatively (CuPy's `enable_cooperative_groups=True`): every
    /// block of the grid resident at once (`cuLaunchCooperativeKernel`), so it may call
    /// `cooperative_groups::this_grid().sync()`; a grid larger than the device holds at once is
    /// an error at the launch. `false` gives the plain launch back.
    pub fn with_cooperative_groups(mut self, enable: bool) -> RawKernel {
        self.cooperative = enable;
        self
    }

    /// [`RawKernel::try_launch`], panicking on error.
    ///
    /// # Safety
    /// As [`RawKernel::try_launch`].
    #[track_caller]
    pub unsafe fn launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        args: &mut [RawArg<'_>],
        shared_mem: u32,
        stream: Option<&Stream>,
    ) {
        // SAFETY: forwarded to the caller.
        crate::unwrap(unsafe { self.try_launch(grid, block, args, shared_mem, stream) })
    }

    /// The loaded function, on the GPU backend only.
    fn function(&self) -> Result<Function> {
        gpu_for(&format!("RawKernel {}", self.name))?;
        Ok(self.resolve()?.0)
    }

    /// CuPy's `kernel.attributes`: `max_threads_per_block`, `shared_size_bytes`,
    /// `const_size_bytes`, `local_size_bytes`, `num_regs`, `ptx_version`, `binary_version`,
    /// `cache_mode_ca`, `max_dynamic_shared_size_bytes`, `preferred_shared_memory_carveout`.
    /// Compiles the first time.
    pub fn attributes(&self) -> Result<FunctionAttributes> {
        let label = format!("RawKernel {}", self.name);
        self.function()?.attributes().map_err(|e| named(Error::Runtime(e), &label))
    }

    /// The most dynamic shared memory a launch may ask for, in bytes.
    pub fn max_dynamic_shared_size_bytes(&self) -> Result<i32> {
        Ok(self.attributes()?.max_dynamic_shared_size_bytes)
    }

    /// Sets it (`kernel.max_dynamic_shared_size_bytes = n`): needed before a launch asks for
    /// more than 48 KiB. Errors: a negative size, or more than the device allows.
    pub fn set_max_dynamic_shared_size_bytes(&self, bytes: i32) -> Result<()> {
        let bytes = u32::try_from(bytes).map_err(|_| {
            crate::error::value_err(
                "max_dynamic_shared_size_bytes",
                format!("a size cannot be negative, got {bytes}"),
            )
        })?;
        Ok(self.function()?.set_max_dynamic_shared_memory(bytes)?)
    }

    /// The preferred shared memory carveout: a percentage of L1/shared memory, -1 for none.
    pub fn preferred_shared_memory_carveout(&self) -> Result<i32> {
        Ok(self.attributes()?.preferred_shared_memory_carveout)
    }

    /// Sets it (`kernel.preferred_shared_memory_carveout = n`, a hint): 0 to 100, or -1.
    /// Errors: another value.
    pub fn set_preferred_shared_memory_carveout(&self, percent: i32) -> Result<()> {
        if !(-1..=100).contains(&percent) {
            return Err(crate::error::value_err(
                "preferred_shared_memory_carveout",
                format!("expected a percentage 0..=100 or -1, got {percent}"),
            ));
        }
        Ok(self.function()?.set_preferred_shared_memory_carveout(percent)?)
    }
}

//! Modules and functions: PTX or cubin loaded with `cuModuleLoadDataEx` (the JIT's error log
//! kept for the error), cached per device by a hash of the code (CuPy caches compiled kernels
//! per device likewise); PTX linked to cubin with `cuLinkCreate/AddData/Complete` for a disk
//! cache to keep.

use std::{
    collections::hash_map::DefaultHasher,
    ffi::{c_void, CString},
    hash::{Hash, Hasher},
    sync::{Arc, OnceLock},
};

use cudarc::driver::{result, sys};

use crate::{
    device::{Device, DeviceState},
    error::{check, CudaError, KernelError, KernelStage, Result},
    memory::DevicePtr,
    RuntimeError,
};

/// Code to load.
#[derive(Clone, Copy, Debug)]
pub enum ModuleImage<'a> {
    /// PTX assembly text (JIT-compiled by the driver for the device).
    Ptx(&'a str),
    /// A cubin (ELF) or fatbin for the device's architecture, e.g. from [`link_ptx_to_cubin`].
    Cubin(&'a [u8]),
}

impl ModuleImage<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            ModuleImage::Ptx(text) => text.as_bytes(),
            ModuleImage::Cubin(bytes) => bytes,
        }
    }

    /// The cache key: kind, length and a 64-bit hash of the code.
    pub fn key(&self) -> ModuleKey {
        let mut hasher = DefaultHasher::new();
        self.bytes().hash(&mut hasher);
        ModuleKey {
            ptx: matches!(self, ModuleImage::Ptx(_)),
            len: self.bytes().len(),
            hash: hasher.finish(),
            jit_level: None,
        }
    }
}

/// Identifies a module's code in a device's cache (hits are also compared byte for byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleKey {
    ptx: bool,
    len: usize,
    hash: u64,
    /// The JIT's optimisation level a PTX module was loaded at (`None`: the driver's default).
    jit_level: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RawModule(sys::CUmodule);
// SAFETY: an opaque handle usable from any thread.
unsafe impl Send for RawModule {}
unsafe impl Sync for RawModule {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawFunction(pub sys::CUfunction);
// SAFETY: an opaque handle usable from any thread.
unsafe impl Send for RawFunction {}
unsafe impl Sync for RawFunction {}

/// A loaded module (`CUmodule`); unloaded when the last `Arc` (cache included) goes.
pub struct Module {
    raw: RawModule,
    pub(crate) device: &'static DeviceState,
    name: String,
    code: Box<[u8]>,
    /// The driver's JIT information log (empty for a cubin).
    info_log: String,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("name", &self.name).field("device", &self.device.id).finish()
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: loaded by us, unloaded once; no Function outlives its Arc<Module>.
            let _ = unsafe { result::module::unload(self.raw.0) };
        }
    }
}

/// Size of the JIT/linker log buffers.
const LOG_SIZE: usize = 64 * 1024;

/// Log buffers passed to the driver as JIT options.
pub(crate) struct JitLogs {
    error: Vec<u8>,
    info: Vec<u8>,
    pub(crate) options: [sys::CUjit_option; 4],
    pub(crate) values: [*mut c_void; 4],
}

impl JitLogs {
    pub(crate) fn new() -> Box<JitLogs> {
        let mut logs = Box::new(JitLogs {
            error: vec![0; LOG_SIZE],
            info: vec![0; LOG_SIZE],
            options: [
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            ],
            values: [std::ptr::null_mut(); 4],
        });
        logs.values = [
            logs.error.as_mut_ptr().cast(),
            LOG_SIZE as *mut c_void,
            logs.info.as_mut_ptr().cast(),
            LOG_SIZE as *mut c_void,
        ];
        logs
    }

    fn text(buffer: &[u8]) -> String {
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        String::from_utf8_lossy(&buffer[..end]).trim().to_owned()
    }

    /// The error log, then the information log.
    pub(crate) fn all(&self) -> String {
        let (error, info) = (Self::text(&self.error), Self::text(&self.info));
        match (error.is_empty(), info.is_empty()) {
            (false, false) => format!("{error}\n{info}"),
            (false, true) => error,
            _ => info,
        }
    }
}

fn nul_terminated(name: &str, ptx: &str) -> Result<CString> {
    CString::new(ptx).map_err(|_| {
        RuntimeError::InvalidArgument(format!("the PTX of `{name}` contains a NUL byte"))
    })
}

/// Loads an image without the cache; PTX at the JIT's optimisation level `jit_level`
/// (`CU_JIT_OPTIMIZATION_LEVEL`; `None`: the driver's default, 4).
fn load(
    state: &'static DeviceState,
    name: &str,
    image: ModuleImage<'_>,
    jit_level: Option<u32>,
) -> Result<Module> {
    // The driver reads a NUL-terminated PTX string, or a cubin; copy a cubin to 8-byte-aligned
    // memory (ELF headers are read in place).
    let ptx;
    let aligned: Vec<u64>;
    let data: *const c_void = match image {
        ModuleImage::Ptx(text) => {
            ptx = nul_terminated(name, text)?;
            ptx.as_ptr().cast()
        }
        ModuleImage::Cubin(bytes) => {
            // The driver reads at the offsets the image gives, past its end if they lie.
            crate::image_check::check(bytes).map_err(|why| {
                RuntimeError::Kernel(Box::new(KernelError {
                    kernel: name.to_owned(),
                    stage: KernelStage::Load,
                    cuda: None,
                    log: format!("not a loadable cubin or fatbin: {why}"),
                    dump_path: None,
                }))
            })?;
            let mut words = vec![0u64; bytes.len().div_ceil(8)];
            // SAFETY: `words` holds at least `bytes.len()` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    words.as_mut_ptr().cast(),
                    bytes.len(),
                )
            };
            aligned = words;
            aligned.as_ptr().cast()
        }
    };
    let _bound = state.bind()?;
    let logs = JitLogs::new();
    let mut options = logs.options.to_vec();
    let mut values = logs.values.to_vec();
    if let (ModuleImage::Ptx(_), Some(level)) = (image, jit_level) {
        options.push(sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL);
        // The driver reads an unsigned int option's value from the pointer's bits.
        values.push(level.min(4) as usize as *mut c_void);
    }
    let mut raw = std::ptr::null_mut();
    // SAFETY: a valid image; the option arrays and log buffers outlive the call.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut raw,
            data,
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if let Err(e) = status.result() {
        return Err(RuntimeError::Kernel(Box::new(KernelError {
            kernel: name.to_owned(),
            stage: KernelStage::Load,
            cuda: Some(CudaError::from_driver("cuModuleLoadDataEx", e)),
            log: logs.all(),
            dump_path: None,
        })));
    }
    Ok(Module {
        raw: RawModule(raw),
        device: state,
        name: name.to_owned(),
        code: image.bytes().into(),
        info_log: JitLogs::text(&logs.info),
    })
}

impl Device {
    /// Loads PTX or a cubin on the device, or returns the module already loaded from the same
    /// code (cached per device by a hash of the code, compared byte for byte). `name` names the
    /// module in errors.
    pub fn load_module(&self, name: &str, image: ModuleImage<'_>) -> Result<Arc<Module>> {
        self.load_module_jit(name, image, None)
    }

    /// [`Device::load_module`], PTX compiled by the driver's JIT at optimisation level
    /// `jit_level` (`CU_JIT_OPTIMIZATION_LEVEL`, 0 to 4, above 4 read as 4; `None`: the
    /// driver's default, 4), which is part of the cache's key; a cubin ignores it. Lower levels
    /// compile faster (kiln's fast tier).
    pub fn load_module_jit(
        &self,
        name: &str,
        image: ModuleImage<'_>,
        jit_level: Option<u32>,
    ) -> Result<Arc<Module>> {
        let state = self.state()?;
        let jit_level = jit_level.filter(|_| matches!(image, ModuleImage::Ptx(_)));
        let key = ModuleKey { jit_level, ..image.key() };
        let lock = || state.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(module) = lock().get(&key) {
            if *module.code == *image.bytes() {
                crate::host_trace::point("module: in the device's cache");
                return Ok(module.clone());
            }
            // A hash collision: load without caching.
            return Ok(Arc::new(load(state, name, image, jit_level)?));
        }
        crate::host_trace::point("module: looked up");
        // Loaded without the cache's lock: other threads load theirs meanwhile (a JIT takes
        // tens of milliseconds). Where one loaded the same code first, its module is kept.
        let module = Arc::new(load(state, name, image, jit_level)?);
        crate::host_trace::point(match image {
            ModuleImage::Ptx(_) => "module: PTX loaded (the driver's JIT)",
            _ => "module: cubin loaded",
        });
        let mut cache = lock();
        match cache.get(&key) {
            Some(first) if *first.code == *image.bytes() => Ok(first.clone()),
            _ => {
                cache.insert(key, module.clone());
                Ok(module)
            }
        }
    }

    /// Loads a module without the cache (a new `CUmodule` each time).
    pub fn load_module_uncached(&self, name: &str, image: ModuleImage<'_>) -> Result<Arc<Module>> {
        Ok(Arc::new(load(self.state()?, name, image, None)?))
    }

    /// Number of modules in the device's cache.
    pub fn cached_modules(&self) -> Result<usize> {
        let state = self.state()?;
        Ok(state.modules.lock().unwrap_or_else(|p| p.into_inner()).len())
    }

    /// Empties the device's module cache (modules still referenced stay loaded until dropped).
    pub fn clear_module_cache(&self) -> Result<()> {
        let state = self.state()?;
        state.modules.lock().unwrap_or_else(|p| p.into_inner()).clear();
        Ok(())
    }
}

impl Module {
    /// The name given at load.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device.device()
    }

    /// The driver JIT's information log (ptxas' messages for PTX; empty for a cubin).
    pub fn info_log(&self) -> &str {
        &self.info_log
    }

    /// The kernel (`.entry`) named `name`.
    pub fn function(self: &Arc<Self>, name: &str) -> Result<Function> {
        let error = |cuda: Option<CudaError>, log: String| {
            RuntimeError::Kernel(Box::new(KernelError {
                kernel: name.to_owned(),
                stage: KernelStage::GetFunction,
                cuda,
                log,
                dump_path: None,
            }))
        };
        let cname = CString::new(name)
            .map_err(|_| error(None, "the kernel name contains a NUL byte".into()))?;
        let _bound = self.device.bind()?;
        // SAFETY: a loaded module.
        let raw = unsafe { result::module::get_function(self.raw.0, cname) }.map_err(|e| {
            error(
                Some(CudaError::from_driver("cuModuleGetFunction", e)),
                format!("no kernel `{name}` in module `{}`", self.name),
            )
        })?;
        Ok(Function {
            raw: RawFunction(raw),
            module: self.clone(),
            name: Arc::from(name),
            params: Arc::new(OnceLock::new()),
            dynamic_shared: Arc::new(std::sync::atomic::AtomicU32::new(0)),
            carveout: Arc::new(std::sync::atomic::AtomicI32::new(CARVEOUT_UNSET)),
            resident: Arc::new(OnceLock::new()),
        })
    }

    /// The address and size of a global (`.global`/`.const`) variable of the module.
    pub fn global(&self, name: &str) -> Result<(DevicePtr, usize)> {
        let cname = CString::new(name)
            .map_err(|_| RuntimeError::InvalidArgument(format!("bad global name `{name}`")))?;
        let _bound = self.device.bind()?;
        // SAFETY: a loaded module.
        let (ptr, size) =
            check("cuModuleGetGlobal", unsafe { result::module::get_global(self.raw.0, cname) })?;
        Ok((DevicePtr(ptr), size))
    }
}

/// A kernel's attributes (`cuFuncGetAttribute`), CuPy's `RawKernel.attributes` dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionAttributes {
    /// The most threads a block may have (registers and shared memory limit it below 1024).
    pub max_threads_per_block: i32,
    /// Static shared memory per block, in bytes.
    pub shared_size_bytes: i32,
    /// Constant memory the kernel uses, in bytes.
    pub const_size_bytes: i32,
    /// Local memory per thread (spills, local arrays), in bytes.
    pub local_size_bytes: i32,
    /// Registers per thread.
    pub num_regs: i32,
    /// The PTX ISA's architecture it was compiled from (`90` for sm_90).
    pub ptx_version: i32,
    /// The binary's architecture (`90`).
    pub binary_version: i32,
    /// Whether global loads are cached in L1 (`-Xptxas -dlcm=ca`): 1 or 0.
    pub cache_mode_ca: i32,
    /// The most dynamic shared memory a launch may ask for, in bytes (settable).
    pub max_dynamic_shared_size_bytes: i32,
    /// The preferred shared memory carveout in percent, -1 for none (settable).
    pub preferred_shared_memory_carveout: i32,
}

/// [`Function`]'s carveout before one is set (not a percentage, nor -1).
const CARVEOUT_UNSET: i32 = i32::MIN;

/// A kernel of a loaded module (keeps the module loaded). Cheap to clone.
#[derive(Clone)]
pub struct Function {
    pub(crate) raw: RawFunction,
    pub(crate) module: Arc<Module>,
    pub(crate) name: Arc<str>,
    /// Parameter sizes from `cuFuncGetParamInfo`, `None` if the driver cannot tell.
    pub(crate) params: Arc<OnceLock<Option<Vec<usize>>>>,
    /// The dynamic shared memory this kernel was allowed ([`Function::set_max_dynamic_shared_memory`]),
    /// so that a launch sets it once.
    pub(crate) dynamic_shared: Arc<std::sync::atomic::AtomicU32>,
    /// The shared-memory carveout this kernel was given
    /// ([`Function::set_preferred_shared_memory_carveout`]; [`CARVEOUT_UNSET`] before), so that
    /// a launch sets it once.
    pub(crate) carveout: Arc<std::sync::atomic::AtomicI32>,
    /// The first [`Function::max_active_blocks`] answer: (threads, dynamic shared bytes, blocks).
    pub(crate) resident: Arc<OnceLock<(usize, usize, usize)>>,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .field("module", &self.module.name)
            .finish()
    }
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its module.
    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.module.device()
    }

    /// The raw `CUfunction`.
    pub fn raw(&self) -> sys::CUfunction {
        self.raw.0
    }

    /// A function attribute (`cuFuncGetAttribute`).
    pub fn attribute(&self, attribute: sys::CUfunction_attribute) -> Result<i32> {
        let _bound = self.module.device.bind()?;
        // SAFETY: a live function.
        check("cuFuncGetAttribute", unsafe {
            result::function::get_function_attribute(self.raw.0, attribute)
        })
    }

    /// The most threads a block of this kernel may have (registers limit it below 1024).
    pub fn max_threads_per_block(&self) -> Result<u32> {
        self.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map(|n| n as u32)
    }

    /// Registers per thread.
    pub fn num_regs(&self) -> Result<u32> {
        self.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS).map(|n| n as u32)
    }

    /// Static shared memory per block, in bytes.
    pub fn shared_size_bytes(&self) -> Result<u32> {
        self.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map(|n| n as u32)
    }

    /// Local memory per thread (spills), in bytes.
    pub fn local_size_bytes(&self) -> Result<u32> {
        self.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
            .map(|n| n as u32)
    }

    /// Allows this kernel more than 48 KiB of dynamic shared memory.
    /// Setting the size this kernel already has costs no driver call.
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.dynamic_shared.load(Ordering::Relaxed) == bytes {
            return Ok(());
        }
        let _bound = self.module.device.bind()?;
        // SAFETY: a live function.
        check("cuFuncSetAttribute", unsafe {
            result::function::set_function_attribute(
                self.raw.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        })?;
        self.dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Every attribute CuPy's `RawKernel.attributes` gives (`cuFuncGetAttribute`).
    pub fn attributes(&self) -> Result<FunctionAttributes> {
        use sys::CUfunction_attribute as A;
        Ok(FunctionAttributes {
            max_threads_per_block: self.attribute(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            shared_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            num_regs: self.attribute(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            ptx_version: self.attribute(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: self.attribute(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
            cache_mode_ca: self.attribute(A::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA)?,
            max_dynamic_shared_size_bytes: self
                .attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            preferred_shared_memory_carveout: self
                .attribute(A::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)?,
        })
    }

    /// Sets the preferred shared memory carveout (`cuFuncSetAttribute`): a percentage of the
    /// L1/shared memory to give to shared memory, or -1 for no preference (a hint).
    /// Setting the carveout this kernel already has costs no driver call.
    pub fn set_preferred_shared_memory_carveout(&self, percent: i32) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.carveout.load(Ordering::Relaxed) == percent {
            return Ok(());
        }
        let _bound = self.module.device.bind()?;
        // SAFETY: a live function.
        check("cuFuncSetAttribute", unsafe {
            result::function::set_function_attribute(
                self.raw.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                percent,
            )
        })?;
        self.carveout.store(percent, Ordering::Relaxed);
        Ok(())
    }

    /// Blocks of `threads` threads with `dynamic_shared_bytes` of dynamic shared memory a
    /// multiprocessor holds at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`): what a
    /// cooperative launch may have per multiprocessor.
    /// The first answer is kept: asking again with the same sizes costs no driver call.
    pub fn max_active_blocks(&self, threads: usize, dynamic_shared_bytes: usize) -> Result<usize> {
        if let Some(&(t, s, n)) = self.resident.get() {
            if (t, s) == (threads, dynamic_shared_bytes) {
                return Ok(n);
            }
        }
        let _bound = self.module.device.bind()?;
        // SAFETY: a live function.
        let n = check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                self.raw.0,
                threads as std::ffi::c_int,
                dynamic_shared_bytes,
            )
        })?;
        let n = n.max(0) as usize;
        let _ = self.resident.set((threads, dynamic_shared_bytes, n));
        Ok(n)
    }

    /// `(min_grid_size, block_size)` from `cuOccupancyMaxPotentialBlockSize`: the block size
    /// giving the best occupancy, and the grid size that fills the device with it.
    pub fn max_potential_block_size(&self, dynamic_shared_bytes: usize) -> Result<(u32, u32)> {
        let _bound = self.module.device.bind()?;
        // SAFETY: a live function; no per-block-size callback.
        let (grid, block) = check("cuOccupancyMaxPotentialBlockSize", unsafe {
            result::occupancy::max_potential_block_size(self.raw.0, None, dynamic_shared_bytes, 0)
        })?;
        Ok((grid.max(1) as u32, block.max(1) as u32))
    }

    /// Sizes of the kernel's parameters (`cuFuncGetParamInfo`), `None` if the driver cannot
    /// tell.
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.params
            .get_or_init(|| {
                // cudarc panics if the driver lacks the symbol (before CUDA 12.4).
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.query_params()))
                    .ok()
                    .flatten()
            })
            .as_deref()
    }

    fn query_params(&self) -> Option<Vec<usize>> {
        let _bound = self.module.device.bind().ok()?;
        let mut sizes = Vec::new();
        while sizes.len() <= 4096 {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: a live function, out-pointers to locals.
            let status =
                unsafe { sys::cuFuncGetParamInfo(self.raw.0, sizes.len(), &mut offset, &mut size) };
            match status {
                sys::CUresult::CUDA_SUCCESS => sizes.push(size),
                // Past the last parameter.
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
                _ => return None,
            }
        }
        None
    }
}

/// Links PTX into a cubin for `device`'s architecture (`cuLinkCreate`, `cuLinkAddData`,
/// `cuLinkComplete`), for a disk cache to keep: loading the cubin skips the driver's JIT.
/// `name` names the code in errors and in the linker's log.
pub fn link_ptx_to_cubin(device: Device, name: &str, ptx: &str) -> Result<Vec<u8>> {
    crate::link::link_relocatable(device, name, ModuleImage::Ptx(ptx), &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_code_apart() {
        let a = ModuleImage::Ptx(".version 7.0\n.target sm_70\n");
        let b = ModuleImage::Ptx(".version 7.0\n.target sm_80\n");
        assert_eq!(a.key(), ModuleImage::Ptx(".version 7.0\n.target sm_70\n").key());
        assert_ne!(a.key(), b.key());
        // The same bytes as PTX and as a cubin are different modules.
        assert_ne!(a.key(), ModuleImage::Cubin(a.bytes()).key());
    }

    #[test]
    fn jit_log_text() {
        let mut buffer = b"ptxas error: bad\n".to_vec();
        buffer.extend([0, b'x', b'y']);
        assert_eq!(JitLogs::text(&buffer), "ptxas error: bad");
        assert_eq!(JitLogs::text(&[0; 8]), "");
        let mut logs = JitLogs::new();
        logs.info[..4].copy_from_slice(b"info");
        assert_eq!(logs.all(), "info");
        logs.error[..3].copy_from_slice(b"err");
        assert_eq!(logs.all(), "err\ninfo");
    }

    #[test]
    fn nul_in_ptx_is_an_error() {
        assert!(matches!(nul_terminated("k", "a\0b"), Err(RuntimeError::InvalidArgument(_))));
    }

    #[test]
    fn modules_need_a_driver() {
        if crate::cuda_available() {
            return;
        }
        assert!(Device::new(0).and_then(|d| link_ptx_to_cubin(d, "k", "")).is_err());
    }
}

//! Kernel launches: [`LaunchConfig`] (grid, block, dynamic shared memory), 1-D configurations
//! from an element count and the kernel's limits, kernel arguments, and
//! [`Function::launch`] on the current stream (or [`Function::launch_on`] a given one). Every
//! CUDA result is checked; a failure is a [`KernelError`] naming the kernel.

use std::ffi::c_void;

use crate::{
    error::{CudaError, KernelError, KernelStage, Result},
    memory::{DeviceBuffer, DeviceCopy},
    module::Function,
    stream::Stream,
    RuntimeError,
};

/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// CUDA's limits on launch dimensions.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Largest `grid.x`.
pub const MAX_GRID_X: u32 = i32::MAX as u32;
/// Largest `grid.y` and `grid.z`.
pub const MAX_GRID_YZ: u32 = 65535;

/// Grid and block dimensions and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads in a block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32) -> Self {
        LaunchConfig { grid: (grid, 1, 1), block: (block, 1, 1), shared_mem_bytes: 0 }
    }

    /// The same with `bytes` of dynamic shared memory.
    pub fn with_shared_mem(self, bytes: u32) -> Self {
        LaunchConfig { shared_mem_bytes: bytes, ..self }
    }

    /// One thread per element for `n` elements: blocks of `block_limit` threads at most (the
    /// kernel's best or largest block), fewer (a multiple of 32) when `n` is small.
    /// `n == 0` gives an empty grid, which [`Function::launch`] skips.
    pub fn for_elements(n: usize, block_limit: u32) -> Result<Self> {
        let block = block_for(n, block_limit);
        let grid = n.div_ceil(block as usize);
        if grid > MAX_GRID_X as usize {
            return Err(RuntimeError::InvalidArgument(format!(
                "{n} elements need {grid} blocks of {block}: more than a grid holds \
                 (use a grid-stride kernel)"
            )));
        }
        Ok(LaunchConfig::linear(grid as u32, block))
    }

    /// A grid-stride launch for `n` elements: blocks of at most `block_limit` threads, at most
    /// `max_blocks` blocks (e.g. what fills the device), fewer if `n` needs fewer.
    pub fn grid_stride(n: usize, block_limit: u32, max_blocks: u32) -> Self {
        let block = block_for(n, block_limit);
        let needed = n.div_ceil(block as usize);
        let grid = needed.min(max_blocks.clamp(1, MAX_GRID_X) as usize);
        LaunchConfig::linear(grid as u32, block)
    }

    /// Total threads.
    pub fn threads(&self) -> u64 {
        let (g, b) = (self.grid, self.block);
        [g.0, g.1, g.2, b.0, b.1, b.2].iter().map(|&d| d as u64).product()
    }

    /// Whether the grid is empty (some grid dimension is 0): nothing to launch.
    pub fn is_empty(&self) -> bool {
        self.grid.0 == 0 || self.grid.1 == 0 || self.grid.2 == 0
    }

    /// Checks CUDA's limits (block dimensions, at most 1024 threads a block, grid dimensions).
    pub fn validate(&self) -> std::result::Result<(), String> {
        let (bx, by, bz) = self.block;
        if bx == 0 || by == 0 || bz == 0 {
            return Err(format!("block {:?} has a zero dimension", self.block));
        }
        if bz > 64 || (bx as u64) * (by as u64) * (bz as u64) > MAX_THREADS_PER_BLOCK as u64 {
            return Err(format!(
                "block {:?} exceeds CUDA's limits (1024 threads, z at most 64)",
                self.block
            ));
        }
        let (gx, gy, gz) = self.grid;
        if gx > MAX_GRID_X || gy > MAX_GRID_YZ || gz > MAX_GRID_YZ {
            return Err(format!("grid {:?} exceeds CUDA's limits", self.grid));
        }
        Ok(())
    }
}

/// The block size for `n` elements: `limit` rounded down to a warp multiple (at least one
/// warp), or fewer warps when `n` is smaller.
pub fn block_for(n: usize, limit: u32) -> u32 {
    let limit = (limit.min(MAX_THREADS_PER_BLOCK) / WARP_SIZE * WARP_SIZE).max(WARP_SIZE);
    let needed = n.div_ceil(WARP_SIZE as usize).max(1) * WARP_SIZE as usize;
    limit.min(needed.min(MAX_THREADS_PER_BLOCK as usize) as u32)
}

/// A value passed to a kernel.
///
/// # Safety
/// `as_kernel_param` must point to `param_size()` bytes that stay valid while the launch call
/// runs (the driver copies them).
pub unsafe trait KernelArg {
    /// A pointer to the value.
    fn as_kernel_param(&self) -> *mut c_void;
    /// Its size in bytes.
    fn param_size(&self) -> usize;
    /// The device of the memory it refers to, if any (checked against the kernel's).
    fn device_id(&self) -> Option<usize> {
        None
    }
}

// SAFETY: a DeviceCopy value is its own bytes.
unsafe impl<T: DeviceCopy> KernelArg for T {
    fn as_kernel_param(&self) -> *mut c_void {
        self as *const T as *mut c_void
    }
    fn param_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

// SAFETY: the buffer's address field is a u64 that lives as long as the buffer.
unsafe impl KernelArg for DeviceBuffer {
    fn as_kernel_param(&self) -> *mut c_void {
        self.ptr_field() as *const u64 as *mut c_void
    }
    fn param_size(&self) -> usize {
        std::mem::size_of::<u64>()
    }
    fn device_id(&self) -> Option<usize> {
        Some(self.device().id())
    }
}

impl Function {
    /// A one-thread-per-element launch for `n` elements with the block size that gives this
    /// kernel the best occupancy (`cuOccupancyMaxPotentialBlockSize`, bounded by
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub fn config_1d(&self, n: usize) -> Result<LaunchConfig> {
        let (_, block) = self.max_potential_block_size(0)?;
        let block = block.min(self.max_threads_per_block()?);
        LaunchConfig::for_elements(n, block)
    }

    /// A grid-stride launch for `n` elements: the occupancy's best block size, and no more
    /// blocks than fill the device.
    pub fn config_1d_grid_stride(&self, n: usize) -> Result<LaunchConfig> {
        let (min_grid, block) = self.max_potential_block_size(0)?;
        let block = block.min(self.max_threads_per_block()?);
        Ok(LaunchConfig::grid_stride(n, block, min_grid))
    }

    fn error(&self, cuda: Option<CudaError>, log: String) -> RuntimeError {
        RuntimeError::Kernel(Box::new(KernelError {
            kernel: self.name.to_string(),
            stage: KernelStage::Launch,
            cuda,
            log,
            dump_path: None,
        }))
    }

    /// Launches the kernel on the current stream of its device.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, size and meaning (their
    /// number and sizes are checked when the driver can tell), and the kernel must only touch
    /// memory it may: launching runs arbitrary device code.
    pub unsafe fn launch(&self, config: LaunchConfig, args: &[&dyn KernelArg]) -> Result<()> {
        let stream = Stream::current_on(self.device())?;
        // SAFETY: forwarded to the caller.
        unsafe { self.launch_on(&stream, config, args) }
    }

    /// Launches the kernel on `stream` (of the kernel's device). An empty grid launches nothing.
    ///
    /// # Safety
    /// As [`Function::launch`].
    pub unsafe fn launch_on(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.launch_kind(stream, config, args, false) }
    }

    /// A cooperative launch on `stream` (`cuLaunchCooperativeKernel`; CuPy's
    /// `enable_cooperative_groups=True`): every block of the grid is resident at once, so the
    /// kernel may synchronise the whole grid (`cooperative_groups::this_grid().sync()`).
    /// Errors: a grid larger than the device can hold at once
    /// (`CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`), a device without cooperative launches, and
    /// [`Function::launch_on`]'s.
    ///
    /// # Safety
    /// As [`Function::launch`].
    pub unsafe fn launch_cooperative_on(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.launch_kind(stream, config, args, true) }
    }

    /// A plain or cooperative launch.
    ///
    /// # Safety
    /// As [`Function::launch`].
    unsafe fn launch_kind(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[&dyn KernelArg],
        cooperative: bool,
    ) -> Result<()> {
        let device = self.module.device.id;
        if stream.state().id != device {
            return Err(self.error(
                None,
                format!(
                    "the kernel is loaded on cuda:{device} but the stream is of cuda:{}",
                    stream.state().id
                ),
            ));
        }
        if let Some((i, other)) = args
            .iter()
            .enumerate()
            .find_map(|(i, a)| a.device_id().filter(|&d| d != device).map(|d| (i, d)))
        {
            return Err(self.error(
                None,
                format!("argument {i} is memory of cuda:{other}, the kernel runs on cuda:{device}"),
            ));
        }
        config.validate().map_err(|why| self.error(None, why))?;
        if let Some(sizes) = self.param_sizes() {
            let given: Vec<usize> = args.iter().map(|a| a.param_size()).collect();
            if given != sizes {
                return Err(self.error(
                    None,
                    format!("the kernel takes parameters of sizes {sizes:?}, given {given:?}"),
                ));
            }
        }
        if config.is_empty() {
            return Ok(());
        }
        // A launch list being recorded on this stream keeps the launch (`crate::replay`).
        if crate::replay::record_launch(stream, self, config, args, cooperative) {
            return Ok(());
        }
        let mut params: Vec<*mut c_void> = args.iter().map(|a| a.as_kernel_param()).collect();
        let _bound = self.module.device.bind()?;
        // SAFETY: `params` points at argument values that outlive the call (the driver copies
        // them); the caller vouches for their meaning.
        let (call, status) = unsafe { self.issue(stream, config, &mut params, cooperative) };
        status.result().map_err(|e| {
            self.error(Some(CudaError::from_driver(call, e)), format!("configuration {config:?}"))
        })
    }

    /// Issues the launch on `stream` with the driver: `cuLaunchCooperativeKernel` or
    /// `cuLaunchKernel`, the stream's last kernel noted first. Returns the call's name and its
    /// status. The one place both calls are made ([`Function::launch_on`], and a launch list's
    /// plain launches in [`crate::replay`]).
    ///
    /// # Safety
    /// The function's context is bound on this thread and `stream` is of its device; `params`
    /// points at one value per kernel parameter, live for the call, meaning what the kernel
    /// expects (as [`Function::launch`]).
    pub(crate) unsafe fn issue(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut c_void],
        cooperative: bool,
    ) -> (&'static str, cudarc::driver::sys::CUresult) {
        use cudarc::driver::sys::{cuLaunchCooperativeKernel, cuLaunchKernel};
        stream.set_last_kernel(&self.name);
        let (g, b) = (config.grid, config.block);
        let (f, sh, st, p) =
            (self.raw.0, config.shared_mem_bytes, stream.raw(), params.as_mut_ptr());
        if cooperative {
            // SAFETY: a live function and stream, parameters as the caller vouches.
            let r =
                unsafe { cuLaunchCooperativeKernel(f, g.0, g.1, g.2, b.0, b.1, b.2, sh, st, p) };
            ("cuLaunchCooperativeKernel", r)
        } else {
            let null = std::ptr::null_mut();
            // SAFETY: as above.
            let r = unsafe { cuLaunchKernel(f, g.0, g.1, g.2, b.0, b.1, b.2, sh, st, p, null) };
            ("cuLaunchKernel", r)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes() {
        assert_eq!(block_for(0, 1024), 32);
        assert_eq!(block_for(1, 1024), 32);
        assert_eq!(block_for(33, 1024), 64);
        assert_eq!(block_for(1 << 20, 768), 768);
        assert_eq!(block_for(1 << 20, 700), 672, "rounded down to a warp multiple");
        assert_eq!(block_for(1 << 20, 4096), 1024);
        assert_eq!(block_for(1 << 20, 0), 32);
    }

    #[test]
    fn one_thread_per_element() {
        let c = LaunchConfig::for_elements(1_000_003, 256).unwrap();
        assert_eq!(c, LaunchConfig::linear(3907, 256));
        assert!(c.threads() >= 1_000_003);
        assert!(c.validate().is_ok());
        let empty = LaunchConfig::for_elements(0, 256).unwrap();
        assert!(empty.is_empty());
        assert_eq!(LaunchConfig::for_elements(5, 256).unwrap(), LaunchConfig::linear(1, 32));
        assert!(LaunchConfig::for_elements(usize::MAX / 2, 1024).is_err());
    }

    #[test]
    fn grid_stride() {
        assert_eq!(LaunchConfig::grid_stride(1 << 30, 256, 528), LaunchConfig::linear(528, 256));
        assert_eq!(LaunchConfig::grid_stride(100, 256, 528), LaunchConfig::linear(1, 128));
        assert_eq!(LaunchConfig::grid_stride(0, 256, 528).grid.0, 0);
    }

    #[test]
    fn validation() {
        assert!(LaunchConfig::linear(1, 1025).validate().is_err());
        assert!(LaunchConfig::linear(1, 0).validate().is_err());
        let mut c = LaunchConfig::linear(1, 32);
        c.block = (8, 8, 16);
        assert!(c.validate().is_ok());
        c.block = (1, 1, 65);
        assert!(c.validate().is_err());
        c = LaunchConfig::linear(1, 32);
        c.grid = (1, 65536, 1);
        assert!(c.validate().is_err());
        assert_eq!(LaunchConfig::linear(2, 64).with_shared_mem(1024).shared_mem_bytes, 1024);
    }

    #[test]
    fn kernel_args() {
        let x = 3.5f32;
        let n = 7u32;
        let p = crate::memory::DevicePtr(0xdead_beef);
        let args: [&dyn KernelArg; 3] = [&x, &n, &p];
        assert_eq!(args.map(|a| a.param_size()), [4, 4, 8]);
        // SAFETY: reading back the pointed-to values.
        unsafe {
            assert_eq!(*(args[0].as_kernel_param() as *const f32), 3.5);
            assert_eq!(*(args[2].as_kernel_param() as *const u64), 0xdead_beef);
        }
        assert_eq!(args[0].device_id(), None);
    }
}

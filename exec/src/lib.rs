//! kiln's executor: the one place where a plan meets memory.
//!
//! The compiler makes a plan ([`Compiled`]: regions and their schedule) and knows no device;
//! the runtime manages devices and knows no plan. This crate runs plans:
//! - [`walk`]: the one schedule walk, generic over the buffers of a machine ([`Walker`]);
//! - [`cpu`]: on the host CPU (compiled host code, host libraries, the reference evaluator);
//! - [`cuda`]: on a CUDA device (PTX kernels from the disk kernel cache or compiled, cuBLAS,
//!   cuFFT, cuRAND, streams);
//! - [`run`]: a plan on either, what materialisation calls.

pub mod cpu;
pub mod cuda;
mod error;
mod walk;

use std::sync::Arc;

use kiln_compiler::codegen::gpu::GpuKernel;
use kiln_compiler::codegen::{CompiledRegion, Kernel, Tier};
use kiln_compiler::pipeline::Compiled;
use kiln_ir::{Attrs, DType, Graph, HostArray};

pub use error::ExecError;
pub use walk::{walk, Walker};

/// Where [`run`] runs a plan, and the plan's inputs there (`input {index=k}` is the `k`-th).
pub enum Inputs<'a> {
    /// On the host, each region as [`cpu::HostRun`] says; `cached`: the plan lives in the plan
    /// cache (its compiled regions may be kept by its address).
    Host(&'a [&'a HostArray], cpu::HostRun, bool),
    /// On a CUDA device; `cached`: the plan lives in the plan cache (its prepared kernels may
    /// be kept by its address).
    Cuda(&'static cuda::Gpu, &'a [Arc<cuda::DeviceArray>], bool),
}

/// A plan's outputs, where [`run`] computed them.
pub enum Outputs {
    Host(Vec<HostArray>),
    Cuda(Vec<Arc<cuda::DeviceArray>>),
}

/// Runs a plan on the machine its inputs are on, and returns the graph's outputs there.
///
/// Errors: inputs that do not fit the schedule, a compilation, library or device failure, an
/// evaluation error of a region the evaluator runs.
pub fn run(plan: &Arc<Compiled>, inputs: Inputs<'_>) -> Result<Outputs, ExecError> {
    match inputs {
        Inputs::Host(inputs, how, cached) => {
            let outs = if cached {
                cpu::run_plan_prepared(plan, inputs, how)?
            } else {
                cpu::run_plan(plan, inputs, how)?
            };
            Ok(Outputs::Host(outs))
        }
        Inputs::Cuda(gpu, inputs, cached) => run_cuda(plan, gpu, cached, || Ok(inputs.to_vec())),
    }
}

/// [`run`] on a CUDA device, its inputs made by `inputs` (copied to the device, say) once the
/// plan's new kernels have begun to compile ([`cuda::Ahead`]) and the libraries it calls to
/// load (`cuda::preload_libraries`): a process's first copies wait for the device's context
/// (made by them, or by the interpreter's warm-up thread), and its compiles and library loads
/// run meanwhile.
///
/// Errors: as [`run`], and `inputs`' own.
pub fn run_cuda<E: From<ExecError>>(
    plan: &Arc<Compiled>,
    gpu: &'static cuda::Gpu,
    cached: bool,
    inputs: impl FnOnce() -> Result<Vec<Arc<cuda::DeviceArray>>, E>,
) -> Result<Outputs, E> {
    cuda::preload_libraries(plan, gpu.disk());
    let ahead = cuda::Ahead::start(gpu, plan, cached);
    let inputs = inputs()?;
    let outputs = cuda::run_schedule(gpu, plan, cached, &inputs, ahead).map_err(E::from)?;
    Ok(Outputs::Cuda(outputs))
}

/// How a region of the last schedule ran: the code the executor used, for dumps.
#[derive(Clone)]
pub enum RanCode {
    /// A host kernel (its MLIR, shape and current tier in [`CompiledRegion`]).
    Host(Arc<CompiledRegion>),
    /// A GPU kernel and its loaded function (its MLIR, shape, PTX and tier in [`GpuKernel`]).
    Gpu(Arc<(GpuKernel, kiln_runtime::Function)>),
    /// kiln's bytecode interpreter on the GPU, running this program while the region's code
    /// compiles (`kiln_exec::cuda::interp`).
    GpuInterpreted(Arc<kiln_compiler::bytecode::Bytecode>),
    /// A library call (cuBLAS, cuFFT, or the host's GEMM and FFT).
    Library,
    /// The host's radix sort.
    HostSort,
    /// The GPU's radix sort of whole lines (`cuda/radix_sort.cu`).
    GpuRadixSort,
    /// The GPU's selection of sorted positions (`cuda/radix_select.cu`).
    GpuRadixSelect,
    /// The GPU's block radix sort of short lines, a block each (`cuda/radix_rows.cu`).
    GpuRowSort,
    /// The reference evaluator (code generation does not support the region yet).
    Evaluator,
}

impl RanCode {
    /// The kernel, where one ran.
    pub fn kernel(&self) -> Option<&Kernel> {
        match self {
            RanCode::Host(c) => Some(&c.kernel),
            RanCode::Gpu(g) => Some(&g.0.kernel),
            RanCode::GpuInterpreted(_)
            | RanCode::Library
            | RanCode::HostSort
            | RanCode::GpuRadixSort
            | RanCode::GpuRadixSelect
            | RanCode::GpuRowSort
            | RanCode::Evaluator => None,
        }
    }

    /// The tier of the code that ran (a host kernel's current code).
    pub fn tier(&self) -> Option<Tier> {
        match self {
            RanCode::Host(c) => Some(c.code.get().tier),
            RanCode::Gpu(g) => Some(g.0.tier),
            RanCode::GpuInterpreted(_)
            | RanCode::Library
            | RanCode::HostSort
            | RanCode::GpuRadixSort
            | RanCode::GpuRadixSelect
            | RanCode::GpuRowSort
            | RanCode::Evaluator => None,
        }
    }

    /// The PTX, where a GPU kernel ran.
    pub fn ptx(&self) -> Option<&str> {
        match self {
            RanCode::Gpu(g) => Some(&g.0.ptx),
            RanCode::Host(_)
            | RanCode::GpuInterpreted(_)
            | RanCode::Library
            | RanCode::HostSort
            | RanCode::GpuRadixSort
            | RanCode::GpuRadixSelect
            | RanCode::GpuRowSort
            | RanCode::Evaluator => None,
        }
    }

    /// What ran, in words: `gpu row groups, optimized tier`, `library call`...
    pub fn describe(&self) -> String {
        match (self.kernel(), self.tier()) {
            (Some(k), Some(t)) => format!("{}, {} tier", k.shape, t.name()),
            _ => match self {
                RanCode::GpuInterpreted(_) => {
                    "the GPU's bytecode interpreter (its code was compiling)".into()
                }
                RanCode::Library => "a library call".into(),
                RanCode::HostSort => "the host's radix sort".into(),
                RanCode::GpuRadixSort => "the GPU's radix sort".into(),
                RanCode::GpuRadixSelect => "the GPU's radix select".into(),
                RanCode::GpuRowSort => "the GPU's block radix sort of rows".into(),
                _ => "the reference evaluator".into(),
            },
        }
    }
}

thread_local! {
    static LAST_CODE: std::cell::RefCell<Vec<(usize, RanCode)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps what ran, by region, as the thread's last run.
pub(crate) fn record_run(ran: Vec<(usize, RanCode)>) {
    LAST_CODE.with(|r| *r.borrow_mut() = ran);
}

/// How each region of the last schedule this thread ran (on either executor) ran, by region
/// index in order: what `KILN_DUMP`'s code stages show.
pub fn last_run_code() -> Vec<(usize, RanCode)> {
    LAST_CODE.with(|r| r.borrow().clone())
}

/// The dtype and shape of each `input {index=k}` of a region's body, by index.
pub fn region_inputs(body: &Graph) -> Vec<(DType, Vec<usize>)> {
    let mut inputs = vec![(DType::Bool, Vec::new()); body.num_inputs()];
    for n in body.nodes() {
        if let Attrs::Input { index } = n.attrs {
            inputs[index as usize] = (n.dtype, n.shape.to_vec());
        }
    }
    inputs
}

/// Anything a region can read: a host or a device array.
pub trait Operand {
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
}

impl Operand for HostArray {
    fn dtype(&self) -> DType {
        HostArray::dtype(self)
    }
    fn shape(&self) -> &[usize] {
        HostArray::shape(self)
    }
}

impl<T: Operand + ?Sized> Operand for &T {
    fn dtype(&self) -> DType {
        (**self).dtype()
    }
    fn shape(&self) -> &[usize] {
        (**self).shape()
    }
}

impl<T: Operand + ?Sized> Operand for Arc<T> {
    fn dtype(&self) -> DType {
        (**self).dtype()
    }
    fn shape(&self) -> &[usize] {
        (**self).shape()
    }
}

/// The region-input check every executor makes before it runs region `region`: `got[k]` must
/// be of the dtype and shape of `expected[k]` (the region's inputs, from [`region_inputs`] or a
/// kernel's `inputs`).
///
/// Errors: a count that differs ([`ExecError::Schedule`]), an input of another dtype or shape
/// ([`ExecError::InputMismatch`]).
pub fn check_inputs<A: Operand>(
    region: usize,
    expected: &[(DType, Vec<usize>)],
    got: &[A],
) -> Result<(), ExecError> {
    if got.len() != expected.len() {
        return Err(ExecError::Schedule(format!(
            "region {region}: {} inputs given, it reads {}",
            got.len(),
            expected.len()
        )));
    }
    for (input, (a, (dtype, shape))) in got.iter().zip(expected).enumerate() {
        if a.dtype() != *dtype || a.shape() != shape.as_slice() {
            return Err(ExecError::InputMismatch {
                region,
                input,
                dtype: *dtype,
                shape: shape.clone(),
                got_dtype: a.dtype(),
                got_shape: a.shape().to_vec(),
            });
        }
    }
    Ok(())
}

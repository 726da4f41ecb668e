//! `kiln::Error`: the frontend's one error enum.

use kiln_ir::{DType, IrError};
use thiserror::Error;

/// Every fallible operation of the array API returns this (through its `try_` form); the
/// operator overloads and non-`try_` methods panic with the same message.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A dtype, shape, axis or attribute rule of an op (the op and operands are named inside).
    #[error(transparent)]
    Ir(#[from] IrError),

    /// A value the op cannot take, such as an index out of bounds or a zero step.
    #[error("{op}: {message}")]
    Value { op: String, message: String },

    /// A ufunc's result that its output may not take under NumPy's casting rule: the in-place
    /// operators (`a += b` is `np.add(a, b, out=a)`, rule `same_kind`): `int8 += float64`,
    /// integer `/=`, `uint8 += int8` (NumPy's `UFuncTypeError`). `op` is the function called
    /// (`round (multiply)` for a composite's step), `ufunc` the ufunc whose output it is.
    #[error(
        "{op}: cannot cast ufunc '{ufunc}' output from {from} to {to} with casting rule '{casting}'"
    )]
    Casting { op: String, ufunc: String, from: DType, to: DType, casting: &'static str },

    /// Reading the result as the wrong Rust element type.
    #[error("{op}: the array has dtype {dtype}, asked for {wanted}")]
    ElementType { op: String, dtype: DType, wanted: DType },

    /// A compiler stage failed (a bug in kiln when the graph verified: please report it).
    #[error("compile: {message}")]
    Compile { message: String },

    /// The device failed: out of memory (after freeing the pool's cached blocks), a driver
    /// error, a kernel that did not load or launch (named in the message).
    #[error(transparent)]
    Runtime(#[from] kiln_runtime::RuntimeError),

    /// The device failed ([`Error::Runtime`]'s errors) inside an operation that names itself:
    /// `savez` of an array the device has no memory for reads `savez: out of memory allocating
    /// ...`. [`Error::runtime`] gives the device's error of either variant.
    #[error("{op}: {source}")]
    RuntimeIn {
        op: String,
        #[source]
        source: kiln_runtime::RuntimeError,
    },

    /// A file could not be read or written.
    #[error("{op}: {path}: {message}")]
    Io { op: String, path: String, message: String },

    /// A user kernel (ElementwiseKernel, ReductionKernel, fuse, RawKernel) called with a number
    /// of arguments it does not take (a raw kernel's parameters as the driver reports them).
    #[error("{kernel}: wrong number of arguments: takes {expected}, got {got}")]
    KernelArgCount { kernel: String, expected: String, got: usize },

    /// An argument's dtype is not its parameter's: a fixed type (`float32 x`), or the dtype the
    /// parameter's placeholder (`T x`) is already bound to by another argument.
    #[error("{kernel}: type mismatch: argument `{param}` is {got}, {}", bound(*.expected, .placeholder))]
    KernelDType {
        kernel: String,
        param: String,
        expected: DType,
        got: DType,
        placeholder: Option<String>,
    },

    /// A type placeholder that no argument binds (CuPy binds them from the output arguments, then
    /// from the array inputs; scalars bind nothing).
    #[error("{kernel}: type placeholder `{placeholder}` of `{param}` is bound by no argument (give an array for a parameter of type `{placeholder}`{})", if *.in_outputs_only { ", here an output argument" } else { "" })]
    KernelPlaceholder { kernel: String, placeholder: String, param: String, in_outputs_only: bool },

    /// A raw argument where the kernel needs an array to broadcast, or `size=` where an argument
    /// is not raw: the loop size must come from exactly one of them.
    #[error("{kernel}: {message}")]
    KernelRaw { kernel: String, param: Option<String>, message: String },

    /// Kernel code (a parameter list, the operation, a map/reduce expression) that does not
    /// parse; `part` names the string, `line` and `column` are 1-based within it.
    #[error("{kernel}: {part} {line}:{column}: syntax error: {message}")]
    KernelSyntax { kernel: String, part: String, line: usize, column: usize, message: String },

    /// Kernel code that parses but is wrong: an unknown name, an assignment to an input, a type
    /// error, a value read before it is assigned.
    #[error("{kernel}: {part} {line}:{column}: {message}")]
    KernelCode { kernel: String, part: String, line: usize, column: usize, message: String },

    /// A raw CUDA kernel (`RawKernel`, `RawModule`) used where the backend is the CPU: raw
    /// kernels run only on a CUDA device.
    #[error("{what}: raw CUDA kernels need a GPU, but the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)")]
    GpuRequired { what: String },

    /// `RawModule::get_function` (or a `RawKernel`) naming a kernel the module does not have:
    /// neither one of its name expressions nor an `extern "C"` kernel of that name.
    #[error("{module}: no kernel `{name}` in the module{}", name_expressions_hint(.name_expressions))]
    UnknownKernel { module: String, name: String, name_expressions: Vec<String> },

    /// A raw kernel's argument whose size is not the size of the kernel's parameter (the kernel
    /// declares, say, `int N` and is given an `i64`).
    #[error("{kernel}: argument {index} ({given}) has {given_bytes} bytes, but the kernel's parameter {index} takes {param_bytes} bytes")]
    KernelArgSize {
        kernel: String,
        index: usize,
        given: String,
        given_bytes: usize,
        param_bytes: usize,
    },

    /// A closure given to `fuse` read the value of a traced argument (`item`, `to_vec`,
    /// `eval` of an array computed from one): branching on a traced value, CuPy's `TypeError`.
    #[error("fuse {kernel}: {message}")]
    FuseTraced { kernel: String, message: String },

    /// An operand held on another CUDA device than the operation's: two operands of one
    /// operation on different devices (where the operation is written), or an array held on a
    /// device other than the current one where it is computed (CuPy's `ValueError: Array device
    /// must be same as the current device`). `Array::to_device` copies an array across.
    #[error("{op}: operand {operand} is on {on}, but {expected}")]
    DeviceMismatch { op: String, operand: String, on: String, expected: String },

    /// A collective operation (`kiln::distributed`) that cannot run as asked: a rank, root or
    /// peer out of range, arrays that differ between ranks where they must agree, a dtype NCCL
    /// cannot reduce, a rendezvous that failed or timed out, an environment without the
    /// variables of a launcher.
    #[error("{op}: {message}")]
    Distributed { op: String, message: String },

    /// A construct of C/CUDA outside the subset kiln traces into its graph (see
    /// `ElementwiseKernel`'s docs), named.
    #[error("{kernel}: {part} {line}:{column}: not supported: {construct}")]
    KernelUnsupported {
        kernel: String,
        part: String,
        line: usize,
        column: usize,
        construct: String,
    },
}

/// The name expressions a [`Error::UnknownKernel`] lists.
fn name_expressions_hint(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!(" (its name expressions: {})", names.join(", "))
    }
}

/// How a [`Error::KernelDType`] names the type the parameter takes.
fn bound(expected: DType, placeholder: &Option<String>) -> String {
    match placeholder {
        Some(p) => format!("but its type `{p}` is already bound to {expected}"),
        None => format!("but the parameter takes {expected}"),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error of an inner op of the composite `outer` (nanmax's max, std's var), named as
    /// `outer (inner)`: the message names the op the user wrote, and what it was built from.
    /// A device error (which names no op) becomes [`Error::RuntimeIn`] naming `outer`.
    pub(crate) fn within(mut self, outer: &str) -> Error {
        if let Error::Runtime(source) = self {
            return Error::RuntimeIn { op: outer.to_string(), source };
        }
        let op = match &mut self {
            Error::Ir(e) => e.op_mut(),
            Error::Value { op, .. }
            | Error::Casting { op, .. }
            | Error::ElementType { op, .. }
            | Error::RuntimeIn { op, .. }
            | Error::DeviceMismatch { op, .. }
            | Error::Distributed { op, .. } => Some(op),
            _ => None,
        };
        if let Some(op) = op.filter(|op| !op.starts_with(outer)) {
            *op = format!("{outer} ({op})");
        }
        self
    }

    /// The device's error, where the device failed ([`Error::Runtime`], [`Error::RuntimeIn`]).
    pub fn runtime(&self) -> Option<&kiln_runtime::RuntimeError> {
        match self {
            Error::Runtime(e) | Error::RuntimeIn { source: e, .. } => Some(e),
            _ => None,
        }
    }

    /// Whether the device failed with a *sticky* CUDA error (a kernel's fault: an illegal
    /// address, a trap, a failed device `assert`): the process's context on that device can do
    /// no more work, and every later call there fails the same way; restart the process to use
    /// the GPU again. The error's text says so too. (CuPy raises the driver's
    /// `CUDARuntimeError` and leaves this to the user.)
    pub fn is_sticky(&self) -> bool {
        self.runtime().is_some_and(kiln_runtime::RuntimeError::is_sticky)
    }
}

pub(crate) fn value_err(op: &str, message: impl Into<String>) -> Error {
    Error::Value { op: op.to_string(), message: message.into() }
}

impl From<kiln_compiler::CompileError> for Error {
    fn from(e: kiln_compiler::CompileError) -> Error {
        match e {
            kiln_compiler::CompileError::Ir(ir) => Error::Ir(ir),
            other => Error::Compile { message: other.to_string() },
        }
    }
}

impl From<kiln_exec::ExecError> for Error {
    fn from(e: kiln_exec::ExecError) -> Error {
        use kiln_exec::ExecError;
        match e {
            ExecError::Compile(c) => Error::from(c),
            ExecError::Ir(ir) => Error::Ir(ir),
            ExecError::Runtime(r) => Error::Runtime(r),
            other @ (ExecError::InputMismatch { .. }
            | ExecError::Schedule(_)
            | ExecError::InvalidInput(_)
            | ExecError::Library { .. }) => Error::Compile { message: other.to_string() },
        }
    }
}

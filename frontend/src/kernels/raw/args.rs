//! A raw kernel's arguments and its launch: arrays as device pointers (materialised first; an
//! array the kernel writes is given its own buffer and replaced by it afterwards), Rust scalars
//! by value as the C types of CuPy's table.

use std::sync::Arc;

use half::{bf16, f16};
use kiln_runtime::{Function, KernelArg, LaunchConfig, Stream};
use num_complex::Complex;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, ForeignInputs, Gpu};
use crate::materialize::{on_device, try_eval_all};

/// One argument of [`super::RawKernel::try_launch`]: an array the kernel reads, an array it
/// writes, or a scalar passed by value. Made with `.into()`: `(&x).into()` reads `x`,
/// `(&mut y).into()` writes `y`, `10i32.into()` is an `int`.
pub enum RawArg<'a> {
    /// An array the kernel only reads: a pointer to its C-contiguous elements in device memory
    /// (`const T*`). The kernel must not write through it: its buffer may be shared with other
    /// arrays.
    In(&'a Array),
    /// An array the kernel may write (`T*`): it is materialised, given a buffer of its own (its
    /// current one when no other array can see it, else a copy) and, after the launch, replaced
    /// by a new array holding that buffer.
    Out(&'a mut Array),
    /// A value passed by value.
    Scalar(ScalarArg),
}

impl<'a> From<&'a Array> for RawArg<'a> {
    fn from(a: &'a Array) -> RawArg<'a> {
        RawArg::In(a)
    }
}

impl<'a> From<&'a mut Array> for RawArg<'a> {
    fn from(a: &'a mut Array) -> RawArg<'a> {
        RawArg::Out(a)
    }
}

impl RawArg<'_> {
    /// Bytes the argument takes in the kernel's parameter space (8 for an array's pointer).
    pub fn size(&self) -> usize {
        match self {
            RawArg::In(_) | RawArg::Out(_) => std::mem::size_of::<u64>(),
            RawArg::Scalar(s) => s.size,
        }
    }

    /// What the argument is, for errors: `float32 array, a pointer`, `int32 scalar, int`.
    pub fn describe(&self) -> String {
        match self {
            RawArg::In(a) => format!("{} array, a pointer", a.dtype()),
            RawArg::Out(a) => format!("{} array, a pointer", a.dtype()),
            RawArg::Scalar(s) => format!("{} scalar, {}", s.rust_type, s.c_type),
        }
    }
}

/// A scalar argument: its bytes and the C type it is passed as.
#[derive(Clone, Copy, Debug)]
pub struct ScalarArg {
    bytes: Aligned,
    size: usize,
    rust_type: &'static str,
    c_type: &'static str,
    /// The value of an integer (not a bool).
    int: Option<i128>,
}

/// Storage for a scalar's bytes, aligned for any of them (complex<double> is 16-byte aligned).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Aligned([u8; 16]);

impl ScalarArg {
    fn of<T: Copy>(value: T, rust_type: &'static str, c_type: &'static str) -> ScalarArg {
        let size = std::mem::size_of::<T>();
        assert!(size <= 16, "a scalar argument of {size} bytes");
        let mut bytes = Aligned([0; 16]);
        // SAFETY: `value` is `size` initialised bytes (every type below is plain data without
        // padding), copied into a 16-byte buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&value as *const T).cast::<u8>(),
                bytes.0.as_mut_ptr(),
                size,
            )
        };
        ScalarArg { bytes, size, rust_type, c_type, int: None }
    }

    fn of_int<T: Copy + Into<i128>>(
        value: T,
        rust_type: &'static str,
        c_type: &'static str,
    ) -> ScalarArg {
        ScalarArg { int: Some(value.into()), ..ScalarArg::of(value, rust_type, c_type) }
    }

    /// The integer re-encoded in `bytes` bytes (1, 2, 4 or 8), for an integer parameter of that
    /// size: `None` unless it is an integer whose value fits as a signed or an unsigned integer
    /// of that size (C's conversion at a call, which leaves it unchanged for the parameter's
    /// type when it is in that type's range).
    fn fitted(&self, bytes: usize) -> Option<ScalarArg> {
        let v = self.int?;
        let bits = 8 * bytes as u32;
        if !matches!(bytes, 1 | 2 | 4 | 8) || v < -(1i128 << (bits - 1)) || v >= 1i128 << bits {
            return None;
        }
        let le = (v as u128).to_le_bytes();
        let mut out = Aligned([0; 16]);
        out.0[..bytes].copy_from_slice(&le[..bytes]);
        let c_type = match bytes {
            1 => "char",
            2 => "short",
            4 => "int",
            _ => "long long",
        };
        Some(ScalarArg {
            bytes: out,
            size: bytes,
            rust_type: self.rust_type,
            c_type,
            int: self.int,
        })
    }

    /// The C type the kernel's parameter should have (CuPy's table: `long long` for `i64`).
    pub fn c_type(&self) -> &'static str {
        self.c_type
    }

    /// The value's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

// SAFETY: the pointer is to `size` bytes of the argument itself, alive while it is borrowed.
unsafe impl KernelArg for ScalarArg {
    fn as_kernel_param(&self) -> *mut std::ffi::c_void {
        self.bytes.0.as_ptr() as *mut std::ffi::c_void
    }
    fn param_size(&self) -> usize {
        self.size
    }
}

macro_rules! scalar_args {
    ($($t:ty => $rust:literal, $c:literal;)*) => {$(
        impl From<$t> for RawArg<'_> {
            fn from(v: $t) -> Self {
                RawArg::Scalar(ScalarArg::of(v, $rust, $c))
            }
        }
    )*};
}

macro_rules! int_args {
    ($($t:ty => $rust:literal, $c:literal;)*) => {$(
        impl From<$t> for RawArg<'_> {
            fn from(v: $t) -> Self {
                RawArg::Scalar(ScalarArg::of_int(v, $rust, $c))
            }
        }
    )*};
}

// Integers (Python's int is an i64, 8 bytes); one given for an integer parameter of another
// size is converted when its value fits (see `check_params`).
int_args! {
    i8 => "int8", "signed char";
    i16 => "int16", "short";
    i32 => "int32", "int";
    i64 => "int64", "long long";
    u8 => "uint8", "unsigned char";
    u16 => "uint16", "unsigned short";
    u32 => "uint32", "unsigned int";
    u64 => "uint64", "unsigned long long";
}

impl From<usize> for RawArg<'_> {
    fn from(v: usize) -> Self {
        RawArg::Scalar(ScalarArg::of_int(v as u64, "usize", "unsigned long long"))
    }
}

impl From<isize> for RawArg<'_> {
    fn from(v: isize) -> Self {
        RawArg::Scalar(ScalarArg::of_int(v as i64, "isize", "long long"))
    }
}

// CuPy's "Kernel arguments" table (Python's int, float and bool are i64, f64 and bool).
scalar_args! {
    bool => "bool", "bool";
    f16 => "float16", "half";
    bf16 => "bfloat16", "__nv_bfloat16";
    f32 => "float32", "float";
    f64 => "float64", "double";
    Complex<f32> => "complex64", "complex<float>";
    Complex<f64> => "complex128", "complex<double>";
}

/// Grid or block dimensions: `5`, `(5,)`, `(16, 16)` or `(8, 8, 4)` as in CuPy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub u32, pub u32, pub u32);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3(x, 1, 1)
    }
}

impl From<(u32,)> for Dim3 {
    fn from((x,): (u32,)) -> Dim3 {
        Dim3(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3(x, y, z)
    }
}

/// Checks the arguments against the kernel's parameter sizes, when the driver reports them
/// (`cuFuncGetParamInfo`, CUDA 12.4+): their number, then each size. An integer scalar given
/// for a parameter of another size of 1, 2, 4 or 8 bytes is taken as the parameter's integer
/// type (`25i64` for `unsigned int N`, CuPy's guide's `N**2`) when its value fits one of that
/// size, signed or unsigned (a 4-byte parameter taking an integer is an `int` or `unsigned
/// int`: a `float` parameter needs an `f32`); the converted scalars are returned by position.
/// Nothing is checked or converted without the parameters' sizes, as in CuPy.
///
/// Errors: [`Error::KernelArgCount`], [`Error::KernelArgSize`], an integer out of the
/// parameter's range ([`Error::Value`] naming the kernel and the argument).
pub(crate) fn check_params(
    kernel: &str,
    params: Option<&[usize]>,
    args: &[RawArg<'_>],
) -> Result<Vec<Option<ScalarArg>>> {
    let Some(params) = params else { return Ok(vec![None; args.len()]) };
    if params.len() != args.len() {
        return Err(Error::KernelArgCount {
            kernel: kernel.to_string(),
            expected: params.len().to_string(),
            got: args.len(),
        });
    }
    let mut fitted = vec![None; args.len()];
    for (index, (arg, &param_bytes)) in args.iter().zip(params).enumerate() {
        if let RawArg::Scalar(s @ ScalarArg { int: Some(v), .. }) = arg {
            if s.size != param_bytes && matches!(param_bytes, 1 | 2 | 4 | 8) {
                let Some(f) = s.fitted(param_bytes) else {
                    return Err(crate::error::value_err(
                        kernel,
                        format!("argument {index} ({}): {v} does not fit the kernel's {param_bytes}-byte integer parameter {index}", arg.describe()),
                    ));
                };
                fitted[index] = Some(f);
                continue;
            }
        }
        if arg.size() != param_bytes {
            return Err(Error::KernelArgSize {
                kernel: kernel.to_string(),
                index,
                given: arg.describe(),
                given_bytes: arg.size(),
                param_bytes,
            });
        }
    }
    Ok(fitted)
}

/// The buffer a kernel may write for `a` (materialised): its own when nothing else can read it
/// (no other handle or expression holds the array, no other array holds its buffer), else a
/// copy, so the arrays that read the old value keep it.
fn writable(a: &mut Array) -> Result<Arc<DeviceArray>> {
    let d = on_device(a)?;
    // Two references to the buffer: the array's and `d`.
    let alone = Arc::get_mut(&mut a.e).is_some() && Arc::strong_count(&d) == 2;
    if alone {
        Ok(d)
    } else {
        Ok(Arc::new(d.duplicate()?))
    }
}

/// Launches `function` (of `kernel`) with `args` on `stream` (the current stream if `None`):
/// checks the arguments, materialises every array on the device in one evaluation, gives each
/// written array its own buffer, orders the launch after kiln's work on the current stream and
/// kiln's later work after it, and replaces each written array by its buffer.
///
/// # Safety
/// As [`super::RawKernel::try_launch`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch(
    gpu: &Gpu,
    kernel: &str,
    function: &Function,
    config: LaunchConfig,
    args: &mut [RawArg<'_>],
    stream: Option<&Stream>,
    cooperative: bool,
) -> Result<()> {
    let fitted = check_params(kernel, function.param_sizes(), args)?;
    let device = gpu.device();
    let _current_device = device.use_scoped()?;
    {
        let arrays: Vec<&Array> = args
            .iter()
            .filter_map(|a| match a {
                RawArg::In(x) => Some(*x),
                RawArg::Out(x) => Some(&**x),
                RawArg::Scalar(_) => None,
            })
            .collect();
        try_eval_all(&arrays)?;
    }
    let mut buffers: Vec<Option<Arc<DeviceArray>>> = Vec::with_capacity(args.len());
    for arg in args.iter_mut() {
        buffers.push(match arg {
            RawArg::In(a) => Some(on_device(a)?),
            RawArg::Out(a) => Some(writable(a)?),
            RawArg::Scalar(_) => None,
        });
    }
    let current = Stream::current_on(device)?;
    let stream = stream.cloned().unwrap_or_else(|| current.clone());
    // The launch follows kiln's work on the current stream and the writers of arrays made on
    // other streams; their later work (and frees) follows the launch, once this is dropped.
    let buffer_streams = buffers.iter().flatten().map(|d| d.buffer().stream());
    let foreign = ForeignInputs::order_streams(
        stream.clone(),
        std::iter::once(&current).chain(buffer_streams),
    )?;
    {
        let params: Vec<&dyn KernelArg> = args
            .iter()
            .zip(&buffers)
            .zip(&fitted)
            .map(|((arg, buffer), fitted)| match (arg, buffer) {
                (RawArg::Scalar(s), _) => fitted.as_ref().unwrap_or(s) as &dyn KernelArg,
                (_, Some(d)) => d.buffer() as &dyn KernelArg,
                (_, None) => unreachable!("every array argument has a buffer"),
            })
            .collect();
        // SAFETY: the caller vouches for the kernel and the meaning of its arguments; their
        // number and sizes were checked when the driver reports them; every pointer is to a
        // live buffer held in `buffers` until the launch is queued, and freed (if at all) on
        // the current stream, which waits for the launch below.
        unsafe {
            if cooperative {
                function.launch_cooperative_on(&stream, config, &params)?
            } else {
                function.launch_on(&stream, config, &params)?
            }
        };
    }
    drop(foreign);
    for (arg, buffer) in args.iter_mut().zip(buffers) {
        if let (RawArg::Out(a), Some(d)) = (arg, buffer) {
            **a = Array::from_device(d);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_as_cupys_c_types() {
        let c = |a: RawArg<'_>| match a {
            RawArg::Scalar(s) => (s.c_type(), s.size()),
            _ => unreachable!(),
        };
        assert_eq!(c(10i64.into()), ("long long", 8));
        assert_eq!(c(10i32.into()), ("int", 4));
        assert_eq!(c(10u32.into()), ("unsigned int", 4));
        assert_eq!(c(2.0f64.into()), ("double", 8));
        assert_eq!(c(2.0f32.into()), ("float", 4));
        assert_eq!(c(true.into()), ("bool", 1));
        assert_eq!(c(f16::from_f32(1.0).into()), ("half", 2));
        assert_eq!(c(Complex::new(1.0f32, 2.0).into()), ("complex<float>", 8));
        assert_eq!(c(Complex::new(1.0f64, 2.0).into()), ("complex<double>", 16));
    }

    #[test]
    fn scalar_bytes_are_the_value() {
        let RawArg::Scalar(s) = RawArg::from(Complex::new(1.5f32, -2.0)) else { unreachable!() };
        // SAFETY: the parameter points at the 8 bytes of a complex<float>.
        let back = unsafe { *(s.as_kernel_param() as *const Complex<f32>) };
        assert_eq!(back, Complex::new(1.5, -2.0));
        assert_eq!(s.param_size(), 8);
        let RawArg::Scalar(s) = RawArg::from(-3i64) else { unreachable!() };
        assert_eq!(s.bytes.0[..8], (-3i64).to_ne_bytes());
    }

    #[test]
    fn arguments_checked_against_the_parameters() {
        let x = Array::from_vec(vec![1.0f32; 4], &[4]);
        let mut y = Array::from_vec(vec![0.0f32; 4], &[4]);
        let args = [RawArg::from(&x), RawArg::from(&mut y), RawArg::from(4i64)];
        // No parameter information: nothing to check.
        assert!(check_params("k", None, &args).is_ok());
        assert!(check_params("k", Some(&[8, 8, 8]), &args).is_ok());
        let e = check_params("test_sum", Some(&[8, 8, 8, 4]), &args).unwrap_err();
        assert_eq!(
            e,
            Error::KernelArgCount { kernel: "test_sum".into(), expected: "4".into(), got: 3 }
        );
        let doubles = [RawArg::from(&x), RawArg::from(&mut y), RawArg::from(4.0f64)];
        let e = check_params("test_sum", Some(&[8, 8, 4]), &doubles).unwrap_err();
        assert_eq!(
            e.to_string(),
            "test_sum: argument 2 (float64 scalar, double) has 8 bytes, but the kernel's parameter 2 takes 4 bytes"
        );
    }

    /// The bytes a scalar is passed as.
    fn bytes(s: &ScalarArg) -> Vec<u8> {
        s.bytes.0[..s.size].to_vec()
    }

    /// An integer for an integer parameter of another size is converted when it fits (CuPy's
    /// guide passes a Python int, 8 bytes, for `unsigned int N`), else a typed error.
    #[test]
    fn integers_fit_their_parameter() {
        let fit = |arg: RawArg<'_>, size: usize| {
            check_params("k", Some(&[size]), &[arg]).map(|mut f| f.remove(0))
        };
        let four = fit(25i64.into(), 4).unwrap().expect("converted");
        assert_eq!((bytes(&four), four.c_type()), (25i32.to_le_bytes().to_vec(), "int"));
        let neg = fit((-3i64).into(), 4).unwrap().unwrap();
        assert_eq!(bytes(&neg), (-3i32).to_le_bytes());
        let big = fit(u32::MAX.into(), 8).unwrap().unwrap();
        assert_eq!(bytes(&big), (u32::MAX as u64).to_le_bytes());
        let unsigned = fit(4_000_000_000usize.into(), 4).unwrap().unwrap();
        assert_eq!(bytes(&unsigned), 4_000_000_000u32.to_le_bytes());
        assert_eq!(bytes(&fit((-1i32).into(), 2).unwrap().unwrap()), (-1i16).to_le_bytes());
        assert!(fit(7i32.into(), 4).unwrap().is_none(), "the same size: passed as it is");
        for (arg, size) in [(RawArg::from(1i64 << 32), 4), (RawArg::from(-129i32), 1)] {
            let e = fit(arg, size).unwrap_err();
            assert!(
                matches!(&e, Error::Value { op, message } if op == "k" && message.contains("does not fit")),
                "{e}"
            );
        }
        // Not integers: sizes must match.
        assert!(matches!(fit(true.into(), 4), Err(Error::KernelArgSize { .. })));
        assert!(matches!(fit(1.0f32.into(), 8), Err(Error::KernelArgSize { .. })));
        assert!(matches!(fit(3i64.into(), 16), Err(Error::KernelArgSize { .. })));
    }

    #[test]
    fn dims_as_in_cupy() {
        assert_eq!(Dim3::from(5), Dim3(5, 1, 1));
        assert_eq!(Dim3::from((5,)), Dim3(5, 1, 1));
        assert_eq!(Dim3::from((16, 8)), Dim3(16, 8, 1));
        assert_eq!(Dim3::from((8, 8, 4)), Dim3(8, 8, 4));
    }
}

//! User-defined kernels (CuPy's ElementwiseKernel, ReductionKernel, fuse) traced into kiln's graph:
//! the examples of CuPy's "User-Defined Kernels" guide, C++ semantics of the traced code, the
//! typed errors, fusion with the operations around a kernel (region snapshots in
//! `suite/snapshots/main__user_kernels__*.snap`) and host code generation of what they produce.
//!
//! Regenerate the snapshots with `INSTA_UPDATE=always cargo test --release --test main user_kernels`.

use kiln::{arange, Array, DType, ElementwiseKernel, Error, Operand, ReductionKernel};

fn f32s(v: &[f32], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

/// `cp.arange(n, dtype=np.float32)` reshaped.
fn arange_f32(n: i64, shape: &[usize]) -> Array {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    arange(n).astype(DType::Float32).reshape(&dims)
}

fn squared_diff() -> ElementwiseKernel {
    ElementwiseKernel::new(
        "float32 x, float32 y",
        "float32 z",
        "z = (x - y) * (x - y)",
        "squared_diff",
    )
    .unwrap()
}

// ------------------------------------------------------------------------------------------------
// CuPy's guide
// ------------------------------------------------------------------------------------------------

/// `squared_diff(x, y)` broadcasts (2, 5) with (5,); `squared_diff(x, 5)` converts the scalar.
#[test]
fn squared_diff_broadcasts_and_takes_a_scalar() {
    let k = squared_diff();
    let x = arange_f32(10, &[2, 5]);
    let y = arange_f32(5, &[5]);
    let z = k.call(&[(&x).into(), (&y).into()]);
    assert_eq!((z.dtype(), z.shape()), (DType::Float32, &[2usize, 5][..]));
    assert_eq!(z.to_vec::<f32>(), vec![0., 0., 0., 0., 0., 25., 25., 25., 25., 25.]);
    let z = k.call(&[(&x).into(), 5.into()]);
    assert_eq!(z.to_vec::<f32>(), vec![25., 16., 9., 4., 1., 0., 1., 4., 9., 16.]);
}

/// `squared_diff(x, y, z)`: the output argument is replaced by the result; a clone of the old
/// array keeps its value.
#[test]
fn squared_diff_into_an_output_argument() {
    let k = squared_diff();
    let x = arange_f32(10, &[2, 5]);
    let y = arange_f32(5, &[5]);
    let mut z = kiln::full(&[2, 5], 7.0, DType::Float32);
    let old = z.clone();
    k.call_out(&[(&x).into(), (&y).into()], &mut [&mut z]);
    assert_eq!(z.to_vec::<f32>(), vec![0., 0., 0., 0., 0., 25., 25., 25., 25., 25.]);
    assert_eq!(old.to_vec::<f32>(), vec![7.0; 10]);
    // An output of another shape than the loop's is an error, and z stays as it was.
    let mut small = kiln::zeros(&[5], DType::Float32);
    let e = k.try_call_out(&[(&x).into(), (&y).into()], &mut [&mut small]).unwrap_err();
    assert!(e.to_string().contains("output `z` has shape [5]"), "{e}");
    assert_eq!(small.to_vec::<f32>(), vec![0.0; 5]);
}

/// `'T x, T y' -> 'T z'` takes any one dtype; `'X x, Y y' -> 'Z z'` needs the output to bind Z,
/// and computes with C++'s conversions (int - double is double, stored as float).
#[test]
fn squared_diff_generic_forms() {
    let generic =
        ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff_generic")
            .unwrap();
    let x64 = Array::from_vec(vec![1.5f64, -2.0, 3.25], &[3]);
    let z = generic.call(&[(&x64).into(), 0.5.into()]);
    assert_eq!((z.dtype(), z.to_vec::<f64>()), (DType::Float64, vec![1.0, 6.25, 7.5625]));
    let xi = Array::from_vec(vec![1i16, -200, 300], &[3]);
    let z = generic.call(&[(&xi).into(), 100.into()]);
    // int16 arithmetic promotes to int: (-300)^2 = 90000 wraps when stored as int16.
    assert_eq!((z.dtype(), z.to_vec::<i16>()), (DType::Int16, vec![9801, 90000i32 as i16, -25536]));

    let sup = ElementwiseKernel::new(
        "X x, Y y",
        "Z z",
        "z = (x - y) * (x - y)",
        "squared_diff_super_generic",
    )
    .unwrap();
    let x = Array::from_vec(vec![1i32, 2, 3, 4], &[2, 2]);
    let y = Array::from_vec(vec![0.5f64, 0.25], &[2]);
    let e = sup.try_call(&[(&x).into(), (&y).into()]).unwrap_err();
    assert!(
        matches!(e, Error::KernelPlaceholder { ref placeholder, in_outputs_only: true, .. } if placeholder == "Z"),
        "{e}"
    );
    let mut z = kiln::zeros(&[2, 2], DType::Float32);
    sup.call_out(&[(&x).into(), (&y).into()], &mut [&mut z]);
    let want: Vec<f32> = [(1.0, 0.5), (2.0, 0.25), (3.0, 0.5), (4.0, 0.25)]
        .iter()
        .map(|&(a, b): &(f64, f64)| ((a - b) * (a - b)) as f32)
        .collect();
    assert_eq!((z.dtype(), z.to_vec::<f32>()), (DType::Float32, want));
}

/// `add_reverse`: a raw argument read at `_ind.size() - i - 1`.
#[test]
fn add_reverse_reads_a_raw_argument() {
    let k = ElementwiseKernel::new(
        "T x, raw T y",
        "T z",
        "z = x + y[_ind.size() - i - 1]",
        "add_reverse",
    )
    .unwrap();
    let x = arange_f32(5, &[5]);
    let y = f32s(&[10., 20., 30., 40., 50.], &[5]);
    let z = k.call(&[(&x).into(), (&y).into()]);
    assert_eq!(z.to_vec::<f32>(), vec![50., 41., 32., 23., 14.]);
    // The raw argument is not broadcast: a (2, 3) raw array is read flat, in C order.
    let x = arange_f32(6, &[2, 3]);
    let y = f32s(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
    let z = k.call(&[(&x).into(), (&y).into()]);
    assert_eq!(z.to_vec::<f32>(), vec![6., 6., 6., 6., 6., 6.]);
    // A view is read in its own C order (CuPy's CArray unravels the position over its shape):
    // y.T is [[1, 3, 5], [2, 4, 6]], flat [1, 3, 5, 2, 4, 6], read backwards.
    let z = k.call(&[(&x).into(), (&y.t()).into()]);
    assert_eq!(z.to_vec::<f32>(), vec![6., 5., 4., 8., 7., 6.]);
}

/// CuPy's `my_add` RawKernel (`y[tid] = x1[tid] + x2[tid]`) as a kernel of raw arguments over
/// `size=` elements (the RawKernel itself runs on the GPU only).
#[test]
fn my_add_over_raw_arguments_with_size() {
    let k = ElementwiseKernel::new(
        "raw float32 x1, raw float32 x2",
        "float32 y",
        "y = x1[i] + x2[i]",
        "my_add",
    )
    .unwrap();
    let x1 = arange_f32(25, &[5, 5]);
    let x2 = arange_f32(25, &[5, 5]);
    let y = k.call_sized(&[(&x1).into(), (&x2).into()], 25).remove(0);
    assert_eq!(y.shape(), &[25]);
    assert_eq!(y.to_vec::<f32>(), (0..25).map(|v| 2.0 * v as f32).collect::<Vec<_>>());
}

// ------------------------------------------------------------------------------------------------
// The traced subset
// ------------------------------------------------------------------------------------------------

/// Declarations, if/else on arrays (both branches traced, then selected), an unrolled loop, the
/// ternary, casts and C's truncating integer division.
#[test]
fn control_flow_and_c_semantics() {
    let k = ElementwiseKernel::new(
        "T x, int32 m",
        "T y, int32 q",
        r#"
        T acc = 0;
        for (int k = 1; k <= 3; ++k) {
            acc += x * k;          // 6x after the loop
        }
        if (x > 0) {
            y = acc;
        } else if (x < -1) {
            y = -acc;
        } else {
            y = x > -0.5 ? (T)1 : (T)2;
        }
        q = m / 3 + (int)x % 2;    // C truncates both
        "#,
        "flow",
    )
    .unwrap();
    let x = Array::from_vec(vec![2.0f32, -3.0, -0.25, -0.75], &[4]);
    let out = k.call_all(&[(&x).into(), (-7).into()]);
    assert_eq!(out[0].to_vec::<f32>(), vec![12.0, 18.0, 1.0, 2.0]);
    // -7 / 3 == -2 in C; (int)-3.0 % 2 == -1.
    assert_eq!(out[1].to_vec::<i32>(), vec![-2, -3, -2, -2]);
}

/// Integer division and remainder of arrays truncate toward zero, as C's.
#[test]
fn integer_division_truncates() {
    let k = ElementwiseKernel::new(
        "int32 a, int32 b",
        "int32 q, int32 r",
        "q = a / b; r = a % b;",
        "divmod",
    )
    .unwrap();
    let a = Array::from_vec(vec![-7i32, 7, -7, 7, 6], &[5]);
    let b = Array::from_vec(vec![2i32, -2, -2, 2, 3], &[5]);
    let out = k.call_all(&[(&a).into(), (&b).into()]);
    assert_eq!(out[0].to_vec::<i32>(), vec![-3, -3, 3, 3, 2]);
    assert_eq!(out[1].to_vec::<i32>(), vec![-1, 1, -1, 1, 0]);
}

/// CUDA math functions with their overloads: `sinf` on float, `sqrt` of an int in double, `fma`,
/// `min`/`max` ignoring NaN as `fminf`/`fmaxf` do, `round` half away from zero.
#[test]
fn math_functions() {
    let k = ElementwiseKernel::new(
        "float32 x, int32 m",
        "float32 a, float64 b, float32 c, float32 d, float32 e",
        "a = sinf(x) * expf(-x); b = sqrt(m); c = fma(x, x, 1.0f); d = max(x, NAN); e = round(x);",
        "maths",
    )
    .unwrap();
    let xs = [0.5f32, -2.5, 1.5, 3.0];
    let x = f32s(&xs, &[4]);
    let n = Array::from_vec(vec![4i32, 9, 2, 16], &[4]);
    let out = k.call_all(&[(&x).into(), (&n).into()]);
    let a = out[0].to_vec::<f32>();
    for (g, &v) in a.iter().zip(&xs) {
        let want = (v as f64).sin() as f32 as f64 * (-(v as f64)).exp() as f32 as f64;
        assert!((*g as f64 - want).abs() <= 1e-6 * want.abs().max(1.0), "{g} vs {want}");
    }
    assert_eq!(out[1].to_vec::<f64>(), vec![2.0, 3.0, 2f64.sqrt(), 4.0]);
    assert_eq!(out[2].to_vec::<f32>(), vec![1.25, 7.25, 3.25, 10.0]);
    assert_eq!(out[3].to_vec::<f32>(), xs.to_vec());
    assert_eq!(out[4].to_vec::<f32>(), vec![1.0, -3.0, 2.0, 3.0]);
}

/// A preamble's device functions are inlined, templates deduced from the arguments, an early
/// `return` selecting between paths.
#[test]
fn preamble_device_functions() {
    let k = ElementwiseKernel::new("T x", "T y", "y = clamp01(x) + twice(x)", "with_preamble")
        .unwrap()
        .with_preamble(
            r#"
            template <typename U> __device__ inline U twice(U a) { return a + a; }
            __device__ float clamp01(float v) {
                if (v < 0) return 0;
                if (v > 1) { return 1; }
                return v;
            }"#,
        )
        .unwrap();
    let x = f32s(&[-1.0, 0.25, 3.0], &[3]);
    assert_eq!(k.call(&[(&x).into()]).to_vec::<f32>(), vec![-2.0, 0.75, 7.0]);
}

// ------------------------------------------------------------------------------------------------
// ReductionKernel
// ------------------------------------------------------------------------------------------------

fn l2norm() -> ReductionKernel {
    ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm").unwrap()
}

/// The guide's l2norm along axis 1 of `arange(10).reshape(2, 5)`.
#[test]
fn l2norm_along_axis_1() {
    let x = arange_f32(10, &[2, 5]);
    let y = l2norm().call(&[(&x).into()], 1);
    assert_eq!((y.dtype(), y.shape()), (DType::Float32, &[2usize][..]));
    assert_eq!(y.to_vec::<f32>(), vec![5.477226, 15.9687195]);
}

/// `axis` as an int, a tuple or None, and `keepdims`.
#[test]
fn reduction_axes_and_keepdims() {
    let k = l2norm();
    let x = arange_f32(24, &[2, 3, 4]);
    let v: Vec<f64> = (0..24).map(|v| v as f64).collect();
    let norm =
        |idx: &mut dyn Iterator<Item = usize>| idx.map(|i| v[i] * v[i]).sum::<f64>().sqrt() as f32;
    let y = k.call(&[(&x).into()], kiln::axis([0, 2]).keepdims());
    assert_eq!(y.shape(), &[1, 3, 1]);
    let want: Vec<f32> = (0..3)
        .map(|j| norm(&mut (0..2).flat_map(move |i| (0..4).map(move |l| i * 12 + j * 4 + l))))
        .collect();
    assert_eq!(y.to_vec::<f32>(), want);
    let all = k.call(&[(&x).into()], kiln::all_axes());
    assert_eq!((all.shape(), all.to_vec::<f32>()), (&[][..], vec![norm(&mut (0..24))]));
    let last = k.call(&[(&x).into()], -1);
    assert_eq!(last.shape(), &[2, 3]);
    assert_eq!(last.to_vec::<f32>()[5], norm(&mut (20..24)));
}

/// max and min forms (a function and a ternary), a reduce type wider than the inputs, a scalar
/// input read in the post-map, a non-neutral identity for a maximum.
#[test]
fn reduction_forms() {
    let x = Array::from_vec(vec![3i32, -7, 5, 2, 9, -1], &[2, 3]);
    let maxabs =
        ReductionKernel::new("T x", "T y", "abs(x)", "max(a, b)", "y = a", "0", "maxabs").unwrap();
    assert_eq!(maxabs.call(&[(&x).into()], 1).to_vec::<i32>(), vec![7, 9]);
    let min = ReductionKernel::new("T x", "T y", "x", "a < b ? a : b", "y = a", "", "min_ternary")
        .unwrap();
    assert_eq!(min.call(&[(&x).into()], 0).to_vec::<i32>(), vec![2, -7, -1]);
    // The maximum with an identity that beats some rows.
    let floor =
        ReductionKernel::new("T x", "T y", "x", "max(a, b)", "y = a", "4", "max_from_4").unwrap();
    assert_eq!(floor.call(&[(&x).into()], 1).to_vec::<i32>(), vec![5, 9]);
    // A mean in double of int8 values, the divisor a scalar input.
    let x8 = Array::from_vec(vec![100i8, 100, 100, -128], &[4]);
    let mean = ReductionKernel::new(
        "int8 x, float64 d",
        "float64 m",
        "x",
        "a + b",
        "m = a / d",
        "0",
        "mean",
    )
    .unwrap()
    .with_reduce_type("double")
    .unwrap();
    assert_eq!(
        mean.call(&[(&x8).into(), 4.0.into()], kiln::all_axes()).to_vec::<f64>(),
        vec![43.0]
    );
    // With int8 as the reduce type the sum wraps (C's conversion of 172 to signed char).
    let wrap =
        ReductionKernel::new("int8 x", "int8 s", "x", "a + b", "s = a", "0", "sum_int8").unwrap();
    assert_eq!(wrap.call(&[(&x8).into()], kiln::all_axes()).to_vec::<i8>(), vec![-84]);
}

/// Raw inputs under CuPy's rule: allowed when the reduced axes come first; `_j` is the position
/// in the input.
#[test]
fn reduction_with_a_raw_weight() {
    let dot =
        ReductionKernel::new("T x, raw T w", "T y", "x * w[_j]", "a + b", "y = a", "0", "weighted")
            .unwrap();
    let x = arange_f32(6, &[3, 2]);
    let w = f32s(&[1., 10., 100., 1000., 0.5, 0.25], &[6]);
    // axis 0 of (3, 2): reduced axes first, no transposition.
    assert_eq!(
        dot.call(&[(&x).into(), (&w).into()], 0).to_vec::<f32>(),
        vec![0. + 200. + 2., 10. + 3000. + 1.25]
    );
    let e = dot.try_call(&[(&x).into(), (&w).into()], 1).unwrap_err();
    assert!(
        matches!(e, Error::KernelRaw { ref param, .. } if param.as_deref() == Some("w")),
        "{e}"
    );
}

/// A general reduce expression is a clear error naming it; so is a non-neutral sum identity.
#[test]
fn reduction_errors() {
    let e = ReductionKernel::new("T x", "T y", "x", "a - b", "y = a", "0", "diff").unwrap_err();
    match &e {
        Error::KernelUnsupported { part, line, column, construct, .. } => {
            assert_eq!((part.as_str(), *line, *column), ("reduce_expr", 1, 3));
            assert!(construct.contains("`a - b`"), "{construct}");
        }
        other => panic!("{other}"),
    }
    let k = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "1", "sum_from_1").unwrap();
    let x = arange_f32(4, &[4]);
    let e = k.try_call(&[(&x).into()], 0).unwrap_err();
    assert!(matches!(e, Error::KernelCode { ref part, .. } if part == "identity"), "{e}");
    let empty = kiln::zeros(&[0, 3], DType::Float32);
    let none = ReductionKernel::new("T x", "T y", "x", "max(a, b)", "y = a", "", "max_no_identity")
        .unwrap();
    let e = none.try_call(&[(&empty).into()], 0).unwrap_err();
    assert!(
        e.to_string().contains("zero-size array to reduction operation max_no_identity"),
        "{e}"
    );
    let with =
        ReductionKernel::new("T x", "T y", "x", "max(a, b)", "y = a", "-INFINITY", "max_inf")
            .unwrap();
    assert_eq!(with.call(&[(&empty).into()], 0).to_vec::<f32>(), vec![f32::NEG_INFINITY; 3]);
}

// ------------------------------------------------------------------------------------------------
// fuse
// ------------------------------------------------------------------------------------------------

/// The guide's `@cupy.fuse(kernel_name='squared_diff')`: traced once per signature (twice for
/// the first call, to check the trace is shape-generic), then instantiated for new shapes.
#[test]
fn fuse_traces_once_per_signature() {
    let f = kiln::fuse("squared_diff", |a: &[Operand]| {
        let d = a[0].to_array().try_subtract(a[1].clone())?;
        d.try_multiply(&d)
    });
    let x = arange_f32(10, &[2, 5]);
    let y = arange_f32(5, &[5]);
    let z = f.call(&[(&x).into(), (&y).into()]).remove(0);
    assert_eq!(z.to_vec::<f32>(), vec![0., 0., 0., 0., 0., 25., 25., 25., 25., 25.]);
    assert_eq!(f.traces(), 2);
    // Same dtypes and ranks, new extents: no trace.
    let x = arange_f32(12, &[3, 4]);
    let y = f32s(&[1., 2., 3., 4.], &[4]);
    let z = f.call(&[(&x).into(), (&y).into()]).remove(0);
    assert_eq!(
        z.to_vec::<f32>(),
        (0..12)
            .map(|v| {
                let d = (v as f32) - (v % 4 + 1) as f32;
                d * d
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(f.traces(), 2);
    // A scalar argument: a new signature, then reused with another value.
    let s = f.call(&[(&x).into(), 1.5.into()]).remove(0);
    assert_eq!(s.to_vec::<f32>()[..3], [2.25, 0.25, 0.25]);
    assert_eq!(f.traces(), 4);
    let s = f.call(&[(&y).into(), 3.into()]).remove(0);
    assert_eq!(s.dtype(), DType::Float32);
    assert_eq!(f.traces(), 6, "an int scalar is another signature");
    let s = f.call(&[(&y).into(), (-1).into()]).remove(0);
    assert_eq!((s.to_vec::<f32>(), f.traces()), (vec![4., 9., 16., 25.], 6));
    // Another dtype: traced again.
    let x64 = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    f.call(&[(&x64).into(), (&x64).into()]);
    assert_eq!(f.traces(), 8);
}

/// A fused softmax (reductions with keepdims, broadcasts back): traced once, then right for
/// other shapes of the same signature.
#[test]
fn fuse_a_softmax() {
    let softmax = kiln::fuse("softmax", |a: &[Operand]| -> kiln::Result<Array> {
        let x = a[0].to_array();
        let e = x.try_subtract(&x.try_max(kiln::axis(-1).keepdims())?)?.try_exp()?;
        e.try_divide(&e.try_sum(kiln::axis(-1).keepdims())?)
    });
    for (k, shape) in [[2usize, 3], [4, 5], [3, 7]].iter().enumerate() {
        let n = shape[0] * shape[1];
        let x = arange_f32(n as i64, shape) * 0.25;
        let got = softmax.call(&[(&x).into()]).remove(0);
        let want = kiln::nn::softmax(&x, -1).unwrap();
        assert_eq!(got.to_vec::<f32>(), want.to_vec::<f32>(), "call {k}");
    }
    assert_eq!(softmax.traces(), 2);
}

/// A closure whose graph depends on an extent (a slice of `n - 1` elements) is traced at every
/// call, and still right.
#[test]
fn fuse_falls_back_when_not_shape_generic() {
    let diff = kiln::fuse("diff", |a: &[Operand]| {
        let x = a[0].to_array();
        let n = x.shape()[0] as i64;
        x.try_slice(&[kiln::SliceArg::from(1..n)])?
            .try_subtract(x.try_slice(&[kiln::SliceArg::from(0..n - 1)])?)
    });
    let x = f32s(&[1., 4., 9., 16.], &[4]);
    assert_eq!(diff.call(&[(&x).into()])[0].to_vec::<f32>(), vec![3., 5., 7.]);
    let y = f32s(&[1., 2., 4., 8., 16., 32.], &[6]);
    assert_eq!(diff.call(&[(&y).into()])[0].to_vec::<f32>(), vec![1., 2., 4., 8., 16.]);
    assert_eq!(diff.traces(), 2 + 1 + 1, "two checking traces, then one per call");
}

// ------------------------------------------------------------------------------------------------
// Typed errors
// ------------------------------------------------------------------------------------------------

#[test]
fn error_wrong_argument_count() {
    let x = arange_f32(5, &[5]);
    let e = squared_diff().try_call(&[(&x).into()]).unwrap_err();
    assert!(
        matches!(e, Error::KernelArgCount { ref kernel, got: 1, .. } if kernel == "squared_diff"),
        "{e}"
    );
    assert_eq!(e.to_string(), "squared_diff: wrong number of arguments: takes 2 inputs, got 1");
}

#[test]
fn error_dtype_mismatch_with_a_fixed_type() {
    let x = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let y = arange_f32(2, &[2]);
    let e = squared_diff().try_call(&[(&x).into(), (&y).into()]).unwrap_err();
    assert!(
        matches!(e, Error::KernelDType { ref param, expected: DType::Float32, got: DType::Float64, placeholder: None, .. } if param == "x"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "squared_diff: type mismatch: argument `x` is float64, but the parameter takes float32"
    );
    // A placeholder bound by one argument and contradicted by another.
    let generic = ElementwiseKernel::new("T x, T y", "T z", "z = x - y", "sub").unwrap();
    let e = generic.try_call(&[(&y).into(), (&x).into()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sub: type mismatch: argument `y` is float64, but its type `T` is already bound to float32"
    );
}

#[test]
fn error_unresolvable_placeholder() {
    let k = ElementwiseKernel::new("T x", "T y", "y = x * 2", "twice").unwrap();
    let e = k.try_call(&[3.0.into()]).unwrap_err();
    assert!(
        matches!(e, Error::KernelPlaceholder { ref placeholder, ref param, in_outputs_only: false, .. } if placeholder == "T" && param == "x"),
        "{e}"
    );
}

#[test]
fn error_raw_argument_where_broadcasting_is_needed() {
    let k = ElementwiseKernel::new(
        "raw float32 x1, raw float32 x2",
        "float32 y",
        "y = x1[i] + x2[i]",
        "my_add",
    )
    .unwrap();
    let x = arange_f32(4, &[4]);
    // No non-raw array to broadcast, and no size=.
    let e = k.try_call(&[(&x).into(), (&x).into()]).unwrap_err();
    assert!(
        matches!(e, Error::KernelRaw { ref param, .. } if param.as_deref() == Some("x1")),
        "{e}"
    );
    assert!(e.to_string().contains("the loop size is undecided"), "{e}");
    // size= with a non-raw array argument.
    let e = squared_diff().try_call_sized(&[(&x).into(), (&x).into()], 4).unwrap_err();
    assert!(
        matches!(e, Error::KernelRaw { ref param, .. } if param.as_deref() == Some("x")),
        "{e}"
    );
    // A scalar for a raw parameter.
    let e = k.try_call_sized(&[(&x).into(), 1.0.into()], 4).unwrap_err();
    assert!(
        matches!(e, Error::KernelRaw { ref param, .. } if param.as_deref() == Some("x2")),
        "{e}"
    );
}

#[test]
fn error_body_parse_error_with_position() {
    let e = ElementwiseKernel::new("T x", "T y", "T t = x * 2;\ny = (t + 3;", "bad").unwrap_err();
    assert_eq!(e.to_string(), "bad: operation 2:11: syntax error: expected `)`, found `;`");
    assert!(matches!(e, Error::KernelSyntax { line: 2, column: 11, .. }));
    let e =
        ElementwiseKernel::new("T x", "T y", "y = x;\nwhile (y > 1) y /= 2;", "loop").unwrap_err();
    assert!(
        matches!(e, Error::KernelUnsupported { line: 2, column: 1, ref construct, .. } if construct.contains("`while`")),
        "{e}"
    );
    let e = ElementwiseKernel::new("T x, float y", "T z", "z = x", "params").unwrap_err();
    assert!(
        matches!(e, Error::KernelCode { ref part, line: 1, column: 6, .. } if part == "in_params"),
        "{e}"
    );
}

/// Errors found while tracing: a name never declared, a write to an input, an output left
/// unassigned on a path, a loop whose trip count depends on the data, a write to a raw argument.
#[test]
fn errors_found_while_tracing() {
    let x = arange_f32(4, &[4]);
    let call = |op: &str| -> Error {
        let k = ElementwiseKernel::new("T x, raw T r", "T y", op, "k").unwrap();
        k.try_call(&[(&x).into(), (&x).into()]).unwrap_err()
    };
    assert_eq!(call("y = x + w").to_string(), "k: operation 1:9: unknown name `w`");
    assert_eq!(
        call("x = 1; y = x").to_string(),
        "k: operation 1:1: `x` is an input parameter: it is read-only"
    );
    let e = call("if (x > 1) y = x;");
    assert!(
        matches!(e, Error::KernelCode { line: 1, column: 18, ref message, .. } if message.contains("`y` is not assigned on every path")),
        "{e}"
    );
    let e = call("y = 0; for (int k = 0; k < x; ++k) y += k;");
    // The condition's comparison.
    assert!(matches!(e, Error::KernelUnsupported { column: 26, .. }), "{e}");
    let e = call("r[i] = x; y = x;");
    assert!(
        matches!(e, Error::KernelUnsupported { column: 1, ref construct, .. } if construct.contains("scatter")),
        "{e}"
    );
    let e = call("y = r;");
    assert!(e.to_string().contains("`r` is a raw argument"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// Fusion with the operations around a kernel
// ------------------------------------------------------------------------------------------------

/// Explains `outs`, checks the regions parse back and, run region by region, give the
/// reference evaluator's results on the unfused graph; snapshots the regions and the report.
#[track_caller]
fn regions(name: &str, outs: &[&Array]) -> kiln::FusionReport {
    let explained = kiln::explain(outs);
    let lowered = kiln::lower(outs);
    let plan = kiln_compiler::pipeline::compile(
        &lowered.graph,
        &kiln_compiler::pipeline::Options::from_env(),
    )
    .unwrap();
    assert_eq!(
        kiln_compiler::fusion::parse_regions(&explained.regions).unwrap(),
        plan.partition.regions,
        "{name}"
    );
    let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    let fused =
        kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Evaluator).unwrap();
    for (k, (r, f)) in reference.iter().zip(&fused).enumerate() {
        assert!(crate::catalogue::same(r, f), "{name}: output {k}\nreference: {r:?}\nfused: {f:?}");
    }
    let text = format!(
        "program: {name}\nkernels: {}\n\n======== regions ========\n{}\n======== report ========\n{}",
        explained.report.kernel_count(),
        explained.regions.trim_end(),
        explained.report
    );
    insta::assert_snapshot!(name, text);
    // The GPU code of the regions (MLIR and the PTX lines that matter), snapshotted as
    // `<name>__gpu`; the PTX assembles with ptxas.
    crate::catalogue::gpu_kernels(name, &plan.partition.regions);
    explained.report
}

fn region_kernels(r: &kiln::FusionReport, k: usize) -> Vec<String> {
    r.regions[k].kernels.clone()
}

/// `squared_diff(x * 2.0, y).sum(axis=1)`: one reduction region, named.
#[test]
fn squared_diff_then_sum_is_one_reduction_region() {
    let x = f32s(&[0.5, -1.0, 2.0, 0.25, 3.0, -2.5, 1.5, 0.0], &[2, 4]);
    let y = f32s(&[1.0, 0.5, -0.5, 2.0], &[4]);
    let z = squared_diff().call(&[(&x * 2.0).into(), (&y).into()]).sum(1);
    let r = regions("squared_diff_then_sum", &[&z]);
    assert_eq!(r.kernel_count(), 1, "{r}");
    assert_eq!(r.regions[0].kind, kiln_compiler::fusion::RegionKind::Reduction);
    assert_eq!(region_kernels(&r, 0), vec!["squared_diff".to_string()]);
    let want: Vec<f32> = (0..2)
        .map(|i| {
            (0..4)
                .map(|j| {
                    let d = 2.0 * x.to_vec::<f32>()[i * 4 + j] - y.to_vec::<f32>()[j];
                    d * d
                })
                .sum()
        })
        .collect();
    assert_eq!(z.to_vec::<f32>(), want);
}

/// The l2norm reduction kernel between elementwise operations: `l2norm(exp(x), axis=1) + 1`.
#[test]
fn l2norm_between_elementwise_ops_is_one_region() {
    let x = arange_f32(12, &[3, 4]) * 0.1;
    let y = l2norm().call(&[(&x.exp()).into()], 1) + 1.0;
    let r = regions("l2norm_between_elementwise_ops", &[&y]);
    assert_eq!(r.kernel_count(), 1, "{r}");
    assert_eq!(region_kernels(&r, 0), vec!["l2norm".to_string()]);
}

/// A raw argument computed by other operations is materialised (the gather reads a buffer),
/// the rest of add_reverse fuses with what computes its non-raw argument.
#[test]
fn add_reverse_with_computed_arguments() {
    let k = ElementwiseKernel::new(
        "T x, raw T y",
        "T z",
        "z = x + y[_ind.size() - i - 1]",
        "add_reverse",
    )
    .unwrap();
    let x = arange_f32(6, &[6]);
    let y = f32s(&[1., 2., 3., 4., 5., 6.], &[6]);
    let z = k.call(&[(&x.sin()).into(), (&(&y * 3.0)).into()]);
    let r = regions("add_reverse_with_computed_arguments", &[&z]);
    assert_eq!(r.kernel_count(), 2, "{r}");
    assert!(r.unfused.iter().any(|e| e.reason == kiln::UnfusedReason::GatherSource), "{r}");
    assert_eq!(region_kernels(&r, 1), vec!["add_reverse".to_string()]);
}

/// Two user kernels and a fused closure in one program: each region names the kernels whose
/// results it computes.
#[test]
fn kernels_and_fuse_in_one_program() {
    let scale = kiln::fuse("scale_shift", |a: &[Operand]| {
        a[0].to_array().try_multiply(2.0)?.try_add(a[1].clone())
    });
    let x = arange_f32(8, &[2, 4]);
    let y = f32s(&[1., -1., 2., -2.], &[4]);
    let s = scale.call(&[(&x).into(), (&y).into()]).remove(0);
    let d = squared_diff().call(&[(&s).into(), (&x).into()]);
    let n = l2norm().call(&[(&d).into()], 1);
    let r = regions("kernels_and_fuse_in_one_program", &[&n]);
    assert_eq!(r.kernel_count(), 1, "{r}");
    assert_eq!(
        region_kernels(&r, 0),
        vec!["scale_shift".to_string(), "squared_diff".to_string(), "l2norm".to_string()]
    );
}

// ------------------------------------------------------------------------------------------------
// Host code generation of what kernels produce
// ------------------------------------------------------------------------------------------------

/// Gathers, selects and unrolled loops compile on the host and match the evaluator.
#[test]
fn host_code_of_user_kernels() {
    let add_reverse = ElementwiseKernel::new(
        "T x, raw T y",
        "T z",
        "z = x + y[_ind.size() - i - 1]",
        "add_reverse",
    )
    .unwrap();
    let x = arange_f32(1000, &[10, 100]);
    let y = arange_f32(1000, &[1000]) * 0.5;
    x.eval();
    y.eval();
    let z = add_reverse.call(&[(&x).into(), (&y).into()]);
    crate::codegen::check_program("add_reverse", &[&z], 0.0);
    let wrap =
        ElementwiseKernel::new("T x, raw T y", "T z", "z = y[i * 7 - 3] - y[-i]", "wrapped_reads")
            .unwrap();
    let w = wrap.call(&[(&x).into(), (&y).into()]);
    crate::codegen::check_program("wrapped_reads", &[&w], 0.0);
    let poly = ElementwiseKernel::new(
        "T x",
        "T y",
        "T acc = 0; for (int k = 0; k < 4; k++) { acc = acc * x + (k + 1); } y = acc > 100 ? sqrt(acc) : acc;",
        "horner",
    )
    .unwrap();
    let p = poly.call(&[(&x).into()]);
    crate::codegen::check_program("horner", &[&p], 1.0);
    let n = l2norm().call(&[(&x).into()], 1);
    crate::codegen::check_program("l2norm", &[&n], 2.0);
    // Known positions (rank-0 gathers, broadcast), and a gather inside a reduction.
    let ends =
        ElementwiseKernel::new("T x, raw T y", "T z", "z = x * y[0] + y[y.size() - 1]", "ends")
            .unwrap();
    let e = ends.call(&[(&x).into(), (&y).into()]);
    crate::codegen::check_program("ends", &[&e], 0.0);
    let dot = ReductionKernel::new(
        "T x, raw T w",
        "T y",
        "x * w[_j % 100]",
        "a + b",
        "y = a",
        "0",
        "weighted",
    )
    .unwrap();
    let d = dot.call(&[(&x).into(), (&y).into()], 0);
    crate::codegen::check_program("weighted", &[&d], 2.0);
}

mod c_semantics {
    //! C++'s integer semantics of traced code against Rust's (whose `/` and `%` truncate, as C's)
    //! on random operands.

    use kiln::{Array, ElementwiseKernel};
    use proptest::prelude::*;

    fn arr<T: kiln::ir::HostElement>(v: Vec<T>) -> Array {
        let n = v.len();
        Array::from_vec(v, &[n])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn int_division_remainder_and_mixed_signedness(
            a in prop::collection::vec(any::<i32>(), 1..16),
            b in prop::collection::vec(any::<i32>(), 16),
            c in prop::collection::vec(any::<i8>(), 16),
            d in prop::collection::vec(any::<u32>(), 16),
        ) {
            let n = a.len();
            let (b, c, d) = (b[..n].to_vec(), c[..n].to_vec(), d[..n].to_vec());
            let k = ElementwiseKernel::new(
                "int32 a, int32 b, int8 c, uint32 d",
                "int32 q, int32 r, uint32 s, int64 t",
                "q = a / b; r = a % b; s = c + d; t = (long long)c * a - (d >> 3);",
                "c_ints",
            ).unwrap();
            let out = k.call_all(&[arr(a.clone()).into(), arr(b.clone()).into(), arr(c.clone()).into(), arr(d.clone()).into()]);
            // Division by zero gives 0 (kiln's rule where C's is undefined); MIN / -1 wraps.
            let div = |x: i32, y: i32| if y == 0 { 0 } else { x.wrapping_div(y) };
            let rem = |x: i32, y: i32| if y == 0 { 0 } else { x.wrapping_rem(y) };
            prop_assert_eq!(out[0].to_vec::<i32>(), a.iter().zip(&b).map(|(&x, &y)| div(x, y)).collect::<Vec<_>>());
            prop_assert_eq!(out[1].to_vec::<i32>(), a.iter().zip(&b).map(|(&x, &y)| rem(x, y)).collect::<Vec<_>>());
            // int8 + unsigned: the int8 is converted to unsigned (modulo 2^32).
            prop_assert_eq!(out[2].to_vec::<u32>(), c.iter().zip(&d).map(|(&x, &y)| (x as i32 as u32).wrapping_add(y)).collect::<Vec<_>>());
            // long long * int - unsigned: long long (the unsigned fits), stored as int64.
            let want: Vec<i64> = (0..n).map(|i| (c[i] as i64) * (a[i] as i64) - (d[i] >> 3) as i64).collect();
            prop_assert_eq!(out[3].to_vec::<i64>(), want);
        }
    }
}

/// CuPy's check of kernel names: a C identifier, else `ValueError('Invalid kernel name')`, for
/// both kinds of kernel, raised by the constructor.
#[test]
fn kernel_names_must_be_c_identifiers() {
    for bad in ["my kernel", "1st", "", "add-one", "é"] {
        let e = kiln::ElementwiseKernel::new("T x", "T y", "y = x", bad).err().expect(bad);
        assert_eq!(e.to_string(), format!("ElementwiseKernel: Invalid kernel name: \"{bad}\""));
        let e = kiln::ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", bad)
            .err()
            .expect(bad);
        assert!(matches!(e, kiln::Error::Value { .. }), "{e:?}");
    }
    for good in ["_k", "k1", "Kernel_2"] {
        assert!(kiln::ElementwiseKernel::new("T x", "T y", "y = x", good).is_ok(), "{good}");
        assert!(kiln::ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", good).is_ok());
    }
}

//! CuPy's user-kernel behaviours of issue 23 §3: raw output parameters written by position
//! (scatters), `size=` with outputs, local arrays, `x.shape()[k]` and `x.strides()[k]`, empty
//! bodies, `block_size`, the per-signature variant count, and `fuse` refusing to branch on a
//! traced value. Each result is checked against values computed here, on either backend.

use kiln::{fuse, Array, CallOptions, DType, ElementwiseKernel, Error, Operand, ReductionKernel};

fn f32s(v: &[f32], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|v| v as f32).collect()
}

fn ek(ins: &str, outs: &str, body: &str, name: &str) -> ElementwiseKernel {
    ElementwiseKernel::new(ins, outs, body, name).unwrap()
}

// ------------------------------------------------------------------------------------------------
// Raw outputs: writes by position
// ------------------------------------------------------------------------------------------------

/// `y[_ind.size() - i - 1] = x` into a given output reverses `x`; the old output array keeps
/// its value.
#[test]
fn raw_output_written_by_position() {
    let k = ek("T x", "raw T y", "y[_ind.size() - i - 1] = x", "reverse_into");
    let x = f32s(&ramp(6), &[6]);
    let mut y = Array::from_vec(vec![-1.0f32; 6], &[6]);
    let old = y.clone();
    k.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![5., 4., 3., 2., 1., 0.]);
    assert_eq!(old.to_vec::<f32>(), vec![-1.0; 6]);
}

/// A raw output of another shape than the loop: each element of a (6,) loop writes a (3, 2)
/// output through a local array of indices (CuPy's multi-dimensional index), a transpose.
#[test]
fn raw_output_of_its_own_shape_and_a_multi_dimensional_index() {
    let k = ek("T x", "raw T y", "ptrdiff_t idx[] = {i % 3, i / 3}; y[idx] = x;", "transpose_into");
    let x = f32s(&ramp(6), &[6]);
    let mut y = Array::from_vec(vec![0.0f32; 6], &[3, 2]);
    k.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.shape(), &[3, 2]);
    // y[r][c] = x[c * 3 + r]
    assert_eq!(y.to_vec::<f32>(), vec![0., 3., 1., 4., 2., 5.]);
}

/// Writes under an `if` on array values apply where it holds (else side too); positions wrap
/// as reads do; where two elements write one position the later in loop order wins.
#[test]
fn raw_output_writes_masked_wrapped_and_ordered() {
    let x = f32s(&[3., -1., 4., -1., 5.], &[5]);
    let masked = ek("T x", "raw T y", "if (x > 0) { y[i] = x; } else { y[i] = -100; }", "masked");
    let mut y = Array::from_vec(vec![7.0f32; 5], &[5]);
    masked.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![3., -100., 4., -100., 5.]);
    let only = ek("T x", "raw T y", "if (x > 0) y[i] = 2 * x;", "only_positive");
    let mut y = Array::from_vec(vec![7.0f32; 5], &[5]);
    only.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![6., 7., 8., 7., 10.]);
    let shifted = ek("T x", "raw T y", "y[i - 1] = x", "shift_left");
    let mut y = Array::from_vec(vec![0.0f32; 5], &[5]);
    shifted.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![-1., 4., -1., 5., 3.], "i = 0 wrote y[-1]");
    let last = ek("T x", "raw T y", "y[0] = x", "all_to_zero");
    let mut y = Array::from_vec(vec![0.0f32; 2], &[2]);
    last.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![5., 0.]);
}

/// Compound writes, a read after a write, and a raw output beside an ordinary one.
#[test]
fn raw_output_compound_writes_and_reads() {
    let k = ek("T x", "raw T y, T z", "y[i] += x; z = y[i] * 10;", "accumulate");
    let x = f32s(&[1., 2., 3.], &[3]);
    let mut y = f32s(&[10., 20., 30.], &[3]);
    let mut z = f32s(&[0.; 3], &[3]);
    k.call_out(&[(&x).into()], &mut [&mut y, &mut z]);
    assert_eq!(y.to_vec::<f32>(), vec![11., 22., 33.]);
    assert_eq!(z.to_vec::<f32>(), vec![110., 220., 330.]);
    let counter = ek("T x", "raw int32 y", "y[i]++;", "count");
    let mut y = Array::from_vec(vec![4i32, 5, 6], &[3]);
    counter.call_out(&[(&x).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<i32>(), vec![5, 6, 7]);
}

/// CuPy's `size=` rules with raw outputs: `size` and raw arguments only gives a loop of `size`
/// and raw outputs of `size` elements (zeros here, uninitialised in CuPy); a raw output with
/// neither `size` nor an output argument is CuPy's "Output array size is Undecided"; `size`
/// with a non-raw output argument is CuPy's "Specified 'size' can be used only if all of the
/// ndarray are 'raw'".
#[test]
fn size_rules_with_raw_outputs() {
    let twice = ek("raw T x", "raw T y", "if (i < x.size()) y[i] = 2 * x[i];", "twice");
    let x = f32s(&[1., 2., 3.], &[3]);
    let y = twice.try_call_sized(&[(&x).into()], 4).unwrap().remove(0);
    assert_eq!(y.to_vec::<f32>(), vec![2., 4., 6., 0.]);
    let e = twice.try_call_all(&[(&x).into()]).unwrap_err();
    assert!(matches!(e, Error::KernelRaw { .. }), "{e:?}");
    let mut y = f32s(&[9.; 5], &[5]);
    twice.try_call_with(&[(&x).into()], &mut [&mut y], CallOptions::default().size(3)).unwrap();
    assert_eq!(y.to_vec::<f32>(), vec![2., 4., 6., 9., 9.]);
    let e = twice.try_call_out(&[(&x).into()], &mut [&mut y]).unwrap_err();
    assert!(e.to_string().contains("undecided"), "{e}");
    let plain = ek("raw T x", "T y", "y = x[i]", "gather_out");
    let mut y = f32s(&[0.; 3], &[3]);
    let before = y.clone();
    let e = plain
        .try_call_with(&[(&x).into()], &mut [&mut y], CallOptions::default().size(3))
        .unwrap_err();
    assert!(
        matches!(&e, Error::KernelRaw { param: Some(p), message, .. } if p == "y" && message.contains("every array argument is raw")),
        "{e:?}"
    );
    assert!(y.same_expr(&before), "the output is left as it was");
    // A reduction's outputs are its results: a raw one is refused where the kernel is made.
    let e = ReductionKernel::new("T x", "raw T y", "x", "a + b", "y = a", "0", "r").unwrap_err();
    assert!(matches!(e, Error::KernelUnsupported { .. }), "{e:?}");
}

/// Writes to raw inputs, to arrays that are not raw, and to empty raw outputs are errors.
#[test]
fn raw_write_errors() {
    let x = f32s(&[1., 2.], &[2]);
    let call = |ins: &str, outs: &str, body: &str| {
        let mut y = f32s(&[0.; 2], &[2]);
        ek(ins, outs, body, "w").try_call_out(&[(&x).into()], &mut [&mut y]).unwrap_err()
    };
    let e = call("raw T x", "T y", "x[i] = 1; y = 0;");
    assert!(
        matches!(&e, Error::KernelUnsupported { construct, .. } if construct.contains("raw input")),
        "{e}"
    );
    let e = call("T x", "T y", "y[i] = x;");
    assert!(e.to_string().contains("not a raw argument"), "{e}");
    let e = call("T x", "raw T y", "y = x;");
    assert!(e.to_string().contains("assign its elements"), "{e}");
    let k = ek("T x", "raw T y", "y[i] = x", "empty_out");
    let mut empty = f32s(&[], &[0]);
    let e = k.try_call_out(&[(&x).into()], &mut [&mut empty]).unwrap_err();
    assert!(e.to_string().contains("no elements"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// Local arrays, shape() and strides()
// ------------------------------------------------------------------------------------------------

/// Local arrays: a list initialiser (zeros after it), reads at known and traced positions,
/// writes at both.
#[test]
fn local_arrays() {
    let x = f32s(&ramp(6), &[6]);
    let weights = ek(
        "T x",
        "T y",
        "int w[4] = {1, 2, 3}; T acc = 0; for (int k = 0; k < 4; k++) acc += w[k] * x; y = acc;",
        "weights",
    );
    assert_eq!(weights.call(&[(&x).into()]).to_vec::<f32>(), vec![0., 6., 12., 18., 24., 30.]);
    let table =
        ek("T x", "T y", "const float t[] = {10, 20, 30}; y = t[i % 3] + x;", "table_lookup");
    assert_eq!(table.call(&[(&x).into()]).to_vec::<f32>(), vec![10., 21., 32., 13., 24., 35.]);
    let scratch = ek(
        "T x",
        "T y",
        "float s[3] = {}; s[i % 3] = x; s[1] += 100; y = s[0] + s[1] + s[2];",
        "scratch",
    );
    assert_eq!(
        scratch.call(&[(&x).into()]).to_vec::<f32>(),
        vec![100., 101., 102., 103., 104., 105.]
    );
    // Complex elements, zero after the list.
    let c = Array::from_vec(vec![num_complex::Complex::new(1.0f32, 2.0); 2], &[2]);
    let cl =
        ek("T x", "T y", "complex<float> w[2] = {x}; y = w[0] + w[1] + w[i];", "complex_local");
    let want = vec![num_complex::Complex::new(2.0f32, 4.0), num_complex::Complex::new(1.0, 2.0)];
    assert_eq!(cl.call(&[(&c).into()]).to_vec::<num_complex::Complex<f32>>(), want);
    let err = |body: &str| {
        ElementwiseKernel::new("T x", "T y", body, "bad_local")
            .and_then(|k| k.try_call(&[(&x).into()]))
            .unwrap_err()
            .to_string()
    };
    assert!(err("int w[2] = {1, 2}; y = w[2];").contains("out of range"));
    assert!(err("int w[2] = {1, 2, 3}; y = x;").contains("too many initialisers"));
    assert!(err("int w[]; y = x;").contains("needs a list"));
    assert!(err("int w[2] = {1, 2}; y = w;").contains("local array"));
    assert!(err("int w[2]; y = w[0];").contains("before it is assigned"));
    assert!(err("const int w[2] = {1, 2}; w[0] = 3; y = x;").contains("const"));
    assert!(err("int w[2][2]; y = x;").contains("arrays of arrays"));
}

/// `m.shape()[k]` and `m.strides()[k]` (bytes, C order) of a raw argument, and a
/// multi-dimensional read through a local array.
#[test]
fn shape_and_strides_of_raw_arguments() {
    let m = f32s(&ramp(12), &[3, 4]);
    let x = f32s(&[0.; 2], &[2]);
    let dims = ek(
        "T x, raw T m",
        "int64 s, int64 t",
        "s = m.shape()[i] * 100 + m.shape()[1]; t = m.strides()[i];",
        "dims",
    );
    let out = dims.call_all(&[(&x).into(), (&m).into()]);
    assert_eq!(out[0].to_vec::<i64>(), vec![304, 404]);
    assert_eq!(out[1].to_vec::<i64>(), vec![16, 4]);
    let read = ek("T x, raw T m", "T y", "ptrdiff_t at[] = {2, i + 1}; y = m[at];", "read2d");
    assert_eq!(read.call(&[(&x).into(), (&m).into()]).to_vec::<f32>(), vec![9., 10.]);
    let err = |body: &str| {
        ek("T x, raw T m", "T y", body, "bad_dims")
            .try_call(&[(&x).into(), (&m).into()])
            .unwrap_err()
            .to_string()
    };
    assert!(err("y = m.shape()[2];").contains("out of range"));
    assert!(err("y = m.shape();").contains("read by element"));
    assert!(err("y = x.shape()[0];").contains("not a raw argument"));
    assert!(err("ptrdiff_t at[] = {1}; y = m[at];").contains("1 indices for an array of 2"));
}

// ------------------------------------------------------------------------------------------------
// Empty bodies, block_size, variants
// ------------------------------------------------------------------------------------------------

/// CuPy's no-op kernel (`operation=''`): given outputs keep their values; without output
/// arguments its outputs would be uninitialised memory in CuPy, which kiln refuses.
#[test]
fn empty_bodies() {
    let k = ek("float32 x0, raw float32 x1", "float32 y0", "", "kernel");
    let (a, b) = (f32s(&[1., 2.], &[2]), f32s(&[3., 4.], &[2]));
    let mut y = f32s(&[5., 6.], &[2]);
    k.call_out(&[(&a).into(), (&b).into()], &mut [&mut y]);
    assert_eq!(y.to_vec::<f32>(), vec![5., 6.]);
    let e = k.try_call(&[(&a).into(), (&b).into()]).unwrap_err();
    assert!(e.to_string().contains("not assigned"), "{e}");
    let raw = ek("raw float32 x0", "raw float32 y0", " ", "kernel");
    assert_eq!(raw.call_sized(&[(&a).into()], 3)[0].to_vec::<f32>(), vec![0.; 3]);
}

/// `block_size=` is checked as CuPy does and changes nothing else.
#[test]
fn block_size_is_checked() {
    let k = ek("T x", "T y", "y = x * 2", "twice");
    let x = f32s(&[1., 2.], &[2]);
    let y = k.try_call_with(&[(&x).into()], &mut [], CallOptions::default().block_size(128));
    assert_eq!(y.unwrap()[0].to_vec::<f32>(), vec![2., 4.]);
    for bad in [0, 1025] {
        let e = k
            .try_call_with(&[(&x).into()], &mut [], CallOptions::default().block_size(bad))
            .unwrap_err();
        assert!(matches!(&e, Error::Value { op, .. } if op == "twice"), "{e:?}");
    }
}

/// A ReductionKernel's `block_size=`: a power of two from 1 to 1024, checked, with no other effect
/// (the same results and the same plan: kiln's reductions pick their own launches); `size=` is
/// refused, as CuPy's "Wrong arguments".
#[test]
fn reduction_block_size_is_checked() {
    let k = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq").unwrap();
    let x = f32s(&ramp(12), &[3, 4]);
    let plain = k.call(&[(&x).into()], 1);
    for b in [1, 32, 256, 512, 1024] {
        let opts = CallOptions::default().block_size(b);
        let y = k.try_call_with(&[(&x).into()], 1, &mut [], opts).unwrap();
        assert_eq!(y[0].to_vec::<f32>(), plain.to_vec::<f32>(), "block_size {b}");
    }
    assert_eq!(plain.to_vec::<f32>(), vec![14., 126., 366.]);
    // With an output argument: it is replaced by the result.
    let mut out = f32s(&[0.; 3], &[3]);
    let opts = CallOptions::default().block_size(128);
    k.try_call_with(&[(&x).into()], 1, &mut [&mut out], opts).unwrap();
    assert_eq!(out.to_vec::<f32>(), vec![14., 126., 366.]);
    for bad in [0, 3, 100, 2048] {
        let mut out = f32s(&[7.; 3], &[3]);
        let opts = CallOptions::default().block_size(bad);
        let e = k.try_call_with(&[(&x).into()], 1, &mut [&mut out], opts).unwrap_err();
        assert!(
            matches!(&e, Error::Value { op, message } if op == "sumsq" && message.contains("power of two")),
            "{e:?}"
        );
        assert_eq!(out.to_vec::<f32>(), vec![7.; 3], "an error leaves the output as it was");
    }
    let e =
        k.try_call_with(&[(&x).into()], 1, &mut [], CallOptions::default().size(4)).unwrap_err();
    assert!(matches!(&e, Error::Value { op, .. } if op == "sumsq"), "{e:?}");
}

/// CuPy's per-signature cache (`len(kernel._cached_codes)`): one variant per dtypes and rank,
/// shared by clones; the same for a ReductionKernel.
#[test]
fn one_variant_per_signature() {
    let k = ek("T x, T y", "T z", "z = x + y", "user_kernel_1");
    let f = |v: &[f32]| f32s(v, &[v.len()]);
    assert_eq!(k.variants(), 0);
    k.call(&[(&f(&[1., 2.])).into(), (&f(&[3., 4.])).into()]);
    assert_eq!(k.variants(), 1);
    k.call(&[(&f(&[1., 2., 3.])).into(), (&f(&[3., 4., 5.])).into()]);
    assert_eq!(k.variants(), 1, "another size is the same variant");
    let d = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    k.call(&[(&d).into(), (&d).into()]);
    assert_eq!(k.variants(), 2, "float64");
    let clone = k.clone();
    clone.call(&[(&f32s(&[1.; 4], &[2, 2])).into(), (&f32s(&[1.; 4], &[2, 2])).into()]);
    assert_eq!((k.variants(), clone.variants()), (3, 3), "a 2-d loop, counted by both");
    k.call(&[(&d).into(), 2.0.into()]);
    assert_eq!(k.variants(), 4, "a scalar argument");
    let r = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "total").unwrap();
    r.call(&[(&f(&[1., 2.])).into()], None);
    r.call(&[(&f(&[1., 2., 3.])).into()], None);
    assert_eq!(r.variants(), 1);
    r.call(&[(&d).into()], None);
    assert_eq!(r.variants(), 2);
}

// ------------------------------------------------------------------------------------------------
// fuse
// ------------------------------------------------------------------------------------------------

/// A fused closure that reads a traced value (an `if` on an array's value) fails with a typed
/// error, as CuPy's TypeError, instead of being traced again on the real arguments; the same
/// computation written with `where_` fuses. Nothing is left marked as tracing afterwards.
#[test]
fn fuse_refuses_to_branch_on_a_traced_value() {
    let branchy = fuse("branchy", |a: &[Operand]| -> kiln::Result<Array> {
        let x = a[0].to_array();
        if x.try_sum(None)?.try_item::<f32>()? > 0.0 {
            x.try_multiply(2.0)
        } else {
            x.try_negative()
        }
    });
    let x = f32s(&[1., 2., 3.], &[3]);
    let e = branchy.try_call(&[(&x).into()]).unwrap_err();
    assert!(
        matches!(&e, Error::FuseTraced { kernel, message } if kernel == "branchy" && message.contains("branching on a traced value")),
        "{e:?}"
    );
    assert_eq!(branchy.traces(), 1, "stopped at the first trace, not traced on the real arguments");
    assert!(branchy.try_call(&[(&x).into()]).is_err(), "every call errs");
    // Outside a trace, values are read as usual.
    assert_eq!(x.sum(None).item::<f32>(), 6.0);
    let selected = fuse("selected", |a: &[Operand]| {
        let x = a[0].to_array();
        let positive = x.try_sum(None)?.try_greater(0.0)?;
        kiln::try_where_(&positive, &x.try_multiply(2.0)?, &x.try_negative()?)
    });
    assert_eq!(selected.call(&[(&x).into()])[0].to_vec::<f32>(), vec![2., 4., 6.]);
    let y = f32s(&[-1., -2.], &[2]);
    assert_eq!(selected.call(&[(&y).into()])[0].to_vec::<f32>(), vec![1., 2.]);
    let _ = DType::Float32;
}

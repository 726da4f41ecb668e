//! API-level tests: hash-consing of lowered graphs, `eval` keeping results, `explain` text that
//! parses back to the same graph, `.npy` round trips, and `ndarray` conversions.

use std::path::PathBuf;
use std::sync::Arc;

use kiln::ir::{Attrs, HostElement, OpKind};
use kiln::{s, Array, DType};

fn count(l: &kiln::Lowered, op: OpKind) -> usize {
    l.graph.nodes().iter().filter(|n| n.op == op).count()
}

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let p = std::env::temp_dir().join(format!(
            "kiln-test-{tag}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ------------------------------------------------------------------------------------------------
// Lowering
// ------------------------------------------------------------------------------------------------

#[test]
fn hash_consing_counts_shared_subexpressions_once() {
    let x = Array::from_vec(vec![0.5f32, 1.0, 2.0], &[3]);
    let a = x.sin();
    let y = &a + &x.sin(); // two `sin` expressions, one node
    let l = kiln::lower(&[&y]);
    assert_eq!(count(&l, OpKind::Sin), 1);
    assert_eq!(count(&l, OpKind::Input), 1);
    assert_eq!(l.graph.len(), 3, "input, sin, add");
    assert_eq!(l.inputs.len(), 1);
    assert_eq!(l.graph.outputs().len(), 1);

    // Constants and broadcasts built twice are shared too.
    let z = &(&x * 2.0) + &(&x * 2.0);
    let l = kiln::lower(&[&z]);
    assert_eq!(count(&l, OpKind::Mul), 1);
    assert_eq!(count(&l, OpKind::Const), 1);
    assert_eq!(count(&l, OpKind::Add), 1);

    // Several outputs share their common part; nodes are in topological order.
    let p = x.sin().cos();
    let q = x.sin().exp();
    let l = kiln::lower(&[&p, &q]);
    assert_eq!(count(&l, OpKind::Sin), 1);
    assert_eq!(l.graph.outputs().len(), 2);
    for (i, n) in l.graph.nodes().iter().enumerate() {
        assert!(n.inputs.iter().all(|j| j.index() < i), "node {i} uses a later node");
    }
    // Different ops on the same input are not merged.
    let l = kiln::lower(&[&(&x.sin() + &x.cos())]);
    assert_eq!(l.graph.len(), 4);
}

#[test]
fn lowering_records_dtypes_shapes_and_casts() {
    let a = Array::from_vec(vec![1i8, 2, 3], &[3, 1]);
    let b = Array::from_vec(vec![4u8, 5], &[2]);
    let y = &a + &b; // int8 + uint8 -> int16, broadcast to (3, 2)
    assert_eq!(y.dtype(), DType::Int16);
    assert_eq!(y.shape(), &[3, 2]);
    let l = kiln::lower(&[&y]);
    assert_eq!(count(&l, OpKind::Cast), 2);
    assert_eq!(count(&l, OpKind::BroadcastTo), 2);
    let out = l.graph.node(l.graph.outputs()[0]);
    assert_eq!(
        (out.op, out.dtype, out.shape.as_slice()),
        (OpKind::Add, DType::Int16, &[3usize, 2][..])
    );
}

#[test]
fn eval_keeps_results() {
    let x = Array::from_vec(vec![0.0f64, 0.5, 1.0], &[3]);
    let y = x.sin();
    assert!(!y.is_materialized());
    y.eval();
    assert!(y.is_materialized());
    // A graph built on y reads y's value as an input instead of recomputing it.
    let z = &y.cos() + &x;
    let l = kiln::lower(&[&z]);
    assert_eq!(count(&l, OpKind::Sin), 0, "y was recomputed");
    assert_eq!(count(&l, OpKind::Input), 2);
    let yv = y.try_to_host().unwrap();
    let k = l
        .inputs
        .iter()
        .position(|h| Arc::ptr_eq(h, &yv))
        .expect("y's value is an input of the graph");
    assert!(l.graph.nodes().iter().any(|n| n.op == OpKind::Input
        && n.attrs == Attrs::Input { index: k as u32 }
        && n.shape.as_slice() == [3]));
    let want: Vec<f64> = [0.0f64, 0.5, 1.0].iter().map(|v| v.sin().cos() + v).collect();
    assert_eq!(z.to_vec::<f64>(), want);
    // Asking again gives the same held value, not a new computation.
    assert!(Arc::ptr_eq(&y.try_to_host().unwrap(), &yv));
    // A held array lowered alone is just an input passed through.
    let l = kiln::lower(&[&y]);
    assert_eq!(l.graph.len(), 1);
}

#[test]
fn eval_all_materialises_every_array() {
    let x = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    let s = x.sum(0);
    let m = x.max(1);
    let t = &s * 2.0;
    kiln::eval_all(&[&s, &m, &t]);
    assert!(s.is_materialized() && m.is_materialized() && t.is_materialized());
    assert_eq!(s.to_vec::<f32>(), vec![4.0, 6.0]);
    assert_eq!(m.to_vec::<f32>(), vec![2.0, 4.0]);
    assert_eq!(t.to_vec::<f32>(), vec![8.0, 12.0]);
    assert_eq!(x.sum(None).item::<f32>(), 10.0);
}

#[test]
fn explain_parses_back_to_the_same_graph() {
    let x = Array::from_vec((0..12).map(|i| i as f32 * 0.5 - 2.0).collect(), &[3, 4]);
    let i = Array::from_vec(vec![1i8, -2, 3, -4], &[4]);
    let z = Array::from_vec(vec![num_complex::Complex32::new(1.0, -1.0); 4], &[4]);
    let y = (&(&x.sin() * 2.0) + &i).sum(kiln::axis(-1).keepdims());
    let w = kiln::where_(x.greater(0.0), &x, f32::NAN).max(0);
    let v = x.t().slice(&s![..;-1, 1..3]).astype(DType::Float16).reshape(&[-1]);
    let r = &kiln::arange(4).astype(DType::Float32)
        + &kiln::linspace(0.0, 1.0, 4).astype(DType::Float32);
    let c = &z * num_complex::Complex64::new(0.5, 2.0);
    let k = kiln::concatenate(&[&i.astype(DType::Bool), &x.slice(&s![0]).less(-1.0)], 0);
    let e = kiln::eye(3, Some(4), -1, DType::UInt8).argmax(1);
    let outs = [&y, &w, &v, &r, &c, &k, &e];
    let explained = kiln::explain(&outs);
    let text = explained.graph.clone();
    let g = kiln::ir::text::parse(&text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    assert_eq!(g, kiln::lower(&outs).graph, "parse(explain(..)) differs:\n{text}");
    // The text is canonical: printing the parsed graph gives the same bytes.
    assert_eq!(kiln::ir::text::print(&g), text);
    // The later stages parse too, and verify.
    let simplified = kiln::ir::text::parse(&explained.simplified).unwrap();
    kiln::ir::verify::verify(&simplified).unwrap();
    assert_eq!(
        kiln_compiler::fusion::parse_regions(&explained.regions).unwrap().len(),
        explained.report.kernel_count()
    );
    // explain does not compute anything.
    assert!(outs.iter().all(|a| !a.is_materialized()));
}

// ------------------------------------------------------------------------------------------------
// .npy files
// ------------------------------------------------------------------------------------------------

fn round_trip<T: HostElement>(
    dir: &TempDir,
    name: &str,
    data: Vec<T>,
    shape: &[usize],
    dtype: DType,
) {
    let a = Array::from_vec(data.clone(), shape);
    assert_eq!(a.dtype(), dtype);
    let p = dir.0.join(format!("{name}.npy"));
    a.save_npy(&p).unwrap();
    let b = kiln::load_npy(&p).unwrap();
    assert_eq!(b.dtype(), dtype, "{name}");
    assert_eq!(b.shape(), shape, "{name}");
    // Values compare with PartialEq (the signs of zero and NaN are checked by bits below).
    assert_eq!(b.to_vec::<T>(), data, "{name}");
}

#[test]
fn save_and_load_npy_round_trip() {
    use half::f16;
    use num_complex::{Complex32, Complex64};
    let d = TempDir::new("npy");
    round_trip(&d, "bool", vec![true, false, true, true, false, false], &[2, 3], DType::Bool);
    round_trip(&d, "i8", vec![-128i8, -1, 0, 1, 127, 5], &[3, 2], DType::Int8);
    round_trip(&d, "i16", vec![i16::MIN, -1, 0, 1, i16::MAX], &[5], DType::Int16);
    round_trip(&d, "i32", vec![i32::MIN, -7, 0, 7, i32::MAX, 1, 2, 3], &[2, 2, 2], DType::Int32);
    round_trip(&d, "i64", vec![i64::MIN, -1, i64::MAX], &[3], DType::Int64);
    round_trip(&d, "u8", vec![0u8, 1, 254, 255], &[2, 2], DType::UInt8);
    round_trip(&d, "u16", vec![0u16, u16::MAX], &[2], DType::UInt16);
    round_trip(&d, "u32", vec![0u32, u32::MAX, 12345], &[3, 1], DType::UInt32);
    round_trip(&d, "u64", vec![0u64, u64::MAX], &[1, 2], DType::UInt64);
    round_trip(
        &d,
        "f16",
        vec![f16::from_f32(0.1), f16::NEG_INFINITY, f16::MIN_POSITIVE_SUBNORMAL, f16::MAX],
        &[4],
        DType::Float16,
    );
    round_trip(
        &d,
        "f32",
        vec![0.1f32, -3.5, f32::INFINITY, f32::MIN_POSITIVE, 1e-45, -0.0],
        &[2, 3],
        DType::Float32,
    );
    round_trip(
        &d,
        "f64",
        vec![0.1f64, -3.5, f64::NEG_INFINITY, 5e-324, std::f64::consts::PI, -0.0],
        &[6],
        DType::Float64,
    );
    round_trip(
        &d,
        "c64",
        vec![Complex32::new(1.0, -2.0), Complex32::new(-0.5, 0.25)],
        &[2],
        DType::Complex64,
    );
    round_trip(
        &d,
        "c128",
        vec![Complex64::new(1e300, -2.0), Complex64::new(0.0, 1e-300)],
        &[1, 2],
        DType::Complex128,
    );
    // Rank 0 and empty arrays.
    round_trip(&d, "scalar", vec![42.5f64], &[], DType::Float64);
    round_trip(&d, "empty", Vec::<i32>::new(), &[3, 0, 2], DType::Int32);
    // Signs of zero and NaN survive (compare bits).
    let a = Array::from_vec(vec![-0.0f32, f32::NAN, 0.0], &[3]);
    let p = d.0.join("bits.npy");
    a.save_npy(&p).unwrap();
    let bits: Vec<u32> =
        kiln::load_npy(&p).unwrap().to_vec::<f32>().iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits, vec![(-0.0f32).to_bits(), f32::NAN.to_bits(), 0]);
}

#[test]
fn save_npy_of_a_lazy_expression() {
    let d = TempDir::new("lazy");
    let x = Array::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]);
    let y = (&x.t() * 10).astype(DType::Int16); // computed by save_npy
    let p = d.0.join("y.npy");
    y.save_npy(&p).unwrap();
    let z = kiln::load_npy(&p).unwrap();
    assert_eq!((z.dtype(), z.shape()), (DType::Int16, &[3usize, 2][..]));
    assert_eq!(z.to_vec::<i16>(), vec![10, 40, 20, 50, 30, 60]);
}

#[test]
fn kiln_writes_numpys_element_bytes() {
    // Loading a NumPy-written fixture and saving it again stores the same element bytes (the
    // header may be formatted differently).
    let d = TempDir::new("bytes");
    let dir = crate::numpy_fixtures::fixture_dir();
    for name in [
        "in_f16_x.npy",
        "in_f32_x.npy",
        "in_f64_special.npy",
        "in_i8_x.npy",
        "in_u8_x.npy",
        "in_i32_x.npy",
        "in_i64_x.npy",
        "in_bool_x.npy",
        "in_c64_x.npy",
        "in_f32_empty.npy",
    ] {
        let a = kiln::load_npy(dir.join(name)).unwrap();
        let p = d.0.join(name);
        a.save_npy(&p).unwrap();
        let theirs = std::fs::read(dir.join(name)).unwrap();
        let ours = std::fs::read(&p).unwrap();
        let n = a.nbytes();
        assert!(ours.len() >= n && theirs.len() >= n);
        assert_eq!(&ours[ours.len() - n..], &theirs[theirs.len() - n..], "{name}");
        assert!(ours.starts_with(b"\x93NUMPY"), "{name}: not an .npy file");
        let b = kiln::load_npy(&p).unwrap();
        assert_eq!((b.dtype(), b.shape()), (a.dtype(), a.shape()), "{name}");
    }
}

// ------------------------------------------------------------------------------------------------
// ndarray
// ------------------------------------------------------------------------------------------------

#[test]
fn to_ndarray_and_from_ndarray() {
    let x = Array::from_vec((0..6).map(|i| i as f64).collect(), &[2, 3]);
    let nd = x.to_ndarray::<f64>();
    assert_eq!(nd.shape(), &[2, 3]);
    assert_eq!(nd.iter().copied().collect::<Vec<_>>(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // From a non-contiguous view (the transpose): elements are taken in logical order.
    let t = Array::from_ndarray(&nd.t());
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.dtype(), DType::Float64);
    assert!(t.is_materialized());
    assert_eq!(t.to_vec::<f64>(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // Round trip through an expression.
    let y = (&x * 2.0).to_ndarray::<f64>();
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    let back = Array::from_ndarray(&y);
    assert_eq!(back.shape(), &[2, 3]);
    // Other dtypes, rank 0 and rank 3.
    let b = Array::from_vec(vec![true, false, true, false], &[1, 2, 2]).to_ndarray::<bool>();
    assert_eq!(b.ndim(), 3);
    let s = Array::scalar(7i64).to_ndarray::<i64>();
    assert_eq!((s.ndim(), s.iter().copied().collect::<Vec<_>>()), (0, vec![7]));
}

#[test]
fn array_metadata() {
    let x = Array::from_vec(vec![0u16; 24], &[2, 3, 4]);
    assert_eq!((x.ndim(), x.size(), x.nbytes(), x.dtype()), (3, 24, 48, DType::UInt16));
    let s = Array::scalar(2.5);
    assert_eq!((s.ndim(), s.size(), s.dtype()), (0, 1, DType::Float64));
    assert_eq!(Array::scalar(true).dtype(), DType::Bool);
    assert_eq!(Array::scalar(3).dtype(), DType::Int64);
    assert!(x.is_materialized() && !(&x + 1).is_materialized());
    let y = x.clone();
    assert!(y.same_expr(&x));
    assert_eq!(x.describe(), "Array(uint16 (2, 3, 4), input, materialized)");
}

/// A snapshot test of a generated kernel, as the README shows it: `kernel_code` gives the
/// kernels' code as `KILN_DUMP` writes it, compiled but not run; the MLIR is canonical and
/// shape-generic, so the snapshot holds on every machine and for every size.
#[test]
fn snapshot_of_a_generated_kernel() {
    let x = kiln::Array::from_vec(vec![0.5f32; 1024 * 64], &[1024, 64]);
    let y = (&x * &x).sum(1).sqrt();
    let mlir = kiln::kernel_code(&[&y], kiln::CodeStage::HostMlir).unwrap();
    assert!(mlir.starts_with("// region 0: reduction rows, optimized tier\n"), "{mlir}");
    let x2 = kiln::Array::from_vec(vec![1.5f32; 21], &[7, 3]);
    let y2 = (&x2 * &x2).sum(1).sqrt();
    assert_eq!(
        kiln::kernel_code(&[&y2], kiln::CodeStage::HostMlir).unwrap(),
        mlir,
        "shape-generic"
    );
    insta::assert_snapshot!(mlir);
    let gpu = kiln::kernel_code(&[&y], kiln::CodeStage::GpuMlir).unwrap();
    assert!(gpu.contains("func.func @kiln_gpu("), "{gpu}");
}

/// CuPy's `cupy.cuda` API is reachable from the `kiln` crate alone (`kiln::cuda`): devices,
/// streams, buffers; without a CUDA driver a typed error, not a panic.
#[test]
fn the_cuda_api_is_reachable_from_kiln_alone() {
    use kiln::cuda::{Device, DeviceBuffer, Stream};
    if !kiln::cuda::cuda_available() {
        assert!(Device::new(0).is_err());
        return;
    }
    let device = Device::new(0).unwrap();
    let _device = device.use_scoped().unwrap();
    let stream = Stream::non_blocking(device).unwrap();
    let _stream = stream.use_scoped();
    let b = DeviceBuffer::from_slice(&[1.0f32, 2.0]).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [1.0, 2.0]);
    stream.synchronize().unwrap();
}

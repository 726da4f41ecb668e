#![allow(clippy::approx_constant, clippy::excessive_precision)]
//! The reference evaluator's own tests (moved out of `mod.rs`, which had passed 1,000 lines).

use half::bf16;
use smallvec::smallvec;

use super::testutil::*;
use super::*;
use crate::graph::{Literal, NodeId};

#[test]
fn leaves_const_and_iota() {
    let mut g = Graph::new();
    // np.arange(3)[None, :] broadcast to (2, 3) as float16, and along axis 0 as int8
    let i1 = g.iota(DType::Float16, &[2, 3], 1).unwrap();
    let i0 = g.iota(DType::Int8, &[2, 3], 0).unwrap();
    let k = g.constant(DType::BFloat16, Literal::float(DType::BFloat16, 0.1)).unwrap();
    g.set_outputs(vec![i1, i0, k]);
    let out = evaluate(&g, &[]).unwrap();
    assert_eq!(f64s(&out[0]), vec![0., 1., 2., 0., 1., 2.]);
    assert_eq!(out[1].as_slice::<i8>().unwrap(), &[0, 0, 0, 1, 1, 1]);
    assert_eq!(out[2].shape(), &[] as &[usize]);
    // ml_dtypes.bfloat16(0.1) -> 0.10009765625
    assert_eq!(out[2].as_slice::<bf16>().unwrap(), &[bf16::from_f64(0.10009765625)]);
    // iota rounds to its dtype: np.arange(2050).astype(np.float16)[2049] -> 2048.0
    let mut g = Graph::new();
    let i = g.iota(DType::Float16, &[2050], 0).unwrap();
    g.push_output(i);
    assert_eq!(f64s(&evaluate(&g, &[]).unwrap()[0])[2049], 2048.0);
}

#[test]
fn a_small_program_with_shared_intermediates() {
    // x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32); b = np.array([10., 20., 30.], np.float32)
    // y = x + b (broadcast); z = np.sum(y * y, axis=1) -> [1694., 2117.]; np.sqrt(z) -> [41.158234, 46.010868]
    // and y itself as a second output
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[2, 3]);
    let b = g.input(1, DType::Float32, &[3]);
    let bb = g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![2, 3] }, &[b]).unwrap();
    let y = g.add(OpKind::Add, Attrs::None, &[x, bb]).unwrap();
    let yy = g.add(OpKind::Mul, Attrs::None, &[y, y]).unwrap();
    let z =
        g.add(OpKind::Sum, Attrs::Reduce { axes: smallvec![1], keepdims: false }, &[yy]).unwrap();
    let s = g.add(OpKind::Sqrt, Attrs::None, &[z]).unwrap();
    g.set_outputs(vec![s, y, s]);
    let out = run(&g, &[arr(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]), vec1(vec![10f32, 20., 30.])]);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &[1694f32.sqrt(), 2117f32.sqrt()]);
    assert_eq!(out[1].as_slice::<f32>().unwrap(), &[11., 22., 33., 14., 25., 36.]);
    assert_eq!(out[2], out[0]);
}

#[test]
fn take_reads_the_flattened_input_with_positions_wrapped() {
    // np.take(np.array([[1, 2, 3], [4, 5, 6]], np.int16), [[0, 5, -1], [6, -7, 2]], mode='wrap')
    // -> [[1, 6, 6], [1, 6, 3]]
    let mut g = Graph::new();
    let a = g.input(0, DType::Int16, &[2, 3]);
    let idx = g.input(1, DType::Int64, &[2, 3]);
    let t = g.add(OpKind::Take, Attrs::None, &[a, idx]).unwrap();
    let l = g.add(OpKind::Label, Attrs::Custom { name: "k".into() }, &[t]).unwrap();
    g.push_output(l);
    let out = run(
        &g,
        &[arr(&[2, 3], vec![1i16, 2, 3, 4, 5, 6]), arr(&[2, 3], vec![0i64, 5, -1, 6, -7, 2])],
    );
    assert_eq!(out[0].shape(), &[2, 3]);
    assert_eq!(out[0].as_slice::<i16>().unwrap(), &[1, 6, 6, 1, 6, 3]);
}

#[test]
fn scatters_combine_duplicates_in_position_order_with_rows_wrapped() {
    // b = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
    // np.add.at(b, [0, -1, 0, 4], [[10, 20], [30, 40], [50, 60], [70, 80]])
    // -> [[61, 82], [73, 84], [35, 46]]  (4 wraps to row 1, -1 to row 2)
    let a = arr(&[3, 2], vec![1f32, 2., 3., 4., 5., 6.]);
    let idx = vec1(vec![0i64, -1, 0, 4]);
    let v = arr(&[4, 2], vec![10f32, 20., 30., 40., 50., 60., 70., 80.]);
    let run_op = |op: OpKind| {
        let mut g = Graph::new();
        let (x, i, y) = (
            g.input(0, DType::Float32, &[3, 2]),
            g.input(1, DType::Int64, &[4]),
            g.input(2, DType::Float32, &[4, 2]),
        );
        let s = g.add(op, Attrs::None, &[x, i, y]).unwrap();
        g.push_output(s);
        run(&g, &[a.clone(), idx.clone(), v.clone()]).remove(0)
    };
    assert_eq!(
        run_op(OpKind::ScatterAdd).as_slice::<f32>().unwrap(),
        &[61., 82., 73., 84., 35., 46.]
    );
    // np.maximum.at and np.minimum.at of the same.
    assert_eq!(
        run_op(OpKind::ScatterMax).as_slice::<f32>().unwrap(),
        &[50., 60., 70., 80., 30., 40.]
    );
    assert_eq!(run_op(OpKind::ScatterMin).as_slice::<f32>().unwrap(), &[1., 2., 3., 4., 5., 6.]);
    // b[[0, -1, 0, 4]] = v: the last write of row 0 (position 2) wins.
    assert_eq!(run_op(OpKind::Scatter).as_slice::<f32>().unwrap(), &[50., 60., 70., 80., 30., 40.]);
}

#[test]
fn scatter_add_rounds_each_step_to_the_dtype() {
    // np.add.at(np.float16([0]), [0, 0, 0], np.float16([2048, 1, 1])) -> [2048]: 2049 is not
    // a float16, each 1 is lost, where a float64 sum would round 2050 to 2050.
    let mut g = Graph::new();
    let (x, i, y) = (
        g.input(0, DType::Float16, &[1]),
        g.input(1, DType::Int64, &[3]),
        g.input(2, DType::Float16, &[3]),
    );
    let s = g.add(OpKind::ScatterAdd, Attrs::None, &[x, i, y]).unwrap();
    g.push_output(s);
    let h = |v: f32| half::f16::from_f32(v);
    let out = run(
        &g,
        &[arr(&[1], vec![h(0.)]), vec1(vec![0i64, 0, 0]), arr(&[3], vec![h(2048.), h(1.), h(1.)])],
    );
    assert_eq!(out[0].as_slice::<half::f16>().unwrap(), &[h(2048.)]);
}

#[test]
fn scans_run_along_their_axis_each_step_rounded() {
    let run_scan = |op: OpKind, dt: DType, shape: &[usize], axis: usize, x: HostArray| {
        let mut g = Graph::new();
        let i = g.input(0, x.dtype(), x.shape());
        let s = g.add(op, Attrs::Axis { axis }, &[i]).unwrap();
        assert_eq!((g.node(s).dtype, g.node(s).shape.as_slice()), (dt, shape));
        g.push_output(s);
        run(&g, &[x]).remove(0)
    };
    // np.cumsum(np.int8([[100, 100, 100], [-100, -100, -100]]), axis=1) -> int64, no wrap
    let x = arr(&[2, 3], vec![100i8, 100, 100, -100, -100, -100]);
    let out = run_scan(OpKind::Cumsum, DType::Int64, &[2, 3], 1, x.clone());
    assert_eq!(out.as_slice::<i64>().unwrap(), &[100, 200, 300, -100, -200, -300]);
    // np.cumsum(..., axis=0)
    let out = run_scan(OpKind::Cumsum, DType::Int64, &[2, 3], 0, x);
    assert_eq!(out.as_slice::<i64>().unwrap(), &[100, 100, 100, 0, 0, 0]);
    // np.cumsum(np.float16([2048, 1, 1, 2])) -> [2048, 2048, 2048, 2050]: each step rounded.
    let h = |v: f32| half::f16::from_f32(v);
    let out = run_scan(
        OpKind::Cumsum,
        DType::Float16,
        &[4],
        0,
        arr(&[4], vec![h(2048.), h(1.), h(1.), h(2.)]),
    );
    assert_eq!(out.as_slice::<half::f16>().unwrap(), &[h(2048.), h(2048.), h(2048.), h(2050.)]);
    // np.maximum.accumulate([1, nan, 3]) -> [1, nan, nan]; np.minimum.accumulate([3, -0., 0.])
    // -> [3, -0., 0.] (of equal values np.minimum returns the second)
    let out = run_scan(OpKind::Cummax, DType::Float64, &[3], 0, vec1(vec![1.0f64, f64::NAN, 3.0]));
    let v = out.as_slice::<f64>().unwrap();
    assert!(v[0] == 1.0 && v[1].is_nan() && v[2].is_nan(), "{v:?}");
    let out = run_scan(OpKind::Cummin, DType::Float64, &[3], 0, vec1(vec![3.0f64, -0.0, 0.0]));
    assert_eq!(
        out.as_slice::<f64>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        [3.0f64, -0.0, 0.0].map(f64::to_bits)
    );
    // np.cumprod(np.uint8([16, 16, 16])) -> uint64 [16, 256, 4096]; bool cumsum counts.
    let out = run_scan(OpKind::Cumprod, DType::UInt64, &[3], 0, vec1(vec![16u8, 16, 16]));
    assert_eq!(out.as_slice::<u64>().unwrap(), &[16, 256, 4096]);
    let out = run_scan(OpKind::Cumsum, DType::Int64, &[3], 0, vec1(vec![true, false, true]));
    assert_eq!(out.as_slice::<i64>().unwrap(), &[1, 1, 2]);
}

#[test]
fn an_output_can_be_an_input() {
    let mut g = Graph::new();
    let x = g.input(0, DType::UInt16, &[2]);
    g.push_output(x);
    let out = run(&g, &[vec1(vec![1u16, 2])]);
    assert_eq!(out[0].as_slice::<u16>().unwrap(), &[1, 2]);
}

#[test]
fn input_errors() {
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[2]);
    let y = g.add(OpKind::Neg, Attrs::None, &[x]).unwrap();
    g.push_output(y);
    let e = evaluate(&g, &[]).unwrap_err();
    assert!(matches!(&e, IrError::Eval { node: 0, op, .. } if op == "input"), "{e}");
    let wrong_dtype = vec1(vec![1.0f64, 2.0]);
    assert!(matches!(evaluate(&g, &[&wrong_dtype]), Err(IrError::Eval { node: 0, .. })));
    let wrong_shape = vec1(vec![1.0f32, 2.0, 3.0]);
    let e = evaluate(&g, &[&wrong_shape]).unwrap_err();
    assert!(e.to_string().contains("input 0 is float32"), "{e}");
}

#[test]
fn custom_kernels_have_no_reference_body() {
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[2]);
    let k = g.insert(Node {
        op: OpKind::CustomKernel,
        attrs: Attrs::Custom { name: "my_kernel".into() },
        inputs: smallvec![x],
        dtype: DType::Float32,
        shape: smallvec![2],
    });
    g.push_output(k);
    let e = evaluate(&g, &[&vec1(vec![1.0f32, 2.0])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "evaluator: node %1 (custom): custom kernel my_kernel has no reference body"
    );
}

#[test]
fn mistyped_nodes_are_rejected() {
    // A node inserted unchecked whose declared dtype does not follow from its operands.
    let mut g = Graph::new();
    let x = g.input(0, DType::Int8, &[2]);
    let y = g.insert(Node {
        op: OpKind::Neg,
        attrs: Attrs::None,
        inputs: smallvec![x],
        dtype: DType::Int16,
        shape: smallvec![2],
    });
    g.push_output(y);
    let e = evaluate(&g, &[&vec1(vec![1i8, 2])]).unwrap_err();
    assert!(matches!(e, IrError::Eval { node: 1, .. }), "{e}");
    // An op applied outside its domain.
    let mut g = Graph::new();
    let x = g.input(0, DType::Int8, &[2]);
    let y = g.insert(Node {
        op: OpKind::Sin,
        attrs: Attrs::None,
        inputs: smallvec![x],
        dtype: DType::Int8,
        shape: smallvec![2],
    });
    g.push_output(y);
    assert!(matches!(evaluate(&g, &[&vec1(vec![1i8, 2])]), Err(IrError::Eval { node: 1, .. })));
}

#[test]
fn dead_nodes_are_not_evaluated() {
    // A custom kernel no output needs does not fail the evaluation.
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[2]);
    g.insert(Node {
        op: OpKind::CustomKernel,
        attrs: Attrs::Custom { name: "unused".into() },
        inputs: smallvec![x],
        dtype: DType::Float32,
        shape: smallvec![2],
    });
    let y = g.add(OpKind::Neg, Attrs::None, &[x]).unwrap();
    g.push_output(y);
    let out = run(&g, &[vec1(vec![1.0f32, -2.0])]);
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &[-1.0, 2.0]);
    assert_eq!(g.node(NodeId(2)).op, OpKind::Neg);
}

#[test]
fn every_op_has_a_meaning() {
    // Build each non-leaf op of the table on small operands of an accepted dtype and
    // evaluate it; the exhaustive match in eval_node guarantees there is a case for it.
    for &op in OpKind::ALL {
        let info = op.info();
        if op.is_leaf() || op == OpKind::CustomKernel {
            continue;
        }
        let dt = [DType::Float64, DType::Complex128, DType::Int32, DType::Bool, DType::UInt64]
            .into_iter()
            .find(|&d| info.domain.contains(d))
            .unwrap();
        let mut g = Graph::new();
        let attrs = match info.attrs {
            crate::ops::AttrKind::None => Attrs::None,
            crate::ops::AttrKind::DType if op == OpKind::Bitcast => {
                Attrs::DType { dtype: DType::Int64 }
            }
            crate::ops::AttrKind::DType => Attrs::DType { dtype: DType::Float32 },
            crate::ops::AttrKind::Shape => Attrs::Shape { shape: smallvec![2, 2] },
            crate::ops::AttrKind::Perm => Attrs::Perm { perm: smallvec![1, 0] },
            crate::ops::AttrKind::Reduce => Attrs::Reduce { axes: smallvec![1], keepdims: false },
            crate::ops::AttrKind::Axes => Attrs::Axes { axes: smallvec![0] },
            crate::ops::AttrKind::Axis => Attrs::Axis { axis: 0 },
            crate::ops::AttrKind::Slice => Attrs::Slice {
                dims: smallvec![
                    crate::SliceDim::normalize(2, None, None, -1),
                    crate::SliceDim::normalize(2, None, None, 1)
                ],
            },
            crate::ops::AttrKind::Fft => {
                Attrs::Fft { axes: smallvec![1], inverse: false, norm: crate::FftNorm::Backward }
            }
            crate::ops::AttrKind::RealFft => {
                Attrs::RealFft { axes: smallvec![0, 1], n: 2, norm: crate::FftNorm::Ortho }
            }
            crate::ops::AttrKind::Custom => Attrs::Custom { name: "k".into() },
            crate::ops::AttrKind::Linalg => Attrs::Linalg { output: 0, full_matrices: false },
            crate::ops::AttrKind::TopK => Attrs::TopK { axis: 1, k: 1, largest: true },
            crate::ops::AttrKind::Philox => Attrs::Philox { per_call: 4, words: 1 },
            other => unreachable!("{other:?}"),
        };
        let shape: &[usize] = match op {
            OpKind::ExpandDims => &[2],
            OpKind::Squeeze => &[1, 2],
            _ => &[2, 2],
        };
        let (n, inputs) = match (op, info.arity) {
            (OpKind::Take | OpKind::SortTake, _) => {
                (2, vec![HostArray::zeros(dt, shape), HostArray::zeros(DType::Int64, shape)])
            }
            (OpKind::ScatterAdd | OpKind::ScatterMax | OpKind::ScatterMin | OpKind::Scatter, _) => {
                (
                    3,
                    vec![
                        HostArray::zeros(dt, shape),
                        HostArray::zeros(DType::Int64, &[3]),
                        HostArray::zeros(dt, &[3, 2]),
                    ],
                )
            }
            (OpKind::Where | OpKind::Compact, crate::ops::Arity::Fixed(n)) => (
                n,
                std::iter::once(HostArray::zeros(DType::Bool, shape))
                    .chain((1..n).map(|_| HostArray::zeros(dt, shape)))
                    .collect(),
            ),
            // The identity: a matrix these take (positive definite, not singular).
            (OpKind::Cholesky | OpKind::Solve | OpKind::Inv, crate::ops::Arity::Fixed(n)) => {
                let eye = HostArray::from_vec(shape, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
                (n, vec![eye; n])
            }
            (_, crate::ops::Arity::Fixed(n)) => {
                (n, (0..n).map(|_| HostArray::zeros(dt, shape)).collect())
            }
            (_, crate::ops::Arity::Variadic) => {
                (2, vec![HostArray::zeros(dt, shape), HostArray::zeros(dt, shape)])
            }
        };
        let ids: Vec<_> = inputs
            .iter()
            .enumerate()
            .map(|(i, a)| g.input(i as u32, a.dtype(), a.shape()))
            .collect();
        assert_eq!(ids.len(), n);
        let r = g.add(op, attrs, &ids).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        g.push_output(r);
        let out = run(&g, &inputs);
        assert_eq!(out[0].dtype(), g.node(r).dtype, "{}", op.name());
        assert_eq!(out[0].shape(), g.node(r).shape.as_slice(), "{}", op.name());
    }
}

#[test]
fn a_million_elements_is_quick() {
    // Elementwise chain and a reduction over 1e6 float32 elements; generous bound for debug
    // builds on a shared machine (release is far faster).
    let n = 1_000_000;
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[1000, 1000]);
    let s = g.add(OpKind::Sin, Attrs::None, &[x]).unwrap();
    let m = g.add(OpKind::Mul, Attrs::None, &[s, x]).unwrap();
    let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[m]).unwrap();
    let r =
        g.add(OpKind::Sum, Attrs::Reduce { axes: smallvec![0], keepdims: false }, &[t]).unwrap();
    g.push_output(r);
    let a = arr(&[1000, 1000], (0..n).map(|i| i as f32 * 1e-6).collect::<Vec<_>>());
    let t0 = std::time::Instant::now();
    let out = run(&g, &[a]);
    assert_eq!(out[0].shape(), &[1000]);
    eprintln!("1e6-element graph evaluated in {:?}", t0.elapsed());
    assert!(t0.elapsed().as_secs_f64() < 20.0, "{:?}", t0.elapsed());
}

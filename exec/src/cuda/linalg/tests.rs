//! The device against the host executor (`cpu::vendor::linalg`), every kind and type, batched
//! and single matrices (both cuSOLVER paths), strided and broadcast operands; factors unique
//! only up to signs or phases by reconstruction. Skipped without a CUDA device.

use std::sync::Arc;

use kiln_compiler::vendor::{LinalgCall, LinalgKind, Strided};
use kiln_ir::host::Data;
use kiln_ir::{DType, HostArray, IrError, Layout};
use num_complex::{Complex32, Complex64 as C};

use super::super::DeviceArray;
use crate::ExecError;

const TYPES: [DType; 4] = [DType::Float32, DType::Float64, DType::Complex64, DType::Complex128];

fn gpu() -> bool {
    let ok = kiln_runtime::cuda_available();
    if !ok {
        eprintln!("no CUDA device: skipped");
    }
    ok
}

fn complex(d: DType) -> bool {
    matches!(d, DType::Complex64 | DType::Complex128)
}

fn tol(d: DType) -> f64 {
    match d {
        DType::Float32 | DType::Complex64 => 2e-3,
        _ => 1e-9,
    }
}

/// Deterministic values in [-1, 1).
fn random(n: usize, seed: u64, cplx: bool) -> Vec<C> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    (0..n).map(|_| C::new(next(), if cplx { next() } else { 0.0 })).collect()
}

fn host(d: DType, shape: &[usize], v: &[C]) -> HostArray {
    let data = match d {
        DType::Float32 => Data::Float32(v.iter().map(|x| x.re as f32).collect()),
        DType::Float64 => Data::Float64(v.iter().map(|x| x.re).collect()),
        DType::Complex64 => {
            Data::Complex64(v.iter().map(|x| Complex32::new(x.re as f32, x.im as f32)).collect())
        }
        _ => Data::Complex128(v.to_vec()),
    };
    HostArray::new(shape, data).unwrap()
}

fn values(h: &HostArray) -> Vec<C> {
    match h.data() {
        Data::Float32(v) => v.iter().map(|&x| C::new(x as f64, 0.0)).collect(),
        Data::Float64(v) => v.iter().map(|&x| C::new(x, 0.0)).collect(),
        Data::Complex64(v) => v.iter().map(|x| C::new(x.re as f64, x.im as f64)).collect(),
        Data::Complex128(v) => v.clone(),
        other => panic!("unexpected {:?}", other.dtype()),
    }
}

/// `a (m × k) · b (k × n)`, C order.
fn mm(a: &[C], m: usize, k: usize, b: &[C], n: usize) -> Vec<C> {
    let mut c = vec![C::new(0.0, 0.0); m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
        }
    }
    c
}

fn adj(a: &[C], r: usize, c: usize) -> Vec<C> {
    let mut t = vec![C::new(0.0, 0.0); r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j].conj();
        }
    }
    t
}

fn eye(n: usize) -> Vec<C> {
    (0..n * n).map(|i| C::new(if i / n == i % n { 1.0 } else { 0.0 }, 0.0)).collect()
}

fn close(what: &str, got: &[C], want: &[C], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().map(|x| x.norm()).fold(1.0f64, f64::max);
    let worst = got.iter().zip(want).map(|(g, w)| (g - w).norm()).fold(0.0f64, f64::max);
    assert!(
        worst <= tol * scale,
        "{what}: off by {worst} (scale {scale})\n got {got:?}\nwant {want:?}"
    );
}

fn matrix(v: &[C], i: usize, r: usize, c: usize) -> Vec<C> {
    v[i * r * c..(i + 1) * r * c].to_vec()
}

/// The call of `kind` over contiguous operands (`a` read through `a_layout` if given).
#[allow(clippy::too_many_arguments)]
fn call(
    kind: LinalgKind,
    dtype: DType,
    batch: &[usize],
    m: usize,
    n: usize,
    a_layout: Layout,
    b: Option<(Layout, usize)>,
    outputs: &[u8],
) -> LinalgCall {
    let real = match dtype {
        DType::Complex64 => DType::Float32,
        DType::Complex128 => DType::Float64,
        d => d,
    };
    let with = |tail: &[usize]| -> Vec<usize> { batch.iter().chain(tail).copied().collect() };
    let k = m.min(n);
    let out_types = outputs
        .iter()
        .map(|&o| match (kind, o) {
            (LinalgKind::Cholesky | LinalgKind::Inv, _) => (dtype, with(&[n, n])),
            (LinalgKind::Solve, _) => (dtype, with(&[n, b.as_ref().unwrap().1])),
            (LinalgKind::Det, _) | (LinalgKind::Slogdet, 0) => (dtype, with(&[])),
            (LinalgKind::Slogdet, _) => (real, with(&[])),
            (LinalgKind::Qr { full }, 0) => (dtype, with(&[m, if full { m } else { k }])),
            (LinalgKind::Qr { full }, _) => (dtype, with(&[if full { m } else { k }, n])),
            (LinalgKind::Svd { full }, 0) => (dtype, with(&[m, if full { m } else { k }])),
            (LinalgKind::Svd { .. }, 1) => (real, with(&[k])),
            (LinalgKind::Svd { full }, _) => (dtype, with(&[if full { n } else { k }, n])),
            (LinalgKind::Eigh, 0) => (real, with(&[n])),
            (LinalgKind::Eigh, _) => (dtype, with(&[n, n])),
        })
        .map(|(d, s)| (d, s.into()))
        .collect();
    LinalgCall {
        kind,
        dtype,
        batch: batch.into(),
        m,
        n,
        a: Strided { input: 0, layout: a_layout },
        b: b.map(|(layout, k)| (Strided { input: 1, layout }, k)),
        outputs: outputs.to_vec(),
        out_types,
    }
}

fn contiguous(batch: &[usize], r: usize, c: usize) -> Layout {
    let shape: Vec<usize> = batch.iter().copied().chain([r, c]).collect();
    Layout::contiguous(&shape)
}

/// The device's and the host's outputs of `call` on `inputs`.
fn both(call: &LinalgCall, inputs: &[HostArray]) -> (Vec<Vec<C>>, Vec<Vec<C>>) {
    assert!(super::supported(call), "{call:?} not supported");
    let dev: Vec<Arc<DeviceArray>> =
        inputs.iter().map(|h| Arc::new(DeviceArray::upload(h).unwrap())).collect();
    let outs = super::run(call, &dev).unwrap_or_else(|e| panic!("{call:?}: {e}"));
    let got: Vec<Vec<C>> = outs
        .iter()
        .zip(&call.out_types)
        .map(|(o, (d, s))| {
            assert_eq!((o.dtype(), o.shape()), (*d, &s[..]));
            values(&o.download().unwrap())
        })
        .collect();
    let want = crate::cpu::vendor::linalg::run(call, &inputs[0], inputs.get(1)).unwrap();
    (got, want.iter().map(values).collect())
}

fn device_error(call: &LinalgCall, inputs: &[HostArray]) -> String {
    let dev: Vec<Arc<DeviceArray>> =
        inputs.iter().map(|h| Arc::new(DeviceArray::upload(h).unwrap())).collect();
    match super::run(call, &dev) {
        Err(ExecError::Ir(IrError::LinAlg { message, .. })) => message,
        other => panic!("{call:?}: {:?}", other.map(|o| o.len())),
    }
}

/// Hermitian positive-definite matrices, with garbage above the diagonal (only the lower
/// triangle is read).
fn spd(d: DType, count: usize, n: usize, seed: u64) -> Vec<C> {
    let mut out = Vec::new();
    for i in 0..count {
        let x = random(n * n, seed + i as u64, complex(d));
        let mut a = mm(&x, n, n, &adj(&x, n, n), n);
        for r in 0..n {
            a[r * n + r] += C::new(n as f64, 0.0);
            for c in r + 1..n {
                a[r * n + c] = C::new(7.0, -3.0);
            }
        }
        out.extend(a);
    }
    out
}

#[test]
fn cholesky_solve_inv_det_match_the_host() {
    if !gpu() {
        return;
    }
    for d in TYPES {
        let t = tol(d);
        for (count, n) in [(3usize, 4usize), (1, 40)] {
            let batch: &[usize] = if count == 1 { &[] } else { &[count] };
            let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
            // cholesky
            let a = host(d, &shape, &spd(d, count, n, 1));
            let c = call(LinalgKind::Cholesky, d, batch, n, n, contiguous(batch, n, n), None, &[0]);
            let (got, want) = both(&c, std::slice::from_ref(&a));
            close(&format!("cholesky {d} {shape:?}"), &got[0], &want[0], t);
            // inv and det of a general matrix, read transposed (strides swapped)
            let g = host(d, &shape, &random(count * n * n, 5, complex(d)));
            let mut tl = contiguous(batch, n, n);
            let r = tl.rank();
            tl.strides.swap(r - 2, r - 1);
            let c = call(LinalgKind::Inv, d, batch, n, n, tl.clone(), None, &[0]);
            let (got, want) = both(&c, std::slice::from_ref(&g));
            close(&format!("inv {d} {shape:?}"), &got[0], &want[0], t * n as f64);
            let c = call(LinalgKind::Det, d, batch, n, n, tl.clone(), None, &[0]);
            let (got, want) = both(&c, std::slice::from_ref(&g));
            close(&format!("det {d} {shape:?}"), &got[0], &want[0], t * n as f64);
            let c = call(LinalgKind::Slogdet, d, batch, n, n, tl.clone(), None, &[1, 0]);
            let (got, want) = both(&c, std::slice::from_ref(&g));
            close(&format!("slogdet log {d} {shape:?}"), &got[0], &want[0], t);
            close(&format!("slogdet sign {d} {shape:?}"), &got[1], &want[1], t * n as f64);
            // solve, b broadcast over the batch (stride 0)
            let k = 3;
            let b = host(d, &[n, k], &random(n * k, 9, complex(d)));
            let bl = Layout {
                shape: batch.iter().copied().chain([n, k]).collect(),
                strides: batch.iter().map(|_| 0).chain([k as isize, 1]).collect(),
                offset: 0,
            };
            let c = call(LinalgKind::Solve, d, batch, n, n, tl, Some((bl, k)), &[0]);
            let (got, want) = both(&c, &[g, b]);
            close(&format!("solve {d} {shape:?}"), &got[0], &want[0], t * n as f64);
        }
    }
}

#[test]
fn singular_and_indefinite_matrices_are_errors_det_zero() {
    if !gpu() {
        return;
    }
    for d in TYPES {
        for count in [1usize, 3] {
            let n = 3;
            let batch: &[usize] = if count == 1 { &[] } else { &[count] };
            let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
            // The last matrix has two equal rows (real types: elimination leaves an exact
            // zero pivot; complex division x/x need not be exactly 1, so a zero row).
            let mut v = random(count * n * n, 3, complex(d));
            let last = (count - 1) * n * n;
            for j in 0..n {
                v[last + n + j] = if complex(d) { C::new(0.0, 0.0) } else { v[last + j] };
            }
            let a = host(d, &shape, &v);
            let l = contiguous(batch, n, n);
            for kind in [LinalgKind::Inv, LinalgKind::Solve] {
                let b = (kind == LinalgKind::Solve).then(|| (contiguous(batch, n, 1), 1));
                let c = call(kind, d, batch, n, n, l.clone(), b, &[0]);
                let mut inputs = vec![a.clone()];
                if kind == LinalgKind::Solve {
                    inputs.push(host(
                        d,
                        &contiguous(batch, n, 1).shape,
                        &random(count * n, 4, false),
                    ));
                }
                assert_eq!(device_error(&c, &inputs), "Singular matrix", "{kind:?} {d}");
            }
            let c = call(LinalgKind::Slogdet, d, batch, n, n, l.clone(), None, &[0, 1]);
            let (got, _) = both(&c, std::slice::from_ref(&a));
            assert_eq!(got[0][count - 1], C::new(0.0, 0.0));
            assert_eq!(got[1][count - 1].re, f64::NEG_INFINITY);
            let c = call(LinalgKind::Det, d, batch, n, n, l.clone(), None, &[0]);
            let (got, _) = both(&c, std::slice::from_ref(&a));
            assert_eq!(got[0][count - 1], C::new(0.0, 0.0));
            // Indefinite: -I.
            let neg: Vec<C> = (0..count).flat_map(|_| eye(n)).map(|x| -x).collect();
            let c = call(LinalgKind::Cholesky, d, batch, n, n, l.clone(), None, &[0]);
            assert_eq!(
                device_error(&c, &[host(d, &shape, &neg)]),
                "Matrix is not positive definite"
            );
        }
    }
}

#[test]
fn qr_svd_eigh_reconstruct_and_match_the_host() {
    if !gpu() {
        return;
    }
    for d in TYPES {
        let t = tol(d);
        for (count, m, n) in [(3usize, 6usize, 4usize), (3, 4, 6), (1, 40, 30), (1, 30, 40)] {
            let batch: &[usize] = if count == 1 { &[] } else { &[count] };
            let shape: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
            let av = random(count * m * n, 11, complex(d));
            let a = host(d, &shape, &av);
            let l = contiguous(batch, m, n);
            let k = m.min(n);
            for full in [false, true] {
                let what = format!("{d} {shape:?} full {full}");
                // qr: Q·R = A, Qᴴ·Q = I, R upper triangular.
                let c = call(LinalgKind::Qr { full }, d, batch, m, n, l.clone(), None, &[0, 1]);
                let (got, _) = both(&c, std::slice::from_ref(&a));
                let (qc, rr) = if full { (m, m) } else { (k, k) };
                for i in 0..count {
                    let q = matrix(&got[0], i, m, qc);
                    let r = matrix(&got[1], i, rr, n);
                    for (p, x) in r.iter().enumerate() {
                        if p / n > p % n {
                            assert_eq!(*x, C::new(0.0, 0.0), "qr R {what}");
                        }
                    }
                    close(
                        &format!("qr Q·R {what}"),
                        &mm(&q, m, qc, &r, n),
                        &matrix(&av, i, m, n),
                        t,
                    );
                    close(
                        &format!("qr QᴴQ {what}"),
                        &mm(&adj(&q, m, qc), qc, m, &q, qc),
                        &eye(qc),
                        t,
                    );
                }
                // svd: U·diag(s)·Vh = A, s as the host's.
                let c = call(LinalgKind::Svd { full }, d, batch, m, n, l.clone(), None, &[0, 1, 2]);
                let (got, want) = both(&c, std::slice::from_ref(&a));
                close(&format!("svd s {what}"), &got[1], &want[1], t);
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                for i in 0..count {
                    let u = matrix(&got[0], i, m, uc);
                    let s = matrix(&got[1], i, 1, k);
                    let vh = matrix(&got[2], i, vr, n);
                    // U[:, :k] · diag(s) · Vh[:k, :]
                    let mut us = vec![C::new(0.0, 0.0); m * k];
                    for r in 0..m {
                        for c in 0..k {
                            us[r * k + c] = u[r * uc + c] * s[c];
                        }
                    }
                    close(
                        &format!("svd U·S·Vh {what}"),
                        &mm(&us, m, k, &vh[..k * n], n),
                        &matrix(&av, i, m, n),
                        t,
                    );
                    close(
                        &format!("svd UᴴU {what}"),
                        &mm(&adj(&u, m, uc), uc, m, &u, uc),
                        &eye(uc),
                        t,
                    );
                    close(
                        &format!("svd VhVhᴴ {what}"),
                        &mm(&vh, vr, n, &adj(&vh, vr, n), vr),
                        &eye(vr),
                        t,
                    );
                }
            }
            // s alone.
            let c = call(LinalgKind::Svd { full: false }, d, batch, m, n, l.clone(), None, &[1]);
            let (got, want) = both(&c, std::slice::from_ref(&a));
            close(&format!("svdvals {d} {shape:?}"), &got[0], &want[0], t);
        }
        // eigh: the lower triangle's Hermitian matrix (garbage above).
        for (count, n) in [(3usize, 5usize), (1, 40)] {
            let batch: &[usize] = if count == 1 { &[] } else { &[count] };
            let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
            let mut v = random(count * n * n, 21, complex(d));
            let mut herm = v.clone();
            for i in 0..count {
                for r in 0..n {
                    v[i * n * n + r * n + r].im = 0.0;
                    for c in 0..n {
                        let (p, q) = (i * n * n + r * n + c, i * n * n + c * n + r);
                        herm[p] = if r >= c { v[p] } else { v[q].conj() };
                        if r == c {
                            herm[p] = C::new(v[p].re, 0.0);
                        }
                    }
                }
            }
            let a = host(d, &shape, &v);
            let l = contiguous(batch, n, n);
            let c = call(LinalgKind::Eigh, d, batch, n, n, l.clone(), None, &[0, 1]);
            let (got, want) = both(&c, std::slice::from_ref(&a));
            close(&format!("eigh w {d} {shape:?}"), &got[0], &want[0], t);
            for i in 0..count {
                let w = matrix(&got[0], i, 1, n);
                let vv = matrix(&got[1], i, n, n);
                let mut vw = vv.clone();
                for r in 0..n {
                    for c in 0..n {
                        vw[r * n + c] *= w[c];
                    }
                }
                let h = matrix(&herm, i, n, n);
                close(&format!("eigh A·v {d} {shape:?}"), &mm(&h, n, n, &vv, n), &vw, t * n as f64);
                close(
                    &format!("eigh vᴴv {d} {shape:?}"),
                    &mm(&adj(&vv, n, n), n, n, &vv, n),
                    &eye(n),
                    t,
                );
            }
            let c = call(LinalgKind::Eigh, d, batch, n, n, l, None, &[0]);
            let (got, want) = both(&c, &[a]);
            close(&format!("eigvalsh {d} {shape:?}"), &got[0], &want[0], t);
        }
    }
}

//! The ops handed to vendor libraries on the device: matmul, fft, rfft and irfft.
//!
//! These are the oracle for the libraries (cuBLAS and cuFFT on the GPU, `gemm` and `rustfft` on
//! the host), so they share no code with them: matmul is a compensated f64 sum per element, the
//! FFTs a radix-2 / direct / Bluestein transform in f64 written here.

use std::f64::consts::PI;

use num_complex::Complex64 as C64;

use super::reduce::neumaier;
use super::value::Value;
use super::view::positions;
use super::Tensor;
use crate::dtype::{DType, DTypeKind};
use crate::graph::FftNorm;
use crate::shape::{numel, Layout, Shape};

/// `np.matmul` over the last two axes with broadcast batch axes. Integers wrap (accumulated
/// modulo 2**64, then wrapped to the dtype); bools are `any(a and b)`; floats and complex
/// accumulate in f64 with compensated sums (products of float32 operands are exact in f64) and
/// round once.
pub fn matmul(a: &Tensor, b: &Tensor, dtype: DType, shape: Shape) -> Tensor {
    let (ra, rb, ro) = (a.shape.len(), b.shape.len(), shape.len());
    let (m, k, n) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
    let batch = &shape[..ro - 2];
    // For each output batch index, the batch index of each operand (its own C order).
    let batch_of = |s: &[usize]| -> Vec<usize> {
        let own = &s[..s.len() - 2];
        // Strides of `own` count whole matrices.
        positions(&Layout::contiguous(own).broadcast_to(batch))
    };
    let (ba, bb) = (batch_of(&a.shape), batch_of(&b.shape));
    let mut out = Vec::with_capacity(numel(&shape));
    let kind = dtype.kind();
    for (&ia, &ib) in ba.iter().zip(&bb) {
        let am = &a.vals[ia * m * k..(ia + 1) * m * k];
        let bm = &b.vals[ib * k * n..(ib + 1) * k * n];
        for i in 0..m {
            for j in 0..n {
                let pairs = (0..k).map(|p| (am[i * k + p], bm[p * n + j]));
                out.push(match kind {
                    DTypeKind::SignedInt => {
                        Value::Int(pairs.fold(0i64, |acc, (x, y)| match (x, y) {
                            (Value::Int(x), Value::Int(y)) => acc.wrapping_add(x.wrapping_mul(y)),
                            _ => unreachable!("int matmul operands"),
                        }))
                    }
                    DTypeKind::UnsignedInt => {
                        Value::UInt(pairs.fold(0u64, |acc, (x, y)| match (x, y) {
                            (Value::UInt(x), Value::UInt(y)) => acc.wrapping_add(x.wrapping_mul(y)),
                            _ => unreachable!("uint matmul operands"),
                        }))
                    }
                    DTypeKind::Float => Value::Float(neumaier(pairs.map(|(x, y)| match (x, y) {
                        (Value::Float(x), Value::Float(y)) => x * y,
                        _ => unreachable!("float matmul operands"),
                    }))),
                    DTypeKind::Complex => {
                        let zs: Vec<(C64, C64)> = pairs
                            .map(|(x, y)| match (x, y) {
                                (Value::Complex(x), Value::Complex(y)) => (x, y),
                                _ => unreachable!("complex matmul operands"),
                            })
                            .collect();
                        let re =
                            neumaier(zs.iter().flat_map(|(x, y)| [x.re * y.re, -(x.im * y.im)]));
                        let im = neumaier(zs.iter().flat_map(|(x, y)| [x.re * y.im, x.im * y.re]));
                        Value::Complex(C64::new(re, im))
                    }
                    DTypeKind::Bool => {
                        Value::Bool(pairs.into_iter().any(|(x, y)| x.truthy() && y.truthy()))
                    }
                });
            }
        }
    }
    Tensor { dtype, shape, vals: out }
}

/// `np.fft.fftn` / `np.fft.ifftn` over `axes`: one-dimensional transforms along each axis in
/// turn, computed in f64 and rounded once to `dtype`.
pub fn fft(x: &Tensor, axes: &[usize], inverse: bool, norm: FftNorm, dtype: DType) -> Tensor {
    let mut lanes = complex_lanes(x);
    for &axis in axes {
        transform_axis(&mut lanes, &x.shape, axis, inverse, norm);
    }
    from_lanes(lanes, x.shape.clone(), dtype)
}

/// `np.fft.rfftn` over `axes` (the last one halved): the real input as complex, transformed
/// over every axis, and the last axis cut to its first n/2+1 terms (the rest are their
/// conjugates).
pub fn rfft(x: &Tensor, axes: &[usize], norm: FftNorm, dtype: DType, shape: Shape) -> Tensor {
    let mut lanes = complex_lanes(x);
    for &axis in axes {
        transform_axis(&mut lanes, &x.shape, axis, false, norm);
    }
    let last = *axes.last().expect("an fft has axes");
    let ranges: Vec<(usize, isize, usize)> = x
        .shape
        .iter()
        .enumerate()
        .map(|(a, &n)| (0, 1, if a == last { shape[a] } else { n }))
        .collect();
    let kept = positions(&Layout::contiguous(&x.shape).slice(&ranges))
        .into_iter()
        .map(|p| lanes[p])
        .collect();
    from_lanes(kept, shape, dtype)
}

/// `np.fft.irfftn` over `axes`: inverse transforms over the others, then the last axis's n/2+1
/// terms extended to `n` by Hermitian symmetry (X[n-k] = conj X[k]), inverted, and the real part
/// kept. As NumPy, the imaginary parts of the terms that must be real (the first, and the n/2-th
/// for even n) are ignored: they contribute only to the dropped imaginary part.
pub fn irfft(
    x: &Tensor,
    axes: &[usize],
    n: usize,
    norm: FftNorm,
    dtype: DType,
    shape: Shape,
) -> Tensor {
    let (last, others) = axes.split_last().expect("an fft has axes");
    let mut half = complex_lanes(x);
    for &axis in others {
        transform_axis(&mut half, &x.shape, axis, true, norm);
    }
    // The full spectrum along the last axis.
    let m = x.shape[*last];
    let inner = numel(&x.shape[last + 1..]);
    let outer = numel(&x.shape[..*last]);
    let mut full = vec![C64::new(0.0, 0.0); outer * n * inner];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..n {
                let z = if k < m {
                    half[(o * m + k) * inner + i]
                } else {
                    half[(o * m + (n - k)) * inner + i].conj()
                };
                full[(o * n + k) * inner + i] = z;
            }
        }
    }
    transform_axis(&mut full, &shape, *last, true, norm);
    let vals = full.into_iter().map(|z| Value::Float(z.re)).collect();
    Tensor { dtype: DType::Float64, shape, vals }.cast_to(dtype)
}

fn complex_lanes(x: &Tensor) -> Vec<C64> {
    x.vals
        .iter()
        .map(|v| match *v {
            Value::Complex(z) => z,
            Value::Float(f) => C64::new(f, 0.0),
            other => unreachable!("fft of {other:?}"),
        })
        .collect()
}

fn from_lanes(lanes: Vec<C64>, shape: Shape, dtype: DType) -> Tensor {
    let t = Tensor {
        dtype: DType::Complex128,
        shape,
        vals: lanes.into_iter().map(Value::Complex).collect(),
    };
    t.cast_to(dtype)
}

/// The one-dimensional transform along `axis` of every lane of `vals` (C order, `shape`), in
/// place, scaled for `norm`.
fn transform_axis(vals: &mut [C64], shape: &[usize], axis: usize, inverse: bool, norm: FftNorm) {
    let n = shape[axis];
    if n == 0 || vals.is_empty() {
        return;
    }
    let inner = numel(&shape[axis + 1..]);
    let outer = numel(&shape[..axis]);
    let scale = norm.scale(inverse, n);
    let plan = Plan::new(n, inverse);
    let mut lane = vec![C64::new(0.0, 0.0); n];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * n * inner + j * inner + i;
            for (j, z) in lane.iter_mut().enumerate() {
                *z = vals[at(j)];
            }
            for (j, z) in plan.run(&lane).into_iter().enumerate() {
                vals[at(j)] = z * scale;
            }
        }
    }
}

/// exp(sign · 2πi · k/n), with k reduced modulo n and mirrored into [0, n/2] so that the angle
/// stays in [0, π].
fn twiddle(k: usize, n: usize, sign: f64) -> C64 {
    let k = k % n;
    let (k, mirror) = if 2 * k > n { (n - k, -1.0) } else { (k, 1.0) };
    let theta = 2.0 * PI * (k as f64 / n as f64);
    C64::new(theta.cos(), sign * mirror * theta.sin())
}

/// An unnormalised DFT of one length and direction: X[k] = Σ_j x[j] · exp(∓2πi jk/n).
/// Powers of two: iterative radix-2 Cooley-Tukey; small other lengths: the direct O(n²) sum;
/// large other lengths: Bluestein's chirp-z algorithm over a power-of-two convolution.
struct Plan {
    n: usize,
    kind: PlanKind,
}

enum PlanKind {
    Radix2 { twiddles: Vec<C64> },
    Direct { twiddles: Vec<C64> },
    Bluestein { chirp: Vec<C64>, filter_fft: Vec<C64>, fwd: Box<Plan>, inv: Box<Plan> },
}

const DIRECT_MAX: usize = 64;

impl Plan {
    fn new(n: usize, inverse: bool) -> Plan {
        let sign = if inverse { 1.0 } else { -1.0 };
        let table = |len: usize| (0..len).map(|k| twiddle(k, n, sign)).collect::<Vec<_>>();
        let kind = if n.is_power_of_two() {
            PlanKind::Radix2 { twiddles: table(n / 2) }
        } else if n <= DIRECT_MAX {
            PlanKind::Direct { twiddles: table(n) }
        } else {
            // chirp[k] = exp(sign · πi · k²/n) = twiddle(k² mod 2n, 2n).
            let chirp: Vec<C64> = (0..n)
                .map(|k| twiddle(((k as u128 * k as u128) % (2 * n as u128)) as usize, 2 * n, sign))
                .collect();
            let m = (2 * n - 1).next_power_of_two();
            let mut filter = vec![C64::new(0.0, 0.0); m];
            filter[0] = chirp[0].conj();
            for k in 1..n {
                filter[k] = chirp[k].conj();
                filter[m - k] = chirp[k].conj();
            }
            let fwd = Plan::new(m, false);
            let filter_fft = fwd.run(&filter);
            PlanKind::Bluestein {
                chirp,
                filter_fft,
                fwd: Box::new(fwd),
                inv: Box::new(Plan::new(m, true)),
            }
        };
        Plan { n, kind }
    }

    fn run(&self, x: &[C64]) -> Vec<C64> {
        let n = self.n;
        debug_assert_eq!(x.len(), n);
        match &self.kind {
            PlanKind::Direct { twiddles } => (0..n)
                .map(|k| {
                    let terms = || (0..n).map(|j| x[j] * twiddles[(j * k) % n]);
                    C64::new(neumaier(terms().map(|z| z.re)), neumaier(terms().map(|z| z.im)))
                })
                .collect(),
            PlanKind::Radix2 { twiddles } => {
                // Bit-reversed copy, then butterflies of growing length.
                let bits = n.trailing_zeros();
                let mut a: Vec<C64> =
                    (0..n)
                        .map(|i| {
                            if bits == 0 {
                                x[0]
                            } else {
                                x[i.reverse_bits() >> (usize::BITS - bits)]
                            }
                        })
                        .collect();
                let mut len = 2;
                while len <= n {
                    let step = n / len;
                    for start in (0..n).step_by(len) {
                        for j in 0..len / 2 {
                            let w = twiddles[j * step];
                            let u = a[start + j];
                            let v = a[start + j + len / 2] * w;
                            a[start + j] = u + v;
                            a[start + j + len / 2] = u - v;
                        }
                    }
                    len *= 2;
                }
                a
            }
            PlanKind::Bluestein { chirp, filter_fft, fwd, inv } => {
                let m = filter_fft.len();
                let mut a = vec![C64::new(0.0, 0.0); m];
                for k in 0..n {
                    a[k] = x[k] * chirp[k];
                }
                let af = fwd.run(&a);
                let prod: Vec<C64> = af.iter().zip(filter_fft).map(|(p, q)| p * q).collect();
                let conv = inv.run(&prod);
                (0..n).map(|k| conv[k] * chirp[k] / m as f64).collect()
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use num_complex::Complex64 as C64;

    use super::super::testutil::*;
    use super::Plan;
    use crate::graph::{Attrs, FftNorm};
    use crate::host::HostArray;
    use crate::ops::OpKind::{Fft, MatMul};

    /// The textbook O(n²) DFT, for cross-checking the fast paths.
    fn naive(x: &[C64], inverse: bool) -> Vec<C64> {
        let n = x.len();
        let s = if inverse { 1.0 } else { -1.0 };
        (0..n)
            .map(|k| {
                (0..n)
                    .map(|j| {
                        let t = 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                        x[j] * C64::new(t.cos(), s * t.sin())
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn fast_paths_agree_with_the_direct_sum() {
        for &n in &[1usize, 2, 3, 8, 12, 64, 65, 97, 128, 200] {
            let x: Vec<C64> =
                (0..n).map(|i| C64::new((i as f64 * 0.37).sin(), (i as f64 * 1.3).cos())).collect();
            for inverse in [false, true] {
                let got = Plan::new(n, inverse).run(&x);
                let want = naive(&x, inverse);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).norm() < 1e-12 * n as f64,
                        "n={n} inverse={inverse}: {g} vs {w}"
                    );
                }
            }
        }
    }

    fn c(re: f64, im: f64) -> C64 {
        C64::new(re, im)
    }

    #[test]
    fn integer_matmul_wraps() {
        // a = np.arange(6, dtype=np.int32).reshape(2, 3) * 1000003
        // b = (np.arange(12, dtype=np.int32).reshape(3, 4) - 5) * 70001
        // (a @ b).ravel() -> [2113699039, 1663931544, 1214164049, 764396554,
        //                     -831965772, 1663931544, -135138436, -1934208416]
        let a: Vec<i32> = (0..6).map(|v| v * 1000003).collect();
        let b: Vec<i32> = (0..12).map(|v| (v - 5) * 70001).collect();
        let r = apply(MatMul, &[arr(&[2, 3], a), arr(&[3, 4], b)]);
        assert_eq!(r.shape(), &[2, 4]);
        assert_eq!(
            r.as_slice::<i32>().unwrap(),
            &[
                2113699039,
                1663931544,
                1214164049,
                764396554,
                -831965772,
                1663931544,
                -135138436,
                -1934208416
            ]
        );
        // np.array([[100, 100], [-128, 1]], np.int8) @ np.array([[2, 1], [1, 1]], np.int8) -> [[44, -56], [1, -127]]
        let r = apply(
            MatMul,
            &[arr(&[2, 2], vec![100i8, 100, -128, 1]), arr(&[2, 2], vec![2i8, 1, 1, 1])],
        );
        assert_eq!(r.as_slice::<i8>().unwrap(), &[44, -56, 1, -127]);
    }

    #[test]
    fn float_matmul_with_broadcast_batches() {
        // rng = np.random.default_rng(0); A = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
        // B = rng.standard_normal((3, 4, 2)).astype(np.float32); A @ B has shape (2, 3, 3, 2)
        let a: Vec<f32> = vec![
            0.1257302165031433,
            -0.13210485875606537,
            0.6404226422309875,
            0.10490011423826218,
            -0.5356693863868713,
            0.3615950644016266,
            1.3040000200271606,
            0.9470809698104858,
            -0.7037352323532104,
            -1.2654215097427368,
            -0.6232744455337524,
            0.04132597893476486,
            -2.32503080368042,
            -0.218791663646698,
            -1.2459110021591187,
            -0.7322673797607422,
            -0.5442590117454529,
            -0.3163001537322998,
            0.4116305410861969,
            1.042513370513916,
            -0.12853465974330902,
            1.3664634227752686,
            -0.6651946902275085,
            0.35151007771492004,
        ];
        let b: Vec<f32> = vec![
            0.9034701585769653,
            0.0940122976899147,
            -0.7434992790222168,
            -0.9217253923416138,
            -0.4577258229255676,
            0.22019512951374054,
            -1.0096181631088257,
            -0.20917557179927826,
            -0.15922501683235168,
            0.5408455729484558,
            0.21465912461280823,
            0.35537269711494446,
            -0.6538286209106445,
            -0.12961363792419434,
            0.7839754819869995,
            1.4934310913085938,
            -1.2590655088424683,
            1.5139237642288208,
            1.3458753824234009,
            0.7813113927841187,
            0.2644556164741516,
            -0.31392282247543335,
            1.4580206871032715,
            1.9602583646774292,
        ];
        let r = apply(MatMul, &[arr(&[2, 1, 3, 4], a), arr(&[3, 4, 2], b)]);
        assert_eq!(r.shape(), &[2, 3, 3, 2]);
        // (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32): float64 products of
        // float32 values are exact, so this is the correctly rounded product the oracle gives.
        let want: Vec<f32> = vec![
            -0.18723367154598236,
            0.25266000628471375,
            -2.3058717250823975,
            -0.29462260007858276,
            0.5486015677452087,
            0.9543249607086182,
            -0.3848644495010376,
            0.09470775723457336,
            0.05280737206339836,
            1.0841705799102783,
            0.28033119440078735,
            -0.6878059506416321,
            -0.01378935482352972,
            0.09171897172927856,
            2.8868184089660645,
            0.9187237620353699,
            -0.9216251969337463,
            -1.7774200439453125,
            -0.6283284425735474,
            -0.13808673620224,
            -1.4975072145462036,
            0.112945556640625,
            -1.1825059652328491,
            -1.4915878772735596,
            0.563770055770874,
            -2.267338991165161,
            0.5669320225715637,
            1.0968043804168701,
            1.0242884159088135,
            1.0272607803344727,
            1.235750675201416,
            -4.735177040100098,
            1.8884211778640747,
            0.8432797789573669,
            2.337517499923706,
            1.7709121704101562,
        ];
        assert_eq!(r.as_slice::<f32>().unwrap(), &want[..]);
        // NumPy's own float32 matmul (A @ B) agrees to float32 rounding: e.g. its first element
        // is -0.18723368644714355, one ulp away.
    }

    #[test]
    fn complex_matmul() {
        // np.array([[1+2j, 3-1j], [0.5j, 2]]) @ np.array([[1-1j], [2+0.25j]]) -> [[9.25-0.25j], [4.5+1j]]
        let r = apply(
            MatMul,
            &[
                arr(&[2, 2], vec![c(1.0, 2.0), c(3.0, -1.0), c(0.0, 0.5), c(2.0, 0.0)]),
                arr(&[2, 1], vec![c(1.0, -1.0), c(2.0, 0.25)]),
            ],
        );
        assert_eq!(c64s(&r), vec![c(9.25, -0.25), c(4.5, 1.0)]);
        // An empty inner dimension gives zeros: (2, 0) @ (0, 3)
        let r = apply(
            MatMul,
            &[
                HostArray::zeros(crate::DType::Float64, &[2, 0]),
                HostArray::zeros(crate::DType::Float64, &[0, 3]),
            ],
        );
        assert_eq!(f64s(&r), vec![0.0; 6]);
    }

    fn fft_of(x: HostArray, axis: usize, inverse: bool, norm: FftNorm) -> HostArray {
        apply_with(Fft, Attrs::Fft { axes: smallvec::smallvec![axis], inverse, norm }, &[x])
    }

    #[test]
    fn fft_norms_match_numpy() {
        // x = np.array([1+0j, 2-1j, 0.5j, -1, 3+3j]); np.fft.fft(x, norm=...), np.fft.ifft(x, norm=...)
        let x = vec1(vec![c(1.0, 0.0), c(2.0, -1.0), c(0.0, 0.5), c(-1.0, 0.0), c(3.0, 3.0)]);
        let fwd_backward = [
            c(5.0, 2.5),
            c(-0.15623147278469274, 0.5767967555651016),
            c(-6.180771233567154, 0.07531627702520538),
            c(-0.5274326989322153, -3.0023672601500477),
            c(6.864435405284063, -0.14974577244025922),
        ];
        let inv_backward = [
            c(1.0, 0.5),
            c(1.3728870810568126, -0.029949154488051844),
            c(-0.10548653978644307, -0.6004734520300096),
            c(-1.236154246713431, 0.015063255405041076),
            c(-0.031246294556938548, 0.11535935111302031),
        ];
        let fwd_ortho = [
            c(2.23606797749979, 1.118033988749895),
            c(-0.06986883867429626, 0.2579513509289794),
            c(-2.7641249263262773, 0.033682463048112975),
            c(-0.23587507367372285, -1.3426994574230604),
            c(3.0698688386742967, -0.06696834530392683),
        ];
        let inv_ortho = [
            c(2.23606797749979, 1.118033988749895),
            c(3.0698688386742967, -0.06696834530392683),
            c(-0.23587507367372285, -1.3426994574230604),
            c(-2.7641249263262773, 0.033682463048112975),
            c(-0.06986883867429626, 0.2579513509289794),
        ];
        // norm="forward": forward scaled by 1/n (= ifft backward reversed), inverse unscaled.
        let fwd_forward =
            [inv_backward[0], inv_backward[4], inv_backward[3], inv_backward[2], inv_backward[1]];
        let inv_forward =
            [fwd_backward[0], fwd_backward[4], fwd_backward[3], fwd_backward[2], fwd_backward[1]];
        let cases = [
            (false, FftNorm::Backward, fwd_backward),
            (true, FftNorm::Backward, inv_backward),
            (false, FftNorm::Ortho, fwd_ortho),
            (true, FftNorm::Ortho, inv_ortho),
            (false, FftNorm::Forward, fwd_forward),
            (true, FftNorm::Forward, inv_forward),
        ];
        for (inverse, norm, want) in cases {
            let got = c64s(&fft_of(x.clone(), 0, inverse, norm));
            assert_close_c(&got, &want, 1e-15);
        }
    }

    #[test]
    fn fft_along_an_inner_axis() {
        // y = (np.arange(8) + 1j * np.arange(8)[::-1]).reshape(2, 4).T  (shape (4, 2))
        // np.fft.fft(y, axis=0).ravel() -> [6+22j, 22+6j, 4j, 4j, -2+2j, -2+2j, -4, -4]
        let y: Vec<C64> = [(0, 7), (4, 3), (1, 6), (5, 2), (2, 5), (6, 1), (3, 4), (7, 0)]
            .iter()
            .map(|&(re, im)| c(re as f64, im as f64))
            .collect();
        let got = c64s(&fft_of(arr(&[4, 2], y), 0, false, FftNorm::Backward));
        let want = [
            c(6.0, 22.0),
            c(22.0, 6.0),
            c(0.0, 4.0),
            c(0.0, 4.0),
            c(-2.0, 2.0),
            c(-2.0, 2.0),
            c(-4.0, 0.0),
            c(-4.0, 0.0),
        ];
        assert_close_c(&got, &want, 1e-15);
        // complex64 in, complex64 out
        let z = vec1(vec![
            num_complex::Complex32::new(1.0, 0.0),
            num_complex::Complex32::new(0.0, 1.0),
        ]);
        let r = fft_of(z, 0, false, FftNorm::Backward);
        assert_eq!(
            r.as_slice::<num_complex::Complex32>().unwrap(),
            &[num_complex::Complex32::new(1.0, 1.0), num_complex::Complex32::new(1.0, -1.0)]
        );
    }

    #[test]
    fn long_ffts_match_numpy() {
        // j = np.arange(n); x = np.sin(0.37*j) + 1j*np.cos(1.3*j); X = np.fft.fft(x);
        // Y = np.fft.ifft(x, norm="ortho"), at indices [0, 1, 17, n//2, n-1].
        // n = 60: direct sum; 997 (prime) and 1000: Bluestein; 1024: radix 2.
        type Row = (usize, [(f64, f64); 5], [(f64, f64); 5]);
        let rows: [Row; 4] = [
            (
                60,
                [
                    (5.389206800622817, 1.266954349640519),
                    (5.721204035902234, 1.4437335374527622),
                    (1.7011702491050174, 0.3191066762220862),
                    (-0.08143832825594444, 0.7335372049716613),
                    (5.988311520208859, 1.0952696043864214),
                ],
                [
                    (0.6957436062693307, 0.16356310321875928),
                    (0.7730876929890309, 0.14139869791319323),
                    (-0.2738486243734965, 0.06415842855005678),
                    (-0.0105136429692748, 0.09469924595595947),
                    (0.7386042650434668, 0.18638519823052233),
                ],
            ),
            (
                997,
                [
                    (3.810206009613655, 1.2414192638666206),
                    (3.806055022080756, 1.2865980422936367),
                    (4.030350070606216, 2.08347719501453),
                    (0.36982976906098713, 0.2220821854812582),
                    (3.816309203896094, 1.1962754855381745),
                ],
                [
                    (0.12067043505924784, 0.03931614256125327),
                    (0.12086372516153025, 0.037886424756660673),
                    (0.1331960734842134, 0.012970457303941243),
                    (0.011618788836029044, 0.0070834890766346085),
                    (0.12053897196505858, 0.04074696883009006),
                ],
            ),
            (
                1024,
                [
                    (3.032481664238092, -0.32317293876156283),
                    (3.0320794695056925, -0.3662583045532417),
                    (3.3152369704953406, -1.1213471510457187),
                    (-0.597751764252213, 0.44635801472802294),
                    (3.034835730956683, -0.28011264011774856),
                ],
                [
                    (0.09476505200744037, -0.010099154336298839),
                    (0.09483861659239629, -0.008753520003679566),
                    (0.10507366345809913, 0.0146159215313525),
                    (-0.018679742632881656, 0.013948687960250717),
                    (0.09475248342205286, -0.01144557201728889),
                ],
            ),
            (
                1000,
                [
                    (0.9671456398865227, -0.2889392519654548),
                    (0.9665362933618061, -0.25875344236682807),
                    (1.0125632098831852, 0.2673828991466387),
                    (0.302648321079813, 0.31352878467633305),
                    (0.9681296277783307, -0.31914564004088364),
                ],
                [
                    (0.030583830511424027, -0.0091370614163612),
                    (0.03061494694070546, -0.01009227127841407),
                    (0.03288167488470063, -0.026918868975134746),
                    (0.009570580246381567, 0.009914650716016995),
                    (0.030564561282399913, -0.00818250230288316),
                ],
            ),
        ];
        for (n, fwd, inv) in rows {
            let x: Vec<C64> =
                (0..n).map(|j| c((0.37 * j as f64).sin(), (1.3 * j as f64).cos())).collect();
            let idx = [0, 1, 17, n / 2, n - 1];
            let big = c64s(&fft_of(vec1(x.clone()), 0, false, FftNorm::Backward));
            let small = c64s(&fft_of(vec1(x), 0, true, FftNorm::Ortho));
            for (k, &i) in idx.iter().enumerate() {
                let (w, v) = (c(fwd[k].0, fwd[k].1), c(inv[k].0, inv[k].1));
                assert!((big[i] - w).norm() < 1e-12, "n={n} fft[{i}] = {} want {w}", big[i]);
                assert!((small[i] - v).norm() < 1e-13, "n={n} ifft[{i}] = {} want {v}", small[i]);
            }
        }
    }

    fn real_fft(
        op: crate::ops::OpKind,
        x: HostArray,
        axes: &[usize],
        n: usize,
        norm: FftNorm,
    ) -> HostArray {
        apply_with(op, Attrs::RealFft { axes: axes.into(), n, norm }, &[x])
    }

    #[test]
    fn real_ffts_match_numpy() {
        use crate::ops::OpKind::{Irfft, Rfft};
        // np.fft.rfft([1, 2, -1, 0.5, 3]) and norm="ortho"
        let x = vec1(vec![1.0f64, 2.0, -1.0, 0.5, 3.0]);
        let got = c64s(&real_fft(Rfft, x.clone(), &[0], 5, FftNorm::Backward));
        let want = [
            c(5.5, 0.0),
            c(2.949593469062211, 1.8327343947338632),
            c(-3.199593469062211, -0.8387995221502571),
        ];
        assert_close_c(&got, &want, 1e-15);
        let got = c64s(&real_fft(Rfft, x, &[0], 5, FftNorm::Ortho));
        let want = [
            c(2.4596747752497685, 0.0),
            c(1.3190983005625052, 0.8196237382653702),
            c(-1.4309016994374948, -0.37512255020446306),
        ];
        assert_close_c(&got, &want, 1e-15);
        // h = [1+0.5j, 2-1j, -0.25+3j]; np.fft.irfft(h, 4) and irfft(h, 5, norm="forward"): the
        // imaginary parts of h[0] (and of h[2] for n = 4) are ignored.
        let h = vec1(vec![c(1.0, 0.5), c(2.0, -1.0), c(-0.25, 3.0)]);
        let got = f64s(&real_fft(Irfft, h.clone(), &[0], 4, FftNorm::Backward));
        assert_eq!(got, vec![1.1875, 0.8125, -0.8125, -0.1875]);
        let got = f64s(&real_fft(Irfft, h, &[0], 5, FftNorm::Forward));
        let want =
            [4.5, 1.0159779935227318, 4.491333127668604, -9.27248607704313, 4.265174955851795];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-14, "{got:?}");
        }
    }

    #[test]
    fn multi_axis_ffts_match_numpy() {
        use crate::ops::OpKind::{Irfft, Rfft};
        // np.fft.fft2([[1+1j, 2, 3j], [-1, 0.5-0.5j, 4]])
        let y = arr(
            &[2, 3],
            vec![c(1.0, 1.0), c(2.0, 0.0), c(0.0, 3.0), c(-1.0, 0.0), c(0.5, -0.5), c(4.0, 0.0)],
        );
        let got = c64s(&apply_with(
            Fft,
            Attrs::Fft { axes: smallvec::smallvec![0, 1], inverse: false, norm: FftNorm::Backward },
            &[y],
        ));
        let want = [
            c(6.5, 3.5),
            c(-6.281088913245535, 1.049038105676658),
            c(-0.2189110867544648, -1.549038105676658),
            c(-0.5, 4.5),
            c(1.0849364905389032, -5.513139720814412),
            c(5.415063509461097, 4.013139720814412),
        ];
        assert_close_c(&got, &want, 1e-15);
        // r (3, 4); np.fft.rfftn(r, axes=(1, 0)) halves axis 0: shape (2, 4); irfftn inverts it.
        let rv = vec![1.0f64, 2.0, 3.0, 4.0, 0.0, -1.0, 2.0, 0.5, 3.0, 3.0, -2.0, 1.0];
        let spec = real_fft(Rfft, arr(&[3, 4], rv.clone()), &[1, 0], 3, FftNorm::Backward);
        assert_eq!(spec.shape(), &[2, 4]);
        let want = [
            c(16.5, 0.0),
            c(1.0, 1.5),
            c(-2.5, 0.0),
            c(1.0, -1.5),
            c(6.75, 3.031088913245535),
            c(-0.4689110867544648, 8.31217782649107),
            c(-1.75, -4.7631397208144115),
            c(-6.531088913245535, 3.8121778264910704),
        ];
        assert_close_c(&c64s(&spec), &want, 1e-14);
        let back = f64s(&real_fft(Irfft, spec, &[1, 0], 3, FftNorm::Backward));
        for (g, w) in back.iter().zip(&rv) {
            assert!((g - w).abs() < 1e-14, "{back:?}");
        }
    }

    #[test]
    fn bool_matmul_is_or_of_ands() {
        // np.array([[True, False], [False, False]]) @ np.array([[False, True], [True, True]])
        let a = arr(&[2, 2], vec![true, false, false, false]);
        let b = arr(&[2, 2], vec![false, true, true, true]);
        assert_eq!(
            apply(MatMul, &[a, b]).as_slice::<bool>().unwrap(),
            &[false, true, false, false]
        );
    }
}

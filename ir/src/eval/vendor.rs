//! The ops handed to vendor libraries on the device: matmul and fft.

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
/// modulo 2**64, then wrapped to the dtype); floats and complex accumulate in f64 with
/// compensated sums (products of float32 operands are exact in f64) and round once.
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
                    DTypeKind::SignedInt => Value::Int(pairs.fold(0i64, |acc, (x, y)| match (x, y) {
                        (Value::Int(x), Value::Int(y)) => acc.wrapping_add(x.wrapping_mul(y)),
                        _ => unreachable!("int matmul operands"),
                    })),
                    DTypeKind::UnsignedInt => Value::UInt(pairs.fold(0u64, |acc, (x, y)| match (x, y) {
                        (Value::UInt(x), Value::UInt(y)) => acc.wrapping_add(x.wrapping_mul(y)),
                        _ => unreachable!("uint matmul operands"),
                    })),
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
                        let re = neumaier(zs.iter().flat_map(|(x, y)| [x.re * y.re, -(x.im * y.im)]));
                        let im = neumaier(zs.iter().flat_map(|(x, y)| [x.re * y.im, x.im * y.re]));
                        Value::Complex(C64::new(re, im))
                    }
                    DTypeKind::Bool => unreachable!("matmul takes numbers"),
                });
            }
        }
    }
    Tensor { dtype, shape, vals: out }
}

/// `np.fft.fft` / `np.fft.ifft` along `axis`, computed in f64 and rounded once to `dtype`.
pub fn fft(x: &Tensor, axis: usize, inverse: bool, norm: FftNorm, dtype: DType) -> Tensor {
    let n = x.shape[axis];
    let inner = numel(&x.shape[axis + 1..]);
    let outer = numel(&x.shape[..axis]);
    let scale = match (norm, inverse) {
        (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
        (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n as f64,
        (FftNorm::Ortho, _) => 1.0 / (n as f64).sqrt(),
    };
    let mut vals = x.vals.clone();
    if n == 0 {
        return Tensor { dtype, shape: x.shape.clone(), vals };
    }
    let plan = Plan::new(n, inverse);
    let mut lane = vec![C64::new(0.0, 0.0); n];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * n * inner + j * inner + i;
            for (j, z) in lane.iter_mut().enumerate() {
                *z = match vals[at(j)] {
                    Value::Complex(z) => z,
                    other => unreachable!("fft of non-complex {other:?}"),
                };
            }
            let y = plan.run(&lane);
            for (j, z) in y.into_iter().enumerate() {
                vals[at(j)] = Value::Complex(z * scale);
            }
        }
    }
    Tensor { dtype, shape: x.shape.clone(), vals }
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
            let chirp: Vec<C64> = (0..n).map(|k| twiddle(((k as u128 * k as u128) % (2 * n as u128)) as usize, 2 * n, sign)).collect();
            let m = (2 * n - 1).next_power_of_two();
            let mut filter = vec![C64::new(0.0, 0.0); m];
            filter[0] = chirp[0].conj();
            for k in 1..n {
                filter[k] = chirp[k].conj();
                filter[m - k] = chirp[k].conj();
            }
            let fwd = Plan::new(m, false);
            let filter_fft = fwd.run(&filter);
            PlanKind::Bluestein { chirp, filter_fft, fwd: Box::new(fwd), inv: Box::new(Plan::new(m, true)) }
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
                let mut a: Vec<C64> = (0..n)
                    .map(|i| if bits == 0 { x[0] } else { x[i.reverse_bits() >> (usize::BITS - bits)] })
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
mod tests {
    use num_complex::Complex64 as C64;

    use super::Plan;

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
            let x: Vec<C64> = (0..n).map(|i| C64::new((i as f64 * 0.37).sin(), (i as f64 * 1.3).cos())).collect();
            for inverse in [false, true] {
                let got = Plan::new(n, inverse).run(&x);
                let want = naive(&x, inverse);
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).norm() < 1e-12 * n as f64, "n={n} inverse={inverse}: {g} vs {w}");
                }
            }
        }
    }
}

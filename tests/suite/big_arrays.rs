//! Arrays of more than 2^31 elements on a CUDA device: kernels take 64-bit index math when a
//! size needs it (issue 4: "arrays of more than 2^31 elements must work"). Each test is named
//! `gpu_...` and prints `skipped: no GPU` on the CPU backend (several GB of memory and minutes
//! of host time there). Values are integers, so every check is exact.

use kiln::{s, DType};

use crate::vendor_gpu::on_gpu;

/// 2^31 + 77 elements.
const N: usize = (1 << 31) + 77;

/// sum of i % 1000 over 0 <= i < n.
fn sum_of_residues(n: u64) -> i64 {
    let full = (n / 1000) as i64 * (999 * 1000 / 2);
    let rest = (n % 1000) as i64;
    full + rest * (rest - 1) / 2
}

#[test]
fn gpu_elementwise_and_sum_over_more_than_2_pow_31_elements() {
    if !on_gpu() {
        return;
    }
    // One elementwise kernel writing 2^31 + 77 int16 values (4 GB).
    let y = (kiln::arange(N as i64) % 1000).astype(DType::Int16);
    y.eval();
    let n = N as i64;
    let read = |lo: i64, hi: i64| {
        let h = y.slice(&s![lo..hi]).try_to_host().unwrap();
        h.as_slice::<i16>().unwrap().to_vec()
    };
    let want = |lo: i64, hi: i64| (lo..hi).map(|i| (i % 1000) as i16).collect::<Vec<_>>();
    let edge = 1i64 << 31;
    for (lo, hi) in [(0, 5), (edge - 3, edge + 3), (n - 5, n)] {
        assert_eq!(read(lo, hi), want(lo, hi), "y[{lo}..{hi}]");
    }
    // A whole-array reduction over all of it, and one over a slice starting past 2^31.
    let total = y.astype(DType::Int64).sum(None).try_to_host().unwrap();
    assert_eq!(total.as_slice::<i64>().unwrap(), &[sum_of_residues(N as u64)]);
    let tail = y.slice(&s![edge..]).astype(DType::Int64).sum(None).try_to_host().unwrap();
    let want_tail = sum_of_residues(N as u64) - sum_of_residues(edge as u64);
    assert_eq!(tail.as_slice::<i64>().unwrap(), &[want_tail]);
}

#[test]
fn gpu_column_sums_of_a_2d_index_space_over_2_pow_31() {
    if !on_gpu() {
        return;
    }
    // 65537 x 32771 = 2,147,713,027 elements, computed in the kernel (no input buffer): the
    // reduction's index math must not wrap at 2^31.
    let (m, k) = (65537usize, 32771usize);
    let x = kiln::arange((m * k) as i64).reshape(&[m as i64, k as i64]) % 7;
    let got = x.astype(DType::Int8).astype(DType::Int64).sum(0).try_to_host().unwrap();
    let got = got.as_slice::<i64>().unwrap();
    // Column j: sum over rows i of (i k + j) % 7; i % 7 = r for ceil((m - r) / 7) rows.
    let want: Vec<i64> = (0..k)
        .map(|j| (0..7).map(|r| (m - r).div_ceil(7) as i64 * (((r * k + j) % 7) as i64)).sum())
        .collect();
    assert_eq!(got.len(), k);
    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "column {j}");
    }
}

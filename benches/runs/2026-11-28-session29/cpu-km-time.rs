//! The host k-means iteration of `benches/cpu_peers.rs` (`kmeans_iter_262144x64_k10`: the same
//! data, the same expression), timed by itself: per round, `ITERS` iterations, the median wall
//! time and the process's CPU time (user + system, all threads) per iteration. The CPU time
//! is less disturbed than the wall time by other processes on a loaded machine. Session 29:
//! `KM_HUGE=1` asks for transparent huge pages for the points (as NumPy does), `KM_SHIFT=s`
//! moves every coordinate by `s`. Built as a temporary example: `cp` it to
//! `examples/cpu_km_time.rs`, `cargo build --release --example
//! cpu_km_time`, then `[KM_N=points] target/release/examples/cpu_km_time [ROUNDS] [ITERS]`.
use std::time::Instant;

use kiln::Array;

fn normal(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n).map(|_| (0..4).map(|_| u()).sum::<f32>() * 1.732 - 3.464).collect()
}

fn cpu_seconds() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given; RUSAGE_SELF is a valid target.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (rounds, iters) = (args.first().copied().unwrap_or(5), args.get(1).copied().unwrap_or(100));
    let kn: usize = std::env::var("KM_N").ok().map_or(1 << 18, |v| v.parse().unwrap());
    const KD: usize = 64;
    const KK: usize = 10;
    // `cpu_peers` draws six arrays from seeds 1..=6 first; the points are seed 7.
    // `KM_HUGE=1`: the points' buffer asked for transparent huge pages before its first write
    // (as NumPy asks for its large arrays), for measuring what the TLB costs.
    // `KM_SHIFT=s`: every coordinate moved by `s` (data far from the origin).
    let shift: f32 = std::env::var("KM_SHIFT").ok().map_or(0.0, |v| v.parse().unwrap());
    let data: Vec<f32> = normal(kn * KD, 7).into_iter().map(|v| v + shift).collect();
    let data = if std::env::var("KM_HUGE").is_ok_and(|v| v == "1") {
        let mut v: Vec<f32> = Vec::with_capacity(data.len());
        let (start, len) = (v.as_mut_ptr() as usize, data.len() * 4);
        let huge = 2usize << 20;
        let (lo, hi) = (start.next_multiple_of(huge), (start + len) & !(huge - 1));
        if hi > lo {
            // SAFETY: [lo, hi) lies inside the allocation just made; the advice changes no
            // contents, only how its pages are backed.
            unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        }
        v.extend_from_slice(&data);
        v
    } else {
        data
    };
    let px = Array::from_vec(data, &[kn, KD]);
    px.eval();
    let pc = px.slice(&kiln::s![..KK as i64]);
    pc.eval();
    let one = || {
        let labels = (px.expand_dims(&[1]) - pc.expand_dims(&[0])).square().sum(2).argmin(1);
        let sums = kiln::zeros(&[KK, KD], kiln::DType::Float32).add_at(&labels, &px);
        let counts = kiln::bincount(&labels, None, KK).astype(kiln::DType::Float32);
        (&sums / counts.maximum(1.0f32).expand_dims(&[1])).eval();
    };
    for _ in 0..20 {
        one();
    }
    for r in 0..rounds {
        let mut ts = Vec::with_capacity(iters);
        let c0 = cpu_seconds();
        for _ in 0..iters {
            let t0 = Instant::now();
            one();
            ts.push(t0.elapsed().as_secs_f64());
        }
        let cpu = (cpu_seconds() - c0) / iters as f64;
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "round {r}: median {:.3} ms, min {:.3} ms, cpu {:.3} ms an iteration",
            ts[iters / 2] * 1e3,
            ts[0] * 1e3,
            cpu * 1e3
        );
    }
}

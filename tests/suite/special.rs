//! scipy.special's `erfc`, `erfinv`, `gammaln`, `digamma` and NumPy's `gcd`, `lcm` (issue 20
//! §3) against SciPy's and NumPy's fixtures (`tests/fixtures/special/`, from
//! `make_special_fixtures.py`), on whichever backend runs the suite: every dtype class and
//! SciPy's loop selection (integers and float16 to float64, erfinv's float16 to float32),
//! special values, poles, negative integers, the signed minimum; the host code against the
//! reference evaluator within `ulps::host_ulps` (float16 and bfloat16 at every value); the
//! typed errors.

use half::{bf16, f16};
use kiln::ir::{Attrs, Graph, OpKind};
use kiln::{Array, DType, HostArray};
use kiln_compiler::fusion::partition;
use kiln_compiler::schedule::schedule;
use kiln_exec::cpu::HostRun;

use crate::numpy_fixtures::fixture_cases;
use crate::ulps::{float_values, host_ulps, ulp_distance};

fixture_cases! { "special/cases.txt";
    erfc_f64_x, erfc_f32_x, erfc_f16_x, erfc_i8_x, erfc_i32_x, erfc_u16_x, erfc_bool_x,
    erfc_f32_empty, erfc_f64_pos => |a| a[0].erfc();
    erfinv_f64_x, erfinv_f32_x, erfinv_f16_x, erfinv_i8_x, erfinv_i32_x, erfinv_u16_x,
    erfinv_bool_x, erfinv_f32_empty, erfinv_f64_unit, erfinv_f32_unit,
    erfinv_f16_unit => |a| kiln::special::erfinv(&a[0]);
    gammaln_f64_x, gammaln_f32_x, gammaln_f16_x, gammaln_i8_x, gammaln_i32_x, gammaln_u16_x,
    gammaln_bool_x, gammaln_f32_empty, gammaln_f64_pos, gammaln_f64_neg,
    gammaln_f32_neg => |a| a[0].gammaln();
    digamma_f64_x, digamma_f32_x, digamma_f16_x, digamma_i8_x, digamma_i32_x, digamma_u16_x,
    digamma_bool_x, digamma_f32_empty, digamma_f64_pos, digamma_f64_neg,
    digamma_f32_neg => |a| kiln::special::digamma(&a[0]);
    psi_f64_x => |a| kiln::special::psi(&a[0]);
    erfc_times_two_f32 => |a| kiln::special::erfc(&a[0]) * 2.0f32;
    gcd_i8, gcd_i8_u8, gcd_i32, gcd_i64, gcd_u64, gcd_broadcast => |a| kiln::gcd(&a[0], &a[1]);
    lcm_i8, lcm_i8_u8, lcm_i32, lcm_i64, lcm_u64, lcm_broadcast => |a| kiln::lcm(&a[0], &a[1]);
    gcd_empty => |a| kiln::gcd(&a[0], &a[0]);
    lcm_empty => |a| kiln::lcm(&a[0], &a[0]);
    gcd_scalar => |a| kiln::gcd(&a[0], 12);
    lcm_scalar => |a| kiln::lcm(&a[0], 12);
}

type Special = fn(&Array) -> Array;

const FUNCTIONS: [(&str, OpKind, Special); 4] = [
    ("erfc", OpKind::Erfc, kiln::special::erfc),
    ("erfinv", OpKind::Erfinv, kiln::special::erfinv),
    ("gammaln", OpKind::Gammaln, kiln::special::gammaln),
    ("digamma", OpKind::Digamma, kiln::special::digamma),
];

/// A deterministic sample: uniform in [-scale, scale] (xorshift-free LCG), `n` values.
fn sample(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    let mut r = seed;
    (0..n)
        .map(|_| {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Negative values moved to n + 1/8 .. n + 7/8 (as the fixtures): away from the zeros of
/// gammaln and digamma between their poles, where the reflection's cancellation magnifies any
/// implementation's last bits without bound.
fn off_zeros(v: f64) -> f64 {
    if v < 0.0 {
        let f = v.floor();
        f + ((v - f) * 8.0).round().clamp(1.0, 7.0) / 8.0
    } else {
        v
    }
}

/// `op` on `x` as an IR graph of its own (an input and the op's node: float16 and bfloat16 kept,
/// where the frontend's loop selection would widen them), compiled for the host (every region:
/// none left to the evaluator) and run, against the reference evaluator within `max_ulps`.
fn check_node(name: &str, op: OpKind, x: &HostArray, max_ulps: f64) {
    let mut g = Graph::new();
    let i = g.input(0, x.dtype(), x.shape());
    let y = g.add(op, Attrs::None, &[i]).unwrap();
    g.push_output(y);
    let p = partition(&g);
    for r in &p.regions {
        if let Err(e) = kiln_compiler::codegen::compile_region(r) {
            panic!("{name}: region not compiled: {e}");
        }
    }
    let sched = schedule(&g, &p.regions);
    let got = kiln_exec::cpu::run_schedule(&sched, &p.regions, &[x], HostRun::Compiled).unwrap();
    let want = kiln::ir::eval::evaluate(&g, &[x]).unwrap();
    let ((gv, format), (wv, _)) = (float_values(&got[0]).unwrap(), float_values(&want[0]).unwrap());
    let mut worst = 0.0f64;
    for (k, (&a, &b)) in gv.iter().zip(&wv).enumerate() {
        let d = ulp_distance(a, b, format);
        worst = worst.max(d);
        let input = float_values(x).unwrap().0[k];
        assert!(
            d <= max_ulps,
            "{name}({input:e}): {a:e} vs reference {b:e} ({d} ulps > {max_ulps})"
        );
    }
    eprintln!("{name}: max {worst} ulps");
}

/// `values` as a host array of float dtype `dt` (rounded).
fn host(values: &[f64], dt: DType) -> HostArray {
    let a = Array::from_vec(values.to_vec(), &[values.len()]).astype(dt);
    (*a.try_to_host().unwrap()).clone()
}

/// Each function compiled for the host (no region left to the evaluator) against the reference
/// evaluator: float16 and bfloat16 at every value, float32 and float64 on special values,
/// a wide sample, erfinv's unit interval and its tails; within `host_ulps`.
#[test]
fn host_code_matches_the_evaluator() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -2.5,
        2.0,
        3.0,
        10.0,
        9.5,
        11.0,
        1e-300,
        5e-324,
        1e-40,
        1e30,
        1e17,
        3e17,
        1.7e308,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
        1.4616321449683623,
        -0.5040830082644554,
        -0.21,
        -0.79,
        -3.0,
        -1e10,
        1.0 - 1e-9,
        1.0 - f64::EPSILON / 2.0,
        -0.999_999,
        1e-17,
    ];
    for dt in [DType::Float16, DType::BFloat16] {
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let x = if dt == DType::Float16 {
            HostArray::from_vec(
                &[65536],
                bits.iter().map(|&b| f16::from_bits(b)).collect::<Vec<_>>(),
            )
        } else {
            HostArray::from_vec(
                &[65536],
                bits.iter().map(|&b| bf16::from_bits(b)).collect::<Vec<_>>(),
            )
        }
        .unwrap();
        for (name, op, _) in FUNCTIONS {
            check_node(&format!("{name} {dt}"), op, &x, host_ulps(op, dt) as f64);
        }
    }
    let mut wide: Vec<f64> = specials.to_vec();
    wide.extend(sample(1, 2048, 12.0));
    wide.extend(sample(2, 512, 200.0));
    wide.extend(sample(3, 512, 1.0).iter().map(|v| v.signum() * v.abs().exp2().powi(40) * 1e-30));
    let wide: Vec<f64> = wide.into_iter().map(off_zeros).collect();
    let mut unit: Vec<f64> = specials.to_vec();
    unit.extend(sample(4, 2048, 1.0));
    unit.extend(sample(5, 512, 1.0).iter().map(|v| v.signum() * (1.0 - (v.abs() * -36.0).exp())));
    for dt in [DType::Float32, DType::Float64] {
        for (name, op, _) in FUNCTIONS {
            let v = if op == OpKind::Erfinv { &unit } else { &wide };
            check_node(&format!("{name} {dt}"), op, &host(v, dt), host_ulps(op, dt) as f64);
        }
    }
    // Through the frontend (SciPy's loop selection) too, fused with a neighbour.
    let x = Array::from_vec(wide.clone(), &[wide.len()]).astype(DType::Float32);
    let y = (&x * 0.5f32).erfc() + kiln::special::gammaln(&x.abs()) - x.digamma();
    crate::codegen::check_program("erfc + gammaln - digamma f32", &[&y], 4.0);
}

/// gcd and lcm compiled for the host against the evaluator, exactly, in every integer dtype:
/// random values, zeros, the signed minimum and Euclid's worst case (consecutive Fibonacci
/// numbers, the most steps for their width).
#[test]
fn gcd_lcm_host_code_matches_the_evaluator() {
    let mut fib = vec![1u64, 1];
    while let Some(n) = fib[fib.len() - 1].checked_add(fib[fib.len() - 2]) {
        fib.push(n);
    }
    let mut xs: Vec<u64> = sample(7, 256, 1.0).iter().map(|v| v.to_bits()).collect();
    let mut ys: Vec<u64> =
        sample(8, 256, 1.0).iter().map(|v| v.to_bits() >> (v.to_bits() % 64)).collect();
    for w in fib.windows(2) {
        xs.extend([w[0], w[1], 0, w[0]]);
        ys.extend([w[1], w[0], w[0], 0]);
    }
    xs.extend([0, 1 << 63, u64::MAX, 1 << 7, 0x80, 0x8000_0000]);
    ys.extend([0, 0, 3, 0x80, 6, 6]);
    let n = xs.len();
    for dt in DType::ALL.into_iter().filter(|d| d.is_integer()) {
        // The low bits of each value in the dtype (the cast wraps), and the worst case of the
        // dtype's own width among them.
        let bits = dt.itemsize() * 8;
        let keep = |v: &u64| if bits == 64 { *v } else { *v & ((1u64 << bits) - 1) };
        let x = Array::from_vec(xs.iter().map(keep).collect::<Vec<_>>(), &[n]).astype(dt);
        let y = Array::from_vec(ys.iter().map(keep).collect::<Vec<_>>(), &[n]).astype(dt);
        let (g, l) = (kiln::gcd(&x, &y), kiln::lcm(&x, &y));
        assert_eq!((g.dtype(), l.dtype()), (dt, dt));
        crate::codegen::check_program(&format!("gcd {dt}"), &[&g], 0.0);
        crate::codegen::check_program(&format!("lcm {dt}"), &[&l], 0.0);
    }
    // The Fibonacci pairs' gcd is 1; the signed minimum's absolute value wraps to itself.
    let a = Array::from_vec(vec![i64::MIN, 7540113804746346429, -12, 0], &[4]);
    let b = Array::from_vec(vec![0i64, 4660046610375530309, 18, 0], &[4]);
    assert_eq!(kiln::gcd(&a, &b).to_vec::<i64>(), vec![i64::MIN, 1, 6, 0]);
    assert_eq!(kiln::lcm(&a, &b).to_vec::<i64>()[2..], [36, 0]);
}

#[test]
fn loop_selection_is_scipys() {
    let h = Array::from_vec(vec![bf16::from_f32(0.5)], &[1]);
    assert_eq!(h.erfc().dtype(), DType::Float64);
    assert_eq!(h.erfinv().dtype(), DType::Float32);
    assert_eq!(h.gammaln().dtype(), DType::Float64);
    assert_eq!(h.digamma().dtype(), DType::Float64);
    // SciPy's loops: erfinv's list is f->f, d->d (integers castable to float32 safely take it),
    // the others' d->d, f->f.
    let i = Array::from_vec(vec![3i8], &[1]);
    let w = Array::from_vec(vec![3i32], &[1]);
    for (_, op, f) in FUNCTIONS {
        let narrow = if op == OpKind::Erfinv { DType::Float32 } else { DType::Float64 };
        assert_eq!((f(&i).dtype(), f(&w).dtype()), (narrow, DType::Float64));
    }
    assert_eq!(i.gammaln().to_vec::<f64>(), vec![2f64.ln()]);
    assert_eq!(Array::from_vec(vec![1.0f32], &[1]).erfinv().to_vec::<f32>(), vec![f32::INFINITY]);
    // gcd: NumPy's promotion, weak scalars (a bool array with a Python int is int64).
    let u8s = Array::from_vec(vec![12u8, 200], &[2]);
    let i8s = Array::from_vec(vec![-18i8, 100], &[2]);
    let g = kiln::gcd(&u8s, &i8s);
    assert_eq!(g.dtype(), DType::Int16);
    assert_eq!(g.to_vec::<i16>(), vec![6, 100]);
    let flags = Array::from_vec(vec![true, false], &[2]);
    assert_eq!(kiln::gcd(&flags, 4).to_vec::<i64>(), vec![1, 4]);
    assert_eq!(kiln::lcm(&u8s, 3u8).to_vec::<u8>(), vec![12, 88]); // lcm(200, 3) = 600 wraps
}

#[test]
fn errors_are_typed_and_leave_arrays_valid() {
    let f = Array::from_vec(vec![1.5f64, 2.0], &[2]);
    let i = Array::from_vec(vec![4i64, 6], &[2]);
    let u = Array::from_vec(vec![4u64, 6], &[2]);
    let b = Array::from_vec(vec![true, false], &[2]);
    for (r, dtypes) in [
        (kiln::try_gcd(&f, &i), "float64"),
        (kiln::try_lcm(&i, 2.5), "float64"),
        (kiln::try_gcd(&b, &b), "bool"),
        (kiln::try_lcm(&b, true), "bool"),
        (kiln::try_gcd(&i, &u), "uint64"),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("no loop") && e.contains(dtypes) && e.contains("integer"), "{e}");
        assert!(e.starts_with("gcd") || e.starts_with("lcm"), "{e}");
    }
    let e = kiln::try_gcd(&i, &Array::from_vec(vec![1i64, 2, 3], &[3])).unwrap_err().to_string();
    assert!(e.contains("gcd") && e.contains("(2,)") && e.contains("(3,)"), "{e}");
    let e = kiln::try_gcd(&Array::from_vec(vec![1i8], &[1]), 300).unwrap_err().to_string();
    assert!(e.contains("300") && e.contains("int8"), "{e}");
    let z = Array::from_vec(vec![num_complex::Complex64::new(1.0, 1.0)], &[1]);
    for (name, _, _) in FUNCTIONS {
        let r = match name {
            "erfc" => kiln::special::try_erfc(&z),
            "erfinv" => z.try_erfinv(),
            "gammaln" => kiln::special::try_gammaln(&z),
            _ => z.try_digamma(),
        };
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with(name) && e.contains("complex128"), "{e}");
    }
    assert_eq!(kiln::gcd(&i, 4).to_vec::<i64>(), vec![4, 2]);
    assert_eq!(f.to_vec::<f64>(), vec![1.5, 2.0]);
}

/// The GPU's code (libdevice's `__nv_erfcf`/`__nv_erfinvf`/`__nv_erfc`/`__nv_erfinv`, the module
/// functions `@kiln_gammaln`, `@kiln_digamma` calling `__nv_log`, `__nv_sin`, `__nv_tan`, and
/// gcd's loop) compiles to PTX at both tiers for every float dtype and an integer one; run
/// without a GPU (the GPU suite runs the fixtures on the device).
#[test]
fn gpu_code_compiles_to_ptx() {
    use kiln_compiler::codegen::Tier;
    if kiln_compiler::codegen::gpu::libdevice_path().is_none() {
        eprintln!("skipped: no libdevice (scripts/setup.sh fetches it)");
        return;
    }
    let mut cases: Vec<(OpKind, DType)> = Vec::new();
    for dt in [DType::Float16, DType::BFloat16, DType::Float32, DType::Float64] {
        for (_, op, _) in FUNCTIONS {
            cases.push((op, dt));
        }
    }
    cases.extend([(OpKind::Gcd, DType::Int64), (OpKind::Lcm, DType::UInt8)]);
    for (op, dt) in cases {
        let mut g = Graph::new();
        let i = g.input(0, dt, &[1000]);
        let args =
            if op.info().arity == kiln::ir::ops::Arity::Fixed(2) { vec![i, i] } else { vec![i] };
        let y = g.add(op, Attrs::None, &args).unwrap();
        g.push_output(y);
        let p = partition(&g);
        for tier in [Tier::Fast, Tier::Optimized] {
            let k = crate::support::gpu_kernel(&p.regions[0], Default::default(), tier)
                .unwrap_or_else(|e| panic!("{} {dt} {tier:?}: {e}", op.name()));
            assert!(k.ptx.contains(".entry"), "{} {dt}", op.name());
        }
    }
}

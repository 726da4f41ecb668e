//! Complex elementwise kernels (complex64 and complex128), on whatever backend runs the suite
//! (the host's compiled code here, the GPU's in the GPU pack), against the reference evaluator.
//!
//! complex64 computes in f64 and rounds each part to f32, as the evaluator does, so arithmetic
//! must match it bit for bit; `abs` (hypot) and `exp` (exp, cos, sin) go through the math
//! library and get its bound.

use kiln::ir::host::Data;
use kiln::{Array, DType, HostArray};
use kiln_compiler::codegen;
use kiln_compiler::fusion::partition;
use num_complex::{Complex32, Complex64};

use crate::ulps::ulp_distance;

/// Deterministic complex values: most uniform in a box, some special (zeros of both signs,
/// infinities, NaN, tiny and huge parts), so Smith's division and the zero divisor are reached.
fn values(n: usize, seed: u64) -> Vec<Complex64> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s >> 11
    };
    let special =
        [0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-30, 3e30, 0.5];
    (0..n)
        .map(|_| {
            let mut part = || {
                let r = next();
                if r % 8 == 0 {
                    special[(r >> 8) as usize % special.len()]
                } else {
                    (r as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
                }
            };
            Complex64::new(part(), part())
        })
        .collect()
}

fn array(dt: DType, shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let v = values(n, seed);
    let a = if dt == DType::Complex64 {
        Array::from_vec(
            v.iter().map(|z| Complex32::new(z.re as f32, z.im as f32)).collect::<Vec<_>>(),
            shape,
        )
    } else {
        Array::from_vec(v, shape)
    };
    a.eval();
    a
}

/// The parts of a float or complex array as f64, with the parts' (mantissa bits, min exponent).
fn parts(a: &HostArray) -> Option<(Vec<f64>, (u32, i32))> {
    Some(match a.data() {
        Data::Complex64(v) => {
            (v.iter().flat_map(|z| [z.re as f64, z.im as f64]).collect(), (24, -126))
        }
        Data::Complex128(v) => (v.iter().flat_map(|z| [z.re, z.im]).collect(), (53, -1022)),
        Data::Float32(v) => (v.iter().map(|&x| x as f64).collect(), (24, -126)),
        Data::Float64(v) => (v.clone(), (53, -1022)),
        _ => return None,
    })
}

/// `y` computed by the backend against the evaluator on its graph: every part within
/// `max_ulps` (0: the same bits, NaN matching NaN), other dtypes equal.
fn check(name: &str, y: &Array, max_ulps: f64) {
    let l = kiln::lower(&[y]);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
    let got = y.try_to_host().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{name}");
    match (parts(&got), parts(&want)) {
        (Some((g, format)), Some((w, _))) => {
            for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
                let d = ulp_distance(a, b, format);
                assert!(
                    d <= max_ulps,
                    "{name}: part {i}: {a:e} vs reference {b:e} ({d} ulps > {max_ulps})"
                );
            }
        }
        _ => assert_eq!(*got, want, "{name}"),
    }
}

/// Every region of `y`'s plan compiles (none is left to the evaluator).
fn compiles(name: &str, y: &Array) {
    let l = kiln::lower(&[y]);
    for r in &partition(&l.graph).regions {
        if let Err(e) = codegen::compile_region(r) {
            panic!("{name}: not compiled: {e}");
        }
    }
}

const COMPLEX: [DType; 2] = [DType::Complex64, DType::Complex128];

#[test]
fn complex_arithmetic_matches_the_evaluator_bit_for_bit() {
    for dt in COMPLEX {
        let z = array(dt, &[37, 29], 1);
        let w = array(dt, &[37, 29], 2);
        let cases: Vec<(&str, Array)> = vec![
            ("z + w", &z + &w),
            ("z - w", &z - &w),
            ("z * w", &z * &w),
            ("z / w", &z / &w),
            ("-z", z.negative()),
            ("conj(z)", z.conj()),
            ("z * z", z.square()),
            ("1 / z", z.reciprocal()),
            ("real(z)", z.real()),
            ("imag(z)", z.imag()),
            ("z == w", z.equal(&w)),
            ("z != conj(z)", z.not_equal(z.conj())),
            ("isnan(z)", z.isnan()),
            ("isinf(z)", z.isinf()),
            ("isfinite(z)", z.isfinite()),
            ("where(|re| > 1, z, w)", kiln::where_(z.real().abs().greater(1.0), &z, &w)),
            ("(z * w + z) / (w - 2)", (&z * &w + &z) / (&w - 2.0)),
        ];
        for (name, y) in cases {
            let name = format!("{dt} {name}");
            compiles(&name, &y);
            check(&name, &y, 0.0);
        }
    }
}

#[test]
fn complex_casts_follow_numpy() {
    let z = array(DType::Complex128, &[300], 3);
    let x = Array::from_vec(values(300, 4).iter().map(|z| z.re * 1e3).collect::<Vec<_>>(), &[300]);
    x.eval();
    let cases: Vec<(&str, Array)> = vec![
        ("c128 -> c64", z.astype(DType::Complex64)),
        ("c64 -> c128", z.astype(DType::Complex64).astype(DType::Complex128)),
        ("c128 -> f32 (the real part)", z.astype(DType::Float32)),
        ("c64 -> f64", z.astype(DType::Complex64).astype(DType::Float64)),
        ("c64 -> bool", z.astype(DType::Complex64).astype(DType::Bool)),
        ("c128 -> i32", z.real().abs().minimum(1e6).astype(DType::Complex128).astype(DType::Int32)),
        ("f64 -> c64", x.astype(DType::Complex64)),
        ("i32 -> c128", x.astype(DType::Int32).astype(DType::Complex128)),
        ("f64 * c64 promotes to c128", &x * &z.astype(DType::Complex64)),
        ("f32 * c64 stays c64", &x.astype(DType::Float32) * &z.astype(DType::Complex64)),
    ];
    for (name, y) in cases {
        compiles(name, &y);
        check(name, &y, 0.0);
    }
}

#[test]
fn complex_functions_within_the_math_librarys_bound() {
    // hypot and exp/cos/sin in f64: glibc's vector functions (libmvec, in vectorised host loops)
    // are within 4 ulps each, libdevice's within 2, so e^a cos b is within 4 + 4 + 1 of the
    // evaluator's; a complex64 part rounded to f32 from there is within 1 ulp.
    for dt in COMPLEX {
        let bound = if dt == DType::Complex64 { 1.0 } else { 9.0 };
        let z = array(dt, &[513], 5);
        let small = &z * 0.25;
        compiles("abs", &z.abs());
        check(&format!("{dt} abs(z)"), &z.abs(), bound);
        compiles("exp", &small.exp());
        check(&format!("{dt} exp(z / 4)"), &small.exp(), bound);
        // Real arguments: (e^a, ±0), or (inf, NaN) where e^a overflows, as in NumPy.
        let real = z.real().astype(dt);
        check(&format!("{dt} exp(real)"), &real.exp(), bound);
    }
}

#[test]
fn fft_consumers_fuse_into_one_complex_kernel() {
    // abs(fft(w * z)): the product is one kernel before the FFT, abs one kernel after; both
    // compiled (no evaluator fallback), the result equal to the evaluator's within the FFT's
    // rounding.
    let w =
        Array::from_vec((0..1024).map(|i| (i as f32 * 0.01).cos()).collect::<Vec<_>>(), &[1024]);
    let z = array(DType::Complex64, &[1024], 6).isfinite().astype(DType::Complex64);
    let y = kiln::fft::fft(&(&w * &z), None, -1, "backward").abs();
    let l = kiln::lower(&[&y]);
    let p = partition(&l.graph);
    let compiled = p.regions.iter().filter(|r| codegen::compile_region(r).is_ok()).count();
    assert_eq!(
        (p.regions.len(), compiled),
        (3, 2),
        "{}",
        kiln_compiler::fusion::print_regions(&p.regions)
    );
    let got = y.try_to_host().unwrap();
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
    let (Data::Float32(g), Data::Float32(e)) = (got.data(), want.data()) else {
        panic!("float32 magnitudes")
    };
    let scale = e.iter().fold(0.0f32, |m, &x| m.max(x));
    for (i, (a, b)) in g.iter().zip(e).enumerate() {
        assert!((a - b).abs() <= 1e-5 * scale, "element {i}: {a} vs {b}");
    }
}

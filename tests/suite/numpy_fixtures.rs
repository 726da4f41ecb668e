//! NumPy fixtures: each case of `tests/fixtures/cases.txt` (written by
//! `tests/fixtures/make_fixtures.py`) is rebuilt here with kiln's API and compared with NumPy's
//! output: dtype and shape exactly, ints and bools exactly, floats within the case's tolerance
//! (in ulps of the result dtype, or relative for reductions), NaN equal to NaN, and the sign of a
//! zero checked unless the case says NumPy leaves it undefined.
//!
//! One `#[test]` per case; the closure for each case is in the `cases!` table at the end.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use half::{bf16, f16};
use kiln::ir::Data;
use kiln::{s, Array, DType, HostArray, SliceArg};
use num_complex::{Complex, Complex64};

pub(crate) fn fixture_dir() -> PathBuf {
    crate::repo_root().join("tests").join("fixtures")
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Tol {
    Exact,
    Ulp(u64),
    Rel(f64),
    /// |got - expected| <= x * the largest |part| of the expected array.
    Norm(f64),
}

#[derive(Clone, Debug)]
pub(crate) struct Case {
    expected: String,
    tol: Tol,
    zero_sign: bool,
    inputs: Vec<String>,
}

fn manifest() -> &'static HashMap<String, Case> {
    static M: OnceLock<HashMap<String, Case>> = OnceLock::new();
    M.get_or_init(|| load_manifest("cases.txt"))
}

/// The cases of a manifest written by `make_fixtures.py` (`cases.txt`, `vendor_cases.txt`).
pub(crate) fn load_manifest(file: &str) -> HashMap<String, Case> {
    let path = fixture_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (run python3 tests/fixtures/make_fixtures.py)", path.display())
    });
    let mut m = HashMap::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 5, "{file} line {}: {line:?}", no + 1);
        let tol = match f[2].split_once(':') {
            None if f[2] == "exact" => Tol::Exact,
            Some(("ulp", n)) => Tol::Ulp(n.parse().unwrap()),
            Some(("rel", x)) => Tol::Rel(x.parse().unwrap()),
            Some(("norm", x)) => Tol::Norm(x.parse().unwrap()),
            _ => panic!("{file} line {}: bad tolerance {:?}", no + 1, f[2]),
        };
        let inputs = if f[4] == "-" { vec![] } else { f[4].split(',').map(String::from).collect() };
        let case = Case {
            expected: f[1].into(),
            tol,
            zero_sign: !f[3].split(',').any(|x| x == "nozerosign"),
            inputs,
        };
        assert!(m.insert(f[0].to_string(), case).is_none(), "duplicate case {}", f[0]);
    }
    m
}

/// Loads a case's inputs, builds kiln's expression, and compares it with NumPy's output.
fn run_case<F: Fn(&[Array]) -> Array>(name: &str, build: F) {
    run_case_in(manifest(), name, build)
}

/// [`run_case`] for a case of another manifest.
pub(crate) fn run_case_in<F: Fn(&[Array]) -> Array>(
    manifest: &HashMap<String, Case>,
    name: &str,
    build: F,
) {
    let case = manifest.get(name).unwrap_or_else(|| panic!("case {name} is not in its manifest"));
    let inputs: Vec<Array> = case
        .inputs
        .iter()
        .map(|f| {
            kiln::load_npy(fixture_dir().join(f))
                .unwrap_or_else(|e| panic!("{name}: loading {f}: {e}"))
        })
        .collect();
    let expected = kiln::load_npy(fixture_dir().join(&case.expected))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = build(&inputs);
    // dtype and shape are known before anything is computed.
    assert_eq!(got.dtype(), expected.dtype(), "{name}: dtype (kiln vs NumPy)");
    assert_eq!(got.shape(), expected.shape(), "{name}: shape (kiln vs NumPy)");
    let exp = expected.try_to_host().unwrap();
    let g = got.try_to_host().unwrap_or_else(|e| panic!("{name}: materialising: {e}"));
    assert_eq!(g.dtype(), exp.dtype(), "{name}: dtype of the computed value");
    assert_eq!(g.shape(), exp.shape(), "{name}: shape of the computed value");
    let tol = match gpu_tolerance(name) {
        Some(t) if matches!(kiln::backend(), kiln_runtime::Backend::Cuda(_)) => t,
        _ => case.tol,
    };
    match compare(&exp, &g, tol, case.zero_sign) {
        // Shown with `--nocapture`: how close each case came.
        Ok(worst) => eprintln!(
            "{name}: ok, {} {:?}, largest distance {worst} ulp ({:?})",
            exp.dtype(),
            exp.shape(),
            case.tol
        ),
        Err(msg) => panic!("{name} ({tol:?}, {} {:?}): {msg}", exp.dtype(), exp.shape()),
    }
}

/// Cases whose tolerance differs on the GPU backend, where math functions are libdevice's
/// rather than the host's libm (whose results NumPy's match).
///
/// - `logaddexp_f64`: NumPy's formula `max + log1p(exp(-|x - y|))`, with libdevice's `log1p`
///   and `exp` (each within 1–2 ulps, CUDA's documented bounds). Where `max` is negative the
///   sum cancels and their error is magnified by `|log1p(..)| / |result|`: 16 ulps measured on
///   an H200 on these inputs (0 on the host, whose libm NumPy's is); 32 allowed. The same for
///   `logaddexp2` (`ufunc23/`: libdevice's `exp2` and `log1p`; 16 ulps measured on an H200 where
///   the sum cancels).
///
/// - Float sums and products along the last axis (`cumsum`, `cumprod`, their `nan` forms):
///   the GPU scans them by tiles, each tile's prefix combined from other tiles' totals
///   (`codegen/lower/scan.rs`), so they associate differently from NumPy's running value:
///   sums within a multiple of the largest |value| (`norm`), products within a relative bound.
fn gpu_tolerance(name: &str) -> Option<Tol> {
    match name {
        "logaddexp_f64" | "logaddexp2_f64" | "logaddexp2_pairs_f64" | "logaddexp2_cancel_f64" => {
            Some(Tol::Ulp(32))
        }
        "cumsum_f32_none" | "cumsum_f32_axis1" | "cumsum_f32_axis_neg" | "cumsum_of_square" => {
            Some(Tol::Norm(1e-6))
        }
        "cumsum_long" => Some(Tol::Norm(1e-14)),
        // Infinities and NaN (which `norm` does not compare) among few finite values.
        "cumsum_f64_special" | "nancumsum_special" | "nancumsum_rows" => Some(Tol::Ulp(2)),
        "cumsum_f16" => Some(Tol::Norm(4e-3)),
        "cumprod_f64_special" | "nancumprod_special" => Some(Tol::Rel(1e-14)),
        "cumprod_f32_axis2" => Some(Tol::Rel(1e-6)),
        _ => None,
    }
}

// ------------------------------------------------------------------------------------------------
// Comparison
// ------------------------------------------------------------------------------------------------

/// Float element types: f16, bf16, f32, f64.
trait Float: Copy + std::fmt::Debug {
    fn to_f64(self) -> f64;
    /// Bits mapped to integers whose order is the floats' order (±0 both 0).
    fn ordered(self) -> i64;
    /// Distance to the next float above |x|.
    fn ulp_of(self) -> f64;
    fn sign_bit(self) -> bool {
        self.to_f64().is_sign_negative()
    }
}

/// float16 and bfloat16: 16 bits, the sign bit on top.
macro_rules! half_float {
    ($($t:ident),*) => {$(
        impl Float for $t {
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
            fn ordered(self) -> i64 {
                let b = self.to_bits() as i64;
                if b & 0x8000 != 0 {
                    -(b & 0x7fff)
                } else {
                    b
                }
            }
            fn ulp_of(self) -> f64 {
                let a = $t::from_bits(self.to_bits() & 0x7fff);
                $t::from_bits(a.to_bits() + 1).to_f64() - a.to_f64()
            }
        }
    )*};
}
half_float!(f16, bf16);
impl Float for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn ordered(self) -> i64 {
        let b = self.to_bits() as i64;
        if b & 0x8000_0000 != 0 {
            -(b & 0x7fff_ffff)
        } else {
            b
        }
    }
    fn ulp_of(self) -> f64 {
        let a = self.abs();
        f32::from_bits(a.to_bits() + 1) as f64 - a as f64
    }
}
impl Float for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn ordered(self) -> i64 {
        let b = self.to_bits() as i64;
        if b < 0 {
            -(b & i64::MAX)
        } else {
            b
        }
    }
    fn ulp_of(self) -> f64 {
        let a = self.abs();
        f64::from_bits(a.to_bits() + 1) - a
    }
}

fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        if shape[k] > 0 {
            idx[k] = i % shape[k];
            i /= shape[k];
        }
    }
    idx
}

/// Collects mismatches and formats the first few.
struct Report {
    shape: Vec<usize>,
    bad: Vec<String>,
    count: usize,
    worst_ulp: u64,
}

impl Report {
    fn new(shape: &[usize]) -> Report {
        Report { shape: shape.to_vec(), bad: vec![], count: 0, worst_ulp: 0 }
    }
    fn add(&mut self, i: usize, what: String) {
        self.count += 1;
        if self.bad.len() < 8 {
            self.bad.push(format!("at {:?}: {what}", unravel(i, &self.shape)));
        }
    }
    fn finish(self, n: usize) -> Result<u64, String> {
        if self.count == 0 {
            return Ok(self.worst_ulp);
        }
        Err(format!(
            "{} of {n} elements differ (largest ulp distance {}):\n    {}",
            self.count,
            self.worst_ulp,
            self.bad.join("\n    ")
        ))
    }
}

/// Whether `got` matches `exp` for one float; `scale` (complex parts) makes the ulp tolerance
/// absolute: `n` ulps of `scale`.
fn float_ok<T: Float>(
    exp: T,
    got: T,
    tol: Tol,
    zero_sign: bool,
    scale: Option<T>,
    worst: &mut u64,
) -> bool {
    let (e, g) = (exp.to_f64(), got.to_f64());
    if e.is_nan() || g.is_nan() {
        return e.is_nan() && g.is_nan();
    }
    if e.is_infinite() || g.is_infinite() {
        return e == g;
    }
    if e == 0.0 && g == 0.0 {
        return !zero_sign || exp.sign_bit() == got.sign_bit();
    }
    let d = exp.ordered().abs_diff(got.ordered());
    *worst = (*worst).max(match scale {
        Some(s) => ((g - e).abs() / s.ulp_of()).ceil() as u64,
        None => d,
    });
    match tol {
        Tol::Exact => d == 0,
        Tol::Ulp(n) => match scale {
            Some(s) => (g - e).abs() <= n as f64 * s.ulp_of(),
            None => d <= n,
        },
        Tol::Rel(x) => d == 0 || (g - e).abs() <= x * e.abs(),
        Tol::Norm(_) => unreachable!("whole arrays are compared by compare_norm"),
    }
}

fn cmp_exact<T: PartialEq + std::fmt::Debug>(
    e: &[T],
    g: &[T],
    shape: &[usize],
) -> Result<u64, String> {
    let mut r = Report::new(shape);
    for (i, (a, b)) in e.iter().zip(g).enumerate() {
        if a != b {
            r.add(i, format!("expected {a:?}, got {b:?}"));
        }
    }
    r.finish(e.len())
}

fn cmp_float<T: Float>(
    e: &[T],
    g: &[T],
    shape: &[usize],
    tol: Tol,
    zero_sign: bool,
) -> Result<u64, String> {
    let mut r = Report::new(shape);
    for (i, (&a, &b)) in e.iter().zip(g).enumerate() {
        let mut w = 0;
        let ok = float_ok(a, b, tol, zero_sign, None, &mut w);
        r.worst_ulp = r.worst_ulp.max(w);
        if !ok {
            r.add(
                i,
                format!("expected {a:?}, got {b:?} ({} ulp)", a.ordered().abs_diff(b.ordered())),
            );
        }
    }
    r.finish(e.len())
}

fn cmp_complex<T: Float + num_traits_lite::Abs>(
    e: &[Complex<T>],
    g: &[Complex<T>],
    shape: &[usize],
    tol: Tol,
    zero_sign: bool,
) -> Result<u64, String> {
    let mut r = Report::new(shape);
    for (i, (a, b)) in e.iter().zip(g).enumerate() {
        let scale = if a.re.abs_val().to_f64() >= a.im.abs_val().to_f64() {
            a.re.abs_val()
        } else {
            a.im.abs_val()
        };
        let mut w = 0;
        let ok = float_ok(a.re, b.re, tol, zero_sign, Some(scale), &mut w)
            && float_ok(a.im, b.im, tol, zero_sign, Some(scale), &mut w);
        r.worst_ulp = r.worst_ulp.max(w);
        if !ok {
            r.add(i, format!("expected {a:?}, got {b:?}"));
        }
    }
    r.finish(e.len())
}

mod num_traits_lite {
    pub trait Abs {
        fn abs_val(self) -> Self;
    }
    impl Abs for f32 {
        fn abs_val(self) -> f32 {
            self.abs()
        }
    }
    impl Abs for f64 {
        fn abs_val(self) -> f64 {
            self.abs()
        }
    }
}

/// Compares a computed array with NumPy's (same dtype and shape already checked); on success,
/// the largest distance in ulps seen.
pub(crate) fn compare(
    exp: &HostArray,
    got: &HostArray,
    tol: Tol,
    zero_sign: bool,
) -> Result<u64, String> {
    if let Tol::Norm(x) = tol {
        return compare_norm(exp, got, x);
    }
    let sh = exp.shape();
    match (exp.data(), got.data()) {
        (Data::Bool(e), Data::Bool(g)) => cmp_exact(e, g, sh),
        (Data::Int8(e), Data::Int8(g)) => cmp_exact(e, g, sh),
        (Data::Int16(e), Data::Int16(g)) => cmp_exact(e, g, sh),
        (Data::Int32(e), Data::Int32(g)) => cmp_exact(e, g, sh),
        (Data::Int64(e), Data::Int64(g)) => cmp_exact(e, g, sh),
        (Data::UInt8(e), Data::UInt8(g)) => cmp_exact(e, g, sh),
        (Data::UInt16(e), Data::UInt16(g)) => cmp_exact(e, g, sh),
        (Data::UInt32(e), Data::UInt32(g)) => cmp_exact(e, g, sh),
        (Data::UInt64(e), Data::UInt64(g)) => cmp_exact(e, g, sh),
        (Data::Float16(e), Data::Float16(g)) => cmp_float(e, g, sh, tol, zero_sign),
        (Data::BFloat16(e), Data::BFloat16(g)) => cmp_float(e, g, sh, tol, zero_sign),
        (Data::Float32(e), Data::Float32(g)) => cmp_float(e, g, sh, tol, zero_sign),
        (Data::Float64(e), Data::Float64(g)) => cmp_float(e, g, sh, tol, zero_sign),
        (Data::Complex64(e), Data::Complex64(g)) => cmp_complex(e, g, sh, tol, zero_sign),
        (Data::Complex128(e), Data::Complex128(g)) => cmp_complex(e, g, sh, tol, zero_sign),
        (e, g) => Err(format!("dtype {} vs {}", e.dtype(), g.dtype())),
    }
}

/// The parts (real, or real and imaginary) of a float or complex array, as f64.
fn parts_f64(a: &HostArray) -> Option<Vec<[f64; 2]>> {
    Some(match a.data() {
        Data::Float16(v) => v.iter().map(|x| [x.to_f64(), 0.0]).collect(),
        Data::BFloat16(v) => v.iter().map(|x| [x.to_f64(), 0.0]).collect(),
        Data::Float32(v) => v.iter().map(|&x| [x as f64, 0.0]).collect(),
        Data::Float64(v) => v.iter().map(|&x| [x, 0.0]).collect(),
        Data::Complex64(v) => v.iter().map(|z| [z.re as f64, z.im as f64]).collect(),
        Data::Complex128(v) => v.iter().map(|z| [z.re, z.im]).collect(),
        _ => return None,
    })
}

/// [`Tol::Norm`]: every part within `x` times the largest part of the expected array. The
/// distance reported is in units of that bound's scale (|diff| / largest part / f32 epsilon).
fn compare_norm(exp: &HostArray, got: &HostArray, x: f64) -> Result<u64, String> {
    let (Some(e), Some(g)) = (parts_f64(exp), parts_f64(got)) else {
        return Err(format!("norm tolerance for dtype {}", exp.dtype()));
    };
    let big = e
        .iter()
        .flat_map(|p| p.iter().map(|v| v.abs()))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut r = Report::new(exp.shape());
    let mut worst = 0.0f64;
    for (i, (a, b)) in e.iter().zip(&g).enumerate() {
        for k in 0..2 {
            let d = (a[k] - b[k]).abs();
            worst = worst.max(d);
            if d.is_nan() || d > x * big {
                r.add(i, format!("expected {a:?}, got {b:?} (|diff| {d:e} > {x:e} * {big:e})"));
            }
        }
    }
    r.worst_ulp = if big > 0.0 { (worst / big / f32::EPSILON as f64).ceil() as u64 } else { 0 };
    r.finish(e.len())
}

#[test]
fn comparison_helpers() {
    let mut w = 0;
    // NaN equals NaN; signs of zero are checked; ulps are counted across zero.
    assert!(float_ok(f32::NAN, f32::NAN, Tol::Exact, true, None, &mut w));
    assert!(!float_ok(0.0f32, -0.0, Tol::Exact, true, None, &mut w));
    assert!(float_ok(0.0f32, -0.0, Tol::Exact, false, None, &mut w));
    assert!(float_ok(1.0f32, 1.0 + f32::EPSILON, Tol::Ulp(1), true, None, &mut w));
    assert!(!float_ok(1.0f32, 1.0 + 2.0 * f32::EPSILON, Tol::Ulp(1), true, None, &mut w));
    assert!(!float_ok(f32::INFINITY, f32::MAX, Tol::Ulp(4), true, None, &mut w));
    assert_eq!(f16::from_f32(1.0).ulp_of(), 2f64.powi(-10));
    assert_eq!(1.0f64.ulp_of(), f64::EPSILON);
    assert!(f32::from_bits(1).ordered() - (-f32::from_bits(1)).ordered() == 2);
}

/// The harness itself: wrong answers must fail (a wrong op, a perturbation of 1 ulp where the
/// case is exact, the sign of a zero, a NaN, an off-by-one integer, a wrong dtype or shape).
#[test]
fn harness_detects_wrong_results() {
    let fails = |name: &str, f: fn(&[Array]) -> Array| {
        let r = std::panic::catch_unwind(|| run_case(name, f));
        assert!(r.is_err(), "case {name} accepted a wrong answer");
    };
    fails("sin_f32", |a| a[0].cos());
    fails("sin_f32", |a| (&a[0] * 1.001).sin());
    fails("add_f64", |a| &(&a[0] + &a[1]) * (1.0 + f64::EPSILON));
    fails("negative_special_f64", |a| 0.0 - &a[0]); // +0.0 where NumPy has -0.0
    fails("sqrt_special_f64", |a| a[0].abs().sqrt()); // no NaN for negative inputs
    fails("sum_i8_all", |a| &a[0].sum(None) + 1);
    fails("sum_i8_all", |a| a[0].astype(DType::Int32).sum(None).astype(DType::Int32)); // dtype
    fails("sum_f32_axis1", |a| a[0].sum(2)); // shape
    fails("sum_f32_axis1", |a| &a[0].sum(1) * 1.0001); // outside rel:1e-5
                                                       // ... and right answers computed differently pass.
    run_case("negative_special_f64", |a| &a[0] * -1.0);
    run_case("sum_f32_axis1", |a| a[0].flip(Some(&[1])).sum(1));
}

#[test]
fn every_manifest_case_has_a_closure_and_back() {
    assert_same_cases(manifest(), CASES);
}

/// Every case of `manifest` has a closure in `here`, and every closure a case.
pub(crate) fn assert_same_cases(manifest: &HashMap<String, Case>, here: &[&str]) {
    let in_manifest: Vec<&str> = manifest.keys().map(|s| s.as_str()).collect();
    let mut missing: Vec<_> = in_manifest.iter().filter(|n| !here.contains(n)).collect();
    let mut extra: Vec<_> = here.iter().filter(|n| !in_manifest.contains(n)).collect();
    missing.sort();
    extra.sort();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "no closure for {missing:?}; not in the manifest: {extra:?}"
    );
}

// ------------------------------------------------------------------------------------------------
// The cases: name(s) => closure from the loaded inputs to kiln's expression.
// ------------------------------------------------------------------------------------------------

macro_rules! cases {
    ($($($name:ident),+ => $f:expr;)*) => {
        $($(
            #[test]
            fn $name() {
                run_case(stringify!($name), $f)
            }
        )+)*
        /// Every case that has a closure here.
        const CASES: &[&str] = &[$($(stringify!($name)),+),*];
    };
}

use kiln::{all_axes, axis};
use DType::*;

fn c(re: f64, im: f64) -> Complex64 {
    Complex64::new(re, im)
}

cases! {
    // --- unary ufuncs on float dtypes ---
    negative_f16, negative_f32, negative_f64, negative_special_f16, negative_special_f32, negative_special_f64,
        negative_i8, negative_c64 => |a| a[0].negative();
    abs_f16, abs_f32, abs_f64, abs_special_f16, abs_special_f32, abs_special_f64, abs_i8, abs_c64, abs_bool
        => |a| a[0].abs();
    sign_f16, sign_f32, sign_f64, sign_special_f16, sign_special_f32, sign_special_f64, sign_i32, sign_c64
        => |a| a[0].sign();
    sqrt_f16, sqrt_f32, sqrt_f64, sqrt_special_f16, sqrt_special_f32, sqrt_special_f64, sqrt_i32_neg, sqrt_c64
        => |a| a[0].sqrt();
    sqrt_i32 => |a| a[0].abs().sqrt();
    cbrt_f16, cbrt_f32, cbrt_f64 => |a| a[0].cbrt();
    square_f16, square_f32, square_f64, square_special_f16, square_special_f32, square_special_f64, square_i8,
        square_u8, square_bool, square_c64 => |a| a[0].square();
    reciprocal_f16, reciprocal_f32, reciprocal_f64, reciprocal_special_f16, reciprocal_special_f32,
        reciprocal_special_f64, reciprocal_i32 => |a| a[0].reciprocal();
    reciprocal_bool => |a| (&a[0] | true).reciprocal();
    exp_f16, exp_f32, exp_f64, exp_special_f32, exp_special_f64, exp_u8, exp_c64 => |a| a[0].exp();
    exp2_f16, exp2_f32, exp2_f64 => |a| a[0].exp2();
    expm1_f16, expm1_f32, expm1_f64, expm1_special_f32, expm1_special_f64 => |a| a[0].expm1();
    log_f16, log_f32, log_f64, log_special_f32, log_special_f64, log_c64 => |a| a[0].log();
    log_i64 => |a| (a[0].abs() + 1).log();
    log2_f16, log2_f32, log2_f64 => |a| a[0].log2();
    log10_f16, log10_f32, log10_f64 => |a| a[0].log10();
    log1p_f16, log1p_f32, log1p_f64, log1p_special_f32, log1p_special_f64 => |a| a[0].log1p();
    sin_f16, sin_f32, sin_f64, sin_special_f32, sin_special_f64, sin_i8, sin_bool, sin_c64 => |a| a[0].sin();
    cos_f16, cos_f32, cos_f64, cos_u8 => |a| a[0].cos();
    tan_f16, tan_f32, tan_f64 => |a| a[0].tan();
    arcsin_f16, arcsin_f32, arcsin_f64 => |a| a[0].arcsin();
    arccos_f16, arccos_f32, arccos_f64 => |a| a[0].arccos();
    arctan_f16, arctan_f32, arctan_f64, arctan_special_f32, arctan_special_f64 => |a| a[0].arctan();
    sinh_f16, sinh_f32, sinh_f64 => |a| a[0].sinh();
    cosh_f16, cosh_f32, cosh_f64 => |a| a[0].cosh();
    tanh_f16, tanh_f32, tanh_f64, tanh_special_f32, tanh_special_f64 => |a| a[0].tanh();
    arcsinh_f16, arcsinh_f32, arcsinh_f64 => |a| a[0].arcsinh();
    arccosh_f16, arccosh_f32, arccosh_f64 => |a| a[0].arccosh();
    arctanh_f16, arctanh_f32, arctanh_f64 => |a| a[0].arctanh();
    floor_f16, floor_f32, floor_f64, floor_special_f16, floor_special_f32, floor_special_f64, floor_i32
        => |a| a[0].floor();
    ceil_f16, ceil_f32, ceil_f64, ceil_special_f16, ceil_special_f32, ceil_special_f64, ceil_u8
        => |a| a[0].ceil();
    trunc_f16, trunc_f32, trunc_f64, trunc_special_f16, trunc_special_f32, trunc_special_f64, trunc_bool
        => |a| a[0].trunc();
    rint_f16, rint_f32, rint_f64, rint_special_f16, rint_special_f32, rint_special_f64 => |a| a[0].rint();
    erf_f16, erf_f32, erf_f64 => |a| a[0].erf();
    isnan_special_f16, isnan_special_f32, isnan_special_f64, isnan_i32 => |a| a[0].isnan();
    isinf_special_f16, isinf_special_f32, isinf_special_f64 => |a| a[0].isinf();
    isfinite_special_f16, isfinite_special_f32, isfinite_special_f64, isfinite_u8, isfinite_c64
        => |a| a[0].isfinite();
    logical_not_special_f64, logical_not_i32, logical_not_bool => |a| a[0].logical_not();
    invert_i8, invert_u8, invert_bool, invert_i32 => |a| a[0].invert();
    conj_c64 => |a| a[0].conj();
    real_c64, real_f32 => |a| a[0].real();
    imag_c64, imag_f32 => |a| a[0].imag();

    // --- binary ops ---
    add_f16, add_f32, add_f64, add_f32_row, add_i8_u8, add_f16_f32, add_f16_i8, add_i32_f32, add_i32_f64,
        add_u8_i32, add_bool_bool, add_bool_i8, add_c64_f64, add_c64_c64 => |a| &a[0] + &a[1];
    subtract_f16, subtract_f32, subtract_f64, subtract_f32_col, subtract_u8_u8 => |a| &a[0] - &a[1];
    multiply_f16, multiply_f32, multiply_f64, multiply_row_col_f64, multiply_i8_u8_row, multiply_bool_bool,
        multiply_c64_c64 => |a| &a[0] * &a[1];
    divide_f16, divide_f32, divide_f64, divide_c64_c64, divide_i32_i32, divide_i8_i8 => |a| &a[0] / &a[1];
    power_f16, power_f32, power_f64, power_bool, power_i32 => |a| a[0].power(&a[1]);
    maximum_f16, maximum_f32, maximum_f64, maximum_col_row_f16, maximum_nan_f64, maximum_nan_f32,
        maximum_i8_u8, maximum_bool => |a| a[0].maximum(&a[1]);
    minimum_f16, minimum_f32, minimum_f64, minimum_nan_f64, minimum_nan_f32 => |a| a[0].minimum(&a[1]);
    fmax_nan_f64, fmax_nan_f32 => |a| a[0].fmax(&a[1]);
    fmin_nan_f64, fmin_nan_f32 => |a| a[0].fmin(&a[1]);
    arctan2_f16, arctan2_f32, arctan2_f64, arctan2_i8 => |a| a[0].arctan2(&a[1]);
    hypot_f16, hypot_f32, hypot_f64 => |a| a[0].hypot(&a[1]);
    logaddexp_f16, logaddexp_f32, logaddexp_f64 => |a| a[0].logaddexp(&a[1]);
    copysign_f16, copysign_f32, copysign_f64 => |a| a[0].copysign(&a[1]);
    floor_divide_f16, floor_divide_f32, floor_divide_f64, floor_divide_signs_f32, floor_divide_signs_f64,
        floor_divide_i32, floor_divide_i32_by_zero, floor_divide_bool => |a| a[0].floor_divide(&a[1]);
    remainder_f16, remainder_f32, remainder_f64, remainder_signs_f32, remainder_signs_f64, remainder_i32,
        remainder_i32_by_zero, remainder_bool => |a| &a[0] % &a[1];
    left_shift_bool, left_shift_i32, left_shift_i8 => |a| &a[0] << &a[1];
    right_shift_i32, right_shift_i8 => |a| &a[0] >> &a[1];
    right_shift_u8 => |a| &a[0] >> 3;

    // --- weak scalars (NEP 50) ---
    divide_u8_weak3 => |a| &a[0] / 3;
    multiply_f32_weak2 => |a| &a[0] * 2.0;
    add_f16_weak_third => |a| &a[0] + 1.0 / 3.0;
    add_i32_weak7 => |a| &a[0] + 7;
    add_i8_weak_float => |a| &a[0] + 1.5;
    subtract_weak_i32 => |a| 5 - &a[0];
    add_bool_weak_int => |a| &a[0] + 1;
    multiply_f32_weak_complex, multiply_i8_weak_complex => |a| &a[0] * c(1.0, 2.0);
    add_i8_wrap => |a| &a[0] + 1;
    subtract_i32_wrap => |a| &a[0] - 1;
    multiply_i32_wrap => |a| &a[0] * 3;
    add_u8_weak255 => |a| &a[0] + 255;
    power_i8_weak2 => |a| a[0].power(2);
    power_f32_weak_half => |a| a[0].power(0.5);
    floor_divide_i8_weak => |a| a[0].floor_divide(-3);
    remainder_i8_weak => |a| &a[0] % -3;
    remainder_u8_weak => |a| &a[0] % 7;
    floor_divide_i8_min_by_minus1 => |a| a[0].floor_divide(-1);

    // --- comparisons ---
    equal_f32_nan, equal_i8_u8, equal_f64_special_self, equal_c64 => |a| a[0].equal(&a[1]);
    not_equal_f32_nan, not_equal_i8_u8 => |a| a[0].not_equal(&a[1]);
    less_f32_nan, less_i8_u8 => |a| a[0].less(&a[1]);
    less_equal_f32_nan, less_equal_i8_u8 => |a| a[0].less_equal(&a[1]);
    greater_f32_nan, greater_i8_u8, greater_f16_f32 => |a| a[0].greater(&a[1]);
    greater_equal_f32_nan, greater_equal_i8_u8 => |a| a[0].greater_equal(&a[1]);
    less_i32_weak_float => |a| a[0].less(2.5);
    less_u8_weak_neg => |a| a[0].less(-1);
    equal_i8_weak_300 => |a| a[0].equal(300);

    // --- logical and bitwise ---
    logical_and_bool, logical_and_f32, logical_and_i32 => |a| a[0].logical_and(&a[1]);
    logical_or_bool, logical_or_f32, logical_or_i32 => |a| a[0].logical_or(&a[1]);
    logical_xor_bool, logical_xor_f32, logical_xor_i32 => |a| a[0].logical_xor(&a[1]);
    bitwise_and_i8, bitwise_and_u8, bitwise_and_bool, bitwise_and_i8_u8, bitwise_and_i32 => |a| &a[0] & &a[1];
    bitwise_or_i8, bitwise_or_u8, bitwise_or_bool, bitwise_or_i8_u8, bitwise_or_i32 => |a| &a[0] | &a[1];
    bitwise_xor_i8, bitwise_xor_u8, bitwise_xor_bool, bitwise_xor_i8_u8, bitwise_xor_i32 => |a| &a[0] ^ &a[1];
    bitwise_and_i32_weak => |a| &a[0] & 0xFF;

    // --- where, clip, NaN-aware max/min ---
    where_bool_f32_f64 => |a| kiln::where_(&a[0], &a[1], &a[2]);
    where_i32_cond_weak => |a| kiln::where_(&a[0], &a[1], -1);
    where_bool_col_f32_weak => |a| kiln::where_(&a[0], &a[1], 0.5);
    where_f32_cond => |a| kiln::where_(&a[0], &a[1], 0.0);
    where_scalar_x_y => |a| kiln::where_(&a[0], 1.5, -2);
    clip_f32 => |a| a[0].clip(-0.5, 0.5);
    clip_i32 => |a| a[0].clip(-100, 100);
    clip_u8 => |a| a[0].clip(10, 200);
    clip_f64_special => |a| a[0].clip(-1.0, 2.0);
    fmax_zeros => |a| a[0].fmax(-0.0);

    // --- reductions ---
    sum_f16_all, sum_f32_all, sum_f64_all, sum_i8_all, sum_u8_all, sum_i64_all, sum_empty_f32, sum_empty_i8,
        sum_empty_u8 => |a| a[0].sum(None);
    sum_f16_axis1, sum_f32_axis1, sum_f64_axis1, sum_empty_axis1 => |a| a[0].sum(1);
    sum_f16_axis_neg1, sum_f32_axis_neg1, sum_f64_axis_neg1 => |a| a[0].sum(-1);
    sum_f16_axes02_keep, sum_f32_axes02_keep, sum_f64_axes02_keep => |a| a[0].sum(axis([0, 2]).keepdims());
    sum_f16_all_keep, sum_f32_all_keep, sum_f64_all_keep => |a| a[0].sum(all_axes().keepdims());
    sum_i8_axis0, sum_empty_axis0 => |a| a[0].sum(0);
    sum_u8_axis_neg2_keep => |a| a[0].sum(axis(-2).keepdims());
    sum_bool_axis2 => |a| a[0].sum(2);
    sum_i32_axes_neg1_0 => |a| a[0].sum([-1, 0]);
    sum_c64_axis1 => |a| a[0].sum(1);
    prod_f16_axis2, prod_f32_axis2, prod_f64_axis2, prod_i32_axis2 => |a| a[0].prod(2);
    prod_f64_all, prod_empty_f32, prod_empty_i8 => |a| a[0].prod(None);
    prod_u8_axis1, prod_empty_axis1 => |a| a[0].prod(1);
    mean_f16_all, mean_f32_all, mean_f64_all, mean_i8_all, mean_empty_f32 => |a| a[0].mean(None);
    mean_f16_axis0, mean_f32_axis0, mean_f64_axis0, mean_bool_axis0 => |a| a[0].mean(0);
    mean_i32_axis1 => |a| a[0].mean(1);
    var_f16_all, var_f32_all, var_f64_all => |a| a[0].var(None, 0);
    var_f16_axis1_ddof1, var_f32_axis1_ddof1, var_f64_axis1_ddof1 => |a| a[0].var(1, 1);
    std_f16_axis_neg1, std_f32_axis_neg1, std_f64_axis_neg1 => |a| a[0].std(-1, 0);
    std_f16_axes01_ddof1_keep, std_f32_axes01_ddof1_keep, std_f64_axes01_ddof1_keep
        => |a| a[0].std(axis([0, 1]).keepdims(), 1);
    var_i32_axis2 => |a| a[0].var(2, 0);
    std_u8_all_ddof1 => |a| a[0].std(None, 1);
    var_i8_axes12_keep => |a| a[0].var(axis([1, 2]).keepdims(), 0);
    var_c64_axis1 => |a| a[0].var(1, 0);
    max_f16_axis1, max_f32_axis1, max_f64_axis1, max_bool_axis1, max_nan_f64_axis1 => |a| a[0].max(1);
    max_f16_all, max_f32_all, max_f64_all, max_nan_f64_all => |a| a[0].max(None);
    min_f16_axes12_keep, min_f32_axes12_keep, min_f64_axes12_keep => |a| a[0].min(axis([1, 2]).keepdims());
    max_i8_axis0, max_empty_axis0 => |a| a[0].max(0);
    min_u8_all => |a| a[0].min(None);
    min_nan_f32_axis0 => |a| a[0].min(0);
    all_bool_axis1, all_f32_nan_axis1, all_empty_axis1 => |a| a[0].all(1);
    any_bool_axis_neg1 => |a| a[0].any(-1);
    any_i32_small_axes01 => |a| a[0].any([0, 1]);
    all_i32_small_all_keep => |a| a[0].all(all_axes().keepdims());
    all_empty => |a| a[0].all(None);
    any_empty => |a| a[0].any(None);
    any_empty_axis1 => |a| a[0].any(1);
    argmax_f64_nan_axis1, argmax_i32_ties_axis1 => |a| a[0].argmax(1);
    argmin_f64_nan_axis1, argmin_i32_ties_axis1 => |a| a[0].argmin(1);
    argmax_f32_nan_all => |a| a[0].argmax(None);
    argmin_f32_nan2_axis0 => |a| a[0].argmin(0);
    argmax_f64_axis_neg1_keep => |a| a[0].argmax(axis(-1).keepdims());
    argmin_f64_all_keep => |a| a[0].argmin(all_axes().keepdims());
    argmax_u8_axis0 => |a| a[0].argmax(0);
    argmax_bool_axis2 => |a| a[0].argmax(2);

    // --- views ---
    transpose_i32 => |a| a[0].t();
    permute_120_f64 => |a| a[0].permute(&[1, 2, 0]);
    permute_neg_i32 => |a| a[0].permute(&[-1, 0, -2]);
    swapaxes_i32 => |a| a[0].swapaxes(0, 2);
    slice_neg_step_i32 => |a| a[0].slice(&s![..;-1, 1..3, ..;-2]);
    slice_index_i32 => |a| a[0].slice(&s![1, .., -1]);
    slice_ellipsis_i32 => |a| a[0].slice(&s![SliceArg::Ellipsis, 2]);
    slice_newaxis_i32 => |a| a[0].slice(&s![SliceArg::NewAxis, 0, .., SliceArg::NewAxis, 1..4]);
    slice_clip_bounds_i32 => |a| a[0].slice(&s![-100..100, 2.., ..-7]);
    slice_rev_partial_i32 => |a| a[0].slice(&s![2..0;-1, -1..-5;-2, 3..;-3]);
    slice_step_f32 => |a| a[0].slice(&s![.., ..;3, 1..;2]);
    broadcast_to_f32 => |a| a[0].broadcast_to(&[3, 4, 5]);
    broadcast_to_row_i8 => |a| a[0].broadcast_to(&[2, 4, 5]);
    reshape_transposed_i32 => |a| a[0].t().reshape(&[5, 12]);
    reshape_infer_f64 => |a| a[0].reshape(&[-1, 6]);
    reshape_sliced_i32 => |a| a[0].slice(&s![.., ..;-1, 1..3]).reshape(&[4, 6]);
    ravel_permuted_i32 => |a| a[0].permute(&[1, 0, 2]).ravel();
    expand_dims_i32 => |a| a[0].expand_dims(&[0, 3]);
    expand_dims_neg_i32 => |a| a[0].expand_dims(&[-1]);
    squeeze_all_i32 => |a| a[0].squeeze(None);
    squeeze_axis1_i32 => |a| a[0].squeeze(Some(&[1]));
    squeeze_neg_i32 => |a| a[0].squeeze(Some(&[-1]));
    flip_all_i32 => |a| a[0].flip(None);
    flip_axis1_i32 => |a| a[0].flip(Some(&[1]));
    flip_axes02_f64 => |a| a[0].flip(Some(&[0, 2]));
    transpose_then_add => |a| &a[0].t() + &a[1].slice(&s![.., SliceArg::NewAxis, SliceArg::NewAxis]);
    slice_then_sum_i32 => |a| a[0].slice(&s![.., ..;-2, 1..]).sum(1);
    concatenate_i8_f16_axis0 => |a| kiln::concatenate(&[&a[0], &a[1]], 0);
    concatenate_empty => |a| kiln::concatenate(&[&a[0], &a[1]], 1);
    concatenate_i32_f32_neg => |a| kiln::concatenate(&[&a[0], &a[1]], -1);
    concatenate_i8_u8_f16 => |a| kiln::concatenate(&[&a[0], &a[1], &a[2]], 0);
    concatenate_u8_i8_axis1 => |a| kiln::concatenate(&[&a[0], &a[1]], 1);
    stack_f32_axis1 => |a| kiln::stack(&[&a[0], &a[1]], 1);
    stack_i8_u8, stack_bool_f64 => |a| kiln::stack(&[&a[0], &a[1]], 0);
    stack_neg_axis => |a| kiln::stack(&[&a[0], &a[1], &a[2]], -1);
    load_fortran_order => |a| a[0].clone();

    // --- creation ---
    arange_10 => |_| kiln::arange(10);
    arange_0 => |_| kiln::arange(0);
    arange_step_int => |_| kiln::arange_step(2, 20, 3);
    arange_step_neg => |_| kiln::arange_step(10, 0, -3);
    arange_step_float => |_| kiln::arange_step(0.0, 1.0, 0.1);
    arange_step_float2 => |_| kiln::arange_step(-1.5, 2.0, 0.25);
    arange_step_mixed => |_| kiln::arange_step(1, 2.0, 0.3);
    arange_step_empty => |_| kiln::arange_step(5, 1, 1);
    linspace_0_1_11 => |_| kiln::linspace(0.0, 1.0, 11);
    linspace_neg => |_| kiln::linspace(-1.0, 2.5, 7);
    linspace_1 => |_| kiln::linspace(3.0, 5.0, 1);
    linspace_0 => |_| kiln::linspace(3.0, 5.0, 0);
    linspace_desc => |_| kiln::linspace(10.0, -10.0, 9);
    eye_4 => |_| kiln::eye(4, None, 0, Float64);
    eye_3_5_k1_f32 => |_| kiln::eye(3, Some(5), 1, Float32);
    eye_4_km2_i32 => |_| kiln::eye(4, None, -2, Int32);
    eye_2_4_k5_bool => |_| kiln::eye(2, Some(4), 5, Bool);
    identity_3_u8 => |_| kiln::identity(3, UInt8);
    zeros_i8 => |_| kiln::zeros(&[2, 3], Int8);
    ones_c64 => |_| kiln::ones(&[2, 2], Complex64);
    full_f16_third => |_| kiln::full(&[3], 1.0 / 3.0, Float16);
    full_i32_neg => |_| kiln::full(&[2, 2], -7, Int32);
    zeros_like_f32 => |a| kiln::zeros_like(&a[0]);
    ones_like_bool => |a| kiln::ones_like(&a[0]);
    full_like_i8 => |a| kiln::full_like(&a[0], -5);

    // --- astype ---
    astype_f64_i32_trunc => |a| a[0].astype(Int32);
    astype_f64_i8_trunc, astype_u8_i8 => |a| a[0].astype(Int8);
    astype_f64_u8, astype_i32_u8, astype_i8_u8 => |a| a[0].astype(UInt8);
    astype_f32_i64 => |a| (&a[0] * 1000).astype(Int64);
    astype_i32_bool, astype_f32_bool => |a| a[0].astype(Bool);
    astype_c64_f32, astype_f64_f32, astype_bool_f32 => |a| a[0].astype(Float32);
    astype_c64_f64, astype_f16_f64 => |a| a[0].astype(Float64);
    astype_c64_bool => |a| (&a[0] * &a[0].abs().greater(1)).astype(Bool);
    astype_f64_f16, astype_i32_f16 => |a| a[0].astype(Float16);
    astype_f32_f16 => |a| (&a[0] * 1000).astype(Float16);
    astype_i32_i8, astype_bool_i8 => |a| a[0].astype(Int8);
    astype_i32_u16 => |a| a[0].astype(UInt16);
    astype_i8_u64 => |a| a[0].astype(UInt64);
    astype_i64_f32 => |a| a[0].astype(Float32);
    astype_i32_c64, astype_f64_c64 => |a| a[0].astype(Complex64);

    // --- compositions ---
    softmax_f32_axis_neg1 => |a| {
        let m = a[0].max(axis(-1).keepdims());
        let e = (&a[0] - &m).exp();
        &e / &e.sum(axis(-1).keepdims())
    };
    poly_f64 => |a| {
        let x = &a[0];
        (x * x * 3.0 - x * 2.0 + 1.0) / (x * x + 1.0)
    };
    norm_rows_f32 => |a| &a[0] / &(&a[0] * &a[0]).sum(axis(-1).keepdims()).sqrt();
}

/// The tests of a fixture manifest (`tests/fixtures/<manifest>`): a `#[test]` per case, running
/// its closure (`|a: &[Array]| -> Array`, `a` the case's inputs) against NumPy's output, and
/// `every_fixture_has_a_case`, checking that the manifest's cases and the closures match.
///
/// ```ignore
/// fixture_cases! { "scan/cases.txt";
///     cumsum_f32_axis0, cumsum_u8_to_u64 => |a| a[0].cumsum(Some(0));
/// }
/// ```
macro_rules! fixture_cases {
    ($manifest:literal; $($($name:ident),+ => $f:expr;)*) => {
        fn manifest() -> &'static std::collections::HashMap<String, $crate::numpy_fixtures::Case> {
            static M: std::sync::OnceLock<std::collections::HashMap<String, $crate::numpy_fixtures::Case>> =
                std::sync::OnceLock::new();
            M.get_or_init(|| $crate::numpy_fixtures::load_manifest($manifest))
        }
        $($(
            #[test]
            fn $name() {
                $crate::numpy_fixtures::run_case_in(manifest(), stringify!($name), $f)
            }
        )+)*
        #[test]
        fn every_fixture_has_a_case() {
            $crate::numpy_fixtures::assert_same_cases(manifest(), &[$($(stringify!($name)),+),*]);
        }
    };
}
pub(crate) use fixture_cases;

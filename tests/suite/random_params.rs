//! Distribution parameters as arrays (`normal_array`, `uniform_array`, `exponential_array`,
//! `gamma_array`, `beta_array`, `poisson_array`, `binomial_array`): normal, uniform and
//! exponential values are the scalar form's draw from the same stream with its element's
//! parameters (uniforms bit for bit; normals up to the last bits of `log`, `cos` and `sin`,
//! as `kiln::random` documents: where host loops are vectorised with glibc's vector functions,
//! an element's value depends on whether its lane is vectorised in that kernel); gamma, beta, poisson and binomial follow each
//! element's parameters (moments per column); shapes broadcast as NumPy's (`size` or the
//! parameters' shape), and NumPy's errors with every live array still readable.

use kiln::random::Generator;
use kiln::{Array, DType};

fn floats(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64).to_vec::<f64>()
}

#[test]
fn array_parameters_scale_and_shift_the_same_draws() {
    let loc = Array::from_vec(vec![-3.0f64, 0.0, 10.0], &[3]);
    let scale = Array::from_vec(vec![0.5f64, 2.0], &[2, 1]);
    for dtype in [DType::Float32, DType::Float64] {
        let got = Generator::new(5).normal_array(&loc, &scale, None, dtype);
        assert_eq!((got.shape(), got.dtype()), (&[2usize, 3][..], dtype));
        let z = floats(&Generator::new(5).standard_normal(&[2, 3], dtype));
        let (l, s) = (loc.astype(dtype), scale.astype(dtype));
        let want = floats(&(&Array::from_vec(z.clone(), &[2, 3]).astype(dtype) * &s + &l));
        // Bit for bit where both kernels call the scalar libm (or vectorise the same lanes);
        // within glibc's vector functions' 4 ulps of each function (8 of the normal) where
        // one kernel's loop is vectorised over an element and the other's is not (AVX2: a flat
        // loop of 6 float64s vectorises 4, a 2×3 nest none).
        let eps = if dtype == DType::Float32 { f32::EPSILON as f64 } else { f64::EPSILON };
        let ulps = if kiln_compiler::codegen::host::libmvec_enabled() { 8.0 } else { 0.0 };
        let (lv, sv) = (floats(&loc), floats(&scale));
        for (k, (g, w)) in floats(&got).iter().zip(&want).enumerate() {
            let (zs, l) = ((z[k] * sv[k / 3]).abs(), lv[k % 3].abs());
            assert!(
                (g - w).abs() <= ulps * eps * (zs + l),
                "normal {dtype}, element {k}: {g} against {w}"
            );
        }

        let (lo, hi) = (Array::from_vec(vec![0.0f64, -1.0], &[2]), 4.0);
        let got = Generator::new(6).uniform_array(&lo, hi, Some(&[3, 2]), dtype);
        let u = Generator::new(6).random(&[3, 2], dtype);
        let lo_d = lo.astype(dtype);
        let want = floats(&(&u * &(&Array::scalar(hi).astype(dtype) - &lo_d) + &lo_d));
        assert_eq!(floats(&got), want, "uniform {dtype}");
        for (k, v) in floats(&got).iter().enumerate() {
            let l = [0.0, -1.0][k % 2];
            assert!(*v >= l && *v <= 4.0, "uniform {dtype}: {v} outside [{l}, 4]");
        }

        let sc = Array::from_vec(vec![1.0f64, 0.25, 8.0, 0.0], &[4]);
        let got = Generator::new(7).exponential_array(&sc, None, dtype);
        let e = Generator::new(7).exponential(1.0, &[4], dtype);
        assert_eq!(floats(&got), floats(&(&e * &sc.astype(dtype))), "exponential {dtype}");
        assert_eq!(floats(&got)[3], 0.0, "a zero scale draws zeros");
    }
}

/// Scalars take the scalar forms: the same values as `normal`, `uniform`, `exponential`, and a
/// `size` of `None` draws one value (shape `[]`).
#[test]
fn scalar_parameters_are_the_scalar_forms() {
    let dt = DType::Float64;
    let a = Generator::new(9).normal_array(1.5, 2.0, Some(&[4]), dt);
    assert_eq!(floats(&a), floats(&Generator::new(9).normal(1.5, 2.0, &[4], dt)));
    let u = Generator::new(9).uniform_array(-1.0, 1.0, None, dt);
    assert_eq!(u.shape(), &[] as &[usize]);
    assert_eq!(floats(&u), floats(&Generator::new(9).uniform(-1.0, 1.0, &[], dt)));
    let e = Generator::new(9).exponential_array(3.0, Some(&[2, 2]), dt);
    assert_eq!(floats(&e), floats(&Generator::new(9).exponential(3.0, &[2, 2], dt)));
}

/// Each column's draws have its own mean and deviation.
#[test]
fn each_element_follows_its_own_parameters() {
    let n = 40_000;
    let loc = Array::from_vec(vec![-5.0f64, 0.0, 100.0], &[3]);
    let scale = Array::from_vec(vec![0.1f64, 1.0, 30.0], &[3]);
    let x = Generator::new(11).normal_array(&loc, &scale, Some(&[n, 3]), DType::Float64);
    let v = floats(&x);
    for (c, (m, s)) in [(-5.0, 0.1), (0.0, 1.0), (100.0, 30.0)].into_iter().enumerate() {
        let col: Vec<f64> = v.iter().skip(c).step_by(3).copied().collect();
        let mean = col.iter().sum::<f64>() / n as f64;
        let var = col.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        // Five standard errors of the mean; the deviation within 3%.
        assert!((mean - m).abs() < 5.0 * s / (n as f64).sqrt(), "column {c}: mean {mean}");
        assert!((var.sqrt() / s - 1.0).abs() < 0.03, "column {c}: deviation {}", var.sqrt());
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let dt = DType::Float32;
    let live = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    let neg = Array::from_vec(vec![1.0f64, -0.5], &[2]);
    let nan = Array::from_vec(vec![f64::NAN, 1.0], &[2]);
    let inf = Array::from_vec(vec![0.0f64, f64::INFINITY], &[2]);
    let mut g = Generator::new(1);
    let msg = |r: kiln::Result<Array>| r.unwrap_err().to_string();
    assert!(msg(g.try_normal_array(0.0, &neg, None, dt)).contains("scale < 0"));
    assert!(msg(g.try_normal_array(&live, &nan, None, dt)).contains("scale < 0"));
    assert!(msg(g.try_uniform_array(&inf, 1.0, None, dt)).contains("finite"));
    assert!(msg(g.try_exponential_array(&neg, None, dt)).contains("scale < 0"));
    assert!(msg(g.try_exponential_array(&inf, None, dt)).contains("not finite"));
    // Shapes that do not broadcast together, or to `size`.
    let three = Array::from_vec(vec![1.0f64; 3], &[3]);
    assert!(g.try_normal_array(&live, &three, None, dt).is_err());
    let e = msg(g.try_normal_array(&three, 1.0, Some(&[3, 1]), dt));
    assert!(e.contains("normal") && e.contains("size"), "{e}");
    // A dtype that is not a float, a complex parameter.
    assert!(g.try_normal_array(&live, 1.0, None, DType::Int32).is_err());
    let z = Array::from_vec(vec![num_complex::Complex64::new(1.0, 1.0)], &[1]);
    let e = msg(g.try_normal_array(&z, 1.0, None, dt));
    assert!(e.contains("normal") && e.contains("complex"), "{e}");
    assert_eq!(live.to_vec::<f32>(), vec![1.0, 2.0]);
    assert_eq!(neg.to_vec::<f64>(), vec![1.0, -0.5]);
}

/// Column `c` of an `[n, cols]` draw.
fn column(v: &[f64], cols: usize, c: usize) -> Vec<f64> {
    v.iter().skip(c).step_by(cols).copied().collect()
}

/// The sample mean and variance.
fn moments(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (mean, x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n)
}

/// Gamma and beta with a parameter per column: each column's mean and variance are its
/// distribution's (shapes below and above 1, a zero shape and a zero scale giving zeros).
#[test]
fn gamma_and_beta_follow_each_elements_parameters() {
    let n = 40_000;
    let shapes = [0.3, 1.0, 4.5, 0.0, 2.0];
    let scales = [2.0, 0.5, 1.0, 3.0, 0.0];
    let k = Array::from_vec(shapes.to_vec(), &[5]);
    let s = Array::from_vec(scales.to_vec(), &[5]);
    for dtype in [DType::Float32, DType::Float64] {
        let x = Generator::new(21).gamma_array(&k, &s, Some(&[n, 5]), dtype);
        assert_eq!((x.shape(), x.dtype()), (&[n, 5][..], dtype));
        let v = floats(&x);
        for c in 0..5 {
            let col = column(&v, 5, c);
            let (mean, var) = moments(&col);
            let (want_m, want_v) = (shapes[c] * scales[c], shapes[c] * scales[c] * scales[c]);
            assert!(col.iter().all(|x| *x >= 0.0 && x.is_finite()), "gamma column {c}");
            if want_v == 0.0 {
                assert!(col.iter().all(|x| *x == 0.0), "gamma column {c}: zeros");
                continue;
            }
            // Five standard errors of the mean; the variance within 5%.
            let se = (want_v / n as f64).sqrt();
            assert!((mean - want_m).abs() < 5.0 * se, "gamma {dtype} column {c}: mean {mean}");
            assert!((var / want_v - 1.0).abs() < 0.05, "gamma {dtype} column {c}: var {var}");
        }
    }
    let a = Array::from_vec(vec![0.5f64, 2.0, 5.0], &[3]);
    let b = Array::from_vec(vec![0.5f64, 3.0, 1.0], &[3]);
    let x = Generator::new(22).beta_array(&a, &b, Some(&[n, 3]), DType::Float64);
    let v = floats(&x);
    for (c, (a, b)) in [(0.5, 0.5), (2.0, 3.0), (5.0, 1.0)].into_iter().enumerate() {
        let col = column(&v, 3, c);
        let (mean, var) = moments(&col);
        let want_m = a / (a + b);
        let want_v = a * b / ((a + b) * (a + b) * (a + b + 1.0));
        assert!(col.iter().all(|x| (0.0..=1.0).contains(x)), "beta column {c}");
        assert!((mean - want_m).abs() < 5.0 * (want_v / n as f64).sqrt(), "beta {c}: {mean}");
        assert!((var / want_v - 1.0).abs() < 0.05, "beta column {c}: var {var}");
    }
}

/// Gamma and beta: shapes broadcast (`None` takes the parameters'), scalars take the scalar
/// forms, and NumPy's errors with every live array still readable.
#[test]
fn gamma_and_beta_shapes_scalars_and_errors() {
    let dt = DType::Float64;
    let k = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let s = Array::from_vec(vec![1.0f64, 10.0], &[2, 1]);
    assert_eq!(Generator::new(1).gamma_array(&k, &s, None, dt).shape(), &[2, 3]);
    assert_eq!(Generator::new(1).beta_array(&k, 2.0, Some(&[4, 3]), dt).shape(), &[4, 3]);
    let g = Generator::new(2).gamma_array(2.0, 3.0, Some(&[5]), dt);
    assert_eq!(floats(&g), floats(&Generator::new(2).gamma(2.0, 3.0, &[5], dt)));
    let b = Generator::new(3).beta_array(2.0, 0.5, None, dt);
    assert_eq!(b.shape(), &[] as &[usize]);
    assert_eq!(floats(&b), floats(&Generator::new(3).beta(2.0, 0.5, &[], dt)));

    let mut g = Generator::new(4);
    let msg = |r: kiln::Result<Array>| r.unwrap_err().to_string();
    let neg = Array::from_vec(vec![1.0f64, -0.5], &[2]);
    let nan = Array::from_vec(vec![f64::NAN, 1.0], &[2]);
    let zero = Array::from_vec(vec![0.0f64, 1.0], &[2]);
    assert!(msg(g.try_gamma_array(&neg, 1.0, None, dt)).contains("shape < 0"));
    assert!(msg(g.try_gamma_array(1.0, &nan, None, dt)).contains("scale < 0"));
    // Shapes [3] and [2] do not broadcast.
    assert!(g.try_gamma_array(&k, &neg, None, dt).is_err());
    assert!(msg(g.try_beta_array(&zero, 1.0, None, dt)).contains("a <= 0"));
    assert!(msg(g.try_beta_array(1.0, &nan, None, dt)).contains("b <= 0"));
    let e = msg(g.try_gamma_array(&k, 1.0, Some(&[3, 1]), dt));
    assert!(e.contains("gamma") && e.contains("size"), "{e}");
    assert!(g.try_beta_array(&k, 1.0, None, DType::Int64).is_err());
    assert_eq!(neg.to_vec::<f64>(), vec![1.0, -0.5]);
    assert_eq!(k.to_vec::<f64>(), vec![1.0, 2.0, 3.0]);
}

/// Poisson counts follow each element's mean: zeros for 0, inversion below 10, PTRS from 10
/// (means and variances per column, both equal to `lam`); a scalar `lam` is the scalar form;
/// bad means are typed errors that leave the live arrays readable.
#[test]
fn poisson_follows_each_elements_mean() {
    let lams = [0.0, 0.5, 3.0, 9.5, 10.0, 25.0, 1000.0];
    let n = 20000;
    let lam = Array::from_vec(lams.to_vec(), &[lams.len()]);
    let x = Generator::new(5).poisson_array(&lam, Some(&[n, lams.len()]));
    assert_eq!((x.shape(), x.dtype()), (&[n, lams.len()][..], DType::Int64));
    let v: Vec<f64> = x.to_vec::<i64>().into_iter().map(|k| k as f64).collect();
    for (c, &l) in lams.iter().enumerate() {
        let col = column(&v, lams.len(), c);
        assert!(col.iter().all(|k| *k >= 0.0), "column {c}: a negative count");
        if l == 0.0 {
            assert!(col.iter().all(|k| *k == 0.0), "column {c}: zeros");
            continue;
        }
        let (mean, var) = moments(&col);
        assert!((mean - l).abs() < 5.0 * (l / n as f64).sqrt(), "column {c}: mean {mean}");
        assert!((var / l - 1.0).abs() < 0.08, "column {c}: variance {var}");
    }
    let one = Generator::new(5).poisson_array(3.5, Some(&[4]));
    assert_eq!(one.to_vec::<i64>(), Generator::new(5).poisson(3.5, &[4]).to_vec::<i64>());
    let mut g = Generator::new(1);
    let msg = |r: kiln::Result<Array>| r.unwrap_err().to_string();
    let neg = Array::from_vec(vec![1.0, -0.5], &[2]);
    let nan = Array::from_vec(vec![f64::NAN, 1.0], &[2]);
    let big = Array::from_vec(vec![1e19, 1.0], &[2]);
    assert!(msg(g.try_poisson_array(&neg, None)).contains("lam < 0"));
    assert!(msg(g.try_poisson_array(&nan, None)).contains("NaN"));
    assert!(msg(g.try_poisson_array(&big, None)).contains("too large"));
    let e = msg(g.try_poisson_array(&lam, Some(&[3])));
    assert!(e.contains("poisson") && e.contains("broadcast"), "{e}");
    assert_eq!(neg.to_vec::<f64>(), vec![1.0, -0.5]);
}

/// Binomial counts follow each element's trials and probability: inversion below `n·p' = 10`,
/// BTRS above, `p > 1/2` by the flip, the edges `n = 0`, `p = 0` and `p = 1` exact (means and
/// variances per column: `np` and `np(1-p)`); scalars are the scalar form; bad parameters are
/// typed errors that leave the live arrays readable.
#[test]
fn binomial_follows_each_elements_trials_and_probability() {
    let ns = [0i64, 10, 7, 40, 100, 1000, 50, 12];
    let ps = [0.5, 0.0, 1.0, 0.1, 0.3, 0.5, 0.9, 0.75];
    let cols = ns.len();
    let rows = 20000;
    let n = Array::from_vec(ns.to_vec(), &[cols]);
    let p = Array::from_vec(ps.to_vec(), &[cols]);
    let x = Generator::new(8).binomial_array(&n, &p, Some(&[rows, cols]));
    assert_eq!((x.shape(), x.dtype()), (&[rows, cols][..], DType::Int64));
    let v: Vec<f64> = x.to_vec::<i64>().into_iter().map(|k| k as f64).collect();
    for c in 0..cols {
        let (nc, pc) = (ns[c] as f64, ps[c]);
        let col = column(&v, cols, c);
        assert!(col.iter().all(|k| *k >= 0.0 && *k <= nc), "column {c}: a count outside [0, n]");
        let (want_m, want_v) = (nc * pc, nc * pc * (1.0 - pc));
        if want_v == 0.0 {
            assert!(col.iter().all(|k| *k == want_m), "column {c}: always {want_m}");
            continue;
        }
        let (mean, var) = moments(&col);
        let se = (want_v / rows as f64).sqrt();
        assert!((mean - want_m).abs() < 5.0 * se, "column {c}: mean {mean}, want {want_m}");
        assert!((var / want_v - 1.0).abs() < 0.08, "column {c}: variance {var}, want {want_v}");
    }
    let one = Generator::new(8).binomial_array(20i64, 0.3, Some(&[4]));
    assert_eq!(one.to_vec::<i64>(), Generator::new(8).binomial(20, 0.3, &[4]).to_vec::<i64>());
    let mut g = Generator::new(1);
    let msg = |r: kiln::Result<Array>| r.unwrap_err().to_string();
    let neg = Array::from_vec(vec![3i64, -1], &[2]);
    let bad_p = Array::from_vec(vec![0.5, f64::NAN], &[2]);
    let float_n = Array::from_vec(vec![3.0f64, 1.0], &[2]);
    assert!(msg(g.try_binomial_array(&neg, 0.5, None)).contains("n < 0"));
    assert!(msg(g.try_binomial_array(5i64, &bad_p, None)).contains("p > 1"));
    assert!(msg(g.try_binomial_array(5i64, 1.5, Some(&[2]))).contains("p > 1"));
    assert!(msg(g.try_binomial_array(&float_n, 0.5, None)).contains("binomial"));
    assert_eq!(neg.to_vec::<i64>(), vec![3, -1]);
}

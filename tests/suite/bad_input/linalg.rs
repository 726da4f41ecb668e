//! `kiln::linalg` (products, einsum, decompositions), `kiln::fft` and `kiln::random`: inner
//! dimensions, non-square and low-rank operands, bad einsum strings, FFT lengths and norms,
//! distribution parameters and dtypes.

use kiln::linalg::{self, NormOrd, QrMode};
use kiln::random::{self, Generator};
use kiln::{fft, Array, DType};

use super::{bools, c64s, f32s, f64s, i64s, nans, Walk};

/// Decompositions taking one matrix: a 1-D operand, a non-square one (where square is
/// required), bool; NaN-laden and empty matrices.
macro_rules! one_matrix {
    ($w:expr; $($f:ident, $op:literal, $square:expr;)*) => {$(
        let f = concat!("linalg::", stringify!($f));
        $w.err(f, $op, "1-D", || linalg::$f(&f64s(&[3])));
        $w.err(f, $op, "0-d", || linalg::$f(&f64s(&[])));
        if $square {
            $w.err(f, $op, "(2, 3)", || linalg::$f(&f64s(&[2, 3])));
        }
        $w.survives(f, $op, "float16", || linalg::$f(&f32s(&[2, 2]).astype(DType::Float16)));
        $w.survives(f, $op, "NaN", || linalg::$f(&nans(&[3, 3])));
        $w.survives(f, $op, "zeros (singular)", || linalg::$f(&kiln::zeros(&[3, 3], DType::Float64)));
        $w.survives(f, $op, "empty", || linalg::$f(&f64s(&[0, 0])));
        $w.survives(f, $op, "inf", || linalg::$f(&kiln::full(&[2, 2], f64::INFINITY, DType::Float64)));
    )*};
}

pub fn walk(w: &mut Walk) {
    products(w);
    einsum(w);
    decompositions(w);
    ffts(w);
    randoms(w);
}

fn products(w: &mut Walk) {
    let f = "kiln::try_matmul";
    w.err(f, "matmul", "(2, 3) @ (4, 2)", || kiln::try_matmul(&f32s(&[2, 3]), &f32s(&[4, 2])));
    w.err(f, "matmul", "(3,) @ (4,)", || kiln::try_matmul(&f32s(&[3]), &f32s(&[4])));
    w.err(f, "matmul", "0-d", || kiln::try_matmul(&f32s(&[]), &f32s(&[3])));
    w.err(f, "matmul", "batches 2 and 3", || {
        kiln::try_matmul(&f32s(&[2, 2, 2]), &f32s(&[3, 2, 2]))
    });
    w.survives(f, "matmul", "NaN", || kiln::try_matmul(&nans(&[2, 3]), &nans(&[3, 2])));
    w.survives(f, "matmul", "empty inner", || kiln::try_matmul(&f32s(&[2, 0]), &f32s(&[0, 2])));
    w.err("Array::try_matmul", "matmul", "(2, 3) @ (2, 3)", || {
        f32s(&[2, 3]).try_matmul(&f32s(&[2, 3]))
    });
    w.err("Array::try_dot", "dot", "(2, 3) . (2, 3)", || f32s(&[2, 3]).try_dot(&f32s(&[2, 3])));
    w.err("kiln::try_dot", "dot", "(3,) . (4,)", || kiln::try_dot(&f32s(&[3]), &f32s(&[4])));
    let f = "kiln::try_matmul_axes";
    w.err(f, "matmul", "axis 5", || {
        kiln::try_matmul_axes(&f32s(&[2, 2]), &f32s(&[2, 2]), [(5, 0), (0, 1), (0, 1)])
    });
    w.err(f, "matmul", "repeated axes", || {
        kiln::try_matmul_axes(&f32s(&[2, 2]), &f32s(&[2, 2]), [(0, 0), (0, 1), (0, 1)])
    });
    w.err("kiln::try_inner", "inner", "(2, 3) and (2, 4)", || {
        kiln::try_inner(&f32s(&[2, 3]), &f32s(&[2, 4]))
    });
    w.err("kiln::try_vdot", "vdot", "3 and 4 elements", || {
        kiln::try_vdot(&f32s(&[3]), &f32s(&[4]))
    });
    w.survives("kiln::try_outer", "outer", "NaN", || kiln::try_outer(&nans(&[3]), &nans(&[2])));
    w.survives("kiln::try_kron", "kron", "empty", || {
        kiln::try_kron(&f32s(&[0, 2]), &f32s(&[2, 3]))
    });
    let f = "kiln::try_tensordot";
    w.err(f, "tensordot", "3 axes of 2-D", || {
        kiln::try_tensordot(&f32s(&[2, 3]), &f32s(&[3, 2]), 3)
    });
    w.err(f, "tensordot", "negative count", || {
        kiln::try_tensordot(&f32s(&[2, 3]), &f32s(&[3, 2]), -1)
    });
    w.err(f, "tensordot", "extents 3 and 2", || {
        kiln::try_tensordot(&f32s(&[2, 3]), &f32s(&[3, 2]), ([1], [1]))
    });
    w.err(f, "tensordot", "axis 7", || {
        kiln::try_tensordot(&f32s(&[2, 3]), &f32s(&[3, 2]), ([7], [0]))
    });
    w.err(f, "tensordot", "lists of different lengths", || {
        kiln::try_tensordot(&f32s(&[2, 3]), &f32s(&[3, 2]), (vec![1i64, 0], vec![0i64]))
    });
    let f = "kiln::try_vecdot";
    w.err(f, "vecdot", "extents 3 and 4", || kiln::try_vecdot(&f32s(&[3]), &f32s(&[4]), -1));
    w.err(f, "vecdot", "axis 2", || kiln::try_vecdot(&f32s(&[3]), &f32s(&[3]), 2));
}

fn einsum(w: &mut Walk) {
    let m = f32s(&[2, 3]);
    let v = f32s(&[3]);
    let mt = m.transpose();
    let f = "kiln::try_einsum";
    for (case, subs, ops) in [
        ("too few operands", "ij,jk", vec![&m]),
        ("too many operands", "ij", vec![&m, &m]),
        ("too few subscripts for 2-D", "i", vec![&m]),
        ("too many subscripts for 1-D", "ij", vec![&v]),
        ("output label not in inputs", "ij->k", vec![&m]),
        ("repeated output label", "ij->ii", vec![&m]),
        ("extents 3 and 2 for one label", "ij,ij->", vec![&m, &mt]),
        ("a label repeated with different extents", "ii", vec![&m]),
        ("a digit", "i1", vec![&m]),
        ("a bad arrow", "ij-i", vec![&m]),
        ("two arrows", "ij->i->j", vec![&m]),
        ("an empty string", "", vec![&m]),
        ("non-ASCII", "ïj", vec![&m]),
        ("two ellipses", "...i...", vec![&m]),
        ("a broken ellipsis", "..i", vec![&m]),
        ("no operands", "->", vec![]),
        ("spaces and commas only", " , ", vec![&m, &m]),
    ] {
        w.err(f, "einsum", case, || kiln::try_einsum(subs, &ops));
    }
    w.survives(f, "einsum", "NaN", || {
        kiln::try_einsum("ij,jk->ik", &[&nans(&[2, 3]), &nans(&[3, 2])])
    });
}

fn decompositions(w: &mut Walk) {
    one_matrix! { w;
        try_cholesky, "cholesky", true; try_inv, "inv", true; try_det, "det", true;
        try_slogdet, "slogdet", true; try_svdvals, "svd", false; try_eigh, "eigh", true;
    }
    // eigvalsh is eigh without vectors: its shape errors name it where it is written; NaN or
    // inf data is found when cuSOLVER computes it, and the error is NumPy's LinAlgError text
    // ("Eigenvalues did not converge", which names no function in NumPy either).
    let f = "linalg::try_eigvalsh";
    w.err(f, "eigvalsh", "1-D", || linalg::try_eigvalsh(&f64s(&[3])));
    w.err(f, "eigvalsh", "0-d", || linalg::try_eigvalsh(&f64s(&[])));
    w.err(f, "eigvalsh", "(2, 3)", || linalg::try_eigvalsh(&f64s(&[2, 3])));
    w.survives(f, "eigvalsh", "float16", || {
        linalg::try_eigvalsh(&f32s(&[2, 2]).astype(DType::Float16))
    });
    let not_converged = "Eigenvalues did not converge";
    w.survives(f, not_converged, "NaN", || linalg::try_eigvalsh(&nans(&[3, 3])));
    w.survives(f, "eigvalsh", "zeros", || {
        linalg::try_eigvalsh(&kiln::zeros(&[3, 3], DType::Float64))
    });
    w.survives(f, "eigvalsh", "empty", || linalg::try_eigvalsh(&f64s(&[0, 0])));
    w.survives(f, not_converged, "inf", || {
        linalg::try_eigvalsh(&kiln::full(&[2, 2], f64::INFINITY, DType::Float64))
    });
    let f = "linalg::try_qr";
    w.err(f, "qr", "1-D", || linalg::try_qr(&f64s(&[3]), QrMode::Reduced));
    w.survives(f, "qr", "NaN", || linalg::try_qr(&nans(&[3, 2]), QrMode::Complete));
    let f = "linalg::try_svd";
    w.err(f, "svd", "1-D", || linalg::try_svd(&f64s(&[3]), true));
    w.survives(f, "svd", "NaN", || linalg::try_svd(&nans(&[3, 2]), false));
    let f = "linalg::try_solve";
    w.err(f, "solve", "(2, 2) and (3,)", || linalg::try_solve(&f64s(&[2, 2]), &f64s(&[3])));
    w.err(f, "solve", "non-square", || linalg::try_solve(&f64s(&[2, 3]), &f64s(&[2])));
    w.err(f, "solve", "batches 2 and 3", || {
        linalg::try_solve(&f64s(&[2, 2, 2]), &f64s(&[3, 2, 1]))
    });
    w.survives(f, "solve", "singular", || {
        linalg::try_solve(&kiln::zeros(&[2, 2], DType::Float64), &f64s(&[2]))
    });
    let f = "linalg::try_lstsq";
    w.err(f, "lstsq", "(3, 2) and (4,)", || linalg::try_lstsq(&f64s(&[3, 2]), &f64s(&[4]), None));
    w.err(f, "lstsq", "1-D a", || linalg::try_lstsq(&f64s(&[3]), &f64s(&[3]), None));
    w.survives(f, "lstsq", "NaN rcond", || {
        linalg::try_lstsq(&f64s(&[3, 2]), &f64s(&[3]), Some(f64::NAN))
    });
    let f = "linalg::try_pinv";
    w.err(f, "pinv", "1-D", || linalg::try_pinv(&f64s(&[3]), None));
    // NaN data is found when the value is computed, not where the op is written: the lazy
    // SVD inside fails then, and its error is NumPy's LinAlgError ("SVD did not converge",
    // which names no function in NumPy either).
    w.survives(f, "SVD did not converge", "NaN", || linalg::try_pinv(&nans(&[3, 2]), Some(-1.0)));
    let f = "linalg::try_matrix_rank";
    w.survives(f, "matrix_rank", "0-d", || linalg::try_matrix_rank(&f64s(&[]), None));
    w.survives(f, "SVD did not converge", "NaN tol", || {
        linalg::try_matrix_rank(&nans(&[3, 3]), Some(f64::NAN))
    });
    let f = "linalg::try_matrix_power";
    w.err(f, "matrix_power", "(2, 3)", || linalg::try_matrix_power(&f64s(&[2, 3]), 2));
    w.err(f, "matrix_power", "1-D", || linalg::try_matrix_power(&f64s(&[3]), 2));
    w.survives(f, "matrix_power", "an integer matrix to -1", || {
        linalg::try_matrix_power(&i64s(&[2, 2]), -1)
    });
    w.survives(f, "matrix_power", "i64::MAX", || {
        linalg::try_matrix_power(&f64s(&[2, 2]), i64::MAX)
    });
    w.survives(f, "matrix_power", "i64::MIN", || {
        linalg::try_matrix_power(&f64s(&[2, 2]), i64::MIN)
    });
    let f = "linalg::try_norm";
    w.err(f, "norm", "axis 2", || linalg::try_norm(&f64s(&[2, 3]), None, Some(&[2]), false));
    w.err(f, "norm", "three axes", || {
        linalg::try_norm(&f64s(&[2, 3, 2]), None, Some(&[0, 1, 2]), false)
    });
    w.err(f, "norm", "axes (0, 0)", || {
        linalg::try_norm(&f64s(&[2, 3]), None, Some(&[0, 0]), false)
    });
    w.err(f, "norm", "nuclear of a vector", || {
        linalg::try_norm(&f64s(&[3]), Some(NormOrd::Nuc), None, false)
    });
    w.err(f, "norm", "3-D without axes", || {
        linalg::try_norm(&f64s(&[2, 2, 2]), Some(NormOrd::Fro), None, false)
    });
    w.err(f, "norm", "matrix ord 3", || {
        linalg::try_norm(&f64s(&[2, 2]), Some(NormOrd::P(3.0)), None, false)
    });
    w.survives(f, "norm", "ord NaN of a vector", || {
        linalg::try_norm(&f64s(&[3]), Some(NormOrd::P(f64::NAN)), None, false)
    });
    let f = "linalg::try_cond";
    w.err(f, "cond", "1-D", || linalg::try_cond(&f64s(&[3]), None));
    w.survives(f, "cond", "singular", || {
        linalg::try_cond(&kiln::zeros(&[2, 2], DType::Float64), None)
    });
    let f = "linalg::try_trace";
    w.err(f, "trace", "1-D", || linalg::try_trace(&f64s(&[3]), 0));
    w.survives(f, "trace", "offset i64::MIN", || linalg::try_trace(&f64s(&[2, 2]), i64::MIN));
    w.err("linalg::try_cholesky", "cholesky", "complex int", || {
        linalg::try_cholesky(&c64s(&[2, 3]))
    });
}

type F1 = fn(&Array, Option<usize>, i64, &'static str) -> kiln::Result<Array>;
type F2 = fn(&Array, Option<&[usize]>, &[i64], &'static str) -> kiln::Result<Array>;
type Fn_ = fn(&Array, Option<&[usize]>, Option<&[i64]>, &'static str) -> kiln::Result<Array>;

fn ffts(w: &mut Walk) {
    let x = || f32s(&[4, 4]);
    let ones: [(&str, F1); 4] = [
        ("fft::try_fft", |a, n, ax, nm| fft::try_fft(a, n, ax, nm)),
        ("fft::try_ifft", |a, n, ax, nm| fft::try_ifft(a, n, ax, nm)),
        ("fft::try_rfft", |a, n, ax, nm| fft::try_rfft(a, n, ax, nm)),
        ("fft::try_irfft", |a, n, ax, nm| fft::try_irfft(a, n, ax, nm)),
    ];
    for (name, t) in ones {
        let op = &name[9..];
        w.err(name, op, "axis 2", || t(&x(), None, 2, "backward"));
        w.err(name, op, "n = 0", || t(&x(), Some(0), -1, "backward"));
        w.err(name, op, "norm 'sideways'", || t(&x(), None, -1, "sideways"));
        w.err(name, op, "0-d", || t(&f32s(&[]), None, 0, "backward"));
        w.survives(name, op, "bool", || t(&bools(&[4]), None, 0, "backward"));
        w.survives(name, op, "NaN", || t(&nans(&[6]), None, 0, "ortho"));
        w.survives(name, op, "empty axis, padded", || t(&f32s(&[0]), Some(4), 0, "forward"));
    }
    w.err("fft::try_rfft", "rfft", "complex", || fft::try_rfft(&c64s(&[4]), None, 0, "backward"));
    let twos: [(&str, F2); 4] = [
        ("fft::try_fft2", |a, s, ax, nm| fft::try_fft2(a, s, ax, nm)),
        ("fft::try_ifft2", |a, s, ax, nm| fft::try_ifft2(a, s, ax, nm)),
        ("fft::try_rfft2", |a, s, ax, nm| fft::try_rfft2(a, s, ax, nm)),
        ("fft::try_irfft2", |a, s, ax, nm| fft::try_irfft2(a, s, ax, nm)),
    ];
    for (name, t) in twos {
        let op = &name[9..];
        w.err(name, op, "1-D", || t(&f32s(&[4]), None, &[-2, -1], "backward"));
        w.err(name, op, "s of 3 for 2 axes", || t(&x(), Some(&[4, 4, 4]), &[-2, -1], "backward"));
        w.err(name, op, "axis 5", || t(&x(), None, &[0, 5], "backward"));
        w.err(name, op, "s with a 0", || t(&x(), Some(&[0, 4]), &[0, 1], "backward"));
    }
    let ns: [(&str, Fn_); 4] = [
        ("fft::try_fftn", |a, s, ax, nm| fft::try_fftn(a, s, ax, nm)),
        ("fft::try_ifftn", |a, s, ax, nm| fft::try_ifftn(a, s, ax, nm)),
        ("fft::try_rfftn", |a, s, ax, nm| fft::try_rfftn(a, s, ax, nm)),
        ("fft::try_irfftn", |a, s, ax, nm| fft::try_irfftn(a, s, ax, nm)),
    ];
    for (name, t) in ns {
        let op = &name[9..];
        w.err(name, op, "s longer than ndim", || t(&x(), Some(&[4, 4, 4]), None, "backward"));
        w.err(name, op, "axis -3", || t(&x(), None, Some(&[-3]), "backward"));
        w.err(name, op, "s and axes of different lengths", || {
            t(&x(), Some(&[4]), Some(&[0, 1]), "backward")
        });
        w.err(name, op, "norm ''", || t(&x(), None, None, ""));
    }
}

fn randoms(w: &mut Walk) {
    let mut g = Generator::new(7);
    let f = "random::Generator::try_normal";
    w.err(f, "normal", "scale -1", || g.try_normal(0.0, -1.0, &[3], DType::Float64));
    w.err(f, "normal", "int64", || g.try_normal(0.0, 1.0, &[3], DType::Int64));
    w.survives(f, "normal", "scale NaN", || g.try_normal(0.0, f64::NAN, &[3], DType::Float64));
    w.survives(f, "normal", "loc inf", || g.try_normal(f64::INFINITY, 1.0, &[3], DType::Float32));
    let f = "random::Generator::try_uniform";
    w.err(f, "uniform", "bool", || g.try_uniform(0.0, 1.0, &[3], DType::Bool));
    w.err(f, "uniform", "complex", || g.try_uniform(0.0, 1.0, &[3], DType::Complex64));
    w.survives(f, "uniform", "range inf", || {
        g.try_uniform(f64::NEG_INFINITY, f64::INFINITY, &[3], DType::Float64)
    });
    w.survives(f, "uniform", "high below low", || g.try_uniform(1.0, 0.0, &[3], DType::Float64));
    let f = "random::Generator::try_random";
    w.err(f, "random", "int32", || g.try_random(&[3], DType::Int32));
    w.survives(f, "random", "empty", || g.try_random(&[0, 4], DType::Float32));
    let f = "random::Generator::try_standard_normal";
    w.err(f, "standard_normal", "uint8", || g.try_standard_normal(&[3], DType::UInt8));
    let f = "random::Generator::try_integers";
    w.err(f, "integers", "high == low", || g.try_integers(3, 3, &[3], DType::Int64));
    w.err(f, "integers", "high < low", || g.try_integers(3, -3, &[3], DType::Int64));
    w.err(f, "integers", "float64", || g.try_integers(0, 3, &[3], DType::Float64));
    w.err(f, "integers", "1000 for int8", || g.try_integers(0, 1000, &[3], DType::Int8));
    w.err(f, "integers", "-1 for uint8", || g.try_integers(-1, 10, &[3], DType::UInt8));
    w.survives(f, "integers", "the whole int64 range", || {
        g.try_integers(i64::MIN, i64::MAX, &[3], DType::Int64)
    });
    // The global generator's functions.
    w.err("random::try_normal", "normal", "scale -inf", || {
        random::try_normal(0.0, f64::NEG_INFINITY, &[2], DType::Float32)
    });
    w.err("random::try_uniform", "uniform", "int8", || {
        random::try_uniform(0.0, 1.0, &[2], DType::Int8)
    });
    w.err("random::try_random", "random", "bool", || random::try_random(&[2], DType::Bool));
    w.err("random::try_standard_normal", "standard_normal", "int16", || {
        random::try_standard_normal(&[2], DType::Int16)
    });
    w.err("random::try_integers", "integers", "low > high", || {
        random::try_integers(5, 0, &[2], DType::Int32)
    });
}

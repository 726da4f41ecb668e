//! NumPy's `dtype=` on the reductions and scans (`sum_dtype`, `prod_dtype`, `mean_dtype`,
//! `var_dtype`, `std_dtype`, `cumsum_dtype`, `cumprod_dtype` and the `nan` forms) against NumPy
//! 2.4 (`tests/fixtures/reduce_dtype/`, from `reduce_dtype/gen.py`):
//!
//! - `cases.txt`: each function for a few (input dtype, `dtype=`) pairs (int8 wrapping, float16
//!   accumulated in float32, integer means in float32 and truncated in int32, floats summed as
//!   int64, bool, complex), axis `None` and an axis, on whichever backend runs the suite;
//! - `matrix.txt`: every function × input dtype × `dtype=` (12 × 12) on a small input: NumPy's
//!   result dtype and values, or its error;
//! - typed errors naming the op; `None` is the plain form; the casts fuse into one kernel.

use kiln::ir::{Data, IrError};
use kiln::{Array, AxisArg, DType, Error};

use crate::numpy_fixtures::{fixture_cases, fixture_dir};

const ALL: Option<i64> = None;

fn keep(axes: Vec<i64>) -> AxisArg {
    AxisArg { axes: Some(axes), keepdims: true }
}

fixture_cases! { "reduce_dtype/cases.txt";
    sum_i8_i8_none => |a| a[0].sum_dtype(ALL, DType::Int8);
    sum_i8_i8_axis1, nansum_i8_i8_axis1 => |a| a[0].sum_dtype(1, DType::Int8);
    sum_u8_i8_axis0 => |a| a[0].sum_dtype(0, DType::Int8);
    sum_f16_f32_none => |a| a[0].sum_dtype(ALL, DType::Float32);
    sum_f16_f32_axis0 => |a| a[0].sum_dtype(0, DType::Float32);
    sum_f64_i64_none => |a| a[0].sum_dtype(ALL, DType::Int64);
    sum_f64_i64_axis1 => |a| a[0].sum_dtype(1, DType::Int64);
    sum_f64_i64_keepdims => |a| a[0].sum_dtype(keep(vec![0, 2]), DType::Int64);
    sum_i32_f16_axis1 => |a| a[0].sum_dtype(1, DType::Float16);
    sum_bool_i8_axis1 => |a| a[0].sum_dtype(1, DType::Int8);
    sum_bool_bool_axis0 => |a| a[0].sum_dtype(0, DType::Bool);
    sum_c64_c128_axis1 => |a| a[0].sum_dtype(1, DType::Complex128);
    sum_c128_f64_none => |a| a[0].sum_dtype(ALL, DType::Float64);

    prod_i8_i8_axis1 => |a| a[0].prod_dtype(1, DType::Int8);
    prod_f32_f64_axis0 => |a| a[0].prod_dtype(0, DType::Float64);
    prod_f64_i64_none => |a| a[0].prod_dtype(ALL, DType::Int64);
    prod_bool_bool_axis1 => |a| a[0].prod_dtype(1, DType::Bool);
    prod_bool_i16_none => |a| a[0].prod_dtype(ALL, DType::Int16);
    prod_c64_c128_axis0 => |a| a[0].prod_dtype(0, DType::Complex128);

    mean_i32_f32_none => |a| a[0].mean_dtype(ALL, DType::Float32);
    mean_i32_f32_axis0 => |a| a[0].mean_dtype(0, DType::Float32);
    mean_i32_i32_axis1 => |a| a[0].mean_dtype(1, DType::Int32);
    mean_f16_f16_axis0 => |a| a[0].mean_dtype(0, DType::Float16);
    mean_f16_f64_none => |a| a[0].mean_dtype(ALL, DType::Float64);
    mean_f64_i64_axis1 => |a| a[0].mean_dtype(1, DType::Int64);
    mean_bool_f32_axis1 => |a| a[0].mean_dtype(1, DType::Float32);
    mean_c64_c128_none => |a| a[0].mean_dtype(ALL, DType::Complex128);
    mean_i8_u8_keepdims => |a| a[0].mean_dtype(keep(vec![1]), DType::UInt8);

    var_i32_f32_axis0 => |a| a[0].var_dtype(0, 0, DType::Float32);
    var_i32_i64_none => |a| a[0].var_dtype(ALL, 0, DType::Int64);
    var_i8_u8_axis1 => |a| a[0].var_dtype(1, 0, DType::UInt8);
    var_f16_f32_axis1 => |a| a[0].var_dtype(1, 0, DType::Float32);
    var_f64_f32_none_ddof1 => |a| a[0].var_dtype(ALL, 1, DType::Float32);
    var_f64_i64_axis1 => |a| a[0].var_dtype(1, 0, DType::Int64);
    var_bool_f32_axis0 => |a| a[0].var_dtype(0, 0, DType::Float32);
    var_c64_c128_axis1 => |a| a[0].var_dtype(1, 0, DType::Complex128);
    var_c64_f64_none => |a| a[0].var_dtype(ALL, 0, DType::Float64);

    std_i32_f32_axis1_ddof1 => |a| a[0].std_dtype(1, 1, DType::Float32);
    std_i32_i64_none => |a| a[0].std_dtype(ALL, 0, DType::Int64);
    std_i8_i8_none => |a| a[0].std_dtype(ALL, 0, DType::Int8);
    std_f16_f32_none => |a| a[0].std_dtype(ALL, 0, DType::Float32);
    std_bool_f64_axis1 => |a| a[0].std_dtype(1, 0, DType::Float64);
    std_c64_c128_axis0 => |a| a[0].std_dtype(0, 0, DType::Complex128);

    cumsum_i8_i8_axis1 => |a| a[0].cumsum_dtype(Some(1), DType::Int8);
    cumsum_i8_i8_none => |a| a[0].cumsum_dtype(None, DType::Int8);
    cumsum_f16_f32_none => |a| a[0].cumsum_dtype(None, DType::Float32);
    cumsum_f64_i64_axis0 => |a| a[0].cumsum_dtype(Some(0), DType::Int64);
    cumsum_bool_i16_axis1 => |a| a[0].cumsum_dtype(Some(1), DType::Int16);
    cumsum_bool_bool_axis1 => |a| a[0].cumsum_dtype(Some(1), DType::Bool);
    cumsum_u8_u8_axis0 => |a| a[0].cumsum_dtype(Some(0), DType::UInt8);
    cumsum_c64_c128_axis1 => |a| a[0].cumsum_dtype(Some(1), DType::Complex128);

    cumprod_i8_i8_axis1 => |a| a[0].cumprod_dtype(Some(1), DType::Int8);
    cumprod_f32_f64_axis0 => |a| a[0].cumprod_dtype(Some(0), DType::Float64);
    cumprod_f64_i64_none => |a| a[0].cumprod_dtype(None, DType::Int64);
    cumprod_bool_bool_axis1 => |a| a[0].cumprod_dtype(Some(1), DType::Bool);
    cumprod_c64_c128_axis0 => |a| a[0].cumprod_dtype(Some(0), DType::Complex128);

    nansum_f64_i64_none => |a| a[0].nansum_dtype(ALL, DType::Int64);
    nansum_f32_f64_axis1 => |a| a[0].nansum_dtype(1, DType::Float64);
    nansum_f16_f32_axis0 => |a| a[0].nansum_dtype(0, DType::Float32);
    nansum_c64_c128_none => |a| a[0].nansum_dtype(ALL, DType::Complex128);
    nanprod_f32_f64_axis0 => |a| a[0].nanprod_dtype(0, DType::Float64);
    nanprod_f64_i64_axis1 => |a| a[0].nanprod_dtype(1, DType::Int64);
    nanprod_i8_i8_none => |a| a[0].nanprod_dtype(ALL, DType::Int8);

    nanmean_f32_f64_axis1 => |a| a[0].nanmean_dtype(1, DType::Float64);
    nanmean_f16_f32_none => |a| a[0].nanmean_dtype(ALL, DType::Float32);
    nanmean_f64_f32_axis0 => |a| a[0].nanmean_dtype(0, DType::Float32);
    nanmean_c64_c128_axis1 => |a| a[0].nanmean_dtype(1, DType::Complex128);
    nanmean_i32_i32_axis0 => |a| a[0].nanmean_dtype(0, DType::Int32);
    nanmean_i32_f32_none => |a| a[0].nanmean_dtype(ALL, DType::Float32);
    nanvar_f32_f64_axis1 => |a| a[0].nanvar_dtype(1, 0, DType::Float64);
    nanvar_f16_f32_axis0_ddof1 => |a| a[0].nanvar_dtype(0, 1, DType::Float32);
    nanvar_f64_f32_none => |a| a[0].nanvar_dtype(ALL, 0, DType::Float32);
    nanvar_c64_f64_none => |a| a[0].nanvar_dtype(ALL, 0, DType::Float64);
    nanvar_i32_i64_axis1 => |a| a[0].nanvar_dtype(1, 0, DType::Int64);
    nanstd_f32_f64_axis0_ddof1 => |a| a[0].nanstd_dtype(0, 1, DType::Float64);
    nanstd_c64_c128_axis1 => |a| a[0].nanstd_dtype(1, 0, DType::Complex128);
    nanstd_i8_f32_none => |a| a[0].nanstd_dtype(ALL, 0, DType::Float32);

    nancumsum_f64_i64_axis1 => |a| a[0].nancumsum_dtype(Some(1), DType::Int64);
    nancumsum_f16_f32_none => |a| a[0].nancumsum_dtype(None, DType::Float32);
    nancumsum_i8_i8_axis1 => |a| a[0].nancumsum_dtype(Some(1), DType::Int8);
    nancumprod_f32_f64_axis1 => |a| a[0].nancumprod_dtype(Some(1), DType::Float64);
    nancumprod_f64_i64_none => |a| a[0].nancumprod_dtype(None, DType::Int64);
}

// ------------------------------------------------------------------------------------------------
// The matrix: every function × input dtype × dtype=
// ------------------------------------------------------------------------------------------------

/// The fourteen functions NumPy gives a `dtype=`, by NumPy's name, over every axis (ddof 0).
fn call(f: &str, x: &Array, dt: DType) -> kiln::Result<Array> {
    match f {
        "sum" => x.try_sum_dtype(ALL, dt),
        "prod" => x.try_prod_dtype(ALL, dt),
        "mean" => x.try_mean_dtype(ALL, dt),
        "var" => x.try_var_dtype(ALL, 0, dt),
        "std" => x.try_std_dtype(ALL, 0, dt),
        "cumsum" => x.try_cumsum_dtype(None, dt),
        "cumprod" => x.try_cumprod_dtype(None, dt),
        "nansum" => x.try_nansum_dtype(ALL, dt),
        "nanprod" => x.try_nanprod_dtype(ALL, dt),
        "nanmean" => x.try_nanmean_dtype(ALL, dt),
        "nanvar" => x.try_nanvar_dtype(ALL, 0, dt),
        "nanstd" => x.try_nanstd_dtype(ALL, 0, dt),
        "nancumsum" => x.try_nancumsum_dtype(None, dt),
        "nancumprod" => x.try_nancumprod_dtype(None, dt),
        _ => panic!("matrix.txt: unknown function {f}"),
    }
}

/// A computed array's elements: integers and bools exactly, floats and complex as (re, im).
enum Values {
    Ints(Vec<i128>),
    Parts(Vec<[f64; 2]>),
}

fn values(a: &Array) -> Values {
    let h = a.try_to_host().unwrap();
    let ints = |v: Vec<i128>| Values::Ints(v);
    match h.data() {
        Data::Bool(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::Int8(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::Int16(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::Int32(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::Int64(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::UInt8(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::UInt16(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::UInt32(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::UInt64(v) => ints(v.iter().map(|&x| x as i128).collect()),
        Data::Float16(v) => Values::Parts(v.iter().map(|x| [x.to_f64(), 0.0]).collect()),
        Data::BFloat16(v) => Values::Parts(v.iter().map(|x| [x.to_f64(), 0.0]).collect()),
        Data::Float32(v) => Values::Parts(v.iter().map(|&x| [x as f64, 0.0]).collect()),
        Data::Float64(v) => Values::Parts(v.iter().map(|&x| [x, 0.0]).collect()),
        Data::Complex64(v) => Values::Parts(v.iter().map(|z| [z.re as f64, z.im as f64]).collect()),
        Data::Complex128(v) => Values::Parts(v.iter().map(|z| [z.re, z.im]).collect()),
    }
}

/// Relative tolerance of a float result, of the largest |part| of the row: a few roundings of
/// the result dtype (NumPy and kiln compute the same formula; the sums may associate otherwise).
fn tolerance(dt: DType) -> f64 {
    match dt.real_dtype() {
        DType::Float16 => 2e-3,
        DType::Float32 => 1e-6,
        _ => 1e-13,
    }
}

/// Whether a float part matches: NaN for NaN, infinities exactly, else within `tol` of `scale`.
fn part_ok(e: f64, g: f64, tol: f64, scale: f64) -> bool {
    if e.is_nan() || g.is_nan() {
        return e.is_nan() && g.is_nan();
    }
    if e.is_infinite() || g.is_infinite() {
        return e == g;
    }
    (g - e).abs() <= tol * scale.max(f64::MIN_POSITIVE)
}

/// One row of `matrix.txt`, and kiln's result for it.
struct Row {
    line: String,
    f: String,
    want: Option<(DType, String)>,
    got: kiln::Result<Array>,
}

/// Every row of `matrix.txt`: kiln's result dtype (or error) is NumPy's, then every result is
/// computed (one materialisation) and compared with NumPy's values.
#[test]
fn matrix_against_numpy() {
    let dir = fixture_dir().join("reduce_dtype");
    let path = dir.join("matrix.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (run python3 tests/fixtures/reduce_dtype/gen.py)", path.display())
    });
    let input = |dt: &str, nan: bool| {
        let file = if nan { format!("matrix_{dt}_nan.npy") } else { format!("matrix_{dt}.npy") };
        kiln::load_npy(dir.join(file)).unwrap()
    };
    let mut rows = vec![];
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.splitn(5, ' ').collect();
        assert_eq!(f.len(), 5, "matrix.txt: {line:?}");
        let (name, a_dt, dt): (&str, DType, DType) =
            (f[0], f[1].parse().unwrap(), f[2].parse().unwrap());
        let x = input(f[1], name.starts_with("nan") && a_dt.is_inexact());
        assert_eq!(x.dtype(), a_dt, "{line}");
        let want = (f[3] != "error").then(|| (f[3].parse::<DType>().unwrap(), f[4].to_string()));
        rows.push(Row { line: line.into(), f: name.into(), want, got: call(name, &x, dt) });
    }
    assert_eq!(rows.len(), 14 * 12 * 12, "matrix.txt: rows");

    let mut bad = vec![];
    let mut computed = vec![];
    for r in &rows {
        match (&r.want, &r.got) {
            (None, Err(e)) => {
                let msg = e.to_string();
                if !msg.starts_with(&format!("{}:", r.f)) {
                    bad.push(format!("{}: the error does not name {}: {msg}", r.line, r.f));
                }
            }
            (None, Ok(a)) => {
                bad.push(format!("{}: NumPy raises, kiln gives {}", r.line, a.dtype()))
            }
            (Some(_), Err(e)) => bad.push(format!("{}: kiln errs: {e}", r.line)),
            (Some((dt, _)), Ok(a)) if a.dtype() != *dt => {
                bad.push(format!("{}: kiln's dtype is {}", r.line, a.dtype()))
            }
            (Some(_), Ok(a)) => computed.push(a),
        }
    }
    assert!(bad.is_empty(), "{} rows differ:\n{}", bad.len(), bad.join("\n"));

    kiln::eval_all(&computed);
    for r in &rows {
        let (Some((dt, want)), Ok(a)) = (&r.want, &r.got) else { continue };
        let ok = match values(a) {
            Values::Ints(g) => {
                let e: Vec<i128> = want.split(',').map(|v| v.parse().unwrap()).collect();
                e == g
            }
            Values::Parts(g) => {
                let e: Vec<[f64; 2]> = want
                    .split(',')
                    .map(|v| match v.split_once(':') {
                        Some((re, im)) => [re.parse().unwrap(), im.parse().unwrap()],
                        None => [v.parse().unwrap(), 0.0],
                    })
                    .collect();
                let scale = e
                    .iter()
                    .flatten()
                    .map(|v| v.abs())
                    .filter(|v| v.is_finite())
                    .fold(0.0, f64::max);
                e.len() == g.len()
                    && e.iter()
                        .zip(&g)
                        .all(|(e, g)| (0..2).all(|i| part_ok(e[i], g[i], tolerance(*dt), scale)))
            }
        };
        if !ok {
            bad.push(format!("{}\n    kiln: {}", r.line, a));
        }
    }
    assert!(bad.is_empty(), "{} rows differ from NumPy's values:\n{}", bad.len(), bad.join("\n"));
}

// ------------------------------------------------------------------------------------------------
// Errors, None, fusion
// ------------------------------------------------------------------------------------------------

fn f32_with_nan() -> Array {
    Array::from_vec(vec![1.0f32, f32::NAN, 2.5, 4.0, 0.5, f32::NAN], &[2, 3])
}

/// A float or complex array with an integer or bool `dtype=` in nanmean/nanvar/nanstd is
/// NumPy's `TypeError`: `UnsupportedDType` naming the op and both dtypes.
#[test]
fn nan_forms_need_an_inexact_dtype() {
    let x = f32_with_nan();
    for (name, r) in [
        ("nanmean", x.try_nanmean_dtype(1, DType::Int32)),
        ("nanvar", x.try_nanvar_dtype(1, 0, DType::Int64)),
        ("nanstd", x.try_nanstd_dtype(ALL, 1, DType::Bool)),
    ] {
        let e = r.unwrap_err();
        assert!(
            matches!(&e, Error::Ir(IrError::UnsupportedDType { op, dtypes, .. })
                if op == name && dtypes[0] == DType::Float32),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("{name}:")) && msg.contains("inexact"), "{msg}");
    }
    // Integers have no NaN: any dtype, as NumPy's (the mean truncated to int32).
    let i = Array::from_vec(vec![1i32, 2, 4, 10], &[4]);
    assert_eq!(i.nanmean_dtype(ALL, DType::Int32).item::<i32>(), 4);
    assert_eq!(i.nanvar_dtype(ALL, 0, DType::Int32).item::<i32>(), 12);
}

/// `var`/`std` of a bool array with `dtype=bool` (NumPy: boolean subtract), and `std` with an
/// integer dtype whose result is an array (NumPy: sqrt cannot cast its output).
#[test]
fn var_and_std_errors() {
    let b = Array::from_vec(vec![true, false, true], &[3]);
    for (name, r) in [
        ("var", b.try_var_dtype(ALL, 0, DType::Bool)),
        ("std", b.try_std_dtype(ALL, 0, DType::Bool)),
        ("nanvar", b.try_nanvar_dtype(ALL, 0, DType::Bool)),
    ] {
        let e = r.unwrap_err();
        assert!(
            matches!(&e, Error::Ir(IrError::UnsupportedDType { op, .. }) if op == name),
            "{e:?}"
        );
        assert!(e.to_string().contains("boolean subtract"), "{e}");
    }
    assert_eq!(b.var_dtype(ALL, 0, DType::Float32).dtype(), DType::Float32);

    let i = Array::from_vec(vec![1i32, 2, 4, 10, 3, 3], &[2, 3]);
    for (name, r) in [
        ("std", i.try_std_dtype(1, 0, DType::Int32)),
        ("std", i.try_std_dtype(AxisArg { axes: None, keepdims: true }, 0, DType::Int64)),
        ("nanstd", i.try_nanstd_dtype(0, 0, DType::Bool)),
    ] {
        let e = r.unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(&e, Error::Ir(IrError::UnsupportedDType { op, .. }) if op == name),
            "{e:?}"
        );
        assert!(msg.contains("sqrt") && msg.contains("same_kind"), "{msg}");
    }
    // A 0-d result truncates the root: NumPy's std([1, 2, 4, 10, 3, 3], dtype=int32) is 3
    // (the mean truncated to 3, the variance 55 / 6 to 9).
    assert_eq!(i.std_dtype(ALL, 0, DType::Int32).item::<i32>(), 3);
    assert_eq!(i.std_dtype([0, 1], 0, DType::Int32).item::<i32>(), 3);
    // var casts its quotient back unsafely, any shape.
    assert_eq!(i.var_dtype(1, 0, DType::Int32).to_vec::<i32>(), vec![1, 11]);
}

/// Axis errors are named by the function called, `nan` forms included.
#[test]
fn axis_errors_name_the_function() {
    let x = f32_with_nan();
    let errs = [
        ("sum", x.try_sum_dtype(2, DType::Float64)),
        ("prod", x.try_prod_dtype(-3, DType::Float64)),
        ("mean", x.try_mean_dtype(5, DType::Float64)),
        ("var", x.try_var_dtype(2, 0, DType::Float64)),
        ("std", x.try_std_dtype(2, 0, DType::Float64)),
        ("cumsum", x.try_cumsum_dtype(Some(2), DType::Float64)),
        ("cumprod", x.try_cumprod_dtype(Some(-3), DType::Float64)),
        ("nansum", x.try_nansum_dtype(2, DType::Float64)),
        ("nanprod", x.try_nanprod_dtype(2, DType::Float64)),
        ("nanmean", x.try_nanmean_dtype(2, DType::Float64)),
        ("nanvar", x.try_nanvar_dtype(2, 0, DType::Float64)),
        ("nanstd", x.try_nanstd_dtype(2, 0, DType::Float64)),
        ("nancumsum", x.try_nancumsum_dtype(Some(2), DType::Float64)),
        ("nancumprod", x.try_nancumprod_dtype(Some(2), DType::Float64)),
    ];
    for (name, r) in errs {
        let e = r.unwrap_err();
        assert!(
            matches!(&e, Error::Ir(IrError::AxisOutOfBounds { op, .. }) if op == name),
            "{name}: {e:?}"
        );
    }
    let e = x.try_sum_dtype([1, 1], DType::Int8).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::RepeatedAxis { op, .. }) if op == "sum"), "{e:?}");
}

/// `dtype = None` is the plain form: the same dtype and values, NumPy's defaults (float16's
/// mean accumulated in float32 and returned as float16, integers' sums as int64...).
#[test]
fn none_is_the_plain_form() {
    let h = Array::from_vec(vec![0.5f32, 1.25, 3.0, f32::NAN, 2.0, 0.75], &[2, 3])
        .astype(DType::Float16);
    let i = Array::from_vec(vec![100i8, 100, 100, -7, 3, 120], &[2, 3]);
    for x in [&h, &i] {
        let pairs = [
            (x.sum_dtype(1, None), x.sum(1)),
            (x.prod_dtype(1, None), x.prod(1)),
            (x.mean_dtype(1, None), x.mean(1)),
            (x.var_dtype(1, 1, None), x.var(1, 1)),
            (x.std_dtype(0, 0, None), x.std(0, 0)),
            (x.cumsum_dtype(Some(1), None), x.cumsum(Some(1))),
            (x.cumprod_dtype(None, None), x.cumprod(None)),
            (x.nansum_dtype(1, None), x.nansum(1)),
            (x.nanprod_dtype(1, None), x.nanprod(1)),
            (x.nanmean_dtype(1, None), x.nanmean(1)),
            (x.nanvar_dtype(1, 0, None), x.nanvar(1, 0)),
            (x.nanstd_dtype(1, 0, None), x.nanstd(1, 0)),
            (x.nancumsum_dtype(Some(0), None), x.nancumsum(Some(0))),
            (x.nancumprod_dtype(Some(0), None), x.nancumprod(Some(0))),
        ];
        for (k, (a, b)) in pairs.iter().enumerate() {
            assert_eq!(a.dtype(), b.dtype(), "{k}");
            assert_eq!(a.shape(), b.shape(), "{k}");
            assert!(kiln::array_equal(a, b, true).unwrap(), "{k}: {a} vs {b}");
        }
    }
    // ... and a dtype= that differs from the default changes the result.
    assert_eq!(i.sum(None::<i64>).item::<i64>(), 416);
    assert_eq!(i.sum_dtype(ALL, DType::Int8).item::<i8>(), -96);
}

/// The casts of `dtype=` fuse into the reduction's (or scan's) kernel: one kernel each, and the
/// nan forms' replacement with them.
#[test]
fn casts_fuse_into_one_kernel() {
    let x = Array::from_vec((0..64).map(|v| (v % 13) as i8 * 9).collect::<Vec<_>>(), &[8, 8]);
    let f = Array::from_vec(
        (0..64).map(|v| if v % 9 == 0 { f64::NAN } else { v as f64 * 0.37 }).collect::<Vec<_>>(),
        &[8, 8],
    );
    x.eval();
    f.eval();
    let one = [
        ("sum int8 as int8", x.sum_dtype(1, DType::Int8)),
        ("prod int8 as float32", x.prod_dtype(0, DType::Float32)),
        ("mean int8 as float32", x.mean_dtype(1, DType::Float32)),
        ("cumsum int8 as float32", x.cumsum_dtype(Some(1), DType::Float32)),
        ("nansum float64 as int64", f.nansum_dtype(1, DType::Int64)),
        ("nanmean float64 as float32", f.nanmean_dtype(1, DType::Float32)),
        ("nancumsum float64 as int64", f.nancumsum_dtype(Some(0), DType::Int64)),
    ];
    for (what, a) in &one {
        let e = kiln::explain(&[a]);
        assert_eq!(e.report.kernel_count(), 1, "{what}:\n{}", e.report);
    }
    // A scan's result fuses into nothing after it (`scan_result`), so an integer dtype= narrower
    // than the scan's int64 costs a cast kernel after it (at most).
    let narrow = x.cumsum_dtype(Some(1), DType::Int8);
    assert!(kiln::explain(&[&narrow]).report.kernel_count() <= 2);
    // var's two reductions (the mean, then the squares) as the plain var's.
    let plain = kiln::explain(&[&x.var(1, 0)]).report.kernel_count();
    let typed = kiln::explain(&[&x.var_dtype(1, 0, DType::Float32)]).report.kernel_count();
    assert_eq!(typed, plain);
    // The values: int8 wraps in the sum, the nan form truncates each non-NaN element.
    let want: Vec<i8> = (0..8)
        .map(|r| (0..8).fold(0i8, |s, c| s.wrapping_add(((r * 8 + c) % 13) as i8 * 9)))
        .collect();
    assert_eq!(one[0].1.to_vec::<i8>(), want);
    let last: Vec<i8> = narrow.to_vec::<i8>().chunks(8).map(|r| r[7]).collect();
    assert_eq!(last, want);
    let want: Vec<i64> = (0..8)
        .map(|r| {
            (0..8).map(|c| r * 8 + c).filter(|v| v % 9 != 0).map(|v| (v as f64 * 0.37) as i64).sum()
        })
        .collect();
    assert_eq!(one[4].1.to_vec::<i64>(), want);
}

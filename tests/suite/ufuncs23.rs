//! The ufuncs of issue 23 (`deg2rad`, `rad2deg`, `round`/`around`, `fix`, `logaddexp2`,
//! `ldexp`, `signbit`, `frexp`, `nextafter`, `modf`, `angle`, `fmod`, `i0`, `sinc`, `divmod`,
//! `power` with a scalar base) and the in-place operators against NumPy's fixtures
//! (`tests/fixtures/ufunc23/`, from `make_ufunc23_fixtures.py`: every dtype class each accepts,
//! ±0, ±inf, NaN, subnormals), on whichever backend runs the suite; NumPy's `can_cast` table;
//! the typed errors (the in-place casting errors name the op, both dtypes and the rule); and the
//! new ops' host code against the reference evaluator, bit for bit, float16 and bfloat16 at
//! every value.

use half::{bf16, f16};
use kiln::ir::promote::{can_cast, Casting};
use kiln::{Array, DType};

use crate::numpy_fixtures::{fixture_cases, fixture_dir};

/// `a op= b` on a copy of `a`, returned (the fixtures' in-place cases).
fn assigned(a: &Array, f: impl FnOnce(&mut Array)) -> Array {
    let mut x = a.clone();
    f(&mut x);
    x
}

fixture_cases! { "ufunc23/cases.txt";
    deg2rad_f16, deg2rad_f32, deg2rad_f64, deg2rad_special_f16, deg2rad_special_f32,
    deg2rad_special_f64, deg2rad_i8, deg2rad_u8, deg2rad_i16, deg2rad_i32,
    deg2rad_bool => |a| a[0].deg2rad();
    rad2deg_f16, rad2deg_f32, rad2deg_f64, rad2deg_special_f16, rad2deg_special_f32,
    rad2deg_special_f64, rad2deg_i8, rad2deg_u8, rad2deg_i16, rad2deg_i32,
    rad2deg_bool => |a| a[0].rad2deg();

    round_f64_0, round_i8_0, round_bool_0, round_c64_0 => |a| a[0].round(0);
    round_f64_1, round_f32_1, round_f16_1, round_c128_1 => |a| a[0].round(1);
    round_f64_2, round_i8_2, round_c128_special => |a| a[0].round(2);
    round_f32_3 => |a| a[0].round(3);
    round_f64_12 => |a| a[0].round(12);
    round_f64_23 => |a| (&a[0] / 1e20).round(23);
    round_f32_40 => |a| a[0].round(40);
    round_f64_400 => |a| a[0].round(400);
    round_f64_neg1, round_f32_neg1, round_i8_neg1, round_u8_neg1 => |a| a[0].round(-1);
    round_f64_neg2, round_f16_neg2 => |a| a[0].round(-2);
    round_i64_neg3 => |a| a[0].round(-3);
    round_i32_neg30 => |a| a[0].round(-30);
    around_f64_neg1 => |a| a[0].around(-1);

    fix_f16_special, fix_f32_special, fix_f64_special, fix_i8_x, fix_bool_x => |a| a[0].fix();

    logaddexp2_f64, logaddexp2_pairs_f64, logaddexp2_cancel_f64, logaddexp2_f32,
    logaddexp2_pairs_f32, logaddexp2_f16, logaddexp2_i8 => |a| a[0].logaddexp2(&a[1]);

    ldexp_f64, ldexp_f64_i64, ldexp_f32, ldexp_f32_i64, ldexp_f16, ldexp_f16_i64, ldexp_i8_i8,
    ldexp_i32_u32, ldexp_f32_bool, ldexp_bool_i8, ldexp_0d_row => |a| a[0].ldexp(&a[1]);
    ldexp_f64_weak => |a| a[0].ldexp(-3);
    ldexp_f16_weak => |a| a[0].ldexp(100_000);

    signbit_f16_special, signbit_f32_special, signbit_f64_special, signbit_f64_x, signbit_i8_x,
    signbit_u8_x, signbit_bool_x => |a| a[0].signbit();

    frexp_m_f16_special, frexp_m_f32_special, frexp_m_f64_special, frexp_m_f32_x, frexp_m_i8_x,
    frexp_m_i32_x, frexp_m_bool_x => |a| a[0].frexp().0;
    frexp_e_f16_special, frexp_e_f32_special, frexp_e_f64_special, frexp_e_f32_x, frexp_e_i8_x,
    frexp_e_i32_x, frexp_e_bool_x => |a| a[0].frexp().1;

    nextafter_pairs_f16, nextafter_pairs_f32, nextafter_pairs_f64, nextafter_f16, nextafter_f32,
    nextafter_f64, nextafter_i8 => |a| a[0].nextafter(&a[1]);
    nextafter_f64_weak => |a| a[0].nextafter(0.0);
    nextafter_f32_weak_inf => |a| a[0].nextafter(f64::INFINITY);

    modf_frac_f16_special, modf_frac_f32_special, modf_frac_f64_special, modf_frac_f64_x,
    modf_frac_i8_x, modf_frac_bool_x => |a| a[0].modf().0;
    modf_int_f16_special, modf_int_f32_special, modf_int_f64_special, modf_int_f64_x,
    modf_int_i8_x, modf_int_bool_x => |a| a[0].modf().1;

    angle_c64, angle_c128, angle_c128_special, angle_f64, angle_i8,
    angle_bool => |a| a[0].angle(false);
    angle_c128_deg, angle_c64_deg, angle_f32_deg, angle_f16_deg => |a| a[0].angle(true);

    fmod_pairs_f16, fmod_pairs_f32, fmod_pairs_f64, fmod_f16, fmod_f32, fmod_f64, fmod_i8,
    fmod_i8_edge, fmod_u8, fmod_i32, fmod_bool => |a| a[0].fmod(&a[1]);
    fmod_i64_weak => |a| a[0].fmod(-7);
    fmod_f32_weak => |a| a[0].fmod(2.5);

    i0_f64, i0_f32, i0_f16, i0_i32, i0_bool => |a| a[0].i0();

    sinc_f64, sinc_f32, sinc_f16, sinc_i8, sinc_c128 => |a| a[0].sinc();
    sinc_f64_x => |a| (&a[0] / 100.0).sinc();

    divmod_q_f64, divmod_q_f32, divmod_q_i8 => |a| a[0].divmod(&a[1]).0;
    divmod_r_f64, divmod_r_f32, divmod_r_i8 => |a| a[0].divmod(&a[1]).1;
    divmod_q_u8, divmod_q_bool => |a| kiln::divmod(&a[0], &a[1]).0;
    divmod_r_u8, divmod_r_bool => |a| kiln::divmod(&a[0], &a[1]).1;

    power_scalar_base_f32 => |a| kiln::power(2.0, &a[0]);
    power_scalar_base_i8 => |a| kiln::power(2, a[0].abs());
    power_scalar_base_float_i8 => |a| kiln::power(1.5, &a[0]);
    power_scalar_base_u8 => |a| kiln::power(3, &a[0]);

    iadd_f32_f64, iadd_i8_i64_wraps, iadd_f16_f32_overflows, iadd_c64_f64, iadd_i8_u8,
    iadd_f32_row, iadd_bool_bool => |a| assigned(&a[0], |x| *x += &a[1]);
    iadd_f32_weak_huge => |a| assigned(&a[0], |x| *x += 1e300);
    isub_u8_weak => |a| assigned(&a[0], |x| *x -= 1);
    isub_f64_i8 => |a| assigned(&a[0], |x| *x -= &a[1]);
    imul_i8_weak => |a| assigned(&a[0], |x| *x *= 3);
    imul_f16_weak => |a| assigned(&a[0], |x| *x *= 0.1);
    itruediv_f32_f64, itruediv_c128_i32 => |a| assigned(&a[0], |x| *x /= a[1].clone());
    ifloordiv_i32_i8 => |a| assigned(&a[0], |x| x.floor_divide_assign(&a[1]));
    ifloordiv_f32_weak => |a| assigned(&a[0], |x| x.floor_divide_assign(-2.5));
    imod_f64_neg => |a| assigned(&a[0], |x| *x %= -7.5);
    imod_i8 => |a| assigned(&a[0], |x| *x %= &a[1]);
    ipow_i8_weak => |a| assigned(&a[0], |x| x.power_assign(2));
    ipow_f32_f64 => |a| assigned(&a[0], |x| x.power_assign(0.5));
    iand_i16_u8 => |a| assigned(&a[0], |x| *x &= &a[1]);
    ior_bool => |a| assigned(&a[0], |x| *x |= &a[1]);
    ixor_u8 => |a| assigned(&a[0], |x| *x ^= &a[1]);
    ishl_i32_i64 => |a| assigned(&a[0], |x| *x <<= &a[1]);
    ishr_u8_weak => |a| assigned(&a[0], |x| *x >>= 3);
    ishr_i8_i8 => |a| assigned(&a[0], |x| *x >>= &a[1]);
}

/// kiln's `can_cast` against NumPy's for every pair of dtypes NumPy has, under both rules.
#[test]
fn can_cast_table() {
    let path = fixture_dir().join("ufunc23").join("can_cast.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (from, to) = (f[0].parse::<DType>().unwrap(), f[1].parse::<DType>().unwrap());
        assert_eq!(can_cast(from, to, Casting::Safe), f[2] == "1", "safe {from} -> {to}");
        assert_eq!(can_cast(from, to, Casting::SameKind), f[3] == "1", "same_kind {from} -> {to}");
        n += 1;
    }
    assert_eq!(n, 14 * 14);
}

fn err<T: std::fmt::Debug>(r: kiln::Result<T>) -> String {
    match r {
        Ok(a) => panic!("expected an error, got {a:?}"),
        Err(e) => e.to_string(),
    }
}

/// The message a panicking call gives.
fn panic_message(f: impl FnOnce()) -> String {
    let e =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("expected a panic");
    e.downcast_ref::<String>().cloned().unwrap_or_default()
}

fn arr(dtype: DType) -> Array {
    kiln::arange(4).astype(dtype)
}

/// Every in-place operator refuses a result that does not cast back under `same_kind`, as
/// NumPy's `UFuncTypeError` (these messages are NumPy's, lower-cased after the op's name); the
/// operator panics with the `try_` form's message; the array is unchanged.
#[test]
fn inplace_casting_errors_name_op_dtypes_and_rule() {
    use DType::*;
    type Try = fn(&mut Array, kiln::Operand) -> kiln::Result<()>;
    let forms: [(&str, Try); 12] = [
        ("add", |x, y| x.try_add_assign(y)),
        ("subtract", |x, y| x.try_sub_assign(y)),
        ("multiply", |x, y| x.try_mul_assign(y)),
        ("divide", |x, y| x.try_div_assign(y)),
        ("floor_divide", |x, y| x.try_floor_divide_assign(y)),
        ("remainder", |x, y| x.try_rem_assign(y)),
        ("power", |x, y| x.try_power_assign(y)),
        ("bitwise_and", |x, y| x.try_bitand_assign(y)),
        ("bitwise_or", |x, y| x.try_bitor_assign(y)),
        ("bitwise_xor", |x, y| x.try_bitxor_assign(y)),
        ("left_shift", |x, y| x.try_shl_assign(y)),
        ("right_shift", |x, y| x.try_shr_assign(y)),
    ];
    let v = |d: DType| kiln::Operand::from(arr(d));
    let i = num_complex::Complex64::new(0.0, 1.0);
    // (op, a's dtype, b, "result dtype to a's dtype")
    let cases: Vec<(&str, DType, kiln::Operand, &str)> = vec![
        ("add", Int8, v(Float64), "float64 to int8"),
        ("add", Int8, 1.5.into(), "float64 to int8"),
        ("add", Bool, 1.into(), "int64 to bool"),
        ("add", UInt8, v(Int8), "int16 to uint8"),
        ("add", Float32, i.into(), "complex64 to float32"),
        ("add", UInt64, v(Int64), "float64 to uint64"),
        ("subtract", Int16, v(Float64), "float64 to int16"),
        ("multiply", UInt8, 0.5.into(), "float64 to uint8"),
        ("divide", Int32, 2.into(), "float64 to int32"),
        ("divide", Bool, true.into(), "float64 to bool"),
        ("floor_divide", Int64, v(Float64), "float64 to int64"),
        ("remainder", Int64, v(Float32), "float64 to int64"),
        ("power", Int8, 0.5.into(), "float64 to int8"),
        ("bitwise_and", Bool, 1.into(), "int64 to bool"),
        ("bitwise_or", UInt16, v(Int16), "int32 to uint16"),
        ("bitwise_xor", UInt32, v(Int32), "int64 to uint32"),
        ("left_shift", UInt32, v(Int64), "int64 to uint32"),
        ("right_shift", UInt8, v(Int8), "int16 to uint8"),
    ];
    for (op, dt, b, dtypes) in cases {
        let f = forms.iter().find(|(name, _)| *name == op).expect("a form").1;
        let a = arr(dt);
        let mut x = a.clone();
        let e = err(f(&mut x, b));
        assert_eq!(
            e,
            format!(
                "{op}: cannot cast ufunc '{op}' output from {dtypes} with casting rule 'same_kind'"
            ),
        );
        // Unchanged: the same lazy array.
        assert_eq!(x.dtype(), a.dtype());
        assert_eq!(*x.try_to_host().unwrap(), *a.try_to_host().unwrap());
    }
    // The operators panic with the same message.
    let m = panic_message(|| {
        let mut a = arr(DType::Int8);
        a += &arr(DType::Float64);
    });
    assert_eq!(
        m,
        "add: cannot cast ufunc 'add' output from float64 to int8 with casting rule 'same_kind'"
    );
    let m = panic_message(|| {
        let mut a = arr(DType::Int32);
        a /= 2;
    });
    assert!(
        m.starts_with("divide: cannot cast ufunc 'divide' output from float64 to int32"),
        "{m}"
    );
    let m = panic_message(|| arr(DType::Int8).power_assign(0.5));
    assert!(m.contains("'power' output from float64 to int8"), "{m}");
    let m = panic_message(|| arr(DType::UInt8).floor_divide_assign(1.5));
    assert!(m.contains("'floor_divide' output from float64 to uint8"), "{m}");
    let m = panic_message(|| {
        let mut a = arr(DType::Float32);
        a <<= 1;
    });
    assert!(m.contains("left_shift") && m.contains("float32"), "{m}");
}

/// NumPy 2's weak Python integers (NEP 50): an integer that does not fit the array's dtype is an
/// error (NumPy's `OverflowError`), also in place; within range, wrapping is the dtype's.
#[test]
fn inplace_weak_integer_out_of_range() {
    let mut a = Array::from_vec(vec![1i8, 100], &[2]);
    assert_eq!(err(a.try_add_assign(1000)), "add: integer scalar 1000 out of bounds for int8");
    let mut u = Array::from_vec(vec![1u8], &[1]);
    assert_eq!(err(u.try_sub_assign(-1)), "subtract: integer scalar -1 out of bounds for uint8");
    let mut s = Array::from_vec(vec![7i16], &[1]);
    assert!(err(s.try_shr_assign(1 << 20)).contains("1048576 out of bounds for int16"));
    // a += 100 twice: 1 + 100 + 100 wraps to -55 (NumPy's values), and 100 to 44.
    a += 100;
    a += 100;
    assert_eq!(a.dtype(), DType::Int8);
    assert_eq!(a.to_vec::<i8>(), vec![-55, 44]);
    u -= 1;
    assert_eq!(u.to_vec::<u8>(), vec![0]);
    // A float scalar into a float array keeps its dtype (weak): float32 += 1e300 is inf.
    let mut f = Array::from_vec(vec![1.0f32], &[1]);
    f += 1e300;
    assert_eq!(f.to_vec::<f32>(), vec![f32::INFINITY]);
}

/// The result must have the array's shape: the right side broadcasts to it, not the other way
/// (NumPy's "non-broadcastable output operand"); shapes that do not broadcast at all are the
/// op's error.
#[test]
fn inplace_shapes() {
    let mut a = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let e = err(a.try_add_assign(kiln::ones(&[2, 2], DType::Float64)));
    assert_eq!(
        e,
        "add: non-broadcastable output operand with shape (2,) doesn't match the broadcast shape (2, 2)"
    );
    let e = err(a.try_mul_assign(kiln::ones(&[3], DType::Float64)));
    assert!(e.contains("could not be broadcast") && e.contains("(2,) (3,)"), "{e}");
    let mut m = kiln::zeros(&[2, 3], DType::Int32);
    m += &Array::from_vec(vec![1i32, 2, 3], &[3]);
    m *= &Array::from_vec(vec![2i64, 3], &[2, 1]);
    assert_eq!(m.dtype(), DType::Int32);
    assert_eq!(m.to_vec::<i32>(), vec![2, 4, 6, 3, 6, 9]);
    // Value by value: a chain of in-place ops is one lazy expression.
    let mut x = Array::from_vec(vec![7.5f32, -7.5], &[2]);
    x.floor_divide_assign(2);
    x.power_assign(2);
    x %= 5;
    x -= &Array::from_vec(vec![0.5f64], &[1]);
    assert_eq!(x.dtype(), DType::Float32);
    assert_eq!(x.to_vec::<f32>(), vec![3.5, 0.5]);
    let mut b = Array::from_vec(vec![true, false], &[2]);
    b ^= true;
    b &= &Array::from_vec(vec![true, true], &[2]);
    assert_eq!(b.to_vec::<bool>(), vec![false, true]);
}

/// The new functions' typed errors name the function and the dtypes.
#[test]
fn ufunc_errors_name_the_function() {
    let c = kiln::zeros(&[3], DType::Complex64);
    let f = kiln::ones(&[3], DType::Float64);
    for (name, e) in [
        ("deg2rad", err(c.try_deg2rad())),
        ("rad2deg", err(c.try_rad2deg())),
        ("frexp", err(c.try_frexp())),
        ("modf", err(c.try_modf())),
        ("signbit", err(c.try_signbit())),
        ("i0", err(c.try_i0())),
        ("fmod", err(c.try_fmod(&c))),
        ("nextafter", err(c.try_nextafter(&c))),
        ("logaddexp2", err(c.try_logaddexp2(1.0))),
        ("fix (trunc)", err(c.try_fix())),
    ] {
        assert!(e.starts_with(&format!("{name}: no loop for dtype(s) complex64")), "{e}");
    }
    // ldexp: the exponent must be an integer (not uint64) or bool, a Rust integer within int32.
    let e = err(f.try_ldexp(&f));
    assert!(e.starts_with("ldexp: no loop for dtype(s) float64, float64"), "{e}");
    let e = err(f.try_ldexp(2.0));
    assert!(e.starts_with("ldexp: no loop for dtype(s) float64, float64"), "{e}");
    let e = err(f.try_ldexp(kiln::ones(&[3], DType::UInt64)));
    assert!(e.starts_with("ldexp: no loop for dtype(s) float64, uint64"), "{e}");
    let e = err(c.try_ldexp(1));
    assert!(e.starts_with("ldexp: no loop for dtype(s) complex64, int64"), "{e}");
    assert_eq!(
        err(f.try_ldexp(1i64 << 31)),
        "ldexp: integer scalar 2147483648 out of bounds for int32"
    );
    let e = err(f.try_ldexp(kiln::ones(&[2], DType::Int32)));
    assert!(e.contains("could not be broadcast"), "{e}");
    // round: a bool with decimals is NumPy's casting error of its multiply (divide), named
    // as a step of round.
    let b = kiln::ones(&[2], DType::Bool);
    assert_eq!(
        err(b.try_round(1)),
        "round (multiply): cannot cast ufunc 'multiply' output from float64 to bool with casting rule 'same_kind'"
    );
    assert!(err(b.try_round(-1)).starts_with("round (divide): cannot cast ufunc 'divide'"));
    assert_eq!(b.round(0).dtype(), DType::Float16);
}

/// Scalars on both sides of `power` and `divmod`: a rank-0 array of the default dtypes.
#[test]
fn scalar_power_and_divmod() {
    let p = kiln::power(2, 10);
    assert_eq!((p.dtype(), p.shape().len()), (DType::Int64, 0));
    assert_eq!(p.item::<i64>(), 1024);
    assert_eq!(kiln::power(2.0, -1).item::<f64>(), 0.5);
    let (q, r) = kiln::divmod(-7, 2);
    assert_eq!((q.item::<i64>(), r.item::<i64>()), (-4, 1));
    let (q, r) = kiln::divmod(7.5, -2.0);
    assert_eq!((q.item::<f64>(), r.item::<f64>()), (-4.0, -0.5));
    let x = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    assert_eq!(kiln::power(&x, 2).to_vec::<f32>(), vec![1.0, 4.0]);
    assert_eq!(kiln::try_power(&x, &x).unwrap().to_vec::<f32>(), vec![1.0, 4.0]);
}

/// frexp and ldexp are inverses, at every float16 value.
#[test]
fn frexp_ldexp_round_trip_every_f16() {
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let x = Array::from_vec(all.clone(), &[all.len()]);
    let (m, e) = x.frexp();
    assert_eq!(e.dtype(), DType::Int32);
    let back = m.ldexp(&e).to_vec::<f16>();
    for (a, b) in all.iter().zip(&back) {
        assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{a} -> {b}");
    }
}

/// The new ops compiled for the host (no region falls back to the evaluator) against the
/// reference evaluator, bit for bit: frexp, ldexp, nextafter and fmod at every float16 and
/// bfloat16 value (against a set of second operands), special values and random ones in float32
/// and float64; logaddexp2 exact too (NumPy's formula in f64 with scalar libm calls); complex
/// rint.
#[test]
fn new_ops_compile_and_match_the_evaluator() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        1.5,
        -2.5,
        3.0,
        7.0,
        -7.0,
        1e-300,
        5e-324,
        1e-310,
        1e-40,
        1.4e-45,
        1e30,
        3.4e38,
        1.7e308,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
        -f64::NAN,
        1e-5,
        6e-8,
        65504.0,
        300.0,
        -1074.0,
        1024.0,
        -150.0,
        129.0,
    ];
    let n = specials.len();
    // Every value of each 16-bit float against each special (as the second operand).
    for dt in [DType::Float16, DType::BFloat16] {
        let x: Array = if dt == DType::Float16 {
            Array::from_vec((0..=u16::MAX).map(f16::from_bits).collect::<Vec<_>>(), &[65536, 1])
        } else {
            Array::from_vec((0..=u16::MAX).map(bf16::from_bits).collect::<Vec<_>>(), &[65536, 1])
        };
        let y = Array::from_vec(specials.to_vec(), &[1, n]).astype(dt);
        let (m, e) = x.frexp();
        crate::codegen::check_program(&format!("frexp {dt}"), &[&m, &e], 0.0);
        for (name, z) in [
            ("fmod", x.fmod(&y)),
            ("nextafter", x.nextafter(&y)),
            ("ldexp", x.ldexp(&y.astype(DType::Int32).clip(-300, 300))),
        ] {
            crate::codegen::check_program(&format!("{name} {dt}"), &[&z], 0.0);
        }
    }
    // Pairs of specials and random values in float32 and float64.
    let mut r = 0x2323u64;
    let mut rand = || {
        r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = (r >> 11) as f64 / (1u64 << 53) as f64;
        (u - 0.5) * 10f64.powi(((r >> 3) % 40) as i32 - 20)
    };
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for &a in &specials {
        for &b in &specials {
            xs.push(a);
            ys.push(b);
        }
    }
    for _ in 0..4096 {
        xs.push(rand());
        ys.push(rand());
    }
    // logaddexp2 near 0, where NumPy's formula cancels: y close to log2(1 - 2^x), x < 0.
    for i in 0..1024 {
        let x = -(i as f64 + 0.5) / 128.0;
        let y = (-x.exp2()).ln_1p() * std::f64::consts::LOG2_E * (1.0 + rand().signum() * 1e-4);
        xs.push(x);
        ys.push(y);
    }
    let exps: Vec<f64> =
        xs.iter().map(|v| (v.abs().log2().clamp(-1200.0, 1200.0) * v.signum()).trunc()).collect();
    let len = xs.len();
    for dt in [DType::Float32, DType::Float64] {
        let x = Array::from_vec(xs.clone(), &[len]).astype(dt);
        let y = Array::from_vec(ys.clone(), &[len]).astype(dt);
        let k = Array::from_vec(exps.clone(), &[len]).astype(DType::Int64);
        let (m, e) = x.frexp();
        crate::codegen::check_program(&format!("frexp {dt}"), &[&m, &e], 0.0);
        crate::codegen::check_program(&format!("fmod {dt}"), &[&x.fmod(&y)], 0.0);
        crate::codegen::check_program(&format!("nextafter {dt}"), &[&x.nextafter(&y)], 0.0);
        crate::codegen::check_program(&format!("ldexp {dt}"), &[&y.ldexp(&k)], 0.0);
        crate::codegen::check_program(&format!("logaddexp2 {dt}"), &[&x.logaddexp2(&y)], 0.0);
    }
    // Integer fmod: zero and -1 divisors, MIN.
    let a = Array::from_vec(vec![-128i8, -128, 127, -5, 5, 0, 7, -7, 100, -100], &[10]);
    let b = Array::from_vec(vec![-1i8, 0, -1, 3, -3, 0, 2, 2, 7, -7], &[10]);
    crate::codegen::check_program("fmod i8", &[&a.fmod(&b)], 0.0);
    let au = Array::from_vec(vec![0u64, 5, u64::MAX, 9], &[4]);
    let bu = Array::from_vec(vec![0u64, 0, 7, 4], &[4]);
    crate::codegen::check_program("fmod u64", &[&au.fmod(&bu)], 0.0);
    // Complex round: its parts rounded, joined by the `complex` op (complex64 and complex128).
    let z = Array::from_vec(
        vec![
            num_complex::Complex64::new(0.125, -1.375),
            num_complex::Complex64::new(-0.0, f64::INFINITY),
            num_complex::Complex64::new(1e-40, -2.5e300),
        ],
        &[3],
    );
    for dt in [DType::Complex64, DType::Complex128] {
        let r = z.astype(dt).round(2);
        assert_eq!(r.dtype(), dt);
        crate::codegen::check_program(&format!("round {dt}"), &[&r], 0.0);
    }
    // Complex rint: each part.
    let z = Array::from_vec(
        vec![
            num_complex::Complex64::new(0.5, -1.5),
            num_complex::Complex64::new(2.5, -1e300),
            num_complex::Complex64::new(-0.5, f64::INFINITY),
        ],
        &[3],
    );
    crate::codegen::check_program("rint c128", &[&z.rint()], 0.0);
    assert_eq!(
        z.rint().to_vec::<num_complex::Complex64>()[0],
        num_complex::Complex64::new(0.0, -2.0)
    );
}

/// logaddexp2's `exp2` and `log1p` are scalar libm calls (a function of the module the loop
/// calls, as logaddexp's), never glibc's vector functions, whose errors its cancellation would
/// magnify.
#[test]
fn logaddexp2_calls_scalar_libm() {
    let x = Array::from_vec((0..4096).map(|i| i as f64 / 400.0 - 5.0).collect::<Vec<_>>(), &[4096]);
    let z = x.logaddexp2(&x.flip(None));
    let p = kiln_compiler::fusion::partition(&kiln::lower(&[&z]).graph);
    for tier in [kiln_compiler::codegen::Tier::Fast, kiln_compiler::codegen::Tier::Optimized] {
        let ir = kiln_compiler::codegen::optimized_llvm_ir_text(&p.regions[0], tier).unwrap();
        assert!(
            ir.contains("@kiln_logaddexp2(double") && ir.contains("noinline"),
            "{tier:?}:\n{ir}"
        );
    }
}

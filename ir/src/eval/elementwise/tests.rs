use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

use super::super::testutil::*;
use crate::graph::Attrs;
use crate::ops::OpKind::{self, *};
use crate::DType;

mod numpy;

fn c(re: f64, im: f64) -> Complex64 {
    Complex64::new(re, im)
}

#[test]
fn integer_wrap_around() {
    // np.array([127], np.int8) + np.array([1], np.int8) -> [-128]
    assert_eq!(
        apply(Add, &[vec1(vec![127i8]), vec1(vec![1i8])]).as_slice::<i8>().unwrap(),
        &[-128]
    );
    // np.array([-2**31], np.int32) - np.array([1], np.int32) -> [2147483647]
    assert_eq!(
        apply(Sub, &[vec1(vec![i32::MIN]), vec1(vec![1i32])]).as_slice::<i32>().unwrap(),
        &[i32::MAX]
    );
    // np.array([0], np.uint8) - np.array([1], np.uint8) -> [255]
    assert_eq!(apply(Sub, &[vec1(vec![0u8]), vec1(vec![1u8])]).as_slice::<u8>().unwrap(), &[255]);
    // np.array([100], np.int8) * np.array([3], np.int8) -> [44]
    assert_eq!(apply(Mul, &[vec1(vec![100i8]), vec1(vec![3i8])]).as_slice::<i8>().unwrap(), &[44]);
    // np.array([2**63-1]) + np.array([1]) -> [-9223372036854775808]
    assert_eq!(
        apply(Add, &[vec1(vec![i64::MAX]), vec1(vec![1i64])]).as_slice::<i64>().unwrap(),
        &[i64::MIN]
    );
    // np.negative(np.array([1, 0], np.uint8)) -> [255, 0]; np.negative(np.int8 -128) -> -128
    assert_eq!(apply(Neg, &[vec1(vec![1u8, 0])]).as_slice::<u8>().unwrap(), &[255, 0]);
    assert_eq!(apply(Neg, &[vec1(vec![-128i8])]).as_slice::<i8>().unwrap(), &[-128]);
    assert_eq!(apply(Neg, &[vec1(vec![1u64, 0])]).as_slice::<u64>().unwrap(), &[u64::MAX, 0]);
    // np.abs(np.array([-128, 5, -5], np.int8)) -> [-128, 5, 5]
    assert_eq!(apply(Abs, &[vec1(vec![-128i8, 5, -5])]).as_slice::<i8>().unwrap(), &[-128, 5, 5]);
    // np.square(np.array([16, -100], np.int8)) -> [0, 16]
    assert_eq!(apply(Square, &[vec1(vec![16i8, -100])]).as_slice::<i8>().unwrap(), &[0, 16]);
    // np.invert(np.array([0, -1, 127], np.int8)) -> [-1, 0, -128]; uint8 [0, 5] -> [255, 250]
    assert_eq!(
        apply(Invert, &[vec1(vec![0i8, -1, 127])]).as_slice::<i8>().unwrap(),
        &[-1, 0, -128]
    );
    assert_eq!(apply(Invert, &[vec1(vec![0u8, 5])]).as_slice::<u8>().unwrap(), &[255, 250]);
}

#[test]
fn integer_floor_divide_and_remainder() {
    // a = np.array([7, -7, 7, -7, 5, 0, -128], np.int8); b = np.array([2, 2, -2, -2, 0, 0, -1], np.int8)
    // a // b -> [3, -4, -4, 3, 0, 0, -128]; a % b -> [1, 1, -1, -1, 0, 0, 0]
    let a = vec1(vec![7i8, -7, 7, -7, 5, 0, -128]);
    let b = vec1(vec![2i8, 2, -2, -2, 0, 0, -1]);
    assert_eq!(
        apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<i8>().unwrap(),
        &[3, -4, -4, 3, 0, 0, -128]
    );
    assert_eq!(apply(Remainder, &[a, b]).as_slice::<i8>().unwrap(), &[1, 1, -1, -1, 0, 0, 0]);
    // np.array([7, 5], np.uint16) // np.array([2, 0], np.uint16) -> [3, 0]; % -> [1, 0]
    let (a, b) = (vec1(vec![7u16, 5]), vec1(vec![2u16, 0]));
    assert_eq!(apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<u16>().unwrap(), &[3, 0]);
    assert_eq!(apply(Remainder, &[a, b]).as_slice::<u16>().unwrap(), &[1, 0]);
    // np.int64(-2**63) // np.int64(-1) -> -2**63 (overflow wraps)
    let (a, b) = (vec1(vec![i64::MIN]), vec1(vec![-1i64]));
    assert_eq!(apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<i64>().unwrap(), &[i64::MIN]);
    assert_eq!(apply(Remainder, &[a, b]).as_slice::<i64>().unwrap(), &[0]);
}

#[test]
fn float_floor_divide_and_remainder() {
    // a = np.array([7., -7., 7., -7., 1., -1., 0., -1., 5., -5., 0.5])
    // b = np.array([2., 2., -2., -2., 0., 0., 0., 3., np.inf, np.inf, -0.25])
    let inf = f64::INFINITY;
    let nan = f64::NAN;
    let a = vec1(vec![7., -7., 7., -7., 1., -1., 0., -1., 5., -5., 0.5]);
    let b = vec1(vec![2., 2., -2., -2., 0., 0., 0., 3., inf, inf, -0.25]);
    // a // b -> [3, -4, -4, 3, inf, -inf, nan, -1, 0, -1, -2]
    assert_same(
        &f64s(&apply(FloorDiv, &[a.clone(), b.clone()])),
        &[3., -4., -4., 3., inf, -inf, nan, -1., 0., -1., -2.],
    );
    // a % b -> [1, 1, -1, -1, nan, nan, nan, 2, 5, inf, -0.0]  (np.remainder(-1.0, 3.0) == 2.0)
    assert_same(
        &f64s(&apply(Remainder, &[a, b])),
        &[1., 1., -1., -1., nan, nan, nan, 2., 5., inf, -0.0],
    );
    // float32: np.array([-7.5], np.float32) // np.float32(2) -> [-4.]; % -> [0.5]
    let (a, b) = (vec1(vec![-7.5f32]), vec1(vec![2.0f32]));
    assert_eq!(apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<f32>().unwrap(), &[-4.0]);
    assert_eq!(apply(Remainder, &[a, b]).as_slice::<f32>().unwrap(), &[0.5]);
}

#[test]
fn float16_and_bfloat16_round_after_each_op() {
    // x = np.array([0.1, 2048, 1.0, 1.0, 65504, 0.0001], np.float16)
    // y = np.array([0.2, 1, 2**-11, 3*2**-11, 16, 0.0001], np.float16)
    // (x + y).astype(np.float64) -> [0.2998046875, 2048.0, 1.0, 1.001953125, inf, 0.00020003318786621094]
    // (x * y).astype(np.float64) -> [0.019989013671875, 2048.0, 0.00048828125, 0.00146484375, inf, 0.0]
    let h = |v: &[f64]| vec1(v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>());
    let x = h(&[0.1, 2048.0, 1.0, 1.0, 65504.0, 0.0001]);
    let y = h(&[0.2, 1.0, 2f64.powi(-11), 3.0 * 2f64.powi(-11), 16.0, 0.0001]);
    let inf = f64::INFINITY;
    assert_same(
        &f64s(&apply(Add, &[x.clone(), y.clone()])),
        &[0.2998046875, 2048.0, 1.0, 1.001953125, inf, 0.00020003318786621094],
    );
    assert_same(
        &f64s(&apply(Mul, &[x, y])),
        &[0.019989013671875, 2048.0, 0.00048828125, 0.00146484375, inf, 0.0],
    );
    // b = ml_dtypes.bfloat16; x = np.array([1.0, 1.0, 256, 0.1], b); y = np.array([3*2**-8, 2**-8, 1, 0.2], b)
    // (x + y).astype(np.float64) -> [1.015625, 1.0, 256.0, 0.30078125]
    let b = |v: &[f64]| vec1(v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>());
    let x = b(&[1.0, 1.0, 256.0, 0.1]);
    let y = b(&[3.0 * 2f64.powi(-8), 2f64.powi(-8), 1.0, 0.2]);
    assert_same(&f64s(&apply(Add, &[x, y])), &[1.015625, 1.0, 256.0, 0.30078125]);
}

/// The ufuncs of issue 23 with ops of their own, against NumPy 2.4's values.
#[test]
fn fmod_ldexp_frexp_nextafter_logaddexp2() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    // np.fmod([5., -5., 5., -5., inf, 1., -0., 1e300], [3., 3., -3., -3., 2., inf, 1., 3.])
    //   -> [2, -2, 2, -2, nan, 1, -0, 0]
    let a = vec1(vec![5.0, -5.0, 5.0, -5.0, inf, 1.0, -0.0, 1e300]);
    let b = vec1(vec![3.0, 3.0, -3.0, -3.0, 2.0, inf, 1.0, 3.0]);
    assert_same(&f64s(&apply(Fmod, &[a, b])), &[2.0, -2.0, 2.0, -2.0, nan, 1.0, -0.0, 0.0]);
    // np.fmod(np.int8([-128, 7, -7, 5]), np.int8([-1, 0, 2, -3])) -> [0, 0, -1, 2]
    let r = apply(Fmod, &[vec1(vec![-128i8, 7, -7, 5]), vec1(vec![-1i8, 0, 2, -3])]);
    assert_eq!(r.as_slice::<i8>().unwrap(), &[0, 0, -1, 2]);
    // np.ldexp([1., 5e-324, 1.7976931348623157e308, 1.5, 3., 1.0000000000000002],
    //          [-1074, 1074, -2098, -1075, 2**31 - 1, -1074]) -> [5e-324, 1, 5e-324, 5e-324, inf, 5e-324]
    let x = vec1(vec![1.0, 5e-324, 1.7976931348623157e308, 1.5, 3.0, 1.0000000000000002]);
    let n = vec1(vec![-1074.0, 1074.0, -2098.0, -1075.0, 2147483647.0, -1074.0]);
    assert_same(&f64s(&apply(Ldexp, &[x, n])), &[5e-324, 1.0, 5e-324, 5e-324, inf, 5e-324]);
    // np.ldexp(np.float32([1.5, 3, 1.0000001]), [-150, 200, -149]) -> [1.4e-45, inf, 1.4e-45]
    let x = vec1(vec![1.5f32, 3.0, 1.0000001]);
    let n = vec1(vec![-150.0f32, 200.0, -149.0]);
    let r = apply(Ldexp, &[x, n]);
    assert_eq!(r.as_slice::<f32>().unwrap(), &[1.4e-45, f32::INFINITY, 1.4e-45]);
    // np.frexp([0., -0., inf, 5e-324, -3., 0.75, 1e-310])
    //   -> [0, -0, inf, 0.5, -0.75, 0.75, 0.5752618031559393], [0, 0, 0, -1073, 2, 0, -1029]
    let x = vec1(vec![0.0, -0.0, inf, 5e-324, -3.0, 0.75, 1e-310]);
    assert_same(
        &f64s(&apply(FrexpMantissa, &[x.clone()])),
        &[0.0, -0.0, inf, 0.5, -0.75, 0.75, 0.5752618031559393],
    );
    assert_same(&f64s(&apply(FrexpExponent, &[x])), &[0.0, 0.0, 0.0, -1073.0, 2.0, 0.0, -1029.0]);
    // np.nextafter([0., -0., 1., 1., -1., inf, 0.], [1., -1., 2., 0., -2., 0., -0.])
    //   -> [5e-324, -5e-324, 1.0000000000000002, 0.9999999999999999, -1.0000000000000002,
    //       1.7976931348623157e308, -0.0]
    let x = vec1(vec![0.0, -0.0, 1.0, 1.0, -1.0, inf, 0.0]);
    let y = vec1(vec![1.0, -1.0, 2.0, 0.0, -2.0, 0.0, -0.0]);
    assert_same(
        &f64s(&apply(NextAfter, &[x, y])),
        &[
            5e-324,
            -5e-324,
            1.0000000000000002,
            0.9999999999999999,
            -1.0000000000000002,
            1.7976931348623157e308,
            -0.0,
        ],
    );
    // np.nextafter(np.float32([1, 0, 3.4028235e38]), np.float32([2, -1, inf]))
    //   -> [1.0000001192092896, -1.401298464324817e-45, inf]
    let r = apply(
        NextAfter,
        &[vec1(vec![1.0f32, 0.0, f32::MAX]), vec1(vec![2.0f32, -1.0, f32::INFINITY])],
    );
    assert_same(&f64s(&r), &[1.0000001192092896, -1.401298464324817e-45, inf]);
    // np.nextafter(np.float16([1, 0, -0., 65504]), np.float16([2, -1, 0, inf]))
    //   -> [1.0009765625, -5.96e-08, -0.0 (NumPy's half: x == y gives x), inf]
    let h = |v: &[f64]| vec1(v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>());
    let r = apply(NextAfter, &[h(&[1.0, 0.0, -0.0, 65504.0]), h(&[2.0, -1.0, 0.0, inf])]);
    assert_same(&f64s(&r), &[1.0009765625, -5.960464477539063e-8, -0.0, inf]);
    // np.logaddexp2([inf, -inf, 1, nan, 1000, -1000, -0.5], [inf, -inf, 2, 1, 1000, -999, -1.2])
    //   -> [inf, -inf, 2.584962500721156, nan, 1001.0, -998.4150374992788, 0.19204523211382707]
    let r = apply(
        LogAddExp2,
        &[
            vec1(vec![inf, -inf, 1.0, nan, 1000.0, -1000.0, -0.5]),
            vec1(vec![inf, -inf, 2.0, 1.0, 1000.0, -999.0, -1.2]),
        ],
    );
    assert_same(
        &f64s(&r),
        &[inf, -inf, 2.584962500721156, nan, 1001.0, -998.4150374992788, 0.19204523211382707],
    );
    // complex(x, y) and rint of complex (each part).
    let r = apply(MakeComplex, &[vec1(vec![1.5f32, -0.0]), vec1(vec![inf as f32, 2.5])]);
    assert_eq!(r.dtype(), DType::Complex64);
    let r = apply(Rint, &[r]);
    assert_eq!(
        r.as_slice::<Complex32>().unwrap(),
        &[Complex32::new(2.0, f32::INFINITY), Complex32::new(-0.0, 2.0)]
    );
}

#[test]
fn nan_rules_of_maximum_and_fmax() {
    let nan = f64::NAN;
    // x = np.array([nan, 1.0, nan, 1.0, -0.0, 2.0]); y = np.array([2.0, nan, -nan, 3.0, 0.0, 1.0])
    let x = vec1(vec![nan, 1.0, nan, 1.0, -0.0, 2.0]);
    let y = vec1(vec![2.0, nan, -nan, 3.0, 0.0, 1.0]);
    let xy = [x, y];
    // np.maximum -> [nan, nan, nan, 3.0, 0.0, 2.0]; np.minimum -> [nan, nan, nan, 1.0, 0.0, 1.0]
    // (on ±0 ties NumPy's loops return the second operand)
    assert_same(&f64s(&apply(Maximum, &xy)), &[nan, nan, nan, 3.0, 0.0, 2.0]);
    assert_same(&f64s(&apply(Minimum, &xy)), &[nan, nan, nan, 1.0, 0.0, 1.0]);
    // np.fmax -> [2.0, 1.0, nan, 3.0, -0.0, 2.0]; np.fmin -> [2.0, 1.0, nan, 1.0, -0.0, 1.0]
    assert_same(&f64s(&apply(Fmax, &xy)), &[2.0, 1.0, nan, 3.0, -0.0, 2.0]);
    assert_same(&f64s(&apply(Fmin, &xy)), &[2.0, 1.0, nan, 1.0, -0.0, 1.0]);
    // np.maximum(np.array([complex(nan, 0), 1+1j]), np.array([1+0j, complex(0, nan)]))
    //   -> [nan+0j, 0+nanj]
    let got = c64s(&apply(
        Maximum,
        &[vec1(vec![c(nan, 0.0), c(1.0, 1.0)]), vec1(vec![c(1.0, 0.0), c(0.0, nan)])],
    ));
    assert!(
        got[0].re.is_nan() && got[0].im == 0.0 && got[1].re == 0.0 && got[1].im.is_nan(),
        "{got:?}"
    );
    // Integers and bools: np.maximum([True, False], [False, False]) -> [True, False]
    assert_eq!(
        bools(&apply(Maximum, &[vec1(vec![true, false]), vec1(vec![false, false])])),
        vec![true, false]
    );
    assert_eq!(
        apply(Minimum, &[vec1(vec![3u32, 9]), vec1(vec![5u32, 1])]).as_slice::<u32>().unwrap(),
        &[3, 1]
    );
}

#[test]
fn shifts() {
    // np.left_shift(np.array([1, 1, 1, -3, 5, 1], np.int8), np.array([7, 8, -1, 2, 0, 100], np.int8))
    //   -> [-128, 0, 0, -12, 5, 0]
    let a = vec1(vec![1i8, 1, 1, -3, 5, 1]);
    let b = vec1(vec![7i8, 8, -1, 2, 0, 100]);
    assert_eq!(apply(LeftShift, &[a, b]).as_slice::<i8>().unwrap(), &[-128, 0, 0, -12, 5, 0]);
    // np.right_shift(np.array([-5, -5, 5, -128, 64, 5], np.int8), np.array([-1, 9, 1, 7, 6, 8], np.int8))
    //   -> [-1, -1, 2, -1, 1, 0]
    let a = vec1(vec![-5i8, -5, 5, -128, 64, 5]);
    let b = vec1(vec![-1i8, 9, 1, 7, 6, 8]);
    assert_eq!(apply(RightShift, &[a, b]).as_slice::<i8>().unwrap(), &[-1, -1, 2, -1, 1, 0]);
    // np.left_shift(np.array([1, 255, 3], np.uint8), np.array([7, 1, 8], np.uint8)) -> [128, 254, 0]
    let r = apply(LeftShift, &[vec1(vec![1u8, 255, 3]), vec1(vec![7u8, 1, 8])]);
    assert_eq!(r.as_slice::<u8>().unwrap(), &[128, 254, 0]);
    // np.right_shift(np.array([255, 255, 2**64-1], np.uint64), np.array([4, 64, 63], np.uint64)) -> [15, 0, 1]
    let r = apply(RightShift, &[vec1(vec![255u64, 255, u64::MAX]), vec1(vec![4u64, 64, 63])]);
    assert_eq!(r.as_slice::<u64>().unwrap(), &[15, 0, 1]);
    // np.left_shift(np.array([1, 1]), np.array([63, 64])) -> [-2**63, 0];
    // np.right_shift(np.array([-2**63]), 63) -> [-1]
    let r = apply(LeftShift, &[vec1(vec![1i64, 1]), vec1(vec![63i64, 64])]);
    assert_eq!(r.as_slice::<i64>().unwrap(), &[i64::MIN, 0]);
    let r = apply(RightShift, &[vec1(vec![i64::MIN]), vec1(vec![63i64])]);
    assert_eq!(r.as_slice::<i64>().unwrap(), &[-1]);
}

#[test]
fn where_and_bool_arithmetic() {
    // np.where([True, False, True], np.float32([1.5, 2.5, 3.5]), np.float32([-1, -2, -3])) -> [1.5, -2, 3.5]
    let r = apply(
        Where,
        &[
            vec1(vec![true, false, true]),
            vec1(vec![1.5f32, 2.5, 3.5]),
            vec1(vec![-1.0f32, -2.0, -3.0]),
        ],
    );
    assert_eq!(r.as_slice::<f32>().unwrap(), &[1.5, -2.0, 3.5]);
    // np.add / np.multiply on bools: [T, T, F, F] (+,*) [T, F, T, F] -> or / and
    let (a, b) = (vec1(vec![true, true, false, false]), vec1(vec![true, false, true, false]));
    assert_eq!(bools(&apply(Add, &[a.clone(), b.clone()])), vec![true, true, true, false]);
    assert_eq!(bools(&apply(Mul, &[a.clone(), b.clone()])), vec![true, false, false, false]);
    assert_eq!(bools(&apply(BitwiseXor, &[a.clone(), b.clone()])), vec![false, true, true, false]);
    assert_eq!(bools(&apply(LogicalXor, &[a.clone(), b.clone()])), vec![false, true, true, false]);
    assert_eq!(bools(&apply(LogicalAnd, &[a.clone(), b.clone()])), vec![true, false, false, false]);
    assert_eq!(bools(&apply(BitwiseOr, &[a.clone(), b])), vec![true, true, true, false]);
    assert_eq!(bools(&apply(Invert, std::slice::from_ref(&a))), vec![false, false, true, true]);
    assert_eq!(bools(&apply(LogicalNot, &[a])), vec![false, false, true, true]);
    // np.bitwise_and(np.int16([12, -1]), np.int16([10, 7])) -> [8, 7]
    let r = apply(BitwiseAnd, &[vec1(vec![12i16, -1]), vec1(vec![10i16, 7])]);
    assert_eq!(r.as_slice::<i16>().unwrap(), &[8, 7]);
}

#[test]
fn comparisons() {
    let nan = f64::NAN;
    // np.array([nan, 1.0, nan]) != np.array([nan, 1.0, 1.0]) -> [True, False, True]
    let (a, b) = (vec1(vec![nan, 1.0, nan]), vec1(vec![nan, 1.0, 1.0]));
    assert_eq!(bools(&apply(Ne, &[a.clone(), b.clone()])), vec![true, false, true]);
    assert_eq!(bools(&apply(Eq, &[a.clone(), b.clone()])), vec![false, true, false]);
    assert_eq!(bools(&apply(Le, &[a.clone(), b.clone()])), vec![false, true, false]);
    assert_eq!(bools(&apply(Ge, &[a, b])), vec![false, true, false]);
    // np.array([1+1j, 1+2j, complex(1, nan), 2+0j]) < np.array([1+2j, 1+1j, 2+0j, complex(nan, 0)])
    //   -> [True, False, False, False]
    let a = vec1(vec![c(1.0, 1.0), c(1.0, 2.0), c(1.0, nan), c(2.0, 0.0)]);
    let b = vec1(vec![c(1.0, 2.0), c(1.0, 1.0), c(2.0, 0.0), c(nan, 0.0)]);
    assert_eq!(bools(&apply(Lt, &[a.clone(), b.clone()])), vec![true, false, false, false]);
    assert_eq!(bools(&apply(Gt, &[a, b])), vec![false, true, false, false]);
    // Unsigned and bool orderings: np.uint64(2**63) > np.uint64(1); True > False
    assert_eq!(bools(&apply(Gt, &[vec1(vec![1u64 << 63]), vec1(vec![1u64])])), vec![true]);
    assert_eq!(
        bools(&apply(Gt, &[vec1(vec![true, false]), vec1(vec![false, false])])),
        vec![true, false]
    );
}

#[test]
fn powers() {
    // np.power(np.array([2, 3, -2, 0, 7], np.int8), np.array([7, 5, 7, 0, 3], np.int8)) -> [-128, -13, -128, 1, 87]
    let r = apply(Power, &[vec1(vec![2i8, 3, -2, 0, 7]), vec1(vec![7i8, 5, 7, 0, 3])]);
    assert_eq!(r.as_slice::<i8>().unwrap(), &[-128, -13, -128, 1, 87]);
    // np.power(np.array([3], np.uint64), np.array([41], np.uint64)) -> [18026252303461234787]
    let r = apply(Power, &[vec1(vec![3u64]), vec1(vec![41u64])]);
    assert_eq!(r.as_slice::<u64>().unwrap(), &[18026252303461234787]);
    // Negative integer exponents (a NumPy error): 1**-3 = 1, (-1)**-3 = -1, (-1)**-2 = 1, 2**-1 = 0
    let r = apply(Power, &[vec1(vec![1i32, -1, -1, 2]), vec1(vec![-3i32, -3, -2, -1])]);
    assert_eq!(r.as_slice::<i32>().unwrap(), &[1, -1, 1, 0]);
    // np.power(np.float32([2, -8, 0, -1]), np.float32([0.5, 1/3, -1, inf])) -> [1.4142135381698608, nan, inf, 1.0]
    let r = apply(
        Power,
        &[vec1(vec![2.0f32, -8.0, 0.0, -1.0]), vec1(vec![0.5f32, 1.0 / 3.0, -1.0, f32::INFINITY])],
    );
    assert_same(&f64s(&r), &[1.4142135381698608, f64::NAN, f64::INFINITY, 1.0]);
    // np.power(np.array([1+2j, 1+2j, 2+0j, 0j, 1j]), np.array([3+0j, -2+0j, 0.5+0.5j, 2+0j, 0j]))
    //   -> [-11-2j, -0.12-0.16j, 1.3301274004259787+0.48037599714809626j, 0j, 1+0j]
    let r = apply(
        Power,
        &[
            vec1(vec![c(1.0, 2.0), c(1.0, 2.0), c(2.0, 0.0), c(0.0, 0.0), c(0.0, 1.0)]),
            vec1(vec![c(3.0, 0.0), c(-2.0, 0.0), c(0.5, 0.5), c(2.0, 0.0), c(0.0, 0.0)]),
        ],
    );
    let want = [
        c(-11.0, -2.0),
        c(-0.12, -0.16),
        c(1.3301274004259787, 0.48037599714809626),
        c(0.0, 0.0),
        c(1.0, 0.0),
    ];
    for (g, w) in c64s(&r).iter().zip(&want) {
        assert!((g - w).norm() <= 4e-16 * w.norm().max(1.0), "{g} vs {w}");
    }
}

/// The evaluator's arcsinh, arccosh and arctanh are glibc's `asinh`, `acosh` and `atanh`
/// bit for bit (NumPy and the compiled kernels call glibc): over every binade, densely near
/// 1 and ±1, and at the branch points and edges.
#[test]
fn inverse_hyperbolics_are_glibcs() {
    extern "C" {
        // C99 functions from the process's libm (glibc on the machines kiln runs on).
        fn asinh(x: f64) -> f64;
        fn acosh(x: f64) -> f64;
        fn atanh(x: f64) -> f64;
    }
    let mut xs: Vec<f64> =
        vec![0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.0, -2.0, 2.0000001, 1.0000000000000002];
    xs.extend([
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MAX,
        5e-324,
        1e-300,
        -3e-9,
        3e8,
        -3e8,
    ]);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..300_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        let s = if state & 1 == 0 { 1.0 } else { -1.0 };
        xs.push(match i % 5 {
            // Every binade; 2^-60 .. 2^40; 1 + 2^-k; ±(1 - 2^-k); uniform on (-4, 4).
            0 => s * (u * 2000.0 - 1000.0).exp2(),
            1 => s * (u * 100.0 - 60.0).exp2(),
            2 => 1.0 + (u * 60.0 - 55.0).exp2(),
            3 => s * (1.0 - (-u * 52.0).exp2()),
            _ => s * u * 4.0,
        });
    }
    fn glibc_asinh(x: f64) -> f64 {
        // SAFETY: a pure libm function of one double.
        unsafe { asinh(x) }
    }
    fn glibc_acosh(x: f64) -> f64 {
        // SAFETY: a pure libm function of one double.
        unsafe { acosh(x) }
    }
    fn glibc_atanh(x: f64) -> f64 {
        // SAFETY: a pure libm function of one double.
        unsafe { atanh(x) }
    }
    type F = fn(f64) -> f64;
    let pairs: [(&str, F, F); 3] = [
        ("asinh", super::asinh, glibc_asinh),
        ("acosh", super::acosh, glibc_acosh),
        ("atanh", super::atanh, glibc_atanh),
    ];
    for (name, ours, glibc) in pairs {
        for &x in &xs {
            let (got, want) = (ours(x), glibc(x));
            let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
            assert!(same, "{name}({x:e}): {got:e}, glibc {want:e}");
        }
    }
}

#[test]
fn signs_abs_rounding_and_friends() {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    // np.sign(np.array([-3.5, 0.0, -0.0, nan, inf])) -> [-1.0, 0.0, 0.0, nan, 1.0]
    assert_same(
        &f64s(&apply(Sign, &[vec1(vec![-3.5, 0.0, -0.0, nan, inf])])),
        &[-1.0, 0.0, 0.0, nan, 1.0],
    );
    assert_eq!(apply(Sign, &[vec1(vec![-3i16, 0, 5])]).as_slice::<i16>().unwrap(), &[-1, 0, 1]);
    // np.sign(np.array([3+4j, 0j, complex(inf, 1), complex(1, -inf), complex(nan, 1), complex(inf, inf)]))
    //   -> [0.6+0.8j, 0j, 1+0j, -1j, nan+nanj, nan+nanj]
    let z =
        vec1(vec![c(3.0, 4.0), c(0.0, 0.0), c(inf, 1.0), c(1.0, -inf), c(nan, 1.0), c(inf, inf)]);
    let got = c64s(&apply(Sign, &[z]));
    assert_eq!(&got[..4], &[c(0.6, 0.8), c(0.0, 0.0), c(1.0, 0.0), c(0.0, -1.0)]);
    assert!(got[4].re.is_nan() && got[4].im.is_nan() && got[5].re.is_nan() && got[5].im.is_nan());
    // np.abs(np.array([3+4j, complex(-inf, nan)])) -> [5.0, inf]; np.abs(3e200+4e200j) -> 4.9999999999999995e+200
    let r = apply(Abs, &[vec1(vec![c(3.0, 4.0), c(-inf, nan), c(3e200, 4e200)])]);
    assert_eq!(r.dtype(), DType::Float64);
    assert_same(&f64s(&r), &[5.0, inf, 4.9999999999999995e200]);
    // complex64 abs is float32: np.abs(np.complex64(1+1j)) -> 1.4142135
    let r = apply(Abs, &[vec1(vec![Complex32::new(1.0, 1.0)])]);
    assert_eq!(r.as_slice::<f32>().unwrap(), &[std::f32::consts::SQRT_2]);
    // np.rint(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996])) -> [0, 2, 2, -0, -2, 2]
    let r = apply(Rint, &[vec1(vec![0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996])]);
    assert_same(&f64s(&r), &[0.0, 2.0, 2.0, -0.0, -2.0, 2.0]);
    // np.logaddexp([inf, -inf, 1, nan, 1000, -1000], [inf, -inf, 2, 1, 1000, -999])
    //   -> [inf, -inf, 2.313261687518223, nan, 1000.6931471805599, -998.6867383124818]
    let r = apply(
        LogAddExp,
        &[
            vec1(vec![inf, -inf, 1.0, nan, 1000.0, -1000.0]),
            vec1(vec![inf, -inf, 2.0, 1.0, 1000.0, -999.0]),
        ],
    );
    assert_same(
        &f64s(&r),
        &[inf, -inf, 2.313261687518223, nan, 1000.6931471805599, -998.6867383124818],
    );
    // np.hypot([3, 1e300, inf], [4, 1e300, nan]) -> [5.0, 1.4142135623730952e+300, inf]
    let r = apply(Hypot, &[vec1(vec![3.0, 1e300, inf]), vec1(vec![4.0, 1e300, nan])]);
    assert_same(&f64s(&r), &[5.0, 1.4142135623730952e300, inf]);
    // np.arctan2([1, -0., 0., -1], [-1, -1, -0., 0]) -> [2.356194490192345, -pi, pi, -pi/2]
    let r = apply(Arctan2, &[vec1(vec![1.0, -0.0, 0.0, -1.0]), vec1(vec![-1.0, -1.0, -0.0, 0.0])]);
    assert_same(
        &f64s(&r),
        &[2.356194490192345, -3.141592653589793, 3.141592653589793, -1.5707963267948966],
    );
    // np.copysign([1, -2, 3], [-0., 1, nan]) -> [-1, 2, 3]
    let r = apply(CopySign, &[vec1(vec![1.0, -2.0, 3.0]), vec1(vec![-0.0, 1.0, nan])]);
    assert_same(&f64s(&r), &[-1.0, 2.0, 3.0]);
    // [math.erf(v) for v in [0.0, 0.5, -1.0, 1e-10, 3.0, 6.0]]
    let r = apply(Erf, &[vec1(vec![0.0, 0.5, -1.0, 1e-10, 3.0, 6.0])]);
    assert_same(
        &f64s(&r),
        &[
            0.0,
            0.5204998778130465,
            -0.8427007929497149,
            1.1283791670955126e-10,
            0.9999779095030014,
            1.0,
        ],
    );
    // np.reciprocal(np.int16([1, -1, 2, -3])) -> [1, -1, 0, 0]; float [2, 0, -0.] -> [0.5, inf, -inf]
    assert_eq!(
        apply(Reciprocal, &[vec1(vec![1i16, -1, 2, -3])]).as_slice::<i16>().unwrap(),
        &[1, -1, 0, 0]
    );
    assert_same(&f64s(&apply(Reciprocal, &[vec1(vec![2.0, 0.0, -0.0])])), &[0.5, inf, -inf]);
    // np.reciprocal(np.array([1+1j, 3-4j])) -> [0.5-0.5j, 0.12+0.16j]
    assert_close_c(
        &c64s(&apply(Reciprocal, &[vec1(vec![c(1.0, 1.0), c(3.0, -4.0)])])),
        &[c(0.5, -0.5), c(0.12, 0.16)],
        1e-16,
    );
    // np.array([1+2j, 1+1j, 1+0j]) / np.array([3-4j, 0j, 0j]) -> [-0.2+0.4j, inf+infj, inf+nanj]
    let r = c64s(&apply(
        Div,
        &[
            vec1(vec![c(1.0, 2.0), c(1.0, 1.0), c(1.0, 0.0)]),
            vec1(vec![c(3.0, -4.0), c(0.0, 0.0), c(0.0, 0.0)]),
        ],
    ));
    assert_close_c(&r[..1], &[c(-0.2, 0.4)], 1e-16);
    assert_eq!(r[1], c(inf, inf));
    assert!(r[2].re == inf && r[2].im.is_nan());
    // isnan/isinf/isfinite on complex look at both parts
    let z = vec1(vec![c(1.0, nan), c(0.0, 1.0), c(1.0, inf)]);
    assert_eq!(bools(&apply(IsNan, std::slice::from_ref(&z))), vec![true, false, false]);
    assert_eq!(bools(&apply(IsInf, std::slice::from_ref(&z))), vec![false, false, true]);
    assert_eq!(bools(&apply(IsFinite, &[z])), vec![false, true, false]);
    // real/imag/conjugate: np.real(np.complex64(1+2j)) is float32 1.0
    let z = vec1(vec![Complex32::new(1.0, 2.0)]);
    assert_eq!(apply(Real, std::slice::from_ref(&z)).as_slice::<f32>().unwrap(), &[1.0]);
    assert_eq!(apply(Imag, std::slice::from_ref(&z)).as_slice::<f32>().unwrap(), &[2.0]);
    assert_eq!(apply(Conj, &[z]).as_slice::<Complex32>().unwrap(), &[Complex32::new(1.0, -2.0)]);
}

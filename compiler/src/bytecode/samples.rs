//! Programs and inputs for tests of the interpreters (the host's [`Bytecode::run_host`], the
//! GPU's `kiln_interp`): every instruction the translator writes, over values that cover each
//! dtype's special cases.

use kiln_ir::shape::numel;
use kiln_ir::{DType, Data, HostArray};

use super::Bytecode;

const UNARY_FLOAT: &[&str] = &[
    "negative",
    "absolute",
    "sqrt",
    "square",
    "reciprocal",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "sign",
    "cbrt",
];
const BINARY_FLOAT: &[&str] = &[
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "copysign",
    "arctan2", "hypot",
];
const UNARY_INT: &[&str] = &["negative", "absolute", "square", "sign", "invert"];
const BINARY_INT: &[&str] = &[
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
];
const COMPARE: &[&str] = &["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"];
const BINARY_BOOL: &[&str] =
    &["logical_and", "logical_or", "logical_xor", "add", "multiply", "maximum", "minimum"];
const TYPES: &[&str] = &["bool", "i32", "i64", "f32", "f64"];

/// Graphs (textual IR, with its header) of one op each over `n` elements, with the ulps their
/// float results may differ by from the evaluator's (math functions 2, the rest 0): every
/// family and type the translator writes.
pub fn programs(n: usize) -> Vec<(String, u64)> {
    let head = "kiln.graph v1\n";
    let unary = |op: &str, t: &str, r: &str| {
        format!("{head}%0 = input {{index=0}} : {t}[{n}]\n%1 = {op}(%0) : {r}[{n}]\nreturn %1\n")
    };
    let binary = |op: &str, t: &str, r: &str| {
        format!(
            "{head}%0 = input {{index=0}} : {t}[{n}]\n%1 = input {{index=1}} : {t}[{n}]\n\
             %2 = {op}(%0, %1) : {r}[{n}]\nreturn %2\n"
        )
    };
    let mut out = Vec::new();
    for t in ["f32", "f64"] {
        out.extend(UNARY_FLOAT.iter().map(|op| (unary(op, t, t), 2)));
        out.extend(BINARY_FLOAT.iter().map(|op| (binary(op, t, t), 2)));
        out.extend(["isnan", "isinf", "isfinite"].iter().map(|op| (unary(op, t, "bool"), 0)));
    }
    for t in ["i32", "i64"] {
        out.extend(UNARY_INT.iter().map(|op| (unary(op, t, t), 0)));
        out.extend(BINARY_INT.iter().map(|op| (binary(op, t, t), 0)));
    }
    for &t in TYPES {
        out.extend(COMPARE.iter().map(|op| (binary(op, t, "bool"), 0)));
        for &to in TYPES.iter().filter(|&&to| to != t) {
            let cast = format!(
                "{head}%0 = input {{index=0}} : {t}[{n}]\n%1 = cast(%0) {{dtype={to}}} : {to}[{n}]\nreturn %1\n"
            );
            out.push((cast, 0));
        }
        let select = format!(
            "{head}%0 = input {{index=0}} : bool[{n}]\n%1 = input {{index=1}} : {t}[{n}]\n\
             %2 = input {{index=2}} : {t}[{n}]\n%3 = where(%0, %1, %2) : {t}[{n}]\nreturn %3\n"
        );
        out.push((select, 0));
    }
    out.extend(BINARY_BOOL.iter().map(|op| (binary(op, "bool", "bool"), 0)));
    out.push((unary("logical_not", "bool", "bool"), 0));
    // A scalar read at position 0, a constant, a reshape and two outputs.
    out.push((
        format!(
            "{head}%0 = input {{index=0}} : f64[{n}]\n%1 = input {{index=1}} : f64[1]\n\
             %2 = broadcast_to(%1) {{shape=[{n}]}} : f64[{n}]\n%3 = subtract(%0, %2) : f64[{n}]\n\
             %4 = exp(%3) : f64[{n}]\n%5 = greater(%4, %0) : bool[{n}]\n\
             %6 = const {{value=2}} : i64[]\n%7 = broadcast_to(%6) {{shape=[{n}]}} : i64[{n}]\n\
             %8 = cast(%5) {{dtype=i64}} : i64[{n}]\n%9 = multiply(%8, %7) : i64[{n}]\n\
             %10 = reshape(%4) {{shape=[1,{n}]}} : f64[1,{n}]\n%11 = reshape(%10) {{shape=[{n}]}} : f64[{n}]\n\
             %12 = negative(%11) : f64[{n}]\nreturn %12, %9\n"
        ),
        1,
    ));
    // Many values live at once: 24 products of x, summed last to first.
    let mut wide = format!("{head}%0 = input {{index=0}} : f32[{n}]\n");
    for k in 0..24 {
        wide += &format!(
            "%{c} = const {{value={k}.5}} : f32[]\n%{b} = broadcast_to(%{c}) {{shape=[{n}]}} : f32[{n}]\n\
             %{m} = multiply(%0, %{b}) : f32[{n}]\n",
            c = 3 * k + 1,
            b = 3 * k + 2,
            m = 3 * k + 3
        );
    }
    let mut last = 3 * 24;
    for k in (0..23).rev() {
        wide += &format!("%{} = add(%{last}, %{}) : f32[{n}]\n", last + 1, 3 * k + 3);
        last += 1;
    }
    out.push((wide + &format!("return %{last}\n"), 0));
    out
}

/// Deterministic inputs for `program` (seeded): floats spread over signs and binades with NaN,
/// ±0, inf and 0.5 among them, integers with their extremes, bools.
pub fn inputs(program: &Bytecode, seed: u64) -> Vec<HostArray> {
    program
        .inputs
        .iter()
        .enumerate()
        .map(|(k, (dt, shape))| {
            let a = values(*dt, numel(shape), seed + k as u64);
            HostArray::new(shape, a).expect("the program's input shape")
        })
        .collect()
}

fn values(dtype: DType, n: usize, seed: u64) -> Data {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let float = |i: usize, bits: u64| match i % 11 {
        0 => f64::NAN,
        1 => 0.0,
        2 => -0.0,
        3 => f64::INFINITY,
        4 => 0.5,
        _ => {
            let m = (bits >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            m * 2f64.powi((bits % 12) as i32 - 4)
        }
    };
    match dtype {
        DType::Bool => Data::Bool((0..n).map(|_| next() & 1 == 1).collect()),
        DType::Int32 => Data::Int32(
            (0..n)
                .map(|i| if i % 7 == 0 { i32::MIN } else { next() as i32 >> (next() % 24) })
                .collect(),
        ),
        DType::Int64 => Data::Int64(
            (0..n)
                .map(|i| if i % 7 == 0 { i64::MAX } else { next() as i64 >> (next() % 50) })
                .collect(),
        ),
        DType::Float32 => Data::Float32((0..n).map(|i| float(i, next()) as f32).collect()),
        DType::Float64 => Data::Float64((0..n).map(|i| float(i, next())).collect()),
        d => panic!("no sample values of {d:?}"),
    }
}

/// The most ulps between `a` and `b` elementwise (floats; NaN against NaN is 0, NaN against a
/// number `u64::MAX`), 0 or `u64::MAX` for other dtypes (equal or not); `u64::MAX` where the
/// dtypes or shapes differ.
pub fn ulps_apart(a: &HostArray, b: &HostArray) -> u64 {
    if (a.dtype(), a.shape()) != (b.dtype(), b.shape()) {
        return u64::MAX;
    }
    fn key32(x: f32) -> i64 {
        let b = x.to_bits() as i32;
        i64::from(if b < 0 { i32::MIN - b } else { b })
    }
    fn key64(x: f64) -> i128 {
        let b = x.to_bits() as i64;
        i128::from(if b < 0 { i64::MIN - b } else { b })
    }
    fn apart<T: Copy>(x: T, y: T, nan: impl Fn(T) -> bool, d: impl Fn(T, T) -> u64) -> u64 {
        match (nan(x), nan(y)) {
            (true, true) => 0,
            (false, false) => d(x, y),
            _ => u64::MAX,
        }
    }
    match (a.data(), b.data()) {
        (Data::Float32(x), Data::Float32(y)) => x
            .iter()
            .zip(y)
            .map(|(&p, &q)| apart(p, q, f32::is_nan, |p, q| key32(p).abs_diff(key32(q))))
            .max()
            .unwrap_or(0),
        (Data::Float64(x), Data::Float64(y)) => x
            .iter()
            .zip(y)
            .map(|(&p, &q)| {
                apart(p, q, f64::is_nan, |p, q| {
                    u64::try_from(key64(p).abs_diff(key64(q))).unwrap_or(u64::MAX)
                })
            })
            .max()
            .unwrap_or(0),
        (x, y) => {
            if x == y {
                0
            } else {
                u64::MAX
            }
        }
    }
}

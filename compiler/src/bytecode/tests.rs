use kiln_ir::{DType, HostArray};

use super::*;
use crate::fusion::{partition, Region};

/// The one region of the graph `text` (its header added).
fn region(text: &str) -> Region {
    let g = kiln_ir::text::parse(&format!("kiln.graph v1\n{text}")).expect("the test's graph");
    let mut regions = partition(&g).regions;
    assert_eq!(regions.len(), 1, "one region");
    regions.remove(0)
}

/// Deterministic values of `dtype` (floats spread over signs and magnitudes, some special).
fn values(dtype: DType, n: usize, seed: u64) -> HostArray {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let shape = [n];
    match dtype {
        DType::Bool => HostArray::from_vec(&shape, (0..n).map(|_| next() & 1 == 1).collect()),
        DType::Int32 => HostArray::from_vec(
            &shape,
            (0..n)
                .map(|i| if i % 7 == 0 { i32::MIN } else { next() as i32 >> (next() % 24) })
                .collect(),
        ),
        DType::Int64 => HostArray::from_vec(
            &shape,
            (0..n)
                .map(|i| if i % 7 == 0 { i64::MAX } else { next() as i64 >> (next() % 50) })
                .collect(),
        ),
        DType::Float32 => {
            HostArray::from_vec(&shape, (0..n).map(|i| float(i, next()) as f32).collect())
        }
        DType::Float64 => HostArray::from_vec(&shape, (0..n).map(|i| float(i, next())).collect()),
        d => panic!("no test values of {d:?}"),
    }
    .unwrap()
}

fn float(i: usize, bits: u64) -> f64 {
    match i % 11 {
        0 => f64::NAN,
        1 => 0.0,
        2 => -0.0,
        3 => f64::INFINITY,
        4 => 0.5,
        _ => {
            let m = (bits >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            m * 2f64.powi((bits % 12) as i32 - 4)
        }
    }
}

/// Ulps between two floats of a dtype (NaN against NaN is 0).
fn ulps(a: f64, b: f64, f32: bool) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f64| -> i64 {
        if f32 {
            let b = (x as f32).to_bits() as i32;
            i64::from(if b < 0 { i32::MIN - b } else { b })
        } else {
            let b = x.to_bits() as i64;
            if b < 0 {
                i64::MIN - b
            } else {
                b
            }
        }
    };
    key(a).abs_diff(key(b))
}

/// Runs `region`'s program and the evaluator over the same inputs; every output within
/// `max_ulps` (floats), equal otherwise.
fn check(region: &Region, max_ulps: u64) {
    let bc = Bytecode::of(region).unwrap_or_else(|e| panic!("interpretable: {e:?}"));
    let inputs: Vec<HostArray> = bc
        .inputs
        .iter()
        .enumerate()
        .map(|(k, (dt, shape))| {
            let n = numel(shape);
            let a = values(*dt, n, 7 + k as u64);
            HostArray::new(shape, a.into_data()).unwrap()
        })
        .collect();
    let refs: Vec<&HostArray> = inputs.iter().collect();
    let got = bc.run_host(&refs);
    let want = kiln_ir::eval::evaluate(&region.body, &refs).expect("the evaluator");
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "output {k}");
        match (g.data(), w.data()) {
            (Data::Float32(g), Data::Float32(w)) => {
                for (i, (x, y)) in g.iter().zip(w).enumerate() {
                    let u = ulps(f64::from(*x), f64::from(*y), true);
                    assert!(
                        u <= max_ulps,
                        "output {k}[{i}]: {x} against {y} ({u} ulps)\n{}",
                        bc.text()
                    );
                }
            }
            (Data::Float64(g), Data::Float64(w)) => {
                for (i, (x, y)) in g.iter().zip(w).enumerate() {
                    let u = ulps(*x, *y, false);
                    assert!(
                        u <= max_ulps,
                        "output {k}[{i}]: {x} against {y} ({u} ulps)\n{}",
                        bc.text()
                    );
                }
            }
            (g, w) => assert_eq!(g, w, "output {k}\n{}", bc.text()),
        }
    }
}

use kiln_ir::Data;

#[test]
fn a_chain_reads_as_its_program() {
    // x * 1000.123 + cos(x): the first-call benchmark's expression.
    let r = region(
        "%0 = input {index=0} : f32[1024]\n%1 = const {value=1000.123} : f32[]\n\
         %2 = broadcast_to(%1) {shape=[1024]} : f32[1024]\n%3 = multiply(%0, %2) : f32[1024]\n\
         %4 = cos(%0) : f32[1024]\n%5 = add(%3, %4) : f32[1024]\nreturn %5\n",
    );
    let bc = Bytecode::of(&r).unwrap();
    assert_eq!(
        bc.text(),
        "r0 = load.f32 in0\nr1 = const.f32 0x447a07df\nr1 = mul.f32 r0, r1\n\
         r0 = cos.f32 r0\nr0 = add.f32 r1, r0\nout0 = store.f32 r0\n"
    );
    assert_eq!((bc.elements, bc.registers), (1024, 2));
    check(&r, 1);
}

#[test]
fn float_ops_agree_with_the_evaluator() {
    let unary = [
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
    let binary = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "copysign",
        "arctan2", "hypot",
    ];
    for t in ["f32", "f64"] {
        for op in unary {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = {op}(%0) : {t}[97]\nreturn %1\n"
                )),
                2,
            );
        }
        for op in binary {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = input {{index=1}} : {t}[97]\n\
                     %2 = {op}(%0, %1) : {t}[97]\nreturn %2\n"
                )),
                2,
            );
        }
        for op in ["isnan", "isinf", "isfinite"] {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = {op}(%0) : bool[97]\nreturn %1\n"
                )),
                0,
            );
        }
    }
}

#[test]
fn integer_bool_compare_cast_and_where_agree_with_the_evaluator() {
    for t in ["i32", "i64"] {
        for op in ["negative", "absolute", "square", "sign", "invert"] {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = {op}(%0) : {t}[97]\nreturn %1\n"
                )),
                0,
            );
        }
        for op in [
            "add",
            "subtract",
            "multiply",
            "maximum",
            "minimum",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
        ] {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = input {{index=1}} : {t}[97]\n\
                     %2 = {op}(%0, %1) : {t}[97]\nreturn %2\n"
                )),
                0,
            );
        }
    }
    for t in ["bool", "i32", "i64", "f32", "f64"] {
        for op in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"] {
            check(
                &region(&format!(
                    "%0 = input {{index=0}} : {t}[97]\n%1 = input {{index=1}} : {t}[97]\n\
                     %2 = {op}(%0, %1) : bool[97]\nreturn %2\n"
                )),
                0,
            );
        }
        for to in ["bool", "i32", "i64", "f32", "f64"] {
            if to != t {
                check(
                    &region(&format!(
                        "%0 = input {{index=0}} : {t}[97]\n%1 = cast(%0) {{dtype={to}}} : {to}[97]\nreturn %1\n"
                    )),
                    0,
                );
            }
        }
        check(
            &region(&format!(
                "%0 = input {{index=0}} : bool[97]\n%1 = input {{index=1}} : {t}[97]\n\
                 %2 = input {{index=2}} : {t}[97]\n%3 = where(%0, %1, %2) : {t}[97]\nreturn %3\n"
            )),
            0,
        );
    }
    for op in ["logical_and", "logical_or", "logical_xor", "add", "multiply", "maximum", "minimum"]
    {
        check(
            &region(&format!(
                "%0 = input {{index=0}} : bool[97]\n%1 = input {{index=1}} : bool[97]\n\
                 %2 = {op}(%0, %1) : bool[97]\nreturn %2\n"
            )),
            0,
        );
    }
    check(
        &region("%0 = input {index=0} : bool[97]\n%1 = logical_not(%0) : bool[97]\nreturn %1\n"),
        0,
    );
}

#[test]
fn scalars_broadcast_and_several_outputs() {
    // A one-element input read at position 0, a reshape, two outputs, an output read later.
    let r = region(
        "%0 = input {index=0} : f64[4,8]\n%1 = input {index=1} : f64[1]\n\
         %2 = broadcast_to(%1) {shape=[4,8]} : f64[4,8]\n%3 = subtract(%0, %2) : f64[4,8]\n\
         %4 = exp(%3) : f64[4,8]\n%5 = greater(%4, %0) : bool[4,8]\n\
         %6 = const {value=2} : i64[]\n%7 = broadcast_to(%6) {shape=[4,8]} : i64[4,8]\n\
         %8 = cast(%5) {dtype=i64} : i64[4,8]\n%9 = multiply(%8, %7) : i64[4,8]\n\
         return %4, %9\n",
    );
    let bc = Bytecode::of(&r).unwrap();
    assert!(bc.text().contains("load.f64 in1[0]"), "{}", bc.text());
    assert_eq!(bc.outputs.len(), 2);
    check(&r, 1);
}

#[test]
fn a_long_chain_reuses_its_registers() {
    let mut text = String::from("%0 = input {index=0} : f32[256]\n");
    for k in 0..64 {
        text += &format!(
            "%{c} = const {{value={k}.25}} : f32[]\n%{b} = broadcast_to(%{c}) {{shape=[256]}} : f32[256]\n\
             %{m} = multiply(%{p}, %{b}) : f32[256]\n",
            c = 3 * k + 1,
            b = 3 * k + 2,
            m = 3 * k + 3,
            p = if k == 0 { 0 } else { 3 * k },
        );
    }
    text += &format!("return %{}\n", 3 * 64);
    let r = region(&text);
    let bc = Bytecode::of(&r).unwrap();
    assert!(bc.registers <= 3, "{} registers\n{}", bc.registers, bc.text());
    check(&r, 0);
}

#[test]
fn what_the_interpreter_does_not_run() {
    let cases = [
        // A reduction.
        "%0 = input {index=0} : f32[4,8]\n%1 = sum(%0) {axes=[1], keepdims=false} : f32[4]\nreturn %1\n",
        // A dtype it has no type for.
        "%0 = input {index=0} : f16[8]\n%1 = negative(%0) : f16[8]\nreturn %1\n",
        // A view that moves elements.
        "%0 = input {index=0} : f32[4,8]\n%1 = permute(%0) {perm=[1,0]} : f32[8,4]\n%2 = exp(%1) : f32[8,4]\nreturn %2\n",
        // A broadcast of a row.
        "%0 = input {index=0} : f32[4,8]\n%1 = input {index=1} : f32[8]\n\
         %2 = broadcast_to(%1) {shape=[4,8]} : f32[4,8]\n%3 = add(%0, %2) : f32[4,8]\nreturn %3\n",
        // An op it has no instruction for.
        "%0 = input {index=0} : f32[8]\n%1 = input {index=1} : f32[8]\n%2 = power(%0, %1) : f32[8]\nreturn %2\n",
    ];
    for text in cases {
        let r = region(text);
        assert!(Bytecode::of(&r).is_err(), "interpreted:\n{text}");
    }
}

//! Math functions without libdevice (`MathLib::Polynomial`, GPU kernels on machines where
//! libdevice is missing), measured where they are compiled: on the host. The approximations are
//! target-independent MLIR and f64 arithmetic, so the GPU computes the same values but for LLVM's
//! FMA contraction on NVPTX (a few last-bit differences in the float32 polynomials).

use kiln::ir::{DType, OpKind};
use kiln::{Array, HostArray};
use kiln_compiler::codegen::{self, MathLib, Tier};
use kiln_compiler::fusion::partition;
use kiln_compiler::schedule::schedule;
use kiln_compiler::CompileError;
use kiln_exec::ExecError;

use crate::codegen::{table_inputs, TABLE_FUNCS};
use crate::ulps::{float_values, polynomial_ulps, ulp_distance};

/// sin, cos and tan are NaN from this magnitude on (`codegen::polynomial`).
const TRIG_LIMIT: f64 = 281474976710656.0; // 2^48

/// `outs` run with every region compiled for the host with the polynomial math functions, and
/// by the reference evaluator.
fn run_polynomial(outs: &[&Array]) -> Result<(Vec<HostArray>, Vec<HostArray>), ExecError> {
    let lowered = kiln::lower(outs);
    let g = lowered.graph;
    let p = partition(&g);
    let sched = schedule(&g, &p.regions);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&g, &inputs).unwrap();
    let got = kiln_exec::cpu::run_steps(&sched, &p.regions, &inputs, |_, region, refs| {
        let compiled = crate::support::host_compile(
            codegen::lower(region, &codegen::LowerOptions::host().with_math(MathLib::Polynomial))?,
            Tier::Optimized,
        )?;
        kiln_exec::cpu::run_compiled(&compiled, refs)
    })?;
    Ok((got, reference))
}

/// The accuracy table of the polynomial math functions (`compiler/src/codegen/mod.rs`,
/// "Accuracy", column "GPU without libdevice"): each function's largest distance from the
/// reference evaluator, in ulps of the reference's value, over the host table's samples and
/// domains, for float16 and bfloat16 (unary: every value; sin, cos and tan below 2^48) and
/// float32; checked against
/// `ulps::polynomial_ulps`. The markdown table goes to stderr:
/// `cargo test --release --test main polynomial::polynomial_ulp_table -- --nocapture`.
#[test]
fn polynomial_ulp_table() {
    const DTYPES: [DType; 3] = [DType::Float16, DType::BFloat16, DType::Float32];
    let mut over = Vec::new();
    let mut table = String::from("| function | float16 | bfloat16 | float32 | bound (16/bf16, 32) |\n|---|---|---|---|---|\n");
    for (k, f) in TABLE_FUNCS.iter().enumerate() {
        let op = OpKind::from_name(f.name).expect("an IR op name");
        let mut row = format!("| `{}` |", f.name);
        for (j, dt) in DTYPES.into_iter().enumerate() {
            let args = table_inputs(f, dt, 1 << 16, 1000 + 10 * k as u64 + j as u64);
            let y = (f.apply)(&args);
            let (got, want) =
                run_polynomial(&[&y]).unwrap_or_else(|e| panic!("{} {dt}: {e}", f.name));
            let (gv, format) = float_values(&got[0]).expect("a float result");
            let (wv, _) = float_values(&want[0]).expect("a float result");
            let x0 = float_values(&args[0].try_to_host().unwrap()).unwrap().0;
            let (mut worst, mut at) = (0.0f64, 0);
            for (i, (&g, &w)) in gv.iter().zip(&wv).enumerate() {
                // NaN by design (`polynomial_special_values`): only bfloat16 reaches it.
                if matches!(op, OpKind::Sin | OpKind::Cos | OpKind::Tan)
                    && x0[i].abs() >= TRIG_LIMIT
                {
                    continue;
                }
                let d = ulp_distance(g, w, format);
                if d > worst {
                    (worst, at) = (d, i);
                }
            }
            let bound = polynomial_ulps(op, dt) as f64;
            if worst > bound {
                let x: Vec<String> = args
                    .iter()
                    .map(|a| {
                        format!("{:e}", float_values(&a.try_to_host().unwrap()).unwrap().0[at])
                    })
                    .collect();
                let (name, x, g, w) = (f.name, x.join(", "), gv[at], wv[at]);
                over.push(format!(
                    "{name} {dt}: {worst} ulps > {bound} at ({x}): {g:e}, reference {w:e}"
                ));
            }
            row += &format!(" {worst} |");
        }
        row += &format!(
            " {}, {} |\n",
            polynomial_ulps(op, DType::Float16),
            polynomial_ulps(op, DType::Float32)
        );
        table += &row;
    }
    eprintln!("{table}");
    assert!(over.is_empty(), "beyond the bounds of ulps::polynomial_ulps:\n{}", over.join("\n"));
}

/// Float64 math functions have no polynomial approximation: a typed error naming the op and
/// libdevice, never a silently inaccurate kernel. Float64 ops with an instruction compile.
#[test]
fn polynomial_float64_is_unsupported() {
    let x = Array::from_vec(vec![0.5f64, 1.5, 2.5], &[3]);
    let cases: Vec<(&str, Array)> = vec![
        ("exp", x.exp()),
        ("sin", x.sin()),
        ("power", x.power(&x)),
        ("arctan2", x.arctan2(&x)),
        ("logaddexp", x.logaddexp(&x)),
    ];
    for (name, y) in &cases {
        match run_polynomial(&[y]) {
            Err(ExecError::Compile(CompileError::Unsupported { op, reason, .. })) => {
                assert_eq!(op, *name);
                assert!(reason.contains("f64") && reason.contains("libdevice"), "{name}: {reason}");
            }
            other => panic!("{name}: expected Unsupported, got {:?}", other.map(|_| ())),
        }
    }
    let (got, want) = run_polynomial(&[&(x.sqrt() + x.floor() * x.abs())]).unwrap();
    assert_eq!(got[0].as_slice::<f64>().unwrap(), want[0].as_slice::<f64>().unwrap());
}

/// Special values of the f64 expansions, which the samples of the table rarely reach: they
/// must be the evaluator's exactly (C's `pow` and `hypot` rules, NaN and infinities, the signed
/// zeros of the odd functions). sin/cos/tan of |x| ≥ 2^48 are NaN (see `codegen::polynomial`).
#[test]
fn polynomial_special_values() {
    let v: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-30,
        -1e-30,
        1e30,
        -1e30,
        f32::MIN_POSITIVE,
        1e-45,
        88.0,
        -104.0,
        127.5,
        -149.5,
    ];
    let n = v.len();
    let xs: Vec<f32> = (0..n * n).map(|i| v[i / n]).collect();
    let ys: Vec<f32> = (0..n * n).map(|i| v[i % n]).collect();
    let x = Array::from_vec(xs, &[n * n]);
    let y = Array::from_vec(ys, &[n * n]);
    let outs = [
        x.power(&y),
        x.hypot(&y),
        x.logaddexp(&y),
        x.exp2(),
        x.log10(),
        x.sinh(),
        x.cosh(),
        x.tanh(),
        x.arcsinh(),
        x.arccosh(),
        x.arctanh(),
        x.sin(),
        x.cos(),
        x.tan(),
    ];
    let refs: Vec<&Array> = outs.iter().collect();
    let (got, want) = run_polynomial(&refs).unwrap();
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        let (gv, _) = float_values(g).unwrap();
        let (wv, _) = float_values(w).unwrap();
        for (i, (&a, &b)) in gv.iter().zip(&wv).enumerate() {
            if k >= 11 && f64::from(v[i / n].abs()) >= TRIG_LIMIT {
                continue; // NaN by design, checked below
            }
            let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            let close = ulp_distance(a, b, (24, -126)) <= 1.0 && a.is_finite() && a != 0.0;
            assert!(
                same || close,
                "output {k} at ({}, {}): {a:e}, reference {b:e}",
                v[i / n],
                v[i % n]
            );
        }
    }
    let big = Array::from_vec(vec![3e14f32, -1e20, f32::MAX], &[3]);
    let (got, _) = run_polynomial(&[&big.sin(), &big.cos(), &big.tan()]).unwrap();
    for g in &got {
        assert!(
            g.as_slice::<f32>().unwrap().iter().all(|v| v.is_nan()),
            "{:?}",
            g.as_slice::<f32>()
        );
    }
}

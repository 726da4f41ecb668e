//! The interpreter in Rust: the CUDA kernel's machine, instruction by instruction, for tests
//! of the translation against the evaluator (the kernel itself is tested against the same
//! evaluator on a GPU).

use kiln_ir::host::Data;
use kiln_ir::HostArray;

use super::{decode, Bytecode, Family, Ty, MAX_REGISTERS};

fn f32_of(r: u64) -> f32 {
    f32::from_bits(r as u32)
}
fn f64_of(r: u64) -> f64 {
    f64::from_bits(r)
}
fn i32_of(r: u64) -> i32 {
    r as u32 as i32
}
fn i64_of(r: u64) -> i64 {
    r as i64
}
fn of_f32(x: f32) -> u64 {
    u64::from(x.to_bits())
}
fn of_i32(x: i32) -> u64 {
    u64::from(x as u32)
}

/// `x` as a float of type `ty`, in f64 (exact).
fn as_f64(ty: Ty, r: u64) -> f64 {
    match ty {
        Ty::Bool => r as f64,
        Ty::I32 => f64::from(i32_of(r)),
        Ty::I64 => i64_of(r) as f64,
        Ty::F32 => f64::from(f32_of(r)),
        Ty::F64 => f64_of(r),
    }
}

fn cast(from: Ty, to: Ty, r: u64) -> u64 {
    match (from, to) {
        (_, Ty::Bool) => u64::from(match from {
            Ty::F32 => f32_of(r) != 0.0,
            Ty::F64 => f64_of(r) != 0.0,
            Ty::I32 => i32_of(r) != 0,
            _ => r != 0,
        }),
        (Ty::F32 | Ty::F64, Ty::I32) => {
            let t = as_f64(from, r).trunc();
            of_i32(if (-2147483648.0..=2147483647.0).contains(&t) { t as i32 } else { i32::MIN })
        }
        (Ty::F32 | Ty::F64, Ty::I64) => {
            let t = as_f64(from, r).trunc();
            let inside = (-9223372036854775808.0..9223372036854775808.0).contains(&t);
            (if inside { t as i64 } else { i64::MIN }) as u64
        }
        (Ty::I64, Ty::I32) => of_i32(i64_of(r) as i32),
        (Ty::Bool | Ty::I32, Ty::I32) => of_i32(i32_of(r)),
        (Ty::Bool, Ty::I64) => r,
        (Ty::I32, Ty::I64) => i64::from(i32_of(r)) as u64,
        (Ty::I64, Ty::I64) => r,
        (Ty::I64, Ty::F32) => of_f32(i64_of(r) as f32),
        (_, Ty::F32) => of_f32(as_f64(from, r) as f32),
        (Ty::I64, Ty::F64) => (i64_of(r) as f64).to_bits(),
        (_, Ty::F64) => as_f64(from, r).to_bits(),
    }
}

/// A float unary op in type `T`.
macro_rules! float_unary {
    ($f:expr, $x:expr) => {{
        use Family as F;
        let x = $x;
        match $f {
            F::Neg => -x,
            F::Abs => x.abs(),
            F::Sqrt => x.sqrt(),
            F::Square => x * x,
            F::Recip => 1.0 / x,
            F::Exp => x.exp(),
            F::Exp2 => x.exp2(),
            F::Expm1 => x.exp_m1(),
            F::Log => x.ln(),
            F::Log2 => x.log2(),
            F::Log10 => x.log10(),
            F::Log1p => x.ln_1p(),
            F::Sin => x.sin(),
            F::Cos => x.cos(),
            F::Tan => x.tan(),
            F::Asin => x.asin(),
            F::Acos => x.acos(),
            F::Atan => x.atan(),
            F::Sinh => x.sinh(),
            F::Cosh => x.cosh(),
            F::Tanh => x.tanh(),
            F::Asinh => x.asinh(),
            F::Acosh => x.acosh(),
            F::Atanh => x.atanh(),
            F::Floor => x.floor(),
            F::Ceil => x.ceil(),
            F::Trunc => x.trunc(),
            F::Rint => x.round_ties_even(),
            F::Cbrt => x.cbrt(),
            F::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else if x == 0.0 {
                    0.0
                } else {
                    x
                }
            }
            f => unreachable!("{f:?} is not a float unary op"),
        }
    }};
}

/// A float binary op giving a float.
macro_rules! float_binary {
    ($f:expr, $x:expr, $y:expr) => {{
        use Family as F;
        let (x, y) = ($x, $y);
        match $f {
            F::Add => x + y,
            F::Sub => x - y,
            F::Mul => x * y,
            F::Div => x / y,
            F::Max => {
                if x.is_nan() || x > y {
                    x
                } else {
                    y
                }
            }
            F::Min => {
                if x.is_nan() || x < y {
                    x
                } else {
                    y
                }
            }
            F::Fmax => {
                if y.is_nan() || x >= y {
                    x
                } else {
                    y
                }
            }
            F::Fmin => {
                if y.is_nan() || x <= y {
                    x
                } else {
                    y
                }
            }
            F::CopySign => x.copysign(y),
            F::Atan2 => x.atan2(y),
            F::Hypot => x.hypot(y),
            f => unreachable!("{f:?} is not a float binary op"),
        }
    }};
}

/// A comparison.
macro_rules! compare {
    ($f:expr, $x:expr, $y:expr) => {{
        use Family as F;
        let (x, y) = ($x, $y);
        u64::from(match $f {
            F::Eq => x == y,
            F::Ne => x != y,
            F::Lt => x < y,
            F::Le => x <= y,
            F::Gt => x > y,
            F::Ge => x >= y,
            f => unreachable!("{f:?} is not a comparison"),
        })
    }};
}

/// An integer op (wrapping) of `T`.
macro_rules! int_op {
    ($f:expr, $x:expr, $y:expr) => {{
        use Family as F;
        let (x, y) = ($x, $y);
        match $f {
            F::Neg => x.wrapping_neg(),
            F::Abs => x.wrapping_abs(),
            F::Square => x.wrapping_mul(x),
            F::Sign => x.signum(),
            F::Not => !x,
            F::Add => x.wrapping_add(y),
            F::Sub => x.wrapping_sub(y),
            F::Mul => x.wrapping_mul(y),
            F::Max => x.max(y),
            F::Min => x.min(y),
            F::And => x & y,
            F::Or => x | y,
            F::Xor => x ^ y,
            f => unreachable!("{f:?} is not an integer op"),
        }
    }};
}

fn is_comparison(f: Family) -> bool {
    matches!(f, Family::Eq | Family::Ne | Family::Lt | Family::Le | Family::Gt | Family::Ge)
}

fn load(a: &HostArray, i: usize) -> u64 {
    match a.data() {
        Data::Bool(v) => u64::from(v[i]),
        Data::Int32(v) => of_i32(v[i]),
        Data::Int64(v) => v[i] as u64,
        Data::Float32(v) => of_f32(v[i]),
        Data::Float64(v) => v[i].to_bits(),
        d => unreachable!("the translator takes no {:?} input", d.dtype()),
    }
}

fn store(d: &mut Data, i: usize, r: u64) {
    match d {
        Data::Bool(v) => v[i] = r != 0,
        Data::Int32(v) => v[i] = i32_of(r),
        Data::Int64(v) => v[i] = i64_of(r),
        Data::Float32(v) => v[i] = f32_of(r),
        Data::Float64(v) => v[i] = f64_of(r),
        d => unreachable!("the translator writes no {:?} output", d.dtype()),
    }
}

impl Bytecode {
    /// Runs the program on the host over `inputs` (C-contiguous, the program's dtypes and
    /// shapes): its outputs, the prologue run once. Panics on inputs of other dtypes or sizes.
    pub fn run_host(&self, inputs: &[&HostArray]) -> Vec<HostArray> {
        let mut outs: Vec<Data> =
            self.outputs.iter().map(|(dt, _)| Data::zeros(*dt, self.elements)).collect();
        let mut r = [0u64; MAX_REGISTERS];
        // The prologue once (as the GPU's interpreter runs it once a block), with element 0:
        // its values are the same at every element.
        for e in 0..self.elements {
            let mut pc = if e == 0 { 0 } else { self.prologue };
            while pc < self.code.len() {
                let i = decode(self.code[pc]);
                pc += 1;
                let (a, b) = (r[i.a], r[i.b]);
                let v = match (i.family, i.ty) {
                    (Family::Load, _) => load(inputs[i.a], if i.b == 1 { 0 } else { e }),
                    (Family::Store, _) => {
                        store(&mut outs[i.dst], e, a);
                        continue;
                    }
                    (Family::Const, _) => {
                        pc += 1;
                        self.code[pc - 1]
                    }
                    (Family::Cast, from) => cast(from, Ty::from_u8(i.c as u8), a),
                    (Family::Where, _) => {
                        if a != 0 {
                            b
                        } else {
                            r[i.c]
                        }
                    }
                    (Family::IsNan | Family::IsInf | Family::IsFinite, t) => {
                        let x = as_f64(t, a);
                        u64::from(match i.family {
                            Family::IsNan => x.is_nan(),
                            Family::IsInf => x.is_infinite(),
                            _ => x.is_finite(),
                        })
                    }
                    (f, Ty::Bool) if is_comparison(f) => compare!(f, a, b),
                    (f, Ty::I32) if is_comparison(f) => compare!(f, i32_of(a), i32_of(b)),
                    (f, Ty::I64) if is_comparison(f) => compare!(f, i64_of(a), i64_of(b)),
                    (f, Ty::F32) if is_comparison(f) => compare!(f, f32_of(a), f32_of(b)),
                    (f, Ty::F64) if is_comparison(f) => compare!(f, f64_of(a), f64_of(b)),
                    (Family::Not, Ty::Bool) => u64::from(a == 0),
                    (f, Ty::Bool) => match f {
                        Family::And => a & b,
                        Family::Or => a | b,
                        Family::Xor => a ^ b,
                        f => unreachable!("{f:?} on bools"),
                    },
                    (f, Ty::I32) => of_i32(int_op!(f, i32_of(a), i32_of(b))),
                    (f, Ty::I64) => int_op!(f, i64_of(a), i64_of(b)) as u64,
                    (f, Ty::F32) if (f as u8) < Family::Add as u8 => {
                        of_f32(float_unary!(f, f32_of(a)))
                    }
                    (f, Ty::F64) if (f as u8) < Family::Add as u8 => {
                        float_unary!(f, f64_of(a)).to_bits()
                    }
                    (f, Ty::F32) => of_f32(float_binary!(f, f32_of(a), f32_of(b))),
                    (f, Ty::F64) => float_binary!(f, f64_of(a), f64_of(b)).to_bits(),
                };
                r[i.dst] = v;
            }
        }
        outs.into_iter()
            .zip(&self.outputs)
            .map(|(d, (_, shape))| HostArray::new(shape, d).expect("the program's output shape"))
            .collect()
    }
}

//! Elementwise regions as bytecode, for the GPU's interpreter (`kiln_interp`, CUDA C++ in
//! `kiln-exec`, carried compiled): the first calls of a new kernel run it while its code
//! compiles on another thread, so a new expression's first call pays no compile.
//!
//! A region qualifies when it is elementwise and every value of its body is either as large as
//! its outputs (read at each element's flat position: inputs are C-contiguous) or a single
//! element (read at position 0: a scalar broadcast); when its dtypes are `bool`, `int32`,
//! `int64`, `float32` and `float64`; and when its ops are among [`Family`]'s. Anything else is
//! [`Unsupported`] and compiles as before.
//!
//! # The code
//!
//! A program is a list of 64-bit words run once per element, in order, over a file of
//! [`MAX_REGISTERS`] 64-bit registers. Each instruction is one word (a constant two): byte 0
//! its [`Family`], byte 1 the [`Ty`] of its operands, byte 2 the register it writes (`dst`),
//! bytes 3-5 its operands' registers `a`, `b`, `c`:
//!
//! - `load dst, a=input, b=1 if read at position 0`; `store a=register, dst=output`;
//! - `const dst` and the next word: the value's bits (float32 in the low 32 bits, int32 as
//!   its 32 bits, bool 0 or 1);
//! - `cast dst, a`, `c` the target [`Ty`]; `where dst, a=cond, b=x, c=y`;
//! - unary `dst = f(a)` and binary `dst = f(a, b)` ops of the operands' type; comparisons and
//!   `isnan`/`isinf`/`isfinite` write a bool.
//!
//! Each op rounds once as the evaluator's NumPy semantics say (maximum and minimum propagate
//! NaN, integers wrap, a float cast to an integer out of its range or NaN gives its minimum); the math functions are
//! libdevice's, as in compiled code. Compiled code may contract a multiply and an add into one
//! FMA, so an interpreted result can differ from the compiled one in its last bit there.
//! [`Bytecode::run_host`] is the same machine in Rust, for tests.

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Literal, OpKind};

use crate::codegen::Unsupported;
use crate::fusion::{Region, RegionKind};

mod host;
pub mod samples;

/// Registers of the interpreter's file.
pub const MAX_REGISTERS: usize = 32;
/// Words of code a program may hold (the interpreter keeps each in shared memory twice, as
/// read and decoded: 16 bytes a word).
pub const MAX_CODE: usize = 384;

/// Why a program does not fit the register file.
const NO_REGISTERS: &str = "more live values than registers";
/// Input buffers a program may read.
pub const MAX_INPUTS: usize = 12;
/// Output buffers a program may write.
pub const MAX_OUTPUTS: usize = 4;

/// A register's type (byte 1 of an instruction; a cast's target in byte 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Ty {
    Bool = 0,
    I32 = 1,
    I64 = 2,
    F32 = 3,
    F64 = 4,
}

impl Ty {
    /// The type holding `dtype`, if the interpreter has one.
    pub fn of(dtype: DType) -> Option<Ty> {
        Some(match dtype {
            DType::Bool => Ty::Bool,
            DType::Int32 => Ty::I32,
            DType::Int64 => Ty::I64,
            DType::Float32 => Ty::F32,
            DType::Float64 => Ty::F64,
            _ => return None,
        })
    }

    fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    fn is_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::I64)
    }

    fn from_u8(b: u8) -> Ty {
        match b {
            0 => Ty::Bool,
            1 => Ty::I32,
            2 => Ty::I64,
            3 => Ty::F32,
            _ => Ty::F64,
        }
    }
}

macro_rules! families {
    ($($name:ident = $code:expr, $doc:expr;)*) => {
        /// What an instruction does (byte 0); the numbers are the CUDA source's `OP_*`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Family { $(#[doc = $doc] $name = $code,)* }

        impl Family {
            fn from_u8(b: u8) -> Option<Family> {
                match b { $($code => Some(Family::$name),)* _ => None }
            }

            /// Every family, for the check against the CUDA source.
            pub const ALL: &'static [(Family, &'static str)] =
                &[$((Family::$name, stringify!($name)),)*];
        }
    };
}

families! {
    Load = 1, "a buffer's element";
    Store = 2, "a register to an output";
    Const = 3, "the next word's bits";
    Cast = 4, "conversion to the type in byte 5";
    Where = 5, "b where a else c";
    Neg = 10, "-a (integers wrap)";
    Abs = 11, "|a| (integers wrap)";
    Sqrt = 12, "square root";
    Square = 13, "a * a";
    Recip = 14, "1 / a (floats)";
    Exp = 15, "e^a";
    Exp2 = 16, "2^a";
    Expm1 = 17, "e^a - 1";
    Log = 18, "ln a";
    Log2 = 19, "log2 a";
    Log10 = 20, "log10 a";
    Log1p = 21, "ln(1 + a)";
    Sin = 22, "sine";
    Cos = 23, "cosine";
    Tan = 24, "tangent";
    Asin = 25, "arcsine";
    Acos = 26, "arccosine";
    Atan = 27, "arctangent";
    Sinh = 28, "hyperbolic sine";
    Cosh = 29, "hyperbolic cosine";
    Tanh = 30, "hyperbolic tangent";
    Asinh = 31, "inverse hyperbolic sine";
    Acosh = 32, "inverse hyperbolic cosine";
    Atanh = 33, "inverse hyperbolic tangent";
    Floor = 34, "floor";
    Ceil = 35, "ceiling";
    Trunc = 36, "toward zero";
    Rint = 37, "to nearest, ties to even";
    Sign = 38, "-1, 0 or 1 (NaN stays)";
    Cbrt = 40, "cube root";
    IsNan = 41, "a is NaN (a bool)";
    IsInf = 42, "a is ±inf (a bool)";
    IsFinite = 43, "a is finite (a bool)";
    Not = 44, "logical not of a bool, bitwise not of an integer";
    Add = 60, "a + b";
    Sub = 61, "a - b";
    Mul = 62, "a * b";
    Div = 63, "a / b (floats)";
    Max = 64, "maximum, NaN propagating";
    Min = 65, "minimum, NaN propagating";
    Fmax = 66, "maximum, NaN ignored";
    Fmin = 67, "minimum, NaN ignored";
    CopySign = 68, "|a| with b's sign";
    Atan2 = 69, "arctan(a / b) by quadrant";
    Hypot = 70, "sqrt(a² + b²)";
    And = 71, "a & b (logical and on bools)";
    Or = 72, "a | b (logical or on bools)";
    Xor = 73, "a ^ b (logical xor on bools)";
    Eq = 74, "a == b (a bool)";
    Ne = 75, "a != b (a bool)";
    Lt = 76, "a < b (a bool)";
    Le = 77, "a <= b (a bool)";
    Gt = 78, "a > b (a bool)";
    Ge = 79, "a >= b (a bool)";
}

/// An elementwise region as a program for the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub struct Bytecode {
    /// The instructions (see the module's docs).
    pub code: Vec<u64>,
    /// Elements of each output: the instructions run once for each.
    pub elements: usize,
    /// dtype and shape of each input buffer, by the body's `input {index=k}`.
    pub inputs: Vec<(DType, Vec<usize>)>,
    /// dtype and shape of each output buffer.
    pub outputs: Vec<(DType, Vec<usize>)>,
    /// Registers the program uses.
    pub registers: usize,
    /// Words at the start of `code` whose values are the same at every element (constants,
    /// scalars read at position 0, ops of those only): a machine may run them once for many
    /// elements, their registers are not written again.
    pub prologue: usize,
}

fn word(f: Family, ty: Ty, dst: usize, a: usize, b: usize, c: usize) -> u64 {
    u64::from_le_bytes([f as u8, ty as u8, dst as u8, a as u8, b as u8, c as u8, 0, 0])
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug)]
struct Insn {
    family: Family,
    ty: Ty,
    dst: usize,
    a: usize,
    b: usize,
    c: usize,
}

fn decode(w: u64) -> Insn {
    let b = w.to_le_bytes();
    Insn {
        family: Family::from_u8(b[0]).expect("a family the translator writes"),
        ty: Ty::from_u8(b[1]),
        dst: b[2] as usize,
        a: b[3] as usize,
        b: b[4] as usize,
        c: b[5] as usize,
    }
}

fn unsupported(op: Option<&'static str>, reason: impl Into<String>) -> Unsupported {
    Unsupported { op, reason: reason.into() }
}

/// The family computing an elementwise `op` over operands of type `ty`, if there is one.
fn family(op: OpKind, ty: Ty) -> Option<Family> {
    use Family as F;
    use OpKind::*;
    let float = ty.is_float();
    let int = ty.is_int();
    let boolean = ty == Ty::Bool;
    Some(match op {
        Neg | Abs | Square | Sign if boolean => return None,
        Neg => F::Neg,
        Abs => F::Abs,
        Square => F::Square,
        Sign => F::Sign,
        Sqrt if float => F::Sqrt,
        Reciprocal if float => F::Recip,
        Exp if float => F::Exp,
        Exp2 if float => F::Exp2,
        Expm1 if float => F::Expm1,
        Log if float => F::Log,
        Log2 if float => F::Log2,
        Log10 if float => F::Log10,
        Log1p if float => F::Log1p,
        Sin if float => F::Sin,
        Cos if float => F::Cos,
        Tan if float => F::Tan,
        Arcsin if float => F::Asin,
        Arccos if float => F::Acos,
        Arctan if float => F::Atan,
        Sinh if float => F::Sinh,
        Cosh if float => F::Cosh,
        Tanh if float => F::Tanh,
        Arcsinh if float => F::Asinh,
        Arccosh if float => F::Acosh,
        Arctanh if float => F::Atanh,
        Floor if float => F::Floor,
        Ceil if float => F::Ceil,
        Trunc if float => F::Trunc,
        Rint if float => F::Rint,
        Cbrt if float => F::Cbrt,
        IsNan if float => F::IsNan,
        IsInf if float => F::IsInf,
        IsFinite if float => F::IsFinite,
        LogicalNot if boolean => F::Not,
        Invert if int || boolean => F::Not,
        Add if boolean => F::Or,
        Mul if boolean => F::And,
        Maximum if boolean => F::Or,
        Minimum if boolean => F::And,
        Add => F::Add,
        Sub if !boolean => F::Sub,
        Mul => F::Mul,
        Div if float => F::Div,
        Maximum => F::Max,
        Minimum => F::Min,
        Fmax if float => F::Fmax,
        Fmin if float => F::Fmin,
        CopySign if float => F::CopySign,
        Arctan2 if float => F::Atan2,
        Hypot if float => F::Hypot,
        LogicalAnd if boolean => F::And,
        LogicalOr if boolean => F::Or,
        LogicalXor if boolean => F::Xor,
        BitwiseAnd if !float => F::And,
        BitwiseOr if !float => F::Or,
        BitwiseXor if !float => F::Xor,
        Eq => F::Eq,
        Ne => F::Ne,
        Lt => F::Lt,
        Le => F::Le,
        Gt => F::Gt,
        Ge => F::Ge,
        // catch-all: the interpreter has instructions for the ops above (on the types their
        // guards name); any other op, or type, is compiled as before.
        _ => return None,
    })
}

/// A literal's bits in a register of type `ty`.
fn literal_bits(value: Literal, ty: Ty) -> Option<u64> {
    Some(match (value, ty) {
        (Literal::Bool(b), Ty::Bool) => u64::from(b),
        (Literal::Int(i), Ty::I32) => u64::from(i as i32 as u32),
        (Literal::Int(i), Ty::I64) => i as u64,
        (Literal::Float(bits), Ty::F32) => u64::from((f64::from_bits(bits) as f32).to_bits()),
        (Literal::Float(bits), Ty::F64) => bits,
        _ => return None,
    })
}

impl Bytecode {
    /// The program of `region`, or why the interpreter cannot run it: the values that are the
    /// same at every element first, as its [`prologue`](Bytecode::prologue), where their
    /// registers, live to the end, leave enough for the rest.
    pub fn of(region: &Region) -> Result<Bytecode, Unsupported> {
        Bytecode::build(region, true).or_else(|e| {
            if e.reason == NO_REGISTERS {
                Bytecode::build(region, false)
            } else {
                Err(e)
            }
        })
    }

    fn build(region: &Region, hoist: bool) -> Result<Bytecode, Unsupported> {
        if region.kind != RegionKind::Elementwise {
            return Err(unsupported(None, format!("a {} region", region.kind.name())));
        }
        let body = &region.body;
        let outs = body.outputs();
        let elements = outs.iter().map(|&o| numel(&body.node(o).shape)).max().unwrap_or(0);
        let nodes = body.nodes();
        // Each node's value: its own, or (views and labels) its operand's.
        let mut value: Vec<usize> = (0..nodes.len()).collect();
        // Whether a node is read at position 0 (a single element beside larger outputs).
        let mut at_zero = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let size = numel(&n.shape);
            if Ty::of(n.dtype).is_none() {
                return Err(unsupported(Some(n.op.name()), format!("dtype {}", n.dtype.name())));
            }
            if size != elements && size != 1 {
                return Err(unsupported(Some(n.op.name()), "a value of another size"));
            }
            at_zero[i] = size == 1 && elements != 1;
            use OpKind::*;
            // Views that keep each element's flat position, and labels: their operand's value.
            if matches!(n.op, Label | Reshape | ExpandDims | Squeeze | BroadcastTo) {
                let src = n.inputs[0].index();
                if at_zero[src] != at_zero[i] && !at_zero[src] {
                    return Err(unsupported(Some(n.op.name()), "a view of another size"));
                }
                value[i] = value[src];
            }
        }
        for &o in outs {
            if numel(&body.node(o).shape) != elements {
                return Err(unsupported(None, "outputs of different sizes"));
            }
        }
        // The last instruction reading each value (outputs live to the end).
        let mut last_use = vec![0usize; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            for &x in &n.inputs {
                last_use[value[x.index()]] = i;
            }
        }
        for &o in outs {
            last_use[value[o.index()]] = usize::MAX;
        }
        // Values of one element beside larger outputs are the same at every element: with
        // `hoist`, computed first and kept to the end.
        let invariant = |i: usize| hoist && at_zero[i];
        for (i, l) in last_use.iter_mut().enumerate() {
            if invariant(i) {
                *l = usize::MAX;
            }
        }
        let mut code = Vec::new();
        let mut prologue = 0;
        let mut reg = vec![usize::MAX; nodes.len()];
        let mut free: Vec<usize> = (0..MAX_REGISTERS).rev().collect();
        let mut registers = 0;
        let mut inputs: Vec<Option<(DType, Vec<usize>)>> = Vec::new();
        let order = (0..nodes.len())
            .filter(|&i| invariant(i))
            .chain((0..nodes.len()).filter(|&i| !invariant(i)));
        for i in order {
            let n = &nodes[i];
            if value[i] != i {
                continue;
            }
            let ty = Ty::of(n.dtype).expect("checked above");
            let operand = |k: usize| reg[value[n.inputs[k].index()]];
            let operand_ty =
                |k: usize| Ty::of(nodes[n.inputs[k].index()].dtype).expect("checked above");
            // Registers whose value's last reader this is are free for the result.
            for &x in &n.inputs {
                let v = value[x.index()];
                if last_use[v] == i && reg[v] != usize::MAX && !free.contains(&reg[v]) {
                    free.push(reg[v]);
                }
            }
            let Some(r) = free.pop() else {
                return Err(unsupported(None, NO_REGISTERS));
            };
            let insn = match (n.op, &n.attrs) {
                (OpKind::Input, Attrs::Input { index }) => {
                    let k = *index as usize;
                    if k >= MAX_INPUTS {
                        return Err(unsupported(Some("input"), "too many inputs"));
                    }
                    if inputs.len() <= k {
                        inputs.resize(k + 1, None);
                    }
                    inputs[k] = Some((n.dtype, n.shape.to_vec()));
                    vec![word(Family::Load, ty, r, k, usize::from(at_zero[i]), 0)]
                }
                (OpKind::Const, Attrs::Const { value: lit }) => {
                    let Some(bits) = literal_bits(*lit, ty) else {
                        return Err(unsupported(Some("const"), "a literal of another kind"));
                    };
                    vec![word(Family::Const, ty, r, 0, 0, 0), bits]
                }
                (OpKind::Cast, Attrs::DType { dtype }) => {
                    let to = Ty::of(*dtype).expect("the node's dtype, checked");
                    vec![word(Family::Cast, operand_ty(0), r, operand(0), 0, to as usize)]
                }
                (OpKind::Where, _) => {
                    vec![word(Family::Where, ty, r, operand(0), operand(1), operand(2))]
                }
                (op, _) if op.info().class == kiln_ir::OpClass::Elementwise => {
                    let arity = n.inputs.len();
                    let Some(f) = family(op, operand_ty(0)) else {
                        return Err(unsupported(Some(op.name()), "no interpreter op"));
                    };
                    match arity {
                        1 => vec![word(f, operand_ty(0), r, operand(0), 0, 0)],
                        2 => vec![word(f, operand_ty(0), r, operand(0), operand(1), 0)],
                        _ => return Err(unsupported(Some(op.name()), "arity")),
                    }
                }
                // catch-all: reductions, gathers, scatters, scans, sorts, moving views, copies
                // and library ops have no instruction; their regions compile as before.
                (op, _) => return Err(unsupported(Some(op.name()), "no interpreter op")),
            };
            registers = registers.max(r + 1);
            reg[i] = r;
            code.extend(insn);
            if invariant(i) {
                prologue = code.len();
            }
            if last_use[i] == 0 {
                // Never read (outputs are read at the end): its register is free again.
                free.push(r);
            }
        }
        for (k, &o) in outs.iter().enumerate() {
            if k >= MAX_OUTPUTS {
                return Err(unsupported(None, "too many outputs"));
            }
            let n = body.node(o);
            let ty = Ty::of(n.dtype).expect("checked above");
            code.push(word(Family::Store, ty, k, reg[value[o.index()]], 0, 0));
        }
        if code.len() > MAX_CODE {
            return Err(unsupported(None, "a program longer than the interpreter's"));
        }
        let inputs = inputs
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| unsupported(Some("input"), "an input the body does not read"))?;
        let outputs =
            outs.iter().map(|&o| (body.node(o).dtype, body.node(o).shape.to_vec())).collect();
        Ok(Bytecode { code, elements, inputs, outputs, registers, prologue })
    }

    /// The program as text, one instruction a line (`r3 = cos.f32 r1`), for dumps and tests.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut words = self.code.iter();
        let ty = |t: Ty| format!("{t:?}").to_lowercase();
        while let Some(&w) = words.next() {
            if self.prologue > 0 && self.code.len() - words.len() - 1 == self.prologue {
                out += "-- each element\n";
            }
            let i = decode(w);
            let t = ty(i.ty);
            let line = match i.family {
                Family::Load => {
                    format!("r{} = load.{t} in{}{}", i.dst, i.a, if i.b == 1 { "[0]" } else { "" })
                }
                Family::Store => format!("out{} = store.{t} r{}", i.dst, i.a),
                Family::Const => {
                    format!("r{} = const.{t} {:#x}", i.dst, words.next().copied().unwrap_or(0))
                }
                Family::Cast => {
                    format!("r{} = cast.{t}.{} r{}", i.dst, ty(Ty::from_u8(i.c as u8)), i.a)
                }
                Family::Where => format!("r{} = where.{t} r{}, r{}, r{}", i.dst, i.a, i.b, i.c),
                f if (f as u8) < Family::Add as u8 => {
                    format!("r{} = {}.{t} r{}", i.dst, format!("{f:?}").to_lowercase(), i.a)
                }
                f => format!(
                    "r{} = {}.{t} r{}, r{}",
                    i.dst,
                    format!("{f:?}").to_lowercase(),
                    i.a,
                    i.b
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests;

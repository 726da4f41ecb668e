//! The random programs of [`super`]: their strategies (inputs, steps, operands) and how a
//! program is built with kiln's public API.

use kiln::ir::DType;
use kiln::{Array, AxisArg, HostArray, Operand, SliceArg};
use proptest::prelude::*;

use super::{compare_host, MAX_ELEMENTS};

// ------------------------------------------------------------------------------------------------
// Programs
// ------------------------------------------------------------------------------------------------

pub(super) const DTYPES: [DType; 15] = DType::ALL;

/// One held input: its shape derived from the program's base shape (some leading axes dropped,
/// some extents made 1, so inputs broadcast together), its dtype and data.
#[derive(Clone, Debug)]
pub(super) struct InputSpec {
    pub(super) drop: u8,
    pub(super) ones: u8,
    pub(super) dtype: DType,
    pub(super) seed: u64,
    /// Mix special values in: NaN, ±inf, ±0, huge and tiny floats; integer extremes.
    pub(super) special: bool,
}

/// One step of a program: a new array from earlier ones (`a`, `b`, `c` pick among the arrays made
/// so far, counting back from the latest). A step whose op rejects its operands (a dtype without
/// a loop, shapes that do not broadcast) or whose result has more than [`MAX_ELEMENTS`] elements
/// is skipped.
#[derive(Clone, Debug)]
pub(super) enum Step {
    Unary {
        op: u8,
        a: u8,
    },
    Binary {
        op: u8,
        a: u8,
        b: u8,
    },
    /// `a op scalar` with a weak Rust scalar.
    ScalarRight {
        op: u8,
        a: u8,
        s: u8,
    },
    /// `scalar op a` with a rank-0 array (strong, its default dtype) on the left.
    ScalarLeft {
        op: u8,
        a: u8,
        s: u8,
    },
    Where {
        c: u8,
        a: u8,
        b: u8,
        scalar: Option<u8>,
    },
    Cast {
        a: u8,
        dtype: DType,
    },
    Reduce {
        op: u8,
        a: u8,
        axes: u8,
        keepdims: bool,
    },
    Permute {
        a: u8,
        seed: u8,
    },
    Slice {
        a: u8,
        dims: [u8; 3],
    },
    Reshape {
        a: u8,
        seed: u8,
    },
    ExpandDims {
        a: u8,
        pos: u8,
    },
    Squeeze {
        a: u8,
    },
    Flip {
        a: u8,
        mask: u8,
    },
    BroadcastTo {
        a: u8,
        seed: u8,
    },
    Join {
        stack: bool,
        a: u8,
        b: u8,
        axis: u8,
    },
    Contiguous {
        a: u8,
    },
    /// An involution or view applied twice (`-(-x)`, `~~x`, `not(not(x))`, `conj(conj(x))`,
    /// flip∘flip, permute∘permute, slice∘slice, expand_dims∘reshape), so the simplifier's
    /// rules for them fire often.
    Twice {
        op: u8,
        a: u8,
        seed: u8,
    },
    /// Materialise an array now (`eval`), so later steps read it as a held input; its value is
    /// checked against the reference then.
    Hold {
        a: u8,
    },
    /// `a.take(b as int64, axis)`: `axis` 0 flat, else along axis `axis - 1` (mod the rank).
    Gather {
        a: u8,
        b: u8,
        axis: u8,
    },
    /// `a.add_at/maximum_at/minimum_at/put(b as int64, c or a scalar)`, by `op`.
    Scatter {
        op: u8,
        a: u8,
        b: u8,
        c: u8,
    },
    /// `a.cumsum/cumprod/cummax/cummin(axis)` by `op`: `axis` 0 flat, else along axis
    /// `axis - 1` (mod the rank).
    Scan {
        op: u8,
        a: u8,
        axis: u8,
    },
    /// `sort` or `argsort` of a pool array along an axis or flattened.
    Sort {
        argsort: bool,
        a: u8,
        axis: u8,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Program {
    pub(super) base: Vec<usize>,
    pub(super) inputs: Vec<InputSpec>,
    pub(super) steps: Vec<Step>,
    /// Extra outputs besides the latest array (picked as the steps' operands are).
    pub(super) outputs: Vec<u8>,
}

pub(super) type Unary = fn(&Array) -> kiln::Result<Array>;
pub(super) type Binary = fn(&Array, Operand) -> kiln::Result<Array>;

pub(super) const UNARY: &[(&str, Unary)] = &[
    ("negative", |a| a.try_negative()),
    ("abs", |a| a.try_abs()),
    ("sign", |a| a.try_sign()),
    ("sqrt", |a| a.try_sqrt()),
    ("cbrt", |a| a.try_cbrt()),
    ("square", |a| a.try_square()),
    ("reciprocal", |a| a.try_reciprocal()),
    ("exp", |a| a.try_exp()),
    ("exp2", |a| a.try_exp2()),
    ("expm1", |a| a.try_expm1()),
    ("log", |a| a.try_log()),
    ("log2", |a| a.try_log2()),
    ("log1p", |a| a.try_log1p()),
    ("sin", |a| a.try_sin()),
    ("cos", |a| a.try_cos()),
    ("tan", |a| a.try_tan()),
    ("arcsin", |a| a.try_arcsin()),
    ("arctan", |a| a.try_arctan()),
    ("sinh", |a| a.try_sinh()),
    ("tanh", |a| a.try_tanh()),
    ("arcsinh", |a| a.try_arcsinh()),
    ("rint", |a| a.try_rint()),
    ("erf", |a| a.try_erf()),
    ("isnan", |a| a.try_isnan()),
    ("isinf", |a| a.try_isinf()),
    ("isfinite", |a| a.try_isfinite()),
    ("logical_not", |a| a.try_logical_not()),
    ("invert", |a| a.try_invert()),
    ("floor", |a| a.try_floor()),
    ("ceil", |a| a.try_ceil()),
    ("trunc", |a| a.try_trunc()),
    ("frexp_mantissa", |a| a.try_frexp().map(|(m, _)| m)),
    ("frexp_exponent", |a| a.try_frexp().map(|(_, e)| e)),
    ("real", |a| Ok(a.real())),
    ("imag", |a| Ok(a.imag())),
    ("conj", |a| Ok(a.conj())),
];

pub(super) const BINARY: &[(&str, Binary)] = &[
    ("add", |a, b| a.try_add(b)),
    ("subtract", |a, b| a.try_subtract(b)),
    ("multiply", |a, b| a.try_multiply(b)),
    ("divide", |a, b| a.try_divide(b)),
    ("floor_divide", |a, b| a.try_floor_divide(b)),
    ("remainder", |a, b| a.try_remainder(b)),
    ("power", |a, b| a.try_power(b)),
    ("maximum", |a, b| a.try_maximum(b)),
    ("minimum", |a, b| a.try_minimum(b)),
    ("fmax", |a, b| a.try_fmax(b)),
    ("fmin", |a, b| a.try_fmin(b)),
    ("arctan2", |a, b| a.try_arctan2(b)),
    ("hypot", |a, b| a.try_hypot(b)),
    ("logaddexp", |a, b| a.try_logaddexp(b)),
    ("copysign", |a, b| a.try_copysign(b)),
    ("equal", |a, b| a.try_equal(b)),
    ("not_equal", |a, b| a.try_not_equal(b)),
    ("less", |a, b| a.try_less(b)),
    ("less_equal", |a, b| a.try_less_equal(b)),
    ("greater", |a, b| a.try_greater(b)),
    ("greater_equal", |a, b| a.try_greater_equal(b)),
    ("logical_and", |a, b| a.try_logical_and(b)),
    ("logical_or", |a, b| a.try_logical_or(b)),
    ("logical_xor", |a, b| a.try_logical_xor(b)),
    ("bitwise_and", |a, b| a.try_bitwise_and(b)),
    ("bitwise_or", |a, b| a.try_bitwise_or(b)),
    ("bitwise_xor", |a, b| a.try_bitwise_xor(b)),
    ("left_shift", |a, b| a.try_left_shift(b)),
    ("right_shift", |a, b| a.try_right_shift(b)),
    ("fmod", |a, b| a.try_fmod(b)),
    ("logaddexp2", |a, b| a.try_logaddexp2(b)),
    ("ldexp", |a, b| a.try_ldexp(b)),
    ("nextafter", |a, b| a.try_nextafter(b)),
];

/// Scalars that exercise the simplifier's identities (`x*1`, `x+0`, `x+(-0.0)`, `x/1`, `x-0`)
/// and the special values.
pub(super) fn scalar(k: u8) -> Operand {
    match k % 16 {
        0 => 0i64.into(),
        1 => 1i64.into(),
        2 => 2i64.into(),
        3 => (-1i64).into(),
        4 => 7i64.into(),
        5 => 0.0f64.into(),
        6 => (-0.0f64).into(),
        7 => 1.0f64.into(),
        8 => 0.5f64.into(),
        9 => (-2.5f64).into(),
        10 => f64::NAN.into(),
        11 => f64::INFINITY.into(),
        12 => true.into(),
        13 => false.into(),
        14 => 3i64.into(),
        _ => 1e30f64.into(),
    }
}

pub(super) fn pick_dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        4 => Just(DType::Float32),
        3 => Just(DType::Float64),
        3 => Just(DType::Int32),
        2 => Just(DType::Int64),
        2 => Just(DType::Bool),
        4 => (0..DTYPES.len()).prop_map(|i| DTYPES[i]),
    ]
}

pub(super) fn input_spec() -> impl Strategy<Value = InputSpec> {
    (any::<u8>(), any::<u8>(), pick_dtype(), any::<u64>(), prop::bool::weighted(0.3)).prop_map(
        |(drop, ones, dtype, seed, special)| InputSpec { drop, ones, dtype, seed, special },
    )
}

pub(super) fn step() -> impl Strategy<Value = Step> {
    let u = || any::<u8>();
    prop_oneof![
        6 => (u(), u()).prop_map(|(op, a)| Step::Unary { op, a }),
        8 => (u(), u(), u()).prop_map(|(op, a, b)| Step::Binary { op, a, b }),
        5 => (u(), u(), u()).prop_map(|(op, a, s)| Step::ScalarRight { op, a, s }),
        1 => (u(), u(), u()).prop_map(|(op, a, s)| Step::ScalarLeft { op, a, s }),
        2 => (u(), u(), u(), prop::option::weighted(0.3, u())).prop_map(|(c, a, b, scalar)| Step::Where { c, a, b, scalar }),
        3 => (u(), pick_dtype()).prop_map(|(a, dtype)| Step::Cast { a, dtype }),
        6 => (u(), u(), u(), any::<bool>()).prop_map(|(op, a, axes, keepdims)| Step::Reduce { op, a, axes, keepdims }),
        2 => (u(), u()).prop_map(|(a, seed)| Step::Permute { a, seed }),
        3 => (u(), any::<[u8; 3]>()).prop_map(|(a, dims)| Step::Slice { a, dims }),
        2 => (u(), u()).prop_map(|(a, seed)| Step::Reshape { a, seed }),
        2 => (u(), u()).prop_map(|(a, pos)| Step::ExpandDims { a, pos }),
        1 => u().prop_map(|a| Step::Squeeze { a }),
        1 => (u(), u()).prop_map(|(a, mask)| Step::Flip { a, mask }),
        2 => (u(), u()).prop_map(|(a, seed)| Step::BroadcastTo { a, seed }),
        1 => (any::<bool>(), u(), u(), u()).prop_map(|(stack, a, b, axis)| Step::Join { stack, a, b, axis }),
        1 => u().prop_map(|a| Step::Contiguous { a }),
        2 => (u(), u(), u()).prop_map(|(op, a, seed)| Step::Twice { op, a, seed }),
        1 => u().prop_map(|a| Step::Hold { a }),
        2 => (u(), u(), u()).prop_map(|(a, b, axis)| Step::Gather { a, b, axis }),
        2 => (u(), u(), u(), u()).prop_map(|(op, a, b, c)| Step::Scatter { op, a, b, c }),
        2 => (u(), u(), u()).prop_map(|(op, a, axis)| Step::Scan { op, a, axis }),
        1 => (any::<bool>(), u(), u()).prop_map(|(argsort, a, axis)| Step::Sort { argsort, a, axis }),
    ]
}

pub(super) fn program() -> impl Strategy<Value = Program> {
    (
        prop::collection::vec(1usize..=4, 0..=3),
        prop::collection::vec(input_spec(), 1..=3),
        prop::collection::vec(step(), 1..=20),
        prop::collection::vec(any::<u8>(), 0..=2),
    )
        .prop_map(|(base, inputs, steps, outputs)| Program { base, inputs, steps, outputs })
}

// ------------------------------------------------------------------------------------------------
// Building a program with the API
// ------------------------------------------------------------------------------------------------

/// xorshift64*.
pub(super) struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A float in [-3, 3) on a grid of 1/64, or (when `special`) sometimes a special value.
    fn float(&mut self, special: bool) -> f64 {
        const SPECIAL: [f64; 10] = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e30,
            -1e-30,
            65504.0,
            3e38,
            1.5,
        ];
        if special && self.below(5) == 0 {
            return SPECIAL[self.below(SPECIAL.len() as u64) as usize];
        }
        (self.below(384) as f64 - 192.0) / 64.0
    }
    /// An integer in [lo, hi], small mostly, and (when `special`) sometimes an extreme.
    fn int(&mut self, lo: i128, hi: i128, special: bool) -> i128 {
        if special && self.below(5) == 0 {
            return [lo, hi, 0, hi / 2 + 1][self.below(4) as usize].clamp(lo, hi);
        }
        (self.below(17) as i128 - 8).clamp(lo, hi)
    }
}

pub(super) fn input_array(spec: &InputSpec, base: &[usize]) -> Array {
    let drop = spec.drop as usize % (base.len() + 1);
    let shape: Vec<usize> = base[drop..]
        .iter()
        .enumerate()
        .map(|(k, &d)| if spec.ones >> k & 1 == 1 { 1 } else { d })
        .collect();
    let n: usize = shape.iter().product();
    let mut r = Rng::new(spec.seed);
    let sp = spec.special;
    macro_rules! ints {
        ($t:ty) => {
            Array::from_vec(
                (0..n)
                    .map(|_| r.int(<$t>::MIN as i128, <$t>::MAX as i128, sp) as $t)
                    .collect::<Vec<$t>>(),
                &shape,
            )
        };
    }
    match spec.dtype {
        DType::Bool => {
            Array::from_vec((0..n).map(|_| r.below(2) == 1).collect::<Vec<bool>>(), &shape)
        }
        DType::Int8 => ints!(i8),
        DType::Int16 => ints!(i16),
        DType::Int32 => ints!(i32),
        DType::Int64 => ints!(i64),
        DType::UInt8 => ints!(u8),
        DType::UInt16 => ints!(u16),
        DType::UInt32 => ints!(u32),
        DType::UInt64 => ints!(u64),
        DType::Float16 => Array::from_vec(
            (0..n).map(|_| half::f16::from_f64(r.float(sp))).collect::<Vec<_>>(),
            &shape,
        ),
        DType::BFloat16 => Array::from_vec(
            (0..n).map(|_| half::bf16::from_f64(r.float(sp))).collect::<Vec<_>>(),
            &shape,
        ),
        DType::Float32 => {
            Array::from_vec((0..n).map(|_| r.float(sp) as f32).collect::<Vec<f32>>(), &shape)
        }
        DType::Float64 => {
            Array::from_vec((0..n).map(|_| r.float(sp)).collect::<Vec<f64>>(), &shape)
        }
        DType::Complex64 => Array::from_vec(
            (0..n)
                .map(|_| num_complex::Complex32::new(r.float(sp) as f32, r.float(sp) as f32))
                .collect::<Vec<_>>(),
            &shape,
        ),
        DType::Complex128 => Array::from_vec(
            (0..n)
                .map(|_| num_complex::Complex64::new(r.float(sp), r.float(sp)))
                .collect::<Vec<_>>(),
            &shape,
        ),
    }
}

/// A random permutation of `0..n` from `seed` (its Lehmer code).
pub(super) fn permutation(n: usize, seed: u8) -> Vec<i64> {
    let mut left: Vec<i64> = (0..n as i64).collect();
    let mut s = seed as usize;
    let mut out = Vec::new();
    while !left.is_empty() {
        let k = s % left.len();
        s /= left.len().max(1);
        out.push(left.remove(k));
    }
    out
}

/// A random shape of `size` elements, rank 1–3 (or rank 0 for size 1), one extent maybe -1.
pub(super) fn reshape_target(size: usize, seed: u8) -> Vec<i64> {
    let mut r = Rng::new(seed as u64 + 17);
    if size == 1 && seed.is_multiple_of(4) {
        return vec![];
    }
    let rank = 1 + r.below(3) as usize;
    let mut dims = vec![1usize; rank];
    let mut rest = size;
    let mut p = 2;
    while rest > 1 {
        while !rest.is_multiple_of(p) {
            p += 1;
        }
        rest /= p;
        dims[r.below(rank as u64) as usize] *= p;
    }
    let mut out: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    if seed.is_multiple_of(3) && size > 0 {
        let k = r.below(rank as u64) as usize;
        out[k] = -1;
    }
    out
}

pub(super) fn reduce(a: &Array, op: u8, axes: u8, keepdims: bool) -> kiln::Result<Array> {
    let nd = a.ndim();
    let mut list: Vec<i64> = (0..nd).filter(|k| axes >> k & 1 == 1).map(|k| k as i64).collect();
    // Negative axes, sometimes.
    if axes & 0x40 != 0 {
        list = list.iter().map(|&k| k - nd as i64).collect();
    }
    let mut arg =
        if axes & 0x80 != 0 || nd == 0 { kiln::all_axes() } else { kiln::axis(list.clone()) };
    if keepdims {
        arg = arg.keepdims();
    }
    // A single axis for the arg-reductions and the composites.
    let one: i64 = if nd == 0 { 0 } else { (axes as usize % nd) as i64 };
    let one_arg = || -> AxisArg {
        let a = if axes & 0x80 != 0 || nd == 0 { kiln::all_axes() } else { kiln::axis(one) };
        if keepdims {
            a.keepdims()
        } else {
            a
        }
    };
    match op % 15 {
        0 => a.try_sum(arg),
        1 => a.try_prod(arg),
        2 => a.try_max(arg),
        3 => a.try_min(arg),
        4 => a.try_all(arg),
        5 => a.try_any(arg),
        6 => a.try_argmax(one_arg()),
        7 => a.try_argmin(one_arg()),
        8 => a.try_mean(arg),
        9 => a.try_var(arg, 0),
        10 => a.try_std(arg, 1),
        11 if nd > 0 => kiln::nn::softmax(a, one),
        12 if nd > 0 => kiln::nn::logsumexp(a, one),
        13 if nd > 0 => kiln::nn::l2norm_rows(a),
        _ => a.try_sum(arg),
    }
}

pub(super) fn slice_args(a: &Array, dims: [u8; 3]) -> Vec<SliceArg> {
    let mut out = Vec::new();
    for (k, &n) in a.shape().iter().enumerate().take(3) {
        let code = dims[k];
        let n = n as i64;
        let arg = match code % 8 {
            0 => SliceArg::FULL,
            1 if n > 0 => {
                SliceArg::Index((code as i64 / 8) % n - if code & 0x80 != 0 { n } else { 0 })
            }
            2 => SliceArg::NewAxis,
            _ => {
                let step = [1, -1, 2, -2, 3, -1][(code as usize / 8) % 6];
                let bound = |v: u8| -> Option<i64> {
                    match v % 4 {
                        0 => None,
                        1 => Some((v as i64 / 4) % (n + 2)),
                        2 => Some(-((v as i64 / 4) % (n + 2))),
                        _ => Some(n - 1),
                    }
                };
                SliceArg::Range {
                    start: bound(code.rotate_left(3)),
                    stop: bound(code.rotate_left(5)),
                    step,
                }
            }
        };
        out.push(arg);
    }
    out
}

pub(super) fn broadcast_target(a: &Array, seed: u8) -> Vec<usize> {
    let mut shape: Vec<usize> = a
        .shape()
        .iter()
        .enumerate()
        .map(|(k, &d)| if d == 1 && seed >> k & 1 == 1 { 1 + (seed as usize >> 4) % 3 } else { d })
        .collect();
    if seed & 0x08 != 0 {
        shape.insert(0, 1 + (seed as usize >> 6) % 3);
    }
    shape
}

/// Builds the program's arrays; returns them all (inputs first) and the outputs.
pub(super) fn build(p: &Program) -> (Vec<Array>, Vec<Array>) {
    let mut pool: Vec<Array> = p.inputs.iter().map(|s| input_array(s, &p.base)).collect();
    // Whether each array of the pool is an operand of a later one.
    let used = std::cell::RefCell::new(vec![false; pool.len()]);
    let pick = |pool: &[Array], i: u8| -> Array { pool[index(pool.len(), i)].clone() };
    let pick_used = |pool: &[Array], i: u8| -> Array {
        let k = index(pool.len(), i);
        used.borrow_mut()[k] = true;
        pool[k].clone()
    };
    for s in &p.steps {
        let pick = pick_used;
        let r: kiln::Result<Array> = match *s {
            Step::Unary { op, a } => UNARY[op as usize % UNARY.len()].1(&pick(&pool, a)),
            Step::Binary { op, a, b } => {
                BINARY[op as usize % BINARY.len()].1(&pick(&pool, a), pick(&pool, b).into())
            }
            Step::ScalarRight { op, a, s } => {
                BINARY[op as usize % BINARY.len()].1(&pick(&pool, a), scalar(s))
            }
            Step::ScalarLeft { op, a, s } => BINARY[op as usize % BINARY.len()].1(
                &Array::scalar(scalar(s)),
                pick(&pool, a).into(),
            ),
            Step::Where { c, a, b, scalar: sc } => {
                let y: Operand = match sc {
                    Some(k) => scalar(k),
                    None => pick(&pool, b).into(),
                };
                kiln::try_where_(pick(&pool, c), pick(&pool, a), y)
            }
            Step::Cast { a, dtype } => Ok(pick(&pool, a).astype(dtype)),
            Step::Reduce { op, a, axes, keepdims } => reduce(&pick(&pool, a), op, axes, keepdims),
            Step::Permute { a, seed } => {
                let x = pick(&pool, a);
                x.try_permute(&permutation(x.ndim(), seed))
            }
            Step::Slice { a, dims } => {
                let x = pick(&pool, a);
                x.try_slice(&slice_args(&x, dims))
            }
            Step::Reshape { a, seed } => {
                let x = pick(&pool, a);
                x.try_reshape(&reshape_target(x.size(), seed))
            }
            Step::ExpandDims { a, pos } => {
                let x = pick(&pool, a);
                x.try_expand_dims(&[(pos as usize % (x.ndim() + 1)) as i64])
            }
            Step::Squeeze { a } => pick(&pool, a).try_squeeze(None),
            Step::Flip { a, mask } => {
                let x = pick(&pool, a);
                let axes: Vec<i64> =
                    (0..x.ndim()).filter(|k| mask >> k & 1 == 1).map(|k| k as i64).collect();
                if mask & 0x80 != 0 {
                    x.try_flip(None)
                } else {
                    x.try_flip(Some(&axes))
                }
            }
            Step::BroadcastTo { a, seed } => {
                let x = pick(&pool, a);
                x.try_broadcast_to(&broadcast_target(&x, seed))
            }
            Step::Join { stack, a, b, axis } => {
                let (x, y) = (pick(&pool, a), pick(&pool, b));
                let rank = x.ndim() as i64 + stack as i64;
                if rank == 0 {
                    continue;
                }
                let axis = axis as i64 % rank;
                if stack {
                    kiln::try_stack(&[&x, &y], axis)
                } else {
                    kiln::try_concatenate(&[&x, &y], axis)
                }
            }
            Step::Contiguous { a } => Ok(pick(&pool, a).ascontiguousarray()),
            Step::Gather { a, b, axis } => {
                let (x, i) = (pick(&pool, a), pick(&pool, b).astype(DType::Int64));
                match axis as usize % (x.ndim() + 1) {
                    0 => x.try_take(&i, None),
                    k => x.try_take(&i, Some(k as i64 - 1)),
                }
            }
            Step::Scatter { op, a, b, c } => {
                let (x, i) = (pick(&pool, a), pick(&pool, b).astype(DType::Int64));
                let v: Operand = if op & 0x10 != 0 { scalar(c) } else { pick(&pool, c).into() };
                match op % 4 {
                    0 => x.try_add_at(&i, v),
                    1 => x.try_maximum_at(&i, v),
                    2 => x.try_minimum_at(&i, v),
                    _ => x.try_put(&i, v),
                }
            }
            Step::Sort { argsort, a, axis } => {
                let x = pick(&pool, a);
                let axis = match axis as usize % (x.ndim() + 1) {
                    0 => None,
                    k => Some(k as i64 - 1),
                };
                if argsort {
                    x.try_argsort(axis)
                } else {
                    x.try_sort(axis)
                }
            }
            Step::Scan { op, a, axis } => {
                let x = pick(&pool, a);
                let axis = match axis as usize % (x.ndim() + 1) {
                    0 => None,
                    k => Some(k as i64 - 1),
                };
                match op % 4 {
                    0 => x.try_cumsum(axis),
                    1 => x.try_cumprod(axis),
                    2 => x.try_cummax(axis),
                    _ => x.try_cummin(axis),
                }
            }
            Step::Hold { a } => {
                let x = pick(&pool, a);
                if !x.is_materialized() {
                    let lowered = kiln::lower(&[&x]);
                    let inputs: Vec<&HostArray> =
                        lowered.inputs.iter().map(|a| a.as_ref()).collect();
                    let got =
                        x.try_to_host().unwrap_or_else(|e| panic!("eval of a held array: {e}"));
                    if let Err(d) = compare_host(&lowered.graph, &inputs, &[got.as_ref().clone()]) {
                        panic!(
                            "eval of a held array differs from the reference: {d}\n{}",
                            kiln::ir::text::print(&lowered.graph)
                        );
                    }
                }
                continue;
            }
            Step::Twice { op, a, seed } => {
                let x = pick(&pool, a);
                let nd = x.ndim();
                let axes = |m: u8| -> Vec<i64> {
                    (0..nd).filter(|k| m >> k & 1 == 1).map(|k| k as i64).collect()
                };
                match op % 8 {
                    0 => x.try_negative().and_then(|y| y.try_negative()),
                    1 => x.try_invert().and_then(|y| y.try_invert()),
                    2 => x.try_logical_not().and_then(|y| y.try_logical_not()),
                    3 => Ok(x.conj().conj()),
                    4 => x
                        .try_flip(Some(&axes(seed)))
                        .and_then(|y| y.try_flip(Some(&axes(seed.rotate_left(3))))),
                    5 => x
                        .try_permute(&permutation(nd, seed))
                        .and_then(|y| y.try_permute(&permutation(nd, seed / 7))),
                    6 => x
                        .try_slice(&slice_args(
                            &x,
                            [seed, seed.rotate_left(2), seed.rotate_left(4)],
                        ))
                        .and_then(|y| {
                            y.try_slice(&slice_args(
                                &y,
                                [seed.rotate_left(1), seed.rotate_left(3), seed.rotate_left(5)],
                            ))
                        }),
                    _ => x
                        .try_expand_dims(&[(seed as usize % (nd + 1)) as i64])
                        .and_then(|y| y.try_reshape(&reshape_target(y.size(), seed))),
                }
            }
        };
        if let Ok(y) = r {
            if y.size() <= MAX_ELEMENTS {
                pool.push(y);
                used.borrow_mut().push(false);
            }
        }
    }
    // The latest array, the latest few arrays nothing uses (so most of the work is live), and the
    // program's extra picks.
    let used = used.into_inner();
    let n = pool.len();
    let mut outs = vec![pool[n - 1].clone()];
    outs.extend(
        (p.inputs.len()..n - 1).rev().filter(|&k| !used[k]).take(3).map(|k| pool[k].clone()),
    );
    outs.extend(p.outputs.iter().map(|&i| pick(&pool, i)));
    (pool, outs)
}

/// The pool index an operand code picks: mostly one of the 3 latest arrays (deep chains), else
/// any.
pub(super) fn index(len: usize, i: u8) -> usize {
    if i < 160 {
        len - 1 - (i as usize % len.min(3))
    } else {
        len - 1 - (i as usize % len)
    }
}

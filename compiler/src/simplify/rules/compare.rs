//! Comparisons: a float compare of an exact integer grid against a constant as an integer
//! compare (a uniform draw's `u >= p`: dropout's mask).
//!
//! `u = cast(k) * 2^-s` for an unsigned (or bool) `k` whose values are at most `K` takes the
//! values `k · 2^-s` exactly when `K <= 2^m` (`m` the float's significand bits: every integer up
//! to `K` is a float) and `2^-s` is at least the float's smallest subnormal (`k · 2^-s` is a
//! multiple of it with at most `m` significant bits, and at most `K`: neither rounds nor
//! overflows). Then, for a constant `p` and `q = p · 2^s` (exact in f64: a power-of-two scale up
//! of a float, infinite only where `p` is beyond every `k · 2^-s`), over the integers `k`:
//!
//! ```text
//! u >= p  <=>  k >= ceil(q)        u <  p  <=>  k <  ceil(q)
//! u >  p  <=>  k >= floor(q) + 1   u <= p  <=>  k <  floor(q) + 1
//! ```
//!
//! (`k·2^-s >= p` iff `k >= q`, iff `k >= ceil(q)` for an integer `k`; `k > q` iff
//! `k >= floor(q) + 1`; the other two are their negations, IEEE's for a `p` that is not NaN).
//! A NaN `p` makes all four false. A threshold `t` at most 0 holds for every `k >= 0`
//! (`-0.0` included: `0 >= -0.0`); one above `K` for none: the compare is then a constant. `q` is
//! clamped to `[-1, 2^60]` before `ceil`/`floor` (so `floor(q) + 1` is integer arithmetic, exact;
//! `K <= 2^53 < 2^60`). The scale may be absent (`s = 0`: `cast(k) >= p`) and either operand may
//! be the constant (`p <= u` is `u >= p`).
//!
//! `K` comes from [`unsigned_max`]: a bound of an unsigned class read from its e-nodes
//! (constants, `&` with a constant, `>>`, `where`, views, casts between unsigned dtypes).

use egg::Id;
use kiln_ir::graph::{Attrs, Literal};
use kiln_ir::ops::OpKind;
use kiln_ir::{DType, DTypeKind};

use super::{data, splat, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::{ENode, EG};

pub fn rules() -> Vec<Rewrite> {
    vec![
        // cast(k) * 2^-s  op  p  =  k op' t, for k an unsigned integer bounded so that the
        // float is exact (module docs: the thresholds t and their proof)
        NodeRule::rewrite(
            "compare-int-grid",
            &[OpKind::Ge, OpKind::Gt, OpKind::Le, OpKind::Lt],
            compare_int_grid,
        ),
    ]
}

/// A comparison of the grid value `u` against the constant: `u op p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Cmp {
    fn of(op: OpKind) -> Option<Cmp> {
        let ops = [
            (OpKind::Ge, Cmp::Ge),
            (OpKind::Gt, Cmp::Gt),
            (OpKind::Le, Cmp::Le),
            (OpKind::Lt, Cmp::Lt),
        ];
        ops.into_iter().find(|&(o, _)| o == op).map(|(_, c)| c)
    }

    /// `p op u` as `u op' p`.
    fn swapped(self) -> Cmp {
        match self {
            Cmp::Ge => Cmp::Le,
            Cmp::Gt => Cmp::Lt,
            Cmp::Le => Cmp::Ge,
            Cmp::Lt => Cmp::Gt,
        }
    }
}

/// An integer compare of `k` equal to a float compare on its grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntCmp {
    /// The same value for every `k` in `[0, K]`.
    All(bool),
    /// `k >= t`, `1 <= t <= K`.
    AtLeast(u64),
    /// `k < t`, `1 <= t <= K`.
    Below(u64),
}

/// `k · 2^-s  cmp  p` for every integer `k` in `[0, kmax]` (`kmax <= 2^60`, `s >= 0`, the grid
/// values exact: the module docs), as an integer compare of `k`.
pub fn grid_compare(cmp: Cmp, p: f64, s: u32, kmax: u64) -> IntCmp {
    if p.is_nan() {
        return IntCmp::All(false);
    }
    // p · 2^s, exact but for overflow to ±inf (then beyond every grid value), clamped.
    let mut q = p;
    for _ in 0..s {
        q *= 2.0;
    }
    let q = q.clamp(-1.0, (1u64 << 60) as f64);
    let t: i128 = match cmp {
        Cmp::Ge | Cmp::Lt => q.ceil() as i128,
        Cmp::Gt | Cmp::Le => q.floor() as i128 + 1,
    };
    let at_least = matches!(cmp, Cmp::Ge | Cmp::Gt);
    if t <= 0 {
        IntCmp::All(at_least)
    } else if t > kmax as i128 {
        IntCmp::All(!at_least)
    } else if at_least {
        IntCmp::AtLeast(t as u64)
    } else {
        IntCmp::Below(t as u64)
    }
}

/// log2 of the float's smallest subnormal, negated (the largest `s` of an exact `k · 2^-s`).
fn max_scale_shift(dtype: DType) -> Option<u32> {
    match dtype {
        DType::Float16 => Some(24),
        DType::BFloat16 => Some(133),
        DType::Float32 => Some(149),
        DType::Float64 => Some(1074),
        _ => None,
    }
}

/// `s` where `x` is exactly `2^-s`, `s >= 0`.
fn power_of_two_shift(x: f64) -> Option<u32> {
    if !(x > 0.0 && x <= 1.0) {
        return None;
    }
    let bits = x.to_bits();
    let (exp, frac) = ((bits >> 52) as i32, bits & ((1u64 << 52) - 1));
    match (exp, frac) {
        // Normal: 2^(exp - 1023).
        (1..=2046, 0) => Some((1023 - exp) as u32),
        // Subnormal: a single bit of the fraction.
        (0, f) if f.is_power_of_two() => Some(1074 - f.trailing_zeros()),
        _ => None,
    }
}

/// An upper bound of the values of the unsigned integer (or bool) class `id`: the least one
/// its e-nodes give, looking `depth` levels down. `None` for other dtypes.
pub fn unsigned_max(eg: &EG, id: Id, depth: u32) -> Option<u64> {
    let dtype = data(eg, id).dtype;
    let type_max = match dtype.kind() {
        DTypeKind::Bool | DTypeKind::UnsignedInt => dtype.int_range()?.1 as u64,
        _ => return None,
    };
    if let Some(v) = splat(eg, id) {
        return match v {
            Literal::Bool(b) => Some(b as u64),
            Literal::UInt(u) => Some(u),
            _ => None,
        };
    }
    let mut best = type_max;
    if depth == 0 {
        return Some(best);
    }
    let bound = |c: Id| unsigned_max(eg, c, depth - 1);
    for node in eg[id].iter() {
        let ch = &node.children;
        let b = if node.op == OpKind::BitwiseAnd {
            match (bound(ch[0]), bound(ch[1])) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            }
        } else if node.op == OpKind::RightShift {
            let width = (dtype.itemsize() * 8) as u64;
            let x = bound(ch[0]);
            match splat(eg, ch[1]) {
                Some(Literal::UInt(s)) if s >= width => Some(0),
                Some(Literal::UInt(s)) => x.map(|x| x >> s),
                // Shifting an unsigned value right never increases it.
                _ => x,
            }
        } else if node.op == OpKind::Where {
            bound(ch[1]).zip(bound(ch[2])).map(|(x, y)| x.max(y))
        } else if node.op == OpKind::Cast {
            // A value cast between unsigned dtypes (or from bool) is kept where it fits.
            bound(ch[0]).filter(|&x| x <= type_max)
        } else if node.op.is_view() {
            bound(ch[0])
        } else {
            None
        };
        if let Some(b) = b {
            best = best.min(b);
        }
    }
    Some(best)
}

/// The float constant of class `id`, if it is one.
fn float_splat(eg: &EG, id: Id) -> Option<f64> {
    match splat(eg, id)? {
        Literal::Float(bits) => Some(f64::from_bits(bits)),
        _ => None,
    }
}

/// `(k, s)` where class `u` is `cast(k) * 2^-s` (or `2^-s * cast(k)`, or `cast(k)` with
/// `s = 0`) with the grid values exact: `k` unsigned or bool, at most `kmax`.
fn grid_of(eg: &EG, u: Id) -> Option<(Id, u32, u64)> {
    let dtype = data(eg, u).dtype;
    let (m, smax) = (dtype.mantissa_bits()?, max_scale_shift(dtype)?);
    let int_of = |c: Id| -> Option<(Id, u64)> {
        eg[c].iter().filter(|n| n.op == OpKind::Cast).find_map(|n| {
            let k = n.children[0];
            let kmax = unsigned_max(eg, k, 6)?;
            (kmax <= 1u64 << m).then_some((k, kmax))
        })
    };
    if let Some((k, kmax)) = int_of(u) {
        return Some((k, 0, kmax));
    }
    eg[u].iter().filter(|n| n.op == OpKind::Mul).find_map(|n| {
        let (a, b) = (n.children[0], n.children[1]);
        [(a, b), (b, a)].into_iter().find_map(|(x, c)| {
            let s = power_of_two_shift(float_splat(eg, c)?)?;
            let (k, kmax) = int_of(x)?;
            (s <= smax).then_some((k, s, kmax))
        })
    })
}

fn compare_int_grid(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let cmp = Cmp::of(node.op)?;
    let (l, r) = (node.children[0], node.children[1]);
    if !data(eg, l).dtype.is_float() {
        return None;
    }
    let (u, p, cmp) = match (float_splat(eg, l), float_splat(eg, r)) {
        (None, Some(p)) => (l, p, cmp),
        (Some(p), None) => (r, p, cmp.swapped()),
        _ => return None,
    };
    let (k, s, kmax) = grid_of(eg, u)?;
    let shape = data(eg, class).shape.clone();
    let kd = data(eg, k).dtype;
    let (at_least, t) = match grid_compare(cmp, p, s, kmax) {
        IntCmp::All(v) => return b.splat(DType::Bool, &shape, Literal::Bool(v)),
        IntCmp::AtLeast(t) => (true, t),
        IntCmp::Below(t) => (false, t),
    };
    let op = if at_least { OpKind::Ge } else { OpKind::Lt };
    let ki = b.class(k);
    if kd == DType::Bool {
        // t = 1: k itself, or its negation.
        return if at_least { Some(ki) } else { b.op(OpKind::LogicalNot, Attrs::None, &[ki]) };
    }
    let ti = b.splat(kd, &shape, Literal::UInt(t))?;
    b.op(op, Attrs::None, &[ki, ti])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simplify::rules::testing::{check, unchanged};

    /// The float compare, as the evaluator computes it: `fl(fl(k) · 2^-24) cmp p` in float32.
    fn float_cmp(cmp: Cmp, k: u32, p: f32) -> bool {
        let u = (k as f32) * f32::from_bits(0x3380_0000); // 2^-24
        match cmp {
            Cmp::Ge => u >= p,
            Cmp::Gt => u > p,
            Cmp::Le => u <= p,
            Cmp::Lt => u < p,
        }
    }

    fn int_cmp(c: IntCmp, k: u32) -> bool {
        match c {
            IntCmp::All(v) => v,
            IntCmp::AtLeast(t) => k as u64 >= t,
            IntCmp::Below(t) => (k as u64) < t,
        }
    }

    /// Every k of a float32 uniform (24 bits: `k · 2^-24`, k up to 2^24 - 1, and 2^24 itself)
    /// against the float compare, for each compare and constant: edges, grid points and
    /// their neighbours, NaN, infinities, zeros of both signs, negatives, values above 1.
    #[test]
    fn every_uniform_float32_agrees() {
        let grid = |k: u32| k as f32 * f32::from_bits(0x3380_0000);
        let mut ps = vec![
            0.0f32,
            -0.0,
            1.0,
            0.1,
            0.5,
            0.25,
            0.9,
            1.0 / 3.0,
            -0.1,
            -1.0,
            2.0,
            1.5,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::MAX,
            f32::MIN,
            grid(1),
            grid(12_345_678),
            grid((1 << 24) - 1),
        ];
        // Just off the grid: the float neighbours of grid points and of 1.
        for x in [grid(1), grid(12_345_678), grid((1 << 24) - 1), 1.0, 0.1] {
            ps.push(f32::from_bits(x.to_bits() + 1));
            ps.push(f32::from_bits(x.to_bits() - 1));
        }
        for &p in &ps {
            for cmp in [Cmp::Ge, Cmp::Gt, Cmp::Le, Cmp::Lt] {
                let c = grid_compare(cmp, p as f64, 24, 1 << 24);
                for k in 0..=(1u32 << 24) {
                    assert_eq!(int_cmp(c, k), float_cmp(cmp, k, p), "{cmp:?} p={p:e} k={k} {c:?}");
                }
            }
        }
    }

    /// Other scales and bounds, in float64: the same answers as the float compare.
    #[test]
    fn float64_grids_agree() {
        for (s, kmax) in [(0u32, 1000u64), (3, 1 << 10), (53, 1 << 12), (1074, 7)] {
            let scale = |k: u64| -> f64 {
                let mut u = k as f64;
                for _ in 0..s {
                    u /= 2.0; // exact: a multiple of the smallest subnormal
                }
                u
            };
            let ps = [0.0, -0.0, 0.3, 1.0, 2.5, 999.5, 1e300, -1e300, f64::NAN, scale(5), scale(6)];
            for p in ps.into_iter().chain([scale(5) * 1.0000001]) {
                for cmp in [Cmp::Ge, Cmp::Gt, Cmp::Le, Cmp::Lt] {
                    let c = grid_compare(cmp, p, s, kmax);
                    for k in 0..=kmax.min(2000) {
                        let u = scale(k);
                        let want = match cmp {
                            Cmp::Ge => u >= p,
                            Cmp::Gt => u > p,
                            Cmp::Le => u <= p,
                            Cmp::Lt => u < p,
                        };
                        let got = match c {
                            IntCmp::All(v) => v,
                            IntCmp::AtLeast(t) => k >= t,
                            IntCmp::Below(t) => k < t,
                        };
                        assert_eq!(got, want, "{cmp:?} s={s} p={p:e} k={k} {c:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(power_of_two_shift(1.0), Some(0));
        assert_eq!(power_of_two_shift(2f64.powi(-24)), Some(24));
        assert_eq!(power_of_two_shift(f64::from_bits(1)), Some(1074));
        assert_eq!(power_of_two_shift(2f64.powi(-1030)), Some(1030));
        assert_eq!(power_of_two_shift(0.75), None);
        assert_eq!(power_of_two_shift(2.0), None);
        assert_eq!(power_of_two_shift(0.0), None);
        assert_eq!(power_of_two_shift(-0.5), None);
    }

    // A float32 uniform as `kiln::random` builds it: the top 24 bits `k` of a 32-bit word
    // (`%6`), then `cast(k) * 2^-24` (`%10`).
    const BITS: &str = "
%0 = input {index=0} : u64[8]
%1 = const {value=4294967295} : u64[]
%2 = broadcast_to(%1) {shape=[8]} : u64[8]
%3 = bitwise_and(%0, %2) : u64[8]
%4 = const {value=8} : u64[]
%5 = broadcast_to(%4) {shape=[8]} : u64[8]
%6 = right_shift(%3, %5) : u64[8]
";
    const UNIFORM: &str = "%7 = cast(%6) {dtype=f32} : f32[8]
%8 = const {value=5.9604645e-8} : f32[]
%9 = broadcast_to(%8) {shape=[8]} : f32[8]
%10 = multiply(%7, %9) : f32[8]
";

    /// `compare-int-grid` on `operands[0] op operands[1]` (`%10` is the uniform, `%12` the
    /// constant `p`) gives `k op' t`.
    #[track_caller]
    fn grid_check(p: &str, op: &str, operands: &str, want_op: &str, t: u64) {
        let input = format!(
            "{BITS}{UNIFORM}%11 = const {{value={p}}} : f32[]
%12 = broadcast_to(%11) {{shape=[8]}} : f32[8]
%13 = {op}({operands}) : bool[8]
return %13
"
        );
        let want = format!(
            "{BITS}%7 = const {{value={t}}} : u64[]
%8 = broadcast_to(%7) {{shape=[8]}} : u64[8]
%9 = {want_op}(%6, %8) : bool[8]
return %9
"
        );
        check("compare-int-grid", &input, &want);
    }

    #[test]
    fn uniform_compare_is_an_integer_compare() {
        // u >= 0.1: k >= ceil(0.1f32 · 2^24) = 1677722.
        grid_check("0.1", "greater_equal", "%10, %12", "greater_equal", 1677722);
        // 0.5 > u (the constant first): k < 2^23.
        grid_check("0.5", "greater", "%12, %10", "less", 1 << 23);
        // u <= 0.25: k < 2^22 + 1.
        grid_check("0.25", "less_equal", "%10, %12", "less", (1 << 22) + 1);
        // u < 1.5 holds for every draw.
        check(
            "compare-int-grid",
            &format!(
                "{BITS}{UNIFORM}%11 = const {{value=1.5}} : f32[]
%12 = broadcast_to(%11) {{shape=[8]}} : f32[8]
%13 = less(%10, %12) : bool[8]
return %13
"
            ),
            "
%0 = input {index=0} : u64[8]
%1 = const {value=true} : bool[]
%2 = broadcast_to(%1) {shape=[8]} : bool[8]
return %2
",
        );
    }

    #[test]
    fn not_a_grid_is_unchanged() {
        // 32 bits do not fit float32's 24: the cast rounds.
        unchanged(
            "
%0 = input {index=0} : u64[8]
%1 = const {value=4294967295} : u64[]
%2 = broadcast_to(%1) {shape=[8]} : u64[8]
%3 = bitwise_and(%0, %2) : u64[8]
%4 = cast(%3) {dtype=f32} : f32[8]
%5 = const {value=0.1} : f32[]
%6 = broadcast_to(%5) {shape=[8]} : f32[8]
%7 = greater_equal(%4, %6) : bool[8]
return %7
",
        );
        // A scale that is not a power of two rounds.
        unchanged(
            "
%0 = input {index=0} : u8[8]
%1 = cast(%0) {dtype=f32} : f32[8]
%2 = const {value=0.1} : f32[]
%3 = broadcast_to(%2) {shape=[8]} : f32[8]
%4 = multiply(%1, %3) : f32[8]
%5 = const {value=3.0} : f32[]
%6 = broadcast_to(%5) {shape=[8]} : f32[8]
%7 = greater_equal(%4, %6) : bool[8]
return %7
",
        );
    }
}

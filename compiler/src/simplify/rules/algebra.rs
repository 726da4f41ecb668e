//! Algebra on elementwise ops. Exact for every dtype a rule admits: integers wrap, floats are
//! IEEE (no `x*0 = 0`, `x-x = 0` or `x+0 = x` for floats: NaN, infinities and the sign of zero
//! break them). The `fast-math-` rules drop that guarantee and run only with
//! [`SimplifyOptions::fast_math`].

use egg::{rewrite, Id, Subst, Var};
use kiln_ir::ops::OpKind;
use kiln_ir::DTypeKind;

use super::{data, is_float_splat, is_splat, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::{ENode, EG};
use crate::simplify::SimplifyOptions;

pub fn rules(opts: &SimplifyOptions) -> Vec<Rewrite> {
    let mut rules = vec![
        // -(-x) = x (integers wrap both ways)
        rewrite!("neg-neg"; "(negative (negative ?x))" => "?x"),
        // not(not(x)) = x
        rewrite!("not-not"; "(logical_not (logical_not ?x))" => "?x"),
        // ~~x = x
        rewrite!("invert-invert"; "(invert (invert ?x))" => "?x"),
        // conj(conj(x)) = x
        rewrite!("conj-conj"; "(conjugate (conjugate ?x))" => "?x"),
        // x*x = square(x) (numbers only: square takes no bools)
        rewrite!("square"; "(multiply ?x ?x)" => "(square ?x)" if square_takes("?x")),
        // x**2 = square(x) (floats: pow is exact for an exponent of 2, x² rounded once as x*x;
        // integers wrap the same way)
        NodeRule::rewrite("power-two", &[OpKind::Power], power_two),
        // x*1 = 1*x = x (not complex: (a+bi)(1+0i) has b*0, NaN for an infinite b)
        NodeRule::rewrite("mul-one", &[OpKind::Mul], mul_one),
        // x/1 = x (floats; not complex, as for x*1)
        NodeRule::rewrite("div-one", &[OpKind::Div], div_one),
        // x+0 = 0+x = x (integers, bools); x+(-0.0) = (-0.0)+x = x (floats, complex)
        NodeRule::rewrite("add-zero", &[OpKind::Add], add_zero),
        // x-0 = x (integers; floats and complex with +0.0)
        NodeRule::rewrite("sub-zero", &[OpKind::Sub], sub_zero),
        // x-x = 0 (integers)
        NodeRule::rewrite("sub-self", &[OpKind::Sub], sub_self),
        // x*0 = 0*x = 0 (integers, bools)
        NodeRule::rewrite("mul-zero", &[OpKind::Mul], mul_zero),
    ];
    if opts.fast_math {
        rules.extend([
            // fast-math: x*0 = 0*x = 0 for floats (wrong for NaN, ±inf, and -0.0 for negative x)
            NodeRule::rewrite("fast-math-mul-zero", &[OpKind::Mul], fast_mul_zero),
            // fast-math: x-x = 0 for floats (wrong for NaN and ±inf)
            NodeRule::rewrite("fast-math-sub-self", &[OpKind::Sub], fast_sub_self),
            // fast-math: x+0 = 0+x = x for floats (wrong for x = -0.0)
            NodeRule::rewrite("fast-math-add-zero", &[OpKind::Add], fast_add_zero),
            // fast-math: exp(log(x)) = x (wrong for x < 0: NaN, and by rounding)
            rewrite!("fast-math-exp-log"; "(exp (log ?x))" => "?x"),
            // fast-math: log(exp(x)) = x (wrong where exp overflows, and by rounding)
            rewrite!("fast-math-log-exp"; "(log (exp ?x))" => "?x"),
        ]);
    }
    rules
}

fn square_takes(var: &str) -> impl Fn(&mut EG, Id, &Subst) -> bool {
    let var: Var = var.parse().unwrap();
    move |egraph, _, subst| OpKind::Square.info().domain.contains(egraph[subst[var]].data.dtype)
}

fn kind(egraph: &EG, id: Id) -> DTypeKind {
    data(egraph, id).dtype.kind()
}

/// The operand that is not the splat `is_unit`, trying both orders (`x op u` and `u op x`).
fn other_operand(node: &ENode, commutes: bool, is_unit: impl Fn(Id) -> bool) -> Option<Id> {
    let (a, b) = (node.children[0], node.children[1]);
    if is_unit(b) {
        Some(a)
    } else if commutes && is_unit(a) {
        Some(b)
    } else {
        None
    }
}

fn mul_one(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    if kind(eg, class) == DTypeKind::Complex {
        return None;
    }
    let x = other_operand(node, true, |c| is_splat(eg, c, 1))?;
    Some(b.class(x))
}

fn power_two(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let x = match kind(eg, class) {
        DTypeKind::Float => other_operand(node, false, |c| is_float_splat(eg, c, 2.0)),
        DTypeKind::SignedInt | DTypeKind::UnsignedInt => {
            other_operand(node, false, |c| is_splat(eg, c, 2))
        }
        DTypeKind::Bool | DTypeKind::Complex => None,
    }?;
    if data(eg, x).dtype != data(eg, class).dtype {
        return None;
    }
    let x = b.class(x);
    b.op(OpKind::Square, kiln_ir::Attrs::None, &[x])
}

fn div_one(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    if kind(eg, class) != DTypeKind::Float {
        return None;
    }
    let x = other_operand(node, false, |c| is_splat(eg, c, 1))?;
    Some(b.class(x))
}

fn add_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let x = match kind(eg, class) {
        DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt => {
            other_operand(node, true, |c| is_splat(eg, c, 0))
        }
        DTypeKind::Float | DTypeKind::Complex => {
            other_operand(node, true, |c| is_float_splat(eg, c, -0.0))
        }
    }?;
    Some(b.class(x))
}

fn sub_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let x = match kind(eg, class) {
        DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt => {
            other_operand(node, false, |c| is_splat(eg, c, 0))
        }
        DTypeKind::Float | DTypeKind::Complex => {
            other_operand(node, false, |c| is_float_splat(eg, c, 0.0))
        }
    }?;
    Some(b.class(x))
}

/// The zero of the class's type, where `node` is `x - x`.
fn self_difference_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    if eg.find(node.children[0]) != eg.find(node.children[1]) {
        return None;
    }
    let d = data(eg, class);
    b.splat(d.dtype, &d.shape.clone(), super::lit(d.dtype, 0))
}

fn sub_self(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    if !data(b.egraph, class).dtype.is_integer() {
        return None;
    }
    self_difference_zero(b, class, node)
}

fn zero_product(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    other_operand(node, true, |c| is_splat(eg, c, 0))?;
    let d = data(eg, class);
    b.splat(d.dtype, &d.shape.clone(), super::lit(d.dtype, 0))
}

fn mul_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    if data(b.egraph, class).dtype.is_inexact() {
        return None;
    }
    zero_product(b, class, node)
}

fn fast_mul_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    if !data(b.egraph, class).dtype.is_inexact() {
        return None;
    }
    zero_product(b, class, node)
}

fn fast_sub_self(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    if !data(b.egraph, class).dtype.is_inexact() {
        return None;
    }
    self_difference_zero(b, class, node)
}

fn fast_add_zero(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    if !data(eg, class).dtype.is_inexact() {
        return None;
    }
    let x = other_operand(node, true, |c| is_float_splat(eg, c, 0.0))?;
    Some(b.class(x))
}

#[cfg(test)]
mod tests {
    use crate::simplify::rules::testing::{check, check_with, opts, unchanged};
    use crate::simplify::SimplifyOptions;

    #[test]
    fn neg_neg() {
        check(
            "neg-neg",
            "
%0 = input {index=0} : i8[4]
%1 = negative(%0) : i8[4]
%2 = negative(%1) : i8[4]
return %2
",
            "
%0 = input {index=0} : i8[4]
return %0
",
        );
    }

    #[test]
    fn not_not_invert_invert_conj_conj() {
        check(
            "not-not",
            "
%0 = input {index=0} : bool[3]
%1 = logical_not(%0) : bool[3]
%2 = logical_not(%1) : bool[3]
return %2, %1
",
            "
%0 = input {index=0} : bool[3]
%1 = logical_not(%0) : bool[3]
return %0, %1
",
        );
        check(
            "invert-invert",
            "
%0 = input {index=0} : u16[3]
%1 = invert(%0) : u16[3]
%2 = invert(%1) : u16[3]
return %2
",
            "
%0 = input {index=0} : u16[3]
return %0
",
        );
        check(
            "conj-conj",
            "
%0 = input {index=0} : c64[3]
%1 = conjugate(%0) : c64[3]
%2 = conjugate(%1) : c64[3]
return %2
",
            "
%0 = input {index=0} : c64[3]
return %0
",
        );
    }

    #[test]
    fn square() {
        check(
            "square",
            "
%0 = input {index=0} : f32[4]
%1 = multiply(%0, %0) : f32[4]
return %1
",
            "
%0 = input {index=0} : f32[4]
%1 = square(%0) : f32[4]
return %1
",
        );
        // bool: x*x is x and x, and square takes no bools.
        unchanged(
            "
%0 = input {index=0} : bool[4]
%1 = multiply(%0, %0) : bool[4]
return %1
",
        );
    }

    #[test]
    fn power_two() {
        check(
            "power-two",
            "
%0 = input {index=0} : f32[4]
%1 = const {value=2.0} : f32[]
%2 = broadcast_to(%1) {shape=[4]} : f32[4]
%3 = power(%0, %2) : f32[4]
return %3
",
            "
%0 = input {index=0} : f32[4]
%1 = square(%0) : f32[4]
return %1
",
        );
        // x**3 stays.
        unchanged(
            "
%0 = input {index=0} : f32[4]
%1 = const {value=3.0} : f32[]
%2 = broadcast_to(%1) {shape=[4]} : f32[4]
%3 = power(%0, %2) : f32[4]
return %3
",
        );
    }

    #[test]
    fn mul_one() {
        check(
            "mul-one",
            "
%0 = input {index=0} : f32[2,3]
%1 = const {value=1.0} : f32[]
%2 = broadcast_to(%1) {shape=[2,3]} : f32[2,3]
%3 = multiply(%0, %2) : f32[2,3]
%4 = multiply(%2, %3) : f32[2,3]
return %4
",
            "
%0 = input {index=0} : f32[2,3]
return %0
",
        );
        // Rank 0: the constant itself.
        check(
            "mul-one",
            "
%0 = input {index=0} : i32[]
%1 = const {value=1} : i32[]
%2 = multiply(%0, %1) : i32[]
return %2
",
            "
%0 = input {index=0} : i32[]
return %0
",
        );
        // Not complex, and not for other constants.
        unchanged(
            "
%0 = input {index=0} : c64[2]
%1 = const {value=(1.0, 0.0)} : c64[]
%2 = broadcast_to(%1) {shape=[2]} : c64[2]
%3 = multiply(%0, %2) : c64[2]
return %3
",
        );
        unchanged(
            "
%0 = input {index=0} : f32[2]
%1 = const {value=2.0} : f32[]
%2 = broadcast_to(%1) {shape=[2]} : f32[2]
%3 = multiply(%0, %2) : f32[2]
return %3
",
        );
    }

    #[test]
    fn div_one() {
        check(
            "div-one",
            "
%0 = input {index=0} : f64[5]
%1 = const {value=1.0} : f64[]
%2 = broadcast_to(%1) {shape=[5]} : f64[5]
%3 = divide(%0, %2) : f64[5]
return %3
",
            "
%0 = input {index=0} : f64[5]
return %0
",
        );
        // 1/x is not x.
        unchanged(
            "
%0 = input {index=0} : f64[5]
%1 = const {value=1.0} : f64[]
%2 = broadcast_to(%1) {shape=[5]} : f64[5]
%3 = divide(%2, %0) : f64[5]
return %3
",
        );
    }

    #[test]
    fn add_zero() {
        check(
            "add-zero",
            "
%0 = input {index=0} : i64[3]
%1 = const {value=0} : i64[]
%2 = broadcast_to(%1) {shape=[3]} : i64[3]
%3 = add(%2, %0) : i64[3]
return %3
",
            "
%0 = input {index=0} : i64[3]
return %0
",
        );
        // Floats: x + (-0.0) = x is exact ...
        check(
            "add-zero",
            "
%0 = input {index=0} : f32[3]
%1 = const {value=-0.0} : f32[]
%2 = broadcast_to(%1) {shape=[3]} : f32[3]
%3 = add(%0, %2) : f32[3]
return %3
",
            "
%0 = input {index=0} : f32[3]
return %0
",
        );
        // ... x + 0.0 is not (-0.0 + 0.0 = +0.0).
        unchanged(
            "
%0 = input {index=0} : f32[3]
%1 = const {value=0.0} : f32[]
%2 = broadcast_to(%1) {shape=[3]} : f32[3]
%3 = add(%0, %2) : f32[3]
return %3
",
        );
    }

    #[test]
    fn sub_zero() {
        check(
            "sub-zero",
            "
%0 = input {index=0} : f16[3]
%1 = const {value=0.0} : f16[]
%2 = broadcast_to(%1) {shape=[3]} : f16[3]
%3 = subtract(%0, %2) : f16[3]
return %3
",
            "
%0 = input {index=0} : f16[3]
return %0
",
        );
        // 0 - x is -x, not x.
        unchanged(
            "
%0 = input {index=0} : u8[3]
%1 = const {value=0} : u8[]
%2 = broadcast_to(%1) {shape=[3]} : u8[3]
%3 = subtract(%2, %0) : u8[3]
return %3
",
        );
    }

    #[test]
    fn sub_self_and_mul_zero_for_integers_only() {
        check(
            "sub-self",
            "
%0 = input {index=0} : i16[3]
%1 = subtract(%0, %0) : i16[3]
return %1
",
            "
%0 = input {index=0} : i16[3]
%1 = const {value=0} : i16[]
%2 = broadcast_to(%1) {shape=[3]} : i16[3]
return %2
",
        );
        check(
            "mul-zero",
            "
%0 = input {index=0} : u32[2]
%1 = const {value=0} : u32[]
%2 = broadcast_to(%1) {shape=[2]} : u32[2]
%3 = multiply(%0, %2) : u32[2]
return %3
",
            "
%0 = input {index=0} : u32[2]
%1 = const {value=0} : u32[]
%2 = broadcast_to(%1) {shape=[2]} : u32[2]
return %2
",
        );
        let floats = "
%0 = input {index=0} : f32[2]
%1 = const {value=0.0} : f32[]
%2 = broadcast_to(%1) {shape=[2]} : f32[2]
%3 = multiply(%0, %2) : f32[2]
%4 = subtract(%0, %0) : f32[2]
%5 = add(%0, %2) : f32[2]
%6 = log(%0) : f32[2]
%7 = exp(%6) : f32[2]
%8 = exp(%0) : f32[2]
%9 = log(%8) : f32[2]
return %3, %4, %5, %7, %9
";
        // Off by default: x*0, x-x, x+0, exp(log x), log(exp x) are not exact for floats.
        unchanged(floats);
        let fast = SimplifyOptions { fast_math: true, ..opts() };
        let expected = "
%0 = input {index=0} : f32[2]
%1 = const {value=0.0} : f32[]
%2 = broadcast_to(%1) {shape=[2]} : f32[2]
return %2, %2, %0, %0, %0
";
        for rule in [
            "fast-math-mul-zero",
            "fast-math-sub-self",
            "fast-math-add-zero",
            "fast-math-exp-log",
            "fast-math-log-exp",
        ] {
            check_with(rule, floats, expected, &fast);
        }
    }
}

//! `np.einsum`: Einstein summation over labelled axes, as a composition of kiln's lazy ops.
//!
//! The subscripts are parsed into one label per axis (letters, and one label per axis of the
//! broadcast `...`); each operand's repeated labels become a diagonal view (a reshape and a
//! strided slice, no gather); then the operands are contracted pairwise, left to right (NumPy's
//! `optimize=False` order). A pairwise contraction that is a (batched) matrix product becomes
//! one IR `matmul` (labels in both operands that are kept are its batch axes; the summed ones its
//! inner axis; those of one operand only its rows or columns): reshapes and permutations around
//! it are views that the library call reads as strides. Any other contraction is a broadcast
//! `multiply` and a `sum`, which fuse into one reduction kernel with their neighbours. Labels
//! that neither the output nor a later operand needs are summed as early as possible.
//!
//! The same machinery ([`contract`]) serves `tensordot` and `inner` (`products.rs`).

use std::collections::BTreeMap;

use kiln_ir::promote::result_type_many;
use kiln_ir::shape::ShapeDisplay;
use kiln_ir::{DType, IrError};

use crate::array::Array;
use crate::error::Result;
use crate::views::SliceArg;

/// An axis label: a letter is its character code; axis `k` of the broadcast ellipsis (counted
/// from its first axis) is `ELLIPSIS + k`.
pub(crate) type Label = u32;

/// The first label of the ellipsis' axes (above every letter).
pub(crate) const ELLIPSIS: Label = 1 << 16;

/// A label as the subscripts write it (an ellipsis axis as `...`, numbered).
fn label_name(l: Label) -> String {
    if l >= ELLIPSIS {
        format!("...[{}]", l - ELLIPSIS)
    } else {
        char::from_u32(l).map(String::from).unwrap_or_else(|| format!("#{l}"))
    }
}

/// The shapes of some operands as NumPy writes them: `(2, 3) (3,)`.
fn shapes_text(shapes: &[&[usize]]) -> String {
    shapes.iter().map(|s| ShapeDisplay(s).to_string()).collect::<Vec<_>>().join(" ")
}

/// An error of the subscripts string itself ([`IrError::InvalidAttrs`]), naming the subscripts
/// and the operands' shapes.
fn subscripts_err(subs: &str, shapes: &[&[usize]], message: impl std::fmt::Display) -> IrError {
    IrError::InvalidAttrs {
        op: "einsum".into(),
        message: format!(
            "{message} (subscripts {subs:?}, operand shapes {})",
            if shapes.is_empty() { "none".to_string() } else { shapes_text(shapes) }
        ),
    }
}

/// One token of a term: a letter, or the ellipsis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Token {
    Letter(char),
    Ellipsis,
}

/// The tokens of one term (`ij`, `...ij`, ``): letters and at most one `...`.
fn tokenize(term: &str, subs: &str, shapes: &[&[usize]], what: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<char> = term.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            out.push(Token::Letter(c));
            i += 1;
        } else if c == '.' {
            if chars.get(i + 1) != Some(&'.') || chars.get(i + 2) != Some(&'.') {
                return Err(subscripts_err(
                    subs,
                    shapes,
                    format!("einstein sum subscripts string contains a '.' that is not part of an ellipsis '...' in {what}"),
                )
                .into());
            }
            if out.contains(&Token::Ellipsis) {
                return Err(subscripts_err(
                    subs,
                    shapes,
                    format!("einstein sum subscripts string contains more than one ellipsis '...' in {what}"),
                )
                .into());
            }
            out.push(Token::Ellipsis);
            i += 3;
        } else {
            return Err(subscripts_err(
                subs,
                shapes,
                format!("invalid subscript '{c}' in einstein sum subscripts string, subscripts must be letters"),
            )
            .into());
        }
    }
    Ok(out)
}

/// Parsed subscripts: each operand's labels (one per axis) and the output's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Subscripts {
    pub inputs: Vec<Vec<Label>>,
    pub output: Vec<Label>,
}

/// Parses `subs` for operands of `shapes` (NumPy's rules): spaces are ignored; one term per
/// operand, separated by commas; `->` then the output (explicit mode), or no `->` (implicit
/// mode: the ellipsis' axes, then the letters met exactly once, in character order, capitals
/// first).
pub(crate) fn parse(subs: &str, shapes: &[&[usize]]) -> Result<Subscripts> {
    let clean: String = subs.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match clean.split_once("->") {
        Some((l, r)) => {
            if r.contains("->") {
                return Err(subscripts_err(
                    subs,
                    shapes,
                    "einstein sum subscript string can only contain one '->'",
                )
                .into());
            }
            (l, Some(r))
        }
        None => (clean.as_str(), None),
    };
    for (c, what) in [('-', "'-'"), ('>', "'>'")] {
        if lhs.contains(c) || rhs.is_some_and(|r| r.contains(c)) {
            return Err(subscripts_err(
                subs,
                shapes,
                format!("einstein sum subscript string contains a {what} that is not part of '->'"),
            )
            .into());
        }
    }
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != shapes.len() {
        let which = if terms.len() < shapes.len() { "more" } else { "fewer" };
        return Err(subscripts_err(
            subs,
            shapes,
            format!(
                "{which} operands provided to einstein sum function than specified in the subscripts string ({} term(s), {} operand(s))",
                terms.len(),
                shapes.len()
            ),
        )
        .into());
    }
    let mut tokens = Vec::with_capacity(terms.len());
    let mut ell_rank = 0;
    for (k, (term, shape)) in terms.iter().zip(shapes).enumerate() {
        let t = tokenize(term, subs, shapes, &format!("operand {k}"))?;
        let letters = t.iter().filter(|t| matches!(t, Token::Letter(_))).count();
        let has_ell = t.contains(&Token::Ellipsis);
        if letters > shape.len() {
            return Err(subscripts_err(
                subs,
                shapes,
                format!(
                    "einstein sum subscripts string contains too many subscripts for operand {k} ({letters} for shape {})",
                    ShapeDisplay(shape)
                ),
            )
            .into());
        }
        if !has_ell && letters < shape.len() {
            return Err(subscripts_err(
                subs,
                shapes,
                format!(
                    "operand {k} has more dimensions than subscripts given in einstein sum, but no '...' ellipsis provided to broadcast the extra dimensions ({letters} for shape {})",
                    ShapeDisplay(shape)
                ),
            )
            .into());
        }
        if has_ell {
            ell_rank = ell_rank.max(shape.len() - letters);
        }
        tokens.push(t);
    }
    let inputs: Vec<Vec<Label>> = tokens
        .iter()
        .zip(shapes)
        .map(|(t, shape)| {
            let letters = t.iter().filter(|t| matches!(t, Token::Letter(_))).count();
            let e = shape.len() - letters;
            let mut labels = Vec::with_capacity(shape.len());
            for tok in t {
                match *tok {
                    Token::Letter(c) => labels.push(c as Label),
                    Token::Ellipsis => {
                        labels.extend((ell_rank - e..ell_rank).map(|j| ELLIPSIS + j as Label))
                    }
                }
            }
            labels
        })
        .collect();
    let ellipsis: Vec<Label> = (0..ell_rank).map(|j| ELLIPSIS + j as Label).collect();
    let output = match rhs {
        None => {
            let mut count: BTreeMap<Label, usize> = BTreeMap::new();
            for l in inputs.iter().flatten().filter(|&&l| l < ELLIPSIS) {
                *count.entry(*l).or_default() += 1;
            }
            let mut out = ellipsis;
            out.extend(count.into_iter().filter(|&(_, n)| n == 1).map(|(l, _)| l));
            out
        }
        Some(r) => {
            let t = tokenize(r, subs, shapes, "the output")?;
            let mut out: Vec<Label> = Vec::new();
            for tok in &t {
                match *tok {
                    Token::Letter(c) => {
                        let l = c as Label;
                        if out.contains(&l) {
                            return Err(subscripts_err(
                                subs,
                                shapes,
                                format!("einstein sum subscripts string includes output subscript '{c}' multiple times"),
                            )
                            .into());
                        }
                        if !inputs.iter().any(|ls| ls.contains(&l)) {
                            return Err(subscripts_err(
                                subs,
                                shapes,
                                format!("einstein sum subscripts string included output subscript '{c}' which never appeared in an input"),
                            )
                            .into());
                        }
                        out.push(l);
                    }
                    Token::Ellipsis => out.extend(ellipsis.iter().copied()),
                }
            }
            if ell_rank > 0 && !t.contains(&Token::Ellipsis) {
                return Err(subscripts_err(
                    subs,
                    shapes,
                    "output has more dimensions than subscripts given in einstein sum, but no '...' ellipsis provided to broadcast the extra dimensions.",
                )
                .into());
            }
            out
        }
    };
    Ok(Subscripts { inputs, output })
}

/// An operand during contraction: the array and one distinct label per axis.
struct Term {
    a: Array,
    labels: Vec<Label>,
}

/// The extent of every label over all operands: equal extents, or 1 (broadcast, NumPy's rule);
/// a label repeated in one operand must have one extent there. Errors name `op`, the label,
/// the operand and every shape.
fn label_sizes(
    op: &str,
    operands: &[(&Array, &[Label])],
    subs: Option<&str>,
) -> Result<BTreeMap<Label, usize>> {
    let shapes: Vec<&[usize]> = operands.iter().map(|(a, _)| a.shape()).collect();
    let context = || {
        let mut c = String::new();
        if let Some(s) = subs {
            c.push_str(&format!("subscripts {s:?}, "));
        }
        c.push_str(&format!("operand shapes {}", shapes_text(&shapes)));
        c
    };
    let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
    for (k, (a, labels)) in operands.iter().enumerate() {
        let mut own: BTreeMap<Label, usize> = BTreeMap::new();
        for (&l, &n) in labels.iter().zip(a.shape()) {
            if let Some(&m) = own.get(&l) {
                if m != n {
                    return Err(IrError::InvalidShape {
                        op: op.into(),
                        shape: a.shape().into(),
                        message: format!(
                            "dimensions in operand {k} for collapsing index '{}' don't match ({m} != {n}); {}",
                            label_name(l),
                            context()
                        ),
                    }
                    .into());
                }
            }
            own.insert(l, n);
        }
        for (l, n) in own {
            match sizes.get(&l).copied() {
                None => {
                    sizes.insert(l, n);
                }
                Some(m) if m == n || n == 1 => {}
                Some(1) => {
                    sizes.insert(l, n);
                }
                Some(m) => {
                    return Err(IrError::InvalidShape {
                        op: op.into(),
                        shape: a.shape().into(),
                        message: format!(
                            "size of label '{}' for operand {k} ({n}) does not match previous terms ({m}); {}",
                            label_name(l),
                            context()
                        ),
                    }
                    .into())
                }
            }
        }
    }
    Ok(sizes)
}

/// `a` with each label repeated among its axes taken once: the diagonal over those axes (a view:
/// the axes moved last, merged by a reshape, read with a stride of `1 + n + n^2 + ...`), as the
/// last axis.
fn take_diagonals(mut t: Term) -> Result<Term> {
    loop {
        let Some(&l) =
            t.labels.iter().enumerate().find_map(|(i, l)| t.labels[..i].contains(l).then_some(l))
        else {
            return Ok(t);
        };
        let at: Vec<usize> = (0..t.labels.len()).filter(|&i| t.labels[i] == l).collect();
        let rest: Vec<usize> = (0..t.labels.len()).filter(|&i| t.labels[i] != l).collect();
        let n = t.a.shape()[at[0]];
        let perm: Vec<i64> = rest.iter().chain(&at).map(|&i| i as i64).collect();
        let moved = t.a.try_permute(&perm)?;
        let mut shape: Vec<i64> = rest.iter().map(|&i| t.a.shape()[i] as i64).collect();
        let merged = n.pow(at.len() as u32);
        // 1 + n + ... + n^(k-1): from (i, i, .., i) to (i+1, i+1, .., i+1) in C order.
        let step: usize = (0..at.len()).map(|j| n.pow(j as u32)).sum();
        shape.push(merged as i64);
        let flat = moved.try_reshape(&shape)?;
        let diag = flat.try_slice(&[
            SliceArg::Ellipsis,
            SliceArg::Range { start: None, stop: None, step: step as i64 },
        ])?;
        let mut labels: Vec<Label> = rest.iter().map(|&i| t.labels[i]).collect();
        labels.push(l);
        t = Term { a: diag, labels };
    }
}

/// `t` summed over the labels `keep` rejects (none: `t` itself), in `dtype`.
fn sum_out(t: Term, keep: impl Fn(Label) -> bool, dtype: DType) -> Result<Term> {
    let axes: Vec<i64> =
        (0..t.labels.len()).filter(|&i| !keep(t.labels[i])).map(|i| i as i64).collect();
    if axes.is_empty() {
        return Ok(t);
    }
    let labels = t.labels.iter().copied().filter(|&l| keep(l)).collect();
    Ok(Term { a: t.a.try_sum(axes)?.cast_to(dtype), labels })
}

/// `t` with its axes in the order of `order` (which holds each of its labels once), extents
/// of labels in `full` broadcast to the given size.
fn arrange(t: &Term, order: &[Label], full: &BTreeMap<Label, usize>) -> Result<Array> {
    let perm: Vec<i64> = order
        .iter()
        .map(|l| t.labels.iter().position(|m| m == l).expect("a label of the term") as i64)
        .collect();
    let a = t.a.try_permute(&perm)?;
    let target: Vec<usize> =
        order.iter().zip(a.shape()).map(|(l, &n)| full.get(l).copied().unwrap_or(n)).collect();
    if target.as_slice() == a.shape() {
        Ok(a)
    } else {
        a.try_broadcast_to(&target)
    }
}

/// The contraction of two terms, keeping the labels `keep` accepts (every label of one term
/// only must be kept: [`sum_out`] first). Batch labels (in both, kept) come first in the
/// result, then `a`'s own labels, then `b`'s.
fn contract_pair(
    a: Term,
    b: Term,
    keep: impl Fn(Label) -> bool,
    sizes: &BTreeMap<Label, usize>,
    dtype: DType,
) -> Result<Term> {
    let batch: Vec<Label> =
        a.labels.iter().copied().filter(|l| b.labels.contains(l) && keep(*l)).collect();
    let inner: Vec<Label> =
        a.labels.iter().copied().filter(|l| b.labels.contains(l) && !keep(*l)).collect();
    let rows: Vec<Label> = a.labels.iter().copied().filter(|l| !b.labels.contains(l)).collect();
    let cols: Vec<Label> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    let extent = |t: &Term, l: Label| t.a.shape()[t.labels.iter().position(|&m| m == l).unwrap()];
    let mut labels = batch.clone();
    labels.extend(&rows);
    labels.extend(&cols);
    // Summed labels take their full extent in both operands (one may broadcast a 1).
    let full: BTreeMap<Label, usize> = inner.iter().map(|&l| (l, sizes[&l])).collect();
    if !inner.is_empty() && !(rows.is_empty() && cols.is_empty()) {
        // A (batched) matrix product: a as (batch.., M, K), b as (batch.., K, N).
        let ea: Vec<Label> = batch.iter().chain(&rows).chain(&inner).copied().collect();
        let eb: Vec<Label> = batch.iter().chain(&inner).chain(&cols).copied().collect();
        let (pa, pb) = (arrange(&a, &ea, &full)?, arrange(&b, &eb, &full)?);
        let m: usize = rows.iter().map(|&l| extent(&a, l)).product();
        let n: usize = cols.iter().map(|&l| extent(&b, l)).product();
        let k: usize = inner.iter().map(|l| full[l]).product();
        let mut sa: Vec<i64> = batch.iter().map(|&l| extent(&a, l) as i64).collect();
        let mut sb: Vec<i64> = batch.iter().map(|&l| extent(&b, l) as i64).collect();
        sa.extend([m as i64, k as i64]);
        sb.extend([k as i64, n as i64]);
        let prod = crate::linalg::try_matmul(&pa.try_reshape(&sa)?, &pb.try_reshape(&sb)?)?;
        let mut out: Vec<i64> = prod.shape()[..batch.len()].iter().map(|&d| d as i64).collect();
        out.extend(rows.iter().map(|&l| extent(&a, l) as i64));
        out.extend(cols.iter().map(|&l| extent(&b, l) as i64));
        return Ok(Term { a: prod.try_reshape(&out)?.cast_to(dtype), labels });
    }
    // Otherwise a broadcast product over (batch.., a's, b's, summed..), summed over the last.
    let order: Vec<Label> = labels.iter().chain(&inner).copied().collect();
    let spread = |t: &Term| -> Result<Array> {
        let own: Vec<Label> = order.iter().copied().filter(|l| t.labels.contains(l)).collect();
        let x = arrange(t, &own, &full)?;
        let shape: Vec<i64> = order
            .iter()
            .map(|l| own.iter().position(|m| m == l).map_or(1, |i| x.shape()[i] as i64))
            .collect();
        x.try_reshape(&shape)
    };
    let prod = spread(&a)?.try_multiply(&spread(&b)?)?;
    let t = Term { a: prod, labels: order };
    let mut r = sum_out(t, |l| !inner.contains(&l), dtype)?;
    r.a = r.a.cast_to(dtype);
    Ok(r)
}

/// Contracts `operands` (each with one label per axis, repeats allowed) to the labels `output`
/// (each met in some operand), pairwise left to right, in `dtype` (the operands are cast to it).
/// `op` and `subs` name the call in errors (extents that differ).
pub(crate) fn contract(
    op: &str,
    subs: Option<&str>,
    operands: &[(&Array, &[Label])],
    output: &[Label],
    dtype: DType,
) -> Result<Array> {
    let sizes = label_sizes(op, operands, subs)?;
    let mut terms: Vec<Term> = operands
        .iter()
        .map(|(a, labels)| take_diagonals(Term { a: a.cast_to(dtype), labels: labels.to_vec() }))
        .collect::<Result<_>>()?;
    let mut rest = terms.split_off(1);
    rest.reverse();
    let mut acc = terms.pop().expect("at least one operand");
    while let Some(b) = rest.pop() {
        // The labels needed after this pair: the output's and the later operands'.
        let later = |l: Label| output.contains(&l) || rest.iter().any(|t| t.labels.contains(&l));
        let b_labels = b.labels.clone();
        acc = sum_out(acc, |l| later(l) || b_labels.contains(&l), dtype)?;
        let a_labels = acc.labels.clone();
        let b = sum_out(b, |l| later(l) || a_labels.contains(&l), dtype)?;
        acc = contract_pair(acc, b, later, &sizes, dtype)?;
    }
    let acc = sum_out(acc, |l| output.contains(&l), dtype)?;
    // The output's order; a label's extent as the broadcast of all operands gives it.
    let full: BTreeMap<Label, usize> = output.iter().map(|&l| (l, sizes[&l])).collect();
    Ok(arrange(&acc, output, &full)?.cast_to(dtype))
}

/// `np.einsum(subscripts, *operands)`: Einstein summation.
///
/// `subscripts` names each operand's axes with letters (`a`-`z`, `A`-`Z`), one term per
/// operand separated by commas, and optionally `->` and the output's axes:
/// - explicit mode, `"ij,jk->ik"`: the result's axes in that order; every other label is summed;
/// - implicit mode, `"ij,jk"`: the output is the labels that appear exactly once, in character
///   order (capitals first), after the ellipsis' axes;
/// - a label repeated within one operand takes the diagonal (`"ii->i"`; `"ii"` is the trace);
/// - `...` stands for the axes not named; the operands' ellipses broadcast together (right
///   aligned, extents 1 stretch) and the output keeps them where its `...` is (first in implicit
///   mode); a letter's extents may also differ by broadcasting a 1, as NumPy allows.
///
/// Spaces are ignored. Any number of operands (at least one); they are contracted pairwise,
/// left to right (NumPy's `optimize=False` order). A pairwise contraction that is a (batched)
/// matrix product (labels summed, and labels of only one operand kept) becomes one `matmul`
/// (`"bij,bjk->bik"` is one batched matmul); the others a broadcast `multiply` and a `sum`.
///
/// Shapes: the output's labels' extents. Dtype: `np.result_type` of all operands (integers
/// wrap, bools give `any` of `and`s, as NumPy's einsum).
///
/// Errors ([`IrError::InvalidAttrs`], naming the subscripts and operand shapes): a character
/// other than letters, `,`, `->`, `...` and spaces; more than one ellipsis in a term or `->`; a
/// number of terms other than the number of operands (or no operand); a term with more letters
/// than its operand has axes, or fewer without an ellipsis; an output letter met in no input, or
/// met twice; an output without `...` where the inputs' ellipses have axes. [`IrError::InvalidShape`]
/// (naming the operand): a label's extents that differ (and are not 1), or a label repeated in
/// one operand over axes of different extents.
pub fn try_einsum(subscripts: &str, operands: &[&Array]) -> Result<Array> {
    let shapes: Vec<&[usize]> = operands.iter().map(|a| a.shape()).collect();
    if operands.is_empty() {
        return Err(subscripts_err(subscripts, &shapes, "einsum needs at least one operand").into());
    }
    let parsed = parse(subscripts, &shapes)?;
    let dtype = result_type_many(&operands.iter().map(|a| a.dtype()).collect::<Vec<_>>())
        .expect("at least one operand");
    let ops: Vec<(&Array, &[Label])> =
        operands.iter().zip(&parsed.inputs).map(|(a, l)| (*a, l.as_slice())).collect();
    contract("einsum", Some(subscripts), &ops, &parsed.output, dtype)
        .map_err(|e| e.within("einsum"))
}

/// [`try_einsum`], panicking on error.
#[track_caller]
pub fn einsum(subscripts: &str, operands: &[&Array]) -> Array {
    crate::unwrap(try_einsum(subscripts, operands))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Vec<Label> {
        s.chars().map(|c| c as Label).collect()
    }

    #[test]
    fn implicit_output_is_the_single_letters_in_order() {
        let p = parse("Ba,aC", &[&[2, 3], &[3, 4]]).unwrap();
        assert_eq!(p.output, l("BC"));
        let p = parse("ii", &[&[3, 3]]).unwrap();
        assert!(p.output.is_empty());
        let p = parse(" ...ij , ...jk ", &[&[5, 2, 3], &[3, 4]]).unwrap();
        assert_eq!(p.output, vec![ELLIPSIS, 'i' as Label, 'k' as Label]);
        assert_eq!(p.inputs[1], l("jk"));
    }

    #[test]
    fn ellipses_are_right_aligned() {
        let p = parse("...i,...i->...", &[&[2, 3, 4], &[3, 4]]).unwrap();
        assert_eq!(p.inputs[0], vec![ELLIPSIS, ELLIPSIS + 1, 'i' as Label]);
        assert_eq!(p.inputs[1], vec![ELLIPSIS + 1, 'i' as Label]);
        assert_eq!(p.output, vec![ELLIPSIS, ELLIPSIS + 1]);
    }

    #[test]
    fn bad_subscripts_are_errors() {
        for (s, shapes, what) in [
            ("i%", &[&[2usize, 3][..]][..], "invalid subscript '%'"),
            ("ij,jk", &[&[2, 3]], "fewer operands"),
            ("ij->ik", &[&[2, 3]], "never appeared"),
            ("ij->ii", &[&[2, 3]], "multiple times"),
            ("ijk", &[&[2, 3]], "too many subscripts"),
            ("i", &[&[2, 3]], "no '...'"),
            ("....i", &[&[2, 3]], "not part of an ellipsis"),
            ("i->i->i", &[&[2]], "one '->'"),
            ("i-i", &[&[2]], "'-'"),
        ] {
            let e = parse(s, shapes).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("einsum"), "{s}: {e}");
        }
    }
}

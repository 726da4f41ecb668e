//! Result dtype and shape of a node from its op's table row, attributes and input types. The
//! frontend calls this when an op is written (so errors come early) and the verifier calls it on
//! every node between stages.

use crate::dtype::{DType, DTypeKind};
use crate::error::{IrError, Result};
use crate::graph::Attrs;
use crate::ops::{Arity, AttrKind, DTypeRule, OpClass, OpKind};
use crate::shape::{can_broadcast_to, numel, Shape};

fn attrs_err(op: OpKind, message: impl Into<String>) -> IrError {
    IrError::InvalidAttrs { op: op.name().to_string(), message: message.into() }
}

fn check_axes(op: OpKind, axes: &[usize], rank: usize) -> Result<()> {
    for w in axes.windows(2) {
        if w[0] >= w[1] {
            return Err(attrs_err(op, format!("axes {axes:?} must be sorted and distinct")));
        }
    }
    if let Some(&a) = axes.iter().find(|&&a| a >= rank) {
        return Err(IrError::AxisOutOfBounds { op: op.name().into(), axis: a as i64, rank });
    }
    Ok(())
}

/// The dtype and shape of `op` applied to inputs of the given dtypes and shapes.
///
/// Leaves have no rule (their node declares its type): for them this is an error.
pub fn infer(op: OpKind, attrs: &Attrs, inputs: &[(DType, &[usize])]) -> Result<(DType, Shape)> {
    let info = op.info();
    let name = info.name;
    match info.arity {
        Arity::Fixed(n) if inputs.len() != n => {
            return Err(IrError::Arity {
                op: name.into(),
                expected: n.to_string(),
                got: inputs.len(),
            })
        }
        Arity::Variadic if inputs.is_empty() => {
            return Err(IrError::Arity { op: name.into(), expected: "at least 1".into(), got: 0 })
        }
        _ => {}
    }
    if attrs.kind() != info.attrs {
        return Err(attrs_err(
            op,
            format!("expected {:?} attributes, got {:?}", info.attrs, attrs.kind()),
        ));
    }
    if let Attrs::Philox { per_call, words } = *attrs {
        if !matches!((per_call, words), (4, 1) | (4, 2) | (2, 2)) {
            return Err(attrs_err(
                op,
                format!("per_call {per_call} and words {words}: expected (4, 1), (4, 2) or (2, 2)"),
            ));
        }
        if inputs.iter().any(|&(d, _)| d != DType::UInt64) {
            return Err(IrError::UnsupportedDType {
                op: name.into(),
                dtypes: inputs.iter().map(|i| i.0).collect(),
                accepted: "uint64 counters and keys".into(),
            });
        }
    }
    // The operands whose dtype the domain and the Same rule constrain.
    let data: &[(DType, &[usize])] =
        if info.dtype_rule == DTypeRule::Select { &inputs[1..] } else { inputs };
    for &(d, _) in data {
        if !info.domain.contains(d) {
            return Err(IrError::UnsupportedDType {
                op: name.into(),
                dtypes: inputs.iter().map(|i| i.0).collect(),
                accepted: info.domain.describe(),
            });
        }
    }
    let same_dtype = || -> Result<DType> {
        let d0 = data[0].0;
        if data.iter().any(|&(d, _)| d != d0) {
            return Err(IrError::DTypeMismatch {
                op: name.into(),
                dtypes: inputs.iter().map(|i| i.0).collect(),
            });
        }
        Ok(d0)
    };
    let dtype = match info.dtype_rule {
        DTypeRule::Declared => {
            return Err(attrs_err(op, "a leaf's type is declared, not inferred"))
        }
        DTypeRule::Same => same_dtype()?,
        DTypeRule::Bool => {
            same_dtype()?;
            DType::Bool
        }
        DTypeRule::Real => same_dtype()?.real_dtype(),
        DTypeRule::SumLike => match same_dtype()?.kind() {
            DTypeKind::Bool | DTypeKind::SignedInt => DType::Int64,
            DTypeKind::UnsignedInt => DType::UInt64,
            _ => data[0].0,
        },
        DTypeRule::Index => DType::Int64,
        DTypeRule::Float32 => {
            same_dtype()?;
            DType::Float32
        }
        DTypeRule::Select => {
            if inputs[0].0 != DType::Bool {
                return Err(IrError::UnsupportedDType {
                    op: name.into(),
                    dtypes: inputs.iter().map(|i| i.0).collect(),
                    accepted: "a bool condition".into(),
                });
            }
            same_dtype()?
        }
        DTypeRule::Attribute => match attrs {
            Attrs::DType { dtype } => *dtype,
            _ => unreachable!("checked against the schema above"),
        },
        DTypeRule::Reinterpret => match attrs {
            Attrs::DType { dtype } => {
                let d = same_dtype()?;
                if !info.domain.contains(*dtype) || dtype.itemsize() != d.itemsize() {
                    return Err(IrError::UnsupportedDType {
                        op: name.into(),
                        dtypes: vec![d, *dtype],
                        accepted: format!("{} of the input's item size", info.domain.describe()),
                    });
                }
                *dtype
            }
            _ => unreachable!("checked against the schema above"),
        },
        DTypeRule::Complex => {
            let d = same_dtype()?;
            d.complex_dtype().ok_or_else(|| IrError::UnsupportedDType {
                op: name.into(),
                dtypes: vec![d],
                accepted: "float, complex".into(),
            })?
        }
        DTypeRule::Gathered => {
            if inputs[1].0 != DType::Int64 {
                return Err(IrError::UnsupportedDType {
                    op: name.into(),
                    dtypes: inputs.iter().map(|i| i.0).collect(),
                    accepted: "int64 positions".into(),
                });
            }
            inputs[0].0
        }
        DTypeRule::Decomposed => {
            let d = same_dtype()?;
            match (op, attrs) {
                (OpKind::Slogdet, Attrs::Linalg { output: 1, .. })
                | (OpKind::Svd, Attrs::Linalg { output: 1, .. })
                | (OpKind::Eigh, Attrs::Linalg { output: 0, .. }) => d.real_dtype(),
                _ => d,
            }
        }
        DTypeRule::Scattered => {
            if inputs[1].0 != DType::Int64 || inputs[2].0 != inputs[0].0 {
                return Err(IrError::UnsupportedDType {
                    op: name.into(),
                    dtypes: inputs.iter().map(|i| i.0).collect(),
                    accepted: "int64 positions and values of the array's dtype".into(),
                });
            }
            inputs[0].0
        }
    };

    let s0: &[usize] = inputs[0].1;
    let shape: Shape = match info.class {
        OpClass::Leaf => unreachable!("leaves have the Declared rule"),
        OpClass::Elementwise => {
            if inputs.iter().any(|&(_, s)| s != s0) {
                return Err(IrError::ShapeMismatch {
                    op: name.into(),
                    shapes: inputs.iter().map(|i| i.1.into()).collect(),
                });
            }
            Shape::from_slice(s0)
        }
        OpClass::Reduce => {
            let Attrs::Reduce { axes, keepdims } = attrs else { unreachable!() };
            check_axes(op, axes, s0.len())?;
            if matches!(op, OpKind::ArgMax | OpKind::ArgMin) && axes.len() != 1 {
                return Err(attrs_err(op, "argmax/argmin reduce exactly one axis"));
            }
            let reduced: usize = axes.iter().map(|&a| s0[a]).product();
            if reduced == 0
                && matches!(op, OpKind::Max | OpKind::Min | OpKind::ArgMax | OpKind::ArgMin)
            {
                return Err(IrError::EmptyReduction {
                    op: name.into(),
                    shape: s0.into(),
                    axes: axes.to_vec(),
                });
            }
            (0..s0.len())
                .filter_map(|i| if axes.contains(&i) { keepdims.then_some(1) } else { Some(s0[i]) })
                .collect()
        }
        OpClass::View => view_shape(op, attrs, s0)?,
        OpClass::Copy => match attrs {
            Attrs::None => s0.into(),
            Attrs::Axis { axis } => {
                let axis = *axis;
                let stack = op == OpKind::Stack;
                let rank = s0.len() + stack as usize;
                if axis >= rank {
                    return Err(IrError::AxisOutOfBounds {
                        op: name.into(),
                        axis: axis as i64,
                        rank,
                    });
                }
                for &(_, s) in inputs {
                    let ok = s.len() == s0.len()
                        && (0..s0.len()).all(|i| s[i] == s0[i] || (!stack && i == axis));
                    if !ok {
                        return Err(IrError::ShapeMismatch {
                            op: name.into(),
                            shapes: inputs.iter().map(|i| i.1.into()).collect(),
                        });
                    }
                }
                let mut out: Shape = s0.into();
                if stack {
                    out.insert(axis, inputs.len());
                } else {
                    // A sum past usize would wrap to a small extent: too big, not wrapped.
                    out[axis] = inputs
                        .iter()
                        .try_fold(0usize, |acc, i| acc.checked_add(i.1[axis]))
                        .ok_or_else(|| IrError::TooBig { op: name.into(), shape: s0.into() })?;
                }
                out
            }
            _ => unreachable!(),
        },
        OpClass::Vendor => match op {
            OpKind::MatMul => matmul_shape(inputs[0].1, inputs[1].1)?,
            OpKind::Fft => {
                let Attrs::Fft { axes, .. } = attrs else { unreachable!() };
                check_fft_axes(op, axes, s0.len(), false)?;
                s0.into()
            }
            OpKind::Rfft | OpKind::Irfft => {
                let Attrs::RealFft { axes, n, .. } = attrs else { unreachable!() };
                check_fft_axes(op, axes, s0.len(), true)?;
                let last = *axes.last().expect("checked non-empty");
                let (want, out) =
                    if op == OpKind::Rfft { (*n, n / 2 + 1) } else { (n / 2 + 1, *n) };
                if *n == 0 || s0[last] != want {
                    return Err(IrError::InvalidShape {
                        op: name.into(),
                        shape: s0.into(),
                        message: format!("n={n} needs {want} elements along axis {last}"),
                    });
                }
                let mut out_shape: Shape = s0.into();
                out_shape[last] = out;
                out_shape
            }
            OpKind::Cholesky
            | OpKind::Solve
            | OpKind::Inv
            | OpKind::Det
            | OpKind::Slogdet
            | OpKind::Qr
            | OpKind::Svd
            | OpKind::Eigh => decomposition_shape(op, attrs, inputs)?,
            other => return Err(attrs_err(other, "not a vendor op")),
        },
        OpClass::Gather => {
            // take: one element of the flattened input per position.
            let positions = inputs[1].1;
            if numel(s0) == 0 && numel(positions) > 0 {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: s0.into(),
                    message: "cannot take from an empty array".into(),
                });
            }
            positions.into()
        }
        OpClass::Scatter => {
            // values[i, j...] goes to row idx[i] of a: values' shape is idx's then a's rows'.
            let (positions, values) = (inputs[1].1, inputs[2].1);
            if s0.is_empty() {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: s0.into(),
                    message: "cannot scatter into a 0-d array".into(),
                });
            }
            let want: Shape = positions.iter().chain(&s0[1..]).copied().collect();
            if values != want.as_slice() {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: values.into(),
                    message: format!("values must have shape {want:?} (the positions' {positions:?}, then the rows' {:?})", &s0[1..]),
                });
            }
            if s0[0] == 0 && numel(positions) > 0 {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: s0.into(),
                    message: "cannot scatter into an empty axis".into(),
                });
            }
            s0.into()
        }
        OpClass::Sort if op == OpKind::Argtopk => {
            let Attrs::TopK { axis, k, .. } = attrs else { unreachable!() };
            if *axis >= s0.len() {
                return Err(IrError::AxisOutOfBounds {
                    op: name.into(),
                    axis: *axis as i64,
                    rank: s0.len(),
                });
            }
            if *k > s0[*axis] {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: s0.into(),
                    message: format!("k ({k}) is larger than the axis ({})", s0[*axis]),
                });
            }
            let mut s: Shape = s0.into();
            s[*axis] = *k;
            s
        }
        OpClass::Scan | OpClass::Sort => {
            let Attrs::Axis { axis } = attrs else { unreachable!() };
            if *axis >= s0.len() {
                return Err(IrError::AxisOutOfBounds {
                    op: name.into(),
                    axis: *axis as i64,
                    rank: s0.len(),
                });
            }
            match op {
                OpKind::Compact if inputs[1].1 != s0 => {
                    return Err(IrError::InvalidShape {
                        op: name.into(),
                        shape: inputs[1].1.into(),
                        message: format!("the values must have the condition's shape {s0:?}"),
                    })
                }
                OpKind::CompactCount => {
                    let mut s: Shape = s0.into();
                    s[*axis] = 1;
                    s
                }
                OpKind::SortTake => sort_take_shape(name, s0, inputs[1].1, *axis)?,
                _ => s0.into(),
            }
        }
        OpClass::Custom => {
            return Err(attrs_err(op, "a custom kernel's type is declared, not inferred"))
        }
    };
    Ok((dtype, shape))
}

/// `sort_take`'s result: `a`'s shape with `k`'s extent along `axis`; `k` of `a`'s rank, each
/// other extent 1 or `a`'s.
fn sort_take_shape(name: &str, a: &[usize], k: &[usize], axis: usize) -> Result<Shape> {
    let fits = k.len() == a.len() && (0..a.len()).all(|i| i == axis || k[i] == 1 || k[i] == a[i]);
    if !fits {
        return Err(IrError::ShapeMismatch { op: name.into(), shapes: vec![a.into(), k.into()] });
    }
    let mut out: Shape = a.into();
    out[axis] = k[axis];
    if a[axis] == 0 && numel(&out) > 0 {
        return Err(IrError::InvalidShape {
            op: name.into(),
            shape: a.into(),
            message: "cannot take from an empty axis".into(),
        });
    }
    Ok(out)
}

fn view_shape(op: OpKind, attrs: &Attrs, s0: &[usize]) -> Result<Shape> {
    let name = op.name();
    Ok(match (op, attrs) {
        (OpKind::Reshape, Attrs::Shape { shape }) => {
            if numel(shape) != numel(s0) {
                return Err(IrError::Reshape {
                    op: name.into(),
                    size: numel(s0),
                    to: shape.clone(),
                });
            }
            shape.clone()
        }
        (OpKind::BroadcastTo, Attrs::Shape { shape }) => {
            if !can_broadcast_to(s0, shape) {
                return Err(IrError::Broadcast {
                    op: name.into(),
                    shapes: vec![s0.into(), shape.clone()],
                });
            }
            shape.clone()
        }
        (OpKind::Permute, Attrs::Perm { perm }) => {
            let mut seen = vec![false; s0.len()];
            if perm.len() != s0.len()
                || perm.iter().any(|&p| p >= s0.len() || std::mem::replace(&mut seen[p], true))
            {
                return Err(attrs_err(
                    op,
                    format!("axes {perm:?} don't match array of dimension {}", s0.len()),
                ));
            }
            perm.iter().map(|&p| s0[p]).collect()
        }
        (OpKind::Slice, Attrs::Slice { dims }) => {
            if dims.len() != s0.len() {
                return Err(attrs_err(
                    op,
                    format!("{} slice dims for an array of dimension {}", dims.len(), s0.len()),
                ));
            }
            for (d, &n) in dims.iter().zip(s0) {
                let last = d.start as isize + (d.len as isize - 1) * d.step;
                if d.step == 0 || (d.len > 0 && (d.start >= n || last < 0 || last >= n as isize)) {
                    return Err(attrs_err(op, format!("slice {d:?} out of bounds for extent {n}")));
                }
            }
            dims.iter().map(|d| d.len).collect()
        }
        (OpKind::ExpandDims, Attrs::Axes { axes }) => {
            let rank = s0.len() + axes.len();
            check_axes(op, axes, rank)?;
            let mut it = s0.iter();
            (0..rank).map(|i| if axes.contains(&i) { 1 } else { *it.next().unwrap() }).collect()
        }
        (OpKind::Squeeze, Attrs::Axes { axes }) => {
            check_axes(op, axes, s0.len())?;
            if let Some(&a) = axes.iter().find(|&&a| s0[a] != 1) {
                return Err(IrError::InvalidShape {
                    op: name.into(),
                    shape: s0.into(),
                    message: format!("cannot select an axis to squeeze out which has size not equal to one (axis {a})"),
                });
            }
            (0..s0.len()).filter(|i| !axes.contains(i)).map(|i| s0[i]).collect()
        }
        (OpKind::Flip, Attrs::Axes { axes }) => {
            check_axes(op, axes, s0.len())?;
            s0.into()
        }
        _ => return Err(attrs_err(op, "not a view op with these attributes")),
    })
}

/// `np.matmul`'s shape rule for operands of rank >= 2 (the frontend handles rank 1 by adding and
/// removing an axis): batch axes broadcast, `(.., m, k) @ (.., k, n) -> (.., m, n)`.
pub fn matmul_shape(a: &[usize], b: &[usize]) -> Result<Shape> {
    if a.len() < 2 || b.len() < 2 {
        return Err(IrError::InvalidShape {
            op: "matmul".into(),
            shape: if a.len() < 2 { a.into() } else { b.into() },
            message: "operands of the IR's matmul have rank >= 2".into(),
        });
    }
    let (m, k1) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k1 != k2 {
        return Err(IrError::MatMulShape { op: "matmul".into(), a: a.into(), b: b.into(), k1, k2 });
    }
    let mut out = crate::shape::broadcast_shapes("matmul", &a[..a.len() - 2], &b[..b.len() - 2])?;
    out.push(m);
    out.push(n);
    Ok(out)
}

/// An FFT's `axes`: non-empty, in bounds, no repeats, and canonical: sorted for `fft`; for the
/// real transforms (`halved_last`) the others sorted and the halved axis last.
fn check_fft_axes(op: OpKind, axes: &[usize], rank: usize, halved_last: bool) -> Result<()> {
    let Some(&last) = axes.last() else {
        return Err(attrs_err(op, "an FFT transforms at least one axis"));
    };
    check_axes(op, if halved_last { &axes[..axes.len() - 1] } else { axes }, rank)?;
    if last >= rank {
        return Err(IrError::AxisOutOfBounds { op: op.name().into(), axis: last as i64, rank });
    }
    if halved_last && axes[..axes.len() - 1].contains(&last) {
        return Err(IrError::RepeatedAxis { op: op.name().into(), axis: last as i64 });
    }
    Ok(())
}

/// The result dtype of elementwise `op` without attributes on `arity` operands all of `dtype`
/// and of one shape, remembered per op and dtype: there [`infer`]'s dtype depends on nothing
/// else (the shape is the operands'). `None` where `op` is not such an op of that arity, or
/// where `infer` errs (the caller's `infer` then reports the error).
pub fn uniform_elementwise_dtype(op: OpKind, dtype: DType, arity: usize) -> Option<DType> {
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::OnceLock;
    const UNKNOWN: u8 = u8::MAX;
    static RESULTS: OnceLock<Box<[AtomicU8]>> = OnceLock::new();
    let info = op.info();
    if info.class != OpClass::Elementwise || info.arity != Arity::Fixed(arity) {
        return None;
    }
    let results = RESULTS.get_or_init(|| {
        (0..OpKind::ALL.len() * DType::ALL.len()).map(|_| AtomicU8::new(UNKNOWN)).collect()
    });
    let slot = &results[op as usize * DType::ALL.len() + dtype as usize];
    match slot.load(Ordering::Relaxed) {
        UNKNOWN => {
            let inputs: smallvec::SmallVec<[(DType, &[usize]); 3]> =
                (0..arity).map(|_| (dtype, &[][..])).collect();
            let (result, _) = infer(op, &Attrs::None, &inputs).ok()?;
            slot.store(result as u8, Ordering::Relaxed);
            Some(result)
        }
        known => DType::ALL.get(usize::from(known)).copied(),
    }
}

/// Whether the attribute schema of `op` is [`AttrKind::None`].
pub fn takes_no_attrs(op: OpKind) -> bool {
    op.info().attrs == AttrKind::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    #[test]
    fn elementwise_rules() {
        let s: &[usize] = &[2, 3];
        assert_eq!(
            infer(OpKind::Add, &Attrs::None, &[(DType::Int8, s), (DType::Int8, s)]).unwrap().0,
            DType::Int8
        );
        assert_eq!(
            infer(OpKind::Lt, &Attrs::None, &[(DType::Float32, s), (DType::Float32, s)]).unwrap().0,
            DType::Bool
        );
        assert_eq!(
            infer(OpKind::Abs, &Attrs::None, &[(DType::Complex64, s)]).unwrap().0,
            DType::Float32
        );
        assert!(matches!(
            infer(OpKind::Add, &Attrs::None, &[(DType::Int8, s), (DType::Int16, s)]),
            Err(IrError::DTypeMismatch { .. })
        ));
        assert!(matches!(
            infer(OpKind::Sin, &Attrs::None, &[(DType::Int32, s)]),
            Err(IrError::UnsupportedDType { .. })
        ));
        assert!(matches!(
            infer(OpKind::Add, &Attrs::None, &[(DType::Int8, s), (DType::Int8, &[3])]),
            Err(IrError::ShapeMismatch { .. })
        ));
        let w = infer(
            OpKind::Where,
            &Attrs::None,
            &[(DType::Bool, s), (DType::Float64, s), (DType::Float64, s)],
        )
        .unwrap();
        assert_eq!(w.0, DType::Float64);
        let label = Attrs::Custom { name: "k".into() };
        assert_eq!(
            infer(OpKind::Label, &label, &[(DType::Int8, s)]).unwrap(),
            (DType::Int8, s.into())
        );
        assert!(infer(OpKind::Label, &Attrs::None, &[(DType::Int8, s)]).is_err());
    }

    #[test]
    fn take_rules() {
        let t = infer(
            OpKind::Take,
            &Attrs::None,
            &[(DType::Float16, &[2, 3]), (DType::Int64, &[4, 1, 5])],
        )
        .unwrap();
        assert_eq!((t.0, t.1.as_slice()), (DType::Float16, &[4usize, 1, 5][..]));
        let e =
            infer(OpKind::Take, &Attrs::None, &[(DType::Float16, &[2, 3]), (DType::Int32, &[4])]);
        assert!(matches!(e, Err(IrError::UnsupportedDType { .. })), "{e:?}");
        let e =
            infer(OpKind::Take, &Attrs::None, &[(DType::Float16, &[0, 3]), (DType::Int64, &[4])]);
        assert!(matches!(e, Err(IrError::InvalidShape { .. })), "{e:?}");
        // Nothing taken from nothing.
        assert!(infer(OpKind::Take, &Attrs::None, &[(DType::Bool, &[0]), (DType::Int64, &[0, 2])])
            .is_ok());
    }

    #[test]
    fn reduction_rules() {
        let s: &[usize] = &[2, 0, 4];
        let r = infer(
            OpKind::Sum,
            &Attrs::Reduce { axes: smallvec![1], keepdims: false },
            &[(DType::Int8, s)],
        )
        .unwrap();
        assert_eq!((r.0, r.1.as_slice()), (DType::Int64, &[2usize, 4][..]));
        let r = infer(
            OpKind::Sum,
            &Attrs::Reduce { axes: smallvec![0, 2], keepdims: true },
            &[(DType::UInt8, s)],
        )
        .unwrap();
        assert_eq!((r.0, r.1.as_slice()), (DType::UInt64, &[1usize, 0, 1][..]));
        let e = infer(
            OpKind::Max,
            &Attrs::Reduce { axes: smallvec![1], keepdims: false },
            &[(DType::Float32, s)],
        );
        assert!(matches!(e, Err(IrError::EmptyReduction { .. })));
        assert!(infer(
            OpKind::Max,
            &Attrs::Reduce { axes: smallvec![0], keepdims: false },
            &[(DType::Float32, &[3, 0])]
        )
        .is_ok());
    }

    #[test]
    fn view_rules() {
        let s: &[usize] = &[2, 3];
        let r = infer(OpKind::Permute, &Attrs::Perm { perm: smallvec![1, 0] }, &[(DType::Bool, s)])
            .unwrap();
        assert_eq!(r.1.as_slice(), &[3, 2]);
        assert!(infer(OpKind::Reshape, &Attrs::Shape { shape: smallvec![5] }, &[(DType::Bool, s)])
            .is_err());
        let r =
            infer(OpKind::ExpandDims, &Attrs::Axes { axes: smallvec![0, 3] }, &[(DType::Bool, s)])
                .unwrap();
        assert_eq!(r.1.as_slice(), &[1, 2, 3, 1]);
        assert!(infer(OpKind::Squeeze, &Attrs::Axes { axes: smallvec![0] }, &[(DType::Bool, s)])
            .is_err());
        let c = infer(
            OpKind::Concatenate,
            &Attrs::Axis { axis: 1 },
            &[(DType::Bool, s), (DType::Bool, &[2, 5])],
        )
        .unwrap();
        assert_eq!(c.1.as_slice(), &[2, 8]);
        let st =
            infer(OpKind::Stack, &Attrs::Axis { axis: 2 }, &[(DType::Bool, s), (DType::Bool, s)])
                .unwrap();
        assert_eq!(st.1.as_slice(), &[2, 3, 2]);
        let m = matmul_shape(&[5, 1, 2, 3], &[4, 3, 7]).unwrap();
        assert_eq!(m.as_slice(), &[5, 4, 2, 7]);
        assert!(matches!(matmul_shape(&[2, 3], &[4, 5]), Err(IrError::MatMulShape { .. })));
    }

    /// The remembered dtype is `infer`'s for every op and dtype it answers (asked twice: once
    /// computed, once remembered), and there is none for ops that are not uniform elementwise
    /// ops of that arity.
    #[test]
    fn uniform_elementwise_dtypes_are_infers() {
        for &op in OpKind::ALL {
            let info = op.info();
            for arity in 1..=3 {
                for d in DType::ALL {
                    let shape: &[usize] = &[4, 3];
                    let types: Vec<(DType, &[usize])> = (0..arity).map(|_| (d, shape)).collect();
                    let uniform =
                        info.class == OpClass::Elementwise && info.arity == Arity::Fixed(arity);
                    let want = infer(op, &Attrs::None, &types).ok().map(|r| r.0);
                    for _ in 0..2 {
                        let got = uniform_elementwise_dtype(op, d, arity);
                        assert_eq!(got, want.filter(|_| uniform), "{op:?} {d} arity {arity}");
                    }
                }
            }
        }
    }
}

/// The result shape of a linear-algebra op (see the op table): operands are stacks of matrices
/// over their last two axes; `solve`'s right-hand sides share `a`'s batch axes.
fn decomposition_shape(op: OpKind, attrs: &Attrs, inputs: &[(DType, &[usize])]) -> Result<Shape> {
    let name = op.name();
    let s0 = inputs[0].1;
    let bad =
        |message: String| IrError::InvalidShape { op: name.into(), shape: s0.into(), message };
    if s0.len() < 2 {
        return Err(bad(format!(
            "{}-dimensional array given. Array must be at least two-dimensional",
            s0.len()
        )));
    }
    let r = s0.len();
    let (m, n) = (s0[r - 2], s0[r - 1]);
    let batch = &s0[..r - 2];
    let with = |tail: &[usize]| -> Shape { batch.iter().chain(tail).copied().collect() };
    let square = || {
        if m == n {
            Ok(())
        } else {
            Err(bad("Last 2 dimensions of the array must be square".into()))
        }
    };
    let (output, full) = match attrs {
        Attrs::Linalg { output, full_matrices } => (*output, *full_matrices),
        _ => (0, false),
    };
    let outputs = match op {
        OpKind::Slogdet | OpKind::Qr | OpKind::Eigh => 2,
        OpKind::Svd => 3,
        _ => 1,
    };
    if output >= outputs {
        return Err(attrs_err(op, format!("output {output} of {outputs}")));
    }
    if full && !matches!(op, OpKind::Qr | OpKind::Svd) {
        return Err(attrs_err(op, "full_matrices is for qr and svd"));
    }
    let k = m.min(n);
    Ok(match op {
        OpKind::Cholesky | OpKind::Inv => {
            square()?;
            s0.into()
        }
        OpKind::Det | OpKind::Slogdet => {
            square()?;
            batch.into()
        }
        OpKind::Eigh => {
            square()?;
            if output == 0 {
                with(&[n])
            } else {
                s0.into()
            }
        }
        OpKind::Solve => {
            square()?;
            let b = inputs[1].1;
            if b.len() != r || &b[..r - 2] != batch || b[r - 2] != n {
                return Err(IrError::ShapeMismatch {
                    op: name.into(),
                    shapes: vec![s0.into(), b.into()],
                });
            }
            b.into()
        }
        OpKind::Qr => match (output, full) {
            (0, false) => with(&[m, k]),
            (0, true) => with(&[m, m]),
            (_, false) => with(&[k, n]),
            (_, true) => with(&[m, n]),
        },
        OpKind::Svd => match (output, full) {
            (0, false) => with(&[m, k]),
            (0, true) => with(&[m, m]),
            (1, _) => with(&[k]),
            (_, false) => with(&[k, n]),
            (_, true) => with(&[n, n]),
        },
        other => return Err(attrs_err(other, "not a linear-algebra op")),
    })
}

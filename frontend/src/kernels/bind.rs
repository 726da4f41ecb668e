//! Binding a call's arguments to a kernel's parameters: CuPy's type resolution, scalar
//! conversion, and the loop's shape.

use std::collections::HashMap;

use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{DType, DTypeKind, Literal, Shape, WeakScalar};

use super::params::{Param, ParamType};
use super::values::Val;
use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::{Error, Result};

/// The dtypes of a call: each parameter's, and the placeholders' bindings.
#[derive(Debug)]
pub(crate) struct Types {
    pub ins: Vec<DType>,
    pub outs: Vec<DType>,
    pub bound: HashMap<String, DType>,
}

/// CuPy's `_decide_params_type`: placeholders are bound by the output arguments first, then by
/// the array inputs in order (scalars bind nothing); a fixed type must match its array argument
/// exactly, and a bound placeholder every later array of it. `in_args[k]` is `None` for a
/// scalar; `out_args` is empty when no output argument is given.
pub(crate) fn decide_types(
    kernel: &str,
    ins: &[Param],
    outs: &[Param],
    in_args: &[Option<DType>],
    out_args: &[DType],
) -> Result<Types> {
    let mut bound: HashMap<String, DType> = HashMap::new();
    let mut check = |p: &Param, got: DType| -> Result<()> {
        let mismatch = |expected: DType, placeholder: Option<String>| Error::KernelDType {
            kernel: kernel.to_string(),
            param: p.name.clone(),
            expected,
            got,
            placeholder,
        };
        match &p.ty {
            ParamType::Fixed(d) if *d != got => Err(mismatch(*d, None)),
            ParamType::Fixed(_) => Ok(()),
            ParamType::Placeholder(t) => match bound.get(t) {
                Some(&d) if d != got => Err(mismatch(d, Some(t.clone()))),
                Some(_) => Ok(()),
                None => {
                    bound.insert(t.clone(), got);
                    Ok(())
                }
            },
        }
    };
    for (p, &d) in outs.iter().zip(out_args) {
        check(p, d)?;
    }
    for (p, a) in ins.iter().zip(in_args) {
        if let Some(d) = a {
            check(p, *d)?;
        }
    }
    let type_of = |p: &Param, is_output: bool| -> Result<DType> {
        match &p.ty {
            ParamType::Fixed(d) => Ok(*d),
            ParamType::Placeholder(t) => {
                bound.get(t).copied().ok_or_else(|| Error::KernelPlaceholder {
                    kernel: kernel.to_string(),
                    placeholder: t.clone(),
                    param: p.name.clone(),
                    in_outputs_only: is_output && !ins.iter().any(|q| q.placeholder() == Some(t)),
                })
            }
        }
    };
    let ins_t = ins.iter().map(|p| type_of(p, false)).collect::<Result<_>>()?;
    let outs_t = outs.iter().map(|p| type_of(p, true)).collect::<Result<_>>()?;
    Ok(Types { ins: ins_t, outs: outs_t, bound })
}

/// NumPy's conversion of a Rust scalar to a parameter's dtype (`numpy.dtype(t).type(x)`):
/// floats truncate into integers, integers round into floats; an integer out of the dtype's
/// range, a non-finite float into an integer, or a complex into a real is an error.
pub(crate) fn scalar(kernel: &str, param: &str, s: WeakScalar, d: DType) -> Result<Val> {
    let err = |what: String| Error::Value {
        op: kernel.to_string(),
        message: format!("argument `{param}`: {what}"),
    };
    let lit = match (s, d.kind()) {
        (WeakScalar::Complex(z), DTypeKind::Complex) => {
            return Ok(Val::Array(Array::literal(d, Literal::complex(d, z))))
        }
        (WeakScalar::Complex(_), _) => {
            return Err(err(format!("cannot convert a complex scalar to {d}")))
        }
        (WeakScalar::Bool(b), _) => Literal::from_i128(d, b as i128),
        (WeakScalar::Int(v), DTypeKind::SignedInt | DTypeKind::UnsignedInt) => {
            let (lo, hi) = d.int_range().expect("an integer dtype");
            if v < lo || v > hi {
                return Err(err(format!("Python integer {v} out of bounds for {d}")));
            }
            Literal::from_i128(d, v)
        }
        (WeakScalar::Int(v), _) => Literal::from_i128(d, v),
        (WeakScalar::Float(x), DTypeKind::SignedInt | DTypeKind::UnsignedInt) => {
            let (lo, hi) = d.int_range().expect("an integer dtype");
            let t = x.trunc();
            if !t.is_finite() || t < lo as f64 || t > hi as f64 {
                return Err(err(format!("{x} cannot be converted to {d}")));
            }
            Literal::from_i128(d, t as i128)
        }
        (WeakScalar::Float(x), _) => Literal::from_f64(d, x),
    };
    Ok(if d.is_complex() { Val::Array(Array::literal(d, lit)) } else { Val::Const(lit, d) })
}

/// The dtype of an argument, `None` for a scalar.
pub(crate) fn arg_dtype(a: &Operand) -> Option<DType> {
    match a {
        Operand::Array(a) => Some(a.dtype()),
        Operand::Scalar(_) => None,
    }
}

/// The broadcast shape of the arrays given for non-raw parameters (CuPy's `_broadcast`), or
/// `(size,)` when `size` is given, which requires every array argument to be raw.
pub(crate) fn loop_shape(
    kernel: &str,
    params: &[&Param],
    args: &[&Operand],
    size: Option<usize>,
) -> Result<Shape> {
    let arrays: Vec<(&Param, &Array)> = params
        .iter()
        .zip(args)
        .filter_map(|(p, a)| match a {
            Operand::Array(x) if !p.raw => Some((*p, x)),
            _ => None,
        })
        .collect();
    let raw_err = |param: Option<String>, message: String| Error::KernelRaw {
        kernel: kernel.to_string(),
        param,
        message,
    };
    if let Some(n) = size {
        if let Some((p, _)) = arrays.first() {
            return Err(raw_err(
                Some(p.name.clone()),
                format!(
                    "size= can be given only when every array argument is raw, and `{}` is not",
                    p.name
                ),
            ));
        }
        return Ok(Shape::from_slice(&[n]));
    }
    if arrays.is_empty() {
        let raw: Vec<String> =
            params.iter().filter(|p| p.raw).map(|p| format!("`{}`", p.name)).collect();
        let message = if raw.is_empty() {
            "the loop size is undecided: no argument is an array (give size=)".to_string()
        } else {
            format!("the loop size is undecided: raw arguments ({}) are not broadcast; give a non-raw array or size=", raw.join(", "))
        };
        return Err(raw_err(params.iter().find(|p| p.raw).map(|p| p.name.clone()), message));
    }
    let mut shape = Shape::new();
    for (_, a) in &arrays {
        shape = broadcast_shapes(kernel, &shape, a.shape()).map_err(|e| match e {
            kiln_ir::IrError::Broadcast { op, .. } => kiln_ir::IrError::Broadcast {
                op,
                shapes: arrays.iter().map(|(_, a)| a.shape().into()).collect(),
            },
            other => other,
        })?;
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::params::parse_params;

    #[test]
    fn outputs_bind_first_then_inputs() {
        let ins = parse_params("T x, T y", &[]).unwrap();
        let outs = parse_params("T z", &ins).unwrap();
        let t = decide_types("k", &ins, &outs, &[Some(DType::Float32), None], &[]).unwrap();
        assert_eq!((t.ins, t.outs), (vec![DType::Float32; 2], vec![DType::Float32]));
        // The output binds T to float64, then the float32 input mismatches it.
        let e = decide_types("k", &ins, &outs, &[Some(DType::Float32), None], &[DType::Float64])
            .unwrap_err();
        assert!(
            matches!(e, Error::KernelDType { ref param, expected: DType::Float64, got: DType::Float32, .. } if param == "x"),
            "{e}"
        );
        // Scalars bind nothing.
        let e = decide_types("k", &ins, &outs, &[None, None], &[]).unwrap_err();
        assert!(
            matches!(e, Error::KernelPlaceholder { ref placeholder, in_outputs_only: false, .. } if placeholder == "T"),
            "{e}"
        );
        let outs = parse_params("Z z", &ins).unwrap();
        let e = decide_types("k", &ins, &outs, &[Some(DType::Int8), None], &[]).unwrap_err();
        assert!(matches!(e, Error::KernelPlaceholder { in_outputs_only: true, .. }), "{e}");
    }

    #[test]
    fn scalars_convert_as_numpy() {
        assert!(matches!(
            scalar("k", "x", WeakScalar::Float(2.7), DType::Int32).unwrap(),
            Val::Const(Literal::Int(2), _)
        ));
        assert!(scalar("k", "x", WeakScalar::Int(300), DType::Int8).is_err());
        assert!(scalar("k", "x", WeakScalar::Float(f64::NAN), DType::Int8).is_err());
        assert!(matches!(
            scalar("k", "x", WeakScalar::Int(5), DType::Float32).unwrap(),
            Val::Const(_, DType::Float32)
        ));
    }
}

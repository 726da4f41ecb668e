//! Direct runs of a fused closure ([`super::Fused::try_run`]): a call whose arguments match an
//! earlier run's exactly goes straight to the plan that run compiled, with no trace, no
//! expression built and no dispatch walk (cupy.fuse's cost of a call: the signature check, the
//! argument packing and the launches).
//!
//! What must match for the plan to be the one the call would compile: the backend; each array
//! argument's dtype and shape, its value held (materialised), and which arguments hold the same
//! value (aliasing changes the graph's inputs); each scalar bit for bit (scalars are folded
//! into the plan as constants); no argument holding the value of an array the closure
//! captured. Only closures traced once per signature (shape-generic templates) run directly:
//! a template instantiated for the same exact arguments is the same graph, so the same
//! dispatch key and plan. Everything else (lazy arguments, closures traced at every call,
//! results that are arguments, `KILN_DUMP`) takes the lazy path and materialises its results.

use std::sync::Arc;

use kiln_compiler::pipeline::Compiled;
use kiln_exec::Outputs;
use kiln_ir::{DType, Shape, WeakScalar};
use kiln_runtime::Backend;

use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::Result;
use crate::materialize::{self, Ran};

/// Direct runs a fused closure keeps (the oldest is dropped past this).
pub(super) const MAX_DIRECT: usize = 16;

/// An argument as a direct run matches it.
#[derive(Debug)]
enum Arg {
    Array {
        dtype: DType,
        shape: Shape,
        /// The first earlier argument holding the same value.
        alias: Option<usize>,
    },
    /// A scalar, bit for bit (`-0.0` is not `0.0`).
    Scalar(ScalarBits),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScalarBits {
    Bool(bool),
    Int(i128),
    Float(u64),
    Complex(u64, u64),
}

fn bits(s: WeakScalar) -> ScalarBits {
    match s {
        WeakScalar::Bool(b) => ScalarBits::Bool(b),
        WeakScalar::Int(i) => ScalarBits::Int(i),
        WeakScalar::Float(x) => ScalarBits::Float(x.to_bits()),
        WeakScalar::Complex(z) => ScalarBits::Complex(z.re.to_bits(), z.im.to_bits()),
    }
}

/// Where a plan input comes from.
enum Source {
    /// Argument `k`.
    Arg(usize),
    /// An array the closure captured (held by the template too).
    Captured(Array),
}

/// A plan run for some exact arguments, runnable again for arguments that match them.
pub(super) struct Direct {
    backend: Backend,
    args: Vec<Arg>,
    plan: Arc<Compiled>,
    cached: bool,
    /// The plan's inputs, by input index.
    inputs: Vec<Source>,
    /// The arrays the closure captured (no argument may hold one's value).
    captured: Vec<Array>,
}

/// The first argument before `k` holding the value `id`.
fn alias_of(args: &[Operand], k: usize, id: *const ()) -> Option<usize> {
    args[..k].iter().position(|o| matches!(o, Operand::Array(b) if b.held_identity() == Some(id)))
}

impl Direct {
    /// The direct run of what `ran` ran for `args` on `backend` (the closure having captured
    /// `captured`); `None` where it cannot be replayed (a lazy argument, an argument holding a
    /// captured array's value: one input with it in this plan, two in another call's).
    pub(super) fn record(
        backend: Backend,
        args: &[Operand],
        captured: Vec<Array>,
        ran: Ran,
    ) -> Option<Direct> {
        let mut recorded = Vec::with_capacity(args.len());
        for (k, o) in args.iter().enumerate() {
            recorded.push(match o {
                Operand::Array(a) => {
                    let id = a.held_identity()?;
                    let (dtype, shape) = (a.dtype(), Shape::from_slice(a.shape()));
                    Arg::Array { dtype, shape, alias: alias_of(args, k, id) }
                }
                Operand::Scalar(s) => Arg::Scalar(bits(*s)),
            });
        }
        let mut inputs = Vec::with_capacity(ran.held.len());
        for h in ran.held {
            let id = h.held_identity()?;
            inputs.push(match alias_of(args, args.len(), id) {
                Some(k) => Source::Arg(k),
                None => Source::Captured(h),
            });
        }
        let direct = Direct {
            backend,
            args: recorded,
            plan: ran.plan,
            cached: ran.cached,
            inputs,
            captured,
        };
        direct.matches(backend, args).then_some(direct)
    }

    /// Whether `args` on `backend` are arguments this run's plan computes exactly.
    pub(super) fn matches(&self, backend: Backend, args: &[Operand]) -> bool {
        if backend != self.backend || args.len() != self.args.len() {
            return false;
        }
        let captured = || self.captured.iter().filter_map(Array::held_identity);
        self.args.iter().zip(args).enumerate().all(|(k, (r, o))| match (r, o) {
            (Arg::Array { dtype, shape, alias }, Operand::Array(a)) => {
                let Some(id) = a.held_identity() else { return false };
                a.dtype() == *dtype
                    && a.shape() == shape.as_slice()
                    && alias_of(args, k, id) == *alias
                    && captured().all(|c| c != id)
            }
            (Arg::Scalar(b), Operand::Scalar(s)) => bits(*s) == *b,
            _ => false,
        })
    }

    /// Runs the plan on `args` (which [`Direct::matches`]): its results, materialised.
    /// `t`: when the call started (the match is charged to the "lower" phase).
    pub(super) fn run(&self, args: &[Operand], mut t: std::time::Instant) -> Result<Vec<Array>> {
        materialize::count_direct(&mut t);
        let held: Vec<&Array> = self
            .inputs
            .iter()
            .map(|s| match s {
                Source::Arg(k) => match &args[*k] {
                    Operand::Array(a) => a,
                    Operand::Scalar(_) => unreachable!("a matched input argument is an array"),
                },
                Source::Captured(c) => c,
            })
            .collect();
        let outputs =
            materialize::run_plan(self.backend, &self.plan, self.cached, &held, "fuse", &mut t)?;
        Ok(match outputs {
            Outputs::Cuda(results) => results.into_iter().map(Array::from_device).collect(),
            Outputs::Host(results) => results.into_iter().map(Array::from_host).collect(),
        })
    }
}

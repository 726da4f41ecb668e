//! `fuse`: CuPy's `cupy.fuse`, a closure over arrays and scalars traced once per signature.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kiln_ir::{Attrs, DType, OpKind, Shape, WeakScalar};
use smallvec::SmallVec;

use super::elementwise::label;
use super::fuse_direct::{Direct, MAX_DIRECT};
use super::template::{Substitution, Template};
use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::{Error, Result};

thread_local! {
    /// The names of the fused closures being traced on stand-ins on this thread (innermost
    /// last).
    static TRACING: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Errs if `arrays` need the value of a stand-in of a fused closure being traced: the closure
/// branches on (or otherwise reads) a traced value. Free when nothing is being traced.
pub(crate) fn check_not_traced(arrays: &[&Array]) -> Result<()> {
    let Some(kernel) = TRACING.with(|t| t.borrow().last().cloned()) else { return Ok(()) };
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<Array> = arrays.iter().map(|&a| a.clone()).collect();
    while let Some(a) = stack.pop() {
        if a.is_materialized() || !seen.insert(Arc::as_ptr(&a.e)) {
            continue;
        }
        if a.e.op == OpKind::Input {
            return Err(Error::FuseTraced {
                kernel,
                message: "the closure reads the value of a traced argument (`item`, `to_vec`, `eval`...): branching on a traced value is not supported (write the branch with `where_`)".into(),
            });
        }
        stack.extend(a.e.inputs.iter().cloned());
    }
    Ok(())
}

/// Marks a trace on stand-ins while alive.
struct Tracing;

impl Tracing {
    fn start(name: &str) -> Tracing {
        TRACING.with(|t| t.borrow_mut().push(name.to_string()));
        Tracing
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        TRACING.with(|t| t.borrow_mut().pop());
    }
}

/// Sentinel extents of the first and second traces: primes above every small size a closure
/// writes, distinct between the two sets.
const PRIMES_A: [usize; 8] = [101, 103, 107, 109, 113, 127, 131, 137];
const PRIMES_B: [usize; 8] = [139, 149, 151, 157, 163, 167, 173, 179];
/// Sentinel integer scalars (they fit int8, so weak scalars work with every integer dtype).
const INTS_A: [i128; 4] = [37, 41, 43, 47];
const INTS_B: [i128; 4] = [53, 59, 61, 67];
/// Sentinel float scalars, exact in float16 and bfloat16.
const FLOATS_A: [f64; 4] = [1.3125, 1.4375, 1.5625, 1.8125];
const FLOATS_B: [f64; 4] = [2.6875, 2.8125, 3.1875, 3.4375];

/// What a fused closure can return: an array, arrays, or either in a `Result`.
pub trait FuseOutput {
    fn into_outputs(self) -> Result<Vec<Array>>;
}

impl FuseOutput for Array {
    fn into_outputs(self) -> Result<Vec<Array>> {
        Ok(vec![self])
    }
}

impl FuseOutput for Vec<Array> {
    fn into_outputs(self) -> Result<Vec<Array>> {
        Ok(self)
    }
}

impl<T: FuseOutput> FuseOutput for Result<T> {
    fn into_outputs(self) -> Result<Vec<Array>> {
        self?.into_outputs()
    }
}

/// An extent in a signature: 0 and 1 as themselves (broadcasting depends on them), others by
/// class of equal extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Dim {
    Zero,
    One,
    Class(usize),
}

/// An argument in a signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ArgKey {
    Array {
        dtype: DType,
        dims: Vec<Dim>,
    },
    Bool(bool),
    Int,
    Float,
    /// Complex scalars are part of the signature by value (bits of re and im).
    Complex(u64, u64),
}

/// A call's signature and the real extent of each class.
fn signature(args: &[Operand]) -> (Vec<ArgKey>, Vec<usize>) {
    let mut classes: Vec<usize> = Vec::new();
    let key = args
        .iter()
        .map(|a| match a {
            Operand::Array(x) => ArgKey::Array {
                dtype: x.dtype(),
                dims: x
                    .shape()
                    .iter()
                    .map(|&d| match d {
                        0 => Dim::Zero,
                        1 => Dim::One,
                        _ => {
                            Dim::Class(classes.iter().position(|&c| c == d).unwrap_or_else(|| {
                                classes.push(d);
                                classes.len() - 1
                            }))
                        }
                    })
                    .collect(),
            },
            Operand::Scalar(WeakScalar::Bool(b)) => ArgKey::Bool(*b),
            Operand::Scalar(WeakScalar::Int(_)) => ArgKey::Int,
            Operand::Scalar(WeakScalar::Float(_)) => ArgKey::Float,
            Operand::Scalar(WeakScalar::Complex(z)) => {
                ArgKey::Complex(z.re.to_bits(), z.im.to_bits())
            }
        })
        .collect();
    (key, classes)
}

/// How a signature is computed.
#[derive(Clone, Debug)]
enum Entry {
    /// A template traced with the first sentinels.
    Generic(Arc<Template>),
    /// Not shape-generic (or too many classes for the sentinels): traced at every call.
    PerCall,
}

/// The sentinel scalars of a set, in argument order: the n-th integer scalar takes `ints[n]`,
/// the n-th float scalar `floats[n]`.
fn sentinels(key: &[ArgKey], ints: &[i128], floats: &[f64]) -> Vec<WeakScalar> {
    let (mut ni, mut nf) = (0, 0);
    let mut out = Vec::new();
    for k in key {
        match k {
            ArgKey::Int => {
                out.push(WeakScalar::Int(ints[ni]));
                ni += 1;
            }
            ArgKey::Float => {
                out.push(WeakScalar::Float(floats[nf]));
                nf += 1;
            }
            _ => {}
        }
    }
    out
}

/// The integer and float scalars of a call, in argument order.
fn scalars_of(args: &[Operand]) -> Vec<WeakScalar> {
    args.iter()
        .filter_map(|a| match a {
            Operand::Scalar(s @ (WeakScalar::Int(_) | WeakScalar::Float(_))) => Some(*s),
            _ => None,
        })
        .collect()
}

/// The stand-ins of a signature for one set of sentinels: data-less arrays (they can be
/// operated on, not evaluated) and sentinel scalars; and the stand-in array of each argument.
fn stand_ins(
    key: &[ArgKey],
    args: &[Operand],
    primes: &[usize],
    scalars: &[WeakScalar],
) -> (Vec<Operand>, Vec<Option<Array>>) {
    let mut next_scalar = scalars.iter();
    let mut ops = Vec::new();
    let mut arrays = Vec::new();
    for (k, (kk, a)) in key.iter().zip(args).enumerate() {
        let (op, arr) = match kk {
            ArgKey::Array { dtype, dims } => {
                let shape: Shape = dims
                    .iter()
                    .map(|d| match d {
                        Dim::Zero => 0,
                        Dim::One => 1,
                        Dim::Class(c) => primes[*c],
                    })
                    .collect();
                let index = u32::MAX - k as u32;
                let x = Array::node(
                    OpKind::Input,
                    Attrs::Input { index },
                    SmallVec::new(),
                    *dtype,
                    shape,
                );
                (Operand::Array(x.clone()), Some(x))
            }
            ArgKey::Int | ArgKey::Float => {
                (Operand::Scalar(*next_scalar.next().expect("a sentinel per scalar")), None)
            }
            ArgKey::Bool(_) | ArgKey::Complex(..) => (a.clone(), None),
        };
        ops.push(op);
        arrays.push(arr);
    }
    (ops, arrays)
}

/// A closure fused into one traced computation (CuPy's `cupy.fuse`): see [`fuse`].
pub struct Fused<F> {
    name: String,
    f: F,
    cache: Mutex<HashMap<Vec<ArgKey>, Entry>>,
    traces: AtomicUsize,
    /// Direct runs ([`Fused::try_run`]), oldest first, and how many calls took one.
    direct: Mutex<Vec<Arc<Direct>>>,
    direct_runs: AtomicUsize,
}

/// `cupy.fuse(kernel_name=..)(f)`: `f` over arrays and Rust scalars ([`Operand`]s) is traced
/// into kiln's graph once per signature and cached; its results are labelled `kernel_name`
/// (shown in the fusion report). Since every kiln operation is lazy and fuses anyway, what fusing
/// adds is the cache, the name, and [`Fused::run`]: the results materialised at the call, as
/// `cupy.fuse` runs its kernel, a repeated call of the same exact arguments running its plan
/// directly (no trace, no expression built).
///
/// ```
/// use kiln_frontend::{fuse, Array, Operand};
/// let squared_diff = fuse("squared_diff", |a: &[Operand]| {
///     let d = a[0].to_array().try_subtract(a[1].clone())?;
///     d.try_multiply(&d)
/// });
/// let x = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
/// assert_eq!(squared_diff.call(&[(&x).into(), 2.0.into()])[0].to_vec::<f32>(), vec![1.0, 0.0, 1.0]);
/// let y = Array::from_vec(vec![1.0f32, 5.0, 4.0, 0.0], &[4]);
/// squared_diff.call(&[(&y).into(), 1.0.into()]);      // the same signature: no new trace
/// assert_eq!(squared_diff.traces(), 2);               // the first call traces twice (see below)
/// ```
///
/// The signature is each argument's dtype and rank, which extents are 0 or 1 and which are equal
/// (broadcasting depends on them), and each scalar's kind. The closure is traced on stand-ins:
/// arrays without data (it must not evaluate them) whose extents are sentinel primes, and
/// sentinel scalars; a second trace with other sentinels checks that the template is
/// shape-generic. A closure whose graph depends on sizes in other ways (slicing `n - 1`
/// elements, Rust code looking at a scalar's value) is traced again at every call instead.
/// Control flow in Rust on shapes is frozen at the trace, as in CuPy; control flow on values
/// is an error: a closure that reads a traced argument's value (`item`, `to_vec`, `eval` of
/// an array computed from one, as an `if` on an array needs) fails with
/// [`Error::FuseTraced`], as CuPy raises `TypeError` (write the branch with
/// [`crate::where_`]). (A signature with more distinct extents or scalars than the sentinels
/// cover skips the stand-ins and runs the closure on the real arguments at every call.)
///
/// Errors: those of the closure, raised on the real arguments; [`Error::FuseTraced`].
pub fn fuse<F, R>(kernel_name: &str, f: F) -> Fused<F>
where
    F: Fn(&[Operand]) -> R,
    R: FuseOutput,
{
    Fused {
        name: kernel_name.to_string(),
        f,
        cache: Mutex::new(HashMap::new()),
        traces: AtomicUsize::new(0),
        direct: Mutex::new(Vec::new()),
        direct_runs: AtomicUsize::new(0),
    }
}

impl<F, R> Fused<F>
where
    F: Fn(&[Operand]) -> R,
    R: FuseOutput,
{
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many times the closure ran (each trace is one run).
    pub fn traces(&self) -> usize {
        self.traces.load(Ordering::Relaxed)
    }

    /// How many calls of [`Fused::try_run`] ran a kept plan directly (no trace, no expression
    /// built).
    pub fn direct_runs(&self) -> usize {
        self.direct_runs.load(Ordering::Relaxed)
    }

    fn trace(&self, args: &[Operand]) -> Result<Vec<Array>> {
        self.traces.fetch_add(1, Ordering::Relaxed);
        (self.f)(args).into_outputs()
    }

    /// The template of a signature, traced twice and checked; `PerCall` if it is not generic.
    /// Errors: the closure reads a traced value ([`Error::FuseTraced`]).
    fn entry(&self, key: &[ArgKey], args: &[Operand], classes: usize) -> Result<Entry> {
        let n_int = key.iter().filter(|k| matches!(k, ArgKey::Int)).count();
        let n_float = key.iter().filter(|k| matches!(k, ArgKey::Float)).count();
        let product: Option<usize> =
            PRIMES_B.iter().take(classes).try_fold(1usize, |acc, &p| acc.checked_mul(p));
        if classes > PRIMES_A.len()
            || n_int > INTS_A.len()
            || n_float > FLOATS_A.len()
            || product.is_none_or(|p| p > 1 << 40)
        {
            return Ok(Entry::PerCall);
        }
        let (sa, sb) = (sentinels(key, &INTS_A, &FLOATS_A), sentinels(key, &INTS_B, &FLOATS_B));
        let run = |primes: &[usize], scalars: &[WeakScalar]| -> Result<Option<Template>> {
            let (ops, arrays) = stand_ins(key, args, primes, scalars);
            let _tracing = Tracing::start(&self.name);
            match self.trace(&ops) {
                Ok(outs) => Ok(Some(Template::extract(&arrays, &outs))),
                Err(e @ Error::FuseTraced { .. }) => Err(e),
                // Another error (a sentinel the closure cannot take): traced at every call.
                Err(_) => Ok(None),
            }
        };
        let (Some(a), Some(b)) = (run(&PRIMES_A, &sa)?, run(&PRIMES_B, &sb)?) else {
            return Ok(Entry::PerCall);
        };
        let sub = Substitution {
            sizes: PRIMES_A.iter().copied().zip(PRIMES_B.iter().copied()).take(classes).collect(),
            scalars: sa.into_iter().zip(sb).collect(),
        };
        Ok(match a.substitute(&sub) {
            Some(t) if t.same(&b) => Entry::Generic(Arc::new(a)),
            _ => Entry::PerCall,
        })
    }

    /// Calls the fused closure: its results, labelled with the kernel's name.
    pub fn try_call(&self, args: &[Operand]) -> Result<Vec<Array>> {
        self.call_traced(args).map(|(outs, _)| outs)
    }

    /// [`Fused::try_call`], and the shape-generic template the results come from, if they do.
    fn call_traced(&self, args: &[Operand]) -> Result<(Vec<Array>, Option<Arc<Template>>)> {
        let (key, classes) = signature(args);
        let cached = self.cache.lock().expect("the fuse cache lock").get(&key).cloned();
        let entry = match cached {
            Some(e) => e,
            None => {
                let e = self.entry(&key, args, classes.len())?;
                self.cache.lock().expect("the fuse cache lock").insert(key.clone(), e.clone());
                e
            }
        };
        let generic = match &entry {
            Entry::Generic(t) => Some(t.clone()),
            Entry::PerCall => None,
        };
        let outs = match entry {
            Entry::Generic(t) => {
                let sub = Substitution {
                    sizes: PRIMES_A.iter().copied().zip(classes.iter().copied()).collect(),
                    scalars: sentinels(&key, &INTS_A, &FLOATS_A)
                        .into_iter()
                        .zip(scalars_of(args))
                        .collect(),
                };
                let arrays: Vec<Option<Array>> = args
                    .iter()
                    .map(|a| match a {
                        Operand::Array(x) => Some(x.clone()),
                        Operand::Scalar(_) => None,
                    })
                    .collect();
                match t.substitute(&sub).and_then(|t| t.instantiate(&arrays)) {
                    Some(outs) => outs,
                    // These arguments do not fit the template (a scalar out of an integer
                    // dtype's range): the closure on the real arguments gives the answer.
                    None => self.trace(args)?,
                }
            }
            Entry::PerCall => self.trace(args)?,
        };
        Ok((outs.iter().map(|o| label(o, &self.name)).collect(), generic))
    }

    /// Calls the fused closure and materialises its results, as `cupy.fuse` runs its kernel at
    /// the call. The results hold their values (they are not lazy: later ops read them, not
    /// fuse with them; [`Fused::try_call`] gives lazy results).
    ///
    /// A call whose arguments match an earlier call's exactly runs that call's plan directly:
    /// no trace, no expression built, no dispatch walk (see `fuse_direct.rs`). Matching means
    /// the same backend, every array argument materialised with the same dtype and shape and
    /// the same arguments holding one value, and every scalar equal bit for bit. Other calls
    /// (lazy arguments, other shapes or scalars) trace or instantiate the closure and
    /// materialise as [`crate::eval_all`] does; the last 16 argument sets are kept.
    ///
    /// Errors: those of [`Fused::try_call`] and of materialisation (the arguments stay valid).
    pub fn try_run(&self, args: &[Operand]) -> Result<Vec<Array>> {
        let t = std::time::Instant::now();
        let backend = crate::materialize::current_backend();
        if !crate::materialize::dumping() {
            let direct = self.direct.lock().expect("the fuse cache lock");
            let found = direct.iter().rev().find(|d| d.matches(backend, args)).cloned();
            drop(direct);
            if let Some(d) = found {
                self.direct_runs.fetch_add(1, Ordering::Relaxed);
                return d.run(args, t);
            }
        }
        let (outs, generic) = self.call_traced(args)?;
        let all_pending = outs.iter().all(|o| !o.is_materialized());
        let refs: Vec<&Array> = outs.iter().collect();
        let ran = crate::materialize::try_eval_dispatched(&refs)?;
        if let (Some(ran), Some(template), true) = (ran, generic, all_pending) {
            if let Some(d) = Direct::record(backend, args, template.captured(), ran) {
                let mut direct = self.direct.lock().expect("the fuse cache lock");
                if direct.len() >= MAX_DIRECT {
                    direct.remove(0);
                }
                direct.push(Arc::new(d));
            }
        }
        Ok(outs)
    }

    /// [`Fused::try_run`], panicking on error.
    #[track_caller]
    pub fn run(&self, args: &[Operand]) -> Vec<Array> {
        crate::unwrap(self.try_run(args))
    }

    /// [`Fused::try_call`], panicking on error.
    #[track_caller]
    pub fn call(&self, args: &[Operand]) -> Vec<Array> {
        crate::unwrap(self.try_call(args))
    }
}

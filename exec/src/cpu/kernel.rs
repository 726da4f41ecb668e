//! Compiled host kernels run over host arrays: outputs allocated (large ones on transparent
//! huge pages), the work items split into chunks of roughly equal cost run by rayon; scatters
//! into private copies combined in a fixed order.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use kiln_compiler::codegen::{compile_region, CompiledRegion};
use kiln_compiler::fusion::{Region, RegionKind};
use kiln_compiler::CompileError;
use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{with_data, Attrs, HostArray};
use rayon::prelude::*;

use crate::{check_inputs, ExecError};

/// The buffer pointers, handed to worker threads.
#[derive(Clone, Copy)]
struct Ptrs<'a>(&'a [*mut u8]);

impl Ptrs<'_> {
    /// The array's address (a method, so that closures capture the whole `Ptrs`).
    fn as_ptr(self) -> *const *mut u8 {
        self.0.as_ptr()
    }
}
// SAFETY: the pointers are only dereferenced by the kernel, whose chunks read the inputs and
// write disjoint output elements (each work item writes only its own elements).
unsafe impl Send for Ptrs<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Ptrs<'_> {}

/// Elements of work per chunk handed to a thread.
const CHUNK_COST: usize = 1 << 15;
/// Below this much work the kernel runs on the calling thread in one call.
const PARALLEL_COST: usize = 1 << 17;

/// Whether a max/min/argmax/argmin of the body reduces an empty axis into a non-empty result
/// (an error the reference evaluator reports).
fn empty_extreme(region: &Region) -> Option<&'static str> {
    let body = &region.body;
    body.nodes().iter().find_map(|n| {
        let Attrs::Reduce { axes, .. } = &n.attrs else { return None };
        let input = &body.node(n.inputs[0]).shape;
        let empty = axes.iter().any(|&a| input[a] == 0) && numel(&n.shape) > 0;
        (empty
            && matches!(
                n.op,
                kiln_ir::OpKind::Max
                    | kiln_ir::OpKind::Min
                    | kiln_ir::OpKind::ArgMax
                    | kiln_ir::OpKind::ArgMin
            ))
        .then_some(n.op.name())
    })
}

/// Runs `region` on host arrays (`inputs[k]` for the body's `input {index=k}`) with compiled
/// code; returns its outputs, C-contiguous.
///
/// Errors: inputs of the wrong dtype or shape; [`CompileError::Unsupported`] (region 0) where the
/// caller should use the evaluator instead; compilation errors.
pub fn run_region(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, ExecError> {
    Ok(run_region_code(region, inputs, None)?.0)
}

/// [`run_region`], and the code that ran; the code is taken from `slot` when it holds it, and
/// kept there once compiled.
pub(crate) fn run_region_code(
    region: &Region,
    inputs: &[&HostArray],
    slot: Option<&OnceLock<Arc<CompiledRegion>>>,
) -> Result<(Vec<HostArray>, Arc<CompiledRegion>), ExecError> {
    if let Some(op) = empty_extreme(region) {
        return Err(CompileError::Unsupported {
            region: 0,
            op: op.into(),
            reason: "a reduction of an empty axis, which the evaluator reports".into(),
        }
        .into());
    }
    let compiled = match slot.and_then(|s| s.get()) {
        Some(c) => c.clone(),
        None => {
            let c = compile_region(region)?;
            if let Some(s) = slot {
                let _ = s.set(c.clone());
            }
            c
        }
    };
    let outs = if region.kind == RegionKind::Scatter {
        run_scatter(&compiled, region, inputs)?
    } else {
        run_compiled(&compiled, inputs)?
    };
    Ok((outs, compiled))
}

/// Most private copies of a scatter's outputs (see [`run_scatter`]).
const SCATTER_COPIES: usize = 16;

/// Runs a compiled scatter region (module `lower::scatter`): its positions split into a number
/// of chunks fixed by the sizes alone (not by the threads), each accumulating into a private
/// copy of the scatters' buffers (the first starts from each scatter's initial array, the
/// others from the combine's identity for sums (-0.0 for floats, so an untouched element keeps
/// its sign), from the initial array for maxima and minima, which are idempotent), run in
/// parallel; then each element of the copies combined in chunk order by the evaluator's
/// `add`/`maximum`/`minimum` written as typed loops ([`combine_into`]), so a result is the same
/// bits on every run and thread count. A region with an epilogue (outputs past its scatters,
/// `fusion::has_epilogue`) then has the kernel called once more over the work items past the
/// positions, its epilogue's elements, on the first copy's combined buffers.
fn run_scatter(
    compiled: &CompiledRegion,
    region: &Region,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, ExecError> {
    let k = &compiled.kernel;
    check_inputs(0, &k.inputs, inputs)?;
    // The buffers after the inputs: the outputs (the scatters written, then the epilogue's),
    // then the scatters only the epilogue reads.
    let (accs, written) =
        kiln_compiler::codegen::lower::scatter_epilogue::accumulators(&region.body);
    let shapes: Vec<(kiln_ir::DType, Vec<usize>)> =
        k.outputs.iter().chain(&k.scatter_extra).cloned().collect();
    let acc_buffer = |a: usize| if a < written { a } else { k.outputs.len() + a - written };
    let acc_shapes: Vec<(kiln_ir::DType, Vec<usize>)> =
        (0..accs.len()).map(|a| shapes[acc_buffer(a)].clone()).collect();
    let init = starting_arrays(&region.body, &accs, &acc_shapes, inputs)?;
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    let out_elems: usize = acc_shapes.iter().map(|(_, s)| numel(s)).sum::<usize>().max(1);
    let copies = if work.saturating_mul(cost) < PARALLEL_COST {
        1
    } else {
        (work.saturating_mul(cost) / PARALLEL_COST)
            .clamp(1, SCATTER_COPIES)
            .min((work / out_elems).max(1))
    };
    // Each copy's buffers: the scatters' (`accs`, in buffer order), and the epilogue's outputs
    // (written by the epilogue's call on the first copy only).
    let place = |accs: Vec<Data>| -> Vec<Data> {
        let mut bufs: Vec<Option<Data>> = vec![None; shapes.len()];
        for (a, d) in accs.into_iter().enumerate() {
            bufs[acc_buffer(a)] = Some(d);
        }
        bufs.into_iter()
            .zip(&shapes)
            .map(|(b, (dt, shape))| b.unwrap_or_else(|| Data::zeros(*dt, numel(shape))))
            .collect()
    };
    let mut outs: Vec<Vec<Data>> = Vec::with_capacity(copies);
    for _ in 1..copies {
        outs.push(place(
            init.iter()
                .enumerate()
                .map(|(a, d)| {
                    if k.scatter[a] == kiln_ir::OpKind::Add {
                        additive_identity(d.dtype(), d.len())
                    } else {
                        kiln_ir::huge_pages::copy_of(d)
                    }
                })
                .collect(),
        ));
    }
    outs.insert(0, place(init));
    for d in outs.iter_mut().flatten() {
        let bytes = d.len() * d.dtype().itemsize();
        kiln_ir::huge_pages::advise(with_data!(d, v => v.as_mut_ptr().cast::<u8>()), bytes);
    }
    let in_ptrs: Vec<*mut u8> = inputs.iter().map(|a| a.as_bytes().as_ptr().cast_mut()).collect();
    let ptrs: Vec<Vec<*mut u8>> = outs
        .iter_mut()
        .map(|copy| {
            let mut p = in_ptrs.clone();
            p.extend(copy.iter_mut().map(|d| with_data!(d, v => v.as_mut_ptr().cast::<u8>())));
            p
        })
        .collect();
    let code = compiled.code.for_call(work.saturating_mul(cost));
    let entry = code.entry;
    let params = k.params.as_slice();
    let per = work.div_ceil(copies).max(1);
    let all: Vec<Ptrs> = ptrs.iter().map(|p| Ptrs(p)).collect();
    let all = all.as_slice();
    // SAFETY (for both calls below): `ptrs[c]` holds one pointer per input (live `HostArray`s
    // of the dtypes and shapes the kernel was lowered for, checked above, read only) then per
    // output and extra buffer (copy `c`'s own `Data` of that buffer's dtype and size, alive
    // until after the calls, which no other call writes), and `params` the parameter values
    // the kernel reads; work items `start..end` are within `0..work_items` (positions) or, for
    // the epilogue, `work_items..work_items + elements` (the epilogue's outputs' elements).
    let run = |c: usize| {
        let (start, end) = (c * per, ((c + 1) * per).min(work));
        if start < end {
            let bufs = all[c];
            // SAFETY: see above.
            unsafe { entry(bufs.as_ptr(), params.as_ptr(), start as i64, end as i64) }
        }
    };
    let t = Instant::now();
    if copies == 1 {
        run(0);
    } else {
        (0..copies).into_par_iter().for_each(run);
    }
    compiled.code.ran(t.elapsed());
    let mut copies = outs.into_iter();
    let mut first = copies.next().expect("at least one copy");
    let rest: Vec<Vec<Data>> = copies.collect();
    for a in 0..accs.len() {
        let b = acc_buffer(a);
        let parts: Vec<&Data> = rest.iter().map(|copy| &copy[b]).collect();
        if !parts.is_empty() {
            combine_into(k.scatter[a], &mut first[b], &parts)?;
        }
    }
    // The epilogue: its elements past the positions, on the combined buffers.
    if let Some((_, shape)) = k.outputs.get(written) {
        let elements = numel(shape);
        if elements > 0 {
            let mut bufs = in_ptrs.clone();
            bufs.extend(first.iter_mut().map(|d| with_data!(d, v => v.as_mut_ptr().cast::<u8>())));
            let t = Instant::now();
            // SAFETY: as above, with the first copy's buffers, combined (`first`), alive until
            // after the call.
            unsafe { entry(bufs.as_ptr(), params.as_ptr(), work as i64, (work + elements) as i64) }
            compiled.code.ran(t.elapsed());
        }
    }
    k.outputs
        .iter()
        .zip(first)
        .map(|((_, shape), d)| HostArray::new(shape, d).map_err(ExecError::from))
        .collect()
}

/// Each scatter's starting array (its first operand, the array the scatter updates), for the
/// scatters `accs` of `body` of the dtypes and shapes `shapes`: a copy of a region input, or
/// one element (a constant such as `zeros`, broadcast) evaluated once and filled; anything else
/// by the reference evaluator.
fn starting_arrays(
    body: &kiln_ir::Graph,
    accs: &[kiln_ir::NodeId],
    shapes: &[(kiln_ir::DType, Vec<usize>)],
    inputs: &[&HostArray],
) -> Result<Vec<Data>, ExecError> {
    let mut init: Vec<Option<Data>> = Vec::with_capacity(shapes.len());
    for (&o, (dt, shape)) in accs.iter().zip(shapes) {
        init.push(typed_start(body, body.node(o).inputs[0], *dt, shape, inputs)?);
    }
    let rest: Vec<usize> = (0..init.len()).filter(|&o| init[o].is_none()).collect();
    if !rest.is_empty() {
        let mut g = body.clone();
        g.set_outputs(rest.iter().map(|&o| body.node(accs[o]).inputs[0]).collect());
        for (&o, a) in rest.iter().zip(kiln_ir::eval::evaluate(&g, inputs)?) {
            init[o] = Some(a.into_data());
        }
    }
    Ok(init.into_iter().map(|d| d.expect("every starting array made")).collect())
}

/// The starting array `id` of `body` as typed data of `dtype` and `shape`, when it is a region
/// input (through reshapes: the same elements in C order), copied, or a single element
/// broadcast (through `broadcast_to` and reshapes), that element evaluated and filled; `None`
/// for anything else.
fn typed_start(
    body: &kiln_ir::Graph,
    id: kiln_ir::NodeId,
    dtype: kiln_ir::DType,
    shape: &[usize],
    inputs: &[&HostArray],
) -> Result<Option<Data>, ExecError> {
    use kiln_ir::OpKind;
    let node = body.node(id);
    let n = numel(shape);
    if node.dtype != dtype || node.shape.as_slice() != shape {
        return Ok(None);
    }
    if n == 0 {
        return Ok(Some(Data::zeros(dtype, 0)));
    }
    let mut at = body.node(id);
    while at.op == OpKind::Reshape {
        at = body.node(at.inputs[0]);
    }
    if let (OpKind::Input, Attrs::Input { index }) = (at.op, &at.attrs) {
        if let Some(a) = inputs.get(*index as usize) {
            if a.dtype() == dtype && a.len() == n {
                return Ok(Some(kiln_ir::huge_pages::copy_of(a.data())));
            }
        }
        return Ok(None);
    }
    let mut src = id;
    while numel(&body.node(src).shape) != 1 {
        let s = body.node(src);
        if s.op != OpKind::BroadcastTo && s.op != OpKind::Reshape {
            return Ok(None);
        }
        src = s.inputs[0];
    }
    let mut g = body.clone();
    g.set_outputs(vec![src]);
    let one = kiln_ir::eval::evaluate(&g, inputs)?.remove(0);
    Ok(Some(filled(one.data(), n)))
}

/// `n` copies of `one`'s single element.
fn filled(one: &Data, n: usize) -> Data {
    macro_rules! fill {
        ($($var:ident),*) => {
            match one {
                $(Data::$var(v) => Data::$var(vec![v[0]; n]),)*
            }
        };
    }
    fill!(
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, BFloat16, Float32,
        Float64, Complex64, Complex128
    )
}

/// `n` elements of `add`'s identity in `dtype`: -0.0 for floats (-0.0 + x is x for every x,
/// +0.0 and -0.0 included), complex (-0.0, -0.0), false, 0.
fn additive_identity(dtype: kiln_ir::DType, n: usize) -> Data {
    use half::{bf16, f16};
    use num_complex::{Complex32, Complex64};
    match dtype {
        kiln_ir::DType::Float16 => Data::Float16(vec![f16::NEG_ZERO; n]),
        kiln_ir::DType::BFloat16 => Data::BFloat16(vec![bf16::NEG_ZERO; n]),
        kiln_ir::DType::Float32 => Data::Float32(vec![-0.0; n]),
        kiln_ir::DType::Float64 => Data::Float64(vec![-0.0; n]),
        kiln_ir::DType::Complex64 => Data::Complex64(vec![Complex32::new(-0.0, -0.0); n]),
        kiln_ir::DType::Complex128 => Data::Complex128(vec![Complex64::new(-0.0, -0.0); n]),
        _ => Data::zeros(dtype, n),
    }
}

/// Elements of a combine of private copies a thread takes at a time.
const COMBINE_BLOCK: usize = 1 << 14;

/// `acc = op(acc, part)` for each of `parts` in order, element by element: the scatter's
/// combine (`add`, `maximum` or `minimum`) as the evaluator computes it (`ir::eval`'s
/// elementwise functions: bools or/or/and, integers wrapping, floats NaN-propagating with the
/// first operand kept on ties, float16/bfloat16 through f64 rounded once), in typed loops over
/// blocks of elements run in parallel; each element sees the parts in the same order, so the
/// result is the same bits on every thread count. A combine with no typed loop here (a complex
/// maximum or minimum, which code generation does not make) runs in the evaluator.
fn combine_into(op: kiln_ir::OpKind, acc: &mut Data, parts: &[&Data]) -> Result<(), ExecError> {
    use kiln_ir::graph::round_to;
    use kiln_ir::DType;
    use kiln_ir::OpKind::{Add, Maximum, Minimum};
    /// `parts` as slices of the variant `$var`; `None` if one is another dtype.
    macro_rules! slices {
        ($var:ident) => {
            parts
                .iter()
                .map(|p| match p {
                    Data::$var(v) => Some(v.as_slice()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
        };
    }
    /// Folds the parts into `$a` (of variant `$var`) with `$f`, or breaks to the evaluator.
    macro_rules! fold_with {
        ($a:expr, $var:ident, $f:expr) => {
            match slices!($var) {
                Some(ps) => {
                    fold($a.as_mut_slice(), &ps, $f);
                    return Ok(());
                }
                None => {}
            }
        };
    }
    macro_rules! ints {
        ($($var:ident),*) => {
            match (op, &mut *acc) {
                $(
                    (Add, Data::$var(a)) => fold_with!(a, $var, |x, y| x.wrapping_add(y)),
                    (Maximum, Data::$var(a)) => fold_with!(a, $var, |x, y| x.max(y)),
                    (Minimum, Data::$var(a)) => fold_with!(a, $var, |x, y| x.min(y)),
                )*
                // catch-all: other dtypes and combines go on (to the evaluator at worst)
                _ => {}
            }
        };
    }
    ints!(Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64);
    macro_rules! floats {
        ($($var:ident),*) => {
            match (op, &mut *acc) {
                $(
                    (Add, Data::$var(a)) => fold_with!(a, $var, |x, y| x + y),
                    (Maximum, Data::$var(a)) => {
                        fold_with!(a, $var, |x, y| if x.is_nan() || x > y { x } else { y })
                    }
                    (Minimum, Data::$var(a)) => {
                        fold_with!(a, $var, |x, y| if x.is_nan() || x < y { x } else { y })
                    }
                )*
                // catch-all: other dtypes and combines go on (to the evaluator at worst)
                _ => {}
            }
        };
    }
    floats!(Float32, Float64);
    /// float16 and bfloat16: the evaluator's f64 arithmetic, rounded once to the dtype.
    macro_rules! halves {
        ($($var:ident: $t:ty),*) => {
            match (op, &mut *acc) {
                $(
                    (Add, Data::$var(a)) => fold_with!(a, $var, |x: $t, y: $t| {
                        <$t>::from_f64(round_to(DType::$var, x.to_f64() + y.to_f64()))
                    }),
                    (Maximum, Data::$var(a)) => fold_with!(a, $var, |x: $t, y: $t| {
                        let (x, y) = (x.to_f64(), y.to_f64());
                        let pick = if x.is_nan() || x > y { x } else { y };
                        <$t>::from_f64(round_to(DType::$var, pick))
                    }),
                    (Minimum, Data::$var(a)) => fold_with!(a, $var, |x: $t, y: $t| {
                        let (x, y) = (x.to_f64(), y.to_f64());
                        let pick = if x.is_nan() || x < y { x } else { y };
                        <$t>::from_f64(round_to(DType::$var, pick))
                    }),
                )*
                // catch-all: other dtypes and combines go on (to the evaluator at worst)
                _ => {}
            }
        };
    }
    halves!(Float16: half::f16, BFloat16: half::bf16);
    match (op, &mut *acc) {
        (Add, Data::Bool(a)) | (Maximum, Data::Bool(a)) => fold_with!(a, Bool, |x, y| x | y),
        (Minimum, Data::Bool(a)) => fold_with!(a, Bool, |x, y| x & y),
        (Add, Data::Complex64(a)) => fold_with!(a, Complex64, |x, y| x + y),
        (Add, Data::Complex128(a)) => fold_with!(a, Complex128, |x, y| x + y),
        // catch-all: other dtypes and combines go on (to the evaluator at worst)
        _ => {}
    }
    // No typed loop: the evaluator's elementwise op, part by part.
    let (dt, n) = (acc.dtype(), acc.len());
    let mut g = kiln_ir::Graph::new();
    let (a, b) = (g.input(0, dt, &[n]), g.input(1, dt, &[n]));
    let c = g.add(op, Attrs::None, &[a, b])?;
    g.set_outputs(vec![c]);
    let mut result = HostArray::new(&[n], std::mem::replace(acc, Data::zeros(dt, 0)))?;
    for &part in parts {
        let part = HostArray::new(&[n], part.clone())?;
        result = kiln_ir::eval::evaluate(&g, &[&result, &part])?.remove(0);
    }
    *acc = result.into_data();
    Ok(())
}

/// `acc[i] = f(acc[i], part[i])` for each of `parts` in order, in blocks of elements run in
/// parallel when there is enough work.
fn fold<T: Copy + Send + Sync>(acc: &mut [T], parts: &[&[T]], f: impl Fn(T, T) -> T + Sync) {
    let run = |(b, block): (usize, &mut [T])| {
        let range = b * COMBINE_BLOCK..b * COMBINE_BLOCK + block.len();
        for part in parts {
            for (x, &y) in block.iter_mut().zip(&part[range.clone()]) {
                *x = f(*x, y);
            }
        }
    };
    if acc.len().saturating_mul(parts.len()) < PARALLEL_COST {
        acc.chunks_mut(COMBINE_BLOCK).enumerate().for_each(run);
    } else {
        acc.par_chunks_mut(COMBINE_BLOCK).enumerate().for_each(run);
    }
}

/// A zeroed host output of `dtype` and `shape`, or [`kiln_ir::IrError::OutOfHostMemory`] where
/// the allocator refuses it (an array far beyond memory): an error, not an abort.
pub(crate) fn host_zeros(dtype: kiln_ir::DType, shape: &[usize]) -> Result<Data, ExecError> {
    let n = numel(shape);
    Data::try_zeros(dtype, n).ok_or_else(|| {
        ExecError::Ir(kiln_ir::IrError::OutOfHostMemory {
            op: "evaluate".into(),
            dtype,
            shape: shape.into(),
            bytes: n.saturating_mul(dtype.itemsize()),
        })
    })
}

/// Runs a compiled region (see [`run_region`]).
pub fn run_compiled(
    compiled: &CompiledRegion,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, ExecError> {
    let k = &compiled.kernel;
    check_inputs(0, &k.inputs, inputs)?;
    let mut outs: Vec<Data> =
        k.outputs.iter().map(|(dt, shape)| host_zeros(*dt, shape)).collect::<Result<_, _>>()?;
    for d in outs.iter_mut() {
        let bytes = d.len() * d.dtype().itemsize();
        kiln_ir::huge_pages::advise(with_data!(d, v => v.as_mut_ptr().cast::<u8>()), bytes);
    }
    let mut ptrs: Vec<*mut u8> = inputs.iter().map(|a| a.as_bytes().as_ptr().cast_mut()).collect();
    for d in outs.iter_mut() {
        ptrs.push(with_data!(d, v => v.as_mut_ptr().cast::<u8>()));
    }
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    // Held for the calls: the code is not freed while it runs.
    let code = compiled.code.for_call(work.saturating_mul(cost));
    let entry = code.entry;
    let params = k.params.as_slice();
    let bufs = Ptrs(&ptrs);
    let run = |start: usize, end: usize| {
        // SAFETY: `bufs` holds one pointer per input (live `HostArray`s of the dtypes and shapes
        // the kernel was lowered for, checked above, read only) then per output (`Data` of the
        // output's dtype and size, alive until after the calls), and `params` the parameter
        // values the kernel reads; work items `start..end` are within `0..work_items`, and
        // distinct work items write distinct output elements, so concurrent chunks do not race.
        unsafe { entry(bufs.as_ptr(), params.as_ptr(), start as i64, end as i64) }
    };
    let t = Instant::now();
    if work > 0 {
        if work.saturating_mul(cost) < PARALLEL_COST || rayon::current_num_threads() == 1 {
            run(0, work);
        } else {
            let per_chunk = (CHUNK_COST / cost).max(1).next_multiple_of(k.min_chunk.max(1));
            let chunks = work.div_ceil(per_chunk);
            (0..chunks)
                .into_par_iter()
                .for_each(|c| run(c * per_chunk, ((c + 1) * per_chunk).min(work)));
        }
    }
    compiled.code.ran(t.elapsed());
    k.outputs
        .iter()
        .zip(outs)
        .map(|((_, shape), data)| HostArray::new(shape, data).map_err(ExecError::from))
        .collect()
}

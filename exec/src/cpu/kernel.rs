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

/// Asks the kernel to back a large fresh buffer with transparent huge pages: its first writes
/// then fault 2 MiB at a time rather than 4 KiB (a 64 MiB output takes 32 faults, not 16384).
/// Only a hint; ignored where THP is off.
fn huge_pages(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < 4 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: [start, end) lies inside the live allocation [ptr, ptr + bytes) and is
        // page-aligned; MADV_HUGEPAGE changes no contents, only how pages are backed.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

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
/// copy of the outputs (the first starts from each scatter's initial array, the others from 0
/// for sums, from the initial array for maxima and minima, which are idempotent), run in
/// parallel; then the copies combined in chunk order by the evaluator's `add`/`maximum`/
/// `minimum`, so a result is the same bits on every run and thread count.
fn run_scatter(
    compiled: &CompiledRegion,
    region: &Region,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, ExecError> {
    let k = &compiled.kernel;
    check_inputs(0, &k.inputs, inputs)?;
    let body = &region.body;
    // Each output's initial array: its scatter's first operand, computed by the evaluator
    // (a constant such as `zeros`, or an input).
    let mut init_graph = body.clone();
    init_graph.set_outputs(body.outputs().iter().map(|&o| body.node(o).inputs[0]).collect());
    let init = kiln_ir::eval::evaluate(&init_graph, inputs)?;
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    let out_elems: usize = k.outputs.iter().map(|(_, s)| numel(s)).sum::<usize>().max(1);
    let copies = if work.saturating_mul(cost) < PARALLEL_COST {
        1
    } else {
        (work.saturating_mul(cost) / PARALLEL_COST)
            .clamp(1, SCATTER_COPIES)
            .min((work / out_elems).max(1))
    };
    let zeros_for = |c: usize, o: usize| c > 0 && k.scatter[o] == kiln_ir::OpKind::Add;
    let mut outs: Vec<Vec<Data>> = (0..copies)
        .map(|c| {
            init.iter()
                .enumerate()
                .map(|(o, a)| {
                    if zeros_for(c, o) {
                        Data::zeros(a.dtype(), a.len())
                    } else {
                        a.data().clone()
                    }
                })
                .collect()
        })
        .collect();
    let in_ptrs: Vec<*mut u8> = inputs
        .iter()
        .map(|a| with_data!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()))
        .collect();
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
    let run = |c: usize| {
        let (start, end) = (c * per, ((c + 1) * per).min(work));
        if start < end {
            let bufs = all[c];
            // SAFETY: `ptrs[c]` holds one pointer per input (live `HostArray`s of the dtypes and
            // shapes the kernel was lowered for, checked above, read only) then per output (copy
            // `c`'s own `Data` of the output's dtype and size, alive until after the calls, which
            // no other call writes), and `params` the parameter values the kernel reads; work
            // items `start..end` are within `0..work_items`.
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
    let first = copies.next().expect("at least one copy");
    let mut result: Vec<HostArray> = k
        .outputs
        .iter()
        .zip(first)
        .map(|((_, shape), d)| HostArray::new(shape, d))
        .collect::<Result<_, _>>()?;
    for copy in copies {
        for (o, d) in copy.into_iter().enumerate() {
            let (dt, shape) = &k.outputs[o];
            let part = HostArray::new(shape, d)?;
            let mut g = kiln_ir::Graph::new();
            let (a, b) = (g.input(0, *dt, shape), g.input(1, *dt, shape));
            let c = g.add(k.scatter[o], Attrs::None, &[a, b])?;
            g.set_outputs(vec![c]);
            result[o] = kiln_ir::eval::evaluate(&g, &[&result[o], &part])?.remove(0);
        }
    }
    Ok(result)
}

/// Runs a compiled region (see [`run_region`]).
pub fn run_compiled(
    compiled: &CompiledRegion,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, ExecError> {
    let k = &compiled.kernel;
    check_inputs(0, &k.inputs, inputs)?;
    let mut outs: Vec<Data> =
        k.outputs.iter().map(|(dt, shape)| Data::zeros(*dt, numel(shape))).collect();
    for d in outs.iter_mut() {
        let bytes = d.len() * d.dtype().itemsize();
        huge_pages(with_data!(d, v => v.as_mut_ptr().cast::<u8>()), bytes);
    }
    let mut ptrs: Vec<*mut u8> = inputs
        .iter()
        .map(|a| with_data!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()))
        .collect();
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

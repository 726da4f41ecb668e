//! GPU sort regions of short lines: one block per line along the last axis, sorted in shared
//! memory by a bitonic network over (key, position) pairs. A key is the element's bits mapped
//! so that unsigned order is NumPy's (floats: -0.0 as 0.0, negative values' bits inverted,
//! positive values' sign bit set, every NaN the largest key; signed integers: the sign bit
//! flipped); comparing positions on equal keys makes the network stable, and the line's padding
//! to a power of two (the largest key, positions past the end) sorts after its NaNs. `sort`
//! then reads each element back from global memory at its position (its own bits: -0.0 and
//! NaN payloads kept), `argsort` stores the positions.
//!
//! Lines of at most [`ROW_SORT_MAX`] elements along the last axis, of any real dtype (the
//! operand held, or a reshape of it), are [`RowSort`]s unless `KILN_GPU_ROW_SORT=bitonic`: the
//! CUDA executor sorts them by a block radix sort per line in shared memory (`kiln-exec`'s
//! `cuda/radix_rows.cu`), and this module's line sort takes only the rest. Longer lines of a
//! sort of the last axis (a few of them, any real dtype; the operand held, or a reshape of it)
//! are [`RadixSort`]s: the CUDA executor sorts each by an LSD radix sort of its
//! own (`kiln-exec`'s `cuda/radix_sort.cu`, compiled by NVRTC). Other sort regions (another
//! axis, views, complex dtypes, many long lines) run on the host. `sort_take` regions (order
//! statistics) are [`SortTake`]s: the executor's radix select (`cuda/radix_select.cu`);
//! `argtopk` regions are [`TopK`]s, a radix select and a sort of the few kept
//! (`cuda/radix_topk.cu`).

use kiln_ir::{Attrs, DType, OpKind};

use super::scan_gpu::GpuGrid;
use super::{Lower, Stop};
use crate::codegen::types::{load, store, Val};
use crate::codegen::Unsupported;
use crate::fusion::{Region, RegionKind};

/// Threads of a block sorting one line.
const SORT_THREADS: usize = 1024;
/// Shared memory a block may take: lines of 8192 float64 keys and their positions (the launch
/// opts in beyond 48 KiB; an H100 or H200 block may take 227 KiB).
const SORT_SHARED: usize = 96 * 1024;

/// A GPU line sort: the sort node's input index, its op, the line length and count, the dtype.
pub(crate) struct LineSort {
    input: usize,
    argsort: bool,
    n: usize,
    lines: usize,
    dt: DType,
}

/// A sort region's one output, one of `ops`, and its axis; or why the region is not one.
fn sort_output<'r>(
    region: &'r Region,
    ops: &[OpKind],
) -> Result<(&'r kiln_ir::Node, &'r usize), Unsupported> {
    let no = |why: &str| Unsupported::new(Some(ops[0].name()), why.to_string());
    let node = sole_output(region, ops[0])?;
    let Attrs::Axis { axis } = &node.attrs else {
        return Err(no("a sort region whose output has no axis"));
    };
    if !ops.contains(&node.op) {
        return Err(no(&format!("a sort region whose output is a {}", node.op.name())));
    }
    Ok((node, axis))
}

/// A sort region's one output node (`op` names the plan asking), or why it is not one.
fn sole_output(region: &Region, op: OpKind) -> Result<&kiln_ir::Node, Unsupported> {
    let no = |why: &str| Unsupported::new(Some(op.name()), why.to_string());
    if region.kind != RegionKind::Sort {
        return Err(no("not a sort region"));
    }
    let [out] = region.body.outputs() else {
        return Err(no("a sort region with several outputs"));
    };
    Ok(region.body.node(*out))
}

/// The dtype of a selection's operand, or why the GPU does not select from it (complex, or
/// lines along another axis than the last: the host selects).
fn selectable(operand: &kiln_ir::Node, axis: usize, op: OpKind) -> Result<DType, Unsupported> {
    let no = |why: String| Unsupported::new(Some(op.name()), why);
    let dt = operand.dtype;
    if dt.is_complex() {
        return Err(no(format!("{dt} on the GPU (the host selects)")));
    }
    if axis + 1 != operand.shape.len() {
        return Err(no(
            "a selection along another axis than the last on the GPU (the host's)".into()
        ));
    }
    Ok(dt)
}

/// The ops a line sort or a radix sort runs.
const SORTS: [OpKind; 2] = [OpKind::Sort, OpKind::Argsort];

/// The line sort a sort region is on the GPU, or why it is not (lines a [`RowSort`] takes).
pub(crate) fn plan(region: &Region) -> Result<LineSort, Unsupported> {
    let body = &region.body;
    let no = |why: &str| Unsupported::new(Some("sort"), why.to_string());
    if row_sort(region).is_ok() {
        return Err(no("lines that the CUDA executor's block radix sort takes"));
    }
    let (node, axis) = sort_output(region, &SORTS)?;
    let operand = body.node(node.inputs[0]);
    let Attrs::Input { index } = operand.attrs else {
        return Err(no("an operand seen through views (the host sorts it)"));
    };
    let dt = operand.dtype;
    if !matches!(
        dt,
        DType::Float32
            | DType::Float64
            | DType::Int32
            | DType::Int64
            | DType::UInt32
            | DType::UInt64
    ) {
        return Err(no(&format!("{dt} lines on the GPU (the host sorts them)")));
    }
    let shape = &operand.shape;
    if *axis + 1 != shape.len() {
        return Err(no("a sort along another axis than the last on the GPU (the host sorts it)"));
    }
    let n = shape[*axis];
    let lines: usize = shape[..*axis].iter().product();
    let np2 = n.next_power_of_two();
    if n == 0 || lines == 0 || np2 * (dt.itemsize() + 4) > SORT_SHARED {
        return Err(no(&format!("lines of {n} elements on the GPU (the host sorts them)")));
    }
    Ok(LineSort { input: index as usize, argsort: node.op == OpKind::Argsort, n, lines, dt })
}

/// Lines at most that a [`RadixSort`] sorts one after the other (more run on the host).
pub const RADIX_MAX_LINES: usize = 64;

/// A sort region the CUDA executor runs as a radix sort of each line: the sort node's operand
/// is region input `input` (C-contiguous, `lines × n` elements of `dtype`), sorted along its
/// last axis (`argsort`: stable int64 positions within the line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixSort {
    /// The region input sorted.
    pub input: usize,
    /// `argsort` (positions) rather than `sort` (elements).
    pub argsort: bool,
    /// Elements of a line (at least 1, below 2^30).
    pub n: usize,
    /// Lines (at least 1, at most [`RADIX_MAX_LINES`]).
    pub lines: usize,
    /// The elements' dtype (any but complex).
    pub dtype: DType,
}

/// The lines of a sort region's held operand (or a reshape of it) along its last axis: the
/// region input, argsort, the line length and count, the dtype; or why the GPU does not sort
/// them (views, complex, another axis, no elements).
fn held_lines(region: &Region) -> Result<(usize, bool, usize, usize, DType), Unsupported> {
    let body = &region.body;
    let no = |why: &str| Unsupported::new(Some("sort"), why.to_string());
    let (node, axis) = sort_output(region, &SORTS)?;
    let mut operand = body.node(node.inputs[0]);
    // A reshape of a held (C-contiguous) operand is its buffer: axis None of an N-d array.
    if operand.op == OpKind::Reshape {
        operand = body.node(operand.inputs[0]);
    }
    let Attrs::Input { index } = operand.attrs else {
        return Err(no("an operand seen through views (the host sorts it)"));
    };
    let dt = operand.dtype;
    if dt.is_complex() {
        return Err(no(&format!("{dt} on the GPU (the host sorts it)")));
    }
    let shape = &body.node(node.inputs[0]).shape;
    if *axis + 1 != shape.len() {
        return Err(no("a sort along another axis than the last on the GPU (the host sorts it)"));
    }
    let n = shape[*axis];
    let lines: usize = shape[..*axis].iter().product();
    if n == 0 || lines == 0 {
        return Err(no("nothing to sort (the host's)"));
    }
    Ok((index as usize, node.op == OpKind::Argsort, n, lines, dt))
}

/// The radix sort a sort region is on the GPU, or why it is not (a region whose lines the
/// line sort or the row sort takes is lowered first, by [`plan`], or is a [`RowSort`]).
pub fn radix_sort(region: &Region) -> Result<RadixSort, Unsupported> {
    let (input, argsort, n, lines, dtype) = held_lines(region)?;
    if n >= 1 << 30 || lines > RADIX_MAX_LINES {
        return Err(Unsupported::new(
            Some("sort"),
            format!("{lines} lines of {n} elements on the GPU (the host sorts them)"),
        ));
    }
    Ok(RadixSort { input, argsort, n, lines, dtype })
}

/// Longest line a [`RowSort`] takes: a block's 512 threads, 16 keys each.
pub const ROW_SORT_MAX: usize = 8192;

/// A sort region the CUDA executor runs as a block radix sort per line in shared memory
/// (`cuda/radix_rows.cu`, through `kiln-exec`'s `cuda/rows.rs`): the sort node's operand is
/// region input `input` (C-contiguous, `lines × n` elements of `dtype`), sorted along its last
/// axis (`argsort`: stable int64 positions within the line). NumPy's order, as every GPU sort.
/// Where NVRTC cannot be loaded the host sorts them (the executor's radix kernels need it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSort {
    /// The region input sorted.
    pub input: usize,
    /// `argsort` (positions) rather than `sort` (elements).
    pub argsort: bool,
    /// Elements of a line (at least 1, at most [`ROW_SORT_MAX`]).
    pub n: usize,
    /// Lines (at least 1, below 2^31: a block each).
    pub lines: usize,
    /// The elements' dtype (any but complex).
    pub dtype: DType,
}

/// The row sort a sort region is on the GPU, or why it is not (`KILN_GPU_ROW_SORT=bitonic`; an
/// operand seen through views, complex, another axis than the last, no elements; lines longer
/// than [`ROW_SORT_MAX`], or 2^31 of them or more).
pub fn row_sort(region: &Region) -> Result<RowSort, Unsupported> {
    let no = |why: String| Unsupported::new(Some("sort"), why);
    if !kiln_cache::config().gpu_row_sort_radix {
        return Err(no("KILN_GPU_ROW_SORT=bitonic: no block radix sort of rows".into()));
    }
    let (input, argsort, n, lines, dtype) = held_lines(region)?;
    if n > ROW_SORT_MAX || lines >= 1 << 31 {
        return Err(no(format!("{lines} lines of {n} elements: not a block's each")));
    }
    Ok(RowSort { input, argsort, n, lines, dtype })
}

/// Largest line, in bytes, that a block of [`SortTake`] selects from in shared memory (the
/// launch opts in beyond 48 KiB; an H100 or H200 block may take 227 KiB).
pub const SELECT_SHARED: usize = 160 * 1024;

/// A `sort_take` region the CUDA executor runs on the GPU: region input `input` (C-contiguous,
/// `lines × n` elements of `dtype`) read along its last axis at `m` sorted positions per line,
/// region input `positions` (int64: one row of `m` for every line, or `per_line`: a row each).
/// Lines of at most [`SELECT_SHARED`] bytes are selected from in shared memory, a block each
/// (`in_shared`); longer ones (at most [`RADIX_MAX_LINES`]) are radix-sorted, then read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortTake {
    /// The region input selected from.
    pub input: usize,
    /// The region input of the positions.
    pub positions: usize,
    /// A row of positions for each line (else one row for all).
    pub per_line: bool,
    /// Elements of a line (at least 1, below 2^30).
    pub n: usize,
    /// Lines (at least 1).
    pub lines: usize,
    /// Positions a line (at least 1).
    pub m: usize,
    /// The elements' dtype (any but complex).
    pub dtype: DType,
    /// Selected in shared memory (else a radix sort of each line, then a gather).
    pub in_shared: bool,
}

/// The GPU plan of a `sort_take` region, or why it has none (it runs on the host).
pub fn sort_take(region: &Region) -> Result<SortTake, Unsupported> {
    let body = &region.body;
    let no = |why: &str| Unsupported::new(Some("sort_take"), why.to_string());
    let (node, axis) = sort_output(region, &[OpKind::SortTake])?;
    let (operand, ks) = (body.node(node.inputs[0]), body.node(node.inputs[1]));
    let (Attrs::Input { index }, Attrs::Input { index: k_index }) = (&operand.attrs, &ks.attrs)
    else {
        return Err(no("operands seen through views (the host selects)"));
    };
    let dt = selectable(operand, *axis, OpKind::SortTake)?;
    let shape = &operand.shape;
    let (n, m) = (shape[*axis], ks.shape[*axis]);
    let lines: usize = shape[..*axis].iter().product();
    let k_lines: usize = ks.shape[..*axis].iter().product();
    if k_lines != 1 && k_lines != lines {
        return Err(no("positions broadcast along some axes only (the host selects)"));
    }
    let in_shared = n * dt.itemsize() <= SELECT_SHARED;
    if n == 0 || lines == 0 || m == 0 || n >= 1 << 30 || lines >= 1 << 31 {
        return Err(no(&format!("{lines} lines of {n} elements on the GPU (the host's)")));
    }
    if !in_shared && lines > RADIX_MAX_LINES {
        return Err(no(&format!("{lines} long lines of {n} elements (the host selects)")));
    }
    Ok(SortTake {
        input: *index as usize,
        positions: *k_index as usize,
        per_line: k_lines == lines && lines > 1,
        n,
        lines,
        m,
        dtype: dt,
        in_shared,
    })
}

/// Most positions a line of a [`TopK`] keeps (their rank count is a thread's share of m²).
pub const TOPK_MAX: usize = 1024;

/// An `argtopk` region the CUDA executor runs on the GPU (`cuda/radix_topk.cu`): region input
/// `input` (C-contiguous, `lines × n` elements of `dtype`, a line at most [`SELECT_SHARED`]
/// bytes) held in shared memory a block a line, the positions of each line's `m` smallest
/// (`largest`: largest) elements written in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopK {
    /// The region input selected from.
    pub input: usize,
    /// Elements of a line (at least 1, below 2^30).
    pub n: usize,
    /// Lines (at least 1, below 2^31).
    pub lines: usize,
    /// Positions a line (at least 1, at most [`TOPK_MAX`]).
    pub m: usize,
    /// The largest first (else the smallest).
    pub largest: bool,
    /// The elements' dtype (any but complex).
    pub dtype: DType,
}

/// The GPU plan of an `argtopk` region, or why it has none (it runs on the host).
pub fn topk(region: &Region) -> Result<TopK, Unsupported> {
    let no = |why: &str| Unsupported::new(Some("argtopk"), why.to_string());
    let node = sole_output(region, OpKind::Argtopk)?;
    let (OpKind::Argtopk, Attrs::TopK { axis, k, largest }) = (node.op, &node.attrs) else {
        return Err(no(&format!("a sort region whose output is a {}", node.op.name())));
    };
    let operand = region.body.node(node.inputs[0]);
    let Attrs::Input { index } = operand.attrs else {
        return Err(no("an operand seen through views (the host selects)"));
    };
    let dt = selectable(operand, *axis, OpKind::Argtopk)?;
    let shape = &operand.shape;
    let (n, m) = (shape[*axis], *k);
    let lines: usize = shape[..*axis].iter().product();
    if n == 0 || lines == 0 || m == 0 || n >= 1 << 30 || lines >= 1 << 31 {
        return Err(no(&format!("{lines} lines of {n} elements on the GPU (the host's)")));
    }
    if m > TOPK_MAX || n * dt.itemsize() > SELECT_SHARED {
        return Err(no(&format!("{m} of lines of {n} {dt} on the GPU (the host selects)")));
    }
    Ok(TopK { input: index as usize, n, lines, m, largest: *largest, dtype: dt })
}

impl LineSort {
    /// Lines to sort: the kernel's work items (a block each).
    pub(crate) fn lines(&self) -> usize {
        self.lines
    }
}

impl Lower<'_> {
    /// The kernel of a [`LineSort`] (see the module docs); launched as a [`GpuGrid`] of one
    /// block per line (its counter unused).
    pub(super) fn sort_lines_gpu(&mut self, s: &LineSort) -> Result<(), Stop> {
        let np2 = s.n.next_power_of_two();
        let wide = s.dt.itemsize() == 8;
        let kt = if wide { "i64" } else { "i32" };
        let kdt = if wide { DType::UInt64 } else { DType::UInt32 };
        let key_bytes = np2 * s.dt.itemsize();
        self.grid_launch = Some((
            GpuGrid { blocks: s.lines, threads: SORT_THREADS, counter_words: 1, persistent: false },
            key_bytes + 4 * np2,
        ));
        let keys = self.shared_at(0);
        let pos = self.shared_at(key_bytes);
        let threads = self.b.i64(SORT_THREADS as i64);
        let np2c = self.b.i64(np2 as i64);
        let nc = self.b.i64(s.n as i64);
        let row0 = self.b.op(&format!("arith.muli %block, {nc} : i64"));
        // Keys and positions of the line, padded to a power of two.
        let (i, _, _) = self.open_for_step("%tid", &np2c, Some(&threads), &[], &[]);
        let inside = self.b.op(&format!("arith.cmpi ult, {i}, {nc} : i64"));
        let last = self.b.i64(s.n as i64 - 1);
        let ic = self.b.op(&format!("arith.minui {i}, {last} : i64"));
        let g = self.b.op(&format!("arith.addi {row0}, {ic} : i64"));
        let v = load(&mut self.b, &Self::in_ptr(s.input), &g, s.dt);
        let k = self.sort_key(&v, kt);
        let max = self.b.constant("-1", kt);
        let k = self.b.op(&format!("arith.select {inside}, {k}, {max} : {kt}"));
        store(&mut self.b, &keys, &i, &Val::new(k, kdt));
        let i32v = self.b.op(&format!("arith.trunci {i} : i64 to i32"));
        store(&mut self.b, &pos, &i, &Val::new(i32v, DType::UInt32));
        self.close();
        self.b.stmt("nvvm.barrier0");
        // The bitonic network: stage (k, j) compares element i with i ^ j, ascending where
        // i & k is 0.
        let zero = self.b.i64(0);
        let mut kk = 2;
        while kk <= np2 {
            let mut j = kk / 2;
            while j >= 1 {
                let (i, _, _) = self.open_for_step("%tid", &np2c, Some(&threads), &[], &[]);
                let jc = self.b.i64(j as i64);
                let l = self.b.op(&format!("arith.xori {i}, {jc} : i64"));
                let upper = self.b.op(&format!("arith.cmpi ugt, {l}, {i} : i64"));
                self.open_if(&upper);
                let (ki, kl) =
                    (load(&mut self.b, &keys, &i, kdt).ssa, load(&mut self.b, &keys, &l, kdt).ssa);
                let (pi, pl) = (
                    load(&mut self.b, &pos, &i, DType::UInt32).ssa,
                    load(&mut self.b, &pos, &l, DType::UInt32).ssa,
                );
                let kgt = self.b.op(&format!("arith.cmpi ugt, {ki}, {kl} : {kt}"));
                let keq = self.b.op(&format!("arith.cmpi eq, {ki}, {kl} : {kt}"));
                let pgt = self.b.op(&format!("arith.cmpi ugt, {pi}, {pl} : i32"));
                let tie = self.b.op(&format!("arith.andi {keq}, {pgt} : i1"));
                let gt = self.b.op(&format!("arith.ori {kgt}, {tie} : i1"));
                let kc = self.b.i64(kk as i64);
                let dir = self.b.op(&format!("arith.andi {i}, {kc} : i64"));
                let up = self.b.op(&format!("arith.cmpi eq, {dir}, {zero} : i64"));
                // Positions are distinct: descending swaps exactly where ascending does not.
                let swap = self.b.op(&format!("arith.cmpi eq, {gt}, {up} : i1"));
                self.open_if(&swap);
                store(&mut self.b, &keys, &i, &Val::new(kl.clone(), kdt));
                store(&mut self.b, &keys, &l, &Val::new(ki.clone(), kdt));
                store(&mut self.b, &pos, &i, &Val::new(pl.clone(), DType::UInt32));
                store(&mut self.b, &pos, &l, &Val::new(pi.clone(), DType::UInt32));
                self.close();
                self.close();
                self.close();
                self.b.stmt("nvvm.barrier0");
                j /= 2;
            }
            kk *= 2;
        }
        // The line out: positions, or the elements read back at them.
        let (i, _, _) = self.open_for_step("%tid", &nc, Some(&threads), &[], &[]);
        let p = load(&mut self.b, &pos, &i, DType::UInt32).ssa;
        let p = self.b.op(&format!("arith.extui {p} : i32 to i64"));
        let at = self.b.op(&format!("arith.addi {row0}, {i} : i64"));
        if s.argsort {
            store(&mut self.b, &Self::out_ptr(0), &at, &Val::new(p, DType::Int64));
        } else {
            let g = self.b.op(&format!("arith.addi {row0}, {p} : i64"));
            let v = load(&mut self.b, &Self::in_ptr(s.input), &g, s.dt);
            store(&mut self.b, &Self::out_ptr(0), &at, &v);
        }
        self.close();
        Ok(())
    }

    /// The unsigned-order key of `v` (see the module docs) as an integer of type `kt`.
    fn sort_key(&mut self, v: &Val, kt: &str) -> String {
        let bits = kt.trim_start_matches('i').parse::<u32>().expect("i32 or i64");
        let sign = self.b.constant(
            &format!("{}", if bits == 64 { i64::MIN as i128 } else { i32::MIN as i128 }),
            kt,
        );
        match v.dt {
            DType::Float32 | DType::Float64 => {
                let ft = v.ty();
                let zero = self.b.constant("0.0", ft);
                // -0.0 + 0.0 is 0.0: one key for both zeros.
                let x = self.b.op(&format!("arith.addf {}, {zero} : {ft}", v.ssa));
                let b = self.b.op(&format!("arith.bitcast {x} : {ft} to {kt}"));
                let zk = self.b.constant("0", kt);
                let neg = self.b.op(&format!("arith.cmpi slt, {b}, {zk} : {kt}"));
                let ones = self.b.constant("-1", kt);
                let inv = self.b.op(&format!("arith.xori {b}, {ones} : {kt}"));
                let set = self.b.op(&format!("arith.ori {b}, {sign} : {kt}"));
                let k = self.b.op(&format!("arith.select {neg}, {inv}, {set} : {kt}"));
                let nan = self.b.op(&format!("arith.cmpf uno, {}, {} : {ft}", v.ssa, v.ssa));
                self.b.op(&format!("arith.select {nan}, {ones}, {k} : {kt}"))
            }
            DType::Int32 | DType::Int64 => {
                self.b.op(&format!("arith.xori {}, {sign} : {kt}", v.ssa))
            }
            _ => v.ssa.clone(),
        }
    }
}

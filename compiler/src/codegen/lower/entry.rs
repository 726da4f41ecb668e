//! The GPU kernel's entry (`@kiln_gpu`: grid-stride chunks of work items over the kernel) and
//! helpers the kernel shapes share: the entry prologue, values staged in outputs, input strides.

use super::*;

/// The GPU entry (made a `.entry` by its calling convention, set on the LLVM function).
///
/// Without `coop`: a grid-stride loop over chunks of work items, each handled by a call to
/// `@kiln_kernel` (inlined). With it: blocks of [`COOP_BLOCK`] threads loop over groups of
/// `items` work items, `lanes` threads to an item; the loop's trip count is the same for every
/// thread of a block (an item past the end is computed on the last item, its stores skipped),
/// so the kernel's barriers are reached by all.
/// The parameters arrive by value and are spilled to a stack array for the kernel's
/// `%params` loads, which LLVM's SROA turns back into the arguments. `row_bounds`: a row
/// kernel's launch bounds, the blocks a multiprocessor holds at once (0: none).
pub(super) fn gpu_entry(
    nbuf: usize,
    nparams: usize,
    coop: Option<Coop>,
    vec: bool,
    split: Option<usize>,
    deref: &[u64],
    row_bounds: usize,
) -> String {
    // Buffers are whole allocations of the memory pool: 512-byte aligned. A split kernel's
    // scratch and counters follow the region's buffers. `deref[k]`: bytes known readable of
    // input `k` (see `Builder::entry_load`).
    let all = if split.is_some() { nbuf + 2 } else { nbuf };
    let mut args: Vec<String> = (0..all)
        .map(|k| {
            let d = deref_attr(deref.get(k).copied().unwrap_or(0));
            format!("%b{k}: !llvm.ptr {{llvm.noalias, llvm.align = 16 : i64{d}}}")
        })
        .collect();
    args.extend((0..nparams).map(|k| format!("%p{k}: i64")));
    args.push("%n: i64".into());
    args.push("%chunk: i64".into());
    // Launch bounds of row kernels: ptxas keeps the registers within what `row_bounds` blocks a
    // multiprocessor allow.
    let attrs = match coop {
        Some(_) if row_bounds > 0 => format!(
            " attributes {{nvvm.maxntid = array<i32: {COOP_BLOCK}, 1, 1>, nvvm.minctasm = {row_bounds} : i32}}"
        ),
        _ => String::new(),
    };
    let mut t = format!("  func.func @{GPU_ENTRY}({}){attrs} {{\n", args.join(", "));
    t += "    %one = arith.constant 1 : i64\n";
    if vec {
        t += &format!("    %c{GPU_VEC} = arith.constant {GPU_VEC} : i64\n");
    }
    t += &entry_prologue(nparams);
    let mut names: Vec<String> = (0..nbuf).map(|k| format!("%b{k}")).collect();
    names.extend(["%params".to_string(), "%start".into(), "%end".into()]);
    let mut tys = vec!["!llvm.ptr"; nbuf + 1];
    tys.extend(["i64", "i64"]);
    match coop {
        None => {
            t += "    %base = arith.muli %ctaid, %ntid : i64\n";
            t += "    %gid = arith.addi %base, %tid : i64\n";
            t += "    %stride = arith.muli %ntid, %nctaid : i64\n";
            t += "    %nm1 = arith.addi %n, %chunk : i64\n";
            t += "    %nm2 = arith.subi %nm1, %one : i64\n";
            t += "    %nchunks = arith.divui %nm2, %chunk : i64\n";
            t += "    scf.for %c = %gid to %nchunks step %stride : i64 {\n";
            if vec {
                // The chunk is GPU_VEC: a constant factor tells LLVM the start's alignment.
                t += &format!("      %start = arith.muli %c, %c{GPU_VEC} : i64\n");
            } else {
                t += "      %start = arith.muli %c, %chunk : i64\n";
            }
            t += "      %end0 = arith.addi %start, %chunk : i64\n";
            t += "      %end = arith.minui %end0, %n : i64\n";
            if vec {
                // A whole chunk has a constant trip count: unrolled, its loads vectorised.
                let call = format!(
                    "func.call @{KERNEL}({}) : ({}) -> ()",
                    names.join(", "),
                    tys.join(", ")
                );
                t += &format!("      %vec = arith.constant {GPU_VEC} : i64\n");
                t += "      %full = arith.cmpi ule, %end0, %n : i64\n";
                t += "      scf.if %full {\n";
                t += "        %vend = arith.addi %start, %vec : i64\n";
                t += &format!("        {}\n", call.replace("%end", "%vend"));
                // The last, partial chunk (fewer than GPU_VEC items): one item per call, so
                // the inlined kernel keeps neither its unrolled path nor a loop, only one copy
                // of the element's code (libdevice functions are inlined per copy).
                t += "      } else {\n";
                t += "        scf.for %i = %start to %end step %one : i64 {\n";
                t += "          %i1 = arith.addi %i, %one : i64\n";
                t +=
                    &format!("          {}\n", call.replace("%start", "%i").replace("%end", "%i1"));
                t += &format!("        }} {NO_UNROLL}\n");
                t += "      }\n";
                t += "    }\n    return\n  }\n";
                return t;
            }
        }
        Some(c) if split.is_some() => {
            // One block per (group of items, split); every thread's item as without a split.
            let k = split.expect("checked");
            t += &coop_lane_item(c);
            t += &format!("    %group = arith.divui %ctaid, %p{k} : i64\n");
            t += &format!("    %split = arith.remui %ctaid, %p{k} : i64\n");
            t += "    %g0 = arith.muli %group, %items : i64\n";
            t += "    %w = arith.addi %g0, %item : i64\n";
            t += "    %active = arith.cmpi ult, %w, %n : i64\n";
            t += "    %last = arith.subi %n, %one : i64\n";
            t += "    %start = arith.minui %w, %last : i64\n";
            t += "    %end = arith.addi %start, %one : i64\n";
            names.extend([
                "%lane".to_string(),
                "%tid".into(),
                "%active".into(),
                "%split".into(),
                "%group".into(),
                format!("%b{nbuf}"),
                format!("%b{}", nbuf + 1),
            ]);
            tys.extend(["i64", "i64", "i1", "i64", "i64", "!llvm.ptr", "!llvm.ptr"]);
            t += &format!(
                "    func.call @{KERNEL}({}) : ({}) -> ()\n",
                names.join(", "),
                tys.join(", ")
            );
            t += "    return\n  }\n";
            return t;
        }
        Some(c) => {
            t += &coop_lane_item(c);
            t += "    %base0 = arith.muli %ctaid, %items : i64\n";
            t += "    %stride = arith.muli %nctaid, %items : i64\n";
            t += "    %last = arith.subi %n, %one : i64\n";
            t += "    scf.for %c = %base0 to %n step %stride : i64 {\n";
            t += "      %w = arith.addi %c, %item : i64\n";
            t += "      %active = arith.cmpi ult, %w, %n : i64\n";
            t += "      %start = arith.minui %w, %last : i64\n";
            t += "      %end = arith.addi %start, %one : i64\n";
            names.extend(["%lane".to_string(), "%tid".into(), "%active".into()]);
            tys.extend(["i64", "i64", "i1"]);
        }
    }
    t += &format!("      func.call @{KERNEL}({}) : ({}) -> ()\n", names.join(", "), tys.join(", "));
    t += "    }\n    return\n  }\n";
    t
}

/// The GPU entry's parameters spilled to the stack array `%params` (the kernel's loads of it,
/// which LLVM's SROA turns back into the arguments), and the thread's `%tid`, `%ctaid`, `%ntid`,
/// `%nctaid` as i64.
pub(crate) fn entry_prologue(nparams: usize) -> String {
    let mut t = format!("    %nparams = arith.constant {} : i64\n", nparams.max(1));
    t += "    %params = llvm.alloca %nparams x i64 : (i64) -> !llvm.ptr\n";
    for k in 0..nparams {
        t += &format!("    %pp{k} = llvm.getelementptr inbounds %params[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n");
        t += &format!("    llvm.store %p{k}, %pp{k} : i64, !llvm.ptr\n");
    }
    for (v, reg) in
        [("tid", "tid.x"), ("ctaid", "ctaid.x"), ("ntid", "ntid.x"), ("nctaid", "nctaid.x")]
    {
        t += &format!("    %{v}32 = nvvm.read.ptx.sreg.{reg} : i32\n");
        t += &format!("    %{v} = arith.extui %{v}32 : i32 to i64\n");
    }
    t
}

/// Nodes a reduction region would otherwise compute twice per element: once in the prologue of
/// a reduction over the region's space, once for a full-shape output (softmax's `exp(x - max)`,
/// read by the sum and by the division). Each is stored into that output's buffer by the
/// reduction's loop and read back by the final pass: for (value, output index, reduction).
///
/// A candidate has the region's shape and its output's dtype (the buffer holds it exactly), is
/// in the output's cone and in the prologue of a reduction of `level1`, and costs a call to a
/// transcendental function at least; of several, the costliest (then the last) is taken.
pub(super) fn staged_values(
    body: &Graph,
    shape: &[usize],
    level1: &[NodeId],
    outputs: &[(usize, NodeId)],
) -> Vec<(NodeId, usize, NodeId)> {
    use std::collections::BTreeSet;
    // Nodes reachable from `root` through elementwise ops and views, not into reductions.
    let cone = |root: NodeId| -> BTreeSet<NodeId> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            if node.op.is_reduction() && n != root {
                continue;
            }
            if !node.op.is_reduction() {
                stack.extend(node.inputs.iter().copied());
            }
        }
        seen
    };
    let cost = |n: NodeId| -> usize {
        cone(n)
            .iter()
            .map(|&m| {
                use OpKind::*;
                match body.node(m).op {
                    Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin
                    | Arccos | Arctan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Erf
                    | Cbrt | Power | Arctan2 | Hypot | LogAddExp | LogAddExp2 => 16,
                    Erfc | Erfinv | Gammaln | Digamma | Gcd | Lcm | Philox | PhiloxHigh => 16,
                    PhiloxBits => 16,
                    BoxMullerCos | BoxMullerSin => 16,
                    FrexpMantissa | FrexpExponent | Fmod | Ldexp | NextAfter => 4,
                    MakeComplex => 1,
                    Neg | Abs | Sign | Sqrt | Square | Reciprocal | Floor | Ceil | Trunc | Rint
                    | IsNan | IsInf | IsFinite | LogicalNot | Invert | Real | Imag | Conj | Add
                    | Sub | Mul | Div | FloorDiv | Remainder | Maximum | Minimum | Fmax | Fmin
                    | CopySign | Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr
                    | LogicalXor | BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift
                    | Where | Cast | Bitcast | Label => 1,
                    kiln_ir::ops_not_of!(Elementwise) => 0,
                }
            })
            .sum()
    };
    let mut staged = Vec::new();
    for &(k, o) in outputs {
        let out_cone = cone(o);
        let dtype = body.node(o).dtype;
        let mut best: Option<(usize, NodeId, NodeId)> = None;
        for &r in level1 {
            let prologue = cone(body.node(r).inputs[0]);
            for &e in out_cone.intersection(&prologue) {
                let node = body.node(e);
                if node.shape.as_slice() != shape
                    || node.dtype != dtype
                    || !node.op.is_elementwise()
                {
                    continue;
                }
                let c = cost(e);
                if c >= 16 && best.is_none_or(|(bc, be, _)| (c, e) > (bc, be)) {
                    best = Some((c, e, r));
                }
            }
        }
        if let Some((_, e, r)) = best {
            staged.push((e, k, r));
        }
    }
    staged
}

/// How the body reads its inputs at `shape`: for each use of an `input` (directly or through
/// views) by an op over `shape`, the input's size in bytes and its strides (in elements) as seen
/// there (0 along broadcast axes). Uses through a reshape that is no strided view are left out.
pub(super) fn input_strides(body: &Graph, shape: &[usize]) -> Vec<(usize, Vec<isize>)> {
    use kiln_ir::Layout;
    let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); body.len()];
    for (i, n) in body.nodes().iter().enumerate() {
        for &inp in &n.inputs {
            if !users[inp.index()].contains(&NodeId(i as u32)) {
                users[inp.index()].push(NodeId(i as u32));
            }
        }
    }
    let mut out = Vec::new();
    for (i, node) in body.nodes().iter().enumerate() {
        if node.op != OpKind::Input {
            continue;
        }
        let bytes = numel(&node.shape) * node.dtype.itemsize();
        let mut stack = vec![(NodeId(i as u32), Layout::contiguous(&node.shape))];
        while let Some((cur, layout)) = stack.pop() {
            for &u in &users[cur.index()] {
                let v = body.node(u);
                if !v.op.is_view() {
                    if body.node(cur).shape.as_slice() == shape {
                        out.push((bytes, layout.strides.to_vec()));
                    }
                    continue;
                }
                let next = match (&v.op, &v.attrs) {
                    (OpKind::Permute, Attrs::Perm { perm }) => Some(layout.permute(perm)),
                    (OpKind::BroadcastTo, Attrs::Shape { shape }) => {
                        Some(layout.broadcast_to(shape))
                    }
                    (OpKind::Slice, Attrs::Slice { dims }) => {
                        Some(layout.slice(
                            &dims.iter().map(|d| (d.start, d.step, d.len)).collect::<Vec<_>>(),
                        ))
                    }
                    (OpKind::Flip, Attrs::Axes { axes }) => Some(layout.flip(axes)),
                    (OpKind::Reshape | OpKind::ExpandDims | OpKind::Squeeze, _) => {
                        layout.reshape(&v.shape)
                    }
                    // With the wrong attributes.
                    (OpKind::Permute | OpKind::BroadcastTo | OpKind::Slice | OpKind::Flip, _) => {
                        None
                    }
                    (kiln_ir::ops_not_of!(View), _) => {
                        unreachable!("{} is not a view", v.op.name())
                    }
                };
                if let Some(next) = next {
                    stack.push((u, next));
                }
            }
        }
    }
    out
}

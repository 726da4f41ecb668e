//! A GPU scatter kernel's entry (its blocks' ranges of positions, the scratch buffer and the
//! counters after the region's buffers) and how the fusion report names its strategy.

use super::GpuScatter;

/// The GPU entry of a scatter kernel: block `b` of `B` takes positions
/// `b·ceil(n/B) .. min((b+1)·ceil(n/B), n)`; the region's buffers are followed by the scratch
/// buffer and the counter (see [`GpuScatter`]). `bounds`: launch bounds, (threads, blocks a
/// multiprocessor holds at once), `.maxntid` and `.minnctapersm` in the PTX.
pub(in crate::codegen::lower) fn gpu_entry(
    nbuf: usize,
    nparams: usize,
    bounds: Option<(usize, usize)>,
) -> String {
    let mut args: Vec<String> = (0..nbuf + 2)
        .map(|k| format!("%b{k}: !llvm.ptr {{llvm.noalias, llvm.align = 16 : i64}}"))
        .collect();
    args.extend((0..nparams).map(|k| format!("%p{k}: i64")));
    args.extend(["%n: i64".to_string(), "%chunk: i64".into()]);
    let attrs = bounds.map_or(String::new(), |(threads, blocks)| {
        format!(
            " attributes {{nvvm.maxntid = array<i32: {threads}, 1, 1>, nvvm.minctasm = {blocks} : i32}}"
        )
    });
    let mut t =
        format!("  func.func @{}({}){attrs} {{\n", super::super::GPU_ENTRY, args.join(", "));
    t += "    %one = arith.constant 1 : i64\n";
    t += &super::super::entry_prologue(nparams);
    for line in [
        "%nb = arith.addi %n, %nctaid : i64",
        "%nb1 = arith.subi %nb, %one : i64",
        "%per = arith.divui %nb1, %nctaid : i64",
        "%s0 = arith.muli %ctaid, %per : i64",
        "%start = arith.minui %s0, %n : i64",
        "%e0 = arith.addi %s0, %per : i64",
        "%end = arith.minui %e0, %n : i64",
    ] {
        t += &format!("    {line}\n");
    }
    let mut names: Vec<String> = (0..nbuf).map(|k| format!("%b{k}")).collect();
    names.extend(["%params", "%start", "%end", "%tid", "%ctaid", "%nctaid"].map(String::from));
    names.extend([format!("%b{nbuf}"), format!("%b{}", nbuf + 1)]);
    let mut tys = vec!["!llvm.ptr"; nbuf + 1];
    tys.extend(["i64", "i64", "i64", "i64", "i64", "!llvm.ptr", "!llvm.ptr"]);
    t += &format!(
        "    func.call @{}({}) : ({}) -> ()\n",
        super::super::KERNEL,
        names.join(", "),
        tys.join(", ")
    );
    t += "    return\n  }\n";
    t
}

/// How the GPU combines a scatter region's values, for the fusion report: "shared-memory bins,
/// B blocks" (the same bits every run; with an absorbed epilogue, computed by the last block;
/// "without tiles" for one-element rows, module `warp`),
/// "global atomics, B blocks" (bins too large for shared memory), or "host" with the reason
/// code generation gives.
pub fn gpu_strategy(region: &crate::fusion::Region) -> String {
    let epilogue = if crate::fusion::has_epilogue(region) {
        ", then the epilogue by the last block"
    } else {
        ""
    };
    match super::super::lower_region(region, &super::super::LowerOptions::gpu()) {
        Ok(k) => match k.gpu_scatter {
            Some(GpuScatter { blocks, zero_outputs: false, tiles: true, .. }) => format!(
                "GPU: shared-memory bins, {blocks} blocks, partials combined in block order{epilogue}"
            ),
            Some(GpuScatter { blocks, zero_outputs: false, tiles: false, .. }) => format!(
                "GPU: shared-memory bins without tiles (float bins a copy per warp), {blocks} blocks, partials combined in block order{epilogue}"
            ),
            Some(GpuScatter { blocks, zero_outputs: true, .. }) => format!(
                "GPU: global atomics into the output, {blocks} blocks (not bit-reproducible)"
            ),
            None => "GPU: no scatter kernel".into(),
        },
        Err(u) => format!("GPU: on the host ({})", u.reason),
    }
}

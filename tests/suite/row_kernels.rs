//! GPU row reductions with several reductions per row (softmax, layer norm), and whole-array
//! reductions split across blocks (`sum_all`): the shape of their PTX (warp shuffles, the row
//! read once from global memory when it fits in shared memory, vector loads in flight, no
//! local memory), checked on this machine by compiling to PTX (and `ptxas -v` where installed);
//! and their results against the reference evaluator on whichever backend runs the suite (the
//! GPU's in the GPU pack), for rows shorter and longer than the shared-memory row cache.

use kiln::{Array, DType, HostArray};
use kiln_compiler::codegen::gpu::GpuKernel;
use kiln_compiler::pipeline::{compile, Options};
use kiln_compiler::toolchain::ptx::PtxTarget;

use crate::ulps::{float_values, ulp_distance};

/// Deterministic values in [lo, hi).
fn uniform(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let n: usize = shape.iter().product();
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn f32s(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Array {
    let a = Array::from_vec(
        uniform(shape, lo, hi, seed).into_iter().map(|x| x as f32).collect::<Vec<_>>(),
        shape,
    );
    a.eval();
    a
}

fn f64s(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Array {
    let a = Array::from_vec(uniform(shape, lo, hi, seed), shape);
    a.eval();
    a
}

/// The GPU kernels of the regions `outs` compile to (regions code generation does not support
/// are left out).
fn gpu_kernels(outs: &[&Array]) -> Vec<GpuKernel> {
    let lowered = kiln::lower(outs);
    let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
    plan.partition
        .regions
        .iter()
        .filter_map(|r| {
            match crate::support::gpu_kernel(
                r,
                PtxTarget::default(),
                kiln_compiler::codegen::Tier::Optimized,
            ) {
                Ok(k) => Some(k),
                Err(kiln_compiler::CompileError::Unsupported { .. }) => None,
                Err(e) => panic!("PTX: {e}"),
            }
        })
        .collect()
}

/// How many PTX instructions start with `prefix` (`ld.global`, `shfl.sync.bfly`, ...).
fn count(ptx: &str, prefix: &str) -> usize {
    ptx.lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            let op = w.next().unwrap_or("");
            if op.starts_with('@') {
                w.next().unwrap_or("")
            } else {
                op
            }
        })
        .filter(|op| op.starts_with(prefix))
        .count()
}

/// Global loads before the kernel's first warp shuffle (the row cache's fill and the first
/// pass) and after it (the later passes).
fn global_loads_around_first_shuffle(ptx: &str) -> (usize, usize) {
    let first = ptx.find("shfl.sync").expect("a shuffle");
    (count(&ptx[..first], "ld.global"), count(&ptx[first..], "ld.global"))
}

/// `ptxas -v` for sm_90 (where installed): its report (registers, shared memory, spills).
fn ptxas_report(label: &str, ptx: &str) -> Option<String> {
    let ptxas = crate::ptxas()?;
    let dir = std::env::temp_dir().join(format!("kiln-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{label}.ptx"));
    std::fs::write(&file, ptx.as_bytes()).unwrap();
    let out = std::process::Command::new(&ptxas)
        .args(["-arch=sm_90", "-v", "-o"])
        .arg(dir.join(format!("{label}.cubin")))
        .arg(&file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{label}: ptxas: {report}\n{ptx}");
    Some(report)
}

/// The registers a thread uses, from a `ptxas -v` report.
fn registers(report: &str) -> usize {
    let at = report.find(" registers").unwrap_or_else(|| panic!("no register count in {report}"));
    report[..at]
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{report}"))
}

/// Prints each kernel's PTX profile (`KILN_ROWS_PROBE=1`): global/shared loads and stores,
/// shuffles, barriers, and ptxas's report.
fn probe(label: &str, k: &GpuKernel) {
    if std::env::var_os("KILN_ROWS_PROBE").is_none() {
        return;
    }
    let ptx = &k.ptx;
    eprintln!("== {label}: gpu_block {:?}", k.kernel.gpu_block);
    for p in [
        "ld.global",
        "st.global",
        "ld.shared",
        "st.shared",
        "shfl.sync",
        "bar.sync",
        "ld.local",
        "st.local",
    ] {
        eprintln!("  {p:<12} {}", count(ptx, p));
    }
    if let Some(r) = ptxas_report(label, ptx) {
        eprintln!("{r}");
    }
    if let Ok(dir) = std::env::var("KILN_ROWS_PROBE_DIR") {
        std::fs::write(format!("{dir}/{label}.ptx"), ptx.as_bytes()).unwrap();
        std::fs::write(format!("{dir}/{label}.mlir"), k.kernel.mlir.as_bytes()).unwrap();
    }
}

fn layer_norm(x: &Array, c: usize) -> Array {
    let w = f32s(&[c], 0.5, 1.5, 91).astype(x.dtype());
    let b = f32s(&[c], -0.5, 0.5, 92).astype(x.dtype());
    kiln::nn::layer_norm(x, &w, &b, 1e-5).unwrap()
}

/// The one kernel of `outs`.
fn kernel(label: &str, outs: &[&Array]) -> GpuKernel {
    let mut ks = gpu_kernels(outs);
    assert_eq!(ks.len(), 1, "{label}: one kernel");
    let k = ks.remove(0);
    probe(label, &k);
    k
}

/// No local memory: no `.local` frame in the PTX, and (where ptxas is installed) no stack
/// frame and no spills.
fn assert_no_local_memory(label: &str, ptx: &str) {
    assert!(!ptx.contains(".local"), "{label}: local memory\n{ptx}");
    assert_eq!(count(ptx, "ld.local") + count(ptx, "st.local"), 0, "{label}");
    if let Some(report) = ptxas_report(label, ptx) {
        assert!(
            report.contains("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
            "{label}: {report}"
        );
    }
}

/// Softmax and layer norm over rows of 4096 float32 (256 lanes, 8 warps to a row): the row is
/// read from global memory once, before the first reduction (the row cache's fill: eight loads
/// in flight per thread, then one at a time; 16 KiB of dynamic shared memory), the passes read
/// it back from shared memory, the lanes combine by warp shuffles and one barrier per
/// reduction pass (and one before the first), and nothing spills. Softmax's max and sum are
/// one pass (the online normaliser): one combine, of a float32 max and a float64 sum.
#[test]
fn long_rows_are_read_once_and_combined_by_shuffles() {
    let x = f32s(&[64, 4096], -5.0, 5.0, 1);
    let s = kernel("softmax-4096", &[&kiln::nn::softmax(&x, -1).unwrap()]);
    assert_eq!(s.kernel.gpu_block, Some((256, 1)));
    assert_eq!(s.kernel.gpu_shared, 4096 * 4, "one row of float32");
    let ptx = &s.ptx;
    assert_eq!(global_loads_around_first_shuffle(ptx), (9, 0), "x read once, by the fill\n{ptx}");
    // One combine of (max, sum): five butterfly steps of a 32-bit and a 64-bit value.
    assert_eq!(count(ptx, "shfl.sync.bfly"), 15, "one combine by shuffles\n{ptx}");
    assert!(
        count(ptx, "st.shared") >= 1 && count(ptx, "ld.shared") >= 2,
        "cached row stored, read back\n{ptx}"
    );
    assert_eq!(count(ptx, "bar.sync"), 2, "{ptx}");
    assert_no_local_memory("softmax-4096", ptx);
    // The one pass's rescale factors are float32 on the GPU: float64 `exp` inlined took this
    // kernel to 128 registers (a quarter of the blocks an SM holds at 32).
    if let Some(report) = ptxas_report("softmax-4096-registers", ptx) {
        assert!(registers(&report) <= 48, "softmax-4096: {report}");
    }

    // Layer norm reads x through the cache (and the row's first element, the shift of its
    // one-pass sums), its weight and its bias in the output pass (four elements a step, their
    // eight loads in flight together, then one element at a time); its sum and sum of squares
    // are one pass, one combine of two float64s.
    let l = kernel("layernorm-4096", &[&layer_norm(&x, 4096)]);
    assert_eq!(l.kernel.gpu_shared, 4096 * 4);
    assert_eq!(global_loads_around_first_shuffle(&l.ptx), (10, 2 * 4 + 2), "{}", l.ptx);
    // The step's loads in one basic block (no branch between them: the divisions' range
    // checks branch once, after them).
    let out_pass = &l.ptx[l.ptx.rfind("bar.sync").unwrap()..];
    let first_load = out_pass.find("ld.global").unwrap();
    let block_start = out_pass[..first_load].rfind("$L__").unwrap_or(0);
    let block_end = first_load + out_pass[first_load..].find("bra").unwrap();
    assert_eq!(count(&out_pass[block_start..block_end], "ld.global"), 8, "{}", l.ptx);
    assert_eq!(count(&l.ptx, "shfl.sync.bfly"), 20, "{}", l.ptx);
    assert_eq!(count(&l.ptx, "bar.sync"), 2, "{}", l.ptx);
    assert_no_local_memory("layernorm-4096", &l.ptx);
}

/// Rows longer than the row cache (20000 float32: 80 KB) take the passes over global memory,
/// softmax's two (max and sum in one: eight loads of x in flight a step, then one at a time;
/// then the output pass's loads, four a step, then one at a time) with the same shuffles; rows of 16 (a warp to a row, eight
/// rows to a block) combine within their warp alone: no barrier at all, and eight rows cached.
#[test]
fn rows_beyond_the_cache_and_rows_of_a_warp() {
    let x = f32s(&[3, 20000], -5.0, 5.0, 2);
    let s = kernel("softmax-20000", &[&kiln::nn::softmax(&x, -1).unwrap()]);
    assert_eq!(s.kernel.gpu_shared, 0, "no row cache");
    assert_eq!(global_loads_around_first_shuffle(&s.ptx), (9, 4 + 1), "{}", s.ptx);
    assert!(count(&s.ptx, "shfl.sync.bfly") >= 10, "{}", s.ptx);
    assert_no_local_memory("softmax-20000", &s.ptx);

    let x = f32s(&[64, 16], -5.0, 5.0, 3);
    let s = kernel("softmax-16", &[&kiln::nn::softmax(&x, -1).unwrap()]);
    assert_eq!(s.kernel.gpu_block, Some((256, 8)));
    assert_eq!(s.kernel.gpu_shared, 8 * 16 * 4, "eight rows of float32");
    assert_eq!(global_loads_around_first_shuffle(&s.ptx).1, 0, "{}", s.ptx);
    assert_eq!(count(&s.ptx, "bar.sync"), 0, "{}", s.ptx);
    assert_no_local_memory("softmax-16", &s.ptx);
}

/// The loop holding the kernel's first instruction that starts with `load` (`ld.global.nc.v4`,
/// ...): its lines, from its label to the branch back to it.
fn loop_of_first(ptx: &str, load: &str) -> Vec<String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let first = lines.iter().position(|l| l.trim_start().starts_with(load)).expect("the load");
    let start =
        (0..first).rev().find(|&i| lines[i].starts_with("$L__BB")).expect("the loop's label");
    let back = format!("{};", lines[start].trim_end_matches(':'));
    let end = (first..lines.len())
        .find(|&i| lines[i].trim_end().ends_with(&back))
        .expect("the back branch");
    lines[start..=end].iter().map(|l| l.to_string()).collect()
}

/// In a lane loop's `body`: the instructions starting with `load`, and whether they all come
/// before the first `cvt`, `add` or `mul` (all loads in flight before the first is used).
fn loads_before_use(body: &[String], load: &str) -> (usize, bool) {
    let text = body.join("\n");
    let is = |l: &String, p: &str| l.trim_start().starts_with(p);
    let last_load = body.iter().rposition(|l| is(l, load)).expect("a load");
    let first_use =
        body.iter().position(|l| ["cvt.", "add.rn", "mul.rn", "fma.rn"].iter().any(|p| is(l, p)));
    (count(&text, load), first_use.is_some_and(|u| last_load < u))
}

/// Whole-array reductions (`sum_all`: `x.sum()`) are split across blocks (`codegen::GpuSplit`);
/// a thread of a block reads its chunk in 128-bit vectors, four at a time, all four issued
/// before the first is used (float32 elements widened to f64 and added after the loads); the
/// rest of the chunk one element at a time. A float64 sum (Neumaier's) reads four vectors of
/// two elements per step; argmax and a sum of a product (`(x * x).sum()`) read as the float32
/// sum does. Where runs of four are not aligned (rows of any length split across blocks, a
/// view starting at element 3) a thread reads 16 single elements a step, `lanes` apart
/// (every warp's load coalesced), all before the first is used. The blocks order their
/// partials with device-scope fences (`fence.acq_rel.gpu`, not `.sys`); nothing spills.
#[test]
fn whole_sums_read_vectors_with_loads_in_flight() {
    let x = f32s(&[1 << 20], -1.0, 1.0, 21);
    let k = kernel("sum_all", &[&x.sum(None)]);
    assert!(k.kernel.gpu_split.is_some(), "a split reduction");
    let ptx = &k.ptx;
    let body = loop_of_first(ptx, "ld.global.nc.v4");
    let text = body.join("\n");
    assert_eq!(
        loads_before_use(&body, "ld.global.nc.v4"),
        (4, true),
        "four 128-bit loads in flight\n{text}"
    );
    assert_eq!(count(&text, "ld.global.nc.b32"), 0, "no scalar load in the loop\n{text}");
    assert_eq!(count(&text, "add.rn.f64"), 16, "16 elements per step\n{text}");
    assert_eq!(
        count(ptx, "ld.global.nc.b32"),
        1,
        "the rest of the chunk, element by element\n{ptx}"
    );
    assert!(
        count(ptx, "fence.acq_rel.gpu") >= 2 && !ptx.contains(".sys"),
        "device-scope fences\n{ptx}"
    );
    assert_no_local_memory("sum_all", ptx);

    let xd = f64s(&[1 << 18], -1.0, 1.0, 22);
    let k = kernel("sum_all-f64", &[&xd.sum(None)]);
    let body = loop_of_first(&k.ptx, "ld.global.nc.v2.b64");
    assert_eq!(loads_before_use(&body, "ld.global.nc.v2.b64"), (4, true), "{}", body.join("\n"));
    assert_no_local_memory("sum_all-f64", &k.ptx);

    for (label, y) in [("argmax_all", x.argmax(None)), ("l2_all", (&x * &x).sum(None))] {
        let k = kernel(label, &[&y]);
        let body = loop_of_first(&k.ptx, "ld.global.nc.v4");
        assert_eq!(count(&body.join("\n"), "ld.global.nc.v4"), 4, "{label}\n{}", body.join("\n"));
        assert_no_local_memory(label, &k.ptx);
    }

    let m = f32s(&[4, 1 << 17], -1.0, 1.0, 23);
    let from3 = x.slice(&kiln::s![3..]);
    for (label, y) in [("sum_rows", m.sum(1)), ("sum_from_3", from3.sum(None))] {
        let k = kernel(label, &[&y]);
        assert!(k.kernel.gpu_split.is_some(), "{label}: a split reduction");
        assert_eq!(count(&k.ptx, "ld.global.nc.v"), 0, "{label}: no vector load\n{}", k.ptx);
        let body = loop_of_first(&k.ptx, "ld.global.nc.b32");
        assert_eq!(
            loads_before_use(&body, "ld.global.nc.b32"),
            (16, true),
            "{label}\n{}",
            body.join("\n")
        );
        assert_no_local_memory(label, &k.ptx);
    }
}

/// `y` computed by the backend against the evaluator on its graph (floats within `max_ulps`,
/// others equal), and the same bits when computed again from a fresh expression.
fn check_backend(name: &str, y: &Array, again: &Array, max_ulps: f64) {
    check_backend_near(name, y, again, max_ulps, 0.0)
}

/// [`check_backend`], floats also passing within `abs` of the evaluator's.
fn check_backend_near(name: &str, y: &Array, again: &Array, max_ulps: f64, abs: f64) {
    let l = kiln::lower(&[y]);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
    let got = y.try_to_host().unwrap_or_else(|e| panic!("{name}: {e}")).as_ref().clone();
    assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{name}");
    match (float_values(&got), float_values(&want)) {
        (Some((g, format)), Some((w, _))) => {
            for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
                let d = ulp_distance(a, b, format);
                let near = (a - b).abs() <= abs;
                assert!(
                    d <= max_ulps || near,
                    "{name}: element {i}: {a:e} vs reference {b:e} ({d} ulps > {max_ulps})"
                );
            }
        }
        _ => assert_eq!(got, want, "{name}"),
    }
    let again = again.try_to_host().unwrap().as_ref().clone();
    match (float_values(&again), float_values(&got)) {
        // The same bits, a NaN as any NaN.
        (Some((a, _)), Some((g, _))) => {
            let same = a
                .iter()
                .zip(&g)
                .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan());
            assert!(same, "{name}: not deterministic");
        }
        _ => assert_eq!(again, got, "{name}: not deterministic"),
    }
}

/// exp's error (libdevice's or glibc's vector exp: 4 ulps at most) in each term, the same in
/// the sum, and a rounding.
const SOFTMAX_ULPS: f64 = 9.0;

/// Softmax, layer norm and row reductions through the active backend (on the GPU: the
/// shuffles, and the row cache where the row fits), against the reference evaluator: rows of
/// 20000 float32 (beyond the cache), 4096 (cached), 300 and 3 (several rows to a block), and
/// float64; argmax/argmin and bool reductions exactly.
#[test]
fn row_reductions_through_the_backend() {
    for (shape, seed) in [([3, 20000], 4), ([16, 4096], 5), ([40, 300], 6), ([50, 3], 7)] {
        let x = f32s(&shape, -8.0, 8.0, seed);
        let c = shape[1];
        let name = format!("softmax f32 {shape:?}");
        check_backend(
            &name,
            &kiln::nn::softmax(&x, -1).unwrap(),
            &kiln::nn::softmax(&x, -1).unwrap(),
            SOFTMAX_ULPS,
        );
        check_backend_near(
            &format!("layer_norm f32 {shape:?}"),
            &layer_norm(&x, c),
            &layer_norm(&x, c),
            4.0,
            LAYER_NORM_ABS,
        );
        check_backend(&format!("argmax f32 {shape:?}"), &x.argmax(1), &x.argmax(1), 0.0);
        let m = x.greater(7.9);
        check_backend(&format!("any/all {shape:?}"), &m.any(1), &m.any(1), 0.0);
        check_backend(&format!("all {shape:?}"), &m.all(1), &m.all(1), 0.0);
    }
    for (shape, seed) in [([7, 3], 8), ([6, 5000], 9)] {
        let x = f64s(&shape, -8.0, 8.0, seed);
        let name = format!("softmax f64 {shape:?}");
        check_backend(
            &name,
            &kiln::nn::softmax(&x, -1).unwrap(),
            &kiln::nn::softmax(&x, -1).unwrap(),
            SOFTMAX_ULPS,
        );
        let v = x.var(1, 0);
        check_backend(&format!("var f64 {shape:?}"), &v, &x.var(1, 0), 4.0);
        check_backend(&format!("argmin f64 {shape:?}"), &x.argmin(1), &x.argmin(1), 0.0);
    }
    let h = f32s(&[9, 700], -4.0, 4.0, 10).astype(DType::Float16);
    check_backend(
        "softmax f16",
        &kiln::nn::softmax(&h, -1).unwrap(),
        &kiln::nn::softmax(&h, -1).unwrap(),
        2.0,
    );
}

/// Rows of `len` float32, one to each of `kinds` kinds, the value of kind `k` at `j` being
/// `f(k, j, t = j / len, u)` with `u` uniform in [-8, 8).
fn rows_of(
    kinds: usize,
    len: usize,
    seed: u64,
    f: impl Fn(usize, usize, f64, f64) -> f64,
) -> Array {
    let r = uniform(&[kinds, len], -8.0, 8.0, seed);
    let v: Vec<f32> = (0..kinds * len)
        .map(|i| f(i / len, i % len, (i % len) as f64 / len as f64, r[i]) as f32)
        .collect();
    let a = Array::from_vec(v, &[kinds, len]);
    a.eval();
    a
}

/// Rows that stress softmax's one-pass fold (module `codegen::online`), one kind to a row: a
/// max raised by every element (ascending), a max first (descending), all `-inf`, a NaN, a
/// `+inf`, some `-inf`, zeros of both signs, values whose `exp` overflows unshifted, and a
/// range so wide that most terms underflow.
fn special_rows(len: usize, seed: u64) -> Array {
    rows_of(9, len, seed, |kind, j, t, u| match kind {
        0 => -5.0 + 10.0 * t,
        1 => 5.0 - 10.0 * t,
        2 => f64::NEG_INFINITY,
        3 if j == len / 2 => f64::NAN,
        4 if j == len / 3 => f64::INFINITY,
        5 if j % 7 == 0 => f64::NEG_INFINITY,
        6 => {
            if j % 2 == 0 {
                0.0
            } else {
                -0.0
            }
        }
        7 => 80.0 + 2.0 * u,
        8 => 1e4 * u,
        _ => u,
    })
}

/// Rows that stress layer norm's one-pass fold (module `codegen::moments`): a constant row
/// (variance 0), means large against the spread (10^4 and 10^6 plus noise), a first element
/// far from the rest, `+inf` first, `+inf` later, NaN, values whose squares overflow float32,
/// tiny values, zeros of both signs.
fn moment_rows(len: usize, seed: u64) -> Array {
    rows_of(11, len, seed, |kind, j, _, u| match kind {
        0 => 3.25,
        1 => 1e4 + u,
        2 => 1e6 + u / 8.0,
        3 if j == 0 => 1e5,
        4 if j == 0 => f64::INFINITY,
        5 if j == len / 2 => f64::INFINITY,
        6 if j == len / 3 => f64::NAN,
        7 => 1e20 * u,
        8 => 1e-30 * u,
        9 => {
            if j % 2 == 0 {
                0.0
            } else {
                -0.0
            }
        }
        _ => u,
    })
}

/// `outs` with every region compiled for the host with the one-pass folds of softmax and layer
/// norm (as on the GPU; the host's default is a pass for each reduction), and by the reference
/// evaluator. Row regions (`rows`) must fold in one pass; the host's column kernels (block
/// mode) do not.
fn run_online_on_host(outs: &[&Array], rows: bool) -> (Vec<HostArray>, Vec<HostArray>) {
    use kiln_compiler::codegen::{self, LowerOptions, Tier};
    use kiln_compiler::schedule::schedule;
    let lowered = kiln::lower(outs);
    let g = lowered.graph;
    let p = kiln_compiler::fusion::partition(&g);
    let sched = schedule(&g, &p.regions);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&g, &inputs).unwrap();
    let options = LowerOptions { online_softmax: true, ..LowerOptions::host() };
    let got = kiln_exec::cpu::run_steps(&sched, &p.regions, &inputs, |_, region, refs| {
        let kernel = codegen::lower(region, &options)?;
        let rescale = kernel.mlir.contains("scf.if");
        let shift = kernel.mlir.contains("math.absf");
        assert!(
            !rows || rescale || shift,
            "a one-pass fold: softmax's rescale, layer norm's shift\n{}",
            kernel.mlir
        );
        kiln_exec::cpu::run_compiled(&crate::support::host_compile(kernel, Tier::Optimized)?, refs)
    })
    .unwrap();
    (got, want)
}

/// Softmax's max and sum in one pass at the values that test it (see [`special_rows`]), rows
/// of 5, 300, 4096 (in the GPU's row cache) and 20000 (beyond it), along rows and columns:
/// compiled for the host in one pass (rows), and through the active backend (on the GPU the
/// one pass is the default, columns too), against the evaluator. NaN where the evaluator has NaN (a row of `-inf`,
/// a NaN or `+inf` in it), within [`SOFTMAX_ULPS`] elsewhere.
#[test]
fn softmax_in_one_pass_at_special_values() {
    for (len, seed) in [(5, 11), (300, 12), (4096, 13), (20000, 14)] {
        let x = special_rows(len, seed);
        for ax in [-1, 0] {
            let y = kiln::nn::softmax(&x, ax).unwrap();
            let name = format!("softmax of special rows of {len}, axis {ax}");
            let (got, want) = run_online_on_host(&[&y], ax == -1);
            let (g, format) = float_values(&got[0]).unwrap();
            let (w, _) = float_values(&want[0]).unwrap();
            let nans = w.iter().filter(|v| v.is_nan()).count();
            assert!(nans >= 3 * len || ax == 0, "{name}: the evaluator's NaN rows ({nans})");
            for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
                let d = ulp_distance(a, b, format);
                assert!(
                    d <= SOFTMAX_ULPS,
                    "{name} (host, one pass): element {i}: {a:e} vs reference {b:e} ({d} ulps)"
                );
            }
            check_backend(&name, &y, &kiln::nn::softmax(&x, ax).unwrap(), SOFTMAX_ULPS);
        }
    }
}

/// The largest distance, in ulps, of `got` from `want` (NaN matching NaN), of the elements
/// farther than `abs` apart.
fn worst_ulps(name: &str, got: &HostArray, want: &HostArray, abs: f64) -> f64 {
    let (g, format) = float_values(got).unwrap();
    let (w, _) = float_values(want).unwrap();
    assert_eq!(g.len(), w.len(), "{name}");
    let mut worst = (0.0, 0);
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let d = ulp_distance(a, b, format);
        if d > worst.0 && (a - b).abs() > abs {
            worst = (d, i);
        }
    }
    if worst.0 > 0.0 {
        let i = worst.1;
        eprintln!(
            "{name}: worst {} ulps at element {i}: {:e} vs reference {:e}",
            worst.0, g[i], w[i]
        );
    }
    worst.0
}

/// Layer norm's sum and sum of squares in one pass at the values that test it (see
/// [`moment_rows`]), rows of 7, 300, 4096 (in the GPU's row cache) and 20000 (beyond it):
/// compiled for the host in one pass, and through the active backend (on the GPU the one pass
/// is the default), against the evaluator (NaN where it has NaN): the variance within 2 ulps;
/// the normalised rows within 4 ulps or [`LAYER_NORM_ABS`]. The one pass sums exact squares in
/// float64 where the evaluator's two passes round each square to float32: a variance a last bit
/// apart, which `d / sqrt(var) * w + b` keeps as an absolute error near `ulp(1)` where its
/// terms cancel (an output of 4.4e-4 was 32 of its ulps apart).
#[test]
fn layer_norm_in_one_pass_at_special_values() {
    for (len, seed) in [(7, 21), (300, 22), (4096, 23), (20000, 24)] {
        let x = moment_rows(len, seed);
        let y = layer_norm(&x, len);
        let var = x.var(1, 0);
        let name = format!("layer norm of special rows of {len}");
        let (got, want) = run_online_on_host(&[&y, &var], true);
        let d = worst_ulps(&name, &got[0], &want[0], LAYER_NORM_ABS);
        assert!(d <= 4.0, "{name} (host, one pass): {d} ulps\n{:?}\n{:?}", got[0], want[0]);
        let d = worst_ulps(&name, &got[1], &want[1], 0.0);
        assert!(
            d <= 2.0,
            "{name} (host, one pass): the variance {d} ulps\n{:?}\n{:?}",
            got[1],
            want[1]
        );
        check_backend_near(&name, &y, &layer_norm(&x, len), 4.0, LAYER_NORM_ABS);
        check_backend(&format!("variance of special rows of {len}"), &var, &x.var(1, 0), 2.0);
    }
}

/// Absolute error allowed in normalised rows (values of order 1): 8 float32 ulps of 1.
const LAYER_NORM_ABS: f64 = 8.0 / (1u64 << 23) as f64;

/// Nested reductions over a short axis (`lower/nested.rs`): the inner reductions at every
/// element of the outer fold are computed in one loop, and the outer fold is unrolled. Through
/// the active backend against the evaluator: k-means' labels (argmin over 10 of sums over 64),
/// folds of 16 (unrolled) and 17 (loops), two reduced outer axes, a float64 inner sum (two
/// accumulators each), a max of means, and an inner reduction read at one element only.
#[test]
fn nested_reductions_over_a_short_axis() {
    let sq = |x: &Array, c: &Array| (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2);
    for (n, k, d, seed) in [(300, 10, 64, 11), (50, 16, 7, 12), (50, 17, 7, 13), (40, 2, 1, 14)] {
        let (x, c) = (f32s(&[n, d], -2.0, 2.0, seed), f32s(&[k, d], -2.0, 2.0, seed + 100));
        check_backend(
            &format!("labels {n}x{d} k={k}"),
            &sq(&x, &c).argmin(1),
            &sq(&x, &c).argmin(1),
            0.0,
        );
        check_backend(
            &format!("max distance {n}x{d} k={k}"),
            &sq(&x, &c).max(1),
            &sq(&x, &c).max(1),
            0.0,
        );
        check_backend(
            &format!("mean of means {n}x{d} k={k}"),
            &sq(&x, &c).mean(1),
            &sq(&x, &c).mean(1),
            1.0,
        );
    }
    let x = f64s(&[30, 2, 3, 50], -4.0, 4.0, 15);
    let f = |x: &Array| x.sum(3).min([1, 2]);
    check_backend("min over two axes of float64 sums", &f(&x), &f(&x), 0.0);
    let g = |x: &Array| (x.sum(3) * 2.0).max([1, 2]);
    check_backend("max over two axes of float64 sums", &g(&x), &g(&x), 0.0);
    // The mlir of the labels on the host: one loop over d folding 10 sums at once.
    let (x, c) = (f32s(&[64, 8], -2.0, 2.0, 16), f32s(&[10, 8], -2.0, 2.0, 17));
    let labels = sq(&x, &c).argmin(1);
    let mlir = kiln::kernel_code(&[&labels], kiln::CodeStage::HostMlir).unwrap();
    let ten = format!("-> ({})", ["f64"; 10].join(", "));
    assert_eq!(mlir.matches(&ten).count(), 1, "{mlir}");
}

//! Host code generation, continued: reductions (softmax, layer norm, argmax, columns), empty
//! and scalar arrays, the fallback to the evaluator, the kernel caches and tiers, probes.

use super::*;

#[test]
fn index_ramps() {
    let y = kiln::arange(1000).astype(DType::Float32).sin()
        * kiln::linspace(0.0, 1.0, 1000).astype(DType::Float32);
    check_program("arange and linspace", &[&y], f32_ulps());
    check_program("eye", &[&kiln::eye(7, Some(9), 2, DType::Int16)], 0.0);
}

#[test]
fn softmax_rows() {
    let x = uniform_f32(&[64, 300], -5.0, 5.0, 23);
    check_program("softmax", &[&kiln::nn::softmax(&x, -1).unwrap()], softmax_ulps());
    // Over the first axis too: the rows are strided.
    check_program("softmax axis 0", &[&kiln::nn::softmax(&x, 0).unwrap()], softmax_ulps());
    check_program("logsumexp", &[&kiln::nn::logsumexp(&x, 1).unwrap()], f32_ulps());
    // float16 and bfloat16: every op rounded to the dtype, sums accumulated in f32.
    for dt in [DType::Float16, DType::BFloat16] {
        let h = x.astype(dt);
        check_program(
            &format!("softmax {dt}"),
            &[&kiln::nn::softmax(&h, -1).unwrap(), &kiln::nn::softmax(&h, 0).unwrap()],
            2.0,
        );
        let w = uniform_f32(&[300], 0.5, 1.5, 71).astype(dt);
        check_program(
            &format!("layer_norm {dt}"),
            &[&kiln::nn::layer_norm(&h, &w, &w, 1e-3).unwrap()],
            2.0,
        );
    }
}

#[test]
fn layernorm_l2norm_var_std() {
    let x = uniform_f32(&[32, 200], -3.0, 3.0, 24);
    let w = uniform_f32(&[200], 0.5, 1.5, 25);
    let b = uniform_f32(&[200], -0.5, 0.5, 26);
    check_program("layer_norm", &[&kiln::nn::layer_norm(&x, &w, &b, 1e-5).unwrap()], 4.0);
    check_program("l2norm", &[&kiln::nn::l2norm_rows(&x).unwrap()], 1.0);
    check_program("var, std", &[&x.var(1, 0), &x.std(1, 1)], 2.0);
    check_program("column mean and std", &[&x.mean(0), &x.std(0, 0)], 2.0);
    let x64 = uniform_f64(&[32, 200], -3.0, 3.0, 27);
    check_program("var float64", &[&x64.var(1, 0), &x64.std(0, 1)], 2.0);
}

#[test]
fn argmax_argmin_with_nans_and_ties() {
    let mut v: Vec<f32> = (0..40 * 25).map(|i| ((i * 7919) % 13) as f32).collect();
    v[3 * 25 + 5] = f32::NAN;
    v[3 * 25 + 9] = f32::NAN;
    v[7 * 25] = f32::NAN;
    v[9 * 25 + 24] = f32::NAN;
    for k in 0..25 {
        v[11 * 25 + k] = f32::NAN;
    }
    let x = Array::from_vec(v, &[40, 25]);
    x.eval();
    check_program("argmax/argmin rows", &[&x.argmax(1), &x.argmin(1)], 0.0);
    check_program("argmax/argmin columns", &[&x.argmax(0), &x.argmin(0)], 0.0);
    check_program("argmax flattened", &[&x.argmax(None), &x.argmin(axis(1).keepdims())], 0.0);
    check_program("max/min with NaN", &[&x.max(1), &x.min(0), &x.max(None)], 0.0);
    let i = ints(&[40, 25], 28, |v| (v % 9) as i16 - 4);
    check_program("int argmax ties", &[&i.argmax(1), &i.argmin(0), &i.max(1), &i.min(None)], 0.0);
}

/// Ops of constants are computed while lowering, by the evaluator (`codegen::fold`), rather than
/// folded by LLVM: `copysign(1, 0/0)` is -1.0 as at run time on x86 (LLVM folds 0/0 to +NaN), and
/// a function of a constant is the evaluator's value.
#[test]
fn ops_of_constants_are_the_evaluators() {
    let z = kiln::zeros(&[5], DType::Float64);
    let y = kiln::full(&[5], 1.0, DType::Float64).copysign(&z / &z);
    let e = (kiln::ones(&[3, 2], DType::Float32) * 3.0).exp().sin();
    let (got, want, _) = run_both(&[&y, &e, &(&z / &z).isnan()]);
    assert_eq!(want[0].as_slice::<f64>().unwrap(), &[-1.0; 5]);
    check("ops of constants", &got, &want, 0.0);
}

/// Found by the random-program property test: float max and min reductions used IEEE maximum
/// and minimum alone, which order -0 below +0, where the evaluator (and NumPy) keep the later of
/// equal values: max([0.0, -0.0]) is -0.0. A zero result now has the last zero's sign, in row and
/// block (column) mode, float16 to float64.
#[test]
fn signed_zeros_of_max_and_min() {
    let rows: [[f32; 4]; 6] = [
        [0.0, -0.0, -1.0, -2.0],
        [-0.0, 0.0, -1.0, -3.0],
        [-0.0, -0.0, 0.0, -0.0],
        [0.0, 0.0, 0.0, 0.0],
        [-5.0, -0.0, -1.0, -2.0],
        [1.0, -0.0, 0.0, 2.0],
    ];
    let v: Vec<f32> = rows.iter().flatten().copied().collect();
    // The same rows as the columns of a contiguous array (reduced in block mode).
    let t: Vec<f32> = (0..4).flat_map(|j| rows.iter().map(move |r| r[j])).collect();
    let arrays: Vec<Array> =
        [(v.clone(), [6, 4]), (v.iter().map(|a| -a).collect(), [6, 4]), (t.clone(), [4, 6])]
            .into_iter()
            .chain([(t.iter().map(|a| -a).collect(), [4, 6])])
            .map(|(d, s): (Vec<f32>, [usize; 2])| {
                let a = Array::from_vec(d, &s);
                a.eval();
                a
            })
            .collect();
    for dt in [DType::Float16, DType::BFloat16, DType::Float32, DType::Float64] {
        let [x, neg, xt, negt] = [0, 1, 2, 3].map(|i| arrays[i].astype(dt));
        check_program(&format!("rows {dt}"), &[&x.max(1), &neg.min(1), &x.max(None)], 0.0);
        check_program(
            &format!("columns {dt}"),
            &[&xt.max(0), &negt.min(0), &xt.max(axis(0).keepdims())],
            0.0,
        );
    }
    // remainder(x, x) is a zero with x's sign.
    let y = Array::from_vec(vec![-3.0f64, 2.0, -1.0], &[3]);
    y.eval();
    let (got, want, _) = run_both(&[&(&y % &y).max(None)]);
    assert_eq!(want[0].as_slice::<f64>().unwrap()[0].to_bits(), (-0.0f64).to_bits());
    check("remainder zeros", &got, &want, 0.0);
}

#[test]
fn integer_and_bool_reductions() {
    let a = ints(&[50, 70], 29, |v| (v % 256) as u8 as i8);
    check_program("sum of int8", &[&a.sum(None), &a.sum(0), &a.sum(1), &a.prod(1)], 0.0);
    let u = ints(&[50, 70], 30, |v| v as u32);
    check_program("uint32 sums", &[&u.sum(1), &u.prod(0), &u.max(1)], 0.0);
    let b = ints(&[50, 70], 31, |v| v % 5 != 0);
    check_program(
        "bool reductions",
        &[&b.sum(1), &b.all(1), &b.any(0), &b.all(None), &a.any(1), &a.all(0)],
        0.0,
    );
}

#[test]
fn float_reductions() {
    let x = uniform_f32(&[30, 40, 50], -1.0, 1.0, 32);
    // Sums: the kernel accumulates in f64 and rounds once; the evaluator's sum is exact then
    // rounded: equal but for the rare sum whose f64 rounding crosses a float32 rounding boundary.
    check_program("column sums", &[&x.sum(0)], 1.0);
    check_program(
        "sums over axis sets",
        &[&x.sum([0, 2]), &x.sum(axis([1, 2]).keepdims()), &x.sum(None)],
        1.0,
    );
    let p = uniform_f32(&[30, 40], 0.5, 1.5, 33);
    check_program("products", &[&p.prod(1), &p.prod(None)], 1.0);
    let h = uniform_f32(&[30, 40], -1.0, 1.0, 34).astype(DType::Float16);
    // float16 sums accumulate in f32 (NumPy's float16 sums do too).
    check_program("float16 sums", &[&h.sum(1), &h.mean(0), &h.max(1)], 1.0);
    let bh = uniform_f32(&[30, 40], -1.0, 1.0, 35).astype(DType::BFloat16);
    check_program("bfloat16 sums", &[&bh.sum(1), &bh.min(0)], 1.0);
    let d = uniform_f64(&[30, 40], -1.0, 1.0, 36);
    // float64 sums: partial sums in another order than the evaluator's compensated sum.
    check_program("float64 sums", &[&d.sum(1), &d.sum(0), &d.prod(0)], 4.0);
}

/// Reductions that keep the last axis run in block mode (a block of columns at a time): blocks
/// shorter than a row, longer than the stack arrays, and chunks of work starting mid-row.
#[test]
fn column_reductions_in_blocks() {
    let x = uniform_f32(&[50, 700], -2.0, 2.0, 63);
    check_program("column sums", &[&x.sum(0), &x.max(0), &x.argmin(0)], 1.0);
    check_program("column softmax", &[&kiln::nn::softmax(&x, 0).unwrap()], softmax_ulps());
    check_program("column var", &[&x.var(0, 1), &x.mean(axis(0).keepdims())], 2.0);
    let y = uniform_f32(&[7, 64, 1000], -2.0, 2.0, 64);
    check_program("middle axis", &[&y.sum(1), &y.min(1), &(y.exp().sum(1).log())], f32_ulps());
    let z = uniform_f32(&[7, 300, 3], -2.0, 2.0, 65);
    check_program("short rows", &[&z.sum(1), &z.prod(axis(1).keepdims()), &z.argmax(1)], 1.0);
    let d = uniform_f64(&[40, 300], -2.0, 2.0, 66);
    check_program("float64 column sums", &[&d.sum(0), &d.std(0, 0)], 0.0);
    let b = ints(&[40, 300], 67, |v| v % 7 != 0);
    check_program("bool columns", &[&b.all(0), &b.any(0), &b.sum(0)], 0.0);
    // A transposed input is contiguous along the reduced axis: row mode.
    check_program("transposed column sums", &[&x.t().sum(0)], 1.0);
}

#[test]
fn kmeans_assignment_step() {
    let x = uniform_f32(&[500, 8], -3.0, 3.0, 37);
    let c = uniform_f32(&[7, 8], -3.0, 3.0, 38);
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let (got, want, p) = run_both(&[&labels]);
    assert_eq!(p.regions.len(), 1);
    check("kmeans", &got, &want, 0.0);
}

#[test]
fn empty_and_scalar_arrays() {
    let e = uniform_f32(&[0, 5], -1.0, 1.0, 39);
    check_program("empty elementwise", &[&(e.sin() + 1.0)], 0.0);
    check_program("empty sums", &[&e.sum(0), &e.sum(1)], 0.0);
    let s = uniform_f32(&[], -1.0, 1.0, 40);
    check_program("rank 0", &[&(s.exp() * 2.0)], f32_ulps());
    let x = uniform_f32(&[1, 1, 3], -1.0, 1.0, 41);
    check_program("extent-1 axes", &[&x.sum(0), &(x.t() + 1.0)], 1.0);
}

/// A graph in the textual IR, partitioned and scheduled; results from compiled code (every
/// elementwise and reduction region compiled, none left to the evaluator) and from the
/// reference evaluator.
fn run_text(graph: &str, inputs: &[HostArray]) -> (Vec<HostArray>, Vec<HostArray>) {
    let g = kiln::ir::text::parse(graph).unwrap();
    kiln::ir::verify::verify(&g).unwrap();
    let p = partition(&g);
    for (i, r) in p.regions.iter().enumerate() {
        if r.space == kiln_compiler::fusion::Space::Opaque {
            continue;
        }
        if let Err(e) = codegen::compile_region(r) {
            panic!(
                "region {i} not compiled: {e}\n{}",
                kiln_compiler::fusion::print_regions(std::slice::from_ref(r))
            );
        }
    }
    let sched = schedule(&g, &p.regions);
    let refs: Vec<&HostArray> = inputs.iter().collect();
    let reference = kiln::ir::eval::evaluate(&g, &refs).unwrap();
    (
        kiln_exec::cpu::run_schedule(&sched, &p.regions, &refs, kiln_exec::cpu::HostRun::Compiled)
            .unwrap(),
        reference,
    )
}

/// Found by the random-program property test: a view of an empty array (a reshape, expand_dims
/// or squeeze with no elements) passed its own index through to its input unchanged, of the
/// wrong rank; a permute under it then indexed past the index's axes and the lowering panicked
/// ("index out of bounds: the len is 1 but the index is 1" in `index::through_view`). Its input
/// now gets an index of its own rank.
#[test]
fn views_of_empty_arrays_keep_index_ranks() {
    let text = "kiln.graph v1
%0 = input {index=0} : f32[2,0]
%1 = permute(%0) {perm=[1,0]} : f32[0,2]
%2 = reshape(%1) {shape=[0]} : f32[0]
%3 = const {value=2.0} : f32[]
%4 = broadcast_to(%3) {shape=[0]} : f32[0]
%5 = multiply(%2, %4) : f32[0]
%6 = expand_dims(%1) {axes=[0]} : f32[1,0,2]
%7 = squeeze(%6) {axes=[0]} : f32[0,2]
%8 = permute(%7) {perm=[1,0]} : f32[2,0]
%9 = reshape(%8) {shape=[0,4]} : f32[0,4]
return %5, %9
";
    let (got, want) = run_text(text, &[HostArray::zeros(DType::Float32, &[2, 0])]);
    check("views of empty arrays", &got, &want, 0.0);
}

/// Found by the random-program property test: the fast tier's textual pipeline named plain
/// `instcombine`, which verifies that one iteration reaches a fixpoint and aborts the process
/// (`LLVM ERROR: Instruction Combining on kiln_kernel_host did not reach a fixpoint`) when it
/// does not, as for this program's regions. It is `instcombine<no-verify-fixpoint>` now, as in
/// LLVM's own pipelines.
#[test]
fn fast_tier_instcombine_fixpoint() {
    let text = "kiln.graph v1
%0 = const {value=inf} : f64[]
%1 = broadcast_to(%0) {shape=[1]} : f64[1]
%2 = input {index=0} : i64[1]
%3 = cast(%2) {dtype=f64} : f64[1]
%4 = minimum(%1, %3) : f64[1]
%5 = expand_dims(%4) {axes=[1]} : f64[1,1]
%6 = const {value=2} : i64[]
%7 = broadcast_to(%6) {shape=[1,1]} : i64[1,1]
%8 = const {value=1.0} : f64[]
%9 = broadcast_to(%8) {shape=[1]} : f64[1]
%10 = copysign(%9, %3) : f64[1]
%11 = less_equal(%9, %10) : bool[1]
%12 = squeeze(%11) {axes=[0]} : bool[]
%13 = const {value=false} : bool[]
%14 = fmin(%12, %13) : bool[]
%15 = cast(%14) {dtype=f64} : f64[]
%16 = broadcast_to(%15) {shape=[1,1]} : f64[1,1]
%17 = less(%16, %5) : bool[1,1]
%18 = cast(%17) {dtype=i64} : i64[1,1]
%19 = greater(%7, %18) : bool[1,1]
%20 = cast(%19) {dtype=f64} : f64[1,1]
%21 = stack(%5, %20) {axis=1} : f64[1,2,1]
return %21, %10
";
    let g = kiln::ir::text::parse(text).unwrap();
    for (i, r) in partition(&g).regions.iter().enumerate() {
        eprintln!("region {i}");
        match crate::support::host_kernel(r, codegen::Tier::Fast) {
            Ok(_) | Err(kiln_compiler::CompileError::Unsupported { .. }) => {}
            Err(e) => panic!("region {i}: {e}"),
        }
    }
    for x in [-3i64, 0, 5] {
        let (got, want) = run_text(text, &[HostArray::from_vec(&[1], vec![x]).unwrap()]);
        check("instcombine fixpoint", &got, &want, 0.0);
    }
}

#[test]
fn an_empty_max_is_the_evaluators_error() {
    // The frontend refuses this; a graph built by hand reaches the evaluator's error.
    use kiln::ir::{Attrs, Graph, OpKind};
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[0, 5]);
    let m = g.insert(kiln::ir::Node {
        op: OpKind::Max,
        attrs: Attrs::Reduce { axes: [0].into_iter().collect(), keepdims: false },
        inputs: [x].into_iter().collect(),
        dtype: DType::Float32,
        shape: [5].into_iter().collect(),
    });
    g.push_output(m);
    let p = partition(&g);
    let sched = schedule(&g, &p.regions);
    let a = HostArray::zeros(DType::Float32, &[0, 5]);
    let err =
        kiln_exec::cpu::run_schedule(&sched, &p.regions, &[&a], kiln_exec::cpu::HostRun::Compiled)
            .unwrap_err();
    assert!(err.to_string().contains("zero-size array"), "{err}");
}

#[test]
fn unsupported_regions_fall_back_to_the_evaluator() {
    let z = Array::from_vec(vec![Complex32::new(1.0, 2.0), Complex32::new(-0.5, 0.25)], &[2]);
    z.eval();
    // Complex square roots are not generated (complex arithmetic is).
    let y = (&z * &z).sqrt();
    let l = kiln::lower(&[&y]);
    let p = partition(&l.graph);
    let err = codegen::compile_region(&p.regions[0]).unwrap_err();
    assert!(matches!(err, kiln_compiler::CompileError::Unsupported { .. }), "{err}");
    let sched = schedule(&l.graph, &p.regions);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let got = kiln_exec::cpu::run_schedule(
        &sched,
        &p.regions,
        &inputs,
        kiln_exec::cpu::HostRun::Compiled,
    )
    .unwrap();
    assert_eq!(got, kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap());
    // A copy region (concatenate) and the elementwise regions around it.
    let a = uniform_f32(&[3, 4], -1.0, 1.0, 43);
    let b = uniform_f32(&[2, 4], -1.0, 1.0, 44);
    let c = kiln::concatenate(&[&a.exp(), &b], 0).sin();
    let l = kiln::lower(&[&c]);
    let p = partition(&l.graph);
    let sched = schedule(&l.graph, &p.regions);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let got = kiln_exec::cpu::run_schedule(
        &sched,
        &p.regions,
        &inputs,
        kiln_exec::cpu::HostRun::Compiled,
    )
    .unwrap();
    check(
        "concatenate between kernels",
        &got,
        &kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap(),
        f32_ulps(),
    );
}

#[test]
fn kernels_are_cached_and_shared_across_shapes() {
    let f = |n: usize, seed| {
        let x = uniform_f32(&[n, 3], -1.0, 1.0, seed);
        (x.t().exp() * 0.25).sum(0)
    };
    let (got, want, p) = run_both(&[&f(10, 45)]);
    check("first shape", &got, &want, f32_ulps());
    let (got, want, p2) = run_both(&[&f(1000, 46)]);
    check("second shape", &got, &want, f32_ulps());
    assert_ne!(
        kiln_compiler::fusion::print_regions(&p.regions),
        kiln_compiler::fusion::print_regions(&p2.regions)
    );
    let (a, b) = (
        codegen::compile_region(&p.regions[0]).unwrap(),
        codegen::compile_region(&p2.regions[0]).unwrap(),
    );
    assert_eq!(a.kernel.mlir, b.kernel.mlir);
    assert_ne!(a.kernel.work_items, b.kernel.work_items);
    assert!(std::sync::Arc::ptr_eq(&a.code, &b.code), "a new shape reuses the machine code");
}

#[test]
fn both_tiers_compute_the_same_values() {
    let x = uniform_f32(&[64, 100], -3.0, 3.0, 60);
    let w = uniform_f32(&[100], 0.5, 1.5, 61);
    let i = ints(&[64, 100], 62, |v| (v % 200) as i16 - 100);
    let progs = [
        ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp(),
        kiln::nn::softmax(&x, -1).unwrap(),
        kiln::nn::layer_norm(&x, &w, &w, 1e-5).unwrap(),
        x.t().slice(&kiln::s![..;-1, 3..50;2]).tanh(),
        x.sum(0),
        kiln::nn::softmax(&x, 0).unwrap(),
        i.floor_divide(7) + (&i % -3),
        x.argmax(0).astype(DType::Float32) + x.min(0),
    ];
    for (n, y) in progs.iter().enumerate() {
        let l = kiln::lower(&[y]);
        let p = partition(&l.graph);
        assert_eq!(p.regions.len(), 1);
        let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
        for tier in [codegen::Tier::Fast, codegen::Tier::Optimized] {
            let c = crate::support::host_kernel(&p.regions[0], tier).unwrap();
            assert_eq!(c.code.get().tier, tier);
            let got = kiln_exec::cpu::run_compiled(&c, &inputs).unwrap();
            check(&format!("program {n} {tier:?}"), &got, &want, softmax_ulps());
        }
    }
}

/// CPU time of this process (all threads, user + system), in seconds.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Times compiled programs (wall and CPU time) and writes their optimised LLVM IR to
/// `target/codegen-probe/`: `cargo test --release --test main codegen::runs::probe -- --ignored --nocapture`.
#[test]
#[ignore]
fn probe() {
    let dir = crate::repo_root().join("target/codegen-probe");
    std::fs::create_dir_all(&dir).unwrap();
    let x = uniform_f32(&[1 << 24], -3.0, 3.0, 50);
    let m = uniform_f32(&[4096, 4096], -5.0, 5.0, 51);
    let w = uniform_f32(&[4096], 0.5, 1.5, 54);
    let progs: Vec<(&str, Array)> = vec![
        ("ew_chain", ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp()),
        ("softmax", kiln::nn::softmax(&m, -1).unwrap()),
        ("layernorm", kiln::nn::layer_norm(&m, &w, &w, 1e-5).unwrap()),
        ("sum_rows", m.sum(1)),
        ("sum_cols", m.sum(0)),
        ("transpose_add", m.t() + &m),
    ];
    let only = std::env::var("KILN_PROBE").ok();
    for (name, y) in progs {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let l = kiln::lower(&[&y]);
        let p = partition(&l.graph);
        let sched = schedule(&l.graph, &p.regions);
        let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        std::fs::write(
            dir.join(format!("{name}.ll")),
            codegen::optimized_llvm_ir_text(&p.regions[0], codegen::Tier::Optimized).unwrap(),
        )
        .unwrap();
        std::fs::write(
            dir.join(format!("{name}.mlir")),
            codegen::mlir_text(&p.regions[0]).unwrap(),
        )
        .unwrap();
        kiln_exec::cpu::run_schedule(
            &sched,
            &p.regions,
            &inputs,
            kiln_exec::cpu::HostRun::Compiled,
        )
        .unwrap();
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        let reps = std::env::var("KILN_PROBE_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
        for _ in 0..reps {
            let (t, c) = (std::time::Instant::now(), cpu_seconds());
            kiln_exec::cpu::run_schedule(
                &sched,
                &p.regions,
                &inputs,
                kiln_exec::cpu::HostRun::Compiled,
            )
            .unwrap();
            walls.push(t.elapsed().as_secs_f64() * 1e3);
            cpus.push((cpu_seconds() - c) * 1e3);
        }
        walls.sort_by(f64::total_cmp);
        cpus.sort_by(f64::total_cmp);
        let mid = walls.len() / 2;
        eprintln!(
            "{name}: wall min {:.1} median {:.1} ms; cpu min {:.1} median {:.1} ms",
            walls[0], walls[mid], cpus[0], cpus[mid]
        );
    }
    // Compile latency of new elementwise regions (a new constant each: a new kernel).
    let x = uniform_f32(&[1024], -3.0, 3.0, 52);
    for k in 0..12 {
        let y = ((&x - (1.0 + k as f64 * 1e-3)).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
        let p = partition(&kiln::lower(&[&y]).graph);
        let (t, c0) = (std::time::Instant::now(), thread_cpu_seconds());
        let c = codegen::compile_region(&p.regions[0]).unwrap();
        let (total, cpu) = (t.elapsed().as_secs_f64(), thread_cpu_seconds() - c0);
        let ts = c.code.get().times;
        eprintln!(
            "compile: {:.2} ms, cpu {:.2} ms (mlir {:.2}, opt {:.2}, jit {:.2})",
            total * 1e3,
            cpu * 1e3,
            ts.mlir * 1e3,
            ts.optimize * 1e3,
            ts.jit * 1e3
        );
    }
}

/// Compiles many new elementwise regions (for profiling the compiler):
/// `cargo test --release --test main codegen::runs::probe_compile -- --ignored --nocapture`.
#[test]
#[ignore]
fn probe_compile() {
    let x = uniform_f32(&[1024], -3.0, 3.0, 53);
    let (t, c0) = (std::time::Instant::now(), thread_cpu_seconds());
    let n = 40;
    let mut sum = [0.0f64; 3];
    let seed = (std::process::id() % 997) as f64 * 1e-4;
    for k in 0..n {
        let y =
            ((&x - (2.0 + seed + k as f64 * 1e-3)).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
        let p = partition(&kiln::lower(&[&y]).graph);
        let ts = codegen::compile_region(&p.regions[0]).unwrap().code.get().times;
        sum[0] += ts.mlir;
        sum[1] += ts.optimize;
        sum[2] += ts.jit;
    }
    let per = |v: f64| v * 1e3 / n as f64;
    eprintln!(
        "{:.2} ms per compile, cpu {:.2} ms (mlir {:.2}, opt {:.2}, jit {:.2})",
        per(t.elapsed().as_secs_f64()),
        per(thread_cpu_seconds() - c0),
        per(sum[0]),
        per(sum[1]),
        per(sum[2])
    );
}

/// Reductions of many elements into few results, through the active backend: on the GPU the
/// split kernels (blocks fold chunks, the last block combines the partials; see
/// `codegen::GpuSplit`), on the CPU the compiled host code; against the reference evaluator.
/// Integer, bool, max/min and arg results must match exactly; float sums within `sum_ulps`
/// (the order of additions differs from the evaluator's; f32 is accumulated in f64, f64 with
/// compensation), and the results must be the same bits when computed again. Among them, whole
/// sums read from an offset of 3 elements (on the GPU: no aligned vector loads), of a 2-D
/// array (one flat index), of float16 and of int8 (runs of 8 and 16 elements per thread; small
/// integers, so the float16 sum is exact in any order).
#[test]
fn many_to_few_reductions_through_the_backend() {
    let n = 300_007;
    let x = uniform_f32(&[n], -2.0, 2.0, 11);
    let xd = uniform_f64(&[n], -2.0, 2.0, 12);
    let i = ints(&[n], 13, |v| (v % 1000) as i32 - 500);
    let m = uniform_f32(&[3, 100_003], -1.0, 1.0, 14);
    let b = ints(&[n], 15, |v| v % 7 != 0);
    let c = uniform_f32(&[100_003, 37], -1.0, 1.0, 16);
    let ic = ints(&[70_001, 5], 17, |v| (v % 201) as i32 - 100);
    // Small integers: their float16 sum is exact in any order.
    let small = ints(&[n], 18, |v| (v % 7) as i32 - 3);
    let (h, i8s) = (small.astype(DType::Float16), small.astype(DType::Int8));
    h.eval();
    i8s.eval();
    let cases: Vec<(&str, Array, f64)> = vec![
        ("sum_f32", x.sum(None), 1.0),
        ("mean_f32", x.mean(None), 1.0),
        ("max_f32", x.max(None), 0.0),
        ("min_f32", x.min(None), 0.0),
        ("argmax_f32", x.argmax(None), 0.0),
        ("argmin_f32", x.argmin(None), 0.0),
        ("l2norm_f32", (&x * &x).sum(None).sqrt(), 1.0),
        ("sum_f64", xd.sum(None), 4.0),
        ("sum_i32", i.sum(None), 0.0),
        ("max_i32", i.max(None), 0.0),
        ("all_bool", b.all(None), 0.0),
        ("any_bool", b.any(None), 0.0),
        ("rows_sum_f32", m.sum(axis(1)), 1.0),
        ("rows_argmax_f32", m.argmax(axis(1)), 0.0),
        ("cols_sum_f32", c.sum(axis(0)), 1.0),
        ("cols_mean_f32", c.mean(axis(0)), 1.0),
        ("cols_min_f32", c.min(axis(0)), 0.0),
        ("cols_argmin_f32", c.argmin(axis(0)), 0.0),
        ("cols_sum_i32", ic.sum(axis(0)), 0.0),
        ("sum_f32_from_3", x.slice(&kiln::s![3..]).sum(None), 1.0),
        ("sum_f32_2d", m.sum(None), 1.0),
        ("argmax_f32_2d", m.argmax(None), 0.0),
        ("sum_f16", h.sum(None), 0.0),
        ("sum_i8", i8s.sum(None), 0.0),
    ];
    for (name, y, ulps) in &cases {
        let l = kiln::lower(&[y]);
        let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
        let got = y.try_to_host().unwrap_or_else(|e| panic!("{name}: {e}")).as_ref().clone();
        check(name, &[got.clone()], &want, *ulps);
        // Deterministic: a fresh expression computes the same bits.
        let again = match *name {
            "sum_f32" => x.sum(None),
            "sum_f64" => xd.sum(None),
            "rows_sum_f32" => m.sum(axis(1)),
            "cols_sum_f32" => c.sum(axis(0)),
            "sum_f32_from_3" => x.slice(&kiln::s![3..]).sum(None),
            "sum_f32_2d" => m.sum(None),
            _ => continue,
        };
        assert_eq!(again.try_to_host().unwrap().as_ref(), &got, "{name}: not deterministic");
    }
}

/// `remainder` and `floor_divide` of every pair of special values, through the active backend
/// (on the GPU, NVPTX's lowering of `frem` returned x for an infinite y, x infinite included:
/// remainder(-inf, -inf) gave -inf instead of NaN), against the reference evaluator.
#[test]
fn remainder_and_floor_divide_of_special_pairs_through_the_backend() {
    let sp = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1.5, -2.5, 1e300, -5e-324];
    let (xs, ys): (Vec<f64>, Vec<f64>) =
        sp.iter().flat_map(|&a| sp.iter().map(move |&b| (a, b))).unzip();
    for dt in [DType::Float32, DType::Float64] {
        let x = Array::from_vec(xs.clone(), &[xs.len()]).astype(dt);
        let y = Array::from_vec(ys.clone(), &[ys.len()]).astype(dt);
        for (name, z) in [("remainder", x.remainder(&y)), ("floor_divide", x.floor_divide(&y))] {
            let l = kiln::lower(&[&z]);
            let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
            let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
            let got = z.try_to_host().unwrap().as_ref().clone();
            check(&format!("{name} {dt}"), &[got], &want, 0.0);
        }
    }
}

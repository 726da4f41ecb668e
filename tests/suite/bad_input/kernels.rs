//! User kernels: ElementwiseKernel, ReductionKernel, fuse, RawKernel and RawModule with bad
//! names, parameter lists and bodies, then good kernels called with bad arguments. Raw kernels
//! err on the CPU backend (a GPU is required) and at NVRTC or the launch on a GPU.

use kiln::{
    fuse, Array, ElementwiseKernel, Operand, RawArg, RawKernel, RawModule, ReductionKernel,
};

use super::{bools, f32s, f64s, i64s, Walk};

fn ops(arrays: &[&Array]) -> Vec<Operand> {
    arrays.iter().map(|&a| a.into()).collect()
}

pub fn walk(w: &mut Walk) {
    elementwise(w);
    reduction(w);
    fused(w);
    raw(w);
}

fn elementwise(w: &mut Walk) {
    let f = "ElementwiseKernel::new";
    let new = |i: &str, o: &str, body: &str, name: &str| ElementwiseKernel::new(i, o, body, name);
    for (case, name) in [
        ("an empty name", ""),
        ("a name starting with a digit", "1abc"),
        ("a name with a space", "my kernel"),
        ("a name with a quote", "k\"; system(\"x"),
        ("a non-ASCII name", "kérnel"),
    ] {
        // The error names the kernel constructor (the name itself is the bad input).
        w.err(f, "ElementwiseKernel", case, || new("T x", "T y", "y = x", name));
    }
    for (case, ins, outs) in [
        ("a trailing comma", "float32 x,", "float32 y"),
        ("a type without a name", "float32", "float32 y"),
        ("three words", "float32 x y", "float32 z"),
        ("a repeated parameter", "T x, T x", "T y"),
        ("an output named as an input", "T x", "T x"),
        ("an unknown type", "float33 x", "float33 y"),
        ("no outputs", "T x", ""),
        ("a symbol", "T @x", "T y"),
        ("an unterminated comment", "T x /*", "T y"),
        ("a NUL", "T x\0", "T y"),
    ] {
        w.err(f, "bad_params", case, || new(ins, outs, "y = x", "bad_params"));
    }
    for (case, body) in [
        ("a dangling operator", "y = x +;"),
        ("an empty right side", "y = ;"),
        ("an unbalanced brace", "{ y = x;"),
        ("an unbalanced parenthesis", "y = (x + 1"),
        ("goto", "goto end; end: y = x;"),
        ("a while loop", "while (1) { y = x; }"),
        ("an unterminated string", "y = \"x"),
        ("a pointer", "y = *(&x)"),
        ("a call of an integer", "y = 3(x)"),
        ("an overflowing literal", "y = x + 99999999999999999999999999999"),
        ("a NUL", "y = x\0"),
    ] {
        w.err(f, "bad_body", case, || new("T x", "T y", body, "bad_body"));
    }
    // Names and assignments are checked when the kernel is traced, at its call (as CuPy).
    for (case, body) in [
        ("an unknown function", "y = no_such_function(x)"),
        ("an unknown name", "y = x + zz"),
        ("an assignment to an input", "x = 1"),
    ] {
        w.err("ElementwiseKernel::try_call", "bad_body", case, || {
            new("T x", "T y", body, "bad_body")?.try_call(&ops(&[&f32s(&[3])]))
        });
    }
    let deep = format!("y = {}x{}", "(".repeat(100_000), ")".repeat(100_000));
    w.err(f, "deep_body", "100,000 nested parentheses", || new("T x", "T y", &deep, "deep_body"));
    w.err("ElementwiseKernel::with_preamble", "pre", "a preamble that does not parse", || {
        new("T x", "T y", "y = x", "pre")?
            .with_preamble("__device__ float f(float a) { return a + ; }")
    });
    w.err("ElementwiseKernel::with_preamble", "pre", "a recursive function", || {
        new("T x", "T y", "y = f(x)", "pre")?
            .with_preamble("template <typename T> __device__ T f(T a) { return f(a); }")
            .and_then(|k| k.try_call(&ops(&[&f32s(&[3])])))
    });

    let k = ElementwiseKernel::new("T x, float32 s", "T y", "y = x * s", "scale").unwrap();
    let f = "ElementwiseKernel::try_call";
    w.err(f, "scale", "one argument of two", || k.try_call(&ops(&[&f32s(&[3])])));
    w.err(f, "scale", "three arguments", || {
        k.try_call(&ops(&[&f32s(&[3]), &f32s(&[3]), &f32s(&[3])]))
    });
    w.err(f, "scale", "float64 for float32", || k.try_call(&ops(&[&f32s(&[3]), &f64s(&[3])])));
    w.err(f, "scale", "shapes (2, 3) and (4,)", || {
        k.try_call(&ops(&[&f32s(&[2, 3]), &f32s(&[4])]))
    });
    w.err(f, "scale", "T bound by nothing", || {
        k.try_call(&[Operand::from(1.0), Operand::from(2.0)])
    });
    let k2 = ElementwiseKernel::new("T x, T z", "T y", "y = x + z", "same_t").unwrap();
    w.err(f, "same_t", "T bound to float32 and int64", || {
        k2.try_call(&ops(&[&f32s(&[3]), &i64s(&[3])]))
    });
    w.err("ElementwiseKernel::try_call_all", "scale", "no arguments", || k.try_call_all(&[]));
    let raw = ElementwiseKernel::new("raw T x", "T y", "y = x[i]", "raw_in").unwrap();
    w.err("ElementwiseKernel::try_call_sized", "scale", "size with a broadcast argument", || {
        k.try_call_sized(&ops(&[&f32s(&[3]), &f32s(&[3])]), 3)
    });
    w.err("ElementwiseKernel::try_call", "raw_in", "no size for a raw argument", || {
        raw.try_call(&ops(&[&f32s(&[3])]))
    });
    w.survives("ElementwiseKernel::try_call_sized", "raw_in", "size beyond the raw array", || {
        raw.try_call_sized(&ops(&[&f32s(&[3])]), 5)
    });
    let f = "ElementwiseKernel::try_call_out";
    w.err(f, "scale", "output of shape (2,)", || {
        let mut out = f32s(&[2]);
        k.try_call_out(&ops(&[&f32s(&[3]), &f32s(&[3])]), &mut [&mut out])
    });
    w.err(f, "scale", "two outputs of one", || {
        let (mut o1, mut o2) = (f32s(&[3]), f32s(&[3]));
        k.try_call_out(&ops(&[&f32s(&[3]), &f32s(&[3])]), &mut [&mut o1, &mut o2])
    });
    w.err(f, "scale", "an int64 output for T = float32", || {
        let mut out = i64s(&[3]);
        k.try_call_out(&ops(&[&f32s(&[3]), &f32s(&[3])]), &mut [&mut out])
    });
}

fn reduction(w: &mut Walk) {
    let f = "ReductionKernel::new";
    let new = |i: &str, o: &str, map: &str, red: &str, post: &str, id: &str, name: &str| {
        ReductionKernel::new(i, o, map, red, post, id, name)
    };
    w.err(f, "ReductionKernel", "a bad name", || {
        new("T x", "T y", "x", "a + b", "y = a", "0", "9x")
    });
    w.err(f, "r", "bad in_params", || new("T x,,", "T y", "x", "a + b", "y = a", "0", "r"));
    w.err(f, "r", "a map that does not parse", || {
        new("T x", "T y", "x +", "a + b", "y = a", "0", "r")
    });
    w.err(f, "r", "a reduce kiln has not", || new("T x", "T y", "x", "a - b", "y = a", "0", "r"));
    w.err(f, "r", "a reduce naming c", || new("T x", "T y", "x", "a + c", "y = a", "0", "r"));
    w.err(f, "r", "a post map that does not parse", || {
        new("T x", "T y", "x", "a + b", "y = = a", "0", "r")
    });
    w.err(f, "r", "an identity that is not a value", || {
        new("T x", "T y", "x", "a + b", "y = a", "foo(", "r")
    });
    w.err("ReductionKernel::with_reduce_type", "r", "an unknown type", || {
        new("T x", "T y", "x", "a + b", "y = a", "0", "r")?.with_reduce_type("notatype")
    });
    w.err("ReductionKernel::with_preamble", "r", "a preamble that does not parse", || {
        new("T x", "T y", "x", "a + b", "y = a", "0", "r")?.with_preamble("}")
    });
    let k = new("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq").unwrap();
    let f = "ReductionKernel::try_call";
    w.err(f, "sumsq", "axis 2 of 2-D", || k.try_call(&ops(&[&f32s(&[2, 3])]), 2));
    w.err(f, "sumsq", "axes (0, 0)", || k.try_call(&ops(&[&f32s(&[2, 3])]), [0, 0]));
    w.err(f, "sumsq", "two arguments", || k.try_call(&ops(&[&f32s(&[3]), &f32s(&[3])]), None));
    w.err(f, "sumsq", "a scalar only", || k.try_call(&[Operand::from(2.0)], None));
    w.survives(f, "sumsq", "empty", || k.try_call(&ops(&[&f32s(&[0, 3])]), 0));
    w.err("ReductionKernel::try_call_all", "sumsq", "no arguments", || k.try_call_all(&[], None));
    w.err("ReductionKernel::try_call_out", "sumsq", "output of shape (5,)", || {
        let mut out = f32s(&[5]);
        k.try_call_out(&ops(&[&f32s(&[2, 3])]), 1, &mut [&mut out])
    });
}

fn fused(w: &mut Walk) {
    let add = fuse("fused_add", |a: &[Operand]| match (&a[0], &a[1]) {
        (Operand::Array(x), y) => x.try_add(y.clone()),
        _ => Ok(Array::from_vec(vec![0.0f32], &[1])),
    });
    let f = "Fused::try_call";
    w.err(f, "add", "shapes (2, 3) and (4,)", || {
        add.try_call(&ops(&[&f32s(&[2, 3]), &f32s(&[4])]))
    });
    let bits = fuse("fused_bits", |a: &[Operand]| match &a[0] {
        Operand::Array(x) => x.try_invert(),
        Operand::Scalar(_) => Ok(Array::from_vec(vec![0.0f32], &[1])),
    });
    w.err(f, "invert", "a float", || bits.try_call(&ops(&[&f32s(&[3])])));
    w.survives(f, "invert", "bools", || bits.try_call(&ops(&[&bools(&[3])])));
}

const GOOD: &str = r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }"#;

fn raw(w: &mut Walk) {
    let f = "RawModule::try_compile";
    for (case, code) in [
        ("C++ that does not parse", "extern \"C\" __global__ void k(float* y) { y[0] = ; }"),
        ("a NUL", "\0"),
        ("an #error", "#error no"),
    ] {
        w.err(f, "RawModule", case, || RawModule::new(code, &[], &[]).try_compile());
    }
    // An empty source is an empty module on the GPU, as in CuPy (NVRTC compiles it); on the
    // CPU backend, the GPU-required error.
    w.survives(f, "RawModule", "an empty source", || RawModule::new("", &[], &[]).try_compile());
    w.err(f, "RawModule", "an unknown NVRTC option", || {
        RawModule::new(GOOD, &["--no-such-option"], &[]).try_compile()
    });
    w.err(f, "RawModule", "a name expression that is not a template", || {
        RawModule::new(GOOD, &[], &["not a <template"]).try_compile()
    });
    w.err(f, "RawModule", "PTX that is not PTX", || RawModule::from_ptx("garbage").try_compile());
    w.err(f, "RawModule", "a cubin that is not one", || {
        RawModule::from_cubin(b"\x7fELFgarbage").try_compile()
    });
    w.err(f, "RawModule", "an empty cubin", || RawModule::from_cubin(&[]).try_compile());
    w.err("RawModule::from_file", "RawModule", "a missing file", || {
        RawModule::from_file("/nonexistent/kiln/bad_input.cu")
    });
    w.err("RawModule::get_function", "RawModule", "an unknown kernel", || {
        RawModule::new(GOOD, &[], &[]).get_function("no_such")
    });
    w.err("RawModule::get_function", "RawModule", "an empty name", || {
        RawModule::new(GOOD, &[], &[]).get_function("")
    });
    let f = "RawKernel::entry_name";
    w.err(f, "RawKernel", "a missing kernel", || RawKernel::new(GOOD, "missing", &[]).entry_name());
    w.err(f, "RawKernel", "a bad template name", || RawKernel::new(GOOD, "k<<<", &[]).entry_name());
    w.err("RawKernel::attributes", "RawKernel", "bad C++", || {
        RawKernel::new("}{", "k", &[]).attributes()
    });
    let f = "RawKernel::try_launch";
    let mut y = f32s(&[32]);
    let x = f32s(&[32]);
    w.err(f, "RawKernel", "a kernel that does not compile", || {
        let k = RawKernel::new("}{", "k", &[]);
        // SAFETY: the module does not compile, so nothing is launched.
        unsafe { k.try_launch(1, 32, &mut [(&mut y).into()], 0, None) }
    });
    w.err(f, "RawKernel", "three arguments for one parameter", || {
        let k = RawKernel::new(GOOD, "k", &[]);
        // SAFETY: the launch is refused (argument count) before anything runs.
        unsafe {
            k.try_launch(1, 32, &mut [(&x).into(), (&x).into(), RawArg::from(&mut y)], 0, None)
        }
    });
    w.err(f, "RawKernel", "a block of 4096 threads", || {
        let k = RawKernel::new(GOOD, "k", &[]);
        // SAFETY: the driver refuses a block over 1024 threads before anything runs.
        unsafe { k.try_launch(1, 4096, &mut [(&mut y).into()], 0, None) }
    });
}

//! Raw kernels (CuPy's RawKernel and RawModule): CUDA C++ compiled with NVRTC and launched on
//! kiln's arrays. The `gpu_` tests need a CUDA device and NVRTC (the GPU machine's
//! `/usr/local/cuda`): on the CPU backend they print `skipped: no GPU` and return. The others
//! check the typed errors reachable without a GPU.
//!
//! The GPU tests are CuPy's "User-Defined Kernels" guide (my_add, the complex kernel,
//! test_sum/test_multiply, the fx3 templates, attributes), the errors (NVRTC's log, an unknown
//! kernel, wrong arguments) and how written arrays fit kiln's lazy arrays (copy on write,
//! replaced arrays, a fusion boundary, other streams).

use kiln::{arange, backend, ones, zeros, Array, DType, Error, RawArg, RawKernel, RawModule};
use kiln_runtime::{Backend, RuntimeError, Stream};
use num_complex::Complex;

/// Whether the suite runs on a CUDA device; prints the skip line when not.
pub(crate) fn on_gpu() -> bool {
    if matches!(backend(), Backend::Cuda(_)) {
        true
    } else {
        println!("skipped: no GPU");
        false
    }
}

/// `cp.arange(n, dtype=cp.float32).reshape(shape)`.
fn arange_f32(n: i64, shape: &[i64]) -> Array {
    arange(n).astype(DType::Float32).reshape(shape)
}

const MY_ADD: &str = r#"
extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
}
"#;

fn my_add() -> RawKernel {
    RawKernel::new(MY_ADD, "my_add", &[])
}

const LOADED_FROM_SOURCE: &str = r#"
extern "C"{

__global__ void test_sum(const float* x1, const float* x2, float* y, \
                         unsigned int N)
{
    unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < N)
    {
        y[tid] = x1[tid] + x2[tid];
    }
}

__global__ void test_multiply(const float* x1, const float* x2, float* y, \
                              unsigned int N)
{
    unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < N)
    {
        y[tid] = x1[tid] * x2[tid];
    }
}

}"#;

const FX3: &str = r#"
template<typename T>
__global__ void fx3(T* arr, int N) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < N) {
        arr[tid] = arr[tid] * 3;
    }
}
"#;

// ------------------------------------------------------------------------------------------------
// Without a GPU
// ------------------------------------------------------------------------------------------------

/// On the CPU backend every use of a raw kernel is `Error::GpuRequired` naming the kernel or
/// module, and the arrays given stay as they were.
#[test]
fn raw_kernels_on_the_cpu_backend_are_an_error() {
    if matches!(backend(), Backend::Cuda(_)) {
        println!("skipped: the backend is a GPU");
        return;
    }
    let k = my_add();
    let x1 = arange_f32(25, &[5, 5]);
    let mut y = zeros(&[5, 5], DType::Float32);
    // SAFETY: the launch is refused before anything runs.
    let e =
        unsafe { k.try_launch(5, 5, &mut [(&x1).into(), (&x1).into(), (&mut y).into()], 0, None) }
            .unwrap_err();
    assert_eq!(e, Error::GpuRequired { what: "RawKernel my_add".into() });
    assert!(
        e.to_string().starts_with(
            "RawKernel my_add: raw CUDA kernels need a GPU, but the backend is the CPU"
        ),
        "{e}"
    );
    assert_eq!(y.to_vec::<f32>(), vec![0.0; 25]);
    assert!(matches!(k.attributes(), Err(Error::GpuRequired { .. })));
    assert!(matches!(k.set_max_dynamic_shared_size_bytes(50000), Err(Error::GpuRequired { .. })));
    assert!(matches!(k.entry_name(), Err(Error::GpuRequired { .. })));

    let module = RawModule::new(LOADED_FROM_SOURCE, &[], &[]);
    assert_eq!(
        module.get_function("test_sum").unwrap_err(),
        Error::GpuRequired { what: "RawModule".into() }
    );
    assert!(matches!(module.try_compile(), Err(Error::GpuRequired { .. })));
    let templates = RawModule::new(FX3, &["-std=c++11"], &["fx3<float>", "fx3<double>"]);
    assert_eq!(templates.name_expressions(), ["fx3<float>", "fx3<double>"]);
    assert!(matches!(templates.get_function("fx3<float>"), Err(Error::GpuRequired { .. })));
}

/// `RawModule(path=...)`: a missing file is `Error::Io` naming it; a file that is neither PTX
/// nor a cubin is `Error::Value`.
#[test]
fn raw_module_files() {
    let missing = std::env::temp_dir().join("kiln-no-such-module.ptx");
    let e = RawModule::from_file(&missing).unwrap_err();
    match &e {
        Error::Io { op, path, .. } => {
            assert_eq!((op.as_str(), path.as_str()), ("RawModule", missing.to_str().unwrap()))
        }
        other => panic!("expected an Io error, got {other:?}"),
    }
    let text = std::env::temp_dir().join(format!("kiln-raw-module-{}.cu", std::process::id()));
    std::fs::write(&text, MY_ADD).unwrap();
    let e = RawModule::from_file(&text).unwrap_err();
    std::fs::remove_file(&text).unwrap();
    assert!(
        matches!(&e, Error::Value { op, message } if op == "RawModule" && message.contains("expected a .ptx, .cubin or .fatbin file")),
        "{e}"
    );
    // A PTX file is read (and loaded when first used).
    let ptx = std::env::temp_dir().join(format!("kiln-raw-module-{}.ptx", std::process::id()));
    std::fs::write(&ptx, ".version 8.0\n.target sm_90\n.address_size 64\n").unwrap();
    let module = RawModule::from_file(&ptx).unwrap();
    std::fs::remove_file(&ptx).unwrap();
    assert_eq!((module.code(), module.name_expressions().len()), (None, 0));
}

// ------------------------------------------------------------------------------------------------
// CuPy's guide, on a GPU
// ------------------------------------------------------------------------------------------------

/// `add_kernel((5,), (5,), (x1, x2, y))`.
#[test]
fn gpu_my_add() {
    if !on_gpu() {
        return;
    }
    let x1 = arange_f32(25, &[5, 5]);
    let x2 = arange_f32(25, &[5, 5]);
    let mut y = zeros(&[5, 5], DType::Float32);
    // SAFETY: my_add reads and writes 25 floats, the arrays' sizes.
    unsafe {
        my_add().launch((5,), (5,), &mut [(&x1).into(), (&x2).into(), (&mut y).into()], 0, None)
    };
    assert_eq!(y.shape(), &[5, 5]);
    assert_eq!(y.to_vec::<f32>(), (0..25).map(|v| 2.0 * v as f32).collect::<Vec<_>>());
}

/// The complex kernel, `#include <cupy/complex.cuh>` as CuPy writes it: `y = x1 + a * x2`.
#[test]
fn gpu_complex_kernel() {
    if !on_gpu() {
        return;
    }
    let complex_kernel = RawKernel::new(
        r#"
#include <cupy/complex.cuh>
extern "C" __global__
void my_func(const complex<float>* x1, const complex<float>* x2,
             complex<float>* y, float a) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + a * x2[tid];
}
"#,
        "my_func",
        &[],
    );
    let x1 = arange(25).astype(DType::Complex64).reshape(&[5, 5]);
    let x2 = Array::from_vec(
        (0..25).map(|k| Complex::new(0.0f32, k as f32)).collect::<Vec<_>>(),
        &[5, 5],
    );
    let mut y = zeros(&[5, 5], DType::Complex64);
    // SAFETY: my_func reads and writes 25 complex<float>, the arrays' sizes.
    unsafe {
        complex_kernel.launch(
            (5,),
            (5,),
            &mut [(&x1).into(), (&x2).into(), (&mut y).into(), 2.0f32.into()],
            0,
            None,
        )
    };
    let want: Vec<Complex<f32>> = (0..25).map(|k| Complex::new(k as f32, 2.0 * k as f32)).collect();
    assert_eq!(y.to_vec::<Complex<f32>>(), want);
}

/// kiln's `complex<T>` header (`<kiln/complex.cuh>`): division, exp, log, sqrt, abs, arg and
/// conj of complex<double> against num_complex on the host.
#[test]
fn gpu_complex_header_functions() {
    if !on_gpu() {
        return;
    }
    let k = RawKernel::new(
        r#"
#include <kiln/complex.cuh>
extern "C" __global__
void functions(const complex<double>* z, const complex<double>* w, complex<double>* out, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    out[6 * i + 0] = z[i] / w[i];
    out[6 * i + 1] = exp(z[i]);
    out[6 * i + 2] = log(z[i]);
    out[6 * i + 3] = sqrt(z[i]);
    out[6 * i + 4] = complex<double>(abs(z[i]), arg(z[i]));
    out[6 * i + 5] = conj(z[i]) * 2.0 - 1.0;
}
"#,
        "functions",
        &[],
    );
    let zs = vec![
        Complex::new(1.5, -2.0),
        Complex::new(-3.0, 0.5),
        Complex::new(-4.0, 0.0),
        Complex::new(0.25, 7.0),
    ];
    let ws = vec![
        Complex::new(0.5, 1.0),
        Complex::new(1e-3, -2.0),
        Complex::new(3.0, 4.0),
        Complex::new(-2.0, 0.0),
    ];
    let z = Array::from_vec(zs.clone(), &[4]);
    let w = Array::from_vec(ws.clone(), &[4]);
    let mut out = zeros(&[24], DType::Complex128);
    // SAFETY: `functions` reads 4 elements of z and w and writes 24 of out, their sizes.
    unsafe {
        k.launch(1, 32, &mut [(&z).into(), (&w).into(), (&mut out).into(), 4i32.into()], 0, None)
    };
    let got = out.to_vec::<Complex<f64>>();
    for (i, (z, w)) in zs.iter().zip(&ws).enumerate() {
        let want = [
            z / w,
            z.exp(),
            z.ln(),
            z.sqrt(),
            Complex::new(z.norm(), z.arg()),
            z.conj() * 2.0 - 1.0,
        ];
        for (j, want) in want.iter().enumerate() {
            let g = got[6 * i + j];
            assert!(
                (g - want).norm() <= 1e-13 * want.norm().max(1.0),
                "z={z} w={w} function {j}: {g} vs {want}"
            );
        }
    }
}

/// `RawModule(code=loaded_from_source)`, `get_function('test_sum')` and `'test_multiply'`.
#[test]
fn gpu_raw_module_test_sum_and_test_multiply() {
    if !on_gpu() {
        return;
    }
    let module = RawModule::new(LOADED_FROM_SOURCE, &[], &[]);
    let ker_sum = module.get_function("test_sum").unwrap();
    let ker_times = module.get_function("test_multiply").unwrap();
    let n = 10u32;
    let x1 = arange_f32(100, &[10, 10]);
    let x2 = ones(&[10, 10], DType::Float32);
    let mut y = zeros(&[10, 10], DType::Float32);
    // CuPy passes `N**2` as a Python int (8 bytes) to `unsigned int N`; kiln checks sizes, so
    // the count is a u32.
    // SAFETY: test_sum/test_multiply read and write N*N = 100 floats, the arrays' sizes.
    unsafe {
        ker_sum.launch(
            (n,),
            (n,),
            &mut [(&x1).into(), (&x2).into(), (&mut y).into(), (n * n).into()],
            0,
            None,
        )
    };
    assert_eq!(y.to_vec::<f32>(), (&x1 + &x2).to_vec::<f32>());
    // SAFETY: as above.
    unsafe {
        ker_times.launch(
            (n,),
            (n,),
            &mut [(&x1).into(), (&x2).into(), (&mut y).into(), (n * n).into()],
            0,
            None,
        )
    };
    assert_eq!(y.to_vec::<f32>(), (&x1 * &x2).to_vec::<f32>());
}

/// The fx3 templates: `name_expressions=['fx3<float>', 'fx3<double>']`, each found by its
/// name expression.
#[test]
fn gpu_fx3_templates_by_name_expression() {
    if !on_gpu() {
        return;
    }
    let name_exp = ["fx3<float>", "fx3<double>"];
    let module = RawModule::new(FX3, &["-std=c++11"], &name_exp);
    let ker_float = module.get_function(name_exp[0]).unwrap();
    assert_eq!(ker_float.entry_name().unwrap(), "_Z3fx3IfEvPT_i");
    let n = 10i32;
    let mut a = arange(10).astype(DType::Float32);
    // SAFETY: fx3<float>(float*, int) writes N = 10 elements of a, its size.
    unsafe { ker_float.launch((1,), (n as u32,), &mut [(&mut a).into(), n.into()], 0, None) };
    assert_eq!(a.to_vec::<f32>(), vec![0., 3., 6., 9., 12., 15., 18., 21., 24., 27.]);
    let ker_double = module.get_function(name_exp[1]).unwrap();
    let mut a = arange(10).astype(DType::Float64);
    // SAFETY: fx3<double>(double*, int), as above.
    unsafe { ker_double.launch((1,), (n as u32,), &mut [(&mut a).into(), n.into()], 0, None) };
    assert_eq!(a.to_vec::<f64>(), vec![0., 3., 6., 9., 12., 15., 18., 21., 24., 27.]);
}

/// `kernel.attributes`, and the two settable ones (`max_dynamic_shared_size_bytes = 50000` as
/// in CuPy's guide, then a launch that uses it).
#[test]
fn gpu_attributes() {
    if !on_gpu() {
        return;
    }
    let (major, minor) = kiln_runtime::Device::new(0).unwrap().compute_capability().unwrap();
    let sm = (major * 10 + minor) as i32;
    let a = my_add().attributes().unwrap();
    assert!((1..=1024).contains(&a.max_threads_per_block), "{a:?}");
    assert!(a.num_regs > 0, "{a:?}");
    assert_eq!((a.shared_size_bytes, a.local_size_bytes), (0, 0), "{a:?}");
    assert_eq!(a.binary_version, sm, "a cubin for the device's sm: {a:?}");
    assert!(a.ptx_version > 0, "{a:?}");

    let tiled = RawKernel::new(
        r#"
extern "C" __global__ void tiled(const float* x, float* y) {
    __shared__ float tile[256];
    extern __shared__ float dynamic[];
    int t = threadIdx.x;
    tile[t] = x[t];
    dynamic[t] = 2.0f * tile[t];
    __syncthreads();
    y[t] = dynamic[255 - t];
}
"#,
        "tiled",
        &[],
    );
    assert_eq!(tiled.attributes().unwrap().shared_size_bytes, 256 * 4);
    tiled.set_max_dynamic_shared_size_bytes(50000).unwrap();
    assert_eq!(tiled.max_dynamic_shared_size_bytes().unwrap(), 50000);
    tiled.set_preferred_shared_memory_carveout(50).unwrap();
    assert_eq!(tiled.preferred_shared_memory_carveout().unwrap(), 50);
    assert!(tiled.set_preferred_shared_memory_carveout(101).is_err());
    let x = arange_f32(256, &[256]);
    let mut y = zeros(&[256], DType::Float32);
    // SAFETY: tiled reads and writes 256 floats, the arrays' sizes, in one block of 256 threads
    // with 50000 bytes of dynamic shared memory (it uses 1 KiB of it).
    unsafe { tiled.launch(1, 256, &mut [(&x).into(), (&mut y).into()], 50000, None) };
    assert_eq!(y.to_vec::<f32>(), (0..256).rev().map(|v| 2.0 * v as f32).collect::<Vec<_>>());
}

// ------------------------------------------------------------------------------------------------
// Errors, on a GPU
// ------------------------------------------------------------------------------------------------

/// A compilation error is `RuntimeError::Nvrtc` with NVRTC's log, which names the line.
#[test]
fn gpu_nvrtc_error_carries_the_log() {
    if !on_gpu() {
        return;
    }
    let k = RawKernel::new(
        "extern \"C\" __global__ void broken(float* y) {\n    y[0] = undefined_thing;\n}\n",
        "broken",
        &[],
    );
    let mut y = zeros(&[1], DType::Float32);
    // SAFETY: the kernel does not compile; nothing runs.
    let e = unsafe { k.try_launch(1, 1, &mut [(&mut y).into()], 0, None) }.unwrap_err();
    match &e {
        Error::RuntimeIn { op, source: RuntimeError::Nvrtc(n) } if op == "RawKernel broken" => {
            assert_eq!((n.program.as_str(), n.call), ("broken.cu", "nvrtcCompileProgram"));
            assert!(
                n.log.contains("undefined_thing") && n.log.contains("broken.cu(2)"),
                "{}",
                n.log
            );
        }
        other => panic!("expected an NVRTC error, got {other:?}"),
    }
    assert!(e.to_string().contains("undefined_thing"), "{e}");
    assert_eq!(y.to_vec::<f32>(), vec![0.0]);
}

/// A name the module does not have: `Error::UnknownKernel`, listing the name expressions.
#[test]
fn gpu_unknown_kernel_name() {
    if !on_gpu() {
        return;
    }
    let module = RawModule::new(LOADED_FROM_SOURCE, &[], &[]);
    let e = module.get_function("test_divide").unwrap_err();
    assert_eq!(
        e,
        Error::UnknownKernel {
            module: "RawModule".into(),
            name: "test_divide".into(),
            name_expressions: vec![]
        }
    );
    let templates = RawModule::new(FX3, &[], &["fx3<float>"]);
    let e = templates.get_function("fx3<int>").unwrap_err();
    assert_eq!(
        e.to_string(),
        "RawModule: no kernel `fx3<int>` in the module (its name expressions: fx3<float>)"
    );
    // A RawKernel of a name its code does not define fails at its first launch the same way.
    let k = RawKernel::new(MY_ADD, "my_sub", &[]);
    let mut y = zeros(&[1], DType::Float32);
    // SAFETY: no such kernel; nothing runs.
    let e = unsafe { k.try_launch(1, 1, &mut [(&mut y).into()], 0, None) }.unwrap_err();
    assert!(matches!(e, Error::UnknownKernel { ref name, .. } if name == "my_sub"), "{e}");
}

/// Arguments checked against the kernel's parameters before anything runs: their number
/// (`KernelArgCount`), sizes (`KernelArgSize`) and integers' ranges; the arrays stay as they
/// were. An integer that fits its parameter is converted.
#[test]
fn gpu_wrong_arguments() {
    if !on_gpu() {
        return;
    }
    let x1 = arange_f32(25, &[5, 5]);
    let mut y = zeros(&[5, 5], DType::Float32);
    // SAFETY: refused before the launch.
    let e = unsafe { my_add().try_launch(5, 5, &mut [(&x1).into(), (&mut y).into()], 0, None) }
        .unwrap_err();
    assert_eq!(
        e,
        Error::KernelArgCount { kernel: "RawKernel my_add".into(), expected: "3".into(), got: 2 }
    );
    let ker_sum = RawModule::new(LOADED_FROM_SOURCE, &[], &[]).get_function("test_sum").unwrap();
    // A value that does not fit `unsigned int N`, and a double for it, are refused.
    for (n, what) in [(RawArg::from(1i64 << 40), "does not fit"), (25.0f64.into(), "8 bytes")] {
        // SAFETY: refused before the launch.
        let e = unsafe {
            ker_sum.try_launch(5, 5, &mut [(&x1).into(), (&x1).into(), (&mut y).into(), n], 0, None)
        }
        .unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
    assert_eq!(y.to_vec::<f32>(), vec![0.0; 25]);
    // CuPy's `N**2`, a Python int (8 bytes), for `unsigned int N`: converted, as it fits.
    {
        let mut y = zeros(&[5, 5], DType::Float32);
        // SAFETY: test_sum reads and writes 25 floats, the arrays' sizes.
        let r = unsafe {
            ker_sum.try_launch(
                5,
                5,
                &mut [(&x1).into(), (&x1).into(), (&mut y).into(), 25i64.into()],
                0,
                None,
            )
        };
        r.unwrap();
        let want: Vec<f32> = (0..25).map(|v| 2.0 * v as f32).collect();
        assert_eq!(y.to_vec::<f32>(), want);
    }
}

// ------------------------------------------------------------------------------------------------
// Written arrays and kiln's lazy arrays, on a GPU
// ------------------------------------------------------------------------------------------------

/// An array nothing else can see is written in place; one that an old handle, a pending
/// expression or a host copy still reads is copied first, and they keep the old value.
#[test]
fn gpu_written_arrays_keep_lazy_values_coherent() {
    if !on_gpu() {
        return;
    }
    let k = my_add();
    let x1 = arange_f32(25, &[5, 5]);
    let x2 = ones(&[5, 5], DType::Float32);
    let sum: Vec<f32> = (0..25).map(|v| v as f32 + 1.0).collect();

    // Alone: the kernel writes y's own buffer.
    let mut y = zeros(&[5, 5], DType::Float32);
    let before = y.to_device_array().buffer().ptr();
    // SAFETY: my_add reads and writes 25 floats, the arrays' sizes.
    unsafe { k.launch(5, 5, &mut [(&x1).into(), (&x2).into(), (&mut y).into()], 0, None) };
    assert_eq!(y.to_device_array().buffer().ptr(), before, "written in place");
    assert_eq!(y.to_vec::<f32>(), sum);

    // Seen by others: a clone, a lazy expression over it and its host copy keep the old value.
    let mut y = zeros(&[5, 5], DType::Float32);
    assert_eq!(y.to_vec::<f32>(), vec![0.0; 25]); // a host copy is now held
    let old = y.clone();
    let doubled = &y * 2.0;
    let before = y.to_device_array().buffer().ptr();
    // SAFETY: as above.
    unsafe { k.launch(5, 5, &mut [(&x1).into(), (&x2).into(), (&mut y).into()], 0, None) };
    assert_ne!(y.to_device_array().buffer().ptr(), before, "a copy was written");
    assert_eq!(y.to_vec::<f32>(), sum, "not the stale host copy");
    assert_eq!(old.to_vec::<f32>(), vec![0.0; 25]);
    assert_eq!(doubled.to_vec::<f32>(), vec![0.0; 25]);
}

/// A raw kernel is a fusion boundary: a lazy argument is materialised before the launch, and
/// what reads the written array afterwards reads it as an input.
#[test]
fn gpu_raw_kernel_is_a_fusion_boundary() {
    if !on_gpu() {
        return;
    }
    let x1 = arange_f32(25, &[5, 5]);
    let lazy = &x1 * 2.0 + 1.0;
    let mut y = zeros(&[5, 5], DType::Float32);
    // SAFETY: my_add reads and writes 25 floats, the arrays' sizes.
    unsafe { my_add().launch(5, 5, &mut [(&lazy).into(), (&x1).into(), (&mut y).into()], 0, None) };
    assert!(lazy.is_materialized());
    let z = &y - &x1;
    let explain = kiln::explain(&[&z]);
    assert!(
        explain.graph.contains("input {index=0}") && explain.graph.contains("input {index=1}"),
        "{}",
        explain.graph
    );
    assert_eq!(explain.report.kernel_count(), 1);
    assert_eq!(z.to_vec::<f32>(), (0..25).map(|v| 2.0 * v as f32 + 1.0).collect::<Vec<_>>());
}

/// A launch on another stream is ordered after the arrays' evaluation and before later reads.
#[test]
fn gpu_launch_on_another_stream() {
    if !on_gpu() {
        return;
    }
    let stream = Stream::non_blocking(kiln_runtime::Device::new(0).unwrap()).unwrap();
    let big = 1 << 20;
    let k = RawKernel::new(
        r#"
extern "C" __global__ void scale(const double* x, double* y, double a, long long n) {
    for (long long i = blockDim.x * blockIdx.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = a * x[i];
    }
}
"#,
        "scale",
        &[],
    );
    let x = arange(big).astype(DType::Float64).sin();
    let mut y = zeros(&[big as usize], DType::Float64);
    let args: &mut [RawArg] = &mut [(&x).into(), (&mut y).into(), 3.0f64.into(), big.into()];
    // SAFETY: scale reads and writes n = 2^20 doubles, the arrays' sizes.
    unsafe { k.launch(64, 256, args, 0, Some(&stream)) };
    let want: Vec<f64> = x.to_vec::<f64>().iter().map(|v| 3.0 * v).collect();
    assert_eq!(y.to_vec::<f64>(), want);
}

/// The binary NVRTC made is kept in the disk cache: a second module of the same source (a new
/// `RawModule`, as in a new process) is loaded from it without compiling, name expressions
/// included.
#[test]
fn gpu_compiled_binary_from_the_disk_cache() {
    if !on_gpu() {
        return;
    }
    if kiln_runtime::DiskCache::from_env().is_none() {
        println!("skipped: the disk cache is off");
        return;
    }
    // A source no earlier run compiled: the first module misses and stores it.
    let stamp =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let code = format!("// {stamp} {}\n{FX3}", std::process::id());
    let first = RawModule::new(&code, &[], &["fx3<float>"]);
    first.try_compile().unwrap();
    let stats = kiln_runtime::DiskCache::stats();
    let second = RawModule::new(&code, &[], &["fx3<float>"]);
    let ker = second.get_function("fx3<float>").unwrap();
    assert!(
        kiln_runtime::DiskCache::stats().hits >= stats.hits + 2,
        "the binary and its lowered names"
    );
    assert_eq!(ker.entry_name().unwrap(), "_Z3fx3IfEvPT_i");
    let mut a = arange(10).astype(DType::Float32);
    // SAFETY: fx3<float>(float*, int) writes 10 elements of a, its size.
    unsafe { ker.launch(1, 10, &mut [(&mut a).into(), 10i32.into()], 0, None) };
    assert_eq!(a.to_vec::<f32>()[9], 27.0);
}

// ------------------------------------------------------------------------------------------------
// The compile log and module globals (issue 23 §4), on a GPU
// ------------------------------------------------------------------------------------------------

const WITH_GLOBALS: &str = r#"
extern "C" {
__device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ int scale = 7;

__global__ void bump(float by) {
    int unused_variable;
    if (threadIdx.x < 4) { table[threadIdx.x] += by * scale; }
}
}
"#;

/// NVRTC's warnings come back from `compile_log` (also for a module compiled again from the disk
/// cache); `get_global` reads a `__device__` and a `__constant__` variable as arrays, after a
/// kernel wrote one; a missing symbol and a wrong size are typed errors.
#[test]
fn gpu_compile_log_and_globals() {
    if !on_gpu() {
        return;
    }
    let module = RawModule::new(WITH_GLOBALS, &[], &[]);
    let log = module.compile_log().unwrap();
    assert!(log.contains("unused_variable"), "NVRTC's warning is missing: {log:?}");
    let again = RawModule::new(WITH_GLOBALS, &[], &[]);
    assert_eq!(again.compile_log().unwrap(), log, "the log of a cached compilation");
    let table = module.get_global("table", &[4], DType::Float32).unwrap();
    assert_eq!(table.to_vec::<f32>(), vec![1., 2., 3., 4.]);
    let scale = module.get_global("scale", &[], DType::Int32).unwrap();
    assert_eq!(scale.item::<i32>(), 7);
    let bump = module.get_function("bump").unwrap();
    // SAFETY: bump(float) updates the module's own 4-element table.
    unsafe { bump.try_launch(1, 32, &mut [0.5f32.into()], 0, None) }.unwrap();
    let table = module.get_global("table", &[2, 2], DType::Float32).unwrap();
    assert_eq!(table.to_vec::<f32>(), vec![4.5, 5.5, 6.5, 7.5]);
    let e = module.get_global("no_such_symbol", &[1], DType::Float32).unwrap_err();
    assert!(matches!(e, Error::UnknownKernel { ref name, .. } if name == "no_such_symbol"), "{e}");
    let e = module.get_global("table", &[3], DType::Float32).unwrap_err();
    assert!(e.to_string().contains("16 bytes"), "{e}");
    let cubin = RawModule::from_cubin(b"\x7fELFgarbage");
    let e = cubin.try_compile().unwrap_err();
    assert!(e.to_string().contains("shorter than its 64-byte header"), "{e}");
}

/// Without a GPU, the log and globals are `GpuRequired`, as every raw-kernel use.
#[test]
fn compile_log_and_globals_need_a_gpu() {
    if on_gpu() {
        return;
    }
    let module = RawModule::new(WITH_GLOBALS, &[], &[]);
    assert!(matches!(module.compile_log(), Err(Error::GpuRequired { .. })));
    assert!(matches!(
        module.get_global("table", &[4], DType::Float32),
        Err(Error::GpuRequired { .. })
    ));
}

const GRID_SYNC: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void reverse_after_sync(float* x, float* out, int n) {
    cg::grid_group g = cg::this_grid();
    int i = (int)g.thread_rank();
    if (i < n) { x[i] = (float)i; }
    g.sync();
    if (i < n) { out[i] = x[n - 1 - i]; }
}
"#;

/// A cooperative launch (CuPy's `enable_cooperative_groups=True`): the grid synchronises
/// between writing `x` and reading other blocks' elements of it; a grid larger than the device
/// holds at once is an error naming the kernel.
#[test]
fn gpu_cooperative_launch_syncs_the_grid() {
    if !on_gpu() {
        return;
    }
    let k = RawKernel::new(GRID_SYNC, "reverse_after_sync", &[]).with_cooperative_groups(true);
    let n = 512usize;
    let mut x = zeros(&[n], DType::Float32);
    let mut out = zeros(&[n], DType::Float32);
    // SAFETY: reverse_after_sync(float*, float*, int) touches n elements of x and out.
    unsafe {
        k.try_launch(8, 64, &mut [(&mut x).into(), (&mut out).into(), (n as i32).into()], 0, None)
    }
    .unwrap();
    let want: Vec<f32> = (0..n).rev().map(|v| v as f32).collect();
    assert_eq!(out.to_vec::<f32>(), want);
    let mut big = zeros(&[n], DType::Float32);
    // SAFETY: refused by the driver (too many blocks to be resident at once); nothing runs.
    let e = unsafe {
        k.try_launch(1 << 20, 1024, &mut [(&mut x).into(), (&mut big).into(), 0i32.into()], 0, None)
    }
    .unwrap_err();
    assert!(e.to_string().contains("RawKernel reverse_after_sync"), "{e}");
}

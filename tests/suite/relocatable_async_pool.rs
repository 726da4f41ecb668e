//! Issue 23 §4's last two: relocatable device code (`RawModule` with `-dc`, linked with the
//! toolkit's `libcudadevrt.a`: dynamic parallelism and `extern __device__` functions) and the
//! stream-ordered pool (`cuMemAllocAsync`, CuPy's `MemoryAsyncPool`). The `gpu_` tests need a
//! CUDA device, NVRTC and the toolkit (the GPU machine's `/usr/local/cuda`); on the CPU backend
//! they print `skipped: no GPU` and return.

use kiln::{arange, zeros, Array, DType, Error, RawArg, RawModule};
use kiln_runtime::{Device, RuntimeError};

use crate::raw_kernels::on_gpu;

/// A parent kernel launching a child grid per block (dynamic parallelism, CUDA 12's CDP2: no
/// device-side synchronisation; the child grids finish before the parent grid is complete).
const DYNAMIC: &str = r#"
extern "C" __global__ void child(float* y, int offset, int n) {
    int i = offset + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < offset + n) y[i] = 2.0f * y[i] + 1.0f;
}

extern "C" __global__ void parent(float* y, int chunk) {
    if (threadIdx.x == 0) {
        child<<<(chunk + 63) / 64, 64>>>(y, blockIdx.x * chunk, chunk);
    }
}
"#;

/// Two kernels calling a function declared `extern __device__` and defined after them (a call
/// the compiler leaves to the linker under `-dc`), and a `__device__` variable they share.
const EXTERN: &str = r#"
extern __device__ float scale(float x);
extern __device__ int calls;

extern "C" __global__ void scaled(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = scale(x[i]); atomicAdd(&calls, 1); }
}

extern "C" __global__ void scaled_twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = scale(scale(x[i])); atomicAdd(&calls, 1); }
}

__device__ int calls = 0;
__device__ __noinline__ float scale(float x) { return 3.0f * x - 1.0f; }
"#;

fn ramp(n: i64) -> Array {
    arange(n).astype(DType::Float32)
}

/// `parent<<<8, 32>>>` over 8 chunks of 100: each block's child grid updates its chunk.
#[test]
fn gpu_relocatable_dynamic_parallelism() {
    if !on_gpu() {
        return;
    }
    // racecheck, synccheck and initcheck report "CUDA Dynamic Parallelism is not supported by
    // the selected tool" as a finding (`run.sh` and `sanitize_parts.sh` name the tool); memcheck
    // checks it.
    if std::env::var("KILN_SANITIZER_TOOL").is_ok_and(|t| t != "memcheck") {
        println!("skipped: dynamic parallelism under a sanitizer tool that does not support it");
        return;
    }
    for option in ["-dc", "--relocatable-device-code=true"] {
        let module = RawModule::new(DYNAMIC, &[option], &[]);
        let parent = module.get_function("parent").unwrap();
        let mut y = ramp(800);
        let args: &mut [RawArg] = &mut [(&mut y).into(), 100i32.into()];
        // SAFETY: 8 blocks, each child grid writes its 100 of y's 800 floats.
        unsafe { parent.launch((8,), (32,), args, 0, None) };
        let want: Vec<f32> = (0..800).map(|v| 2.0 * v as f32 + 1.0).collect();
        assert_eq!(y.to_vec::<f32>(), want, "{option}");
    }
}

/// Without `-dc` a device-side launch does not compile: NVRTC's error, with its log.
#[test]
fn gpu_dynamic_parallelism_needs_relocatable_code() {
    if !on_gpu() {
        return;
    }
    let e = RawModule::new(DYNAMIC, &[], &[]).try_compile().unwrap_err();
    assert!(
        format!("{e}").to_lowercase().contains("rdc") || format!("{e:?}").contains("Nvrtc"),
        "{e}"
    );
}

/// Two `-dc` kernels of one module call the `extern __device__` function and count their
/// calls in the shared `__device__` variable (read back with `get_global`).
#[test]
fn gpu_relocatable_extern_device_function() {
    if !on_gpu() {
        return;
    }
    let module = RawModule::new(EXTERN, &["-dc"], &[]);
    let (once, twice) =
        (module.get_function("scaled").unwrap(), module.get_function("scaled_twice").unwrap());
    let x = ramp(300);
    let (mut y1, mut y2) = (zeros(&[300], DType::Float32), zeros(&[300], DType::Float32));
    // SAFETY: 300 threads read x's and write y's 300 floats.
    unsafe {
        once.launch((3,), (100,), &mut [(&x).into(), (&mut y1).into(), 300i32.into()], 0, None);
        twice.launch((3,), (100,), &mut [(&x).into(), (&mut y2).into(), 300i32.into()], 0, None);
    }
    let s = |v: f32| 3.0 * v - 1.0;
    assert_eq!(y1.to_vec::<f32>(), (0..300).map(|v| s(v as f32)).collect::<Vec<_>>());
    assert_eq!(y2.to_vec::<f32>(), (0..300).map(|v| s(s(v as f32))).collect::<Vec<_>>());
    let calls = module.get_global("calls", &[], DType::Int32).unwrap();
    assert_eq!(calls.to_vec::<i32>(), vec![600]);
}

/// An `extern __device__` function nobody defines is the linker's error (the link stage, with
/// its log naming the symbol), not a load failure.
#[test]
fn gpu_relocatable_unresolved_extern_is_a_link_error() {
    if !on_gpu() {
        return;
    }
    let code = r#"
extern __device__ float missing(float);
extern "C" __global__ void k(float* y) { y[0] = missing(y[0]); }
"#;
    let e = RawModule::new(code, &["-dc"], &[]).try_compile().unwrap_err();
    match &e {
        Error::RuntimeIn { source: RuntimeError::Kernel(k), .. } => {
            assert_eq!(k.stage, kiln_runtime::KernelStage::Link, "{e}");
            assert!(k.log.contains("missing"), "{}", k.log);
        }
        other => panic!("{other:?}"),
    }
}

/// Where `libcudadevrt.a` is missing, relocatable code is a typed error naming `cuLinkAddFile`
/// and the places looked in; where found, the path is a file.
#[test]
fn cudadevrt_is_found_or_a_typed_error() {
    match kiln_runtime::link::cudadevrt() {
        Ok(path) => assert!(path.is_file(), "{}", path.display()),
        Err(RuntimeError::Library(e)) => {
            assert_eq!(e.call, "cuLinkAddFile");
            assert!(e.status.contains("libcudadevrt.a"), "{}", e.status);
        }
        Err(other) => panic!("{other:?}"),
    }
    let opts = |v: &[&str]| v.iter().map(|o| o.to_string()).collect::<Vec<_>>();
    assert!(kiln_runtime::link::is_relocatable(&opts(&["-std=c++17", "-dc"])));
    assert!(!kiln_runtime::link::is_relocatable(&opts(&["-std=c++17"])));
}

/// A few computations of kiln's: elementwise chains, reductions, a matmul, an FFT, a sort, a
/// scan, a gather and a mask selection, as host vectors.
fn workload(seed: u64) -> Vec<Vec<f64>> {
    let x = kiln::random::default_rng(Some(seed)).standard_normal(&[256, 256], DType::Float64);
    let y = x.astype(DType::Float32);
    let m = kiln::matmul(&y, &y.t());
    let f = kiln::fft::fft(&y.astype(DType::Complex64), None, -1, "backward").abs();
    let outs = [
        (&(&x * 2.0) + &x.exp()).sin(),
        x.sum(1),
        y.max(0).astype(DType::Float64),
        m.astype(DType::Float64),
        f.astype(DType::Float64),
        x.sort(Some(-1)),
        x.cumsum(Some(0)),
        x.reshape(&[-1]).take(&(&arange(1000) * 37), None),
        kiln::extract(&x.greater(1.0), &x),
    ];
    outs.iter().map(|a| a.astype(DType::Float64).to_vec::<f64>()).collect()
}

/// The stream-ordered pool gives kiln's computations the same results as the caching pool;
/// while they live its figures (the driver pool's) count them; switching back restores the
/// default pool, and buffers made under either are freed into their own.
#[test]
fn gpu_async_pool_same_results() {
    if !on_gpu() {
        return;
    }
    let device = Device::new(0).unwrap();
    let caching = workload(23);
    kiln_runtime::set_async_pool(device, true).unwrap();
    assert!(kiln_runtime::async_pool_in_use(device).unwrap());
    let pool = device.async_memory_pool().unwrap();
    assert_eq!(pool.mode(), kiln_runtime::PoolMode::Async);
    let held = kiln::random::default_rng(Some(5)).standard_normal(&[1 << 20], DType::Float64);
    let doubled = &held * 2.0;
    doubled.eval();
    let stats = pool.stats();
    assert!(stats.used_bytes >= 8 << 20, "{stats:?}");
    assert!(stats.total_bytes >= stats.used_bytes, "{stats:?}");
    assert!(stats.raw_allocs >= 1, "{stats:?}");
    let stream_ordered = workload(23);
    kiln_runtime::set_async_pool(device, false).unwrap();
    // Off again, unless the default pool is itself stream-ordered (`KILN_GPU_POOL=async`).
    let default_async = device.memory_pool().unwrap().mode() == kiln_runtime::PoolMode::Async;
    assert_eq!(kiln_runtime::async_pool_in_use(device).unwrap(), default_async);
    assert_eq!(caching, stream_ordered);
    // Freed under the default pool again, into the stream-ordered pool they came from.
    let twice: Vec<f64> = held.to_vec::<f64>()[..4].iter().map(|v| v * 2.0).collect();
    assert_eq!(doubled.to_vec::<f64>()[..4], twice[..]);
    drop((held, doubled));
    pool.free_all_blocks(None);
    assert_eq!(workload(23), caching);
}

//! cuFFT JIT callbacks (`kiln::fft::config::set_cufft_callbacks`, CuPy's `cb_ver="jit"`): every
//! transform kind (C2C, R2C, C2R in float32 and float64) with a load or a store callback,
//! against the same work written as kiln expressions without callbacks; the scope's rules; the
//! errors. The `gpu_*` tests skip without a CUDA backend; `callbacks_need_cufft` runs on the CPU.
//! kiln's own generated callbacks are tested in `fft_callbacks_generated`.

use kiln::fft::config::CufftCallbacks;
use kiln::fft::{self, config};
use kiln::{Array, DType};

use crate::numpy_fixtures::{compare, Tol};
use crate::vendor_gpu::on_gpu;

pub(crate) fn randn(shape: &[usize], seed: u64, dtype: DType) -> Array {
    let rng = |s| kiln::random::default_rng(Some(s));
    let x = rng(seed).standard_normal(shape, DType::Float64);
    if dtype.is_complex() {
        let y = rng(seed + 1).standard_normal(shape, DType::Float64);
        (&x + &y * &Array::scalar(num_complex::Complex64::new(0.0, 1.0))).astype(dtype)
    } else {
        x.astype(dtype)
    }
    .eval()
    .clone()
}

pub(crate) fn close(got: &Array, want: &Array, what: &str) {
    assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{what}");
    let tol = match got.dtype() {
        DType::Float32 | DType::Complex64 => Tol::Norm(2e-5),
        _ => Tol::Norm(1e-12),
    };
    let (g, w) = (got.try_to_host().unwrap(), want.try_to_host().unwrap());
    compare(&w, &g, tol, false).unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// cuFFT's element type names for a kiln dtype.
fn ctype(d: DType) -> &'static str {
    match d {
        DType::Float32 => "cufftReal",
        DType::Float64 => "cufftDoubleReal",
        DType::Complex64 => "cufftComplex",
        _ => "cufftDoubleComplex",
    }
}

/// A load callback multiplying each input element by the aux array's element at its offset
/// (`aux` of the real dtype `r`).
fn scaling_load(input: DType, r: &str) -> String {
    let t = ctype(input);
    let body = if input.is_complex() { "x.x *= s; x.y *= s;" } else { "x *= s;" };
    format!(
        "#include <cufftXt.h>\n\
         __device__ {t} scale_in(void *dataIn, unsigned long long offset, void *callerInfo, void *sharedPtr) {{\n\
           {t} x = (({t}*)dataIn)[offset];\n\
           {r} s = (({r}*)callerInfo)[offset];\n\
           {body}\n\
           return x;\n\
         }}\n\
         __device__ cufftJITCallbackLoad{k} d_loadCallbackPtr = scale_in;\n",
        k = callback_suffix(input),
    )
}

/// A store callback writing each output element divided by 3.5.
fn scaling_store(output: DType) -> String {
    let t = ctype(output);
    let body = if output.is_complex() { "e.x /= 3.5; e.y /= 3.5;" } else { "e /= 3.5;" };
    format!(
        "#include <cufftXt.h>\n\
         __device__ void shrink_out(void *dataOut, unsigned long long offset, {t} e, void *callerInfo, void *sharedPtr) {{\n\
           {body}\n\
           (({t}*)dataOut)[offset] = e;\n\
         }}\n\
         __device__ cufftJITCallbackStore{k} d_storeCallbackPtr = shrink_out;\n",
        k = callback_suffix(output),
    )
}

/// cufftXt.h's suffix of the JIT callback typedefs (`cufftJITCallbackLoadC`...).
fn callback_suffix(d: DType) -> &'static str {
    match d {
        DType::Float32 => "R",
        DType::Float64 => "D",
        DType::Complex64 => "C",
        _ => "Z",
    }
}

#[test]
fn callbacks_need_cufft() {
    if matches!(kiln::backend(), kiln_runtime::Backend::Cuda(_)) {
        return;
    }
    let src = scaling_store(DType::Complex64);
    let e =
        config::set_cufft_callbacks(CufftCallbacks { cb_store: Some(&src), ..Default::default() })
            .err()
            .expect("callbacks on the CPU backend");
    assert!(e.to_string().contains("set_cufft_callbacks: cuFFT callbacks need cuFFT"), "{e}");
}

#[test]
fn gpu_fft_load_callbacks_scale_the_input() {
    if !on_gpu() {
        return;
    }
    // (input dtype, aux dtype's C name, transform)
    type Transform = fn(&Array) -> Array;
    let cases: [(DType, DType, &str, Transform); 6] = [
        (DType::Complex64, DType::Float32, "fft c64", |a| fft::fft(a, None, -1, "backward")),
        (DType::Complex128, DType::Float64, "fft c128", |a| fft::fft(a, None, -1, "ortho")),
        (DType::Complex64, DType::Float32, "fft2 c64", |a| {
            fft::fft2(a, None, &[-2, -1], "backward")
        }),
        (DType::Float32, DType::Float32, "rfft f32", |a| fft::rfft(a, None, -1, "backward")),
        (DType::Float64, DType::Float64, "rfft f64", |a| fft::rfft(a, None, -1, "forward")),
        (DType::Complex64, DType::Float32, "irfft c64", |a| fft::irfft(a, None, -1, "backward")),
    ];
    for (k, (input, aux_dtype, what, transform)) in cases.into_iter().enumerate() {
        let a = randn(&[16, 256], 10 + k as u64, input);
        let aux = (randn(&[16, 256], 50 + k as u64, aux_dtype).abs() + 0.5).eval().clone();
        let want = transform(&(&a * &aux)).eval().clone();
        let src = scaling_load(input, if aux_dtype == DType::Float32 { "float" } else { "double" });
        let got = {
            let _scope = config::set_cufft_callbacks(CufftCallbacks {
                cb_load: Some(&src),
                cb_load_aux_arr: Some(&aux),
                ..Default::default()
            })
            .unwrap();
            transform(&a)
        };
        close(&got, &want, what);
    }
}

#[test]
fn gpu_fft_store_callbacks_scale_the_output() {
    if !on_gpu() {
        return;
    }
    type Transform = fn(&Array) -> Array;
    let cases: [(DType, &str, Transform); 5] = [
        (DType::Complex64, "ifft c64", |a| fft::ifft(a, None, -1, "backward")),
        (DType::Complex128, "fftn c128", |a| fft::fftn(a, None, None, "backward")),
        (DType::Float32, "rfft f32", |a| fft::rfft(a, None, -1, "backward")),
        (DType::Complex64, "irfft c64", |a| fft::irfft(a, None, -1, "ortho")),
        (DType::Complex128, "irfft c128", |a| fft::irfft(a, None, -1, "backward")),
    ];
    for (k, (input, what, transform)) in cases.into_iter().enumerate() {
        let a = randn(&[8, 128], 100 + k as u64, input);
        let plain = transform(&a).eval().clone();
        let want = (&plain / 3.5).astype(plain.dtype()).eval().clone();
        let src = scaling_store(plain.dtype());
        // An aux array the callback ignores: its address is the caller info.
        let ignored = kiln::zeros(&[1], DType::Float32).eval().clone();
        let got = {
            let _scope = config::set_cufft_callbacks(CufftCallbacks {
                cb_store: Some(&src),
                cb_store_aux_arr: Some(&ignored),
                ..Default::default()
            })
            .unwrap();
            transform(&a)
        };
        close(&got, &want, what);
    }
}

#[test]
fn gpu_fft_callbacks_without_caller_info() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[4, 512], 7, DType::Complex64);
    let src = scaling_store(DType::Complex64);
    let got = {
        let _scope = config::set_cufft_callbacks(CufftCallbacks {
            cb_store: Some(&src),
            ..Default::default()
        })
        .unwrap();
        fft::fft(&a, None, -1, "backward").try_eval().map(|x| x.clone())
    };
    close(&got.unwrap(), &(fft::fft(&a, None, -1, "backward") / 3.5), "no caller info");
    close(
        &fft::fft(&a, None, -1, "backward"),
        &kiln::fft::fft(&a.astype(DType::Complex128), None, -1, "backward")
            .astype(DType::Complex64),
        "after",
    );
}

#[test]
fn gpu_fft_load_and_store_callbacks_on_one_plan() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[32, 1024], 3, DType::Complex64);
    let aux = (randn(&[32, 1024], 4, DType::Float32).abs() + 0.5).eval().clone();
    let want = (fft::fft(&(&a * &aux), None, -1, "backward") / 3.5).eval().clone();
    let (load, store) = (scaling_load(DType::Complex64, "float"), scaling_store(DType::Complex64));
    let got = {
        let _scope = config::set_cufft_callbacks(CufftCallbacks {
            cb_load: Some(&load),
            cb_store: Some(&store),
            cb_load_aux_arr: Some(&aux),
            cb_store_aux_arr: Some(&aux),
            ..Default::default()
        })
        .unwrap();
        fft::fft(&a, None, -1, "backward").try_eval().map(|x| x.clone())
    };
    close(&got.unwrap(), &want, "load and store");
}

#[test]
fn gpu_fft_callbacks_scope_rules() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[4, 64], 21, DType::Complex64);
    let plain = fft::fft(&a, None, -1, "backward").eval().clone();
    let src = scaling_store(DType::Complex64);
    let info = kiln::zeros(&[1], DType::Float32).eval().clone();
    let misses = config::get_plan_cache().unwrap().misses;
    let lazy_outside;
    {
        let _scope = config::set_cufft_callbacks(CufftCallbacks {
            cb_store: Some(&src),
            cb_store_aux_arr: Some(&info),
            ..Default::default()
        })
        .unwrap();
        // Written inside: computed now, with the callback.
        let inside = fft::fft(&a, None, -1, "backward");
        assert!(inside.is_materialized());
        close(&inside, &(&plain / 3.5).astype(DType::Complex64), "inside");
        lazy_outside = &a * 2.0;
    }
    // After the scope: lazy again and without callbacks; the plan with the callback is a plan
    // of its own.
    let after = fft::fft(&lazy_outside, None, -1, "backward");
    assert!(!after.is_materialized());
    close(&after, &(&plain * 2.0), "after");
    assert!(config::get_plan_cache().unwrap().misses > misses);
}

#[test]
fn gpu_fft_callback_errors() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[4, 64], 22, DType::Complex64);
    // NVRTC's log comes back.
    let bad = "__device__ cufftComplex f(void *d, unsigned long long o, void *c, void *s) { return undefined_thing; }\n\
               __device__ int d_loadCallbackPtr = f;";
    let e =
        config::set_cufft_callbacks(CufftCallbacks { cb_load: Some(bad), ..Default::default() })
            .err()
            .expect("a callback that does not compile");
    assert!(e.to_string().contains("undefined_thing"), "{e}");
    // No name given or found.
    let e = config::set_cufft_callbacks(CufftCallbacks {
        cb_load: Some("__device__ int g;"),
        ..Default::default()
    })
    .err()
    .expect("no name");
    assert!(e.to_string().contains("cb_load_name cannot be inferred"), "{e}");
    assert!(config::set_cufft_callbacks(CufftCallbacks::default()).is_err());
    let aux = kiln::zeros(&[1], DType::Float32);
    assert!(config::set_cufft_callbacks(CufftCallbacks {
        cb_store_aux_arr: Some(&aux),
        cb_load: Some(bad),
        ..Default::default()
    })
    .is_err());
    // A name cuFFT does not find: the FFT fails naming the prototype; a live array and later
    // transforms are unharmed.
    let src = scaling_load(DType::Complex64, "float");
    let ones = kiln::ones(&[4, 64], DType::Float32).eval().clone();
    let e = {
        let _scope = config::set_cufft_callbacks(CufftCallbacks {
            cb_load: Some(&src),
            cb_load_name: Some("no_such_function"),
            cb_load_aux_arr: Some(&ones),
            ..Default::default()
        })
        .unwrap();
        fft::try_fft(&a, None, -1, "backward").err().expect("an unknown callback name")
    };
    assert!(e.to_string().contains("no_such_function(void *dataIn"), "{e}");
    let again = fft::fft(&a, None, -1, "backward");
    let want =
        fft::fft(&a.astype(DType::Complex128), None, -1, "backward").astype(DType::Complex64);
    close(&again, &want, "after a failed plan");
    let good = {
        let _scope = config::set_cufft_callbacks(CufftCallbacks {
            cb_load: Some(&src),
            cb_load_aux_arr: Some(&ones),
            ..Default::default()
        })
        .unwrap();
        fft::fft(&a, None, -1, "backward")
    };
    close(&good, &want, "a good callback after a failed plan");
}

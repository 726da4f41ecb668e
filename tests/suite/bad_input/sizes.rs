//! Sizes: arrays far beyond memory (2^60 elements: an allocation that fails, which must be an
//! error, not an abort), shapes whose element count overflows `usize` (refused where the op is
//! written, not wrapped to a small count), and the readers' own errors.

use kiln::{Array, DType, ElementwiseKernel, PadMode};

use super::{f32s, i64s, Walk};

/// 2^60: float32 elements of 4 EiB.
const HUGE: usize = 1 << 60;
/// 2^32: two extents of it multiply to 2^64, which wraps to 0 in `usize`.
const WRAP: usize = 1 << 32;

pub fn walk(w: &mut Walk) {
    beyond_memory(w);
    overflowing_shapes(w);
    readers(w);
}

fn beyond_memory(w: &mut Walk) {
    let huge = || kiln::zeros(&[HUGE], DType::Float32);
    w.err("Array::try_to_vec", "memory", "zeros of 2^60 float32", || huge().try_to_vec::<f32>());
    w.err("Array::try_eval", "memory", "zeros of 2^60 float32", || huge().try_eval().map(|_| ()));
    w.err("Array::try_to_host", "memory", "ones of 2^60 float32 + 1", || {
        (kiln::ones(&[HUGE], DType::Float32) + 1.0).try_to_host().map(|_| ())
    });
    w.err("Array::try_to_ndarray", "memory", "2^40 float64", || {
        kiln::full(&[1 << 40], 1.5, DType::Float64).try_to_ndarray::<f64>()
    });
    w.err("kiln::try_eval_all", "memory", "a small and a huge array", || {
        kiln::try_eval_all(&[&f32s(&[3]), &huge().exp()])
    });
    w.err("Array::try_to_vec", "memory", "arange(2^62)", || {
        kiln::arange(1 << 62).try_to_vec::<i64>()
    });
    // A cast whose bytes overflow (2^65) is made (a loop dtype fused into its reader, as mean's
    // float64 sum of int8), not a panic where it is written; read alone, out of memory.
    w.err("Array::try_to_vec", "memory", "(2^62,) int8 as float64, read", || {
        kiln::zeros(&[1 << 62], DType::Int8).astype(DType::Float64).try_to_vec::<f64>()
    });
    w.survives("Array::try_mean", "mean", "(2^62,) int8 (a float64 sum), written", || {
        kiln::zeros(&[1 << 62], DType::Int8).try_mean(None).map(|_| ())
    });
    w.err("Array::try_to_vec", "memory", "linspace of 2^59", || {
        kiln::linspace(0.0, 1.0, 1 << 59).try_to_vec::<f64>()
    });
    w.err("random::Generator::try_random", "random", "2^60 draws (in 64-bit words)", || {
        kiln::random::Generator::new(1).try_random(&[HUGE], DType::Float32)?.try_to_vec::<f32>()
    });
    w.err("Array::try_to_vec", "memory", "a 2^30 x 2^30 outer product", || {
        let v = kiln::ones(&[1 << 30], DType::Float32);
        kiln::try_outer(&v, &v)?.try_to_vec::<f32>()
    });
    w.err("kiln::try_histogram", "", "usize::MAX bins", || {
        kiln::try_histogram(&f32s(&[4]), usize::MAX, None)
    });
    w.err("kiln::try_histogram", "", "2^60 bins, read", || {
        kiln::try_histogram(&f32s(&[4]), HUGE, None)?.0.try_to_vec::<i64>()
    });
    w.err("kiln::try_bincount", "bincount", "minlength 2^60 (int64 counts)", || {
        kiln::try_bincount(&i64s(&[3]), None, HUGE)?.try_to_vec::<i64>()
    });
    w.err("Array::try_sort", "memory", "a sort of 2^60", || {
        huge().try_sort(None)?.try_to_vec::<f32>()
    });
    w.err("Array::try_cumsum", "memory", "a cumsum of 2^60", || {
        huge().try_cumsum(None)?.try_to_vec::<f32>()
    });
    w.err("Array::try_array_split", "array_split", "2^60 sections", || {
        f32s(&[3]).try_array_split(HUGE, 0)
    });
    w.err("Array::try_array_split", "array_split", "usize::MAX sections", || {
        f32s(&[3]).try_array_split(usize::MAX, 0)
    });
    w.err("kiln::try_meshgrid", "memory", "2^30 x 2^30 grids, read", || {
        let v = kiln::ones(&[1 << 30], DType::Float32);
        kiln::try_meshgrid(&[&v, &v], "ij")?[0].try_to_vec::<f32>()
    });
}

fn overflowing_shapes(w: &mut Walk) {
    let f = "kiln::try_full";
    w.err(f, "full", "(2^32, 2^32)", || kiln::try_full(&[WRAP, WRAP], 0, DType::Float32));
    w.err(f, "full", "(usize::MAX, 2)", || kiln::try_full(&[usize::MAX, 2], 0, DType::Float32));
    w.err(f, "full", "(2^62,) float32: 2^64 bytes", || {
        kiln::try_full(&[1 << 62], 0, DType::Float32)
    });
    w.err("Array::try_from_vec", "", "no data for (2^32, 2^32)", || {
        Array::try_from_vec(Vec::<f32>::new(), &[WRAP, WRAP])
    });
    w.err("Array::try_from_vec", "", "one value for (2^32, 2^32, 2^32, 2^32) + 1", || {
        Array::try_from_vec(vec![1.0f32], &[WRAP + 1, WRAP - 1, WRAP, WRAP])
    });
    w.err("Array::try_broadcast_to", "broadcast_to", "(2^32, 2^32)", || {
        f32s(&[1]).try_broadcast_to(&[WRAP, WRAP])
    });
    w.err("Array::try_reshape", "reshape", "an empty array to (2^32, 2^32)", || {
        f32s(&[0]).try_reshape(&[WRAP as i64, WRAP as i64])
    });
    w.err("Array::try_reshape", "reshape", "(2^32, 2^32, -1)", || {
        f32s(&[6]).try_reshape(&[WRAP as i64, WRAP as i64, -1])
    });
    w.err("Array::try_expand_dims", "", "nothing: then broadcast to (2^32, 2^32)", || {
        f32s(&[1]).try_expand_dims(&[0])?.try_broadcast_to(&[WRAP, WRAP])
    });
    w.err("random::Generator::try_uniform", "uniform", "(2^32, 2^32)", || {
        kiln::random::Generator::new(1).try_uniform(0.0, 1.0, &[WRAP, WRAP], DType::Float32)
    });
    w.err("random::try_standard_normal", "standard_normal", "(2^32, 2^32)", || {
        kiln::random::try_standard_normal(&[WRAP, WRAP], DType::Float64)
    });
    w.err("random::Generator::try_integers", "integers", "(2^32, 2^32)", || {
        kiln::random::Generator::new(1).try_integers(0, 9, &[WRAP, WRAP], DType::Int64)
    });
    w.err("Array::try_tile", "tile", "reps (2^32, 2^32)", || f32s(&[2, 3]).try_tile(&[WRAP, WRAP]));
    w.err("Array::try_tile", "tile", "reps usize::MAX", || f32s(&[2, 3]).try_tile(&[usize::MAX]));
    w.err("Array::try_repeat", "repeat", "usize::MAX times", || {
        f32s(&[2, 3]).try_repeat(usize::MAX, None)
    });
    w.err("Array::try_repeat_each", "repeat", "counts summing past usize", || {
        f32s(&[2]).try_repeat_each(&[usize::MAX, 2], None)
    });
    w.err("Array::try_pad", "pad", "usize::MAX before", || {
        f32s(&[2, 3]).try_pad(&[(usize::MAX, 0), (0, 0)], PadMode::Constant(0.0))
    });
    w.err("Array::try_pad", "pad", "(2^32 - 1) on both axes of 2 x 2^32", || {
        f32s(&[1, 1]).try_pad(&[(WRAP, WRAP), (WRAP, WRAP)], PadMode::Constant(0.0))
    });
    w.err("kiln::try_outer", "outer", "(2^32,) and (2^32,)", || {
        let v = kiln::ones(&[WRAP], DType::Float32);
        kiln::try_outer(&v, &v)
    });
    w.err("kiln::try_kron", "kron", "(2^32,) and (2^32,)", || {
        let v = kiln::ones(&[WRAP], DType::Float32);
        kiln::try_kron(&v, &v)
    });
    w.err("kiln::try_matmul", "matmul", "(2^32, 1) @ (1, 2^32)", || {
        let a = kiln::ones(&[WRAP, 1], DType::Float32);
        kiln::try_matmul(&a, &a.transpose())
    });
    w.err("kiln::try_einsum", "einsum", "i,j->ij of 2^32", || {
        let v = kiln::ones(&[WRAP], DType::Float32);
        kiln::try_einsum("i,j->ij", &[&v, &v])
    });
    w.err("kiln::try_meshgrid", "meshgrid", "(2^32,) and (2^32,)", || {
        let v = kiln::ones(&[WRAP], DType::Float32);
        kiln::try_meshgrid(&[&v, &v], "xy")
    });
    w.err("kiln::try_concatenate", "concatenate", "four of 2^62", || {
        let v = kiln::try_full(&[1 << 62], 1, DType::UInt8)?;
        kiln::try_concatenate(&[&v, &v, &v, &v], 0)
    });
    w.err("kiln::try_stack", "stack", "four of (2^32, 2^29) uint8", || {
        let v = kiln::try_full(&[WRAP, WRAP / 8], 1, DType::UInt8)?;
        kiln::try_stack(&[&v, &v, &v, &v], 0)
    });
    w.err("kiln::try_where_", "where", "(2^32, 1) with (1, 2^32)", || {
        let a = kiln::ones(&[WRAP, 1], DType::Float32);
        kiln::try_where_(true, &a, &a.transpose())
    });
    w.err("Array::try_add", "add", "(2^32, 1) + (1, 2^32)", || {
        let a = kiln::ones(&[WRAP, 1], DType::Float32);
        a.try_add(&a.transpose())
    });
    let k = ElementwiseKernel::new("raw T x", "T y", "y = x[0]", "sized").unwrap();
    w.err("ElementwiseKernel::try_call_sized", "memory", "size 2^60, read", || {
        k.try_call_sized(&[(&f32s(&[1])).into()], HUGE)?[0].try_to_vec::<f32>()
    });
}

fn readers(w: &mut Walk) {
    w.err("Array::try_item", "item", "size 2", || f32s(&[2]).try_item::<f32>());
    w.err("Array::try_item", "item", "size 0", || f32s(&[0]).try_item::<f32>());
    w.err("Array::try_to_vec", "to_vec", "int32 of float32", || f32s(&[2]).try_to_vec::<i32>());
    w.err("Array::try_to_ndarray", "", "f64 of float32", || f32s(&[2]).try_to_ndarray::<f64>());
    w.err("Array::try_item", "", "u8 of bool", || {
        Array::from_vec(vec![true], &[1]).try_item::<u8>()
    });
    w.err("Array::try_to_device", "", "the CPU backend, or a huge array", || {
        kiln::zeros(&[HUGE], DType::Float32).try_to_device_array().map(|_| ())
    });
    w.err("Array::to_dlpack", "", "a huge array", || {
        kiln::zeros(&[HUGE], DType::Float32).to_dlpack().map(|_| ())
    });
    w.survives("kiln::array_str", "", "a huge array", || {
        kiln::array_str(&kiln::zeros(&[HUGE], DType::Float32).exp(), &kiln::get_printoptions())
            .map(|_| ())
    });
}

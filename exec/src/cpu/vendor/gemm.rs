//! Matrix products on the host.
//!
//! - float32, float64, complex64, complex128: the `gemm` crate, reading each operand through its
//!   strides (transposed, sliced, flipped and broadcast operands are not copied);
//! - float16, bfloat16: each operand matrix gathered into float32, multiplied by the float32
//!   GEMM (so products accumulate in float32, as cuBLAS's f16/bf16 GEMMs with f32 compute), the
//!   result rounded once;
//! - integers: a plain loop in the dtype's wrapping arithmetic (NumPy's integer matmul wraps);
//!   bools: `any(a and b)`.
//!
//! Batches of small products run in parallel one product per task; one large product is split
//! by the `gemm` crate itself (rayon).

use gemm::{c32, c64, Parallelism};
use half::{bf16, f16};
use kiln_ir::host::Data;
use kiln_ir::{HostArray, Layout};
use rayon::prelude::*;

use super::host::in_bounds;
use crate::ExecError;
use kiln_compiler::vendor::MatMulCall;

/// Products of at least this many multiply-adds use the `gemm` crate's own threads.
const PARALLEL_WORK: usize = 1 << 18;
/// Below this many multiply-adds per product, a batch runs one product per task.
const SMALL_PRODUCT: usize = 1 << 21;

/// Computes `call` on the inputs `a` and `b` (the buffers its operands index).
pub fn matmul(call: &MatMulCall, a: &HostArray, b: &HostArray) -> Result<HostArray, ExecError> {
    let out_shape: Vec<usize> = call.batch.iter().copied().chain([call.m, call.n]).collect();
    let mismatch = || {
        ExecError::InvalidInput(format!(
            "matmul of {}: operands of dtypes {} and {}",
            call.dtype,
            a.dtype(),
            b.dtype()
        ))
    };
    if a.dtype() != call.dtype || b.dtype() != call.dtype {
        return Err(mismatch());
    }
    in_bounds(&call.a.layout, a.len())?;
    in_bounds(&call.b.layout, b.len())?;
    let data = match (a.data(), b.data()) {
        (Data::Float32(x), Data::Float32(y)) => Data::Float32(strided_gemm(call, x, y)),
        (Data::Float64(x), Data::Float64(y)) => Data::Float64(strided_gemm(call, x, y)),
        (Data::Complex64(x), Data::Complex64(y)) => Data::Complex64(strided_gemm(call, x, y)),
        (Data::Complex128(x), Data::Complex128(y)) => Data::Complex128(strided_gemm(call, x, y)),
        (Data::Float16(x), Data::Float16(y)) => {
            Data::Float16(half_gemm(call, x, y, f16::to_f32, f16::from_f32))
        }
        (Data::BFloat16(x), Data::BFloat16(y)) => {
            Data::BFloat16(half_gemm(call, x, y, bf16::to_f32, bf16::from_f32))
        }
        (Data::Int8(x), Data::Int8(y)) => Data::Int8(loop_matmul(call, x, y)),
        (Data::Int16(x), Data::Int16(y)) => Data::Int16(loop_matmul(call, x, y)),
        (Data::Int32(x), Data::Int32(y)) => Data::Int32(loop_matmul(call, x, y)),
        (Data::Int64(x), Data::Int64(y)) => Data::Int64(loop_matmul(call, x, y)),
        (Data::UInt8(x), Data::UInt8(y)) => Data::UInt8(loop_matmul(call, x, y)),
        (Data::UInt16(x), Data::UInt16(y)) => Data::UInt16(loop_matmul(call, x, y)),
        (Data::UInt32(x), Data::UInt32(y)) => Data::UInt32(loop_matmul(call, x, y)),
        (Data::UInt64(x), Data::UInt64(y)) => Data::UInt64(loop_matmul(call, x, y)),
        (Data::Bool(x), Data::Bool(y)) => Data::Bool(loop_matmul(call, x, y)),
        _ => return Err(mismatch()),
    };
    Ok(HostArray::new(&out_shape, data)?)
}

/// The buffer position of matrix 0,0 of each batch index (C order of the batch axes, the first
/// `nb` axes of `layout`).
fn batch_offsets(layout: &Layout, nb: usize) -> Vec<isize> {
    let mut offs = vec![layout.offset];
    for axis in 0..nb {
        let (n, s) = (layout.shape[axis], layout.strides[axis]);
        offs = offs.iter().flat_map(|&o| (0..n).map(move |i| o + i as isize * s)).collect();
    }
    offs
}

/// Element types the `gemm` crate multiplies.
trait GemmScalar: Copy + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
}
impl GemmScalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}
impl GemmScalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}
impl GemmScalar for c32 {
    const ZERO: c32 = c32::new(0.0, 0.0);
    const ONE: c32 = c32::new(1.0, 0.0);
}
impl GemmScalar for c64 {
    const ZERO: c64 = c64::new(0.0, 0.0);
    const ONE: c64 = c64::new(1.0, 0.0);
}

/// One product `dst (m, n, C order) = A @ B`, A at `a[a0..]` with row/column strides `ars, acs`,
/// B likewise.
struct Product<'a, T> {
    m: usize,
    n: usize,
    k: usize,
    a: &'a [T],
    a0: isize,
    ars: isize,
    acs: isize,
    b: &'a [T],
    b0: isize,
    brs: isize,
    bcs: isize,
}

impl<T: GemmScalar> Product<'_, T> {
    fn run(&self, dst: &mut [T], par: Parallelism) {
        assert_eq!(dst.len(), self.m * self.n);
        if self.m == 0 || self.n == 0 || self.k == 0 {
            dst.fill(T::ZERO);
            return;
        }
        // SAFETY: `in_bounds` checked that every element the operand layouts address (row
        // i < m, column p < k, from a0 / b0) lies inside `a` and `b`; a0 and b0 themselves are
        // such elements, so the offset pointers are in bounds. `dst` holds m*n elements written
        // with row stride n and column stride 1, and nothing else aliases it. `T` is one of the
        // four types the crate supports (f32, f64, c32, c64), so it does not panic.
        unsafe {
            gemm::gemm(
                self.m,
                self.n,
                self.k,
                dst.as_mut_ptr(),
                1,
                self.n as isize,
                false,
                self.a.as_ptr().offset(self.a0),
                self.acs,
                self.ars,
                self.b.as_ptr().offset(self.b0),
                self.bcs,
                self.brs,
                T::ZERO,
                T::ONE,
                false,
                false,
                false,
                par,
            );
        }
    }
}

/// Runs `product(i, dst)` for each batch index `i` over the output split in m*n chunks: in
/// parallel one product per task when the products are small or many, else one after the
/// other, each product threaded by the crate.
fn for_each_product<T: Send>(
    call: &MatMulCall,
    out: &mut [T],
    product: impl Fn(usize, &mut [T], Parallelism) + Sync,
) {
    let size = (call.m * call.n).max(1);
    let work = call.m * call.n * call.k;
    let count = out.len() / size;
    if count > 1 && (work < SMALL_PRODUCT || count >= rayon::current_num_threads()) {
        out.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, dst)| product(i, dst, Parallelism::None));
    } else {
        let par = if work >= PARALLEL_WORK { Parallelism::Rayon(0) } else { Parallelism::None };
        for (i, dst) in out.chunks_mut(size).enumerate() {
            product(i, dst, par);
        }
    }
}

fn strided_gemm<T: GemmScalar>(call: &MatMulCall, a: &[T], b: &[T]) -> Vec<T> {
    let nb = call.batch.len();
    let (la, lb) = (&call.a.layout, &call.b.layout);
    let (aoffs, boffs) = (batch_offsets(la, nb), batch_offsets(lb, nb));
    let mut out = vec![T::ZERO; aoffs.len() * call.m * call.n];
    for_each_product(call, &mut out, |i, dst, par| {
        let p = Product {
            m: call.m,
            n: call.n,
            k: call.k,
            a,
            a0: aoffs[i],
            ars: la.strides[nb],
            acs: la.strides[nb + 1],
            b,
            b0: boffs[i],
            brs: lb.strides[nb],
            bcs: lb.strides[nb + 1],
        };
        p.run(dst, par);
    });
    out
}

/// The `rows x cols` matrix at `x[o..]` with strides `rs, cs`, converted to f32, C order.
fn gather_f32<H: Copy>(
    x: &[H],
    o: isize,
    (rows, rs): (usize, isize),
    (cols, cs): (usize, isize),
    f: fn(H) -> f32,
) -> Vec<f32> {
    let mut v = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        for j in 0..cols {
            v.push(f(x[(o + i as isize * rs + j as isize * cs) as usize]));
        }
    }
    v
}

fn half_gemm<H: Copy + Send + Sync>(
    call: &MatMulCall,
    a: &[H],
    b: &[H],
    up: fn(H) -> f32,
    down: fn(f32) -> H,
) -> Vec<H> {
    let nb = call.batch.len();
    let (la, lb) = (&call.a.layout, &call.b.layout);
    let (aoffs, boffs) = (batch_offsets(la, nb), batch_offsets(lb, nb));
    let (m, n, k) = (call.m, call.n, call.k);
    let mut out = vec![down(0.0); aoffs.len() * m * n];
    for_each_product(call, &mut out, |i, dst, par| {
        let a32 = gather_f32(a, aoffs[i], (m, la.strides[nb]), (k, la.strides[nb + 1]), up);
        let b32 = gather_f32(b, boffs[i], (k, lb.strides[nb]), (n, lb.strides[nb + 1]), up);
        let mut d32 = vec![0.0f32; m * n];
        let p = Product {
            m,
            n,
            k,
            a: &a32,
            a0: 0,
            ars: k as isize,
            acs: 1,
            b: &b32,
            b0: 0,
            brs: n as isize,
            bcs: 1,
        };
        p.run(&mut d32, par);
        for (d, x) in dst.iter_mut().zip(d32) {
            *d = down(x);
        }
    });
    out
}

/// Multiply-add in a dtype's own arithmetic: wrapping for integers, and/or for bools.
trait LoopScalar: Copy + Send + Sync {
    const ZERO: Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}
macro_rules! wrapping_scalar {
    ($($t:ty),*) => {$(
        impl LoopScalar for $t {
            const ZERO: $t = 0;
            fn mul_add(self, a: $t, b: $t) -> $t {
                self.wrapping_add(a.wrapping_mul(b))
            }
        }
    )*};
}
wrapping_scalar!(i8, i16, i32, i64, u8, u16, u32, u64);
impl LoopScalar for bool {
    const ZERO: bool = false;
    fn mul_add(self, a: bool, b: bool) -> bool {
        self | (a & b)
    }
}

/// The plain loop: each output row accumulates `a[i, p] * b[p, :]` over p.
fn loop_matmul<T: LoopScalar>(call: &MatMulCall, a: &[T], b: &[T]) -> Vec<T> {
    let nb = call.batch.len();
    let (la, lb) = (&call.a.layout, &call.b.layout);
    let (aoffs, boffs) = (batch_offsets(la, nb), batch_offsets(lb, nb));
    let (m, n, k) = (call.m, call.n, call.k);
    let (ars, acs, brs, bcs) =
        (la.strides[nb], la.strides[nb + 1], lb.strides[nb], lb.strides[nb + 1]);
    let mut out = vec![T::ZERO; aoffs.len() * m * n];
    if n == 0 {
        return out;
    }
    out.par_chunks_mut(n).enumerate().for_each(|(row, dst)| {
        let (batch, i) = (row / m, row % m);
        let arow = aoffs[batch] + i as isize * ars;
        for p in 0..k {
            let x = a[(arow + p as isize * acs) as usize];
            let brow = boffs[batch] + p as isize * brs;
            for (j, d) in dst.iter_mut().enumerate() {
                *d = d.mul_add(x, b[(brow + j as isize * bcs) as usize]);
            }
        }
    });
    out
}

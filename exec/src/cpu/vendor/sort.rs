//! Sort regions on the host: one `sort`, `argsort`, `sort_take` or `argtopk` node over a region input (or
//! views of one); `sort_take` and `argtopk` select (module `select`). Each line sorts by a stable LSD radix sort of order-preserving keys (a byte per pass),
//! complex lines (and short ones) by Rust's stable sort; lines in parallel (rayon). The order is the evaluator's
//! (`kiln_ir::eval`'s `sort`): NaN last, -0.0 equal to 0.0, complex by real then imaginary part
//! with NumPy's NaN classes, ties in their order.
//!
//! The GPU executor runs the regions its radix sort and select do not take here, between copies.

use std::cmp::Ordering;

use half::{bf16, f16};
use kiln_ir::eval::sort::{complex_order, float_order};
use kiln_ir::host::HostElement;
use kiln_ir::{with_data, Attrs, HostArray, OpKind};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::ExecError;
use kiln_compiler::fusion::Region;

/// Elements the host orders: NumPy's order of [`kiln_ir::eval`]. Real elements map to unsigned
/// keys whose order is theirs (`key`; -0.0 and 0.0 one key, every NaN the largest), so lines
/// sort by a stable LSD radix sort; complex elements compare (`order`).
pub(super) trait Sortable: HostElement + Copy + Default + Send + Sync {
    /// The key type (`u32` for elements of 32 bits or fewer, else `u64`); `None` for complex.
    type Key: Copy + Default + Send + Sync + Into<u64>;
    fn key(&self) -> Option<Self::Key>;
    fn order(&self, other: &Self) -> Ordering;
}

macro_rules! ordered_ints {
    ($($t:ty => $u:ty => $k:ty, $flip:expr);*) => {$(
        impl Sortable for $t {
            type Key = $k;
            /// The bits as unsigned of the same width, the sign bit flipped for signed types.
            fn key(&self) -> Option<$k> {
                Some((*self as $u as $k) ^ $flip)
            }
            fn order(&self, other: &Self) -> Ordering {
                self.cmp(other)
            }
        }
    )*};
}
ordered_ints!(i8 => u8 => u32, 0x80; i16 => u16 => u32, 0x8000; i32 => u32 => u32, 0x8000_0000; i64 => u64 => u64, 1 << 63;
    u8 => u8 => u32, 0; u16 => u16 => u32, 0; u32 => u32 => u32, 0; u64 => u64 => u64, 0);

impl Sortable for bool {
    type Key = u32;
    fn key(&self) -> Option<u32> {
        Some(*self as u32)
    }
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

/// The order-preserving key of a float32: negative values' bits inverted, positive values'
/// sign bit set; -0.0 as 0.0, NaN above +inf.
fn f32_key(x: f32) -> u32 {
    if x.is_nan() {
        return u32::MAX;
    }
    let b = (x + 0.0).to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 1 << 31
    }
}

macro_rules! ordered_as_f32 {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            type Key = u32;
            fn key(&self) -> Option<u32> {
                Some(f32_key(f32::from(*self)))
            }
            fn order(&self, other: &Self) -> Ordering {
                float_order(f64::from(*self), f64::from(*other))
            }
        }
    )*};
}
ordered_as_f32!(f16, bf16, f32);

impl Sortable for f64 {
    type Key = u64;
    fn key(&self) -> Option<u64> {
        if self.is_nan() {
            return Some(u64::MAX);
        }
        let b = (self + 0.0).to_bits();
        Some(if b >> 63 == 1 { !b } else { b | 1 << 63 })
    }
    fn order(&self, other: &Self) -> Ordering {
        float_order(*self, *other)
    }
}

macro_rules! ordered_as_complex {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            type Key = u32;
            fn key(&self) -> Option<u32> {
                None
            }
            fn order(&self, other: &Self) -> Ordering {
                complex_order(Complex64::new(self.re.into(), self.im.into()), Complex64::new(other.re.into(), other.im.into()))
            }
        }
    )*};
}
ordered_as_complex!(Complex32, Complex64);

/// Sorts `keys` stably, `payload` moved with them: least significant byte first, a pass per
/// byte of `K`, skipping bytes every key shares. A long line is cut into one chunk per thread:
/// each pass counts each chunk's digits in parallel, then each chunk moves its elements to the
/// slots after those of lower digits and of earlier chunks with its digit (so the order of
/// equal keys is kept), in parallel.
fn radix_sort<K, P>(keys: &mut Vec<K>, payload: &mut Vec<P>)
where
    K: Copy + Default + Into<u64> + Send + Sync,
    P: Copy + Default + Send + Sync,
{
    let n = keys.len();
    let chunks = if n >= PARALLEL_RADIX { rayon::current_num_threads().max(1) } else { 1 };
    let per = n.div_ceil(chunks).max(1);
    let (mut k2, mut p2) = (vec![K::default(); n], vec![P::default(); n]);
    for shift in (0..8 * std::mem::size_of::<K>()).step_by(8) {
        let digit = move |k: &K| ((*k).into() >> shift) as usize & 0xFF;
        let counts: Vec<[usize; 256]> = keys
            .par_chunks(per)
            .map(|c| {
                let mut h = [0usize; 256];
                c.iter().for_each(|k| h[digit(k)] += 1);
                h
            })
            .collect();
        let mut total = [0usize; 256];
        for h in &counts {
            for (t, c) in total.iter_mut().zip(h) {
                *t += c;
            }
        }
        if total.contains(&n) {
            continue;
        }
        // Chunk c's first slot for digit d: every element of a lower digit, then those of d in
        // earlier chunks.
        let mut starts = vec![[0usize; 256]; counts.len()];
        let mut sum = 0;
        for d in 0..256 {
            for (c, h) in counts.iter().enumerate() {
                starts[c][d] = sum;
                sum += h[d];
            }
        }
        let (kd, pd) = (Slots(k2.as_mut_ptr()), Slots(p2.as_mut_ptr()));
        keys.par_chunks(per).zip(payload.par_chunks(per)).zip(starts).for_each(
            |((kc, pc), mut at)| {
                let (kd, pd) = (&kd, &pd);
                for (k, p) in kc.iter().zip(pc) {
                    let d = digit(k);
                    // SAFETY: `at[d]` runs over this chunk's own slots for digit `d` (disjoint from
                    // every other chunk's and digit's by the prefix sums above, all below `n`), so
                    // each slot of `k2`/`p2` (both `n` long) is written by exactly one thread once.
                    unsafe {
                        kd.0.add(at[d]).write(*k);
                        pd.0.add(at[d]).write(*p);
                    }
                    at[d] += 1;
                }
            },
        );
        std::mem::swap(keys, &mut k2);
        std::mem::swap(payload, &mut p2);
    }
}

/// Lines at least this long are radix-sorted by all threads.
const PARALLEL_RADIX: usize = 1 << 16;

/// A buffer's base pointer shared by the threads of a radix pass, which write disjoint slots.
struct Slots<T>(*mut T);
// SAFETY: the threads of a pass write disjoint slots through it (see `radix_sort`) and nothing
// reads the buffer until the pass has joined.
unsafe impl<T: Send> Sync for Slots<T> {}

/// One line sorted: its elements (`argsort` false) or their positions, by keys where the
/// dtype has them, else by comparison (stable either way).
fn sort_line<T: Sortable>(line: &[T], argsort: bool) -> (Vec<T>, Vec<i64>) {
    let keys: Option<Vec<T::Key>> = line.iter().map(|v| v.key()).collect();
    match keys {
        // The elements themselves move with their keys (their own bits: -0.0, NaN payloads).
        Some(mut keys) if line.len() > 64 && !argsort => {
            let mut vals = line.to_vec();
            radix_sort(&mut keys, &mut vals);
            (vals, Vec::new())
        }
        Some(mut keys) if line.len() > 64 => {
            let mut pos: Vec<u32> = (0..line.len() as u32).collect();
            radix_sort(&mut keys, &mut pos);
            (Vec::new(), pos.into_iter().map(i64::from).collect())
        }
        _ if argsort => {
            let mut pos: Vec<i64> = (0..line.len() as i64).collect();
            pos.sort_by(|&a, &b| line[a as usize].order(&line[b as usize]));
            (Vec::new(), pos)
        }
        _ => {
            let mut v = line.to_vec();
            v.sort_by(T::order);
            (v, Vec::new())
        }
    }
}

/// Runs a sort region (see the module docs) on `inputs`.
///
/// Errors: a region that is not one `sort`/`argsort`/`sort_take`/`argtopk` node, an evaluation
/// error of its operand's views.
pub fn run_region(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, ExecError> {
    let body = &region.body;
    let invalid = |why: &str| ExecError::InvalidInput(format!("sort region: {why}"));
    let [out] = body.outputs() else { return Err(invalid("several outputs")) };
    let node = body.node(*out);
    if let (OpKind::Argtopk, Attrs::TopK { axis, k, largest }) = (node.op, &node.attrs) {
        let x = operand(body, inputs, node.inputs[0])?;
        let out = super::select::argtopk(&x, *axis, *k, *largest);
        return Ok(vec![out.map_err(|e| invalid(&e.to_string()))?]);
    }
    let (OpKind::Sort | OpKind::Argsort | OpKind::SortTake, Attrs::Axis { axis }) =
        (node.op, &node.attrs)
    else {
        return Err(invalid("its output is not a sort"));
    };
    let x = operand(body, inputs, node.inputs[0])?;
    if node.op == OpKind::SortTake {
        let k = operand(body, inputs, node.inputs[1])?;
        let out = super::select::sort_take(&x, &k, *axis).map_err(|e| invalid(&e.to_string()))?;
        return Ok(vec![out]);
    }
    let argsort = node.op == OpKind::Argsort;
    let shape = x.shape().to_vec();
    let out = with_data!(x.data(), v => sort_lines(v, &shape, *axis, argsort));
    Ok(vec![out.map_err(|e| invalid(&e.to_string()))?])
}

/// An operand of a sort region's node: a region input, else its views computed by the
/// evaluator.
fn operand<'a>(
    body: &kiln_ir::Graph,
    inputs: &[&'a HostArray],
    id: kiln_ir::NodeId,
) -> Result<std::borrow::Cow<'a, HostArray>, ExecError> {
    match body.node(id).attrs {
        Attrs::Input { index } => Ok(std::borrow::Cow::Borrowed(
            *inputs
                .get(index as usize)
                .ok_or_else(|| ExecError::InvalidInput("sort region: a missing input".into()))?,
        )),
        _ => {
            let mut g = body.clone();
            g.set_outputs(vec![id]);
            Ok(std::borrow::Cow::Owned(kiln_ir::eval::evaluate(&g, inputs)?.remove(0)))
        }
    }
}

/// The lines of `vals` (C order, of `shape`) along `axis` sorted, or their sorting positions.
fn sort_lines<T: Sortable>(
    vals: &[T],
    shape: &[usize],
    axis: usize,
    argsort: bool,
) -> kiln_ir::Result<HostArray> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    if n == 0 || outer * inner == 0 {
        return if argsort {
            HostArray::from_vec(shape, Vec::<i64>::new())
        } else {
            HostArray::from_vec(shape, vals.to_vec())
        };
    }
    // Each line contiguous (a copy when the axis is not the last).
    let lines: Vec<T> = if inner == 1 {
        vals.to_vec()
    } else {
        let mut l = Vec::with_capacity(vals.len());
        for o in 0..outer {
            for i in 0..inner {
                l.extend((0..n).map(|k| vals[(o * n + k) * inner + i]));
            }
        }
        l
    };
    // Back to C order of `shape` from lines.
    fn unline<U: Copy>(lines: Vec<U>, n: usize, inner: usize, outer: usize) -> Vec<U> {
        if inner == 1 {
            return lines;
        }
        let mut out = lines.clone();
        for o in 0..outer {
            for i in 0..inner {
                for k in 0..n {
                    out[(o * n + k) * inner + i] = lines[(o * inner + i) * n + k];
                }
            }
        }
        out
    }
    // Lines in parallel (a line of 2^32 or more elements sorts by comparison).
    let lines_out: Vec<(Vec<T>, Vec<i64>)> = if n >= 1 << 32 {
        lines
            .par_chunks(n)
            .map(|l| {
                let mut pos: Vec<i64> = (0..n as i64).collect();
                pos.par_sort_by(|&a, &b| l[a as usize].order(&l[b as usize]));
                let vals =
                    if argsort { Vec::new() } else { pos.iter().map(|&p| l[p as usize]).collect() };
                (vals, if argsort { pos } else { Vec::new() })
            })
            .collect()
    } else {
        lines.par_chunks(n).map(|l| sort_line(l, argsort)).collect()
    };
    if argsort {
        let idx: Vec<i64> = lines_out.into_iter().flat_map(|(_, p)| p).collect();
        HostArray::from_vec(shape, unline(idx, n, inner, outer))
    } else {
        let vals: Vec<T> = lines_out.into_iter().flat_map(|(v, _)| v).collect();
        HostArray::from_vec(shape, unline(vals, n, inner, outer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys order as the values, for every real dtype's extremes, signed zeros and NaN.
    #[test]
    fn keys_order_as_numpy_orders() {
        fn check<T: Sortable + std::fmt::Debug>(vals: &[T]) {
            for a in vals {
                for b in vals {
                    let by_key = a.key().unwrap().into().cmp(&b.key().unwrap().into());
                    assert_eq!(by_key, a.order(b), "{a:?} vs {b:?}");
                }
            }
        }
        check(&[i8::MIN, -1, 0, 1, i8::MAX]);
        check(&[i16::MIN, -300, 0, 300, i16::MAX]);
        check(&[i32::MIN, -1, 0, 7, i32::MAX]);
        check(&[i64::MIN, -1, 0, 1 << 40, i64::MAX]);
        check(&[0u8, 1, 200, 255]);
        check(&[0u64, 1, u64::MAX]);
        check(&[false, true]);
        check(&[
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            2.0,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ]);
        check(&[f64::NEG_INFINITY, -1e300, -0.0, 0.0, 5e-324, 1.0, f64::INFINITY, f64::NAN]);
        check(&[
            f16::NEG_INFINITY,
            f16::from_f32(-2.0),
            f16::from_f32(-0.0),
            f16::ZERO,
            f16::ONE,
            f16::NAN,
        ]);
    }

    /// The radix sort is stable: equal keys keep their order, on one thread and on several
    /// (a line of 2^17, cut into chunks), with 32- and 64-bit keys.
    #[test]
    fn radix_sort_is_stable() {
        for n in [1000u32, 1 << 17] {
            let mut keys: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761) % 1013).collect();
            let mut pos: Vec<u32> = (0..n).collect();
            let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(pos.iter().copied()).collect();
            want.sort_by_key(|&(k, _)| k);
            radix_sort(&mut keys, &mut pos);
            assert_eq!(keys.into_iter().zip(pos).collect::<Vec<_>>(), want);
        }
        let mut keys: Vec<u64> =
            (0..1u64 << 17).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20).collect();
        let mut pos: Vec<u32> = (0..1 << 17).collect();
        let mut want: Vec<(u64, u32)> = keys.iter().copied().zip(pos.iter().copied()).collect();
        want.sort_by_key(|&(k, _)| k);
        radix_sort(&mut keys, &mut pos);
        assert_eq!(keys.into_iter().zip(pos).collect::<Vec<_>>(), want);
    }
}

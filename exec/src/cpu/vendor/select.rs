//! `sort_take` regions on the host: each line's elements at sorted positions `k`, by selection
//! rather than a sort. Real lines select on (order-preserving key, position) pairs with
//! `select_nth_unstable` (the pairs are distinct, so the element found is exactly the one the
//! stable sort puts at the position: NaN last, ±0 in their order); complex lines sort their
//! positions stably. Lines in parallel (rayon).

use kiln_ir::{with_data, HostArray};
use rayon::prelude::*;

use super::sort::Sortable;

/// The offsets of `shape`'s C-order strides, 0 along axes of extent 1 other than `axis` (a
/// broadcast `k`).
fn broadcast_strides(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut s = 1;
    for d in (0..shape.len()).rev() {
        strides[d] = if shape[d] == 1 && d != axis { 0 } else { s };
        s *= shape[d];
    }
    strides
}

/// `sort_take(x, k)` along `axis` (see [`kiln_ir::OpKind::SortTake`]): `k` int64 of `x`'s rank,
/// any extent along `axis`, each other extent 1 or `x`'s.
pub(super) fn sort_take(x: &HostArray, k: &HostArray, axis: usize) -> kiln_ir::Result<HostArray> {
    let ks = k.as_slice::<i64>()?;
    with_data!(x.data(), v => select_lines(v, x.shape(), axis, ks, k.shape()))
}

fn select_lines<T: Sortable>(
    vals: &[T],
    shape: &[usize],
    axis: usize,
    k: &[i64],
    k_shape: &[usize],
) -> kiln_ir::Result<HostArray> {
    let n = shape[axis];
    let m = k_shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = m;
    if n == 0 || m == 0 || outer * inner == 0 {
        return HostArray::from_vec(&out_shape, Vec::<T>::new());
    }
    let k_strides = broadcast_strides(k_shape, axis);
    // k's offset of line (o, i): its multi-index but along `axis`.
    let k_base = |o: usize, i: usize| -> usize {
        let (mut o, mut i, mut at) = (o, i, 0);
        for d in (axis + 1..shape.len()).rev() {
            at += (i % shape[d]) * k_strides[d];
            i /= shape[d];
        }
        for d in (0..axis).rev() {
            at += (o % shape[d]) * k_strides[d];
            o /= shape[d];
        }
        at
    };
    let out = per_line(outer, inner, m, |o, i| {
        let base = k_base(o, i);
        let ks: Vec<usize> =
            (0..m).map(|j| k[base + j * k_strides[axis]].rem_euclid(n as i64) as usize).collect();
        if inner == 1 {
            select_line(&vals[o * n..(o + 1) * n], &ks)
        } else {
            let line: Vec<T> = (0..n).map(|j| vals[(o * n + j) * inner + i]).collect();
            select_line(&line, &ks)
        }
    });
    HostArray::from_vec(&out_shape, out)
}

/// Each line `(o, i)` of `outer × inner` lines computed by `f` in parallel (rayon), its `m`
/// results written along the axis of an `outer × m × inner` array.
fn per_line<U: Copy + Default + Send>(
    outer: usize,
    inner: usize,
    m: usize,
    f: impl Fn(usize, usize) -> Vec<U> + Sync,
) -> Vec<U> {
    let picked: Vec<Vec<U>> =
        (0..outer * inner).into_par_iter().map(|l| f(l / inner, l % inner)).collect();
    let mut out = vec![U::default(); outer * m * inner];
    for (l, p) in picked.into_iter().enumerate() {
        let (o, i) = (l / inner, l % inner);
        for (j, v) in p.into_iter().enumerate() {
            out[(o * m + j) * inner + i] = v;
        }
    }
    out
}

/// The elements of `line` at its sorted positions `ks` (each below the line's length).
fn select_line<T: Sortable>(line: &[T], ks: &[usize]) -> Vec<T> {
    if line[0].key().is_none() {
        let mut pos: Vec<usize> = (0..line.len()).collect();
        pos.sort_by(|&a, &b| line[a].order(&line[b]));
        return ks.iter().map(|&k| line[pos[k]]).collect();
    }
    let mut pairs: Vec<(u64, usize)> = line
        .iter()
        .enumerate()
        .map(|(p, v)| (v.key().expect("a real element").into(), p))
        .collect();
    ks.iter()
        .map(|&k| {
            let (_, &mut (_, p), _) = pairs.select_nth_unstable(k);
            line[p]
        })
        .collect()
}

/// `argtopk(x)` along `axis` (see [`kiln_ir::OpKind::Argtopk`]): each line's positions of its
/// `k` smallest elements (largest: the `k` largest, NaN first), equal elements in line order.
/// A line selects its `k`-th (key, position) pair with `select_nth_unstable`, then sorts the
/// `k` pairs before it (largest: on the keys' complement, so that positions still ascend among
/// equals). Lines in parallel (rayon).
pub(super) fn argtopk(
    x: &HostArray,
    axis: usize,
    k: usize,
    largest: bool,
) -> kiln_ir::Result<HostArray> {
    with_data!(x.data(), v => topk_lines(v, x.shape(), axis, k, largest))
}

fn topk_lines<T: Sortable>(
    vals: &[T],
    shape: &[usize],
    axis: usize,
    k: usize,
    largest: bool,
) -> kiln_ir::Result<HostArray> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = k;
    if k == 0 || outer * inner == 0 {
        return HostArray::from_vec(&out_shape, Vec::<i64>::new());
    }
    let out = per_line(outer, inner, k, |o, i| {
        let at = |j: usize| (o * n + j) * inner + i;
        let mut pairs: Vec<(u64, u32)> = (0..n)
            .map(|j| {
                let key: u64 = vals[at(j)].key().expect("a real element").into();
                (if largest { !key } else { key }, j as u32)
            })
            .collect();
        if k < n {
            pairs.select_nth_unstable(k - 1);
            pairs.truncate(k);
        }
        // The pairs are distinct: the same order every run.
        pairs.sort_unstable();
        pairs.into_iter().map(|(_, p)| i64::from(p)).collect()
    });
    HostArray::from_vec(&out_shape, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// topk's positions agree with a stable sort of the line in either direction.
    #[test]
    fn topk_is_the_stable_sorts_head() {
        let line = [2.0f32, -0.0, 1.0, 0.0, f32::NAN, 1.0, -0.0, f32::NEG_INFINITY, 0.0, f32::NAN];
        let x = HostArray::from_vec(&[line.len()], line.to_vec()).unwrap();
        for largest in [false, true] {
            let mut pos: Vec<i64> = (0..line.len() as i64).collect();
            pos.sort_by(|&a, &b| {
                let c = line[a as usize].order(&line[b as usize]);
                if largest {
                    c.reverse()
                } else {
                    c
                }
            });
            for k in 0..=line.len() {
                let got = argtopk(&x, 0, k, largest).unwrap();
                assert_eq!(got.as_slice::<i64>().unwrap(), &pos[..k], "k {k} largest {largest}");
            }
        }
    }

    /// Selection agrees with a stable sort read at every position, ties and ±0 included.
    #[test]
    fn selection_is_the_stable_sorts_element() {
        let line = [2.0f32, -0.0, 1.0, 0.0, f32::NAN, 1.0, -0.0, f32::NEG_INFINITY, 0.0];
        let mut sorted: Vec<f32> = line.to_vec();
        sorted.sort_by(|a, b| a.order(b));
        let ks: Vec<usize> = (0..line.len()).rev().collect();
        let got = select_line(&line, &ks);
        for (&k, g) in ks.iter().zip(&got) {
            assert_eq!(g.to_bits(), sorted[k].to_bits(), "position {k}");
        }
    }
}

//! Memory order: NumPy's `order=` ([`Order`]), [`Array::copy`], [`Array::asfortranarray`],
//! and the layout an array reports, [`Array::strides`] and [`Array::flags`].
//!
//! # What kiln reports
//!
//! Every buffer kiln holds (a materialised array, in host or device memory) is C-contiguous.
//! An array's layout is the layout of its elements in the buffer it has (materialised) or will
//! have (lazy, once materialised):
//!
//! - an array that is a transpose (one `permute`, or a chain of them) of a `contiguous` copy —
//!   what [`Array::copy`] with [`Order::F`] (or `A`/`K` keeping a Fortran or permuted order),
//!   [`Array::asfortranarray`] and `x.ascontiguousarray().t()` build — is a view of that
//!   copy's buffer, as in NumPy: its strides are the buffer's, permuted. Materialising it
//!   ([`Array::eval`]) materialises the buffer, and the array stays a view of it: its memory is
//!   in the order its strides say (an F-ordered copy is F-ordered in memory; a DLPack export
//!   shares that buffer with those strides). Reading it back ([`Array::to_vec`], printing,
//!   `save_npy`) gives the elements in C order from that buffer. Such an array does not report
//!   [`Array::is_materialized`] (it holds no buffer of its own; its base does);
//! - every other array is C-contiguous: a held value is, and a lazy one (a view such as `x.t()`
//!   included) is materialised into a C-contiguous buffer of its own. Inside an expression a
//!   lazy view is index math and never copied; its strides only matter once it is a buffer.
//!
//! Strides are in bytes, as NumPy's (`ndarray.strides`): a buffer's C strides are its itemsize
//! times the product of the later extents (an axis of extent 1 included), and an empty array's
//! strides are all 0 (NumPy 2).

use std::str::FromStr;
use std::sync::Arc;

use kiln_ir::shape::Layout;
use kiln_ir::{Attrs, OpKind};
use smallvec::SmallVec;

use crate::array::Array;
use crate::error::{value_err, Error, Result};

/// NumPy's `order=` argument of a copy: the memory order of the result's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row-major (C): the last axis varies fastest.
    C,
    /// Column-major (Fortran): the first axis varies fastest.
    F,
    /// `F` when the source is Fortran-contiguous and not C-contiguous, else `C`.
    A,
    /// The source's order of axes in memory, as closely as possible (C for an array kiln lays
    /// out C-contiguously: see the module docs).
    K,
}

impl Order {
    /// NumPy's name of the order: `"C"`, `"F"`, `"A"`, `"K"`.
    pub fn name(self) -> &'static str {
        match self {
            Order::C => "C",
            Order::F => "F",
            Order::A => "A",
            Order::K => "K",
        }
    }

    /// The order named `s` (`"C"`, `"F"`, `"A"`, `"K"`, either case, as NumPy), for op `op`.
    /// Errors: another name ([`Error::Value`], NumPy's message).
    pub fn parse(op: &str, s: &str) -> Result<Order> {
        match s {
            "C" | "c" => Ok(Order::C),
            "F" | "f" => Ok(Order::F),
            "A" | "a" => Ok(Order::A),
            "K" | "k" => Ok(Order::K),
            _ => Err(value_err(
                op,
                format!("order must be one of 'C', 'F', 'A', or 'K' (got '{s}')"),
            )),
        }
    }
}

impl FromStr for Order {
    type Err = Error;

    /// [`Order::parse`], the error naming `order`.
    fn from_str(s: &str) -> Result<Order> {
        Order::parse("order", s)
    }
}

/// The `order` argument: an [`Order`], or its NumPy name (`"F"`) checked by the op.
pub trait IntoOrder {
    /// The order, for op `op`. Errors: a name other than C, F, A, K ([`Order::parse`]).
    fn into_order(self, op: &str) -> Result<Order>;
}

impl IntoOrder for Order {
    fn into_order(self, _: &str) -> Result<Order> {
        Ok(self)
    }
}

impl IntoOrder for &str {
    fn into_order(self, op: &str) -> Result<Order> {
        Order::parse(op, self)
    }
}

/// NumPy's `ndarray.flags`, the ones meaningful for kiln's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `C_CONTIGUOUS`: the elements are in C order in memory (axes of extent 1 ignored).
    pub c_contiguous: bool,
    /// `F_CONTIGUOUS`: the elements are in Fortran order in memory (axes of extent 1 ignored).
    pub f_contiguous: bool,
    /// `OWNDATA`: the array has (or, lazy, will have) a buffer no other array handle reads: false
    /// for a transpose of a copy another handle holds (`y.t()` for a `y` you keep) or a view of
    /// a view (`f.t()` for an F-ordered `f`), true otherwise.
    pub owndata: bool,
}

/// The buffer an array is a view of: a `contiguous` node, and the view's axis `k` as the base's
/// axis `perm[k]`.
pub(crate) struct Over {
    pub(crate) base: Array,
    perm: SmallVec<[usize; 4]>,
    /// One `permute` over a base no other handle holds.
    owns: bool,
}

impl Over {
    /// The view's axes from slowest to fastest in the buffer: the base's axis `j` is the view's
    /// axis `k` with `perm[k] = j`.
    fn memory_order(&self) -> SmallVec<[usize; 4]> {
        let mut m: SmallVec<[usize; 4]> = SmallVec::from_elem(0, self.perm.len());
        for (k, &j) in self.perm.iter().enumerate() {
            m[j] = k;
        }
        m
    }
}

/// `a` laid out in memory as `like` (of the same shape) is: `a` itself when `like` is
/// C-contiguous in a buffer of its own, else a copy of `a` in `like`'s order of axes (one kernel
/// with what computes `a`).
pub(crate) fn laid_out_as(a: &Array, like: &Array) -> Result<Array> {
    match over(like) {
        Some(o) => a.copy_in(&o.memory_order()),
        None => Ok(a.clone()),
    }
}

/// `a` as a view of a `contiguous` copy's buffer (see the module docs), `None` for an array
/// laid out C-contiguously in a buffer of its own.
pub(crate) fn over(a: &Array) -> Option<Over> {
    if a.e.op != OpKind::Permute || a.is_materialized() {
        return None;
    }
    let mut perm: SmallVec<[usize; 4]> = (0..a.ndim()).collect();
    let mut cur = a;
    let mut depth = 0;
    while cur.e.op == OpKind::Permute && !cur.is_materialized() {
        let Attrs::Perm { perm: p } = &cur.e.attrs else { return None };
        perm = perm.iter().map(|&k| p[k]).collect();
        cur = &cur.e.inputs[0];
        depth += 1;
    }
    (cur.e.op == OpKind::Contiguous).then(|| Over {
        owns: depth == 1 && Arc::strong_count(&cur.e) == 1,
        base: cur.clone(),
        perm,
    })
}

/// The arrays whose buffers hold `arrays`: a view of a copy's buffer replaced by that copy (once
/// each); `None` when there is none to replace.
pub(crate) fn buffers(arrays: &[&Array]) -> Option<Vec<Array>> {
    if !arrays.iter().any(|a| over(a).is_some()) {
        return None;
    }
    let mut out: Vec<Array> = Vec::with_capacity(arrays.len());
    for a in arrays {
        let b = over(a).map_or_else(|| (*a).clone(), |o| o.base);
        if !out.iter().any(|x| x.same_expr(&b)) {
            out.push(b);
        }
    }
    Some(out)
}

/// For a view of a copy's buffer, a C-contiguous copy of it to read its elements through (not
/// kept: the view holds no buffer of its own).
pub(crate) fn c_order_reader(a: &Array) -> Option<Array> {
    over(a).map(|_| crate::unwrap(Array::apply(OpKind::Contiguous, Attrs::None, &[a])))
}

/// NumPy's C strides of a buffer of `shape`, in elements: the product of the later extents.
fn c_strides(shape: &[usize]) -> SmallVec<[isize; 4]> {
    let mut s: SmallVec<[isize; 4]> = SmallVec::from_elem(0, shape.len());
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i] as isize;
    }
    s
}

impl Array {
    /// The layout of the elements in the array's buffer, strides in elements (module docs).
    pub(crate) fn memory_layout(&self) -> Layout {
        let strides = if self.size() == 0 {
            SmallVec::from_elem(0, self.ndim())
        } else {
            match over(self) {
                Some(o) => {
                    let bs = c_strides(o.base.shape());
                    o.perm.iter().map(|&p| bs[p]).collect()
                }
                None => c_strides(self.shape()),
            }
        };
        Layout { shape: self.shape().into(), strides, offset: 0 }
    }

    /// `ndarray.strides`: the bytes from one element to the next along each axis, in the
    /// buffer the array has or will have when materialised (the module docs say which):
    /// `(96, 32, 8)` for a C-ordered float64 `(2, 3, 4)`, `(8, 16, 48)` for its F-ordered copy;
    /// all 0 for an empty array.
    pub fn strides(&self) -> Vec<isize> {
        let item = self.dtype().itemsize() as isize;
        self.memory_layout().strides.iter().map(|s| s * item).collect()
    }

    /// `ndarray.flags`: `c_contiguous`, `f_contiguous` (NumPy's rules: axes of extent 1 and
    /// empty arrays ignore strides, so a 1-D array is both) and `owndata`, of the buffer the
    /// array has or will have when materialised (module docs).
    pub fn flags(&self) -> Flags {
        let l = self.memory_layout();
        Flags {
            c_contiguous: l.is_c_contiguous(),
            f_contiguous: l.is_f_contiguous(),
            owndata: over(self).is_none_or(|o| o.owns),
        }
    }

    /// `x.copy(order=order)` / `np.array(x, order=order)`: a copy whose buffer is in `order`
    /// (an [`Order`] or its name): `C` row-major, `F` column-major, `A` F when `x` is
    /// Fortran-contiguous and not C-contiguous (else C), `K` `x`'s order of axes in memory
    /// (NumPy's `np.copy` default). Shape and dtype are `x`'s; values too. A copy in an order
    /// other than C is a transpose of a C-contiguous copy of `x` transposed, whose buffer is the
    /// result's memory ([`Array::strides`] and [`Array::flags`] report it; module docs).
    ///
    /// Errors: an order name other than C, F, A, K (either case) ([`Error::Value`] naming
    /// `copy`: "order must be one of 'C', 'F', 'A', or 'K' (got 'X')").
    pub fn try_copy(&self, order: impl IntoOrder) -> Result<Array> {
        let order = order.into_order("copy")?;
        let identity = || (0..self.ndim()).collect::<SmallVec<[usize; 4]>>();
        let fortran = || (0..self.ndim()).rev().collect::<SmallVec<[usize; 4]>>();
        // The axes of `self` from slowest to fastest in the copy's memory.
        let memory: SmallVec<[usize; 4]> = match order {
            Order::C => identity(),
            Order::F => fortran(),
            Order::A => {
                let f = self.flags();
                if f.f_contiguous && !f.c_contiguous {
                    fortran()
                } else {
                    identity()
                }
            }
            Order::K => over(self).map_or_else(identity, |o| o.memory_order()),
        };
        self.copy_in(&memory)
    }

    /// `x.copy(order=order)`. Panics where [`Array::try_copy`] errs.
    #[track_caller]
    pub fn copy(&self, order: impl IntoOrder) -> Array {
        crate::unwrap(self.try_copy(order))
    }

    /// A copy whose buffer holds `self`'s axes `memory[0]` (slowest) .. `memory[n-1]` (fastest):
    /// `contiguous(permute(self, memory))` seen through the inverse permutation.
    fn copy_in(&self, memory: &[usize]) -> Result<Array> {
        let to_memory: Vec<i64> = memory.iter().map(|&k| k as i64).collect();
        let base =
            Array::apply(OpKind::Contiguous, Attrs::None, &[&self.try_permute(&to_memory)?])?;
        let mut back = vec![0i64; memory.len()];
        for (j, &k) in memory.iter().enumerate() {
            back[k] = j as i64;
        }
        base.try_permute(&back)
    }

    /// `np.asfortranarray(x)`: `x` itself when it is already Fortran-contiguous (rank 0 or 1,
    /// at most one axis of extent above 1, or an F-ordered copy), else [`Array::copy`] in
    /// [`Order::F`]: its buffer column-major (`strides` `(8, 16, 48)` for a float64
    /// `(2, 3, 4)`). Shape, dtype and values are `x`'s.
    pub fn asfortranarray(&self) -> Array {
        if self.flags().f_contiguous {
            return self.clone();
        }
        crate::unwrap(self.try_copy(Order::F))
    }
}

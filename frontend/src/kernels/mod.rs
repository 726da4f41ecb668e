//! CuPy's user-defined kernels, traced into kiln's lazy graph: [`ElementwiseKernel`],
//! [`ReductionKernel`] and [`fuse`]; and CuPy's raw kernels, CUDA C++ launched as written on the
//! GPU: [`RawKernel`] and [`RawModule`] (see [`raw`]).
//!
//! A kernel's C-like code is parsed once (a recursive-descent parser with positions: errors give
//! line and column) and traced at each call into ordinary graph nodes, so a user kernel fuses
//! with what surrounds it like any other operation. Its results carry a `label` node with the
//! kernel's name, which the region dumps and the fusion report show.
//!
//! # The subset of CUDA C++
//! - Declarations `T diff = x - y;`, `const float c = 2.f;`, `auto t = x * x;` with C types
//!   (`bool`, `char`, `short`, `int`, `long`, `long long`, their `unsigned` forms, `intN_t`,
//!   `size_t`, `ptrdiff_t`, `float`, `double`, `half`/`float16`, `complex<float>` ...) or the
//!   parameter lists' placeholders; assignments (`=`, `+=`, ..., `++`, `--`).
//! - Arithmetic, comparison, logical and bitwise operators with C++'s conversions and integer
//!   semantics (truncating `/` and `%`), the ternary, casts (`(T)x`, `T(x)`, `static_cast<T>(x)`).
//! - `if`/`else` (an array condition traces both branches and selects), `for` loops whose trip
//!   count is known when the kernel is traced (unrolled, at most [`MAX_UNROLL`] iterations).
//! - CUDA's math functions with CUDA's overloads (`float` for `float`, `double` for `double` and
//!   integers): `sin`, `exp`, `sqrt`, `rsqrt`, `pow`, `fma`, `min`, `max`, `abs`, `fabs`,
//!   `floor`, `round`, `erf`, `atan2`, `hypot`, `isnan` ... and the `f`-suffixed forms; constants
//!   `INFINITY`, `NAN`, `FLT_MAX`, `INT_MAX`, `M_PI` ... Results are correctly rounded (the
//!   reference evaluator's) where CUDA's are within a few ulps; `fma` rounds twice (kiln has no
//!   fused multiply-add; `float` operands compute in `double`, so once more at most); `min`/`max`
//!   of floats skip a NaN as `fminf`/`fmaxf` do.
//! - `i` (the element's C-order position in the loop) and `_ind.size()`; raw arguments indexed
//!   by a flat position in C order (`y[_ind.size() - i - 1]`, a `take` node; out-of-range
//!   positions wrap, as `cupy.take` does, where CUDA would read out of bounds) or by a local
//!   array of one index per dimension (`ptrdiff_t at[] = {r, c}; y[at]`), their `y.size()`,
//!   `y.shape()[k]` and `y.strides()[k]` (bytes, C order: kiln hands raw arguments over
//!   contiguous).
//! - Raw output parameters (`'raw T z'`) written by position, `z[k] = v` (`+=`, `++` ...): one
//!   IR `scatter` for the whole loop; positions wrap; where two elements write one position the
//!   later in the loop's C order wins (CUDA's threads race); under an `if` on arrays a write
//!   applies where its conditions hold. A raw output starts as its output argument, or with
//!   `size=` as `size` zeros (CuPy's are uninitialised); without either it is CuPy's "output
//!   array size is undecided" error. (A `ReductionKernel`'s outputs cannot be raw.)
//! - Local arrays of a known length, `int w[4] = {1, 2};` (zeros after the list, as C++), read
//!   and written at known positions or at positions that are arrays (a select per element).
//! - A preamble of `__device__` functions (templates too), inlined where called.
//!
//! Outside it, with an error naming the construct: `while`/`do` loops, `break`, `continue`,
//! `switch`, pointers and references, arrays of arrays, writes to raw inputs, `return` in a
//! kernel body, `sizeof`, preprocessor directives, strings, and functions not in the list
//! above.

mod ast;
mod bind;
mod builtins;
mod ctypes;
mod diag;
mod elementwise;
mod fuse;
mod fuse_direct;
#[doc(hidden)]
pub mod fuzzing;
mod inline;
mod lexer;
mod params;
mod parser;
mod positions;
pub mod raw;
mod reduction;
mod template;
mod trace;
mod values;

pub use elementwise::{CallOptions, ElementwiseKernel};
pub(crate) use fuse::check_not_traced;
pub use fuse::{fuse, FuseOutput, Fused};
pub use raw::{Dim3, RawArg, RawKernel, RawModule};
pub use reduction::ReductionKernel;
pub use trace::MAX_UNROLL;

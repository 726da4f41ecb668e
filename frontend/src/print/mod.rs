//! Printing arrays as NumPy 2 does: `Display` is `str(a)` (`[[0.5 1. ] ...]`), `Debug` is
//! `repr(a)` (`array([[0.5, 1. ], ...], dtype=float32)`), under [`PrintOptions`] (NumPy's
//! `set_printoptions`).
//!
//! The rules are NumPy's `arrayprint.py` (`array2string`, `FloatingFormat`, `IntegerFormat`,
//! `BoolFormat`, `ComplexFloatingFormat`, `_formatArray`, `array_repr`, `array_str`) and its
//! float printing, Dragon4 (`dragon4.c`, after Ryan Juckett), ported here so that every digit,
//! rounding and pad is the same:
//! - floats print the shortest digits that identify the value in its own dtype (float16 and
//!   float32 have fewer), at most `precision` (8) after the point (`floatmode`); integral values
//!   keep the point (`1.`); columns are padded to align; `nan`/`inf` as NumPy spells them;
//! - scientific notation when the largest magnitude is at least 1e3 (float16), 1e6 (float32) or
//!   1e8 (float64), or, unless `suppress`, the smallest is below 1e-4 or the ratio of largest to
//!   smallest is above 1e3 (NumPy 2.3's per-dtype cutoff; the comparisons in the array's dtype,
//!   the thresholds rounded to it, as NumPy's weak Python floats are);
//! - arrays of more than `threshold` (1000) elements are summarised: `edgeitems` (3) at each end
//!   of every axis around `...`, and `repr` adds `shape=(...)`;
//! - lines wrap at `linewidth` (75) with NumPy's hanging indent; axes are separated by one
//!   blank line per axis below the innermost;
//! - `repr` adds `dtype=` unless the dtype is float64, int64, complex128 or bool (NumPy's
//!   `_typelessdata` on Linux), and always for empty arrays, which also show `shape=` unless 1-D;
//! - a 0-d array's `str` is its scalar's (`1.5`, `1e+20`, `(1+2j)`, `True`), its `repr`
//!   `array(1.5)` (as `repr(np.array(1.5))`).
//!
//! bfloat16 has no NumPy dtype: its values print as the same values in float32 would (they are
//! float32 values: shortest float32 digits, float32's cutoffs), with `dtype=bfloat16`.
//!
//! Printing a lazy array materialises it (as [`Array::try_to_host`]); when that fails the text is
//! the error's, never a panic. [`Array::describe`] gives the expression's description without
//! computing anything.

use std::cell::RefCell;
use std::fmt;
use std::sync::RwLock;

use half::{bf16, f16};
use kiln_ir::shape::ShapeDisplay;
use kiln_ir::{DType, Data, HostArray};
use num_complex::Complex;

use crate::array::Array;
use crate::error::Result;

/// How `precision` is read for floats (NumPy's `floatmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FloatMode {
    /// Exactly `precision` digits after the point, always.
    Fixed,
    /// The shortest digits that identify each value; `precision` is ignored.
    Unique,
    /// At most `precision` digits, fewer where they identify the value (NumPy's default).
    #[default]
    MaxPrec,
    /// At most `precision` digits, the same number for every element.
    MaxPrecEqual,
}

/// The sign of positive values (NumPy's `sign`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sign {
    /// `-`: no sign on positive values.
    #[default]
    Minus,
    /// `+`: `+` on positive values.
    Plus,
    /// `' '`: a space where the sign of a positive value would be.
    Space,
}

/// NumPy's print options (`np.set_printoptions`), with its defaults (`Default`).
///
/// Set process-wide with [`set_printoptions`] (global, not thread-local: every thread that
/// prints sees it), or for one closure on the current thread with [`with_printoptions`] (NumPy's
/// `with np.printoptions(...)`), which wins over the global setting. `format!("{:.3}", a)` (a
/// Rust precision) overrides `precision` for that one call.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintOptions {
    /// Digits after the point of floats (8).
    pub precision: usize,
    /// Arrays of more elements than this are summarised (1000).
    pub threshold: usize,
    /// Items kept at each end of each axis when summarising (3).
    pub edgeitems: usize,
    /// Characters per line before wrapping (75).
    pub linewidth: usize,
    /// Never switch to scientific notation for small values or a large spread (false).
    pub suppress: bool,
    /// How NaN is written (`nan`).
    pub nanstr: String,
    /// How infinity is written (`inf`).
    pub infstr: String,
    /// The sign of positive numbers ([`Sign::Minus`]).
    pub sign: Sign,
    /// How `precision` is read ([`FloatMode::MaxPrec`]).
    pub floatmode: FloatMode,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            precision: 8,
            threshold: 1000,
            edgeitems: 3,
            linewidth: 75,
            suppress: false,
            nanstr: "nan".into(),
            infstr: "inf".into(),
            sign: Sign::Minus,
            floatmode: FloatMode::MaxPrec,
        }
    }
}

/// The process-wide options; `None` until set (the defaults).
static GLOBAL: RwLock<Option<PrintOptions>> = RwLock::new(None);

thread_local! {
    /// Options of [`with_printoptions`] scopes on this thread, innermost last.
    static SCOPED: RefCell<Vec<PrintOptions>> = const { RefCell::new(Vec::new()) };
}

/// Sets the print options of the whole process (`np.set_printoptions`). Global, not
/// thread-local: it applies to every thread, except inside a [`with_printoptions`] scope.
pub fn set_printoptions(options: PrintOptions) {
    *GLOBAL.write().unwrap_or_else(|e| e.into_inner()) = Some(options);
}

/// The print options in effect on this thread (`np.get_printoptions`): the innermost
/// [`with_printoptions`] scope's, else the process-wide ones.
pub fn get_printoptions() -> PrintOptions {
    if let Some(o) = SCOPED.with(|s| s.borrow().last().cloned()) {
        return o;
    }
    GLOBAL.read().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default()
}

/// Runs `f` with `options` in effect on the current thread only (`with np.printoptions(...)`),
/// restoring the previous ones afterwards, also when `f` panics.
pub fn with_printoptions<R>(options: PrintOptions, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            SCOPED.with(|s| s.borrow_mut().pop());
        }
    }
    SCOPED.with(|s| s.borrow_mut().push(options));
    let _pop = Pop;
    f()
}

/// NumPy's `str(a)` (`np.array_str`) under `options`, materialising the array.
pub fn array_str(a: &Array, options: &PrintOptions) -> Result<String> {
    Ok(host_str(&*a.try_to_host()?, options))
}

/// NumPy's `repr(a)` (`np.array_repr`) under `options`, materialising the array.
pub fn array_repr(a: &Array, options: &PrintOptions) -> Result<String> {
    Ok(host_repr(&*a.try_to_host()?, options))
}

/// The options for one `fmt` call: those in effect, with a Rust precision (`{:.3}`) as
/// `precision`.
fn options_for(f: &fmt::Formatter<'_>) -> PrintOptions {
    let mut o = get_printoptions();
    if let Some(p) = f.precision() {
        o.precision = p;
    }
    o
}

impl Array {
    /// `render` of the value under the options of this `fmt` call, or the error when the array
    /// cannot be computed.
    fn print_with(
        &self,
        f: &mut fmt::Formatter<'_>,
        render: fn(&HostArray, &PrintOptions) -> String,
    ) -> fmt::Result {
        match self.try_to_host() {
            Ok(h) => f.write_str(&render(&h, &options_for(f))),
            Err(e) => write!(f, "<{} could not be computed: {e}>", self.describe()),
        }
    }
}

/// `str(a)`: the values, NumPy's `print(a)`. Materialises the array; if that fails, writes the
/// error instead.
impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.print_with(f, host_str)
    }
}

/// `repr(a)`: `array([...], dtype=...)`, as NumPy's. Materialises the array; if that fails,
/// writes the error instead. [`Array::describe`] describes the expression without computing it.
impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.print_with(f, host_repr)
    }
}

// ---------------------------------------------------------------------------------------------
// array_str, array_repr, array2string, _formatArray

/// NumPy's `array_str`: a 0-d array prints as its scalar, others through `array2string`.
pub(crate) fn host_str(h: &HostArray, o: &PrintOptions) -> String {
    let values = Values::of(h.data());
    if h.shape().is_empty() {
        return values.scalar_str(0);
    }
    array2string(h.shape(), &values, o, " ", "", "")
}

/// NumPy's `array_repr`: `array(` + `array2string` + the extras NumPy adds (shape, dtype).
pub(crate) fn host_repr(h: &HostArray, o: &PrintOptions) -> String {
    const PREFIX: &str = "array(";
    let (shape, dtype) = (h.shape(), h.dtype());
    let size: usize = shape.iter().product();
    let body = array2string(shape, &Values::of(h.data()), o, ", ", PREFIX, ")");
    let mut extras = Vec::new();
    if (size == 0 && shape != [0]) || size > o.threshold {
        extras.push(format!("shape={}", ShapeDisplay(shape)));
    }
    let implied = matches!(dtype, DType::Float64 | DType::Int64 | DType::Complex128 | DType::Bool);
    if !implied || size == 0 {
        extras.push(format!("dtype={}", dtype.name()));
    }
    if extras.is_empty() {
        return format!("{PREFIX}{body})");
    }
    let arr = format!("{PREFIX}{body},");
    let extra = format!("{})", extras.join(", "));
    let last_line = width(&arr[arr.rfind('\n').map_or(0, |i| i + 1)..]);
    let spacer = if last_line + width(&extra) + 1 > o.linewidth {
        format!("\n{}", " ".repeat(PREFIX.len()))
    } else {
        " ".to_string()
    };
    format!("{arr}{spacer}{extra}")
}

/// Characters in `s` (Python's `len`).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// NumPy's `array2string` (with `_array2string`): the summarised corners decide the formats,
/// `_formatArray` lays the elements out.
fn array2string(
    shape: &[usize],
    values: &Values,
    o: &PrintOptions,
    separator: &str,
    prefix: &str,
    suffix: &str,
) -> String {
    let size: usize = shape.iter().product();
    if size == 0 {
        return "[]".into();
    }
    let summarise = size > o.threshold;
    let shown = if summarise {
        let mut idx = Vec::new();
        corners(shape, o.edgeitems, 0, 0, &mut idx);
        idx
    } else {
        (0..size).collect()
    };
    let format = ElemFormat::new(values, &shown, shape.is_empty(), o);
    let layout = Layout {
        shape,
        strides: strides(shape),
        elem: &|i| format.format(values, i),
        separator,
        edge_items: o.edgeitems,
        summarise,
    };
    let next_line_prefix = format!(" {}", " ".repeat(width(prefix)));
    let line_width = o.linewidth as i64 - width(suffix) as i64;
    layout.recurse(0, 0, &next_line_prefix, line_width)
}

/// C-order strides, in elements.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

/// NumPy's `_leading_trailing`: the flat indices of the elements a summary shows, in C order.
fn corners(shape: &[usize], edge: usize, axis: usize, offset: usize, out: &mut Vec<usize>) {
    if axis == shape.len() {
        out.push(offset);
        return;
    }
    let stride: usize = shape[axis + 1..].iter().product();
    let n = shape[axis];
    // `a[:edge]` and `a[-edge:]`: with `edge` 0 the second is all of the axis, as in NumPy.
    let keep = |i: usize| n <= 2 * edge || edge == 0 || i < edge || i >= n - edge;
    for i in (0..n).filter(|&i| keep(i)) {
        corners(shape, edge, axis + 1, offset + i * stride, out);
    }
}

/// NumPy's `_formatArray`.
struct Layout<'a> {
    shape: &'a [usize],
    strides: Vec<usize>,
    elem: &'a dyn Fn(usize) -> String,
    separator: &'a str,
    edge_items: usize,
    summarise: bool,
}

impl Layout<'_> {
    fn recurse(&self, axis: usize, offset: usize, hanging_indent: &str, curr_width: i64) -> String {
        let axes_left = self.shape.len() - axis;
        if axes_left == 0 {
            return (self.elem)(offset);
        }
        let next_hanging_indent = format!("{hanging_indent} ");
        let next_width = curr_width - 1;
        let a_len = self.shape[axis];
        let show_summary = self.summarise && 2 * self.edge_items < a_len;
        let (leading, trailing) =
            if show_summary { (self.edge_items, self.edge_items) } else { (0, a_len) };
        let nested = |i: usize| {
            self.recurse(
                axis + 1,
                offset + i * self.strides[axis],
                &next_hanging_indent,
                next_width,
            )
        };
        // The indices NumPy visits after the leading items: the trailing ones, then the last
        // (printed even when `edgeitems` is 0).
        let tail = (a_len - trailing.max(1)..a_len).collect::<Vec<_>>();
        let mut s = String::new();
        if axes_left == 1 {
            let sep_trimmed = self.separator.trim_end();
            let elem_width = curr_width - width(sep_trimmed).max(1) as i64;
            let mut line = hanging_indent.to_string();
            for i in 0..leading {
                extend_line(&mut s, &mut line, &nested(i), elem_width, hanging_indent);
                line.push_str(self.separator);
            }
            if show_summary {
                extend_line(&mut s, &mut line, "...", elem_width, hanging_indent);
                line.push_str(self.separator);
            }
            for (k, &i) in tail.iter().enumerate() {
                extend_line(&mut s, &mut line, &nested(i), elem_width, hanging_indent);
                if k + 1 < tail.len() {
                    line.push_str(self.separator);
                }
            }
            s.push_str(&line);
        } else {
            let line_sep = format!("{}{}", self.separator.trim_end(), "\n".repeat(axes_left - 1));
            for i in 0..leading {
                s.push_str(&format!("{hanging_indent}{}{line_sep}", nested(i)));
            }
            if show_summary {
                s.push_str(&format!("{hanging_indent}...{line_sep}"));
            }
            for (k, &i) in tail.iter().enumerate() {
                s.push_str(hanging_indent);
                s.push_str(&nested(i));
                if k + 1 < tail.len() {
                    s.push_str(&line_sep);
                }
            }
        }
        format!("[{}]", &s[hanging_indent.len()..])
    }
}

/// NumPy's `_extendLine`: `word` onto `line`, the line first moved into `s` if the word would
/// pass `line_width` (unless the line holds only its indent).
fn extend_line(s: &mut String, line: &mut String, word: &str, line_width: i64, indent: &str) {
    let needs_wrap = (width(line) + width(word)) as i64 > line_width && width(line) > width(indent);
    if needs_wrap {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = indent.to_string();
    }
    line.push_str(word);
}

// ---------------------------------------------------------------------------------------------
// Element values and their formats

/// An array's elements as the formats read them, borrowed: integers read one at a time as
/// `i128`, bfloat16 as float32 (only the elements printed are converted).
enum Values<'a> {
    Bool(&'a [bool]),
    /// Any integer dtype.
    Int(&'a Data),
    F16(&'a [f16]),
    BF16(&'a [bf16]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    C64(&'a [Complex<f32>]),
    C128(&'a [Complex<f64>]),
}

impl<'a> Values<'a> {
    fn of(d: &'a Data) -> Values<'a> {
        match d {
            Data::Bool(v) => Values::Bool(v),
            Data::Int8(_)
            | Data::Int16(_)
            | Data::Int32(_)
            | Data::Int64(_)
            | Data::UInt8(_)
            | Data::UInt16(_)
            | Data::UInt32(_)
            | Data::UInt64(_) => Values::Int(d),
            Data::Float16(v) => Values::F16(v),
            Data::BFloat16(v) => Values::BF16(v),
            Data::Float32(v) => Values::F32(v),
            Data::Float64(v) => Values::F64(v),
            Data::Complex64(v) => Values::C64(v),
            Data::Complex128(v) => Values::C128(v),
        }
    }

    /// Integer element `i` of `d` (an integer dtype's data).
    fn int(d: &Data, i: usize) -> i128 {
        match d {
            Data::Int8(v) => v[i].into(),
            Data::Int16(v) => v[i].into(),
            Data::Int32(v) => v[i].into(),
            Data::Int64(v) => v[i].into(),
            Data::UInt8(v) => v[i].into(),
            Data::UInt16(v) => v[i].into(),
            Data::UInt32(v) => v[i].into(),
            Data::UInt64(v) => v[i].into(),
            other => unreachable!("{} is not an integer dtype", other.dtype()),
        }
    }

    /// `str` of element `i` as a NumPy scalar (a 0-d array's `str`).
    fn scalar_str(&self, i: usize) -> String {
        match self {
            Values::Bool(v) => if v[i] { "True" } else { "False" }.into(),
            Values::Int(d) => Values::int(d, i).to_string(),
            Values::F16(v) => scalar_float_str(v[i], Trim::LeaveOneZero, Trim::DptZeros, false),
            Values::BF16(v) => {
                scalar_float_str(v[i].to_f32(), Trim::LeaveOneZero, Trim::DptZeros, false)
            }
            Values::F32(v) => scalar_float_str(v[i], Trim::LeaveOneZero, Trim::DptZeros, false),
            Values::F64(v) => scalar_float_str(v[i], Trim::LeaveOneZero, Trim::DptZeros, false),
            Values::C64(v) => scalar_complex_str(v[i].re, v[i].im),
            Values::C128(v) => scalar_complex_str(v[i].re, v[i].im),
        }
    }
}

/// The format of one array's elements, made from the elements shown.
enum ElemFormat {
    /// `True`/`False`, `True` padded to `False`'s width except in a 0-d array.
    Bool {
        true_str: &'static str,
    },
    /// Integers right-aligned to the widest, with the sign rule.
    Int {
        width: usize,
        sign: Sign,
    },
    Float(FloatFormat),
    Complex {
        re: FloatFormat,
        im: FloatFormat,
    },
}

impl ElemFormat {
    fn new(values: &Values, shown: &[usize], zero_d: bool, o: &PrintOptions) -> ElemFormat {
        fn pick<T: Copy>(v: &[T], shown: &[usize]) -> Vec<T> {
            shown.iter().map(|&i| v[i]).collect()
        }
        /// NumPy's `ComplexFloatingFormat`: a format for the real parts, one for the imaginary
        /// parts (always signed).
        fn complex<T: PrintFloat>(c: &[Complex<T>], o: &PrintOptions) -> ElemFormat {
            let (re, im): (Vec<T>, Vec<T>) = c.iter().map(|z| (z.re, z.im)).unzip();
            ElemFormat::Complex {
                re: FloatFormat::new(&re, o, o.sign),
                im: FloatFormat::new(&im, o, Sign::Plus),
            }
        }
        match values {
            Values::Bool(_) => ElemFormat::Bool { true_str: if zero_d { "True" } else { " True" } },
            Values::Int(d) => {
                int_format(&shown.iter().map(|&i| Values::int(d, i)).collect::<Vec<_>>(), o.sign)
            }
            Values::F16(v) => ElemFormat::Float(FloatFormat::new(&pick(v, shown), o, o.sign)),
            Values::BF16(v) => {
                let f: Vec<f32> = shown.iter().map(|&i| v[i].to_f32()).collect();
                ElemFormat::Float(FloatFormat::new(&f, o, o.sign))
            }
            Values::F32(v) => ElemFormat::Float(FloatFormat::new(&pick(v, shown), o, o.sign)),
            Values::F64(v) => ElemFormat::Float(FloatFormat::new(&pick(v, shown), o, o.sign)),
            Values::C64(v) => complex(&pick(v, shown), o),
            Values::C128(v) => complex(&pick(v, shown), o),
        }
    }

    fn format(&self, values: &Values, i: usize) -> String {
        match (self, values) {
            (ElemFormat::Bool { true_str }, Values::Bool(v)) => {
                if v[i] { true_str } else { "False" }.to_string()
            }
            (ElemFormat::Int { width, sign }, Values::Int(d)) => {
                let x = Values::int(d, i);
                let s = match sign {
                    Sign::Plus if x >= 0 => format!("+{x}"),
                    Sign::Space if x >= 0 => format!(" {x}"),
                    _ => x.to_string(),
                };
                format!("{s:>width$}")
            }
            (ElemFormat::Float(f), Values::F16(v)) => f.format(v[i]),
            (ElemFormat::Float(f), Values::BF16(v)) => f.format(v[i].to_f32()),
            (ElemFormat::Float(f), Values::F32(v)) => f.format(v[i]),
            (ElemFormat::Float(f), Values::F64(v)) => f.format(v[i]),
            (ElemFormat::Complex { re, im }, Values::C64(v)) => {
                complex_str(re, im, v[i].re, v[i].im)
            }
            (ElemFormat::Complex { re, im }, Values::C128(v)) => {
                complex_str(re, im, v[i].re, v[i].im)
            }
            _ => unreachable!("a format is made for its values"),
        }
    }
}

/// NumPy's `IntegerFormat`: the width of the longest of the largest and smallest; `' '` becomes
/// `'-'` when a value is negative.
fn int_format(v: &[i128], sign: Sign) -> ElemFormat {
    let (Some(&max), Some(&min)) = (v.iter().max(), v.iter().min()) else {
        return ElemFormat::Int { width: 0, sign };
    };
    let sign = if sign == Sign::Space && min < 0 { Sign::Minus } else { sign };
    let mut max_len = max.to_string().len();
    if max >= 0 && sign != Sign::Minus {
        max_len += 1;
    }
    ElemFormat::Int { width: max_len.max(min.to_string().len()), sign }
}

/// NumPy's `ComplexFloatingFormat.__call__`: the real part, then the imaginary part (always
/// signed) with `j` before its padding.
fn complex_str<T: PrintFloat>(re: &FloatFormat, im: &FloatFormat, r: T, i: T) -> String {
    let r = re.format(r);
    let i = im.format(i);
    let end = i.trim_end().len();
    format!("{r}{}j{}", &i[..end], &i[end..])
}

// ---------------------------------------------------------------------------------------------
// FloatingFormat

/// A float type as the printer reads it.
trait PrintFloat: Copy + PartialOrd + std::ops::Div<Output = Self> {
    /// `10.**min(8, np.finfo(dtype).precision)`: the magnitude from which arrays switch to
    /// scientific notation.
    const EXP_CUTOFF: f64;
    /// The magnitude from which a scalar's `str` is scientific (`max_positional`).
    const MAX_POSITIONAL: f64;
    /// `v` rounded to this type (a weak Python float meeting a NumPy scalar).
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// (sign bit, exponent field, fraction field) and the fraction's width and exponent bits.
    fn fields(self) -> (bool, u32, u64, u32, u32);

    fn is_finite(self) -> bool {
        self.to_f64().is_finite()
    }
    fn is_nan(self) -> bool {
        self.to_f64().is_nan()
    }
    fn signbit(self) -> bool {
        self.fields().0
    }
    fn abs(self) -> Self {
        Self::from_f64(self.to_f64().abs())
    }
}

impl PrintFloat for f16 {
    const EXP_CUTOFF: f64 = 1e3;
    const MAX_POSITIONAL: f64 = 1e3;
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn fields(self) -> (bool, u32, u64, u32, u32) {
        let b = self.to_bits();
        (b >> 15 != 0, u32::from((b >> 10) & 0x1f), u64::from(b & 0x3ff), 10, 5)
    }
}

impl PrintFloat for f32 {
    const EXP_CUTOFF: f64 = 1e6;
    const MAX_POSITIONAL: f64 = 1e6;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn fields(self) -> (bool, u32, u64, u32, u32) {
        let b = self.to_bits();
        (b >> 31 != 0, (b >> 23) & 0xff, u64::from(b & 0x7f_ffff), 23, 8)
    }
}

impl PrintFloat for f64 {
    const EXP_CUTOFF: f64 = 1e8;
    const MAX_POSITIONAL: f64 = 1e16;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn fields(self) -> (bool, u32, u64, u32, u32) {
        let b = self.to_bits();
        (b >> 63 != 0, ((b >> 52) & 0x7ff) as u32, b & ((1 << 52) - 1), 52, 11)
    }
}

/// NumPy's `FloatingFormat`: one format for all of an array's floats (or complex parts).
struct FloatFormat {
    exp_format: bool,
    /// `-1` for none.
    precision: i32,
    min_digits: i32,
    unique: bool,
    trim: Trim,
    pad_left: i32,
    pad_right: i32,
    exp_size: i32,
    sign: Sign,
    nanstr: String,
    infstr: String,
}

impl FloatFormat {
    /// `FloatingFormat.__init__` and `fillFormat` over the elements shown.
    fn new<T: PrintFloat>(data: &[T], o: &PrintOptions, sign: Sign) -> FloatFormat {
        let floatmode = o.floatmode;
        let mut f = FloatFormat {
            exp_format: false,
            // Digits past the buffer's are never written.
            precision: if floatmode == FloatMode::Unique {
                -1
            } else {
                o.precision.min(BUFFER as usize) as i32
            },
            min_digits: -1,
            unique: true,
            trim: Trim::Zeros,
            pad_left: 0,
            pad_right: 0,
            exp_size: -1,
            sign,
            nanstr: o.nanstr.clone(),
            infstr: o.infstr.clone(),
        };
        let finite: Vec<T> = data.iter().copied().filter(|x| x.is_finite()).collect();
        let zero = T::from_f64(0.0);
        let abs_non_zero: Vec<T> = finite.iter().filter(|&&x| x != zero).map(|x| x.abs()).collect();
        if let Some(&first) = abs_non_zero.first() {
            let max = abs_non_zero.iter().copied().fold(first, |m, x| if x > m { x } else { m });
            let min = abs_non_zero.iter().copied().fold(first, |m, x| if x < m { x } else { m });
            f.exp_format = max >= T::from_f64(T::EXP_CUTOFF)
                || (!o.suppress && (min < T::from_f64(0.0001) || max / min > T::from_f64(1000.0)));
        }
        let plus = sign == Sign::Plus;
        // The first pass's digits: exact ones with the point kept for `fixed`.
        let (trim, unique) =
            if floatmode == FloatMode::Fixed { (Trim::None, false) } else { (Trim::Zeros, true) };
        if finite.is_empty() {
            f.pad_left = 0;
            f.pad_right = 0;
            f.trim = Trim::Zeros;
            f.exp_size = -1;
            f.unique = true;
        } else if f.exp_format {
            let (mut int_len, mut frac_len, mut exp_len) = (0, 0, 0);
            for &x in &finite {
                let s = scientific(x, f.precision, -1, unique, trim, plus, -1, -1);
                let (mantissa, exp) = s.split_once('e').unwrap_or((&s, ""));
                let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
                int_len = int_len.max(width(int));
                frac_len = frac_len.max(width(frac));
                exp_len = exp_len.max(width(exp));
            }
            f.exp_size = exp_len as i32 - 1;
            f.trim = Trim::None;
            f.precision = frac_len as i32;
            f.min_digits = f.precision;
            f.unique = unique;
            f.pad_left = int_len as i32;
            f.pad_right = f.exp_size + 2 + f.precision;
        } else {
            let (mut int_len, mut frac_len) = (0, 0);
            for &x in &finite {
                let s =
                    positional(x, f.precision, -1, unique, Cutoff::Fraction, trim, plus, -1, -1);
                let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
                int_len = int_len.max(width(int));
                frac_len = frac_len.max(width(frac));
            }
            f.pad_left = int_len as i32;
            f.pad_right = frac_len as i32;
            f.exp_size = -1;
            f.unique = unique;
            if matches!(floatmode, FloatMode::Fixed | FloatMode::MaxPrecEqual) {
                f.precision = f.pad_right;
                f.min_digits = f.pad_right;
                f.trim = Trim::None;
            } else {
                f.trim = Trim::Zeros;
                f.min_digits = 0;
            }
        }
        if sign == Sign::Space && !finite.iter().any(|x| x.signbit()) {
            f.pad_left += 1;
        }
        if data.len() != finite.len() {
            let neginf = sign != Sign::Minus
                || data.iter().any(|x| !x.is_finite() && !x.is_nan() && x.signbit());
            let offset = f.pad_right + 1;
            f.pad_left = f
                .pad_left
                .max(width(&f.nanstr) as i32 - offset)
                .max(width(&f.infstr) as i32 + i32::from(neginf) - offset);
        }
        f
    }

    /// `FloatingFormat.__call__`.
    fn format<T: PrintFloat>(&self, x: T) -> String {
        let plus = self.sign == Sign::Plus;
        if !x.is_finite() {
            let ret = if x.is_nan() {
                format!("{}{}", if plus { "+" } else { "" }, self.nanstr)
            } else {
                let s = if x.signbit() {
                    "-"
                } else if plus {
                    "+"
                } else {
                    ""
                };
                format!("{s}{}", self.infstr)
            };
            let pad = (self.pad_left + self.pad_right + 1 - width(&ret) as i32).max(0) as usize;
            return format!("{}{ret}", " ".repeat(pad));
        }
        if self.exp_format {
            scientific(
                x,
                self.precision,
                self.min_digits,
                self.unique,
                self.trim,
                plus,
                self.pad_left,
                self.exp_size,
            )
        } else {
            positional(
                x,
                self.precision,
                self.min_digits,
                self.unique,
                Cutoff::Fraction,
                self.trim,
                plus,
                self.pad_left,
                self.pad_right,
            )
        }
    }
}

/// A float scalar's `str` (`floattype_str`, `halftype_str`): positional from 1e-4 up to the
/// type's `max_positional`, else scientific; the shortest digits.
fn scalar_float_str<T: PrintFloat>(x: T, trim_pos: Trim, trim_sci: Trim, sign: bool) -> String {
    let a = x.to_f64().abs();
    if x.is_nan() || a == 0.0 || (a < T::MAX_POSITIONAL && a >= 1e-4) {
        positional(x, -1, -1, true, Cutoff::Total, trim_pos, sign, -1, -1)
    } else {
        scientific(x, -1, -1, true, trim_sci, sign, -1, -1)
    }
}

/// A complex scalar's `str` (`cfloattype_str`): `2j` when the real part is +0, else
/// `(re+imj)`.
fn scalar_complex_str<T: PrintFloat>(re: T, im: T) -> String {
    // A part as `cfloattype_str` writes it; NaN takes the sign asked for, never its own.
    let part = |x: T, plus: bool| {
        if x.is_finite() {
            scalar_float_str(x, Trim::DptZeros, Trim::DptZeros, plus)
        } else if x.is_nan() {
            format!("{}nan", sign_char(false, plus))
        } else {
            inf_nan(x, plus)
        }
    };
    if re.to_f64() == 0.0 && !re.signbit() {
        return format!("{}j", part(im, false));
    }
    format!("({}{}j)", part(re, false), part(im, true))
}

mod dragon4;
use dragon4::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_digits() {
        assert_eq!(
            positional(0.1f64, -1, -1, true, Cutoff::Total, Trim::LeaveOneZero, false, -1, -1),
            "0.1"
        );
        assert_eq!(
            positional(0.1f32, -1, -1, true, Cutoff::Total, Trim::LeaveOneZero, false, -1, -1),
            "0.1"
        );
        assert_eq!(
            positional(
                f64::from(0.1f32),
                8,
                -1,
                true,
                Cutoff::Fraction,
                Trim::Zeros,
                false,
                -1,
                -1
            ),
            "0.1"
        );
        assert_eq!(scientific(1e300f64, -1, -1, true, Trim::DptZeros, false, -1, -1), "1e+300");
        assert_eq!(scientific(5e-324f64, -1, -1, true, Trim::Zeros, false, -1, -1), "5.e-324");
        assert_eq!(
            positional(1.0f64 / 3.0, 8, 0, true, Cutoff::Fraction, Trim::Zeros, false, -1, -1),
            "0.33333333"
        );
        assert_eq!(
            positional(0.5f64, 8, 0, true, Cutoff::Fraction, Trim::Zeros, false, 1, 3),
            "0.5  "
        );
        assert_eq!(
            positional(2.5f64, 0, -1, false, Cutoff::Fraction, Trim::None, false, -1, -1),
            "2."
        );
        assert_eq!(
            positional(0.999_999_999f64, 8, -1, true, Cutoff::Fraction, Trim::Zeros, false, -1, -1),
            "1."
        );
    }

    #[test]
    fn big_integers() {
        let mut a = Big::pow10(30);
        let b = Big::pow10(29);
        assert_eq!(a.div_rem_small_quotient(&b), 10);
        assert!(a.is_zero());
        assert_eq!(Big::pow2(64).0, vec![0, 0, 1]);
        assert_eq!(Big::from_u64(u64::MAX).add(&Big::from_u64(1)).0, vec![0, 0, 1]);
    }
}

//! Dragon4 (numpy/_core/src/multiarray/dragon4.c): the shortest and the fixed-digit decimal
//! forms of a binary float, exactly, with NumPy's trimming and cut-offs, over a small bignum.

use super::*;

/// Trailing zeros and point (`trim=` of `format_float_positional`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trim {
    /// `'k'`: keep trailing zeros and the point.
    None,
    /// `'.'`: trim trailing zeros, keep the point.
    Zeros,
    /// `'0'`: trim trailing zeros but one after the point.
    LeaveOneZero,
    /// `'-'`: trim trailing zeros and the point.
    DptZeros,
}

/// What `precision` counts in positional output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cutoff {
    /// All digits.
    Total,
    /// Digits after the point.
    Fraction,
}

/// The characters Dragon4 may write (NumPy's scratch buffer, less the terminator); only
/// reached by absurd precisions.
pub(super) const BUFFER: i32 = 16383;

/// A finite float as Dragon4 reads it: `mantissa * 2^exponent`.
pub(super) struct Decoded {
    negative: bool,
    mantissa: u64,
    exponent: i32,
    /// Index of the highest set bit of the mantissa.
    mantissa_bit: u32,
    /// Whether the gap to the next float above is twice that below (a power of two).
    unequal_margins: bool,
}

/// The float's parts, `None` for inf and NaN.
pub(super) fn decode<T: PrintFloat>(x: T) -> Option<Decoded> {
    let (negative, e, m, mbits, ebits) = x.fields();
    let bias = (1i32 << (ebits - 1)) - 1;
    if e == (1 << ebits) - 1 {
        return None;
    }
    Some(if e != 0 {
        Decoded {
            negative,
            mantissa: (1 << mbits) | m,
            exponent: e as i32 - bias - mbits as i32,
            mantissa_bit: mbits,
            unequal_margins: e != 1 && m == 0,
        }
    } else {
        Decoded {
            negative,
            mantissa: m,
            exponent: 1 - bias - mbits as i32,
            mantissa_bit: if m == 0 { 0 } else { 63 - m.leading_zeros() },
            unequal_margins: false,
        }
    })
}

/// `sign` with `+` forced on positive values when asked (`signbit` of `dragon4.c`).
pub(super) fn sign_char(negative: bool, plus: bool) -> &'static str {
    if negative {
        "-"
    } else if plus {
        "+"
    } else {
        ""
    }
}

/// NumPy's `PrintInfNan`: `inf` with its sign, `nan` without.
pub(super) fn inf_nan<T: PrintFloat>(x: T, plus: bool) -> String {
    if x.is_nan() {
        "nan".into()
    } else {
        format!("{}inf", sign_char(x.signbit(), plus))
    }
}

/// `dragon4_positional` (`format_float_positional`): `precision`/`min_digits` of `-1` for none;
/// `pad_left`/`pad_right` of `-1` for no padding.
#[allow(clippy::too_many_arguments)]
pub(super) fn positional<T: PrintFloat>(
    x: T,
    precision: i32,
    min_digits: i32,
    unique: bool,
    cutoff: Cutoff,
    trim: Trim,
    plus: bool,
    pad_left: i32,
    pad_right: i32,
) -> String {
    let Some(d) = decode(x) else { return inf_nan(x, plus) };
    let mut buf = String::from(sign_char(d.negative, plus));
    let has_sign = buf.len() as i32;
    let (digits, print_exp) = dragon4(&d, unique, cutoff, precision, min_digits, BUFFER - has_sign);
    let num_digits = digits.len() as i32;
    let (num_whole, num_fraction);
    if print_exp >= 0 {
        num_whole = print_exp + 1;
        if num_digits <= num_whole {
            buf.push_str(&digits);
            buf.push_str(&"0".repeat((num_whole - num_digits) as usize));
            num_fraction = 0;
        } else {
            buf.push_str(&digits[..num_whole as usize]);
            buf.push('.');
            buf.push_str(&digits[num_whole as usize..]);
            num_fraction = num_digits - num_whole;
        }
    } else {
        let zeros = -(print_exp + 1);
        buf.push_str("0.");
        buf.push_str(&"0".repeat(zeros as usize));
        buf.push_str(&digits);
        num_fraction = num_digits + zeros;
        num_whole = 1;
    }
    let add_digits = if unique { min_digits } else { precision };
    let desired = match cutoff {
        Cutoff::Total => add_digits - num_whole,
        Cutoff::Fraction => add_digits.max(0),
    };
    let num_fraction = finish_fraction(&mut buf, num_fraction, trim, desired, true);
    if pad_right >= num_fraction {
        if trim == Trim::DptZeros && num_fraction == 0 {
            buf.push(' ');
        }
        buf.push_str(&" ".repeat((pad_right - num_fraction) as usize));
    }
    if pad_left > num_whole + has_sign {
        buf.insert_str(0, &" ".repeat((pad_left - num_whole - has_sign) as usize));
    }
    buf
}

/// The end of a number's fraction, `buf` holding its digits so far (`num_fraction` of them after
/// the point), as both notations of `dragon4.c` finish it: the point when no digit follows it
/// (but for [`Trim::DptZeros`]); then a `0` for [`Trim::LeaveOneZero`] or zeros up to `desired`
/// for [`Trim::None`]; else trailing zeros removed, a bare point getting its `0` back
/// ([`Trim::LeaveOneZero`]) or, in positional notation (`drop_point`), going
/// ([`Trim::DptZeros`]). The digits after the point at the end.
pub(super) fn finish_fraction(
    buf: &mut String,
    mut num_fraction: i32,
    trim: Trim,
    desired: i32,
    drop_point: bool,
) -> i32 {
    if trim != Trim::DptZeros && num_fraction == 0 {
        buf.push('.');
    }
    if trim == Trim::LeaveOneZero {
        if num_fraction == 0 {
            buf.push('0');
            num_fraction += 1;
        }
    } else if trim == Trim::None && desired > num_fraction {
        buf.push_str(&"0".repeat((desired - num_fraction) as usize));
        num_fraction = desired;
    }
    if trim != Trim::None && num_fraction > 0 {
        while buf.ends_with('0') {
            buf.pop();
            num_fraction -= 1;
        }
        if buf.ends_with('.') {
            if trim == Trim::LeaveOneZero {
                buf.push('0');
                num_fraction += 1;
            } else if trim == Trim::DptZeros && drop_point {
                buf.pop();
            }
        }
    }
    num_fraction
}

/// `dragon4_scientific` (`format_float_scientific`): `exp_digits` of `-1` for at least two.
#[allow(clippy::too_many_arguments)]
pub(super) fn scientific<T: PrintFloat>(
    x: T,
    precision: i32,
    min_digits: i32,
    unique: bool,
    trim: Trim,
    plus: bool,
    pad_left: i32,
    exp_digits: i32,
) -> String {
    let Some(d) = decode(x) else { return inf_nan(x, plus) };
    let sign = sign_char(d.negative, plus);
    let left = 1 + sign.len() as i32;
    let mut buf = " ".repeat((pad_left - left).max(0) as usize);
    buf.push_str(sign);
    let size = BUFFER + 1 - buf.len() as i32;
    let plus_one = |p: i32| if p < 0 { -1 } else { p + 1 };
    let (digits, print_exp) =
        dragon4(&d, unique, Cutoff::Total, plus_one(precision), plus_one(min_digits), size);
    buf.push_str(&digits[..1]);
    let num_fraction = digits.len() as i32 - 1;
    if num_fraction > 0 {
        buf.push('.');
        buf.push_str(&digits[1..]);
    }
    let add_digits = (if unique { min_digits } else { precision }).max(0);
    finish_fraction(&mut buf, num_fraction, trim, add_digits, false);
    let exp_digits = if exp_digits < 0 { 2 } else { exp_digits.min(5) } as usize;
    let sign = if print_exp >= 0 { '+' } else { '-' };
    buf.push_str(&format!("e{sign}{:0exp_digits$}", print_exp.unsigned_abs()));
    buf
}

/// Dragon4 proper (Steele & White, Burger & Dybvig, as Ryan Juckett and NumPy wrote it): the
/// decimal digits of `d` and the exponent of the first. `unique`: the fewest digits that read
/// back as `d` (NumPy's `DigitMode_Unique`), else exact digits; `cutoff_max`/`cutoff_min` (`-1`
/// for none) bound the digits written, counted as `cutoff` says; the last digit is rounded,
/// halfway cases to even.
pub(super) fn dragon4(
    d: &Decoded,
    unique: bool,
    cutoff: Cutoff,
    cutoff_max: i32,
    cutoff_min: i32,
    buffer_size: i32,
) -> (String, i32) {
    if d.mantissa == 0 {
        return ("0".into(), 0);
    }
    let is_even = d.mantissa & 1 == 0;
    let m = Big::from_u64(d.mantissa);
    let e = d.exponent;
    // value = scaled_value / scale; the margins are half the gaps to the neighbouring floats,
    // the high one twice the low one when the value is a power of two (an extra factor 2 on
    // all three keeps them integers).
    let k = 1 + u32::from(d.unequal_margins);
    let mut scaled_value = m.shl(e.max(0) as u32 + k);
    let mut scale = Big::pow2((-e).max(0) as u32 + k);
    let mut margin_low = Big::pow2(e.max(0) as u32);
    let high = |low: &Big| if d.unequal_margins { low.shl(1) } else { low.clone() };

    let mut digit_exponent =
        ((d.mantissa_bit as i32 + e) as f64 * std::f64::consts::LOG10_2 - 0.69).ceil() as i32;
    if cutoff_max >= 0 && cutoff == Cutoff::Fraction && digit_exponent <= -cutoff_max {
        digit_exponent = -cutoff_max + 1;
    }
    if digit_exponent > 0 {
        scale = scale.mul(&Big::pow10(digit_exponent as u32));
    } else if digit_exponent < 0 {
        let p = Big::pow10((-digit_exponent) as u32);
        scaled_value = scaled_value.mul(&p);
        margin_low = margin_low.mul(&p);
    }
    if scaled_value >= scale {
        digit_exponent += 1;
    } else {
        scaled_value.mul_small(10);
        margin_low.mul_small(10);
    }

    let mut cutoff_max_exponent = digit_exponent - buffer_size;
    if cutoff_max >= 0 {
        let desired = match cutoff {
            Cutoff::Total => digit_exponent - cutoff_max,
            Cutoff::Fraction => -cutoff_max,
        };
        cutoff_max_exponent = cutoff_max_exponent.max(desired);
    }
    let mut cutoff_min_exponent = digit_exponent;
    if cutoff_min >= 0 {
        let desired = match cutoff {
            Cutoff::Total => digit_exponent - cutoff_min,
            Cutoff::Fraction => -cutoff_min,
        };
        cutoff_min_exponent = cutoff_min_exponent.min(desired);
    }
    let mut out_exponent = digit_exponent - 1;

    let mut digits: Vec<u8> = Vec::new();
    let (mut low, mut high_ok) = (false, false);
    let mut digit;
    if unique {
        loop {
            digit_exponent -= 1;
            digit = scaled_value.div_rem_small_quotient(&scale);
            let value_high = scaled_value.add(&high(&margin_low));
            let c = scaled_value.cmp(&margin_low);
            low = if is_even { c.is_le() } else { c.is_lt() };
            let c = value_high.cmp(&scale);
            high_ok = if is_even { c.is_ge() } else { c.is_gt() };
            if ((low || high_ok) && digit_exponent <= cutoff_min_exponent)
                || digit_exponent == cutoff_max_exponent
            {
                break;
            }
            digits.push(digit);
            scaled_value.mul_small(10);
            margin_low.mul_small(10);
        }
    } else {
        loop {
            digit_exponent -= 1;
            digit = scaled_value.div_rem_small_quotient(&scale);
            if scaled_value.is_zero() || digit_exponent == cutoff_max_exponent {
                break;
            }
            digits.push(digit);
            scaled_value.mul_small(10);
        }
    }

    let mut round_down = low;
    if low == high_ok {
        let twice = scaled_value.shl(1);
        let c = twice.cmp(&scale);
        round_down = c.is_lt() || (c.is_eq() && digit & 1 == 0);
    }
    if round_down {
        digits.push(digit);
    } else if digit < 9 {
        digits.push(digit + 1);
    } else {
        loop {
            match digits.pop() {
                None => {
                    digits.push(1);
                    out_exponent += 1;
                    break;
                }
                Some(9) => {}
                Some(p) => {
                    digits.push(p + 1);
                    break;
                }
            }
        }
    }
    (digits.iter().map(|&c| char::from(b'0' + c)).collect(), out_exponent)
}

/// An unsigned big integer, 32-bit limbs, least significant first, no high zero limbs.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Big(pub(super) Vec<u32>);

impl Big {
    pub(super) fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    pub(super) fn pow2(n: u32) -> Big {
        Big::from_u64(1).shl(n)
    }

    pub(super) fn pow10(n: u32) -> Big {
        let mut b = Big::from_u64(1);
        for _ in 0..n {
            b.mul_small(10);
        }
        b
    }

    pub(super) fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn shl(&self, n: u32) -> Big {
        let (limbs, bits) = ((n / 32) as usize, n % 32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &x in &self.0 {
            out.push(if bits == 0 { x } else { (x << bits) | carry });
            carry = if bits == 0 { 0 } else { x >> (32 - bits) };
        }
        out.push(carry);
        let mut b = Big(out);
        b.trim();
        b
    }

    pub(super) fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for x in &mut self.0 {
            let p = u64::from(*x) * u64::from(m) + carry;
            *x = p as u32;
            carry = p >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    pub(super) fn mul(&self, o: &Big) -> Big {
        let mut out = vec![0u32; self.0.len() + o.0.len()];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in o.0.iter().enumerate() {
                let t = u64::from(out[i + j]) + u64::from(a) * u64::from(b) + carry;
                out[i + j] = t as u32;
                carry = t >> 32;
            }
            out[i + o.0.len()] = carry as u32;
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    pub(super) fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let t = u64::from(*self.0.get(i).unwrap_or(&0))
                + u64::from(*o.0.get(i).unwrap_or(&0))
                + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o`, `o <= self`.
    pub(super) fn sub_assign(&mut self, o: &Big) {
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let t = i64::from(self.0[i]) - i64::from(*o.0.get(i).unwrap_or(&0)) - borrow;
            self.0[i] = t.rem_euclid(1 << 32) as u32;
            borrow = i64::from(t < 0);
        }
        self.trim();
    }

    /// The quotient `self / divisor` (a decimal digit here), `self` left the remainder.
    pub(super) fn div_rem_small_quotient(&mut self, divisor: &Big) -> u8 {
        let mut q = 0;
        while *self >= *divisor {
            self.sub_assign(divisor);
            q += 1;
        }
        q
    }
}

impl Ord for Big {
    fn cmp(&self, o: &Big) -> std::cmp::Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, o: &Big) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

//! Data types: NumPy's dtypes (plus bfloat16), their names, codes, sizes and kinds.

use std::fmt;
use std::str::FromStr;

use crate::error::IrError;

/// The element type of an array. NumPy's names (`"float32"`), codes (`"f4"`, `"<f4"`) and kiln's
/// short IR names (`"f32"`) all parse; [`DType::name`] gives NumPy's name.
///
/// `Float16` is [`half::f16`], `BFloat16` is [`half::bf16`] (as `ml_dtypes.bfloat16`),
/// `Complex64` is `num_complex::Complex<f32>`, `Complex128` is `num_complex::Complex<f64>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    BFloat16,
    Float32,
    Float64,
    Complex64,
    Complex128,
}

/// NumPy's dtype kinds (`dtype.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeKind {
    /// `'b'`
    Bool,
    /// `'i'`
    SignedInt,
    /// `'u'`
    UnsignedInt,
    /// `'f'` (bfloat16 included)
    Float,
    /// `'c'`
    Complex,
}

impl DType {
    /// Every dtype, in the order of the enum.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// Bytes per element (`dtype.itemsize`).
    pub const fn itemsize(self) -> usize {
        use DType::*;
        match self {
            Bool | Int8 | UInt8 => 1,
            Int16 | UInt16 | Float16 | BFloat16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 => 8,
            Complex128 => 16,
        }
    }

    /// NumPy's kind.
    pub const fn kind(self) -> DTypeKind {
        use DType::*;
        match self {
            Bool => DTypeKind::Bool,
            Int8 | Int16 | Int32 | Int64 => DTypeKind::SignedInt,
            UInt8 | UInt16 | UInt32 | UInt64 => DTypeKind::UnsignedInt,
            Float16 | BFloat16 | Float32 | Float64 => DTypeKind::Float,
            Complex64 | Complex128 => DTypeKind::Complex,
        }
    }

    /// NumPy's kind character: `b`, `i`, `u`, `f`, `c`.
    pub const fn kind_char(self) -> char {
        match self.kind() {
            DTypeKind::Bool => 'b',
            DTypeKind::SignedInt => 'i',
            DTypeKind::UnsignedInt => 'u',
            DTypeKind::Float => 'f',
            DTypeKind::Complex => 'c',
        }
    }

    pub const fn is_bool(self) -> bool {
        matches!(self, DType::Bool)
    }
    /// Signed or unsigned integer (not bool).
    pub const fn is_integer(self) -> bool {
        matches!(self.kind(), DTypeKind::SignedInt | DTypeKind::UnsignedInt)
    }
    pub const fn is_signed_integer(self) -> bool {
        matches!(self.kind(), DTypeKind::SignedInt)
    }
    pub const fn is_unsigned_integer(self) -> bool {
        matches!(self.kind(), DTypeKind::UnsignedInt)
    }
    pub const fn is_float(self) -> bool {
        matches!(self.kind(), DTypeKind::Float)
    }
    pub const fn is_complex(self) -> bool {
        matches!(self.kind(), DTypeKind::Complex)
    }
    /// Float or complex.
    pub const fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// NumPy's name: `"float32"`, `"bool"`, `"bfloat16"` (as `ml_dtypes`).
    pub const fn name(self) -> &'static str {
        use DType::*;
        match self {
            Bool => "bool",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            UInt8 => "uint8",
            UInt16 => "uint16",
            UInt32 => "uint32",
            UInt64 => "uint64",
            Float16 => "float16",
            BFloat16 => "bfloat16",
            Float32 => "float32",
            Float64 => "float64",
            Complex64 => "complex64",
            Complex128 => "complex128",
        }
    }

    /// Kiln's short name, used in the textual IR: `f32`, `i64`, `u8`, `bool`, `bf16`, `c64`.
    pub const fn short_name(self) -> &'static str {
        use DType::*;
        match self {
            Bool => "bool",
            Int8 => "i8",
            Int16 => "i16",
            Int32 => "i32",
            Int64 => "i64",
            UInt8 => "u8",
            UInt16 => "u16",
            UInt32 => "u32",
            UInt64 => "u64",
            Float16 => "f16",
            BFloat16 => "bf16",
            Float32 => "f32",
            Float64 => "f64",
            Complex64 => "c64",
            Complex128 => "c128",
        }
    }

    /// NumPy's type code without byte order (`dtype.str[1:]`): `"f4"`, `"b1"`, `"c16"`.
    /// bfloat16 has no NumPy code; kiln uses `"bf2"` (not understood by NumPy).
    pub fn code(self) -> String {
        if self == DType::BFloat16 {
            return "bf2".to_string();
        }
        format!("{}{}", self.kind_char(), self.itemsize())
    }

    /// The real dtype of the same precision (`complex64 → float32`); itself for non-complex.
    pub const fn real_dtype(self) -> DType {
        match self {
            DType::Complex64 => DType::Float32,
            DType::Complex128 => DType::Float64,
            other => other,
        }
    }

    /// The complex dtype of the same precision, as NumPy's FFTs give it: float64 →
    /// complex128, the narrower floats → complex64; complex dtypes are themselves. `None` for
    /// bool and integers.
    pub const fn complex_dtype(self) -> Option<DType> {
        match self {
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Complex64 => {
                Some(DType::Complex64)
            }
            DType::Float64 | DType::Complex128 => Some(DType::Complex128),
            _ => None,
        }
    }

    /// Bits of significand precision (including the implicit bit) for float and complex dtypes.
    pub const fn mantissa_bits(self) -> Option<u32> {
        use DType::*;
        match self {
            Float16 => Some(11),
            BFloat16 => Some(8),
            Float32 | Complex64 => Some(24),
            Float64 | Complex128 => Some(53),
            _ => None,
        }
    }

    /// The inclusive integer range of an integer or bool dtype.
    pub const fn int_range(self) -> Option<(i128, i128)> {
        use DType::*;
        match self {
            Bool => Some((0, 1)),
            Int8 => Some((i8::MIN as i128, i8::MAX as i128)),
            Int16 => Some((i16::MIN as i128, i16::MAX as i128)),
            Int32 => Some((i32::MIN as i128, i32::MAX as i128)),
            Int64 => Some((i64::MIN as i128, i64::MAX as i128)),
            UInt8 => Some((0, u8::MAX as i128)),
            UInt16 => Some((0, u16::MAX as i128)),
            UInt32 => Some((0, u32::MAX as i128)),
            UInt64 => Some((0, u64::MAX as i128)),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = IrError;

    /// Parses NumPy names (`float32`, `bool`, `bfloat16`, `complex64`), codes with or without a
    /// little-endian or native byte-order mark (`f4`, `<f4`, `=i8`, `|b1`, `?`), and kiln's short
    /// names (`f32`, `bf16`, `c64`).
    fn from_str(s: &str) -> Result<Self, IrError> {
        use DType::*;
        let t = s.trim();
        let t = t.strip_prefix(['<', '=', '|']).unwrap_or(t);
        let d = match t {
            "bool" | "bool_" | "?" | "b1" => Bool,
            "int8" | "i1" | "i8" | "b" => {
                // "i8" is int64 as a NumPy code but int8 as a short name; NumPy wins.
                if t == "i8" {
                    Int64
                } else {
                    Int8
                }
            }
            "int16" | "i2" | "i16" | "h" => Int16,
            "int32" | "i4" | "i32" | "l" => Int32,
            "int64" | "i64" | "q" => Int64,
            "uint8" | "u1" | "u8" | "B" => {
                if t == "u8" {
                    UInt64
                } else {
                    UInt8
                }
            }
            "uint16" | "u2" | "u16" | "H" => UInt16,
            "uint32" | "u4" | "u32" | "L" => UInt32,
            "uint64" | "u64" | "Q" => UInt64,
            "float16" | "f2" | "f16" | "e" | "half" => Float16,
            "bfloat16" | "bf16" | "bf2" => BFloat16,
            "float32" | "f4" | "f32" | "f" | "single" => Float32,
            "float64" | "f8" | "f64" | "d" | "double" | "float" => Float64,
            "complex64" | "c8" | "c64" | "F" => Complex64,
            "complex128" | "c16" | "c128" | "D" | "complex" => Complex128,
            _ => return Err(IrError::UnknownDType { name: s.to_string() }),
        };
        Ok(d)
    }
}

/// Parses a dtype from its short IR name only (`f32`, `i8` = int8, `u8` = uint8). The textual IR
/// uses this, so that `i8` there always means int8.
pub fn parse_short_name(s: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| d.short_name() == s)
}

/// Maps a Rust element type to its dtype.
pub trait Element: Copy + Send + Sync + 'static + fmt::Debug + PartialEq {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl Element for $t { const DTYPE: DType = DType::$d; })*
    };
}
element!(
    bool => Bool, i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64,
    half::f16 => Float16, half::bf16 => BFloat16, f32 => Float32, f64 => Float64,
    num_complex::Complex<f32> => Complex64, num_complex::Complex<f64> => Complex128,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
            assert_eq!(parse_short_name(d.short_name()), Some(d));
            assert_eq!(d.code().parse::<DType>().unwrap(), d, "{d}");
            assert_eq!(format!("<{}", d.code()).parse::<DType>().unwrap(), d);
        }
        assert_eq!("f4".parse::<DType>().unwrap(), DType::Float32);
        assert_eq!("i8".parse::<DType>().unwrap(), DType::Int64);
        assert_eq!(DType::Complex128.code(), "c16");
        assert!(matches!("float33".parse::<DType>(), Err(IrError::UnknownDType { .. })));
    }

    #[test]
    fn sizes_and_kinds() {
        assert_eq!(DType::Complex64.itemsize(), 8);
        assert_eq!(DType::BFloat16.itemsize(), 2);
        assert_eq!(DType::UInt16.kind_char(), 'u');
        assert_eq!(DType::Complex64.real_dtype(), DType::Float32);
    }
}

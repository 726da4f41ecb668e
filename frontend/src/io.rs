//! `.npy` files (NumPy's format 1.0/2.0/3.0, little-endian, C or Fortran order), through `npyz`.

use std::io::BufWriter;
use std::path::Path;

use half::f16;
use kiln_ir::{DType, Data, HostArray};
use num_complex::{Complex32, Complex64};

use crate::array::Array;
use crate::error::{Error, Result};

fn io_err(op: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io { op: op.into(), path: path.display().to_string(), message: e.to_string() }
}

/// `np.load(path)` of a `.npy` file into a held array. Every kiln dtype but bfloat16 (which
/// NumPy's format lacks) is read; Fortran-order files are reordered to C order.
///
/// Errors: a missing or malformed file, a big-endian or structured dtype.
pub fn load_npy(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err("load_npy", path, e))?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| io_err("load_npy", path, e))?;
    let type_str = match npy.dtype() {
        npyz::DType::Plain(t) => t.to_string(),
        other => {
            return Err(io_err("load_npy", path, format!("unsupported structured dtype {other:?}")))
        }
    };
    if type_str.starts_with('>') && !type_str.ends_with('1') {
        return Err(io_err(
            "load_npy",
            path,
            format!("big-endian dtype {type_str} is not supported"),
        ));
    }
    let dtype: DType = type_str.parse().map_err(|e| io_err("load_npy", path, e))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let fortran = npy.order() == npyz::Order::Fortran;
    macro_rules! read {
        ($t:ty, $var:ident) => {
            Data::$var(npy.into_vec::<$t>().map_err(|e| io_err("load_npy", path, e))?)
        };
    }
    let data = match dtype {
        DType::Bool => read!(bool, Bool),
        DType::Int8 => read!(i8, Int8),
        DType::Int16 => read!(i16, Int16),
        DType::Int32 => read!(i32, Int32),
        DType::Int64 => read!(i64, Int64),
        DType::UInt8 => read!(u8, UInt8),
        DType::UInt16 => read!(u16, UInt16),
        DType::UInt32 => read!(u32, UInt32),
        DType::UInt64 => read!(u64, UInt64),
        DType::Float16 => read!(f16, Float16),
        DType::Float32 => read!(f32, Float32),
        DType::Float64 => read!(f64, Float64),
        DType::Complex64 => read!(Complex32, Complex64),
        DType::Complex128 => read!(Complex64, Complex128),
        DType::BFloat16 => return Err(io_err("load_npy", path, "bfloat16 has no .npy type")),
    };
    if fortran {
        // Stored with the first axis fastest: read as the reversed shape, then transpose.
        let rev: Vec<usize> = shape.iter().rev().copied().collect();
        let a = Array::from_host(HostArray::new(&rev, data)?);
        let t = a.t();
        t.try_eval()?;
        return Ok(t);
    }
    Ok(Array::from_host(HostArray::new(&shape, data)?))
}

impl Array {
    /// `np.save(path, x)`: writes the value as a C-order `.npy` file (computing it first).
    ///
    /// Errors: an unwritable path, bfloat16 (no `.npy` type).
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let h = self.try_to_host()?;
        let shape: Vec<u64> = h.shape().iter().map(|&d| d as u64).collect();
        let file = std::fs::File::create(path).map_err(|e| io_err("save_npy", path, e))?;
        macro_rules! write {
            ($v:expr) => {{
                use npyz::WriterBuilder;
                let mut w = npyz::WriteOptions::new()
                    .default_dtype()
                    .shape(&shape)
                    .writer(BufWriter::new(file))
                    .begin_nd()
                    .map_err(|e| io_err("save_npy", path, e))?;
                w.extend($v.iter().copied()).map_err(|e| io_err("save_npy", path, e))?;
                w.finish().map_err(|e| io_err("save_npy", path, e))
            }};
        }
        match h.data() {
            Data::Bool(v) => write!(v),
            Data::Int8(v) => write!(v),
            Data::Int16(v) => write!(v),
            Data::Int32(v) => write!(v),
            Data::Int64(v) => write!(v),
            Data::UInt8(v) => write!(v),
            Data::UInt16(v) => write!(v),
            Data::UInt32(v) => write!(v),
            Data::UInt64(v) => write!(v),
            Data::Float16(v) => write!(v),
            Data::Float32(v) => write!(v),
            Data::Float64(v) => write!(v),
            Data::Complex64(v) => write!(v),
            Data::Complex128(v) => write!(v),
            Data::BFloat16(_) => Err(io_err("save_npy", path, "bfloat16 has no .npy type")),
        }
    }
}

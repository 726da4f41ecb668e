//! `.npy` files (NumPy's format 1.0/2.0/3.0, little-endian, C or Fortran order), through `npyz`.

use std::io::{BufWriter, Write};
use std::path::Path;

use half::f16;
use kiln_ir::{DType, Data, HostArray};
use num_complex::{Complex32, Complex64};

use crate::array::Array;
use crate::error::{Error, Result};

pub(crate) fn io_err(op: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io { op: op.into(), path: path.display().to_string(), message: e.to_string() }
}

/// `np.load(path)` of a `.npy` file into a held array. Every kiln dtype but bfloat16 (which
/// NumPy's format lacks) is read; Fortran-order files are reordered to C order.
///
/// Errors: a missing or malformed file, a big-endian or structured dtype.
pub fn load_npy(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err("load_npy", path, e))?;
    read_npy(&bytes, path).map_err(|e| e.within("load_npy"))
}

/// Deepest nesting of brackets (`(`, `[`, `{`) a `.npy` header may have. NumPy writes 2 (the
/// dict, the shape tuple) for every dtype kiln reads. npyz reads the header with py_literal, a
/// PEG parser whose time grows exponentially with the nesting (1 s at 14, 30 s at 19: found by
/// the `npy` fuzz target), so a deeper header is refused before it is parsed.
const MAX_HEADER_DEPTH: usize = 6;

/// Where the header text of `.npy` bytes starts and ends (past the end of short bytes), from
/// the magic string, version and header length; `None` where the bytes do not start so (npyz's
/// errors say what is wrong then).
fn header_range(bytes: &[u8]) -> Option<(usize, usize)> {
    let (start, len) = match bytes {
        [0x93, b'N', b'U', b'M', b'P', b'Y', 1, _, a, b, ..] => {
            (10, u16::from_le_bytes([*a, *b]) as usize)
        }
        [0x93, b'N', b'U', b'M', b'P', b'Y', _, _, a, b, c, d, ..] => {
            (12, u32::from_le_bytes([*a, *b, *c, *d]) as usize)
        }
        _ => return None,
    };
    Some((start, start.saturating_add(len)))
}

/// The deepest nesting of brackets in the header of `.npy` bytes, counting every bracket, in
/// quotes too: py_literal's strings are not where a scan would end them (a `\N{...}` escape
/// runs to the next `}`, past a quote), so brackets that look quoted can be parsed as nesting
/// (found by the `npy` fuzz target: 22 braces behind a `\N{`, a 30 s parse). NumPy never
/// writes a bracket inside a header's strings.
fn header_depth(bytes: &[u8]) -> usize {
    let Some((start, end)) = header_range(bytes) else { return 0 };
    let header = &bytes[start.min(bytes.len())..end.min(bytes.len())];
    let (mut depth, mut deepest) = (0usize, 0);
    for &c in header {
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// [`load_npy`] of a file's bytes; `path` names it in errors.
pub(crate) fn read_npy(bytes: &[u8], path: &Path) -> Result<Array> {
    let depth = header_depth(bytes);
    if depth > MAX_HEADER_DEPTH {
        return Err(io_err(
            "load_npy",
            path,
            format!("malformed header: brackets nested {depth} deep (a .npy header nests at most {MAX_HEADER_DEPTH})"),
        ));
    }
    let npy = npyz::NpyFile::new(bytes).map_err(|e| io_err("load_npy", path, e))?;
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
    // The data the header promises must be in the file: npyz multiplies the extents without a
    // check (wrapping: a shape of 2^64 elements read as none) and reserves room for all of them
    // before it reads (an allocation past memory). Found by the `npy` fuzz target.
    let data_len = bytes.len().saturating_sub(header_range(bytes).map_or(0, |r| r.1));
    let data_bytes = npy
        .shape()
        .iter()
        .try_fold(dtype.itemsize() as u64, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= data_len as u64);
    if data_bytes.is_none() {
        return Err(io_err(
            "load_npy",
            path,
            format!(
                "the shape {:?} of {} needs more data than the file's {data_len} bytes after the header",
                npy.shape(),
                dtype.name(),
            ),
        ));
    }
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
        let a = Array::from_host(crate::creation::placed(HostArray::new(&rev, data)?));
        let t = a.t();
        t.try_eval()?;
        return Ok(t);
    }
    Ok(Array::from_host(crate::creation::placed(HostArray::new(&shape, data)?)))
}

impl Array {
    /// `np.save(path, x)`: writes the value as a C-order `.npy` file (computing it first).
    ///
    /// Errors: an unwritable path, bfloat16 (no `.npy` type), a value that cannot be computed
    /// (no memory for it), each naming `save_npy`.
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let h = self.try_to_host().map_err(|e| e.within("save_npy"))?;
        check_npy_dtype(h.dtype(), "save_npy", path, "")?;
        let file = std::fs::File::create(path).map_err(|e| io_err("save_npy", path, e))?;
        let mut out = BufWriter::new(file);
        write_npy(&h, &mut out, "save_npy", path)?;
        out.flush().map_err(|e| io_err("save_npy", path, e))
    }
}

/// Error unless `dtype` has a `.npy` type (every kiln dtype but bfloat16); `what` names the
/// array in the message (empty for none).
pub(crate) fn check_npy_dtype(dtype: DType, op: &str, path: &Path, what: &str) -> Result<()> {
    if dtype == DType::BFloat16 {
        return Err(io_err(op, path, format!("{what}bfloat16 has no .npy type")));
    }
    Ok(())
}

/// Writes `h` as C-order `.npy` bytes to `w` (a file, or a member of an `.npz` archive); `op`
/// and `path` name the operation in errors.
pub(crate) fn write_npy(h: &HostArray, w: impl Write, op: &str, path: &Path) -> Result<()> {
    let shape: Vec<u64> = h.shape().iter().map(|&d| d as u64).collect();
    macro_rules! write {
        ($v:expr) => {{
            use npyz::WriterBuilder;
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()
                .map_err(|e| io_err(op, path, e))?;
            w.extend($v.iter().copied()).map_err(|e| io_err(op, path, e))?;
            w.finish().map_err(|e| io_err(op, path, e))
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
        Data::BFloat16(_) => check_npy_dtype(DType::BFloat16, op, path, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1.0 `.npy` file of `header` (padded) and `data`.
    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut h = header.to_string();
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((h.len() as u16).to_le_bytes());
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn a_header_nested_deep_is_refused_at_once() {
        // Found by the `npy` fuzz target: 19 brackets took npyz's parser 30 s, each one more
        // doubles it.
        let deep = format!(
            "{{'descr': '|i1', 'fortran_order': False, 'shape':{} (2, 3), }}",
            "[".repeat(40)
        );
        let start = std::time::Instant::now();
        let e = read_npy(&npy(&deep, &[0; 6]), Path::new("deep.npy")).unwrap_err();
        assert!(e.to_string().contains("nested 42 deep"), "{e}");
        assert!(start.elapsed().as_secs() < 5);
        // Brackets inside quotes count too (py_literal's `\N{...}` escapes run past quotes: the
        // fuzz target's regression `header-named-escape-hides-nesting`); a plain header reads.
        assert_eq!(header_depth(&npy("{'descr': '[[[[[[[[', 'x': 1}", &[])), 9);
        let hidden = "{'descr': '<c8', 'x': '\\N{\\333e'}  e': (4,{{{{{{{{{{{{{{{{{{{{{{ 3), }";
        let start = std::time::Instant::now();
        let e = read_npy(&npy(hidden, &[]), Path::new("hidden.npy")).unwrap_err();
        assert!(e.to_string().contains("nested 24 deep"), "{e}");
        assert!(start.elapsed().as_secs() < 5);
        let ok =
            npy("{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", &[1, 2, 3, 4, 5, 6]);
        assert_eq!(header_depth(&ok), 2);
        let a = read_npy(&ok, Path::new("ok.npy")).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
    }

    #[test]
    fn a_shape_past_the_data_is_refused() {
        // Found by the `npy` fuzz target: (16126584147974145819, 3) wrapped in npyz's product;
        // 2^40 elements made it reserve 8 TB before reading.
        for shape in
            ["(16126584147974145819, 3)", "(1099511627776,)", "(4294967296, 4294967296)", "(3, 1)"]
        {
            let header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
            let e = read_npy(&npy(&header, &[0; 16]), Path::new("big.npy")).unwrap_err();
            assert!(e.to_string().contains("needs more data than the file's"), "{shape}: {e}");
        }
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1), }";
        let a = read_npy(&npy(header, &[0; 16]), Path::new("ok.npy")).unwrap();
        assert_eq!(a.shape(), &[2, 1]);
    }
}

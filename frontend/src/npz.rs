//! `.npz` archives: NumPy's `savez`, `savez_compressed` and `np.load` of an `.npz` file.
//!
//! An `.npz` file is a zip archive with one `.npy` member per array, named `<name>.npy`
//! (`arr_0.npy`, `arr_1.npy`... for arrays given without names). Members are stored
//! (`savez`) or deflated (`savez_compressed`), as NumPy writes them; every member is read
//! through [`crate::io`]'s `.npy` reader, so the dtypes, orders and checks are `load_npy`'s.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::array::Array;
use crate::error::{value_err, Error, Result};
use crate::io::{check_npy_dtype, io_err, read_npy, write_npy};

/// The arrays of an `.npz` archive, in the archive's order: what `np.load("x.npz")` gives a
/// NumPy user (`NpzFile`), read at once rather than member by member.
///
/// ```no_run
/// let npz = kiln_frontend::load_npz("weights.npz")?;
/// for name in npz.names() {
///     println!("{name}: {:?}", npz[name].shape());
/// }
/// let w = npz.try_get("w")?; // np.load(...)["w"]
/// # Ok::<(), kiln_frontend::Error>(())
/// ```
pub struct NpzFile {
    path: PathBuf,
    arrays: Vec<(String, Array)>,
}

impl NpzFile {
    /// The arrays' names, in the archive's order (NumPy's `NpzFile.files`: member names
    /// without `.npy`).
    pub fn names(&self) -> Vec<&str> {
        self.arrays.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The array named `name`, if the archive has one.
    pub fn get(&self, name: &str) -> Option<&Array> {
        self.arrays.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// The array named `name` (`npz[name]`). Errors: no such array (NumPy's `KeyError`), the
    /// message naming the file and the names it has.
    pub fn try_get(&self, name: &str) -> Result<&Array> {
        self.get(name).ok_or_else(|| {
            value_err(
                "load_npz",
                format!(
                    "{}: no array '{name}' in the archive (it has: {})",
                    self.path.display(),
                    self.names().join(", ")
                ),
            )
        })
    }

    /// Whether the archive has an array named `name` (`name in npz`).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Number of arrays.
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    /// Whether the archive holds no array.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// `(name, array)` pairs in the archive's order (`npz.items()`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Array)> {
        self.arrays.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// The `(name, array)` pairs, in the archive's order.
    pub fn into_vec(self) -> Vec<(String, Array)> {
        self.arrays
    }
}

impl std::ops::Index<&str> for NpzFile {
    type Output = Array;

    /// `npz[name]`; panics where [`NpzFile::try_get`] errs.
    #[track_caller]
    fn index(&self, name: &str) -> &Array {
        crate::unwrap(self.try_get(name))
    }
}

impl IntoIterator for NpzFile {
    type Item = (String, Array);
    type IntoIter = std::vec::IntoIter<(String, Array)>;

    fn into_iter(self) -> Self::IntoIter {
        self.arrays.into_iter()
    }
}

impl std::fmt::Debug for NpzFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NpzFile({}: {})", self.path.display(), self.names().join(", "))
    }
}

/// `np.load(path)` of an `.npz` archive: every member read into a held host array (as
/// [`crate::load_npy`] reads a `.npy` file: every dtype but bfloat16, C or Fortran order,
/// 0-d and empty arrays), with its name (the member's name without `.npy`).
///
/// Errors ([`Error::Io`] with op `load_npz` and the path): a missing or unreadable file, a
/// file that is not a zip archive, a member whose name does not end in `.npy` or whose bytes
/// are not a `.npy` file NumPy's format allows (the member named), a damaged member (its CRC).
pub fn load_npz(path: impl AsRef<Path>) -> Result<NpzFile> {
    let path = path.as_ref();
    let err = |e: &dyn std::fmt::Display| io_err("load_npz", path, e);
    let file = File::open(path).map_err(|e| err(&e))?;
    let mut zip = ZipArchive::new(BufReader::new(file))
        .map_err(|e| err(&format_args!("not an .npz (zip) archive: {e}")))?;
    let mut arrays = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| err(&format_args!("member {i}: {e}")))?;
        let member_name = member.name().to_string();
        let Some(name) = member_name.strip_suffix(".npy") else {
            return Err(err(&format_args!(
                "member '{member_name}' is not a .npy file (an .npz archive holds .npy members)"
            )));
        };
        // Reserve no more than a bounded amount from the declared size (the bytes that come
        // decide the length): a damaged size field must not allocate past memory.
        let mut bytes = Vec::with_capacity((member.size() as usize).min(1 << 26));
        member
            .read_to_end(&mut bytes)
            .map_err(|e| err(&format_args!("member '{member_name}': {e}")))?;
        let array = read_npy(&bytes, Path::new(&member_name)).map_err(|e| match e {
            Error::Io { message, .. } => err(&format_args!("member '{member_name}': {message}")),
            other => other.within("load_npz"),
        })?;
        arrays.push((name.to_string(), array));
    }
    Ok(NpzFile { path: path.to_path_buf(), arrays })
}

/// `np.savez(path, name=a, ...)`: the arrays as members `<name>.npy` of an uncompressed zip
/// archive, in the order given (computing them first). NumPy reads it with `np.load(path)`.
///
/// Errors: a name given twice ([`Error::Value`]); a bfloat16 array (no `.npy` type), an
/// unwritable path ([`Error::Io`] naming `savez`, the path and the array); an array that
/// cannot be computed (no memory for it: the error names `savez`, a device's is
/// [`Error::RuntimeIn`]). The file is written
/// only once every array is computed and its dtype checked; a failed write removes it.
pub fn savez(path: impl AsRef<Path>, arrays: &[(&str, &Array)]) -> Result<()> {
    write_npz("savez", path.as_ref(), arrays, CompressionMethod::Stored)
}

/// `np.savez_compressed(path, name=a, ...)`: as [`savez`], the members deflated.
pub fn savez_compressed(path: impl AsRef<Path>, arrays: &[(&str, &Array)]) -> Result<()> {
    write_npz("savez_compressed", path.as_ref(), arrays, CompressionMethod::Deflated)
}

/// `np.savez(path, a, b, ...)`: as [`savez`], the arrays named `arr_0`, `arr_1`... in order.
pub fn savez_unnamed(path: impl AsRef<Path>, arrays: &[&Array]) -> Result<()> {
    let names = unnamed(arrays.len());
    let named: Vec<(&str, &Array)> =
        names.iter().map(String::as_str).zip(arrays.iter().copied()).collect();
    write_npz("savez", path.as_ref(), &named, CompressionMethod::Stored)
}

/// `np.savez_compressed(path, a, b, ...)`: as [`savez_unnamed`], the members deflated.
pub fn savez_compressed_unnamed(path: impl AsRef<Path>, arrays: &[&Array]) -> Result<()> {
    let names = unnamed(arrays.len());
    let named: Vec<(&str, &Array)> =
        names.iter().map(String::as_str).zip(arrays.iter().copied()).collect();
    write_npz("savez_compressed", path.as_ref(), &named, CompressionMethod::Deflated)
}

/// NumPy's names of positional arrays: `arr_0`, `arr_1`...
fn unnamed(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("arr_{i}")).collect()
}

/// The `.npy` header and padding NumPy's format may take at most before the data (format 1.0
/// pads the header to 64 bytes; a header is below 65,536 bytes), for the zip64 decision.
const NPY_HEADER_MAX: u64 = 1 << 16;

fn write_npz(
    op: &str,
    path: &Path,
    arrays: &[(&str, &Array)],
    method: CompressionMethod,
) -> Result<()> {
    let mut seen = HashSet::new();
    for (name, _) in arrays {
        if !seen.insert(*name) {
            return Err(value_err(
                op,
                format!("{}: array name '{name}' given twice", path.display()),
            ));
        }
    }
    // Compute every array (one graph, shared work once), then check the dtypes, before the
    // file is touched.
    let all: Vec<&Array> = arrays.iter().map(|(_, a)| *a).collect();
    crate::try_eval_all(&all).map_err(|e| e.within(op))?;
    let mut hosts = Vec::with_capacity(arrays.len());
    for (name, a) in arrays {
        check_npy_dtype(a.dtype(), op, path, &format!("array '{name}': "))?;
        hosts.push(a.try_to_host().map_err(|e| e.within(op))?);
    }
    let file = File::create(path).map_err(|e| io_err(op, path, e))?;
    let written = (|| {
        let mut zip = ZipWriter::new(BufWriter::new(file));
        for ((name, _), h) in arrays.iter().zip(&hosts) {
            let bytes = (h.len() * h.dtype().itemsize()) as u64;
            let options = SimpleFileOptions::default()
                .compression_method(method)
                .large_file(bytes + NPY_HEADER_MAX >= u32::MAX as u64);
            zip.start_file(format!("{name}.npy"), options)
                .map_err(|e| io_err(op, path, format_args!("array '{name}': {e}")))?;
            write_npy(h, &mut zip, op, path)?;
        }
        let mut out = zip.finish().map_err(|e| io_err(op, path, e))?;
        out.flush().map_err(|e| io_err(op, path, e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::HostArray;

    #[test]
    fn unnamed_arrays_are_numbered_as_numpy_names_them() {
        assert_eq!(unnamed(3), ["arr_0", "arr_1", "arr_2"]);
    }

    #[test]
    fn a_name_given_twice_is_refused_before_the_file_is_made() {
        let dir = std::env::temp_dir().join(format!("kiln-npz-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("twice.npz");
        let a = Array::from_host(HostArray::from_vec(&[2], vec![1i32, 2]).unwrap());
        let e = savez(&path, &[("a", &a), ("a", &a)]).unwrap_err();
        assert!(e.to_string().contains("array name 'a' given twice"), "{e}");
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Interop: `.npz` archives against NumPy-written fixtures (`tests/fixtures/npz/`, written by
//! `tests/fixtures/make_npz_fixtures.py`) and read back by NumPy; DLPack export and import
//! (zero-copy, the deleter's calls counted, typed errors); `gpu_*` tests of device tensors,
//! skipped without a GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

use kiln::{load_npy, load_npz, savez, savez_compressed, savez_unnamed, Array, DType, Error};

/// The NumPy fixtures' folder.
fn npz_dir() -> PathBuf {
    crate::repo_root().join("tests").join("fixtures").join("npz")
}

/// The array's dtype, shape and elements as text (`Debug` of the data: NaNs and -0.0 compare
/// equal to themselves, unlike `==`).
fn fingerprint(a: &Array) -> String {
    let h = a.try_to_host().unwrap();
    format!("{} {:?} {:?}", h.dtype(), h.shape(), h.data())
}

/// Each array of `archive` equals NumPy's C-order copy of it (`expected/<stem>__<name>.npy`);
/// the names, in order, are `names`.
fn check_archive(archive: &str, stem: &str, names: &[&str]) {
    let npz = load_npz(npz_dir().join(archive)).unwrap();
    assert_eq!(npz.names(), names, "{archive}");
    for name in names {
        let expected =
            load_npy(npz_dir().join("expected").join(format!("{stem}__{name}.npy"))).unwrap();
        assert_eq!(fingerprint(&npz[name]), fingerprint(&expected), "{archive}: {name}");
    }
}

const DTYPES: [&str; 14] = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
];

const SHAPES: [&str; 12] = [
    "scalar_f64",
    "scalar_bool",
    "scalar_u16",
    "empty_f32",
    "empty_0x3_i64",
    "empty_2x0x4_c128",
    "fortran_i32",
    "fortran_f64_3d",
    "fortran_bool",
    "fortran_c64",
    "strided_f32",
    "vector_u8",
];

#[test]
fn npz_numpy_written_every_dtype() {
    check_archive("dtypes.npz", "dtypes", &DTYPES);
    check_archive("dtypes_compressed.npz", "dtypes", &DTYPES);
    let npz = load_npz(npz_dir().join("dtypes.npz")).unwrap();
    for name in DTYPES {
        assert_eq!(npz[name].dtype().name(), name);
        assert_eq!(npz[name].shape(), &[2, 3]);
    }
    // Values checked without the .npy reader: int16's max // 3 steps, float NaN and -inf.
    let i16s = npz["int16"].to_vec::<i16>();
    assert_eq!(i16s, [-21844, -10922, 0, 10922, 21844, 32766]);
    let f64s = npz["float64"].to_vec::<f64>();
    assert_eq!(f64s[0], f64::NEG_INFINITY);
    assert_eq!(f64s[1..5], [-0.75, 0.0, 0.75, 1.5]);
    assert!(f64s[5].is_nan());
    assert_eq!(npz["bool"].to_vec::<bool>(), [true, false, true, false, true, false]);
}

#[test]
fn npz_numpy_written_shapes_0d_empty_fortran() {
    check_archive("shapes.npz", "shapes", &SHAPES);
    check_archive("shapes_compressed.npz", "shapes", &SHAPES);
    let npz = load_npz(npz_dir().join("shapes.npz")).unwrap();
    assert_eq!(npz["scalar_f64"].shape(), &[] as &[usize]);
    assert_eq!(npz["scalar_f64"].to_vec::<f64>(), [3.25]);
    assert_eq!(npz["empty_2x0x4_c128"].shape(), &[2, 0, 4]);
    // Fortran order: NumPy's arange(12).reshape(3, 4) stored column by column, read as C.
    assert_eq!(npz["fortran_i32"].shape(), &[3, 4]);
    assert_eq!(npz["fortran_i32"].to_vec::<i32>(), (0..12).collect::<Vec<i32>>());
    assert_eq!(
        npz["strided_f32"].to_vec::<f32>(),
        [1.0, 4.0, 7.0, 17.0, 20.0, 23.0, 33.0, 36.0, 39.0]
    );
    assert!(npz.contains("vector_u8") && !npz.contains("vector_u8.npy"));
    assert_eq!(npz.len(), SHAPES.len());
}

#[test]
fn npz_numpy_unnamed_arrays_are_arr_k() {
    check_archive("unnamed.npz", "unnamed", &["arr_0", "arr_1", "arr_2"]);
}

#[test]
fn npz_round_trip_stored_and_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let src = load_npz(npz_dir().join("dtypes.npz")).unwrap();
    let shapes = load_npz(npz_dir().join("shapes.npz")).unwrap();
    let named: Vec<(&str, &Array)> = src.iter().chain(shapes.iter()).collect();
    // A lazy array too: computed by savez.
    let lazy = kiln::arange(10).astype(DType::Float32) * 0.5;
    let mut with_lazy = named.clone();
    with_lazy.push(("lazy", &lazy));
    for (file, compressed) in [("a.npz", false), ("b.npz", true)] {
        let path = dir.path().join(file);
        if compressed {
            savez_compressed(&path, &with_lazy).unwrap();
        } else {
            savez(&path, &with_lazy).unwrap();
        }
        let back = load_npz(&path).unwrap();
        let names: Vec<&str> = with_lazy.iter().map(|(n, _)| *n).collect();
        assert_eq!(back.names(), names);
        for (name, a) in &with_lazy {
            assert_eq!(fingerprint(&back[name]), fingerprint(a), "{file}: {name}");
        }
    }
    // Stored members are as large as the data; deflated ones of the long u8 vector smaller.
    let stored = std::fs::metadata(dir.path().join("a.npz")).unwrap().len();
    let deflated = std::fs::metadata(dir.path().join("b.npz")).unwrap().len();
    assert!(deflated < stored, "{deflated} >= {stored}");
    // Unnamed arrays are arr_0, arr_1.
    let path = dir.path().join("u.npz");
    savez_unnamed(&path, &[&lazy, &src["int8"]]).unwrap();
    assert_eq!(load_npz(&path).unwrap().names(), ["arr_0", "arr_1"]);
    // The same arrays make the same bytes (no timestamps).
    let again = dir.path().join("a2.npz");
    savez(&again, &with_lazy).unwrap();
    assert_eq!(std::fs::read(dir.path().join("a.npz")).unwrap(), std::fs::read(&again).unwrap());
}

/// A python3 that imports NumPy, if there is one.
fn python_with_numpy() -> Option<&'static str> {
    let ok = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some("python3")
}

#[test]
fn npz_written_by_kiln_read_by_numpy() {
    let Some(python) = python_with_numpy() else {
        println!("skipped: no python3 with NumPy");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for stem in ["dtypes", "shapes"] {
        // NumPy's arrays through kiln: read, written by kiln (both forms), read by NumPy and
        // compared with the fixture script's own arrays.
        let src = load_npz(npz_dir().join(format!("{stem}.npz"))).unwrap();
        let named: Vec<(&str, &Array)> = src.iter().collect();
        savez(dir.path().join(format!("{stem}.npz")), &named).unwrap();
        savez_compressed(dir.path().join(format!("{stem}_z.npz")), &named).unwrap();
    }
    let a = kiln::arange(4).astype(DType::Int16);
    savez_unnamed(dir.path().join("unnamed.npz"), &[&a, &a]).unwrap();
    let script = r#"
import sys, zipfile
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_npz_fixtures as f
out = sys.argv[2]
for stem, named in f.arrays().items():
    for file, method in ((f"{stem}.npz", zipfile.ZIP_STORED), (f"{stem}_z.npz", zipfile.ZIP_DEFLATED)):
        z = np.load(f"{out}/{file}")
        assert z.files == list(named), (file, z.files)
        for name, want in named.items():
            got = z[name]
            assert got.dtype == want.dtype and got.shape == want.shape, (file, name, got.dtype, got.shape)
            assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), (file, name)
        kinds = {i.compress_type for i in zipfile.ZipFile(f"{out}/{file}").infolist()}
        assert kinds == {method}, (file, kinds)
z = np.load(f"{out}/unnamed.npz")
assert z.files == ["arr_0", "arr_1"] and (z["arr_1"] == np.arange(4, dtype=np.int16)).all()
print("numpy read kiln's archives")
"#;
    let fixtures = crate::repo_root().join("tests").join("fixtures");
    let out =
        Command::new(python).args(["-c", script]).arg(&fixtures).arg(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("numpy read kiln's archives"));
}

/// The `Io` error's op, path and message.
fn io_error(e: Error) -> (String, String, String) {
    match e {
        Error::Io { op, path, message } => (op, path, message),
        other => panic!("expected an Io error, got {other:?}"),
    }
}

#[test]
fn npz_typed_errors_name_the_op_path_and_member() {
    let cases: [(&str, &str); 6] = [
        ("missing.npz", "No such file"),
        ("bad_not_zip.npz", "not an .npz (zip) archive"),
        ("bad_member_not_npy.npz", "member 'readme.txt' is not a .npy file"),
        ("bad_header.npz", "member 'x.npy': "),
        ("bad_big_endian.npz", "member 'b.npy': big-endian dtype >f8 is not supported"),
        ("bad_truncated.npz", "member 't.npy': the shape [100] of float64 needs more data"),
    ];
    for (file, wanted) in cases {
        let path = npz_dir().join(file);
        let (op, p, message) = io_error(load_npz(&path).unwrap_err());
        assert_eq!(op, "load_npz", "{file}");
        assert_eq!(Path::new(&p), path, "{file}");
        assert!(message.contains(wanted), "{file}: {message}");
    }
    // A name the archive lacks: a KeyError-like value error naming what it has.
    let npz = load_npz(npz_dir().join("unnamed.npz")).unwrap();
    let e = npz.try_get("weights").unwrap_err().to_string();
    assert!(e.starts_with("load_npz: ") && e.contains("no array 'weights'"), "{e}");
    assert!(e.contains("arr_0, arr_1, arr_2"), "{e}");
    assert!(npz.get("weights").is_none());

    // Writing: bfloat16 has no .npy type, named with the array; nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bf.npz");
    let ok = kiln::arange(3);
    let bf = kiln::arange(3).astype(DType::BFloat16);
    let (op, _, message) = io_error(savez(&path, &[("ok", &ok), ("w", &bf)]).unwrap_err());
    assert_eq!(op, "savez");
    assert!(message.contains("array 'w': bfloat16 has no .npy type"), "{message}");
    assert!(!path.exists());
    // An unwritable path.
    let path = dir.path().join("no_such_dir").join("x.npz");
    let (op, p, _) = io_error(savez_compressed(&path, &[("ok", &ok)]).unwrap_err());
    assert_eq!((op.as_str(), Path::new(&p)), ("savez_compressed", path.as_path()));
    // A name given twice.
    let e = savez(dir.path().join("twice.npz"), &[("a", &ok), ("a", &ok)]).unwrap_err();
    assert!(matches!(e, Error::Value { .. }) && e.to_string().contains("'a' given twice"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// DLPack

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kiln::dlpack::ffi::*;
use kiln::{backend, from_dlpack, DLPackTensor};
use kiln_runtime::Backend;

/// Another library's tensor, as a producer written in C lays it out: the managed tensor first,
/// then what it points into. The deleter counts its calls.
#[repr(C)]
struct Foreign {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
    data: Vec<u8>,
    deleted: Arc<AtomicUsize>,
    _keep: Option<Box<dyn Any + Send>>,
}

unsafe extern "C" fn foreign_deleter(p: *mut DLManagedTensorVersioned) {
    // SAFETY: `p` is a `Box<Foreign>` made by `foreign`, deleted once.
    let b = unsafe { Box::from_raw(p.cast::<Foreign>()) };
    b.deleted.fetch_add(1, Ordering::SeqCst);
}

/// What a foreign tensor is made of.
struct Spec {
    data: Vec<u8>,
    /// The data's address where not `data`'s (device memory).
    ptr: Option<u64>,
    byte_offset: u64,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    dtype: DLDataType,
    device: DLDevice,
    version: u32,
    keep: Option<Box<dyn Any + Send>>,
}

impl Spec {
    fn host(data: Vec<u8>, shape: &[i64], code: u8, bits: u8) -> Spec {
        Spec {
            data,
            ptr: None,
            byte_offset: 0,
            shape: shape.to_vec(),
            strides: None,
            dtype: DLDataType { code, bits, lanes: 1 },
            device: DLDevice { device_type: K_DL_CPU, device_id: 0 },
            version: 1,
            keep: None,
        }
    }

    fn strides(mut self, s: &[i64]) -> Spec {
        self.strides = Some(s.to_vec());
        self
    }

    /// The tensor, and its deleter's call count.
    fn make(self) -> (DLPackTensor, Arc<AtomicUsize>) {
        let deleted = Arc::new(AtomicUsize::new(0));
        let ndim = self.shape.len() as i32;
        let has_strides = self.strides.is_some();
        let mut b = Box::new(Foreign {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion { major: self.version, minor: 0 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(foreign_deleter),
                flags: 0,
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: self.device,
                    ndim,
                    dtype: self.dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: self.byte_offset,
                },
            },
            shape: self.shape,
            strides: self.strides.unwrap_or_default(),
            data: self.data,
            deleted: deleted.clone(),
            _keep: self.keep,
        });
        let t = &mut b.managed.dl_tensor;
        t.data = match self.ptr {
            Some(p) => p as *mut std::ffi::c_void,
            None => b.data.as_mut_ptr().cast(),
        };
        t.shape = b.shape.as_mut_ptr();
        if has_strides {
            t.strides = b.strides.as_mut_ptr();
        }
        let p = Box::into_raw(b);
        // SAFETY: a live managed tensor, owned by the handle from here on.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(p.cast()) }.unwrap();
        (tensor, deleted)
    }
}

fn bytes_of<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain data (numbers) read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

/// The `Value` error's op and message.
fn value_error(e: Error) -> (String, String) {
    match e {
        Error::Value { op, message } => (op, message),
        other => panic!("expected a Value error, got {other:?}"),
    }
}

#[test]
fn dlpack_export_describes_the_array() {
    let a = (kiln::arange(6).astype(DType::Float32) * 0.5).reshape(&[2, 3]);
    let t = a.to_dlpack().unwrap();
    assert!(a.is_materialized());
    assert_eq!(t.version(), Some(DLPackVersion { major: 1, minor: 1 }));
    assert_eq!(t.flags() & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
    assert_eq!(t.dtype(), DLDataType { code: K_DL_FLOAT, bits: 32, lanes: 1 });
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.strides(), Some(&[3i64, 1][..]));
    if matches!(backend(), Backend::Cpu) {
        assert_eq!(t.device(), DLDevice { device_type: K_DL_CPU, device_id: 0 });
        let h = a.try_to_host().unwrap();
        assert_eq!(t.data_ptr(), h.as_slice::<f32>().unwrap().as_ptr() as u64);
        // SAFETY: a live export of six f32s on the host.
        let seen = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const f32, 6) };
        assert_eq!(seen, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
    }
    // A host tensor whatever the backend: flagged copied only if it came down from a device.
    let h = a.to_dlpack_host().unwrap();
    assert_eq!(h.device().device_type, K_DL_CPU);
    // 0-d and empty.
    let s = kiln::full(&[], 7i64, DType::Int64).to_dlpack().unwrap();
    assert_eq!((s.shape(), s.tensor().ndim), (&[] as &[i64], 0));
    let e = kiln::zeros(&[0, 4], DType::Complex128).to_dlpack().unwrap();
    assert_eq!(e.shape(), &[0, 4]);
    assert_eq!(e.dtype(), DLDataType { code: K_DL_COMPLEX, bits: 128, lanes: 1 });
    // The legacy struct has no version or flags.
    let l = a.to_dlpack_legacy(None).unwrap();
    assert_eq!((l.version(), l.flags()), (None, 0));
}

#[test]
fn dlpack_round_trip_shares_memory_on_the_host() {
    if !matches!(backend(), Backend::Cpu) {
        println!("skipped: the backend is a GPU (gpu_dlpack_* cover it)");
        return;
    }
    for dtype in DType::ALL {
        let a = kiln::arange(12).reshape(&[3, 4]).astype(dtype);
        let h = a.try_to_host().unwrap();
        let base = Arc::strong_count(&h);
        let t = a.to_dlpack().unwrap();
        let ptr = t.data_ptr();
        // The export holds the value.
        assert_eq!(Arc::strong_count(&h), base + 1, "{dtype}");
        let b = from_dlpack(t).unwrap();
        let hb = b.try_to_host().unwrap();
        assert!(Arc::ptr_eq(&h, &hb), "{dtype}: not the same memory");
        assert_eq!(hb.shape(), &[3, 4]);
        assert_eq!(fingerprint(&b), fingerprint(&a), "{dtype}");
        drop(hb);
        // Computing with the import works as with any held array.
        assert_eq!(fingerprint(&(&b + &b)), fingerprint(&(&a + &a)), "{dtype}");
        // The deleter ran once the import dropped: only `a` (and `h`) hold the value again.
        drop(b);
        assert_eq!(Arc::strong_count(&h), base, "{dtype}");
        // The export pointed at the value's elements.
        assert_eq!(ptr, kiln_ir::with_data!(h.data(), v => v.as_ptr() as u64), "{dtype}");
    }
    // The legacy struct too; and a tensor handed on as a raw pointer and taken back.
    let a = kiln::arange(5).astype(DType::Float16);
    let h = a.try_to_host().unwrap();
    let b = from_dlpack(a.to_dlpack_legacy(None).unwrap()).unwrap();
    assert!(Arc::ptr_eq(&h, &b.try_to_host().unwrap()));
    let raw = a.to_dlpack().unwrap().into_raw_versioned().unwrap();
    // SAFETY: the pointer just handed on, taken back once.
    let c = from_dlpack(unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap()).unwrap();
    assert!(Arc::ptr_eq(&h, &c.try_to_host().unwrap()));
}

#[test]
fn dlpack_kiln_export_deleter_called_by_a_consumer() {
    let a = kiln::arange(4).astype(DType::Int32);
    a.try_to_host().unwrap();
    let h = a.try_to_host().unwrap();
    let base = Arc::strong_count(&h);
    let raw = a.to_dlpack().unwrap().into_raw_versioned().unwrap();
    if matches!(backend(), Backend::Cpu) {
        assert_eq!(Arc::strong_count(&h), base + 1);
    }
    // A consumer in C is done: it calls the deleter, once.
    // SAFETY: the export's own deleter on its own pointer.
    unsafe { ((*raw).deleter.unwrap())(raw) };
    assert_eq!(Arc::strong_count(&h), base);
    // A handle dropped unused deletes too.
    drop(a.to_dlpack().unwrap());
    assert_eq!(Arc::strong_count(&h), base);
}

#[test]
fn dlpack_foreign_host_tensors_are_shared_until_the_last_drop() {
    // float32, C-contiguous: kiln's array is the producer's memory.
    let (t, deleted) =
        Spec::host(bytes_of(&[1.5f32, -2.0, 3.25, 4.0]), &[2, 2], K_DL_FLOAT, 32).make();
    let ptr = t.data_ptr();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 0, "shared, not copied");
    assert_eq!((a.dtype(), a.shape()), (DType::Float32, &[2usize, 2][..]));
    let h = a.try_to_host().unwrap();
    assert!(h.is_foreign());
    assert_eq!(h.as_bytes().as_ptr() as u64, ptr, "the producer's memory");
    // Computed with in place, and shared again by an export.
    assert_eq!((&a * 2.0 + 1.0).to_vec::<f32>(), [4.0, -3.0, 7.5, 9.0]);
    assert_eq!(a.sum(None).to_vec::<f32>(), [6.75]);
    // (A host export: on a GPU backend `to_dlpack` exports the uploaded copy.)
    let e = a.to_dlpack_host().unwrap();
    assert_eq!(e.data_ptr(), ptr);
    drop((a, h));
    assert_eq!(deleted.load(Ordering::SeqCst), 0, "the export still holds it");
    drop(e);
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "released once, at the last drop");

    // Every dtype: the bytes of a kiln array, imported from another owner, read as the same
    // values, computed with as the same values (compiled kernels, or an upload, read them in
    // place), and copied into kiln's storage (`data`) only where asked.
    for dtype in DType::ALL {
        let a = (kiln::arange(12).reshape(&[3, 4]) - 5).astype(dtype);
        let code = a.to_dlpack().unwrap().dtype();
        let bytes = a.try_to_host().unwrap().as_bytes().to_vec();
        let (t, deleted) = Spec::host(bytes, &[3, 4], code.code, code.bits).make();
        let ptr = t.data_ptr();
        let b = from_dlpack(t).unwrap();
        let h = b.try_to_host().unwrap();
        assert!(h.is_foreign(), "{dtype}");
        assert_eq!(fingerprint(&b), fingerprint(&a), "{dtype}");
        assert_eq!(fingerprint(&(&b + &b)), fingerprint(&(&a + &a)), "{dtype}");
        assert_eq!(h.as_bytes().as_ptr() as u64, ptr, "{dtype}: still the producer's memory");
        assert_eq!(deleted.load(Ordering::SeqCst), 0, "{dtype}");
        drop((b, h));
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{dtype}");
    }

    // A 0-d tensor (no shape entries) is one element, shared too.
    let (t, deleted) = Spec::host(bytes_of(&[42u8]), &[], K_DL_UINT, 8).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!((a.shape(), a.to_vec::<u8>()), (&[] as &[usize], vec![42]));
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(a);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn dlpack_foreign_host_tensors_kiln_cannot_share_are_copied_and_released_at_once() {
    // Strided: a transposed (column-major) int64 matrix, and a negative stride with a byte
    // offset (NumPy's x[::-1]).
    let v: Vec<i64> = (0..6).collect();
    let (t, deleted) = Spec::host(bytes_of(&v), &[3, 2], K_DL_INT, 64).strides(&[1, 3]).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "copied, then released at once");
    assert!(!a.try_to_host().unwrap().is_foreign());
    assert_eq!(a.to_vec::<i64>(), [0, 3, 1, 4, 2, 5]);
    let mut spec = Spec::host(bytes_of(&v), &[3], K_DL_INT, 64).strides(&[-2]);
    spec.byte_offset = 5 * 8;
    let (t, _) = spec.make();
    assert_eq!(from_dlpack(t).unwrap().to_vec::<i64>(), [5, 3, 1]);
    // A broadcast axis (stride 0).
    let (t, _) = Spec::host(bytes_of(&[7u16, 8]), &[3, 2], K_DL_UINT, 16).strides(&[0, 1]).make();
    assert_eq!(from_dlpack(t).unwrap().to_vec::<u16>(), [7, 8, 7, 8, 7, 8]);
    // Misaligned for the dtype: float32 one byte into the buffer.
    let mut bytes = vec![0u8];
    bytes.extend(bytes_of(&[2.5f32, -1.0]));
    let mut spec = Spec::host(bytes, &[2], K_DL_FLOAT, 32);
    spec.byte_offset = 1;
    let (t, deleted) = spec.make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "misaligned: copied");
    assert_eq!((&a * 2.0).to_vec::<f32>(), [5.0, -2.0]);

    // Booleans stored as bytes other than 0 and 1: copied, any nonzero byte true (kiln's
    // kernels read a boolean as the byte 0 or 1).
    let (t, deleted) = Spec::host(vec![0, 1, 2, 255], &[4], K_DL_BOOL, 8).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(a.to_vec::<bool>(), [false, true, true, true]);
    assert_eq!(a.logical_not().to_vec::<bool>(), [true, false, false, false]);
    // Bytes 0 and 1 are shared.
    let (t, deleted) = Spec::host(vec![0, 1, 1, 0], &[4], K_DL_BOOL, 8).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    assert_eq!(a.logical_not().to_vec::<bool>(), [true, false, false, true]);
    drop(a);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    // float16, bfloat16, complex64 read as their values.
    let f16s = [half::f16::from_f32(0.5), half::f16::from_f32(-3.0)];
    let (t, _) = Spec::host(bytes_of(&f16s), &[2], K_DL_FLOAT, 16).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!((a.dtype(), a.to_vec::<half::f16>()), (DType::Float16, f16s.to_vec()));
    let bf = [half::bf16::from_f32(1.25)];
    let (t, _) = Spec::host(bytes_of(&bf), &[1], K_DL_BFLOAT, 16).make();
    assert_eq!(from_dlpack(t).unwrap().to_vec::<half::bf16>(), bf);
    let c = [num_complex::Complex32::new(1.0, -2.0), num_complex::Complex32::new(0.5, 4.0)];
    let (t, _) = Spec::host(bytes_of(&c), &[2, 1], K_DL_COMPLEX, 64).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!((a.dtype(), a.shape()), (DType::Complex64, &[2usize, 1][..]));
    assert_eq!(a.to_vec::<num_complex::Complex32>(), c);

    // Empty (no data): nothing to share.
    let mut spec = Spec::host(vec![], &[0, 3], K_DL_FLOAT, 64);
    spec.ptr = Some(0);
    let (t, deleted) = spec.make();
    let a = from_dlpack(t).unwrap();
    assert_eq!((a.shape(), a.size()), (&[0usize, 3][..], 0));
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // A tensor dropped without an import is deleted once.
    let (t, deleted) = Spec::host(bytes_of(&[1i8]), &[1], K_DL_INT, 8).make();
    drop(t);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn dlpack_bad_tensors_are_typed_errors_and_still_released() {
    let bad: Vec<(Spec, &str)> = vec![
        (Spec::host(vec![0; 4], &[4], 7, 8), "dtype code 7 (a float8 type) of 8 bits"),
        (Spec::host(vec![0; 12], &[4], K_DL_INT, 24), "dtype code 0 (kDLInt) of 24 bits"),
        (Spec::host(vec![0; 8], &[1], K_DL_OPAQUE_HANDLE, 64), "kDLOpaqueHandle"),
        (Spec::host(vec![0; 4], &[1], K_DL_FLOAT, 16), ""),
        (
            Spec {
                dtype: DLDataType { code: K_DL_FLOAT, bits: 32, lanes: 4 },
                ..Spec::host(vec![0; 16], &[1], K_DL_FLOAT, 32)
            },
            "vector dtypes are not supported (code 2, 32 bits, 4 lanes)",
        ),
        (
            Spec {
                device: DLDevice { device_type: K_DL_OPENCL, device_id: 0 },
                ..Spec::host(vec![0; 4], &[1], K_DL_FLOAT, 32)
            },
            "a tensor on kDLOpenCL (device 0)",
        ),
        (
            Spec {
                device: DLDevice { device_type: 99, device_id: 3 },
                ..Spec::host(vec![0; 4], &[1], K_DL_FLOAT, 32)
            },
            "a tensor on device type 99 (device 3)",
        ),
        (Spec { version: 2, ..Spec::host(vec![0; 4], &[1], K_DL_FLOAT, 32) }, "DLPack version 2.0"),
        (Spec::host(vec![0; 4], &[-1], K_DL_FLOAT, 32), "a negative extent -1"),
        (Spec { ptr: Some(0), ..Spec::host(vec![], &[2], K_DL_FLOAT, 32) }, "null data"),
    ];
    for (spec, wanted) in bad {
        let (t, deleted) = spec.make();
        let r = from_dlpack(t);
        if wanted.is_empty() {
            // float16 of 4 bytes is fine: the control case (shared: released at the drop).
            assert!(r.is_ok());
            drop(r);
        } else {
            let (op, message) = value_error(r.unwrap_err());
            assert_eq!(op, "from_dlpack");
            assert!(message.contains(wanted), "{message}");
        }
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{wanted}");
    }
    // A CUDA tensor with the CPU backend.
    if matches!(backend(), Backend::Cpu) {
        let spec = Spec {
            device: DLDevice { device_type: K_DL_CUDA, device_id: 0 },
            ..Spec::host(vec![0; 4], &[1], K_DL_FLOAT, 32)
        };
        let (t, deleted) = spec.make();
        let (op, message) = value_error(from_dlpack(t).unwrap_err());
        assert_eq!(op, "from_dlpack");
        assert!(message.contains("the backend is the CPU"), "{message}");
        assert_eq!(deleted.load(Ordering::SeqCst), 1);
        // SAFETY: refused before the pointer is read.
        let e = unsafe { Array::from_device_buffer(0x1000, &[4], DType::Float32, None, ()) };
        assert_eq!(value_error(e.unwrap_err()).0, "from_device_buffer");
    }
    // Null pointers; export streams that DLPack refuses.
    // SAFETY: null is refused.
    assert!(unsafe { DLPackTensor::from_raw_versioned(std::ptr::null_mut()) }.is_err());
    let a = kiln::arange(3);
    let (_, m) = value_error(a.to_dlpack_stream(Some(0)).unwrap_err());
    assert!(m.contains("stream 0 is ambiguous"), "{m}");
    if matches!(backend(), Backend::Cpu) {
        let (op, m) = value_error(a.to_dlpack_stream(Some(5)).unwrap_err());
        assert_eq!(op, "to_dlpack");
        assert!(m.contains("stream 5 given for a host array"), "{m}");
        assert!(a.to_dlpack_stream(Some(-1)).is_ok());
    }
}

// ---------------------------------------------------------------------------------------------
// DLPack on the GPU: `gpu_*`, skipped on the CPU backend.

/// kiln's device, made current on this thread; `None` (the skip line printed) on the CPU.
fn gpu() -> Option<(&'static kiln::gpu::Gpu, kiln_runtime::DeviceGuard)> {
    match backend() {
        Backend::Cuda(ordinal) => {
            let gpu = kiln::gpu::Gpu::get(ordinal).unwrap();
            let guard = gpu.device().use_scoped().unwrap();
            Some((gpu, guard))
        }
        Backend::Cpu => {
            println!("skipped: no GPU");
            None
        }
    }
}

/// Device memory holding `values`, ready (its copy finished), and its address.
fn device_memory<T: kiln_runtime::memory::DeviceCopy>(
    values: &[T],
) -> (kiln_runtime::DeviceBuffer, u64) {
    let buf = kiln_runtime::DeviceBuffer::from_slice(values).unwrap();
    buf.stream().synchronize().unwrap();
    let ptr = buf.ptr();
    (buf, ptr)
}

/// A foreign CUDA tensor over `ptr`, keeping `keep` (the memory) until its deleter runs.
fn cuda_spec(
    gpu: &kiln::gpu::Gpu,
    ptr: u64,
    shape: &[i64],
    code: u8,
    bits: u8,
    keep: Box<dyn Any + Send>,
) -> Spec {
    Spec {
        ptr: Some(ptr),
        device: DLDevice { device_type: K_DL_CUDA, device_id: gpu.device().id() as i32 },
        keep: Some(keep),
        ..Spec::host(vec![], shape, code, bits)
    }
}

#[test]
fn gpu_dlpack_round_trip_shares_device_memory() {
    let Some((gpu, _current)) = gpu() else { return };
    let a = kiln::arange(12).astype(DType::Float32) * 2.0f32;
    a.eval();
    let d = a.to_device_array();
    let t = a.to_dlpack().unwrap();
    assert_eq!(
        t.device(),
        DLDevice { device_type: K_DL_CUDA, device_id: gpu.device().id() as i32 }
    );
    assert_eq!(t.data_ptr(), d.buffer().ptr());
    assert_eq!(t.strides(), Some(&[1i64][..]));
    let b = from_dlpack(t).unwrap();
    assert!(Arc::ptr_eq(&b.to_device_array(), &d), "the import is the same device array");
    assert_eq!(b.to_vec::<f32>(), a.to_vec::<f32>());
    assert_eq!(
        (&b + 1.0f32).to_vec::<f32>(),
        (0..12).map(|i| i as f32 * 2.0 + 1.0).collect::<Vec<_>>()
    );
    // The buffer stays alive while the export does: dropping every array but the tensor.
    let t = (kiln::arange(6).astype(DType::Int64) * 3i64).to_dlpack().unwrap();
    let back = from_dlpack(t).unwrap();
    assert_eq!(back.to_vec::<i64>(), [0, 3, 6, 9, 12, 15]);

    // A host tensor of a value held only on the device: copied down, flagged so.
    let c = kiln::arange(4).astype(DType::Float64) + 0.5f64;
    c.eval();
    let h = c.to_dlpack_host().unwrap();
    assert_eq!(h.device().device_type, K_DL_CPU);
    assert_ne!(h.flags() & DLPACK_FLAG_BITMASK_IS_COPIED, 0);
    assert_eq!(from_dlpack(h).unwrap().to_vec::<f64>(), [0.5, 1.5, 2.5, 3.5]);
}

#[test]
fn gpu_dlpack_foreign_device_memory_zero_copy_deleter_at_last_drop() {
    let Some((gpu, _current)) = gpu() else { return };
    for (label, dtype, code, bits) in
        [("f32", DType::Float32, K_DL_FLOAT, 32u8), ("i32", DType::Int32, K_DL_INT, 32)]
    {
        let values: Vec<u32> = (0..8)
            .map(|i| if dtype == DType::Float32 { (i as f32).to_bits() } else { i })
            .collect();
        let (buf, ptr) = device_memory(&values);
        let (t, deleted) = cuda_spec(gpu, ptr, &[2, 4], code, bits, Box::new(buf)).make();
        let a = from_dlpack(t).unwrap();
        assert_eq!(a.to_device_array().buffer().ptr(), ptr, "{label}: zero-copy");
        assert!(a.to_device_array().buffer().is_foreign());
        let b = (&a * 3i32).astype(DType::Float64);
        b.eval();
        assert_eq!(
            b.to_vec::<f64>(),
            (0..8).map(|i| i as f64 * 3.0).collect::<Vec<_>>(),
            "{label}"
        );
        assert_eq!(deleted.load(Ordering::SeqCst), 0, "{label}: released while in use");
        drop(a);
        // `b`'s expression still reads `a`'s value.
        assert_eq!(deleted.load(Ordering::SeqCst), 0, "{label}");
        drop(b);
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{label}: once, at the last drop");
    }
    // bool and float16, 0-d and empty.
    let (buf, ptr) = device_memory(&[1u8, 0, 1, 1]);
    let (t, _) = cuda_spec(gpu, ptr, &[4], K_DL_BOOL, 8, Box::new(buf)).make();
    assert_eq!(from_dlpack(t).unwrap().to_vec::<bool>(), [true, false, true, true]);
    let f16s = [half::f16::from_f32(1.5), half::f16::from_f32(-2.0)];
    let (buf, ptr) = device_memory(&f16s.map(|x| x.to_bits()));
    let (t, _) = cuda_spec(gpu, ptr, &[2], K_DL_FLOAT, 16, Box::new(buf)).make();
    assert_eq!(from_dlpack(t).unwrap().to_vec::<half::f16>(), f16s);
    let (buf, ptr) = device_memory(&[2.5f64.to_bits()]);
    let (t, _) = cuda_spec(gpu, ptr, &[], K_DL_FLOAT, 64, Box::new(buf)).make();
    let s = from_dlpack(t).unwrap();
    assert_eq!((s.shape(), s.to_vec::<f64>()), (&[] as &[usize], vec![2.5]));
    let (t, deleted) = cuda_spec(gpu, 0, &[0, 5], K_DL_FLOAT, 32, Box::new(())).make();
    assert_eq!(from_dlpack(t).unwrap().shape(), &[0, 5]);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    // Another device's tensor.
    let mut spec = cuda_spec(gpu, 0x1000, &[1], K_DL_FLOAT, 32, Box::new(()));
    spec.device.device_id = 77;
    let (t, deleted) = spec.make();
    let (op, m) = value_error(from_dlpack(t).unwrap_err());
    assert!(op == "from_dlpack" && m.contains("a tensor on cuda:77"), "{m}");
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn gpu_dlpack_strided_and_unaligned_device_tensors_are_gathered() {
    let Some((gpu, _current)) = gpu() else { return };
    let values: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let bits: Vec<u32> = values.iter().map(|x| x.to_bits()).collect();
    // Transposed: a (4, 3) matrix read as its (3, 4) transpose.
    let (buf, ptr) = device_memory(&bits);
    let (t, deleted) =
        cuda_spec(gpu, ptr, &[3, 4], K_DL_FLOAT, 32, Box::new(buf)).strides(&[1, 3]).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "copied: released once the gather is done");
    assert_ne!(a.to_device_array().buffer().ptr(), ptr);
    assert_eq!(a.to_vec::<f32>(), [0., 3., 6., 9., 1., 4., 7., 10., 2., 5., 8., 11.]);
    // Reversed, with a byte offset (x[::-1]).
    let (buf, ptr) = device_memory(&bits);
    let mut spec = cuda_spec(gpu, ptr, &[12], K_DL_FLOAT, 32, Box::new(buf)).strides(&[-1]);
    spec.byte_offset = 11 * 4;
    let (t, _) = spec.make();
    assert_eq!(
        from_dlpack(t).unwrap().to_vec::<f32>(),
        (0..12).rev().map(|i| i as f32).collect::<Vec<_>>()
    );
    // 4 bytes past a 16-byte boundary (x[1:]): contiguous, gathered for alignment.
    let (buf, ptr) = device_memory(&bits);
    let (t, deleted) = cuda_spec(gpu, ptr + 4, &[11], K_DL_FLOAT, 32, Box::new(buf)).make();
    let a = from_dlpack(t).unwrap();
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(a.to_vec::<f32>(), values[1..].to_vec());
    // complex128 at an 8-byte boundary: gathered byte by byte.
    let f64s: Vec<u64> = (0..9).map(|i| (i as f64).to_bits()).collect();
    let (buf, ptr) = device_memory(&f64s);
    let (t, _) = cuda_spec(gpu, ptr + 8, &[4], K_DL_COMPLEX, 128, Box::new(buf)).make();
    let c = from_dlpack(t).unwrap().to_vec::<num_complex::Complex64>();
    assert_eq!(
        c,
        (0..4)
            .map(|k| num_complex::Complex64::new(2.0 * k as f64 + 1.0, 2.0 * k as f64 + 2.0))
            .collect::<Vec<_>>()
    );
}

/// An owner that counts its drops.
struct Owner(Arc<AtomicUsize>);
impl Drop for Owner {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn gpu_from_device_buffer_keeps_the_owner_until_the_last_drop() {
    let Some((_gpu, _current)) = gpu() else { return };
    let (buf, ptr) = device_memory(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0].map(f64::to_bits));
    let drops = Arc::new(AtomicUsize::new(0));
    let owner = (Owner(drops.clone()), buf);
    // SAFETY: six f64 of device memory, alive while the owner is, ready (synchronised).
    let a =
        unsafe { Array::from_device_buffer(ptr, &[2, 3], DType::Float64, None, owner) }.unwrap();
    assert_eq!(a.to_device_array().buffer().ptr(), ptr);
    assert_eq!(a.sum(None).to_vec::<f64>(), [21.0]);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(a);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Strides in elements (a column): gathered, the owner released at once.
    let (buf, ptr) = device_memory(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0].map(f64::to_bits));
    let drops = Arc::new(AtomicUsize::new(0));
    let owner = (Owner(drops.clone()), buf);
    // SAFETY: as above; the strides reach elements 1 and 4.
    let col =
        unsafe { Array::from_device_buffer(ptr + 8, &[2], DType::Float64, Some(&[3]), owner) }
            .unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(col.to_vec::<f64>(), [2.0, 5.0]);
    // Strides that do not match the shape.
    // SAFETY: refused before the pointer is read.
    let e = unsafe { Array::from_device_buffer(ptr, &[2], DType::Float64, Some(&[1, 1]), ()) };
    assert_eq!(value_error(e.unwrap_err()).0, "from_device_buffer");
}

#[test]
fn gpu_dlpack_stream_handshake() {
    let Some((gpu, _current)) = gpu() else { return };
    assert_eq!(kiln::dlpack_stream().unwrap(), Some(1), "kiln's default stream is the legacy one");
    // The consumer's own stream waits for kiln's work: a read queued there sees the value.
    let consumer = kiln_runtime::Stream::non_blocking(gpu.device()).unwrap();
    let n = 1 << 22;
    let a = (kiln::arange(n).astype(DType::Float32) * 0.5f32).sin();
    a.eval();
    let t = a.to_dlpack_stream(Some(consumer.raw() as i64)).unwrap();
    let d = a.to_device_array();
    let mut seen = vec![0f32; n as usize];
    d.buffer().copy_to_host_on(&mut seen, &consumer).unwrap();
    assert_eq!(seen, a.to_vec::<f32>());
    drop(t);
    // The per-thread default stream, no synchronisation, and a kiln stream made current.
    assert!(a.to_dlpack_stream(Some(2)).is_ok());
    assert!(a.to_dlpack_stream(Some(-1)).is_ok());
    assert!(a.to_dlpack_legacy(Some(1)).is_ok());
    let s = kiln_runtime::Stream::non_blocking(gpu.device()).unwrap();
    let _on = s.use_scoped();
    assert_eq!(kiln::dlpack_stream().unwrap(), Some(s.raw() as i64));
    let (_, m) = value_error(a.to_dlpack_stream(Some(0)).unwrap_err());
    assert!(m.contains("ambiguous"), "{m}");
}

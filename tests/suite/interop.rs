//! Interop: `.npz` archives against NumPy-written fixtures (`tests/fixtures/npz/`, written by
//! `tests/fixtures/make_npz_fixtures.py`) and read back by NumPy.

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

//! Files: malformed `.npy` and `.npz` bytes, unwritable paths, missing members.

use std::path::{Path, PathBuf};

use kiln::DType;

use super::{f32s, Walk};

/// `.npy` bytes (format 1.0) with `header` as the header dict, then `data`.
fn npy(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h);
    b.extend(data);
    b
}

fn dict(descr: &str, fortran: &str, shape: &str) -> String {
    format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

pub fn walk(w: &mut Walk) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = npy(&dict("<f4", "False", "(2,)"), &[0; 8]);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("an empty file", vec![]),
        ("a bad magic", b"\x93NUMPZ\x01\x00\x10\x00{}".to_vec()),
        ("the magic alone", b"\x93NUMPY".to_vec()),
        ("version 9.9", {
            let mut b = good.clone();
            b[6] = 9;
            b
        }),
        ("a header length past the end", {
            let mut b = good.clone();
            b[8] = 0xff;
            b[9] = 0xff;
            b
        }),
        ("a version 2 length of 4 GiB", {
            let mut b = b"\x93NUMPY\x02\x00\xff\xff\xff\xff".to_vec();
            b.extend(&good[10..]);
            b
        }),
        ("a header that is not a dict", npy("[1, 2, 3]", &[])),
        ("a header that is not Python", npy("{'descr': <f4", &[])),
        ("a header without shape", npy("{'descr': '<f4', 'fortran_order': False, }", &[])),
        ("data shorter than the shape", npy(&dict("<f4", "False", "(3,)"), &[0; 8])),
        ("a string dtype", npy(&dict("<U3", "False", "(1,)"), &[0; 12])),
        ("an object dtype", npy(&dict("|O", "False", "(1,)"), &[0; 8])),
        ("an unknown dtype", npy(&dict("<q9", "False", "(1,)"), &[0; 8])),
        (
            "a structured dtype",
            npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", &[0; 4]),
        ),
        ("a negative extent", npy(&dict("<f4", "False", "(-1,)"), &[])),
        ("a float extent", npy(&dict("<f4", "False", "(2.5,)"), &[0; 8])),
        ("fortran_order not a bool", npy(&dict("<f4", "'yes'", "(2,)"), &[0; 8])),
        ("2^60 elements and no data", npy(&dict("<f4", "False", "(1152921504606846976,)"), &[])),
        ("2^63 elements", npy(&dict("<f4", "False", "(9223372036854775808,)"), &[])),
        (
            "extents whose product overflows",
            npy(&dict("<f4", "False", "(4294967296, 4294967296)"), &[]),
        ),
        (
            "extents whose product wraps to 0",
            npy(&dict("|u1", "False", "(4294967296, 4294967296, 0)"), &[]),
        ),
        ("an extent past u64", npy(&dict("<f4", "False", "(99999999999999999999999,)"), &[])),
        ("a deep header", npy(&format!("{}{}", "[".repeat(5000), "]".repeat(5000)), &[])),
    ];
    cases.push(("random bytes", (0..200u32).map(|i| (i * 2654435761u32 >> 13) as u8).collect()));
    for (i, (case, bytes)) in cases.into_iter().enumerate() {
        let p = write(d, &format!("bad{i}.npy"), &bytes);
        w.err("kiln::load_npy", "load_npy", case, || kiln::load_npy(&p));
    }
    w.err("kiln::load_npy", "load_npy", "a missing file", || kiln::load_npy(d.join("missing.npy")));
    w.err("kiln::load_npy", "load_npy", "a directory", || kiln::load_npy(d));

    // .npz: an archive kiln wrote, damaged.
    let a = f32s(&[2, 3]);
    let good = d.join("good.npz");
    kiln::savez(&good, &[("x", &a)]).unwrap();
    let zip = std::fs::read(&good).unwrap();
    let replace = |from: &[u8], to: &[u8]| {
        let mut b = zip.clone();
        let mut i = 0;
        while i + from.len() <= b.len() {
            if &b[i..i + from.len()] == from {
                b[i..i + from.len()].copy_from_slice(to);
            }
            i += 1;
        }
        b
    };
    let npz_cases: Vec<(&str, Vec<u8>)> = vec![
        ("an empty file", vec![]),
        ("not a zip", b"PK not really".to_vec()),
        ("truncated", zip[..zip.len() / 2].to_vec()),
        ("without its central directory end", zip[..zip.len() - 22].to_vec()),
        ("a member not .npy", replace(b"x.npy", b"x.txt")),
        ("a member with a bad magic (its CRC)", replace(b"\x93NUMPY", b"\x93NUMPZ")),
    ];
    for (i, (case, bytes)) in npz_cases.into_iter().enumerate() {
        let p = write(d, &format!("bad{i}.npz"), &bytes);
        w.err("kiln::load_npz", "load_npz", case, || kiln::load_npz(&p));
    }
    w.err("kiln::load_npz", "load_npz", "a missing file", || kiln::load_npz(d.join("missing.npz")));
    let npz = kiln::load_npz(&good).unwrap();
    w.err("NpzFile::try_get", "no_such", "a missing member", || npz.try_get("no_such"));

    // Writing: unwritable paths, bad names, bfloat16.
    let nowhere = Path::new("/nonexistent/kiln/dir/x.npy");
    w.err("Array::save_npy", "save_npy", "an unwritable path", || a.save_npy(nowhere));
    w.err("Array::save_npy", "save_npy", "a directory", || a.save_npy(d));
    w.err("Array::save_npy", "save_npy", "bfloat16", || {
        a.astype(DType::BFloat16).save_npy(d.join("b.npy"))
    });
    w.err("kiln::savez", "savez", "an unwritable path", || kiln::savez(nowhere, &[("x", &a)]));
    w.err("kiln::savez", "savez", "a name given twice", || {
        kiln::savez(d.join("t.npz"), &[("x", &a), ("x", &a)])
    });
    w.err("kiln::savez_compressed", "savez", "bfloat16", || {
        kiln::savez_compressed(d.join("c.npz"), &[("x", &a.astype(DType::BFloat16))])
    });
    w.err("kiln::savez_unnamed", "savez", "an unwritable path", || {
        kiln::savez_unnamed(nowhere, &[&a])
    });
    w.err("kiln::savez_compressed_unnamed", "savez", "an unwritable path", || {
        kiln::savez_compressed_unnamed(nowhere, &[&a])
    });
    w.survives("kiln::savez", "savez", "an empty name", || {
        kiln::savez(d.join("e.npz"), &[("", &a)])
    });
    w.survives("kiln::savez", "savez", "a name with a slash", || {
        kiln::savez(d.join("s.npz"), &[("a/b", &a)])
    });
    w.err("kiln::savez", "savez", "a failing array", || {
        let huge = kiln::zeros(&[1 << 60], DType::Float32);
        kiln::savez(d.join("h.npz"), &[("x", &a), ("huge", &huge)])
    });
    if d.join("h.npz").exists() {
        w.fail("kiln::savez [a failing array]: left its file");
    }
    w.err("Array::save_npy", "save_npy", "an array too big for memory", || {
        kiln::zeros(&[1 << 60], DType::Float32).save_npy(d.join("h.npy"))
    });
    if d.join("h.npy").exists() {
        w.fail("Array::save_npy [an array too big for memory]: left a file");
    }
}

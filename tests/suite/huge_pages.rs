//! Large host data on the CPU backend (`KILN_HOST_HUGE_PAGES`, on by default): `from_vec` and
//! `load_npy` copy 8 MiB or more into a buffer advised for transparent huge pages before the
//! copy writes it (as NumPy places its large arrays), small data stays the vector it was.
//! Where the system's transparent huge pages are off (`never`), or the backend is a GPU (the
//! data is uploaded as it is), the tests say so and check only the values.

use kiln::{backend, Array};
use kiln_runtime::Backend;

/// The `AnonHugePages` kB of the mapping of this process holding `addr` (`/proc/self/smaps`).
fn huge_kb_at(addr: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let head = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = head.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
    }
    None
}

/// Whether this machine's transparent huge pages can be had by advice (`always` or `madvise`).
fn thp_on() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

fn knob_on() -> bool {
    !std::env::var("KILN_HOST_HUGE_PAGES")
        .is_ok_and(|v| ["0", "off", "false", "no"].contains(&v.trim().to_lowercase().as_str()))
}

#[test]
fn large_host_data_is_copied_onto_huge_pages_on_the_cpu() {
    let n = (16 << 20) / 4;
    let v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 - 0.5).collect();
    let given = v.as_ptr() as usize;
    let a = Array::from_vec(v, &[n]);
    let h = a.try_to_host().unwrap();
    let held = h.as_slice::<f32>().unwrap();
    assert!(held.iter().enumerate().all(|(i, &x)| x == (i % 1000) as f32 - 0.5));
    if !matches!(backend(), Backend::Cpu) || !knob_on() {
        eprintln!("huge pages: not the CPU backend or KILN_HOST_HUGE_PAGES=off; values only");
        return;
    }
    let at = held.as_ptr() as usize;
    assert_ne!(at, given, "16 MiB of host data is copied into an advised buffer");
    if !thp_on() {
        eprintln!("huge pages: transparent huge pages are `never` here; not checked");
        return;
    }
    // The buffer's middle is inside its whole huge pages (the ends may not be).
    let kb = huge_kb_at(at + (8 << 20)).expect("the buffer's mapping in /proc/self/smaps");
    assert!(kb >= 2048, "{kb} kB of huge pages under the buffer");
    // The result of a host kernel over it is right too.
    let s = f64::from(a.sum(0).item::<f32>());
    let want: f64 = (0..n).map(|i| (i % 1000) as f64 - 0.5).sum();
    assert!((s - want).abs() <= want.abs() * 1e-5, "{s} against {want}");
}

/// `from_slice` copies once, a large slice straight into the advised buffer.
#[test]
fn a_large_slice_is_copied_onto_huge_pages_on_the_cpu() {
    let n = (16 << 20) / 8;
    let v: Vec<i64> = (0..n as i64).map(|i| i * 3 - 7).collect();
    let a = Array::from_slice(&v, &[n]);
    let h = a.try_to_host().unwrap();
    let held = h.as_slice::<i64>().unwrap();
    assert_eq!(held, &v[..]);
    if !matches!(backend(), Backend::Cpu) || !knob_on() || !thp_on() {
        eprintln!("huge pages: not the CPU backend, the knob off or THP never; values only");
        return;
    }
    let kb = huge_kb_at(held.as_ptr() as usize + (8 << 20)).expect("the buffer's mapping");
    assert!(kb >= 2048, "{kb} kB of huge pages under the slice's copy");
}

#[test]
fn small_host_data_keeps_its_vector() {
    let v: Vec<f64> = (0..1000).map(|i| i as f64).collect();
    let given = v.as_ptr() as usize;
    let a = Array::from_vec(v, &[1000]);
    let h = a.try_to_host().unwrap();
    let held = h.as_slice::<f64>().unwrap();
    if matches!(backend(), Backend::Cpu) {
        assert_eq!(held.as_ptr() as usize, given, "a 8 KB vector is the array's buffer");
    }
    assert_eq!(held[999], 999.0);
}

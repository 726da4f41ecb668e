use kiln::Array;
fn main() {
    let s = Array::from_vec(vec![0.5f32; 1024], &[1024]);
    let s = s.eval().clone();
    let tiny = |mut t: Array| {
        for _ in 0..16 {
            t = t * 1.0001 + 0.5;
            t = t - 0.25;
            t = t * 0.999;
        }
        t
    };
    let n = 200000;
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(tiny(s.clone()));
    }
    println!("build+drop {:.2} µs", t0.elapsed().as_secs_f64() * 1e6 / n as f64);
    let mut keep = Vec::with_capacity(20000);
    let t0 = std::time::Instant::now();
    for _ in 0..20000 {
        keep.push(tiny(s.clone()));
    }
    println!("build only {:.2} µs", t0.elapsed().as_secs_f64() * 1e6 / 20000.0);
    let t0 = std::time::Instant::now();
    drop(keep);
    println!("drop only {:.2} µs", t0.elapsed().as_secs_f64() * 1e6 / 20000.0);
}

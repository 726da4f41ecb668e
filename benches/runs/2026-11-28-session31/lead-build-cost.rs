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
    let mut bd = Vec::new();
    let mut ev = Vec::new();
    for _ in 0..15 {
        let n = 20000;
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(tiny(s.clone()));
        }
        bd.push(t0.elapsed().as_secs_f64() * 1e6 / n as f64);
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            tiny(s.clone()).eval();
        }
        ev.push(t0.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    bd.sort_by(f64::total_cmp);
    ev.sort_by(f64::total_cmp);
    println!(
        "build+drop min {:.2} med {:.2} µs; build+eval+drop min {:.2} med {:.2}",
        bd[0], bd[7], ev[0], ev[7]
    );
}

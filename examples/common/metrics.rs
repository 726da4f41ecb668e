//! Clustering metrics shared by the examples.

/// The adjusted Rand index of two labelings (Hubert and Arabie), as scikit-learn's.
pub fn adjusted_rand_index(a: &[i64], b: &[i64]) -> f64 {
    let comb2 = |n: f64| n * (n - 1.0) / 2.0;
    let (ka, kb) = (*a.iter().max().unwrap() as usize + 1, *b.iter().max().unwrap() as usize + 1);
    let mut table = vec![vec![0f64; kb]; ka];
    for (&i, &j) in a.iter().zip(b) {
        table[i as usize][j as usize] += 1.0;
    }
    let index: f64 = table.iter().flatten().map(|&v| comb2(v)).sum();
    let rows: f64 = table.iter().map(|r| comb2(r.iter().sum())).sum();
    let cols: f64 = (0..kb).map(|j| comb2(table.iter().map(|r| r[j]).sum())).sum();
    let expected = rows * cols / comb2(a.len() as f64);
    let max = (rows + cols) / 2.0;
    (index - expected) / (max - expected)
}

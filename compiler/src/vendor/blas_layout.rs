//! How a [`super::MatMulCall`]'s strided operands map onto a column-major BLAS (cuBLAS): the
//! row-major product `C = A @ B` is computed as `Cᵀ = Bᵀ Aᵀ`, each row-major operand read as
//! its transpose through an op flag and a leading dimension, batches as strided-batched calls
//! over runs of batch axes that step evenly. Backend-neutral arithmetic on strides, tested
//! here without a GPU.

/// How cuBLAS reads a row-major matrix `P` (`rows × cols`, element (i, j) at `i*sr + j*sc`) as
/// the column-major `Pᵀ`: `(trans, ld)` such that `op(stored)` with leading dimension `ld` is
/// `Pᵀ`. `None`: no unit stride along either axis (or a leading dimension too small).
pub fn transposed_view(rows: usize, cols: usize, sr: isize, sc: isize) -> Option<(bool, usize)> {
    // op N: the stored `cols × rows` column-major matrix is Pᵀ itself: (j, i) at j + i*ld.
    if sc == 1 || cols == 1 {
        let ld = if rows == 1 { cols.max(1) as isize } else { sr };
        if ld >= cols.max(1) as isize {
            return Some((false, ld as usize));
        }
    }
    // op T: the stored `rows × cols` column-major matrix is P: (i, j) at i + j*ld.
    if sr == 1 || rows == 1 {
        let ld = if cols == 1 { rows.max(1) as isize } else { sc };
        if ld >= rows.max(1) as isize {
            return Some((true, ld as usize));
        }
    }
    None
}

/// The batch axes merged where all three operands step evenly: (extent, stride of a, of b, of c).
pub fn batch_runs(
    batch: &[usize],
    a: &[isize],
    b: &[isize],
    c: &[isize],
) -> Vec<(usize, [isize; 3])> {
    let mut out: Vec<(usize, [isize; 3])> = Vec::new();
    for i in 0..batch.len() {
        let (n, s) = (batch[i], [a[i], b[i], c[i]]);
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some((pn, ps)) if (0..3).all(|j| ps[j] == s[j] * n as isize) => {
                *pn *= n;
                *ps = s;
            }
            _ => out.push((n, s)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{batch_runs, transposed_view};

    #[test]
    fn row_major_matrices_as_cublas_operands() {
        // A C-contiguous 3x4 matrix: its transpose column-major, op N, ld 4.
        assert_eq!(transposed_view(3, 4, 4, 1), Some((false, 4)));
        // A transposed view (3x4 over a 4x3 buffer): op T, ld 3.
        assert_eq!(transposed_view(3, 4, 1, 3), Some((true, 3)));
        // Every other row of a 6x4 buffer: op N, ld 8.
        assert_eq!(transposed_view(3, 4, 8, 1), Some((false, 8)));
        // A column slice of a 3x10 buffer: op N with ld 10 (reads 4 of each 10).
        assert_eq!(transposed_view(3, 4, 10, 1), Some((false, 10)));
        // Step slices along both axes, a flip, a broadcast inside the matrix: gathered.
        assert_eq!(transposed_view(3, 4, 8, 2), None);
        assert_eq!(transposed_view(3, 4, 4, -1), None);
        assert_eq!(transposed_view(3, 4, 0, 1), None);
        // Vectors: any stride along the extent-1 axis.
        assert_eq!(transposed_view(1, 4, 0, 1), Some((false, 4)));
        assert_eq!(transposed_view(4, 1, 1, 0), Some((false, 1)));
    }

    #[test]
    fn batch_axes_merge_where_all_operands_step_evenly() {
        // (2, 3) batches, all contiguous: one run of 6.
        assert_eq!(batch_runs(&[2, 3], &[36, 12], &[60, 20], &[18, 6]), vec![(6, [12, 20, 6])]);
        // B broadcast over the first axis only: two runs.
        assert_eq!(
            batch_runs(&[2, 3], &[36, 12], &[0, 20], &[18, 6]),
            vec![(2, [36, 0, 18]), (3, [12, 20, 6])]
        );
        // B broadcast over both: still one run (0 = 0 * 3).
        assert_eq!(batch_runs(&[2, 3], &[36, 12], &[0, 0], &[18, 6]), vec![(6, [12, 0, 6])]);
        assert_eq!(batch_runs(&[1], &[5], &[5], &[5]), vec![]);
    }
}

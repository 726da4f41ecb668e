//! NumPy's layout functions (`moveaxis`, `atleast_*d`, `fliplr`, `flipud`, `tril`, `triu`,
//! `roll`, the stacks, `split`/`array_split`) against NumPy's fixtures (`tests/fixtures/shaping/`,
//! from `make_shaping_fixtures.py`), on whichever backend runs the suite; their typed errors;
//! `roll` as a gather; `linspace_with` and `empty`.

use kiln::Array;

use crate::numpy_fixtures::fixture_cases;

fixture_cases! { "shaping/cases.txt";
    moveaxis_0_to_last => |a| a[0].moveaxis(0, -1);
    moveaxis_last_to_1 => |a| a[0].moveaxis(-1, 1);
    atleast_3d_vec, atleast_3d_mat => |a| a[0].atleast_3d();
    atleast_2d_0d => |a| a[0].atleast_2d();
    fliplr_m => |a| a[0].try_fliplr().unwrap();
    flipud_x => |a| a[0].try_flipud().unwrap();
    tril_m => |a| a[0].try_tril(0).unwrap();
    tril_k1_batched => |a| a[0].try_tril(1).unwrap();
    triu_km1 => |a| a[0].try_triu(-1).unwrap();
    triu_bool => |a| a[0].try_triu(1).unwrap();
    roll_axis1 => |a| a[0].roll(2, Some(1));
    roll_negative_axis0 => |a| a[0].roll(-1, Some(0));
    roll_flat => |a| a[0].roll(5, None);
    roll_past_length => |a| a[0].roll(16, Some(0));
    vstack_vecs => |a| kiln::try_vstack(&[&a[0], &a[1]]).unwrap();
    hstack_vecs => |a| kiln::try_hstack(&[&a[0], &a[1]]).unwrap();
    hstack_mats => |a| kiln::try_hstack(&[&a[0], &(&a[0] * 2)]).unwrap();
    dstack_vecs => |a| kiln::try_dstack(&[&a[0], &a[1]]).unwrap();
    column_stack_vecs => |a| kiln::try_column_stack(&[&a[0], &a[1]]).unwrap();
    array_split_middle => |a| a[0].try_array_split(3, 0).unwrap().remove(1);
    array_split_axis1_last => |a| a[0].try_array_split(3, 1).unwrap().remove(2);
    pad_constant => |a| a[0].pad(&[(1, 2), (0, 3)], kiln::PadMode::Constant(-7.5));
    pad_edge => |a| a[0].pad(&[(2, 1), (3, 0)], kiln::PadMode::Edge);
    pad_reflect => |a| a[0].pad(&[(2, 2), (3, 5)], kiln::PadMode::Reflect);
    pad_symmetric => |a| a[0].pad(&[(3, 1), (4, 2)], kiln::PadMode::Symmetric);
    pad_wrap => |a| a[0].pad(&[(7, 3)], kiln::PadMode::Wrap);
    pad_reflect_long => |a| a[0].pad(&[(9, 11)], kiln::PadMode::Reflect);
    pad_wrap_gather => |a| a[0].pad(&[(40, 37)], kiln::PadMode::Wrap);
    pad_symmetric_gather => |a| a[0].pad(&[(50, 1), (2, 3)], kiln::PadMode::Symmetric);
    pad_edge_wide => |a| a[0].pad(&[(30, 29)], kiln::PadMode::Edge);
    fftshift_all => |a| kiln::fft::fftshift(&a[0], None).unwrap();
    ifftshift_axis1 => |a| kiln::fft::ifftshift(&a[0], Some(&[1])).unwrap();
    fftfreq_odd => |_| kiln::fft::fftfreq(7, 0.5);
    fftfreq_even => |_| kiln::fft::fftfreq(8, 1.0);
    rfftfreq_even => |_| kiln::fft::rfftfreq(8, 0.1);
    tri_4x6_k1 => |_| kiln::tri(4, Some(6), 1, kiln::DType::Float32);
    diag_vec, diag_of_matrix_k1 => |a| kiln::try_diag(&a[0], if a[0].ndim() == 1 { 0 } else { 1 }).unwrap();
    diag_vec_k2 => |a| kiln::try_diag(&a[0], 2).unwrap();
    diag_vec_km1 => |a| kiln::try_diag(&a[0], -1).unwrap();
    diagonal_km2 => |a| a[0].diagonal(-2);
    meshgrid_xy_second => |a| kiln::try_meshgrid(&[&a[0], &a[1]], "xy").unwrap().remove(1);
    meshgrid_ij_first => |a| kiln::try_meshgrid(&[&a[0], &a[1]], "ij").unwrap().remove(0);
    tile_vec_2x3 => |a| a[0].tile(&[2, 3]);
    tile_mat_short_reps => |a| a[0].tile(&[2]);
    tile_x_longer_reps => |a| a[0].tile(&[2, 1, 1, 3]);
    tile_bool_zero => |a| a[0].tile(&[0, 2]);
    repeat_flat => |a| a[0].repeat(2, None);
    repeat_axis1 => |a| a[0].repeat(3, Some(1));
    repeat_axis_neg => |a| a[0].repeat(2, Some(-1));
    repeat_each_axis0 => |a| a[0].repeat_each(&[2, 0, 1, 3], Some(0));
    repeat_each_flat => |a| a[0].repeat_each(&[1, 2, 3, 0], None);
    rot90_k1 => |a| a[0].rot90(1, (0, 1));
    rot90_k2 => |a| a[0].rot90(2, (0, 1));
    rot90_k3_axes12 => |a| a[0].rot90(3, (1, 2));
    rot90_km1_axes20 => |a| a[0].rot90(-1, (2, 0));
    broadcast_arrays_second => |a| kiln::broadcast_arrays(&[&a[0].expand_dims(&[1]), &a[1].slice(&kiln::s![0])]).remove(1);
    broadcast_arrays_first => |a| kiln::broadcast_arrays(&[&a[0].expand_dims(&[1]), &a[1].slice(&kiln::s![0])]).remove(0);
    linspace_no_endpoint => |_| kiln::linspace_with(0.0, 1.0, 5, false, kiln::DType::Float64);
    linspace_int_floors => |_| kiln::linspace_with(-3.0, 4.0, 6, true, kiln::DType::Int32);
    linspace_f32 => |_| kiln::linspace_with(1.0, 2.0, 7, true, kiln::DType::Float32);
}

#[test]
fn empty_is_zeros_of_the_shape_and_dtype() {
    let e = kiln::empty(&[2, 3], kiln::DType::Int16);
    assert_eq!((e.shape(), e.dtype()), (&[2usize, 3][..], kiln::DType::Int16));
    assert_eq!(e.to_vec::<i16>(), vec![0; 6]);
    let f = kiln::empty_like(&Array::from_vec(vec![1.5f32, 2.5], &[2]));
    assert_eq!(f.to_vec::<f32>(), vec![0.0, 0.0]);
}

#[test]
fn shaping_errors_name_the_op() {
    let v = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]);
    let e = v.try_fliplr().unwrap_err().to_string();
    assert!(e.contains("fliplr"), "{e}");
    let e = v.try_tril(0).unwrap_err().to_string();
    assert!(e.contains("tril"), "{e}");
    let e = v.try_split(2, 0).unwrap_err().to_string();
    assert!(e.contains("split") && e.contains("equal division"), "{e}");
    let e = v.try_array_split(0, 0).unwrap_err().to_string();
    assert!(e.contains("array_split"), "{e}");
    let e = v.try_moveaxis(1, 0).unwrap_err().to_string();
    assert!(e.contains("moveaxis"), "{e}");
    let e = v.try_pad(&[(1, 1), (1, 1)], kiln::PadMode::Edge).unwrap_err().to_string();
    assert!(e.contains("pad") && e.contains("[5]"), "{e}");
    let empty = kiln::zeros(&[0], kiln::DType::Float32);
    let e = empty.try_pad(&[(1, 1)], kiln::PadMode::Wrap).unwrap_err().to_string();
    assert!(e.contains("pad") && e.contains("empty axis"), "{e}");
    assert_eq!(empty.pad(&[(1, 2)], kiln::PadMode::Constant(3.0)).to_vec::<f32>(), vec![3.0; 3]);
    let e = kiln::try_meshgrid(&[&v], "xz").unwrap_err().to_string();
    assert!(e.contains("meshgrid") && e.contains("indexing"), "{e}");
    let e = v.try_diagonal(0).unwrap_err().to_string();
    assert!(e.contains("diagonal") && e.contains("[5]"), "{e}");
    assert_eq!(kiln::zeros(&[2, 3], kiln::DType::Int32).diagonal(5).shape(), &[0]);
    let e = v.try_roll(1, Some(2)).unwrap_err().to_string();
    assert!(e.contains("roll"), "{e}");
    // split into equal parts: views whose values are the slices'
    let parts = v.try_split(5, 0).unwrap();
    assert_eq!(
        parts.iter().map(|p| p.to_vec::<f32>()[0]).collect::<Vec<_>>(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0]
    );
}

/// `roll` of a computed value: one kernel, the value computed at the shifted positions (a join
/// of two slices of it).
#[test]
fn roll_of_an_expression_fuses() {
    let x = Array::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]);
    x.eval();
    let y = (&x * 2.0f32).roll(1, Some(1));
    let kernels = kiln::explain(&[&y]).report.kernel_count();
    assert_eq!(kernels, 1, "roll of x * 2");
    assert_eq!(
        y.to_vec::<f32>(),
        vec![6.0, 0.0, 2.0, 4.0, 14.0, 8.0, 10.0, 12.0, 22.0, 16.0, 18.0, 20.0]
    );
}

/// `y` on the active backend in `kernels` kernels, against the evaluator on its own graph: the
/// same bits (the producers here are exact, so any difference is the join's).
#[track_caller]
fn join_case(name: &str, y: &Array, kernels: usize) {
    let report = kiln::explain(&[y]).report;
    assert_eq!(report.kernel_count(), kernels, "{name}\n{report}");
    let l = kiln::lower(&[y]);
    let inputs: Vec<&kiln::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
    let got = y.try_to_host().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(*got, want, "{name}\n{report}");
}

/// concatenate, stack and ascontiguousarray compile into the kernel of their producers and
/// readers on either backend (issue 20 §1): each element loads one operand element.
#[test]
fn joins_fuse_with_producers_and_readers() {
    let ramp = |n: usize, dt: kiln::DType| {
        Array::from_vec((0..n).map(|i| (i as f64) * 0.5 - 3.0).collect::<Vec<f64>>(), &[n])
            .astype(dt)
    };
    let a = ramp(5, kiln::DType::Float32);
    let b = ramp(7, kiln::DType::Float32);
    join_case("1-D, a producer twice", &kiln::concatenate(&[&a, &(&a * 2.0), &(&b + 1.0)], 0), 1);
    let x = ramp(12, kiln::DType::Float64).reshape(&[4, 3]);
    let y = ramp(8, kiln::DType::Float64).reshape(&[2, 4]);
    join_case("axis 1, a transposed operand", &kiln::concatenate(&[&x, &y.t()], 1), 1);
    join_case("axis -1 of a flipped view", &kiln::concatenate(&[&x.flip(Some(&[0])), &x], -1), 1);
    let row = ramp(3, kiln::DType::Float64);
    let bcast = row.broadcast_to(&[2, 3]);
    join_case("a broadcast operand", &(kiln::concatenate(&[&x, &bcast], 0) - 1.0), 1);
    let i = ramp(6, kiln::DType::Int32).reshape(&[2, 3]);
    let st = kiln::stack(&[&i, &(&i * 3), &(-&i)], -1);
    assert_eq!(st.shape(), &[2, 3, 3]);
    join_case("stack of int32 on the last axis", &st, 1);
    join_case("stack on axis 0", &kiln::stack(&[&i, &i.flip(Some(&[1]))], 0), 1);
    let m = ramp(6, kiln::DType::Float32).greater(0.0f32);
    join_case("bool", &kiln::concatenate(&[&m, &m.logical_not()], 0), 1);
    let z = ramp(4, kiln::DType::Complex64);
    join_case("complex64", &kiln::concatenate(&[&z, &(&z * 2.0)], 0), 1);
    let h = ramp(4, kiln::DType::Float16);
    join_case("float16 stack", &kiln::stack(&[&h, &(&h + 1.0)], 1), 1);
    let empty = kiln::zeros(&[0, 3], kiln::DType::Float64);
    join_case("an empty operand", &kiln::concatenate(&[&empty, &x, &empty], 0), 1);
    let many: Vec<Array> = (0..12).map(|k| &a + k as f32).collect();
    let refs: Vec<&Array> = many.iter().collect();
    join_case("twelve operands", &kiln::concatenate(&refs, 0), 1);
    join_case("a row sum of a join", &kiln::concatenate(&[&x, &(&x * 2.0)], 0).sum(1), 1);
    join_case("a sum of everything", &kiln::concatenate(&[&a, &b], 0).sum(None), 1);
    let c = (x.t() * 2.0).ascontiguousarray();
    join_case("ascontiguousarray of a transposed producer", &c, 1);
    join_case("ascontiguousarray inside an expression", &(&c + 1.0), 1);
}

/// `pad` of a computed value in every mode is a join of views in its producer's kernel: one
/// kernel, bit-equal to the evaluator, under a reader too.
#[test]
fn pad_joins_its_producer() {
    let x = Array::from_vec((0..20).map(|i| i as f32 * 0.5 - 4.0).collect::<Vec<_>>(), &[4, 5]);
    let y = &x * 2.0 + 1.0;
    for mode in [
        kiln::PadMode::Constant(-1.5),
        kiln::PadMode::Edge,
        kiln::PadMode::Reflect,
        kiln::PadMode::Symmetric,
        kiln::PadMode::Wrap,
    ] {
        join_case(&format!("{mode:?}"), &y.pad(&[(3, 2), (1, 6)], mode), 1);
        join_case(&format!("{mode:?} under a sum"), &y.pad(&[(0, 2), (4, 0)], mode).sum(1), 1);
    }
    join_case(
        "reflect past the axis's length",
        &y.pad(&[(9, 7), (0, 0)], kiln::PadMode::Reflect),
        1,
    );
}

/// tile, repeat and rot90 of a computed value are index maps in its kernel (views), not
/// copies; repeat with counts per element is a gather; their typed errors name the op.
#[test]
fn tile_repeat_rot90_fuse_and_their_errors() {
    let x = Array::from_vec((0..6).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3]);
    join_case("tile of a producer", &((&x * 2.0).tile(&[2, 3]) + 1.0), 1);
    join_case("repeat of a producer", &(&x - 1.0).repeat(2, Some(1)), 1);
    join_case("rot90 of a producer", &(&x * 3.0).rot90(1, (0, 1)), 1);
    join_case("a tiled join", &kiln::concatenate(&[&x, &(&x * 2.0)], 1).tile(&[2, 1]), 1);
    let e = x.try_repeat_each(&[1, 2], Some(1)).unwrap_err().to_string();
    assert!(e.contains("repeat") && e.contains("(3,) (2,)"), "{e}");
    let e = x.try_repeat(2, Some(2)).unwrap_err().to_string();
    assert!(e.contains("repeat"), "{e}");
    let e = x.try_rot90(1, (1, 1)).unwrap_err().to_string();
    assert!(e.contains("rot90") && e.contains("different"), "{e}");
    let v = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    let e = v.try_rot90(1, (0, 1)).unwrap_err().to_string();
    assert!(e.contains("rot90") && e.contains("[2]"), "{e}");
    let e = kiln::try_broadcast_arrays(&[&x, &v]).unwrap_err().to_string();
    assert!(e.contains("broadcast_arrays"), "{e}");
    assert_eq!(x.to_vec::<f32>(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "x stays valid");
}

//! Views, joins, shaping, tiling, indexing and creation: reshape sizes, permutations, slices,
//! joins of mismatched arrays, bad split/pad/repeat/tile arguments, indices out of range.

use kiln::{s, Array, DType, Index, PadMode, SliceArg, TakeMode};

use super::{bools, c64s, f32s, i64s, nans, Walk};

pub fn walk(w: &mut Walk) {
    views(w);
    joins(w);
    shaping(w);
    indexing(w);
    creation(w);
}

fn views(w: &mut Walk) {
    let a = || f32s(&[2, 3]);
    let f = "Array::try_reshape";
    w.err(f, "reshape", "6 elements into (4,)", || a().try_reshape(&[4]));
    w.err(f, "reshape", "two -1", || a().try_reshape(&[-1, -1]));
    w.err(f, "reshape", "-2", || a().try_reshape(&[-2, -3]));
    w.err(f, "reshape", "-1 with a 0", || a().try_reshape(&[0, -1]));
    w.err(f, "reshape", "-1 not dividing", || a().try_reshape(&[4, -1]));
    w.err(f, "reshape", "i64::MIN", || a().try_reshape(&[i64::MIN]));
    w.err(f, "reshape", "an empty array into (-1, 0)", || f32s(&[0, 3]).try_reshape(&[-1, 0]));
    w.err(f, "reshape", "6 elements into (-1, 0)", || a().try_reshape(&[-1, 0]));
    w.err(f, "reshape", "(2^40, 2^40, -1): the known extents overflow", || {
        a().try_reshape(&[1 << 40, 1 << 40, -1])
    });
    w.err(f, "reshape", "an empty array into (2^40, 2^40, 0)", || {
        f32s(&[0, 3]).try_reshape(&[1 << 40, 1 << 40, 0])
    });
    let f = "Array::try_permute";
    w.err(f, "permute", "too few axes", || a().try_permute(&[0]));
    w.err(f, "permute", "repeated axes", || a().try_permute(&[1, 1]));
    w.err(f, "permute", "axis 2", || a().try_permute(&[0, 2]));
    w.err(f, "permute", "axis i64::MIN", || a().try_permute(&[0, i64::MIN]));
    let f = "Array::try_broadcast_to";
    w.err(f, "broadcast_to", "(2, 3) to (3, 3)", || a().try_broadcast_to(&[3, 3]));
    w.err(f, "broadcast_to", "(2, 3) to (3,)", || a().try_broadcast_to(&[3]));
    w.err(f, "broadcast_to", "(2, 3) to (0, 3)", || a().try_broadcast_to(&[0, 3]));
    let f = "Array::try_slice";
    w.err(f, "slice", "step 0", || a().try_slice(&s![.., ..;0]));
    w.err(f, "slice", "too many indices", || a().try_slice(&s![0, 0, 0]));
    w.err(f, "slice", "index 2 of 2", || a().try_slice(&s![2]));
    w.err(f, "slice", "index -3 of 2", || a().try_slice(&s![-3]));
    w.err(f, "slice", "index i64::MIN", || a().try_slice(&s![i64::MIN]));
    w.err(f, "slice", "two ellipses", || a().try_slice(&[SliceArg::Ellipsis, SliceArg::Ellipsis]));
    w.survives(f, "slice", "i64 extremes", || {
        a().try_slice(&[
            SliceArg::Range { start: Some(i64::MIN), stop: Some(i64::MAX), step: i64::MIN },
            SliceArg::Range { start: Some(i64::MAX), stop: Some(i64::MIN), step: i64::MAX },
        ])
    });
    let f = "Array::try_expand_dims";
    w.err(f, "expand_dims", "axis 3 of a 3-D result", || a().try_expand_dims(&[3]));
    w.err(f, "expand_dims", "axes (0, 0)", || a().try_expand_dims(&[0, 0]));
    w.err(f, "expand_dims", "axis i64::MAX", || a().try_expand_dims(&[i64::MAX]));
    let f = "Array::try_squeeze";
    w.err(f, "squeeze", "an axis of 3", || a().try_squeeze(Some(&[1])));
    w.err(f, "squeeze", "axis 2", || f32s(&[1, 3]).try_squeeze(Some(&[2])));
    w.err(f, "squeeze", "axes (0, 0)", || f32s(&[1, 3]).try_squeeze(Some(&[0, 0])));
    let f = "Array::try_flip";
    w.err(f, "flip", "axis 2", || a().try_flip(Some(&[2])));
    w.err(f, "flip", "axes (0, 0)", || a().try_flip(Some(&[0, -2])));
    w.err(f, "flip", "axis 0 of 0-d", || f32s(&[]).try_flip(Some(&[0])));
}

fn joins(w: &mut Walk) {
    let f = "kiln::try_concatenate";
    w.err(f, "concatenate", "no arrays", || kiln::try_concatenate(&[], 0));
    w.err(f, "concatenate", "(2, 3) and (2, 4) along 0", || {
        kiln::try_concatenate(&[&f32s(&[2, 3]), &f32s(&[2, 4])], 0)
    });
    w.err(f, "concatenate", "2-D and 1-D", || {
        kiln::try_concatenate(&[&f32s(&[2, 3]), &f32s(&[3])], 0)
    });
    w.err(f, "concatenate", "axis 2", || kiln::try_concatenate(&[&f32s(&[2, 3])], 2));
    w.err(f, "concatenate", "0-d arrays", || kiln::try_concatenate(&[&f32s(&[]), &f32s(&[])], 0));
    let f = "kiln::try_stack";
    w.err(f, "stack", "no arrays", || kiln::try_stack(&[], 0));
    w.err(f, "stack", "(3,) and (4,)", || kiln::try_stack(&[&f32s(&[3]), &f32s(&[4])], 0));
    w.err(f, "stack", "axis 2 of a 2-D result", || kiln::try_stack(&[&f32s(&[3])], 2));
    let f = "kiln::try_vstack";
    w.err(f, "vstack", "no arrays", || kiln::try_vstack(&[]));
    w.err(f, "vstack", "(3,) and (4,)", || kiln::try_vstack(&[&f32s(&[3]), &f32s(&[4])]));
    let f = "kiln::try_hstack";
    w.err(f, "hstack", "no arrays", || kiln::try_hstack(&[]));
    w.err(f, "hstack", "(2, 3) and (3, 3)", || kiln::try_hstack(&[&f32s(&[2, 3]), &f32s(&[3, 3])]));
    let f = "kiln::try_dstack";
    w.err(f, "dstack", "no arrays", || kiln::try_dstack(&[]));
    w.err(f, "dstack", "(2, 3) and (3, 3)", || kiln::try_dstack(&[&f32s(&[2, 3]), &f32s(&[3, 3])]));
    let f = "kiln::try_column_stack";
    w.err(f, "column_stack", "no arrays", || kiln::try_column_stack(&[]));
    w.err(f, "column_stack", "(3,) and (4,)", || {
        kiln::try_column_stack(&[&f32s(&[3]), &f32s(&[4])])
    });
    let f = "kiln::try_broadcast_arrays";
    w.err(f, "broadcast_arrays", "(2, 3) and (4,)", || {
        kiln::try_broadcast_arrays(&[&f32s(&[2, 3]), &f32s(&[4])])
    });
    let f = "kiln::try_meshgrid";
    w.err(f, "meshgrid", "indexing 'zz'", || kiln::try_meshgrid(&[&f32s(&[3])], "zz"));
    w.err(f, "meshgrid", "2-D inputs", || kiln::try_meshgrid(&[&f32s(&[2, 2])], "xy"));
}

fn shaping(w: &mut Walk) {
    let a = || f32s(&[2, 3]);
    let f = "Array::try_moveaxis";
    w.err(f, "moveaxis", "source 2", || a().try_moveaxis(2, 0));
    w.err(f, "moveaxis", "destination -3", || a().try_moveaxis(0, -3));
    w.err("Array::try_fliplr", "fliplr", "1-D", || f32s(&[3]).try_fliplr());
    w.err("Array::try_flipud", "flipud", "0-d", || f32s(&[]).try_flipud());
    w.err("Array::try_tril", "tril", "0-d", || f32s(&[]).try_tril(0));
    w.err("Array::try_triu", "triu", "0-d", || f32s(&[]).try_triu(0));
    w.survives("Array::try_tril", "tril", "k = i64::MIN", || a().try_tril(i64::MIN));
    w.survives("Array::try_triu", "triu", "k = i64::MAX", || a().try_triu(i64::MAX));
    let f = "Array::try_roll";
    w.err(f, "roll", "axis 2", || a().try_roll(1, Some(2)));
    w.survives(f, "roll", "shift i64::MIN", || a().try_roll(i64::MIN, Some(1)));
    w.survives(f, "roll", "empty", || f32s(&[0, 3]).try_roll(5, Some(0)));
    let f = "Array::try_array_split";
    w.err(f, "array_split", "0 sections", || a().try_array_split(0, 0));
    w.err(f, "array_split", "axis 2", || a().try_array_split(2, 2));
    let f = "Array::try_split";
    w.err(f, "split", "0 sections", || a().try_split(0, 0));
    w.err(f, "split", "3 into 2", || a().try_split(2, 1));
    w.err(f, "split", "axis -3", || a().try_split(1, -3));
    let f = "Array::try_pad";
    w.err(f, "pad", "one pair for 2-D", || a().try_pad(&[(1, 1)], PadMode::Constant(0.0)));
    w.err(f, "pad", "three pairs for 2-D", || {
        a().try_pad(&[(1, 1), (1, 1), (1, 1)], PadMode::Constant(0.0))
    });
    w.err(f, "pad", "reflect an empty axis", || {
        f32s(&[0, 3]).try_pad(&[(1, 1), (0, 0)], PadMode::Reflect)
    });
    w.err(f, "pad", "edge of an empty axis", || {
        f32s(&[0, 3]).try_pad(&[(1, 0), (0, 0)], PadMode::Edge)
    });
    w.err(f, "pad", "symmetric of an empty axis", || {
        f32s(&[0, 3]).try_pad(&[(0, 2), (0, 0)], PadMode::Symmetric)
    });
    w.survives(f, "pad", "a NaN constant", || {
        a().try_pad(&[(1, 1), (0, 0)], PadMode::Constant(f64::NAN))
    });
    w.survives(f, "pad", "reflect wider than the axis", || {
        a().try_pad(&[(7, 9), (0, 0)], PadMode::Reflect)
    });
    let f = "Array::try_diagonal";
    w.err(f, "diagonal", "1-D", || f32s(&[3]).try_diagonal(0));
    w.survives(f, "diagonal", "offset i64::MIN", || a().try_diagonal(i64::MIN));
    let f = "kiln::try_diag";
    w.err(f, "diag", "3-D", || kiln::try_diag(&f32s(&[2, 2, 2]), 0));
    w.err(f, "diag", "0-d", || kiln::try_diag(&f32s(&[]), 0));
    w.survives(f, "diag", "offset i64::MAX of a matrix", || kiln::try_diag(&a(), i64::MAX));
    let f = "Array::try_tile";
    w.survives(f, "tile", "zero reps", || a().try_tile(&[0, 0, 0]));
    let f = "Array::try_repeat";
    w.err(f, "repeat", "axis 2", || a().try_repeat(2, Some(2)));
    let f = "Array::try_repeat_each";
    w.err(f, "repeat", "3 counts for an axis of 2", || a().try_repeat_each(&[1, 2, 3], Some(0)));
    w.err(f, "repeat", "2 counts for 6 elements", || a().try_repeat_each(&[1, 2], None));
    w.err(f, "repeat", "axis 2", || a().try_repeat_each(&[1], Some(2)));
    let f = "Array::try_rot90";
    w.err(f, "rot90", "equal axes", || a().try_rot90(1, (0, 0)));
    w.err(f, "rot90", "axes (0, -2)", || a().try_rot90(1, (0, -2)));
    w.err(f, "rot90", "axis 2", || a().try_rot90(1, (0, 2)));
    w.err(f, "rot90", "1-D", || f32s(&[3]).try_rot90(1, (0, 1)));
    w.survives(f, "rot90", "k = i64::MIN", || a().try_rot90(i64::MIN, (0, 1)));
}

fn indexing(w: &mut Walk) {
    let a = || f32s(&[2, 3]);
    let idx = |v: Vec<i64>| {
        let n = v.len();
        Array::from_vec(v, &[n])
    };
    let f = "Array::try_take";
    w.err(f, "take", "index 6 of 6", || a().try_take(&idx(vec![0, 6]), None));
    w.err(f, "take", "index -7 of 6", || a().try_take(&idx(vec![-7]), None));
    w.err(f, "take", "index 3 along an axis of 3", || a().try_take(&idx(vec![3]), Some(1)));
    w.err(f, "take", "float indices", || a().try_take(&f32s(&[2]), None));
    w.err(f, "take", "bool indices", || a().try_take(&bools(&[2]), None));
    w.err(f, "take", "axis 2", || a().try_take(&idx(vec![0]), Some(2)));
    w.err(f, "take", "from an empty array", || f32s(&[0]).try_take(&idx(vec![0]), None));
    let f = "Array::try_take_mode";
    w.err(f, "take", "wrap from an empty axis", || {
        f32s(&[0, 3]).try_take_mode(&idx(vec![1]), Some(0), TakeMode::Wrap)
    });
    w.err(f, "take", "clip float indices", || a().try_take_mode(&f32s(&[2]), None, TakeMode::Clip));
    let f = "Array::try_take_along_axis";
    w.err(f, "take_along_axis", "1-D indices for 2-D", || {
        a().try_take_along_axis(&idx(vec![0]), 1)
    });
    w.err(f, "take_along_axis", "index 3", || {
        a().try_take_along_axis(&Array::from_vec(vec![3i64, 0], &[2, 1]), 1)
    });
    w.err(f, "take_along_axis", "axis 2", || {
        a().try_take_along_axis(&Array::from_vec(vec![0i64, 0], &[2, 1]), 2)
    });
    w.err(f, "take_along_axis", "shapes (3, 1) and (2, 3)", || {
        a().try_take_along_axis(&Array::from_vec(vec![0i64; 3], &[3, 1]), 1)
    });
    for (f, op) in [
        ("Array::try_add_at", "add_at"),
        ("Array::try_maximum_at", "maximum_at"),
        ("Array::try_minimum_at", "minimum_at"),
        ("Array::try_put", "put"),
    ] {
        let call = |a: Array, i: &Array, v: Array| match op {
            "add_at" => a.try_add_at(i, &v),
            "maximum_at" => a.try_maximum_at(i, &v),
            "minimum_at" => a.try_minimum_at(i, &v),
            _ => a.try_put(i, &v),
        };
        w.err(f, op, "index 9", || call(f32s(&[6]), &idx(vec![9]), f32s(&[1])));
        w.err(f, op, "index -7", || call(f32s(&[6]), &idx(vec![-7]), f32s(&[1])));
        w.err(f, op, "float indices", || call(f32s(&[6]), &f32s(&[1]), f32s(&[1])));
        if op != "put" {
            // (np.put cycles its values: 3 values for 2 indices is legal there.)
            w.err(f, op, "values (3,) for 2 indices", || {
                call(f32s(&[6]), &idx(vec![0, 1]), f32s(&[3]))
            });
        }
        w.err(f, op, "into an empty array", || call(f32s(&[0]), &idx(vec![0]), f32s(&[1])));
        w.err(f, op, "complex values into float", || call(f32s(&[6]), &idx(vec![0]), c64s(&[1])));
    }
    let f = "Array::try_put_along_axis";
    w.err(f, "put_along_axis", "index 3", || {
        a().try_put_along_axis(&Array::from_vec(vec![3i64, 0], &[2, 1]), 1.0, 1)
    });
    w.err(f, "put_along_axis", "1-D indices", || a().try_put_along_axis(&idx(vec![0]), 1.0, 1));
    w.err(f, "put_along_axis", "axis -3", || {
        a().try_put_along_axis(&Array::from_vec(vec![0i64, 0], &[2, 1]), 1.0, -3)
    });
    let f = "kiln::try_bincount";
    w.err(f, "bincount", "negative values", || kiln::try_bincount(&idx(vec![1, -1]), None, 0));
    w.err(f, "bincount", "floats", || kiln::try_bincount(&f32s(&[3]), None, 0));
    w.err(f, "bincount", "2-D", || kiln::try_bincount(&i64s(&[2, 2]), None, 0));
    w.err(f, "bincount", "weights (2,) for (3,)", || {
        kiln::try_bincount(&i64s(&[3]), Some(&f32s(&[2])), 0)
    });
    w.err(f, "bincount", "complex weights", || {
        kiln::try_bincount(&i64s(&[3]), Some(&c64s(&[3])), 0)
    });
    w.survives(f, "bincount", "NaN weights", || {
        kiln::try_bincount(&i64s(&[3]), Some(&nans(&[3])), 0)
    });
    let f = "Array::try_index";
    w.err(f, "index", "too many indices", || {
        a().try_index(&[Index::from(0), Index::from(0), Index::from(0)])
    });
    w.err(f, "index", "index array with 9", || a().try_index(&[Index::from(idx(vec![9]))]));
    w.err(f, "index", "float index array", || a().try_index(&[Index::from(f32s(&[1]))]));
    w.err(f, "index", "bool mask (3,) on an axis of 2", || {
        a().try_index(&[Index::from(bools(&[3]))])
    });
    w.err(f, "index", "arrays that do not broadcast", || {
        a().try_index(&[Index::from(idx(vec![0, 1])), Index::from(idx(vec![0, 1, 2]))])
    });
    w.err(f, "index", "integer 5", || a().try_index(&[Index::from(5)]));
}

fn creation(w: &mut Walk) {
    let f = "Array::try_from_vec";
    w.err(f, "", "3 values for (2, 2)", || Array::try_from_vec(vec![1.0f32; 3], &[2, 2]));
    w.err(f, "", "1 value for ()... of 0 elements", || Array::try_from_vec(vec![1.0f32], &[0]));
    let f = "kiln::try_arange_step";
    w.err(f, "arange", "step 0", || kiln::try_arange_step(0, 5, 0));
    w.err(f, "arange", "step NaN", || kiln::try_arange_step(0.0, 5.0, f64::NAN));
    w.err(f, "arange", "stop infinite", || kiln::try_arange_step(0.0, f64::INFINITY, 1.0));
    w.err(f, "arange", "start NaN", || kiln::try_arange_step(f64::NAN, 1.0, 1.0));
    w.err(f, "arange", "an array start", || kiln::try_arange_step(&f32s(&[1]), 5, 1));
    let f = "kiln::try_geomspace";
    w.err(f, "geomspace", "start 0", || kiln::try_geomspace(0.0, 1.0, 3));
    w.err(f, "geomspace", "signs differ", || kiln::try_geomspace(-1.0, 1.0, 3));
    w.survives(f, "geomspace", "NaN", || kiln::try_geomspace(f64::NAN, 1.0, 3));
    let f = "kiln::try_full";
    w.err(f, "full", "-1 as uint8", || kiln::try_full(&[2], -1, DType::UInt8));
    w.err(f, "full", "a (3,) array into (2,)", || {
        kiln::try_full(&[2], &f32s(&[3]), DType::Float32)
    });
}

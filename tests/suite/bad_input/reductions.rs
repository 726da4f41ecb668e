//! Reductions, scans, sorts, quantiles, searches, unique and compaction: axes out of range
//! and repeated, empty reductions without an identity, bad `q`, `kth`, `bins`, NaN-laden data.

use kiln::{Array, Side};

use super::{bools, c64s, f32s, f64s, i64s, nans, Walk};

/// Reductions taking an [`kiln::AxisArg`]: axis 2 and -3 of a 2-D array, axes (0, 0) and (1, -1);
/// then NaN-laden and empty data (values, or an error naming the op).
macro_rules! axis_reductions {
    ($w:expr; $($m:ident, $op:literal $(, $arg:expr)*;)*) => {$(
        let f = concat!("Array::", stringify!($m));
        $w.err(f, $op, "axis 2 of 2-D", || f32s(&[2, 3]).$m(2 $(, $arg)*));
        $w.err(f, $op, "axis -3 of 2-D", || f32s(&[2, 3]).$m(-3 $(, $arg)*));
        $w.err(f, $op, "axes (0, 0)", || f32s(&[2, 3]).$m([0, 0] $(, $arg)*));
        $w.err(f, $op, "axes (1, -1)", || f32s(&[2, 3]).$m([1, -1] $(, $arg)*));
        $w.err(f, $op, "axis 0 of 0-d", || f32s(&[]).$m(0 $(, $arg)*));
        $w.survives(f, $op, "NaN and inf", || nans(&[2, 3]).$m(None $(, $arg)*));
        $w.survives(f, $op, "NaN rows", || nans(&[2, 3]).$m(1 $(, $arg)*));
        $w.survives(f, $op, "empty", || f32s(&[0, 3]).$m(1 $(, $arg)*));
    )*};
}

/// Reductions without an identity: an empty reduction is an error.
macro_rules! empty_is_error {
    ($w:expr; $($m:ident, $op:literal;)*) => {$(
        let f = concat!("Array::", stringify!($m));
        $w.err(f, $op, "empty, all axes", || f32s(&[0, 3]).$m(None));
        $w.err(f, $op, "empty axis", || f32s(&[0, 3]).$m(0));
    )*};
}

/// Methods taking `axis: Option<i64>`: out of range; NaN-laden and empty data.
macro_rules! option_axis {
    ($w:expr; $($m:ident, $op:literal $(, $arg:expr)*;)*) => {$(
        let f = concat!("Array::", stringify!($m));
        $w.err(f, $op, "axis 2 of 2-D", || f32s(&[2, 3]).$m($($arg,)* Some(2)));
        $w.err(f, $op, "axis -3 of 2-D", || f32s(&[2, 3]).$m($($arg,)* Some(-3)));
        $w.err(f, $op, "axis 0 of 0-d", || f32s(&[]).$m($($arg,)* Some(0)));
        $w.survives(f, $op, "NaN and inf", || nans(&[2, 3]).$m($($arg,)* Some(1)));
        $w.survives(f, $op, "empty", || f32s(&[0, 3]).$m($($arg,)* None));
    )*};
}

pub fn walk(w: &mut Walk) {
    let dt = Some(kiln::DType::Float64);
    axis_reductions! { w;
        try_sum, "sum"; try_prod, "prod"; try_all, "all"; try_any, "any";
        try_mean, "mean"; try_var, "var", 1; try_std, "std", 1;
        try_sum_dtype, "sum", dt; try_prod_dtype, "prod", dt; try_mean_dtype, "mean", dt;
        try_var_dtype, "var", 0, dt; try_std_dtype, "std", 0, dt;
        try_nansum, "nansum"; try_nanprod, "nanprod"; try_nanmean, "nanmean";
        try_nanvar, "nanvar", 1; try_nanstd, "nanstd", 1;
        try_nansum_dtype, "nansum", dt; try_nanprod_dtype, "nanprod", dt;
        try_nanmean_dtype, "nanmean", dt; try_nanvar_dtype, "nanvar", 0, dt;
        try_nanstd_dtype, "nanstd", 0, dt; try_count_nonzero, "count_nonzero";
    }
    empty_is_error! { w;
        try_max, "max"; try_min, "min"; try_argmax, "argmax"; try_argmin, "argmin";
        try_nanmax, "nanmax"; try_nanmin, "nanmin"; try_ptp, "ptp";
    }
    w.err("Array::try_max", "max", "axis 2", || f32s(&[2, 3]).try_max(2));
    w.err("Array::try_min", "min", "axes (0, 0)", || f32s(&[2, 3]).try_min([0, 0]));
    w.err("Array::try_argmax", "argmax", "two axes", || f32s(&[2, 3]).try_argmax([0, 1]));
    w.err("Array::try_argmin", "argmin", "axis -3", || f32s(&[2, 3]).try_argmin(-3));
    w.err("Array::try_nanmax", "nanmax", "axis 5", || f32s(&[2, 3]).try_nanmax(5));
    w.err("Array::try_nanmin", "nanmin", "axes (1, 1)", || f32s(&[2, 3]).try_nanmin([1, 1]));
    w.err("Array::try_ptp", "ptp", "axis 2", || f32s(&[2, 3]).try_ptp(2));
    w.survives("Array::try_nanmax", "nanmax", "all NaN", || {
        Array::from_vec(vec![f64::NAN; 4], &[2, 2]).try_nanmax(1)
    });
    w.survives("Array::try_argmax", "argmax", "NaN", || nans(&[2, 3]).try_argmax(1));
    w.survives("Array::try_var", "var", "ddof beyond the count", || f32s(&[2, 3]).try_var(1, 10));
    w.survives("Array::try_mean", "mean", "bool", || bools(&[3]).try_mean(None));

    option_axis! { w;
        try_cumsum, "cumsum"; try_cumprod, "cumprod"; try_cummax, "cummax";
        try_cummin, "cummin"; try_nancumsum, "nancumsum"; try_nancumprod, "nancumprod";
        try_sort, "sort"; try_argsort, "argsort"; try_median, "median";
        try_nanmedian, "nanmedian"; try_quantile, "quantile", 0.5;
        try_nanquantile, "nanquantile", 0.5; try_percentile, "percentile", 50.0;
        try_nanpercentile, "nanpercentile", 50.0;
    }
    let f = "Array::try_cumsum_dtype";
    w.err(f, "cumsum", "axis 2 of 2-D", || f32s(&[2, 3]).try_cumsum_dtype(Some(2), dt));
    let f = "Array::try_cumprod_dtype";
    w.err(f, "cumprod", "axis -3 of 2-D", || f32s(&[2, 3]).try_cumprod_dtype(Some(-3), dt));
    let f = "Array::try_nancumsum_dtype";
    w.err(f, "nancumsum", "axis 2 of 2-D", || f32s(&[2, 3]).try_nancumsum_dtype(Some(2), dt));
    let f = "Array::try_nancumprod_dtype";
    w.err(f, "nancumprod", "axis 2", || f32s(&[2, 3]).try_nancumprod_dtype(Some(2), dt));
    w.err("Array::try_diff", "diff", "axis 2 of 2-D", || f32s(&[2, 3]).try_diff(1, 2));
    w.err("Array::try_diff", "diff", "0-d", || f32s(&[]).try_diff(1, 0));
    w.survives("Array::try_diff", "diff", "n beyond the axis", || f32s(&[2, 3]).try_diff(9, 1));
    w.survives("Array::try_diff", "diff", "n = usize::MAX", || {
        f32s(&[2, 3]).try_diff(usize::MAX, 1)
    });

    // Quantiles out of [0, 1] / [0, 100], NaN.
    for q in [1.5, -0.1, f64::NAN, f64::INFINITY] {
        let case = format!("q = {q}");
        w.err("Array::try_quantile", "quantile", &case, || f32s(&[4]).try_quantile(q, None));
        w.err("Array::try_nanquantile", "nanquantile", &case, || {
            f32s(&[4]).try_nanquantile(q, None)
        });
        let (p, case) = (q * 100.0, format!("q = {}", q * 100.0));
        w.err("Array::try_percentile", "percentile", &case, || f32s(&[4]).try_percentile(p, None));
        w.err("Array::try_nanpercentile", "nanpercentile", &case, || {
            f32s(&[4]).try_nanpercentile(p, None)
        });
    }
    w.err("Array::try_quantile", "quantile", "complex", || c64s(&[4]).try_quantile(0.5, None));

    // Partitions: kth out of range, axis out of range.
    for m in ["try_partition", "try_argpartition"] {
        let f =
            if m == "try_partition" { "Array::try_partition" } else { "Array::try_argpartition" };
        let call = |a: Array, kth: &[i64], axis: Option<i64>| {
            if m == "try_partition" {
                a.try_partition(kth, axis)
            } else {
                a.try_argpartition(kth, axis)
            }
        };
        let op = &m[4..];
        w.err(f, op, "kth 4 of 4", || call(f32s(&[4]), &[4], None));
        w.err(f, op, "kth -5 of 4", || call(f32s(&[4]), &[-5], None));
        w.err(f, op, "kth i64::MIN", || call(f32s(&[4]), &[i64::MIN], None));
        w.err(f, op, "axis 1 of 1-D", || call(f32s(&[4]), &[0], Some(1)));
        w.err(f, op, "empty", || call(f32s(&[0]), &[0], None));
        w.survives(f, op, "NaN", || call(nans(&[6]), &[2, 0, 5], Some(0)));
    }

    // lexsort.
    let f = "kiln::try_lexsort";
    w.err(f, "lexsort", "no keys", || kiln::try_lexsort(&[], -1));
    w.err(f, "lexsort", "keys of shapes (3,) and (4,)", || {
        kiln::try_lexsort(&[&f32s(&[3]), &f32s(&[4])], -1)
    });
    w.err(f, "lexsort", "axis 1 of 1-D", || kiln::try_lexsort(&[&f32s(&[3])], 1));
    w.survives(f, "lexsort", "NaN", || kiln::try_lexsort(&[&nans(&[6]), &f64s(&[6])], 0));

    // searchsorted, digitize, histogram, topk.
    let f = "kiln::try_searchsorted";
    w.err(f, "searchsorted", "2-D sorted", || {
        kiln::try_searchsorted(&f32s(&[2, 2]), &f32s(&[3]), Side::Left)
    });
    w.err(f, "searchsorted", "0-d sorted", || {
        kiln::try_searchsorted(&f32s(&[]), &f32s(&[3]), Side::Right)
    });
    w.survives(f, "searchsorted", "NaN", || {
        kiln::try_searchsorted(&nans(&[6]), &nans(&[3]), Side::Right)
    });
    let f = "kiln::try_digitize";
    w.err(f, "digitize", "2-D bins", || kiln::try_digitize(&f32s(&[3]), &f32s(&[2, 2]), false));
    w.err(f, "digitize", "bins not monotonic", || {
        kiln::try_digitize(&f32s(&[3]), &Array::from_vec(vec![1.0f32, 3.0, 2.0], &[3]), false)
    });
    w.err(f, "digitize", "complex", || kiln::try_digitize(&c64s(&[3]), &c64s(&[3]), false));
    let f = "kiln::try_histogram";
    w.err(f, "histogram", "0 bins", || kiln::try_histogram(&f32s(&[4]), 0, None));
    w.err(f, "histogram", "range (1, 0)", || kiln::try_histogram(&f32s(&[4]), 3, Some((1.0, 0.0))));
    w.err(f, "histogram", "range with NaN", || {
        kiln::try_histogram(&f32s(&[4]), 3, Some((f64::NAN, 1.0)))
    });
    w.err(f, "histogram", "infinite range", || {
        kiln::try_histogram(&f32s(&[4]), 3, Some((0.0, f64::INFINITY)))
    });
    w.err(f, "histogram", "NaN data, range from the data", || {
        kiln::try_histogram(&nans(&[6]), 3, None)
    });
    w.err(f, "histogram", "complex", || kiln::try_histogram(&c64s(&[4]), 3, None));
    w.survives(f, "histogram", "empty", || kiln::try_histogram(&f32s(&[0]), 3, None));
    let f = "kiln::try_histogram_with_edges";
    w.err(f, "histogram", "decreasing edges", || {
        kiln::try_histogram_with_edges(&f32s(&[4]), &Array::from_vec(vec![3.0f32, 1.0], &[2]))
    });
    w.err(f, "histogram", "2-D edges", || {
        kiln::try_histogram_with_edges(&f32s(&[4]), &f32s(&[2, 2]))
    });
    w.err(f, "histogram", "one edge", || kiln::try_histogram_with_edges(&f32s(&[4]), &f32s(&[1])));
    let f = "kiln::try_topk";
    w.err(f, "topk", "k 5 of 4", || kiln::try_topk(&f32s(&[4]), 5, 0, true));
    w.err(f, "topk", "axis 1 of 1-D", || kiln::try_topk(&f32s(&[4]), 1, 1, true));
    w.err(f, "topk", "0-d", || kiln::try_topk(&f32s(&[]), 1, 0, false));
    w.survives(f, "topk", "NaN", || kiln::try_topk(&nans(&[6]), 3, 0, false));

    // unique and its forms on NaN-laden and empty data.
    w.survives("kiln::try_unique", "unique", "NaN", || kiln::try_unique(&nans(&[6])));
    w.survives("kiln::try_unique", "unique", "empty", || kiln::try_unique(&f32s(&[0])));
    w.survives("kiln::try_unique_values", "unique", "NaN", || kiln::try_unique_values(&nans(&[6])));
    w.survives("kiln::try_unique_counts", "unique", "NaN", || kiln::try_unique_counts(&nans(&[6])));
    w.survives("kiln::try_unique_inverse", "unique", "empty", || {
        kiln::try_unique_inverse(&f32s(&[0, 2]))
    });
    w.survives("kiln::try_unique_all", "unique", "NaN", || kiln::try_unique_all(&nans(&[2, 3])));

    // average, compaction.
    let f = "kiln::try_average";
    w.err(f, "average", "axis 2 of 2-D", || kiln::try_average(&f32s(&[2, 3]), Some(2), None));
    w.err(f, "average", "weights (4,) for (2, 3)", || {
        kiln::try_average(&f32s(&[2, 3]), None, Some(&f32s(&[4])))
    });
    w.err(f, "average", "weights (2,) along axis 1 of (2, 3)", || {
        kiln::try_average(&f32s(&[2, 3]), Some(1), Some(&f32s(&[2])))
    });
    w.survives(f, "average", "weights summing to zero", || {
        kiln::try_average(&f32s(&[2]), None, Some(&Array::from_vec(vec![1.0f32, -1.0], &[2])))
    });
    w.err("kiln::try_nonzero", "nonzero", "0-d", || kiln::try_nonzero(&f32s(&[])));
    w.err("Array::try_nonzero", "nonzero", "0-d", || f32s(&[]).try_nonzero());
    w.err("kiln::try_where_indices", "nonzero", "0-d", || kiln::try_where_indices(&bools(&[])));
    w.survives("kiln::try_flatnonzero", "flatnonzero", "NaN", || {
        kiln::try_flatnonzero(&nans(&[6]))
    });
    w.survives("kiln::try_argwhere", "argwhere", "empty", || kiln::try_argwhere(&f32s(&[0, 3])));
    w.err("kiln::try_extract", "extract", "condition longer than the array", || {
        kiln::try_extract(&Array::from_vec(vec![true; 8], &[8]), &f32s(&[4]))
    });
    let f = "Array::try_compress";
    w.err(f, "compress", "condition longer than the axis", || {
        f32s(&[2, 3]).try_compress(&Array::from_vec(vec![true; 4], &[4]), Some(1))
    });
    w.err(f, "compress", "axis 2 of 2-D", || f32s(&[2, 3]).try_compress(&bools(&[2]), Some(2)));
    w.err(f, "compress", "2-D condition", || f32s(&[2, 3]).try_compress(&bools(&[2, 1]), None));
    let f = "Array::try_mask";
    w.err(f, "mask", "mask (3, 2) for (2, 3)", || f32s(&[2, 3]).try_mask(&bools(&[3, 2])));
    w.err(f, "mask", "a float mask", || f32s(&[2, 3]).try_mask(&f32s(&[2, 3])));
    w.err(f, "mask", "an int mask", || f32s(&[2, 3]).try_mask(&i64s(&[2, 3])));
}

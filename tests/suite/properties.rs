//! Property tests: broadcasting against an independent implementation of the rule and a naive
//! nested-loop `a + b`; dtype promotion against NumPy's `np.result_type` table
//! (`tests/fixtures/promotion.txt`) and its algebra (commutativity, associativity).

use std::collections::{BTreeSet, HashMap};

use kiln::ir::promote::{result_type, result_type_many};
use kiln::ir::IrError;
use kiln::{Array, DType, Error};
use proptest::prelude::*;

// ------------------------------------------------------------------------------------------------
// Broadcasting
// ------------------------------------------------------------------------------------------------

/// NumPy's rule, written independently of kiln: align trailing axes; extents equal or one is 1.
fn broadcast_rule(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, n - s.len()).chain(s.iter().copied()).collect()
    };
    let (a, b) = (pad(a), pad(b));
    a.iter()
        .zip(&b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// The flat C-order index into an array of `shape` that broadcasting reads for output index `out`.
fn source_index(shape: &[usize], out: &[usize]) -> usize {
    let off = out.len() - shape.len();
    let mut flat = 0;
    for (k, &n) in shape.iter().enumerate() {
        let i = if n == 1 { 0 } else { out[off + k] };
        flat = flat * n + i;
    }
    flat
}

/// Naive `a + b` with nested loops over the output (an odometer over every index).
fn naive_add(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], out: &[usize]) -> Vec<f64> {
    let total: usize = out.iter().product();
    let mut res = Vec::with_capacity(total);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..total {
        res.push(a[source_index(sa, &idx)] + b[source_index(sb, &idx)]);
        for k in (0..out.len()).rev() {
            idx[k] += 1;
            if idx[k] < out[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    res
}

/// A pair of broadcast-compatible shapes: a base shape, then for each operand some leading axes
/// dropped and some extents replaced by 1.
fn compatible_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    let dim = prop_oneof![8 => 1usize..=4, 1 => Just(0usize)];
    (prop::collection::vec(dim, 0..=4), any::<u64>()).prop_map(|(base, seed)| {
        let mut bits = seed;
        let mut next = |m: u64| {
            let v = bits % m;
            bits = bits.rotate_right(7) ^ 0x9e37_79b9_7f4a_7c15;
            v
        };
        let mut derive = || -> Vec<usize> {
            let drop = next(base.len() as u64 + 1) as usize;
            base[drop..].iter().map(|&d| if next(3) == 0 { 1 } else { d }).collect()
        };
        let a = derive();
        let b = derive();
        (a, b)
    })
}

fn values(shape: &[usize], scale: f64) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|i| (i as f64 + 1.0) * scale).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn broadcast_shape_follows_numpys_rule((sa, sb) in compatible_shapes()) {
        let want = broadcast_rule(&sa, &sb).expect("strategy makes compatible shapes");
        let a = Array::from_vec(values(&sa, 1.0), &sa);
        let b = Array::from_vec(values(&sb, 1000.0), &sb);
        let y = a.try_add(&b).unwrap();
        prop_assert_eq!(y.shape(), want.as_slice());
        prop_assert_eq!(y.dtype(), DType::Float64);
        // Symmetric.
        let yb = b.try_add(&a).unwrap();
        prop_assert_eq!(yb.shape(), want.as_slice());
    }

    #[test]
    fn broadcast_add_matches_nested_loops((sa, sb) in compatible_shapes()) {
        let out = broadcast_rule(&sa, &sb).unwrap();
        let (va, vb) = (values(&sa, 1.0), values(&sb, 1000.0));
        let a = Array::from_vec(va.clone(), &sa);
        let b = Array::from_vec(vb.clone(), &sb);
        let got = (&a + &b).to_vec::<f64>();
        prop_assert_eq!(got, naive_add(&va, &sa, &vb, &sb, &out));
    }

    #[test]
    fn broadcast_of_mixed_dtypes_matches_nested_loops((sa, sb) in compatible_shapes()) {
        // int8 + uint8 -> int16, values exact.
        let out = broadcast_rule(&sa, &sb).unwrap();
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        let da: Vec<i8> = (0..na).map(|i| (i as i64 * 37 % 256 - 128) as i8).collect();
        let db: Vec<u8> = (0..nb).map(|i| (i * 91 % 256) as u8).collect();
        let y = &Array::from_vec(da.clone(), &sa) + &Array::from_vec(db.clone(), &sb);
        prop_assert_eq!(y.dtype(), DType::Int16);
        prop_assert_eq!(y.shape(), out.as_slice());
        let fa: Vec<f64> = da.iter().map(|&v| v as f64).collect();
        let fb: Vec<f64> = db.iter().map(|&v| v as f64).collect();
        let want: Vec<i16> = naive_add(&fa, &sa, &fb, &sb, &out).iter().map(|&v| v as i16).collect();
        prop_assert_eq!(y.to_vec::<i16>(), want);
    }

    #[test]
    fn incompatible_shapes_are_a_broadcast_error(
        (sa, sb) in compatible_shapes().prop_filter("needs an axis in both", |(a, b)| !a.is_empty() && !b.is_empty()),
        x in 2usize..5,
        y in 2usize..5,
    ) {
        prop_assume!(x != y);
        // Make the last axes clash.
        let mut sa = sa;
        let mut sb = sb;
        *sa.last_mut().unwrap() = x;
        *sb.last_mut().unwrap() = y;
        prop_assert!(broadcast_rule(&sa, &sb).is_none());
        let a = Array::from_vec(values(&sa, 1.0), &sa);
        let b = Array::from_vec(values(&sb, 1.0), &sb);
        match a.try_add(&b) {
            Err(Error::Ir(IrError::Broadcast { op, shapes })) => {
                prop_assert_eq!(op, "add");
                let want: Vec<kiln::ir::Shape> = vec![sa.as_slice().into(), sb.as_slice().into()];
                prop_assert_eq!(shapes, want);
            }
            other => prop_assert!(false, "expected a Broadcast error, got {:?}", other),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Promotion
// ------------------------------------------------------------------------------------------------

/// NumPy's dtypes (all of kiln's but bfloat16, which NumPy lacks).
fn numpy_dtypes() -> Vec<DType> {
    DType::ALL.into_iter().filter(|&d| d != DType::BFloat16).collect()
}

struct NumpyPromotion {
    pair: HashMap<(DType, DType), DType>,
    /// (a, b, c) -> (result_type(a, b, c), left fold, right fold)
    triple: HashMap<(DType, DType, DType), (DType, DType, DType)>,
}

fn numpy_promotion() -> NumpyPromotion {
    let path = crate::numpy_fixtures::fixture_dir().join("promotion.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let d = |s: &str| -> DType { s.parse().unwrap_or_else(|e| panic!("{s}: {e}")) };
    let mut p = NumpyPromotion { pair: HashMap::new(), triple: HashMap::new() };
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "pair" => {
                p.pair.insert((d(f[1]), d(f[2])), d(f[3]));
            }
            "triple" => {
                p.triple.insert((d(f[1]), d(f[2]), d(f[3])), (d(f[4]), d(f[5]), d(f[6])));
            }
            other => panic!("promotion.txt: unknown line kind {other}"),
        }
    }
    assert_eq!(p.pair.len(), 14 * 14);
    assert_eq!(p.triple.len(), 14 * 14 * 14);
    p
}

#[test]
fn result_type_is_commutative() {
    for a in DType::ALL {
        for b in DType::ALL {
            assert_eq!(result_type(a, b), result_type(b, a), "{a} {b}");
        }
        assert_eq!(result_type(a, a), a);
    }
}

#[test]
fn result_type_matches_numpy_for_every_pair() {
    let np = numpy_promotion();
    let mut bad = vec![];
    for a in numpy_dtypes() {
        for b in numpy_dtypes() {
            let want = np.pair[&(a, b)];
            if result_type(a, b) != want {
                bad.push(format!("{a} + {b}: kiln {}, NumPy {want}", result_type(a, b)));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Triples where folding from the left and from the right disagree.
fn non_associative(dtypes: &[DType]) -> BTreeSet<(DType, DType, DType)> {
    let mut out = BTreeSet::new();
    for &a in dtypes {
        for &b in dtypes {
            for &c in dtypes {
                if result_type(result_type(a, b), c) != result_type(a, result_type(b, c)) {
                    out.insert((a, b, c));
                }
            }
        }
    }
    out
}

/// NumPy's binary promotion is NOT associative: `(int8 + uint8) + float16` is float32 (int16 with
/// float16), but `int8 + (uint8 + float16)` is float16. So the property asserted is: kiln's
/// pairwise promotion breaks associativity on exactly the triples where NumPy's does (checked
/// against `np.result_type` in promotion.txt), and nowhere else.
#[test]
fn result_type_associativity_fails_exactly_where_numpys_does() {
    let np = numpy_promotion();
    let want: BTreeSet<_> =
        np.triple.iter().filter(|(_, (_, l, r))| l != r).map(|(k, _)| *k).collect();
    let got = non_associative(&numpy_dtypes());
    assert!(
        want.contains(&(DType::Int8, DType::UInt8, DType::Float16)),
        "NumPy's known non-associative triple"
    );
    let only_kiln: Vec<_> = got.difference(&want).collect();
    let only_numpy: Vec<_> = want.difference(&got).collect();
    assert!(
        only_kiln.is_empty() && only_numpy.is_empty(),
        "non-associative only in kiln: {only_kiln:?}\nonly in NumPy: {only_numpy:?}"
    );
    // Where both folds agree they agree with NumPy too.
    for ((a, b, c), (_, l, _)) in &np.triple {
        let kl = result_type(result_type(*a, *b), *c);
        assert_eq!(kl, *l, "({a} + {b}) + {c}");
    }
    // The bfloat16 triples cannot be checked against NumPy; list them for the record.
    let bf: Vec<_> = non_associative(&DType::ALL)
        .into_iter()
        .filter(|t| [t.0, t.1, t.2].contains(&DType::BFloat16))
        .collect();
    eprintln!(
        "{} non-associative triples involve bfloat16 (not checkable against NumPy), e.g. {:?}",
        bf.len(),
        bf.iter().take(4).collect::<Vec<_>>()
    );
}

/// `np.result_type(a, b, c)` (and so `np.concatenate`/`np.stack` of three arrays) does not depend
/// on the order of its arguments: NumPy promotes the sequence as a whole. kiln's
/// `result_type_many` folds from the left, which differs on the non-associative triples.
#[test]
fn result_type_many_matches_numpys_n_ary_result_type() {
    let np = numpy_promotion();
    let mut bad = vec![];
    for ((a, b, c), (multi, _, _)) in &np.triple {
        let got = result_type_many(&[*a, *b, *c]).unwrap();
        if got != *multi {
            bad.push(format!("result_type({a}, {b}, {c}): kiln {got}, NumPy {multi}"));
        }
    }
    bad.sort();
    assert!(
        bad.is_empty(),
        "{} of {} triples differ, e.g.:\n{}",
        bad.len(),
        np.triple.len(),
        bad[..bad.len().min(12)].join("\n")
    );
}

#[test]
fn bool_is_the_identity_of_promotion() {
    for a in DType::ALL {
        assert_eq!(result_type(DType::Bool, a), a);
    }
}

//! Printing arrays (`Display` as NumPy's `str`, `Debug` as its `repr`) against NumPy's own text:
//! the cases of `tests/fixtures/print/cases.txt` (written by `make_print_fixtures.py`: every
//! dtype, negative zero, NaN and infinities, the switch to scientific notation, integral floats,
//! 0-d and empty arrays, summarised and wrapped 1-D, 2-D and 3-D arrays, and the print options),
//! each built from its exact bits and printed under its options; the options' scoping; printing
//! a lazy array computes it.

use half::{bf16, f16};
use kiln::ir::Data;
use kiln::{Array, DType, FloatMode, HostArray, PrintOptions, Sign};
use num_complex::{Complex32, Complex64};

use crate::numpy_fixtures::fixture_dir;

/// One printed case of the manifest.
struct Case {
    name: String,
    array: Array,
    options: PrintOptions,
    str_: String,
    repr: String,
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('\\') => out.push('\\'),
                other => panic!("bad escape \\{other:?} in {s:?}"),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

fn options(line: &str) -> PrintOptions {
    let mut o = PrintOptions::default();
    for kv in line.split_whitespace() {
        let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("bad option {kv:?}"));
        match k {
            "precision" => o.precision = v.parse().unwrap(),
            "threshold" => o.threshold = v.parse().unwrap(),
            "edgeitems" => o.edgeitems = v.parse().unwrap(),
            "linewidth" => o.linewidth = v.parse().unwrap(),
            "suppress" => o.suppress = v == "1",
            "nanstr" => o.nanstr = v.into(),
            "infstr" => o.infstr = v.into(),
            "sign" => {
                o.sign = match v {
                    "-" => Sign::Minus,
                    "+" => Sign::Plus,
                    _ => panic!("bad sign {v:?}"),
                }
            }
            "floatmode" => {
                o.floatmode = match v {
                    "fixed" => FloatMode::Fixed,
                    "unique" => FloatMode::Unique,
                    "maxprec" => FloatMode::MaxPrec,
                    "maxprec_equal" => FloatMode::MaxPrecEqual,
                    _ => panic!("bad floatmode {v:?}"),
                }
            }
            _ => panic!("unknown option {k:?}"),
        }
    }
    o
}

/// `sign=' '` is written `sign= ` in the manifest: one space, then the next option.
fn options_line(line: &str) -> PrintOptions {
    match line.split_once("sign=  ") {
        Some((a, b)) => PrintOptions { sign: Sign::Space, ..options(&format!("{a} {b}")) },
        None => options(line),
    }
}

fn data(dtype: DType, tokens: &[&str]) -> Data {
    fn ints<T: TryFrom<i128>>(t: &[&str]) -> Vec<T> {
        t.iter().map(|s| T::try_from(s.parse::<i128>().unwrap()).ok().expect("in range")).collect()
    }
    fn bits(t: &str) -> u64 {
        u64::from_str_radix(t, 16).unwrap()
    }
    let pair = |t: &&str| {
        let (r, i) = t.split_once(':').unwrap();
        (bits(r), bits(i))
    };
    match dtype {
        DType::Bool => Data::Bool(tokens.iter().map(|t| *t == "1").collect()),
        DType::Int8 => Data::Int8(ints(tokens)),
        DType::Int16 => Data::Int16(ints(tokens)),
        DType::Int32 => Data::Int32(ints(tokens)),
        DType::Int64 => Data::Int64(ints(tokens)),
        DType::UInt8 => Data::UInt8(ints(tokens)),
        DType::UInt16 => Data::UInt16(ints(tokens)),
        DType::UInt32 => Data::UInt32(ints(tokens)),
        DType::UInt64 => Data::UInt64(ints(tokens)),
        DType::Float16 => {
            Data::Float16(tokens.iter().map(|t| f16::from_bits(bits(t) as u16)).collect())
        }
        DType::BFloat16 => {
            Data::BFloat16(tokens.iter().map(|t| bf16::from_bits(bits(t) as u16)).collect())
        }
        DType::Float32 => {
            Data::Float32(tokens.iter().map(|t| f32::from_bits(bits(t) as u32)).collect())
        }
        DType::Float64 => Data::Float64(tokens.iter().map(|t| f64::from_bits(bits(t))).collect()),
        DType::Complex64 => Data::Complex64(
            tokens
                .iter()
                .map(pair)
                .map(|(r, i)| Complex32::new(f32::from_bits(r as u32), f32::from_bits(i as u32)))
                .collect(),
        ),
        DType::Complex128 => Data::Complex128(
            tokens
                .iter()
                .map(pair)
                .map(|(r, i)| Complex64::new(f64::from_bits(r), f64::from_bits(i)))
                .collect(),
        ),
    }
}

fn cases() -> Vec<Case> {
    let path = fixture_dir().join("print").join("cases.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (run python3 tests/fixtures/make_print_fixtures.py)", path.display())
    });
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("case ")) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| {
                    l.strip_prefix(key)
                        .and_then(|r| r.strip_prefix(' '))
                        .or_else(|| (l == key).then_some(""))
                })
                .unwrap_or_else(|| panic!("no {key} in {block:?}"))
        };
        let dtype: DType = field("dtype").parse().unwrap();
        let shape: Vec<usize> = match field("shape") {
            "-" => vec![],
            s => s.split(',').map(|d| d.parse().unwrap()).collect(),
        };
        let tokens: Vec<&str> = field("values").split_whitespace().collect();
        let host = HostArray::new(&shape, data(dtype, &tokens)).unwrap();
        out.push(Case {
            name: field("case").to_string(),
            array: Array::from_host(host),
            options: options_line(field("options")),
            str_: unescape(field("str")),
            repr: unescape(field("repr")),
        });
    }
    out
}

/// Every case prints as NumPy printed it, `str` and `repr`, through `array_str`/`array_repr`
/// and through `Display`/`Debug` under the case's options in a `with_printoptions` scope.
#[test]
fn numpy_prints_the_same() {
    let cases = cases();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut bad = Vec::new();
    for c in &cases {
        let s = kiln::array_str(&c.array, &c.options).unwrap();
        let r = kiln::array_repr(&c.array, &c.options).unwrap();
        if s != c.str_ {
            bad.push(format!("{} str:\n  numpy: {:?}\n  kiln:  {:?}", c.name, c.str_, s));
        }
        if r != c.repr {
            bad.push(format!("{} repr:\n  numpy: {:?}\n  kiln:  {:?}", c.name, c.repr, r));
        }
        let (d, g) = kiln::with_printoptions(c.options.clone(), || {
            (format!("{}", c.array), format!("{:?}", c.array))
        });
        if (d, g) != (s, r) {
            bad.push(format!("{}: Display/Debug differ from array_str/array_repr", c.name));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cases differ from NumPy:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
}

/// Printing a lazy array computes it (and keeps the value); `describe` does not.
#[test]
fn printing_materialises() {
    let x = Array::from_vec(vec![0.5f32, 1.0, 1.5, 2.0, 2.5, 3.0], &[2, 3]);
    let y = &x * 2.0;
    assert_eq!(y.describe(), "Array(float32 (2, 3), multiply)");
    let opts = PrintOptions::default();
    let text = kiln::with_printoptions(opts, || format!("{y}\n{y:?}"));
    assert_eq!(
        text,
        "[[1. 2. 3.]\n [4. 5. 6.]]\narray([[1., 2., 3.],\n       [4., 5., 6.]], dtype=float32)"
    );
    assert!(y.is_materialized());
    assert_eq!(y.describe(), "Array(float32 (2, 3), multiply, materialized)");
}

/// A Rust precision (`{:.2}`) overrides `precision` for one call.
#[test]
fn rust_precision_overrides() {
    let x = Array::from_vec(vec![std::f64::consts::PI, 1.0], &[2]);
    let (a, b) = kiln::with_printoptions(PrintOptions::default(), || {
        (format!("{x:.2}"), format!("{x:.2?}"))
    });
    assert_eq!((a.as_str(), b.as_str()), ("[3.14 1.  ]", "array([3.14, 1.  ])"));
}

/// `set_printoptions` is process-wide and read by `get_printoptions`; a `with_printoptions`
/// scope wins on its thread, and is undone after it (also by a panic).
#[test]
fn options_global_and_scoped() {
    let x = Array::from_vec(vec![1.0f64 / 3.0], &[1]);
    let three = PrintOptions { precision: 3, ..Default::default() };
    let five = PrintOptions { precision: 5, ..Default::default() };
    let before = kiln::get_printoptions();
    kiln::set_printoptions(three.clone());
    assert_eq!(kiln::get_printoptions(), three);
    // Another thread sees the global setting (no scope there).
    let other = std::thread::spawn(kiln::get_printoptions).join().unwrap();
    assert_eq!(other.precision, 3);
    kiln::with_printoptions(five.clone(), || {
        assert_eq!(kiln::get_printoptions(), five);
        assert_eq!(format!("{x}"), "[0.33333]");
    });
    let caught =
        std::panic::catch_unwind(|| kiln::with_printoptions(five.clone(), || panic!("inside")));
    assert!(caught.is_err());
    assert_eq!(kiln::get_printoptions(), three);
    kiln::set_printoptions(before);
}

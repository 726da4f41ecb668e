//! Entry points for kiln's fuzz targets (`fuzz/`, run by `scripts/fuzz.sh`) and for the replay
//! of their corpora in the test suite (`tests/suite/fuzz_corpora.rs`): the parsers that the
//! public API reaches only through other work. Not kiln's API (hidden from the docs).

use std::path::Path;

use super::params::{parse_params as parse, ParamType};
use crate::array::Array;
use crate::error::Result;

/// A parameter as [`parse_params`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedParam {
    pub raw: bool,
    /// The dtype's name (`float32`) or the one-letter placeholder.
    pub ty: String,
    /// Whether `ty` is a placeholder.
    pub placeholder: bool,
    pub name: String,
    /// Line and column where the parameter starts.
    pub at: (usize, usize),
}

/// CuPy's parameter list `src` (`"float32 x, raw T y"`), parsed as an input list (nothing seen
/// before it); errors as `ElementwiseKernel::new` reports them for its `in_params`.
pub fn parse_params(src: &str) -> Result<Vec<ParsedParam>> {
    let params = parse(src, &[]).map_err(|d| d.into_error("fuzz", "in_params"))?;
    Ok(params
        .into_iter()
        .map(|p| {
            let (ty, placeholder) = match p.ty {
                ParamType::Fixed(d) => (d.name().to_string(), false),
                ParamType::Placeholder(t) => (t, true),
            };
            ParsedParam {
                raw: p.raw,
                ty,
                placeholder,
                name: p.name,
                at: (p.span.line, p.span.column),
            }
        })
        .collect())
}

/// `load_npy` of a file's bytes (no file).
pub fn load_npy_bytes(bytes: &[u8]) -> Result<Array> {
    crate::io::read_npy(bytes, Path::new("<bytes>"))
}

#[cfg(test)]
mod tests {
    use super::super::diag::DiagKind;
    use super::super::parser::{parse_body, MAX_NESTING};
    use crate::{Array, ElementwiseKernel};

    /// Code nested `n` deep by each construct that nests (a statement or an expression).
    fn nested(n: usize) -> Vec<(&'static str, String)> {
        vec![
            ("parentheses", format!("z = {}x{};", "(".repeat(n), ")".repeat(n))),
            ("unary minus", format!("z = {}x;", "- ".repeat(n))),
            ("casts", format!("z = {}x;", "(float)".repeat(n))),
            ("a chain of +", format!("z = x{};", " + x".repeat(n))),
            ("a chain of commas", format!("z = (x{});", ", x".repeat(n))),
            ("a chain of =", format!("{}x;", "z = ".repeat(n))),
            ("a chain of ?:", format!("z = {}x;", "x > 0 ? x : ".repeat(n))),
            ("indices", format!("z = y{};", "[0]".repeat(n))),
            ("blocks", format!("{}z = x;{}", "{ ".repeat(n), " }".repeat(n))),
            ("ifs", format!("{}z = x;", "if (x > 0) ".repeat(n))),
            ("types", format!("z = {}float{}(x);", "complex<".repeat(n), ">".repeat(n))),
        ]
    }

    #[test]
    fn code_nested_too_deep_is_an_error_not_a_stack_overflow() {
        // Found by the `kernel_code` fuzz target: 4000 parentheses overflowed the stack.
        let ph = ["T".to_string()];
        for (what, code) in nested(5000) {
            let err = parse_body(&code, &ph).unwrap_err();
            assert_eq!(err.kind, DiagKind::Unsupported, "{what}: {}", err.message);
            assert!(err.message.contains("nested more than 256 deep"), "{what}: {}", err.message);
        }
    }

    #[test]
    fn code_nested_just_under_the_limit_is_traced_on_a_small_stack() {
        // Parsed, traced, lowered and evaluated (or refused with an error other than the
        // nesting's) on a thread of 2 MiB, the default of spawned threads.
        let run = || {
            for (what, code) in nested(MAX_NESTING - 6) {
                let k = ElementwiseKernel::new("float32 x, raw float32 y", "float32 z", &code, "k");
                let k = match k {
                    Ok(k) => k,
                    Err(e) => {
                        assert!(!e.to_string().contains("nested more than"), "{what}: {e}");
                        continue;
                    }
                };
                let x = Array::from_vec(vec![1.0f32, -2.0, 3.0], &[3]);
                if let Ok(z) = k.try_call(&[(&x).into(), (&x).into()]) {
                    let lowered = crate::lower(&[&z]);
                    let inputs: Vec<&kiln_ir::HostArray> =
                        lowered.inputs.iter().map(|a| a.as_ref()).collect();
                    kiln_ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
                }
            }
        };
        std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
    }
}

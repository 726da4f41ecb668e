//! kiln's integration tests: ONE test binary (it links LLVM, so one link is all we can afford).
//!
//! The modules live in `tests/suite/` rather than as `tests/*.rs` files, because Cargo would
//! build every `tests/*.rs` as a test binary of its own.
//!
//! - `numpy_fixtures`: NumPy's outputs (`tests/fixtures/`, written by `make_fixtures.py`)
//!   against kiln's, case by case.
//! - `errors`: typed errors with messages naming op, shapes and dtypes, raised by the op call.
//! - `api`: lowering and hash-consing, `eval`, `explain`/parse, `.npy` files, `ndarray`.
//! - `properties`: proptest on broadcasting; promotion against NumPy's table.
//! - `examples`: the examples run as a user runs them, against NumPy.
//! - `catalogue`: programs written with the API, each stage's text and the fusion report
//!   snapshotted (insta, `suite/snapshots/`), some with their expected number of kernels.
//! - `fused_props`: proptest on random programs: the compiled plan, run region by region in the
//!   evaluator and as compiled host code, against the reference evaluator on the unfused graph.
//! - `codegen`: host code generation against the reference evaluator, and the ULP table.
//! - `ulps`: the accuracy bounds of the compiled host code, per op (used by both).

#[path = "suite/numpy_fixtures.rs"]
mod numpy_fixtures;

#[path = "suite/errors.rs"]
mod errors;

#[path = "suite/api.rs"]
mod api;

#[path = "suite/properties.rs"]
mod properties;

#[path = "suite/fusion.rs"]
mod fusion;

#[path = "suite/examples.rs"]
mod examples;

#[path = "suite/catalogue.rs"]
mod catalogue;

#[path = "suite/fused_props.rs"]
mod fused_props;

#[path = "suite/codegen.rs"]
mod codegen;

#[path = "suite/ulps.rs"]
mod ulps;

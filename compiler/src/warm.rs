//! What a process's first compile pays once, paid ahead on a thread of its own.
//!
//! The first [`simplify`] of a process builds the rewrite rules and starts egg's clock (the
//! `quanta` crate calibrates its counter against the OS clock on first use: ~0.7 ms), and the
//! first GPU lowering looks for libdevice and `ptxas` on the file system. A first call of a
//! new expression that finds its kernel in the disk cache would pay all of that (about half of
//! its ~3 ms on an H200 host); the frontend calls [`warm_up`] when it picks the backend, long
//! before the first materialisation (opening a CUDA device alone takes tens of ms). A compile
//! that starts before the warm-up ends waits for the state it needs (each is a `OnceLock`),
//! so the warm-up changes no result and no order, only when the cost is paid.

use std::sync::OnceLock;
use std::thread::JoinHandle;

use crate::pipeline::Options;
use crate::simplify::simplify;

/// The program the warm-up simplifies: small, but it starts every piece of the simplifier's
/// one-time state (the rules of `opts`'s `fast_math` setting, the e-graph's clock).
const PROGRAM: &str = "kiln.graph v1
%0 = input {index=0} : f32[4]
%1 = const {value=0} : f32[]
%2 = broadcast_to(%1) {shape=[4]} : f32[4]
%3 = add(%0, %2) : f32[4]
return %3
";

/// Starts the warm-up once per process (later calls return `None`): the simplifier's state for
/// `opts`, and with `gpu` the CUDA toolkit's paths (libdevice, `ptxas`). The handle is for
/// tests; the frontend lets the thread run on its own. Nothing it does can fail a later
/// compile: a failure here (none is expected) is left for that compile to meet and report.
pub fn warm_up(opts: &Options, gpu: bool) -> Option<JoinHandle<()>> {
    static STARTED: OnceLock<()> = OnceLock::new();
    let mut first = false;
    STARTED.get_or_init(|| first = true);
    if !first {
        return None;
    }
    let simplify_opts = opts.simplify.clone();
    std::thread::Builder::new()
        .name("kiln-warm-up".into())
        .spawn(move || {
            if let Ok(g) = kiln_ir::text::parse(PROGRAM) {
                let _ = simplify(&g, &simplify_opts);
            }
            if gpu {
                let _ = kiln_cache::cuda_toolkit::libdevice();
                let _ = kiln_cache::cuda_toolkit::ptxas();
            }
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simplify::SimplifyOptions;

    #[test]
    fn the_warm_up_starts_once_and_its_program_simplifies() {
        let g = kiln_ir::text::parse(PROGRAM).expect("the warm-up's program parses");
        kiln_ir::verify::verify(&g).expect("and verifies");
        let s = simplify(&g, &SimplifyOptions::default()).expect("simplifies");
        kiln_ir::verify::verify(&s.graph).expect("its result verifies");
        let opts = Options { simplify: SimplifyOptions::default() };
        let first = warm_up(&opts, true);
        let again = warm_up(&opts, true);
        assert!(first.is_some(), "the first call starts the thread");
        assert!(again.is_none(), "later calls start nothing");
        first.unwrap().join().expect("the warm-up thread ends without a panic");
    }
}

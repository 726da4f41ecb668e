#![no_main]

// The check is kiln_fuzz::checks::params (fuzz/src/checks.rs), which the test suite's replay shares.
kiln_fuzz::fuzz_main!(kiln_fuzz::params);

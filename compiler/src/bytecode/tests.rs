use kiln_ir::HostArray;

use super::samples::{inputs, programs, ulps_apart};
use super::*;
use crate::fusion::{partition, Region};

/// The one region of the graph `text`.
fn region(text: &str) -> Region {
    let g = kiln_ir::text::parse(text).expect("the test's graph");
    let mut regions = partition(&g).regions;
    assert_eq!(
        regions.len(),
        1,
        "one region: {:?}",
        regions.iter().map(|r| r.op_names()).collect::<Vec<_>>()
    );
    regions.remove(0)
}

/// The program of `region` run on the host agrees with the evaluator within `max_ulps`.
fn check(region: &Region, max_ulps: u64) {
    let bc = Bytecode::of(region).unwrap_or_else(|e| panic!("interpretable: {e:?}"));
    let inputs = inputs(&bc, 7);
    let refs: Vec<&HostArray> = inputs.iter().collect();
    let got = bc.run_host(&refs);
    let want = kiln_ir::eval::evaluate(&region.body, &refs).expect("the evaluator");
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        let u = ulps_apart(g, w);
        assert!(u <= max_ulps, "output {k}: {u} ulps apart\n{g:?}\n{w:?}\n{}", bc.text());
    }
}

#[test]
fn a_chain_reads_as_its_program() {
    // x * 1000.123 + cos(x): the first-call benchmark's expression.
    let r = region(
        "kiln.graph v1\n%0 = input {index=0} : f32[1024]\n%1 = const {value=1000.123} : f32[]\n\
         %2 = broadcast_to(%1) {shape=[1024]} : f32[1024]\n%3 = multiply(%0, %2) : f32[1024]\n\
         %4 = cos(%0) : f32[1024]\n%5 = add(%3, %4) : f32[1024]\nreturn %5\n",
    );
    let bc = Bytecode::of(&r).unwrap();
    // The constant is the prologue's (run once for many elements), its register kept.
    assert_eq!(
        bc.text(),
        "r0 = const.f32 0x447a07df\n-- each element\nr1 = load.f32 in0\nr2 = mul.f32 r1, r0\n\
         r1 = cos.f32 r1\nr1 = add.f32 r2, r1\nout0 = store.f32 r1\n"
    );
    assert_eq!((bc.elements, bc.registers, bc.prologue), (1024, 3, 2));
    check(&r, 1);
}

#[test]
fn every_sample_program_agrees_with_the_evaluator() {
    let programs = programs(97);
    assert!(programs.len() > 150, "{} programs", programs.len());
    for (text, max_ulps) in programs {
        check(&region(&text), max_ulps);
    }
}

#[test]
fn scalars_are_read_at_position_zero() {
    let (text, _) = programs(32).into_iter().find(|(t, _)| t.contains("f64[1]")).unwrap();
    let bc = Bytecode::of(&region(&text)).unwrap();
    assert!(bc.text().contains("load.f64 in1[0]"), "{}", bc.text());
    assert_eq!(bc.outputs.len(), 2);
    assert_eq!(bc.outputs[0].1, [32]);
}

#[test]
fn many_live_values_take_many_registers() {
    let (text, _) = programs(32).pop().unwrap();
    let bc = Bytecode::of(&region(&text)).unwrap();
    assert!((24..=MAX_REGISTERS).contains(&bc.registers), "{}", bc.registers);
}

#[test]
fn a_long_chain_reuses_its_registers() {
    let mut text = String::from("kiln.graph v1\n%0 = input {index=0} : f32[256]\n");
    for k in 0..64 {
        text += &format!(
            "%{c} = const {{value={k}.25}} : f32[]\n%{b} = broadcast_to(%{c}) {{shape=[256]}} : f32[256]\n\
             %{m} = multiply(%{p}, %{b}) : f32[256]\n",
            c = 3 * k + 1,
            b = 3 * k + 2,
            m = 3 * k + 3,
            p = if k == 0 { 0 } else { 3 * k },
        );
    }
    text += &format!("return %{}\n", 3 * 64);
    let r = region(&text);
    let bc = Bytecode::of(&r).unwrap();
    assert!(bc.registers <= 3, "{} registers\n{}", bc.registers, bc.text());
    check(&r, 0);
}

#[test]
fn what_the_interpreter_does_not_run() {
    let cases = [
        // A reduction.
        "%0 = input {index=0} : f32[4,8]\n%1 = sum(%0) {axes=[1], keepdims=false} : f32[4]\nreturn %1\n",
        // A dtype it has no type for.
        "%0 = input {index=0} : f16[8]\n%1 = negative(%0) : f16[8]\nreturn %1\n",
        // A view that moves elements.
        "%0 = input {index=0} : f32[4,8]\n%1 = permute(%0) {perm=[1,0]} : f32[8,4]\n%2 = exp(%1) : f32[8,4]\nreturn %2\n",
        // A broadcast of a row.
        "%0 = input {index=0} : f32[4,8]\n%1 = input {index=1} : f32[8]\n\
         %2 = broadcast_to(%1) {shape=[4,8]} : f32[4,8]\n%3 = add(%0, %2) : f32[4,8]\nreturn %3\n",
        // An op it has no instruction for.
        "%0 = input {index=0} : f32[8]\n%1 = input {index=1} : f32[8]\n%2 = power(%0, %1) : f32[8]\nreturn %2\n",
    ];
    for text in cases {
        let r = region(&format!("kiln.graph v1\n{text}"));
        assert!(Bytecode::of(&r).is_err(), "interpreted:\n{text}");
    }
}

#[test]
fn values_the_same_at_every_element_are_the_prologue() {
    // A scalar input times a constant: both read once, their product too.
    let r = region(
        "kiln.graph v1\n%0 = input {index=0} : f32[64]\n%1 = input {index=1} : f32[1]\n\
         %2 = const {value=2.5} : f32[]\n%3 = broadcast_to(%2) {shape=[1]} : f32[1]\n\
         %4 = multiply(%1, %3) : f32[1]\n%5 = broadcast_to(%4) {shape=[64]} : f32[64]\n\
         %6 = add(%0, %5) : f32[64]\nreturn %6\n",
    );
    let bc = Bytecode::of(&r).unwrap();
    assert_eq!(
        bc.text(),
        "r0 = load.f32 in1[0]\nr1 = const.f32 0x40200000\nr2 = mul.f32 r0, r1\n-- each element\n\
         r3 = load.f32 in0\nr3 = add.f32 r3, r2\nout0 = store.f32 r3\n"
    );
    assert_eq!(bc.prologue, 4);
    check(&r, 0);
}

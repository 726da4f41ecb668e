//! Simplifying and partitioning 1,000-node graphs: the whole pipeline up to the schedule
//! (`cargo bench -p kiln-compiler --bench pipeline`). Target: at most 50 ms.

use criterion::{criterion_group, criterion_main, Criterion};
use kiln_compiler::fusion::partition;
use kiln_compiler::pipeline::{compile, Options};
use kiln_compiler::simplify::testgen::random_elementwise_graph;
use kiln_ir::{Attrs, DType, Graph, NodeId, OpKind};

/// A 1,000-node DAG over `f32[64,64]` inputs mixing elementwise ops with row and column
/// reductions whose results are broadcast back (softmax- and layernorm-like patterns).
fn random_reduction_graph(nodes: usize, seed: u64) -> Graph {
    let shape = [64usize, 64];
    let mut s = seed | 1;
    let mut next = move |n: usize| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % n as u64) as usize
    };
    let mut g = Graph::new();
    let mut pool: Vec<NodeId> = (0..3).map(|i| g.input(i, DType::Float32, &shape)).collect();
    while g.len() < nodes {
        let x = pool[pool.len() - 1 - next(pool.len().min(16))];
        let id = match next(10) {
            0..=3 => {
                let y = pool[pool.len() - 1 - next(pool.len().min(16))];
                let op = [OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum][next(4)];
                g.add(op, Attrs::None, &[x, y]).unwrap()
            }
            4..=6 => g
                .add(
                    [OpKind::Exp, OpKind::Tanh, OpKind::Neg, OpKind::Square][next(4)],
                    Attrs::None,
                    &[x],
                )
                .unwrap(),
            _ => {
                let axis = next(2);
                let op = [OpKind::Sum, OpKind::Max][next(2)];
                let r = g
                    .add(
                        op,
                        Attrs::Reduce { axes: [axis].into_iter().collect(), keepdims: true },
                        &[x],
                    )
                    .unwrap();
                let b = g
                    .add(OpKind::BroadcastTo, Attrs::Shape { shape: shape[..].into() }, &[r])
                    .unwrap();
                g.add(OpKind::Sub, Attrs::None, &[x, b]).unwrap()
            }
        };
        pool.push(id);
    }
    let uses = g.use_counts();
    let outputs = pool.iter().copied().filter(|id| uses[id.index()] == 0).collect();
    g.set_outputs(outputs);
    g
}

fn bench(c: &mut Criterion) {
    let opts = Options::from_env();
    let ew = random_elementwise_graph(1000, &[64, 64], 7);
    let red = random_reduction_graph(1000, 3);
    for (name, g) in [("elementwise", &ew), ("reductions", &red)] {
        let plan = compile(g, &opts).unwrap();
        eprintln!(
            "{name}: {} nodes -> {} simplified, {} regions",
            g.len(),
            plan.simplified.len(),
            plan.partition.regions.len()
        );
        c.bench_function(&format!("partition 1000-node {name} DAG"), |b| {
            b.iter(|| partition(&plan.simplified))
        });
        c.bench_function(&format!("simplify+partition+schedule 1000-node {name} DAG"), |b| {
            b.iter(|| compile(g, &opts).unwrap())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

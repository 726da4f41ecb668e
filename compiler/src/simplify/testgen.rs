//! Random graphs for tests and benchmarks of the simplifier.

use kiln_ir::graph::{Attrs, Graph, Literal, NodeId};
use kiln_ir::ops::OpKind;
use kiln_ir::DType;

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random elementwise DAG of about `nodes` nodes over 4 `f32[shape]` inputs: unary and binary
/// arithmetic and transcendental ops, operands mostly among the 32 latest nodes or not yet used
/// (so the DAG is deep, shared, and nearly all live), and a share of simplifiable patterns
/// (`x*1`, `x + -0.0`, `x/1`, `-(-x)`, `x*x`, scalar constants). Its outputs are the nodes no
/// other node uses.
pub fn random_elementwise_graph(nodes: usize, shape: &[usize], seed: u64) -> Graph {
    let f32 = DType::Float32;
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut g = Graph::new();
    let mut pool: Vec<NodeId> = (0..4).map(|i| g.input(i, f32, shape)).collect();
    let mut unused: Vec<NodeId> = pool.clone();
    let splat = |g: &mut Graph, v: f64| -> NodeId {
        let c = g.constant(f32, Literal::float(f32, v)).unwrap();
        g.add(OpKind::BroadcastTo, Attrs::Shape { shape: shape.into() }, &[c]).unwrap()
    };
    const UNARY: &[OpKind] = &[
        OpKind::Neg,
        OpKind::Exp,
        OpKind::Sin,
        OpKind::Abs,
        OpKind::Tanh,
        OpKind::Square,
        OpKind::Sqrt,
    ];
    const BINARY: &[OpKind] =
        &[OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Maximum, OpKind::Minimum];
    while g.len() < nodes {
        let pick = |rng: &mut Rng, pool: &[NodeId], unused: &mut Vec<NodeId>| -> NodeId {
            match rng.below(10) {
                0..=4 if !unused.is_empty() => {
                    let k = unused.len() - 1 - rng.below(unused.len().min(8));
                    unused.swap_remove(k)
                }
                0..=7 => pool[pool.len() - 1 - rng.below(pool.len().min(32))],
                _ => pool[rng.below(pool.len())],
            }
        };
        let x = pick(&mut rng, &pool, &mut unused);
        let id = match rng.below(20) {
            0..=7 => {
                let y = pick(&mut rng, &pool, &mut unused);
                g.add(BINARY[rng.below(BINARY.len())], Attrs::None, &[x, y]).unwrap()
            }
            8..=13 => g.add(UNARY[rng.below(UNARY.len())], Attrs::None, &[x]).unwrap(),
            14 | 15 => {
                let c = splat(&mut g, [1.0, 2.0, 0.5, -0.0, 3.0][rng.below(5)]);
                let op = [OpKind::Mul, OpKind::Add, OpKind::Div][rng.below(3)];
                g.add(op, Attrs::None, &[x, c]).unwrap()
            }
            16 => {
                let n = g.add(OpKind::Neg, Attrs::None, &[x]).unwrap();
                g.add(OpKind::Neg, Attrs::None, &[n]).unwrap()
            }
            17 => g.add(OpKind::Mul, Attrs::None, &[x, x]).unwrap(),
            _ => {
                let c = splat(&mut g, 1.0);
                g.add(OpKind::Mul, Attrs::None, &[c, x]).unwrap()
            }
        };
        if !pool.contains(&id) {
            pool.push(id);
            unused.push(id);
        }
    }
    let uses = g.use_counts();
    let outputs = pool.iter().copied().filter(|id| uses[id.index()] == 0).collect();
    g.set_outputs(outputs);
    g
}

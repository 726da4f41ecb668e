//! Streams: which stream of the device each region of a schedule runs on, and the events that
//! order them.
//!
//! Regions run in schedule order. On a CUDA device a region too small to fill the GPU on its
//! own leaves most of it idle; an independent region of the same kind can run beside it on
//! another stream. The assignment, made at plan time from the regions alone, is:
//!
//! - Stream `0` is the caller's current stream; streams `1..=`[`POOL_STREAMS`] are the device's
//!   pool of non-blocking streams (the runtime's `Device::pool_stream(k - 1)`).
//! - A region is *small* when it is an elementwise or reduction kernel over fewer than
//!   [`FILL_ELEMENTS`] elements ([`work`]). Everything else (large kernels, library calls,
//!   copies, user kernels) runs on stream 0.
//! - Regions are taken in order; a small region goes on the first stream holding no small
//!   region independent of it (every small region already there is one of its ancestors in the
//!   DAG of regions), so a chain stays on one stream and a region lands on a pool stream only
//!   when a small region it is independent of is on stream 0. When every stream holds an
//!   independent region, it goes with its last small producer's stream, else on the stream
//!   holding the fewest regions.
//! - A region reading the output of a region on another stream waits for an event recorded
//!   after that producer ([`StreamEvent`]), unless its stream already waited for that point
//!   (followed through earlier events, as vector clocks): each dependency costs at most one
//!   event, a chain none.
//!
//! The executor adds the two edges with the caller's stream: every pool stream used first waits
//! for the caller's stream as it was when the schedule started (the inputs are written there),
//! and at the end the caller's stream waits for every pool stream used, so results are ordered
//! on it as with one stream.
//!
//! The assignment depends only on the regions (kinds, spaces, inputs and outputs): it is
//! deterministic and the same on every backend. The CPU runs the regions one after another in
//! schedule order and ignores it; the fusion report shows it.

use std::collections::HashMap;
use std::fmt;

use kiln_ir::shape::numel;
use kiln_ir::NodeId;

use crate::fusion::{Region, RegionKind, Space};

/// The pool streams a schedule may use beside the caller's (streams `1..=POOL_STREAMS`).
pub const POOL_STREAMS: u32 = 4;

/// Elements below which a region cannot fill a GPU on its own: 132 streaming multiprocessors
/// (an H100 SXM's) × 2048 resident threads each, one element per thread.
pub const FILL_ELEMENTS: usize = 132 * 2048;

/// A cross-stream dependency: after region `producer` an event is recorded on its stream, and
/// before region `consumer` its stream waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamEvent {
    pub producer: usize,
    pub consumer: usize,
}

/// The stream of each region of a schedule, and the events between streams.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StreamPlan {
    /// The stream of region `i`: 0 the caller's current stream, `1..=POOL_STREAMS` the pool's.
    pub streams: Vec<u32>,
    /// The events, ordered by consumer, then producer.
    pub events: Vec<StreamEvent>,
}

impl StreamPlan {
    /// Whether every region runs on the caller's stream (no pool stream, no event).
    pub fn is_single_stream(&self) -> bool {
        self.streams.iter().all(|&s| s == 0)
    }

    /// The pool streams used (`1..=POOL_STREAMS`), in order.
    pub fn pool_streams_used(&self) -> Vec<u32> {
        let mut used: Vec<u32> = self.streams.iter().copied().filter(|&s| s != 0).collect();
        used.sort_unstable();
        used.dedup();
        used
    }

    /// The regions whose events region `consumer`'s stream waits for before it runs.
    pub fn waits_of(&self, consumer: usize) -> impl Iterator<Item = usize> + '_ {
        self.events.iter().filter(move |e| e.consumer == consumer).map(|e| e.producer)
    }

    /// Whether an event is recorded after region `producer`.
    pub fn records_after(&self, producer: usize) -> bool {
        self.events.iter().any(|e| e.producer == producer)
    }
}

impl fmt::Display for StreamEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event region {} -> region {}", self.producer, self.consumer)
    }
}

/// The elements a region computes over: an elementwise region's output elements, a reduction
/// region's elements reduced (its whole space); `None` for a boundary region (library call,
/// copy, user kernel), whose work the plan does not know.
pub fn work(region: &Region) -> Option<usize> {
    match region.kind {
        RegionKind::Elementwise
        | RegionKind::Reduction
        | RegionKind::Scatter
        | RegionKind::Scan => match &region.space {
            Space::Elementwise { shape }
            | Space::Reduce { shape, .. }
            | Space::Scan { shape, .. } => Some(numel(shape)),
            Space::Scatter { items } => Some(numel(items)),
            Space::Opaque => None,
        },
        RegionKind::Sort | RegionKind::Vendor | RegionKind::Custom => None,
    }
}

/// Whether a region may run on a pool stream: a kernel over fewer than [`FILL_ELEMENTS`].
fn is_small(region: &Region) -> bool {
    work(region).is_some_and(|n| n < FILL_ELEMENTS)
}

/// A set of region indices.
#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn union(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// Assigns a stream to each region of a schedule (`regions` in dependency order), with the
/// events between streams (see the module docs).
pub fn assign_streams(regions: &[Region]) -> StreamPlan {
    let n = regions.len();
    let producer: HashMap<NodeId, usize> = regions
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.outputs.iter().map(move |&o| (o, i)))
        .collect();
    // The regions each region reads from, each once, in order.
    let deps: Vec<Vec<usize>> = regions
        .iter()
        .map(|r| {
            let mut d: Vec<usize> =
                r.inputs.iter().filter_map(|i| producer.get(i).copied()).collect();
            d.sort_unstable();
            d.dedup();
            d
        })
        .collect();
    let small: Vec<bool> = regions.iter().map(is_small).collect();
    let lanes = POOL_STREAMS as usize + 1;
    let mut streams = vec![0u32; n];
    if small.iter().filter(|&&s| s).count() >= 2 {
        let mut ancestors: Vec<Bits> = Vec::with_capacity(n);
        // The small regions on each stream so far.
        let mut on: Vec<Vec<usize>> = vec![Vec::new(); lanes];
        let mut count = vec![0usize; lanes];
        for r in 0..n {
            let mut a = Bits::new(n);
            for &d in &deps[r] {
                a.insert(d);
                a.union(&ancestors[d]);
            }
            if small[r] {
                let fits = |s: usize| on[s].iter().all(|&q| a.contains(q));
                let s = (0..lanes)
                    .find(|&s| fits(s))
                    .or_else(|| {
                        deps[r].iter().rev().find(|&&d| small[d]).map(|&d| streams[d] as usize)
                    })
                    .unwrap_or_else(|| (0..lanes).min_by_key(|&s| count[s]).unwrap_or(0));
                on[s].push(r);
                streams[r] = s as u32;
            }
            count[streams[r] as usize] += 1;
            ancestors.push(a);
        }
    }
    StreamPlan { events: events(&streams, &deps, lanes), streams }
}

/// The events the stream assignment needs: for each region, one per other stream it reads
/// from, after the last producer there, unless its stream already waited for that point.
fn events(streams: &[u32], deps: &[Vec<usize>], lanes: usize) -> Vec<StreamEvent> {
    // known[t][s]: 1 + the last region of stream s that stream t is ordered after (0: none).
    let mut known: Vec<Vec<usize>> = vec![vec![0; lanes]; lanes];
    // The clock of each region's stream just after it.
    let mut after: Vec<Vec<usize>> = Vec::with_capacity(streams.len());
    let mut events = Vec::new();
    for (r, d) in deps.iter().enumerate() {
        let t = streams[r] as usize;
        for s in 0..lanes {
            if s == t {
                continue;
            }
            let Some(&p) = d.iter().rev().find(|&&p| streams[p] as usize == s) else {
                continue;
            };
            if known[t][s] > p {
                continue;
            }
            events.push(StreamEvent { producer: p, consumer: r });
            let clock = after[p].clone();
            for (k, c) in known[t].iter_mut().zip(clock) {
                *k = (*k).max(c);
            }
        }
        known[t][t] = r + 1;
        after.push(known[t].clone());
    }
    events.sort_unstable_by_key(|e| (e.consumer, e.producer));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::{DType, Graph};

    /// A region of `kind` over `elements`, reading nodes `inputs` and writing node `output`.
    fn region(kind: RegionKind, elements: usize, inputs: &[u32], output: u32) -> Region {
        let space = match kind {
            RegionKind::Elementwise => {
                Space::Elementwise { shape: [elements].into_iter().collect() }
            }
            RegionKind::Reduction => Space::Reduce {
                shape: [elements].into_iter().collect(),
                axes: [0].into_iter().collect(),
            },
            RegionKind::Scatter => Space::Scatter { items: [elements].into_iter().collect() },
            RegionKind::Scan => Space::Scan { shape: [elements].into_iter().collect(), axis: 0 },
            RegionKind::Sort | RegionKind::Vendor | RegionKind::Custom => Space::Opaque,
        };
        let mut body = Graph::new();
        let x = body.input(0, DType::Float32, &[elements]);
        body.set_outputs(vec![x]);
        Region {
            kind,
            space,
            body,
            inputs: inputs.iter().map(|&i| NodeId(i)).collect(),
            outputs: vec![NodeId(output)],
        }
    }

    const SMALL: usize = 1000;
    const BIG: usize = FILL_ELEMENTS;

    fn ev(producer: usize, consumer: usize) -> StreamEvent {
        StreamEvent { producer, consumer }
    }

    #[test]
    fn independent_small_reductions_take_two_streams_and_their_consumer_waits() {
        let p = assign_streams(&[
            region(RegionKind::Reduction, SMALL, &[0], 10),
            region(RegionKind::Reduction, SMALL, &[1], 11),
            region(RegionKind::Elementwise, 1, &[10, 11], 12),
        ]);
        assert_eq!(p.streams, [0, 1, 0]);
        assert_eq!(p.events, [ev(1, 2)]);
        assert_eq!(p.pool_streams_used(), [1]);
    }

    #[test]
    fn a_chain_stays_on_stream_0_without_events() {
        let p = assign_streams(&[
            region(RegionKind::Reduction, SMALL, &[0], 10),
            region(RegionKind::Elementwise, SMALL, &[10], 11),
            region(RegionKind::Reduction, SMALL, &[11], 12),
        ]);
        assert!(p.is_single_stream());
        assert!(p.events.is_empty());
    }

    #[test]
    fn big_or_opaque_regions_stay_on_stream_0() {
        let p = assign_streams(&[
            region(RegionKind::Reduction, BIG, &[0], 10),
            region(RegionKind::Reduction, BIG, &[1], 11),
            region(RegionKind::Vendor, SMALL, &[2], 12),
            region(RegionKind::Sort, SMALL, &[3], 13),
            region(RegionKind::Elementwise, 1, &[10, 11, 12, 13], 14),
        ]);
        assert!(p.is_single_stream(), "{p:?}");
    }

    #[test]
    fn a_small_region_beside_a_big_one_stays_on_stream_0() {
        let p = assign_streams(&[
            region(RegionKind::Reduction, BIG, &[0], 10),
            region(RegionKind::Reduction, SMALL, &[1], 11),
        ]);
        assert!(p.is_single_stream(), "{p:?}");
    }

    #[test]
    fn two_independent_chains_keep_their_streams() {
        let p = assign_streams(&[
            region(RegionKind::Reduction, SMALL, &[0], 10),
            region(RegionKind::Reduction, SMALL, &[1], 11),
            region(RegionKind::Elementwise, SMALL, &[10], 12),
            region(RegionKind::Elementwise, SMALL, &[11], 13),
            region(RegionKind::Elementwise, SMALL, &[12, 13], 14),
        ]);
        assert_eq!(p.streams, [0, 1, 0, 1, 0]);
        assert_eq!(p.events, [ev(3, 4)]);
    }

    #[test]
    fn an_event_already_waited_for_is_not_repeated() {
        // Region 3 (stream 1) waits for region 0 on stream 0; region 4, after it on stream 1,
        // reads region 0 too and needs no event of its own.
        let p = assign_streams(&[
            region(RegionKind::Reduction, SMALL, &[0], 10),
            region(RegionKind::Reduction, SMALL, &[1], 11),
            region(RegionKind::Elementwise, SMALL, &[10], 12),
            region(RegionKind::Elementwise, SMALL, &[11, 10], 13),
            region(RegionKind::Elementwise, SMALL, &[13, 10], 14),
        ]);
        assert_eq!(p.streams, [0, 1, 0, 1, 1]);
        assert_eq!(p.events, [ev(0, 3)]);
    }

    #[test]
    fn more_independent_regions_than_streams_share_the_least_used() {
        let regions: Vec<Region> =
            (0..7).map(|i| region(RegionKind::Reduction, SMALL, &[i], 10 + i)).collect();
        let p = assign_streams(&regions);
        assert_eq!(p.streams, [0, 1, 2, 3, 4, 0, 1]);
        assert!(p.events.is_empty());
    }
}

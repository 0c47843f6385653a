//! Helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::schedule::algorithm::{self, Algorithm, Options};
use dimsum::schedule::bounds;
use dimsum::schedule::simulate::{LinkModel, SimOptions, simulate};
use std::path::Path;

/// A random strongly connected network: `n` NPUs, `k` switches, a ring
/// through every node (so it is strongly connected) plus random extra
/// links, every link with its own bandwidth.
pub fn random_network(n: u32, k: u32, extra: &[(u32, u32, f64)], ring_bw: &[f64]) -> Topology {
    let name = |v: u32| if v < n { format!("{v}") } else { format!("s{}", v - n) };
    let total = n + k;
    let mut text = String::new();
    for v in 0..total {
        text.push_str(&format!(
            "{} -> {} {} 0\n",
            name(v),
            name((v + 1) % total),
            ring_bw[v as usize]
        ));
    }
    for &(a, b, bw) in extra {
        let (a, b) = (a % total, b % total);
        if a != b {
            text.push_str(&format!("{} -> {} {} 0\n", name(a), name(b), bw));
        }
    }
    Topology::parse_edges(&text, Path::new("random.txt")).unwrap()
}

/// Builds `algorithm`'s schedule of `kind` on `t` (`k` chunks per NPU, at
/// least 1; forest and flow choose theirs at 1) for a buffer of `size`
/// bytes, replays it (alpha-beta links), asserts it valid, and returns its
/// time and the topology's bound.
pub fn replay(t: &Topology, kind: CollectiveKind, algorithm: Algorithm, k: u32, size: f64) -> (f64, f64) {
    let opt = Options {
        chunks_per_npu: k.max(1),
        size_bytes: size,
        ..Options::default()
    };
    let s = algorithm::build(t, kind, algorithm, &opt).unwrap();
    let r = simulate(
        &s,
        t,
        &SimOptions {
            size_bytes: size,
            model: LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: None,
        },
    )
    .unwrap();
    assert!(r.valid, "{:?}", r.errors.first());
    (r.time_ns, bounds::lower_bounds(t, kind, size).bound_ns)
}

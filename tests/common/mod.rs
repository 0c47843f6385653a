//! Helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use dimsum::model::topology::Topology;
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

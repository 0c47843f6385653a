//! Swing's speed: generating and simulating a Swing all-reduce on a 64x64
//! torus (target: under a second), multiport (4 concurrent collectives) and
//! single-port, plus the latency-optimal variant. Timed once each (best of
//! three): `cargo bench --bench swing` (`-- multiport-only` for the first).
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::schedule::simulate::{self, LinkModel, SimOptions};
use dimsum::schedule::swing::{self, Peers, SwingOptions, Variant};
use std::time::Instant;

fn best<T>(f: impl Fn() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.expect("ran"))
}

fn main() {
    let opt = SimOptions {
        size_bytes: 128.0 * 1024.0 * 1024.0,
        model: LinkModel::AlphaBeta,
        record: false,
        reduce_gbps: None,
    };
    for (shape, variant, multiport) in [
        ([64u32, 64], Variant::Bandwidth, true),
        ([64, 64], Variant::Bandwidth, false),
        ([64, 64], Variant::Latency, true),
    ]
    .into_iter()
    .take(if std::env::args().any(|a| a == "multiport-only") {
        1
    } else {
        3
    }) {
        let topo = Topology::torus(&shape, true, &[50.0; 2], &[500.0; 2]);
        let o = SwingOptions {
            peers: Peers::Swing,
            variant,
            multiport,
            chunks_per_npu: 1,
        };
        let (build_secs, s) = best(|| swing::build(&topo, CollectiveKind::AllReduce, &o).expect("schedule"));
        let (sim_secs, r) = best(|| simulate::simulate(&s, &topo, &opt).expect("replay"));
        assert!(r.valid, "{:?}", r.errors);
        println!(
            "swing/{} all-reduce on torus {}x{}: build {:.3} s + simulate {:.3} s = {:.3} s ({} transfers, {} hops, {} chunk moves; 128 MiB in {:.1} us)",
            s.algorithm,
            shape[0],
            shape[1],
            build_secs,
            sim_secs,
            build_secs + sim_secs,
            r.transfers,
            r.hops,
            r.chunk_moves,
            r.time_ns / 1e3
        );
    }
}

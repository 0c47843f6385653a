//! The simulator's speed: chunk transfers replayed per second on one core
//! (a 64-NPU ring all-gather with 64 chunks per NPU: 258,048 one-hop
//! transfers), and a 4096-NPU hierarchical all-reduce on LIBRA's 4D fabric
//! (Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)) built and replayed;
//! between them the 8x8x8 torus all-reduce (hierarchical, bidirectional
//! rings, 8 chunks per NPU), in transfers and chunk moves per second.
//! Timed once each (best of three): `cargo bench --bench simulate`
//! (`-- ring-only` for the first, `-- torus-only` for the first two).
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::schedule::builtin::{self, Algo};
use dimsum::schedule::simulate::{self, LinkModel, SimOptions};
use dimsum::study::Study;
use std::path::Path;
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
        size_bytes: 1e9,
        model: LinkModel::AlphaBeta,
        record: false,
        reduce_gbps: None,
    };
    // Throughput.
    let ring = Topology::torus(&[64], true, &[50.0], &[500.0]);
    let s = builtin::build(&ring, CollectiveKind::AllGather, Algo::Ring, None, 64).expect("schedule");
    let (secs, r) = best(|| simulate::simulate(&s, &ring, &opt).expect("replay"));
    assert!(r.valid);
    println!(
        "simulate/ring-64 all-gather, 64 chunks per NPU: {} transfers in {:.3} s = {:.2} M transfers/s",
        r.transfers,
        secs,
        r.transfers as f64 / secs / 1e6
    );
    if std::env::args().any(|a| a == "ring-only") {
        return;
    }
    // The 8x8x8 torus all-reduce (hierarchical, bidirectional rings, 8
    // chunks per NPU).
    let torus = Topology::torus(&[8, 8, 8], true, &[100.0; 3], &[500.0; 3]);
    let algos = vec![Algo::BidirectionalRing; 3];
    let s = builtin::build(&torus, CollectiveKind::AllReduce, Algo::Ring, Some(&algos), 8).expect("schedule");
    let (secs, r) = best(|| simulate::simulate(&s, &torus, &opt).expect("replay"));
    assert!(r.valid);
    println!(
        "simulate/8x8x8 torus all-reduce, 8 chunks per NPU: {} transfers ({} chunk moves) in {:.3} s = {:.2} M transfers/s, {:.1} M chunk moves/s",
        r.transfers,
        r.chunk_moves,
        secs,
        r.transfers as f64 / secs / 1e6,
        r.chunk_moves as f64 / secs / 1e6
    );
    if std::env::args().any(|a| a == "torus-only") {
        return;
    }
    // 4096 NPUs, hierarchical.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let study = Study::load(&root.join("studies/gpt3-4d-procurement.toml")).expect("study");
    let topo = Topology::from_fabric(&study.fabric, &[250.0; 4]);
    let algos: Vec<Algo> = topo.dims.iter().map(|d| Algo::default_for(d.kind)).collect();
    let (build_secs, s) =
        best(|| builtin::build(&topo, CollectiveKind::AllReduce, Algo::Ring, Some(&algos), 1).expect("schedule"));
    let (sim_secs, r) = best(|| simulate::simulate(&s, &topo, &opt).expect("replay"));
    assert!(r.valid);
    println!(
        "simulate/4096-NPU hierarchical all-reduce on {}: build {:.3} s + replay {:.3} s = {:.3} s ({} transfers, {} hops, {} chunk moves)",
        study.fabric.shape(),
        build_secs,
        sim_secs,
        build_secs + sim_secs,
        r.transfers,
        r.hops,
        r.chunk_moves
    );
}

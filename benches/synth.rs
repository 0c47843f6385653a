//! TACOS-style synthesis speed: all-gather on tori of growing size (one
//! chunk per NPU, 1 GiB output, 50 GB/s and 0.5 us links), timed once each
//! (the large ones are too long for repeated samples), with the process's
//! peak memory after each, the matching timed in each link model: TACOS's
//! (a link is busy for latency + chunk / bandwidth) and alpha-beta (the
//! latency overlaps the next transfer). Up to 64x64 the schedule is kept
//! (N(N-1) transfers); 128x128 and 200x200 (40,000 NPUs) run the matching
//! without keeping it. `cargo bench --bench synth` (`-- small` stops after
//! 32x32; `-- 64x64` runs one size; `-- alpha-beta` or `-- tacos` one
//! link model).
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::schedule::simulate::LinkModel;
use dimsum::schedule::synth::{self, SynthOptions};
use std::time::Instant;

fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let small = args.iter().any(|a| a == "small");
    let only: Vec<&String> = args.iter().filter(|a| a.contains('x')).collect();
    let models: Vec<LinkModel> = [LinkModel::Tacos, LinkModel::AlphaBeta]
        .into_iter()
        .filter(|m| !args.iter().any(|a| a == "tacos" || a == "alpha-beta") || args.iter().any(|a| *a == m.to_string()))
        .collect();
    println!(
        "| torus | NPUs | keeps schedule | link model | seconds | synthesized time (us) | ingress bound (us) | time / bound | peak memory (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let cases: &[(&[u32], bool)] = &[
        (&[16, 16], true),
        (&[8, 8, 8], true),
        (&[32, 32], true),
        (&[64, 64], true),
        (&[128, 128], false),
        (&[200, 200], false),
    ];
    for &(shape, keep) in cases {
        if small && shape.iter().product::<u32>() > 1024 {
            break;
        }
        let name: Vec<String> = shape.iter().map(|x| x.to_string()).collect();
        if !only.is_empty() && !only.iter().any(|o| **o == name.join("x")) {
            continue;
        }
        let d = shape.len();
        let t = Topology::torus(shape, true, &vec![50.0; d], &vec![500.0; d]);
        let n = f64::from(t.npus);
        for &timing in &models {
            let opt = SynthOptions {
                seed: 0,
                size_bytes: 1_073_741_824.0,
                chunks_per_npu: 1,
                timing,
                reduce_timing: None,
            };
            let start = Instant::now();
            let time_ns = if keep {
                let s = synth::synthesize(&t, CollectiveKind::AllGather, &opt).expect("synthesis");
                assert_eq!(
                    s.schedule
                        .transfers
                        .iter()
                        .flat_map(|x| &x.chunks)
                        .map(|r| f64::from(r.count))
                        .sum::<f64>(),
                    n * (n - 1.0)
                );
                s.time_ns
            } else {
                synth::all_gather_time(&t, &opt).expect("synthesis").0
            };
            let secs = start.elapsed().as_secs_f64();
            // Each NPU receives (N-1) chunks of 1 GiB / N over 2d links.
            let bound = (n - 1.0) / n * opt.size_bytes / (2.0 * d as f64 * 50.0);
            let shape_s: Vec<String> = shape.iter().map(|x| x.to_string()).collect();
            println!(
                "| {} | {} | {} | {timing} | {:.3} | {:.1} | {:.1} | {:.4} | {:.0} |",
                shape_s.join("x"),
                t.npus,
                if keep { "yes" } else { "no" },
                secs,
                time_ns / 1e3,
                bound / 1e3,
                time_ns / bound,
                peak_mib()
            );
        }
    }
}

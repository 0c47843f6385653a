//! Bills of materials worked out by hand, and their invariants.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::bom::{self, Procurement};
use dimsum::study::Study;
use std::path::Path;

fn study(text: &str) -> Study {
    Study::parse(text, Path::new("inline.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// 256 NPUs, 8 per node on NVSwitch, 32 nodes on a 400 Gb/s InfiniBand
/// rail per node-local index (8 rails of 32), 64-port QM9700 switches.
const POD: &str = r#"
[[fabric.dims]]
name = "node"
block = "switch"
npus = 8
tier = "t"
[[fabric.dims]]
name = "pod"
block = "switch"
npus = 32
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [8, 32] }
[procurement.dims.node]
ports = ["nvlink4"]
reach_m = 1
[procurement.dims.pod]
ports = ["ib-ndr-400"]
reach_m = 3
"#;

fn item<'a>(b: &'a bom::Bom, dim: &str, role: &str) -> &'a bom::Item {
    b.items
        .iter()
        .find(|i| i.dimension == dim && i.role == role)
        .unwrap_or_else(|| panic!("no {role} on {dim}: {:?}", b.items))
}

#[test]
fn dgx_style_pod_by_hand() {
    let s = study(POD);
    let b = bom::bom(&s.fabric, &s.procurement(), &[450.0, 50.0]).unwrap();
    // node: 450 GB/s / 25 GB/s per NVLink 4 port = 18 ports per NPU (an
    // H100's 18 links); 256 x 18 = 4608 ports at $100. One switch plane per
    // port; a plane of a node has 8 NPU ports, 64 / 8 = 8 nodes share a
    // 64-port NVSwitch: 18 planes x 32 / 8 = 72 switches. Links on the
    // baseboard (1 m): nothing to buy.
    assert_eq!(b.dims[0].ports_per_npu, 18);
    assert_eq!(item(&b, "node", "NPU ports").quantity, 4608);
    assert_eq!(item(&b, "node", "switches").quantity, 72);
    assert_eq!(item(&b, "node", "NPU-switch links").component, "nvlink-backplane");
    // pod: 50 GB/s = one 400 Gb/s port per NPU: 256 ConnectX-7 at $2,188.
    // 8 rails of 32 NPUs; two rails share a 64-port QM9700: 4 switches at
    // $36,000. 256 links of 3 m: passive copper at $200.
    assert_eq!(item(&b, "pod", "NPU ports").quantity, 256);
    let sw = item(&b, "pod", "switches");
    assert_eq!((sw.component.as_str(), sw.quantity), ("quantum-2-qm9700", 4));
    let c = item(&b, "pod", "NPU-switch links");
    assert_eq!((c.component.as_str(), c.quantity), ("dac-400g", 256));
    // Capex: 4608 x 100 + 72 x 20,800 + 256 x 2,188 + 4 x 36,000 + 256 x 200
    //      = 460,800 + 1,497,600 + 560,128 + 144,000 + 51,200 = 2,713,728.
    assert_eq!(b.capex_usd, 2_713_728.0);
    let sum: f64 = b.items.iter().map(|i| i.quantity as f64 * i.unit_price_usd).sum();
    assert_eq!(b.capex_usd, sum);
    assert_eq!(b.bought_gbps, vec![450.0, 50.0]);
    assert_eq!(b.cost_per_npu_usd, 2_713_728.0 / 256.0);
}

/// The same 256 NPUs on one flat switch dimension: a group of 256 does not
/// fit a 64-port switch, so a non-blocking leaf-spine: each leaf 32 ports
/// down and 32 up, 256 / 32 = 8 leaves, 8 x 32 = 256 uplinks over 64-port
/// spines = 4 spines; the 256 leaf-spine links run 50 m: 400G SR4 optics
/// ($1,320 a link), the 256 NPU links 3 m of copper ($200).
#[test]
fn leaf_spine_by_hand() {
    let text = r#"
[[fabric.dims]]
name = "pod"
block = "switch"
npus = 256
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [256] }
[procurement.dims.pod]
ports = ["ib-ndr-400"]
"#;
    let s = study(text);
    let b = bom::bom(&s.fabric, &s.procurement(), &[50.0]).unwrap();
    let plan = b.dims[0].switch.as_ref().unwrap();
    assert_eq!((plan.tiers, plan.leaves, plan.spines), (2, 8, 4));
    let up = item(&b, "pod", "leaf-spine links");
    assert_eq!((up.component.as_str(), up.quantity), ("optics-400g-sr4", 256));
    // 256 x 2,188 + 256 x 200 + 12 x 36,000 + 256 x 1,320 = 1,381,248.
    assert_eq!(b.capex_usd, 1_381_248.0);
    // Power: 256 x 25 + 256 x 0.1 + 12 x 750 + 256 x 16 = 19,521.6 W.
    assert!((b.power_w - 19_521.6).abs() < 1e-6, "{}", b.power_w);
    // Twice the bandwidth: two planes, everything doubles.
    let b2 = bom::bom(&s.fabric, &s.procurement(), &[100.0]).unwrap();
    assert_eq!(b2.capex_usd, 2.0 * 1_381_248.0);
}

/// Rings and fully-connected groups: a ring NPU has two neighbours at B/2
/// each way; a fully-connected NPU of 8 has 7 at B/7.
#[test]
fn ring_and_fully_connected_ports_by_hand() {
    let text = r#"
[[fabric.dims]]
name = "chiplet"
block = "ring"
npus = 4
tier = "t"
[[fabric.dims]]
name = "package"
block = "fully-connected"
npus = 8
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [4, 8] }
[procurement.dims.chiplet]
ports = ["ucie-x64"]
[procurement.dims.package]
ports = ["nvlink4"]
reach_m = 1
"#;
    let s = study(text);
    // chiplet 600 GB/s: 300 each way per neighbour over 256 GB/s UCIe
    // modules: 2 per neighbour, 4 per NPU, 32 x 4 = 128 modules, 64 links;
    // bought 2 x 2 x 256 = 1024 GB/s.
    // package 200 GB/s: 200/7 = 28.6 GB/s per neighbour over 25 GB/s NVLink
    // ports: 2 per neighbour, 14 per NPU, 448 ports, 32 x 7 x 2 / 2 = 224
    // links; bought 7 x 2 x 25 = 350 GB/s.
    let b = bom::bom(&s.fabric, &s.procurement(), &[600.0, 200.0]).unwrap();
    assert_eq!(b.dims[0].ports_per_npu, 4);
    assert_eq!(item(&b, "chiplet", "NPU ports").quantity, 128);
    assert_eq!(item(&b, "chiplet", "NPU-NPU links").quantity, 64);
    assert_eq!(b.bought_gbps[0], 1024.0);
    assert_eq!(b.dims[1].ports_per_npu, 14);
    assert_eq!(item(&b, "package", "NPU-NPU links").quantity, 224);
    assert_eq!(b.bought_gbps[1], 350.0);
    // 128 x 512 + 448 x 100 = 110,336 (traces and baseboard cost nothing).
    assert_eq!(b.capex_usd, 110_336.0);
}

/// More bandwidth never buys fewer parts (per port class) nor costs less.
#[test]
fn more_bandwidth_never_buys_fewer_parts() {
    let s = study(POD);
    let spec: Procurement = s.procurement();
    let mut last: Option<bom::Bom> = None;
    for step in 1..=40 {
        let bw = [step as f64 * 12.5, step as f64 * 2.5];
        let b = bom::bom(&s.fabric, &spec, &bw).unwrap();
        assert!(b.bought_gbps.iter().zip(&bw).all(|(x, y)| x >= y));
        if let Some(prev) = &last {
            assert!(b.capex_usd >= prev.capex_usd && b.power_w >= prev.power_w);
            for i in &prev.items {
                let now: u64 = b
                    .items
                    .iter()
                    .filter(|j| j.component == i.component && j.dimension == i.dimension && j.role == i.role)
                    .map(|j| j.quantity)
                    .sum();
                assert!(
                    now >= i.quantity,
                    "{} on {}: {} -> {now}",
                    i.component,
                    i.dimension,
                    i.quantity
                );
            }
        }
        last = Some(b);
    }
}

#[test]
fn options_are_purchasable_and_undominated() {
    let s = study(POD);
    let spec = s.procurement();
    let opts = bom::options(&s.fabric, &spec, 1, false);
    // One to 64 NDR ports per NPU.
    assert_eq!(opts.len(), 64);
    for (k, o) in opts.iter().enumerate() {
        assert_eq!(o.gbps, 50.0 * (k + 1) as f64);
        let b = bom::dim_bom(
            &s.fabric,
            &spec,
            1,
            spec.catalog.port("ib-ndr-400").unwrap(),
            o.k,
            o.gbps,
        )
        .unwrap();
        assert_eq!(b.capex_usd, o.capex_usd);
    }
}

mod milp {
    use super::study;
    use dimsum::model::bom;
    use dimsum::optimize::catalog::{self, Goal};
    use dimsum::optimize::{Objective, Problem};

    /// Ring(4) x FC(4) x Switch(8), three collectives, a few ports each.
    const SMALL: &str = r#"
[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
tier = "t"
[[fabric.dims]]
name = "b"
block = "fully-connected"
npus = 4
tier = "t"
[[fabric.dims]]
name = "c"
block = "switch"
npus = 8
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l0"
forward = { compute_ns = 1e6, collective = "all-reduce", bytes = 64e6, group = [4, 4, -1] }
input_grad = { compute_ns = 1e6, collective = "all-gather", bytes = 4e6, group = [4, -1, 8] }
weight_grad = { compute_ns = 1e6, collective = "all-reduce", bytes = 256e6, group = [-1, 4, 8] }
[procurement.dims.a]
ports = ["nvlink4"]
reach_m = 1
max_ports = 8
[procurement.dims.b]
ports = ["nvlink4", "ucie-x64"]
reach_m = 0.05
max_ports = 9
[procurement.dims.c]
ports = ["eth-200", "ib-ndr-400", "eth-800"]
reach_m = 3
max_ports = 4
"#;

    fn setup() -> (dimsum::study::Study, Problem, Vec<Vec<bom::DimOption>>) {
        let s = study(SMALL);
        let p = Problem::new(&s.fabric, s.iteration_model(), s.linear_cost(), vec![]);
        let spec = s.procurement();
        let opts = (0..3).map(|d| bom::options(&s.fabric, &spec, d, false)).collect();
        (s, p, opts)
    }

    /// Every combination of options, by brute force: (time ms, capex).
    fn brute(p: &Problem, opts: &[Vec<bom::DimOption>]) -> Vec<(f64, f64, f64)> {
        let mut out = Vec::new();
        for a in &opts[0] {
            for b in &opts[1] {
                for c in &opts[2] {
                    let bw = [a.gbps, b.gbps, c.gbps];
                    out.push((
                        p.iteration.iteration_ns(&bw) / 1e6,
                        a.capex_usd + b.capex_usd + c.capex_usd,
                        a.power_w + b.power_w + c.power_w,
                    ));
                }
            }
        }
        out
    }

    #[test]
    fn milp_equals_brute_force() {
        let (_, p, opts) = setup();
        let all = brute(&p, &opts);
        assert!(all.len() > 100, "{}", all.len());
        let cheapest = all.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let dearest = all.iter().map(|x| x.1).fold(0.0, f64::max);
        for f in [1.0, 1.1, 1.5, 2.0, 4.0, 1e3] {
            let budget = (cheapest * f).min(dearest);
            let (cp, _) = catalog::CatalogProblem::new(&p, opts.clone(), Some(budget), None);
            let s = catalog::solve(&cp, Goal::Perf).unwrap();
            let best = all
                .iter()
                .filter(|x| x.1 <= budget * (1.0 + 1e-12))
                .map(|x| x.0)
                .fold(f64::INFINITY, f64::min);
            assert!(
                (s.iteration_time_ms - best).abs() <= 1e-6 * best,
                "budget {budget}: {} vs {best}",
                s.iteration_time_ms
            );
            assert!(s.capex_usd <= budget * (1.0 + 1e-12));
            // Of the fastest designs, the cheapest.
            let least = all
                .iter()
                .filter(|x| x.1 <= budget * (1.0 + 1e-12) && x.0 <= best * (1.0 + 1e-9))
                .map(|x| x.1)
                .fold(f64::INFINITY, f64::min);
            assert!(
                (s.capex_usd - least).abs() <= 1e-6 * least,
                "budget {budget}: {} vs {least}",
                s.capex_usd
            );
        }
        // Least capex meeting a time target.
        let fastest = all.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        for f in [1.0001, 1.01, 1.1, 1.5] {
            let target = fastest * f;
            let (cp, _) = catalog::CatalogProblem::new(&p, opts.clone(), None, None);
            let s = catalog::solve(&cp, Goal::MinCapex { target_ms: target }).unwrap();
            let best = all
                .iter()
                .filter(|x| x.0 <= target)
                .map(|x| x.1)
                .fold(f64::INFINITY, f64::min);
            assert!(
                (s.capex_usd - best).abs() <= 1e-6 * best,
                "target {target}: {} vs {best}",
                s.capex_usd
            );
        }
    }

    /// Never better than the continuous relaxation; never worse than
    /// rounding it up when that fits the same budget.
    #[test]
    fn catalog_between_continuous_and_rounded() {
        let (s, p, opts) = setup();
        let all = brute(&p, &opts);
        let cheapest = all.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let mut rounded_fit = 0;
        let dearest = all.iter().map(|x| x.1).fold(0.0, f64::max);
        for budget in [1.05, 1.2, 1.5, 2.0, 3.0, 5.0, 8.0]
            .iter()
            .map(|f| cheapest * f)
            .chain([dearest * 0.9, dearest, dearest * 2.0])
        {
            let c = catalog::compare(&p, opts.clone(), Some(budget), None, Goal::Perf).unwrap();
            assert!(
                c.catalog.iteration_time_ms >= c.continuous.iteration_time_ms * (1.0 - 1e-7),
                "budget {budget}: catalog {} below continuous {}",
                c.catalog.iteration_time_ms,
                c.continuous.iteration_time_ms
            );
            // The continuous bound is certified.
            assert!(c.continuous.gap <= 1e-6);
            if let Some(r) = c.rounded.as_ref().filter(|r| r.feasible) {
                rounded_fit += 1;
                assert!(c.catalog.iteration_time_ms <= r.iteration_time_ms * (1.0 + 1e-9));
            }
        }
        assert!(rounded_fit > 0, "no budget let the rounded design fit");
        let _ = s;
    }

    #[test]
    fn cli_catalog_optimum_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, format!("{SMALL}\n[optimize]\ntarget_ms = 10\n")).unwrap();
        let bin = || assert_cmd::Command::cargo_bin("dimsum").unwrap();
        let out = bin()
            .args([
                "optimize",
                path.to_str().unwrap(),
                "--catalog",
                "--budget-usd",
                "2e6",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let capex = v["capex_usd"].as_f64().unwrap();
        assert!(capex <= 2e6);
        let items: f64 = v["bom"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["quantity"].as_f64().unwrap() * i["unit_price_usd"].as_f64().unwrap())
            .sum();
        assert!((items - capex).abs() < 1e-6 * capex);
        assert!(
            v["iteration_time_ms"].as_f64().unwrap()
                >= v["continuous"]["iteration_time_ms"].as_f64().unwrap() * (1.0 - 1e-7)
        );
        // No budget for perf: one line, exit 2.
        let out = bin()
            .args(["optimize", path.to_str().unwrap(), "--catalog"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--budget-usd"));
        // perf-per-cost is not offered.
        let out = bin()
            .args([
                "optimize",
                path.to_str().unwrap(),
                "--catalog",
                "--objective",
                "perf-per-cost",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        // `dimsum bom` JSON: capex is the sum of the items.
        let out = bin()
            .args(["bom", path.to_str().unwrap(), "--bw", "100,100,50", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for k in ["capex_usd", "power_w", "items"] {
            assert!(v.get(k).is_some());
        }
        for i in v["items"].as_array().unwrap() {
            for k in ["component", "dimension", "quantity", "unit_price_usd", "unit_power_w"] {
                assert!(i.get(k).is_some(), "{k}");
            }
        }
        // A port the catalog does not sell: one line with the line number, exit 2.
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, SMALL.replace("\"eth-800\"", "\"token-ring-4\"")).unwrap();
        let out = bin()
            .args(["bom", bad.to_str().unwrap(), "--bw", "1,1,1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("token-ring-4") && err.contains("bad.toml:"), "{err}");
        assert_eq!(err.trim().lines().count(), 1);
        let _ = Objective::Perf;
    }
}

#[test]
fn scale_out_dimensions_default_to_nics() {
    // 2,048 GPUs on three switch levels (8 per node, 16 nodes per rail
    // group, 16 groups on a spine) and no [procurement.dims]: the node's
    // switch is scale-up (every port, NVLink-class included, 3 m); the rail
    // and the spine lie beyond a switch level, so they default to NICs
    // (Ethernet and InfiniBand ports) with 30 m reach.
    let s = study(
        r#"
[[fabric.dims]]
name = "node"
block = "switch"
npus = 8
tier = "t"
[[fabric.dims]]
name = "rail"
block = "switch"
npus = 16
tier = "t"
[[fabric.dims]]
name = "spine"
block = "switch"
npus = 16
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [8, 16, 16] }
"#,
    );
    let spec = s.procurement();
    assert!(spec.dims[0].ports.is_empty());
    assert_eq!(spec.dims[0].reach_m, 3.0);
    for d in [1, 2] {
        assert!(bom::scale_out(&s.fabric, d));
        assert!(!spec.dims[d].ports.is_empty());
        for p in &spec.dims[d].ports {
            let kind = &spec.catalog.port(p).unwrap().kind;
            assert!(kind == "ethernet" || kind == "infiniband", "{p}: {kind}");
        }
        assert_eq!(spec.dims[d].reach_m, 30.0);
    }
    // Bought, the rail's and the spine's NPU ports are NICs.
    let b = bom::bom(&s.fabric, &spec, &[400.0, 50.0, 50.0]).unwrap();
    for dim in ["rail", "spine"] {
        let port = &item(&b, dim, "NPU ports").component;
        let kind = &spec.catalog.port(port).unwrap().kind;
        assert!(kind == "ethernet" || kind == "infiniband", "{dim}: {port}");
    }
    // LIBRA's 4D fabric: the pod's groups span 4 x 8 x 4 x 32 = 4,096 NPUs,
    // over the 256 of the largest scale-up domain; the node's 128 are not.
    let gpt3 = Study::load(Path::new("studies/gpt3-4d.toml")).unwrap();
    assert!(!bom::scale_out(&gpt3.fabric, 2));
    assert!(bom::scale_out(&gpt3.fabric, 3));
}

/// NVIDIA's DGX SuperPOD reference architecture for DGX H100
/// (RA-11333-001), 4 scalable units: 128 DGX H100, 1,024 GPUs, one NDR400
/// port per GPU on a rail-optimized two-tier InfiniBand fabric; NVLink on
/// the baseboard, bought with the servers.
#[test]
fn dgx_superpod_4su_part_by_part() {
    let s = Study::load(Path::new("studies/dgx-superpod-4su.toml")).unwrap();
    // The study writes the port speed with its unit: "400Gb/s" = 50 GB/s.
    assert_eq!(s.fabric.dims[1].max_gbps, Some(50.0));
    // The server's NVLink: 18 links x 25 GB/s = 450 GB/s per direction,
    // fixed (both bounds set to it).
    assert_eq!(
        (s.fabric.dims[0].min_gbps, s.fabric.dims[0].max_gbps),
        (Some(450.0), Some(450.0))
    );
    let b = bom::bom(&s.fabric, &s.procurement(), &[450.0, 50.0]).unwrap();
    // NVLink: nothing from the network (no NVSwitch chips, no cables);
    // 1,024 / 8 = 128 servers beside it.
    assert!(b.dims[0].items.is_empty());
    assert_eq!(b.dims[0].kind, "server");
    assert_eq!(b.servers.len(), 1);
    assert_eq!((b.servers[0].server.as_str(), b.servers[0].quantity), ("hgx-h100", 128));
    // Compute fabric: 8 rails of 128 GPUs; a rail outgrows a 64-port
    // QM9700, so a leaf-spine: 128 / 32 = 4 leaves and 4 x 32 / 64 = 2
    // spines per rail; 8 rails: 32 leaf + 16 spine (the reference's
    // counts), 1,024 node-to-leaf and 8 x 4 x 32 = 1,024 leaf-to-spine
    // links, each two 400G OSFP ends and multimode fibre (30 m and 50 m:
    // optics-400g-sr4; no AOC, which the reference does not use for NDR).
    let plan = b.dims[1].switch.as_ref().unwrap();
    assert_eq!(
        (plan.model.as_str(), plan.tiers, plan.leaves, plan.spines),
        ("quantum-2-qm9700", 2, 32, 16)
    );
    assert_eq!(item(&b, "ib", "NPU ports").component, "ib-ndr-400");
    assert_eq!(item(&b, "ib", "NPU ports").quantity, 1024);
    let down = item(&b, "ib", "NPU-switch links");
    assert_eq!((down.component.as_str(), down.quantity), ("optics-400g-sr4", 1024));
    let up = item(&b, "ib", "leaf-spine links");
    assert_eq!((up.component.as_str(), up.quantity), ("optics-400g-sr4", 1024));
    // Transceivers, as the reference counts them: twin-port OSFP (two
    // 400G ends each). In the nodes, a DGX H100's 4 compute OSFP cages:
    // 128 x 4 = 512, one end of each node-to-leaf link (1,024 ends / 2). In
    // the switches, the other end of those and both ends of the leaf-spine
    // links: (1,024 + 2 x 1,024) / 2 = 1,536 = 512 leaf down + 512 leaf up
    // + 512 spine.
    assert_eq!(down.quantity / 2, 128 * 4);
    assert_eq!((down.quantity + 2 * up.quantity) / 2, 512 + 512 + 512);
    // Capex: 1,024 x 2,188 + 2,048 x 1,320 + 48 x 36,000
    //      = 2,240,512 + 2,703,360 + 1,728,000 = 6,671,872.
    assert_eq!(b.capex_usd, 6_671_872.0);
    // Power: 1,024 x 25 + 2,048 x 16 + 48 x 750 = 25,600 + 32,768 + 36,000.
    assert!((b.power_w - 94_368.0).abs() < 1e-6, "{}", b.power_w);
    // The servers: 128 x 10.2 kW; 128 x $292,496.
    assert!((b.servers[0].power_w() - 1_305_600.0).abs() < 1e-6);
    assert_eq!(b.servers[0].capex_usd(), Some(128.0 * 292_496.0));
}

/// The servers' figures, by hand from their sources.
#[test]
fn server_figures_by_hand() {
    let c = dimsum::model::catalog::Catalog::builtin();
    let gbps = |n: &str| c.server(n).unwrap().gbps();
    // H100 / H200: 18 NVLink 4 links x 25 GB/s per direction.
    assert_eq!(gbps("hgx-h100"), 18.0 * 25.0);
    assert_eq!(gbps("hgx-h200"), 18.0 * 25.0);
    // B200 and GB200: 18 NVLink 5 links x 50 GB/s.
    assert_eq!(gbps("hgx-b200"), 18.0 * 50.0);
    assert_eq!(gbps("gb200-nvl72"), 18.0 * 50.0);
    assert_eq!(c.server("gb200-nvl72").unwrap().domain, 72);
    // MI300X: 7 Infinity Fabric links x 64 GB/s per direction.
    assert_eq!(gbps("mi300x-platform"), 7.0 * 64.0);
    for s in &c.servers {
        assert_eq!(s.domain % s.gpus, 0, "{}", s.name);
        assert!(s.source.len() > 40, "{}", s.name);
    }
}

const SERVER_STUDY: &str = r#"
[[fabric.dims]]
name = "nvlink"
block = "switch"
npus = 8
[[fabric.dims]]
name = "ib"
block = "switch"
npus = 16
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [8, 16] }
[procurement.dims.nvlink]
server = "hgx-h100"
[procurement.dims.ib]
tech = "infiniband"
"#;

#[test]
fn a_server_dimension_is_fixed_and_bought_with_the_servers() {
    let s = study(SERVER_STUDY);
    // Priced at nothing in the linear model: not in the network budget.
    let lin = s.linear_cost();
    assert_eq!(lin.usd_per_gbps[0], 0.0);
    // The catalog MILP's only design of the dimension is the server's.
    let o = bom::options(&s.fabric, &s.procurement(), 0, true);
    assert_eq!(o.len(), 1);
    assert_eq!((o[0].gbps, o[0].capex_usd), (450.0, 0.0));
    // tech = "infiniband": only InfiniBand parts on the network.
    let b = bom::bom(&s.fabric, &s.procurement(), &[450.0, 100.0]).unwrap();
    assert_eq!(b.dims[1].kind, "infiniband");
    assert!(b.items.iter().all(|i| i.dimension == "ib"));
    assert!(
        b.items
            .iter()
            .all(|i| !i.component.starts_with("eth") && !i.component.starts_with("aoc"))
    );
    // Asking the server for more than it ships is not for sale.
    let e = bom::bom(&s.fabric, &s.procurement(), &[500.0, 50.0]).unwrap_err();
    assert!(e.to_string().contains("ships 450"), "{e}");
}

#[test]
fn a_bound_or_bw_that_disagrees_with_the_server_is_refused_with_both_values() {
    let text = SERVER_STUDY.replace("npus = 8\n", "npus = 8\nmax_gbps = 375\n");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("max_gbps = 375") && e.contains("450"), "{e}");
    assert!(e.contains("procurement.dims.nvlink.server"), "{e}");
    let text = format!("bw = [375.0, 50.0]\n{SERVER_STUDY}");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("375") && e.contains("450") && e.contains("bw"), "{e}");
    // A server on a dimension with another inside it.
    let text = SERVER_STUDY
        .replace("[procurement.dims.nvlink]\nserver = \"hgx-h100\"", "")
        .replace("tech = \"infiniband\"", "server = \"hgx-h100\"");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("innermost") && e.contains("`nvlink`"), "{e}");
    // A server whose domain is not the dimension's span.
    let text = SERVER_STUDY.replace("server = \"hgx-h100\"", "server = \"gb200-nvl72\"");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("72") && e.contains("spans 8"), "{e}");
    // Unknown server and technology, with the allowed lists.
    let text = SERVER_STUDY.replace("server = \"hgx-h100\"", "server = \"dgx-1\"");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("hgx-h100") && e.contains("gb200-nvl72"), "{e}");
    let text = SERVER_STUDY.replace("tech = \"infiniband\"", "tech = \"omni-path\"");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("not a technology") && e.contains("ethernet"), "{e}");
    // A port of another technology than `tech`.
    let text = SERVER_STUDY.replace("tech = \"infiniband\"", "tech = \"infiniband\"\nports = [\"eth-400\"]");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("eth-400") && e.contains("ethernet"), "{e}");
}

/// Bandwidths with units: bits and bytes, both ways, and the unit trap
/// warned about.
#[test]
fn bandwidths_take_units_and_the_gbit_trap_is_warned() {
    // 400 Gb/s = 400 / 8 = 50 GB/s; 50 GiB/s = 50 x 2^30 / 1e9 GB/s.
    let text = SERVER_STUDY.replace(
        "npus = 16\n",
        "npus = 16\nmin_gbps = \"400Gb/s\"\nmax_gbps = \"50GiB/s\"\n",
    );
    let s = study(&text);
    assert_eq!(s.fabric.dims[1].min_gbps, Some(50.0));
    let gib = s.fabric.dims[1].max_gbps.unwrap();
    assert!((gib - 53.687_091_2).abs() < 1e-9, "{gib}");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // `max_gbps = 400` on an InfiniBand dimension: NDR400's speed in Gb/s,
    // read as 400 GB/s = 8 ports per NPU: allowed, with a located warning.
    let text = SERVER_STUDY.replace("npus = 16\n", "npus = 16\nmax_gbps = 400\n");
    let s = study(&text);
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("ib-ndr-400") && s.warnings[0].contains("8 such ports"),
        "{:?}",
        s.warnings
    );
    assert!(s.warnings[0].contains("inline.toml:"), "{:?}", s.warnings);
    // More than the catalog sells (64 ports x 50 GB/s = 3,200 GB/s per
    // NPU) as the study's bw inside [procurement]: refused, naming the most.
    let text = format!("bw = [450.0, 3600.0]\n{SERVER_STUDY}");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("3600") && e.contains("3200"), "{e}");
    // The same 400 on a scale-up dimension (NVLink-class ports: 16 x 25
    // GB/s) is no trap: nothing warned.
    let s = study(&POD.replace("npus = 8\n", "npus = 8\nmax_gbps = 400\n"));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // A case that disagrees with the server, located at its bw.
    let text = format!("{SERVER_STUDY}[[case]]\nname = \"x\"\nbw = [400.0, 50.0]\n");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(
        e.contains("case[0].bw") && e.contains("450") && e.contains("s.toml:"),
        "{e}"
    );
    // Not a unit.
    let text = SERVER_STUDY.replace("npus = 16\n", "npus = 16\nmax_gbps = \"50 furlongs\"\n");
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("s.toml:") && e.contains("400Gb/s"), "{e}");
}

/// The newcomer's study (issue 43): HGX H100 servers on InfiniBand, $12M
/// and 150 kW for the network. The decision keeps NVLink at the server's
/// 450 GB/s, buys no NVLink parts, buys InfiniBand, and stays within both
/// budgets; its parts total its capex.
#[test]
fn the_newcomers_study_buys_infiniband_beside_the_servers() {
    let s = Study::load(Path::new("studies/hgx-h100-1024-ib.toml")).unwrap();
    let problem = s.problem().unwrap();
    let p = dimsum::pipeline::procure::procure(
        &dimsum::pipeline::procure::Buying::of(&s),
        &dimsum::pipeline::procure::objectives(&s),
        &problem,
        &[],
    )
    .unwrap();
    let (_, c, b) = p.decided().unwrap();
    assert_eq!(b.bought_gbps[0], 450.0);
    assert!(b.dims[0].items.is_empty());
    assert_eq!(b.dims[1].kind, "infiniband");
    assert!(
        b.capex_usd <= 12.0e6 && b.power_w <= 150.0e3,
        "{} {}",
        b.capex_usd,
        b.power_w
    );
    let sum: f64 = b.items.iter().map(|i| i.capex_usd()).sum();
    assert_eq!(sum, b.capex_usd);
    assert!((c.catalog.capex_usd - b.capex_usd).abs() <= 1e-6 * b.capex_usd);
}

/// A price that would print as an infinite network cost is refused, with
/// its line and the largest allowed.
#[test]
fn prices_and_powers_are_bounded() {
    let text = POD.replace(
        "link_usd_per_gbps = 1.0",
        "link_usd_per_gbps = 1.0\nswitch_usd_per_gbps = 1e308",
    );
    let e = Study::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
    assert!(
        e.contains("switch_usd_per_gbps") && e.contains("1e6") && e.contains("s.toml:"),
        "{e}"
    );
    let cat = std::fs::read_to_string("catalog/default.toml").unwrap();
    let bad = cat.replacen("usd = 36000.0", "usd = 1e300", 1);
    assert_ne!(bad, cat);
    let e = dimsum::model::catalog::Catalog::parse(&bad, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 1e8"), "{e}");
}

/// On every committed study with [procurement], the decision's parts (the
/// report's table) total the decision's capex and power, which are the
/// catalog MILP's: the bill is of the designs the MILP chose.
#[test]
fn every_committed_decision_is_its_parts() {
    let mut seen = 0;
    for entry in std::fs::read_dir("studies").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let s = Study::load(&path).unwrap();
        if s.procurement.is_none() {
            continue;
        }
        seen += 1;
        let p = dimsum::pipeline::procure::procure(
            &dimsum::pipeline::procure::Buying::of(&s),
            &dimsum::pipeline::procure::objectives(&s),
            &s.problem().unwrap(),
            &[],
        )
        .unwrap();
        for a in &p.answers {
            let Ok((c, b)) = &a.outcome else { continue };
            let capex: f64 = b.items.iter().map(|i| i.capex_usd()).sum();
            let power: f64 = b.items.iter().map(|i| i.power_w()).sum();
            let name = format!("{} {}", path.display(), a.objective);
            assert!((capex - b.capex_usd).abs() <= 1e-9 * b.capex_usd.max(1.0), "{name}");
            assert!(
                (c.catalog.capex_usd - b.capex_usd).abs() <= 1e-6 * b.capex_usd.max(1.0),
                "{name}"
            );
            assert!((c.catalog.power_w - power).abs() <= 1e-6 * power.max(1.0), "{name}");
        }
        assert!(p.decided().is_some(), "{}", path.display());
    }
    assert!(seen >= 5, "{seen} procurement studies");
}

/// `optimize` on a study whose budgets are in [procurement] answers within
/// them (no "unbounded") and says its answer is the linear approximation.
#[test]
fn optimize_answers_within_the_procurement_budgets_and_says_how_it_priced() {
    let out = assert_cmd::Command::cargo_bin("dimsum")
        .unwrap()
        .args(["optimize", "studies/hgx-h100-1024-ib.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[procurement] budget_w"), "{text}");
    assert!(
        text.contains("not a purchase") && text.contains("optimize --catalog"),
        "{text}"
    );
}

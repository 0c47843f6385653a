//! Bills of materials worked out by hand, and their invariants.

use dimsum::bom::{self, Procurement};
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
    // pod: 50 GB/s = one 400 Gb/s port per NPU: 256 ConnectX-7 at $1,580.
    // 8 rails of 32 NPUs; two rails share a 64-port QM9700: 4 switches at
    // $36,000. 256 links of 3 m: passive copper at $200.
    assert_eq!(item(&b, "pod", "NPU ports").quantity, 256);
    let sw = item(&b, "pod", "switches");
    assert_eq!((sw.component.as_str(), sw.quantity), ("quantum-2-qm9700", 4));
    let c = item(&b, "pod", "NPU-switch links");
    assert_eq!((c.component.as_str(), c.quantity), ("dac-400g", 256));
    // Capex: 4608 x 100 + 72 x 20,800 + 256 x 1,580 + 4 x 36,000 + 256 x 200
    //      = 460,800 + 1,497,600 + 404,480 + 144,000 + 51,200 = 2,558,080.
    assert_eq!(b.capex_usd, 2_558_080.0);
    let sum: f64 = b.items.iter().map(|i| i.quantity as f64 * i.unit_price_usd).sum();
    assert_eq!(b.capex_usd, sum);
    assert_eq!(b.bought_gbps, vec![450.0, 50.0]);
    assert_eq!(b.cost_per_npu_usd, 2_558_080.0 / 256.0);
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
    // 256 x 1,580 + 256 x 200 + 12 x 36,000 + 256 x 1,320 = 1,225,600.
    assert_eq!(b.capex_usd, 1_225_600.0);
    // Power: 256 x 25 + 256 x 0.1 + 12 x 750 + 256 x 16 = 19,521.6 W.
    assert!((b.power_w - 19_521.6).abs() < 1e-6, "{}", b.power_w);
    // Twice the bandwidth: two planes, everything doubles.
    let b2 = bom::bom(&s.fabric, &s.procurement(), &[100.0]).unwrap();
    assert_eq!(b2.capex_usd, 2.0 * 1_225_600.0);
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

//! The fat-tree block (`block = "fat-tree"`, `model::fattree`): NVIDIA's DGX
//! SuperPOD component counts row by row, oversubscription by hand, the
//! taper of an oversubscribed level on a collective's time by hand, rail-only
//! against the rail-optimized fat-tree on 256 GPUs, bad keys, and
//! monotonicity in oversubscription and size.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::model::bom::{self, Bom};
use dimsum::model::collective::coefficients;
use dimsum::study::Study;
use proptest::prelude::*;
use std::path::Path;

fn study(text: &str) -> Study {
    Study::parse(text, Path::new("inline.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    match Study::parse(text, Path::new("inline.toml")) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

/// DGX nodes of 8 GPUs (`server`'s NVLink) x `nodes` on one NDR400 port
/// per GPU, the compute fabric a fat-tree with `keys` (rails, levels,
/// oversubscription); one data-parallel all-reduce of 1 GB along the rails.
fn pod(server: &str, nodes: u32, keys: &str) -> String {
    format!(
        r#"
[[fabric.dims]]
name = "nvlink"
block = "switch"
npus = 8
[[fabric.dims]]
name = "ib"
block = "fat-tree"
npus = {nodes}
{keys}
[workload]
[[workload.layers]]
name = "l"
weight_grad = {{ compute_ns = 0, collective = "all-reduce", bytes = 1e9, group = [1, -1] }}
[procurement.dims.nvlink]
server = "{server}"
[procurement.dims.ib]
tech = "infiniband"
reach_m = 30.0
spine_reach_m = 50.0
"#
    )
}

/// The bill at one 400 Gb/s port per GPU (50 GB/s) and the server's NVLink.
fn bill(s: &Study) -> Bom {
    let p = s.procurement();
    let nvlink = p.dims[0].server.as_ref().map_or(450.0, |x| x.gbps());
    bom::bom(&s.fabric, &p, &[nvlink, 50.0]).unwrap_or_else(|e| panic!("{e}"))
}

fn quantity(b: &Bom, role: &str) -> u64 {
    b.items
        .iter()
        .filter(|i| i.dimension == "ib" && i.role == role)
        .map(|i| i.quantity)
        .sum()
}

/// (switches per tier leaf, spine, core; cables node-leaf, leaf-spine,
/// spine-core) of the compute fabric.
fn counts(b: &Bom) -> [u64; 6] {
    [
        quantity(b, "leaf switches"),
        quantity(b, "spine switches"),
        quantity(b, "core switches"),
        quantity(b, "NPU-switch links"),
        quantity(b, "leaf-spine links"),
        quantity(b, "spine-core links"),
    ]
}

/// NVIDIA DGX SuperPOD reference architecture, DGX H100 (RA-11333-001),
/// compute fabric component count (QM9700, 64 NDR ports; SU = 32 DGX):
/// SU 1: 8 leaf, 4 spine, 256 leaf-spine; SU 2: 16, 8, 512; SU 4: 32, 16,
/// 1,024. The RA's node-leaf counts (252, 1,020) keep a port per SU for
/// UFM with 31 nodes; here every SU is 32 nodes, 256 GPUs per SU.
/// By hand (R = 64, h = 32): leaves N / 32, spines 32 L / 64.
#[test]
fn superpod_h100_rows() {
    let rail = "rails = \"optimized\"";
    for (su, row) in [
        (1, [8, 4, 0, 256, 256, 0]),
        (2, [16, 8, 0, 512, 512, 0]),
        (4, [32, 16, 0, 1024, 1024, 0]),
    ] {
        let b = bill(&study(&pod("hgx-h100", 32 * su, rail)));
        assert_eq!(counts(&b), row, "H100 SU {su}");
        assert_eq!(b.dims[1].switch.as_ref().unwrap().model, "quantum-2-qm9700");
    }
}

/// DGX SuperPOD reference architecture, DGX B200, "Larger DGX SuperPOD
/// component counts" (8 x 400G compute ports per DGX B200, QM9700): SU 2
/// (512 GPUs): 16 leaf, 8 spine, 512 node-leaf, 512 leaf-spine; SU 4:
/// 32 / 16, 1,024 / 1,024; SU 8: 64 / 32, 2,048 / 2,048; SU 16 (4,096
/// GPUs): 128 leaf, 128 spine, 64 core, 4,096 cables per tier; SU 32: 256 /
/// 256 / 128, 8,192 each; SU 64 (16,384 GPUs): 512 / 512 / 256, 16,384
/// each (docs.nvidia.com/dgx-superpod/reference-architecture-scalable-
/// infrastructure-b200/latest/dgx-superpod-architecture.html, checked
/// against the stored page). By hand: two tiers while N <= 64^2 / 2 = 2,048, then spines = L
/// (32 down, 32 up each) and core = 32 L / 64.
#[test]
fn superpod_b200_rows() {
    let rail = "rails = \"optimized\"";
    for (su, row) in [
        (1, [8, 4, 0, 256, 256, 0]),
        (2, [16, 8, 0, 512, 512, 0]),
        (4, [32, 16, 0, 1024, 1024, 0]),
        (8, [64, 32, 0, 2048, 2048, 0]),
        (16, [128, 128, 64, 4096, 4096, 4096]),
        (32, [256, 256, 128, 8192, 8192, 8192]),
        (64, [512, 512, 256, 16384, 16384, 16384]),
    ] {
        let b = bill(&study(&pod("hgx-b200", 32 * su, rail)));
        assert_eq!(counts(&b), row, "B200 SU {su}");
        let plan = b.dims[1].switch.as_ref().unwrap();
        assert_eq!(plan.tiers, if su >= 16 { 3 } else { 2 }, "B200 SU {su}");
    }
}

/// 2:1 at the leaves keeps 32 ports down and puts 16 up: 256 GPUs on 8
/// leaves, 8 x 16 = 128 uplinks over 64-port spines = 2 spines (half of
/// 4). 4,096 GPUs at 2:1 on both levels: 128 leaves, 128 x 16 = 2,048
/// uplinks; 2,048 / 32 = 64 spines, 64 x 16 = 1,024 up; 1,024 / 64 = 16
/// core.
#[test]
fn oversubscription_by_hand() {
    let b = bill(&study(&pod(
        "hgx-h100",
        32,
        "rails = \"optimized\"\noversubscription = [2.0]",
    )));
    assert_eq!(counts(&b), [8, 2, 0, 256, 128, 0]);
    let b = bill(&study(&pod(
        "hgx-h100",
        512,
        "rails = \"optimized\"\noversubscription = [2.0, 2.0]",
    )));
    assert_eq!(counts(&b), [128, 64, 16, 4096, 2048, 1024]);
}

/// One dimension of 64 NPUs, a fat-tree of 64-port switches with 2:1 at
/// the leaves (each leaf 32 NPUs), one collective of S = 64 MB.
fn tapered(algorithm: &str, collective: &str, over: &str) -> String {
    format!(
        r#"
[[fabric.dims]]
name = "ib"
block = "fat-tree"
npus = 64
levels = 2
{over}
algorithm = "{algorithm}"
[workload]
[[workload.layers]]
name = "l"
weight_grad = {{ compute_ns = 0, collective = "{collective}", bytes = 64e6, group = [64] }}
[procurement.dims.ib]
tech = "infiniband"
"#
    )
}

fn bytes_on_dim0(text: &str) -> f64 {
    let s = study(text);
    let comm = s.workload.layers[0].weight_grad.comm.clone().unwrap();
    coefficients(&comm, &s.fabric, &s.collective).dims[0].bytes
}

/// The taper by hand: an all-to-all of S over 64 NPUs sends 63 S / 64
/// per NPU, S / 2 of it off its leaf (32 of 63 peers); a leaf's 16 uplinks
/// carry 32 x S / 2 = 16 S against its NPUs' 32 links: S / B, so the
/// bytes become max(63/64, 1) S = 64 MB (64/63 of LIBRA's). Halving-doubling
/// all-reduce: 2 S 63/64 = 126 MB, of which 32/63 in the steps across
/// leaves at half the rate: 126 MB x (1 + 32/63) = 190 MB.
#[test]
fn taper_by_hand() {
    let flat = bytes_on_dim0(&tapered("direct", "all-to-all", ""));
    assert_eq!(flat, 64e6 * 63.0 / 64.0);
    let a2a = bytes_on_dim0(&tapered("direct", "all-to-all", "oversubscription = [2.0]"));
    assert!((a2a - 64e6).abs() < 1e-6, "{a2a}");
    let hd = bytes_on_dim0(&tapered("halving-doubling", "all-reduce", "oversubscription = [2.0]"));
    assert!((hd - 190e6).abs() < 1e-3, "{hd}");
    // Non-blocking: LIBRA's 2 S 63/64, as on a switch.
    let flat = bytes_on_dim0(&tapered("halving-doubling", "all-reduce", ""));
    assert_eq!(flat, 2.0 * 64e6 * 63.0 / 64.0);
}

/// Rail-only (today's switch: 8 rails of 32 on 64-port switches, two rails
/// a switch: 4 switches) against the rail-optimized fat-tree (8 leaves + 4
/// spines) on 256 GPUs: the same DP all-reduce time within the rails, and
/// the fat-tree's extra capex 8 QM9700 at $36,000 + 256 leaf-spine links
/// of 50 m (400G SR4 optics, $1,320) = 288,000 + 337,920 = $625,920; its
/// extra power 8 x 750 W + 256 x 16 W = 10,096 W.
#[test]
fn rail_only_against_rail_optimized() {
    let only = study(&pod("hgx-h100", 32, "").replace("fat-tree", "switch"));
    let opt = study(&pod("hgx-h100", 32, "rails = \"optimized\""));
    let bw = [450.0, 50.0];
    assert_eq!(
        only.evaluate(&bw).iteration_time_ms,
        opt.evaluate(&bw).iteration_time_ms
    );
    let (a, b) = (bill(&only), bill(&opt));
    assert_eq!(quantity(&a, "switches"), 4);
    assert_eq!(counts(&b)[..2], [8, 4]);
    assert_eq!(b.capex_usd - a.capex_usd, 625_920.0);
    assert!((b.power_w - a.power_w - 10_096.0).abs() < 1e-6);
    // Per group (not rail-optimized), 32 NPUs fit one switch: rail-only's bill.
    let per_group = study(&pod("hgx-h100", 32, ""));
    assert_eq!(bill(&per_group).capex_usd, a.capex_usd);
    // Rails of 512 (16 SU): a switch dimension's leaf-spine per rail, 16
    // leaves + 8 spines a rail, 128 + 64 in all, is the per-group tree's
    // (examples/rail_only.rs prices rail-only as per-group trees).
    let switch = bill(&study(&pod("hgx-h100", 512, "").replace("fat-tree", "switch")));
    let tree = bill(&study(&pod("hgx-h100", 512, "")));
    assert_eq!(
        (quantity(&switch, "leaf switches"), quantity(&switch, "spine switches")),
        (128, 64)
    );
    assert_eq!(counts(&tree), counts(&switch));
    assert_eq!(tree.capex_usd, switch.capex_usd);
}

#[test]
fn bad_keys_are_one_line_errors() {
    let mut all = Vec::new();
    let e = error(&pod("hgx-h100", 32, "oversubscription = [0.5]"));
    assert!(
        e.contains("fabric.dims[1].oversubscription") && e.contains("0.5 is not allowed"),
        "{e}"
    );
    all.push(e);
    let e = error(&pod("hgx-h100", 32, "rails = \"optimized\"\nlevels = 1"));
    assert!(
        e.contains("fabric.dims[1].levels") && e.contains("1 levels of 64-port switches reach fewer than 256 NPUs"),
        "{e}"
    );
    all.push(e);
    let e = error(&pod("hgx-h100", 32, "levels = 1\noversubscription = [2.0]"));
    assert!(e.contains("give at most 0"), "{e}");
    all.push(e);
    let ring = pod("hgx-h100", 32, "levels = 2").replace("\"fat-tree\"", "\"ring\"");
    let e = error(&ring);
    assert!(e.contains("`levels` is a fat-tree key, but the block is ring"), "{e}");
    all.push(e);
    let e = error(&pod("hgx-h100", 32, "").replace("fat-tree", "fat-tre"));
    assert!(e.contains("fat-tree") && e.contains("switch"), "{e}");
    all.push(e);
    let e = error(&pod("hgx-h100", 32, "rails = \"all\""));
    assert!(e.contains("optimized") && e.contains("per-group"), "{e}");
    all.push(e);
    for e in all {
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("inline.toml:"), "{e}");
    }
    // The binary: exit 2, one line.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, pod("hgx-h100", 32, "oversubscription = [0.5]")).unwrap();
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .arg("bom")
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("s.toml:") && stderr.contains("oversubscription"),
        "{stderr}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// More oversubscription never buys more switches or cables and is
    /// never faster; more nodes never buy fewer.
    #[test]
    fn monotone(nodes in 2u32..600, o1 in 1.0f64..4.0, extra in 0.0f64..3.0, rails in any::<bool>()) {
        let keys = |o: f64| format!(
            "{}\noversubscription = [{o}]\nlevels = 3\nalgorithm = \"halving-doubling\"",
            if rails { "rails = \"optimized\"" } else { "" }
        );
        let lo = study(&pod("hgx-h100", nodes, &keys(o1)));
        let hi = study(&pod("hgx-h100", nodes, &keys(o1 + extra)));
        let (bl, bh) = (counts(&bill(&lo)), counts(&bill(&hi)));
        for i in 0..6 {
            prop_assert!(bh[i] <= bl[i], "{bl:?} {bh:?}");
        }
        let bw = [450.0, 50.0];
        prop_assert!(hi.evaluate(&bw).iteration_time_ms >= lo.evaluate(&bw).iteration_time_ms);
        let more = study(&pod("hgx-h100", nodes + 1, &keys(o1)));
        let bm = counts(&bill(&more));
        for i in 0..6 {
            prop_assert!(bm[i] >= bl[i], "{bl:?} {bm:?}");
        }
    }
}

#[test]
fn to_toml_writes_the_fat_tree_back() {
    // 256 GPUs rail-optimized: a 3-level tree asked for (2 would do) with
    // 2:1 leaves; the TOML the study writes reads back to the same keys.
    let s = study(&pod(
        "hgx-h100",
        32,
        "rails = \"optimized\"\nlevels = 3\noversubscription = [2.0]",
    ));
    let back = study(&s.to_toml(&[]));
    let (a, b) = (&s.fabric.dims[1], &back.fabric.dims[1]);
    assert_eq!(b.block_name(), "fat-tree");
    let (ta, tb) = (a.fat_tree.as_ref().unwrap(), b.fat_tree.as_ref().unwrap());
    assert_eq!(tb.levels, Some(3));
    assert_eq!(tb.oversubscription, vec![2.0]);
    assert_eq!(
        (tb.levels, &tb.oversubscription, tb.rails),
        (ta.levels, &ta.oversubscription, ta.rails)
    );
}

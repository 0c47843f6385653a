//! LIBRA's published inputs (tests/data/libra, MIT), read and evaluated;
//! golden values worked out by hand from LIBRA's formulas.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use approx::assert_relative_eq;
use dimsum::interop::libra;
use dimsum::model::fabric::Block;
use dimsum::model::workload::CollectiveKind;
use dimsum::study::Study;
use std::path::{Path, PathBuf};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libra").join(p)
}

fn gpt3_4d() -> Study {
    Study::from_libra_files(
        &data("network/4d_network.yml"),
        &data("workload/GPT_3.txt"),
        &data("communicator/GPT_3_4d.yml"),
        &data("cost_model/4d_cost_model.yml"),
    )
    .unwrap()
}

#[test]
fn network_reads_as_libra_does() {
    let f = libra::read_network(&data("network/4d_network.yml")).unwrap();
    assert_eq!(f.shape(), "Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)");
    assert_eq!(f.npus(), 4096);
    let names: Vec<&str> = f.dims.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["chiplet", "package", "node", "pod"]);
    assert_eq!(f.dims[3].tier, "InterPod");
    let f3 = libra::read_network(&data("network/3d_network.yml")).unwrap();
    assert_eq!(f3.shape(), "Ring(16) x FullyConnected(8) x Switch(32)");
}

#[test]
fn workload_has_twelve_fields_a_line() {
    let layers = libra::read_workload(&data("workload/GPT_3.txt")).unwrap();
    assert_eq!(layers.len(), 18);
    let q1 = &layers[0];
    assert_eq!(q1.name, "Q1");
    assert_eq!(q1.phases[0], (9_375_000.0, None));
    assert_eq!(
        q1.phases[1],
        (9_375_000.0, Some((CollectiveKind::AllReduce, 805_306_368.0)))
    );
    assert_eq!(
        q1.phases[2],
        (9_375_000.0, Some((CollectiveKind::AllReduce, 452_984_832.0)))
    );
    let concat = &layers[5];
    assert_eq!(concat.phases[1].1, Some((CollectiveKind::AllGather, 50_331_648.0)));
    // Every LIBRA workload we ship reads.
    for w in ["DLRM", "GPT_3", "MSFT_1T", "ResNet_50", "Turing_NLG"] {
        assert!(
            !libra::read_workload(&data(&format!("workload/{w}.txt")))
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(libra::read_workload(&data("workload/ResNet_50.txt")).unwrap().len(), 54);
}

#[test]
fn communicator_and_cost_model() {
    let c = libra::read_communicator(&data("communicator/GPT_3_4d.yml")).unwrap();
    assert_eq!(c.groups[0].to_libra(), vec![4, 4, -1, -1]);
    assert_eq!(c.groups[2].to_libra(), vec![-1, 2, 4, 32]);
    assert_eq!(c.lines, [Some(6), Some(7), Some(8)]);
    let k = libra::read_cost_model(&data("cost_model/4d_cost_model.yml")).unwrap();
    assert_relative_eq!(k.tiers["InterPod"].nic_usd_per_gbps, 31.60004);
    assert_relative_eq!(k.tiers["InterChiplet"].link_usd_per_gbps, 2.00001);
    assert_eq!(k.tiers["InterChiplet"].switch_usd_per_gbps, 0.0);
}

/// Layer Q1 of GPT-3 on the 4D network at B = (500, 300, 100, 100) GB/s.
///
/// Forward: 9_375_000 ns compute, no collective.
/// Input-grad: 9_375_000 ns, all-reduce of S = 805_306_368 B over [4, 4, -1, -1]:
///   chiplet 2 S 3/4 = 1_207_959_552 B / 500 = 2_415_919.104 ns; S -> 201_326_592;
///   package 2 S 3/4 = 301_989_888 B / 300 = 1_006_632.96 ns; max 2_415_919.104.
/// Weight-grad: 9_375_000 ns, all-reduce of S = 452_984_832 B over [-1, 2, 4, 32]:
///   package 2 S 1/2 = 452_984_832 / 300 = 1_509_949.44 ns; S -> 226_492_416;
///   node 2 S 3/4 = 339_738_624 / 100 = 3_397_386.24 ns; S -> 56_623_104;
///   pod 2 S 31/32 = 109_707_264 / 100 = 1_097_072.64 ns; max 3_397_386.24.
/// Layer: 3 * 9_375_000 + 2_415_919.104 + 3_397_386.24 = 33_938_305.344 ns.
#[test]
fn gpt3_layer_q1_by_hand() {
    let mut s = gpt3_4d();
    s.workload.layers.truncate(1);
    let e = s.evaluate(&[500.0, 300.0, 100.0, 100.0]);
    assert_relative_eq!(e.iteration_time_ms, 33.938_305_344, max_relative = 1e-12);
    assert_relative_eq!(e.compute_time_ms, 28.125, max_relative = 1e-12);
    assert_relative_eq!(e.dims[0].bytes_per_npu, 1_207_959_552.0);
    assert_relative_eq!(e.dims[1].bytes_per_npu, 301_989_888.0 + 452_984_832.0);
    assert_eq!(e.dims[0].bottleneck_of, 1);
    assert_eq!(e.dims[2].bottleneck_of, 1);
}

/// The whole GPT-3 file: two 9-layer blocks, identical except that Q2 (line
/// 10) issues no weight-grad all-reduce.
///
/// Compute per block (from the file): Q, K, V 3 * 3 * 9_375_000 = 84_375_000;
/// QK, softmax 2 * 3 * 781_250 = 4_687_500; concat 3 * 9_375_000 = 28_125_000;
/// W1, W2 2 * 3 * 37_500_000 = 225_000_000; layerNorm 3 * 12_207 = 36_621;
/// block = 342_224_121 ns, both blocks 684_448_242 ns.
/// Collectives per block: four TP all-reduces of 805_306_368 B over [4,4,-1,-1]
/// (Q input-grad, concat forward, W1 input-grad, W2 forward), 2_415_919.104 ns
/// each (see the Q1 test); the concat input-grad all-gather of 50_331_648 B,
/// walked from the last involved dimension: package S*3 = 150_994_944 B / 300
/// = 503_316.48 ns, S -> 201_326_592; chiplet S*3 = 603_979_776 B / 500 =
/// 1_207_959.552 ns, max 1_207_959.552; and, in the first block only, the Q1
/// weight-grad all-reduce, 3_397_386.24 ns.
/// Comm = 2 * (9_663_676.416 + 1_207_959.552) + 3_397_386.24 = 25_140_658.176 ns.
/// Iteration = 684_448_242 + 25_140_658.176 = 709_588_900.176 ns, 11 collectives.
#[test]
fn gpt3_4d_iteration_by_hand() {
    let s = gpt3_4d();
    let e = s.evaluate(&[500.0, 300.0, 100.0, 100.0]);
    assert_relative_eq!(e.iteration_time_ms, 709.588_900_176, max_relative = 1e-12);
    assert_relative_eq!(e.compute_time_ms, 684.448_242, max_relative = 1e-12);
    assert_relative_eq!(e.comm_time_ms, 25.140_658_176, max_relative = 1e-9);
    assert_eq!(e.collectives, 11);
    // Cost: 4096 * (2.00001*500 + 4.00002*300 + 4.00003*100 + (7.80004 + 18.00004 + 31.60004)*100)
    //     = 4096 * 8340.026 = 34_160_746.496 $
    assert_relative_eq!(e.network_cost_usd, 34_160_746.496, max_relative = 1e-12);
    assert_eq!(e.network_power_w, 0.0);
    assert!(e.iteration_lower_bound_ms <= e.iteration_time_ms);
    assert_eq!(s.fabric.dims[3].block, Block::Switch);
}

#[test]
fn import_roundtrips_through_toml() {
    let s = gpt3_4d();
    let text = s.to_toml(&["header".into()]);
    let back = Study::parse(&text, Path::new("imported.toml")).unwrap();
    assert_eq!(back.fabric, s.fabric);
    assert_eq!(back.cost, s.cost);
    assert_eq!(back.workload, s.workload);
    assert_eq!(back.collective, s.collective);
    let bw = [250.0, 250.0, 250.0, 250.0];
    assert_relative_eq!(back.evaluate(&bw).iteration_time_ms, s.evaluate(&bw).iteration_time_ms);
}

#[test]
fn every_libra_case_imports() {
    for (w, c) in [
        ("GPT_3", "GPT_3"),
        ("MSFT_1T", "MSFT_1T"),
        ("Turing_NLG", "Turing_NLG"),
        ("ResNet_50", "ResNet_50"),
    ] {
        for (net, cost, suffix) in [
            ("4d_network", "4d_cost_model", ["4d", "4D"]),
            ("3d_network", "3d_cost_model", ["3d", "3D"]),
        ] {
            let comm = suffix
                .iter()
                .map(|s| data(&format!("communicator/{c}_{s}.yml")))
                .find(|p| p.exists())
                .unwrap();
            let s = Study::from_libra_files(
                &data(&format!("network/{net}.yml")),
                &data(&format!("workload/{w}.txt")),
                &comm,
                &data(&format!("cost_model/{cost}.yml")),
            )
            .unwrap_or_else(|e| panic!("{w} {net}: {e}"));
            let bw = vec![100.0; s.fabric.ndims()];
            assert!(s.evaluate(&bw).iteration_time_ms.is_finite());
        }
    }
}

#[test]
fn study_can_name_libra_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("workload/GPT_3.txt"), dir.path().join("GPT_3.txt")).unwrap();
    std::fs::copy(data("communicator/GPT_3_4d.yml"), dir.path().join("GPT_3_4d.yml")).unwrap();
    let imported = gpt3_4d().to_toml(&[]);
    // Keep the fabric and cost of the imported study, swap the inline layers
    // for the LIBRA files.
    let head = &imported[..imported.find("[workload]").unwrap()];
    let text = format!("{head}[workload]\nlibra_workload = \"GPT_3.txt\"\nlibra_communicator = \"GPT_3_4d.yml\"\n");
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    let s = Study::load(&p).unwrap();
    assert_eq!(s.workload, gpt3_4d().workload);
    // A missing file is named.
    let bad = std::fs::read_to_string(&p).unwrap().replace("GPT_3.txt", "nope.txt");
    let e = Study::parse(&bad, &p).unwrap_err().to_string();
    assert!(e.contains("nope.txt") && e.contains("cannot read"), "{e}");
}

/// studies/ holds LIBRA's cases as imported: the committed files still match
/// what `import libra` makes of the inputs.
#[test]
fn committed_libra_studies_match_their_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (study, w, c, dims) in [
        ("gpt3-4d", "GPT_3", "GPT_3_4d", "4d"),
        ("gpt3-3d", "GPT_3", "GPT_3_3d", "3d"),
        ("msft1t-4d", "MSFT_1T", "MSFT_1T_4d", "4d"),
        ("msft1t-3d", "MSFT_1T", "MSFT_1T_3d", "3d"),
        ("turing-nlg-4d", "Turing_NLG", "Turing_NLG_4D", "4d"),
        ("turing-nlg-3d", "Turing_NLG", "Turing_NLG_3D", "3d"),
        ("resnet50-4d", "ResNet_50", "ResNet_50_4d", "4d"),
        ("resnet50-3d", "ResNet_50", "ResNet_50_3d", "3d"),
    ] {
        let committed = Study::load(&root.join(format!("studies/{study}.toml"))).unwrap();
        let fresh = Study::from_libra_files(
            &data(&format!("network/{dims}_network.yml")),
            &data(&format!("workload/{w}.txt")),
            &data(&format!("communicator/{c}.yml")),
            &data(&format!("cost_model/{dims}_cost_model.yml")),
        )
        .unwrap();
        assert_eq!(committed.fabric, fresh.fabric, "{study}");
        assert_eq!(committed.cost, fresh.cost, "{study}");
        assert_eq!(committed.workload, fresh.workload, "{study}");
        assert_eq!(committed.collective, fresh.collective, "{study}");
    }
}

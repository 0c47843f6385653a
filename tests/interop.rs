//! Chakra execution traces: ASTRA-sim's own samples read and checked
//! against what they are, schedules written and read back unchanged, and
//! malformed traces refused with the rank, node or byte named.

use assert_cmd::Command;
use dimsum::interop::chakra::{self, NodeType, Trace, Value};
use dimsum::schedule::Schedule;
use dimsum::schedule::builtin::{self, Algo};
use dimsum::schedule::swing::{self, Peers, SwingOptions, Variant};
use dimsum::schedule::synth::{self, SynthOptions};
use dimsum::topology::{self, Topology};
use dimsum::workload::CollectiveKind::{AllGather, AllReduce, ReduceScatter};
use std::path::{Path, PathBuf};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/astra-sim")
        .join(p)
}

fn topo(spec: &str) -> Topology {
    topology::from_spec(spec, &[50.0], &[500.0]).unwrap()
}

/// ASTRA-sim's 8-rank all-reduce workload: every rank's trace is schema
/// metadata and one COMM_COLL_NODE, an all-reduce (comm_type 0) of 1 MiB.
#[test]
fn astra_sim_all_reduce_workload() {
    let traces = chakra::read_traces(&data("all_reduce_8npus_1MB/all_reduce")).unwrap();
    assert_eq!(traces.len(), 8);
    for t in &traces {
        assert_eq!(t.metadata.version, "0.0.4");
        assert_eq!(t.nodes.len(), 1);
        let n = &t.nodes[0];
        assert_eq!(n.kind(), Some(NodeType::CommCollNode));
        assert_eq!(n.int("comm_type"), Some(0));
        assert_eq!(n.int("comm_size"), Some(1 << 20));
        assert_eq!(n.get("is_cpu_op"), Some(&Value::BoolVal(false)));
    }
}

/// ASTRA-sim's conversion of the MSCCL ring all-reduce (8 GPUs, 8 chunks of
/// 128 KiB): rank r sends only to r+1 and receives only from r-1, 14 sends
/// (7 reduce-scatter, 7 all-gather) and 14 receives, each reduce-scatter
/// receive followed by a 7 us COMP_NODE (the reduction), and every node but
/// the first depending on the one before it (one threadblock, in order).
#[test]
fn astra_sim_custom_ring_all_reduce() {
    let traces = chakra::read_traces(&data("custom_ring_allreduce_8npus_1MB/custom_allreduce")).unwrap();
    assert_eq!(traces.len(), 8);
    for (r, t) in traces.iter().enumerate() {
        let r = r as i64;
        let of = |k: NodeType| t.nodes.iter().filter(move |n| n.kind() == Some(k));
        assert_eq!(of(NodeType::CommSendNode).count(), 14, "rank {r}");
        assert_eq!(of(NodeType::CommRecvNode).count(), 14, "rank {r}");
        assert!(of(NodeType::CommSendNode).all(|n| n.int("comm_dst") == Some((r + 1) % 8)));
        assert!(of(NodeType::CommRecvNode).all(|n| n.int("comm_src") == Some((r + 7) % 8)));
        assert!(
            t.nodes
                .iter()
                .filter(|n| n.int("comm_size").is_some())
                .all(|n| n.int("comm_size") == Some(131072))
        );
        let comps: Vec<_> = of(NodeType::CompNode).collect();
        assert_eq!(comps.len(), 7, "rank {r}");
        assert!(comps.iter().all(|n| n.duration_micros == 7));
        for (i, n) in t.nodes.iter().enumerate().skip(1) {
            assert_eq!(n.data_deps, vec![t.nodes[i - 1].id], "rank {r} node {i}");
        }
    }
    // Not written by dimsum: no chunk identities, refused with why.
    let e = chakra::to_schedule(&traces, &data("custom_ring_allreduce_8npus_1MB/custom_allreduce")).unwrap_err();
    assert!(e.message.contains("not written by dimsum"), "{e}");
}

fn round_trip(s: &Schedule, dir: &Path, name: &str) {
    let traces = chakra::from_schedule(s, 4096.0).unwrap();
    // The direct writer gives prost's bytes exactly.
    let fast = chakra::encode_schedule(s, 4096.0).unwrap();
    let slow: Vec<Vec<u8>> = traces.iter().map(|t| t.encode()).collect();
    assert!(fast == slow, "{name}: encode_schedule differs from prost's encoding");
    assert_eq!(traces.len(), s.npus as usize);
    let prefix = dir.join(name);
    for (r, t) in traces.iter().enumerate() {
        std::fs::write(chakra::rank_path(&prefix, r as u32), t.encode()).unwrap();
    }
    let back = chakra::to_schedule(&chakra::read_traces(&prefix).unwrap(), &prefix).unwrap();
    assert_eq!(&back, s, "{name}");
    // Every transfer is one send and one receive, a reduction one more node.
    let nodes: usize = traces.iter().map(|t| t.nodes.len()).sum();
    let reduces = s
        .transfers
        .iter()
        .filter(|t| t.op == dimsum::schedule::Op::Reduce)
        .count();
    assert_eq!(nodes, 2 * s.transfers.len() + reduces, "{name}");
}

/// Schedule -> traces -> schedule is the identity for built-in, Swing
/// (with receive buffers) and synthesized schedules.
#[test]
fn schedules_round_trip_through_chakra() {
    let dir = tempfile::tempdir().unwrap();
    let t = topo("torus:4x4");
    let hier: Vec<Algo> = t.dims.iter().map(|d| Algo::default_for(d.kind)).collect();
    let swing_opt = |variant| SwingOptions {
        peers: Peers::Swing,
        variant,
        multiport: true,
        chunks_per_npu: 1,
    };
    let cases: Vec<(&str, Schedule)> = vec![
        ("ring", builtin::build(&t, AllReduce, Algo::Ring, None, 1).unwrap()),
        (
            "hd",
            builtin::build(&t, ReduceScatter, Algo::HalvingDoubling, None, 2).unwrap(),
        ),
        (
            "hier",
            builtin::build(&t, AllGather, Algo::Ring, Some(&hier), 1).unwrap(),
        ),
        (
            "swing",
            swing::build(&t, AllReduce, &swing_opt(Variant::Bandwidth)).unwrap(),
        ),
        (
            "swing-lat",
            swing::build(&t, AllReduce, &swing_opt(Variant::Latency)).unwrap(),
        ),
        (
            "tacos",
            synth::synthesize(
                &topo("mesh:3x3"),
                AllReduce,
                &SynthOptions {
                    seed: 1,
                    size_bytes: 1e6,
                    chunks_per_npu: 1,
                },
            )
            .unwrap()
            .schedule,
        ),
    ];
    for (name, s) in &cases {
        round_trip(s, dir.path(), name);
    }
}

fn write_traces(traces: &[Trace], prefix: &Path) {
    for (r, t) in traces.iter().enumerate() {
        std::fs::write(chakra::rank_path(prefix, r as u32), t.encode()).unwrap();
    }
}

/// Truncated files, wrong wire types, a send nobody receives and a
/// dependency cycle are refused naming the byte, node, rank or transfer.
#[test]
fn malformed_traces_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = topo("ring:4");
    let s = builtin::build(&t, AllGather, Algo::Ring, None, 1).unwrap();
    let good = chakra::from_schedule(&s, 1e3).unwrap();

    // Truncated: the last node's bytes cut short.
    let bytes = good[0].encode();
    let e = Trace::decode(&bytes[..bytes.len() - 3], Path::new("r0.et")).unwrap_err();
    assert!(e.message.contains("truncated"), "{e}");
    // A length prefix that is not a varint (ten continuation bytes).
    let mut bad = good[0].encode();
    bad.extend([0xff; 10]);
    let e = Trace::decode(&bad, Path::new("r0.et")).unwrap_err();
    assert!(e.message.contains("not a varint"), "{e}");
    // Wrong wire type: field 1 (id, a varint) sent as a length-delimited
    // field (tag byte 0x0a) in one more node of 3 bytes.
    let mut wrong = good[0].encode();
    wrong.extend([3, 0x0a, 1, 0x00]);
    let e = Trace::decode(&wrong, Path::new("r0.et")).unwrap_err();
    let at = format!("node {} (in file order)", good[0].nodes.len());
    assert!(
        e.message.contains(&at) && e.message.contains("invalid wire type"),
        "{e}"
    );

    // A send with no receive: drop rank 1's receive of transfer 0.
    let mut lost = good.clone();
    lost[1]
        .nodes
        .retain(|n| !(n.kind() == Some(NodeType::CommRecvNode) && n.int("dimsum_transfer") == Some(0)));
    let prefix = dir.path().join("lost");
    write_traces(&lost, &prefix);
    let e = chakra::to_schedule(&chakra::read_traces(&prefix).unwrap(), &prefix).unwrap_err();
    assert!(e.message.contains("rank 1: no receive matches transfer 0"), "{e}");

    // A cycle.
    let mut s2 = s.clone();
    // Transfers 0 and 4 both go from NPU 0 to NPU 1: each made to wait for
    // the other (a dependency the receiver's trace can state).
    assert_eq!((s2.transfers[4].src, s2.transfers[4].dst), (0, 1));
    s2.transfers[0].deps = vec![4];
    s2.transfers[4].deps = vec![0];
    let prefix = dir.path().join("cycle");
    write_traces(&chakra::from_schedule(&s2, 1e3).unwrap(), &prefix);
    let e = chakra::to_schedule(&chakra::read_traces(&prefix).unwrap(), &prefix).unwrap_err();
    assert!(e.message.contains("dependency cycle"), "{e}");
    assert!(e.message.contains("rank "), "{e}");
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

/// `collective --schedule-out`, `export chakra`, `import chakra`,
/// `collective --schedule-in`: the same schedule and the same time.
#[test]
fn cli_export_and_import_chakra() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let run = |args: &[&str]| {
        let out = dimsum().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let p = |x: &Path| x.to_str().unwrap().to_string();
    let first = run(&[
        "collective",
        "--topology",
        "torus:4x4",
        "--algorithm",
        "swing",
        "--size",
        "1MiB",
        "--json",
        "--schedule-out",
        &p(&s),
    ]);
    run(&[
        "export",
        "chakra",
        &p(&s),
        "--prefix",
        &p(&dir.path().join("et/sw")),
        "--size",
        "1MiB",
    ]);
    assert!(dir.path().join("et/sw.15.et").exists());
    let back = dir.path().join("back.json");
    run(&["import", "chakra", &p(&dir.path().join("et/sw")), "--out", &p(&back)]);
    assert_eq!(
        std::fs::read_to_string(&s).unwrap(),
        std::fs::read_to_string(&back).unwrap()
    );
    let again = run(&[
        "collective",
        "--topology",
        "torus:4x4",
        "--size",
        "1MiB",
        "--json",
        "--schedule-in",
        &p(&back),
    ]);
    let a: serde_json::Value = serde_json::from_str(&first).unwrap();
    let b: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(a["time_us"], b["time_us"]);
    // A foreign trace: exit 2, one line, nothing written.
    let out = dimsum()
        .args(["import", "chakra"])
        .arg(data("all_reduce_8npus_1MB/all_reduce"))
        .arg("--out")
        .arg(dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim().lines().count(), 1);
    assert!(!dir.path().join("x.json").exists());
}

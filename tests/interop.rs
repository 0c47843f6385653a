//! Chakra execution traces: ASTRA-sim's own samples read and checked
//! against what they are, schedules written and read back unchanged, and
//! malformed traces refused with the rank, node or byte named.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::interop::chakra::{self, NodeType, Trace, Value};
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::CollectiveKind::{AllGather, AllReduce, ReduceScatter};
use dimsum::schedule::Schedule;
use dimsum::schedule::builtin::{self, Algo};
use dimsum::schedule::swing::{self, Peers, SwingOptions, Variant};
use dimsum::schedule::synth::{self, SynthOptions};
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
    // Read back as a schedule: 8 x 14 transfers and 8 x 7 compute nodes,
    // untracked (a trace names sizes, not data). On an 8-ring at 50 GB/s
    // and 0.5 us it takes the MSCCL-IR algorithm's 14 x (131072 / 50 +
    // 500) = 43,700.16 ns plus the 7 reductions of 7 us on every rank's
    // chain: 92,700.16 ns.
    let s = chakra::to_schedule(&traces, &data("custom_ring_allreduce_8npus_1MB/custom_allreduce")).unwrap();
    assert!(s.untracked);
    assert_eq!(s.transfers.len(), 8 * 14 + 8 * 7);
    let r = sim(&s, "ring:8", 1048576.0);
    assert!(r.valid && !r.data_checked, "{:?}", r.errors);
    approx::assert_relative_eq!(
        r.time_ns,
        14.0 * (131072.0 / 50.0 + 500.0) + 7.0 * 7000.0,
        max_relative = 1e-12
    );
    let xml = std::fs::read_to_string(data("custom_ring_allreduce_8npus_1MB/custom_allreduce.xml")).unwrap();
    let x = sim(&dimsum::interop::msccl::parse(&xml).unwrap(), "ring:8", 1048576.0);
    approx::assert_relative_eq!(r.time_ns - 7.0 * 7000.0, x.time_ns, max_relative = 1e-12);
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
    // The traces record the buffer they move: 4096-byte chunks, npus x
    // chunks per NPU of them.
    let mut want = s.clone();
    want.size_bytes = Some(4096.0 * f64::from(s.npus) * f64::from(s.chunks_per_npu));
    assert_eq!(back, want, "{name}");
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
                    timing: dimsum::schedule::simulate::LinkModel::Tacos,
                    reduce_timing: None,
                },
            )
            .unwrap()
            .schedule,
        ),
    ];
    for (name, s) in &cases {
        round_trip(s, dir.path(), name);
        // MSCCL-IR: the same schedule back through dimsum's attributes; and
        // without them (as another reader sees the file) still a valid
        // schedule of the same transfers, only more ordered.
        let xml = dimsum::interop::msccl::write(s).unwrap();
        let back = dimsum::interop::msccl::parse(&xml).unwrap();
        assert_eq!(&back, s, "{name} via MSCCL-IR");
        let plain: String = xml
            .lines()
            .map(|l| match (l.find(" dimsum_transfer="), l.find(" dimsum_transfers=")) {
                (Some(at), _) => format!("{}/>", &l[..at]),
                (_, Some(at)) => format!("{}>", &l[..at]),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!plain.contains("dimsum_"));
        let generic = dimsum::interop::msccl::parse(&plain).unwrap();
        // One transfer per contiguous piece of a transfer's chunks.
        assert!(generic.transfers.len() >= s.transfers.len(), "{name}");
        let spec = if *name == "tacos" { "mesh:3x3" } else { "torus:4x4" };
        let r = sim(&generic, spec, 1e6);
        assert!(r.valid, "{name} via plain MSCCL-IR: {:?}", r.errors);
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

    // A foreign trace whose receive has no sender: ASTRA-sim's ring trace
    // with rank 0's first send removed.
    let mut ring = chakra::read_traces(&data("custom_ring_allreduce_8npus_1MB/custom_allreduce")).unwrap();
    let first = ring[0]
        .nodes
        .iter()
        .position(|n| n.kind() == Some(NodeType::CommSendNode))
        .unwrap();
    let gone = ring[0].nodes.remove(first).id;
    for n in &mut ring[0].nodes {
        n.data_deps.retain(|&d| d != gone);
    }
    let prefix = dir.path().join("nosender");
    write_traces(&ring, &prefix);
    let e = chakra::to_schedule(&chakra::read_traces(&prefix).unwrap(), &prefix).unwrap_err();
    assert!(
        e.message.contains("rank 1") && e.message.contains("rank 0 never sends"),
        "{e}"
    );

    // A cycle.
    let mut s2 = s.clone();
    // Transfers 0 and 4 both go from NPU 0 to NPU 1: each made to wait for
    // the other (a dependency the receiver's trace can state).
    assert_eq!((s2.transfers[4].src, s2.transfers[4].dst), (0, 1));
    s2.transfers[0].deps = vec![4].into();
    s2.transfers[4].deps = vec![0].into();
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

fn sim(s: &Schedule, spec: &str, size: f64) -> dimsum::schedule::simulate::SimResult {
    dimsum::schedule::simulate::simulate(
        s,
        &topo(spec),
        &dimsum::schedule::simulate::SimOptions {
            size_bytes: size,
            model: dimsum::schedule::simulate::LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: None,
        },
    )
    .unwrap()
}

/// MSCCLang's ring all-reduce (8 GPUs, 1 MiB): 8 x 14 transfers, rank r
/// sending to r+1 and receiving from r-1 as in ASTRA-sim's conversion of
/// it, valid, and on an 8-ring at 50 GB/s and 0.5 us per link 14 steps of
/// one 131,072-byte chunk: 14 x (131072 / 50 + 500) = 43,700.16 ns.
#[test]
fn msccl_ring_all_reduce() {
    use dimsum::interop::msccl;
    let xml = std::fs::read_to_string(data("custom_ring_allreduce_8npus_1MB/custom_allreduce.xml")).unwrap();
    let s = msccl::parse(&xml).unwrap();
    assert_eq!((s.npus, s.chunks_per_npu, s.transfers.len()), (8, 1, 112));
    let traces = chakra::read_traces(&data("custom_ring_allreduce_8npus_1MB/custom_allreduce")).unwrap();
    for r in 0..8u32 {
        let sends: Vec<_> = s.transfers.iter().filter(|t| t.src == r).collect();
        let recvs: Vec<_> = s.transfers.iter().filter(|t| t.dst == r).collect();
        let et = &traces[r as usize].nodes;
        let count = |k: NodeType| et.iter().filter(|n| n.kind() == Some(k)).count();
        assert_eq!(sends.len(), count(NodeType::CommSendNode), "rank {r}");
        assert_eq!(recvs.len(), count(NodeType::CommRecvNode), "rank {r}");
        assert!(sends.iter().all(|t| t.dst == (r + 1) % 8));
        assert!(recvs.iter().all(|t| t.src == (r + 7) % 8));
        // The trace's 7 COMP_NODEs are the 7 reductions.
        let reduces = recvs.iter().filter(|t| t.op == dimsum::schedule::Op::Reduce).count();
        assert_eq!(reduces, count(NodeType::CompNode), "rank {r}");
    }
    let r = sim(&s, "ring:8", 1048576.0);
    assert!(r.valid, "{:?}", r.errors);
    approx::assert_relative_eq!(r.time_ns, 14.0 * (131072.0 / 50.0 + 500.0), max_relative = 1e-12);
}

/// Every step type in one hand-written chain all-reduce on 3 GPUs (all 3
/// chunks at once): GPU 0 sends (s) to 1, which reduces and forwards (rrs)
/// to 2, which reduces, keeps and sends back (rrcs) to 1, which stores and
/// forwards (rcs, after its rrs: depid) to 0, which stores (r); nop, cpy
/// and re in place only order. Four whole-vector hops in a row on a
/// fully-connected group: 4 x (3e6 / 50 + 500) = 242,000 ns.
#[test]
fn msccl_every_step_type() {
    use dimsum::interop::msccl;
    let step = |s: u32, t: &str, dep: (i32, i32)| {
        format!(
            r#"<step s="{s}" type="{t}" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="3" depid="{}" deps="{}" hasdep="0"/>"#,
            dep.0, dep.1
        )
    };
    let xml = format!(
        r#"<algo name="chain" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="3" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">{}{}{}</tb>
  </gpu>
  <gpu id="1" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">{}</tb>
    <tb id="1" send="0" recv="2" chan="0">{}{}</tb>
  </gpu>
  <gpu id="2" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">{}{}</tb>
  </gpu>
</algo>"#,
        step(0, "s", (-1, -1)),
        step(1, "nop", (-1, -1)),
        step(2, "r", (-1, -1)),
        step(0, "rrs", (-1, -1)),
        step(0, "rcs", (0, 0)),
        step(1, "cpy", (-1, -1)),
        step(0, "rrcs", (-1, -1)),
        step(1, "re", (-1, -1)),
    );
    let s = msccl::parse(&xml).unwrap();
    assert_eq!(s.transfers.len(), 4);
    let r = sim(&s, "fc:3", 3e6);
    assert!(r.valid, "{:?}", r.errors);
    approx::assert_relative_eq!(r.time_ns, 4.0 * (3e6 / 50.0 + 500.0), max_relative = 1e-12);

    // Malformed: each refused with the line and what is wrong.
    for (from, to, needle) in [
        (
            r#"srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="3" depid="-1" deps="-1" hasdep="0"/></tb>
  </gpu>
  <gpu id="1""#,
            r#"srcbuf="s" srcoff="0" dstbuf="i" dstoff="0" cnt="3" depid="-1" deps="-1" hasdep="0"/></tb>
  </gpu>
  <gpu id="1""#,
            "scratch",
        ),
        (r#"type="rrcs""#, r#"type="rrx""#, "not one of"),
        (r#"type="r" "#, r#"type="nop" "#, "no receive left"),
        (
            r#"<step s="0" type="s" "#,
            r#"<step s="0" type="nop" "#,
            "never sends it",
        ),
    ] {
        let bad = xml.replacen(from, to, 1);
        assert_ne!(bad, xml, "{needle}");
        let e = msccl::parse(&bad).unwrap_err();
        assert!(e.message.contains(needle), "{needle}: {e}");
        assert!(e.line >= 1);
    }
}

/// `import msccl` then `collective --schedule-in`: the sample's time;
/// `export msccl` and back: the same schedule; a
/// malformed file exits 2 with one line naming the line, nothing written.
#[test]
fn cli_import_msccl() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ring.json");
    let ok = dimsum()
        .args(["import", "msccl"])
        .arg(data("custom_ring_allreduce_8npus_1MB/custom_allreduce.xml"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let run = dimsum()
        .args([
            "collective",
            "--topology",
            "ring:8",
            "--size",
            "1MiB",
            "--json",
            "--schedule-in",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["valid"], true);
    approx::assert_relative_eq!(v["time_us"].as_f64().unwrap(), 43.70016, max_relative = 1e-9);
    // export msccl, import msccl: the same schedule file.
    let xml = dir.path().join("ring.xml");
    let again = dir.path().join("again.json");
    for args in [
        vec![
            "export".into(),
            "msccl".into(),
            out.clone(),
            "--out".into(),
            xml.clone(),
        ],
        vec![
            "import".into(),
            "msccl".into(),
            xml.clone(),
            "--out".into(),
            again.clone(),
        ],
    ] {
        let r = dimsum().args(&args).output().unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&again).unwrap()
    );
    let bad = dir.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<algo ngpus=\"2\" nchunksperloop=\"2\" coll=\"allreduce\">\n<gpu id=\"9\"/>\n<gpu id=\"0\"/>\n</algo>",
    )
    .unwrap();
    let fail = dimsum()
        .args(["import", "msccl"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(fail.status.code(), Some(2));
    let err = String::from_utf8_lossy(&fail.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(":2:") && err.contains("gpu id 9"), "{err}");
    assert!(!dir.path().join("x.json").exists());
}

const STUDY: &str = r#"
name = "tiny"
time_model = "pipelined"
bw = [100, 50]

[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
latency_ns = 100
tier = "t"

[[fabric.dims]]
name = "b"
block = "switch"
npus = 8
latency_ns = 500
tier = "t"

[cost.tiers.t]
link_usd_per_gbps = 2.0
link_pj_per_bit = 1.0

[workload]
communicator = { weight_grad = [4, 8], forward = [-1, 8] }

[[workload.layers]]
name = "l0"
forward = { compute_ns = 1000, collective = "all-gather", bytes = 1e6 }
input_grad = { compute_ns = 2500 }
weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
"#;

/// `dimsum export astra-sim` of the study `text` into a temporary
/// directory: the directory (kept alive) and the input set's folder.
fn export_astra_sim(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("tiny.toml");
    std::fs::write(&study, text).unwrap();
    let out = dir.path().join("astra");
    let r = dimsum()
        .args(["export", "astra-sim"])
        .arg(&study)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    (dir, out)
}

/// `export astra-sim`: the network file read back gives the per-link
/// bandwidths (a ring at its B, 100 GB/s, for ASTRA-sim's one-way native
/// ring; a switch at B, 50 GB/s; through ASTRA-sim's 2^30-byte GB), every rank's workload trace is
/// the iteration (compute in whole microseconds, rounded up: 1, 3, 3; the
/// forward all-gather of 1e6 bytes on dimension b only, the weight-gradient
/// all-reduce of 64e6 bytes on both), and 8 x 4 = 32 traces are written.
#[test]
fn astra_sim_input_set() {
    let (_dir, out) = export_astra_sim(STUDY);
    let net = std::fs::read_to_string(out.join("network.yml")).unwrap();
    let topo = Topology::parse_astra(&net, &out.join("network.yml")).unwrap();
    assert_eq!(topo.npus, 32);
    let gbps = |d: u16| topo.links.iter().find(|l| l.dim == Some(d)).unwrap().gbps;
    approx::assert_relative_eq!(gbps(0), 100.0, max_relative = 1e-12);
    approx::assert_relative_eq!(gbps(1), 50.0, max_relative = 1e-12);
    let traces = chakra::read_traces(&out.join("workload")).unwrap();
    assert_eq!(traces.len(), 32);
    let n = &traces[31].nodes;
    let kinds: Vec<_> = n.iter().map(|x| x.kind().unwrap()).collect();
    use NodeType::{CommCollNode as Coll, CompNode as Comp};
    assert_eq!(kinds, vec![Comp, Coll, Comp, Comp, Coll]);
    assert_eq!(
        n.iter().map(|x| x.duration_micros).collect::<Vec<_>>(),
        vec![1, 0, 3, 3, 0]
    );
    assert_eq!(n[1].int("comm_type"), Some(2));
    assert_eq!(n[1].int("comm_size"), Some(1_000_000));
    assert_eq!(
        n[1].get("involved_dim"),
        Some(&Value::BoolList(chakra::BoolList {
            values: vec![false, true]
        }))
    );
    assert_eq!(n[4].int("comm_type"), Some(0));
    assert_eq!(n[4].int("comm_size"), Some(64_000_000));
    assert_eq!(
        n[4].get("involved_dim"),
        Some(&Value::BoolList(chakra::BoolList {
            values: vec![true, true]
        }))
    );
    // The forward collective blocks the next compute; every node waits for
    // the one before it here (no-overlap loop).
    for (i, x) in n.iter().enumerate().skip(1) {
        assert_eq!(x.data_deps, vec![(i - 1) as u64], "node {i}");
    }
    for f in ["system.json", "memory.json", "README.md"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let sys: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("system.json")).unwrap()).unwrap();
    assert_eq!(sys["all-reduce-implementation"], serde_json::json!(["ring", "direct"]));
    // Two dimensions, pipelined: 16 splits pipeline them; reductions free
    // (the study has no [npu] to take a memory bandwidth from); no partial
    // group.
    assert_eq!(sys["preferred-dataset-splits"], 16);
    assert_eq!(sys["local-mem-bw"], 1e9);
    let groups = std::fs::read_to_string(out.join("comm_groups.json")).unwrap();
    assert_eq!(groups, "{}");
    assert!(n.iter().all(|x| x.get("pg_name").is_none()));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("--comm-group-configuration="), "{readme}");
}

/// A group over part of a dimension gets ASTRA-sim communicator groups:
/// `[2, -1]` on Ring(4) x Switch(8) pairs coordinates {0, 1} and {2, 3} of
/// the ring under each switch port, 2 x 8 = 16 groups of two ranks, ids
/// from 1 in order of their first rank (rank 0 -> {0, 1} is 1, rank 2 ->
/// {2, 3} is 2, rank 4 -> {4, 5} is 3, ...), each rank's trace naming its
/// own; the forward all-gather over the whole switch dimension needs none.
#[test]
fn astra_sim_communicator_groups_for_partial_dimensions() {
    let (_dir, out) = export_astra_sim(&STUDY.replace("weight_grad = [4, 8]", "weight_grad = [2, -1]"));
    let groups: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("comm_groups.json")).unwrap()).unwrap();
    let groups = groups.as_object().unwrap();
    assert_eq!(groups.len(), 16);
    for (id, ranks) in groups {
        let id: u64 = id.parse().unwrap();
        assert_eq!(
            ranks,
            &serde_json::json!([2 * (id - 1), 2 * (id - 1) + 1]),
            "group {id}"
        );
    }
    let traces = chakra::read_traces(&out.join("workload")).unwrap();
    for (rank, t) in traces.iter().enumerate() {
        let coll: Vec<_> = t.nodes.iter().filter(|x| x.int("comm_type").is_some()).collect();
        assert_eq!(
            coll[0].get("pg_name"),
            None,
            "rank {rank}: the all-gather spans its dimension"
        );
        assert_eq!(
            coll[1].get("pg_name"),
            Some(&Value::StringVal((rank / 2 + 1).to_string())),
            "rank {rank}"
        );
    }
}

/// A Ring(4) x FullyConnected(8) study at 200 and 700 GB/s per NPU whose
/// tensor-parallel all-reduce covers [4, 4] and data-parallel all-reduce
/// [-1, GROUP] (GROUP NPUs of the fully-connected dimension).
fn tp_dp_study(dp: &str) -> String {
    format!(
        r#"
name = "tp-dp"
time_model = "pipelined"
bw = [200, 700]

[[fabric.dims]]
name = "chiplet"
block = "ring"
npus = 4
latency_ns = 500
tier = "t"

[[fabric.dims]]
name = "package"
block = "fully-connected"
npus = 8
latency_ns = 500
tier = "t"

[cost.tiers.t]
link_usd_per_gbps = 1.0

[workload]
[[workload.layers]]
name = "l0"
forward = {{ compute_ns = 0, collective = "all-reduce", bytes = 1e6, group = [4, 4] }}
input_grad = {{ compute_ns = 0 }}
weight_grad = {{ compute_ns = 0, collective = "all-reduce", bytes = 2e6, group = [-1, {dp}] }}
"#
    )
}

/// The exported network's (topology, npus, per-link GB/s in 10^9 B/s) read
/// from `network.yml`'s own lines.
fn network_lines(out: &Path) -> (Vec<String>, Vec<u32>, Vec<f64>) {
    let net = std::fs::read_to_string(out.join("network.yml")).unwrap();
    let list = |key: &str| -> Vec<String> {
        let line = net.lines().find(|l| l.starts_with(key)).unwrap();
        let v = line[key.len()..].split('#').next().unwrap();
        v.trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|x| x.trim().to_string())
            .collect()
    };
    let gib = (1u64 << 30) as f64 / 1e9;
    (
        list("topology:"),
        list("npus_count:").iter().map(|x| x.parse().unwrap()).collect(),
        list("bandwidth:")
            .iter()
            .map(|x| x.parse::<f64>().unwrap() * gib)
            .collect(),
    )
}

/// The involved_dim flags of each rank-`rank` collective, in trace order.
fn involved(out: &Path, rank: usize) -> Vec<Vec<bool>> {
    let traces = chakra::read_traces(&out.join("workload")).unwrap();
    traces[rank]
        .nodes
        .iter()
        .filter_map(|x| match x.get("involved_dim") {
            Some(Value::BoolList(b)) => Some(b.values.clone()),
            _ => None,
        })
        .collect()
}

/// Tensor parallelism on 4 of the fully-connected 8 and data parallelism
/// on the other factor, 2: the dimension is written as FullyConnected(4) x
/// FullyConnected(2), each at the dimension's per-link bandwidth, 700 / 7
/// = 100 GB/s (so the 4-group has its 3 links, 300 GB/s, and the 2-group
/// its one, 100 GB/s: dimsum's links model, B (p-1)/(n-1)); the ring stays
/// at B = 200. Each collective flags whole sub-dimensions, so no
/// communicator group is written: the backward (data-parallel) all-reduce
/// involves the second sub-dimension only, the forward one the ring and
/// the first. 4 x 8 = 32 traces, the fabric's rank count.
#[test]
fn astra_sim_partial_fully_connected_groups_become_sub_dimensions() {
    let (_dir, out) = export_astra_sim(&tp_dp_study("2"));
    let (topo, npus, gbps) = network_lines(&out);
    assert_eq!(topo, ["Ring", "FullyConnected", "FullyConnected"]);
    assert_eq!(npus, [4, 4, 2]);
    for (g, want) in gbps.iter().zip([200.0, 100.0, 100.0]) {
        approx::assert_relative_eq!(*g, want, max_relative = 1e-9);
    }
    assert_eq!(
        involved(&out, 31),
        vec![vec![true, true, false], vec![false, false, true]]
    );
    assert_eq!(std::fs::read_to_string(out.join("comm_groups.json")).unwrap(), "{}");
    assert_eq!(chakra::read_traces(&out.join("workload")).unwrap().len(), 32);
    let sys: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("system.json")).unwrap()).unwrap();
    assert_eq!(
        sys["all-reduce-implementation"],
        serde_json::json!(["ring", "direct", "direct"])
    );
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("`package` (fully-connected 8) is written as 4 x 2"),
        "{readme}"
    );
    // A data-parallel group of 4 too: one size on the dimension, both
    // groups on the first sub-dimension (the same 3 links each, as dimsum
    // times them), the rest of the dimension (2) a sub-dimension no
    // collective involves.
    let (_dir, out) = export_astra_sim(&tp_dp_study("4"));
    assert_eq!(network_lines(&out).1, [4, 4, 2]);
    assert_eq!(
        involved(&out, 0),
        vec![vec![true, true, false], vec![false, true, false]]
    );
}

/// A data-parallel group over the whole fully-connected 8 leaves the
/// dimension whole (its all-reduce needs the direct links between every
/// pair), and the tensor-parallel
/// all-reduce over 4 of it takes communicator groups: ranks r with the
/// same chiplet block and package coordinates {0..3} or {4..7}, 32 / 16 =
/// 2 groups.
#[test]
fn astra_sim_partial_groups_beside_a_whole_one_keep_communicator_groups() {
    let (_dir, out) = export_astra_sim(&tp_dp_study("8"));
    let (topo, npus, _) = network_lines(&out);
    assert_eq!(topo, ["Ring", "FullyConnected"]);
    assert_eq!(npus, [4, 8]);
    let groups: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("comm_groups.json")).unwrap()).unwrap();
    let groups = groups.as_object().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups["1"], serde_json::json!((0..16).collect::<Vec<u32>>()));
    assert_eq!(groups["2"], serde_json::json!((16..32).collect::<Vec<u32>>()));
}

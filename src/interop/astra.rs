//! An ASTRA-sim 2.0 input set for a designed fabric: the analytical
//! network (`network.yml`), the system configuration (`system.json`), the
//! remote-memory configuration (`memory.json`) and the study's training
//! iteration as a Chakra workload, one trace per rank (`workload.<r>.et`).
//!
//! - Network: one entry per dimension, `Ring` / `FullyConnected` /
//!   `Switch`, the NPU count, the per-link bandwidth LIBRA's conversion gives
//!   for the allocation (ring `B/2` per direction, fully-connected
//!   `B/(n-1)`, switch `B`) in ASTRA-sim's GB (2^30 bytes) per second, and
//!   the latency in ns.
//! - System: per dimension the native implementation of the study's
//!   algorithm (`ring`, `direct`, `halvingDoubling`; Swing has no native
//!   ASTRA-sim implementation and is written as `halvingDoubling`, the
//!   native butterfly with the same steps, which the README notes).
//! - Workload: every rank runs the same iteration (the study's workload is
//!   per NPU): forward over the layers, then input and weight gradients
//!   from the last layer back, each phase a `COMP_NODE` of its compute time
//!   (`duration_micros`, rounded up to a whole microsecond, the schema's
//!   unit) and, if it issues one, a `COMM_COLL_NODE` (`comm_type`,
//!   `comm_size` in bytes as the study gives them, `involved_dim` one entry
//!   per dimension). Forward and input-gradient collectives block the next
//!   compute; weight-gradient ones do too in the `no-overlap` loop and run
//!   beside the rest of the backward pass in the `overlap` loop.

use super::chakra::{self, BoolList, GlobalMetadata, Node, NodeType, Trace, Value, attr};
use crate::model::collective::Algorithm;
use crate::model::fabric::Block;
use crate::model::fabric::Fabric;
use crate::model::topology::per_link_gbps;
use crate::model::training::Loop;
use crate::model::units::{BYTES_PER_GB, BYTES_PER_GIB, ns_to_us};
use crate::model::workload::{CollectiveKind, PhaseKind, Workload};
use std::fmt::Write as _;

/// What an ASTRA-sim input set is written from: a study's name, fabric,
/// workload, per-dimension algorithms and training loop.
#[derive(Debug, Clone, Copy)]
pub struct Design<'a> {
    /// The study's name (written into the trace and the README).
    pub name: &'a str,
    /// The fabric.
    pub fabric: &'a Fabric,
    /// The workload.
    pub workload: &'a Workload,
    /// The collective algorithm of each dimension.
    pub algorithms: &'a [Algorithm],
    /// Whether weight-gradient collectives overlap the backward pass.
    pub training_loop: Loop,
}

/// The files of an input set, as (name, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// Why a design's workload cannot be written as a Chakra trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// A phase issues a send-recv (a pipeline stage boundary), which has
    /// no `COMM_COLL_NODE`.
    #[error(
        "layer {layer} ({phase}): a send-recv has no COMM_COLL_NODE; ASTRA-sim export takes workloads without pipeline stages"
    )]
    SendRecv {
        /// The layer's name.
        layer: String,
        /// The phase's name (`forward`, ...).
        phase: &'static str,
    },
}

fn comm_type(kind: CollectiveKind) -> Option<i64> {
    match kind {
        CollectiveKind::AllReduce => Some(0),
        CollectiveKind::AllGather => Some(2),
        CollectiveKind::AllToAll => Some(6),
        CollectiveKind::ReduceScatter => Some(7),
        CollectiveKind::SendRecv => None,
    }
}

/// `network.yml` for `design` at allocation `bw` (GB/s per NPU).
fn network_yml(design: &Design<'_>, bw: &[f64]) -> String {
    let dims = &design.fabric.dims;
    let topo: Vec<&str> = dims
        .iter()
        .map(|d| match d.block {
            Block::Ring => "Ring",
            Block::FullyConnected => "FullyConnected",
            Block::Switch => "Switch",
        })
        .collect();
    let npus: Vec<String> = dims.iter().map(|d| d.npus.to_string()).collect();
    let link: Vec<String> = dims
        .iter()
        .zip(bw)
        .map(|(d, b)| format!("{}", per_link_gbps(d.block, d.npus, *b) * BYTES_PER_GB / BYTES_PER_GIB))
        .collect();
    let lat: Vec<String> = dims.iter().map(|d| format!("{}", d.latency_ns)).collect();
    format!(
        "# ASTRA-sim analytical network for {} at {:?} GB/s per NPU (dimsum {}).\n\
         # bandwidth: per link, in ASTRA-sim's GB (2^30 bytes) per second.\n\
         topology: [ {} ]\nnpus_count: [ {} ]\nbandwidth: [ {} ]  # GB/s\nlatency: [ {} ]  # ns\n",
        design.name,
        bw,
        env!("CARGO_PKG_VERSION"),
        topo.join(", "),
        npus.join(", "),
        link.join(", "),
        lat.join(", ")
    )
}

/// `system.json`: native per-dimension implementations.
fn system_json(design: &Design<'_>) -> String {
    let algos: Vec<String> = design
        .algorithms
        .iter()
        .map(|a| {
            match a {
                Algorithm::Ring => "ring",
                Algorithm::Direct => "direct",
                Algorithm::HalvingDoubling | Algorithm::Swing => "halvingDoubling",
            }
            .to_string()
        })
        .collect();
    let v = serde_json::json!({
        "scheduling-policy": "LIFO",
        "endpoint-delay": 10,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 1,
        "all-reduce-implementation": algos,
        "all-gather-implementation": algos,
        "reduce-scatter-implementation": algos,
        "all-to-all-implementation": algos.iter().map(|_| "direct").collect::<Vec<_>>(),
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600,
        "boost-mode": 0
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// The iteration as one rank's trace (every rank runs the same one).
fn workload_trace(design: &Design<'_>) -> Result<Trace, WorkloadError> {
    let ndims = design.fabric.dims.len();
    let mut nodes: Vec<Node> = Vec::new();
    let mut last: Option<u64> = None;
    // Weight-gradient collectives nothing waits for (overlap loop).
    let overlap = design.training_loop == Loop::Overlap;
    let order: Vec<(usize, PhaseKind)> = (0..design.workload.layers.len())
        .map(|l| (l, PhaseKind::Forward))
        .chain(
            (0..design.workload.layers.len())
                .rev()
                .flat_map(|l| [(l, PhaseKind::InputGrad), (l, PhaseKind::WeightGrad)]),
        )
        .collect();
    for (l, kind) in order {
        let layer = &design.workload.layers[l];
        let phase = layer.phase(kind);
        let id = nodes.len() as u64;
        nodes.push(Node {
            id,
            name: format!("{} {}", layer.name, kind.name()),
            r#type: NodeType::CompNode as i32,
            data_deps: last.into_iter().collect(),
            duration_micros: ns_to_us(phase.compute_ns).ceil() as u64,
            attr: vec![attr("is_cpu_op", Value::BoolVal(false))],
            ..Default::default()
        });
        last = Some(id);
        if let Some(c) = &phase.comm {
            let ty = comm_type(c.kind).ok_or_else(|| WorkloadError::SendRecv {
                layer: layer.name.clone(),
                phase: kind.name(),
            })?;
            let involved: Vec<bool> = (0..ndims)
                .map(|d| c.group.0.get(d).copied().flatten().is_some_and(|p| p > 1))
                .collect();
            let cid = nodes.len() as u64;
            nodes.push(Node {
                id: cid,
                name: format!("{} {} {}", layer.name, kind.name(), c.kind.name()),
                r#type: NodeType::CommCollNode as i32,
                data_deps: vec![id],
                attr: vec![
                    attr("is_cpu_op", Value::BoolVal(false)),
                    attr("comm_type", Value::Int64Val(ty)),
                    attr("comm_size", Value::Int64Val(c.bytes.round() as i64)),
                    attr("involved_dim", Value::BoolList(BoolList { values: involved })),
                ],
                ..Default::default()
            });
            if !(kind == PhaseKind::WeightGrad && overlap) {
                last = Some(cid);
            }
        }
    }
    Ok(Trace {
        metadata: GlobalMetadata {
            version: chakra::VERSION.into(),
            attr: vec![attr("dimsum_study", Value::StringVal(design.name.to_string()))],
        },
        nodes,
    })
}

/// Every file of the input set for `design` at `bw`, `dir_hint` being where
/// the README says they are.
pub(crate) fn input_set(design: &Design<'_>, bw: &[f64], dir_hint: &str) -> Result<Files, WorkloadError> {
    let trace = workload_trace(design)?.encode();
    let n = design.fabric.npus();
    let mut files: Files = vec![
        ("network.yml".into(), network_yml(design, bw).into_bytes()),
        ("system.json".into(), system_json(design).into_bytes()),
        (
            "memory.json".into(),
            b"{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n".to_vec(),
        ),
    ];
    for r in 0..n {
        files.push((format!("workload.{r}.et"), trace.clone()));
    }
    let mut readme = String::new();
    let _ = writeln!(
        readme,
        "# ASTRA-sim input set for `{}`\n\nWritten by dimsum {} for the allocation {:?} GB/s per NPU: {} ranks.\n",
        design.name,
        env!("CARGO_PKG_VERSION"),
        bw,
        n
    );
    let _ = writeln!(
        readme,
        "Run (ASTRA-sim 2.0, analytical congestion-unaware network):\n\n```\n\
         AstraSim_Analytical_Congestion_Unaware --workload-configuration={dir_hint}/workload \\\n  \
         --system-configuration={dir_hint}/system.json --network-configuration={dir_hint}/network.yml \\\n  \
         --remote-memory-configuration={dir_hint}/memory.json\n```\n"
    );
    if design.algorithms.contains(&Algorithm::Swing) {
        let _ = writeln!(
            readme,
            "Swing has no native ASTRA-sim implementation: its dimensions are written as `halvingDoubling`."
        );
    }
    files.push(("README.md".into(), readme.into_bytes()));
    Ok(files)
}

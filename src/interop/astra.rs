//! An ASTRA-sim 2.0 input set for a designed fabric: the analytical
//! network (`network.yml`), the system configuration (`system.json`), the
//! remote-memory configuration (`memory.json`) and the study's training
//! iteration as a Chakra workload, one trace per rank (`workload.<r>.et`).
//!
//! - Network: one entry per dimension, `Ring` / `FullyConnected` /
//!   `Switch`, the NPU count, the per-link bandwidth, in ASTRA-sim's GB
//!   (2^30 bytes) per second, and the latency in ns. Fully-connected
//!   `B/(n-1)` and switch `B`, LIBRA's conversion. A ring is written at
//!   `B`, not LIBRA's `B/2` per direction: ASTRA-sim's native ring sends
//!   one way round with one queue per dimension (its QueueLevelHandler and
//!   Ring), so a ring described at B/2 per direction would move data at
//!   half the rate dimsum's ring (both directions, B in all per NPU) does;
//!   written at B, its one direction carries what dimsum's two do (a 768
//!   MiB all-reduce on Ring(4) at 200 GB/s: 6.043 ms in both, where B/2
//!   gave ASTRA-sim 2.00x).
//! - System: per dimension the native implementation of the study's
//!   algorithm (`ring`, `direct`, `halvingDoubling`; Swing has no native
//!   ASTRA-sim implementation and is written as `halvingDoubling`, the
//!   native butterfly with the same steps, which the README notes); the
//!   dataset splits that reproduce the study's time model (`splits`);
//!   `local-mem-bw` the study's reduction memory bandwidth (ASTRA-sim and
//!   dimsum both charge three passes over every reduced byte), or so high
//!   that reductions cost nothing where the study's are free.
//! - Communicator groups (`comm_groups.json`, ids from 1): ASTRA-sim's
//!   `involved_dim` flags whole dimensions, so a collective whose group
//!   covers part of a dimension names its rank's group in the node's
//!   `pg_name` (a string); ASTRA-sim runs such a collective as one ring over
//!   the group's sorted ranks, which `scripts/astra-agreement.sh` shows
//!   beside dimsum's per-dimension time.
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
use crate::model::collective::{Algorithm, TimeModel};
use crate::model::fabric::Block;
use crate::model::fabric::Fabric;
use crate::model::topology::per_link_gbps;
use crate::model::training::Loop;
use crate::model::units::{BYTES_PER_GB, BYTES_PER_GIB, ns_to_us};
use crate::model::workload::{CollectiveKind, Group, PhaseKind, Workload};
use std::collections::HashMap;
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
    /// How a collective's dimensions combine (the dataset splits that
    /// reproduce it).
    pub time_model: TimeModel,
    /// The memory bandwidth reductions run at, GB/s (`None`: free).
    pub reduction_gbps: Option<f64>,
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
        .map(|(d, b)| {
            // A ring's one direction carries B (module doc).
            let gbps = match d.block {
                Block::Ring => *b,
                block => per_link_gbps(block, d.npus, *b),
            };
            format!("{}", gbps * BYTES_PER_GB / BYTES_PER_GIB)
        })
        .collect();
    let lat: Vec<String> = dims.iter().map(|d| format!("{}", d.latency_ns)).collect();
    format!(
        "# ASTRA-sim analytical network for {} at {:?} GB/s per NPU (dimsum {}).\n\
         # bandwidth: per link, in ASTRA-sim's GB (2^30 bytes) per second; a ring's at the NPU's B\n\
         # (ASTRA-sim's native ring sends one way round: one direction carries both of dimsum's).\n\
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

/// Dataset splits per collective: 1 runs a collective's dimensions one
/// after another (the `sequential` model, and any one-dimension fabric,
/// where splitting only repeats each step's latency per chunk); more
/// pipeline them, chunk k + 1 on one dimension while chunk k is on the
/// next, which approaches the slowest dimension's time that the `libra`,
/// `pipelined` and `nccl` models take (with 16 the other dimensions add
/// 1/16 of their time, and each chunk pays its steps' latencies).
fn splits(design: &Design<'_>) -> u32 {
    match design.time_model {
        _ if design.fabric.dims.len() == 1 => 1,
        TimeModel::Sequential => 1,
        TimeModel::Libra | TimeModel::Pipelined | TimeModel::Nccl => 16,
    }
}

/// `local-mem-bw`, GB/s: ASTRA-sim charges every reduction step three
/// passes over its chunk at this rate (PacketBundle), as dimsum's model
/// does at the study's `reduction_gbps`; a study whose reductions are free
/// gets this rate, which makes them free in ASTRA-sim too.
const NO_REDUCTION_COST_GBPS: f64 = 1e9;

/// `local-mem-bw` for `design`, GB/s.
fn local_mem_gbps(design: &Design<'_>) -> f64 {
    design.reduction_gbps.unwrap_or(NO_REDUCTION_COST_GBPS)
}

/// Whether `group` covers part of some dimension (a size above 1 and below
/// the dimension's): ASTRA-sim's `involved_dim` flags whole dimensions, so
/// such a collective needs a communicator group.
fn partial(group: &Group, fabric: &Fabric) -> bool {
    group
        .0
        .iter()
        .zip(&fabric.dims)
        .any(|(p, d)| p.is_some_and(|p| p > 1 && p < d.npus))
}

/// The ranks of `rank`'s group (LIBRA's placement: on each involved
/// dimension the aligned block of p coordinates holding the rank's own,
/// the other coordinates fixed), sorted.
fn members(fabric: &Fabric, group: &Group, rank: u64) -> Vec<u64> {
    let Some(own) = fabric.coords(rank) else {
        return Vec::new();
    };
    let mut out = vec![own.clone()];
    for (d, p) in group.0.iter().enumerate() {
        let Some(p) = p.filter(|p| *p > 1) else { continue };
        let start = own[d] / p * p;
        out = out
            .into_iter()
            .flat_map(|c| {
                (start..start + p).map(move |x| {
                    let mut c = c.clone();
                    c[d] = x;
                    c
                })
            })
            .collect();
    }
    let mut ranks: Vec<u64> = out.iter().filter_map(|c| fabric.rank(c)).collect();
    ranks.sort_unstable();
    ranks
}

/// ASTRA-sim's communicator groups for the partial-dimension collectives:
/// every distinct group of ranks with its id (1, 2, ...; ASTRA-sim refuses
/// 0), and per partial communicator each rank's id.
#[derive(Debug, Default)]
struct CommGroups {
    /// The groups' sorted ranks; id = index + 1.
    groups: Vec<Vec<u64>>,
    /// Per communicator, each rank's group id.
    of: HashMap<Group, Vec<u32>>,
}

impl CommGroups {
    fn new(design: &Design<'_>) -> CommGroups {
        let fabric = design.fabric;
        let mut out = CommGroups::default();
        let mut ids: HashMap<Vec<u64>, u32> = HashMap::new();
        for (_, _, c) in design.workload.comms() {
            if !partial(&c.group, fabric) || out.of.contains_key(&c.group) {
                continue;
            }
            let per_rank = (0..fabric.npus())
                .map(|r| {
                    let m = members(fabric, &c.group, r);
                    *ids.entry(m.clone()).or_insert_with(|| {
                        out.groups.push(m);
                        out.groups.len() as u32
                    })
                })
                .collect();
            out.of.insert(c.group.clone(), per_rank);
        }
        out
    }

    /// `comm_groups.json`: `{"id": [ranks], ...}`.
    fn json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| ((i + 1).to_string(), serde_json::json!(g)))
            .collect();
        serde_json::to_string_pretty(&serde_json::Value::Object(map)).unwrap_or_default()
    }
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
        "preferred-dataset-splits": splits(design),
        "all-reduce-implementation": algos,
        "all-gather-implementation": algos,
        "reduce-scatter-implementation": algos,
        "all-to-all-implementation": algos.iter().map(|_| "direct").collect::<Vec<_>>(),
        "collective-optimization": "localBWAware",
        "local-mem-bw": local_mem_gbps(design),
        "boost-mode": 0
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// The iteration as one rank's trace (every rank runs the same one but for
/// the communicator group its partial-dimension collectives name), and the
/// collective nodes that need a group, with their communicator.
fn workload_trace(design: &Design<'_>) -> Result<(Trace, Vec<(usize, Group)>), WorkloadError> {
    let mut grouped = Vec::new();
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
            if partial(&c.group, design.fabric) {
                grouped.push((cid as usize, c.group.clone()));
            }
            if !(kind == PhaseKind::WeightGrad && overlap) {
                last = Some(cid);
            }
        }
    }
    Ok((
        Trace {
            metadata: GlobalMetadata {
                version: chakra::VERSION.into(),
                attr: vec![attr("dimsum_study", Value::StringVal(design.name.to_string()))],
            },
            nodes,
        },
        grouped,
    ))
}

/// Every file of the input set for `design` at `bw`, `dir_hint` being where
/// the README says they are.
pub(crate) fn input_set(design: &Design<'_>, bw: &[f64], dir_hint: &str) -> Result<Files, WorkloadError> {
    let (trace, grouped) = workload_trace(design)?;
    let groups = CommGroups::new(design);
    let n = design.fabric.npus();
    let mut files: Files = vec![
        ("network.yml".into(), network_yml(design, bw).into_bytes()),
        ("system.json".into(), system_json(design).into_bytes()),
        (
            "memory.json".into(),
            b"{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n".to_vec(),
        ),
    ];
    files.push(("comm_groups.json".into(), groups.json().into_bytes()));
    let shared = trace.encode();
    for r in 0..n {
        let bytes = if grouped.is_empty() {
            shared.clone()
        } else {
            // The rank's own group on every partial-dimension collective
            // (`pg_name`, a string, as ASTRA-sim reads it).
            let mut t = trace.clone();
            for (i, g) in &grouped {
                let id = groups
                    .of
                    .get(g)
                    .and_then(|ids| ids.get(r as usize))
                    .copied()
                    .unwrap_or(0);
                t.nodes[*i].attr.push(attr("pg_name", Value::StringVal(id.to_string())));
            }
            t.encode()
        };
        files.push((format!("workload.{r}.et"), bytes));
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
         --remote-memory-configuration={dir_hint}/memory.json \\\n  \
         --comm-group-configuration={dir_hint}/comm_groups.json\n```\n"
    );
    let _ = writeln!(
        readme,
        "How the files describe dimsum's fabric to ASTRA-sim:\n\n\
         - a ring dimension's links at the NPU's B (ASTRA-sim's native ring sends one way round; dimsum's ring uses both directions at B/2 each);\n\
         - {} dataset splits per collective (`{}` time model: {});\n\
         - `local-mem-bw` {} GB/s: {};\n\
         - {} communicator groups in `comm_groups.json` for the collectives over part of a dimension (ASTRA-sim runs each as one ring over the group's ranks; `involved_dim` flags whole dimensions only).\n",
        splits(design),
        design.time_model.name(),
        if splits(design) == 1 {
            "dimensions one after another"
        } else {
            "dimensions pipelined, the slowest setting the pace"
        },
        local_mem_gbps(design),
        if design.reduction_gbps.is_some() {
            "the NPU's memory bandwidth for reductions, three passes per reduced byte in both"
        } else {
            "the study's reductions are free (no memory bandwidth given), so they are free here too"
        },
        groups.groups.len()
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

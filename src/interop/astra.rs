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
//! - Sub-dimensions: ASTRA-sim's `involved_dim` flags whole dimensions, so
//!   a fully-connected or switch dimension that the workload's groups cover
//!   only in part (tensor parallelism on 4 of a fully-connected 8, data
//!   parallelism on the other factor, 2) is written as one sub-dimension
//!   per group size, inner first (`FullyConnected(4) x FullyConnected(2)`),
//!   each at the dimension's per-link bandwidth: a group's collective then
//!   runs over the p - 1 links (or the switch port) it has, which is what
//!   dimsum's `links` model times (`B (p-1)/(n-1)` on a fully-connected
//!   dimension, `B` on a switch), and rank numbers stay the fabric's. The
//!   links no group uses (between the factors) are left out, which changes
//!   no time. A dimension is split only where every group on it covers a
//!   distinct factor (sizes whose product divides it; none covering it
//!   whole).
//! - Communicator groups (`comm_groups.json`, ids from 1) for the partial
//!   groups a split cannot carry (part of a ring, which is a line that
//!   ASTRA-sim has no block for, or sizes that do not factor the
//!   dimension): the node names its rank's group in `pg_name` (a string);
//!   ASTRA-sim runs such a collective as one ring over the group's sorted
//!   ranks, which `scripts/astra-agreement.sh` shows beside dimsum's
//!   per-dimension time.
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
use crate::model::collective::{Algorithm, GroupBandwidth, TimeModel};
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
    /// The bandwidth the study's time model gives a group over part of a
    /// dimension (the export always writes the links it has).
    pub group_bandwidth: GroupBandwidth,
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

/// One dimension of the exported network: a fabric dimension whole, or one
/// factor of a fully-connected or switch dimension split into
/// sub-dimensions (module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
struct NetDim {
    /// The fabric dimension it is (part of).
    origin: usize,
    /// Its NPUs (the factor's).
    npus: u32,
}

/// The exported network's dimensions, and every workload group as a group
/// over them.
#[derive(Debug, Default)]
struct Layout {
    /// Inner first, in rank order (dimension 0 fastest), so ranks keep the
    /// fabric's numbering.
    dims: Vec<NetDim>,
    /// Each of the workload's groups over `dims`.
    groups: HashMap<Group, Group>,
}

impl Layout {
    /// Splits each fully-connected or switch dimension that the workload's
    /// groups cover only in part into one sub-dimension per distinct group
    /// size on it (inner first: the group whose lowest involved dimension
    /// is lower, as tensor parallelism sits inside data parallelism; then
    /// what is left of the dimension), when those sizes multiply to a
    /// divisor of it and no group covers it whole. Every group then covers
    /// its sub-dimensions whole, on its own links. Rings stay whole (a
    /// group on part of a ring is a line, which ASTRA-sim has no block
    /// for): their partial groups get communicator groups.
    fn new(fabric: &Fabric, workload: &Workload) -> Layout {
        let mut distinct: Vec<&Group> = Vec::new();
        for (_, _, c) in workload.comms() {
            if !distinct.contains(&&c.group) {
                distinct.push(&c.group);
            }
        }
        let size = |g: &Group, d: usize| g.0.get(d).copied().flatten().filter(|p| *p > 1);
        let lowest = |g: &Group| (0..g.0.len()).find(|&d| size(g, d).is_some()).unwrap_or(usize::MAX);
        let mut factors: Vec<Vec<u32>> = Vec::with_capacity(fabric.dims.len());
        for (d, dim) in fabric.dims.iter().enumerate() {
            let whole = vec![dim.npus];
            let mut used: Vec<(usize, u32)> = distinct
                .iter()
                .filter_map(|g| size(g, d).map(|p| (lowest(g), p)))
                .collect();
            used.sort_unstable();
            let mut sizes: Vec<u32> = Vec::new();
            for (_, p) in used {
                if !sizes.contains(&p) {
                    sizes.push(p);
                }
            }
            let product: u64 = sizes.iter().map(|&p| u64::from(p)).product();
            if dim.block == Block::Ring
                || sizes.is_empty()
                || sizes.iter().any(|&p| p >= dim.npus)
                || u64::from(dim.npus) % product != 0
            {
                factors.push(whole);
                continue;
            }
            let rest = u64::from(dim.npus) / product;
            if rest > 1 {
                sizes.push(rest as u32);
            }
            factors.push(sizes);
        }
        let dims: Vec<NetDim> = factors
            .iter()
            .enumerate()
            .flat_map(|(origin, f)| f.iter().map(move |&npus| NetDim { origin, npus }))
            .collect();
        let groups = distinct
            .into_iter()
            .map(|g| {
                let net = factors
                    .iter()
                    .enumerate()
                    .flat_map(|(d, f)| {
                        let p = g.0.get(d).copied().flatten();
                        let split = f.len() > 1;
                        let at = p.and_then(|p| f.iter().position(|&x| x == p));
                        // A whole dimension keeps the group's size; a split
                        // one gives it to its own factor only.
                        f.iter()
                            .enumerate()
                            .map(move |(i, _)| if !split || Some(i) == at { p } else { None })
                    })
                    .collect();
                (g.clone(), Group(net))
            })
            .collect();
        Layout { dims, groups }
    }

    /// The NPUs of each exported dimension.
    fn sizes(&self) -> Vec<u32> {
        self.dims.iter().map(|d| d.npus).collect()
    }

    /// `group` over the exported dimensions.
    fn group<'a>(&'a self, group: &'a Group) -> &'a Group {
        self.groups.get(group).unwrap_or(group)
    }

    /// The fabric dimensions written as sub-dimensions: (dimension, the
    /// factors).
    fn split_dims(&self) -> Vec<(usize, Vec<u32>)> {
        let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
        for d in &self.dims {
            match out.last_mut() {
                Some((o, f)) if *o == d.origin => f.push(d.npus),
                _ => out.push((d.origin, vec![d.npus])),
            }
        }
        out.retain(|(_, f)| f.len() > 1);
        out
    }
}

/// `network.yml` for `design` laid out as `layout` at allocation `bw`
/// (GB/s per NPU).
fn network_yml(design: &Design<'_>, layout: &Layout, bw: &[f64]) -> String {
    let fabric = &design.fabric.dims;
    let topo: Vec<&str> = layout
        .dims
        .iter()
        .map(|d| match fabric[d.origin].block {
            Block::Ring => "Ring",
            Block::FullyConnected => "FullyConnected",
            Block::Switch => "Switch",
        })
        .collect();
    let npus: Vec<String> = layout.dims.iter().map(|d| d.npus.to_string()).collect();
    let link: Vec<String> = layout
        .dims
        .iter()
        .map(|d| {
            let (dim, b) = (&fabric[d.origin], bw[d.origin]);
            // A ring's one direction carries B; a sub-dimension's links
            // are its dimension's (module doc).
            let gbps = match dim.block {
                Block::Ring => b,
                block => per_link_gbps(block, dim.npus, b),
            };
            format!("{}", gbps * BYTES_PER_GB / BYTES_PER_GIB)
        })
        .collect();
    let lat: Vec<String> = layout
        .dims
        .iter()
        .map(|d| format!("{}", fabric[d.origin].latency_ns))
        .collect();
    let mut head = String::new();
    for (d, f) in layout.split_dims() {
        let _ = writeln!(
            head,
            "# dimension {} ({} {}) written as {} sub-dimensions, each group over part of it on its own links.",
            fabric[d].name,
            fabric[d].block.name(),
            fabric[d].npus,
            f.iter().map(u32::to_string).collect::<Vec<_>>().join(" x "),
        );
    }
    format!(
        "# ASTRA-sim analytical network for {} at {:?} GB/s per NPU (dimsum {}).\n\
         # bandwidth: per link, in ASTRA-sim's GB (2^30 bytes) per second; a ring's at the NPU's B\n\
         # (ASTRA-sim's native ring sends one way round: one direction carries both of dimsum's).\n\
         {head}\
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
fn splits(design: &Design<'_>, layout: &Layout) -> u32 {
    match design.time_model {
        _ if layout.dims.len() == 1 => 1,
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

/// Whether `group` covers part of some of the exported dimensions `npus`
/// (a size above 1 and below the dimension's): ASTRA-sim's `involved_dim`
/// flags whole dimensions, so such a collective needs a communicator
/// group.
fn partial(group: &Group, npus: &[u32]) -> bool {
    group
        .0
        .iter()
        .zip(npus)
        .any(|(p, &n)| p.is_some_and(|p| p > 1 && p < n))
}

/// The ranks of `rank`'s group over dimensions of `npus` (LIBRA's
/// placement: on each involved dimension the aligned block of p
/// coordinates holding the rank's own, the other coordinates fixed),
/// sorted.
fn members(npus: &[u32], group: &Group, rank: u64) -> Vec<u64> {
    let mut own = Vec::with_capacity(npus.len());
    let mut r = rank;
    for &n in npus {
        own.push((r % u64::from(n)) as u32);
        r /= u64::from(n);
    }
    let mut out = vec![own.clone()];
    for (d, p) in group.0.iter().enumerate().take(npus.len()) {
        let Some(p) = p.filter(|p| *p > 1) else { continue };
        let start = own[d] / p * p;
        out = out
            .into_iter()
            .flat_map(|c| {
                (start..start + p.min(npus[d] - start)).map(move |x| {
                    let mut c = c.clone();
                    c[d] = x;
                    c
                })
            })
            .collect();
    }
    let mut ranks: Vec<u64> = out
        .iter()
        .map(|c| {
            c.iter()
                .zip(npus)
                .rev()
                .fold(0u64, |acc, (&x, &n)| acc * u64::from(n) + u64::from(x))
        })
        .collect();
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
    fn new(design: &Design<'_>, layout: &Layout) -> CommGroups {
        let npus = layout.sizes();
        let mut out = CommGroups::default();
        let mut ids: HashMap<Vec<u64>, u32> = HashMap::new();
        for (_, _, c) in design.workload.comms() {
            let group = layout.group(&c.group);
            if !partial(group, &npus) || out.of.contains_key(&c.group) {
                continue;
            }
            let per_rank = (0..design.fabric.npus())
                .map(|r| {
                    let m = members(&npus, group, r);
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
fn system_json(design: &Design<'_>, layout: &Layout) -> String {
    let algos: Vec<String> = layout
        .dims
        .iter()
        .map(|d| {
            match design.algorithms[d.origin] {
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
        "preferred-dataset-splits": splits(design, layout),
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
fn workload_trace(design: &Design<'_>, layout: &Layout) -> Result<(Trace, Vec<(usize, Group)>), WorkloadError> {
    let mut grouped = Vec::new();
    let npus = layout.sizes();
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
            let group = layout.group(&c.group);
            let involved: Vec<bool> = (0..npus.len())
                .map(|d| group.0.get(d).copied().flatten().is_some_and(|p| p > 1))
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
            if partial(group, &npus) {
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
    let layout = Layout::new(design.fabric, design.workload);
    let (trace, grouped) = workload_trace(design, &layout)?;
    let groups = CommGroups::new(design, &layout);
    let n = design.fabric.npus();
    let mut files: Files = vec![
        ("network.yml".into(), network_yml(design, &layout, bw).into_bytes()),
        ("system.json".into(), system_json(design, &layout).into_bytes()),
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
         - {} communicator groups in `comm_groups.json` for the collectives over part of a ring dimension (ASTRA-sim runs each as one ring over the group's ranks; `involved_dim` flags whole dimensions only).\n",
        splits(design, &layout),
        design.time_model.name(),
        if splits(design, &layout) == 1 {
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
    for (d, f) in layout.split_dims() {
        let dim = &design.fabric.dims[d];
        let _ = writeln!(
            readme,
            "Dimension `{}` ({} {}) is written as {} sub-dimensions (`network.yml`), inner first: each collective over part of it runs on one sub-dimension, over its group's own links (the dimension's per-link bandwidth), as dimsum's links model times it; rank numbers are the fabric's.\n",
            dim.name,
            dim.block.name(),
            dim.npus,
            f.iter().map(u32::to_string).collect::<Vec<_>>().join(" x "),
        );
    }
    if design.group_bandwidth == GroupBandwidth::WholeDimension && !layout.split_dims().is_empty() {
        let _ = writeln!(
            readme,
            "The study keeps LIBRA's `group_bandwidth = \"whole-dimension\"` (every group gets all of its dimensions' bandwidth); ASTRA-sim simulates the links the groups have, as `group_bandwidth = \"links\"` does.\n"
        );
    }
    if design.algorithms.contains(&Algorithm::Swing) {
        let _ = writeln!(
            readme,
            "Swing has no native ASTRA-sim implementation: its dimensions are written as `halvingDoubling`."
        );
    }
    files.push(("README.md".into(), readme.into_bytes()));
    Ok(files)
}

//! The figures of one allocation: iteration time (with its lower bound),
//! network cost and power, and where the time and money go per dimension.
//!
//! This only composes `training` (time), `cost` (dollars, watts) and the
//! coefficients `collective` produced; it holds no formula of its own.

use crate::model::collective::DimCoeff;
use crate::model::cost::Linear;
use crate::model::fabric::{Block, Fabric};
use crate::model::training::IterationModel;
use crate::model::units::ns_to_ms;
use crate::model::workload::{CollectiveKind, PhaseKind};
use serde::Serialize;

/// One dimension's share of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimFigures {
    /// Dimension name.
    pub name: String,
    /// Building block.
    pub block: Block,
    /// NPUs along the dimension.
    pub npus: u32,
    /// Allocated bandwidth, GB/s per NPU.
    pub bw_gbps: f64,
    /// Bytes one NPU moves over the dimension per iteration.
    pub bytes_per_npu: f64,
    /// Sum over collectives of this dimension's time, ms.
    pub busy_ms: f64,
    /// Collectives whose time this dimension sets (the slowest dimension).
    pub bottleneck_of: usize,
    /// Network cost of the dimension, dollars.
    pub cost_usd: f64,
    /// Network power of the dimension, watts.
    pub power_w: f64,
    /// Whether `bw_gbps` is within the dimension's bounds.
    pub within_bounds: bool,
}

/// Everything `dimsum eval` reports about one allocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The allocation, GB/s per NPU per dimension.
    pub bw_gbps: Vec<f64>,
    /// Iteration time, ms.
    pub iteration_time_ms: f64,
    /// A time no collective algorithm can beat on this allocation, ms.
    pub iteration_lower_bound_ms: f64,
    /// Compute in the iteration, ms.
    pub compute_time_ms: f64,
    /// Communication not hidden under compute: iteration minus compute, ms.
    pub comm_time_ms: f64,
    /// All collective time, hidden or not, ms.
    pub total_collective_time_ms: f64,
    /// Collectives in the iteration.
    pub collectives: usize,
    /// Network cost, dollars.
    pub network_cost_usd: f64,
    /// Network power, watts.
    pub network_power_w: f64,
    /// Total NPUs.
    pub npus: u64,
    /// Per-dimension breakdown.
    pub dims: Vec<DimFigures>,
    /// Every collective of the iteration, in workload order.
    pub per_collective: Vec<CollectiveFigures>,
}

/// One collective of an evaluation: what it is, its time and bound at the
/// allocation, and the coefficients that time comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveFigures {
    /// Index of the layer that issues it.
    pub layer: usize,
    /// The phase that issues it.
    pub phase: PhaseKind,
    /// Type.
    #[serde(rename = "type")]
    pub kind: CollectiveKind,
    /// Bytes as LIBRA reads them (the buffer; each NPU's part for an
    /// all-gather).
    pub bytes: f64,
    /// Communicator, group size per dimension (-1: not involved).
    pub group: Vec<i64>,
    /// Time at the allocation, ms.
    pub time_ms: f64,
    /// A time no algorithm beats at the allocation, ms.
    pub lower_bound_ms: f64,
    /// How the dimensions' times combine: `max` or `sum` (the analytic
    /// model has no further envelopes; measured coefficients do).
    pub combine: &'static str,
    /// Per dimension: `alpha_ns + bytes / B` (bytes one NPU moves over it).
    pub coefficients: Vec<DimCoeff>,
}

/// Evaluates `bw` (one value per dimension, checked by the caller).
///
/// ```
/// use dimsum::model::eval::evaluate;
/// // The study of `training::IterationModel`'s example.
/// # let study = dimsum::study::Study::parse(r#"
/// # name = "tiny"
/// # [[fabric.dims]]
/// # name = "package"
/// # block = "ring"
/// # npus = 4
/// # [[fabric.dims]]
/// # name = "pod"
/// # block = "switch"
/// # npus = 8
/// # [cost.tiers.package]
/// # link_usd_per_gbps = 2.0
/// # [cost.tiers.pod]
/// # link_usd_per_gbps = 8.0
/// # switch_usd_per_gbps = 10.0
/// # nic_usd_per_gbps = 20.0
/// # [workload]
/// # communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 8] }
/// # [[workload.layers]]
/// # name = "l0"
/// # forward = { compute_ns = 1000 }
/// # input_grad = { compute_ns = 2000, collective = "all-reduce", bytes = 64e6 }
/// # weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
/// # "#, std::path::Path::new("tiny.toml"))?;
/// let e = evaluate(&study.fabric, &study.iteration_model(), &study.linear_cost(), &[100.0, 50.0]);
/// assert_eq!(e.npus, 32);
/// assert_eq!(e.collectives, 2);
/// // 6 us of compute; the rest is the two all-reduces, nothing hidden.
/// assert!((e.compute_time_ms - 0.006).abs() < 1e-12);
/// assert!((e.iteration_time_ms - (0.006 + 0.96 + 2.24)).abs() < 1e-9);
/// assert!((e.comm_time_ms - e.total_collective_time_ms).abs() < 1e-9);
/// assert!(e.iteration_lower_bound_ms <= e.iteration_time_ms);
/// // Cost: 32 NPUs x ($2 x 100 GB/s on the ring + ($8 + $10 + $20) x 50
/// // GB/s of links, switch ports and NICs on the switch).
/// assert!((e.network_cost_usd - 32.0 * (2.0 * 100.0 + 38.0 * 50.0)).abs() < 1e-6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn evaluate(fabric: &Fabric, iteration: &IterationModel, cost: &Linear, bw: &[f64]) -> Evaluation {
    let times = iteration.collective_times(bw);
    let iteration_ns = iteration.iteration_ns_from(&times);
    let mut dims: Vec<DimFigures> = fabric
        .dims
        .iter()
        .enumerate()
        .map(|(d, dim)| DimFigures {
            name: dim.name.clone(),
            block: dim.block,
            npus: dim.npus,
            bw_gbps: bw[d],
            bytes_per_npu: 0.0,
            busy_ms: 0.0,
            bottleneck_of: 0,
            cost_usd: cost.dim_cost(d, bw[d]),
            power_w: cost.dim_power(d, bw[d]),
            within_bounds: dim.min_gbps.is_none_or(|m| bw[d] >= m) && dim.max_gbps.is_none_or(|m| bw[d] <= m),
        })
        .collect();
    for c in &iteration.collectives {
        let mut slowest: Option<(usize, f64)> = None;
        for (d, k) in c.coeffs.dims.iter().enumerate() {
            let t = k.time_ns(bw[d]);
            dims[d].bytes_per_npu += k.bytes;
            dims[d].busy_ms += ns_to_ms(t);
            if t > 0.0 && slowest.is_none_or(|(_, s)| t > s) {
                slowest = Some((d, t));
            }
        }
        if let Some((d, _)) = slowest {
            dims[d].bottleneck_of += 1;
        }
    }
    Evaluation {
        bw_gbps: bw.to_vec(),
        iteration_time_ms: ns_to_ms(iteration_ns),
        iteration_lower_bound_ms: ns_to_ms(iteration.lower_bound_ns(bw)),
        compute_time_ms: ns_to_ms(iteration.compute_ns),
        comm_time_ms: ns_to_ms(iteration_ns - iteration.compute_ns),
        total_collective_time_ms: ns_to_ms(times.iter().sum()),
        collectives: iteration.collectives.len(),
        network_cost_usd: cost.cost(bw),
        network_power_w: cost.power(bw),
        npus: fabric.npus(),
        dims,
        per_collective: iteration
            .collectives
            .iter()
            .zip(&times)
            .map(|(c, t)| CollectiveFigures {
                layer: c.layer,
                phase: c.phase,
                kind: c.comm.kind,
                bytes: c.comm.bytes,
                group: c.comm.group.to_libra(),
                time_ms: ns_to_ms(*t),
                lower_bound_ms: ns_to_ms(c.coeffs.lower_bound_ns(bw)),
                combine: if c.coeffs.sequential { "sum" } else { "max" },
                coefficients: c.coeffs.dims.clone(),
            })
            .collect(),
    }
}

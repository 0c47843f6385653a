//! The JSON documents dimsum prints (`--json`) and writes (`run`), built
//! from typed results. One builder per kind of result, shared by the
//! command line and the study report so the two never drift apart.

use crate::model::bom::Bom;
use crate::model::units::ns_to_ms;
use crate::optimize::Problem;
use crate::optimize::scheduled::FixedPoint;
use crate::study::Study;
use serde_json::{Value, json};

/// A bill of materials for the allocation `asked`.
pub fn bom(study: &Study, asked: &[f64], b: &Bom) -> Value {
    json!({
        "study": study.name,
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "catalog": b.catalog,
        "npus": b.npus,
        "bw_gbps": asked,
        "bought_gbps": b.bought_gbps,
        "capex_usd": b.capex_usd,
        "power_w": b.power_w,
        "cost_per_npu_usd": b.cost_per_npu_usd,
        "dims": b.dims,
        "items": b.items.iter().map(|i| json!({
            "component": i.component,
            "kind": i.kind,
            "role": i.role,
            "dimension": i.dimension,
            "quantity": i.quantity,
            "unit_price_usd": i.unit_price_usd,
            "unit_power_w": i.unit_power_w,
        })).collect::<Vec<_>>(),
    })
}

/// The study's schedule evaluator settings.
pub fn evaluator_spec(study: &Study) -> Value {
    let s = &study.evaluator;
    json!({
        "algorithm": s.algorithm.to_string(),
        "algorithms": s.per_collective.iter().map(|(k, a)| (k.name().to_string(), Value::from(a.to_string()))).collect::<serde_json::Map<_, _>>(),
        "chunks_per_npu": s.chunks_per_npu,
        "link_model": s.link_model,
        "tolerance": s.tolerance,
        "max_iterations": s.max_iterations,
    })
}

/// A schedule-backed optimum found in `solve_ms`.
pub fn fixed_point(study: &Study, problem: &Problem, fp: &FixedPoint, solve_ms: f64) -> Value {
    let m = &fp.measured;
    let bw = &m.bw_gbps;
    json!({
        "study": study.name,
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "evaluator": "schedule",
        "schedule": evaluator_spec(study),
        "objective": fp.solution.objective,
        "bw_gbps": bw,
        "iteration_time_ms": ns_to_ms(m.iteration_ns),
        "analytic_iteration_time_ms": ns_to_ms(m.analytic_iteration_ns),
        "iteration_lower_bound_ms": ns_to_ms(m.lower_bound_ns),
        "network_cost_usd": problem.cost.cost(bw),
        "network_power_w": problem.cost.power(bw),
        "iterations": fp.iterations(),
        "converged": fp.converged,
        "cycle": fp.cycle,
        "best_seen": fp.best_seen,
        "model": {
            "objective_value": fp.solution.objective_value,
            "lower_bound": fp.solution.lower_bound,
            "gap": fp.solution.gap,
            "unit": fp.solution.objective_unit,
            "next_bw_gbps": fp.solution.bw_gbps,
            "binding_constraints": fp.solution.binding_constraints,
        },
        "collectives": m.collectives,
        "history": fp.history,
        "analytic_optimum": {
            "bw_gbps": fp.analytic.bw_gbps,
            "analytic_iteration_time_ms": fp.analytic.iteration_time_ms,
            "iteration_time_ms": ns_to_ms(fp.analytic_measured.iteration_ns),
            "gap": fp.analytic.gap,
            "collectives": fp.analytic_measured.collectives,
        },
        "solve_ms": solve_ms,
    })
}

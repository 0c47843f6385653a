//! The JSON documents dimsum prints (`--json`) and writes (`run`), built
//! from typed results. One builder per kind of result, shared by the
//! command line and the study report so the two never drift apart.

use crate::model::bom::Bom;
use crate::model::eval::Evaluation;
use crate::model::units::ns_to_ms;
use crate::optimize::Problem;
use crate::optimize::catalog::Comparison;
use crate::optimize::scheduled::FixedPoint;
use crate::optimize::scheduled::Measured;
use crate::optimize::{Objective, Solution};
use crate::pipeline::coopt::Coopt;
use crate::study::Study;
use serde_json::{Value, json};

/// A bill of materials for the allocation `asked`.
pub fn bom(study: &Study, asked: &[f64], b: &Bom) -> Value {
    json!({
        "study": study.name,
        "format": "dimsum-bom/1",
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
        "servers": b.servers.iter().map(|s| json!({
            "dimension": s.dimension,
            "server": s.server,
            "link": s.link,
            "quantity": s.quantity,
            "scale_up_gbps": s.gbps,
            "unit_price_usd": s.unit_price_usd,
            "unit_power_w": s.unit_power_w,
            "capex_usd": s.capex_usd(),
            "power_w": s.power_w(),
        })).collect::<Vec<_>>(),
    })
}

/// The study's schedule evaluator settings.
pub(crate) fn evaluator_spec(study: &Study) -> Value {
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

/// A schedule-backed optimum, with the wall time it took when there is one
/// (`optimize --json`; result files hold none).
pub fn fixed_point(study: &Study, problem: &Problem, fp: &FixedPoint, solve_ms: Option<f64>) -> Value {
    let m = &fp.measured;
    let bw = &m.bw_gbps;
    let mut v = json!({
        "study": study.name,
        "format": "dimsum-optimum/1",
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
    });
    if let (Some(ms), Some(o)) = (solve_ms, v.as_object_mut()) {
        o.insert("solve_ms".into(), ms.into());
    }
    v
}

/// One evaluation (`eval --json`): the study, its model and the
/// evaluation's fields at the top level.
pub fn evaluation(study: &Study, e: &Evaluation) -> Value {
    let v = json!({
        "study": study.name,
        "format": "dimsum-eval/1",
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "time_model": study.collective.time_model.name(),
        "training_loop": study.training_loop.name(),
        "evaluation": e,
    });
    // Flatten the evaluation's fields to the top level.
    let mut obj = v.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(ev)) = obj.remove("evaluation") {
        obj.extend(ev);
    }
    Value::Object(obj)
}

/// An evaluation with the study's constraints at it and, with
/// `[procurement]`, its bill's red flags (`eval --json`).
pub fn evaluated(study: &Study, v: &super::text::Evaluated) -> Value {
    let mut out = evaluation(study, &v.evaluation);
    if let Value::Object(obj) = &mut out {
        obj.insert("bw_gbps".into(), json!(v.bw));
        obj.insert("constraints".into(), json!(v.checks));
        if let Some(f) = &v.flags {
            obj.insert("flags".into(), json!(f));
        }
    }
    out
}

/// A schedule-backed evaluation (`eval --evaluator schedule --json`).
pub fn scheduled_evaluation(study: &Study, e: &Evaluation, m: &Measured) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("study".into(), study.name.clone().into());
    obj.insert("format".into(), "dimsum-eval/1".into());
    obj.insert("dimsum_version".into(), env!("CARGO_PKG_VERSION").into());
    obj.insert("fabric".into(), study.fabric.shape().into());
    obj.insert("evaluator".into(), "schedule".into());
    obj.insert("schedule".into(), evaluator_spec(study));
    obj.insert("training_loop".into(), study.training_loop.name().into());
    if let Ok(Value::Object(ev)) = serde_json::to_value(e) {
        obj.extend(ev);
    }
    obj.insert(
        "analytic_iteration_time_ms".into(),
        ns_to_ms(m.analytic_iteration_ns).into(),
    );
    obj.insert(
        "collectives".into(),
        serde_json::to_value(&m.collectives).unwrap_or(Value::Null),
    );
    obj.insert("collective_count".into(), e.collectives.into());
    Value::Object(obj)
}

/// An optimum found in `solve_ms` (`optimize --json`), with the lower
/// bound and the per-dimension figures of its evaluation `e`.
pub fn optimum(study: &Study, sol: &Solution, solve_ms: f64, e: &Evaluation) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("study".into(), study.name.clone().into());
    obj.insert("format".into(), "dimsum-optimum/1".into());
    obj.insert("dimsum_version".into(), env!("CARGO_PKG_VERSION").into());
    obj.insert("fabric".into(), study.fabric.shape().into());
    obj.insert("solve_ms".into(), solve_ms.into());
    if let Ok(Value::Object(m)) = serde_json::to_value(sol) {
        obj.extend(m);
    }
    obj.insert("iteration_lower_bound_ms".into(), e.iteration_lower_bound_ms.into());
    obj.insert("dims".into(), serde_json::to_value(&e.dims).unwrap_or(Value::Null));
    Value::Object(obj)
}

/// The catalog-constrained optimum (`optimize --catalog --json`).
#[allow(clippy::too_many_arguments)]
pub fn catalog(
    study: &Study,
    objective: Objective,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    c: &Comparison,
    b: &Bom,
    solve_ms: f64,
) -> Value {
    let mut v = json!({
        "study": study.name,
        "format": "dimsum-catalog/1",
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "objective": objective.name(),
        "budget_usd": budget_usd,
        "budget_w": budget_w,
        "bw_gbps": c.catalog.bw_gbps,
        "iteration_time_ms": c.catalog.iteration_time_ms,
        "capex_usd": c.catalog.capex_usd,
        "power_w": c.catalog.power_w,
        "mip_rel_gap": c.catalog.mip_rel_gap,
        "choice": c.catalog.choice,
        "continuous": c.continuous,
        "rounded": c.rounded,
        "skipped_constraints": c.skipped,
        "solve_ms": solve_ms,
    });
    v["bom"] = bom(study, &c.catalog.bw_gbps, b);
    v
}

/// A co-optimization found in `secs` (`coopt --json`), listing its first
/// `top` strategies (as the table does; `strategies_total` counts them
/// all, and `searched`, `solved`, `pruned` and `rejected` are the whole
/// search's).
pub fn coopt(
    study: &Study,
    r: &Coopt,
    acc: Option<&crate::pipeline::coopt::Accelerators>,
    archs: Option<&crate::pipeline::coopt::ArchSearch>,
    replayed: Option<&Result<Measured, impl std::fmt::Display>>,
    secs: f64,
    top: usize,
) -> Value {
    let best = r.strategies.first().and_then(|b| b.time_ms());
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        if let Some(Value::Array(list)) = o.get_mut("strategies") {
            list.truncate(top);
        }
        o.insert("strategies_total".into(), r.strategies.len().into());
        o.insert("study".into(), study.name.clone().into());
        o.insert("format".into(), "dimsum-coopt/1".into());
        o.insert("dimsum_version".into(), env!("CARGO_PKG_VERSION").into());
        o.insert("solve_s".into(), secs.into());
        o.insert("best_ms".into(), best.into());
        if let Some(a) = acc {
            o.insert("accelerators".into(), serde_json::to_value(a).unwrap_or(Value::Null));
        }
        if let Some(a) = archs {
            o.insert("archs".into(), arch_search(a, top));
        }
        if replayed.is_some() {
            o.insert("optimum_replayed".into(), replay(study, replayed));
        }
    }
    v
}

/// A replayed iteration (`bom.json`'s decision, the co-optimization's
/// joint optimum): the schedules, the link model, the allocation, the
/// replayed time beside its certified bound and the analytic model's, and
/// every distinct collective; the error where it could not be replayed.
pub fn replay(study: &Study, replayed: Option<&Result<Measured, impl std::fmt::Display>>) -> Value {
    match replayed {
        Some(Ok(m)) => json!({
            "schedules": "best",
            "link_model": study.evaluator.link_model,
            "bw_gbps": m.bw_gbps,
            "iteration_time_ms": ns_to_ms(m.iteration_ns),
            "lower_bound_ms": ns_to_ms(m.lower_bound_ns),
            "analytic_iteration_time_ms": ns_to_ms(m.analytic_iteration_ns),
            "collectives": m.collectives,
        }),
        Some(Err(e)) => json!({ "error": e.to_string() }),
        None => Value::Null,
    }
}

/// The architecture search as JSON: the space, the constants, every
/// architecture within the budgets with its area, power, best time and
/// bound, and the `top` rows of the joint search.
pub fn arch_search(a: &crate::pipeline::coopt::ArchSearch, top: usize) -> Value {
    // Field by field, so that only `top` of the search's rows (millions,
    // for a large space) become JSON; with every row it is `a` serialized
    // whole (tests/coopt.rs checks).
    let c = &a.coopt;
    let coopt = json!({
        "strategies": &c.strategies[..top.min(c.strategies.len())],
        "searched": c.searched,
        "solved": c.solved,
        "pruned": c.pruned,
        "rejected": c.rejected,
        "equal_split_gbps": c.equal_split_gbps,
        "best_on_equal_split_ms": c.best_on_equal_split_ms,
        "default_optimized_ms": c.default_optimized_ms,
        "priced_by": c.priced_by,
        "recipe_space": c.recipe_space,
    });
    let mut coopt = coopt;
    if let (Some(why), Some(o)) = (&c.own_invalid, coopt.as_object_mut()) {
        o.insert("own_invalid".into(), json!(why));
    }
    json!({
        "coopt": coopt,
        "archs": a.archs,
        "over_budget": a.over_budget,
        "space": a.space,
        "technology": a.technology,
        "own_best": a.own_best,
    })
}

/// `dimsum eval --json`: one allocation's object, or an array of them.
pub fn evaluations(study: &Study, views: &[super::text::Evaluated]) -> Value {
    let mut all: Vec<Value> = views.iter().map(|v| evaluated(study, v)).collect();
    match all.len() {
        1 => all.remove(0),
        _ => Value::Array(all),
    }
}

/// A study's frontier (`run::StudyFrontier`): every point as
/// `frontier-<axis>.csv` has it (the budget in the axis's unit), the knee,
/// the study's fixed designs on the axis and, schedule-backed, every
/// budget optimized against schedules.
pub fn frontier(study: &Study, r: &crate::pipeline::run::FrontierResults) -> Value {
    let f = &r.frontier;
    let dims: Vec<&str> = study.fabric.dims.iter().map(|d| d.name.as_str()).collect();
    let markers: Vec<Value> = r
        .markers
        .iter()
        .map(|m| json!({ "name": m.name, "budget": m.budget, "time_ms": m.time_ms }))
        .collect();
    let backed = r.schedule_backed.as_ref().map(|rows| {
        rows.iter()
            .map(|b| {
                json!({
                    "budget": b.budget,
                    "analytic_optimum_analytic_ms": b.analytic_ms,
                    "analytic_optimum_simulated_ms": b.analytic_simulated_ms,
                    "schedule_optimum_simulated_ms": b.schedule_ms,
                    "schedule_optimum_analytic_ms": b.schedule_analytic_ms,
                    "iterations": b.iterations,
                    "converged": b.converged,
                    "bw_gbps": b.bw,
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "study": study.name,
        "format": "dimsum-frontier/1",
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "dims": dims,
        "axis": f.axis.name(),
        "unit": f.axis.unit(),
        "points": f.points,
        "knee": f.knee,
        "log_x": f.log_x,
        "lp_solves": f.lp_solves,
        "markers": markers,
        "schedule_backed": backed,
    })
}

/// The design a study's `[procurement]` decides to buy (`run`'s
/// decision, as `bom.json` and the summary give it): the objective it
/// answers, the catalog optimum beside its continuous relaxation, its bill
/// of materials, the next faster purchasable design and its replay on the
/// best schedules; `null` where the catalog sells none.
pub fn decision(study: &Study, p: &crate::pipeline::procure::Procured) -> Value {
    match p.decided() {
        Some((a, c, b)) => json!({
            "objective": a.objective,
            "comparison": c,
            "bom": bom(study, &c.catalog.bw_gbps, b),
            "next_faster": a.next,
            "replayed": replay(study, p.replay.as_ref()),
        }),
        None => Value::Null,
    }
}

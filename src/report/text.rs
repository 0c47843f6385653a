//! The tables dimsum prints on a terminal (`eval`, `optimize`, `bom`,
//! `optimize --catalog`, the schedule-backed figures): fixed-width text
//! rendered from typed results.

use super::{sig3, sig3_list};
use crate::model::bom::Bom;
use crate::model::eval::Evaluation;
use crate::model::units::{ns_to_ms, usd_to_musd};
use crate::optimize::catalog::Comparison;
use crate::optimize::scheduled::{CollectiveFigures, FixedPoint, Measured};
use crate::optimize::{Problem, Solution};
use crate::pipeline::coopt::{self, Coopt};
use crate::study::Study;
use std::fmt::Write as _;

/// A readable report of one optimization.
pub fn optimum(study: &Study, sol: &Solution, solve_ms: f64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {}", study.fabric.shape());
    let _ = writeln!(
        s,
        "objective    {} = {:.9} {}   (certified lower bound {:.9}, gap {:.1e}; {} LP solves, {:.1} ms)",
        sol.objective, sol.objective_value, sol.objective_unit, sol.lower_bound, sol.gap, sol.lp_solves, solve_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "{:<12} {:<16} {:>12}", "dimension", "block", "GB/s");
    for (d, b) in study.fabric.dims.iter().zip(&sol.bw_gbps) {
        let _ = writeln!(s, "{:<12} {:<16} {:>12.4}", d.name, d.block.name(), b);
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "iteration    {:>14.6} ms", sol.iteration_time_ms);
    let _ = writeln!(s, "network cost {:>14.0} $", sol.network_cost_usd);
    let _ = writeln!(s, "network power{:>14.1} W", sol.network_power_w);
    if let Some(x) = sol.speedup_vs_equal_split {
        let _ = writeln!(
            s,
            "speedup      {x:>14.4} x over the equal split of the same total bandwidth"
        );
    }
    let _ = writeln!(s);
    if sol.binding_constraints.is_empty() {
        let _ = writeln!(s, "no constraint binds");
    } else {
        let _ = writeln!(
            s,
            "binding constraints (change of the objective per unit the right-hand side rises):"
        );
        for b in &sol.binding_constraints {
            match b.marginal {
                Some(m) => {
                    let _ = writeln!(
                        s,
                        "  {:<40} {:>+14.6} {} per {}",
                        b.constraint, m, sol.objective_unit, b.per
                    );
                }
                None => {
                    let _ = writeln!(s, "  {}", b.constraint);
                }
            }
        }
    }
    // Beside a catalog, say which prices these are.
    if study.procurement.is_some() {
        let _ = writeln!(
            s,
            "\npriced by linear $ and W per GB/s (the [cost] tiers, or the catalog's cheapest where a dimension names none): a continuous approximation, not a purchase; `dimsum optimize --catalog` answers from the catalog within [procurement]'s budgets"
        );
    }
    s
}

/// One warning line per dimension whose bandwidth is outside its bounds.
pub fn bounds_warnings(e: &Evaluation) -> String {
    e.dims
        .iter()
        .filter(|d| !d.within_bounds)
        .map(|d| {
            format!(
                "warning: {} GB/s on `{}` is outside the dimension's bounds\n",
                d.bw_gbps, d.name
            )
        })
        .collect()
}

/// A readable report of one evaluation.
pub fn evaluation(study: &Study, e: &Evaluation) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {} = {} NPUs", study.fabric.shape(), e.npus);
    let _ = writeln!(
        s,
        "model        time {}, loop {}, {} collectives",
        study.collective.time_model.name(),
        study.training_loop.name(),
        e.collectives
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "iteration    {:>14.3} ms   (lower bound {:.3} ms)",
        e.iteration_time_ms, e.iteration_lower_bound_ms
    );
    let _ = writeln!(s, "  compute    {:>14.3} ms", e.compute_time_ms);
    let _ = writeln!(
        s,
        "  exposed comm {:>12.3} ms   (all collectives {:.3} ms)",
        e.comm_time_ms, e.total_collective_time_ms
    );
    let _ = writeln!(s, "network cost {:>14.0} $", e.network_cost_usd);
    let _ = writeln!(s, "network power{:>14.1} W", e.network_power_w);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<16} {:>5} {:>10} {:>14} {:>12} {:>10} {:>14} {:>12}",
        "dimension", "block", "npus", "GB/s", "MB/NPU/iter", "busy ms", "slowest", "cost $", "power W"
    );
    for d in &e.dims {
        let _ = writeln!(
            s,
            "{:<12} {:<16} {:>5} {:>10.2} {:>14.3} {:>12.3} {:>10} {:>14.0} {:>12.1}{}",
            d.name,
            d.block.name(),
            d.npus,
            d.bw_gbps,
            d.bytes_per_npu / 1e6,
            d.busy_ms,
            d.bottleneck_of,
            d.cost_usd,
            d.power_w,
            if d.within_bounds { "" } else { "  (outside bounds)" }
        );
    }
    s
}

/// A bill of materials as a table.
pub fn bom(study: &Study, b: &Bom) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {} = {} NPUs", study.fabric.shape(), b.npus);
    let _ = writeln!(s, "catalog      {}", b.catalog);
    let _ = writeln!(s);
    s.push_str(&bom_body(b));
    s
}

/// The per-dimension and per-item tables and the totals.
fn bom_body(b: &Bom) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:<18} {:>9} {:>12} {:>12} {:<34} {:>14} {:>12}",
        "dimension", "port", "ports/NPU", "asked GB/s", "bought GB/s", "switches", "capex $", "power W"
    );
    for d in &b.dims {
        let sw = d.switch.as_ref().map_or("-".to_string(), |p| p.to_string());
        let _ = writeln!(
            s,
            "{:<12} {:<18} {:>9} {:>12.2} {:>12.2} {:<34} {:>14.0} {:>12.1}",
            d.dimension, d.port, d.ports_per_npu, d.asked_gbps, d.bought_gbps, sw, d.capex_usd, d.power_w
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<20} {:<18} {:>10} {:>12} {:>10} {:>14} {:>12}",
        "dimension", "component", "role", "quantity", "unit $", "unit W", "capex $", "power W"
    );
    for i in &b.items {
        let _ = writeln!(
            s,
            "{:<12} {:<20} {:<18} {:>10} {:>12.2} {:>10.2} {:>14.0} {:>12.1}",
            i.dimension,
            i.component,
            i.role,
            i.quantity,
            i.unit_price_usd,
            i.unit_power_w,
            i.capex_usd(),
            i.power_w()
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "capex        {:>14.0} $   ({} $ per NPU)",
        b.capex_usd,
        sig3(b.cost_per_npu_usd)
    );
    let _ = writeln!(s, "power        {:>14.1} W", b.power_w);
    if !b.servers.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "beside the network (not in its capex or power):");
        for v in &b.servers {
            let _ = writeln!(
                s,
                "{:<12} {} x {} ({}: {} GB/s = {} Gb/s per GPU per direction), {}, {:.1} kW at most",
                v.dimension,
                v.quantity,
                v.server,
                v.link,
                sig3(v.gbps),
                sig3(v.gbps * 8.0),
                v.capex_usd()
                    .map_or("price not in the catalog".to_string(), |c| format!("{c:.0} $")),
                v.power_w() / 1e3
            );
        }
    }
    s
}

fn design_line(name: &str, bw: &[f64], t: f64, capex: f64, power: f64, note: &str) -> String {
    format!(
        "{:<34} {:<40} {:>14.6} {:>14.0} {:>12.1}  {note}",
        name,
        format!("[{}]", sig3_list(bw)),
        t,
        capex,
        power
    )
}

/// The table of `optimize --catalog`.
pub fn catalog(study: &Study, c: &Comparison, b: &Bom, budget: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {}", study.fabric.shape());
    let _ = writeln!(
        s,
        "catalog      {} ({} purchasable designs)",
        b.catalog, c.catalog.options
    );
    if let Some(x) = budget {
        let _ = writeln!(s, "budget       {x:.0} $ capex");
    }
    if !c.skipped.is_empty() {
        let _ = writeln!(
            s,
            "not applied  {} (the catalog's prices replace the linear cost model)",
            c.skipped.join("; ")
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<34} {:<40} {:>14} {:>14} {:>12}",
        "design", "GB/s per NPU", "iteration ms", "capex $", "power W"
    );
    let _ = writeln!(
        s,
        "{}",
        design_line(
            "catalog optimum (MILP, gap 1e-9)",
            &c.catalog.bw_gbps,
            c.catalog.iteration_time_ms,
            c.catalog.capex_usd,
            c.catalog.power_w,
            ""
        )
    );
    let cont = &c.continuous;
    let _ = writeln!(
        s,
        "{}",
        design_line(
            "continuous relaxation",
            &cont.bw_gbps,
            cont.iteration_time_ms,
            cont.network_cost_usd,
            cont.network_power_w,
            "a lower bound: cheapest $ per GB/s, not purchasable as such"
        )
    );
    match &c.rounded {
        Some(r) => {
            let _ = writeln!(
                s,
                "{}",
                design_line(
                    "continuous rounded up to parts",
                    &r.bw_gbps,
                    r.iteration_time_ms,
                    r.capex_usd,
                    r.power_w,
                    if r.feasible {
                        "fits the budget"
                    } else {
                        "over the budget or a constraint"
                    }
                )
            );
        }
        None => {
            let _ = writeln!(
                s,
                "continuous rounded up to parts     (the catalog does not sell that much)"
            );
        }
    }
    let _ = writeln!(s);
    let gap = 100.0 * (c.catalog.iteration_time_ms / cont.iteration_time_ms - 1.0);
    let _ = writeln!(
        s,
        "buying only what the catalog sells costs {gap:.3}% of iteration time against the continuous bound{}",
        match &c.rounded {
            Some(r) if r.feasible => format!(
                "; rounding the continuous design up instead would take {:.3}% more time than the catalog optimum",
                100.0 * (r.iteration_time_ms / c.catalog.iteration_time_ms - 1.0)
            ),
            _ => String::new(),
        }
    );
    let _ = writeln!(s, "bill of materials of the catalog optimum ({} NPUs):", b.npus);
    s.push_str(&bom_body(b));
    s
}

/// The per-collective table: where the analytic model is optimistic or
/// pessimistic, and by how much.
pub fn collectives(cs: &[CollectiveFigures]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<15} {:>12} {:<20} {:>5} {:<34} {:>12} {:>12} {:>12} {:>8}  verdict",
        "collective", "bytes", "group", "count", "schedule", "simulated ms", "analytic ms", "bound ms", "sim/ana"
    );
    for c in cs {
        let verdict = if (c.ratio - 1.0).abs() <= 1e-6 {
            "exact".to_string()
        } else if c.ratio > 1.0 {
            format!("analytic optimistic by {:.1}%", 100.0 * (c.ratio - 1.0))
        } else {
            format!("analytic pessimistic by {:.1}%", 100.0 * (1.0 - c.ratio))
        };
        let _ = writeln!(
            s,
            "{:<15} {:>12} {:<20} {:>5} {:<34} {:>12.4} {:>12.4} {:>12.4} {:>8.4}  {verdict}",
            c.kind.name(),
            sig3(c.bytes),
            format!("{:?}", c.group),
            c.count,
            c.algorithm,
            c.simulated_ms,
            c.analytic_ms,
            c.lower_bound_ms,
            c.ratio
        );
    }
    s
}

/// The table of a schedule-backed optimum.
pub fn fixed_point(study: &Study, problem: &Problem, fp: &FixedPoint, solve_ms: f64) -> String {
    let mut s = String::new();
    let m = &fp.measured;
    let a = &fp.analytic_measured;
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {}", study.fabric.shape());
    let _ = writeln!(
        s,
        "evaluator    schedule ({}; {} chunk(s) per NPU; {} link model)",
        study.evaluator.algorithm,
        study.evaluator.chunks_per_npu,
        if study.evaluator.link_model == crate::schedule::simulate::LinkModel::Tacos {
            "tacos"
        } else {
            "alpha-beta"
        }
    );
    let _ = writeln!(
        s,
        "fixed point  {} after {} iteration(s){} ({:.0} ms)",
        if fp.converged && fp.best_seen {
            "converged, but an earlier allocation replayed faster: best allocation seen"
        } else if fp.converged {
            "converged"
        } else if fp.cycle {
            "cycled: best allocation seen"
        } else {
            "did not converge: best allocation seen"
        },
        fp.iterations(),
        if fp.converged {
            format!(
                " (allocation moves {:.1e} < {:.0e})",
                fp.history.last().map_or(0.0, |h| h.moved),
                study.evaluator.tolerance
            )
        } else {
            String::new()
        },
        solve_ms
    );
    let _ = writeln!(
        s,
        "objective    {} = {:.9} {} on the measured coefficients (their certified lower bound {:.9}, gap {:.1e})",
        fp.solution.objective,
        fp.solution.objective_value,
        fp.solution.objective_unit,
        fp.solution.lower_bound,
        fp.solution.gap
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<16} {:>14} {:>14}",
        "dimension", "block", "schedule GB/s", "analytic GB/s"
    );
    for (d, dim) in study.fabric.dims.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:<12} {:<16} {:>14.4} {:>14.4}",
            dim.name,
            dim.block.name(),
            m.bw_gbps[d],
            a.bw_gbps[d]
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<34} {:>16} {:>16}",
        "iteration time (ms)", "schedule optimum", "analytic optimum"
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "simulated schedules",
        ns_to_ms(m.iteration_ns),
        ns_to_ms(a.iteration_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "analytic model",
        ns_to_ms(m.analytic_iteration_ns),
        ns_to_ms(a.analytic_iteration_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "lower bound",
        ns_to_ms(m.lower_bound_ns),
        ns_to_ms(a.lower_bound_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.0} {:>16.0}",
        "network cost ($)",
        problem.cost.cost(&m.bw_gbps),
        problem.cost.cost(&a.bw_gbps)
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "collectives at the schedule-backed optimum:");
    s.push_str(&collectives(&m.collectives));
    s
}

/// The co-optimization's `top` fastest strategies, how much the joint
/// optimum gains and why the others lost.
pub fn coopt(study: &Study, r: &Coopt, secs: f64, top: usize) -> String {
    let mut s = String::new();
    let best = r.strategies.first().and_then(|b| b.time_ms());
    let _ = writeln!(
        s,
        "study {}: {} on {}, {} strategies searched in {secs:.2} s: {} solved, {} pruned by a lower bound (compute, or the time at the most bandwidth), {} invalid",
        study.name,
        study.model.as_ref().map_or("", |m| m.name.as_str()),
        study.fabric.shape(),
        r.searched,
        r.solved,
        r.pruned,
        r.rejected
    );
    let _ = writeln!(s, "each strategy's fabric priced by {}", r.priced_by.label());
    let recipes = r.recipe_space.len() > 1;
    let moe = study.model.as_ref().is_some_and(|m| m.moe.is_some());
    if recipes {
        let sp = &r.recipe_space;
        let _ = writeln!(
            s,
            "recipes searched ({}): micro-batch {:?}, recompute {}, ZeRO {:?}, sequence parallel {:?}, virtual stages {:?}",
            sp.len(),
            sp.micro_batch,
            sp.recompute
                .iter()
                .map(|x| crate::error::Named::as_name(*x))
                .collect::<Vec<_>>()
                .join("/"),
            sp.zero,
            sp.sequence_parallel,
            sp.virtual_stages
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:>4} {:>4} {:>5}{} {:<9} {:>12} {:>10} {:<34} {:>8} groups (tp | pp | dp){}",
        "tp",
        "pp",
        "dp",
        if moe { format!(" {:>4}", "ep") } else { String::new() },
        "order",
        "time ms",
        "mem GiB",
        "GB/s per NPU",
        "$M",
        if recipes { "  recipe" } else { "" }
    );
    for row in r.strategies.iter().filter(|x| x.time_ms().is_some()).take(top) {
        if let coopt::Verdict::Solved {
            bw_gbps,
            iteration_time_ms,
            network_cost_usd,
            ..
        } = &row.verdict
        {
            let bw: Vec<String> = bw_gbps.iter().map(|b| sig3(*b)).collect();
            let groups = row.groups(" | ");
            let recipe = if recipes {
                format!("  {}", row.recipe())
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "{:>4} {:>4} {:>5}{} {:<9} {:>12.3} {:>10.1} {:<34} {:>8.3} {}{recipe}",
                row.tp,
                row.pp,
                row.dp,
                if moe { format!(" {:>4}", row.ep) } else { String::new() },
                row.order,
                iteration_time_ms,
                row.memory_gib.unwrap_or(f64::NAN),
                bw.join(", "),
                usd_to_musd(*network_cost_usd),
                groups
            );
        }
    }
    if let Some(best) = best {
        let _ = writeln!(s);
        if let Some(eq) = r.best_on_equal_split_ms {
            let _ = writeln!(
                s,
                "joint optimum {best:.3} ms vs the best strategy on the equal split ({}) {eq:.3} ms: {:.3}x",
                sig3_list(&r.equal_split_gbps),
                eq / best
            );
        }
        if let Some(d) = r.default_optimized_ms {
            let _ = writeln!(
                s,
                "joint optimum {best:.3} ms vs the study's own strategy, optimally allocated, {d:.3} ms: {:.3}x",
                d / best
            );
        }
        if let Some(why) = &r.own_invalid {
            let _ = writeln!(s, "the study's own strategy: invalid: {why}");
        }
        if let Some(st) = r
            .strategies
            .first()
            .and_then(|b| b.stages.as_ref().filter(|_| b.pp > 1))
        {
            let _ = writeln!(s, "pipeline stages of the joint optimum: {st}");
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "why the others lost (examples of each reason):");
        for line in coopt::why_lost(r, best, 3) {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}

/// `dimsum coopt --replay`: the joint optimum replayed on the best
/// schedules, its certified bound and the analytic time the search ranked
/// it by, then every distinct collective.
pub fn replayed_optimum(study: &Study, m: &Measured) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "joint optimum replayed at {} GB/s per NPU ({} link model, each collective on the best schedule over its group's links, the pipeline's sends at their analytic time): {:.3} ms; no schedule beats {:.3} ms (every collective at its certified bound); the {} analytic model the search ranks by: {:.3} ms",
        sig3_list(&m.bw_gbps),
        crate::error::Named::as_name(study.evaluator.link_model),
        ns_to_ms(m.iteration_ns),
        ns_to_ms(m.lower_bound_ns),
        study.collective.time_model.name(),
        ns_to_ms(m.analytic_iteration_ns),
    );
    s.push_str(&collectives(&m.collectives));
    s
}

/// `dimsum catalog`: every part with its unit price and power, the $ and W
/// per GB/s it implies, and where the figures come from.
pub fn parts(c: &crate::model::catalog::Catalog) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "catalog      {} ({})", c.name, c.date);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<18} {:<11} {:<30} {:>7} {:>9} {:>7} {:>9} {:>7}  source",
        "port", "kind", "blocks", "GB/s", "unit $", "unit W", "$ per GB/s", "pJ/bit"
    );
    for p in &c.ports {
        let blocks: Vec<&str> = p.blocks.iter().map(|b| b.name()).collect();
        let g = p.gbps();
        let _ = writeln!(
            s,
            "{:<18} {:<11} {:<30} {:>7} {:>9.2} {:>7.2} {:>10} {:>7}  {} ({})",
            p.name,
            p.kind,
            blocks.join(", "),
            sig3(g),
            p.usd,
            p.watts,
            sig3(p.usd / g),
            // W per GB/s is J per GB: x 1000 / 8 = pJ per bit.
            sig3(p.watts / g * 1000.0 / 8.0),
            p.source,
            p.date
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<18} {:<11} {:>6} {:>7} {:>11} {:>8} {:>11}  source",
        "switch", "kind", "ports", "Gb/s", "unit $", "unit W", "$ per port"
    );
    for w in &c.switches {
        let _ = writeln!(
            s,
            "{:<18} {:<11} {:>6} {:>7} {:>11.2} {:>8.1} {:>11}  {} ({})",
            w.name,
            w.kind,
            w.ports,
            sig3(w.gbits),
            w.usd,
            w.watts,
            sig3(w.usd / f64::from(w.ports.max(1))),
            w.source,
            w.date
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<18} {:<8} {:>7} {:>8} {:>9} {:>7} {:<12}  source",
        "cable", "medium", "Gb/s", "reach m", "$ / link", "W / link", "for"
    );
    for k in &c.cables {
        let _ = writeln!(
            s,
            "{:<18} {:<8} {:>7} {:>8} {:>9.2} {:>7.2} {:<12}  {} ({})",
            k.name,
            k.medium,
            sig3(k.gbits),
            sig3(k.reach_m),
            k.usd,
            k.watts,
            if k.kinds.is_empty() {
                "any".to_string()
            } else {
                k.kinds.join(", ")
            },
            k.source,
            k.date
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<16} {:>5} {:>7} {:>9} {:>11} {:>9}  scale-up link; source",
        "server", "GPUs", "domain", "GB/s/GPU", "unit $", "unit kW"
    );
    for v in &c.servers {
        let _ = writeln!(
            s,
            "{:<16} {:>5} {:>7} {:>9} {:>11} {:>9.1}  {}; {} ({})",
            v.name,
            v.gpus,
            v.domain,
            sig3(v.gbps()),
            v.usd.map_or("-".to_string(), |u| format!("{u:.0}")),
            v.watts / 1e3,
            v.link,
            v.source,
            v.date
        );
    }
    if !c.legend.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "sources: {}", c.legend);
    }
    s
}

pub use crate::pipeline::jobs::Evaluated;

/// The constraints and red flags of one allocation, below its evaluation.
pub fn checks(e: &Evaluated) -> String {
    let mut s = String::new();
    if !e.checks.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "constraints");
        for c in &e.checks {
            let _ = writeln!(
                s,
                "  {:<9} {:<44} {} {}",
                if c.holds { "ok" } else { "VIOLATED" },
                c.constraint,
                sig3(c.value),
                c.unit
            );
        }
    }
    if let Some(flags) = &e.flags {
        let _ = writeln!(s);
        if flags.is_empty() {
            let _ = writeln!(
                s,
                "bought       within the budgets and caps (`dimsum bom` lists the parts)"
            );
        } else {
            let what: Vec<String> = flags.iter().map(super::flag_text).collect();
            let _ = writeln!(s, "bought       RED FLAG: {}", what.join("; "));
        }
    }
    s
}

/// Several allocations side by side (`eval --bw A --bw B ...`).
pub fn side_by_side(study: &Study, designs: &[Evaluated]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(
        s,
        "fabric       {} = {} NPUs; time {}, loop {}",
        study.fabric.shape(),
        study.fabric.npus(),
        study.collective.time_model.name(),
        study.training_loop.name()
    );
    let _ = writeln!(s);
    let names: Vec<&str> = study.fabric.dims.iter().map(|d| d.name.as_str()).collect();
    let head = format!("GB/s ({})", names.join(", "));
    let w = designs
        .iter()
        .map(|d| sig3_list(&d.bw).len())
        .fold(head.len(), usize::max);
    let _ = writeln!(
        s,
        "{:<w$} {:>14} {:>14} {:>12} {:>14} {:>12}  constraints / red flags",
        head, "iteration ms", "lower bound", "exposed ms", "cost $", "power W"
    );
    for d in designs {
        let e = &d.evaluation;
        let mut notes: Vec<String> = d
            .checks
            .iter()
            .filter(|c| !c.holds)
            .map(|c| format!("violates `{}`", c.constraint))
            .collect();
        if let Some(flags) = &d.flags {
            notes.extend(flags.iter().map(super::flag_text));
        }
        let _ = writeln!(
            s,
            "{:<w$} {:>14.3} {:>14.3} {:>12.3} {:>14.0} {:>12.1}  {}",
            sig3_list(&d.bw),
            e.iteration_time_ms,
            e.iteration_lower_bound_ms,
            e.comm_time_ms,
            e.network_cost_usd,
            e.network_power_w,
            if notes.is_empty() {
                "ok".to_string()
            } else {
                notes.join("; ")
            }
        );
    }
    s
}

/// `dimsum coopt` with `[npu] type = [...]`: each accelerator's best
/// design, priced and powered, and the best type by each objective.
pub fn accelerators(a: &coopt::Accelerators) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:>9} {:>12} {:>8} {:>9} {:>8} {:>9} {:>10} {:>12} {:>9}  best strategy",
        "type", "price $k", "time ms", "npus $M", "fabric $M", "total $M", "power kW", "Mtok/s", "tokens/$", "tokens/J"
    );
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    for d in &a.designs {
        let strategy = d.best.as_ref().map_or(String::new(), coopt::Row::strategy);
        let note = d.note.as_ref().map_or(String::new(), |n| format!("  [{n}]"));
        let _ = writeln!(
            s,
            "{:<10} {:>9.1} {:>12} {:>8.1} {:>9} {:>8} {:>9} {:>10} {:>12} {:>9}  {strategy}{note}",
            d.npu,
            d.price_usd / 1e3,
            opt(d.iteration_ms, &|x| format!("{x:.3}")),
            usd_to_musd(d.npu_capex_usd),
            opt(d.network_capex_usd, &|x| format!("{:.1}", usd_to_musd(x))),
            opt(d.capex_usd, &|x| format!("{:.1}", usd_to_musd(x))),
            opt(d.power_w, &|x| format!("{:.0}", x / 1e3)),
            opt(d.tokens_per_s, &|x| format!("{:.3}", x / 1e6)),
            opt(d.tokens_per_usd, &|x| format!("{x:.0}")),
            opt(d.tokens_per_joule, &|x| format!("{x:.3}")),
        );
    }
    for (objective, npu) in &a.best {
        let _ = writeln!(s, "best by {objective}: {npu}");
    }
    s
}

/// `dimsum coopt` with `[npu.arch]`: the joint optimum, the study's own
/// architecture beside it, and the `top` architectures by their best time
/// or the bound that excludes them.
pub fn archs(a: &coopt::ArchSearch, top: usize) -> String {
    let mut s = String::new();
    let t = &a.technology;
    let _ = writeln!(
        s,
        "architectures: {} within the budgets{} of {} ({} over); area and power at {} constants",
        a.archs.len(),
        arch_budgets(&a.space),
        a.archs.len() + a.over_budget,
        a.over_budget,
        t.name
    );
    let _ = writeln!(
        s,
        "{} candidates: {} solved, {} pruned by a bound, {} invalid",
        a.coopt.searched, a.coopt.solved, a.coopt.pruned, a.coopt.rejected
    );
    if let Some(best) = a.coopt.strategies.first().filter(|r| r.time_ms().is_some()) {
        let _ = writeln!(
            s,
            "best: {} on {}: {:.3} ms",
            best.strategy(),
            best.npu.as_deref().unwrap_or("-"),
            best.time_ms().unwrap_or(f64::NAN)
        );
    }
    if let Some(own) = &a.own_best {
        let _ = writeln!(
            s,
            "the study's own architecture ({}): best {} at {:.3} ms",
            a.archs.first().map_or("-", |x| x.name.as_str()),
            own.strategy(),
            own.time_ms().unwrap_or(f64::NAN)
        );
    }
    if let Some(d) = a.coopt.default_optimized_ms {
        let _ = writeln!(s, "the study's own architecture and strategy: {d:.3} ms");
    }
    let _ = writeln!(
        s,
        "{:<44} {:>9} {:>8} {:>9} {:>8} {:>12} {:>12}",
        "architecture", "TFLOP/s", "HBM GB/s", "area mm2", "power W", "best ms", "at least ms"
    );
    let order = a.ranked();
    for d in order.iter().take(top) {
        let _ = writeln!(
            s,
            "{:<44} {:>9.1} {:>8.0} {:>9.1} {:>8.1} {:>12} {:>12.3}",
            d.name,
            d.peak_tflops,
            d.hbm_gbps,
            d.area.total_mm2,
            d.power.total_w,
            if d.exact {
                d.best_ms.map_or("-".to_string(), |x| format!("{x:.3}"))
            } else {
                "-".to_string()
            },
            d.bound_ms
        );
    }
    s
}

/// ` (area <= X mm2, power <= Y W)`, or nothing without budgets.
pub(crate) fn arch_budgets(space: &crate::model::arch::ArchSpace) -> String {
    let mut parts = Vec::new();
    if let Some(a) = space.area_mm2 {
        parts.push(format!("area <= {a:.1} mm2"));
    }
    if let Some(w) = space.power_w {
        parts.push(format!("power <= {w:.1} W"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// `dimsum eval --evaluator schedule`: the analytic evaluation, then the
/// schedule-backed iteration beside it and every collective replayed.
pub fn scheduled_evaluation(study: &Study, e: &Evaluation, m: &Measured) -> String {
    let mut out = evaluation(study, e);
    let _ = writeln!(
        out,
        "\nschedule-backed ({} schedules; analytic iteration {:.6} ms, simulated {:.6} ms: {:+.2}%)",
        study.evaluator.algorithm,
        ns_to_ms(m.analytic_iteration_ns),
        ns_to_ms(m.iteration_ns),
        100.0 * (m.iteration_ns / m.analytic_iteration_ns - 1.0)
    );
    out + &collectives(&m.collectives)
}

/// `dimsum coopt`'s tables: the accelerators first where there are
/// several (the choice is the answer), the strategies, the joint optimum
/// replayed (`replay`: asked for; `None` when there is nothing to replay)
/// and the architectures.
pub fn coopt_results(
    study: &Study,
    r: &crate::pipeline::jobs::CooptResults,
    replay: Option<Option<&Measured>>,
    secs: f64,
    top: usize,
) -> String {
    let mut out = String::new();
    if let Some(a) = &r.accelerators {
        out += &accelerators(a);
        out.push('\n');
    }
    out += &coopt(study, &r.coopt, secs, top);
    match replay {
        Some(Some(m)) => out = out + "\n" + &replayed_optimum(study, m),
        Some(None) => out += "\nno solved strategy to replay\n",
        None => {}
    }
    if let Some(a) = &r.archs {
        out = out + "\n" + &archs(a, top);
    }
    out
}

/// What `dimsum sweep` did with one sweep's shard: the CSV written, or
/// unfinished.
pub fn sweep_outcome(name: &str, shard: crate::pipeline::sweep::Shard, o: &crate::pipeline::sweep::Outcome) -> String {
    match &o.csv {
        Some(p) => format!(
            "wrote {} ({} items: {} solved now, {} resumed from an earlier run)",
            p.display(),
            o.items,
            o.solved_now,
            o.resumed
        ),
        None => format!("sweep `{name}` shard {}/{} unfinished", shard.index, shard.count),
    }
}

/// `dimsum eval`'s tables: one allocation's evaluation and checks, or
/// several side by side.
pub fn evaluations(study: &Study, views: &[Evaluated]) -> String {
    match views {
        [one] => evaluation(study, &one.evaluation) + &checks(one),
        _ => side_by_side(study, views),
    }
}

/// A schedule written by `import`: its transfers, NPUs and file.
pub fn imported(s: &crate::schedule::Schedule, out: &std::path::Path) -> String {
    format!(
        "{} transfers on {} NPUs written to {}",
        s.transfers.len(),
        s.npus,
        out.display()
    )
}

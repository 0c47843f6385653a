//! `dimsum bom`: an allocation as the parts that buy it; and the tables of
//! the catalog-constrained optimum.

use dimsum::error::InputError;
use dimsum::model::bom::{self, Bom};
use dimsum::optimize::Problem;
use dimsum::optimize::catalog::{Comparison, Goal};
use dimsum::pipeline::procure;
use dimsum::report::sig3;
use dimsum::study::Study;
use serde_json::json;
use std::fmt::Write as _;

/// A bill of materials as a table.
pub fn bom_table(study: &Study, b: &Bom) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {} = {} NPUs", study.fabric.shape(), b.npus);
    let _ = writeln!(s, "catalog      {}", b.catalog);
    let _ = writeln!(s);
    s.push_str(&bom_body(b));
    s
}

/// The per-dimension and per-item tables and the totals.
pub fn bom_body(b: &Bom) -> String {
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
    s
}

/// `dimsum bom`.
pub fn run_bom(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let spec = study.procurement();
    let b = bom::bom(&study.fabric, &spec, bw).map_err(|e| InputError::arg("--bw", e.to_string()))?;
    if json_out {
        println!("{}", dimsum::report::json::bom(study, bw, &b));
    } else {
        print!("{}", bom_table(study, &b));
    }
    Ok(())
}

/// The catalog goal of an objective.
pub fn goal_of(objective: dimsum::optimize::Objective) -> Result<Goal, InputError> {
    use dimsum::optimize::Objective;
    match objective {
        Objective::Perf => Ok(Goal::Perf),
        Objective::MinCost { target_ms } => Ok(Goal::MinCapex { target_ms }),
        Objective::MinPower { target_ms } => Ok(Goal::MinPower { target_ms }),
        Objective::PerfPerCost => Err(InputError::arg(
            "--objective",
            "perf-per-cost is not offered against the catalog: use perf with a budget, min-cost or min-power",
        )),
    }
}

/// The catalog-constrained optimum with its comparison, for a study: the
/// budgets given, else the study's; `perf` needs one.
pub fn catalog_compare(
    study: &Study,
    problem: &Problem,
    goal: Goal,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> anyhow::Result<(Comparison, Bom)> {
    let spec = study.procurement();
    let budget_usd = budget_usd.or(spec.budget_usd);
    let budget_w = budget_w.or(spec.budget_w);
    if goal == Goal::Perf && budget_usd.is_none() && budget_w.is_none() {
        return Err(InputError::arg(
            "--budget-usd",
            "the fastest purchasable fabric needs a budget: pass --budget-usd (or --budget-w) or set budget_usd in [procurement]",
        )
        .into());
    }
    Ok(procure::compare(study, problem, goal, budget_usd, budget_w)?)
}

fn design_line(name: &str, bw: &[f64], t: f64, capex: f64, power: f64, note: &str) -> String {
    format!(
        "{:<34} {:<40} {:>14.6} {:>14.0} {:>12.1}  {note}",
        name,
        format!("[{}]", bw.iter().map(|b| sig3(*b)).collect::<Vec<_>>().join(", ")),
        t,
        capex,
        power
    )
}

/// The table of `optimize --catalog`.
pub fn catalog_table(study: &Study, c: &Comparison, b: &Bom, budget: Option<f64>) -> String {
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

/// `dimsum optimize --catalog`.
pub fn run_catalog(
    study: &Study,
    problem: &Problem,
    objective: dimsum::optimize::Objective,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    json_out: bool,
) -> anyhow::Result<()> {
    let goal = goal_of(objective)?;
    let started = std::time::Instant::now();
    let (c, b) = catalog_compare(study, problem, goal, budget_usd, budget_w)?;
    let solve_ms = started.elapsed().as_secs_f64() * 1e3;
    let budget = budget_usd.or(study.procurement().budget_usd);
    if json_out {
        let mut v = json!({
            "study": study.name,
            "dimsum_version": env!("CARGO_PKG_VERSION"),
            "fabric": study.fabric.shape(),
            "objective": objective.name(),
            "budget_usd": budget,
            "budget_w": budget_w.or(study.procurement().budget_w),
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
        v["bom"] = dimsum::report::json::bom(study, &c.catalog.bw_gbps, &b);
        println!("{v}");
    } else {
        print!("{}", catalog_table(study, &c, &b, budget));
    }
    Ok(())
}

//! `dimsum bom`: an allocation as the parts that buy it; and the tables of
//! the catalog-constrained optimum.

use dimsum::error::InputError;
use dimsum::model::bom::{self, Bom};
use dimsum::optimize::Problem;
use dimsum::optimize::catalog::{self, Comparison, Goal};
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

/// The JSON of a bill of materials.
pub fn bom_json(study: &Study, asked: &[f64], b: &Bom) -> serde_json::Value {
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

/// `dimsum bom`.
pub fn run_bom(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let spec = study.procurement();
    let b = bom::bom(&study.fabric, &spec, bw).map_err(|e| InputError::arg("--bw", e.to_string()))?;
    if json_out {
        println!("{}", bom_json(study, bw, &b));
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

/// The catalog-constrained optimum with its comparison, for a study.
pub fn catalog_compare(
    study: &Study,
    problem: &Problem,
    goal: Goal,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> anyhow::Result<(Comparison, Bom)> {
    let spec = study.procurement();
    let options: Vec<_> = (0..study.fabric.ndims())
        .map(|d| bom::options(&study.fabric, &spec, d, true))
        .collect();
    let budget_usd = budget_usd.or(spec.budget_usd);
    let budget_w = budget_w.or(spec.budget_w);
    if goal == Goal::Perf && budget_usd.is_none() && budget_w.is_none() {
        return Err(InputError::arg(
            "--budget-usd",
            "the fastest purchasable fabric needs a budget: pass --budget-usd (or --budget-w) or set budget_usd in [procurement]",
        )
        .into());
    }
    let c = catalog::compare(problem, options, budget_usd, budget_w, goal)?;
    let b = bom::bom(&study.fabric, &spec, &c.catalog.bw_gbps)?;
    Ok((c, b))
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
        v["bom"] = bom_json(study, &c.catalog.bw_gbps, &b);
        println!("{v}");
    } else {
        print!("{}", catalog_table(study, &c, &b, budget));
    }
    Ok(())
}

/// The `run` section of a study with `[procurement]`: the parts of each
/// recommended design, and the catalog-constrained optimum under the
/// study's budget; `bom.json`.
pub fn run_section(
    study: &Study,
    problem: &Problem,
    recommended: &[(String, Vec<f64>)],
    dir: &std::path::Path,
    stamp: &dimsum::io::Stamp,
    md: &mut String,
) -> anyhow::Result<()> {
    let spec = study.procurement();
    let fmt_bw = |bw: &[f64]| bw.iter().map(|b| sig3(*b)).collect::<Vec<_>>().join(", ");
    let _ = writeln!(md, "\n## Bill of materials\n");
    let _ = writeln!(
        md,
        "Each recommended allocation bought from the catalog (`{} ({})`; every price and power figure cites its source there): ports per NPU rounded up, switches by radix (a leaf-spine where a group outgrows one switch), cables by reach. `bom.json` has every item.\n",
        spec.catalog.name, spec.catalog.date
    );
    let _ = writeln!(
        md,
        "| objective | GB/s per NPU asked | bought | capex ($M) | power (kW) | $ per NPU | switches |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let mut out = Vec::new();
    let mut first: Option<Bom> = None;
    for (name, bw) in recommended {
        match bom::bom(&study.fabric, &spec, bw) {
            Ok(b) => {
                let switches: Vec<String> = b
                    .dims
                    .iter()
                    .filter_map(|d| d.switch.as_ref().map(|p| format!("{}: {p}", d.dimension)))
                    .collect();
                let over: Vec<String> = study
                    .fabric
                    .dims
                    .iter()
                    .zip(&b.bought_gbps)
                    .filter(|(d, x)| d.max_gbps.is_some_and(|m| **x > m * (1.0 + 1e-9)))
                    .map(|(d, x)| {
                        format!(
                            "{} {} over its max_gbps {}",
                            d.name,
                            sig3(*x),
                            sig3(d.max_gbps.unwrap_or(0.0))
                        )
                    })
                    .collect();
                let _ = writeln!(
                    md,
                    "| {name} | {} | {}{} | {:.3} | {:.1} | {:.0} | {} |",
                    fmt_bw(bw),
                    fmt_bw(&b.bought_gbps),
                    if over.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", over.join("; "))
                    },
                    b.capex_usd / 1e6,
                    b.power_w / 1e3,
                    b.cost_per_npu_usd,
                    if switches.is_empty() {
                        "-".into()
                    } else {
                        switches.join("; ")
                    }
                );
                out.push(json!({ "objective": name, "bom": bom_json(study, bw, &b) }));
                if first.is_none() {
                    first = Some(b);
                }
            }
            Err(e) => {
                let _ = writeln!(md, "| {name} | {} | {e} | | | | |", fmt_bw(bw));
                out.push(json!({ "objective": name, "error": e.to_string() }));
            }
        }
    }
    // Capex by dimension, per design.
    let names: Vec<String> = study.fabric.dims.iter().map(|d| d.name.clone()).collect();
    let per_dim = |b: &Bom| -> Vec<f64> { b.dims.iter().map(|d| d.capex_usd / 1e6).collect() };
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    for o in &out {
        if let (Some(name), Some(dims)) = (o["objective"].as_str(), o["bom"]["dims"].as_array()) {
            bars.push((
                format!("{name} (rounded up)"),
                dims.iter()
                    .map(|d| d["capex_usd"].as_f64().unwrap_or(0.0) / 1e6)
                    .collect(),
            ));
        }
    }
    if let (Some(b), Some((name, _))) = (&first, recommended.first()) {
        let _ = writeln!(md, "\n### Parts of the `{name}` design\n");
        let _ = writeln!(
            md,
            "| dimension | component | role | quantity | unit $ | unit W | capex ($) | power (W) |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
        for i in &b.items {
            let _ = writeln!(
                md,
                "| {} | `{}` | {} | {} | {:.2} | {:.2} | {:.0} | {:.1} |",
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
        let _ = writeln!(md, "| total | | | | | | {:.0} | {:.1} |", b.capex_usd, b.power_w);
    }
    let mut catalog_json = serde_json::Value::Null;
    if let Some(budget) = spec.budget_usd {
        let _ = writeln!(
            md,
            "\n### The best fabric the catalog sells for ${}M\n",
            sig3(budget / 1e6)
        );
        match catalog_compare(study, problem, Goal::Perf, Some(budget), spec.budget_w) {
            Ok((c, b)) => {
                let _ = writeln!(
                    md,
                    "| design | GB/s per NPU | iteration (ms) | capex ($M) | power (kW) | |"
                );
                let _ = writeln!(md, "|---|---|---|---|---|---|");
                let _ = writeln!(
                    md,
                    "| catalog optimum (MILP, gap 1e-9) | {} | {:.4} | {:.3} | {:.1} | purchasable as listed |",
                    fmt_bw(&c.catalog.bw_gbps),
                    c.catalog.iteration_time_ms,
                    c.catalog.capex_usd / 1e6,
                    c.catalog.power_w / 1e3
                );
                let _ = writeln!(
                    md,
                    "| continuous relaxation | {} | {:.4} | {:.3} | {:.1} | lower bound (cheapest $ per GB/s) |",
                    fmt_bw(&c.continuous.bw_gbps),
                    c.continuous.iteration_time_ms,
                    c.continuous.network_cost_usd / 1e6,
                    c.continuous.network_power_w / 1e3
                );
                if let Some(r) = &c.rounded {
                    let _ = writeln!(
                        md,
                        "| continuous rounded up to parts | {} | {:.4} | {:.3} | {:.1} | {} |",
                        fmt_bw(&r.bw_gbps),
                        r.iteration_time_ms,
                        r.capex_usd / 1e6,
                        r.power_w / 1e3,
                        if r.feasible {
                            "fits"
                        } else {
                            "over the budget or a bound"
                        }
                    );
                }
                let _ = writeln!(
                    md,
                    "\nBuying only what the catalog sells costs {:.2}% of iteration time against the continuous bound.",
                    100.0 * (c.catalog.iteration_time_ms / c.continuous.iteration_time_ms - 1.0)
                );
                if !c.skipped.is_empty() {
                    let _ = writeln!(
                        md,
                        "Not applied to catalog designs (the catalog's prices replace the linear cost model): {}.",
                        c.skipped
                            .iter()
                            .map(|x| format!("`{x}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                bars.push((
                    format!("catalog optimum (${}M budget)", sig3(budget / 1e6)),
                    per_dim(&b),
                ));
                catalog_json = json!({ "comparison": c, "bom": bom_json(study, &c.catalog.bw_gbps, &b) });
            }
            Err(e) => {
                let _ = writeln!(md, "No purchasable design: {e}");
                catalog_json = json!({ "error": e.to_string() });
            }
        }
    }
    // The best purchasable fabric at every budget, beside the bound.
    let frontier = catalog_frontier(study, problem, 16)?;
    if !frontier.is_empty() {
        let mut csv = format!(
            "# {}\nbudget_usd,catalog_time_ms,continuous_bound_ms,capex_usd,power_w,{}\n",
            stamp.line(),
            study
                .fabric
                .dims
                .iter()
                .map(|d| format!("bw_{}", d.name))
                .collect::<Vec<_>>()
                .join(",")
        );
        for (b, c) in &frontier {
            let _ = writeln!(
                csv,
                "{b},{},{},{},{},{}",
                c.catalog.iteration_time_ms,
                c.continuous.iteration_time_ms,
                c.catalog.capex_usd,
                c.catalog.power_w,
                c.catalog
                    .bw_gbps
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        dimsum::io::write_atomic(&dir.join("catalog-frontier.csv"), csv.as_bytes())?;
        let series: Vec<dimsum::report::Series> = vec![
            (
                "best purchasable fabric (catalog MILP)".into(),
                frontier
                    .iter()
                    .map(|(b, c)| (b / 1e6, c.catalog.iteration_time_ms))
                    .collect(),
            ),
            (
                "continuous bound (cheapest $ per GB/s)".into(),
                frontier
                    .iter()
                    .map(|(b, c)| (b / 1e6, c.continuous.iteration_time_ms))
                    .collect(),
            ),
        ];
        dimsum::report::line_chart(
            dir,
            "catalog-frontier",
            &format!("{}: the fastest fabric each capex budget can buy", study.name),
            "capex budget ($M)",
            "iteration time (ms)",
            &series,
            None,
            stamp,
        )?;
        let (lo, hi) = (&frontier[0], &frontier[frontier.len() - 1]);
        let _ = writeln!(
            md,
            "\n### The fastest fabric each budget can buy\n\nFrom ${}M (the cheapest purchasable fabric, {} ms) to ${}M (the fastest, {} ms), {} budgets, each a catalog MILP beside its continuous bound (`catalog-frontier.csv`).\n",
            sig3(lo.0 / 1e6),
            sig3(lo.1.catalog.iteration_time_ms),
            sig3(hi.0 / 1e6),
            sig3(hi.1.catalog.iteration_time_ms),
            frontier.len()
        );
        let _ = writeln!(md, "![catalog frontier](catalog-frontier.png)");
    }
    if !bars.is_empty() {
        dimsum::report::capex_chart(
            dir,
            "capex",
            &format!("{}: capex by dimension", study.name),
            &bars,
            &names,
            stamp,
        )?;
        let _ = writeln!(md, "\n![capex by dimension](capex.png)");
    }
    // Where every price used comes from.
    let mut used: Vec<String> = Vec::new();
    for o in &out {
        for i in o["bom"]["items"].as_array().into_iter().flatten() {
            if let Some(c) = i["component"].as_str()
                && !used.iter().any(|u| u == c)
            {
                used.push(c.to_string());
            }
        }
    }
    if let Some(items) = catalog_json["bom"]["items"].as_array() {
        for i in items {
            if let Some(c) = i["component"].as_str()
                && !used.iter().any(|u| u == c)
            {
                used.push(c.to_string());
            }
        }
    }
    if !used.is_empty() {
        let _ = writeln!(md, "\n### Where the figures come from\n");
        if !spec.catalog.legend.is_empty() {
            let _ = writeln!(md, "{}\n", spec.catalog.legend);
        }
        for name in &used {
            let c = &spec.catalog;
            let (src, date) = c
                .ports
                .iter()
                .find(|p| &p.name == name)
                .map(|p| (p.source.clone(), p.date.clone()))
                .or_else(|| {
                    c.switches
                        .iter()
                        .find(|x| &x.name == name)
                        .map(|x| (x.source.clone(), x.date.clone()))
                })
                .or_else(|| {
                    c.cables
                        .iter()
                        .find(|x| &x.name == name)
                        .map(|x| (x.source.clone(), x.date.clone()))
                })
                .unwrap_or_default();
            let _ = writeln!(md, "- `{name}` ({date}): {src}");
        }
    }
    let j = json!({ "stamp": stamp, "study": study.name, "catalog": spec.catalog.name, "recommended": out, "catalog_optimum": catalog_json });
    dimsum::io::write_atomic(&dir.join("bom.json"), serde_json::to_string_pretty(&j)?.as_bytes())?;
    Ok(())
}

/// The catalog optimum at `points` budgets, geometrically spaced from the
/// cheapest purchasable fabric to the least capex of the fastest one.
pub fn catalog_frontier(study: &Study, problem: &Problem, points: usize) -> anyhow::Result<Vec<(f64, Comparison)>> {
    let spec = study.procurement();
    let options: Vec<_> = (0..study.fabric.ndims())
        .map(|d| bom::options(&study.fabric, &spec, d, true))
        .collect();
    let (cp, _) = catalog::CatalogProblem::new(problem, options.clone(), None, spec.budget_w);
    let Ok(cheapest) = catalog::solve(&cp, Goal::MinCapex { target_ms: f64::MAX }) else {
        return Ok(Vec::new());
    };
    let big = catalog::CatalogProblem::new(problem, options.clone(), Some(1e18), spec.budget_w).0;
    let fastest = catalog::solve(&big, Goal::Perf)?;
    let dearest = catalog::solve(
        &cp,
        Goal::MinCapex {
            target_ms: fastest.iteration_time_ms * (1.0 + 1e-9),
        },
    )?;
    let (lo, hi) = (cheapest.capex_usd, dearest.capex_usd.max(cheapest.capex_usd));
    let n = points.max(2);
    let mut out = Vec::new();
    for i in 0..n {
        let b = lo * (hi / lo).powf(i as f64 / (n - 1) as f64) * if i == 0 { 1.0 + 1e-9 } else { 1.0 };
        if let Ok(c) = catalog::compare(problem, options.clone(), Some(b), spec.budget_w, Goal::Perf) {
            out.push((b, c));
        }
    }
    Ok(out)
}

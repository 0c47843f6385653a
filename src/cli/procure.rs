//! `dimsum bom`: an allocation as the parts that buy it; and the tables of
//! the catalog-constrained optimum.

use dimsum::error::InputError;
use dimsum::model::bom::{self, Bom};
use dimsum::optimize::Problem;
use dimsum::optimize::catalog::{Comparison, Goal};
use dimsum::pipeline::procure;
use dimsum::study::Study;

/// `dimsum bom`.
pub fn run_bom(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let spec = study.procurement();
    let b = bom::bom(&study.fabric, &spec, bw).map_err(|e| InputError::arg("--bw", e.to_string()))?;
    if json_out {
        println!("{}", dimsum::report::json::bom(study, bw, &b));
    } else {
        print!("{}", dimsum::report::text::bom(study, &b));
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
        let v = dimsum::report::json::catalog(
            study,
            objective,
            budget,
            budget_w.or(study.procurement().budget_w),
            &c,
            &b,
            solve_ms,
        );
        println!("{v}");
    } else {
        print!("{}", dimsum::report::text::catalog(study, &c, &b, budget));
    }
    Ok(())
}

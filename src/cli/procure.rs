//! `dimsum bom`: an allocation as the parts that buy it; and the tables of
//! the catalog-constrained optimum.

use dimsum::error::InputError;
use dimsum::model::bom;
use dimsum::optimize::{Objective, Problem};
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::jobs;
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

/// `dimsum optimize --catalog`.
pub fn run_catalog(
    study: &Study,
    problem: &Problem,
    objective: Objective,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    json_out: bool,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let job = jobs::CatalogOptimum {
        study,
        problem,
        objective,
        budget_usd,
        budget_w,
    };
    let c = Executor::quiet().run(job).map_err(super::lift)?;
    let solve_ms = started.elapsed().as_secs_f64() * 1e3;
    if json_out {
        let v = dimsum::report::json::catalog(
            study,
            objective,
            c.budget_usd,
            c.budget_w,
            &c.comparison,
            &c.bom,
            solve_ms,
        );
        println!("{v}");
    } else {
        print!(
            "{}",
            dimsum::report::text::catalog(study, &c.comparison, &c.bom, c.budget_usd)
        );
    }
    Ok(())
}

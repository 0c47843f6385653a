//! `dimsum failures STUDY [--bw ...] [--json]`: the iteration time with one
//! failed part per dimension and part kind, how often the bill's parts fail,
//! and the goodput after checkpoint-restart (`pipeline::failures`).

use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::jobs;
use dimsum::report;
use dimsum::report::bars::Bars;
use std::path::PathBuf;

/// Arguments of `dimsum failures`.
#[derive(Debug, clap::Args)]
pub struct FailuresArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// GB/s per NPU per dimension, comma-separated (default: the study's `bw`).
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Option<String>,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `dimsum failures`.
pub fn run(a: &FailuresArgs) -> anyhow::Result<()> {
    let study = super::load_study(&a.study)?;
    let bw = study.allocation(a.bw.as_deref())?;
    // The study's parts (its [procurement], else the built-in catalog's
    // defaults), as `dimsum bom` buys them; none if they cannot be bought.
    let bom = dimsum::model::bom::bom(&study.fabric, &study.procurement(), &bw).ok();
    let bars = Bars::new();
    let r = Executor::new(&bars)
        .run(jobs::Failures {
            study: &study,
            bw: &bw,
            bom: bom.as_ref(),
        })
        .map_err(super::lift)?;
    bars.finish();
    match a.json {
        true => println!(
            "{}",
            serde_json::to_string_pretty(&report::failures::json(&study, &study.stamp(), &r))?
        ),
        false => print!("{}", report::failures::text(&study, &r)),
    }
    Ok(())
}

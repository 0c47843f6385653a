//! The shapes a study compares (`[[alternative]]`, `pipeline::shapes`):
//! the sentence naming the shape to buy and why, the report's "Shapes"
//! section, `shapes.csv`, `shapes.json` and the chart of every shape's
//! catalog frontier (`shapes-frontier.svg/png`, iteration time against
//! capex, each shape's design within the budgets marked).

use super::doc::{Block, Doc};
use super::{Chart, ReportError, Series, sig3, sig3_list};
use crate::io::Stamp;
use crate::model::units::{usd_to_musd, w_to_kw};
use crate::pipeline::shapes::{Shape, ShapeBuy, Shapes, Why};
use serde_json::json;
use std::path::Path;

/// The stem of the chart's files.
pub const CHART: &str = "shapes-frontier";

/// Three significant figures of `$M`.
fn musd(x: f64) -> String {
    sig3(usd_to_musd(x))
}

/// The decision among the shapes in one sentence: the shape to buy and
/// why, against the runner-up, with the figures.
pub fn why(s: &Shapes) -> String {
    let Some((i, why)) = s.chosen else {
        return "no shape can be bought within the budgets (each shape's reason is in its row)".into();
    };
    let (name, b) = (&s.shapes[i].name, design(&s.shapes[i]));
    let Some(b) = b else { return String::new() };
    let pct = |x: f64| format!("{:.0}", x * 100.0);
    let runner = |j: usize| (&s.shapes[j].name, design(&s.shapes[j]));
    match why {
        Why::Only => format!(
            "{name}: the only shape purchasable within the budgets ({} ms, ${}M capex, {} kW)",
            sig3(b.time_ms()),
            musd(b.capex_usd()),
            sig3(w_to_kw(b.power_w()))
        ),
        Why::SameTime { runner_up } => match runner(runner_up) {
            (other, Some(o)) if b.capex_usd() < o.capex_usd() => format!(
                "{name}: same {} ms as {other} at {}% less capex (${}M vs ${}M)",
                sig3(b.time_ms()),
                pct(1.0 - b.capex_usd() / o.capex_usd()),
                musd(b.capex_usd()),
                musd(o.capex_usd())
            ),
            (other, _) => format!(
                "{name}: same {} ms and capex (${}M) as {other}, listed first",
                sig3(b.time_ms()),
                musd(b.capex_usd())
            ),
        },
        Why::Faster { runner_up } => {
            let (other, o) = runner(runner_up);
            let Some(o) = o else { return String::new() };
            let capex = if b.capex_usd() < o.capex_usd() {
                format!("{}% less capex", pct(1.0 - b.capex_usd() / o.capex_usd()))
            } else if b.capex_usd() > o.capex_usd() {
                format!("{}% more capex", pct(b.capex_usd() / o.capex_usd() - 1.0))
            } else {
                "the same capex".into()
            };
            format!(
                "{name}: {} ms, {}% faster than {other} ({} ms), at {capex} (${}M vs ${}M) and {} vs {} kW of network power",
                sig3(b.time_ms()),
                pct(1.0 - b.time_ms() / o.time_ms()),
                sig3(o.time_ms()),
                musd(b.capex_usd()),
                musd(o.capex_usd()),
                sig3(w_to_kw(b.power_w())),
                sig3(w_to_kw(o.power_w()))
            )
        }
    }
}

fn design(s: &Shape) -> Option<&ShapeBuy> {
    s.outcome.as_ref().ok()
}

/// `name=GB/s` per dimension of a shape's design.
fn bw_text(s: &Shape, b: &ShapeBuy) -> String {
    s.fabric
        .dims
        .iter()
        .zip(&b.comparison.catalog.bw_gbps)
        .map(|(d, x)| format!("{}={}", d.name, x))
        .collect::<Vec<_>>()
        .join(";")
}

/// The section: what was compared, the decision's sentence, one row per
/// shape, and the chart. `within`: the budgets, as the decision says them.
pub fn section(s: &Shapes, npus: u64, within: &str, doc: &mut Doc) {
    doc.heading(2, "Shapes");
    doc.para(format!(
        "{} shapes of the same {npus} NPUs (the study's fabric and each `[[alternative]]`), each bought from the catalog {within} (the catalog MILP's fastest design, ties to the least capex), chosen among on the analytic model and replayed on the best schedules. `shapes.csv` and `shapes.json` have every figure.",
        s.shapes.len()
    ));
    doc.para(format!("**Decision**: {}.", why(s)));
    let chosen = s.chosen.map(|(i, _)| i);
    let rows = s
        .shapes
        .iter()
        .enumerate()
        .map(|(i, sh)| {
            let name = if chosen == Some(i) {
                format!("**{}** (chosen)", sh.name)
            } else {
                sh.name.clone()
            };
            match &sh.outcome {
                Ok(b) => {
                    let (replayed, bound) = b.replayed_ms().map_or(("-".into(), "-".into()), |(r, l)| {
                        (format!("{r:.3}"), format!("{l:.3}"))
                    });
                    vec![
                        name,
                        sh.fabric.shape(),
                        sig3_list(&b.bom.bought_gbps),
                        format!("{:.3}", usd_to_musd(b.capex_usd())),
                        format!("{:.1}", w_to_kw(b.power_w())),
                        format!("{:.3}", b.time_ms()),
                        replayed,
                        bound,
                    ]
                }
                Err(e) => vec![
                    name,
                    sh.fabric.shape(),
                    format!("infeasible: {e}"),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            }
        })
        .collect();
    doc.push(Block::Table(
        [
            "shape",
            "dimensions",
            "GB/s per NPU (bought)",
            "capex ($M)",
            "power (kW)",
            "iteration (ms, analytic)",
            "replayed (ms)",
            "bound (ms)",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows,
    ));
    doc.chart(
        "every shape's catalog frontier: iteration time against capex, each shape's design within the budgets marked",
        CHART,
    );
}

/// `shapes.csv`: one row per shape, provenance in its first columns.
pub fn csv(stamp: &Stamp, s: &Shapes) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "dimsum_version",
        "study_hash",
        "shape",
        "chosen",
        "dims",
        "npus",
        "bw_gbps",
        "capex_usd",
        "power_w",
        "iteration_ms",
        "replayed_ms",
        "lower_bound_ms",
        "feasible",
        "reason",
    ]);
    let chosen = s.chosen.map(|(i, _)| i);
    for (i, sh) in s.shapes.iter().enumerate() {
        let mut row = vec![
            stamp.dimsum_version.clone(),
            stamp.study_hash.clone(),
            sh.name.clone(),
            (chosen == Some(i)).to_string(),
            sh.fabric.shape(),
            sh.fabric.npus().to_string(),
        ];
        match &sh.outcome {
            Ok(b) => {
                let (r, l) = b
                    .replayed_ms()
                    .map_or((String::new(), String::new()), |(r, l)| (r.to_string(), l.to_string()));
                row.extend([
                    bw_text(sh, b),
                    b.capex_usd().to_string(),
                    b.power_w().to_string(),
                    b.time_ms().to_string(),
                    r,
                    l,
                    "true".into(),
                    match &b.replay {
                        Err(e) => format!("not replayed: {e}"),
                        Ok(_) => String::new(),
                    },
                ]);
            }
            Err(e) => row.extend([
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "false".into(),
                e.to_string(),
            ]),
        }
        let _ = w.write_record(&row);
    }
    w.into_inner().unwrap_or_default()
}

/// `shapes.json`: every shape with its design, bill and frontier.
pub fn json(study: &str, stamp: &Stamp, s: &Shapes) -> serde_json::Value {
    let shapes: Vec<serde_json::Value> = s
        .shapes
        .iter()
        .map(|sh| {
            let dims: Vec<&str> = sh.fabric.dims.iter().map(|d| d.name.as_str()).collect();
            match &sh.outcome {
                Ok(b) => json!({
                    "name": sh.name,
                    "dims": sh.fabric.shape(),
                    "dim_names": dims,
                    "npus": sh.fabric.npus(),
                    "feasible": true,
                    "bw_gbps": b.comparison.catalog.bw_gbps,
                    "capex_usd": b.capex_usd(),
                    "power_w": b.power_w(),
                    "iteration_ms": b.time_ms(),
                    "replayed_ms": b.replayed_ms().map(|x| x.0),
                    "lower_bound_ms": b.replayed_ms().map(|x| x.1),
                    "replay_error": b.replay.as_ref().err().map(|e| e.to_string()),
                    "comparison": b.comparison,
                    "bom": b.bom,
                    "frontier": b.frontier.iter().map(|(budget, c)| json!({
                        "budget_usd": budget,
                        "capex_usd": c.catalog.capex_usd,
                        "iteration_ms": c.catalog.iteration_time_ms,
                        "bw_gbps": c.catalog.bw_gbps,
                    })).collect::<Vec<_>>(),
                }),
                Err(e) => json!({
                    "name": sh.name,
                    "dims": sh.fabric.shape(),
                    "dim_names": dims,
                    "npus": sh.fabric.npus(),
                    "feasible": false,
                    "reason": e.to_string(),
                }),
            }
        })
        .collect();
    let chosen = s.chosen().map(|(c, _)| c.name.clone());
    json!({ "stamp": stamp, "study": study, "chosen": chosen, "why": why(s), "shapes": shapes })
}

/// Each shape's frontier as (capex $M, ms) points in order of capex, a
/// design bought at several budgets drawn once.
fn frontier_points(b: &ShapeBuy) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = b
        .frontier
        .iter()
        .map(|(_, c)| (usd_to_musd(c.catalog.capex_usd), c.catalog.iteration_time_ms))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pts.dedup_by(|a, b| a.0.to_bits() == b.0.to_bits() && a.1.to_bits() == b.1.to_bits());
    pts
}

/// `shapes-frontier.svg/png`: every shape's catalog frontier and its
/// design within the budgets, and the capex budget (`budget_usd`) drawn
/// across the designs' time range.
pub fn chart(
    dir: &Path,
    study: &str,
    stamp: &Stamp,
    s: &Shapes,
    budget_usd: Option<f64>,
) -> Result<Chart, ReportError> {
    let chosen = s.chosen.map(|(i, _)| i);
    let mut series: Vec<Series> = Vec::new();
    for (i, sh) in s.shapes.iter().enumerate() {
        if let Ok(b) = &sh.outcome {
            series.push((format!("{}: catalog frontier", sh.name), frontier_points(b)));
            let tag = if chosen == Some(i) { " (chosen)" } else { "" };
            series.push((
                format!("{}: bought within the budgets{tag}", sh.name),
                vec![(usd_to_musd(b.capex_usd()), b.time_ms())],
            ));
        }
    }
    let times = series.iter().flat_map(|(_, p)| p.iter().map(|x| x.1));
    let (lo, hi) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| (a.min(t), b.max(t)));
    if let Some(budget) = budget_usd
        && lo.is_finite()
        && hi.is_finite()
    {
        series.push((
            format!("capex budget (${}M)", musd(budget)),
            vec![(usd_to_musd(budget), lo), (usd_to_musd(budget), hi)],
        ));
    }
    super::line_chart(
        dir,
        CHART,
        &format!("{study}: the fastest design of each shape per capex"),
        "network capex ($M)",
        "iteration time (ms)",
        &series,
        None,
        stamp,
    )
}

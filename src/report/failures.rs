//! What failed parts cost (`pipeline::failures`), rendered: the JSON of
//! `dimsum failures --json` and `failures.json`, the "When parts fail"
//! section of a study's report, and the terminal's table (the same
//! section's Markdown).

use super::doc::{Block, Doc};
use super::{sig3, thousands};
use crate::io::Stamp;
use crate::pipeline::failures::{FailureCase, FailureResults};
use crate::study::Study;
use serde_json::{Value, json};

/// The results as one JSON object, headed by its format and stamp.
pub fn json(study: &Study, stamp: &Stamp, r: &FailureResults) -> Value {
    json!({
        "format": "dimsum-failures/1",
        "stamp": stamp,
        "study": study.name,
        "fabric": study.fabric.shape(),
        "bw_gbps": r.bw_gbps,
        "healthy_ms": r.healthy_ms,
        "healthy_bound_ms": r.healthy_bound_ms,
        "failures": r.failures,
        "parts": r.parts,
        "failures_per_day": r.failures_per_day,
        "unknown_mtbf": r.unknown_mtbf,
        "reliability": r.reliability,
        "goodput": r.goodput,
    })
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "unknown".to_string(), f)
}

/// One case's row: dimension, part, remedy, time, slowdown, rate, method.
fn row(c: &FailureCase) -> Vec<String> {
    let method = match c.collectives.is_empty() {
        true => "none re-timed".to_string(),
        false if c.estimate => "estimate (closed form)".to_string(),
        false => "replayed".to_string(),
    };
    vec![
        c.dimension.clone(),
        c.part.name().to_string(),
        c.remedy.name().to_string(),
        c.iteration_time_ms.map_or_else(|| "stops: restart".to_string(), sig3),
        c.slowdown.map_or_else(|| "-".to_string(), |s| format!("{s:.3}x")),
        opt(c.failures_per_day, |f| format!("{f:.4}")),
        method,
    ]
}

/// The section's blocks, under a heading of `level`.
pub fn section(study: &Study, r: &FailureResults, level: u8, doc: &mut Doc) {
    doc.heading(level, "When parts fail");
    doc.push(Block::Para(vec![format!(
        "On {} at {} GB/s per NPU, the iteration takes {} ms healthy (lower bound {} ms). Each row is one part failed in one group, the group rebuilt around it (`remedy`), every collective that uses the dimension re-timed on the failed group (the fastest of the ring, bidirectional-ring and direct schedules replayed, their certified bounds in `failures.json`), and the iteration as slow as that group. The failures a day count the bill's parts with a catalog MTBF; unknown where the catalog has none.",
        study.fabric.shape(),
        super::sig3_list(&r.bw_gbps),
        sig3(r.healthy_ms),
        sig3(r.healthy_bound_ms),
    )]));
    let head = [
        "dimension",
        "part",
        "remedy",
        "iteration (ms)",
        "slowdown",
        "failures / day",
        "method",
    ];
    doc.push(Block::Table(
        head.iter().map(|h| h.to_string()).collect(),
        r.failures.iter().map(row).collect(),
    ));
    if !r.parts.is_empty() {
        let rows = r
            .parts
            .iter()
            .map(|p| {
                vec![
                    p.dimension.clone(),
                    p.component.clone(),
                    p.role.clone(),
                    thousands(p.quantity),
                    opt(p.mtbf_h, |h| thousands(h.round() as u64)),
                    opt(p.failures_per_day, |f| format!("{f:.4}")),
                ]
            })
            .collect();
        let head = ["dimension", "part", "role", "quantity", "MTBF (h)", "failures / day"];
        doc.push(Block::Table(head.iter().map(|h| h.to_string()).collect(), rows));
    }
    let mut lines = Vec::new();
    if let Some(f) = r.failures_per_day {
        lines.push(format!(
            "Expected failures a day, the parts with an MTBF: {f:.3} (one every {} h).",
            if f > 0.0 { sig3(24.0 / f) } else { "-".into() }
        ));
    }
    if !r.unknown_mtbf.is_empty() {
        lines.push(format!(
            "No MTBF in the catalog (not counted): {}.",
            r.unknown_mtbf.join(", ")
        ));
    }
    if let (Some(rel), Some(g)) = (&r.reliability, &r.goodput) {
        lines.push(format!(
            "Checkpoint every {} min, {} s to write, {} min to restart: λ(τ/2 + R) + δ/τ = {:.4} of the time lost, goodput {:.2}%{} (the network's parts alone: GPUs and hosts, most of Llama 3's interruptions, are not in the fabric's bill).",
            sig3(rel.checkpoint_interval_min),
            sig3(rel.checkpoint_write_s),
            sig3(rel.restart_min),
            g.lost_fraction,
            g.goodput * 100.0,
            g.young_interval_min
                .map_or_else(String::new, |m| format!(" (Young's interval: {} min)", sig3(m))),
        ));
    }
    if !lines.is_empty() {
        doc.push(Block::Para(lines));
    }
}

/// The terminal's rendering: the section's Markdown.
pub fn text(study: &Study, r: &FailureResults) -> String {
    let mut doc = Doc::default();
    section(study, r, 2, &mut doc);
    doc.markdown()
}

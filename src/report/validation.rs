//! `dimsum validate`: a validation file's runs, predicted beside the
//! published throughput, as Markdown, JSON and a chart (throughput per GPU
//! against model size, published and predicted).

use super::{Chart, ReportError, line_chart, sig3};
use crate::io::{Stamp, write_atomic};
use crate::pipeline::validate::{FlopCount, Run, Validation};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The runs in billions of parameters (the model's own count).
fn billions(v: &Validation) -> Vec<f64> {
    v.predictions.iter().map(|p| p.params_b).collect()
}

/// The Markdown page.
pub fn markdown(v: &Validation, stamp: &Stamp, input: &str) -> String {
    let mut s = String::new();
    preamble(v, stamp, input, &mut s);
    runs_table(v, &mut s);
    notes(v, &mut s);
    rechosen_table(v, &mut s);
    s
}

/// The title, the stamp and input, the runs' source, the cluster and the
/// calibration with the efficiency that would fit the runs best.
fn preamble(v: &Validation, stamp: &Stamp, input: &str, s: &mut String) {
    let p = &v.published;
    let _ = writeln!(s, "# Validation: {}\n", p.description);
    let _ = writeln!(s, "{} · input `{input}`\n", stamp.line());
    let _ = writeln!(s, "Runs: {}.\n", p.source);
    let c = &p.cluster;
    let _ = writeln!(
        s,
        "Cluster: `{}`, {} GPUs per node at {} GB/s per GPU per direction ({} us per step), \
         nodes on a network at {} GB/s per GPU per direction ({} us per step), collectives timed \
         `{}`. {}.\n",
        c.npu,
        c.node_gpus,
        c.node_gbps,
        c.node_latency_us,
        c.network_gbps,
        c.network_latency_us,
        c.time_model,
        c.source
    );
    let _ = writeln!(
        s,
        "Calibration: large matrix products at {} of the {} peak, streaming kernels at {} of \
         the HBM bandwidth (the accelerator table's figures, one pair per accelerator type and \
         precision, the same for every run). The efficiency that would minimise the largest \
         error on these runs is {} (largest error {}%).\n",
        sig3(v.gemm_efficiency),
        v.precision.to_string().to_uppercase(),
        sig3(v.memory_efficiency),
        sig3(v.best_fit.0),
        sig3(100.0 * v.best_fit.1)
    );
}

/// One row per run: its strategy and recipe, the predicted iteration, its
/// compute and memory, and throughput published and predicted.
fn runs_table(v: &Validation, s: &mut String) {
    s.push_str(
        "| run | params (B) | TP | PP | DP | micro-batch | micro-batches | v | recompute | iteration (ms) | of which compute (ms) | memory (GiB) | published TF/s | dimsum TF/s | error |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (x, b) in v.predictions.iter().zip(billions(v)) {
        let r = &x.run;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:+.1}% |",
            r.name,
            sig3(b),
            r.tp,
            r.pp,
            x.dp,
            r.micro_batch,
            x.micro_batches,
            r.virtual_stages,
            r.recompute,
            sig3(x.iteration_ms),
            sig3(x.compute_ms),
            sig3(x.memory_gib),
            sig3(r.measured_tflops),
            sig3(x.predicted_tflops),
            100.0 * x.error
        );
    }
}

/// Below the table: what the columns do not show, runs over their HBM,
/// the errors, and how `flops = "published"` runs are counted.
fn notes(v: &Validation, s: &mut String) {
    let special: Vec<String> = v.predictions.iter().filter_map(|x| beyond_columns(&x.run)).collect();
    if !special.is_empty() {
        let _ = writeln!(
            s,
            "\nModels and recipes beyond the table's columns: {}.",
            special.join("; ")
        );
    }
    let over: Vec<String> = v
        .predictions
        .iter()
        .filter(|x| x.memory_gib > x.hbm_gib)
        .map(|x| format!("{} ({} GiB of {})", x.run.name, sig3(x.memory_gib), sig3(x.hbm_gib)))
        .collect();
    if !over.is_empty() {
        let _ = writeln!(
            s,
            "\n**Memory over the HBM by dimsum's model** (each ran on its GPUs, so the memory model overestimates it; timed as if it fitted): {}.",
            over.join("; ")
        );
    }
    let _ = writeln!(s, "\nErrors: {}.", v.errors_line());
    if v.predictions.iter().any(|x| x.run.flops == FlopCount::Published) {
        let _ = writeln!(
            s,
            "\nRuns marked `flops = \"published\"` take the table's own FLOPs per token (its TFLOP/s over its tokens/s), so their error is the error in tokens per second."
        );
    }
}

/// What a run sets beyond the table's columns (a preset, EP, CP, a
/// precision, an order, a capacity factor, overlaps), as `name (...)`;
/// `None` when nothing.
fn beyond_columns(r: &Run) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = &r.preset {
        parts.push(format!("model `{p}`"));
    }
    if r.ep > 1 {
        parts.push(format!("EP {}", r.ep));
    }
    if r.cp > 1 {
        parts.push(format!("CP {}", r.cp));
    }
    if !r.precision.is_bf16() {
        parts.push(r.precision.to_string().to_uppercase());
    }
    if let Some(o) = &r.order {
        parts.push(format!("order {o}"));
    }
    if let Some(c) = r.capacity_factor {
        parts.push(format!("capacity factor {c}"));
    }
    for (on, what) in [
        (r.tp_overlap, "TP overlap"),
        (r.prefetch, "ZeRO-3 prefetch"),
        (r.ep_overlap, "EP overlap"),
    ] {
        if on {
            parts.push(what.into());
        }
    }
    (!parts.is_empty()).then(|| format!("{} ({})", r.name, parts.join(", ")))
}

/// Each run's strategy searched again by `coopt`, beside the published one
/// (nothing when the file searches none).
fn rechosen_table(v: &Validation, s: &mut String) {
    if v.rechosen.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Each run's strategy searched again\n\n`coopt` on each run's cluster as built (every TP x PP x DP and placement order, EP for a mixture of experts, CP on sequences of {} tokens and more, with the run's own recipe: micro-batch, recomputation, ZeRO, virtual stages, precision), each candidate timed as the run is predicted above.\n",
        crate::pipeline::validate::LONG_SEQUENCE
    );
    s.push_str("| run | published | published (ms) | coopt's best (order) | best (ms) | faster | memory (GiB) | searched / solved / pruned / invalid |\n");
    s.push_str("|---|---|---|---|---|---|---|---|\n");
    for (x, rc) in v.predictions.iter().zip(&v.rechosen) {
        let r = &x.run;
        let (best, best_ms, mem) = rc.best.as_ref().map_or(("-".to_string(), None, None), |b| {
            (format!("{} ({})", b.degrees(), b.order), b.time_ms(), b.memory_gib)
        });
        let faster = rc
            .published_ms
            .zip(best_ms)
            .map_or("-".to_string(), |(p, b)| format!("{:.3}x", p / b));
        if rc.skipped {
            let _ = writeln!(
                s,
                "| {} | - | - | not searched: {} GPUs, over the file's `rechoose_max_gpus` ({}) | - | - | - | - |",
                rc.run,
                r.gpus,
                v.published.rechoose_max_gpus.unwrap_or(0)
            );
            continue;
        }
        let [a, b, c, d] = rc.counts;
        let _ = writeln!(
            s,
            "| {} | tp {} pp {} dp {}{}{} | {} | {best} | {} | {faster} | {} | {a} / {b} / {c} / {d} |",
            rc.run,
            r.tp,
            r.pp,
            x.dp,
            if r.ep > 1 {
                format!(" ep {}", r.ep)
            } else {
                String::new()
            },
            if r.cp > 1 {
                format!(" cp {}", r.cp)
            } else {
                String::new()
            },
            rc.published_ms.map_or("-".to_string(), sig3),
            best_ms.map_or("-".to_string(), sig3),
            mem.map_or("-".to_string(), sig3),
        );
    }
}

/// The throughput chart.
pub fn chart(v: &Validation, dir: &Path, stamp: &Stamp) -> Result<Chart, ReportError> {
    let x = billions(v);
    let published = x
        .iter()
        .zip(&v.predictions)
        .map(|(b, p)| (*b, p.run.measured_tflops))
        .collect();
    let predicted = x
        .iter()
        .zip(&v.predictions)
        .map(|(b, p)| (*b, p.predicted_tflops))
        .collect();
    line_chart(
        dir,
        &format!("{}-throughput", v.published.name),
        &format!("{}: TFLOP/s per GPU", v.published.name),
        "parameters (billions)",
        "TFLOP/s per GPU",
        &[("published".into(), published), ("dimsum".into(), predicted)],
        None,
        stamp,
    )
}

/// Writes `NAME.md`, `NAME.json` and the chart into `dir`.
pub fn write(v: &Validation, stamp: &Stamp, input: &str, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let name = &v.published.name;
    let md = dir.join(format!("{name}.md"));
    write_atomic(&md, markdown(v, stamp, input).as_bytes())?;
    let json = dir.join(format!("{name}.json"));
    let value = serde_json::json!({
        "format": "dimsum-validation/1",
        "dimsum_version": stamp.dimsum_version,
        "input": input,
        "input_hash": stamp.study_hash,
        "units": {"iteration_ms": "ms", "compute_ms": "ms", "memory_gib": "GiB", "tflops": "TFLOP/s per GPU"},
        "validation": v,
    });
    let text = serde_json::to_string_pretty(&value).map_err(|source| ReportError::Json {
        path: json.clone(),
        source,
    })?;
    write_atomic(&json, text.as_bytes())?;
    let c = chart(v, dir, stamp)?;
    let mut files = vec![md, json];
    files.extend(c.files);
    Ok(files)
}

/// Every checked validation's files written into `out`, landing together
/// after the last is written (reported to `progress` as `report`): one
/// line per validation, its errors and the file it wrote.
pub fn write_all(
    checked: &[crate::pipeline::validate::Checked],
    out: &Path,
    progress: crate::progress::Progress,
) -> Result<Vec<String>, ReportError> {
    let staged = crate::io::Staged::new(out)?;
    let mut lines = Vec::new();
    for (i, c) in checked.iter().enumerate() {
        progress.progress("report", i, checked.len());
        let files = write(&c.validation, &c.stamp, &c.input, staged.dir())?;
        let v = &c.validation;
        let first = files.first().map(|f| staged.final_path(f)).unwrap_or_default();
        lines.push(format!(
            "{}: {}; wrote {}",
            v.published.name,
            v.errors_line(),
            first.display()
        ));
    }
    staged.commit()?;
    Ok(lines)
}

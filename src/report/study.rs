//! The files of `dimsum run`, rendered from a study's typed results
//! ([`StudyResults`]): `summary.md` and `report.html` (one [`Doc`], two
//! renderers), the JSON documents (`optimize.json`, `scheduled.json`,
//! `bom.json`, `eval.json`, `coopt.json`), the CSV tables and the charts.
//! Nothing here solves anything or reads back a file it wrote.

use super::doc::{Block, Doc};
use super::{Chart, ReportError, Series, gbps_both, sig3, sig3_list, thousands};
use crate::error::Named;
use crate::io::{Stamp, write_atomic};
use crate::model::bom::{Bom, DimBom, Procurement};
use crate::model::catalog::kind_label;
use crate::model::units::{ns_to_ms, usd_to_musd, w_to_kw};
use crate::optimize::catalog::{Comparison, Goal};
use crate::optimize::frontier::Axis;
use crate::optimize::scheduled::{FrontierRow, Measured};
use crate::pipeline::coopt::{self, Coopt};
use crate::pipeline::procure::{Pricing, Procured};
use crate::pipeline::run::{FixedDesign, FrontierResults, Recommended, ScheduledOptimum, StudyResults, SweepResults};
use crate::study::Study;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn cells<const N: usize>(c: [String; N]) -> Vec<String> {
    c.into()
}

/// A row of `width` cells: `cells`, then empty ones (a failed design's row).
fn padded(mut cells: Vec<String>, width: usize) -> Vec<String> {
    cells.resize(width, String::new());
    cells
}

fn header(h: &[&str]) -> Vec<String> {
    h.iter().map(|s| s.to_string()).collect()
}

/// What the renderer has written so far: the files, and every chart's SVG
/// for the HTML page.
struct Out<'a> {
    dir: &'a Path,
    files: Vec<PathBuf>,
    svgs: BTreeMap<String, String>,
}

impl Out<'_> {
    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), ReportError> {
        let path = self.dir.join(name);
        write_atomic(&path, bytes)?;
        self.files.push(path);
        Ok(())
    }

    /// Writes `v` as `name`, headed (when it does not say already) by its
    /// format, `dimsum-<file stem>/1`.
    fn json(&mut self, name: &str, v: &serde_json::Value) -> Result<(), ReportError> {
        let mut v = v.clone();
        if let serde_json::Value::Object(o) = &mut v
            && !o.contains_key("format")
        {
            let stem = name.trim_end_matches(".json");
            o.insert("format".into(), format!("dimsum-{stem}/1").into());
        }
        let text = serde_json::to_string_pretty(&v).map_err(|source| ReportError::Json {
            path: self.dir.join(name),
            source,
        })?;
        self.write(name, text.as_bytes())
    }

    fn charts(&mut self, charts: impl IntoIterator<Item = Chart>) {
        for c in charts {
            self.files.extend(c.files);
            self.svgs.insert(c.stem, c.svg);
        }
    }
}

/// Writes every file of `r` into `dir`; returns the files written, the
/// summary first.
pub fn write(study: &Study, r: &StudyResults, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out {
        dir,
        files: Vec::new(),
        svgs: BTreeMap::new(),
    };
    let mut doc = Doc::default();
    asked(study, r, &mut doc);
    if let Some(p) = &r.procurement {
        decision(study, p, r.shapes.as_ref(), &mut doc);
    }
    if let Some(s) = &r.shapes {
        shapes(study, &r.stamp, s, &mut doc, &mut out)?;
    }
    recommended(study, r, &mut doc, &mut out)?;
    if let Some(s) = &r.scheduled {
        scheduled(study, r, s, &mut doc, &mut out)?;
    }
    if let Some(p) = &r.procurement {
        procurement(study, &r.stamp, p, &mut doc, &mut out)?;
    }
    if let Some(f) = &r.failures {
        super::failures::section(study, f, 2, &mut doc);
        out.json("failures.json", &super::failures::json(study, &r.stamp, f))?;
    }
    fixed(study, &r.stamp, &r.fixed, &mut doc, &mut out)?;
    for f in &r.frontiers {
        frontier(study, &r.stamp, f, &mut doc, &mut out)?;
    }
    for s in &r.sweeps {
        sweep(study, s, &mut doc);
    }
    if let Some(c) = &r.coopt {
        coopt_section(study, &r.stamp, c, r, &mut doc, &mut out)?;
    }
    out.write("summary.md", doc.markdown().as_bytes())?;
    let summary = out.files.pop().unwrap_or_default();
    let page = super::html::render(
        &doc,
        &format!("{}: network fabric design review", study.name),
        &out.svgs,
    );
    out.write("report.html", page.as_bytes())?;
    let mut files = vec![summary];
    files.append(&mut out.files);
    Ok(files)
}

/// The title, the stamp and what the study asked.
fn asked(study: &Study, r: &StudyResults, doc: &mut Doc) {
    let names: Vec<String> = study.fabric.dims.iter().map(|d| format!("`{}`", d.name)).collect();
    doc.heading(1, format!("{}: network fabric design", study.name));
    doc.push(Block::Stamp(format!(
        "{}; regenerate with `dimsum run {}`.",
        r.stamp.line(),
        study.path.display()
    )));
    doc.heading(2, "What was asked");
    if !study.description.is_empty() {
        doc.push(Block::Para(study.description.lines().map(String::from).collect()));
    }
    let cons: Vec<String> = r.problem.constraints.iter().map(|c| format!("`{}`", c.text)).collect();
    let mut fabric = vec![format!(
        "Fabric: {} = {} NPUs; dimensions {}.",
        study.fabric.shape(),
        study.fabric.npus(),
        names.join(", ")
    )];
    fabric.extend(study.alternatives.iter().map(|a| {
        let dims: Vec<String> = a.fabric.dims.iter().map(|d| format!("`{}`", d.name)).collect();
        format!(
            "Alternative `{}`: {}; dimensions {}.",
            a.name,
            a.fabric.shape(),
            dims.join(", ")
        )
    }));
    fabric.extend([
        format!(
            "Workload: {}, {} collectives, {:.3} ms of compute per iteration; time model `{}`, loop `{}`.",
            workload_size(study),
            study.workload.comms().count(),
            ns_to_ms(study.workload.compute_ns()),
            study.collective.time_model.name(),
            study.training_loop.name()
        ),
        format!(
            "Constraints: {}.",
            if cons.is_empty() {
                "none".to_string()
            } else {
                cons.join(", ")
            }
        ),
    ]);
    doc.push(Block::List(fabric));
    if !study.warnings.is_empty() {
        doc.para("Warnings on the study (allowed, but check them):");
        doc.push(Block::List(study.warnings.clone()));
    }
}

/// How big the workload is, in the study's own terms: a generated model's
/// transformer layers (the workload's records are its kernels' phases,
/// not layers), else the workload file's layers.
fn workload_size(study: &Study) -> String {
    match &study.model {
        Some(m) => format!(
            "`{}`, {} transformer layers ({} records in the generated iteration)",
            m.name,
            m.layers,
            study.workload.layers.len()
        ),
        None => format!("{} layers", study.workload.layers.len()),
    }
}

/// What the continuous relaxation of a catalog answer certifies: a time
/// no design within the budgets beats (perf), a capex or a power no design
/// meeting the target goes under (min-cost, min-power).
fn bound_cell(goal: Option<Goal>, c: &Comparison) -> String {
    let k = &c.catalog;
    match goal {
        Some(Goal::Perf) => format!(">= {:.3} ms", c.continuous.iteration_time_ms.min(k.iteration_time_ms)),
        Some(Goal::MinCapex { .. }) => format!(
            ">= ${}M",
            sig3(usd_to_musd(c.continuous.network_cost_usd.min(k.capex_usd)))
        ),
        Some(Goal::MinPower { .. }) => format!(">= {} kW", sig3(w_to_kw(c.continuous.network_power_w.min(k.power_w)))),
        None => "-".into(),
    }
}

/// [`bound_cell`] as a sentence.
fn bound_sentence(goal: Option<Goal>, c: &Comparison) -> String {
    let k = &c.catalog;
    match goal {
        Some(Goal::Perf) => format!(
            "No design within the same budgets is faster than {:.3} ms in the analytic model, even at the catalog's cheapest $ per GB/s (the continuous bound).",
            c.continuous.iteration_time_ms.min(k.iteration_time_ms)
        ),
        Some(Goal::MinCapex { target_ms }) => format!(
            "No design meeting its {target_ms} ms target costs less than ${}M, even at the catalog's cheapest $ per GB/s (the continuous bound).",
            sig3(usd_to_musd(c.continuous.network_cost_usd.min(k.capex_usd)))
        ),
        Some(Goal::MinPower { target_ms }) => format!(
            "No design meeting its {target_ms} ms target draws less than {} kW, even at the catalog's least W per GB/s (the continuous bound).",
            sig3(w_to_kw(c.continuous.network_power_w.min(k.power_w)))
        ),
        None => String::new(),
    }
}

/// The decision first: the design to buy (the catalog's answer to the
/// study's first objective it answers), every objective's bought answer
/// beside it with what the next faster purchasable design costs, and red
/// flags on the continuous optima.
fn decision(study: &Study, p: &Procured, shapes: Option<&crate::pipeline::shapes::Shapes>, doc: &mut Doc) {
    let spec = study.procurement();
    let names: Vec<&str> = study.fabric.dims.iter().map(|d| d.name.as_str()).collect();
    let within = within_budgets(&spec);
    doc.heading(2, "The decision");
    if let Some(s) = shapes {
        shape_first(s, doc);
    }
    design_to_buy(study, p, &spec, &names, &within, doc);
    answers_table(p, &names, doc);
    replayed(study, p, doc);
    red_flags(p, doc);
}

/// With `[[alternative]]`, the decision opens with the shape to buy; when
/// it is not the study's own fabric, the design that follows is named as
/// that fabric's, and the chosen shape's design is in the Shapes section.
fn shape_first(s: &crate::pipeline::shapes::Shapes, doc: &mut Doc) {
    let why = super::shapes::why(s);
    // The study's own fabric is the first shape.
    let own = &s.shapes[0].name;
    match s.chosen {
        Some((i, _)) if i != 0 => doc.para(format!(
            "**Shape to buy** — {why}. The Shapes section below has its design, frontier and replay; what follows here is the design of the study's own fabric (`{own}`), for comparison."
        )),
        Some(_) => doc.para(format!("**Shape to buy** — {why}.")),
        None => doc.para(format!("**No shape to buy**: {why}.")),
    }
}

/// The shapes compared (`[[alternative]]`): the section, `shapes.csv`,
/// `shapes.json` and the chart of their frontiers.
fn shapes(
    study: &Study,
    stamp: &Stamp,
    s: &crate::pipeline::shapes::Shapes,
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    let spec = study.procurement();
    let within = within_budgets(&spec);
    super::shapes::section(s, study.fabric.npus(), &within, doc);
    out.write("shapes.csv", &super::shapes::csv(stamp, s))?;
    out.json("shapes.json", &super::shapes::json(&study.name, stamp, s))?;
    out.charts([super::shapes::chart(out.dir, &study.name, stamp, s, spec.budget_usd)?]);
    Ok(())
}

/// Where the catalog's answers lie: within the budgets of `spec` (capex,
/// power) and the dimensions' caps.
fn within_budgets(spec: &Procurement) -> String {
    let budgets: Vec<String> = [
        spec.budget_usd.map(|b| format!("${}M capex", sig3(usd_to_musd(b)))),
        spec.budget_w.map(|b| format!("{} kW", sig3(w_to_kw(b)))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if budgets.is_empty() {
        "within the dimensions' caps (no budget set)".to_string()
    } else {
        format!("within {} and the dimensions' caps", budgets.join(" and "))
    }
}

/// The design to buy, with its time (replayed when it was), capex, power,
/// the bound on what any design could do, and what to buy per dimension;
/// or that the catalog sells none `within` the budgets.
fn design_to_buy(study: &Study, p: &Procured, spec: &Procurement, names: &[&str], within: &str, doc: &mut Doc) {
    match p.decided() {
        Some((a, c, b)) => {
            let k = &c.catalog;
            let model = study.collective.time_model.name();
            let time = match &p.replay {
                Some(Ok(m)) => format!(
                    "**{:.3} ms per iteration** replayed on the best schedule dimsum builds for each collective (no schedule makes it faster than {:.3} ms: every collective at the exact cut of its group's links); the catalog's `{}` optimum {within} (MILP, gap {:.0e}), chosen on the study's `{model}` analytic model, which puts it at {:.3} ms ({} against the replay)",
                    ns_to_ms(m.iteration_ns),
                    ns_to_ms(m.lower_bound_ns),
                    a.objective,
                    k.mip_rel_gap,
                    k.iteration_time_ms,
                    signed_pct(ns_to_ms(m.analytic_iteration_ns), ns_to_ms(m.iteration_ns)),
                ),
                Some(Err(e)) => format!(
                    "{:.3} ms per iteration in the study's `{model}` analytic model (not replayed: {e}); the catalog's `{}` optimum {within} (MILP, gap {:.0e})",
                    k.iteration_time_ms, a.objective, k.mip_rel_gap,
                ),
                None => format!(
                    "{:.3} ms per iteration in the study's `{model}` analytic model; the catalog's `{}` optimum {within} (MILP, gap {:.0e})",
                    k.iteration_time_ms, a.objective, k.mip_rel_gap,
                ),
            };
            doc.para(format!(
                "Buy **{} GB/s per NPU** ({}): ${}M network capex, {} kW, {time}. {} Parts: the list below, the decision's bill of materials further down, and `bom.json`.",
                sig3_list(&b.bought_gbps),
                names.join(", "),
                sig3(usd_to_musd(b.capex_usd)),
                sig3(w_to_kw(b.power_w)),
                bound_sentence(a.goal, c),
            ));
            doc.para("What to buy, per dimension:");
            doc.push(Block::List(what_to_buy(study, spec, b)));
        }
        None => doc.para(format!(
            "The catalog sells no design {within} for any of the study's objectives."
        )),
    }
}

/// Every objective's bought answer: its bandwidths, time (the decision's
/// with its replay), bound, capex, power and the next faster purchasable
/// design; or why the catalog has none.
fn answers_table(p: &Procured, names: &[&str], doc: &mut Doc) {
    let mut rows = Vec::new();
    let decided = p.decision.map(|d| d.answer);
    for (i, a) in p.answers.iter().enumerate() {
        let time = |t: f64| match &p.replay {
            Some(Ok(m)) if decided == Some(i) => format!("{t:.3} (replayed {:.3})", ns_to_ms(m.iteration_ns)),
            _ => format!("{t:.3}"),
        };
        match &a.outcome {
            Ok((c, b)) => rows.push(cells([
                format!("`{}` bought", a.objective),
                sig3_list(&b.bought_gbps),
                time(c.catalog.iteration_time_ms),
                bound_cell(a.goal, c),
                format!("{:.3}", usd_to_musd(b.capex_usd)),
                format!("{:.1}", w_to_kw(b.power_w)),
                a.next.as_ref().map_or("- (the fastest purchasable)".into(), |n| {
                    format!(
                        "{:.3} ms for ${}M: {} ms per extra $1M",
                        n.time_ms,
                        sig3(usd_to_musd(n.capex_usd)),
                        sig3(n.ms_per_musd)
                    )
                }),
            ])),
            Err(e) => rows.push(padded(vec![format!("`{}` bought", a.objective), e.to_string()], 7)),
        }
    }
    doc.push(Block::Table(
        vec![
            "design".into(),
            format!("GB/s per NPU ({})", names.join(", ")),
            "iteration (ms, analytic)".into(),
            "bound (continuous relaxation)".into(),
            "capex ($M)".into(),
            "power (kW)".into(),
            "next faster purchasable design".into(),
        ],
        rows,
    ));
}

/// Red flags: continuous optima that cannot be bought as they stand, and a
/// decision buying scale-up parts where a server may ship them.
fn red_flags(p: &Procured, doc: &mut Doc) {
    let mut red: Vec<String> = Vec::new();
    for b in &p.bought {
        if !b.flags.is_empty() {
            let what: Vec<String> = b.flags.iter().map(super::flag_text).collect();
            red.push(format!(
                "The continuous `{}` optimum ({} GB/s per NPU, linear $ per GB/s) {}.",
                b.objective,
                sig3_list(&b.asked),
                what.join("; ")
            ));
        }
    }
    if let Some((_, _, b)) = p.decided() {
        let bare: Vec<String> = b
            .dims
            .iter()
            .filter(|d| d.kind == "scale-up")
            .map(|d| format!("`{}`", d.dimension))
            .collect();
        if !bare.is_empty() {
            red.push(format!(
                "The decision buys {} from NVLink-class scale-up parts with no server named: if these GPUs come in servers that ship their scale-up fabric (an HGX baseboard, say), name it with `[procurement.dims.NAME] server` so it is neither bought twice nor cabled.",
                bare.join(", ")
            ));
        }
    }
    if red.is_empty() {
        doc.para("Red flags: none. Every continuous optimum below can be bought within the budgets and caps.");
    } else {
        doc.para("Red flags (designs not to buy as they stand):");
        doc.push(Block::List(red));
    }
}

/// One line per dimension of a bought design: the technology (declared by
/// the study's `tech`, or the cheapest), ports per NPU and their model,
/// switches (count, model, tiers), cables by type; or the servers a
/// scale-up dimension comes with.
pub(crate) fn what_to_buy(study: &Study, spec: &Procurement, b: &Bom) -> Vec<String> {
    b.dims
        .iter()
        .enumerate()
        .map(|(d, db)| {
            let dim = &study.fabric.dims[d];
            let head = format!("`{}` ({}({}))", db.dimension, dim.block_name(), dim.npus);
            if let Some(s) = b.servers.iter().find(|s| s.dimension == db.dimension) {
                let money = match s.capex_usd() {
                    Some(c) => format!("${}M", sig3(usd_to_musd(c))),
                    None => "price not in the catalog (a quote is needed)".into(),
                };
                return format!(
                    "{head}: comes with {} `{}` servers, {}: {} per GPU per direction, fixed; servers {money}, {} kW at most, beside the network (not in its budget).",
                    thousands(s.quantity),
                    s.server,
                    s.link,
                    gbps_both(s.gbps),
                    sig3(w_to_kw(s.power_w()))
                );
            }
            dim_line(&head, spec.dims[d].tech.is_some(), db)
        })
        .collect()
}

/// A dimension bought from network parts, as one line.
fn dim_line(head: &str, declared: bool, db: &DimBom) -> String {
    if db.items.is_empty() {
        return format!("{head}: nothing bought.");
    }
    let tech = format!(
        "{} ({})",
        kind_label(&db.kind),
        if declared {
            "as the study's `tech` asks"
        } else {
            "the cheapest: no `tech` set"
        }
    );
    let mut parts = vec![format!(
        "{} `{}` port{} per NPU ({} per NPU)",
        db.ports_per_npu,
        db.port,
        if db.ports_per_npu == 1 { "" } else { "s" },
        gbps_both(db.bought_gbps)
    )];
    if let Some(sw) = &db.switch {
        parts.push(if sw.tiers == 1 {
            format!("{} `{}` switches (one tier)", thousands(sw.leaves), sw.model)
        } else if sw.tiers > 2 {
            format!(
                "{} leaf + {} spine + {} core `{}` switches ({} tiers)",
                thousands(sw.leaves),
                thousands(sw.spines),
                thousands(sw.core),
                sw.model,
                sw.tiers
            )
        } else {
            format!(
                "{} leaf + {} spine `{}` switches (two tiers)",
                thousands(sw.leaves),
                thousands(sw.spines),
                sw.model
            )
        });
    }
    for i in db.items.iter().filter(|i| i.kind == "cable") {
        parts.push(format!("{} `{}` {}", thousands(i.quantity), i.component, i.role));
    }
    format!(
        "{head}: {tech}: {}; ${}M, {} kW.",
        parts.join("; "),
        sig3(usd_to_musd(db.capex_usd)),
        sig3(w_to_kw(db.power_w))
    )
}

/// How a time `t` compares with a `reference` time, as words that never
/// call a slower design faster: `1.05x faster than`, `1.005x slower
/// than`, `as fast as`.
pub(crate) fn faster(reference: f64, t: f64) -> String {
    let r = reference / t;
    if !r.is_finite() {
        "not comparable with".into()
    } else if (r - 1.0).abs() < 5e-4 {
        "as fast as".into()
    } else if r > 1.0 {
        format!("{r:.3}x faster than")
    } else {
        format!("{:.3}x slower than", 1.0 / r)
    }
}

/// `a` against `b` as a signed percentage (`+1.2%`: `a` is larger).
fn signed_pct(a: f64, b: f64) -> String {
    let pct = 100.0 * (a / b - 1.0);
    if !pct.is_finite() {
        "-".into()
    } else if pct.abs() < 0.05 {
        "0.0%".into()
    } else {
        format!("{pct:+.1}%")
    }
}

/// The decision's collectives as replayed: each on its best schedule beside
/// the analytic model's time and the certified bound.
fn replayed(study: &Study, p: &Procured, doc: &mut Doc) {
    let Some(Ok(m)) = &p.replay else { return };
    doc.para(format!(
        "The decision replayed (`{}` link model, every distinct collective of the iteration on its best schedule; the analytic column is the `{}` model the optimizer reads):",
        study.evaluator.link_model.as_name(),
        study.collective.time_model.name(),
    ));
    replay_table(m, doc);
}

/// Every distinct collective of a replayed iteration: its schedule and
/// replayed time beside its certified bound and the analytic model's time.
fn replay_table(m: &Measured, doc: &mut Doc) {
    let rows = m
        .collectives
        .iter()
        .map(|c| {
            cells([
                c.kind.name().to_string(),
                sig3(c.bytes),
                format!("{:?}", c.group),
                c.count.to_string(),
                format!("`{}`", c.algorithm),
                format!("{:.4}", c.simulated_ms),
                format!("{:.4}", c.lower_bound_ms),
                format!("{:.4}", c.analytic_ms),
                signed_pct(c.analytic_ms, c.simulated_ms),
            ])
        })
        .collect();
    doc.push(Block::Table(
        header(&[
            "collective",
            "bytes",
            "group",
            "count",
            "schedule",
            "replayed (ms)",
            "bound (ms)",
            "analytic (ms)",
            "analytic error",
        ]),
        rows,
    ));
}

/// The recommended allocation per objective; `optimize.json`.
fn recommended(study: &Study, r: &StudyResults, doc: &mut Doc, out: &mut Out) -> Result<(), ReportError> {
    let names: Vec<&str> = study.fabric.dims.iter().map(|d| d.name.as_str()).collect();
    if r.procurement.is_some() {
        // The decision above is the catalog's; this is the continuous one.
        doc.heading(2, "Continuous optimum per objective (linear $ per GB/s)");
        doc.para(
            "The same objectives with every dimension's bandwidth continuous and priced linearly by the study's `[cost]` tiers: a fast approximation, not a purchase (the decision above is bought from the catalog).",
        );
    } else {
        doc.heading(2, "Recommended allocation per objective");
        doc.para(
            "Costs and powers are the study's linear $ and W per GB/s (`[cost]` tiers), an approximation: a study with `[procurement]` decides and prices by the catalog's bill of materials, and `dimsum bom` prices any of these designs.",
        );
    }
    if !study.derived_tiers.is_empty() {
        doc.para(format!(
            "The study names no cost tier for {}: their linear prices are the catalog's cheapest $ and W per GB/s of their parts, which no purchasable design of them undercuts.",
            study.derived_tiers.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut rows = Vec::new();
    let mut solutions = Vec::new();
    for Recommended { objective, outcome } in &r.recommended {
        match outcome {
            Ok(s) => {
                rows.push(cells([
                    objective.clone(),
                    sig3_list(&s.bw_gbps),
                    format!("{:.4}", s.iteration_time_ms),
                    format!("{:.3}", usd_to_musd(s.network_cost_usd)),
                    format!("{:.2}", w_to_kw(s.network_power_w)),
                    s.speedup_vs_equal_split.map_or("-".into(), |x| format!("{x:.3}x")),
                    format!("{:.0e}", s.gap),
                    s.binding_constraints
                        .iter()
                        .map(|b| format!("`{}`", b.constraint))
                        .collect::<Vec<_>>()
                        .join(", "),
                ]));
                solutions.push(json!({ "objective": objective, "solution": s }));
            }
            Err(e) => {
                rows.push(padded(vec![objective.clone(), e.to_string()], 8));
                solutions.push(json!({ "objective": objective, "error": e.to_string() }));
            }
        }
    }
    doc.push(Block::Table(
        vec![
            "objective".into(),
            format!("GB/s per NPU ({})", names.join(", ")),
            "iteration (ms)".into(),
            // Beside the catalog's prices, say which prices these are.
            if study.procurement.is_some() {
                "cost ($M, `[cost]` tiers)".into()
            } else {
                "cost ($M)".into()
            },
            "power (kW)".into(),
            "vs equal split".into(),
            "gap".into(),
            "binding".into(),
        ],
        rows,
    ));
    let json = json!({ "stamp": &r.stamp, "study": study.name, "fabric": study.fabric.shape(), "optimize": solutions });
    out.json("optimize.json", &json)
}

/// Each objective against schedules, beside the analytic optimum;
/// `scheduled.json`.
fn scheduled(
    study: &Study,
    r: &StudyResults,
    optima: &[ScheduledOptimum],
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    doc.heading(
        2,
        format!(
            "Schedule-backed optimum (`{}` schedules, simulated)",
            study.evaluator.algorithm
        ),
    );
    doc.para(
        "Every collective replayed as the schedule it would run on its group's links; the optimizer iterates to a fixed point on the measured coefficients (see `scheduled`).",
    );
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    for ScheduledOptimum { objective, outcome } in optima {
        match outcome {
            Ok(fp) => {
                for (analytic, m) in [(true, &fp.analytic_measured), (false, &fp.measured)] {
                    rows.push(cells([
                        objective.clone(),
                        if analytic {
                            "analytic optimum"
                        } else {
                            "schedule-backed"
                        }
                        .to_string(),
                        sig3_list(&m.bw_gbps),
                        format!("{:.4}", ns_to_ms(m.iteration_ns)),
                        format!("{:.4}", ns_to_ms(m.analytic_iteration_ns)),
                        format!("{:.3}", usd_to_musd(r.problem.cost.cost(&m.bw_gbps))),
                        if analytic {
                            "-".to_string()
                        } else {
                            fp.iterations().to_string()
                        },
                        if analytic {
                            "-"
                        } else if fp.converged {
                            "yes"
                        } else {
                            "no"
                        }
                        .to_string(),
                    ]));
                }
                // A result file holds what the inputs determine: no wall time.
                json_rows.push(super::json::fixed_point(study, &r.problem, fp, None));
            }
            Err(e) => {
                rows.push(padded(vec![objective.clone(), e.to_string()], 8));
                json_rows.push(json!({ "objective": objective, "error": e.to_string() }));
            }
        }
    }
    doc.push(Block::Table(
        header(&[
            "objective",
            "design",
            "GB/s per NPU",
            "simulated (ms)",
            "analytic (ms)",
            "cost ($M)",
            "iterations",
            "converged",
        ]),
        rows,
    ));
    let json = json!({ "stamp": &r.stamp, "study": study.name, "scheduled": json_rows });
    out.json("scheduled.json", &json)?;
    doc.para("Per collective, simulated against analytic: `scheduled.json`.");
    Ok(())
}

/// Capex by dimension of a bill, $M.
fn capex_by_dim(b: &Bom) -> Vec<f64> {
    b.dims.iter().map(|d| usd_to_musd(d.capex_usd)).collect()
}

/// The bill of materials of each recommended design, the catalog optimum
/// under the budget, the catalog frontier, capex by dimension and where
/// every figure comes from; `bom.json`, `catalog-frontier.csv`, charts.
fn procurement(study: &Study, stamp: &Stamp, p: &Procured, doc: &mut Doc, out: &mut Out) -> Result<(), ReportError> {
    let spec = study.procurement();
    doc.heading(2, "Bill of materials");
    doc.para(format!(
        "The decision bought from the catalog (`{} ({})`; every price and power figure cites its source there): ports per NPU, switches by radix (a leaf-spine where a group outgrows one switch), cables by reach and technology. `bom.json` has every item.",
        spec.catalog.name, spec.catalog.date
    ));
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    // Components in the order the bills first use them.
    let mut used: Vec<String> = Vec::new();
    parts(p, doc);
    if let Some((_, _, b)) = p.decided() {
        use_items(&mut used, b);
    }
    doc.para(
        "For comparison only, each continuous optimum (linear $ per GB/s) rounded up to parts: these are not the decision, and the red flags above say which cannot be bought as they stand.",
    );
    let recommended_json = bought(study, p, doc, &mut bars, &mut used);
    let catalog_json = catalog_optimum(study, p, doc, &mut bars, &mut used);
    catalog_frontier(study, stamp, &p.frontier, doc, out)?;
    if !bars.is_empty() {
        let names: Vec<String> = study.fabric.dims.iter().map(|d| d.name.clone()).collect();
        out.charts([super::capex_chart(
            out.dir,
            "capex",
            &format!("{}: capex by dimension", study.name),
            &bars,
            &names,
            stamp,
        )?]);
        doc.chart("capex by dimension", "capex");
    }
    sources(&spec.catalog, &used, doc);
    let answers: Vec<serde_json::Value> = p
        .answers
        .iter()
        .map(|a| match &a.outcome {
            Ok((c, b)) => json!({ "objective": a.objective, "comparison": c, "bom": super::json::bom(study, &c.catalog.bw_gbps, b), "next_faster": a.next }),
            Err(e) => json!({ "objective": a.objective, "error": e.to_string() }),
        })
        .collect();
    let decision = p.decision.map(|d| p.answers[d.answer].objective.clone());
    let replay = super::json::replay(study, p.replay.as_ref());
    let j = json!({ "stamp": stamp, "study": study.name, "catalog": spec.catalog.name, "budget_usd": spec.budget_usd, "budget_w": spec.budget_w, "decision": decision, "decision_replayed": replay, "answers": answers, "recommended": recommended_json, "catalog_optimum": catalog_json });
    out.json("bom.json", &j)
}

/// Adds the components of `b` not yet in `used`, in order, then its
/// servers.
fn use_items(used: &mut Vec<String>, b: &Bom) {
    for name in b
        .items
        .iter()
        .map(|i| &i.component)
        .chain(b.servers.iter().map(|s| &s.server))
    {
        if !used.contains(name) {
            used.push(name.clone());
        }
    }
}

/// Each recommended design bought: the table, the capex bars and the
/// components used; returns the designs' JSON.
fn bought(
    study: &Study,
    p: &Procured,
    doc: &mut Doc,
    bars: &mut Vec<(String, Vec<f64>)>,
    used: &mut Vec<String>,
) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    let mut recommended_json = Vec::new();
    for bought in &p.bought {
        let (name, bw) = (&bought.objective, &bought.asked);
        match &bought.bom {
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
                rows.push(cells([
                    name.clone(),
                    sig3_list(bw),
                    format!(
                        "{}{}",
                        sig3_list(&b.bought_gbps),
                        if over.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", over.join("; "))
                        }
                    ),
                    format!("{:.3}", usd_to_musd(b.capex_usd)),
                    format!("{:.1}", w_to_kw(b.power_w)),
                    format!("{:.0}", b.cost_per_npu_usd),
                    if switches.is_empty() {
                        "-".into()
                    } else {
                        switches.join("; ")
                    },
                ]));
                recommended_json
                    .push(json!({ "objective": name, "bom": super::json::bom(study, bw, b), "flags": bought.flags }));
                bars.push((format!("{name} (rounded up)"), capex_by_dim(b)));
                use_items(used, b);
            }
            Err(e) => {
                rows.push(padded(vec![name.clone(), sig3_list(bw), e.to_string()], 7));
                recommended_json.push(json!({ "objective": name, "error": e.to_string() }));
            }
        }
    }
    doc.push(Block::Table(
        header(&[
            "continuous optimum of",
            "GB/s per NPU asked",
            "bought",
            "capex ($M)",
            "power (kW)",
            "$ per NPU",
            "switches",
        ]),
        rows,
    ));
    recommended_json
}

/// The decision's parts, item by item: the total is the decision's capex;
/// the servers its scale-up dimensions come with after it, outside it.
fn parts(p: &Procured, doc: &mut Doc) {
    let Some((a, _, b)) = p.decided() else { return };
    doc.heading(3, format!("Parts of the decision (`{}` bought)", a.objective));
    let mut rows: Vec<Vec<String>> = b
        .items
        .iter()
        .map(|i| {
            cells([
                i.dimension.clone(),
                format!("`{}`", i.component),
                i.role.to_string(),
                i.quantity.to_string(),
                format!("{:.2}", i.unit_price_usd),
                format!("{:.2}", i.unit_power_w),
                format!("{:.0}", i.capex_usd()),
                format!("{:.1}", i.power_w()),
            ])
        })
        .collect();
    let mut total = vec!["network total".to_string()];
    total.resize(6, String::new());
    total.push(format!("{:.0}", b.capex_usd));
    total.push(format!("{:.1}", b.power_w));
    rows.push(total);
    for s in &b.servers {
        rows.push(cells([
            s.dimension.clone(),
            format!("`{}`", s.server),
            "servers (beside the network)".into(),
            s.quantity.to_string(),
            s.unit_price_usd.map_or("not published".into(), |u| format!("{u:.2}")),
            format!("{:.2}", s.unit_power_w),
            s.capex_usd().map_or("-".into(), |c| format!("{c:.0}")),
            format!("{:.1}", s.power_w()),
        ]));
    }
    doc.push(Block::Table(
        header(&[
            "dimension",
            "component",
            "role",
            "quantity",
            "unit $",
            "unit W",
            "capex ($)",
            "power (W)",
        ]),
        rows,
    ));
}

/// The catalog optimum under the budget beside its continuous bound;
/// returns its JSON.
fn catalog_optimum(
    study: &Study,
    p: &Procured,
    doc: &mut Doc,
    bars: &mut Vec<(String, Vec<f64>)>,
    used: &mut Vec<String>,
) -> serde_json::Value {
    let mut catalog_json = serde_json::Value::Null;
    if let Some(opt) = &p.optimum {
        let budget = opt.budget_usd;
        doc.heading(
            3,
            format!("The best fabric the catalog sells for ${}M", sig3(usd_to_musd(budget))),
        );
        match &opt.outcome {
            Ok((c, b)) => {
                let mut rows = vec![
                    cells([
                        "catalog optimum (MILP, gap 1e-9)".to_string(),
                        sig3_list(&c.catalog.bw_gbps),
                        format!("{:.4}", c.catalog.iteration_time_ms),
                        format!("{:.3}", usd_to_musd(c.catalog.capex_usd)),
                        format!("{:.1}", w_to_kw(c.catalog.power_w)),
                        "purchasable as listed".to_string(),
                    ]),
                    cells([
                        "continuous relaxation".to_string(),
                        sig3_list(&c.continuous.bw_gbps),
                        format!("{:.4}", c.continuous.iteration_time_ms),
                        format!("{:.3}", usd_to_musd(c.continuous.network_cost_usd)),
                        format!("{:.1}", w_to_kw(c.continuous.network_power_w)),
                        "lower bound; its capex at the catalog's cheapest $ per GB/s, not the `[cost]` tiers"
                            .to_string(),
                    ]),
                ];
                if let Some(r) = &c.rounded {
                    rows.push(cells([
                        "continuous rounded up to parts".to_string(),
                        sig3_list(&r.bw_gbps),
                        format!("{:.4}", r.iteration_time_ms),
                        format!("{:.3}", usd_to_musd(r.capex_usd)),
                        format!("{:.1}", w_to_kw(r.power_w)),
                        if r.feasible {
                            "fits"
                        } else {
                            "over the budget or a bound"
                        }
                        .to_string(),
                    ]));
                }
                doc.push(Block::Table(
                    header(&[
                        "design",
                        "GB/s per NPU",
                        "iteration (ms)",
                        "capex ($M)",
                        "power (kW)",
                        "",
                    ]),
                    rows,
                ));
                let mut lines = vec![format!(
                    "Buying only what the catalog sells costs {:.2}% of iteration time against the continuous bound.",
                    100.0 * (c.catalog.iteration_time_ms / c.continuous.iteration_time_ms - 1.0)
                )];
                if !c.skipped.is_empty() {
                    lines.push(format!(
                        "Not applied to catalog designs (the catalog's prices replace the linear cost model): {}.",
                        c.skipped
                            .iter()
                            .map(|x| format!("`{x}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                doc.push(Block::Para(lines));
                bars.push((
                    format!("catalog optimum (${}M budget)", sig3(usd_to_musd(budget))),
                    capex_by_dim(b),
                ));
                use_items(used, b);
                catalog_json = json!({ "comparison": c, "bom": super::json::bom(study, &c.catalog.bw_gbps, b) });
            }
            Err(e) => {
                doc.para(format!("No purchasable design: {e}"));
                catalog_json = json!({ "error": e.to_string() });
            }
        }
    }
    catalog_json
}

/// Where every price and power figure used comes from.
fn sources(catalog: &crate::model::catalog::Catalog, used: &[String], doc: &mut Doc) {
    if !used.is_empty() {
        doc.heading(3, "Where the figures come from");
        if !catalog.legend.is_empty() {
            doc.para(catalog.legend.clone());
        }
        let c = catalog;
        let items = used
            .iter()
            .map(|name| {
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
                    .or_else(|| c.server(name).map(|x| (x.source.clone(), x.date.clone())))
                    .unwrap_or_default();
                format!("`{name}` ({date}): {src}")
            })
            .collect();
        doc.push(Block::List(items));
    }
}

/// The fastest purchasable fabric at every budget, beside the bound:
/// `catalog-frontier.csv` and its chart.
fn catalog_frontier(
    study: &Study,
    stamp: &Stamp,
    frontier: &[(f64, crate::optimize::catalog::Comparison)],
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    let (Some(lo), Some(hi)) = (frontier.first(), frontier.last()) else {
        return Ok(());
    };
    // Provenance in columns (as frontier-<axis>.csv), so the header is the
    // first row and a plain CSV reader takes the file as it is.
    let mut csv = format!(
        "dimsum_version,study_hash,budget_usd,catalog_time_ms,continuous_bound_ms,capex_usd,power_w,{}\n",
        study
            .fabric
            .dims
            .iter()
            .map(|d| format!("bw_{}_gbps", d.name))
            .collect::<Vec<_>>()
            .join(",")
    );
    for (b, c) in frontier {
        let _ = writeln!(
            csv,
            "{},{},{b},{},{},{},{},{}",
            stamp.dimsum_version,
            stamp.study_hash,
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
    out.write("catalog-frontier.csv", csv.as_bytes())?;
    let mut series: Vec<Series> = vec![
        (
            "best purchasable fabric (catalog MILP)".into(),
            frontier
                .iter()
                .map(|(b, c)| (usd_to_musd(*b), c.catalog.iteration_time_ms))
                .collect(),
        ),
        (
            "continuous bound (cheapest $ per GB/s)".into(),
            frontier
                .iter()
                .map(|(b, c)| (usd_to_musd(*b), c.continuous.iteration_time_ms))
                .collect(),
        ),
    ];
    // The capex budget, drawn across the curves' time range.
    if let Some(budget) = study.procurement().budget_usd {
        let times = frontier
            .iter()
            .flat_map(|(_, c)| [c.catalog.iteration_time_ms, c.continuous.iteration_time_ms]);
        let (lo_t, hi_t) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| (a.min(t), b.max(t)));
        if lo_t.is_finite() && hi_t.is_finite() {
            series.push((
                format!("capex budget (${}M)", sig3(usd_to_musd(budget))),
                vec![(usd_to_musd(budget), lo_t), (usd_to_musd(budget), hi_t)],
            ));
        }
    }
    out.charts([super::line_chart(
        out.dir,
        "catalog-frontier",
        &format!("{}: the fastest fabric each capex budget can buy", study.name),
        "capex budget ($M)",
        "iteration time (ms)",
        &series,
        None,
        stamp,
    )?]);
    doc.heading(3, "The fastest fabric each budget can buy");
    doc.para(format!(
        "From ${}M (the cheapest purchasable fabric, {} ms) to ${}M (the fastest, {} ms), {} budgets, each a catalog MILP beside its continuous bound (`catalog-frontier.csv`).",
        sig3(usd_to_musd(lo.0)),
        sig3(lo.1.catalog.iteration_time_ms),
        sig3(usd_to_musd(hi.0)),
        sig3(hi.1.catalog.iteration_time_ms),
        frontier.len()
    ));
    doc.chart("catalog frontier", "catalog-frontier");
    Ok(())
}

/// The fixed designs (the study's `bw` and its cases); `eval.json`.
fn fixed(
    study: &Study,
    stamp: &Stamp,
    designs: &[FixedDesign],
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    if designs.is_empty() {
        return Ok(());
    }
    doc.heading(2, "Fixed designs");
    let simulated = designs.iter().any(|d| d.simulated.is_some());
    let mut head = header(&[
        "design",
        "GB/s per NPU",
        "iteration (ms)",
        "lower bound (ms)",
        "cost ($M)",
        "power (kW)",
    ]);
    if simulated {
        head.push("simulated (ms)".into());
    }
    let mut rows = Vec::new();
    let mut evals = Vec::new();
    for d in designs {
        let e = &d.evaluation;
        let mut row = cells([
            d.name.clone(),
            sig3_list(&d.bw),
            format!("{:.4}", e.iteration_time_ms),
            format!("{:.4}", e.iteration_lower_bound_ms),
            format!("{:.3}", usd_to_musd(e.network_cost_usd)),
            format!("{:.2}", w_to_kw(e.network_power_w)),
        ]);
        let mut j = json!({ "design": d.name, "evaluation": e });
        if let Some(m) = &d.simulated {
            row.push(format!("{:.4}", ns_to_ms(m.iteration_ns)));
            j["simulated_iteration_time_ms"] = ns_to_ms(m.iteration_ns).into();
            j["simulated_collectives"] = serde_json::to_value(&m.collectives).map_err(|source| ReportError::Json {
                path: out.dir.join("eval.json"),
                source,
            })?;
        }
        rows.push(row);
        evals.push(j);
    }
    doc.push(Block::Table(head, rows));
    let json = json!({ "stamp": stamp, "study": study.name, "designs": evals });
    out.json("eval.json", &json)
}

/// A frontier's CSV and charts (and, with the schedule evaluator, the
/// schedule-backed frontier's).
fn frontier(
    study: &Study,
    stamp: &Stamp,
    r: &FrontierResults,
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    let f = &r.frontier;
    let names: Vec<String> = study.fabric.dims.iter().map(|d| d.name.clone()).collect();
    out.write(
        &format!("frontier-{}.csv", f.axis.name()),
        &super::frontier_csv(f, &names, stamp),
    )?;
    out.charts(super::frontier_charts(
        out.dir,
        &study.name,
        f,
        &names,
        &r.markers,
        stamp,
    )?);
    let axis = f.axis.name();
    let unit = f.axis.unit();
    if study.procurement.is_some() && f.axis != Axis::TotalBw {
        doc.heading(
            2,
            format!("Continuous frontier (linear $ per GB/s): iteration time against {axis}"),
        );
        doc.para(
            "Every budget on the study's linear prices, each dimension's bandwidth continuous: an approximation beside the catalog frontier above, which is what each budget buys.",
        );
    } else {
        doc.heading(2, format!("Frontier: iteration time against {axis}"));
    }
    doc.chart(&format!("{axis} frontier"), &format!("frontier-{axis}"));
    if let (Some(first), Some(k), Some(last)) = (f.points.first(), f.points.get(f.knee), f.points.last()) {
        // The high end (optimize::frontier's module doc): the fastest
        // design when another constraint binds there, else within 1e-3 of
        // the time at unlimited bandwidth.
        let end = if last.binding.iter().any(|b| b != "budget") {
            "the fastest design the study's other constraints allow, so more budget buys no time"
        } else {
            "within 0.1% of the time at unlimited bandwidth"
        };
        doc.para(format!(
            "From {} {unit} ({} ms) to {} {unit} ({} ms), {end}. The knee is at {} {unit}: {} ms with [{}] GB/s; the remaining {} {unit} of budget cut the time by a further {:.1}%.",
            sig3(first.budget),
            sig3(first.iteration_time_ms),
            sig3(last.budget),
            sig3(last.iteration_time_ms),
            sig3(k.budget),
            sig3(k.iteration_time_ms),
            sig3_list(&k.bw_gbps),
            sig3(last.budget - k.budget),
            100.0 * (k.iteration_time_ms - last.iteration_time_ms) / k.iteration_time_ms.max(1e-300)
        ));
    }
    doc.chart(
        &format!("allocation along the {axis} frontier"),
        &format!("allocation-{axis}"),
    );
    if let Some(rows) = &r.schedule_backed {
        let files = schedule_backed_frontier(study, stamp, f.axis, rows, out)?;
        out.files.extend(files);
        doc.para(format!(
            "Against simulated schedules (`frontier-{axis}-schedule.csv`): the analytic optimum replayed and the schedule-backed optimum at every budget."
        ));
        doc.chart(
            &format!("schedule-backed {axis} frontier"),
            &format!("frontier-{axis}-schedule"),
        );
    }
    doc.para(format!(
        "Every point: `frontier-{axis}.csv` ({} points, {} LP solves; worst gap {:.0e}).",
        f.points.len(),
        f.lp_solves,
        f.points.iter().map(|p| p.gap).fold(0.0, f64::max)
    ));
    Ok(())
}

/// The frontier's CSV and chart (`frontier-<axis>.*` in `dir`); returns
/// the files written.
pub fn frontier_files(
    study: &Study,
    stamp: &Stamp,
    r: &FrontierResults,
    dir: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out {
        dir,
        files: Vec::new(),
        svgs: BTreeMap::new(),
    };
    let mut doc = Doc::default();
    frontier(study, stamp, r, &mut doc, &mut out)?;
    Ok(out.files)
}

/// The schedule-backed frontier's CSV and chart
/// (`frontier-<axis>-schedule.*`); returns the files written.
fn schedule_backed_frontier(
    study: &Study,
    stamp: &Stamp,
    axis: Axis,
    rows: &[FrontierRow],
    out: &mut Out,
) -> Result<Vec<PathBuf>, ReportError> {
    let names: Vec<String> = study.fabric.dims.iter().map(|d| d.name.clone()).collect();
    let mut csv = String::new();
    let _ = writeln!(
        csv,
        "dimsum_version,study_hash,axis,budget,unit,analytic_optimum_analytic_ms,analytic_optimum_simulated_ms,schedule_optimum_simulated_ms,schedule_optimum_analytic_ms,iterations,converged,{}",
        names
            .iter()
            .map(|n| format!("bw_{n}_gbps"))
            .collect::<Vec<_>>()
            .join(",")
    );
    for r in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            stamp.dimsum_version,
            stamp.study_hash,
            axis.name(),
            r.budget,
            axis.unit(),
            r.analytic_ms,
            r.analytic_simulated_ms,
            r.schedule_ms,
            r.schedule_analytic_ms,
            r.iterations,
            r.converged,
            r.bw.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(",")
        );
    }
    let name = format!("frontier-{}-schedule.csv", axis.name());
    let path = out.dir.join(&name);
    write_atomic(&path, csv.as_bytes())?;
    let series: Vec<Series> = vec![
        (
            "analytic optimum, analytic time".to_string(),
            rows.iter().map(|r| (r.budget, r.analytic_ms)).collect(),
        ),
        (
            "analytic optimum, simulated".to_string(),
            rows.iter().map(|r| (r.budget, r.analytic_simulated_ms)).collect(),
        ),
        (
            "schedule-backed optimum, simulated".to_string(),
            rows.iter().map(|r| (r.budget, r.schedule_ms)).collect(),
        ),
    ];
    let chart = super::line_chart(
        out.dir,
        &format!("frontier-{}-schedule", axis.name()),
        &format!("{}: analytic vs schedule-backed optimum", study.name),
        &format!("budget ({})", axis.unit()),
        "iteration time (ms)",
        &series,
        None,
        stamp,
    )?;
    let mut files = vec![path];
    files.extend(chart.files.iter().cloned());
    out.svgs.insert(chart.stem, chart.svg);
    Ok(files)
}

/// A sweep's ten fastest (then cheapest) designs.
fn sweep(study: &Study, s: &SweepResults, doc: &mut Doc) {
    let Some(spec) = study.sweeps.iter().find(|x| x.name == s.name) else {
        return;
    };
    doc.heading(
        2,
        format!(
            "Sweep `{}`: {} NPUs split {} ways, blocks {}",
            spec.name,
            spec.npus,
            study.fabric.ndims(),
            spec.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
        ),
    );
    let Some(csv_path) = &s.outcome.csv else {
        return;
    };
    let mut solved: Vec<_> = s.outcome.solved.iter().collect();
    let bought = |r: &&crate::pipeline::sweep::Solved| r.bought_capex_usd.unwrap_or(f64::INFINITY);
    solved.sort_by(|a, b| {
        a.iteration_time_ms
            .total_cmp(&b.iteration_time_ms)
            .then(bought(a).total_cmp(&bought(b)))
            .then(a.network_cost_usd.total_cmp(&b.network_cost_usd))
    });
    let how = match Pricing::of(study) {
        Pricing::Catalog => {
            "each the fastest purchasable design whose bill of materials is within the budget, the procurement budgets and caps kept"
        }
        Pricing::Linear => {
            "each the continuous optimum under the budget on the linear $ per GB/s of `[cost.tiers]`, an approximation; each allocation also bought from the catalog, `bought_*` in the CSV"
        }
    };
    doc.para(format!(
        "{} designs solved, {how}; the ten fastest, then cheapest as bought ({} budget in {}):",
        s.outcome.items,
        spec.axis.name(),
        spec.axis.unit()
    ));
    let rows = solved
        .iter()
        .take(10)
        .map(|r| {
            cells([
                r.shape.clone(),
                r.budget.to_string(),
                r.workload.clone(),
                format!("{:.4}", r.iteration_time_ms),
                format!("{:.3}", usd_to_musd(r.network_cost_usd)),
                r.bought_capex_usd
                    .map_or("not purchasable".into(), |c| format!("{:.3}", usd_to_musd(c))),
            ])
        })
        .collect();
    doc.push(Block::Table(
        header(&[
            "shape",
            "budget",
            "workload",
            "iteration (ms)",
            "cost ($M, linear)",
            "bought ($M, catalog)",
        ]),
        rows,
    ));
    doc.para(format!(
        "All of them: `{}`.",
        csv_path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
}

/// The parallelization chosen with the fabric; `coopt.json`.
fn coopt_section(
    study: &Study,
    stamp: &Stamp,
    r: &Coopt,
    results: &StudyResults,
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    coopt_json(study, stamp, r, results, out)?;
    doc.heading(2, "Parallelization and fabric, chosen together");
    let recipes = r.recipe_space.len() > 1;
    let moe = study.model.as_ref().is_some_and(|m| m.moe.is_some());
    coopt_search(study, r, recipes, doc);
    strategies_table(r, moe, recipes, doc);
    if let Some(best) = r.strategies.first().and_then(|b| b.time_ms()) {
        coopt_outcome(study, r, best, results.coopt_replay.as_ref(), doc);
    }
    if let Some(a) = &results.accelerators {
        accelerators_section(study, stamp, a, doc, out)?;
    }
    if let Some(a) = &results.archs {
        archs_section(study, stamp, a, doc, out)?;
    }
    Ok(())
}

/// `coopt.json`: the search, the accelerator choice and the architecture
/// search where the study has them, and the joint optimum's replay.
fn coopt_json(
    study: &Study,
    stamp: &Stamp,
    r: &Coopt,
    results: &StudyResults,
    out: &mut Out,
) -> Result<(), ReportError> {
    let mut json = json!({ "stamp": stamp, "study": study.name, "coopt": r });
    if let Some(a) = &results.accelerators {
        json["accelerators"] = json!(a);
    }
    if let Some(a) = &results.archs {
        json["archs"] = super::json::arch_search(a, coopt::EXACT_TOP);
    }
    json["optimum_replayed"] = super::json::replay(study, results.coopt_replay.as_ref());
    out.json("coopt.json", &json)
}

/// What was searched: the mixture of experts (for a MoE model), the
/// strategies and recipes with how many were solved, pruned and invalid,
/// and how each strategy's fabric was priced.
fn coopt_search(study: &Study, r: &Coopt, recipes: bool, doc: &mut Doc) {
    let moe = study.model.as_ref().and_then(|m| m.moe.as_ref());
    if let (Some(m), Some(x)) = (&study.model, moe) {
        doc.para(format!(
            "{}: {:.1}B parameters, {:.1}B active per token; {} routed experts of FFN {}, top-{}, {} shared; {} of {} layers MoE; {}. Expert parallelism (`ep`) splits the experts over the innermost ranks of each data-parallel group; each MoE layer dispatches and combines every token's copies by all-to-all over that group.",
            m.name,
            m.params() / 1e9,
            m.active_params() / 1e9,
            x.experts,
            x.expert_ffn,
            x.top_k,
            x.shared_experts,
            m.layer_counts().1,
            m.layers,
            match x.capacity_factor {
                Some(c) => format!("capacity factor {c} (padded buffers)"),
                None => format!("dropless, the busiest expert at {} x the mean", x.imbalance),
            }
        ));
    }
    if recipes {
        let sp = &r.recipe_space;
        doc.para(format!(
            "{} strategies (TP x PP x DP, placement order and {} training recipes: micro-batch {:?}, recomputation {}, ZeRO {:?}, sequence parallelism {:?}, virtual stages {:?}): {} solved, {} pruned by a lower bound (compute, or the time at the most bandwidth), {} invalid.",
            r.searched,
            sp.len(),
            sp.micro_batch,
            sp.recompute.iter().map(|x| crate::error::Named::as_name(*x)).collect::<Vec<_>>().join(" / "),
            sp.zero,
            sp.sequence_parallel,
            sp.virtual_stages,
            r.solved,
            r.pruned,
            r.rejected
        ));
    } else {
        doc.para(format!(
            "{} strategies (TP x PP x DP and placement order): {} solved, {} pruned by a lower bound (compute, or the time at the most bandwidth), {} invalid.",
            r.searched, r.solved, r.pruned, r.rejected
        ));
    }
    doc.para(match r.priced_by {
        Pricing::Catalog => {
            "Each strategy's fabric is the fastest purchasable design within the procurement budgets and caps (the catalog MILP); capex from its bill of materials."
        }
        Pricing::Linear => {
            "Each strategy's fabric is the continuous optimum under the study's constraints; cost by the linear $ per GB/s of `[cost.tiers]`, an approximation (a study with `[procurement]` is priced by the catalog)."
        }
    });
}

/// The ten best solved strategies, with their expert-parallel degree for a
/// MoE model and their recipe when recipes were searched.
fn strategies_table(r: &Coopt, moe: bool, recipes: bool, doc: &mut Doc) {
    let mut rows = Vec::new();
    for row in r.strategies.iter().filter(|x| x.time_ms().is_some()).take(10) {
        if let coopt::Verdict::Solved {
            bw_gbps,
            iteration_time_ms,
            network_cost_usd,
            ..
        } = &row.verdict
        {
            let mut r = vec![row.tp.to_string(), row.pp.to_string(), row.dp.to_string()];
            if moe {
                r.push(row.ep.to_string());
            }
            r.extend([
                row.order.clone(),
                format!("{iteration_time_ms:.3}"),
                format!("{:.1}", row.memory_gib.unwrap_or(f64::NAN)),
                sig3_list(bw_gbps),
                format!("{:.3}", usd_to_musd(*network_cost_usd)),
                row.groups(", "),
            ]);
            if recipes {
                r.push(row.recipe());
            }
            rows.push(r);
        }
    }
    let cost = match r.priced_by {
        Pricing::Catalog => "capex ($M, bought)",
        Pricing::Linear => "cost ($M, linear)",
    };
    let mut head = header(&["tp", "pp", "dp"]);
    if moe {
        head.push("ep".into());
    }
    head.extend(header(&[
        "order",
        "iteration (ms)",
        "memory (GiB)",
        "GB/s per NPU",
        cost,
        "groups (tp, pp, dp)",
    ]));
    if recipes {
        head.push("recipe".into());
    }
    doc.push(Block::Table(head, rows));
}

/// The joint optimum (`best` ms) against the equal split and the study's
/// own strategy, its pipeline stages, its replay, and why the others lost.
fn coopt_outcome(
    study: &Study,
    r: &Coopt,
    best: f64,
    replay: Option<&Result<Measured, coopt::ReplayError>>,
    doc: &mut Doc,
) {
    let mut lines = Vec::new();
    if let Some(eq) = r.best_on_equal_split_ms {
        lines.push(format!(
            "The joint optimum ({best:.3} ms) is {} the best strategy on the equal split ({eq:.3} ms)",
            faster(eq, best)
        ));
    }
    if let Some(d) = r.default_optimized_ms {
        lines.push(format!(
            "and {} the study's own strategy with its optimal allocation ({d:.3} ms).",
            faster(d, best)
        ));
    }
    if let Some(why) = &r.own_invalid {
        lines.push(format!("The study's own strategy is not compared: {why}."));
    }
    if let Some(st) = r
        .strategies
        .first()
        .and_then(|b| b.stages.as_ref().filter(|_| b.pp > 1))
    {
        lines.push(format!("Its pipeline stages: {st}."));
    }
    if !lines.is_empty() {
        doc.push(Block::Para(lines));
    }
    optimum_replayed(study, replay, doc);
    doc.para("Why the others lost (examples of each reason):");
    doc.push(Block::List(coopt::why_lost(r, best, 3)));
}

/// The joint optimum replayed on the best schedules, or why it was not.
fn optimum_replayed(study: &Study, replay: Option<&Result<Measured, coopt::ReplayError>>, doc: &mut Doc) {
    match replay {
        Some(Ok(m)) => {
            // With `[npu.arch]` this section is the study's own
            // architecture's search, not the architecture search's.
            let what = if study.arch_space.is_some() {
                "The study's own architecture's best strategy"
            } else {
                "The joint optimum"
            };
            doc.para(format!(
                "{what} replayed at its allocation (`{}` link model): **{:.3} ms per iteration** with every distinct collective of its iteration on the best schedule dimsum builds over its group's links, the pipeline's sends at their analytic time (no schedule makes it faster than {:.3} ms: every collective at its certified bound); the search ranked it by the `{}` analytic model's {:.3} ms ({} against the replay).",
                study.evaluator.link_model.as_name(),
                ns_to_ms(m.iteration_ns),
                ns_to_ms(m.lower_bound_ns),
                study.collective.time_model.name(),
                ns_to_ms(m.analytic_iteration_ns),
                signed_pct(ns_to_ms(m.analytic_iteration_ns), ns_to_ms(m.iteration_ns)),
            ));
            replay_table(m, doc);
        }
        Some(Err(e)) => doc.para(format!("The joint optimum was not replayed: {e}.")),
        None if !study.replay_optimum => doc.para(
            "The joint optimum is not replayed here (the study sets `[coopt] replay = false`); `dimsum coopt --replay` replays it on the best schedules.",
        ),
        None => {}
    }
}

/// Architectures the report's table and chart show.
const ARCHS_SHOWN: usize = 12;

/// The architecture search (`[npu.arch]`): the joint optimum beside the
/// study's own architecture, the best architectures with their area and
/// power, and their area by component.
fn archs_section(
    study: &Study,
    stamp: &Stamp,
    a: &coopt::ArchSearch,
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    let t = &a.technology;
    doc.heading(3, "The accelerator's architecture, chosen with them");
    doc.para(format!(
        "Every combination of `[npu.arch]` within the budgets{} ({} of {}; {} over), each a parametric accelerator of tensor units (output-stationary systolic arrays), vector units, one on-chip buffer and HBM stacks at {} GHz, searched in one exact search with every strategy, recipe and fabric above ({} candidates: {} solved, {} pruned by a bound, {} invalid). Kernels are timed by the roofline-and-shape model (tile and wave quantization over the arrays, their fill and drain, GEMM operands tiled through the buffer, element-wise kernels on the vector units); area and design power by per-component constants at {} (sources in the JSON's `technology`).",
        super::text::arch_budgets(&a.space),
        a.archs.len(),
        a.archs.len() + a.over_budget,
        a.over_budget,
        a.space.clock_ghz,
        a.coopt.searched,
        a.coopt.solved,
        a.coopt.pruned,
        a.coopt.rejected,
        t.name,
    ));
    let lines = archs_verdict(a);
    if !lines.is_empty() {
        doc.push(Block::Para(lines));
    }
    let mut order = a.ranked();
    order.truncate(ARCHS_SHOWN);
    archs_table(&order, doc);
    archs_chart(study, stamp, &order, out, doc)
}

/// The joint optimum of the architecture search, beside the study's own
/// architecture at its best strategy and at its own one.
fn archs_verdict(a: &coopt::ArchSearch) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(best) = a.coopt.strategies.first().filter(|r| r.time_ms().is_some()) {
        let ms = best.time_ms().unwrap_or(f64::NAN);
        lines.push(format!(
            "The joint optimum: **{}** with {} at **{ms:.3} ms** per iteration.",
            best.npu.as_deref().unwrap_or("-"),
            best.strategy()
        ));
        if let Some(own) = &a.own_best {
            let o = own.time_ms().unwrap_or(f64::NAN);
            lines.push(format!(
                "The study's own architecture ({}) at its best strategy ({}) takes {o:.3} ms: the chosen architecture is {}.",
                a.archs.first().map_or("-", |x| x.name.as_str()),
                own.strategy(),
                faster(o, ms).trim_end_matches(" than").trim_end_matches(" as")
            ));
        }
        if let Some(d) = a.coopt.default_optimized_ms {
            lines.push(format!(
                "The study's own architecture with its own strategy takes {d:.3} ms ({:.3}x the joint optimum's time).",
                d / ms
            ));
        }
    }
    lines
}

/// The best architectures (`order`): their figures, area, power and best
/// time, or the bound no strategy on them beats.
fn archs_table(order: &[&coopt::ArchDesign], doc: &mut Doc) {
    let rows = order
        .iter()
        .map(|d| {
            vec![
                d.name.clone(),
                format!("{:.1}", d.peak_tflops),
                format!("{:.0}", d.hbm_gbps),
                format!("{:.0}", d.hbm_gib),
                format!("{:.1}", d.area.total_mm2),
                format!("{:.1}", d.power.total_w),
                match d.best_ms {
                    Some(x) if d.exact => format!("{x:.3}"),
                    Some(x) => format!("{x:.3} (a strategy was pruned)"),
                    None => "-".to_string(),
                },
                format!("{:.3}", d.bound_ms),
            ]
        })
        .collect();
    doc.push(Block::Table(
        header(&[
            "architecture",
            "peak TFLOP/s",
            "HBM GB/s",
            "HBM GiB",
            "area (mm2)",
            "power (W)",
            "best (ms)",
            "no faster than (ms)",
        ]),
        rows,
    ));
    doc.para(
        "`best` is the architecture's best solved time, its best time where none of its pruned strategies' bounds is below it (else marked); `no faster than` is the least of its solved times and those bounds: no strategy on it is faster. The search is exact for its ten best rows; an architecture whose every strategy lost to them has only its bound.",
    );
}

/// The chart of the best architectures' (`order`) area by component.
fn archs_chart(
    study: &Study,
    stamp: &Stamp,
    order: &[&coopt::ArchDesign],
    out: &mut Out,
    doc: &mut Doc,
) -> Result<(), ReportError> {
    let bars: Vec<(String, Vec<f64>)> = order
        .iter()
        .map(|d| {
            (
                format!("{}: {} ms", d.name, sig3(d.bound_ms)),
                vec![
                    d.area.tensor_mm2,
                    d.area.vector_mm2,
                    d.area.sram_mm2,
                    d.area.hbm_phy_mm2,
                    d.area.uncore_mm2,
                ],
            )
        })
        .collect();
    if !bars.is_empty() {
        out.charts([super::bar_chart(
            out.dir,
            "architectures",
            &format!("{}: area of the best architectures", study.name),
            &bars,
            &[
                "tensor units".to_string(),
                "vector units".to_string(),
                "buffer".to_string(),
                "HBM PHY".to_string(),
                "rest".to_string(),
            ],
            super::Bars {
                axis: "area (mm2)",
                total: ("", " mm2"),
                fit_labels: true,
            },
            stamp,
        )?]);
        doc.chart("area of the best architectures", "architectures");
    }
    Ok(())
}

/// The accelerator choice: each type's best design, priced and powered.
fn accelerators_section(
    study: &Study,
    stamp: &Stamp,
    a: &coopt::Accelerators,
    doc: &mut Doc,
    out: &mut Out,
) -> Result<(), ReportError> {
    doc.heading(2, "Accelerator, strategy and fabric, chosen together");
    let e = &a.economics;
    let budget = match (e.budget_usd, e.budget_w) {
        (Some(u), Some(w)) => format!(" within the cluster's ${:.1}M and {:.0} kW", usd_to_musd(u), w / 1e3),
        (Some(u), None) => format!(" within the cluster's ${:.1}M", usd_to_musd(u)),
        (None, Some(w)) => format!(" within the cluster's {:.0} kW", w / 1e3),
        (None, None) => String::new(),
    };
    doc.para(format!(
        "Each accelerator type searched on its own (every strategy, placement and recipe, each with its optimal fabric){budget} (the section above searched the study's first type within the network's own budgets); the cluster priced at the study's price per accelerator plus the fabric, powered at each accelerator's board power plus the fabric. Tokens per $ count the capex written off over {} years and electricity at ${:.2} per kWh (assumptions, `[coopt] life_years` and `usd_per_kwh`).",
        e.life_years, e.usd_per_kwh
    ));
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    let rows = a
        .designs
        .iter()
        .map(|d| {
            let strategy = d.best.as_ref().map_or("-".to_string(), coopt::Row::strategy);
            vec![
                d.npu.clone(),
                format!("{:.1}", d.price_usd / 1e3),
                strategy,
                opt(d.iteration_ms, &|x| format!("{x:.3}")),
                format!("{:.1}", usd_to_musd(d.npu_capex_usd)),
                opt(d.network_capex_usd, &|x| format!("{:.1}", usd_to_musd(x))),
                opt(d.capex_usd, &|x| format!("{:.1}", usd_to_musd(x))),
                opt(d.power_w, &|x| format!("{:.0}", x / 1e3)),
                opt(d.tokens_per_s, &|x| format!("{:.3}", x / 1e6)),
                opt(d.tokens_per_usd, &|x| format!("{x:.0}")),
                opt(d.tokens_per_joule, &|x| format!("{x:.3}")),
                d.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    doc.push(Block::Table(
        header(&[
            "accelerator",
            "price ($k)",
            "best strategy",
            "iteration (ms)",
            "accelerators ($M)",
            "fabric ($M)",
            "cluster ($M)",
            "power (kW)",
            "M tokens / s",
            "tokens per $",
            "tokens per J",
            "note",
        ]),
        rows,
    ));
    doc.push(Block::List(
        a.best
            .iter()
            .map(|(objective, npu)| format!("best by {objective}: **{npu}**"))
            .collect(),
    ));
    // Each cluster's capex, accelerators and fabric, labelled with its time.
    let bars: Vec<(String, Vec<f64>)> = a
        .designs
        .iter()
        .filter_map(|d| {
            let fabric = d.network_capex_usd?;
            let ms = d.iteration_ms?;
            Some((
                format!("{}: {} ms", d.npu, sig3(ms)),
                vec![usd_to_musd(d.npu_capex_usd), usd_to_musd(fabric)],
            ))
        })
        .collect();
    if !bars.is_empty() {
        out.charts([super::capex_chart(
            out.dir,
            "accelerators",
            &format!("{}: cluster capex by accelerator", study.name),
            &bars,
            &["accelerators".to_string(), "fabric".to_string()],
            stamp,
        )?]);
        doc.chart("cluster capex by accelerator", "accelerators");
    }
    Ok(())
}

/// Every file of `run` written into `dir` from `results`, landing together
/// (a sweep's CSV is already there): the summary's final path.
pub fn write_staged(study: &Study, results: &StudyResults, dir: &Path) -> Result<PathBuf, ReportError> {
    let staged = crate::io::Staged::new(dir)?;
    let files = write(study, results, staged.dir())?;
    let summary = files
        .first()
        .map_or_else(|| dir.join("summary.md"), |f| staged.final_path(f));
    staged.commit()?;
    Ok(summary)
}

//! Sweeps over fabric shapes, budgets and workloads: every way to split N
//! NPUs into the study's number of dimensions (ordered factors >= 2), every
//! building block per dimension, every budget, the study's workload and those
//! of the studies the sweep names; for each, the fastest design under that
//! budget. A study with `[procurement]` prices each item by the catalog
//! (`procure::Pricing`): the fastest purchasable design whose bill is within
//! the budget (a capex or power axis; a GB/s axis stays a constraint), the
//! study's other budget and every cap kept, certified to the MILP's gap.
//! Without it, the certified continuous optimum under the linear price;
//! either way each row's allocation is also bought (`bought_*`) and the
//! row says how it was priced (`priced_by`).
//!
//! A shape keeps the study's dimensions by position (name, tier, latency,
//! bounds) and takes a new size and block; the algorithm is the block's
//! default. The workload's communicators are re-placed on the new shape by
//! their position in rank order (dimension 0 fastest): a group skips the
//! NPUs inside it (the dimensions before its first one and the inner part of
//! its first dimension) and spans its size outward. LIBRA's tensor-parallel
//! `[4, 4, -1, -1]` on 4 x 8 x 4 x 32 (skip 1, size 16) and data-parallel
//! `[-1, 2, 4, 32]` (skip 16, size 256) become, on 16 x 8 x 32,
//! `[16, -1, -1]` and `[-1, 8, 32]`: LIBRA's own 3D communicators. A shape
//! where a group cannot be placed so is recorded as `unplaceable`.
//!
//! Items are numbered in a fixed order, so `--shard i/N` (items whose index
//! is i mod N) spreads one sweep over N jobs and `merge` can check that the
//! shards cover every item exactly once. Results are appended to a partial
//! file as they finish (in parallel, with rayon); a run that finds a partial
//! file skips what it already holds, and the final CSV is written at once
//! (temporary file, then rename) when every item is done.

use super::procure::{self, Pricing};
use crate::io::{Stamp, WriteError, write_atomic};
use crate::model::bom::{self, DimSpec, Procurement};
use crate::model::collective::{Algorithm, CollectiveModel};
use crate::model::fabric::{Block, Dim, Fabric};
use crate::model::training::IterationModel;
use crate::model::workload::Workload;
use crate::optimize::frontier::Axis;
use crate::optimize::{self, Objective, Problem, expr::Constraint, expr::Sense, expr::Unit};
use crate::progress::Progress;
use crate::study::{Study, SweepSpec};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What a sweep reads from its study.
#[derive(Debug, Clone, Copy)]
pub struct SweepOn<'a> {
    /// The study's name (its own workload's, in the CSV).
    pub name: &'a str,
    /// The study's hash (each row's stamp; what a resumed run must match).
    pub hash: &'a str,
    /// The fabric whose dimensions (names, tiers, latencies, bounds) each
    /// shape keeps by position.
    pub fabric: &'a Fabric,
    /// The study's workload.
    pub workload: &'a Workload,
    /// The collective model.
    pub collective: &'a CollectiveModel,
    /// The training loop.
    pub training_loop: crate::model::training::Loop,
    /// The linear pricing.
    pub cost: &'a crate::model::cost::CostModel,
    /// `[procurement]`, if the study has one (then items are bought from
    /// its catalog).
    pub procurement: Option<&'a Procurement>,
}

impl<'a> SweepOn<'a> {
    /// `study`'s.
    pub fn of(study: &'a Study) -> SweepOn<'a> {
        SweepOn {
            name: &study.name,
            hash: &study.hash,
            fabric: &study.fabric,
            workload: &study.workload,
            collective: &study.collective,
            training_loop: study.training_loop,
            cost: &study.cost,
            procurement: study.procurement.as_ref(),
        }
    }

    fn pricing(&self) -> Pricing {
        match self.procurement {
            Some(_) => Pricing::Catalog,
            None => Pricing::Linear,
        }
    }
}

/// One item of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Position in the sweep's fixed order.
    pub index: usize,
    /// NPUs per dimension.
    pub npus: Vec<u32>,
    /// Block per dimension.
    pub blocks: Vec<Block>,
    /// Budget on the sweep's axis.
    pub budget: f64,
    /// 0: the study's own workload; i: the sweep's i-th listed one.
    pub workload: usize,
}

/// Every ordered way to write `n` as a product of `k` factors >= 2.
fn factorizations(n: u64, k: usize) -> Vec<Vec<u32>> {
    fn rec(n: u64, k: usize, divisors: &[u64], prefix: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if k == 1 {
            if n >= 2 && n <= u64::from(u32::MAX) {
                prefix.push(n as u32);
                out.push(prefix.clone());
                prefix.pop();
            }
            return;
        }
        for &f in divisors
            .iter()
            .filter(|&&f| f >= 2 && f <= n / 2 && n.is_multiple_of(f))
        {
            prefix.push(f as u32);
            rec(n / f, k - 1, divisors, prefix, out);
            prefix.pop();
        }
    }
    // Divisors of n, ascending (every factor of a factorization divides n).
    let mut divisors = Vec::new();
    let mut f = 1;
    while f * f <= n {
        if n.is_multiple_of(f) {
            divisors.push(f);
            if f * f != n {
                divisors.push(n / f);
            }
        }
        f += 1;
    }
    divisors.sort_unstable();
    let mut out = Vec::new();
    if k >= 1 {
        rec(n, k, &divisors, &mut Vec::new(), &mut out);
    }
    out
}

/// The items of `spec` for a `k`-dimension study, in their fixed order.
pub fn items(spec: &SweepSpec, k: usize) -> Vec<Item> {
    let shapes = factorizations(spec.npus, k);
    let nb = spec.blocks.len();
    let combos = nb.pow(k as u32);
    let mut out = Vec::with_capacity(shapes.len() * combos * spec.budgets.len());
    for npus in &shapes {
        for c in 0..combos {
            let mut c = c;
            let blocks: Vec<Block> = (0..k)
                .map(|_| {
                    let b = spec.blocks[c % nb];
                    c /= nb;
                    b
                })
                .collect();
            for &budget in &spec.budgets {
                for workload in 0..=spec.workloads.len() {
                    out.push(Item {
                        index: out.len(),
                        npus: npus.clone(),
                        blocks: blocks.clone(),
                        budget,
                        workload,
                    });
                }
            }
        }
    }
    out
}

/// The workload an item uses, its name and the fabric its groups sit on.
fn workload_of<'a>(study: &SweepOn<'a>, spec: &'a SweepSpec, item: &Item) -> (&'a str, &'a Workload, &'a Fabric) {
    match item.workload.checked_sub(1).and_then(|i| spec.workloads.get(i)) {
        Some(w) => (&w.name, &w.workload, &w.fabric),
        None => (study.name, study.workload, study.fabric),
    }
}

/// The study's fabric and the item's workload moved onto `item`'s shape.
pub fn reshape(study: &SweepOn, spec: &SweepSpec, item: &Item) -> Option<(Fabric, Workload)> {
    let (_, source, origin) = workload_of(study, spec, item);
    let fabric = Fabric {
        dims: study
            .fabric
            .dims
            .iter()
            .zip(item.npus.iter().zip(&item.blocks))
            .map(|(d, (n, b))| Dim {
                npus: *n,
                block: *b,
                options_gbps: d.options_gbps.clone(),
                fat_tree: if *b == d.block { d.fat_tree.clone() } else { None },
                ..d.clone()
            })
            .collect(),
    };
    let workload = source.replaced(origin, &item.npus)?;
    Some((fabric, workload))
}

/// The result of one item.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The item.
    pub item: Item,
    /// `ok`, `unplaceable`, `infeasible` or `failed`.
    pub status: String,
    /// Fastest time at the budget, ms.
    pub iteration_time_ms: f64,
    /// Certified gap.
    pub gap: f64,
    /// Network cost, dollars.
    pub network_cost_usd: f64,
    /// Network power, watts.
    pub network_power_w: f64,
    /// Allocation.
    pub bw_gbps: Vec<f64>,
    /// The allocation bought from the catalog (`bom::bom`: ports rounded
    /// up, switches, cables): capex $ and power W, or why it cannot be
    /// (`None`: the item was not solved).
    pub bought: Option<Result<(f64, f64), bom::BomError>>,
    /// How the item was solved: the fastest design under its linear price
    /// (`network_cost_usd` within the budget) or the fastest purchasable
    /// one (the bill within the budget; `procure::Pricing`).
    pub pricing: Pricing,
}

/// The catalog and per-dimension parts of a sweep item: the study's
/// `[procurement]` by position where the item keeps the dimension's block,
/// else the defaults on the item's fabric.
fn procurement(study: &SweepOn, fabric: &Fabric) -> Procurement {
    let mut out = Procurement::defaults(fabric);
    if let Some(p) = study.procurement {
        out.catalog = p.catalog.clone();
        out.budget_usd = p.budget_usd;
        out.budget_w = p.budget_w;
        for (d, dim) in fabric.dims.iter().enumerate() {
            out.dims[d] = match (p.dims.get(d), study.fabric.dims.get(d)) {
                (Some(spec), Some(was)) if was.block == dim.block => spec.clone(),
                _ => DimSpec::default_in(fabric, d, &out.catalog),
            };
        }
    }
    out
}

/// Solves one item.
fn solve_item(study: &SweepOn, spec: &SweepSpec, item: &Item) -> Row {
    let blank = |status: &str| Row {
        item: item.clone(),
        status: status.into(),
        iteration_time_ms: f64::NAN,
        gap: f64::NAN,
        network_cost_usd: f64::NAN,
        network_power_w: f64::NAN,
        bw_gbps: vec![f64::NAN; item.npus.len()],
        bought: None,
        pricing: study.pricing(),
    };
    let Some((fabric, workload)) = reshape(study, spec, item) else {
        return blank("unplaceable");
    };
    // A dimension that comes with the servers keeps them only on shapes
    // whose span there is still the servers' scale-up domain, on the same
    // block: elsewhere no catalog server ships it.
    // (A server names the first dimension only.)
    if let Some(s) = study.procurement.and_then(|p| p.dims.first()?.server.as_ref())
        && (fabric.dims[0].npus != s.domain || fabric.dims[0].block != study.fabric.dims[0].block)
    {
        return blank("no-server");
    }
    let model = CollectiveModel {
        time_model: study.collective.time_model,
        group_bandwidth: study.collective.group_bandwidth,
        algorithms: fabric.dims.iter().map(|d| Algorithm::default_for(d.block)).collect(),
        reduction_gbps: study.collective.reduction_gbps,
    };
    let it = IterationModel::new(&workload, &fabric, &model, study.training_loop);
    let cost = crate::model::cost::Linear::new(&fabric, study.cost);
    let mut p = Problem::new(&fabric, it, cost, Vec::new());
    let coeffs = match spec.axis {
        Axis::Cost => p.cost.usd_per_gbps.iter().map(|k| k * p.cost.npus).collect(),
        Axis::Power => p.cost.w_per_gbps.iter().map(|k| k * p.cost.npus).collect(),
        Axis::TotalBw => vec![1.0; fabric.ndims()],
    };
    let rhs = match spec.axis {
        Axis::Cost => item.budget * 1e6,
        Axis::Power => item.budget * 1e3,
        Axis::TotalBw => item.budget,
    };
    let budget = Constraint {
        text: format!("{} <= {}", spec.axis.name(), item.budget),
        coeffs,
        sense: Sense::Le,
        rhs,
        unit: match spec.axis {
            Axis::Cost => Unit::Usd,
            Axis::Power => Unit::Watts,
            Axis::TotalBw => Unit::Gbps,
        },
    };
    let parts = procurement(study, &fabric);
    // A continuous optimum is bought by its bandwidths; a catalog optimum
    // is the bill of the designs the MILP chose (`bom::bom_of`).
    let bought = |bw: &[f64], choice: Option<&[bom::DimOption]>| {
        match choice {
            Some(c) => bom::bom_of(&fabric, &parts, c),
            None => bom::bom(&fabric, &parts, bw),
        }
        .map(|b| (b.capex_usd, b.power_w))
    };
    let pricing = study.pricing();
    let solved = match pricing {
        // The budget on the linear price (or GB/s): the continuous optimum.
        Pricing::Linear => {
            p.constraints.push(budget);
            optimize::solve(&p, Objective::Perf).map(|s| (s.bw_gbps, s.iteration_time_ms, s.gap, None))
        }
        // The budget on the bill (a GB/s budget stays a constraint): the
        // fastest purchasable design, the study's other budget kept.
        Pricing::Catalog => {
            let (mut usd, mut w) = (parts.budget_usd, parts.budget_w);
            match spec.axis {
                Axis::Cost => usd = Some(rhs),
                Axis::Power => w = Some(rhs),
                Axis::TotalBw => p.constraints.push(budget),
            }
            procure::fastest_bought(&p, procure::dim_options(&fabric, &parts), usd, w)
                .map(|s| (s.bw_gbps, s.iteration_time_ms, s.mip_rel_gap, Some(s.choice)))
        }
    };
    match solved {
        Ok((bw, t, gap, choice)) => Row {
            item: item.clone(),
            status: "ok".into(),
            iteration_time_ms: t,
            gap,
            network_cost_usd: p.cost.cost(&bw),
            network_power_w: p.cost.power(&bw),
            bought: Some(bought(&bw, choice.as_deref())),
            bw_gbps: bw,
            pricing,
        },
        Err(optimize::OptError::Infeasible(_)) => blank("infeasible"),
        Err(_) => blank("failed"),
    }
}

/// Why a `--shard` value is not `i/N` (`Shard::parse`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// No `/`.
    #[error("`{0}` is not i/N (e.g. 0/8)")]
    NoSlash(String),
    /// Not two numbers with 0 <= i < N.
    #[error("`{0}` is not i/N with 0 <= i < N")]
    OutOfRange(String),
}

/// `i/N`: this job's share of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 0-based.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `i/N` with 0 <= i < N.
    pub fn parse(s: &str) -> Result<Shard, ShardError> {
        let (i, n) = s.split_once('/').ok_or_else(|| ShardError::NoSlash(s.to_string()))?;
        let (i, n) = (i.trim().parse::<usize>(), n.trim().parse::<usize>());
        match (i, n) {
            (Ok(i), Ok(n)) if n >= 1 && i < n => Ok(Shard { index: i, count: n }),
            _ => Err(ShardError::OutOfRange(s.to_string())),
        }
    }

    fn suffix(self) -> String {
        if self.count == 1 {
            String::new()
        } else {
            format!(".shard-{}-of-{}", self.index, self.count)
        }
    }
}

const HEADER: [&str; 13] = [
    "dimsum_version",
    "study_hash",
    "index",
    "total",
    "shape",
    "npus",
    "blocks",
    "budget",
    "workload",
    "status",
    "iteration_time_ms",
    "gap",
    "network_cost_usd",
];

fn header(k: usize) -> Vec<String> {
    let mut h: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
    h.push("network_power_w".into());
    h.extend((0..k).map(|d| format!("bw_d{d}_gbps")));
    h.extend(["bought_capex_usd", "bought_power_w", "bought_note", "priced_by"].map(String::from));
    h
}

fn record(row: &Row, workload: &str, total: usize, stamp: &Stamp) -> Vec<String> {
    let f = |v: f64| if v.is_finite() { v.to_string() } else { String::new() };
    let shape: Vec<String> = row
        .item
        .blocks
        .iter()
        .zip(&row.item.npus)
        .map(|(b, n)| format!("{}({n})", b.name()))
        .collect();
    let mut r = vec![
        stamp.dimsum_version.clone(),
        stamp.study_hash.clone(),
        row.item.index.to_string(),
        total.to_string(),
        shape.join(" x "),
        row.item
            .npus
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("x"),
        row.item.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(","),
        row.item.budget.to_string(),
        workload.to_string(),
        row.status.clone(),
        f(row.iteration_time_ms),
        f(row.gap),
        f(row.network_cost_usd),
        f(row.network_power_w),
    ];
    r.extend(row.bw_gbps.iter().map(|b| f(*b)));
    match &row.bought {
        Some(Ok((usd, w))) => r.extend([f(*usd), f(*w), String::new()]),
        Some(Err(why)) => r.extend([String::new(), String::new(), why.to_string()]),
        None => r.extend([String::new(), String::new(), String::new()]),
    }
    r.push(row.pricing.name().to_string());
    r
}

/// A solved design of a sweep, as its CSV row says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// The item's index.
    pub index: usize,
    /// The shape, e.g. `Ring(4) x Switch(8)`.
    pub shape: String,
    /// The budget, in the sweep's axis unit.
    pub budget: f64,
    /// The workload's name.
    pub workload: String,
    /// Fastest time at the budget, ms.
    pub iteration_time_ms: f64,
    /// Network cost, dollars.
    pub network_cost_usd: f64,
    /// The design bought from the catalog, capex $ (`None`: not
    /// purchasable as allocated).
    pub bought_capex_usd: Option<f64>,
    /// `catalog` or `linear` (`procure::Pricing`): which cost the budget
    /// bounded.
    pub priced_by: String,
}

impl Solved {
    /// The solved design of a CSV record (`record`'s fields), if it has a
    /// time and a cost.
    fn of_record(fields: &[String]) -> Option<Solved> {
        let num = |i: usize| fields.get(i).and_then(|t| t.parse::<f64>().ok());
        Some(Solved {
            index: fields.get(2)?.parse().ok()?,
            shape: fields.get(4)?.clone(),
            budget: num(7)?,
            workload: fields.get(8)?.clone(),
            iteration_time_ms: num(10)?,
            network_cost_usd: num(12)?,
            bought_capex_usd: num(fields.len().checked_sub(4)?),
            priced_by: fields.last()?.clone(),
        })
    }
}

/// What a sweep run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The final CSV, if the shard is complete.
    pub csv: Option<PathBuf>,
    /// Every solved design of the shard (with a time and a cost), in item
    /// order, whether solved now or resumed.
    pub solved: Vec<Solved>,
    /// Items of this shard.
    pub items: usize,
    /// Items solved by this run.
    pub solved_now: usize,
    /// Items taken from an earlier run of the same study and version: its
    /// partial file, or its complete CSV (a re-run of a finished shard
    /// solves nothing).
    pub resumed: usize,
}

/// Runs (or resumes) `shard` of sweep `spec` into `dir`. `limit` stops after
/// that many newly solved items (an interruption, for tests); `progress` is
/// told the number of items done after each batch (as `sweep NAME`), and
/// a cancelled observer stops the sweep after the batch (unfinished, its
/// partial file kept to resume).
pub fn run(
    study: &SweepOn,
    spec: &SweepSpec,
    shard: Shard,
    dir: &Path,
    limit: Option<usize>,
    progress: Progress,
) -> Result<Outcome, WriteError> {
    let k = study.fabric.ndims();
    let all = items(spec, k);
    let total = all.len();
    let task = format!("sweep {}", spec.name);
    let mine: Vec<&Item> = all.iter().filter(|it| it.index % shard.count == shard.index).collect();
    let stamp = Stamp::from_hash(study.hash.to_string());
    let final_path = dir.join(format!("sweep-{}{}.csv", spec.name, shard.suffix()));
    let partial_path = dir.join(format!(".sweep-{}{}.partial.csv", spec.name, shard.suffix()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WriteError { path, source }
    };
    // Resume: rows already in the complete CSV of an earlier run or in the
    // partial file (from this study and version; a truncated last line has
    // too few fields and is solved again).
    let mut done: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for text in [&final_path, &partial_path]
        .map(std::fs::read_to_string)
        .into_iter()
        .flatten()
    {
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        for rec in rd.records().flatten() {
            let fields: Vec<String> = rec.iter().map(String::from).collect();
            let ours = fields.len() == header(k).len()
                && fields[0] == stamp.dimsum_version
                && fields[1] == stamp.study_hash
                && fields[3] == total.to_string();
            if let (true, Ok(i)) = (ours, fields[2].parse::<usize>()) {
                done.insert(i, fields);
            }
        }
    }
    let todo: Vec<&Item> = mine
        .iter()
        .copied()
        .filter(|it| !done.contains_key(&it.index))
        .collect();
    let todo = &todo[..limit.map_or(todo.len(), |l| l.min(todo.len()))];
    let resumed = mine.iter().filter(|it| done.contains_key(&it.index)).count();
    let mut partial = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&partial_path)
        .map_err(io(&partial_path))?;
    let mut solved_now = 0;
    for batch in todo.chunks(32) {
        let rows: Vec<Row> = batch.par_iter().map(|it| solve_item(study, spec, it)).collect();
        let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        for r in &rows {
            let rec = record(r, workload_of(study, spec, &r.item).0, total, &stamp);
            let _ = w.write_record(&rec);
            done.insert(r.item.index, rec);
        }
        partial
            .write_all(&w.into_inner().unwrap_or_default())
            .map_err(io(&partial_path))?;
        partial.flush().map_err(io(&partial_path))?;
        solved_now += rows.len();
        progress.progress(&task, done.len().min(mine.len()), mine.len());
        if progress.cancelled() {
            break;
        }
    }
    drop(partial);
    if mine.iter().all(|it| done.contains_key(&it.index)) {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(header(k));
        for it in &mine {
            let _ = w.write_record(&done[&it.index]);
        }
        write_atomic(&final_path, &w.into_inner().unwrap_or_default())?;
        let _ = std::fs::remove_file(&partial_path);
        let solved = mine
            .iter()
            .filter_map(|it| Solved::of_record(&done[&it.index]))
            .collect();
        Ok(Outcome {
            csv: Some(final_path),
            solved,
            items: mine.len(),
            solved_now,
            resumed,
        })
    } else {
        Ok(Outcome {
            csv: None,
            solved: Vec::new(),
            items: mine.len(),
            solved_now,
            resumed,
        })
    }
}

/// Why shards do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A shard file could not be read.
    #[error("{0}: {1}")]
    Read(PathBuf, String),
    /// Shards disagree or do not cover the sweep.
    #[error("{0}")]
    Mismatch(String),
    /// The merged file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Joins shard CSVs into `out`, checking that they come from one sweep (same
/// header, study hash and version, item count) and hold every item once.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<usize, MergeError> {
    let mut header: Option<Vec<String>> = None;
    let mut rows: BTreeMap<usize, (Vec<String>, PathBuf)> = BTreeMap::new();
    let mut total: Option<(String, String, String)> = None;
    for path in inputs {
        let mut rd = csv::Reader::from_path(path).map_err(|e| MergeError::Read(path.clone(), e.to_string()))?;
        let h: Vec<String> = rd
            .headers()
            .map_err(|e| MergeError::Read(path.clone(), e.to_string()))?
            .iter()
            .map(String::from)
            .collect();
        if h.len() < HEADER.len() || h[..HEADER.len()] != HEADER.map(String::from) {
            return Err(MergeError::Mismatch(format!(
                "{}: not a dimsum sweep CSV",
                path.display()
            )));
        }
        match &header {
            None => header = Some(h),
            Some(first) if *first != h => {
                return Err(MergeError::Mismatch(format!(
                    "{}: its columns differ from the first shard's",
                    path.display()
                )));
            }
            _ => {}
        }
        for (line, rec) in rd.records().enumerate() {
            let rec = rec.map_err(|e| MergeError::Read(path.clone(), e.to_string()))?;
            let f: Vec<String> = rec.iter().map(String::from).collect();
            let key = (f[0].clone(), f[1].clone(), f[3].clone());
            match &total {
                None => total = Some(key),
                Some(k) if *k != key => {
                    return Err(MergeError::Mismatch(format!(
                        "{}:{}: from another sweep (version {}, study {}, {} items; the first shard has {}, {}, {})",
                        path.display(),
                        line + 2,
                        key.0,
                        key.1,
                        key.2,
                        k.0,
                        k.1,
                        k.2
                    )));
                }
                _ => {}
            }
            let i: usize = f[2]
                .parse()
                .map_err(|_| MergeError::Read(path.clone(), format!("line {}: bad index `{}`", line + 2, f[2])))?;
            if let Some((_, other)) = rows.insert(i, (f, path.clone())) {
                return Err(MergeError::Mismatch(format!(
                    "item {i} appears twice: in {} and {}",
                    other.display(),
                    path.display()
                )));
            }
        }
    }
    let (Some(header), Some((_, _, total))) = (header, total) else {
        return Err(MergeError::Mismatch("no rows to merge".into()));
    };
    let total: usize = total.parse().unwrap_or(0);
    let missing: Vec<usize> = (0..total).filter(|i| !rows.contains_key(i)).collect();
    if !missing.is_empty() {
        let show: Vec<String> = missing.iter().take(8).map(|i| i.to_string()).collect();
        return Err(MergeError::Mismatch(format!(
            "{} of {total} items missing (e.g. {}): a shard is absent or unfinished",
            missing.len(),
            show.join(", ")
        )));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&header);
    for (f, _) in rows.values() {
        let _ = w.write_record(f);
    }
    write_atomic(out, &w.into_inner().unwrap_or_default())?;
    Ok(total)
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::libra_4d;
    use crate::model::workload::{Group, place, rank_position};

    #[test]
    fn factorizations_by_hand() {
        // 16 into 2 factors >= 2: 2x8, 4x4, 8x2.
        assert_eq!(factorizations(16, 2), vec![vec![2, 8], vec![4, 4], vec![8, 2]]);
        // 4096 = 2^12 into 4 factors >= 2: compositions of 12 into 4 positive
        // parts, C(11, 3) = 165.
        assert_eq!(factorizations(4096, 4).len(), 165);
        assert!(factorizations(7, 2).is_empty());
        assert_eq!(factorizations(12, 3), vec![vec![2, 2, 3], vec![2, 3, 2], vec![3, 2, 2]]);
    }

    #[test]
    fn libra_groups_move_to_libra_3d() {
        let f = libra_4d();
        let tp = Group::from_libra(&[4, 4, -1, -1]).unwrap();
        let dp = Group::from_libra(&[-1, 2, 4, 32]).unwrap();
        assert_eq!(rank_position(&tp, &f), (1, 16));
        assert_eq!(rank_position(&dp, &f), (16, 256));
        // On LIBRA's 3D shape: its own GPT-3 3D communicators.
        assert_eq!(place(1, 16, &[16, 8, 32]).unwrap().to_libra(), vec![16, -1, -1]);
        assert_eq!(place(16, 256, &[16, 8, 32]).unwrap().to_libra(), vec![-1, 8, 32]);
        // Back on the 4D shape: unchanged.
        assert_eq!(place(16, 256, &[4, 8, 4, 32]).unwrap(), dp);
        // 16 cannot be skipped on 3 x ...: unplaceable.
        assert!(place(16, 2, &[3, 6, 2]).is_none());
    }

    #[test]
    fn shard_parsing() {
        assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
        assert_eq!(
            Shard::parse("8/8").unwrap_err().to_string(),
            "`8/8` is not i/N with 0 <= i < N"
        );
        assert_eq!(Shard::parse("x").unwrap_err().to_string(), "`x` is not i/N (e.g. 0/8)");
        assert!(Shard::parse("1/0").is_err());
    }
}

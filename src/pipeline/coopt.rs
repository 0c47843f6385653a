//! Co-optimizing the parallelization with the fabric (as PHAZE, ICML'24,
//! co-searches hardware and placement): every (TP, PP, DP) with
//! t * p * d = N, every placement order of the three groups on the fabric,
//! each with its optimal bandwidth allocation under the study's constraints.
//!
//! Exactness with pruning: strategies are visited by increasing compute time
//! (a lower bound on their iteration time at any bandwidth: communication
//! only adds), and once that bound reaches the best time found the rest
//! cannot win and are not solved. Every solve is certified (optimize's gap,
//! or the catalog MILP's).
//!
//! Prices: a study with `[procurement]` solves each strategy against its
//! catalog (`procure::Pricing::Catalog`): the fastest purchasable design
//! within the procurement budgets and the dimensions' caps, its capex and
//! power from the bill of materials. Without it, the continuous optimum
//! under the study's linear constraints, priced by `[cost.tiers]`.

use super::procure::{self, Pricing};
use crate::model::collective::CollectiveModel;
use crate::model::fabric::Fabric;
use crate::model::training::IterationModel;
use crate::model::transformer::{self, Par, Strategy};
use crate::optimize::{self, Objective, Problem};
use crate::study::Study;
use rayon::prelude::*;
use serde::Serialize;

/// What became of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Verdict {
    /// Solved: its optimal allocation.
    Solved {
        /// GB/s per NPU per dimension.
        bw_gbps: Vec<f64>,
        /// Iteration time at that allocation, ms.
        iteration_time_ms: f64,
        /// Certified gap.
        gap: f64,
        /// Network cost, dollars (the bill's capex with catalog pricing,
        /// else the linear price).
        network_cost_usd: f64,
        /// Network power, watts (likewise).
        network_power_w: f64,
        /// Iteration time at the equal split, ms.
        equal_split_ms: f64,
    },
    /// Not solved: its compute alone is no faster than the best time.
    Pruned {
        /// Its compute time, ms.
        bound_ms: f64,
        /// Iteration time at the equal split, ms.
        equal_split_ms: f64,
    },
    /// Invalid: why.
    Rejected {
        /// The reason.
        reason: String,
    },
    /// The optimizer failed.
    Failed {
        /// The reason.
        reason: String,
    },
}

/// One strategy and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Data-parallel degree.
    pub dp: u64,
    /// Placement order, innermost first.
    pub order: String,
    /// Group sizes per dimension of tp, pp and dp (LIBRA notation).
    pub mapping: Option<[Vec<i64>; 3]>,
    /// Memory per NPU, GiB (when the strategy is valid enough to size).
    pub memory_gib: Option<f64>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Row {
    /// The tp, pp and dp groups in LIBRA notation, joined by `sep`.
    pub fn groups(&self, sep: &str) -> String {
        self.mapping.as_ref().map_or(String::new(), |m| {
            m.iter().map(|g| format!("{g:?}")).collect::<Vec<_>>().join(sep)
        })
    }

    /// Iteration time if solved.
    pub fn time_ms(&self) -> Option<f64> {
        match &self.verdict {
            Verdict::Solved { iteration_time_ms, .. } => Some(*iteration_time_ms),
            _ => None,
        }
    }

    fn equal_ms(&self) -> Option<f64> {
        match &self.verdict {
            Verdict::Solved { equal_split_ms, .. } | Verdict::Pruned { equal_split_ms, .. } => {
                Some(*equal_split_ms).filter(|t| t.is_finite())
            }
            _ => None,
        }
    }
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coopt {
    /// Every strategy, solved ones first by iteration time.
    pub strategies: Vec<Row>,
    /// Distinct strategies enumerated (placements that put the same group
    /// sizes on the same dimensions counted once).
    pub searched: usize,
    /// Solved with the optimizer.
    pub solved: usize,
    /// Skipped by the bound.
    pub pruned: usize,
    /// Invalid.
    pub rejected: usize,
    /// The allocation the equal-split comparison uses, GB/s per NPU.
    pub equal_split_gbps: Vec<f64>,
    /// Best iteration time of any strategy at that equal split, ms.
    pub best_on_equal_split_ms: Option<f64>,
    /// The study's own strategy at its optimal allocation, ms.
    pub default_optimized_ms: Option<f64>,
    /// How every strategy's design was priced and bounded.
    pub priced_by: Pricing,
}

fn divisors(n: u64) -> Vec<u64> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

const ORDERS: [[Par; 3]; 6] = [
    [Par::Tp, Par::Pp, Par::Dp],
    [Par::Tp, Par::Dp, Par::Pp],
    [Par::Pp, Par::Tp, Par::Dp],
    [Par::Pp, Par::Dp, Par::Tp],
    [Par::Dp, Par::Tp, Par::Pp],
    [Par::Dp, Par::Pp, Par::Tp],
];

/// Every strategy for `n` NPUs, the study's ZeRO stage, sequence
/// parallelism and recomputation kept.
pub fn strategies(n: u64, base: &Strategy) -> Vec<Strategy> {
    let mut out = Vec::new();
    for t in divisors(n) {
        for p in divisors(n / t) {
            let d = n / t / p;
            for order in ORDERS {
                // Orders that differ only in where a degree-1 group sits are the same placement.
                let trivial = |par: Par| match par {
                    Par::Tp => t == 1,
                    Par::Pp => p == 1,
                    Par::Dp => d == 1,
                };
                let kept: Vec<Par> = order.iter().copied().filter(|q| !trivial(*q)).collect();
                let duplicate = out.iter().any(|s: &Strategy| {
                    s.tp == t
                        && s.pp == p
                        && s.dp == d
                        && s.order.iter().copied().filter(|q| !trivial(*q)).collect::<Vec<_>>() == kept
                });
                if !duplicate {
                    out.push(Strategy {
                        tp: t,
                        pp: p,
                        dp: d,
                        order,
                        ..base.clone()
                    });
                }
            }
        }
    }
    out
}

fn problem(study: &Study, fabric: &Fabric, workload: &crate::model::workload::Workload) -> Result<Problem, String> {
    let model = CollectiveModel {
        time_model: study.collective.time_model,
        group_bandwidth: study.collective.group_bandwidth,
        algorithms: study.collective.algorithms.clone(),
        reduction_gbps: study.collective.reduction_gbps,
    };
    let it = IterationModel::new(workload, fabric, &model, study.training_loop);
    let cons = study.constraints(&[]).map_err(|e| e.to_string())?;
    Ok(Problem::new(fabric, it, study.linear_cost(), cons))
}

/// Why a study cannot be co-optimized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CooptError {
    /// The study does not describe a model to parallelize.
    #[error("coopt needs a study with [model], [npu] and [parallelism]")]
    NoModel,
}

/// Co-optimizes the study's model parallelization with its fabric.
pub fn coopt(study: &Study, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Coopt, CooptError> {
    let (Some(model), Some(npu), Some(base)) = (&study.model, &study.npu, &study.parallelism) else {
        return Err(CooptError::NoModel);
    };
    let fabric = &study.fabric;
    let all = strategies(fabric.npus(), base);
    // Generate every strategy; order the valid ones by their compute bound.
    struct Cand {
        s: Strategy,
        mapping: Option<[Vec<i64>; 3]>,
        memory: Option<f64>,
        built: Result<(Problem, f64), String>,
    }
    let mut cands: Vec<Cand> = all
        .par_iter()
        .map(|s| {
            let mapping = s
                .groups(fabric)
                .map(|g| [g[0].to_libra(), g[1].to_libra(), g[2].to_libra()]);
            match transformer::generate(model, npu, s, fabric) {
                Ok(g) => {
                    let bound = crate::model::units::ns_to_ms(g.workload.compute_ns());
                    let memory = Some(g.memory.gib());
                    Cand {
                        s: s.clone(),
                        mapping,
                        memory,
                        built: problem(study, fabric, &g.workload).map(|p| (p, bound)),
                    }
                }
                Err(reason) => Cand {
                    s: s.clone(),
                    mapping,
                    memory: None,
                    built: Err(reason.to_string()),
                },
            }
        })
        .collect();
    // Orders that land every group on the same dimensions with the same
    // sizes are one placement: keep the first.
    let mut seen = std::collections::HashSet::new();
    cands.retain(|c| c.mapping.is_none() || seen.insert((c.s.tp, c.s.pp, c.s.dp, c.mapping.clone())));
    let searched = cands.len();
    cands.sort_by(|a, b| {
        let ka = a.built.as_ref().map_or(f64::INFINITY, |g| g.1);
        let kb = b.built.as_ref().map_or(f64::INFINITY, |g| g.1);
        ka.total_cmp(&kb)
    });
    let equal = match &study.bw {
        Some(bw) => bw.clone(),
        None => vec![0.0; fabric.ndims()],
    };
    let priced_by = Pricing::of(study);
    // The parts of the study's one fabric, for every strategy.
    let parts = study.procurement();
    let options = match priced_by {
        Pricing::Catalog => procure::dim_options(fabric, &parts),
        Pricing::Linear => Vec::new(),
    };
    let solve = |p: &Problem| -> Verdict {
        let solved = match priced_by {
            Pricing::Linear => optimize::solve(p, Objective::Perf).map(|s| {
                (
                    s.bw_gbps,
                    s.iteration_time_ms,
                    s.gap,
                    s.network_cost_usd,
                    s.network_power_w,
                )
            }),
            Pricing::Catalog => procure::fastest_bought(p, options.clone(), parts.budget_usd, parts.budget_w)
                .map(|s| (s.bw_gbps, s.iteration_time_ms, s.mip_rel_gap, s.capex_usd, s.power_w)),
        };
        match solved {
            Ok((bw_gbps, iteration_time_ms, gap, network_cost_usd, network_power_w)) => Verdict::Solved {
                equal_split_ms: f64::NAN,
                bw_gbps,
                iteration_time_ms,
                gap,
                network_cost_usd,
                network_power_w,
            },
            Err(e) => Verdict::Failed { reason: e.to_string() },
        }
    };
    let mut rows: Vec<Row> = Vec::with_capacity(searched);
    let mut best = f64::INFINITY;
    let mut equal_bw = equal;
    let threads = rayon::current_num_threads().max(1);
    let mut i = 0;
    while i < cands.len() {
        let chunk = &cands[i..(i + 2 * threads).min(cands.len())];
        let verdicts: Vec<Verdict> = chunk
            .par_iter()
            .map(|c| match &c.built {
                Err(reason) => Verdict::Rejected { reason: reason.clone() },
                Ok((_, bound)) if *bound >= best * (1.0 - 1e-12) => Verdict::Pruned {
                    bound_ms: *bound,
                    equal_split_ms: f64::NAN,
                },
                Ok((p, _)) => solve(p),
            })
            .collect();
        for (c, v) in chunk.iter().zip(verdicts) {
            if let Verdict::Solved {
                iteration_time_ms,
                bw_gbps,
                ..
            } = &v
                && *iteration_time_ms < best
            {
                best = *iteration_time_ms;
                if study.bw.is_none() {
                    let total: f64 = bw_gbps.iter().sum();
                    equal_bw = vec![total / fabric.ndims() as f64; fabric.ndims()];
                }
            }
            rows.push(Row {
                tp: c.s.tp,
                pp: c.s.pp,
                dp: c.s.dp,
                order: c.s.order_name(),
                mapping: c.mapping.clone(),
                memory_gib: c.memory,
                verdict: v,
            });
        }
        i += chunk.len();
        progress(i, cands.len());
    }
    // Every valid strategy at the equal split (cheap: no solve).
    for (row, c) in rows.iter_mut().zip(&cands) {
        if let Ok((p, _)) = &c.built {
            let t = p.time_ms(&equal_bw);
            match &mut row.verdict {
                Verdict::Solved { equal_split_ms, .. } | Verdict::Pruned { equal_split_ms, .. } => *equal_split_ms = t,
                _ => {}
            }
        }
    }
    let best_on_equal_split_ms = rows.iter().filter_map(Row::equal_ms).min_by(f64::total_cmp);
    let default_optimized_ms =
        cands
            .iter()
            .zip(&rows)
            .find(|(c, _)| c.s == *base)
            .and_then(|(c, r)| match (&c.built, r.time_ms()) {
                (_, Some(t)) => Some(t),
                (Ok((p, _)), None) => match solve(p) {
                    Verdict::Solved { iteration_time_ms, .. } => Some(iteration_time_ms),
                    _ => None,
                },
                _ => None,
            });
    let count = |f: fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.verdict)).count();
    let solved = count(|v| matches!(v, Verdict::Solved { .. }));
    let pruned = count(|v| matches!(v, Verdict::Pruned { .. }));
    let rejected = count(|v| matches!(v, Verdict::Rejected { .. }));
    rows.sort_by(|a, b| {
        a.time_ms()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.time_ms().unwrap_or(f64::INFINITY))
    });
    Ok(Coopt {
        strategies: rows,
        searched,
        solved,
        pruned,
        rejected,
        equal_split_gbps: equal_bw,
        best_on_equal_split_ms,
        default_optimized_ms,
        priced_by,
    })
}

/// Up to `per_kind` examples of each reason strategies lost to `best_ms`.
pub(crate) fn why_lost(r: &Coopt, best_ms: f64, per_kind: usize) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut out = Vec::new();
    for row in &r.strategies {
        let (kind, why) = match &row.verdict {
            Verdict::Solved { iteration_time_ms, .. } if *iteration_time_ms > best_ms => (
                "slower".to_string(),
                format!("{iteration_time_ms:.3} ms at its own optimal allocation"),
            ),
            Verdict::Solved { .. } => continue,
            Verdict::Pruned { bound_ms, .. } => (
                "pruned".to_string(),
                format!("its compute alone takes {bound_ms:.3} ms, no faster than {best_ms:.3} ms"),
            ),
            Verdict::Rejected { reason } | Verdict::Failed { reason } => {
                // Group reasons by their first words (memory, heads, layers, batch, placement).
                let key: String = reason.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                (key, reason.clone())
            }
        };
        let generic = kind.chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
        match seen.iter_mut().find(|(k, _)| *k == generic) {
            Some((_, n)) if *n >= per_kind => continue,
            Some((_, n)) => *n += 1,
            None => seen.push((generic, 1)),
        }
        out.push(format!(
            "tp {} pp {} dp {} ({}): {why}",
            row.tp, row.pp, row.dp, row.order
        ));
    }
    out
}

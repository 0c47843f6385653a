//! Fabric shapes a person names, compared in one study (`[[alternative]]`):
//! the study's own fabric (the shape named by `[fabric] name`, else
//! [`FABRIC_SHAPE`](crate::study::FABRIC_SHAPE): `Study::fabric_name`) and each
//! alternative, each bought from the catalog within the study's
//! `[procurement]` budgets and caps (the catalog MILP, perf, as the
//! study's decision asks: `procure::answer`), its catalog frontier (time
//! against capex, `procure::frontier`) and its bought design replayed on
//! the best schedules (`procure::measure` with `procure::best_spec`).
//!
//! The decision ([`choose`]): the fastest shape within the budgets by the
//! analytic model the MILP chose each design on; shapes within a relative
//! [`SAME_TIME`] of it are as fast, and of those the one with the least
//! capex wins (then the first listed). A shape the study's workload cannot
//! be placed on, or on which nothing is purchasable within the budgets,
//! is kept with the reason and never chosen.
//!
//! The MILPs of the shapes run in parallel (rayon), collected in the
//! shapes' order; the replays run one shape after another: results do not
//! depend on the thread count.

use super::exec::{Executor, Job, RunError};
use super::procure::{self, Buying, ProcureError};
use crate::model::bom::Bom;
use crate::model::cost::Linear;
use crate::model::fabric::Fabric;
use crate::model::training::IterationModel;
use crate::model::units::ns_to_ms;
use crate::optimize::Problem;
use crate::optimize::catalog::{Comparison, Goal};
use crate::optimize::scheduled::{Backed, Measured, ScheduledError};
use crate::study::{Study, Unplaced};
use rayon::prelude::*;

/// Relative difference in iteration time under which two shapes are
/// equally fast (the MILP's own gap is 1e-9).
pub const SAME_TIME: f64 = 1e-6;

/// Why a shape has no design within the budgets.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    /// The study's workload cannot be placed on it.
    #[error(transparent)]
    Unplaced(#[from] Unplaced),
    /// Nothing purchasable within the budgets and caps, or the bill failed.
    #[error(transparent)]
    Procure(#[from] ProcureError),
}

/// A shape's design, bought.
#[derive(Debug)]
pub struct ShapeBuy {
    /// The catalog optimum within the budgets beside its continuous bound.
    pub comparison: Comparison,
    /// Its bill of materials.
    pub bom: Bom,
    /// The catalog frontier: (budget $, comparison) per budget.
    pub frontier: Vec<(f64, Comparison)>,
    /// The design replayed on the best schedules.
    pub replay: Result<Measured, ScheduledError>,
}

impl ShapeBuy {
    /// Iteration time of the analytic model at the design, ms.
    pub fn time_ms(&self) -> f64 {
        self.comparison.catalog.iteration_time_ms
    }

    /// Capex of the design, $.
    pub fn capex_usd(&self) -> f64 {
        self.comparison.catalog.capex_usd
    }

    /// Network power of the design, W.
    pub fn power_w(&self) -> f64 {
        self.comparison.catalog.power_w
    }

    /// The replayed iteration time and its certified lower bound, ms.
    pub fn replayed_ms(&self) -> Option<(f64, f64)> {
        self.replay
            .as_ref()
            .ok()
            .map(|m| (ns_to_ms(m.iteration_ns), ns_to_ms(m.lower_bound_ns)))
    }
}

/// One shape of a study.
#[derive(Debug)]
pub struct Shape {
    /// `Study::fabric_name` for the study's own fabric (by default
    /// [`FABRIC_SHAPE`](crate::study::FABRIC_SHAPE)), else the
    /// alternative's name.
    pub name: String,
    /// The fabric.
    pub fabric: Fabric,
    /// Its design within the budgets, or why there is none.
    pub outcome: Result<ShapeBuy, ShapeError>,
}

/// Every shape of a study and the one to buy.
#[derive(Debug)]
pub struct Shapes {
    /// The study's fabric first, then each alternative in order.
    pub shapes: Vec<Shape>,
    /// The shape to buy and why ([`choose`]), if any has a design.
    pub chosen: Option<(usize, Why)>,
}

impl Shapes {
    /// The chosen shape and its design.
    pub fn chosen(&self) -> Option<(&Shape, &ShapeBuy)> {
        let s = &self.shapes[self.chosen?.0];
        s.outcome.as_ref().ok().map(|b| (s, b))
    }
}

/// What one shape is bought from: its fabric, catalog, problem and the
/// study's workload on it.
pub struct ShapeOn {
    /// The shape's name.
    pub name: String,
    /// What buying it reads.
    pub buying: Buying,
    /// Its problem (the study's own for the study's fabric; an
    /// alternative's: its dimensions' bounds) and its workload's replays
    /// on the best schedules; or why the workload cannot be placed.
    pub problem: Result<(Problem, Backed), Unplaced>,
}

/// Every shape of `study`: its own fabric (with its problem: its
/// `[optimize]` constraints included), then each `[[alternative]]`.
pub fn shapes_of(study: &Study) -> Result<Vec<ShapeOn>, RunError> {
    let spec = procure::best_spec(study);
    let mut out = vec![ShapeOn {
        name: study.fabric_name.clone(),
        buying: Buying::of(study),
        problem: Ok((study.problem()?, study.backed(&spec))),
    }];
    for a in &study.alternatives {
        let problem = a.workload.as_ref().map_err(Clone::clone).map(|w| {
            let it = IterationModel::new(w, &a.fabric, &a.collective, study.training_loop);
            let problem = Problem::new(&a.fabric, it, Linear::new(&a.fabric, &a.cost), Vec::new());
            let backed = Backed::new(&a.fabric, w, &a.collective, study.training_loop, &spec);
            (problem, backed)
        });
        out.push(ShapeOn {
            name: a.name.clone(),
            buying: Buying {
                fabric: a.fabric.clone(),
                spec: a.procurement.clone(),
            },
            problem,
        });
    }
    Ok(out)
}

/// The catalog optimum of one shape within its budgets, with its bill and
/// frontier (no replay yet).
type Bought = Result<(Comparison, Bom, Vec<(f64, Comparison)>), ShapeError>;

fn buy(on: &ShapeOn) -> Bought {
    let (problem, _) = on.problem.as_ref().map_err(|e| ShapeError::Unplaced(e.clone()))?;
    let (c, b) = procure::answer(&on.buying, problem, Goal::Perf)?;
    let frontier = procure::frontier(&on.buying, problem, procure::FRONTIER_POINTS).map_err(ProcureError::from)?;
    Ok((c, b, frontier))
}

/// Why a shape was chosen, against the runner-up (the best of the others
/// by the same rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// No other shape has a design within the budgets.
    Only,
    /// As fast as the runner-up (within [`SAME_TIME`]), for less capex (or
    /// the same, listed first).
    SameTime {
        /// The runner-up's position in [`Shapes::shapes`].
        runner_up: usize,
    },
    /// Faster than the runner-up.
    Faster {
        /// The runner-up's position in [`Shapes::shapes`].
        runner_up: usize,
    },
}

/// The shape to buy among `shapes` and why: the fastest design by the
/// analytic model, of those within [`SAME_TIME`] of it the least capex,
/// then the first listed; `None` when no shape has a design.
pub fn choose(shapes: &[Shape]) -> Option<(usize, Why)> {
    let designs: Vec<(usize, &ShapeBuy)> = shapes
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.outcome.as_ref().ok().map(|b| (i, b)))
        .collect();
    let (i, b) = best(&designs, None)?;
    let Some((j, o)) = best(&designs, Some(i)) else {
        return Some((i, Why::Only));
    };
    if b.time_ms() >= o.time_ms() * (1.0 - SAME_TIME) {
        Some((i, Why::SameTime { runner_up: j }))
    } else {
        Some((i, Why::Faster { runner_up: j }))
    }
}

/// The best of `designs` but `skip` by [`choose`]'s rule.
fn best<'a>(designs: &[(usize, &'a ShapeBuy)], skip: Option<usize>) -> Option<(usize, &'a ShapeBuy)> {
    let pool: Vec<(usize, &ShapeBuy)> = designs.iter().copied().filter(|(i, _)| Some(*i) != skip).collect();
    let fastest = pool.iter().map(|(_, b)| b.time_ms()).fold(f64::INFINITY, f64::min);
    pool.into_iter()
        .filter(|(_, b)| b.time_ms() <= fastest * (1.0 + SAME_TIME))
        .min_by(|(i, a), (j, b)| a.capex_usd().total_cmp(&b.capex_usd()).then(i.cmp(j)))
}

/// Every shape of a study bought and compared (`dimsum run` on a study
/// with `[[alternative]]`).
#[derive(Debug, Clone, Copy)]
pub struct CompareShapes<'a> {
    /// The study.
    pub study: &'a Study,
}

impl Job for CompareShapes<'_> {
    type Output = Shapes;
    fn name(&self) -> String {
        "shapes".into()
    }
    fn run(self, ex: &Executor) -> Result<Shapes, RunError> {
        let ons = shapes_of(self.study)?;
        ex.check()?;
        let bought: Vec<Bought> = ons.par_iter().map(buy).collect();
        ex.check()?;
        let mut shapes = Vec::with_capacity(ons.len());
        for (on, b) in ons.into_iter().zip(bought) {
            let outcome = match (b, &on.problem) {
                (Ok((comparison, bom, frontier)), Ok((_, backed))) => {
                    let task = format!("replay shape {} on the best schedules", on.name);
                    let replay = procure::measure(backed, &comparison.catalog.bw_gbps, &task, ex.observer());
                    if replay.as_ref().is_err_and(ScheduledError::is_cancelled) {
                        return Err(RunError::Cancelled);
                    }
                    Ok(ShapeBuy {
                        comparison,
                        bom,
                        frontier,
                        replay,
                    })
                }
                (Ok(_), Err(e)) => Err(ShapeError::Unplaced(e.clone())),
                (Err(e), _) => Err(e),
            };
            shapes.push(Shape {
                name: on.name,
                fabric: on.buying.fabric,
                outcome,
            });
        }
        let chosen = choose(&shapes);
        Ok(Shapes { shapes, chosen })
    }
}

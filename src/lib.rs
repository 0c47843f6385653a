//! dimsum designs the network fabrics of ML training clusters: given a
//! multi-dimensional fabric, a training workload and a cost and power model,
//! it evaluates and optimizes how much bandwidth each dimension gets, backs
//! the numbers with explicit collective schedules replayed in a simulator,
//! and prices the answer from a catalog of parts. docs/ARCHITECTURE.md is the
//! map of these modules.
//!
//! The layers, lowest first; a module imports only from layers below it:
//!
//! | layer | modules |
//! |---|---|
//! | infrastructure | [`error`], [`io`], [`lp`] (the LP / MILP solver seam), [`progress`] (the one observer of long work), [`sys`] (signals and memory advice: the only `unsafe` code) |
//! | model | [`model`] (units, fabric, topology, cost, catalog, bill of materials, workload, transformer, collective, training, evaluation) |
//! | schedules | [`schedule`] (the IR, builders, synthesis, the simulator, bounds) |
//! | optimization | [`optimize`] (LP / MILP solves, frontiers, the catalog MILP, schedule-backed fixed points) |
//! | formats | [`interop`] (LIBRA, ASTRA-sim, Chakra ET, MSCCL-IR) |
//! | studies | [`study`] (the study file) |
//! | pipeline | [`pipeline`] (the jobs and their executor: a study's whole run as typed results, procurement, sweeps, co-optimization, validation) |
//! | reports | [`report`] (CSV, charts, HTML) |
//!
//! The command line (`src/cli/`) belongs to the `dimsum` binary and sits on
//! top of all of them.
//!
//! The names a user reaches for first are re-exported at the top
//! (`dimsum::Study`, `dimsum::Executor`, ...) and in [`prelude`]:
//!
//! ```
//! use dimsum::prelude::*;
//!
//! let study = Study::load(std::path::Path::new("studies/gpt3-4d.toml"))?;
//! let problem = study.problem()?;
//! let best = Executor::quiet().run(jobs::Optimize { problem: &problem, objective: Objective::Perf })?;
//! // The optimum is certified: its gap, and a lower bound beside its time.
//! assert!(best.gap < 1e-6);
//! assert_eq!(best.bw_gbps.len(), study.fabric.ndims());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example: a study, its optimum and its frontier
//!
//! A two-dimensional fabric (a ring of 4 inside a switch of 8), one layer
//! whose input-gradient all-reduce runs on the ring and whose
//! weight-gradient all-reduce runs on the switch, and 500 GB/s per NPU to
//! share. LIBRA's ring and switch all-reduce move `2 (p-1)/p` of the
//! vector: 96 MB on the ring, 112 MB on the switch, so the time is
//! `96e6 / B0 + 112e6 / B1` ns, smallest at `B_d` proportional to
//! `sqrt(bytes_d)` (Lagrange).
//!
//! ```
//! use dimsum::optimize::frontier::{self, Axis};
//! use dimsum::optimize::{self, Objective};
//! use dimsum::study::Study;
//!
//! let study = Study::parse(
//!     r#"
//! name = "tiny"
//! [[fabric.dims]]
//! name = "package"
//! block = "ring"
//! npus = 4
//! [[fabric.dims]]
//! name = "pod"
//! block = "switch"
//! npus = 8
//! [cost.tiers.package]
//! link_usd_per_gbps = 2.0
//! [cost.tiers.pod]
//! link_usd_per_gbps = 8.0
//! switch_usd_per_gbps = 10.0
//! nic_usd_per_gbps = 20.0
//! [workload]
//! communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 8] }
//! [[workload.layers]]
//! name = "l0"
//! forward = { compute_ns = 1000 }
//! input_grad = { compute_ns = 2000, collective = "all-reduce", bytes = 64e6 }
//! weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
//! [optimize]
//! constraints = ["package + pod <= 500"]
//! "#,
//!     std::path::Path::new("tiny.toml"),
//! )?;
//! let problem = study.problem()?;
//! let best = optimize::solve(&problem, Objective::Perf)?;
//! let (a, b) = (96e6_f64.sqrt(), 112e6_f64.sqrt());
//! let b0 = 500.0 * a / (a + b);
//! assert!((best.bw_gbps[0] - b0).abs() < 1e-3 * b0);
//! assert!(best.gap <= 1e-6); // certified: the lower bound is within the gap
//!
//! // The fastest design at 8 cost budgets: more budget is never slower.
//! let f = frontier::frontier(&problem, Axis::Cost, 8)?;
//! assert!(f.points.windows(2).all(|w| w[1].iteration_time_ms <= w[0].iteration_time_ms * (1.0 + 1e-9)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example: a schedule, replayed
//!
//! A one-way ring all-reduce of 8 MB on 8 NPUs with 50 GB/s links and no
//! latency: `2 (p - 1) = 14` steps, each moving one `8 MB / 8 = 1 MB`
//! chunk over every link, `1e6 B / 50 GB/s = 20 us`: 280 us, above the
//! lower bound the same topology gives any algorithm.
//!
//! ```
//! use dimsum::model::topology;
//! use dimsum::model::workload::CollectiveKind;
//! use dimsum::schedule::bounds::lower_bounds;
//! use dimsum::schedule::builtin::{self, Algo};
//! use dimsum::schedule::simulate::{self, LinkModel, SimOptions};
//!
//! let topo = topology::from_spec("ring:8", &[50.0], &[0.0])?;
//! let s = builtin::build(&topo, CollectiveKind::AllReduce, Algo::Ring, None, 1)?;
//! let opt = SimOptions { size_bytes: 8e6, model: LinkModel::AlphaBeta, record: false, reduce_gbps: None };
//! let r = simulate::simulate(&s, &topo, &opt)?;
//! assert!(r.valid, "{:?}", r.errors);
//! assert!((r.time_ns - 280_000.0).abs() < 1e-6);
//! assert!(r.time_ns >= lower_bounds(&topo, CollectiveKind::AllReduce, 8e6).bound_ns);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod error;
pub mod interop;
pub mod io;
pub mod lp;
pub mod model;
pub mod optimize;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod schedule;
pub mod study;
pub mod sys;

pub use error::InputError;
pub use model::fabric::Fabric;
pub use model::topology::Topology;
pub use optimize::{Objective, Problem, Solution};
pub use pipeline::exec::{Executor, Job, RunError};
pub use pipeline::jobs;
pub use pipeline::run::{RunStudy, StudyResults};
pub use progress::{Observer, Quiet};
pub use schedule::Schedule;
pub use study::Study;

/// `use dimsum::prelude::*;`: a study, the jobs and their executor, the
/// observer, and the typed results and errors most calls return.
pub mod prelude {
    pub use crate::error::InputError;
    pub use crate::model::fabric::Fabric;
    pub use crate::model::topology::Topology;
    pub use crate::optimize::{Objective, Problem, Solution};
    pub use crate::pipeline::exec::{Executor, Job, RunError};
    pub use crate::pipeline::jobs;
    pub use crate::pipeline::run::{RunStudy, StudyResults};
    pub use crate::progress::{Observer, Quiet};
    pub use crate::schedule::Schedule;
    pub use crate::study::Study;
}

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
//! | infrastructure | [`error`], [`io`] |
//! | model | [`model`] (units, fabric, topology, cost, catalog, bill of materials, workload, transformer, collective, training, evaluation) |
//! | schedules | [`schedule`] (the IR, builders, synthesis, the simulator, bounds) |
//! | optimization | [`optimize`] (LP / MILP solves, frontiers, the catalog MILP, schedule-backed fixed points) |
//! | formats | [`interop`] (LIBRA, ASTRA-sim, Chakra ET, MSCCL-IR) |
//! | studies | [`study`] (the study file) |
//! | pipeline | [`pipeline`] (sweeps, co-optimization) |
//! | reports | [`report`] (CSV, charts, HTML) |
//!
//! The command line (`src/cli/`) belongs to the `dimsum` binary and sits on
//! top of all of them.

pub mod error;
pub mod interop;
pub mod io;
pub mod model;
pub mod optimize;
pub mod pipeline;
pub mod report;
pub mod schedule;
pub mod study;

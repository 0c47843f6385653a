//! dimsum designs the network fabrics of ML training clusters: given a
//! multi-dimensional fabric, a training workload and a cost and power model,
//! it evaluates (and, in later modules, optimizes) how much bandwidth each
//! dimension gets. docs/ARCHITECTURE.md is the map of these modules.

pub mod bom;
pub mod bounds;
pub mod catalog;
pub mod cli;
pub mod collective;
pub mod coopt;
pub mod cost;
pub mod error;
pub mod eval;
pub mod fabric;
pub mod interop;
pub mod optimize;
pub mod report;
pub mod schedule;
pub mod scheduled;
pub mod simulate;
pub mod study;
pub mod sweep;
pub mod topology;
pub mod training;
pub mod transformer;
pub mod units;
pub mod workload;

//! What runs many solves for one study: fabric-shape sweeps (sharded,
//! resumable) and the co-optimization of parallelization and fabric.

pub mod coopt;
pub mod sweep;

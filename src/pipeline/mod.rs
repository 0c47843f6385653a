//! What runs many solves for one study: everything `dimsum run` does
//! (`run`, as one typed value), procurement against the catalog
//! (`procure`), fabric-shape sweeps (sharded, resumable) and the
//! co-optimization of parallelization and fabric.

pub mod coopt;
pub mod procure;
pub mod run;
pub mod sweep;

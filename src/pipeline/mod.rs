//! What runs many solves for one study: everything `dimsum run` does
//! (`run`, as one typed value), procurement against the catalog
//! (`procure`), fabric-shape sweeps (sharded, resumable) and the
//! co-optimization of parallelization and fabric.
//!
//! ```
//! use dimsum::pipeline::run;
//! use dimsum::study::Study;
//!
//! let study = Study::parse(
//!     r#"
//! name = "tiny"
//! bw = [100, 50]
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
//! [run]
//! objectives = ["perf", "perf-per-cost"]
//! "#,
//!     std::path::Path::new("tiny.toml"),
//! )?;
//! // Nothing is written: this study declares no sweep.
//! let r = run::run_study(&study, std::path::Path::new("."), &dimsum::progress::Quiet)?;
//! assert_eq!(r.recommended.len(), 2);
//! // The study's own `bw` is evaluated as a fixed design: 96 MB over 100 GB/s
//! // on the ring plus 112 MB over 50 GB/s on the switch, after 6 us of compute.
//! let fixed = &r.fixed[0].evaluation;
//! assert!((fixed.iteration_time_ms - (6_000.0 + 960_000.0 + 2_240_000.0) / 1e6).abs() < 1e-9);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod collective;
pub mod convert;
pub mod coopt;
pub mod exec;
pub mod failures;
pub mod jobs;
pub mod procure;
pub mod run;
pub mod shapes;
pub mod sweep;
pub mod validate;

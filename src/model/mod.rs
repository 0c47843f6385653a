//! The model: what a fabric, its links, its price and its workload are, and
//! the analytic time of the collectives and the training iteration on it.
//! No solver, no file of results, no schedule: the layers above build on
//! these types.
//!
//! ```
//! use dimsum::model::units::transfer_ns;
//! use dimsum::model::workload::place;
//!
//! // 1 MB at 50 GB/s: 1e6 B / 50e9 B/s = 20 us (GB/s is bytes per ns).
//! assert_eq!(transfer_ns(1e6, 50.0), 20_000.0);
//! // A group of 16 consecutive ranks on dimensions of 4, 8 and 32 NPUs
//! // spans the whole first dimension and 4 of the second.
//! assert_eq!(place(1, 16, &[4, 8, 32]).unwrap().to_libra(), vec![4, 4, -1]);
//! // Groups that do not tile the dimensions have no placement.
//! assert!(place(1, 3, &[4, 8]).is_none());
//! ```

pub mod arch;
pub mod bom;
pub mod catalog;
pub mod collective;
pub mod compute;
pub mod cost;
pub mod eval;
pub mod fabric;
pub mod failure;
pub mod fattree;
pub mod hf;
pub mod spec;
pub mod stages;
pub mod swing;
pub mod topology;
pub mod training;
pub mod transformer;
pub mod units;
pub mod workload;

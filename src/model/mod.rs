//! The model: what a fabric, its links, its price and its workload are, and
//! the analytic time of the collectives and the training iteration on it.
//! No solver, no file of results, no schedule: the layers above build on
//! these types.

pub mod bom;
pub mod catalog;
pub mod collective;
pub mod cost;
pub mod eval;
pub mod fabric;
pub mod swing;
pub mod topology;
pub mod training;
pub mod transformer;
pub mod units;
pub mod workload;
